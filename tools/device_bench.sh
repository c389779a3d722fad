#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, carrying .gl and the binaries in
# $KVSCOPE_BIN (default .devbin): the test suite on the GPU, kvscope bench at the issue's
# sizes (JSON to $OUT or /tmp), and the PyTorch baselines at the same sizes.
set -u
O=${OUT:-/tmp}
. "$(dirname "$0")/device_env.sh"
gpu_suite
echo "=== kvscope bench"
$B/kvscope bench --lengths 8192,32768,131072 --budget 2048 --prefill-budget 1024 --chunk 128 --repeat 50 --kernel-stats --json $O/bench.json
echo "=== torch"
python3 tools/bench_torch.py --tokens 8192,32768,131072 "$@"
