#!/usr/bin/env bash
# The llama.cpp peer (tools/peers/llamacpp/) on lavapipe: built against the
# prebuilt libraries in the cache, run on a tiny random GGUF file
# (write_gguf.py) for its time to the first token, decode ms/token and one
# layer's MUL_MAT and FLASH_ATTN_EXT, its JSON checked; kvscope then runs the
# same file, and compare.py puts the two side by side; the peer's --quantize
# writes the file as Q4_K_M and Q8_0, which kvscope then runs; the quantized
# files of tests/data/llamacpp_quantized/ are made again, must be the committed
# ones, and kvscope is held to llama.cpp's live logits on them. Exit 77 (ctest:
# skipped) where the libraries are not in the cache: tools/peers/llamacpp/
# install.sh fetches them from npm, which kvscope's build and CI never do.
#   llamacpp_peer_test.sh KVSCOPE [PYTHON]
set -u
kvscope=$(realpath "$1")
python=${2:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
peers=$repo/tools/peers/llamacpp
cache=${KVSCOPE_LLAMACPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvscope/llamacpp}
version=$(sed -n 's/^version=//p' "$peers/install.sh")
[ -f "$cache/$version/source.txt" ] || {
  echo "SKIP: llama.cpp's prebuilt Vulkan libraries are not in $cache/$version (tools/peers/llamacpp/install.sh fetches them from npm)"
  exit 77
}
"$python" -c "import numpy" 2>/dev/null || { echo "SKIP: $python has no numpy (python3-numpy)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "build.sh builds the peer against the cache's libraries" -- "$peers/build.sh" "$work/bin"
peer=$work/bin/llamacpp_peer
echo '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-5, "rope_theta": 10000.0}' >"$work/config.json"
expect 0 "write_gguf.py" -- "$python" "$peers/write_gguf.py" "$work/config.json" "$work/tiny.gguf" --jobs 2
# kvscope first: its prompt's length (the passkey prompt fitted to 512 tokens) is the peer's context.
expect 0 "kvscope speed on the same file" -- "$kvscope" speed --model "$work/tiny.gguf" --length 512 --chunk 128 \
  --rounds 1 --steps 4 --methods dense --json "$work/kvscope.json"
length=$("$python" -c "import json, sys; print(json.load(open(sys.argv[1]))['prefill']['prompt_tokens'])" "$work/kvscope.json")
expect 0 "the peer's model runs on lavapipe" -- "$peer" --model "$work/tiny.gguf" --device llvmpipe --contexts "$length" \
  --batch 128 --decode-steps 4 --rounds 1 --parts model
cp "$work/out" "$work/model.json"
expect 0 "the peer's kernels on lavapipe, by ggml's GPU timestamps" -- "$peer" --model "$work/tiny.gguf" --device llvmpipe \
  --contexts "$length" --kernel-tokens 128 --repeat 2 --parts kernels
cp "$work/out" "$work/kernels.json"
if "$python" - "$work" "$length" <<'EOF'; then echo "ok: the peer's JSON"; passes=$((passes + 1)); else fail "the peer's JSON"; fi
import json, sys
work, length = sys.argv[1], int(sys.argv[2])
model, kernels = json.load(open(work + "/model.json")), json.load(open(work + "/kernels.json"))
assert "llvmpipe" in model["device"] and model["source"].startswith("node-llama-cpp "), model
assert model["shape"] == {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "intermediate": 128,
                          "vocab": 256}, model["shape"]
(run,) = model["runs"]
assert run["context"] == length and run["ttft_ms"] > 0 and run["decode_ms_per_token"] > 0, run
products = [o for o in kernels["ops"] if o["op"] == "MUL_MAT"]
assert sorted({(o["name"], o["rows"], o["columns"]) for o in products}) == sorted(
    {("q", 64, 64), ("k", 32, 64), ("v", 32, 64), ("o", 64, 64), ("gate", 128, 64), ("up", 128, 64), ("down", 64, 128)})
assert len(products) == 14 and all(o["tokens"] == 128 and o["us"] > 0 and o["gpu_us"] > 0 for o in products), products
(attention,) = [o for o in kernels["ops"] if o["op"] == "FLASH_ATTN_EXT"]
assert attention["context"] == length and attention["tokens"] == 128 and attention["gpu_us"] > 0, attention
print(f"  first token at {length} tokens {run['ttft_ms']:.0f} ms, decode {run['decode_ms_per_token']:.1f} ms/token, "
      f"a layer's MUL_MATs {sum(o['gpu_us'] for o in products[:7]):.0f} us, FLASH_ATTN_EXT {attention['gpu_us']:.0f} us")
EOF
expect 0 "compare.py puts them side by side" -- "$python" "$peers/compare.py" --peer "$work/model.json" "$work/kernels.json" \
  --kvscope "$work/kvscope.json"
grep -q "^| time to first token, $length tokens" "$work/out" && grep -q "^| linear layers of a layer, 128 tokens" "$work/out" ||
  { fail "compare.py's table lacks a row:"; cat "$work/out"; }
# llama.cpp's quantizer writes the block-quantized files people have; kvscope reads and runs them.
for type in Q4_K_M Q8_0; do
  expect 0 "the peer quantizes the file to $type" -- "$peer" --model "$work/tiny.gguf" --quantize "$type" "$work/tiny_$type.gguf"
  expect 0 "kvscope runs llama.cpp's $type file" -- "$kvscope" speed --model "$work/tiny_$type.gguf" --length 256 --chunk 128 \
    --rounds 1 --steps 2 --methods dense
done
# record_quantized_fixtures.sh into a temporary folder: kvscope against llama.cpp's logits of this run.
expect 0 "record_quantized_fixtures.sh quantizes and records llama.cpp's logits" -- \
  "$peers/record_quantized_fixtures.sh" "$kvscope" "$python" "$work/quantized"
if "$repo/tests/llamacpp_quantized_test.sh" "$kvscope" "$python" "$work/quantized" >"$work/quantized.log" 2>&1; then
  echo "ok: kvscope's logits are llama.cpp's live ones on its Q8_0, Q4_0, Q4_K_M and Q6_K files"
  passes=$((passes + 1))
else
  fail "kvscope's logits against llama.cpp's live ones:"; cat "$work/quantized.log"
fi
if "$python" - "$work/quantized/logits.json" "$repo/tests/data/llamacpp_quantized/logits.json" <<'EOF'; then
import json, sys
fresh, committed = (json.load(open(p))["files"] for p in sys.argv[1:])
sys.exit(any(fresh[f]["sha256"] != committed[f]["sha256"] for f in fresh))
EOF
  echo "ok: tests/data/llamacpp_quantized/ holds the files the recorder makes"; passes=$((passes + 1))
else
  fail "tests/data/llamacpp_quantized/ is not what record_quantized_fixtures.sh makes now: run it again"
fi
expect 1 "the peer names the devices when none matches" -- "$peer" --model "$work/tiny.gguf" --device no-such-gpu
grep -q "no Vulkan device named like 'no-such-gpu' (there are: .*llvmpipe" "$work/err" || fail "the error does not list the devices"
expect 2 "the peer refuses a missing file in one line" -- "$peer" --model "$work/none.gguf"
expect 2 "the peer refuses a token id that is not one in one line" -- "$peer" --model "$work/tiny.gguf" --logits 3,x \
  "$work/logits.json"

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
