#!/usr/bin/env python3
"""kvscope's logits against transformers' on the same token ids.

  kvscope generate --model DIR --prompt-file P --steps 1 --logits kv.safetensors
  python3 tools/dev/compare_logits.py --model DIR --kvscope kv.safetensors

Runs the Hugging Face model in fp32 (on CUDA where there is one) over the ids
kvscope wrote, and prints, as JSON, the largest absolute and relative
differences of the logits (relative to each position's largest logit) and how
often the two pick the same top token.
"""
import argparse
import json

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--kvscope", required=True)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ours = load_file(args.kvscope)
    ids = ours["tokens"].to(torch.long)[None].to(device)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).to(device).eval()
    with torch.no_grad():
        theirs = model(ids).logits[0].float().cpu()
    mine = ours["logits"].float()
    difference = (mine - theirs).abs()
    # A row of zeros (a padding token's embedding) is its own scale: no NaN.
    scale = theirs.abs().amax(dim=1, keepdim=True).clamp_min(torch.finfo(torch.float32).tiny)
    print(json.dumps({
        "positions": int(ids.shape[1]),
        "vocab": int(theirs.shape[1]),
        "max_abs_error": float(difference.max()),
        "max_rel_error": float((difference / scale).max()),
        "mean_abs_error": float(difference.mean()),
        "largest_logit": float(theirs.abs().max()),
        "top1_agreement": float((mine.argmax(1) == theirs.argmax(1)).float().mean()),
    }, indent=1))


if __name__ == "__main__":
    main()
