#!/usr/bin/env python3
"""cuBLAS (torch.matmul, fp16 in, fp32 accumulation) on a model's linear-layer
shapes: the peer of kvscope's prefill chunks and decode steps, timed in the
same run on the same GPU.

  python3 tools/peers/bench_linear.py --config assets/shapes/llama-3.1-8b.json --tokens 1,128,2048

For each token count, the linear layers of every layer as the model runs them
(q, k, v, o, gate, up, down; the LM head on the last token only, as a decode
step and `kvscope speed` run it) with random fp16 inputs and weights: ms for
the whole model, TFLOP/s, and the weights' read rate. Also the device's copy
bandwidth (a 2 GiB tensor copied: read + write bytes over time), the ceiling
of a decode step. Prints one JSON object per token count, then the copy.
"""
import argparse
import json


def shapes(config):
    hidden, heads, layers = config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]
    kv_heads = config.get("num_key_value_heads", heads)
    head_dim = config.get("head_dim") or hidden // heads
    inter = config["intermediate_size"]
    per_layer = {"q": (heads * head_dim, hidden), "k": (kv_heads * head_dim, hidden), "v": (kv_heads * head_dim, hidden),
                 "o": (hidden, heads * head_dim), "gate": (inter, hidden), "up": (inter, hidden), "down": (hidden, inter)}
    return per_layer, layers, (config["vocab_size"], hidden)


def linear_flops(config, tokens):
    """The FLOPs of the linear layers for `tokens` tokens, the LM head on the last only."""
    per_layer, layers, lm_head = shapes(config)
    return 2 * tokens * sum(n_out * n_in for n_out, n_in in per_layer.values()) * layers + 2 * lm_head[0] * lm_head[1]


def time_ms(fn, repeats):
    import torch

    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--tokens", default="1,128,2048")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    import torch

    config = json.load(open(args.config))
    per_layer, layers, lm_head = shapes(config)
    torch.manual_seed(0)
    # One weight a shape, reused by every layer would stay in L2 for small
    # shapes: a decode step reads each layer's own weights, so keep them all.
    weights = {name: [torch.randn(n_out, n_in, device="cuda", dtype=torch.float16) * 0.02 for _ in range(layers)]
               for name, (n_out, n_in) in per_layer.items()}
    head = torch.randn(*lm_head, device="cuda", dtype=torch.float16) * 0.02
    weight_bytes = sum(w.numel() * 2 for ws in weights.values() for w in ws) + head.numel() * 2
    for tokens in [int(t) for t in args.tokens.split(",")]:
        inputs = {name: torch.randn(tokens, n_in, device="cuda", dtype=torch.float16) for name, (n_out, n_in) in per_layer.items()}
        last = torch.randn(1, lm_head[1], device="cuda", dtype=torch.float16)

        def model_linear():
            for name, ws in weights.items():
                for w in ws:
                    torch.matmul(inputs[name], w.t())
            torch.matmul(last, head.t())

        ms = time_ms(model_linear, args.repeats)
        by_name = {name: time_ms(lambda: [torch.matmul(inputs[name], w.t()) for w in ws], args.repeats)
                   for name, ws in weights.items()}
        flops = linear_flops(config, tokens)
        print(json.dumps({"peer": "torch.matmul", "tokens": tokens, "linear_ms": ms, "tflops": flops / ms / 1e9,
                          "weights_tb_per_s": weight_bytes / ms / 1e9, "ms_by_layer_kind": by_name,
                          "device": torch.cuda.get_device_name()}), flush=True)
    block = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    copy = torch.empty_like(block)
    ms = time_ms(lambda: copy.copy_(block), args.repeats)
    print(json.dumps({"peer": "copy", "bytes": block.numel(), "ms": ms, "tb_per_s": 2 * block.numel() / ms / 1e9}), flush=True)


if __name__ == "__main__":
    main()
