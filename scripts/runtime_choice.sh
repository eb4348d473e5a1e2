#!/usr/bin/env bash
# The measurement behind the thread pool's choice (docs/backend.md, "Threads"):
# benchmarks/runtime_choice.cpp with oneTBB and with LLVM's OpenMP
# runtime (libomp-19-dev: g++ compiles the OpenMP loop, and the program links
# LLVM's libomp, which implements GCC's GOMP entry points, instead of libgomp),
# same loops, same machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/runtime_choice}
mkdir -p "$out"
g++ -std=c++20 -O3 -march=native benchmarks/runtime_choice.cpp -ltbb -o "$out/tbb"
g++ -std=c++20 -O3 -march=native -fopenmp -DUSE_OMP -c benchmarks/runtime_choice.cpp -o "$out/omp.o"
g++ "$out/omp.o" -L/usr/lib/llvm-19/lib -Wl,-rpath,/usr/lib/llvm-19/lib -lomp -o "$out/omp"
if ldd "$out/omp" | grep -q libgomp; then echo "runtime_choice: linked libgomp, not libomp" >&2; exit 1; fi
"$out/tbb"
"$out/omp"
