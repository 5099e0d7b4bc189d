# The installed form of the binaries, shared by scripts/install.sh and scripts/bench.sh (one
# build directory, one set of flags: the benchmark measures what users install). Sourced.
#
#   --static-swift-stdlib   no Swift runtime to install beside the binaries
#   -use-ld=lld             lld can pack relative relocations (below); gold cannot
#   --no-export-dynamic     the static stdlib's link arguments export every Swift symbol of the
#                           program (22,000 in wmctl: 2.2 MB of symbol table the loader maps and
#                           nothing looks up); symbols come back with `nm` on the unstripped build
#   pack-relative-relocs    70,000 relative relocations as a 12 KB bitmap instead of 1.5 MB of
#                           entries (DT_RELR, glibc 2.36 and later; older systems keep the table)
#   --disable-local-rpath   no RUNPATH $ORIGIN: nothing is loaded from beside the binary (it
#                           cost ~50 failed opens at every start, probing hwcaps directories)
#   static libstdc++, libgcc  the Swift runtime is the only C++ in these programs, and loading
#                           libstdc++.so and libgcc_s.so cost 0.5 ms at every start (a C program
#                           linking them: 1.36 against 0.82 ms); linked in, wmctl --version went
#                           from 3.75 to 3.26 ms for 90 KB more binary. The static stdlib's link
#                           arguments say -lstdc++, so a directory holding only libstdc++.a is
#                           searched first. Their symbols stay hidden (--exclude-libs ALL).
RELEASE_BUILD=(--build-path .build-install -c release --static-swift-stdlib --disable-local-rpath
  -Xswiftc -use-ld=lld -Xlinker --no-export-dynamic)
static_cxx=$(clang -print-file-name=libstdc++.a 2>/dev/null || g++ -print-file-name=libstdc++.a 2>/dev/null || true)
if [ -f "$static_cxx" ]; then
  mkdir -p .build-install/static-libstdc++
  ln -sf "$static_cxx" .build-install/static-libstdc++/libstdc++.a
  RELEASE_BUILD+=(-Xlinker -L"$PWD/.build-install/static-libstdc++" -Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
fi
unset static_cxx
glibc_version=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$glibc_version" ] && [ "$(printf '%s\n2.36\n' "$glibc_version" | sort -V | head -1)" = 2.36 ]; then
  RELEASE_BUILD+=(-Xlinker -z -Xlinker pack-relative-relocs)
fi
unset glibc_version
