#!/usr/bin/env bash
# scripts/bench_disk_cache.sh [PAIRS]: the disk cache's target (issue 21).
# Builds benchmarks/bench_disk_cache (10 realistic kernels) in build-bench/
# (release), then PAIRS times (default 3): a fresh cache directory, the
# program run twice as two processes on it. The first compiles and stores
# the ten kernels, the second should load all ten from disk: 0 compiles, 10
# disk hits, first results >= 10x sooner. Prints both processes' lines (time
# from main to the ten first results, compiles, disk hits, trace time,
# checksum) and each process's wall time. docs/benchmarks.md, "Issue 21: disk
# cache", holds a run's figures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-bench}
pairs=${1:-3}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false
else
  meson configure "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false >/dev/null
fi
ninja -C "$build" -j "${JOBS:-2}" benchmarks/bench_disk_cache
exe=$build/benchmarks/bench_disk_cache
for p in $(seq 1 "$pairs"); do
  dir=$(mktemp -d "${TMPDIR:-/tmp}/dynstage_bench_cache.XXXXXX")
  for run in first second; do
    start=$(date +%s%N)
    line=$(DYNSTAGE_CACHE_DIR=$dir "$exe")
    end=$(date +%s%N)
    printf 'pair %d, %-6s process: %s; process wall %.1f ms\n' "$p" "$run" "$line" "$(( (end - start) / 1000 ))e-3"
  done
  printf 'pair %d: cache directory %s bytes in %s entries\n' "$p" "$(du -sb "$dir" | cut -f1)" "$(ls "$dir" | wc -l)"
  rm -rf "$dir"
done
