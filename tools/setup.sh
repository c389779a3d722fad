#!/usr/bin/env bash
# Installs kvscope's Debian 12 packages (when missing) and builds it into build/.
#   bash tools/setup.sh          the CLI, the viewer and the Python module: what
#                                the quick start runs
#   bash tools/setup.sh --tests  everything ctest runs too: the test suite, its
#                                sanitized copy and the fuzzers (clang), with the
#                                validation layers and Xvfb they need, and Slurm
#                                and munge for the array-job test
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=OFF
case "${1:-}" in
  "") ;;
  --tests) tests=ON ;;
  *) echo "usage: bash tools/setup.sh [--tests]" >&2; exit 2 ;;
esac

packages=(cmake g++ make pkg-config glslang-tools libvulkan-dev mesa-vulkan-drivers nlohmann-json3-dev libicu-dev
          libimgui-dev libglfw3-dev libstb-dev python3-dev pybind11-dev python3-numpy python3-matplotlib wamerican)
[ $tests = ON ] && packages+=(clang libclang-rt-14-dev vulkan-validationlayers libgtest-dev xvfb xauth
                              fonts-dejavu-core python3 python3-pytest dpkg-dev file
                              slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# glslang and spirv-val of Debian 13 for the VK_NV_cooperative_matrix2 kernels,
# built once into a cache (about 2 minutes on 2 cores; nothing on later runs).
bash tools/build_glslang.sh

# lavapipe and the loader want a runtime dir; CI shells often lack one.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# The quick start leaves an existing build's choice alone, so that running it
# after the test command keeps the tests configured.
# A unity build (8 sources a compile) takes a quarter less time from scratch
# (the sanitized copy of the suite: 204 against 276 s on 2 cores); a
# developer's own `cmake -B` keeps one compile a source.
if [ $tests = ON ] || [ ! -f build/CMakeCache.txt ]; then
  # Debian's python3, where its packages (numpy, pytest) are, whatever else is on PATH.
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKVSCOPE_BUILD_TESTS=$tests -DCMAKE_UNITY_BUILD=ON \
        -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
else
  cmake -S . -B build >/dev/null  # probes again for the glslang build_glslang.sh may just have built
fi
if [ $tests = ON ]; then
  cmake --build build -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target kvscope kvscope-viewer kvscope_python
fi
