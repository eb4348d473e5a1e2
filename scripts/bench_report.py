#!/usr/bin/env python3
"""Turn a dynstage benchmark run into docs/benchmarks.md (stdlib only).

Input: Google Benchmark JSON from benchmarks/bench_main (run with
--benchmark_repetitions=N --benchmark_report_aggregates_only=true), the
first-kernel timings (one JSON object per line, one line per fresh process)
and the user-file compile times (seconds, one per line), all written by
scripts/bench.sh, and optionally benchmarks/numpy_baselines.py's JSON (the
same format, variants "numpy*", merged into the run). Output: markdown on
stdout.

Benchmark names are "case/variant/arg". Every figure is the median over the
repetitions; ratios divide a baseline's median by dyn::jit's median of the
same run, so > 1 means the JIT is faster. Ratios and targets use the CPU time
of the benchmark thread (see the note written into the report). A case's
NumPy figure is its fastest NumPy form ("numpy*" variant) in the run.

What it writes: docs/benchmarks.md is partly generated, partly hand-written.
The generated parts are *regions* between marker lines

    <!-- bench_report: begin NAME -->
    ...
    <!-- bench_report: end NAME -->

and everything outside a region (headings, investigations, before/after
tables of separate runs, notes on targets) is hand-written and copied
verbatim. With --md FILE this script reads FILE, replaces the body of each
region that this run measured and writes FILE back (through FILE.tmp and a
rename); a region whose benchmarks were not in this run keeps its previous
body. So:

  * a full run (scripts/bench.sh, no --benchmark_filter) replaces every
    region it has data for, including the summary regions (REGIONS_FULL_RUN:
    the run's description, the plots, the targets table, the issue-16
    overview, NumPy on every case, the machine's slowness);
  * a filtered run (scripts/bench.sh --benchmark_filter=RE, passed here as
    --filtered) replaces only the per-kernel regions of the benchmarks it
    ran, each starting with a line naming that run; the summary regions,
    the compile-time regions (not run) and the plots (not drawn) are kept.

Region names: the fixed ones in REGIONS, plus "case-CASE" for a bench_main
case that has no writer of its own (a generic table; a new one with no
region in FILE yet is inserted, heading and markers, at the line
`<!-- bench_report: new sections go here -->`). A marker with any other
name, unbalanced or repeated markers, a region this run generated that FILE
lacks (for a fixed name), or a new case region without that line: an error
naming the line, and FILE is left as it was. A FILE that does not exist is
created with every region this run has, in the default order.

`bench_report.py --check FILE` validates FILE without a run: markers well
formed, every fixed region and the new-sections line present (bench.sh does
that before building, so a merge error cannot come at the end of a long
run); `--self-test` checks the merge on made-up files (meson test --suite
scripts runs both).
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
from datetime import datetime, timezone

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

VARIANT_LABEL = {
    "jit": "dyn::jit",
    "jit_symbolic": "dyn::jit, symbolic sizes (`polymorphic_shapes`, one kernel for all sizes)",
    "eager": "eager (dyn::Array ops)",
    "jit_scatter_add": "dyn::jit, scatter-add form `zeros({rows}).at(row_of_nz).add(vals * x.at(cols).get())`",
    "loops": "hand loop, -O3 -march=native",
    "loops_alloc": "hand loop, -O3 -march=native, output allocated per call",
    "fastmath": "hand loop, -O3 -march=native -ffast-math",
    "fastmath_alloc": "hand loop, -O3 -march=native -ffast-math, output allocated per call",
    "eigen": "Eigen 3 (-O3 -march=native)",
    "jit_fused": "dyn::jit, sin(x)*2 + x*y",
    "jit_add": "dyn::jit, x + y",
    "eager_fused": "eager, sin(x)*2 + x*y",
    "cpp_call": "plain C++ call of the hand loop (preallocated output)",
    "cpp_call_alloc": "plain C++ call of the hand loop, output allocated per call",
    "jit_fresh": "trace + lower + compile (+ first call), fresh dyn::jit each time",
    "clear_cache": "trace + lower + compile (+ first call), clear_cache() each time",
    "trace_only": "trace only (make_jaxpr)",
}

# NumPy variants are labelled by their form (numpy_baselines.py's context),
# filled in main().
NUMPY_FORMS = {}


# ---------------------------------------------------------------------------
# Regions of docs/benchmarks.md and the merge.

# Fixed region names in the default order of a new file (a case's generic
# region, "case-CASE", comes after them). The heading of each is written
# outside its region (hand-editable); it is used only when a new file is
# created.
REGIONS = ["run", "plots", "targets", "fused", "sumsq", "issue16", "cumsum", "csr", "hist", "argmax",
           "sort", "hash", "softmax", "matmul", "numpy-all", "dispatch", "compile-latency", "first-kernel",
           "compile-realistic", "user-compile", "poly100", "loop", "calibration", "before-after"]
# Summaries of the whole run: a filtered run keeps them as they are.
REGIONS_FULL_RUN = {"run", "plots", "targets", "issue16", "numpy-all", "calibration"}
BEGIN = "<!-- bench_report: begin {} -->"
END = "<!-- bench_report: end {} -->"
NEW_SECTIONS = "<!-- bench_report: new sections go here -->"
MARKER_RE = re.compile(r"^<!-- bench_report: (begin|end) ([a-z0-9_-]+) -->$")
HEADER_COMMENT = [
    "<!--",
    "Partly generated, partly hand-written. scripts/bench.sh (through scripts/bench_report.py) rewrites",
    "only the text between a `bench_report: begin NAME` and its `bench_report: end NAME` line: a full run",
    "every region it measured, a filtered run (scripts/bench.sh --benchmark_filter=RE) only the regions",
    "of the benchmarks it ran, each then starting with a line naming that run. Everything outside the",
    "markers is hand-written and kept verbatim: edit it freely, but not inside a region (the next run",
    "replaces it), and move or delete marker lines only in pairs. Hand-written notes about a region's",
    "figures (a filtered run's provenance, targets met or missed) are not updated by a run: revise them",
    "when a run replaces those figures. Details: the header comments of scripts/bench.sh and",
    "scripts/bench_report.py.",
    "-->",
]


class MergeError(Exception):
    pass


def known_region(name):
    return name in REGIONS or (name.startswith("case-") and len(name) > len("case-"))


def parse_regions(text, where="docs/benchmarks.md"):
    """Split text into ("text", [lines]) and ("region", name, [lines]) parts;
    MergeError on a malformed, unknown, unbalanced or repeated marker."""
    parts, cur, name, start, seen = [], [], None, 0, set()
    for i, line in enumerate(text.split("\n"), 1):
        if line.strip().startswith("<!-- bench_report") and line.strip() != NEW_SECTIONS:
            m = MARKER_RE.match(line.strip())
            if not m:
                raise MergeError(f"{where}:{i}: malformed bench_report marker: {line.strip()!r}")
            kind, n = m.groups()
            if not known_region(n):
                raise MergeError(f"{where}:{i}: unknown region {n!r} (scripts/bench_report.py writes: "
                                 f"{', '.join(REGIONS)}, case-CASE)")
            if kind == "begin":
                if name is not None:
                    raise MergeError(f"{where}:{i}: region {n!r} begins inside region {name!r} "
                                     f"(begun at line {start}); regions do not nest")
                if n in seen:
                    raise MergeError(f"{where}:{i}: region {n!r} appears twice")
                seen.add(n)
                parts.append(("text", cur))
                cur, name, start = [], n, i
            else:
                if name != n:
                    raise MergeError(f"{where}:{i}: `end {n}` without its begin" +
                                     (f" (region {name!r} is open since line {start})" if name else ""))
                parts.append(("region", name, cur))
                cur, name = [], None
            continue
        cur.append(line)
    if name is not None:
        raise MergeError(f"{where}:{start}: region {name!r} has no end marker")
    parts.append(("text", cur))
    return parts


def check_file(text, where="docs/benchmarks.md"):
    """parse_regions, and every fixed region and the new-sections line present:
    what a run needs to merge without an error, checked before the run."""
    parts = parse_regions(text, where)
    have = {p[1] for p in parts if p[0] == "region"}
    missing = [n for n in REGIONS if n not in have]
    if missing:
        raise MergeError(f"{where} has no region {', '.join(map(repr, missing))}: a run can write "
                         "it, so it needs a place; add the marker lines where it belongs, e.g.\n  " +
                         "\n  ".join(f"{BEGIN.format(n)}\n  {END.format(n)}" for n in missing) +
                         "\n(to drop a region for good, remove it from REGIONS in scripts/bench_report.py "
                         "and its writer)")
    if not any(line.strip() == NEW_SECTIONS for line in text.split("\n")):
        raise MergeError(f"{where} has no line {NEW_SECTIONS!r}: new case regions are added before it")
    return parts


def strip_blank(lines):
    lines = list(lines)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def region_block(name, lines):
    """A region as it is written into the file: markers around its body, a blank line each side."""
    body = strip_blank(lines)
    return [BEGIN.format(name)] + ([""] + body + [""] if body else []) + [END.format(name)]


def merge(old_text, regions, where="docs/benchmarks.md"):
    """old_text with the body of every region in `regions` (name -> (heading,
    lines)) replaced; returns (new text, replaced names, kept names). A
    generated region missing from old_text: "case-*" ones go, with their
    heading, before the NEW_SECTIONS line; others are a MergeError."""
    parts = parse_regions(old_text, where)
    present = {p[1] for p in parts if p[0] == "region"}
    missing = [n for n in regions if n not in present]
    fixed_missing = [n for n in missing if not n.startswith("case-")]
    if fixed_missing:
        raise MergeError(f"{where} has no region {', '.join(map(repr, fixed_missing))}, which this run "
                         "measured: add the marker lines where it belongs, e.g.\n  " +
                         "\n  ".join(f"{BEGIN.format(n)}\n  {END.format(n)}" for n in fixed_missing) +
                         f"\n({where} was not changed.)")
    out, replaced, kept = [], [], []
    for p in parts:
        if p[0] == "text":
            lines = p[1]
            if missing and any(line.strip() == NEW_SECTIONS for line in lines):
                k = next(i for i, line in enumerate(lines) if line.strip() == NEW_SECTIONS)
                new = []
                for n in missing:
                    heading = regions[n][0]
                    new += ([heading, ""] if heading else []) + region_block(n, regions[n][1]) + [""]
                    replaced.append(n)
                lines = lines[:k] + new + lines[k:]
                missing = []
            out += lines
            continue
        _, name, body = p
        if name in regions:
            out += region_block(name, regions[name][1])
            replaced.append(name)
        else:
            out += [BEGIN.format(name)] + body + [END.format(name)]
            kept.append(name)
    if missing:
        raise MergeError(f"{where} has no region for {', '.join(missing)} and no line {NEW_SECTIONS!r} "
                         f"to add new ones before\n({where} was not changed.)")
    return "\n".join(out), replaced, kept


def new_file(regions):
    """A whole file from this run's regions (when docs/benchmarks.md does not exist)."""
    out = ["# Benchmarks", ""] + HEADER_COMMENT + [""]
    # Every fixed region, empty when this run did not write it (a later run can).
    for n in REGIONS + sorted(n for n in regions if n not in REGIONS):
        heading, body = regions.get(n, (None, []))
        out += ([heading, ""] if heading else []) + region_block(n, body) + [""]
    out += [NEW_SECTIONS, ""]
    return "\n".join(out)


def write_md(path, regions):
    """Merge this run's regions into `path` (or create it); atomic. Returns a one-line summary."""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        text, replaced, kept = merge(old, regions, where=path)
    else:
        text, replaced, kept = new_file(regions), list(regions), []
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".bench_report.", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return (f"bench_report.py: {path}: replaced {len(replaced)} region(s) ({', '.join(replaced) or 'none'}); "
            f"kept {len(kept)} ({', '.join(kept) or 'none'})")


def variant_label(case, v):
    if v.startswith("numpy"):
        form = NUMPY_FORMS.get(f"{case}/{v}")
        return f"NumPy `{form}`" if form else f"NumPy ({v})"
    return VARIANT_LABEL.get(v, v)


def load_runs(path):
    with open(path) as f:
        data = json.load(f)
    runs = {}  # (case, variant, arg) -> {"median": {...}, "cv": {...}, ...}
    for b in data["benchmarks"]:
        if b.get("run_type") != "aggregate":
            continue
        parts = b["run_name"].split("/")
        if len(parts) == 2:  # a benchmark with no argument ("conv/jit"): argument 0
            parts.append("0")
        if len(parts) != 3 or not parts[2].isdigit():
            continue
        key = (parts[0], parts[1], int(parts[2]))
        runs.setdefault(key, {})[b["aggregate_name"]] = b
    return data["context"], runs


def ns(b, which="cpu_time"):
    return b[which] * UNIT_NS[b["time_unit"]]


def fmt_time(t_ns):
    if t_ns >= 1e9:
        return f"{t_ns / 1e9:.3g} s"
    if t_ns >= 1e6:
        return f"{t_ns / 1e6:.3g} ms"
    if t_ns >= 1e3:
        return f"{t_ns / 1e3:.3g} us"
    return f"{t_ns:.3g} ns"


def fmt_ratio(r):
    return f"{r:.2f}x" if r < 100 else f"{r:.0f}x"


def cv_pct(entry, which="cpu_time"):
    cv = entry.get("cv")
    if not cv:
        return ""
    return f" ±{cv[which] * 100:.0f}%"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    return [x for x in ("avx2", "fma", "avx512f", "avx512dq", "avx512vl") if x in flags]
    except OSError:
        pass
    return []


class Targets:
    """Collects target checks for the summary table."""

    def __init__(self):
        self.rows = []

    def ratio_at_least(self, what, ratio, need):
        # ratio = baseline time / jit time; the target is ratio >= need.
        if ratio is None:
            self.rows.append((what, "not measured", "—", ""))
            return
        met = ratio >= need
        # A miss that two decimals would round to the limit shows three.
        digits = 3 if not met and round(ratio, 2) >= need else 2
        if met:
            note = f"{ratio / need:.2f}x margin"
        else:
            note = f"missed: jit would need to be {need / ratio:.{digits}f}x faster"
        shown = fmt_ratio(ratio) if digits == 2 else f"{ratio:.3f}x"
        self.rows.append((what, f"{shown} (need >= {need:g}x)", "met" if met else "MISSED", note))

    def time_ratio_at_most(self, what, jit_over_base, limit, of="jit time = {r:.2f}x the fast-math time"):
        # jit time / baseline time; the target is <= limit.
        if jit_over_base is None:
            self.rows.append((what, "not measured", "—", ""))
            return
        met = jit_over_base <= limit
        note = f"{limit / jit_over_base:.2f}x margin" if met else \
            f"missed: jit takes {jit_over_base / limit:.2f}x longer than allowed"
        self.rows.append((what, of.format(r=jit_over_base) + f" (limit {limit:g}x)",
                          "met" if met else "MISSED", note))

    def time_at_most(self, what, t_ns, limit_ns, unit_ns, unit):
        if t_ns is None:
            self.rows.append((what, "not measured", "—", ""))
            return
        met = t_ns <= limit_ns
        note = f"{limit_ns / t_ns:.2f}x under" if met else f"missed: {t_ns / limit_ns:.2f}x over the limit"
        self.rows.append((what, f"{t_ns / unit_ns:.3g} {unit} (limit {limit_ns / unit_ns:g} {unit})",
                          "met" if met else "MISSED", note))


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", help="merge into this file (its regions only, see above) instead of "
                    "writing a whole new file to stdout")
    ap.add_argument("--filtered", action="store_true",
                    help="the run had a --benchmark_filter: keep the summary regions, stamp the others")
    ap.add_argument("--commit", default="", help="the commit measured (git describe)")
    ap.add_argument("--first-kernel")
    ap.add_argument("--user-compile-pch", help="user-file compile times with dynstage.hpp precompiled")
    ap.add_argument("--user-compile")
    ap.add_argument("--softmax-fresh", help="the softmax benchmarks re-run in a fresh process")
    ap.add_argument("--command", default="scripts/bench.sh")
    ap.add_argument("--cxx", default="")
    ap.add_argument("--before", help="bench.json of an earlier run, compared in a before/after section")
    ap.add_argument("--before-label", default="before", help="what the earlier run measured (a commit)")
    ap.add_argument("--after-label", default="after", help="what this run measured")
    ap.add_argument("--before-note", default="", help="a paragraph for the before/after section")
    ap.add_argument("--numpy", help="benchmarks/numpy_baselines.py's JSON of the same run")
    ap.add_argument("--numpy-skipped", default="", help="why the NumPy baselines were not run")
    ap.add_argument("--compile-table", help="benchmarks/bench_compile's Markdown table (issue 18)")
    ap.add_argument("--plot", action="append", default=[],
                    help="a PNG of scripts/bench_plots.py, relative to the report (repeatable)")
    return ap


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--self-test"]:
        return self_test()
    if argv[:1] == ["--check"]:
        if len(argv) != 2:
            print("usage: bench_report.py --check FILE", file=sys.stderr)
            return 2
        if not os.path.exists(argv[1]):
            print(f"bench_report.py: {argv[1]} does not exist: a run creates it", file=sys.stderr)
            return 0
        try:
            with open(argv[1]) as f:
                parts = check_file(f.read(), argv[1])
        except MergeError as e:
            print(f"bench_report.py: error: {e}", file=sys.stderr)
            return 1
        print(f"bench_report.py: {argv[1]}: {sum(p[0] == 'region' for p in parts)} regions, markers well formed, "
              "every region a run can write has its place", file=sys.stderr)
        return 0
    args = build_parser().parse_args(argv)
    regions = generate(args)
    if not args.md:
        sys.stdout.write(new_file(regions))
        return 0
    try:
        print(write_md(args.md, regions), file=sys.stderr)
    except MergeError as e:
        print(f"bench_report.py: error: {e}", file=sys.stderr)
        return 1
    return 0


def generate(args):
    """This run's regions: name -> (default heading or None, body lines), in
    the order written. A region is generated only when this run measured
    what it shows (and, in a filtered run, is not a summary)."""
    ctx, runs = load_runs(args.json)
    np_ctx = {}
    if args.numpy:
        np_ctx, np_runs = load_runs(args.numpy)
        NUMPY_FORMS.update(np_ctx.get("forms", {}))
        runs.update(np_runs)  # variants "numpy*" only: no key collides
    reps = None
    for r in runs.values():
        if "median" in r:
            reps = r["median"].get("repetitions")
            break

    def med(case, variant, arg, which="cpu_time"):
        r = runs.get((case, variant, arg))
        return ns(r["median"], which) if r and "median" in r else None

    def ratio(case, variant, arg):
        j, b = med(case, "jit", arg), med(case, variant, arg)
        return b / j if j and b else None

    def numpy_variants(case, arg):
        return sorted(k[1] for k in runs if k[0] == case and k[2] == arg and k[1].startswith("numpy"))

    def best_numpy(case, arg):
        """The fastest NumPy form of a case in this run: (variant, median CPU ns), or (None, None)."""
        timed = [(med(case, v, arg), v) for v in numpy_variants(case, arg) if med(case, v, arg)]
        if not timed:
            return None, None
        t, v = min(timed)
        return v, t

    date = ctx.get("date") or datetime.now(timezone.utc).isoformat()
    load = ctx.get("load_avg")
    stamp = ("*From a filtered run, not the run described at the top of this file: "
             f"`{args.command}` ({date}" + (f", commit {args.commit}" if args.commit else "") +
             (f", load average {', '.join(f'{x:.2f}' for x in load)} at its start" if load else "") +
             f"; medians of {reps or '?'} repetitions).*")
    regions = {}
    cur = [[]]

    def begin(name, heading, present=True):
        """Start region `name`; with present=False (nothing measured for it)
        or a summary in a filtered run, what follows is written nowhere."""
        if not present or (args.filtered and name in REGIONS_FULL_RUN):
            cur[0] = []
            return
        assert name not in regions, name
        lines = [stamp, ""] if args.filtered else []
        regions[name] = (heading, lines)
        cur[0] = lines

    def w(line):
        cur[0].append(line)

    begin("run", None)
    w(f"Every figure is the **median of {reps or '?'} repetitions** (Google Benchmark "
      "`--benchmark_repetitions`, aggregates only; the repetitions of all benchmarks randomly "
      "interleaved, `--benchmark_enable_random_interleaving`, so that a baseline and dyn::jit meet "
      "the same machine states), measured **on a shared 2-core machine** "
      "while other jobs (compilers) were running: absolute times are noisy and slower than on an "
      "idle machine; the ratios, taken between benchmarks of the same run, are what to read. "
      "± is the coefficient of variation across the repetitions.")
    w("")
    wall_cpu = [ns(r["median"], "real_time") / ns(r["median"]) for r in runs.values()
                if "median" in r and ns(r["median"]) > 0]
    spread = (f" (wall / CPU time across this run's benchmarks: median {statistics.median(wall_cpu):.2f}, "
              f"range {min(wall_cpu):.2f}-{max(wall_cpu):.2f})") if wall_cpu else ""
    w("**Time basis.** Ratios and targets use the CPU time of the benchmark thread (everything "
      "measured is single-threaded, kernel compilation included), because with more runnable jobs "
      "than cores the wall time mostly measures how long the scheduler kept the benchmark off a core"
      + spread + ". Wall-clock medians are listed too.")
    w("")
    w("Made with" + (f" (commit {args.commit}):" if args.commit else ":"))
    w("")
    w("```")
    w(args.command)
    w("```")
    w("")
    w("| | |")
    w("| --- | --- |")
    w(f"| date | {date} |")
    w(f"| CPU (/proc/cpuinfo) | {cpu_model()}, {ctx.get('num_cpus', '?')} cores, "
      f"{ctx.get('mhz_per_cpu', '?')} MHz; {' '.join(cpu_flags())} |")
    if "dynstage_host_target" in ctx:
        tid = ctx["dynstage_host_target"]
        w(f"| LLVM host target | `{tid.split()[0] if tid else '?'}` |")
    if load:
        w(f"| load average at start | {', '.join(f'{x:.2f}' for x in load)} |")
    w(f"| kernel / OS | {platform.system()} {platform.release()} |")
    if args.cxx:
        w(f"| compiler | {args.cxx} |")
    if ctx.get("library_build_type") == "debug":
        w("| Google Benchmark | Debian's libbenchmark reports a debug build (its own bookkeeping only; "
          "the code measured is built as listed below) |")
    w("| flags | bench_main.cpp (dynstage, eager, jit) `-O2`; hand loops `-O3 -march=native`; "
      "fast-math loops `-O3 -march=native -ffast-math`; Eigen 3.4 `-O3 -march=native`, one thread |")
    if np_ctx:
        w(f"| NumPy | {np_ctx.get('numpy_version', '?')} on {np_ctx.get('python', '?')}, "
          f"`benchmarks/numpy_baselines.py` in the same run, right after bench_main (its own process, so its "
          f"repetitions are not interleaved with the C++ ones; {np_ctx.get('threads', '')}); "
          f"BLAS: {np_ctx.get('blas', '?')} |")
    elif args.numpy_skipped:
        w(f"| NumPy | not run: {args.numpy_skipped} |")
    w("")
    w("Conventions: inputs are allocated once, outside the timed loop (uniform in [-4, 4]). "
      "dyn::jit and eager allocate their outputs on every call (part of their cost); the hand loops "
      "and Eigen write into a **preallocated** output, except the rows marked *output allocated per "
      "call*, which allocate it exactly as the JIT does (64-byte aligned, uninitialised). JIT kernels "
      "are compiled before their timed loops. At start-up bench_main checks every kernel against the "
      "hand loop or Eigen (largest relative difference: "
      + ", ".join(f"{k[len('check_'):]} {v}" for k, v in ctx.items() if k.startswith("check_"))
      + ").")
    w("")
    if args.plot:
        begin("plots", "## Plots")
        w("Drawn from this run's tables by `scripts/bench_plots.py`: time per element against size for "
          "every kernel measured at several sizes, and the speed-up of dyn::jit over each baseline at the "
          "largest size (one thread; NumPy is its fastest form).")
        w("")
        for p in args.plot:
            w(f"![{os.path.splitext(os.path.basename(p))[0]}]({p})")
            w("")

    targets = Targets()

    def table(case, args_, variants, per="element", count=lambda a: a, title_arg=lambda a: f"n = {a:,}"):
        for a in args_:
            variants_a = list(variants) + [v for v in numpy_variants(case, a) if v not in variants]
            if not any((case, v, a) in runs for v in variants_a):
                continue
            w(f"**{title_arg(a)}**")
            w("")
            w(f"| variant | median CPU time | median wall time | ns/{per} | jit speed-up vs this |")
            w("| --- | ---: | ---: | ---: | ---: |")
            for v in variants_a:
                r = runs.get((case, v, a))
                if not r or "median" not in r:
                    continue
                m = r["median"]
                c = ns(m)
                rr = ratio(case, v, a)
                rtxt = "—" if v == "jit" else (fmt_ratio(rr) if rr else "")
                w(f"| {variant_label(case, v)} | {fmt_time(c)}{cv_pct(r)} | {fmt_time(ns(m, 'real_time'))} | "
                  f"{c / count(a):.3g} | {rtxt} |")
            w("")

    # --- fused elementwise ---------------------------------------------------
    fused_n = sorted({k[2] for k in runs if k[0] == "fused"})
    begin("fused", "## Fused elementwise: `sin(x) * 2 + x * y` (f64)", bool(fused_n))
    w("One fused loop in the JIT (no intermediate arrays); eager runs one operation at a time. "
      "The *output allocated per call* rows show what a fresh output costs the baselines: above "
      "glibc's largest mmap threshold (32 MB, so at n = 1e7) every allocation is a new mapping whose "
      "pages fault on first write, each call.")
    w("")
    table("fused", fused_n, ["jit", "jit_symbolic", "eager", "loops", "loops_alloc", "fastmath", "fastmath_alloc",
                             "eigen"])
    for n in fused_n:
        if n < 100000:
            continue
        targets.ratio_at_least(f"fused n={n:,}: vs hand -O3 loop", ratio("fused", "loops", n), 1.0)
        fm = ratio("fused", "fastmath", n)
        targets.time_ratio_at_most(f"fused n={n:,}: within 1.3x of the -ffast-math loop",
                                   1 / fm if fm else None, 1.3)
        targets.ratio_at_least(f"fused n={n:,}: vs eager", ratio("fused", "eager", n), 4.0)
    sym_rows = []
    for n in fused_n:
        j, sy = med("fused", "jit", n), med("fused", "jit_symbolic", n)
        if j and sy:
            sym_rows.append((n, sy / j))
            if n >= 100000:
                targets.time_ratio_at_most(f"fused n={n:,}: symbolic n within 1.1x of static n (issue 4)", sy / j,
                                           1.1, of="symbolic time = {r:.2f}x the static time")
    if sym_rows:
        w("**Symbolic n (issue 4).** The *symbolic n* row is one kernel compiled for `f64[n]` with n a "
          "run-time value: the same vectorised loop with a run-time trip count (vector body, then a "
          "scalar remainder); each call also solves n from the argument shapes and evaluates the "
          "output shape on the host. Symbolic / static time (CPU): "
          + ", ".join(f"n = {n:,}: {r:.3f}" for n, r in sym_rows) + ".")
        w("")

    # --- reductions ------------------------------------------------------------
    sumsq_n = sorted({k[2] for k in runs if k[0] == "sumsq"})
    begin("sumsq", "## Reduction: sum of squares `sum(x * x)` (f64)", bool(sumsq_n))
    w("The hand loop without -ffast-math must add in order (no vectorised reduction); "
      "a JAX-style `reduce_sum` leaves the order unspecified, as do Eigen and -ffast-math.")
    w("")
    table("sumsq", sumsq_n, ["jit", "eager", "loops", "fastmath", "eigen"])
    for n in sumsq_n:
        targets.ratio_at_least(f"sum of squares n={n:,}: vs hand loop", ratio("sumsq", "loops", n), 0.9)
        targets.ratio_at_least(f"sum of squares n={n:,}: vs Eigen", ratio("sumsq", "eigen", n), 1.0)

    # --- issue 16: indexing, scatter, cumulative ops, argmax, sort --------------
    # (case, title, what one item is, per-kernel paragraph); sizes: benchmarks/bench_sizes.hpp.
    issue16 = [
        ("cumsum", "Running sum `cumsum(x, 0)` (f64)", "element",
         "A sequential scan in the JIT, eager and the hand loop: each element adds to the previous sum, "
         "left to right, so their results are bit-identical (no reassociation); NumPy's `np.cumsum` "
         "adds in the same order."),
        ("csr", "CSR sparse matrix-vector product (f64 values, i32 indices)", "nonzero",
         "y = A x with A 1e5 x 1e5, exactly 10 nonzeros per row at random (unsorted) columns, 1e6 "
         "nonzeros. dynstage: `segment_sum_offsets(vals * x.at(cols).get(), row_ptr)` (one loop over the "
         "rows, the gather and product fused into it, each row added in order: bit-identical to the hand "
         "loop); its scatter-add form `zeros({rows}).at(row_of_nz).add(vals * x.at(cols).get())` (JAX's "
         "segment_sum: a row id per nonzero, 4 more bytes read per nonzero) is listed for comparison; "
         "hand loop: row by row over `row_ptr`. "
         "Items are nonzeros. NumPy converts i32 index arrays to int64 on every call; its `cols64` "
         "form gets them converted once, beforehand."),
        ("hist", "Histogram by scatter-add (i32 bins, i64 counts)", "sample",
         "`counts[bins[i]] += 1` for 1e7 bin indices uniform over 1000 bins. dynstage: "
         "`zeros<i64>({1000}).at(bins).add(1)`; hand loop: `++counts[bins[i]]`. `np.bincount` is "
         "NumPy's fast form, fastest with int64 bins (`bins64`, converted once beforehand; i32 bins "
         "it converts on every call); `np.add.at` (the literal `.at().add` translation) is listed "
         "for scale."),
        ("argmax", "argmax over the rows of a matrix (f32)", "element",
         "`argmax(x, 1)` of a 1000 x 1000 f32 matrix (first occurrence; i32 result in dynstage, i64 in "
         "NumPy). The hand loop is a plain compare loop per row, which GCC leaves scalar; NumPy's "
         "argmax is vectorised (SIMD), so here NumPy is the harder target."),
        ("sort", "Sort (f32)", "element",
         "`sort(x)` of 1e6 f32 into a new array. Hand loop: copy, then `std::sort` (introsort). "
         "`np.sort` is NumPy's default `kind='quicksort'`, an introsort here (newer NumPy releases "
         "dispatch to vectorised sorts, x86-simd-sort, on CPUs that have the instructions; the version "
         "and CPU flags are in the table at the top)."),
        # issue 17 (benchmarks/bench_issue17.cpp), reported with issue 16's kernels
        ("hash", "MurmurHash3 fmix32 of u32 (bit operations)", "element",
         "`h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35; h ^= h >> 16` of 1e7 u32 into a new "
         "array: eleven elementwise primitives (`shift_right_logical xor mul`) that dyn::jit fuses into one "
         "vectorised pass; NumPy makes one pass (and a temporary) per operation; the hand loop is the "
         "same C++ at -O3 -march=native. Results bit-identical (checked before timing)."),
    ]
    present16 = [c for c in issue16 if any(k[0] == c[0] for k in runs)]
    if present16:
        begin("issue16", "## Issue 16 kernels: dynstage vs NumPy and hand-written loops")
        w("Targets (issue 16): dyn::jit >= 1.0x NumPy and >= 0.8x the hand-written `-O3 -march=native` "
          "loop on each kernel. NumPy runs in the same `scripts/bench.sh` run "
          "(`benchmarks/numpy_baselines.py`, same shapes and dtypes from `benchmarks/bench_sizes.hpp`, "
          "inputs from the same distributions but NumPy's own generator); its figure is the fastest NumPy "
          "form timed for the kernel. Ratios are times divided by dyn::jit's (> 1: dyn::jit faster); "
          "*NumPy / hand loop* says how far NumPy itself is from a C++ loop. The dynstage benchmarks of "
          "CSR, histogram, argmax and sort are in `benchmarks/bench_issue16.cpp`.")
        w("")
        w("| kernel | dyn::jit | hand loop | NumPy (fastest form) | NumPy / jit | hand loop / jit | "
          "NumPy / hand loop |")
        w("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
        for case, title, _, _ in present16:
            for a in sorted({k[2] for k in runs if k[0] == case}):
                j, lp = med(case, "jit", a), med(case, "loops", a)
                nv, nt = best_numpy(case, a)
                npcell = f"{fmt_time(nt)} `{NUMPY_FORMS.get(f'{case}/{nv}', nv)}`" if nv else "—"
                w(f"| {title.split(' (')[0]}, {a:,} | {fmt_time(j) if j else '—'} | "
                  f"{fmt_time(lp) if lp else '—'} | {npcell} | "
                  f"{fmt_ratio(nt / j) if nt and j else '—'} | {fmt_ratio(lp / j) if lp and j else '—'} | "
                  f"{fmt_ratio(nt / lp) if nt and lp else '—'} |")
        w("")
        for case, title, per, text in present16:
            args16 = sorted({k[2] for k in runs if k[0] == case})
            begin(case, f"### {title}")
            w(text)
            w("")
            table(case, args16, ["jit", "jit_scatter_add", "eager", "loops"] if case == "csr" else ["jit", "eager", "loops"], per=per,
                  count=(lambda a: a * bench_nnz_per_row(runs, a)) if case == "csr" else
                  (lambda a: a * a) if case == "argmax" else (lambda a: a),
                  title_arg=(lambda a: f"{a} x {a}") if case == "argmax" else
                  (lambda a: f"{a:,} rows") if case == "csr" else (lambda a: f"n = {a:,}"))
            for a in args16:
                what = f"{title.split(' (')[0]} ({a:,})"
                _, nt = best_numpy(case, a)
                j = med(case, "jit", a)
                targets.ratio_at_least(f"{what}: vs NumPy (issue 16)", nt / j if nt and j else None, 1.0)
                targets.ratio_at_least(f"{what}: vs hand loop (issue 16)", ratio(case, "loops", a), 0.8)

    soft_n = sorted({k[2] for k in runs if k[0] == "softmax"})
    begin("softmax", "## Softmax over the rows of a matrix (f64)", bool(soft_n))
    w("`e = exp(x - max(x, axis=1, keepdims)); e / sum(e, axis=1, keepdims)`.")
    w("")
    table("softmax", soft_n, ["jit", "jit_symbolic", "eager", "loops", "fastmath", "eigen"],
          count=lambda a: a * a, title_arg=lambda a: f"{a} x {a}")
    for n in soft_n:
        j, sy = med("softmax", "jit", n), med("softmax", "jit_symbolic", n)
        if j and sy:
            w(f"Symbolic `(r, c)` / static {n} x {n} time (CPU): {sy / j:.3f} (rows of run-time length: "
              "the row group's one-row buffers are heap-allocated once per call).")
            w("")
        targets.ratio_at_least(f"softmax {n}x{n}: vs hand loop", ratio("softmax", "loops", n), 0.9)
        targets.ratio_at_least(f"softmax {n}x{n}: vs Eigen", ratio("softmax", "eigen", n), 1.0)
    if args.softmax_fresh:
        _, fresh_runs = load_runs(args.softmax_fresh)
        main_runs = runs
        runs = fresh_runs  # table() and ratio() read `runs`
        w("The same benchmarks re-run **in a fresh process** (only softmax). This second run was added "
          "when the JIT malloc'd an 8 MB temporary (`exp(x - max)`) on every call, whose pages were "
          "faulted in again on every call or not depending on glibc's dynamic mmap/trim thresholds, "
          "which the large-array benchmarks earlier in the process move (~4000 page faults per call "
          "in the main run, almost none in a fresh process). The JIT now computes softmax row by row "
          "(fusion rule 4, docs/backend.md): its only temporaries are one-row buffers (8 KB) and its "
          "8 MB output comes from the large-block pool, so the malloc state no longer matters "
          "(`perf stat -e page-faults`: no faults per call); the two tables should agree within "
          "noise:")
        w("")
        table("softmax", soft_n, ["jit", "jit_symbolic", "eager", "loops", "fastmath", "eigen"],
              count=lambda a: a * a, title_arg=lambda a: f"{a} x {a}, fresh process")
        for n in soft_n:
            targets.ratio_at_least(f"softmax {n}x{n} (fresh process): vs hand loop",
                                   ratio("softmax", "loops", n), 0.9)
            targets.ratio_at_least(f"softmax {n}x{n} (fresh process): vs Eigen", ratio("softmax", "eigen", n), 1.0)
        runs = main_runs

    # --- matmul ----------------------------------------------------------------
    mm_n = sorted({k[2] for k in runs if k[0] == "matmul"})
    begin("matmul", "## Matmul `a @ b`, n x n (f64)", bool(mm_n))
    w("The JIT lowers dot_general of at least a few thousand multiply-adds to GotoBLAS/BLIS-style "
      "blocking (include/dynstage/llvm/lower_dot.hpp): B packed into KC x NR strips and A into "
      "MR x KC tiles, an MR x NR register-tile micro-kernel of broadcast-times-vector FMAs; with "
      "AVX-512 and f64: MR = 8, NR = 24 (three 8-wide vectors, 24 zmm accumulators), KC = 128, "
      "MC = 128, NC = 1032. Eigen uses its own blocked GEMM, one thread. The hand i-k-j loop (no "
      "blocking) is shown for scale only.")
    w("")
    for n in mm_n:
        w(f"**n = {n}**")
        w("")
        w("| variant | median CPU time | median wall time | GFLOP/s (CPU time) | jit speed-up vs this |")
        w("| --- | ---: | ---: | ---: | ---: |")
        for v in ["jit", "jit_symbolic", "eigen", "loops"] + numpy_variants("matmul", n):
            r = runs.get(("matmul", v, n))
            if not r or "median" not in r:
                continue
            m = r["median"]
            c = ns(m)
            rr = ratio("matmul", v, n)
            w(f"| {variant_label('matmul', v) if v != 'loops' else 'hand i-k-j loop, -O3 -march=native'} | "
              f"{fmt_time(c)}{cv_pct(r)} | {fmt_time(ns(m, 'real_time'))} | {2 * n ** 3 / c:.1f} | "
              f"{'—' if v == 'jit' else fmt_ratio(rr) if rr else ''} |")
        w("")
    if 512 in mm_n:
        targets.ratio_at_least("matmul 512: vs Eigen", ratio("matmul", "eigen", 512), 0.5)

    # --- every case against NumPy ------------------------------------------------
    order = ["fused", "sumsq", "cumsum", "csr", "hist", "argmax", "sort", "hash", "softmax", "matmul"]
    np_keys = sorted({(k[0], k[2]) for k in runs if k[1].startswith("numpy")},
                     key=lambda ca: (order.index(ca[0]) if ca[0] in order else len(order), ca))
    if np_keys:
        begin("numpy-all", "## dyn::jit vs NumPy, every case")
        w("NumPy's fastest form of each case in this run (`benchmarks/numpy_baselines.py`; one thread; "
          "NumPy allocates its results and temporaries per call, as the JIT allocates its outputs). "
          "NumPy / jit > 1: dyn::jit faster. The per-case tables above list every NumPy form timed.")
        w("")
        w("| case | size | NumPy form | NumPy | dyn::jit | NumPy / jit | hand loop | NumPy / hand loop |")
        w("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for case, a in np_keys:
            nv, nt = best_numpy(case, a)
            j, lp = med(case, "jit", a), med(case, "loops", a)
            w(f"| {case} | {a:,} | `{NUMPY_FORMS.get(f'{case}/{nv}', nv)}` | {fmt_time(nt)} | "
              f"{fmt_time(j) if j else '—'} | {fmt_ratio(nt / j) if j else '—'} | "
              f"{fmt_time(lp) if lp else '—'} | {fmt_ratio(nt / lp) if lp else '—'} |")
        w("")

    # --- dispatch --------------------------------------------------------------
    begin("dispatch", "## Dispatch: a cached call at n = 1", any(k[0] == "dispatch" for k in runs))
    w("Time per call with one-element f64 inputs, the result dropped at once: the signature check "
      "against the entry this thread used last, argument pointers, output allocation (a dyn::Array), "
      "the kernel, result wrapping and release. Callgrind counts ~520 instructions per `x + y` call "
      "(docs/backend.md, \"Output memory\"); the plain C++ baseline that allocates allocates a "
      "dyn::Array's storage, shape vector included.")
    w("")
    w("| variant | median CPU time / call | median wall time / call |")
    w("| --- | ---: | ---: |")
    for v in ["jit_fused", "jit_add", "eager_fused", "cpp_call", "cpp_call_alloc"]:
        r = runs.get(("dispatch", v, 1))
        if r and "median" in r:
            w(f"| {VARIANT_LABEL[v]} | {fmt_time(ns(r['median']))}{cv_pct(r)} | "
              f"{fmt_time(ns(r['median'], 'real_time'))} |")
    w("")
    targets.time_at_most("cached dispatch, n=1 (sin(x)*2 + x*y)", med("dispatch", "jit_fused", 1), 50, 1, "ns")
    targets.time_at_most("cached dispatch, n=1 (x + y)", med("dispatch", "jit_add", 1), 50, 1, "ns")

    # --- compile latency -------------------------------------------------------
    begin("compile-latency", "## Trace + lower + compile latency of a ten-operation kernel",
          any(k[0] == "compile" for k in runs))
    w("Kernel: `d = tanh(maximum(exp(sin(x)*2 + x*y - 1), y)); d / (y*y)` "
      f"({ctx.get('ten_ops_eqns', '10')} jaxpr equations), f64[1000] inputs, "
      "optimised at O3 for the host CPU. Each iteration compiles: a fresh dyn::jit object, or "
      "clear_cache() on one; the (~µs) first call is included.")
    w("")
    w("| variant | median CPU time | median wall time |")
    w("| --- | ---: | ---: |")
    for v in ["jit_fresh", "clear_cache", "trace_only"]:
        r = runs.get(("compile", v, 1000))
        if r and "median" in r:
            w(f"| {VARIANT_LABEL[v]} | {fmt_time(ns(r['median']))}{cv_pct(r)} | "
              f"{fmt_time(ns(r['median'], 'real_time'))} |")
    w("")
    targets.time_at_most("trace + compile, ten operations (CPU time)", med("compile", "jit_fresh", 1000),
                         15e6, 1e6, "ms")
    wall = med("compile", "jit_fresh", 1000, "real_time")
    if wall is not None:
        targets.time_at_most("trace + compile, ten operations (wall time, shared machine)", wall, 15e6, 1e6, "ms")

    if args.first_kernel:
        firsts, seconds = [], []
        with open(args.first_kernel) as f:
            for line in f:
                line = line.strip()
                if line:
                    d = json.loads(line)
                    firsts.append(d["first_kernel_ms"])
                    seconds.append(d["second_kernel_ms"])
        if firsts:
            begin("first-kernel", None)
            w(f"**First kernel of a process** (wall time, median of {len(firsts)} fresh processes of "
              "`bench_main --first-kernel`): the first compile includes LLVM's one-off set-up (target "
              "registration, the first LLJIT, loading libmvec).")
            w("")
            w("| | median | all runs |")
            w("| --- | ---: | --- |")
            w(f"| first kernel in the process | {statistics.median(firsts):.1f} ms | "
              f"{', '.join(f'{x:.1f}' for x in firsts)} |")
            w(f"| second kernel (fresh dyn::jit) | {statistics.median(seconds):.1f} ms | "
              f"{', '.join(f'{x:.1f}' for x in seconds)} |")
            w("")

    if args.compile_table:
        with open(args.compile_table) as f:
            table = [line.rstrip("\n") for line in f if line.startswith("|")]
        if table:
            begin("compile-realistic", "## Compile times of realistic kernels (issue 18)")
            w("`build-bench/benchmarks/bench_compile`: each kernel compiled by fresh `dyn::jit` objects on one "
              "thread, the median of the repetitions of each stage as `jf.stats()` splits it (wall time on "
              "the shared machine): tracing, lowering (fusion plan, jaxpr -> LLVM IR) and LLVM "
              "(optimisation at O3 and code generation), their sum, the first call's thread CPU time (the "
              "compile runs on the calling thread: its cost without the other jobs on the machine), and the "
              "size of the optimised IR. Large products call "
              "GEMM routines compiled once per process: that one-time cost is the first row. "
              "Target: every kernel <= 50 ms on one core, none above 200 ms.")
            w("")
            for line in table:
                w(line)
            w("")
            for line in table[2:]:
                cells = [c.strip() for c in line.strip("|").split("|")]
                if len(cells) >= 7 and cells[0] != "GEMM routines":
                    try:
                        cpu = float(cells[6])
                    except ValueError:
                        continue
                    targets.time_at_most(f"compile time, {cells[0]} (thread CPU)", cpu * 1e6, 50e6, 1e6, "ms")

    def read_times(path):
        walls, cpus = [], []
        if path:
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if parts:
                        walls.append(float(parts[0]))
                        if len(parts) > 1:
                            cpus.append(float(parts[1]))
        return walls, cpus

    user_cpu = None
    walls, cpus = read_times(args.user_compile)
    pch_walls, pch_cpus = read_times(args.user_compile_pch)
    if walls:
        begin("user-compile", "## Compile time of a user file")
        w("`g++ -std=c++20 -O2 -c benchmarks/user_file.cpp`: a file that includes "
          "`<dynstage/dynstage.hpp>` and calls `dyn::jit` once (no LLVM headers; the backend TU is "
          f"compiled elsewhere), {len(walls)} compiles on the shared machine; then the same with "
          "`<dynstage/dynstage.hpp>` precompiled once (`-include dynstage_pch.hpp`, a g++ PCH, what "
          "Meson's `cpp_pch` does).")
        w("")
        w("| | median | all runs |")
        w("| --- | ---: | --- |")
        w(f"| wall time | {statistics.median(walls):.2f} s | {', '.join(f'{x:.2f}' for x in walls)} |")
        if cpus:
            w(f"| CPU time (user + sys) | {statistics.median(cpus):.2f} s | "
              f"{', '.join(f'{x:.2f}' for x in cpus)} |")
        if pch_walls:
            w(f"| wall time, with the PCH | {statistics.median(pch_walls):.2f} s | "
              f"{', '.join(f'{x:.2f}' for x in pch_walls)} |")
        if pch_cpus:
            w(f"| CPU time (user + sys), with the PCH | {statistics.median(pch_cpus):.2f} s | "
              f"{', '.join(f'{x:.2f}' for x in pch_cpus)} |")
        w("")
        if cpus:
            user_cpu = statistics.median(cpus)
            targets.time_at_most("user file compile, g++ -O2 (CPU time)", statistics.median(cpus) * 1e9,
                                 3e9, 1e9, "s")
        targets.time_at_most("user file compile, g++ -O2 (wall time, shared machine)",
                             statistics.median(walls) * 1e9, 3e9, 1e9, "s")
        if pch_cpus:
            targets.time_at_most("user file compile, g++ -O2, dynstage.hpp precompiled (CPU time)",
                                 statistics.median(pch_cpus) * 1e9, 3e9, 1e9, "s")

    # --- shape polymorphism: 100 sizes --------------------------------------------
    pp, ps = runs.get(("poly100", "polymorphic", 100)), runs.get(("poly100", "static", 100))
    if pp or ps:
        begin("poly100", "## Shape polymorphism: 100 distinct sizes, one compile vs 100 (issue 4)")
        w("`sin(x) * 2 + x * y` (f64) called with 100 distinct sizes n = 1000, 1010, ..., 1990 through a "
          "fresh `dyn::jit` per iteration: with `polymorphic_shapes{\"n\", \"n\"}` (one trace and one "
          "compile, then 99 cache hits on the same kernel) or without (one trace and one compile per "
          "size). The time is the whole sequence of 100 calls, compiles included.")
        w("")
        w("| variant | kernels compiled | median CPU time (100 calls) | median wall time | per call |")
        w("| --- | ---: | ---: | ---: | ---: |")
        for label, r in (("polymorphic jit (one kernel)", pp), ("static jit (a kernel per size)", ps)):
            if r and "median" in r:
                m = r["median"]
                comp = m.get("compiles", "?")
                w(f"| {label} | {comp:.0f} | {fmt_time(ns(m))}{cv_pct(r)} | {fmt_time(ns(m, 'real_time'))} | "
                  f"{fmt_time(ns(m) / 100)} |")
        w("")
        if pp and ps and "median" in pp and "median" in ps:
            rr = ns(ps["median"]) / ns(pp["median"])
            w(f"Static / polymorphic total time: **{fmt_ratio(rr)}** (CPU time), "
              f"{fmt_ratio(ns(ps['median'], 'real_time') / ns(pp['median'], 'real_time'))} (wall time).")
            w("")
            targets.ratio_at_least("100 sizes: polymorphic jit vs static jit, total time (issue 4)", rr, 1.0)

    # --- control flow: a 10,000-iteration loop (issue 5) --------------------------
    lj, le, lb = (runs.get(("loop", v, 16)) for v in ("jit", "eager", "loops"))
    if lj or le or lb:
        begin("loop", "## A 10,000-iteration loop over a small array (issue 5)")
        w("`dyn::for_loop(0, 10000, 1)` over 16 doubles, body `a * 0.5 + 1.0`: jit (one kernel, the "
          "carried array double-buffered), eager (the same lambda on dyn::Array) and a hand-written "
          "`-O3 -march=native` loop. Per iteration = time per call / 10,000.")
        w("")
        w("| variant | median CPU time / call | per iteration | vs jit |")
        w("| --- | ---: | ---: | ---: |")
        jt = ns(lj["median"]) if lj and "median" in lj else None
        for label, r in (("jit", lj), ("hand loop -O3 -march=native", lb), ("eager", le)):
            if r and "median" in r:
                t = ns(r["median"])
                w(f"| {label} | {fmt_time(t)}{cv_pct(r)} | {fmt_time(t / 10000)} | "
                  f"{'—' if r is lj else fmt_ratio(t / jt) if jt else ''} |")
        w("")
        if jt and lb and "median" in lb:
            per = (jt - ns(lb["median"])) / 10000
            w(f"Compiled-loop overhead over the hand loop: **{per:.2f} ns per iteration**.")
            w("")
        if jt and le and "median" in le:
            targets.ratio_at_least("10,000-iteration loop: jit vs eager (issue 5)", ns(le["median"]) / jt, 1.0)

    # --- calibration -----------------------------------------------------------
    # These baselines (ns/element) were measured on an idle machine of the
    # same kind when the project's toolchain was set up; their ratio to this run's says how much slower this run's
    # absolute numbers are (other jobs on both cores, and on the VM's host).
    idle = [("hand loop -O3 -march=native, n=1e3", ("fused", "loops", 1000), 5.2),
            ("hand loop -ffast-math, n=1e3", ("fused", "fastmath", 1000), 0.8),
            ("Eigen, n=1e3", ("fused", "eigen", 1000), 5.3)]
    cal = []
    for label, key, ref in idle:
        t = med(*key)
        if t is not None:
            cal.append((label, t / key[2], ref))
    if cal:
        begin("calibration", "## How slow was the machine during this run?")
        w("Absolute targets (ns, ms, s) depend on the machine's state; ratios do not. These baselines "
          "were measured on an idle machine of this kind when the toolchain was set up (ns/element of "
          "`sin(x)*2 + x*y`, the figures are the `idle` column); this run measured (CPU time):")
        w("")
        w("| baseline | this run | idle | this run / idle |")
        w("| --- | ---: | ---: | ---: |")
        for label, t, ref in cal:
            w(f"| {label} | {t:.3g} | {ref:g} | {t / ref:.1f}x |")
        factor = statistics.median([t / ref for _, t, ref in cal])
        w("")
        est = []
        if med("dispatch", "jit_fused", 1):
            est.append(f"cached dispatch ~{med('dispatch', 'jit_fused', 1) / factor:.0f} ns")
        if med("compile", "jit_fresh", 1000):
            est.append(f"ten-op compile ~{med('compile', 'jit_fresh', 1000) / factor / 1e6:.1f} ms")
        if user_cpu is not None:
            est.append(f"user-file compile ~{user_cpu / factor:.1f} s")
        w(f"So this run's CPU times are roughly **{factor:.1f}x** an idle machine's (contention for the "
          "shared cores and caches; a virtual machine's CPU time probably also counts time its host "
          "takes the virtual CPU away). Scaled by that factor, as a rough estimate only: "
          + ", ".join(est) + ". The targets table uses the measured values, not these estimates.")
        w("")

    # --- cases with no writer of their own: a generic table each --------------
    handled = {"fused", "sumsq", "softmax", "matmul", "dispatch", "compile", "poly100", "loop"} | \
        {c[0] for c in issue16}
    for case in sorted({k[0] for k in runs if not k[1].startswith("numpy")} - handled):
        begin(f"case-{case}", f"## `{case}/*`")
        w(f"`{case}/*` of bench_main (a generic table: scripts/bench_report.py has no writer of its own for "
          "this case; ratios are this variant's median CPU time / `jit`'s at the same size, > 1: jit faster).")
        w("")
        w("| benchmark | median CPU time | median wall time | jit speed-up vs this |")
        w("| --- | ---: | ---: | ---: |")
        for a in sorted({k[2] for k in runs if k[0] == case}):
            vs = sorted((k[1] for k in runs if k[0] == case and k[2] == a),
                        key=lambda v: (v != "jit", v.startswith("numpy"), v))
            for v in vs:
                r = runs[(case, v, a)]
                if "median" not in r:
                    continue
                rr = ratio(case, v, a)
                label = f"`{r['median'].get('run_name', f'{case}/{v}/{a}')}`" + \
                    (f" ({variant_label(case, v)})" if v.startswith("numpy") else "")
                w(f"| {label} | {fmt_time(ns(r['median']))}{cv_pct(r)} | {fmt_time(ns(r['median'], 'real_time'))} | "
                  f"{'—' if v == 'jit' else fmt_ratio(rr) if rr else ''} |")
        w("")

    # --- summary (its region is near the top of the file) ---------------------
    begin("targets", "## Targets (issues 3, 4, 5 and 16)", bool(targets.rows))
    w("Ratio = baseline median / jit median of the same run (> 1: jit faster), CPU time.")
    w("")
    w("| target | measured | | margin or miss |")
    w("| --- | --- | --- | --- |")
    for what, measured, status, note in targets.rows:
        w(f"| {what} | {measured} | {status} | {note} |")
    w("")
    if args.before:
        lines = before_after(args.before, runs, args.before_label, args.after_label, args.before_note)
        begin("before-after", None)  # its heading names the runs: in the region
        for line in lines:
            w(line)
    return regions


def bench_nnz_per_row(runs, rows):
    """Nonzeros per row of the CSR benchmark (its items counter / rows), 10 if unknown."""
    for k, r in runs.items():
        m = r.get("median", {})
        if k[0] == "csr" and k[2] == rows and "n" in m and m["n"]:
            return m["n"] / rows
    return 10


def before_after(path, runs, before_label, after_label, note=""):
    """A section comparing the jit's ratios to the baselines of its own run,
    before and after: each run's ratio is taken within that run, so a
    difference in machine load between the runs cancels."""
    _, before = load_runs(path)
    lines = [f"## Before / after: {before_label} vs {after_label}", "",
             "Each ratio is baseline median / jit median (CPU time) **within one run**, so the two runs "
             "are compared by ratios, not by absolute times (the machine is shared; the runs met different "
             "loads). Change = after ratio / before ratio - 1: negative means the jit lost ground. The "
             "baseline is a vectorised one where the benchmark has it (the -ffast-math loop, else Eigen): "
             "other jobs on the machine slow vector code and scalar code by different amounts (compare the "
             "scalar hand loop's and the fast-math loop's own before/after times below), so a ratio to a "
             "scalar baseline moves with the load. The baselines' own times, after / before, show each "
             "run's load.", "",
             "| benchmark | jit variant | baseline | ratio before | ratio after | change |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    if note:
        lines[2:2] = [note, ""]
    base_order = ["fastmath", "eigen", "loops", "eager"]
    for key in sorted(k for k in runs if k[1].startswith("jit") and k in before):
        case, variant, arg = key
        for base in base_order:
            bkey = (case, base, arg)
            if bkey not in runs or bkey not in before:
                continue
            def r(rs):
                j, b = rs[key].get("median"), rs[bkey].get("median")
                return ns(b) / ns(j) if j and b and ns(j) > 0 else None
            rb, ra = r(before), r(runs)
            if rb and ra:
                lines.append(f"| {case}/{arg} | {variant} | {base} | {fmt_ratio(rb)} | {fmt_ratio(ra)} | "
                             f"{100 * (ra / rb - 1):+.0f}% |")
            break
    lines += ["", "| baseline | benchmark | time after / before |", "| --- | --- | ---: |"]
    for key in sorted(k for k in runs if k[1] in ("loops", "fastmath", "eigen") and k in before):
        a, b = runs[key].get("median"), before[key].get("median")
        if a and b and ns(b) > 0:
            lines.append(f"| {key[1]} | {key[0]}/{key[2]} | {ns(a) / ns(b):.2f} |")
    lines.append("")
    return lines


def self_test():
    """The merge on made-up files, and generate() on a made-up run (meson test
    bench_report_self_test). Prints one line per check; exit status 1 on a failure."""
    failures = []

    def check(what, cond):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    def raises(what, fn, needle):
        try:
            fn()
        except MergeError as e:
            check(f"{what}: {e}".splitlines()[0], needle in str(e))
            return
        check(f"{what}: no error", False)

    doc = "\n".join([
        "# Benchmarks", "",
        "A hand-written paragraph, with `bench_report: begin x` quoted in it.", "",
        "## Fused", "",
        "Hand-written prose before the table.", "",
        BEGIN.format("fused"), "", "| old fused table |", "", END.format("fused"), "",
        "Hand-written notes after the table: targets met.", "",
        "## Sum of squares", "",
        BEGIN.format("sumsq"), "", "| old sumsq table, kept verbatim |  ", "", END.format("sumsq"), "",
        NEW_SECTIONS, "",
        "Hand-written tail.", ""])
    new = {"fused": ("## Fused", ["", "| new fused table |", ""])}
    text, replaced, kept = merge(doc, new)
    check("a marked region is replaced", "| new fused table |" in text and "| old fused table |" not in text)
    check("hand-written text survives verbatim", all(
        line in text.split("\n") for line in doc.split("\n")
        if line and "fused table" not in line))
    check("a region not in this run keeps its body verbatim (trailing spaces too)",
          "| old sumsq table, kept verbatim |  " in text.split("\n") and kept == ["sumsq"])
    check("replaced/kept are reported", replaced == ["fused"])
    check("merging the same run twice changes nothing", merge(text, new)[0] == text)
    check("without generated regions the file is unchanged", merge(doc, {})[0] == doc)

    new_case = {"case-foo": ("## `foo/*`", ["| foo |"])}
    text2, replaced2, _ = merge(doc, new_case)
    lines2 = text2.split("\n")
    check("a new case region goes before the new-sections line, with its heading",
          replaced2 == ["case-foo"] and lines2.index("## `foo/*`") < lines2.index(BEGIN.format("case-foo"))
          < lines2.index("| foo |") < lines2.index(END.format("case-foo")) < lines2.index(NEW_SECTIONS))
    check("and is updated in place by the next run", merge(text2, {"case-foo": (None, ["| foo 2 |"])})[0]
          .count("foo 2") == 1)

    raises("unknown region name", lambda: merge(doc.replace("begin sumsq", "begin sumsqq")
                                                .replace("end sumsq", "end sumsqq"), new), "unknown region")
    raises("a fixed region this run generated is missing",
           lambda: merge(doc, {"softmax": ("## Softmax", ["x"])}), "no region 'softmax'")
    raises("end without begin", lambda: merge(doc.replace(BEGIN.format("sumsq"), ""), new), "without its begin")
    raises("begin without end", lambda: merge(doc.replace(END.format("sumsq"), ""), new), "has no end marker")
    raises("mismatched end", lambda: merge(doc.replace(END.format("sumsq"), END.format("fused")), new),
           "without its begin")
    raises("nested regions", lambda: merge(doc.replace(BEGIN.format("sumsq"),
                                                       BEGIN.format("sumsq") + "\n" + BEGIN.format("loop")),
                                           new), "do not nest")
    raises("a region twice", lambda: merge(doc + "\n" + BEGIN.format("fused") + "\n" + END.format("fused"), new),
           "appears twice")
    raises("a malformed marker", lambda: merge(doc.replace(BEGIN.format("sumsq"), "<!-- bench_report: begin  sumsq -->"),
                                               new), "malformed")
    raises("a new case region without the new-sections line",
           lambda: merge(doc.replace(NEW_SECTIONS, ""), new_case), "no region for case-foo")

    with tempfile.TemporaryDirectory() as d:
        # A made-up run: sum of squares, dispatch and a case with no writer.
        def agg(name, t_ns, real_ns=None):
            return [{"run_name": name, "run_type": "aggregate", "aggregate_name": a, "repetitions": 3,
                     "cpu_time": t, "real_time": real_ns or t, "time_unit": "ns"}
                    for a, t in (("median", t_ns), ("cv", 0.01))]
        bench = {"context": {"date": "2026-01-01T00:00:00+00:00", "num_cpus": 2, "load_avg": [1.0, 2.0, 3.0]},
                 "benchmarks": agg("sumsq/jit/100", 10) + agg("sumsq/loops/100", 20) +
                 agg("dispatch/jit_add/1", 40) + agg("foo/jit/8", 5) + agg("foo/eager/8", 50) +
                 agg("bar/jit", 2) + agg("bar/loops", 3)}
        js = os.path.join(d, "bench.json")
        with open(js, "w") as f:
            json.dump(bench, f)
        md = os.path.join(d, "benchmarks.md")
        for flag in ([], ["--filtered"]):
            regs = generate_args(["--json", js, "--command", "scripts/bench.sh " + " ".join(flag)] + flag)
            names = set(regs)
            if flag:
                check("filtered run: per-kernel regions only, no summaries",
                      names == {"sumsq", "dispatch", "case-foo", "case-bar"})
                check("filtered run: each region starts with a line naming the run",
                      all(regs[n][1][0].startswith("*From a filtered run") for n in names))
            else:
                check("full run: the summaries too, nothing for cases not run",
                      names == {"run", "targets", "sumsq", "dispatch", "case-foo", "case-bar"})
                check("full run: the generic table of a case with no writer",
                      any("`foo/eager/8`" in line and "10.00x" in line for line in regs["case-foo"][1]))
                check("full run: a benchmark with no argument (`bar/loops`) is reported",
                      any("`bar/loops`" in line and "1.50x" in line for line in regs["case-bar"][1]))
        # A new file, then a filtered run merged into it (the file as bench.sh writes it).
        print(write_md(md, generate_args(["--json", js])))
        with open(md) as f:
            full = f.read()
        check_file(full, md)
        check("a new file has the header comment, every region and the new-sections line",
              HEADER_COMMENT[1] in full and NEW_SECTIONS in full)
        raises("--check: a fixed region missing", lambda: check_file(
            full.replace(BEGIN.format("loop") + "\n", "").replace(END.format("loop") + "\n", ""), md),
            "no region 'loop'")
        raises("--check: no new-sections line", lambda: check_file(full.replace(NEW_SECTIONS, ""), md),
               "new case regions")
        hand = full.replace(BEGIN.format("sumsq"), "Hand-written note on sumsq.\n\n" + BEGIN.format("sumsq"))
        hand = hand.replace(BEGIN.format("dispatch") + "\n\n", BEGIN.format("dispatch") + "\n\n| stale |\n")
        with open(md, "w") as f:
            f.write(hand)
        bench["benchmarks"] = agg("sumsq/jit/100", 11) + agg("sumsq/loops/100", 33)
        with open(js, "w") as f:
            json.dump(bench, f)
        print(write_md(md, generate_args(["--json", js, "--filtered"])))
        with open(md) as f:
            after = f.read()
        check("filtered run into the file: the hand-written note survives", "Hand-written note on sumsq." in after)
        check("filtered run into the file: its region has the new figures", "3.00x" in after and "2.00x" not in
              after.split(BEGIN.format("sumsq"))[1].split(END.format("sumsq"))[0])
        def body(text, name):
            return text.split(BEGIN.format(name) + "\n")[1].split("\n" + END.format(name))[0]
        check("filtered run into the file: the other regions are kept verbatim", all(
            body(after, n) == body(hand, n) for n in ("run", "targets", "dispatch", "case-foo", "case-bar")) and
            "| stale |" in body(after, "dispatch"))
        check("filtered run into the file: nothing outside the region changed",
              after.replace(body(after, "sumsq"), "") == hand.replace(body(hand, "sumsq"), ""))
        broken = after.replace(END.format("dispatch"), "")
        with open(md, "w") as f:
            f.write(broken)
        try:
            write_md(md, generate_args(["--json", js, "--filtered"]))
            check("a broken file is an error", False)
        except MergeError as e:
            print(f"     ({e})")
            with open(md) as f:
                check("a broken file is an error and is left as it was", f.read() == broken)
        check("--check reports the broken file", main(["--check", md]) == 1)
    print(f"bench_report.py --self-test: {'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
    return 1 if failures else 0


def generate_args(argv):
    """generate() for a command line (the self-test's)."""
    return generate(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
