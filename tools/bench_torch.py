#!/usr/bin/env python3
"""PyTorch on CUDA at the shapes kvscope benchmarks, for side-by-side numbers.

Times torch.nn.functional.scaled_dot_product_attention (fp16, GQA) for one
decode query per head and for a prefill chunk over T keys, and straightforward
vectorised PyTorch versions of Quest and Fier decode and QuoKA prefill (as a
researcher would write them: score, topk, gather, SDPA), with CUDA events:
warm-up, then the median of --repeat runs, rotating among several K/V copies
so that the L2 cache does not flatter short lengths. Per-cache metadata (Quest's
page min/max, Fier's dequantised 1-bit keys) is built once and not timed, as in
kvscope. Prints one JSON object per measurement. Run on a machine with a CUDA
GPU; nothing here is used by the engine.
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


def quest_decode(q, k, v, pages_max, pages_min, budget, page):
    """q [1,H,1,d]; pages_* [1,G,P,d]. Page bound scores, top pages plus the last, gather, SDPA."""
    H, G = q.shape[1], k.shape[1]
    r = H // G
    qg = q[0, :, 0].view(G, r, -1)                                              # [G, r, d]
    bound = torch.maximum(qg[:, :, None, :] * pages_max[0, :, None], qg[:, :, None, :] * pages_min[0, :, None]).sum(-1)
    scored = bound[:, :, :-1]                                                   # the last page is always kept
    kept = torch.topk(scored, max(budget // page - 1, 1), dim=-1).indices       # [G, r, kp]
    last = torch.full_like(kept[..., :1], bound.shape[-1] - 1)
    pages = torch.cat([kept, last], -1)
    tokens = (pages[..., None] * page + torch.arange(page, device=q.device)).flatten(-2)  # [G, r, n]
    idx = tokens.reshape(H, -1)[None, :, :, None].expand(-1, -1, -1, k.shape[-1])
    kh = k.repeat_interleave(r, 1).gather(2, idx)
    vh = v.repeat_interleave(r, 1).gather(2, idx)
    return F.scaled_dot_product_attention(q, kh, vh)


def fier_decode(q, k, v, k_tilde, budget):
    """Approximate scores against dequantised 1-bit keys, top-k tokens per head, gather, SDPA."""
    H, G = q.shape[1], k.shape[1]
    r = H // G
    scores = torch.einsum("gd,gtd->gt", q[0, :, 0].float(), k_tilde[0].repeat_interleave(r, 0).float())
    top = torch.topk(scores, budget, dim=-1).indices                           # [H, budget]
    idx = top[None, :, :, None].expand(-1, -1, -1, k.shape[-1])
    kh = k.repeat_interleave(r, 1).gather(2, idx)
    vh = v.repeat_interleave(r, 1).gather(2, idx)
    return F.scaled_dot_product_attention(q, kh, vh)


def quoka_prefill(q, k, v, budget, n_q):
    """QuoKA on the chunk q [1,H,C,d] at the end of k: query subselection, group mean, cosine key scores."""
    H, C, G = q.shape[1], q.shape[2], k.shape[1]
    r, T = H // G, k.shape[2]
    past_k, past_v = k[:, :, : T - C], v[:, :, : T - C]
    qf = q[0].float()
    mean = qf.mean(1, keepdim=True)
    cos = F.cosine_similarity(qf, mean, dim=-1)                                # [H, C]
    kept = torch.topk(-cos, n_q, dim=-1).indices                               # least similar
    qk = F.normalize(qf.gather(1, kept[..., None].expand(-1, -1, qf.shape[-1])), dim=-1)
    agg = qk.view(G, r, n_q, -1).mean(1)                                        # [G, n_q, d]
    kn = F.normalize(past_k[0].float(), dim=-1)                                 # [G, T-C, d]
    scores = torch.einsum("gnd,gtd->gnt", agg, kn).amax(1)                      # [G, T-C]
    top = torch.topk(scores, budget, dim=-1).indices
    idx = top[None, :, :, None].expand(-1, -1, -1, k.shape[-1])
    ks = torch.cat([past_k.gather(2, idx), k[:, :, T - C:]], 2)
    vs = torch.cat([past_v.gather(2, idx), v[:, :, T - C:]], 2)
    mask = torch.ones(C, budget + C, dtype=torch.bool, device=q.device)
    mask[:, budget:] = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    return F.scaled_dot_product_attention(q, ks, vs, attn_mask=mask, enable_gqa=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="8192,32768,131072")
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--copies", type=int, default=4, help="K/V copies rotated between runs")
    parser.add_argument("--budget", type=int, default=2048, help="decode budget (quest, fier)")
    parser.add_argument("--prefill-budget", type=int, default=1024, help="QuoKA's B_SA")
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=32)
    parser.add_argument("--n-q", type=int, default=16)
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

        # Per-cache metadata, built once (not timed), for each K copy.
        P, gs = args.page_size, args.group_size
        meta = []
        for k, _ in kv:
            pages = k.view(1, G, T // P, P, d)
            blocks = k.view(1, G, T // gs, gs, d)
            lo, hi = blocks.amin(3, keepdim=True), blocks.amax(3, keepdim=True)
            bit = (hi > lo) & ((blocks - lo) / (hi - lo).clamp_min(1e-6) >= 0.5)
            meta.append((pages.amax(3), pages.amin(3), torch.where(bit, hi, lo).view(1, G, T, d)))

        def quest():
            k, v = next_kv()
            quest_decode(q1, k, v, meta[turn[0]][0], meta[turn[0]][1], args.budget, P)

        def fier():
            k, v = next_kv()
            fier_decode(q1, k, v, meta[turn[0]][2], args.budget)

        def quoka():
            k, v = next_kv()
            quoka_prefill(qc, k, v, args.prefill_budget, args.n_q)

        for name, fn in (("sdpa_decode", decode), ("sdpa_prefill_chunk_unmasked", chunk_unmasked),
                         ("sdpa_prefill_chunk_causal", chunk_causal), ("quest_decode", quest),
                         ("fier_decode", fier), ("quoka_prefill_chunk", quoka)):
            ms = time_cuda(fn, args.repeat)
            print(json.dumps({"what": name, "tokens": T, "heads": H, "kv_heads": G, "dim": d,
                              "chunk": args.chunk if "chunk" in name else 1, "median_us": round(ms * 1000, 1),
                              "device": torch.cuda.get_device_name()}), flush=True)
        del kv, meta


if __name__ == "__main__":
    main()
