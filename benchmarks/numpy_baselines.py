#!/usr/bin/env python3
"""NumPy baselines for the dynstage benchmarks: the same kernels, shapes and
dtypes as benchmarks/bench_main (sizes read from benchmarks/bench_sizes.hpp),
timed in this process and written as Google Benchmark-style JSON (aggregates
only: median, mean, stddev, cv per benchmark) that scripts/bench_report.py
merges with bench_main's.

    python3 benchmarks/numpy_baselines.py --out build-bench/numpy.json [--reps 5]
        [--benchmark_filter=REGEX] [--min-time 0.5]

scripts/bench.sh runs it in the same run as bench_main (Debian's
python3-numpy; skipped with a message when NumPy is missing).

Names are "case/variant/arg" as in bench_main: variant "numpy" is the fastest
idiomatic NumPy form of the kernel (the form is recorded in the JSON context
and printed in the report); "numpy_<name>" variants are other common forms,
shown for reference. Timing follows Google Benchmark: a repetition runs the
kernel enough times to last at least --min-time seconds and reports the mean
per call; the figure is the median over --reps repetitions, whose order is
shuffled across all benchmarks (as bench_main's random interleaving). Both
the CPU time of this thread (time.thread_time_ns, what the report's ratios
use) and the wall time are recorded. NumPy allocates every result on each
call, as dyn::jit does.

Threads: every kernel here runs on one thread in NumPy itself; only `a @ b`
(and `np.dot`) go to the BLAS library, which may be multithreaded (OpenBLAS).
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and BLIS_NUM_THREADS
are set to 1 before NumPy is imported (unless already set), so every figure is
single-threaded like dynstage's. The BLAS library loaded is recorded.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def read_sizes(path):
    """Every `constexpr <type> <name> = <int or {ints}>;` line of bench_sizes.hpp."""
    sizes = {}
    pat = re.compile(r"^\s*constexpr\b[^=]*?\b(\w+)\s*=\s*(\{[^}]*\}|[0-9']+)\s*;")
    with open(path) as f:
        for line in f:
            m = pat.match(line)
            if not m:
                continue
            value = m.group(2).replace("'", "")
            if value.startswith("{"):
                sizes[m.group(1)] = [int(v) for v in value.strip("{}").split(",") if v.strip()]
            else:
                sizes[m.group(1)] = int(value)
    return sizes


def uniform(rng, shape, dtype=np.float64):
    """Uniform in [-4, 4], as bench_main's inputs."""
    return rng.uniform(-4.0, 4.0, shape).astype(dtype, copy=False)


class Case:
    def __init__(self, name, form, fn, items):
        self.name, self.form, self.fn, self.items = name, form, fn, items


def make_cases(sz):
    """(case/variant/arg, the NumPy form as text, a no-argument callable, items per call)."""
    cases = []

    def add(name, form, fn, items):
        cases.append(Case(name, form, fn, items))

    for n in sz["fused_n"]:
        rng = np.random.default_rng(1)
        x, y = uniform(rng, n), uniform(rng, n)
        add(f"fused/numpy/{n}", "np.sin(x) * 2.0 + x * y", lambda x=x, y=y: np.sin(x) * 2.0 + x * y, n)
    for n in sz["sumsq_n"]:
        x = uniform(np.random.default_rng(3), n)
        # np.dot (one pass, BLAS ddot) beats np.sum(x * x) (a temporary, then a pairwise sum).
        add(f"sumsq/numpy/{n}", "np.dot(x, x)", lambda x=x: np.dot(x, x), n)
        add(f"sumsq/numpy_sum/{n}", "np.sum(x * x)", lambda x=x: np.sum(x * x), n)
    for n in sz["softmax_n"]:
        x = uniform(np.random.default_rng(4), (n, n))

        def softmax(x=x):
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        add(f"softmax/numpy/{n}", "e = np.exp(x - x.max(axis=1, keepdims=True)); e / e.sum(axis=1, keepdims=True)",
            softmax, n * n)
    for n in sz["matmul_n"]:
        rng = np.random.default_rng(5)
        a, b = uniform(rng, (n, n)), uniform(rng, (n, n))
        add(f"matmul/numpy/{n}", "a @ b", lambda a=a, b=b: a @ b, n ** 3)

    n = sz["cumsum_n"]
    x = uniform(np.random.default_rng(14), n)
    add(f"cumsum/numpy/{n}", "np.cumsum(x)", lambda x=x: np.cumsum(x), n)

    rows, k = sz["csr_rows"], sz["csr_nnz_per_row"]
    nnz = rows * k
    rng = np.random.default_rng(15)
    cols = rng.integers(0, rows, nnz, dtype=np.int32)
    vals, xv = uniform(rng, nnz), uniform(rng, rows)
    row_ptr = np.arange(0, nnz + 1, k, dtype=np.int32)
    row_of_nz = np.repeat(np.arange(rows, dtype=np.int32), k)
    starts = row_ptr[:-1]
    # reduceat is the fastest pure-NumPy CSR product (about 2x bincount with
    # weights here); it needs every row non-empty (true of this matrix).
    add(f"csr/numpy/{rows}", "np.add.reduceat(vals * x[cols], row_ptr[:-1])",
        lambda: np.add.reduceat(vals * xv[cols], starts), nnz)
    # NumPy converts i32 index arrays to its index type (intp, 64-bit) on every
    # call; the *_i64 forms get int64 indices made once, outside the timed
    # loop (NumPy's natural index dtype, its fastest case).
    cols64, starts64 = cols.astype(np.int64), starts.astype(np.int64)
    add(f"csr/numpy_i64/{rows}", "np.add.reduceat(vals * x[cols64], row_ptr64[:-1])",
        lambda: np.add.reduceat(vals * xv[cols64], starts64), nnz)
    add(f"csr/numpy_bincount/{rows}", "np.bincount(row_of_nz, weights=vals * x[cols], minlength=rows)",
        lambda: np.bincount(row_of_nz, weights=vals * xv[cols], minlength=rows), nnz)

    ns, nbins = sz["hist_samples"], sz["hist_bins"]
    bins = np.random.default_rng(18).integers(0, nbins, ns, dtype=np.int32)
    add(f"hist/numpy/{ns}", "np.bincount(bins, minlength=nbins)",
        lambda: np.bincount(bins, minlength=nbins), ns)

    bins64 = bins.astype(np.int64)
    add(f"hist/numpy_i64/{ns}", "np.bincount(bins64, minlength=nbins)",
        lambda: np.bincount(bins64, minlength=nbins), ns)

    def add_at():
        counts = np.zeros(nbins, np.int64)
        np.add.at(counts, bins, 1)
        return counts
    add(f"hist/numpy_add_at/{ns}", "counts = np.zeros(nbins, np.int64); np.add.at(counts, bins, 1)", add_at, ns)

    na = sz["argmax_n"]
    xm = uniform(np.random.default_rng(19), (na, na), np.float32)
    add(f"argmax/numpy/{na}", "x.argmax(axis=1)", lambda: xm.argmax(axis=1), na * na)

    nb, ne = sz["einsum_batch"], sz["einsum_n"]
    rng = np.random.default_rng(17)
    ea, eb = uniform(rng, (nb, ne, ne), np.float32), uniform(rng, (nb, ne, ne), np.float32)
    # np.einsum without optimize= runs its own C loop (no BLAS); np.matmul of
    # 3-D arrays calls BLAS sgemm per batch, the fastest NumPy form.
    add(f"einsum/numpy/{nb}", "np.einsum('bij,bjk->bik', a, b)", lambda: np.einsum("bij,bjk->bik", ea, eb),
        nb * ne ** 3)
    add(f"einsum/numpy_matmul/{nb}", "np.matmul(a, b)", lambda: np.matmul(ea, eb), nb * ne ** 3)
    add(f"einsum/numpy_optimize/{nb}", "np.einsum('bij,bjk->bik', a, b, optimize=True)",
        lambda: np.einsum("bij,bjk->bik", ea, eb, optimize=True), nb * ne ** 3)

    n = sz["sort_n"]
    xs = uniform(np.random.default_rng(20), n, np.float32)
    add(f"sort/numpy/{n}", "np.sort(x)", lambda: np.sort(xs), n)

    # Issue 17: MurmurHash3's fmix32 of u32, written as a NumPy user would
    # (one expression per step: a temporary per operation), and in place with
    # out= (fewer allocations, the same passes over memory).
    n = sz["hash_n"]
    xh = np.random.default_rng(21).integers(0, 2 ** 32, n, dtype=np.uint32)
    m1, m2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)

    def fmix32(x=xh):
        h = x ^ (x >> 16)
        h = h * m1
        h = h ^ (h >> 13)
        h = h * m2
        return h ^ (h >> 16)

    def fmix32_inplace(x=xh):
        h = x >> 16
        h ^= x
        h *= m1
        t = h >> 13
        h ^= t
        h *= m2
        np.right_shift(h, 16, out=t)
        h ^= t
        return h
    add(f"hash/numpy/{n}", "h = x ^ (x >> 16); h = h * m1; h = h ^ (h >> 13); h = h * m2; h ^ (h >> 16)",
        fmix32, n)
    add(f"hash/numpy_inplace/{n}", "the same with in-place ^= *= and np.right_shift(..., out=)", fmix32_inplace, n)

    # Issue 25: gesummv (y = alpha A x + beta B x), A, B n x n f64. `@` of a
    # matrix and a vector is BLAS dgemv; NumPy materialises alpha * A first
    # in the form the issue ports (numpy_scaled).
    n = sz["gesummv_n"]
    rng = np.random.default_rng(25)
    ga, gb, gx = uniform(rng, (n, n)), uniform(rng, (n, n)), uniform(rng, n)
    alpha, beta = 1.5, 1.2
    add(f"gesummv/numpy/{n}", "alpha * (A @ x) + beta * (B @ x)", lambda: alpha * (ga @ gx) + beta * (gb @ gx),
        2 * n * n)
    add(f"gesummv/numpy_scaled/{n}", "(alpha * A) @ x + (beta * B) @ x", lambda: (alpha * ga) @ gx + (beta * gb) @ gx,
        2 * n * n)
    add(f"scaled_matvec/numpy/{n}", "(alpha * A) @ x", lambda: (alpha * ga) @ gx, n * n)
    add(f"scaled_matvec/numpy_plain/{n}", "A @ x", lambda: ga @ gx, n * n)

    # Cross-checks of the alternative forms (a wrong baseline must not be timed).
    checks = {
        "csr_reduceat_vs_rows": float(np.max(np.abs(
            np.add.reduceat(vals * xv[cols], starts) - (vals * xv[cols]).reshape(rows, k).sum(axis=1)))),
        "csr_bincount_vs_reduceat": float(np.max(np.abs(
            np.bincount(row_of_nz, weights=vals * xv[cols], minlength=rows)
            - np.add.reduceat(vals * xv[cols], starts)))),
        "hist_add_at_vs_bincount": int(np.max(np.abs(add_at() - np.bincount(bins, minlength=nbins)))),
        "argmax_first_occurrence": int(np.all(xm[np.arange(na), xm.argmax(axis=1)] == xm.max(axis=1))),
        "hash_inplace_vs_expr": int(np.array_equal(fmix32(), fmix32_inplace())),
    }
    return cases, checks


def blas_library():
    """The BLAS/LAPACK shared objects this process mapped (after a matmul)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                if path.startswith("/") and re.search(r"blas|lapack|mkl|blis|atlas", base):
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return ", ".join(sorted(libs)) or "unknown"


def time_case(case, iters):
    fn = case.fn
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(iters):
        fn()
    c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
    return (c1 - c0) / iters, (w1 - w0) / iters


def aggregates(name, samples, reps, iters):
    """Google Benchmark's aggregate entries (median, mean, stddev, cv) for one benchmark."""
    cpu = [s[0] for s in samples]
    wall = [s[1] for s in samples]
    out = []
    for agg, f in (("median", statistics.median), ("mean", statistics.mean),
                   ("stddev", lambda v: statistics.stdev(v) if len(v) > 1 else 0.0)):
        out.append({"name": f"{name}_{agg}", "run_name": name, "run_type": "aggregate", "aggregate_name": agg,
                    "repetitions": reps, "iterations": iters, "real_time": f(wall), "cpu_time": f(cpu),
                    "time_unit": "ns"})
    mc, mw = statistics.mean(cpu), statistics.mean(wall)
    sc = statistics.stdev(cpu) if len(cpu) > 1 else 0.0
    sw = statistics.stdev(wall) if len(wall) > 1 else 0.0
    out.append({"name": f"{name}_cv", "run_name": name, "run_type": "aggregate", "aggregate_name": "cv",
                "aggregate_unit": "percentage", "repetitions": reps, "iterations": iters,
                "real_time": sw / mw if mw else 0.0, "cpu_time": sc / mc if mc else 0.0, "time_unit": "ns"})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per benchmark (median taken)")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per repetition, at least")
    ap.add_argument("--benchmark_filter", "--filter", dest="filter", default="",
                    help="regex on case/variant/arg, as bench_main's (a leading '-' excludes)")
    ap.add_argument("--sizes", default=os.path.join(HERE, "bench_sizes.hpp"))
    ap.add_argument("--seed", type=int, default=0, help="seed of the shuffled repetition order")
    args = ap.parse_args()

    sizes = read_sizes(args.sizes)
    needed = ["fused_n", "sumsq_n", "softmax_n", "matmul_n", "cumsum_n", "csr_rows", "csr_nnz_per_row",
              "hist_samples", "hist_bins", "argmax_n", "sort_n", "hash_n",
              "einsum_batch", "einsum_n"]
    missing = [k for k in needed if k not in sizes]
    if missing:
        sys.exit(f"numpy_baselines.py: {args.sizes} has no line `constexpr ... <name> = <value>;` for "
                 f"{', '.join(missing)}")
    cases, checks = make_cases(sizes)
    bad = [k for k, v in checks.items() if not (v <= 1e-12 if k.startswith("csr") else
                                                v == 0 if k.startswith("hist") else v == 1)]
    if bad:
        sys.exit(f"numpy_baselines.py: a NumPy form disagrees with its check: {', '.join(bad)} ({checks})")
    if args.filter:
        neg = args.filter.startswith("-")
        rx = re.compile(args.filter[1:] if neg else args.filter)
        cases = [c for c in cases if bool(rx.search(c.name)) != neg]

    # Calibrate: iterations per repetition so that one lasts >= min_time.
    iters = {}
    for c in cases:
        c.fn()  # warm-up: first-touch page faults, lazy initialisation
        t0 = time.perf_counter()
        c.fn()
        t = max(time.perf_counter() - t0, 1e-9)
        iters[c.name] = max(1, math.ceil(args.min_time / t))

    order = [(c, r) for c in cases for r in range(args.reps)]
    random.Random(args.seed).shuffle(order)
    samples = {c.name: [] for c in cases}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for c, _ in order:
            samples[c.name].append(time_case(c, iters[c.name]))
    finally:
        if gc_was:
            gc.enable()

    benchmarks = []
    for c in cases:
        benchmarks += aggregates(c.name, samples[c.name], args.reps, iters[c.name])
        med = statistics.median(s[0] for s in samples[c.name])
        print(f"{c.name:<32} {med / 1e6:10.3f} ms CPU  {med / c.items:8.3g} ns/item  ({c.form})", file=sys.stderr)

    context = {
        "date": datetime.now(timezone.utc).isoformat(),
        "executable": "benchmarks/numpy_baselines.py",
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "numpy_version": np.__version__,
        "blas": blas_library(),
        "threads": ", ".join(f"{v}={os.environ[v]}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                               "MKL_NUM_THREADS", "BLIS_NUM_THREADS")),
        "repetitions": args.reps,
        "min_time_s": args.min_time,
        "forms": {c.name.rsplit("/", 1)[0]: c.form for c in cases},
        "checks": checks,
    }
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": benchmarks}, f, indent=1)
    print(f"numpy_baselines.py: wrote {args.out} ({len(cases)} benchmarks, NumPy {np.__version__}, "
          f"BLAS {context['blas']})", file=sys.stderr)


if __name__ == "__main__":
    main()
