#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root, carrying .gl (loader and
# validation-layer .debs) and the binaries (kvscope, kvscope_tests, cli_test.sh) in
# $KVSCOPE_BIN (default .devbin): the test suite on the GPU, then eval at 32k tokens,
# H=32, G=8, d=128, in decode and prefill, writing JSON to $OUT (or /tmp).
set -u
O=${OUT:-/tmp}
. "$(dirname "$0")/device_env.sh"
gpu_suite
echo "=== eval at 32k"
$B/kvscope synth --out /tmp/s32k.safetensors --heads 32 --kv-heads 8 --dim 128 --tokens 32768
time $B/kvscope eval --capture /tmp/s32k.safetensors --decode --probes 16 --budgets 256,512,1024,2048 --json $O/eval32k_decode.json
time $B/kvscope eval --capture /tmp/s32k.safetensors --prefill --chunk 128 --chunks 8 --budgets 256,512,1024,2048 --json $O/eval32k_prefill.json
$B/kvscope eval --capture /tmp/s32k.safetensors --decode --probes 16 --methods quest,fier --gqa-agg max --budgets 2048 | tail -2
