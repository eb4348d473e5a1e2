#!/usr/bin/env bash
# scripts/test.sh: set up (scripts/setup.sh), build, and run every test
# (`meson test`). The last line is always exactly "N passed, M failed"; the
# exit status is non-zero if anything failed.
#
# The build keeps going past errors (ninja -k 0), and then the tests whose
# programs did build still run; the others count as failed (scripts/run_tests.py).
# Environment: BUILD_DIR (default build), JOBS (default: number of CPUs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

if ! bash scripts/setup.sh --configure-only; then
  echo "test.sh: setup/configure FAILED"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "== setup done after ${SECONDS}s"

echo "== meson compile -C $build (keep going)"
build_flag=()
meson compile -C "$build" -j "$jobs" --ninja-args=-k0 || build_flag=(--build-failed)
echo "== build done after ${SECONDS}s"

# Prints the "N passed, M failed" line last, and exits non-zero on any failure.
exec python3 scripts/run_tests.py "$build" ${build_flag[@]+"${build_flag[@]}"}
