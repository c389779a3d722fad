#!/usr/bin/env python3
"""kvscope beside llama.cpp's Vulkan backend on the same GGUF file, as a
Markdown table (tools/dev/device_llamacpp.sh writes it on the GPU machine):

  python3 tools/peers/llamacpp/compare.py --peer PEER.json [PEER_KERNELS.json] \\
      --kvscope SPEED.json [SPEED2.json ...] [--bench BENCH.json]

PEER*.json are llamacpp_peer's output (its model runs, its kernels, or
both); SPEED*.json `kvscope speed --regime both --methods dense --json`,
one a context length; BENCH.json `kvscope bench --steps dense-prefill
--json` at the same lengths and chunk. Rows: time to the first token and
decode ms/token at each length; one layer's linear layers at the chunk
size (llama.cpp: its seven MUL_MATs with F32 activations, as its forward
pass runs them; kvscope: the qkv, output_projection, mlp_up and mlp_down
stages of its prefill a chunk and a layer); a dense attention chunk ending
each length (llama.cpp: FLASH_ATTN_EXT; kvscope: bench's dense prefill
chunk, a layer). The ratio column is llama.cpp's time over kvscope's: above
1, kvscope is faster. With --others, the JSON lines of the CUDA peers run
in the same call (tools/peers/bench_hf.py: transformers' first token and
decode; bench_linear.py: cuBLAS on the same linear layers; bench_torch.py
--steps sdpa_prefill_chunk_lower_right: SDPA on the same attention chunk),
a last column gives theirs beside each row.
"""
import argparse
import json

LINEAR_STAGES = ("qkv", "output_projection", "mlp_up", "mlp_down")


def near(a, b):
    return a and b and abs(a - b) <= 0.01 * max(a, b)


def other_peers(others, kind, length=None, tokens=None, layers=None):
    """The CUDA peers' figure for a row, as text, or None."""
    found = []
    for o in others:
        if kind == "ttft" and o.get("mode") and near(o.get("prompt_tokens"), length) and "time_to_first_token_ms" in o:
            found.append(f"transformers {o['mode']}: {o['time_to_first_token_ms']:,.0f}")
        if kind == "decode" and o.get("mode") and near(o.get("prompt_tokens"), length) and "decode_ms_per_token" in o:
            found.append(f"transformers {o['mode']}: {o['decode_ms_per_token']:.2f}")
        if kind == "linear" and o.get("peer") == "torch.matmul" and o.get("tokens") == tokens and layers:
            us = sum(o["ms_by_layer_kind"].values()) * 1000 / layers
            found.append(f"cuBLAS (torch.matmul, fp16): {us:,.0f}")
        if kind == "attention" and o.get("what") == "sdpa_prefill_chunk_lower_right" and o.get("tokens") == length \
                and o.get("chunk") == tokens and (o.get("graph_us") or o.get("median_us")):
            found.append(f"SDPA (causal_lower_right, graphed): {o.get('graph_us') or o['median_us']:,.0f}")
    return "; ".join(found) or None


def rows(peers, speeds, bench, others=()):
    model = next((p for p in peers if p.get("runs")), {})
    kernels = next((p for p in peers if p.get("ops")), {})
    runs = {r["context"]: r for r in model.get("runs", [])}
    out = []
    speeds = [{s["regime"]: s} if "regime" in s else s for s in speeds]  # one regime's run, or both's
    for speed in speeds:
        prefill, decode = speed.get("prefill"), speed.get("decode")
        table = prefill or decode
        length, chunk = table["prompt_tokens"], table["chunk"]
        run = runs.get(length)
        if prefill:
            dense = prefill["results"][0]
            out.append((f"time to first token, {length:,} tokens, {chunk:,}-token chunks (ms)",
                        run and run["ttft_ms"], dense["time_to_first_token_ms"], other_peers(others, "ttft", length)))
        if decode:
            dense = decode["results"][0]
            out.append((f"decode at {length:,} tokens (ms/token)", run and run["decode_ms_per_token"], dense["ms_per_token"],
                        other_peers(others, "decode", length)))
    speed = next((s for s in speeds if s.get("prefill")), None)
    if kernels and speed:
        prefill = speed["prefill"]
        tokens = kernels["kernel_tokens"]
        if prefill["chunk"] == tokens:
            layers = kernels["shape"]["layers"]
            chunks = prefill["prompt_tokens"] / prefill["chunk"]
            stages = prefill["results"][0]["gpu_ms_by_stage"]
            kvscope_us = sum(stages.get(s, 0) for s in LINEAR_STAGES) * 1000 / chunks / layers
            ops = [o for o in kernels["ops"] if o["op"] == "MUL_MAT" and o["activations"] == "f32"]
            peer_us = sum(o["gpu_us"] or o["us"] for o in ops)
            out.append((f"linear layers of a layer, {tokens:,} tokens (us)", peer_us, kvscope_us,
                        other_peers(others, "linear", tokens=tokens, layers=layers)))
    if kernels:
        bench_us = {}
        for row in (bench or {}).get("rows", []):
            if row["step"] == "dense prefill" and row["stage"] == "total":
                bench_us[row["length"]] = row["time_us"]
        for o in kernels["ops"]:
            if o["op"] == "FLASH_ATTN_EXT":
                out.append((f"dense attention, {o['tokens']:,} queries ending {o['context']:,} keys, a layer (us)",
                            o["gpu_us"] or o["us"], bench_us.get(o["context"]),
                            other_peers(others, "attention", o["context"], tokens=o["tokens"])))
    return out


def number(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def table(peers, speeds, bench, others=()):
    peer = next(iter(peers), {})
    lines = [f"llama.cpp: {peer.get('source', '?')}; device: {peer.get('device', '?')}; "
             f"model: {peer.get('model', '?')}", ""]
    header = "| measure | llama.cpp Vulkan | kvscope | llama.cpp / kvscope |"
    lines += [header + (" other peers, same call |" if others else ""), "| --- " * (5 if others else 4) + "|"]
    for name, theirs, ours, other in rows(peers, speeds, bench, others):
        ratio = f"{theirs / ours:.2f}x" if theirs and ours else "-"
        lines.append(f"| {name} | {number(theirs)} | {number(ours)} | {ratio} |" + (f" {other or '-'} |" if others else ""))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", nargs="+", required=True, help="llamacpp_peer's JSON outputs")
    parser.add_argument("--kvscope", nargs="*", default=[], help="kvscope speed --json outputs, one a length")
    parser.add_argument("--bench", help="kvscope bench --json output (dense-prefill)")
    parser.add_argument("--others", nargs="*", default=[], help="JSON lines of bench_hf.py, bench_linear.py, bench_torch.py")
    args = parser.parse_args()
    peers = [json.load(open(p)) for p in args.peer]
    speeds = [json.load(open(s)) for s in args.kvscope]
    bench = json.load(open(args.bench)) if args.bench else None
    others = [json.loads(line) for path in args.others for line in open(path) if line.startswith("{")]
    print(table(peers, speeds, bench, others), end="")


if __name__ == "__main__":
    main()
