#!/usr/bin/env bash
# scripts/bench_threads.sh [REPS]: dynstage on one thread against every thread
# (issue 19), in one run: builds benchmarks/bench_threads in build-bench/
# (release), prints its Markdown table, and plots the speed-up against size
# into docs/img/threads_speedup.png (python3-matplotlib). docs/benchmarks.md,
# "Every core", holds a run's table and the plot.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
reps=${1:-11}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false
else
  meson configure "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false >/dev/null
fi
ninja -C "$build" -j "${JOBS:-2}" benchmarks/bench_threads
csv=$build/threads_speedup.csv
"$build/benchmarks/bench_threads" "$reps" "$csv"
mkdir -p docs/img
/usr/bin/python3 - "$csv" docs/img/threads_speedup.png <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(figsize=(6, 3.6))
for k in dict.fromkeys(r["kernel"] for r in rows):
    pts = [(int(r["n"]), float(r["speedup"])) for r in rows if r["kernel"] == k]
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k)
ax.axhline(1.0, color="grey", lw=0.8)
ax.set_xscale("log")
ax.set_xlabel("elements")
ax.set_ylabel("speed-up, all threads vs 1 thread")
ax.set_title("dyn::jit on every core")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
print("wrote", sys.argv[2])
PY
