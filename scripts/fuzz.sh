#!/usr/bin/env bash
# scripts/fuzz.sh N [SEED]: the differential fuzzer (tests/fuzz/,
# docs/reliability.md "Differential fuzzing") over the N programs of seeds
# SEED .. SEED+N-1 (SEED: 1 by default), with every check on: eager,
# make_jaxpr + eval_jaxpr, jit and check_jaxpr agree; jit with 1 and with 2
# threads bitwise; grad against jvp and central differences; vmap against a
# stacked loop. A failure prints its seed and a shrunk reproducer as a
# ready-to-paste doctest TEST_CASE (grad and vmap failures: a C++ program).
#
# Builds dynstage_fuzz first if needed (scripts/setup.sh dynstage_fuzz: only
# that target of the Meson build in BUILD_DIR, default build), then runs the
# seeds in parts of FUZZ_PART programs (default 500), each a process of its
# own (memory stays bounded: every part starts with an empty JIT), printing
# each part's tallies as it ends. A part that dies of a signal names the seed
# it died in, and the run goes on after it.
#
# Exit status 1 if any program failed (or died), 0 otherwise. Environment:
# BUILD_DIR, FUZZ_PART, FUZZ_BIN (a dynstage_fuzz already built: no build),
# FUZZ_ARGS (more dynstage_fuzz arguments, e.g. "--transforms none"),
# FUZZ_LOG (the directory of the parts' full logs, default BUILD_DIR/fuzz-logs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -lt 1 || $# -gt 2 || ! $1 =~ ^[0-9]+$ || ! ${2:-1} =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh N [SEED]" >&2
  exit 2
fi
count=$1
first=${2:-1}
build=${BUILD_DIR:-build}
part=${FUZZ_PART:-500}
logs=${FUZZ_LOG:-$build/fuzz-logs}
read -r -a extra <<< "${FUZZ_ARGS:-}"

bin=${FUZZ_BIN:-}
if [[ -z $bin ]]; then
  echo "== building dynstage_fuzz in $build"
  if ! bash scripts/setup.sh dynstage_fuzz; then
    echo "fuzz.sh: building dynstage_fuzz FAILED"
    exit 1
  fi
  bin=$build/tests/dynstage_fuzz
fi
[[ -x $bin ]] || { echo "fuzz.sh: no executable $bin"; exit 1; }
mkdir -p "$logs"

last=$((first + count - 1))
echo "== dynstage_fuzz: seeds $first..$last in parts of $part (logs: $logs)"
failed=0 died=0 run=0 t0=$SECONDS
tally() {  # sums "<label> N" of the parts' summary lines
  grep -h "$1" "$logs"/part-*.out 2>/dev/null | grep -o "$2 [0-9]*" | awk '{s += $NF} END {print s + 0}'
}
rm -f "$logs"/part-*.out "$logs"/part-*.err
s=$first
while ((s <= last)); do
  n=$((last - s + 1))
  ((n > part)) && n=$part
  out=$logs/part-$s.out err=$logs/part-$s.err
  # --trace: each seed's number on stderr before it runs (a signal's culprit).
  "$bin" --seed "$s" --count "$n" --doctest --trace ${extra[@]+"${extra[@]}"} >"$out" 2>"$err"
  rc=$?
  grep -E '^(programs run|threads:|grad:|vmap:)' "$out" | sed "s/^/  [$s..$((s + n - 1))] /"
  if ((rc >= 128)); then
    bad=$(grep -o '^seed [0-9]*' "$err" | tail -1 | awk '{print $2}')
    bad=${bad:-$s}
    echo "FAIL: dynstage_fuzz died of signal $((rc - 128)) in seed $bad (reproduce: $bin --seed $bad --count 1 --verbose)"
    tail -5 "$err" | sed 's/^/  /'
    died=$((died + 1)) failed=1
    run=$((run + bad - s))
    s=$((bad + 1))
    continue
  fi
  if ((rc != 0)); then
    failed=1
    # The failures with their reproducers (the log holds them all).
    awk '/^FAIL/ {p = 1} /^(programs run|threads:|grad:|vmap:)/ {p = 0} p' "$out"
  fi
  run=$((run + n))
  s=$((s + n))
  echo "  $run of $count programs, $((SECONDS - t0)) s"
done

echo "== fuzz.sh: $run programs (seeds $first..$last), mismatches $(tally '^programs run' mismatches)," \
  "crashes $(tally '^programs run' crashes), died $died; grad checked $(tally '^grad:' checked)," \
  "failed $(tally '^grad:' failed); vmap checked $(tally '^vmap:' checked), failed $(tally '^vmap:' failed);" \
  "$(tally '^threads:' checked,) programs called the thread pool; $((SECONDS - t0)) s"
if ((failed)); then
  echo "fuzz.sh: FAILED (the full logs are in $logs)"
  exit 1
fi
echo "fuzz.sh: all checks passed"
