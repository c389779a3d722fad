#!/usr/bin/env bash
# Run on the GPU machine (device tool), carrying .gl and .devbin: the test suite
# on the GPU, then `kvscope bench` with every method (H2O, O(T^2), at 8k only),
# and `kvscope eval` of every method on the bundled capture at budgets 256-4096.
set -u
O=${OUT:-/tmp}
. "$(dirname "$0")/device_env.sh"
gpu_suite
echo "=== kvscope bench"
$B/kvscope bench --lengths 32768,131072 --repeat 30 --json $O/bench.json
$B/kvscope bench --lengths 8192 --repeat 10 --steps h2o-decode,snapkv-decode,sampleattention-decode
echo "=== kvscope eval, bundled capture"
$B/kvscope eval --capture assets/synthetic-default.safetensors --decode --probes 16 \
  --methods dense,oracle,quoka,quest,fier,streaming,keydiff,tova,sparq,loki,snapkv,h2o,sampleattention \
  --budgets 256,512,1024,2048,4096
