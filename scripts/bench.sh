#!/usr/bin/env bash
# dynstage benchmarks: build, run, and update docs/benchmarks.md. One command:
#
#   scripts/bench.sh                 # everything (~10 min on 2 busy cores)
#   scripts/bench.sh --benchmark_filter=fused   # extra arguments go to bench_main
#
# docs/benchmarks.md is partly generated: scripts/bench_report.py rewrites only
# the regions between `<!-- bench_report: begin NAME -->` and
# `<!-- bench_report: end NAME -->` lines and keeps every other line (the
# hand-written sections, notes and before/after tables) verbatim.
#   * A full run (no --benchmark_filter) runs every step below and replaces
#     every region it measured: each kernel's tables, and the summaries (the
#     run's description at the top, the plots, the targets table, the
#     issue-16 overview, NumPy on every case, the machine's slowness).
#   * A filtered run (--benchmark_filter=RE) runs only steps 1, 2 and 5:
#     bench_main and NumPy with that filter, no compile-time steps and no
#     plots; it replaces only the regions of the kernels it ran, each then
#     starting with a line that names the run (command, date, commit, load),
#     and keeps everything else, summaries included.
# A region a run did not measure keeps its previous text. The file is
# checked before anything is built (`bench_report.py --check`): a malformed
# or unknown marker, or a region the script can write that has no place in
# the file, stops bench.sh at once with the line to fix; the merge at the
# end leaves the file as it was on any error. A bench_main case with no
# writer of its own gets a generic table, added before
# `<!-- bench_report: new sections go here -->` the first time (move the
# marked block where it belongs; later runs update it there).
#
# Steps:
#   1. build benchmarks/bench_main in its own build directory (build-bench/,
#      buildtype=release; bench_main.cpp itself at -O2, the baselines at -O3
#      -march=native [-ffast-math]), with Meson when the top-level meson.build
#      includes benchmarks/, otherwise with g++ directly (same flags);
#   2. run every benchmark, 5 repetitions (randomly interleaved), aggregates
#      only, JSON to build-bench/bench.json (nothing is pinned: the machine is
#      shared);
#      then the softmax benchmarks again in a fresh process (malloc state);
#      then NumPy on the same kernels and sizes (benchmarks/numpy_baselines.py,
#      one thread, the same filter; skipped with a message without NumPy);
#   3. (full runs only) time the first and second kernel compiles of 5 fresh processes, and
#      the compiles of realistic kernels (benchmarks/bench_compile: trace,
#      lowering, LLVM, IR size; issue 18);
#   4. (full runs only) time `g++ -std=c++20 -O2 -c` of a user file including
#      <dynstage/dynstage.hpp> and calling dyn::jit (3 times);
#   5. scripts/bench_plots.py draws PNG plots of the tables (docs/img/; full
#      runs only), and scripts/bench_report.py merges all that into
#      docs/benchmarks.md's regions.
#
# Environment: DYNSTAGE_BENCH_BUILD (build dir), DYNSTAGE_BENCH_REPS (5),
# DYNSTAGE_BENCH_MD (docs/benchmarks.md), CXX (g++), JOBS (2),
# DYNSTAGE_BENCH_BEFORE (an earlier run's bench.json: adds a before/after
# section comparing the jit's ratios run by run), DYNSTAGE_BENCH_PYTHON (the
# Python interpreters to try for NumPy, in order; default "python3
# /usr/bin/python3": Debian's python3-numpy is in the system interpreter,
# which a pyenv or venv python3 on PATH hides).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DYNSTAGE_BENCH_BUILD:-$root/build-bench}
reps=${DYNSTAGE_BENCH_REPS:-5}
md=${DYNSTAGE_BENCH_MD:-$root/docs/benchmarks.md}
cxx=${CXX:-g++}
jobs=${JOBS:-2}
command_line="scripts/bench.sh${*:+ $*}"
filtered=
for a in "$@"; do
  case $a in --benchmark_filter=*) filtered=1 ;; esac
done
cd "$root"
mkdir -p "$build"
# Fail before the long part if the report could not be merged into $md.
python3 scripts/bench_report.py --check "$md"

# ---------------------------------------------------------------------------
# 1. Build.
if grep -q "subdir('benchmarks')" meson.build; then
  if [ ! -f "$build/build.ninja" ]; then
    LLVM_CONFIG=${LLVM_CONFIG:-llvm-config-19} meson setup "$build" \
      -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false
  else
    meson configure "$build" -Dbuildtype=release -Db_ndebug=true -Dbenchmarks=true -Dtests=false -Dexamples=false >/dev/null
  fi
  targets=(benchmarks/bench_main)
  if [ -z "$filtered" ]; then targets+=(benchmarks/bench_compile); fi
  ninja -C "$build" -j "$jobs" "${targets[@]}"
  exe=$build/benchmarks/bench_main
  compile_exe=$build/benchmarks/bench_compile
else
  echo "bench.sh: meson.build has no subdir('benchmarks'); building with $cxx directly" >&2
  obj=$build/direct
  mkdir -p "$obj"
  llvm_inc=$(llvm-config-19 --includedir)
  llvm_cpp=$(llvm-config-19 --cppflags | tr ' ' '\n' | grep -v '^-I' | tr '\n' ' ')
  llvm_lib=$(llvm-config-19 --libdir)
  common="-std=c++20 -Wall -Wextra -DNDEBUG"
  # Recompile when the source, or any header it could include, is newer.
  compile() {  # compile <source> <object> <flags...>
    local src=$1 o=$2; shift 2
    if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || \
       [ -n "$(find include benchmarks -newer "$o" \( -name '*.hpp' -o -name '*.inc' \) -print -quit)" ]; then
      echo "  $cxx $* -c $src" >&2
      "$cxx" $common "$@" -c "$src" -o "$o"
    fi
  }
  # Two compiles at a time at most (JOBS=1: one).
  pid=
  bg() { if [ "$jobs" -gt 1 ]; then "$@" & pid=$!; else "$@"; pid=; fi; }
  join() { if [ -n "$pid" ]; then wait "$pid"; fi; }
  bg compile benchmarks/baseline_loops.cpp "$obj/baseline_loops.o" -O3 -march=native
  compile benchmarks/baseline_fastmath.cpp "$obj/baseline_fastmath.o" -O3 -march=native -ffast-math
  join
  bg compile benchmarks/baseline_eigen.cpp "$obj/baseline_eigen.o" -O3 -march=native -isystem /usr/include/eigen3
  compile benchmarks/bench_main.cpp "$obj/bench_main.o" -O2 -Iinclude
  join
  compile benchmarks/bench_issue16.cpp "$obj/bench_issue16.o" -O2 -Iinclude
  compile benchmarks/bench_issue17.cpp "$obj/bench_issue17.o" -O2 -Iinclude
  compile benchmarks/bench_einsum.cpp "$obj/bench_einsum.o" -O2 -Iinclude
  compile benchmarks/bench_issue18.cpp "$obj/bench_issue18.o" -O2 -Iinclude
  compile benchmarks/bench_issue20.cpp "$obj/bench_issue20.o" -O2 -Iinclude
  compile benchmarks/bench_issue20_sim.cpp "$obj/bench_issue20_sim.o" -O2 -Iinclude
  compile benchmarks/bench_dot_forms.cpp "$obj/bench_dot_forms.o" -O2 -Iinclude
  compile benchmarks/bench_issue25.cpp "$obj/bench_issue25.o" -O2 -Iinclude
  compile benchmarks/bench_issue24.cpp "$obj/bench_issue24.o" -O2 -Iinclude
  compile benchmarks/bench_mandelbrot.cpp "$obj/bench_mandelbrot.o" -O2 -Iinclude
  compile benchmarks/bench_compile.cpp "$obj/bench_compile.o" -O2 -Iinclude
  compile src/dynstage.cpp "$obj/dynstage.o" -O2 -Iinclude -isystem "$llvm_inc" $llvm_cpp
  exe=$obj/bench_main
  "$cxx" "$obj"/bench_main.o "$obj"/bench_issue16.o "$obj"/bench_issue17.o "$obj"/bench_einsum.o "$obj"/bench_issue18.o "$obj"/bench_issue20.o "$obj"/bench_issue20_sim.o "$obj"/bench_dot_forms.o "$obj"/bench_issue25.o "$obj"/bench_issue24.o "$obj"/bench_mandelbrot.o "$obj"/baseline_*.o "$obj"/dynstage.o -o "$exe" \
    -lbenchmark -lpthread -ltbb -lxxhash -L"$llvm_lib" -lLLVM-19 -Wl,-rpath,"$llvm_lib"
  compile_exe=$obj/bench_compile
  "$cxx" "$obj"/bench_compile.o "$obj"/dynstage.o -o "$compile_exe" -lpthread -ltbb -L"$llvm_lib" -lLLVM-19 -Wl,-rpath,"$llvm_lib"
fi

# ---------------------------------------------------------------------------
# 2. Run. Console output shows progress; the JSON file is what the report reads.
# One thread: the baselines here (hand loops, Eigen, NumPy) run on one, so
# dyn::jit does too; scripts/bench_threads.sh measures every core.
export DYNSTAGE_NUM_THREADS=${DYNSTAGE_NUM_THREADS:-1}
# Compile times are measured compiles: no kernel from the disk cache
# (scripts/bench_disk_cache.sh measures that).
export DYNSTAGE_CACHE_DIR=off
json=$build/bench.json
# Repetitions of all benchmarks are randomly interleaved: a baseline and
# dyn::jit then share the machine's changing state (other jobs on the shared
# cores) instead of meeting it at different times, which matters most where
# both run at the memory bandwidth (sum of squares at n = 1e7).
"$exe" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$json" --benchmark_out_format=json "$@"

# 2b. Softmax again in a fresh process. The JIT mallocs its outputs and its
# temporaries on every call; whether those come back page-faulted depends on
# glibc's malloc state (its dynamic mmap and trim thresholds), which the
# large-array benchmarks before softmax change. Both numbers go in the report.
fresh=$build/bench_softmax_fresh.json
rm -f "$fresh"
if grep -q '"run_name": "softmax/jit' "$json"; then
  "$exe" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$fresh" --benchmark_out_format=json "$@" --benchmark_filter='^softmax/'
fi

# 2c. NumPy baselines (issue 16), in the same run: the same kernels and sizes
# (benchmarks/bench_sizes.hpp), one thread, the same --benchmark_filter.
numpy_json=$build/numpy.json
rm -f "$numpy_json"
numpy_skipped=
np_args=()
for a in "$@"; do
  case $a in --benchmark_filter=*) np_args+=("$a") ;; esac
done
py=
for cand in ${DYNSTAGE_BENCH_PYTHON:-python3 /usr/bin/python3}; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' 2>/dev/null; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  numpy_skipped="NumPy not found (Debian's python3-numpy; scripts/setup.sh installs it)"
  echo "bench.sh: $numpy_skipped; skipping the NumPy baselines" >&2
elif ! OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 BLIS_NUM_THREADS=1 \
       "$py" benchmarks/numpy_baselines.py --out "$numpy_json" --reps "$reps" "${np_args[@]}"; then
  rm -f "$numpy_json"
  numpy_skipped="benchmarks/numpy_baselines.py failed (its message is in the run's log)"
  echo "bench.sh: $numpy_skipped; the report goes without NumPy" >&2
fi

extra=()
if [ -z "$filtered" ]; then
  # 3. First kernel of a process (fresh processes, so LLVM's one-off setup is in it).
  first=$build/first_kernel.jsonl
  : >"$first"
  for _ in $(seq "$reps"); do "$exe" --first-kernel >>"$first"; done

  # 3b. Compile times of realistic kernels (issue 18): a Markdown table.
  compile_table=$build/compile_table.md
  "$compile_exe" "$reps" >"$compile_table"

  # 4. Compile time of a user file (the backend's LLVM headers stay out of it).
  user=$build/user_compile.txt
  : >"$user"
  # One line per compile: wall seconds, then CPU seconds (user + sys of g++ and
  # its children) when /usr/bin/time is there.
  for _ in 1 2 3; do
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -o "$build/time.txt" -f "%e %U %S" \
        "$cxx" -std=c++20 -O2 -Iinclude -c benchmarks/user_file.cpp -o "$build/user_file.o"
      awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$build/time.txt" >>"$user"
    else
      start=$(date +%s.%N)
      "$cxx" -std=c++20 -O2 -Iinclude -c benchmarks/user_file.cpp -o "$build/user_file.o"
      end=$(date +%s.%N)
      echo "$start $end" | awk '{printf "%.3f\n", $2 - $1}' >>"$user"
    fi
  done

  # The same file with <dynstage/dynstage.hpp> precompiled once (a g++ PCH,
  # what Meson's `cpp_pch` does; README "Compile time of your files").
  pchdir=$build/pch
  mkdir -p "$pchdir"
  printf '#include <dynstage/dynstage.hpp>\n' >"$pchdir/dynstage_pch.hpp"
  "$cxx" -std=c++20 -O2 -Iinclude -x c++-header "$pchdir/dynstage_pch.hpp" -o "$pchdir/dynstage_pch.hpp.gch"
  user_pch=$build/user_compile_pch.txt
  : >"$user_pch"
  for _ in 1 2 3; do
    pch_cmd=("$cxx" -std=c++20 -O2 -Iinclude -I"$pchdir" -include dynstage_pch.hpp -Werror=invalid-pch
             -c benchmarks/user_file.cpp -o "$build/user_file_pch.o")
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -o "$build/time.txt" -f "%e %U %S" "${pch_cmd[@]}"
      awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$build/time.txt" >>"$user_pch"
    else
      start=$(date +%s.%N)
      "${pch_cmd[@]}"
      end=$(date +%s.%N)
      echo "$start $end" | awk '{printf "%.3f\n", $2 - $1}' >>"$user_pch"
    fi
  done
  extra+=(--first-kernel "$first" --user-compile "$user" --user-compile-pch "$user_pch" --compile-table "$compile_table")
else
  echo "bench.sh: filtered run: no compile-time steps (3, 4), no plots; their sections are kept" >&2
  extra+=(--filtered)
fi

# ---------------------------------------------------------------------------
# 5. Report.
if [ -f "$fresh" ]; then extra+=(--softmax-fresh "$fresh"); fi
if [ -f "$numpy_json" ]; then extra+=(--numpy "$numpy_json"); else extra+=(--numpy-skipped "$numpy_skipped"); fi
# DYNSTAGE_BENCH_BEFORE=<bench.json of an earlier run> adds a before/after
# section (labels: DYNSTAGE_BENCH_BEFORE_LABEL, DYNSTAGE_BENCH_AFTER_LABEL; a
# paragraph: DYNSTAGE_BENCH_BEFORE_NOTE).
if [ -n "${DYNSTAGE_BENCH_BEFORE:-}" ]; then
  extra+=(--before "$DYNSTAGE_BENCH_BEFORE" --before-label "${DYNSTAGE_BENCH_BEFORE_LABEL:-before}"
          --after-label "${DYNSTAGE_BENCH_AFTER_LABEL:-after}" --before-note "${DYNSTAGE_BENCH_BEFORE_NOTE:-}")
fi
# 5b. Plots (scripts/bench_plots.py, Debian's python3-matplotlib) next to the
# report, embedded by it; skipped with a message without matplotlib.
img=$(dirname "$md")/img
plot_py=
for cand in ${DYNSTAGE_BENCH_PYTHON:-python3 /usr/bin/python3}; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import matplotlib' 2>/dev/null; then plot_py=$cand; break; fi
done
if [ -n "$filtered" ]; then
  :  # the plots show the whole suite: a filtered run keeps them
elif [ -n "$plot_py" ]; then
  np_plot=()
  if [ -f "$numpy_json" ]; then np_plot=(--numpy "$numpy_json"); fi
  while read -r png; do
    extra+=(--plot "${png#"$(dirname "$md")"/}")
  done < <("$plot_py" scripts/bench_plots.py "$json" "${np_plot[@]}" --out-dir "$img")
else
  echo "bench.sh: matplotlib not found (Debian's python3-matplotlib; scripts/setup.sh installs it); no plots" >&2
fi
commit=$(git -C "$root" describe --always --dirty 2>/dev/null || true)
python3 scripts/bench_report.py --json "$json" "${extra[@]}" --md "$md" \
  --command "$command_line" --commit "$commit" --cxx "$("$cxx" --version | head -1)"
echo "bench.sh: updated ${md#"$root"/}"
