#!/usr/bin/env bash
# The tensor-core prefill on the GPU machine, beside its peers in the same
# run, the engine's default kernels (VK_KHR_cooperative_matrix fragments on
# NVIDIA) against the VK_NV_cooperative_matrix2 ones (KVSCOPE_COOPERATIVE_MATRIX2=1):
#   tests      the prefill kernels' tests without the validation layer
#   attention  dense and QuoKA prefill chunks (GQA 32/8, MHA 32/32) at
#              LENGTHS (32768,131072), then PyTorch's SDPA on the same shapes
#   linear     cuBLAS on the Llama-3-8B shape's linear layers (128 and 2,048
#              tokens), then `kvscope speed`'s linear stages a chunk
#   speed      time to first token at 32k, 128- and 2,048-token chunks, dense and QuoKA
#   hf         transformers' one SDPA pass over the same 32k prompt
#   speed128k  QuoKA's and dense first token at 128k
# PARTS chooses (default all but speed128k); PEERS=0 leaves PyTorch out;
# MATRIX_TILES="token_subgroups,row_subgroups,step,stages ..." times
# model_matmul_matrix tiles (KVSCOPE_MATRIX_TILE), TILES="t,r,s,i[,unroll] ..."
# model_matmul_cm2's (KVSCOPE_CM2_TILE), CHUNKS="128 2048" the linear chunks, CHECK=1 runs
# the linear layers' tests on each tile first, and ATTENTION_TILES="rows,keys,invocations ..."
# attention_chunk_cm2's (KVSCOPE_CM2_ATTENTION). Output into $OUT.
set -u
. tools/dev/device_env.sh
O=${OUT:-/tmp}
PARTS=${PARTS:-tests,attention,linear,speed,hf}
LENGTHS=${LENGTHS:-32768,131072}
SHAPE=assets/shapes/llama-3.1-8b.json
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
warm_up
if has tests; then
  F='*ModelOps*:*DenseAttention*:*SparseChunk*:*TinyModel*:*ModelRun*:*SelectionInTheLoop*'
  KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter="$F" 2>&1 | tail -4
fi
linear_ms() {  # speed --json file: the linear layers' GPU ms a chunk
  python3 - "$1" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
chunks = run["prompt_tokens"] / run["chunk"]
st = run["results"][0]["gpu_ms_by_stage"]
lin = sum(v for k, v in st.items() if k in ("qkv", "output_projection", "mlp_up", "mlp_down"))
print("linear ms a chunk", round(lin / chunks, 3), {k: round(v / chunks, 3) for k, v in st.items()})
PY
}
if has attention; then
  for tile in ${ATTENTION_TILES:-default}; do
    [ "$tile" = default ] && unset KVSCOPE_CM2_ATTENTION || export KVSCOPE_CM2_ATTENTION=$tile
    for cm2 in 0 1; do
      for kv in 8 32; do
        echo "=== attention: cooperative matrix 2 $cm2, tile $tile, kv heads $kv"
        KVSCOPE_COOPERATIVE_MATRIX2=$cm2 $B/kvscope bench --lengths $LENGTHS --kv-heads $kv --steps dense-prefill,quoka-prefill \
          --repeat 30 --json $O/bench_kv${kv}_cm2$cm2.json 2>&1 | grep -E " total|_partial " | head -20
      done
    done
  done
  unset KVSCOPE_CM2_ATTENTION
  if [ "${PEERS:-1}" = 1 ]; then
    for kv in 8 32; do
      python3 tools/peers/bench_torch.py --tokens $LENGTHS --kv-heads $kv --kvscope $O/bench_kv${kv}_cm20.json 2>&1 |
        grep -E "^(pytorch|sdpa_prefill|quoka_prefill)"
    done
  fi
fi
if has linear; then
  [ "${PEERS:-1}" = 1 ] && python3 tools/peers/bench_linear.py --config $SHAPE --tokens 128,2048 | tee $O/cublas.jsonl
  linear_run() {  # label, then the environment of the run
    local label=$1 chunk json
    shift
    for chunk in ${CHUNKS:-128 2048}; do
      echo "=== linear: $label, chunk $chunk"
      json=$O/linear_$(echo "$label" | tr -c 'A-Za-z0-9\n' '_')_$chunk.json
      env "$@" $B/kvscope speed --model $SHAPE --random-weights --length 4096 --regime prefill \
        --chunk $chunk --rounds 1 --steps 1 --methods dense --json $json >$O/linear.log 2>&1 && linear_ms $json ||
        tail -1 $O/linear.log
    done
  }
  for tile in ${MATRIX_TILES:-default}; do
    tile_env=()
    [ "$tile" != default ] && tile_env=(KVSCOPE_MATRIX_TILE=$tile)
    if [ "${CHECK:-0}" = 1 ]; then  # the linear layers' float64 tests on this tile
      env "${tile_env[@]}" KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 \
        --gtest_filter='*LinearMatchesFloat64*:*TinyModel*' 2>&1 | tail -2
    fi
    linear_run "fragments $tile" KVSCOPE_COOPERATIVE_MATRIX2=0 "${tile_env[@]}"
  done
  for tile in ${TILES:-default}; do
    tile_env=()
    [ "$tile" != default ] && tile_env=(KVSCOPE_CM2_TILE=$tile)
    if [ "${CHECK:-0}" = 1 ]; then
      env "${tile_env[@]}" KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA \
        $B/kvscope_tests --gtest_brief=1 --gtest_filter='*LinearOnCooperativeMatrix2*' 2>&1 | tail -2
    fi
    linear_run "cm2 $tile" KVSCOPE_COOPERATIVE_MATRIX2=1 "${tile_env[@]}"
  done
fi
speed() {  # length, chunk
  $B/kvscope speed --model $SHAPE --random-weights --length $1 --regime prefill --chunk $2 --rounds 1 --steps 1 \
    --methods dense,quoka --budgets 2048 --json $O/prefill_$1_$2.json 2>&1 | tail -4
}
if has speed; then
  for chunk in 128 2048; do speed 32768 $chunk; done
fi
has hf && python3 tools/peers/bench_hf.py --config $SHAPE --lengths 32768 --new-tokens 2 --repeats 2 --modes eager | tee $O/hf.jsonl
if has speed128k; then
  for chunk in 128 2048; do speed 131072 $chunk; done
fi
true
