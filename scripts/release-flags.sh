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
RELEASE_BUILD=(--build-path .build-install -c release --static-swift-stdlib
  -Xswiftc -use-ld=lld -Xlinker --no-export-dynamic)
glibc_version=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$glibc_version" ] && [ "$(printf '%s\n2.36\n' "$glibc_version" | sort -V | head -1)" = 2.36 ]; then
  RELEASE_BUILD+=(-Xlinker -z -Xlinker pack-relative-relocs)
fi
unset glibc_version
