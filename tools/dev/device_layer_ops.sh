#!/usr/bin/env bash
# One layer's prefill operations on the GPU machine, in one call: the
# Llama-3.1-8B shape cut to one layer (random F16 weights, one GGUF file for
# both engines), its seven products at 2,048 tokens and its dense attention
# chunk ending 32,768 and 131,000 keys, kvscope beside llama.cpp's Vulkan
# backend (the peer's kernels part), cuBLAS (bench_linear.py) and SDPA
# (bench_torch.py), compare.py's table into $OUT/table.md; the model's GPU
# tests first; then, where .devbin holds Debian's zstd (and lib/liblz4.so.1),
# the SASS of both engines' kernels (tools/dev/dump_sass.py) counted by
# instruction and tarred into $OUT/sass.tgz. A cheaper call than
# device_llamacpp.sh (no 16 GB file, no whole prefill): docs/perf.md,
# "llama.cpp's Vulkan backend on the same file". Carries .devbin (kvscope,
# kvscope_tests), .gl, .icu and .llamacpp. PARTS (tests,ops,sass) chooses.
set -u
. tools/dev/device_env.sh
O=${OUT:-/tmp}
PARTS=${PARTS:-tests,ops,sass}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "
import json; c = json.load(open('assets/shapes/llama-3.1-8b.json')); c.update(num_hidden_layers=1, vocab_size=4096, bos_token_id=1, eos_token_id=2)
json.dump(c, open('/tmp/one.json', 'w'))"
python3 tools/peers/llamacpp/write_gguf.py /tmp/one.json /tmp/one.gguf >/dev/null 2>&1 || echo "write failed"
mkdir -p /tmp/llamacpp && tar -xJf .llamacpp/llamacpp-vulkan.tar.xz -C /tmp/llamacpp
if has tests; then
echo "=== tests [$SECONDS s]"
tokenizers=$(strings "$B/kvscope_tests" | grep -m1 '/build/tests/tokenizers$' || true)
[ -n "$tokenizers" ] && mkdir -p "$tokenizers" && tar xf tests/data/tokenizers.tar.xz -C "$tokenizers"
KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 \
  --gtest_filter='*ModelOps*:*TinyModel*:*SelectionInTheLoop*:*ModelRun*:*KernelChoice*:*DenseAttention*' 2>&1 | tail -3
fi
if has ops; then
warm_up
echo "=== cuBLAS [$SECONDS s]"
python3 tools/peers/bench_linear.py --config /tmp/one.json --tokens 2048 | tee $O/cublas.jsonl | cut -c1-150
echo "=== llama.cpp ops [$SECONDS s]"
/tmp/llamacpp/bin/llamacpp_peer --model /tmp/one.gguf --device NVIDIA --parts kernels --kernel-tokens 2048 \
  --kernel-contexts 32768,131000 --repeat 20 >$O/llamacpp_kernels.json 2>$O/peer.err; tail -1 $O/peer.err
echo "=== kvscope [$SECONDS s]"
for r in 1 2; do
  $B/kvscope speed --model /tmp/one.json --random-weights --length 4096 --regime prefill --chunk 2048 --rounds 1 --steps 1 \
    --methods dense --json $O/kvscope_linear.json >/dev/null 2>&1
done
$B/kvscope bench --lengths 32768,131000 --heads 32 --kv-heads 8 --dim 128 --chunk 2048 --steps dense-prefill --repeat 20 \
  --json $O/bench.json 2>&1 | grep -aE " total"
echo "=== SDPA [$SECONDS s]"
python3 tools/peers/bench_torch.py --tokens 32768,131000 --heads 32 --kv-heads 8 --dim 128 --chunk 2048 \
  --steps sdpa_prefill_chunk_lower_right --repeat 20 | tee $O/sdpa.jsonl | cut -c1-200
python3 tools/peers/llamacpp/compare.py --peer $O/llamacpp_kernels.json --kvscope $O/kvscope_linear.json --bench $O/bench.json \
  --others $O/cublas.jsonl $O/sdpa.jsonl | tee $O/table.md
fi
has sass || exit 0
[ -x .devbin/zstd ] || { echo "=== done, no zstd for the SASS [$SECONDS s]"; exit 0; }
export ZSTD=$PWD/.devbin/zstd LD_LIBRARY_PATH=$PWD/.devbin/lib:${LD_LIBRARY_PATH:-}
echo "=== SASS [$SECONDS s]"
python3 tools/dev/dump_sass.py /tmp/sass_llamacpp -- sh -c "/tmp/llamacpp/bin/llamacpp_peer --model /tmp/one.gguf --device NVIDIA --parts kernels --kernel-tokens 2048 --kernel-contexts 4096 --repeat 2 >/dev/null 2>&1"
for mode in 0 1; do
  KVSCOPE_COOPERATIVE_MATRIX2=$mode python3 tools/dev/dump_sass.py /tmp/sass_kvscope_cm2$mode -- $B/kvscope speed --model /tmp/one.json \
    --random-weights --length 4096 --regime prefill --chunk 2048 --rounds 1 --steps 1 --methods dense
done
for d in /tmp/sass_llamacpp /tmp/sass_kvscope_cm20 /tmp/sass_kvscope_cm21; do
  echo "== $d"
  for f in $d/*.sass; do
    printf '%s HGMMA=%s HMMA=%s LDSM=%s LDGSTS=%s UTMALDG=%s BAR=%s lines=%s\n' "$(basename $f)" \
      "$(grep -c HGMMA $f)" "$(grep -c 'HMMA' $f)" "$(grep -c LDSM $f)" "$(grep -c LDGSTS $f)" "$(grep -c UTMALDG $f)" "$(grep -c 'BAR' $f)" "$(wc -l <$f)"
  done | sort -t= -k3 -n -r | head -8
done
tar -czf $O/sass.tgz -C /tmp sass_llamacpp sass_kvscope_cm20 sass_kvscope_cm21
echo "=== done [$SECONDS s]"
