#!/usr/bin/env bash
# Writes tests/data/llamacpp_quantized/: a tiny random Llama (write_gguf.py,
# F16) quantized by llama.cpp's own quantizer (the peer's --quantize) to
# Q8_0, Q4_0, Q4_K_M and Q6_K, and logits.json: the prompt, its token ids as
# kvscope's tokenizer gives them, and per file its tensors' types and the
# logits llama.cpp's forward pass gives on those ids (the peer's --logits),
# which tests/llamacpp_quantized_test.sh holds kvscope to.
#   tools/peers/llamacpp/record_quantized_fixtures.sh KVSCOPE [PYTHON] [OUT_DIR]
# Run it again when write_gguf.py's weights or metadata change, when
# install.sh's pinned llama.cpp moves, or when the prompt or model below do;
# tests/llamacpp_peer_test.sh runs it into a temporary folder and fails
# where that folder's files are not the committed ones. Needs the peer's
# cached libraries (install.sh) and python3 with numpy.
#
# The model: every matrix's rows are 256 wide (hidden, q heads x head_dim,
# intermediate), so the K-quant types really apply (llama.cpp's quantizer
# falls back to Q5_0/Q8_0 for rows that are not multiples of 256); one layer
# and tied embeddings keep the four files at 1.5 MB together. Q4_K_M gives
# q, k, o, gate and up Q4_K and v, down and the tied embedding Q6_K.
#
# llama.cpp runs on lavapipe with GGML_VK_DISABLE_F16=1: its Vulkan backend
# otherwise stores activations as F16 and accumulates its products in F16 on
# a device with F16 arithmetic (lavapipe has it), which moves these logits by
# up to 0.02, more than Q8_0 against F16 weights does (0.008); with F32
# arithmetic what is left is llama.cpp's dequantization itself.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: record_quantized_fixtures.sh KVSCOPE [PYTHON] [OUT_DIR]" >&2; exit 2; }
kvscope=$(realpath "$1")
python=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
export GGUF_TOOLS=$here  # gguf_file.py, the heredocs' GGUF reader
out=${3:-$repo/tests/data/llamacpp_quantized}
types=(Q8_0 Q4_0 Q4_K_M Q6_K)
prompt="llama.cpp's quantizer wrote this file."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$here/build.sh" "$work/bin" >/dev/null
peer=$work/bin/llamacpp_peer
# general.name is the config's file name.
cat >"$work/tiny-quantized.json" <<'EOF'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 1,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 4096,
 "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true}
EOF
"$python" "$here/write_gguf.py" "$work/tiny-quantized.json" "$work/F16.gguf" --jobs 2
mkdir -p "$out"
for type in "${types[@]}"; do
  "$peer" --model "$work/F16.gguf" --quantize "$type" "$out/$type.gguf"
done
# kvscope's tokens for the prompt (a byte a token, no BOS in this vocabulary), the same for every file.
"$kvscope" generate --model "$out/Q8_0.gguf" --prompt "$prompt" --steps 1 --logits "$work/tokens.safetensors" >/dev/null
ids=$("$python" - "$work/tokens.safetensors" <<'EOF'
import json, struct, sys
import numpy as np
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
t = json.loads(data[8:8 + n])["tokens"]
print(",".join(map(str, np.frombuffer(data[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]], np.int32))))
EOF
)
for type in "${types[@]}"; do
  GGML_VK_DISABLE_F16=1 "$peer" --model "$out/$type.gguf" --device llvmpipe --logits "$ids" "$work/$type.json"
done

"$python" - "$out" "$work" "$prompt" "${types[@]}" <<'EOF'
import hashlib, json, os, struct, sys
import numpy as np

sys.path.insert(0, os.environ["GGUF_TOOLS"])
from gguf_file import tensor_types as types_of  # noqa: E402


def tensor_types(path):
    return types_of(open(path, "rb").read())

out, work, prompt, types = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
LAST = 8  # positions whose every logit is kept; every position's argmax and top-2 gap are




def dump(value, depth=0):
    """JSON with a list of numbers on one line: a position's logits a line."""
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict):
        return "{\n" + ",\n".join(f"{inner}{json.dumps(k)}: {dump(v, depth + 1)}" for k, v in value.items()) + f"\n{pad}}}"
    if isinstance(value, list) and value and isinstance(value[0], list):
        return "[\n" + ",\n".join(inner + dump(v, depth + 1) for v in value) + f"\n{pad}]"
    return json.dumps(value, separators=(", ", ": "))


def six(x):
    return float(f"{x:.6g}")


files, source = {}, None
for t in types:
    path = f"{out}/{t}.gguf"
    peer = json.load(open(f"{work}/{t}.json"))
    logits = np.array(peer["logits"], np.float64)
    top = np.sort(logits, axis=1)
    source = {k: peer[k] for k in ("source", "device", "ggml_device")}
    files[t + ".gguf"] = {
        "bytes": os.path.getsize(path), "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest(),
        "tensors": tensor_types(path),
        "argmax": logits.argmax(axis=1).tolist(), "top2_gap": [six(g) for g in top[:, -1] - top[:, -2]],
        "logits": [[six(v) for v in row] for row in logits[-LAST:]]}
    tokens = peer["tokens"]
if not {"Q4_K", "Q6_K"} <= set(files["Q4_K_M.gguf"]["tensors"].values()):
    sys.exit("record_quantized_fixtures: llama.cpp's quantizer wrote no Q4_K or Q6_K blocks")
fixture = {
    "regenerate": "tools/peers/llamacpp/record_quantized_fixtures.sh build/bin/kvscope python3",
    "prompt": prompt, "tokens": tokens, "positions": list(range(len(tokens) - LAST, len(tokens))),
    "llama_cpp": dict(source, backend="Vulkan, GGML_VK_DISABLE_F16=1 (F32 arithmetic), flash attention, F16 KV cache"),
    "files": files}
text = dump(fixture)
with open(f"{out}/logits.json", "w") as f:
    f.write(text + "\n")
for name, f in files.items():
    kinds = sorted(set(f["tensors"].values()) - {"F32"})
    print(f"{out}/{name}: {f['bytes']} bytes, {', '.join(kinds)}")
print(f"{out}/logits.json: {len(text) + 1} bytes, {len(tokens)} tokens, the last {LAST} positions' logits")
EOF
