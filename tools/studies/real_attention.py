#!/usr/bin/env python3
"""The real-data tables of docs/real-attention.md, for any model kvscope runs.

  python3 tools/studies/real_attention.py --kvscope build/bin/kvscope --model DIR --out DIR
      [--haystack assets/text/licenses.txt] [--passkey-length 16384]
      [--needle-length 8192] [--text-length 8192] [--probes 16] [--chunks 8]

Makes three captures with `kvscope capture` (a passkey prompt, a key-value
needle hidden in natural text, plain text; every layer), runs `kvscope eval`
on each in decode and in prefill at budgets of 1%, 3%, 6% and 12% of T, finds
the retrieval heads (those whose dense attention from the last position, the
one that answers, puts the most mass on the needle), and writes OUT/tables.md
(markdown tables: means, per layer, the retrieval heads, the papers' orderings
and the ablations) and OUT/summary.json. Needs numpy; captures and eval JSON
stay in OUT, and a step whose output exists is not run again.
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time


BUDGETS = ["1%", "3%", "6%", "12%"]
DECODE_METHODS = "dense,oracle,quoka,quest,fier,streaming,keydiff,tova,sparq,loki,snapkv,h2o,sampleattention"
PREFILL_METHODS = DECODE_METHODS
NEEDLE = "The special magic number for lantern is 4829173."
QUESTION = "\nWhat is the special magic number for lantern? The special magic number for lantern is"


def run(command, log):
    start = time.time()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    print(f"{time.time() - start:7.1f} s  {' '.join(command[1:6])} ...", file=log, flush=True)


def read_safetensors(path, names):
    """The named tensors of a capture as float32 arrays, and its metadata."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        base = 8 + size
        out = {}
        for name in names:
            import numpy as np  # only where tensors are read: the tables need none

            info = header[name]
            begin, end = info["data_offsets"]
            f.seek(base + begin)
            raw = f.read(end - begin)
            dtype = {"F16": np.float16, "F32": np.float32, "I32": np.int32}[info["dtype"]]
            out[name] = np.frombuffer(raw, dtype=dtype).reshape(info["shape"]).astype(np.float32)
    return out, header.get("__metadata__", {}), header


def needle_mass(capture, positions):
    """Per (layer, head): the dense attention mass on the needle's tokens from
    the last `positions` positions, averaged over them."""
    import numpy as np
    _, meta, header = read_safetensors(capture, [])
    first, end = (int(x) for x in meta["needle_span"].split(","))
    layers = sorted({int(k.split(".")[1]) for k in header if k.startswith("layers.")})
    mass = {}
    for layer in layers:
        t, _, _ = read_safetensors(capture, [f"layers.{layer}.q", f"layers.{layer}.k"])
        q, k = t[f"layers.{layer}.q"], t[f"layers.{layer}.k"]
        heads, tokens, dim = q.shape
        group = heads // k.shape[0]
        for h in range(heads):
            keys = k[h // group]
            total = 0.0
            for position in range(tokens - positions, tokens):
                logits = keys[: position + 1] @ q[h, position] / np.sqrt(dim)
                p = np.exp(logits - logits.max())
                total += p[first:end].sum() / p.sum()
            mass[(layer, h)] = total / positions
    return mass


def load_rows(path):
    with open(path) as f:
        return json.load(f)


def fmt(value):
    return "-" if value is None or value < 0 else f"{value:.3f}"


def mean(values):
    values = [v for v in values if v is not None and v >= 0]
    return sum(values) / len(values) if values else -1


def by_method_budget(rows):
    table = {}
    for r in rows:
        table.setdefault((r["method"], r["budget"]), []).append(r)
    return table


def mean_table(rows, title, needle):
    """Method x budget: means over layers of coverage / recall / output error (/ needle)."""
    budgets = sorted({r["budget"] for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    table = by_method_budget(rows)
    lines = [f"**{title}** (coverage / recall / output error" + (" / needle recall" if needle else "") + ", means over layers and heads)", ""]
    lines.append("| method | lists | " + " | ".join(f"B={b}" for b in budgets) + " |")
    lines.append("| --- | --- |" + " --- |" * len(budgets))
    granularity = {r["method"]: r["granularity"] for r in rows}
    for m in methods:
        cells = []
        for b in budgets:
            rs = table.get((m, b), [])
            parts = [mean([r["coverage"] for r in rs]), mean([r["recall"] for r in rs]), mean([r["output_error"] for r in rs])]
            if needle:
                parts.append(mean([r.get("needle_recall", -1) for r in rs]))
            cells.append(" / ".join(fmt(p) for p in parts))
        lists = "-" if m == "dense" else "per query head" if granularity[m] == "query_head" else "per KV head"
        lines.append(f"| {m} | {lists} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def layer_table(rows, budget, title):
    """Recall per layer at one budget: where the mean over layers hides the story."""
    layers = sorted({r["layer"] for r in rows})
    methods = [m for m in dict.fromkeys(r["method"] for r in rows) if m not in ("dense", "oracle")]
    table = {(r["method"], r["layer"]): r for r in rows if r["budget"] == budget}
    lines = [f"**{title}** (recall of the oracle's keys per layer, B={budget})", ""]
    lines.append("| method | " + " | ".join(f"layer {l}" for l in layers) + " |")
    lines.append("| --- |" + " --- |" * len(layers))
    for m in methods:
        lines.append(f"| {m} | " + " | ".join(fmt(table[(m, l)]["recall"]) if (m, l) in table else "-" for l in layers) + " |")
    return "\n".join(lines) + "\n"


def head_metric(rows, heads, key):
    """Method x budget: a per-head metric averaged over the given (layer, head) pairs."""
    out = {}
    for (m, b), rs in by_method_budget(rows).items():
        values = []
        for r in rs:
            per_head = r["per_head"].get(key)
            if per_head is None:
                continue
            values += [per_head[h] for (layer, h) in heads if layer == r["layer"]]
        out[(m, b)] = mean(values)
    return out


def retrieval_table(rows, heads, title):
    budgets = sorted({r["budget"] for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    needle = head_metric(rows, heads, "needle_recall")
    recall = head_metric(rows, heads, "recall")
    lines = [f"**{title}** (needle recall / recall of the oracle's keys, on the retrieval heads only)", ""]
    lines.append("| method | " + " | ".join(f"B={b}" for b in budgets) + " |")
    lines.append("| --- |" + " --- |" * len(budgets))
    for m in methods:
        lines.append(f"| {m} | " + " | ".join(f"{fmt(needle.get((m, b)))} / {fmt(recall.get((m, b)))}" for b in budgets) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kvscope", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--haystack", default=os.path.join(os.path.dirname(__file__), "..", "..", "assets", "text", "licenses.txt"))
    parser.add_argument("--passkey-length", type=int, default=16384)
    parser.add_argument("--needle-length", type=int, default=8192)
    parser.add_argument("--text-length", type=int, default=8192)
    parser.add_argument("--probes", type=int, default=16)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--retrieval-heads", type=int, default=4, help="heads of most needle mass kept per capture")
    parser.add_argument("--mass-positions", type=int, default=1,
                        help="last positions whose attention finds the retrieval heads (1: the one that answers)")
    parser.add_argument("--skip-ablations", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    log = sys.stderr
    out = lambda name: os.path.join(args.out, name)
    k = args.kvscope

    captures = {"passkey": out("passkey.safetensors"), "needle": out("needle.safetensors"), "text": out("text.safetensors")}
    if not os.path.exists(captures["passkey"]):
        run([k, "capture", "--model", args.model, "--passkey", "--length", str(args.passkey_length), "--depth", "0.5",
             "--seed", "7", "--layers", "all", "--out", captures["passkey"]], log)
    if not os.path.exists(captures["needle"]):
        run([k, "capture", "--model", args.model, "--haystack-file", args.haystack, "--needle", NEEDLE, "--question", QUESTION,
             "--length", str(args.needle_length), "--depth", "0.5", "--layers", "all", "--out", captures["needle"]], log)
    if not os.path.exists(captures["text"]):
        with open(args.haystack, encoding="utf-8") as f:
            text = f.read()
        prompt = out("text_prompt.txt")
        with open(prompt, "w", encoding="utf-8") as f:  # about --text-length tokens at 3 characters a token
            f.write(text[: 3 * args.text_length])
        run([k, "capture", "--model", args.model, "--prompt-file", prompt, "--layers", "all", "--out", captures["text"]], log)

    def evaluate(name, capture, regime, methods, extra=()):
        path = out(f"eval_{name}.json")
        if not os.path.exists(path):
            block = ["--decode", "--probes", str(args.probes)] if regime == "decode" else ["--prefill", "--chunks", str(args.chunks)]
            run([k, "eval", "--capture", capture, *block, "--methods", methods, "--budgets", ",".join(BUDGETS), *extra,
                 "--json", path], log)
        return load_rows(path)

    results = {}
    for cap in captures:
        for regime in ("decode", "prefill"):
            results[(cap, regime)] = evaluate(f"{cap}_{regime}", captures[cap], regime,
                                              DECODE_METHODS if regime == "decode" else PREFILL_METHODS)
        # Equal load: Quest and Fier with one list per KV head, as QuoKA and the oracle.
        results[(cap, "decode_kv")] = evaluate(f"{cap}_decode_kv", captures[cap], "decode", "quest,fier,sparq",
                                               ["--gqa-agg", "max"])
    ablations = {}
    if not args.skip_ablations:
        for n_q in (4, 8, 16, 32, 128):
            ablations[("quoka n_q", n_q)] = evaluate(f"ablation_quoka_nq{n_q}", captures["passkey"], "prefill", "quoka",
                                                    ["--n-q", str(n_q)])
        ablations[("quoka group", "max")] = evaluate("ablation_quoka_max", captures["passkey"], "prefill", "quoka",
                                                     ["--quoka-group", "max"])
        for page in (8, 16, 32, 64):
            ablations[("quest page", page)] = evaluate(f"ablation_quest_page{page}", captures["passkey"], "decode", "quest",
                                                      ["--page-size", str(page)])
        for group in (16, 32, 64, 128):
            ablations[("fier group", group)] = evaluate(f"ablation_fier_group{group}", captures["passkey"], "decode", "fier",
                                                       ["--group-size", str(group)])

    md = []
    summary = {"captures": {}, "retrieval_heads": {}}
    for cap, path in captures.items():
        _, meta, header = read_safetensors(path, [])
        tokens = header["layers.0.q"]["shape"][1] if "layers.0.q" in header else None
        summary["captures"][cap] = {"tokens": tokens, "needle_span": meta.get("needle_span")}
    heads = {}
    for cap in ("passkey", "needle") if args.retrieval_heads > 0 else ():
        mass = needle_mass(captures[cap], args.mass_positions)
        ranked = sorted(mass.items(), key=lambda kv: -kv[1])
        heads[cap] = [lh for lh, _ in ranked[: args.retrieval_heads]]
        summary["retrieval_heads"][cap] = [{"layer": l, "head": h, "needle_mass": m} for (l, h), m in ranked]
        where = "the last position (the one whose output is the answer's first token)" if args.mass_positions == 1 else f"the last {args.mass_positions} positions"
        md.append(f"**Retrieval heads, {cap} capture** (dense attention mass on the needle from {where})\n")
        md.append("| layer | head | needle mass |\n| --- | --- | --- |")
        md += [f"| {l} | {h} | {m:.3f} |" for (l, h), m in ranked[: 2 * args.retrieval_heads]]
        all_mass = [m for _, m in ranked]
        md.append(f"\nmedian over all {len(all_mass)} heads: {statistics.median(all_mass):.4f}\n")

    for cap in captures:
        T = summary["captures"][cap]["tokens"]
        for regime in ("decode", "prefill"):
            rows = results[(cap, regime)]
            md.append(mean_table(rows, f"{cap} capture (T={T}), {regime}", cap != "text"))
            md.append(layer_table(rows, sorted({r['budget'] for r in rows})[1], f"{cap}, {regime}, per layer"))
            if cap in heads:
                md.append(retrieval_table(rows, heads[cap], f"{cap}, {regime}, retrieval heads {heads[cap]}"))
        md.append(mean_table(results[(cap, "decode_kv")], f"{cap}, decode, one list per KV head (--gqa-agg max)", cap != "text"))

    if ablations:
        md.append("**Ablations on the passkey capture** (coverage / recall / output error / needle recall, means)\n")
        md.append("| ablation | value | " + " | ".join(f"B={b}" for b in sorted({r['budget'] for r in ablations[('quest page', 16)]})) + " |")
        md.append("| --- | --- |" + " --- |" * len(BUDGETS))
        for (what, value), rows in ablations.items():
            method = what.split()[0]
            table = by_method_budget([r for r in rows if r["method"] == method])
            cells = []
            for b in sorted({r["budget"] for r in rows}):
                rs = table.get((method, b), [])
                cells.append(" / ".join(fmt(mean([r[key] for r in rs])) for key in ("coverage", "recall", "output_error")) +
                             " / " + fmt(mean([r.get("needle_recall", -1) for r in rs])))
            md.append(f"| {what} | {value} | " + " | ".join(cells) + " |")
        md.append("")

    with open(out("tables.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(out("summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"wrote {out('tables.md')} and {out('summary.json')}", file=log)


if __name__ == "__main__":
    main()
