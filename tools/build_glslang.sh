#!/usr/bin/env bash
# A glslang that writes VK_NV_cooperative_matrix2 kernels, and a spirv-val that
# checks them, for the tensor-core kernels (*_cm2.comp). Debian 12's glslang
# (12.0) and spirv-val (SPIRV-Tools 2023.1) predate the extension; Debian 13's
# source packages (glslang 15.1, SPIRV-Tools 2025.1, SPIRV-Headers of Vulkan
# SDK 1.4.309) build on Debian 12. This fetches those three sources from
# Debian's archive through a private apt sources list (a deb-src line for
# trixie; the system's apt set-up is untouched), builds only glslang-standalone
# and spirv-val, and keeps the two binaries in a cache that later runs reuse:
#   ${KVSCOPE_TOOLCHAIN_CACHE:-~/.cache/kvscope/toolchain}/bin/{glslang,spirv-val}
# Nothing to do where the system's glslangValidator already compiles
# shaders/probes/cooperative_matrix2.comp (Debian 13, a LunarG SDK). Where none
# can be had (no network), it says so in one line and exits 0: the build then
# leaves the cooperative-matrix-2 kernels out. tools/setup.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${KVSCOPE_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/toolchain}
probe=shaders/probes/cooperative_matrix2.comp
packages=(glslang spirv-tools spirv-headers)

writes_probe() {  # glslang, spirv-val
  local out
  out=$(mktemp)
  "$1" --quiet -V --target-env vulkan1.3 -o "$out" "$probe" >/dev/null 2>&1 &&
    "$2" --target-env vulkan1.3 "$out" >/dev/null 2>&1
  local status=$?
  rm -f "$out"
  return $status
}

if command -v glslangValidator >/dev/null && command -v spirv-val >/dev/null &&
   writes_probe glslangValidator spirv-val; then
  exit 0
fi
if [ -x "$cache/bin/glslang" ] && [ -x "$cache/bin/spirv-val" ] && writes_probe "$cache/bin/glslang" "$cache/bin/spirv-val"; then
  exit 0
fi

give_up() {
  echo "kvscope: no glslang with GL_NV_cooperative_matrix2 ($1); the build leaves the cooperative-matrix-2 kernels out" >&2
  exit 0
}

start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
# KVSCOPE_DEBIAN_ARCHIVE: another mirror of Debian's archive (tests point it nowhere).
echo "deb-src ${KVSCOPE_DEBIAN_ARCHIVE:-http://deb.debian.org/debian} trixie main" > "$work/sources.list"
apt_options=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1
             -o APT::Sandbox::User="$(id -un)")
apt-get "${apt_options[@]}" -qq update >/dev/null 2>&1
compgen -G "$work/lists/*_Sources*" >/dev/null || give_up "Debian's trixie sources index could not be fetched: no network?"
# Each package's upstream tarball, checked against the hash the signed index gives.
uris=$(apt-get "${apt_options[@]}" source --print-uris "${packages[@]}" 2>/dev/null | grep "\.orig\.tar\.") ||
  give_up "apt lists no source for ${packages[*]}"
mkdir -p "$work/src"
while read -r uri file _ hash; do
  uri=${uri//\'/}
  /usr/lib/apt/apt-helper download-file "$uri" "$work/$file" "$hash" >/dev/null 2>&1 || give_up "fetching $file failed"
  tar -xf "$work/$file" -C "$work/src"
done <<< "$uris"
glslang_src=$(echo "$work"/src/glslang-*)
tools_src=$(echo "$work"/src/*SPIRV-Tools*)
headers_src=$(echo "$work"/src/spirv-headers-*)
jobs=$(nproc)
{
  cmake -S "$glslang_src" -B "$work/glslang" -DCMAKE_BUILD_TYPE=Release -DENABLE_OPT=OFF -DENABLE_HLSL=OFF \
        -DGLSLANG_TESTS=OFF -DENABLE_GLSLANG_JS=OFF &&
  cmake --build "$work/glslang" -j"$jobs" --target glslang-standalone &&
  cmake -S "$tools_src" -B "$work/spirv-tools" -DCMAKE_BUILD_TYPE=Release -DSPIRV-Headers_SOURCE_DIR="$headers_src" \
        -DSPIRV_SKIP_TESTS=ON -DSPIRV_WERROR=OFF &&
  cmake --build "$work/spirv-tools" -j"$jobs" --target spirv-val
} > "$work/build.log" 2>&1 || { tail -20 "$work/build.log" >&2; give_up "building Debian 13's glslang failed"; }
mkdir -p "$cache/bin"
cp "$work/glslang/StandAlone/glslang" "$work/spirv-tools/tools/spirv-val" "$cache/bin/"
writes_probe "$cache/bin/glslang" "$cache/bin/spirv-val" || give_up "the glslang built cannot write $probe"
echo "kvscope: built glslang and spirv-val of Debian 13 into $cache/bin in $(( $(date +%s) - start )) s"
