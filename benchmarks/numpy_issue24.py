#!/usr/bin/env python3
"""NumPy baselines of issue 24's FFTs (bench_issue24.cpp): numpy.fft on the
same complex128 inputs, x[k] = sin(0.001 k) + i cos(0.0007 k), one thread
(NumPy's pocketfft is single-threaded).

  fft1d/numpy   numpy.fft.fft of 2^20 points
  fft2d/numpy   numpy.fft.fft2 of 1024 x 1024

Usage: python3 benchmarks/numpy_issue24.py [reps]
Prints the median and minimum CPU time (process_time, as numpy_issue18.py;
Google Benchmark's "CPU" column is the figure to compare with on a shared,
loaded machine) and the median wall time (perf_counter) of `reps` runs
(default 20) per case, after one warm-up call.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402


def make(n):
    k = np.arange(n, dtype=np.float64)
    return np.sin(0.001 * k) + 1j * np.cos(0.0007 * k)


def timed(fn, arg, reps):
    fn(arg)
    cpu, wall = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        fn(arg)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), min(cpu), statistics.median(wall)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    x1 = make(1 << 20)
    x2 = make(1024 * 1024).reshape(1024, 1024)
    print(f"numpy {np.__version__}, {reps} runs: CPU median / CPU min / wall median")
    for name, fn, arg in [("fft1d/numpy/1048576", np.fft.fft, x1), ("fft2d/numpy/1024", np.fft.fft2, x2)]:
        med, lo, wall = timed(fn, arg, reps)
        print(f"{name:22s} {med * 1e3:10.2f} ms {lo * 1e3:10.2f} ms {wall * 1e3:10.2f} ms")


if __name__ == "__main__":
    main()
