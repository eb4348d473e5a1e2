#!/usr/bin/env bash
# scripts/quickstart.sh: set up (scripts/setup.sh), build examples/01_quickstart
# and run it: it prints a jaxpr, times the same lambda run eagerly and
# compiled by dyn::jit, and prints the speed-up and the compile time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${BUILD_DIR:-build}

[ -f examples/01_quickstart.cpp ] || { echo "quickstart.sh: examples/01_quickstart.cpp is missing" >&2; exit 1; }
bash scripts/setup.sh 01_quickstart
echo "== $build/examples/01_quickstart"
"$build/examples/01_quickstart"
