#!/usr/bin/env python3
"""NumPy baselines of issue 18's in-place loop kernels (bench_issue18.cpp):
the same algorithms on the same inputs, one thread.

  rowupd/numpy      out = x.copy(); for i: out[i] = out[i] * 0.5 + 1
  chol/numpy_outer  u = a.copy(); for j: row j /= sqrt(pivot), zeros left of
                    it; u[j+1:, j:] -= outer(u[j, j+1:], u[j, j:])
                    (a Python loop over pivot rows, one array op per pivot)
  chol/numpy_rows   the same with the trailing update as a Python loop over
                    the rows i > j, one vector op per row (u[i, j:] -= ...)
  conv/numpy        3x3 convolution with bias, (8,64,64,3) -> 16 channels,
                    f32: b + the sum over the nine taps of
                    img[:, i:i+62, j:j+62, :] @ w[i, j] (vectorised)
  conv/numpy_einsum the same as one np.einsum over a strided window view

Usage: OPENBLAS_NUM_THREADS=1 python3 benchmarks/numpy_issue18.py [reps]
Prints the median and minimum CPU time (process_time) of `reps` runs (default 5) per case.
"""
import math
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

N = 1000


def square_input():
    k = np.arange(N * N, dtype=np.float64)
    return np.sin(k * 0.001).reshape(N, N)


def spd_input():
    k = np.arange(N * N)
    b = np.cos((k % 977) * 0.37 + (k // 977)).reshape(N, N)
    return b @ b.T / N + np.eye(N)


def rowupd(x):
    out = x.copy()
    for i in range(N):
        out[i] = out[i] * 0.5 + 1.0
    return out


def chol_outer(a):
    u = a.copy()
    for j in range(N):
        rj = u[j]
        rj[:j] = 0.0
        rj[j:] /= math.sqrt(rj[j])
        u[j + 1:, j:] -= np.outer(rj[j + 1:], rj[j:])
    return u


def chol_rows(a):
    u = a.copy()
    for j in range(N):
        rj = u[j]
        rj[:j] = 0.0
        rj[j:] /= math.sqrt(rj[j])
        tail = rj[j:]
        for i in range(j + 1, N):
            u[i, j:] -= rj[i] * tail
    return u


def conv_inputs():
    img = np.sin(np.arange(8 * 64 * 64 * 3) * 0.01).astype(np.float32).reshape(8, 64, 64, 3)
    w = np.cos(np.arange(3 * 3 * 3 * 16) * 0.1).astype(np.float32).reshape(3, 3, 3, 16)
    b = np.sin(np.arange(16) * 0.5).astype(np.float32)
    return img, w, b


def conv_taps(args):
    img, w, b = args
    h, wd = img.shape[1] - 2, img.shape[2] - 2
    out = img[:, 0:h, 0:wd, :] @ w[0, 0]
    for t in range(1, 9):
        i, j = divmod(t, 3)
        out += img[:, i:i + h, j:j + wd, :] @ w[i, j]
    return out + b


def conv_einsum(args):
    img, w, b = args
    win = np.lib.stride_tricks.sliding_window_view(img, (3, 3), axis=(1, 2))  # (n, h, w, c, 3, 3)
    return np.einsum("nyxcij,ijcf->nyxf", win, w, optimize=True) + b


def timed(fn, arg, reps):
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn(arg)
        ts.append(time.process_time() - t0)
    return statistics.median(ts), min(ts)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    x, a = square_input(), spd_input()
    u = chol_outer(a)
    assert np.allclose(u.T @ u, a, atol=1e-9), "Cholesky check"
    assert np.allclose(chol_rows(a), u, atol=1e-12)
    print(f"numpy {np.__version__}, one thread, {reps} runs: median / min")
    conv = conv_inputs()
    assert np.allclose(conv_taps(conv), conv_einsum(conv), atol=1e-4), "convolution check"
    for name, fn, arg in [("rowupd/numpy", rowupd, x), ("chol/numpy_outer", chol_outer, a),
                          ("chol/numpy_rows", chol_rows, a), ("conv/numpy", conv_taps, conv),
                          ("conv/numpy_einsum", conv_einsum, conv)]:
        med, lo = timed(fn, arg, reps)
        print(f"{name:20s} {med * 1e3:10.2f} ms {lo * 1e3:10.2f} ms")


if __name__ == "__main__":
    main()
