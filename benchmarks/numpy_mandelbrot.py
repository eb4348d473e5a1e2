#!/usr/bin/env python3
"""NumPy baselines of issue 24's Mandelbrot benchmark (bench_mandelbrot.cpp):
the same grid (1000x1000 points c = re + i im, re in linspace(-2, 0.5), im
in linspace(-1.25, 1.25), complex128) and the same counts (for each point,
the number of the 100 iterations z <- z*z + c, from z = 0, at whose start
|z| <= 2), one thread.

  mandelbrot/numpy          the array program of the staged kernel:
                            inside = abs(z) <= 2; z = where(inside, z*z + c, z);
                            n += inside
  mandelbrot/numpy_compact  the usual faster NumPy form: iterate only the
                            points that have not escaped (fancy indexing
                            compacts z, c and their indices every iteration)

Usage: OPENBLAS_NUM_THREADS=1 python3 benchmarks/numpy_mandelbrot.py [reps]
Prints the median and minimum CPU time (process_time) of `reps` runs
(default 5) per case, and checks that the two forms agree.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

SIDE = 1000
ITERS = 100


def grid():
    re = np.linspace(-2.0, 0.5, SIDE)
    im = np.linspace(-1.25, 1.25, SIDE)
    return re[None, :] + 1j * im[:, None]


def mandel_where(c):
    z = np.zeros_like(c)
    n = np.zeros(c.shape, np.int32)
    for _ in range(ITERS):
        inside = np.abs(z) <= 2
        z = np.where(inside, z * z + c, z)
        n += inside
    return n


def mandel_compact(c):
    cc = c.ravel().copy()
    z = np.zeros_like(cc)
    n = np.zeros(cc.shape, np.int32)
    idx = np.arange(cc.size)
    for _ in range(ITERS):
        n[idx] += 1  # every point still here has |z| <= 2
        z = z * z + cc
        keep = np.abs(z) <= 2
        idx, z, cc = idx[keep], z[keep], cc[keep]
    return n.reshape(c.shape)


def timed(fn, arg, reps):
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        fn(arg)
        times.append(time.process_time() - t0)
    return statistics.median(times), min(times)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    c = grid()
    a, b = mandel_where(c), mandel_compact(c)
    assert (a == b).all(), "the two NumPy forms disagree"
    for name, fn in (("mandelbrot/numpy", mandel_where), ("mandelbrot/numpy_compact", mandel_compact)):
        med, best = timed(fn, c, reps)
        print(f"{name:28s} median {med * 1e3:9.1f} ms   min {best * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
