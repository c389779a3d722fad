#!/usr/bin/env bash
# Files made by llama.cpp's own quantizer read and run: tests/data/
# llamacpp_quantized/ holds a tiny random Llama quantized by llama.cpp to
# Q8_0, Q4_0, Q4_K_M (Q4_K and Q6_K blocks) and Q6_K, and the logits llama.cpp
# gave on each for one prompt (tools/peers/llamacpp/record_quantized_fixtures.sh
# writes them all). `kvscope generate --logits` on each file must see the
# recorded token ids and tensor types, give the recorded logits within TOL at
# the recorded positions, and llama.cpp's argmax at every position whose top-2
# gap is over 2 TOL (where no pair of differences within TOL could swap them).
#   llamacpp_quantized_test.sh KVSCOPE [PYTHON] [DIR]
# DIR: another folder the recorder wrote (tests/llamacpp_peer_test.sh's live one).
#
# TOL = 2e-3, set from measurement on lavapipe. llama.cpp recorded its logits
# with its Vulkan backend on lavapipe in F32 arithmetic (GGML_VK_DISABLE_F16=1;
# by default it keeps activations and sums in F16 there, 0.02 off F32 on these
# logits, which reach 3.2). On the F16 file of the same model kvscope gives
# llama.cpp's logits to 1e-5; on the four quantized files at most 5e-4, from
# kvscope's reader widening each dequantized weight to fp16 (2^-12 relative
# each). TOL is four times that, and a quarter of the smallest wrong reading
# measured: Q8_0's weights taken as their F16 originals move the logits by
# 8e-3, Q4_K_M's Q4_K matrices taken as Q6_K by 0.058, Q4_0's by 0.12.
set -u
kvscope=$(realpath "$1")
python=${2:-python3}
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath "${3:-$repo/tests/data/llamacpp_quantized}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"
"$python" -c "import numpy" 2>/dev/null || { echo "SKIP: $python has no numpy (python3-numpy)"; exit 77; }

export GGUF_TOOLS=$repo/tools/peers/llamacpp  # gguf_file.py, the heredocs' GGUF reader
prompt=$("$python" -c "import json, sys; print(json.load(open(sys.argv[1]))['prompt'])" "$dir/logits.json")
for type in Q8_0 Q4_0 Q4_K_M Q6_K; do
  expect 0 "kvscope runs llama.cpp's $type file" -- "$kvscope" generate --model "$dir/$type.gguf" --prompt "$prompt" \
    --steps 1 --logits "$work/$type.safetensors"
  if "$python" - "$dir" "$work" "$type" <<'EOF'; then echo "ok: $type: llama.cpp's logits"; passes=$((passes + 1)); else fail "$type: kvscope's logits are not llama.cpp's"; fi
import hashlib, json, os, struct, sys
import numpy as np

sys.path.insert(0, os.environ["GGUF_TOOLS"])
from gguf_file import tensor_types  # noqa: E402

TOL = 2e-3


def tensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    out = {}
    for name, t in json.loads(data[8:8 + n]).items():
        if name != "__metadata__":
            start, end = t["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + start:8 + n + end],
                                      {"F32": np.float32, "I32": np.int32}[t["dtype"]]).reshape(t["shape"])
    return out




d, work, kind = sys.argv[1:]
fixture = json.load(open(d + "/logits.json"))
recorded = fixture["files"][kind + ".gguf"]
data = open(f"{d}/{kind}.gguf", "rb").read()
ours = tensors(f"{work}/{kind}.safetensors")
ok = True
if hashlib.sha256(data).hexdigest() != recorded["sha256"] or tensor_types(data) != recorded["tensors"]:
    print(f"  {kind}.gguf is not the file logits.json was recorded on (record_quantized_fixtures.sh writes both)")
    ok = False
if ours["tokens"].tolist() != fixture["tokens"]:
    print(f"  kvscope's tokens {ours['tokens'].tolist()} are not the recorded {fixture['tokens']}")
    sys.exit(1)
logits = ours["logits"].astype(np.float64)
difference = np.abs(logits[fixture["positions"]] - np.array(recorded["logits"]))
position, token = np.unravel_index(difference.argmax(), difference.shape)
error = float(difference.max())
if error > TOL:
    print(f"  position {fixture['positions'][position]}, token {token}: kvscope {logits[fixture['positions'][position], token]:.6g}, "
          f"llama.cpp {recorded['logits'][position][token]:.6g}")
    ok = False
clear = np.array(recorded["top2_gap"]) > 2 * TOL
swapped = np.flatnonzero(clear & (logits.argmax(axis=1) != np.array(recorded["argmax"])))
if swapped.size:
    print(f"  kvscope's argmax is not llama.cpp's at positions {swapped.tolist()}")
    ok = False
kinds = ", ".join(sorted(set(recorded["tensors"].values()) - {"F32"}))
print(f"  {kind} ({kinds}): logits within {error:.1e} of llama.cpp's at the last "
      f"{len(fixture['positions'])} of {len(fixture['tokens'])} positions (tolerance {TOL:g}), "
      f"the same argmax at {int(clear.sum()) - swapped.size} of {int(clear.sum())} positions clear of it")
sys.exit(0 if ok else 1)
EOF
done

# Broken files are refused in one line naming the tensor: cut short, a type
# number that is no type, a type that disagrees with the bytes (Q4_K relabelled
# Q8_0 runs into the next tensor: GGUF keeps no sizes).
"$python" - "$dir/Q4_K_M.gguf" "$work" <<'EOF'
import sys
source, work = sys.argv[1:]
data = open(source, "rb").read()
open(work + "/cut.gguf", "wb").write(data[:300000])
name = b"blk.0.attn_q.weight"
at = data.find(name) + len(name)
at += 4 + 8 * int.from_bytes(data[at:at + 4], "little")  # the type, after the dimensions
for file, number in (("type99.gguf", 99), ("relabelled.gguf", 8)):
    bad = bytearray(data)
    bad[at:at + 4] = number.to_bytes(4, "little")
    open(work + "/" + file, "wb").write(bad)
EOF
for bad in cut type99 relabelled; do
  expect 2 "a $bad file is refused" -- "$kvscope" generate --model "$work/$bad.gguf" --prompt hi --steps 1
  [ "$(wc -l <"$work/err")" = 1 ] && grep -q "GGUF tensor blk\.0\." "$work/err" || { fail "$bad: not one line naming the tensor"; cat "$work/err"; }
done

# Every command that takes a model, on one of them (Q4_K_M: Q4_K and Q6_K
# matrices), as on any model: a decode step's products of blocks, a chunk's
# widened, and each command's own outputs.
q=$dir/Q4_K_M.gguf
expect 0 "needle on the Q4_K_M file" -- "$kvscope" needle --model "$q" --lengths 1024 --depths 0.5 --methods dense,quest \
  --budgets 32 --json "$work/n.json"
expect 0 "ruler on the Q4_K_M file" -- "$kvscope" ruler --model "$q" --tasks niah_single_1 --lengths 1024 --samples 1 \
  --methods dense,quest --budgets 32 --tokens-to-generate 4 --json "$work/r.json"
expect 0 "ppl on the Q4_K_M file, both regimes" -- "$kvscope" ppl --model "$q" --length 128 --scored 20 --methods dense,quest \
  --budgets 32 --regime both --chunk 64 --json "$work/p.json"
grep -q '"perplexity"' "$work/p.json" || fail "ppl on the Q4_K_M file: no perplexity"
expect 0 "speed on the Q4_K_M file, both regimes" -- "$kvscope" speed --model "$q" --length 512 --steps 2 --rounds 1 \
  --methods dense,quest --budgets 32 --chunk 64 --regime both --json "$work/s.json"
grep -q '"types": "Q4_K x [0-9]*, Q6_K x [0-9]*"' "$work/s.json" || fail "speed on the Q4_K_M file: its weights' types unrecorded"
expect 0 "capture on the Q4_K_M file" -- "$kvscope" capture --model "$q" --passkey --length 300 --depth 0.5 --layers 0 \
  --out "$work/q.safetensors"
expect 0 "eval of that capture" -- "$kvscope" eval --capture "$work/q.safetensors" --decode --methods quest --budgets 32 --probes 2

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
