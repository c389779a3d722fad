#!/usr/bin/env bash
# ggml's block types as kvscope reads them against ggml's own library, bit for
# bit (tests/ggml_blocks_oracle.cpp), built against the llama.cpp peer's
# cached libraries. Exit 77 (ctest: skipped) where they are not in the cache:
# tools/peers/llamacpp/install.sh fetches them from npm, which kvscope's build
# and CI never do.
#   ggml_blocks_oracle_test.sh
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${KVSCOPE_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/llamacpp}
version=$(sed -n 's/^version=//p' "$repo/tools/peers/llamacpp/install.sh")
dest=$cache/$version
[ -f "$dest/source.txt" ] || {
  echo "SKIP: llama.cpp's prebuilt libraries are not in $dest (tools/peers/llamacpp/install.sh fetches them from npm)"
  exit 77
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++20 -O2 -I"$repo/engine" -I"$dest/include" "$repo/tests/ggml_blocks_oracle.cpp" \
  "$repo/engine/formats/ggml_blocks.cpp" "$repo/engine/formats/ggml_quantize.cpp" -L"$dest/lib" -l:libggml-base.so \
  -Wl,-rpath,"$dest/lib" -o "$work/oracle" ||
  { echo "FAIL: the oracle did not build"; exit 1; }
"$work/oracle"
