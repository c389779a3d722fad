#!/usr/bin/env bash
# The llama.cpp peer and the libraries it loads, for a machine without npm or
# network (the lent GPU machine: tools/dev/device_llamacpp.sh), as one
# xz tarball in an ignored folder of the repository:
#   tools/peers/llamacpp/pack.sh [DIR]      (default .llamacpp)
# DIR/llamacpp-vulkan.tar.xz holds bin/llamacpp_peer and lib/ with libllama,
# libggml, libggml-base, the Vulkan backend and two CPU backends (x64, and
# haswell: AVX2; llama.cpp wants one, the best that runs is chosen), all
# stripped: about 6.5 MB for 56 MB unpacked. Builds the peer first
# (build.sh), adds DIR to .git/info/exclude and prints the tarball's size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
dir=${1:-$repo/.llamacpp}
exclude=$(git -C "$repo" rev-parse --git-path info/exclude)
case $exclude in /*) ;; *) exclude=$repo/$exclude ;; esac
mkdir -p "$(dirname "$exclude")"
entry=/$(realpath --relative-to="$repo" "$dir")/
grep -qxF "$entry" "$exclude" 2>/dev/null || echo "$entry" >> "$exclude"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$here/build.sh" "$work/bin" >/dev/null
mkdir -p "$work/pack/bin" "$work/pack/lib"
cp "$work/bin/llamacpp_peer" "$work/pack/bin/"
for f in "$work"/lib/libllama.*.so "$work"/lib/libggml.*.so "$work"/lib/libggml-base.so "$work"/lib/libggml-vulkan.so \
         "$work"/lib/libggml-cpu-x64.so "$work"/lib/libggml-cpu-haswell.so; do
  cp "$f" "$work/pack/lib/"
done
cache=${KVSCOPE_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/llamacpp}
cp "$cache/$(sed -n 's/^version=//p' "$here/install.sh")/LICENSE" "$work/pack/lib/LICENSE.llama.cpp"
strip --strip-unneeded "$work"/pack/bin/* "$work"/pack/lib/*.so
mkdir -p "$dir"
tar -C "$work/pack" -cf - bin lib | xz -9 -T0 > "$dir/llamacpp-vulkan.tar.xz"
echo "$dir/llamacpp-vulkan.tar.xz: $(du -h "$dir/llamacpp-vulkan.tar.xz" | cut -f1) ($(du -sh "$work/pack" | cut -f1) unpacked)"
