# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= $(shell command -v swift || echo /opt/swift/usr/bin/swift)
BIN = $(shell $(SWIFT) build --show-bin-path)

.PHONY: deps build test demo bench fuzz load proto clean install uninstall

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

# Process-level tests start the binaries built above; they find them through WINDOWBROKER_BIN_DIR.
test: build
	WINDOWBROKER_BIN_DIR=$(BIN) $(SWIFT) test

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

clean:
	rm -rf .build .build-protoc

# A user install: binaries to ~/.local/bin, units to ~/.config/systemd/user, the bundled app
# manifests to ~/.local/share/windowbroker/apps. Then: systemctl --user enable --now windowbroker.socket
PREFIX ?= $(HOME)/.local
UNIT_DIR ?= $(HOME)/.config/systemd/user

install: deps
	$(SWIFT) build -c release
	install -d $(PREFIX)/bin $(UNIT_DIR) $(PREFIX)/share/windowbroker/apps $(PREFIX)/share/doc/windowbroker
	install -m 0755 $$($(SWIFT) build -c release --show-bin-path)/windowbrokerd $(PREFIX)/bin/
	install -m 0755 $$($(SWIFT) build -c release --show-bin-path)/wmctl $(PREFIX)/bin/
	install -m 0755 $$($(SWIFT) build -c release --show-bin-path)/notes $(PREFIX)/bin/
	install -m 0644 apps/*.json $(PREFIX)/share/windowbroker/apps/
	install -m 0644 README.md config/windowbrokerd.conf.example $(PREFIX)/share/doc/windowbroker/
	install -m 0644 systemd/windowbroker.socket systemd/windowbroker.service $(UNIT_DIR)/
	@echo "installed; enable with: systemctl --user daemon-reload && systemctl --user enable --now windowbroker.socket"

uninstall:
	-systemctl --user disable --now windowbroker.socket windowbroker.service 2>/dev/null
	rm -f $(PREFIX)/bin/windowbrokerd $(PREFIX)/bin/wmctl $(PREFIX)/bin/notes
	rm -f $(PREFIX)/share/windowbroker/apps/notes.json $(PREFIX)/share/windowbroker/apps/notes-single.json
	rm -rf $(PREFIX)/share/doc/windowbroker
	rm -f $(UNIT_DIR)/windowbroker.socket $(UNIT_DIR)/windowbroker.service
	@echo "uninstalled (sessions in \$$XDG_STATE_HOME/windowbroker are kept)"
