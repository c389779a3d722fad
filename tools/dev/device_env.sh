# Sourced by tools/dev/device_*.sh on the GPU machine: unpacks the carried Vulkan
# loader and validation-layer .debs (.gl/: see tools/dev/README.md) and points
# the loader at NVIDIA's driver when it finds none. B is the folder of carried
# binaries ($KVSCOPE_BIN, default .devbin), GL that of the .debs ($KVSCOPE_GL,
# default .gl; the loader alone, without the validation layer, is 0.4 MB).
# The binaries link ICU, which the machine lacks: its .deb (libicu72) is
# unpacked from .icu/ where carried, and Debian's word list (RULER's words)
# from a wamerican .deb among the binaries.
B=${KVSCOPE_BIN:-./.devbin}
GL=${KVSCOPE_GL:-.gl}
for f in "$GL"/*.deb .icu/*.deb "$B"/wamerican_*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
"$B/kvscope" devices 2>/dev/null | grep -q NVIDIA ||
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp

# The whole test suite on the GPU with the validation layer, again without it
# (so the tensor-core kernels run their VK_KHR_cooperative_matrix versions,
# which the carried layer, 1.3.239, predates: vk::Device::khr_cooperative_matrix),
# then the CLI contract.
gpu_suite() {
  echo "=== tests on the GPU"
  KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 2>&1 | tail -4
  echo "=== tests on the GPU without the validation layer (KHR cooperative matrices)"
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 2>&1 | tail -4
  tests/cli_test.sh $B/kvscope 2>&1 | tail -1
}

# The first kvscope run of a fresh machine's call measured up to 38% slower
# than the same run after it (the linear layers of a 2,048-token chunk, 213
# against 155 ms, H100, 2026-12-07): one throwaway prefill first.
warm_up() {
  $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --length 4096 --regime prefill \
    --chunk 2048 --rounds 1 --steps 1 --methods dense >/dev/null 2>&1
}
