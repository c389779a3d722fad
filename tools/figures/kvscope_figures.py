"""Figures for papers from kvscope's results (matplotlib, Debian's python3-matplotlib).

    python3 tools/figures/kvscope_figures.py needle NEEDLE.json OUT.png   # kvscope needle --json / Model.needle
    python3 tools/figures/kvscope_figures.py recall EVAL.json OUT.png     # kvscope eval --json / kvscope.evaluate
    python3 tools/figures/kvscope_figures.py ppl PPL.json OUT.png         # kvscope ppl --json / Model.perplexity
    python3 tools/figures/kvscope_figures.py ruler RULER.json OUT.png     # kvscope ruler --json / Model.ruler

needle: a heatmap of accuracy over prompt length x needle depth for each (method, budget), and accuracy
against budget; recall: recall of dense attention's mass and coverage of its top keys against budget, each
method a line (means over layers and probes); ppl: perplexity against budget, dense as a line; ruler: the
score (mean over tasks) against budget, a line per method and a panel per length, as kvpress's leaderboard. Every
function also takes the module's own results (a dict or a list of records), so a notebook can draw them.
"""
import argparse
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = plt.get_cmap("tab10").colors


def _method_color(method, methods):
    return COLORS[sorted(methods).index(method) % len(COLORS)]


def _budget_axis(axes, budgets):
    """A log-2 axis of budgets, each budget a tick in plain numbers."""
    axes.set_xscale("log", base=2)
    axes.set_xticks(budgets, [str(b) for b in budgets])
    axes.minorticks_off()
    axes.set_xlabel("budget (keys)")


def _label(result):
    regime = result.get("regime", "")
    suffix = f" ({regime})" if regime and regime not in ("decode", "dense") else ""
    return result["method"] + suffix


def needle_figure(needle, title=None):
    """needle: `kvscope needle --json`'s object (or Model.needle's dict)."""
    results = needle["results"]
    cells = defaultdict(dict)  # (label, budget) -> {(length, depth): accuracy}
    for r in results:
        cells[(_label(r), r["budget"])][(r["length"], r["depth"])] = r["accuracy"]
    lengths = sorted({r["length"] for r in results})
    depths = sorted({r["depth"] for r in results})
    # A row per method (dense first), a column per budget.
    methods = sorted({k[0] for k in cells}, key=lambda m: (m != "dense", m))
    budgets = sorted({k[1] for k in cells if k[0] != "dense"}) or [0]
    rows, columns = len(methods), len(budgets)
    figure = plt.figure(figsize=(1.0 + 0.45 * len(lengths) * columns + 4.5, 1.2 + (0.35 * len(depths) + 0.9) * rows),
                        layout="constrained")
    grid = figure.add_gridspec(rows, columns + 1, width_ratios=[1] * columns + [max(1.5, 0.5 * columns)])
    image = None
    for row, method in enumerate(methods):
        for column, budget in enumerate(budgets if method != "dense" else budgets[:1]):
            key = (method, 0 if method == "dense" else budget)
            if key not in cells:
                continue
            axes = figure.add_subplot(grid[row, column])
            values = [[cells[key].get((length, depth), float("nan")) for length in lengths] for depth in depths]
            image = axes.imshow(values, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
            for y, line in enumerate(values):
                for x, value in enumerate(line):
                    if value == value:
                        axes.text(x, y, f"{value:.2f}", ha="center", va="center", fontsize=7)
            axes.set_xticks(range(len(lengths)), [f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n) for n in lengths],
                            fontsize=8)
            axes.set_yticks(range(len(depths)), [f"{d:.0%}" for d in depths], fontsize=8)
            axes.set_title(method if method == "dense" else f"{method}, {budget} keys", fontsize=9)
            if column == 0:
                axes.set_ylabel("needle depth", fontsize=8)
            if row == rows - 1 or method == "dense":
                axes.set_xlabel("prompt tokens", fontsize=8)
    if image is not None:
        figure.colorbar(image, ax=figure.axes, shrink=min(0.8, 2.0 / rows), label="accuracy")
    curve = figure.add_subplot(grid[:, columns])
    by_method = defaultdict(lambda: defaultdict(list))
    dense = [r["accuracy"] for r in results if r["method"] == "dense"]
    for r in results:
        if r["method"] != "dense":
            by_method[_label(r)][r["budget"]].append(r["accuracy"])
    for method, budgets in sorted(by_method.items()):
        xs = sorted(budgets)
        curve.plot(xs, [sum(budgets[x]) / len(budgets[x]) for x in xs], marker="o", label=method,
                   color=_method_color(method, by_method))
    if dense:
        curve.axhline(sum(dense) / len(dense), color="black", linestyle="--", label="dense")
    _budget_axis(curve, sorted({r["budget"] for r in results if r["method"] != "dense"}))
    curve.set_ylim(-0.03, 1.03)
    curve.set_ylabel("accuracy (mean over lengths and depths)")
    curve.legend(fontsize=8)
    curve.grid(alpha=0.3)
    figure.suptitle(title or f"needle ({needle.get('task', '')}), {needle.get('model', '')}", fontsize=11)
    return figure


def recall_figure(records, title=None):
    """records: `kvscope eval --json`'s list (or kvscope.evaluate's)."""
    sums = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0]))
    for r in records:
        if r["method"] == "dense":
            continue
        cell = sums[r["method"]][r["budget"]]
        cell[0] += r["recall"]
        cell[1] += r["coverage"]
        cell[2] += 1
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for method, budgets in sorted(sums.items()):
        xs = sorted(budgets)
        color = _method_color(method, sums)
        left.plot(xs, [budgets[x][0] / budgets[x][2] for x in xs], marker="o", label=method, color=color)
        right.plot(xs, [budgets[x][1] / budgets[x][2] for x in xs], marker="o", label=method, color=color)
    for axes, what in ((left, "recall of dense attention's mass"), (right, "coverage of dense's top keys")):
        _budget_axis(axes, sorted({r["budget"] for r in records if r["method"] != "dense"}))
        axes.set_ylim(-0.02, 1.02)
        axes.set_ylabel(what)
        axes.grid(alpha=0.3)
    left.legend(fontsize=8)
    layers = sorted({r["layer"] for r in records})
    figure.suptitle(title or f"selection against dense attention, mean over layers {', '.join(map(str, layers))}", fontsize=11)
    return figure


def ppl_figure(ppl, title=None):
    """ppl: `kvscope ppl --json`'s object (or Model.perplexity's dict)."""
    figure, axes = plt.subplots(figsize=(6, 4), layout="constrained")
    curves = defaultdict(dict)
    for r in ppl["results"]:
        if r["method"] == "dense":
            if r["regime"] == "decode":
                axes.axhline(r["perplexity"], color="black", linestyle="--", label="dense")
        else:
            curves[_label(r)][r["budget"]] = r["perplexity"]
    for method, budgets in sorted(curves.items()):
        xs = sorted(budgets)
        axes.plot(xs, [budgets[x] for x in xs], marker="o", label=method, color=_method_color(method, curves))
    _budget_axis(axes, sorted({r["budget"] for r in ppl["results"] if r["method"] != "dense"}))
    axes.set_ylabel(f"perplexity (last {ppl.get('scored', '?')} tokens)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.suptitle(title or f"perplexity, {ppl.get('model', '')}", fontsize=11)
    return figure


def ruler_figure(ruler, title=None):
    """ruler: `kvscope ruler --json`'s object (or Model.ruler's dict). As kvpress's leaderboard draws RULER:
    the score (mean over the tasks) against the budget, a line per method, dense a dashed line; a panel per
    length (with `kvscope ruler --data`, one: each task's length is its files' own)."""
    from_files = "data" in ruler
    lengths = [0] if from_files else sorted({r["length"] for r in ruler["results"]})
    figure, panels = plt.subplots(1, len(lengths), figsize=(5 * len(lengths), 4), layout="constrained", squeeze=False)
    labels = sorted({_label(r) for r in ruler["results"] if r["method"] != "dense"})
    for axes, length in zip(panels[0], lengths):
        scores = defaultdict(lambda: defaultdict(list))  # label -> budget -> task scores
        dense = []
        for r in ruler["results"]:
            if not from_files and r["length"] != length:
                continue
            if r["method"] == "dense":
                dense.append(r["score"])
            else:
                scores[_label(r)][r["budget"]].append(r["score"])
        if dense:
            axes.axhline(sum(dense) / len(dense), color="black", linestyle="--", label="dense")
        for label in labels:
            budgets = scores[label]
            xs = sorted(budgets)
            axes.plot(xs, [sum(budgets[x]) / len(budgets[x]) for x in xs], marker="o", label=label,
                      color=_method_color(label, labels))
        _budget_axis(axes, sorted({r["budget"] for r in ruler["results"] if r["method"] != "dense"}))
        axes.set_ylim(-2, 102)
        axes.set_ylabel("RULER score (mean over tasks)")
        if from_files:
            axes.set_title("RULER's files", fontsize=10)
        else:
            axes.set_title(f"{length // 1024}k tokens" if length % 1024 == 0 else f"{length} tokens", fontsize=10)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    tasks = ", ".join(ruler.get("tasks", []))
    figure.suptitle(title or f"RULER ({tasks}), {ruler.get('model', '')}", fontsize=11)
    return figure


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["needle", "recall", "ppl", "ruler"])
    parser.add_argument("results", help="kvscope's JSON")
    parser.add_argument("out", help="the figure (.png, .pdf or .svg)")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        with open(args.results) as f:
            results = json.load(f)
    except OSError as e:
        sys.exit(f"kvscope_figures: {args.results}: cannot read ({e.strerror})")
    except ValueError as e:
        sys.exit(f"kvscope_figures: {args.results}: not JSON ({e})")
    try:
        figure = {"needle": needle_figure, "recall": recall_figure, "ppl": ppl_figure,
                  "ruler": ruler_figure}[args.kind](results, args.title)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        sys.exit(f"kvscope_figures: {args.results}: not {args.kind} results kvscope wrote ({type(e).__name__}: {e})")
    save(figure, args.out)
    print(f"wrote {args.out}")


def save(figure, path):
    """Writes the figure whole or not at all (a temporary file renamed); one line and exit 1 where it cannot."""
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, "." + name + ".partial")
    try:
        figure.savefig(temporary, dpi=150, format=os.path.splitext(path)[1][1:] or "png")
        os.replace(temporary, path)
    except (OSError, ValueError) as e:
        if os.path.exists(temporary):
            os.remove(temporary)
        sys.exit(f"kvscope_figures: {path}: cannot write ({e})")


if __name__ == "__main__":
    main(sys.argv[1:])
