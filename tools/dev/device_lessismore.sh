#!/usr/bin/env bash
# LessIsMore beside the other methods, on the GPU machine, into $OUT/lim.tgz.
# PART=model (carry .devbin holding kvscope, .m27a holding llama-debian-27m's
# folder, and the Vulkan loader's .debs without the validation layer, with
# KVSCOPE_GL naming their folder: the 64 MiB that travel hold the model only
# with the bundled captures and the 5m model's weights left behind, untracked
# for the call): kvscope needle, passkey and key-value, 2k-16k,
# decode with every method a model run takes (docs/results.md's tables and
# heatmaps), prefill with dense, QuoKA and LessIsMore; kvscope ppl in both
# regimes; a 16k passkey capture of every layer and kvscope eval on it.
# PART=speed (carry .gl, and .devbin holding kvscope and kvscope_tests):
# kvscope speed at Llama-3.1-8B's shape with random weights, decode at 32k
# and 128k, dense, Quest and LessIsMore; then LessIsMore's GPU tests.
# The 27m model has 8 layers: LessIsMore chooses at layers 2 and 4 there
# (--lim-correction 4; the default 9 is the paper's code's, for 32 layers).
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R=/tmp/lim; mkdir -p $R
K="$B/kvscope"
if [ "${PART:-model}" = model ]; then
  M=.m27a
  common="--model $M --lengths 2048,8192,16384 --depths 0.1,0.3,0.5,0.7,0.9 --lim-correction 4 --budgets 32,64,128,256,1024"
  for task in passkey kv; do
    start=$(date +%s)
    $K needle $common --task $task --methods dense,quest,fier,streaming,quoka,tova,sparq,lessismore --regime decode \
      --json $R/needle_${task}_decode.json --plot $R/needle_${task}_decode.png > $R/needle_${task}_decode.txt 2>&1
    rc=$?; echo "needle $task decode: $(( $(date +%s) - start )) s, rc $rc"
    start=$(date +%s)
    $K needle $common --task $task --methods dense,quoka,lessismore --regime prefill \
      --json $R/needle_${task}_prefill.json > $R/needle_${task}_prefill.txt 2>&1
    rc=$?; echo "needle $task prefill: $(( $(date +%s) - start )) s, rc $rc"
  done
  start=$(date +%s)
  $K ppl --model $M --length 8192 --scored 512 --methods dense,quest,quoka,lessismore --budgets 64,256,1024 \
    --lim-correction 4 --regime both --json $R/ppl.json > $R/ppl.txt 2>&1
  echo "ppl: $(( $(date +%s) - start )) s"; cat $R/ppl.txt
  $K capture --model $M --passkey --length 16384 --depth 0.5 --seed 1 --layers all --out /tmp/all16k.safetensors > $R/capture.txt 2>&1
  for regime in decode prefill; do
    $K eval --capture /tmp/all16k.safetensors --methods oracle,quest,fier,quoka,sampleattention,lessismore --budgets 1%,6% \
      --$regime --lim-correction 4 --probes 64 --chunks 8 --json $R/eval_$regime.json > $R/eval_$regime.txt 2>&1
    tail -3 $R/eval_$regime.txt
  done
else
  for length in 32768 131000; do
    echo "=== $length"
    $K speed --model assets/shapes/llama-3.1-8b.json --random-weights --regime decode --length $length --chunk 2048 \
      --methods dense,quest,lessismore --budgets 1024,2048,4096 --json $R/speed_$length.json 2>&1 | grep -v "^kvscope: note"
  done
  # With the validation layer (in .gl, not in the smaller set the model part carries), then without.
  F='*lessismore*:*SelectionInTheLoop*:*MethodTable*:*TopK*'
  KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | tail -2
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | tail -2
fi
tar -C $R -czf "$OUT/lim.tgz" .
