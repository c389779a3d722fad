#!/usr/bin/env python3
"""transformers' generate on a Hugging Face model, timed as `kvscope generate
--json` times kvscope: time to first token and prefill tokens/s for a prompt of
each length, and decode ms/token over --new-tokens greedy tokens.

  python3 tools/peers/bench_hf.py --model DIR --lengths 4096,16384 [--new-tokens 128] [--modes eager,compiled]
  python3 tools/peers/bench_hf.py --config assets/shapes/llama-3.1-8b.json --lengths 32768 [--seed 0]

The prompt is the passkey filler of tools/export/capture_qkv.py, cut to each length.
With --config the model is built from that config.json with random weights
(transformers' own initialisation, on the GPU) and the prompt is random token
ids drawn from --seed: the peer of `kvscope speed --random-weights`, which
times the same shape (speed does not depend on the weights' values).
"eager" is the model in fp16 with SDPA and transformers' dynamic cache;
"compiled" adds its static cache and torch.compile (reported as failed where
that does not run). Prints one JSON object per (mode, length).
"""
import argparse
import json
import statistics
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start, out


def run(model, ids, new_tokens, repeats):
    attention = torch.ones_like(ids)
    kwargs = dict(attention_mask=attention, do_sample=False, pad_token_id=0)
    first, whole = [], []
    for _ in range(repeats + 1):  # the first run warms up (and compiles)
        t1, _ = timed(lambda: model.generate(ids, max_new_tokens=1, min_new_tokens=1, **kwargs))
        tn, _ = timed(lambda: model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kwargs))
        first.append(t1)
        whole.append(tn)
    first, whole = statistics.median(first[1:]), statistics.median(whole[1:])
    return first, (whole - first) / (new_tokens - 1)


def load(args):
    if args.model:
        return AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float16, attn_implementation="sdpa").cuda()
    fields = json.load(open(args.config))
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    torch.manual_seed(args.seed)
    with torch.device("cuda"):
        return AutoModelForCausalLM.from_config(config, dtype=torch.float16, attn_implementation="sdpa")


def main():
    parser = argparse.ArgumentParser()
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a Hugging Face model folder")
    source.add_argument("--config", help="a config.json: the model with random weights")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lengths", default="4096,16384")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--modes", default="eager,compiled")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model) if args.model else None
    for mode in args.modes.split(","):
        model = load(args).eval()
        if mode == "compiled":
            model.generation_config.cache_implementation = "static"
            model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
        for length in [int(x) for x in args.lengths.split(",")]:
            if tokenizer:
                ids = tokenizer(FILLER * (length // 20 + 1), return_tensors="pt").input_ids[:, :length].cuda()
            else:
                generator = torch.Generator().manual_seed(args.seed)
                ids = torch.randint(0, model.config.vocab_size, (1, length), generator=generator).cuda()
            try:
                ttft, decode = run(model, ids, args.new_tokens, args.repeats)
                row = {"mode": mode, "prompt_tokens": int(ids.shape[1]), "time_to_first_token_ms": ttft * 1e3,
                       "prefill_tokens_per_second": ids.shape[1] / ttft, "decode_ms_per_token": decode * 1e3}
            except Exception as e:  # torch.compile may not run on this machine
                row = {"mode": mode, "prompt_tokens": int(ids.shape[1]), "failed": f"{type(e).__name__}: {e}"[:300]}
            print(json.dumps(row), flush=True)
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
