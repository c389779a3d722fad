#!/usr/bin/env bash
# Builds the llama.cpp peer (peer.cpp, ggml_ops.cpp) against the prebuilt
# libraries install.sh put in the cache, into that cache's bin/ (or OUT_DIR):
#   tools/peers/llamacpp/build.sh [OUT_DIR]
# prints the program's path. The program finds the libraries at ../lib beside
# it (its RUNPATH and where it loads ggml's backends from), so bin/ and lib/
# travel together (pack.sh). Needs g++ with C++20 and Vulkan's headers and
# loader (libvulkan-dev); exits 1 in one line where install.sh has not run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KVSCOPE_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/llamacpp}
version=$(sed -n 's/^version=//p' "$here/install.sh")
dest=$cache/$version
[ -f "$dest/source.txt" ] ||
  { echo "kvscope: llama.cpp's libraries are not in $dest: run tools/peers/llamacpp/install.sh first" >&2; exit 1; }
out=${1:-$dest/bin}
mkdir -p "$out"
lib=$dest/lib
llama=$(cd "$lib" && ls libllama.*.so | head -1)  # libllama.vulkan.v0.5.0.so: node-llama-cpp's names
ggml=$(cd "$lib" && ls libggml.*.so | head -1)
g++ -std=c++20 -O2 -Wall -Wextra -I"$dest/include" -DPEER_SOURCE="\"$(head -1 "$dest/source.txt")\"" \
  "$here/peer.cpp" "$here/ggml_ops.cpp" -L"$lib" -l:"$llama" -l:"$ggml" -l:libggml-base.so -lvulkan \
  -Wl,-rpath,'$ORIGIN/../lib' -o "$out/llamacpp_peer"
# Where OUT_DIR is not the cache's bin/, the libraries go beside it as ../lib.
if [ "$(realpath "$out")" != "$(realpath "$dest/bin")" ]; then
  mkdir -p "$out/../lib"
  cp "$lib"/*.so "$out/../lib/"
fi
echo "$out/llamacpp_peer"
