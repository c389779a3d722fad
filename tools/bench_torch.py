#!/usr/bin/env python3
"""PyTorch on CUDA at the shapes kvscope benchmarks, for side-by-side numbers.

Times torch.nn.functional.scaled_dot_product_attention (fp16, GQA) for one
decode query per head and for a prefill chunk over T keys, with CUDA events:
warm-up, then the median of --repeat runs, rotating among several K/V copies
so that the L2 cache does not flatter short lengths. Prints one JSON object per
measurement. Run on a machine with a CUDA GPU; nothing here is used by the engine.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def time_cuda(fn, repeat, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="8192,32768,131072")
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--copies", type=int, default=4, help="K/V copies rotated between runs")
    args = parser.parse_args()

    device = torch.device("cuda")
    H, G, d = args.heads, args.kv_heads, args.dim
    for T in (int(t) for t in args.tokens.split(",")):
        kv = [(torch.randn(1, G, T, d, device=device, dtype=torch.float16),
               torch.randn(1, G, T, d, device=device, dtype=torch.float16)) for _ in range(args.copies)]
        q1 = torch.randn(1, H, 1, d, device=device, dtype=torch.float16)
        qc = torch.randn(1, H, args.chunk, d, device=device, dtype=torch.float16)
        # The chunk holds the last `chunk` positions: query i sees keys [0, T - chunk + i].
        rows = torch.arange(args.chunk, device=device)[:, None] + (T - args.chunk)
        causal = torch.arange(T, device=device)[None, :] <= rows
        turn = [0]

        def next_kv():
            turn[0] = (turn[0] + 1) % args.copies
            return kv[turn[0]]

        def decode():
            k, v = next_kv()
            F.scaled_dot_product_attention(q1, k, v, enable_gqa=True)

        def chunk_unmasked():
            k, v = next_kv()
            F.scaled_dot_product_attention(qc, k, v, enable_gqa=True)

        def chunk_causal():
            k, v = next_kv()
            F.scaled_dot_product_attention(qc, k, v, attn_mask=causal, enable_gqa=True)

        for name, fn in (("sdpa_decode", decode), ("sdpa_prefill_chunk_unmasked", chunk_unmasked),
                         ("sdpa_prefill_chunk_causal", chunk_causal)):
            ms = time_cuda(fn, args.repeat)
            print(json.dumps({"what": name, "tokens": T, "heads": H, "kv_heads": G, "dim": d,
                              "chunk": args.chunk if "chunk" in name else 1, "median_us": round(ms * 1000, 1),
                              "device": torch.cuda.get_device_name()}), flush=True)
        del kv


if __name__ == "__main__":
    main()
