#!/usr/bin/env bash
# tools/peers/llamacpp/write_gguf.py's files through kvscope's GGUF reader:
# for a tiny Llama (GQA) and a tiny Llama 3 (RoPE factors in rope_freqs.weight,
# tied embeddings, head_dim apart from hidden / heads, BOS and EOS, another
# seed), `kvscope generate --model FILE.gguf` must give the logits and tokens
# of `kvscope generate --model config.json --random-weights` with the same
# seed and the tokenizer.json written beside it: every tensor read with its
# shape and type, the q and k rows' permutation undone by the GGUF reader's
# RoPE pairs, the metadata giving the config back. With `--type T` (Q8_0,
# Q4_K, Q6_K on a Llama whose rows are whole 256-value blocks) the file's
# blocks must be the draw of `--random-weights --weight-type T`. A Qwen2 file,
# which llama.cpp reads and kvscope does not, is refused in one line.
#   gguf_writer_test.sh KVSCOPE [PYTHON]
set -u
kvscope=$(realpath "$1")
python=${2:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
writer=$repo/tools/peers/llamacpp/write_gguf.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"
"$python" -c "import numpy" 2>/dev/null || { echo "SKIP: $python has no numpy (python3-numpy)"; exit 77; }

# same_model NAME SEED CONFIG_JSON [TYPE]: the GGUF file's run against the config's random-weights run,
# the matrices F16 or ggml's TYPE blocks in both.
same_model() {
  local name=$1 seed=$2 dir=$work/$1 typed=()
  if [ -n "${4:-}" ]; then typed=(--weight-type "$4"); fi
  mkdir -p "$dir"
  echo "$3" >"$dir/config.json"
  expect 0 "$name: write_gguf.py" -- "$python" "$writer" "$dir/config.json" "$dir/model.gguf" --seed "$seed" \
    --jobs 2 --tokenizer-json "$dir/tokenizer.json" --type "${4:-f16}"
  local prompt
  prompt=$(printf 'The quick brown fox jumps over the lazy dog, %s times. ' {1..12})
  expect 0 "$name: kvscope generate on the GGUF file" -- "$kvscope" generate --model "$dir/model.gguf" --prompt "$prompt" \
    --steps 6 --json "$dir/gguf.json" --logits "$dir/gguf.safetensors"
  expect 0 "$name: kvscope generate on the config, --random-weights --seed $seed${4:+ --weight-type $4}" -- "$kvscope" \
    generate --model "$dir/config.json" --random-weights --seed "$seed" ${typed[@]+"${typed[@]}"} \
    --prompt "$prompt" --steps 6 --json "$dir/random.json" --logits "$dir/random.safetensors"
  if "$python" - "$dir" <<'EOF'; then echo "ok: $name: the same tokens and logits"; passes=$((passes + 1)); else fail "$name: the runs differ"; fi
import json, struct, sys
import numpy as np

def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    out = {}
    for name, t in json.loads(data[8:8 + n]).items():
        if name != "__metadata__":
            start, end = t["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + start:8 + n + end], {"F32": np.float32, "I32": np.int32}[t["dtype"]])
    return out

d = sys.argv[1]
a, b = tensors(d + "/gguf.safetensors"), tensors(d + "/random.safetensors")
ga, gb = json.load(open(d + "/gguf.json"))["generated_ids"], json.load(open(d + "/random.json"))["generated_ids"]
error = float(np.abs(a["logits"] - b["logits"]).max())
# The same weights; only the order of a head's q.k sum differs (adjacent RoPE pairs against halves).
ok = (a["tokens"] == b["tokens"]).all() and ga == gb and error <= 1e-4 * max(1.0, float(np.abs(b["logits"]).max()))
print(f"  {len(a['tokens'])} prompt tokens, logits differ by at most {error:.2e}, generated {ga} and {gb}")
sys.exit(0 if ok else 1)
EOF
}

same_model llama 0 '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}'
same_model llama3 7 '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 300,
  "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": true,
  "bos_token_id": 256, "eos_token_id": [257, 258], "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
  "high_freq_factor": 4.0, "original_max_position_embeddings": 64, "rope_type": "llama3"}}'
# Rows of 256 and 512 values: whole blocks of every type, the K types' 256 included.
blocks='{"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 320,
  "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}'
same_model q8_0 3 "$blocks" q8_0
same_model q4_k 5 "$blocks" q4_k
same_model q6_k 0 "$blocks" q6_k

echo '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0}' >"$work/qwen2.json"
expect 0 "qwen2: write_gguf.py" -- "$python" "$writer" "$work/qwen2.json" "$work/qwen2.gguf" --jobs 1
expect 2 "qwen2: kvscope reads llama GGUF files only" -- "$kvscope" speed --model "$work/qwen2.gguf" --length 64
grep -q "general.architecture: 'qwen2' is not read" "$work/err" || fail "qwen2: the refusal does not name the architecture"
echo '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
  "num_attention_heads": 4, "vocab_size": 256, "bos_token_id": 1, "max_position_embeddings": 64,
  "rms_norm_eps": 1e-6}' >"$work/small_vocab.json"
expect 1 "write_gguf.py refuses a vocabulary without room for the byte tokens and BOS" -- \
  "$python" "$writer" "$work/small_vocab.json" "$work/small_vocab.gguf"

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
