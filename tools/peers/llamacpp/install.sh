#!/usr/bin/env bash
# llama.cpp's Vulkan backend, prebuilt, for the peer program beside it
# (tools/peers/llamacpp/peer.cpp): node-llama-cpp's npm package
# @node-llama-cpp/linux-x64-vulkan (libllama, libggml, the Vulkan and CPU
# backends, built by node-llama-cpp's CI on Ubuntu 22.04), and the headers
# they were built from, out of the llama.cpp git bundle inside the
# node-llama-cpp package of the same version (llama/gitRelease.bundle). Both
# at one pinned version, into a cache that later runs reuse:
#   ${KVSCOPE_LLAMACPP_CACHE:-~/.cache/kvscope/llamacpp}/VERSION/{lib,include,LICENSE,source.txt}
# and prints that folder. Nothing to do where it is already there. Needs npm
# (Debian: apt-get install npm), git and the npm registry; where the registry
# cannot be reached it says so in one line and exits 1. kvscope's build and
# test command never run it: the peer's test is skipped until it has run.
set -euo pipefail

# node-llama-cpp 3.22.1 carries llama.cpp release v0.5.0 (llama/binariesGithubRelease.json).
version=3.22.1
cache=${KVSCOPE_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/llamacpp}
dest=$cache/$version
if [ -f "$dest/source.txt" ]; then
  echo "$dest"
  exit 0
fi

give_up() {
  echo "kvscope: llama.cpp's Vulkan libraries not installed: $1" >&2
  exit 1
}
command -v npm >/dev/null || give_up "npm is not installed (apt-get install npm)"
command -v git >/dev/null || give_up "git is not installed"
npm view "node-llama-cpp@$version" version >/dev/null 2>&1 || give_up "the npm registry cannot be reached (no network?)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@node-llama-cpp/linux-x64-vulkan@$version" "node-llama-cpp@$version" >/dev/null 2>&1) ||
  give_up "npm pack of node-llama-cpp $version failed"
mkdir "$work/bins" "$work/node"
tar -xzf "$work"/node-llama-cpp-linux-x64-vulkan-"$version".tgz -C "$work/bins"
tar -xzf "$work"/node-llama-cpp-"$version".tgz -C "$work/node" package/llama/gitRelease.bundle \
  package/llama/binariesGithubRelease.json
git clone -q --no-checkout "$work/node/package/llama/gitRelease.bundle" "$work/src" 2>/dev/null ||
  give_up "the llama.cpp git bundle of node-llama-cpp $version could not be read"
commit=$(git -C "$work/src" rev-parse HEAD)
release=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$work/node/package/llama/binariesGithubRelease.json")

stage=$dest.partial
rm -rf "$stage"
mkdir -p "$stage/lib" "$stage/include"
cp "$work"/bins/package/bins/linux-x64-vulkan/*.so "$stage/lib/"
# llama.h and what it includes: ggml.h, ggml-cpu.h, ggml-backend.h (ggml-alloc.h), ggml-opt.h, gguf.h.
git -C "$work/src" archive HEAD include/llama.h ggml/include/ggml.h ggml/include/ggml-cpu.h \
  ggml/include/ggml-backend.h ggml/include/ggml-alloc.h ggml/include/ggml-opt.h ggml/include/gguf.h LICENSE |
  tar -x -C "$work/src"
cp "$work"/src/include/llama.h "$work"/src/ggml/include/*.h "$stage/include/"
cp "$work/src/LICENSE" "$stage/LICENSE"
printf 'node-llama-cpp %s, llama.cpp %s (git bundle commit %s)\n' "$version" "$release" "$commit" > "$stage/source.txt"
rm -rf "$dest"
mv "$stage" "$dest"
echo "$dest"
