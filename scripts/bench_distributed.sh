#!/usr/bin/env bash
# scripts/bench_distributed.sh [N] [STEPS] [REPEATS]: issue 22's target.
# Builds benchmarks/bench_distributed_heat in build-bench/ (release), then
# REPEATS times (default 3) runs the halo-exchange heat equation on an N x N
# f64 plate (default 4096) for STEPS steps (default 20) as 1 rank and as 2
# ranks of one thread each (DYNSTAGE_NUM_THREADS=1; mpirun on loopback,
# shared memory between the ranks), and prints each run's line and the
# ratio of the medians. docs/benchmarks.md, "Issue 22: distributed", holds a
# run's figures; docs/distributed.md the model of what to expect.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
n=${1:-4096}
steps=${2:-20}
repeats=${3:-3}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false
else
  meson configure "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false >/dev/null
fi
ninja -C "$build" -j "${JOBS:-2}" benchmarks/bench_distributed_heat
exe=$build/benchmarks/bench_distributed_heat
export DYNSTAGE_NUM_THREADS=1 DYNSTAGE_CACHE_DIR=off
# (As root, Open MPI needs its two opt-in variables; harmless otherwise.)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --bind-to core --mca btl self,vader --mca oob_tcp_if_include lo)
one=() two=()
for r in $(seq 1 "$repeats"); do
  l1=$("${mpi[@]}" -np 1 "$exe" "$n" "$steps")
  l2=$("${mpi[@]}" -np 2 "$exe" "$n" "$steps")
  echo "$l1"
  echo "$l2"
  one+=("$(sed 's/.*median_ms=\([0-9.]*\).*/\1/' <<<"$l1")")
  two+=("$(sed 's/.*median_ms=\([0-9.]*\).*/\1/' <<<"$l2")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m1=$(median "${one[@]}")
m2=$(median "${two[@]}")
awk -v a="$m1" -v b="$m2" 'BEGIN { printf "median over runs: 1 rank %.1f ms, 2 ranks %.1f ms: %.2fx\n", a, b, a / b }'
