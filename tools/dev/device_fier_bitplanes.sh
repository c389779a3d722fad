#!/usr/bin/env bash
# Fier's scores in bit-plane form against today's kernel on the GPU machine
# (docs/perf-experiments.md, "Fier's scores in bit-plane form"): the float64
# cases of both kernels, then kvscope bench's fier-decode step at 32k and 128k,
# GQA (32/8) and MHA (32/32), the two kernels alternated twice in one call.
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter='*FierBitplane*:*ScoresTest*fier*:*fier*' 2>&1 | tail -3
for round in 1 2; do
  for kv in 8 32; do
    for bitplanes in 0 1; do
      echo "=== round $round, kv-heads $kv, KVSCOPE_FIER_BITPLANES=$bitplanes"
      KVSCOPE_FIER_BITPLANES=$bitplanes $B/kvscope bench --lengths 32768,131072 --kv-heads $kv --budget 2048 \
        --steps fier-decode --repeat 50 --json ${OUT:-/tmp}/fier_${round}_${kv}_$bitplanes.json 2>&1 |
        grep -E "approx_scores|fier decode +total|read bandwidth"
    done
  done
done
