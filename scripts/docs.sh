#!/usr/bin/env bash
# The SDK reference: DocC (swift-docc-plugin) renders SceneWorker and IPCWire, their catalogs
# (Sources/*/*.docc) and every doc comment, into one static site in .build/docs. Then every
# public symbol of the SDK is checked for a summary: an undocumented one fails the build.
# Serve it with: python3 -m http.server --directory .build/docs 8000
#   then open http://localhost:8000/documentation/sceneworker
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DOCS_OUTPUT:-.build/docs}
rm -rf "$out"; mkdir -p "$out"
swift package --allow-writing-to-directory "$out" generate-documentation \
  --target IPCWire --target SceneWorker --enable-experimental-combined-documentation \
  --output-path "$out" --transform-for-static-hosting --warnings-as-errors
python3 - "$out" <<'PY'
import json, pathlib, sys
root = pathlib.Path(sys.argv[1]) / "data" / "documentation"
pages, missing = 0, []
for module in ("sceneworker", "ipcwire"):
    for page in sorted((root / module).rglob("*.json")):
        data = json.loads(page.read_text())
        meta = data.get("metadata", {})
        pages += 1
        url = data.get("identifier", {}).get("url", "")
        # The protobuf messages (Windowbroker_V1_*) are generated from proto/windowbroker.proto,
        # whose comments document them; extension containers have no source of their own.
        if meta.get("role") != "symbol" or "Windowbroker_V1" in url or meta.get("symbolKind") == "extension":
            continue
        if not data.get("abstract"):
            missing.append(url.removeprefix("doc://"))
print(f"docs: {pages} pages in {sys.argv[1]}")
if missing:
    print(f"docs: {len(missing)} public symbols without a summary:")
    for url in missing:
        print("  " + url)
    sys.exit(1)
PY
echo "docs: open http://localhost:8000/documentation/sceneworker after: python3 -m http.server --directory $out 8000"
