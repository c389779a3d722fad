#!/usr/bin/env bash
# Run on the GPU machine (device tool), carrying .gl and .devbin: the test suite
# on the GPU with the validation layer, again with its synchronisation checks,
# the CLI contract, and every default bench step at one million tokens.
set -u
O=${OUT:-/tmp}
. "$(dirname "$0")/device_env.sh"
echo "=== bench at 1M tokens (H=32, G=8, d=128)"
$B/kvscope bench --lengths 1048576 --repeat 3 --json $O/bench_1m.json | grep -E "total|read bandwidth"
gpu_suite
echo "=== tests on the GPU, synchronisation validation"
KVSCOPE_TEST_DEVICE=NVIDIA KVSCOPE_TEST_SYNC_VALIDATION=1 $B/kvscope_tests --gtest_brief=1 >$O/sync.log 2>&1
echo "validation messages: $(grep -c 'vulkan validation' $O/sync.log)"; tail -2 $O/sync.log
