#!/usr/bin/env bash
# tools/build_glslang.sh where Debian's archive cannot be reached (an archive
# address where nothing listens, an empty cache): it must exit 0 and say so in one line, so
# that the set-up goes on and the build leaves the cooperative-matrix-2
# kernels out. (Where the system's glslang already writes them it has nothing
# to fetch and says nothing.)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
if glslangValidator --quiet -V --target-env vulkan1.3 -o "$cache/probe.spv" "$root/shaders/probes/cooperative_matrix2.comp" >/dev/null 2>&1; then
  echo "ok: the system's glslang writes the probe; nothing to fetch"
  exit 0
fi
KVSCOPE_TOOLCHAIN_CACHE="$cache/toolchain" KVSCOPE_DEBIAN_ARCHIVE=http://127.0.0.1:9/debian \
  bash "$root/tools/build_glslang.sh" >"$cache/out" 2>"$cache/err"
status=$?
[ "$status" = 0 ] || { echo "FAIL: exit $status"; cat "$cache/err"; exit 1; }
[ "$(wc -l <"$cache/err")" = 1 ] && grep -q "no glslang with GL_NV_cooperative_matrix2" "$cache/err" ||
  { echo "FAIL: expected one line naming what is left out, got:"; cat "$cache/err"; exit 1; }
[ ! -e "$cache/toolchain/bin/glslang" ] || { echo "FAIL: a glslang was left in the cache"; exit 1; }
echo "ok: offline, one line and exit 0: $(cat "$cache/err")"
