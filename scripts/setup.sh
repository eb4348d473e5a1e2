#!/usr/bin/env bash
# scripts/setup.sh [--configure-only] [TARGET...]
#
# Idempotent: installs the Debian 12 packages dynstage needs (only those that
# are missing; `apt-get update` only then), configures ./build with Meson
# (reconfigures it if it exists, so newly added test/example files are
# picked up) and builds everything, or only TARGETs.
#   --configure-only   stop after `meson setup`
# Environment: BUILD_DIR (default build), JOBS (default: number of CPUs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
configure_only=0
targets=()
for arg in "$@"; do
  case $arg in
    --configure-only) configure_only=1 ;;
    -*) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done

# libsleef-dev: SLEEF, the vector math of what libmvec lacks (lgamma; llvm/session.hpp).
# libtbb-dev: oneTBB, the thread pool kernels run on (runtime/threads.hpp).
# python3-numpy: the NumPy baselines of scripts/bench.sh (benchmarks/numpy_baselines.py).
# python3-matplotlib: the plots of the benchmark scripts (docs/benchmarks.md).
# libfmt-dev: {fmt}, dyn::debug_print's formatting (header-only, in the implementation TU).
# libxxhash-dev: xxHash, the disk cache's keys and checksums (jit/disk_cache.hpp).
packages=(meson ninja-build pkg-config cmake g++ llvm-19-dev libzstd-dev
          libboost-dev doctest-dev libbenchmark-dev libeigen3-dev python3-numpy libsleef-dev
          libtbb-dev python3-matplotlib libxxhash-dev libfmt-dev
          # Open MPI (issue 22, API.md section 16): dyn::distributed, shard_map's
          # collectives (libopenmpi-dev, in the implementation TU only) and
          # mpirun for the multi-rank tests (openmpi-bin).
          libopenmpi-dev openmpi-bin
          # FFTW 3 (issue 24): dyn::fft's transforms, double and single
          # precision (libfftw3-dev: fftw3.h, libfftw3, libfftw3f). GPL and
          # optional: meson -Dfftw=disabled builds without it (native transforms).
          libfftw3-dev)

if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing missing packages: ${missing[*]}"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null 2>&1 ||
        { echo "setup.sh: not root and no sudo; install as root: ${missing[*]}" >&2; exit 1; }
      sudo=(sudo)
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
else
  echo "setup.sh: no dpkg here; make sure these (Debian names) are installed: ${packages[*]}" >&2
fi

if [ -f "$build/meson-private/coredata.dat" ]; then
  echo "== meson setup --reconfigure $build"
  meson setup --reconfigure "$build"
else
  echo "== meson setup $build"
  meson setup "$build" --buildtype=debugoptimized
fi

[ $configure_only -eq 1 ] && exit 0

echo "== meson compile -C $build ${targets[*]:-}"
meson compile -C "$build" -j "$jobs" ${targets[@]+"${targets[@]}"}
