"""Recall against budget on the bundled passkey capture (llama-debian-5m, layers 0 and 4, 4k tokens), from Python.

    PYTHONPATH=build/python python3 tools/figures/recall_vs_budget.py docs/recall-vs-budget.png

The Python example of docs/usage.md, as a script: a sweep of methods and budgets through kvscope.evaluate, a
table per method, and the figure (tools/figures/kvscope_figures.py).
"""
import os
import sys

import kvscope

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kvscope_figures import recall_figure, save  # noqa: E402

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
capture = kvscope.Capture.open(os.path.join(root, "assets", "real-passkey-4k.safetensors"))
methods = ["quest", "fier", "quoka", "sparq", "streaming"]
budgets = ["1%", "3%", "6%", "12%", "25%"]
records = kvscope.evaluate(capture, methods, budgets, "decode", probes=16)

# The mean recall over layers, a row per method (pandas.DataFrame(records).pivot_table does the same).
print("recall      " + "".join(f"{b:>8s}" for b in budgets))
for method in methods:
    means = []
    for budget in sorted({r["budget"] for r in records}):
        values = [r["recall"] for r in records if r["method"] == method and r["budget"] == budget]
        means.append(sum(values) / len(values))
    print(f"{method:12s}" + "".join(f"{m:8.3f}" for m in means))

figure = recall_figure(records, f"recall and coverage against budget: real-passkey-4k (llama-debian-5m), "
                                f"layers {capture.layers}, 16 decode probes")
save(figure, sys.argv[1] if len(sys.argv) > 1 else "recall-vs-budget.png")
