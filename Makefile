# The two commands a newcomer needs: `make demo` and `make test`.
SWIFT ?= $(shell command -v swift || echo /opt/swift/usr/bin/swift)
BIN = $(shell $(SWIFT) build --show-bin-path)

.PHONY: deps build test demo bench proto clean

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

proto:
	bash scripts/generate-proto.sh

clean:
	rm -rf .build .build-protoc
