#!/usr/bin/env bash
# scripts/sanitize.sh asan|tsan: build and run dynstage's unit tests under the
# sanitizers, each in a Meson build directory of its own (.ci/run runs both
# after the normal build; docs/reliability.md "Sanitizers").
#   asan   build-asan: both doctest executables (-Dtest_set=unit) with
#          AddressSanitizer + UndefinedBehaviorSanitizer, LeakSanitizer on
#   tsan   build-tsan: tests/jit/test_concurrency.cpp alone
#          (-Dtest_set=concurrency) with ThreadSanitizer
# Only the test executables and what they link are built (no examples,
# benchmarks, compile checks or subproject test), with line tables only
# (-g1): -O0 for ASan+UBSan (the whole unit suite), -O1 for TSan.
# The last line is exactly "N passed, M failed"; the exit status is non-zero
# if anything failed. Environment: JOBS (default: number of CPUs),
# ASAN_BUILD_DIR / TSAN_BUILD_DIR (defaults build-asan / build-tsan).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
kind=${1:-}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

common=(--buildtype=plain -Dbenchmarks=false -Dexamples=false -Db_lundef=false)
case $kind in
  asan)
    build=${ASAN_BUILD_DIR:-build-asan}
    # -O0: 22 heavy template TUs; at -O1 they cost 2.5x the compile time
    # (docs/reliability.md), and the suite's run time is LLVM's (not instrumented).
    opts=(-Db_sanitize=address,undefined -Dtest_set=unit "-Dcpp_args=-O0 -g1 -fno-omit-frame-pointer")
    targets=(tests/dynstage_tests tests/dynstage_jit_tests)
    # Leak detection on; the first report of either sanitizer fails the test.
    # allocator_may_return_null=1: tests ask for absurd sizes (2^61 bytes) on
    # purpose and check the typed error; ASan would abort there, glibc
    # returns null as the code expects.
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:check_initialization_order=1:allocator_may_return_null=1"
    export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
    export LSAN_OPTIONS="suppressions=$root/.ci/lsan.supp:print_suppressions=0"
    ;;
  tsan)
    build=${TSAN_BUILD_DIR:-build-tsan}
    # -O1: ThreadSanitizer's recommended minimum (and only 2 TUs to build).
    opts=(-Db_sanitize=thread -Dtest_set=concurrency "-Dcpp_args=-O1 -g1 -fno-omit-frame-pointer")
    targets=(tests/dynstage_concurrency_tests)
    # Every report is printed; any report makes the program exit with 66.
    export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:suppressions=$root/.ci/tsan.supp"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    echo "0 passed, 1 failed"
    exit 2
    ;;
esac

echo "== sanitize.sh $kind: configuring $build"
if [ -f "$build/meson-private/coredata.dat" ]; then
  meson setup --reconfigure "$build" "${common[@]}" "${opts[@]}"
else
  meson setup "$build" "${common[@]}" "${opts[@]}"
fi || { echo "sanitize.sh: configure FAILED"; echo "0 passed, 1 failed"; exit 1; }

echo "== meson compile -C $build ${targets[*]} (keep going)"
build_flag=()
meson compile -C "$build" -j "$jobs" --ninja-args=-k0 "${targets[@]}" || build_flag=(--build-failed)
echo "== $kind build done after ${SECONDS}s"

# Sanitized programs run several times slower: the test timeouts scale.
exec python3 scripts/run_tests.py "$build" ${build_flag[@]+"${build_flag[@]}"} -- --timeout-multiplier 3
