#!/usr/bin/env python3
"""PyTorch on CUDA at the shapes kvscope benchmarks, for side-by-side numbers.

What it times (fp16, GQA, batch 1):
- torch.nn.functional.scaled_dot_product_attention for one decode query per
  head, and for a prefill chunk (the last --chunk positions) over T keys:
  unmasked (a bound, not the same step: it also attends to the chunk's later
  keys), with the chunk's causal mask as a boolean tensor (which keeps
  PyTorch off its flash kernel), and with
  torch.nn.attention.bias.causal_lower_right (the same mask, which the flash
  kernel takes: the like-for-like dense chunk);
- Quest and Fier decode and QuoKA prefill (score, topk, gather, SDPA), each
  written twice: as a researcher first writes them (`quest_decode`,
  `fier_decode`, `quoka_prefill_chunk`: the cache repeated per query head,
  scores over fp32 copies of it), and lean (`..._lean`: the same selections
  with no copy of the cache: Quest's bounds as two small matmuls, gathers per
  KV head, fp16 matmuls with fp32 accumulation).

Each is timed with CUDA events, warm-up then the median of --repeat runs,
rotating among --copies K/V copies so that the L2 cache does not flatter
short lengths: run eagerly (`median_us`: what a script pays, host launch gaps
included) and replayed from a CUDA graph (`graph_us`: GPU time, as kvscope's
timestamps of a recorded command buffer measure it; the like-for-like
figure). Per-cache metadata (Quest's page min/max, Fier's dequantised 1-bit
keys) is built once and not timed, as in kvscope. Prints one JSON object per
measurement.

With --kvscope FILE, the JSON of `kvscope bench --json FILE` run at the same
shape, it checks that the shapes agree before timing anything and ends with a
table of each measurement beside kvscope's `total` for the same step, and
PyTorch's time over kvscope's (eager and graphed).

Run on a machine with a CUDA GPU; nothing here is used by the engine.
"""
import argparse
import json
import statistics
import sys

# kvscope's step for each measurement (`kvscope bench` step names).
KVSCOPE_STEP = {
    "sdpa_decode": "dense decode",
    "sdpa_prefill_chunk_unmasked": "dense prefill",
    "sdpa_prefill_chunk_causal": "dense prefill",
    "sdpa_prefill_chunk_lower_right": "dense prefill",
    "quest_decode": "quest decode",
    "quest_decode_lean": "quest decode",
    "fier_decode": "fier decode",
    "fier_decode_lean": "fier decode",
    "quoka_prefill_chunk": "quoka prefill",
    "quoka_prefill_chunk_lean": "quoka prefill",
}

# The arguments that must equal the kvscope run's config (the same names
# there). The PyTorch versions implement Quest and Fier per query head and
# QuoKA's mean over the group, in fp16.
SHAPE_ARGUMENTS = ("heads", "kv_heads", "dim", "chunk", "budget", "prefill_budget", "page_size", "group_size", "n_q")
FIXED_CONFIG = {"dtype": "F16", "gqa_agg": "head", "quoka_group": "mean"}


class InputError(Exception):
    pass


def kvscope_totals(report, args):
    """{(step, length): total µs} from a `kvscope bench --json` report, after
    checking that it was timed at the shape `args` asks for."""
    config = report.get("config") if isinstance(report, dict) else None
    if not isinstance(config, dict):
        raise InputError("the kvscope report has no config (written by a kvscope older than this script?)")
    for key in SHAPE_ARGUMENTS:
        if config.get(key) != getattr(args, key):
            raise InputError(f"the kvscope report has {key} {config.get(key)}, this run "
                             f"--{key.replace('_', '-')} {getattr(args, key)}")
    for key, value in FIXED_CONFIG.items():
        if config.get(key) != value:
            raise InputError(f"the kvscope report has {key} {config.get(key)}; the PyTorch versions do {value}")
    totals = {}
    for row in report.get("rows", []):
        if row.get("stage") == "total":
            totals[(row["step"], int(row["length"]))] = float(row["time_us"])
    return totals


def comparison(measurements, totals):
    """Rows of (what, tokens, eager µs, graph µs, kvscope step, kvscope µs,
    eager / kvscope, graph / kvscope), for measurements kvscope timed too."""
    rows = []
    for m in measurements:
        step = KVSCOPE_STEP.get(m["what"])
        ours = totals.get((step, m["tokens"]))
        if ours is None or "median_us" not in m:
            continue
        graph = m.get("graph_us")
        rows.append((m["what"], m["tokens"], m["median_us"], graph, step, ours, m["median_us"] / ours,
                     graph / ours if graph is not None else None))
    return rows


def format_comparison(rows):
    def number(x, digits=1):
        return "-" if x is None else f"{x:.{digits}f}"

    lines = [f"{'pytorch':32} {'tokens':>7} {'eager_us':>9} {'graph_us':>9}  {'kvscope':15} {'total_us':>9} "
             f"{'eager/kv':>8} {'graph/kv':>8}"]
    for what, tokens, eager, graph, step, ours, eager_ratio, graph_ratio in rows:
        lines.append(f"{what:32} {tokens:>7} {number(eager):>9} {number(graph):>9}  {step:15} {number(ours):>9} "
                     f"{number(eager_ratio, 2):>8} {number(graph_ratio, 2):>8}")
    return "\n".join(lines)


def read_kvscope_report(path, args):
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read the kvscope report {path}: {e}")
    return kvscope_totals(report, args)


def parse_arguments(argv=None):
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
    parser.add_argument("--no-graphs", action="store_true", help="time eagerly only")
    parser.add_argument("--kvscope", metavar="FILE", help="kvscope bench --json output to compare with")
    parser.add_argument("--steps", help="the measurements to run, by name (default all)")
    args = parser.parse_args(argv)
    args.steps = args.steps.split(",") if args.steps else list(KVSCOPE_STEP)
    unknown = [s for s in args.steps if s not in KVSCOPE_STEP]
    if unknown:
        raise InputError(f"--steps: no measurement named {unknown[0]} (they are {', '.join(KVSCOPE_STEP)})")
    # Quest's pages and Fier's groups cut the cache; SDPA alone takes any length.
    args.paged = any(not s.startswith("sdpa") for s in args.steps)
    try:
        args.token_counts = [int(t) for t in args.tokens.split(",")]
    except ValueError:
        raise InputError(f"--tokens must be a comma-separated list of counts, not '{args.tokens}'")
    for T in args.token_counts:
        if args.paged and (T % args.page_size or T % args.group_size or T <= args.chunk + args.prefill_budget):
            raise InputError(f"--tokens {T} must be a multiple of the page and group sizes and exceed "
                             "the chunk plus B_SA (with measurements other than SDPA's)")
        if T < args.chunk:
            raise InputError(f"--tokens {T} is shorter than the chunk")
    if args.heads % args.kv_heads:
        raise InputError("--heads must be a multiple of --kv-heads")
    return args


def main():
    try:
        args = parse_arguments()
        totals = read_kvscope_report(args.kvscope, args) if args.kvscope else None
    except InputError as e:
        print(f"bench_torch: {e}", file=sys.stderr)
        return 2

    import torch
    import torch.nn.functional as F
    from torch.nn.attention.bias import causal_lower_right

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

    def graphs_of(fn, copies):
        """fn(i) for K/V copy i captured in a CUDA graph per copy: a function
        that replays them in turn (the graphs live as long as it does)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # first calls (library handles, workspaces) outside the capture
            for i in range(copies):
                fn(i)
        torch.cuda.current_stream().wait_stream(side)
        graphs = []
        for i in range(copies):
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn(i)
            graphs.append(graph)
        turn = [0]

        def replay():
            turn[0] = (turn[0] + 1) % copies
            graphs[turn[0]].replay()

        return replay

    def quest_tokens(bound, budget, page):
        """The tokens [G, r, n] of the top pages by bound [G, r, P], plus the last page (always kept)."""
        kept = torch.topk(bound[:, :, :-1], max(budget // page - 1, 1), dim=-1).indices  # [G, r, kp]
        last = torch.full_like(kept[..., :1], bound.shape[-1] - 1)
        pages = torch.cat([kept, last], -1)
        return (pages[..., None] * page + torch.arange(page, device=bound.device)).flatten(-2)

    def quest_decode(q, k, v, pages_max, pages_min, budget, page):
        """q [1,H,1,d]; pages_* [1,G,P,d]. Page bound scores, top pages plus the last, gather, SDPA."""
        H, G = q.shape[1], k.shape[1]
        r = H // G
        qg = q[0, :, 0].view(G, r, -1)                                              # [G, r, d]
        bound = torch.maximum(qg[:, :, None, :] * pages_max[0, :, None], qg[:, :, None, :] * pages_min[0, :, None]).sum(-1)
        tokens = quest_tokens(bound, budget, page)                                  # [G, r, n]
        idx = tokens.reshape(H, -1)[None, :, :, None].expand(-1, -1, -1, k.shape[-1])
        kh = k.repeat_interleave(r, 1).gather(2, idx)
        vh = v.repeat_interleave(r, 1).gather(2, idx)
        return F.scaled_dot_product_attention(q, kh, vh)

    def gather_per_kv_head(k, v, tokens):
        """K and V rows [1, H, n, d] at tokens [G, r, n], read from the KV head's own rows."""
        G, r, n = tokens.shape
        idx = tokens.reshape(G, r * n, 1).expand(-1, -1, k.shape[-1])
        kh = k[0].gather(1, idx).view(1, G * r, n, -1)
        vh = v[0].gather(1, idx).view(1, G * r, n, -1)
        return kh, vh

    def quest_decode_lean(q, k, v, pages_max, pages_min, budget, page):
        """Quest as above; sum_c max(q_c max_c, q_c min_c) = q+ . max + q- . min."""
        H, G = q.shape[1], k.shape[1]
        r = H // G
        qg = q[0, :, 0].view(G, r, -1)
        bound = torch.matmul(qg.clamp(min=0), pages_max[0].transpose(1, 2)) + \
            torch.matmul(qg.clamp(max=0), pages_min[0].transpose(1, 2))               # [G, r, P]
        kh, vh = gather_per_kv_head(k, v, quest_tokens(bound, budget, page))
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

    def fier_decode_lean(q, k, v, k_tilde, budget):
        """Fier as above, the group's scores in one fp16 matmul per KV head."""
        H, G = q.shape[1], k.shape[1]
        r = H // G
        scores = torch.matmul(q[0, :, 0].view(G, r, -1), k_tilde[0].transpose(1, 2))  # [G, r, T]
        top = torch.topk(scores, budget, dim=-1).indices
        kh, vh = gather_per_kv_head(k, v, top)
        return F.scaled_dot_product_attention(q, kh, vh)

    def quoka_queries(q, G, n_q):
        """The group means of each head's n_q least mean-similar queries, normalised: [G, n_q, d] fp32."""
        H = q.shape[1]
        qf = q[0].float()
        mean = qf.mean(1, keepdim=True)
        cos = F.cosine_similarity(qf, mean, dim=-1)                                # [H, C]
        kept = torch.topk(-cos, n_q, dim=-1).indices                               # least similar
        qk = F.normalize(qf.gather(1, kept[..., None].expand(-1, -1, qf.shape[-1])), dim=-1)
        return qk.view(G, H // G, n_q, -1).mean(1)

    def quoka_attention(q, k, v, top, budget):
        C, T = q.shape[2], k.shape[2]
        idx = top[None, :, :, None].expand(-1, -1, -1, k.shape[-1])
        ks = torch.cat([k[:, :, : T - C].gather(2, idx), k[:, :, T - C:]], 2)
        vs = torch.cat([v[:, :, : T - C].gather(2, idx), v[:, :, T - C:]], 2)
        mask = torch.ones(C, budget + C, dtype=torch.bool, device=q.device)
        mask[:, budget:] = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
        return F.scaled_dot_product_attention(q, ks, vs, attn_mask=mask, enable_gqa=True)

    def quoka_prefill(q, k, v, budget, n_q):
        """QuoKA on the chunk q [1,H,C,d] at the end of k: query subselection, group mean, cosine key scores."""
        C, G, T = q.shape[2], k.shape[1], k.shape[2]
        agg = quoka_queries(q, G, n_q)
        kn = F.normalize(k[0, :, : T - C].float(), dim=-1)                         # [G, T-C, d]
        scores = torch.einsum("gnd,gtd->gnt", agg, kn).amax(1)                      # [G, T-C]
        return quoka_attention(q, k, v, torch.topk(scores, budget, dim=-1).indices, budget)

    def quoka_prefill_lean(q, k, v, budget, n_q):
        """QuoKA as above, cosines as an fp16 matmul over the keys divided by their norms."""
        C, G, T = q.shape[2], k.shape[1], k.shape[2]
        agg = quoka_queries(q, G, n_q)
        past = k[0, :, : T - C]
        norms = torch.linalg.vector_norm(past, dim=-1, dtype=torch.float32)        # [G, T-C]
        dots = torch.matmul(agg.half(), past.transpose(1, 2)).amax(1)              # [G, T-C]
        scores = dots.float() / norms.clamp_min(1e-12)
        return quoka_attention(q, k, v, torch.topk(scores, budget, dim=-1).indices, budget)

    device = torch.device("cuda")
    H, G, d, C, P, gs = args.heads, args.kv_heads, args.dim, args.chunk, args.page_size, args.group_size
    measurements = []
    for T in args.token_counts:
        kv = [(torch.randn(1, G, T, d, device=device, dtype=torch.float16),
               torch.randn(1, G, T, d, device=device, dtype=torch.float16)) for _ in range(args.copies)]
        q1 = torch.randn(1, H, 1, d, device=device, dtype=torch.float16)
        qc = torch.randn(1, H, C, d, device=device, dtype=torch.float16)
        # The chunk holds the last C positions: query i sees keys [0, T - C + i].
        rows = torch.arange(C, device=device)[:, None] + (T - C)
        causal = torch.arange(T, device=device)[None, :] <= rows
        lower_right = causal_lower_right(C, T)

        # Per-cache metadata, built once (not timed), for each K copy.
        meta = []
        for k, _ in (kv if args.paged else []):
            pages = k.view(1, G, T // P, P, d)
            blocks = k.view(1, G, T // gs, gs, d)
            lo, hi = blocks.amin(3, keepdim=True), blocks.amax(3, keepdim=True)
            bit = (hi > lo) & ((blocks - lo) / (hi - lo).clamp_min(1e-6) >= 0.5)
            meta.append((pages.amax(3), pages.amin(3), torch.where(bit, hi, lo).view(1, G, T, d)))

        # Each measurement as fn(i) on K/V copy i.
        steps = (
            ("sdpa_decode", lambda i: F.scaled_dot_product_attention(q1, *kv[i], enable_gqa=True)),
            ("sdpa_prefill_chunk_unmasked", lambda i: F.scaled_dot_product_attention(qc, *kv[i], enable_gqa=True)),
            ("sdpa_prefill_chunk_causal",
             lambda i: F.scaled_dot_product_attention(qc, *kv[i], attn_mask=causal, enable_gqa=True)),
            ("sdpa_prefill_chunk_lower_right",
             lambda i: F.scaled_dot_product_attention(qc, *kv[i], attn_mask=lower_right, enable_gqa=True)),
            ("quest_decode", lambda i: quest_decode(q1, *kv[i], meta[i][0], meta[i][1], args.budget, P)),
            ("quest_decode_lean", lambda i: quest_decode_lean(q1, *kv[i], meta[i][0], meta[i][1], args.budget, P)),
            ("fier_decode", lambda i: fier_decode(q1, *kv[i], meta[i][2], args.budget)),
            ("fier_decode_lean", lambda i: fier_decode_lean(q1, *kv[i], meta[i][2], args.budget)),
            ("quoka_prefill_chunk", lambda i: quoka_prefill(qc, *kv[i], args.prefill_budget, args.n_q)),
            ("quoka_prefill_chunk_lean", lambda i: quoka_prefill_lean(qc, *kv[i], args.prefill_budget, args.n_q)),
        )
        for name, fn in steps:
            if name not in args.steps:
                continue
            m = {"what": name, "tokens": T, "heads": H, "kv_heads": G, "dim": d, "chunk": C if "chunk" in name else 1,
                 "device": torch.cuda.get_device_name()}
            try:
                turn = [0]

                def eager():
                    turn[0] = (turn[0] + 1) % args.copies
                    fn(turn[0])

                m["median_us"] = round(time_cuda(eager, args.repeat) * 1000, 1)
                if not args.no_graphs:
                    replay = graphs_of(fn, args.copies)
                    m["graph_us"] = round(time_cuda(replay, args.repeat) * 1000, 1)
                    del replay  # its graphs' memory, before empty_cache
            except (RuntimeError, TypeError, ValueError) as e:  # a kernel this PyTorch lacks: say so, go on
                m["error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
            torch.cuda.empty_cache()
            measurements.append(m)
            print(json.dumps(m), flush=True)
        del kv, meta
        torch.cuda.empty_cache()

    if totals is not None:
        rows = comparison(measurements, totals)
        print()
        print(format_comparison(rows))
        compared = {(row[0], row[1]) for row in rows}
        unmatched = sorted({f"{m['what']} at {m['tokens']}" for m in measurements
                            if (m["what"], m["tokens"]) not in compared})
        if unmatched:
            print("not compared (an error above, or no kvscope total at that length): " + ", ".join(unmatched))
    return 0


if __name__ == "__main__":
    sys.exit(main())
