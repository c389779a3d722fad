#!/usr/bin/env bash
# The forward pass at an 8B shape on the GPU machine, beside its peers in the
# same run: the model-kernel tests (tensor-core linear layers, the tiny
# models, methods in the loop), cuBLAS on the shape's linear layers and the
# copy bandwidth (tools/peers/bench_linear.py), `kvscope speed` in decode and
# prefill, and transformers on the same config (tools/peers/bench_hf.py --config),
# into $OUT. SHAPE (default assets/shapes/llama-3.1-8b.json), LENGTH (32768)
# PARTS (tests,cublas,decode,prefill,hf), CHUNKS (128 2048) and
# PREFILL_METHODS (dense,quoka) choose.
set -u
. tools/dev/device_env.sh
SHAPE=${SHAPE:-assets/shapes/llama-3.1-8b.json}
LENGTH=${LENGTH:-32768}
PARTS=${PARTS:-tests,cublas,decode,prefill,hf}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if has tests; then
  F='*ModelOps*:*TinyModel*:*SelectionInTheLoop*:*ModelRun*'
  KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter="$F" 2>&1 | tail -4
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter="$F" 2>&1 | tail -4
fi
has cublas && python3 tools/peers/bench_linear.py --config $SHAPE --tokens 1,128,2048 | tee $OUT/cublas.jsonl
speed() {  # name, then speed's flags
  local name=$1; shift
  $B/kvscope speed --model $SHAPE --random-weights --length $LENGTH --json $OUT/$name.json "$@" 2>&1 | tail -8
}
has decode && speed decode --regime decode --steps 16 --rounds 2 ${DECODE_FLAGS:-}
if has prefill; then
  for chunk in ${CHUNKS:-128 2048}; do
    speed prefill$chunk --regime prefill --chunk $chunk --rounds 1 --steps 1 --methods ${PREFILL_METHODS:-dense,quoka} --budgets 2048
  done
fi
has hf && python3 tools/peers/bench_hf.py --config $SHAPE --lengths $LENGTH --new-tokens 16 --repeats 2 --modes eager | tee $OUT/hf.jsonl
true
