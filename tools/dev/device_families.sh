#!/usr/bin/env bash
# The families beyond Llama against transformers on the GPU machine, into
# $OUT: tiny random Qwen3 (GQA/MHA, tied/untied, bf16/fp16) and YaRN-scaled
# Llama models written by transformers (tiny_families.py), each through
# `kvscope generate --logits` on a prompt past the YaRN model's original
# context, then compare_logits.py (transformers in fp32 on the same ids);
# then `kvscope speed` at the Qwen3-8B shape with random weights (docs/model.md).
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=/tmp/families
python3 tools/dev/tiny_families.py --tokenizer assets/models/llama-debian-5m --out $F > /tmp/families.txt
head -c 4000 assets/text/licenses.txt > /tmp/family_prompt.txt  # a fixed text (docs/model.md's table used the README of its day)
for dir in $(cat /tmp/families.txt); do
  name=$(basename $dir)
  $B/kvscope generate --model $dir --prompt-file /tmp/family_prompt.txt --steps 1 --logits /tmp/$name.safetensors > /dev/null ||
    { echo "$name: generate failed"; continue; }
  echo "=== $name"
  python3 tools/dev/compare_logits.py --model $dir --kvscope /tmp/$name.safetensors | tee $OUT/$name.json
done
$B/kvscope speed --model assets/shapes/qwen3-8b.json --random-weights --length ${LENGTH:-32768} --regime decode \
  --chunk 2048 --steps 16 --rounds 2 --methods dense,quest,fier --budgets 2048 --json $OUT/qwen3-8b.json 2>&1 | tail -6
