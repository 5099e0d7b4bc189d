#!/usr/bin/env bash
# Regenerates Sources/IPCWire/Generated/*.pb.swift from proto/*.proto.
# Needs protoc (Debian: protobuf-compiler) and builds protoc-gen-swift from the same
# swift-protobuf version the package depends on, so generated code and runtime match.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq -o DPkg::Lock::Timeout=300 protobuf-compiler; }
version=1.39.0
src=.build-protoc/swift-protobuf-$version
if [ ! -x "$src/.build/release/protoc-gen-swift" ]; then
  rm -rf "$src"; mkdir -p .build-protoc
  # The machine's package mirror when it has one, else the project itself.
  origin=https://github.com/apple/swift-protobuf.git
  [ -d /opt/swift-packages/apple/swift-protobuf.git ] && origin=file:///opt/swift-packages/apple/swift-protobuf.git
  git clone -q --depth 1 --branch "$version" "$origin" "$src"
  swift build -c release --package-path "$src" --product protoc-gen-swift
fi
mkdir -p Sources/IPCWire/Generated
protoc --plugin=protoc-gen-swift="$src/.build/release/protoc-gen-swift" \
  --swift_opt=Visibility=Package --swift_out=Sources/IPCWire/Generated \
  -I proto proto/windowbroker.proto
echo "generated: $(ls Sources/IPCWire/Generated)"
