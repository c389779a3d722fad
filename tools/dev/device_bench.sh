#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, carrying .gl and the binaries in
# $KVSCOPE_BIN (default .devbin): the test suite on the GPU, kvscope bench at the issue's
# sizes (JSON to $OUT or /tmp), and the PyTorch baselines at the same sizes. nvidia-smi
# samples the clocks every 50 ms into smi.csv beside the JSON, so a slow run can be checked
# against them (an idle H100 drops its SM clock to 345 MHz: docs/perf.md).
set -u
O=${OUT:-/tmp}
exec > >(tee "$O/device_bench.log") 2>&1  # the whole log: the device tool returns only its tail
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader -lms 50 \
  > "$O/smi.csv" 2>/dev/null &
smi=$!
gpu_suite
echo "=== kvscope bench"
$B/kvscope bench --lengths 8192,32768,131072 --budget 2048 --prefill-budget 1024 --chunk 128 --repeat 50 --kernel-stats --json $O/bench.json
echo "=== torch"
python3 tools/peers/bench_torch.py --tokens 8192,32768,131072 --kvscope $O/bench.json "$@"
kill $smi 2>/dev/null
