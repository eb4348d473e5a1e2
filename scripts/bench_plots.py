#!/usr/bin/env python3
"""Plots of a scripts/bench.sh run (issue 21), written next to docs/benchmarks.md.

    bench_plots.py BENCH_JSON [--numpy NUMPY_JSON] --out-dir docs/img

Reads Google Benchmark's JSON of bench_main (run names "case/variant/arg",
aggregates only) and, optionally, benchmarks/numpy_baselines.py's JSON (same
format, variants "numpy*"). Writes:

  bench_time_per_element.png  one panel per kernel measured at several sizes:
                              median CPU time per element against n (log-log)
                              for dyn::jit, eager, the hand loop, Eigen and
                              NumPy's fastest form;
  bench_speedup.png           the kernel suite at its largest size: how many
                              times faster dyn::jit is than each baseline.

Prints the paths it wrote, one per line (bench_report.py embeds them). Uses
Debian's python3-matplotlib with the Agg backend (no display needed).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# The lines of a panel, in drawing order: variant -> (label, style).
LINES = {
    "jit": ("dyn::jit", dict(color="tab:blue", marker="o", linewidth=2.2)),
    "eager": ("eager dyn::Array", dict(color="tab:orange", marker="s")),
    "loops": ("hand loop -O3 -march=native", dict(color="tab:green", marker="^")),
    "eigen": ("Eigen 3.4", dict(color="tab:purple", marker="v")),
    "numpy": ("NumPy (fastest form)", dict(color="tab:red", marker="D")),
}

# Kernels, with the unit their time is divided by (elements of the output or
# input as bench_report.py counts them).
TITLES = {
    "fused": "sin(x)*2 + x*y (f64)",
    "sumsq": "sum(x*x) (f64)",
    "softmax": "row softmax, n x n (f64)",
    "matmul": "a @ b, n x n (f64)",
    "cumsum": "cumsum (f64)",
    "histogram": "histogram (i32 bins)",
    "sort": "sort (f32)",
    "argmax": "row argmax, n x n (f32)",
    "csr": "CSR SpMV (f64)",
    "hash": "fmix32 hash (u32)",
    "einsum": "einsum bij,bjk->bik",
}


def load(path):
    with open(path) as f:
        data = json.load(f)
    runs = {}  # (case, variant, arg) -> median CPU ns
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate" or b.get("aggregate_name") != "median":
            continue
        parts = b["run_name"].split("/")
        if len(parts) != 3:
            continue
        try:
            arg = int(parts[2])
        except ValueError:
            continue
        runs[(parts[0], parts[1], arg)] = b["cpu_time"] * UNIT_NS[b["time_unit"]]
    return runs


def elements(case, n):
    """What one benchmark argument n counts (per-element times)."""
    if case in ("softmax", "argmax"):
        return n * n
    if case == "matmul":
        return n ** 3  # multiply-adds
    return n


def fold_numpy(runs):
    """Keep NumPy's fastest form per (case, arg) as variant "numpy"."""
    out = {k: v for k, v in runs.items() if not k[1].startswith("numpy")}
    for (case, v, a), t in runs.items():
        if v.startswith("numpy"):
            key = (case, "numpy", a)
            out[key] = min(out.get(key, t), t)
    return out


def plot_sizes(runs, path):
    cases = sorted({c for (c, v, a) in runs if v == "jit"},
                   key=lambda c: list(TITLES).index(c) if c in TITLES else 99)
    cases = [c for c in cases if len({a for (cc, v, a) in runs if cc == c and v == "jit"}) >= 2]
    if not cases:
        return None
    cols = min(3, len(cases))
    rows = (len(cases) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    for ax, case in zip(axes.flat, cases):
        for v, (label, style) in LINES.items():
            pts = sorted((a, t / elements(case, a)) for (c, vv, a), t in runs.items() if c == case and vv == v)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(TITLES.get(case, case), fontsize=10)
        ax.set_xlabel("n")
        ax.set_ylabel("ns per multiply-add" if case == "matmul" else "ns per element")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.suptitle("Median CPU time per element against size, one thread (lower is better)", fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_speedups(runs, path):
    bars = []  # (kernel label, {baseline: ratio})
    for case in sorted({c for (c, v, a) in runs if v == "jit"},
                       key=lambda c: list(TITLES).index(c) if c in TITLES else 99):
        n = max(a for (c, v, a) in runs if c == case and v == "jit")
        j = runs[(case, "jit", n)]
        ratios = {b: runs[(case, b, n)] / j for b in ("eager", "numpy", "loops", "eigen") if (case, b, n) in runs}
        if ratios:
            bars.append((f"{TITLES.get(case, case)}\nn = {n:,}", ratios))
    if not bars:
        return None
    baselines = [b for b in ("eager", "numpy", "loops", "eigen") if any(b in r for _, r in bars)]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.4 * len(bars) + 2), 4.6))
    width = 0.8 / len(baselines)
    for i, b in enumerate(baselines):
        xs = [k + (i - (len(baselines) - 1) / 2) * width for k, (_, r) in enumerate(bars) if b in r]
        ys = [r[b] for _, r in bars if b in r]
        ax.bar(xs, ys, width, label=f"vs {LINES[b][0]}", color=LINES[b][1]["color"])
        for x, y in zip(xs, ys):
            ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([k for k, _ in bars], fontsize=8)
    ax.set_ylabel("baseline time / dyn::jit time")
    ax.set_title("Speed-up of dyn::jit at the largest size, one thread (> 1: dyn::jit faster)", fontsize=11)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench_json")
    ap.add_argument("--numpy", help="benchmarks/numpy_baselines.py's JSON of the same run")
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    runs = load(args.bench_json)
    if args.numpy and os.path.exists(args.numpy):
        runs.update(load(args.numpy))
    runs = fold_numpy(runs)
    os.makedirs(args.out_dir, exist_ok=True)
    for written in (plot_sizes(runs, os.path.join(args.out_dir, "bench_time_per_element.png")),
                    plot_speedups(runs, os.path.join(args.out_dir, "bench_speedup.png"))):
        if written:
            print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
