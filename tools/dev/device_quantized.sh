#!/usr/bin/env bash
# Quantized weights on the GPU machine, in one call (docs/perf.md "Quantized
# weights"): carry .gl, .icu and .devbin (kvscope, kvscope_tests). PARTS
# (default tests,quest,llama8b,prefill,floor) chooses:
#   tests    the block kernels' tests and the model's (kvscope_tests, no
#            validation layer), and llama.cpp's quantized files through
#            kvscope against the logits llama.cpp recorded on them
#   quest    Quest's setting: LongChat-7B's shape (MHA 32/32) at 30,000 and
#            32,700 tokens, dense, Quest (budget 2,048, pages of 16) and Fier
#            (budget 2,048) decoding on the same weights, for TYPES (q4_k,
#            q4_1, f16)
#   llama8b  the Llama-3.1-8B shape, Q4_K, the same three at 32k and 128k
#   widen    the 8B Q4_K dense step at 32k with each matrix widened to fp16
#            first (KVSCOPE_MATVEC_READS_BLOCKS=0), the CPUs' path
#   prefill  the Llama-3.1-8B shape's time to the first token at 32k, F16
#            against Q4_K (chunks of 2,048)
#   slices   the 8B dense step at 32k in Q4_K with every product in 1, 2 and
#            4 slices (KVSCOPE_MATVEC_SLICES), and in F16, the driver's
#            statistics of each kernel (registers, instructions) in the JSON
#   floor    cuBLAS's one-token products and the copy bandwidth
#            (tools/peers/bench_linear.py): the decode step's memory floor
# TEST_FILTER narrows the tests' gtest filter; QUEST_LENGTHS (30000 32700) and LLAMA_LENGTHS (32768 131000) choose the
# lengths. Results into $OUT (a JSON a run, cublas.jsonl).
set -u
. tools/dev/device_env.sh
O=${OUT:-/tmp}
PARTS=${PARTS:-tests,quest,llama8b,widen,prefill,floor}
TYPES=${TYPES:-q4_k q4_1 f16}
QUEST_LENGTHS=${QUEST_LENGTHS:-30000 32700}
LLAMA_LENGTHS=${LLAMA_LENGTHS:-32768 131000}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rows() { grep -aE "^(speed|weights|dense|quest|fier|method|kvscope)"; }

if has tests; then
  tokenizers=$(strings "$B/kvscope_tests" | grep -m1 '/build/tests/tokenizers$' || true)
  [ -n "$tokenizers" ] && mkdir -p "$tokenizers" && tar xf tests/data/tokenizers.tar.xz -C "$tokenizers"
  echo "=== block kernels and the model on the GPU [${SECONDS} s]"
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 \
    --gtest_filter="${TEST_FILTER:-*ModelOpsByBlocks*:*BlockOps*:*GgufModel*:*ModelOps*:*TinyModel*}" 2>&1 | tail -4
  echo "=== llama.cpp's quantized files through kvscope on the GPU [${SECONDS} s]"
  tests/llamacpp_quantized_test.sh "$B/kvscope" python3 2>&1 | tail -6
fi
warm_up
if has quest; then
  for type in $TYPES; do
    for length in $QUEST_LENGTHS; do
      echo "=== LongChat-7B, $type, $length tokens [${SECONDS} s]"
      $B/kvscope speed --model assets/shapes/longchat-7b-v1.5-32k.json --random-weights --weight-type "$type" \
        --regime decode --length "$length" --chunk 2048 --methods dense,quest,fier --budgets 2048 --steps 16 --rounds 2 \
        --json "$O/longchat_${type}_$length.json" 2>&1 | rows
    done
  done
fi
if has llama8b; then
  for length in $LLAMA_LENGTHS; do
    echo "=== Llama-3.1-8B, q4_k, $length tokens [${SECONDS} s]"
    $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --weight-type q4_k --regime decode \
      --length "$length" --chunk 2048 --methods dense,quest,fier --budgets 2048 --steps 16 --rounds 2 \
      --json "$O/llama8b_q4_k_$length.json" 2>&1 | rows
  done
fi
if has widen; then
  echo "=== Llama-3.1-8B, q4_k, 32k, each matrix widened first (KVSCOPE_MATVEC_READS_BLOCKS=0) [${SECONDS} s]"
  KVSCOPE_MATVEC_READS_BLOCKS=0 $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --weight-type q4_k \
    --regime decode --length 32768 --chunk 2048 --methods dense --steps 16 --rounds 2 --json "$O/widen8b_q4_k.json" 2>&1 | rows
fi
if has slices; then
  for slices in 1 2 4; do
    echo "=== Llama-3.1-8B, q4_k, 32k, dense, $slices slices [${SECONDS} s]"
    KVSCOPE_MATVEC_SLICES=$slices $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights \
      --weight-type q4_k --regime decode --length 32768 --chunk 2048 --methods dense --steps 16 --rounds 2 --kernel-stats \
      --json "$O/slices8b_q4_k_$slices.json" 2>&1 | rows
  done
  echo "=== Llama-3.1-8B, f16, 32k, dense [${SECONDS} s]"
  $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --weight-type f16 --regime decode \
    --length 32768 --chunk 2048 --methods dense --steps 16 --rounds 2 --kernel-stats --json "$O/slices8b_f16.json" 2>&1 | rows
fi
if has prefill; then
  for type in f16 q4_k; do
    echo "=== Llama-3.1-8B, $type, time to the first token at 32k [${SECONDS} s]"
    $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --weight-type "$type" --regime prefill \
      --length 32768 --chunk 2048 --methods dense --steps 1 --rounds 2 --json "$O/prefill8b_$type.json" 2>&1 | rows
  done
fi
if has floor; then
  echo "=== cuBLAS's one-token products and the copy bandwidth [${SECONDS} s]"
  python3 tools/peers/bench_linear.py --config assets/shapes/llama-3.1-8b.json --tokens 1 | tee "$O/cublas.jsonl" | cut -c1-300
fi
echo "=== done [${SECONDS} s]"
