#!/usr/bin/env bash
# Installs kvscope's Debian 12 packages (when missing) and builds it into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ clang libclang-rt-14-dev make pkg-config glslang-tools libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers
          nlohmann-json3-dev libgtest-dev libimgui-dev libglfw3-dev libstb-dev xvfb xauth fonts-dejavu-core python3)
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

# lavapipe and the loader want a runtime dir; CI shells often lack one.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
