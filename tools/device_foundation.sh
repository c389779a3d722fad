#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, with .gl (../shared/tools/gpu-vulkan-loader.sh,
# plus vulkan-validationlayers' .deb) and
# the binaries (kvscope, kvscope_tests, cli_test.sh) in $KVSCOPE_BIN (default .devbin) carried:
# devices, the test suite on the GPU, synth+info at 32k, dense attention timings, PyTorch SDPA.
set -u
. "$(dirname "$0")/device_env.sh"
echo "=== devices"; $B/kvscope devices
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
gpu_suite
echo "=== synth + info at 32k"
time $B/kvscope synth --out /tmp/s32k.safetensors --heads 32 --kv-heads 8 --dim 128 --tokens 32768 --layers 1
$B/kvscope info /tmp/s32k.safetensors
echo "=== dense at 32k"
$B/kvscope dense --capture /tmp/s32k.safetensors --decode --probes 1 --repeat 200 --check
$B/kvscope dense --capture /tmp/s32k.safetensors --decode --probes 64 --repeat 50 --check
$B/kvscope dense --capture /tmp/s32k.safetensors --prefill --chunk 128 --repeat 50
$B/kvscope --debug dense --capture /tmp/s32k.safetensors --prefill --chunk 128 --chunk-index 40 --check
echo "=== dense at 8k and 128k"
for T in 8192 131072; do
  $B/kvscope synth --out /tmp/s.safetensors --heads 32 --kv-heads 8 --dim 128 --tokens $T --layers 1 >/dev/null
  $B/kvscope dense --capture /tmp/s.safetensors --decode --probes 1 --repeat 200 | grep -E "^(dense|total)"
  $B/kvscope dense --capture /tmp/s.safetensors --prefill --chunk 128 --repeat 20 | grep -E "^(dense|total)"
done
echo "=== torch"
python3 tools/bench_torch.py --tokens 8192,32768,131072
