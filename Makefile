# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= $(shell command -v swift || echo /opt/swift/usr/bin/swift)
BIN = $(shell $(SWIFT) build --show-bin-path)

.PHONY: deps build test demo bench fuzz load proto docs clean install uninstall deb

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

# Process-level tests start the binaries built above; they find them through WINDOWBROKER_BIN_DIR.
# The zygote tests also need notes as it is installed (a static Swift runtime, which only a
# release build with the install flags has): WINDOWBROKER_STATIC_NOTES, with the drawing library
# as installed beside it (the debug one links the shared Swift runtime).
STATIC_NOTES = $(CURDIR)/.build-install/release/notes

test: build
	bash -c 'source scripts/release-flags.sh && $(SWIFT) build "$${RELEASE_BUILD[@]}" --product notes && $(SWIFT) build "$${RELEASE_BUILD[@]}" --product scene-probe'
	bash scripts/build-drawing.sh $(dir $(STATIC_NOTES))
	WINDOWBROKER_BIN_DIR=$(BIN) WINDOWBROKER_STATIC_NOTES=$(STATIC_NOTES) $(SWIFT) test

demo: build
	WINDOWBROKER_BIN_DIR=$(BIN) bash scripts/demo.sh

bench: deps
	bash scripts/bench.sh

# Many control clients at once against a release broker (LOAD_CLIENTS, LOAD_REQUESTS).
load: deps
	bash scripts/load.sh

# libFuzzer over the wire decoder and the value validators (FUZZ_SECONDS, default 60).
fuzz: deps
	bash scripts/fuzz.sh

proto:
	bash scripts/generate-proto.sh

# The SDK reference (DocC) in .build/docs; fails when a public SDK symbol has no summary.
docs: deps
	bash scripts/docs.sh

clean:
	rm -rf .build .build-protoc

# A user install into ~/.local, or anywhere: make install PREFIX=/usr/local DESTDIR=/tmp/stage.
# SYSTEMCTL=1 also enables (and, for uninstall, disables) the socket. See scripts/install.sh.
# It builds what is not built yet and installs no system package (make deps does that).
install:
	SWIFT=$(SWIFT) bash scripts/install.sh install

# A Debian package of the /usr install (units in /usr/lib/systemd/user), checked by lintian:
# sudo apt install ./windowbroker_*.deb. See scripts/deb.sh.
deb:
	@bash scripts/install-deps.sh deb
	SWIFT=$(SWIFT) bash scripts/deb.sh

uninstall:
	bash scripts/install.sh uninstall
