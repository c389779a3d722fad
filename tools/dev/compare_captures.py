#!/usr/bin/env python3
"""Two captures of the same prompt, tensor by tensor: the largest absolute
difference and that difference over the tensor's largest value, as JSON
(kvscope capture against tools/export/capture_qkv.py, say). Needs safetensors and numpy."""
import json
import sys

from safetensors.numpy import load_file

a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
rows = {}
for name in sorted(set(a) & set(b)):
    if not name.startswith("layers."):
        continue
    x, y = a[name].astype("float64"), b[name].astype("float64")
    if x.shape != y.shape:
        rows[name] = {"shape": [list(x.shape), list(y.shape)]}
        continue
    d = abs(x - y).max()
    rows[name] = {"max_abs": float(d), "max_rel": float(d / max(abs(y).max(), 1e-30))}
same_tokens = bool((a["tokens"] == b["tokens"]).all()) if "tokens" in a and "tokens" in b and a["tokens"].shape == b["tokens"].shape else False
print(json.dumps({"tokens_equal": same_tokens, "tensors": rows}, indent=1))
