#!/usr/bin/env bash
# kvscope beside llama.cpp's Vulkan backend on the GPU machine, in one call,
# on the same GGUF file of random F16 weights (tools/peers/llamacpp/,
# docs/perf.md "llama.cpp's Vulkan backend on the same file"):
#   write     tools/peers/llamacpp/write_gguf.py writes SHAPE's file to /tmp
#             (skipped where it is there: /tmp outlives a call while the
#             machine stays warm)
#   kvscope   `kvscope speed --model FILE.gguf --regime both --methods dense
#             --chunk 2048` at each of LENGTHS (time to the first token, and
#             decode ms/token at that depth), then `kvscope bench`'s dense
#             prefill chunk (2,048 queries, the shape's heads) at LENGTHS
#   llamacpp  the peer on the same file: time to the first token at kvscope's
#             prompt lengths (2,048-token batches, flash attention, F16 KV
#             cache, every layer on the GPU) and decode ms/token there; then
#             one layer's MUL_MAT and FLASH_ATTN_EXT at 2,048 tokens (by
#             ggml's GPU timestamps), the attention chunk ending each of LENGTHS
#   table     tools/peers/llamacpp/compare.py: the side-by-side table, the
#             CUDA peers (cublas, hf, sdpa) of the same call in its last column
#   tests     the model's kernel tests on the GPU, without the validation
#             layer (so the tensor-core kernels run their KHR forms): carry
#             kvscope_tests in .devbin
#   cublas    tools/peers/bench_linear.py: cuBLAS on the shape's linear
#             layers at 1 and 2,048 tokens, and the copy bandwidth
#   hf        tools/peers/bench_hf.py: transformers on the same config
#             (eager, SDPA), its first token and decode at LENGTHS
#   sdpa      tools/peers/bench_torch.py: PyTorch's SDPA (flash, the
#             chunk's causal mask) on the attention chunk ending each of LENGTHS
#   coopmat   NVIDIA's vk_cooperative_matrix_perf, where COOPMAT_PERF names
#             its binary (beside its shaders/ folder): the fastest fp16 GEMMs
#             its KHR and cooperative-matrix-2 shaders reach on this GPU
# TYPE (f16; q4_k, q8_0, ...: write_gguf.py --type, the blocks of kvscope's
# --random-weights --weight-type), SHAPE (default assets/shapes/llama-3.1-8b.json), LENGTHS (32768; 32768,131000
# adds 128k), HF_LENGTHS (transformers' lengths, LENGTHS unless given), PARTS (write,kvscope,llamacpp,table; the others on request),
# ROUNDS (2) and DEVICE (the peer's --device, NVIDIA) choose.
# Carries .devbin (kvscope), .gl, .icu (tools/dev/README.md) and .llamacpp
# (tools/peers/llamacpp/pack.sh: the peer and llama.cpp's libraries, 6.2 MB).
# Into $OUT: kvscope_LENGTH.json, bench.json, llamacpp_model.json,
# llamacpp_kernels.json, table.md.
set -u
. tools/dev/device_env.sh
O=${OUT:-/tmp}
SHAPE=${SHAPE:-assets/shapes/llama-3.1-8b.json}
LENGTHS=${LENGTHS:-32768}
PARTS=${PARTS:-write,kvscope,llamacpp,table}
ROUNDS=${ROUNDS:-2}
TYPE=${TYPE:-f16}
GGUF=/tmp/$(basename "$SHAPE" .json)_$TYPE.gguf
DEVICE=${DEVICE:-NVIDIA}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
field() { python3 -c "import json, sys; c = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/llamacpp
tar -xJf .llamacpp/llamacpp-vulkan.tar.xz -C /tmp/llamacpp 2>/dev/null ||  # python where xz is missing
  python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .llamacpp/llamacpp-vulkan.tar.xz /tmp/llamacpp
P=/tmp/llamacpp/bin/llamacpp_peer

if has tests; then
  tokenizers=$(strings "$B/kvscope_tests" | grep -m1 '/build/tests/tokenizers$' || true)
  [ -n "$tokenizers" ] && mkdir -p "$tokenizers" && tar xf tests/data/tokenizers.tar.xz -C "$tokenizers"
  echo "=== the model's kernel tests on the GPU (KHR cooperative matrices) [${SECONDS} s]"
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 \
    --gtest_filter='*ModelOps*:*TinyModel*:*SelectionInTheLoop*:*ModelRun*:*KernelChoice*' 2>&1 | tail -4
fi
if has coopmat && [ -n "${COOPMAT_PERF:-}" ]; then
  echo "=== vk_cooperative_matrix_perf [${SECONDS} s]"
  (cd "$(dirname "$COOPMAT_PERF")" && timeout 240 "./$(basename "$COOPMAT_PERF")" 2>&1) | tee "$O/coopmat_perf.txt" |
    grep -aE "TFLOPS|cooperative|shader" | head -60
fi
if has cublas; then
  echo "=== cuBLAS on the shape's linear layers, and the copy bandwidth [${SECONDS} s]"
  python3 tools/peers/bench_linear.py --config "$SHAPE" --tokens 1,2048 | tee "$O/cublas.jsonl"
fi

if has write && [ ! -f "$GGUF" ]; then
  start=$(date +%s)
  python3 tools/peers/llamacpp/write_gguf.py "$SHAPE" "$GGUF" --type "$TYPE" || exit 1
  echo "=== wrote $GGUF ($(du -h "$GGUF" | cut -f1)) in $(( $(date +%s) - start )) s"
fi
[ -f "$GGUF" ] || { echo "no $GGUF: PARTS needs write"; exit 1; }

if has kvscope; then
  warm_up
  for length in ${LENGTHS//,/ }; do
    echo "=== kvscope speed, $length tokens [${SECONDS} s]"
    $B/kvscope speed --model "$GGUF" --length "$length" --regime both --methods dense --chunk 2048 --steps 16 \
      --rounds "$ROUNDS" --json "$O/kvscope_$length.json" 2>&1 | grep -aE "^(speed|dense|method|kvscope)"
  done
  echo "=== kvscope bench, dense prefill chunks [${SECONDS} s]"
  $B/kvscope bench --lengths "$LENGTHS" --heads "$(field "$SHAPE" "c['num_attention_heads']")" \
    --kv-heads "$(field "$SHAPE" "c.get('num_key_value_heads', c['num_attention_heads'])")" \
    --dim "$(field "$SHAPE" "c.get('head_dim') or c['hidden_size'] // c['num_attention_heads']")" --chunk 2048 \
    --steps dense-prefill --repeat 20 --json "$O/bench.json" 2>&1 | grep -aE " total|kvscope"
fi

if has llamacpp; then
  # kvscope's prompt lengths (its passkey prompt fitted to each length), else LENGTHS.
  contexts=""
  for length in ${LENGTHS//,/ }; do
    tokens=$length
    [ -f "$O/kvscope_$length.json" ] && tokens=$(field "$O/kvscope_$length.json" "c['prefill']['prompt_tokens']")
    contexts=${contexts:+$contexts,}$tokens
  done
  echo "=== llama.cpp Vulkan: first token and decode at $contexts tokens [${SECONDS} s]"
  $P --model "$GGUF" --device "$DEVICE" --parts model --contexts "$contexts" --batch 2048 --decode-steps 16 \
    --rounds "$ROUNDS" >"$O/llamacpp_model.json"
  echo "=== llama.cpp Vulkan: one layer's MUL_MAT and FLASH_ATTN_EXT, 2,048 tokens [${SECONDS} s]"
  $P --model "$GGUF" --device "$DEVICE" --parts kernels --kernel-tokens 2048 --kernel-contexts "$LENGTHS" --repeat 20 \
    >"$O/llamacpp_kernels.json"
  grep '"ggml_device"' "$O/llamacpp_kernels.json"
fi

if has hf; then
  echo "=== transformers on the same config [${SECONDS} s]"
  python3 tools/peers/bench_hf.py --config "$SHAPE" --lengths "${HF_LENGTHS:-$LENGTHS}" --new-tokens 16 --repeats 1 --modes eager |
    tee "$O/hf.jsonl"
fi

if has sdpa; then
  echo "=== PyTorch SDPA on the attention chunk [${SECONDS} s]"
  python3 tools/peers/bench_torch.py --tokens "$LENGTHS" --heads "$(field "$SHAPE" "c['num_attention_heads']")" \
    --kv-heads "$(field "$SHAPE" "c.get('num_key_value_heads', c['num_attention_heads'])")" \
    --dim "$(field "$SHAPE" "c.get('head_dim') or c['hidden_size'] // c['num_attention_heads']")" --chunk 2048 \
    --steps sdpa_prefill_chunk_lower_right --repeat 20 | tee "$O/sdpa.jsonl"
fi

if has table; then
  kvscope_jsons=()
  for length in ${LENGTHS//,/ }; do [ -f "$O/kvscope_$length.json" ] && kvscope_jsons+=("$O/kvscope_$length.json"); done
  bench=()
  [ -f "$O/bench.json" ] && bench=(--bench "$O/bench.json")
  others=()
  for f in cublas hf sdpa; do [ -f "$O/$f.jsonl" ] && others+=("$O/$f.jsonl"); done
  python3 tools/peers/llamacpp/compare.py --peer "$O"/llamacpp_model.json "$O"/llamacpp_kernels.json \
    --kvscope "${kvscope_jsons[@]}" "${bench[@]}" ${others[@]:+--others "${others[@]}"} | tee "$O/table.md"
fi
true
