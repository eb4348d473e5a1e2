// Realistic kernels shared by the compile-time benchmark (bench_compile.cpp,
// issue 18) and the disk-cache benchmark (bench_disk_cache.cpp, issue 21):
// stencils, a convolution, a Cholesky factorisation in a for_loop, an n-body
// step and a scan. Each takes its sizes from its arguments' shapes, so the
// two programs call them at their own sizes. They run under dyn::jit (their
// arguments are tracers: shape()[i].value() is a static size).
#pragma once

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

namespace realistic {

inline constexpr auto stencil1d = [](auto x) {  // second difference
  const std::int64_t n = x.shape()[0].value();
  return dyn::slice(x, {2}, {n}) - 2.0 * dyn::slice(x, {1}, {n - 1}) + dyn::slice(x, {0}, {n - 2});
};

inline constexpr auto stencil2d = [](auto u) {  // 5-point Laplacian
  const std::int64_t n = u.shape()[0].value(), m = u.shape()[1].value();
  auto s = [&](std::int64_t i, std::int64_t j) { return dyn::slice(u, {i, j}, {n - 2 + i, m - 2 + j}); };
  return s(0, 1) + s(2, 1) + s(1, 0) + s(1, 2) - 4.0 * s(1, 1);
};

inline constexpr auto stencil3d = [](auto u) {  // 7-point Laplacian of a cube
  const std::int64_t n = u.shape()[0].value();
  auto s = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return dyn::slice(u, {i, j, k}, {n - 2 + i, n - 2 + j, n - 2 + k});
  };
  return s(0, 1, 1) + s(2, 1, 1) + s(1, 0, 1) + s(1, 2, 1) + s(1, 1, 0) + s(1, 1, 2) - 6.0 * s(1, 1, 1);
};

// 3x3 "valid" convolution of NHWC images (B, H, W, C) with weights (3, 3, C,
// F): (B, H-2, W-2, F), written tap by tap (nine products).
inline constexpr auto conv2d = [](auto img, auto w, auto b) {
  // (dyn::Dim of a size: the same code on arrays, whose sizes are integers, and tracers.)
  const std::int64_t nb = dyn::Dim(img.shape()[0]).value(), h = dyn::Dim(img.shape()[1]).value() - 2;
  const std::int64_t wd = dyn::Dim(img.shape()[2]).value() - 2, c = dyn::Dim(img.shape()[3]).value();
  auto s = dyn::matmul(dyn::slice(img, {0, 0, 0, 0}, {nb, h, wd, c}), w.at(0, 0).get());
  for (std::int64_t t = 1; t < 9; ++t) {
    const std::int64_t i = t / 3, j = t % 3;
    s = s + dyn::matmul(dyn::slice(img, {0, i, j, 0}, {nb, h + i, wd + j, c}), w.at(i, j).get());
  }
  return s + b;
};

inline constexpr auto cholesky = [](auto a) {  // column by column in a for_loop
  const std::int64_t n = a.shape()[0].value();
  auto rows = dyn::arange<std::int64_t>(n);
  auto l0 = a * 0.0;
  return dyn::for_loop(0, n, 1)([&](auto j, auto l) {
    auto lj = l.at(j).get();  // row j: L[j, :j], zeros after
    auto d = dyn::sqrt(a.at(j, j).get() - dyn::sum(lj * lj));
    auto col = (a.at(dyn::all(), j).get() - dyn::matmul(l, lj)) / d;
    auto newcol = dyn::where(rows > j, col, dyn::where(rows == j, d, 0.0));
    return l.at(dyn::all(), j).set(newcol);
  })(l0);
};

inline constexpr auto nbody = [](auto x, auto v, auto m) {  // one step of n bodies
  const std::int64_t n = x.shape()[0].value();
  auto d = dyn::reshape(x, {1, n, 3}) - dyn::reshape(x, {n, 1, 3});
  auto r2 = dyn::sum(d * d, {2}) + 1e-3;
  auto inv = dyn::reshape(m, {1, n}) / (r2 * dyn::sqrt(r2));
  auto acc = dyn::sum(d * dyn::reshape(inv, {n, n, 1}), {1});
  auto v2 = v + 0.01 * acc;
  return std::tuple{x + 0.01 * v2, v2};
};

inline constexpr auto ema_scan = [](auto xs) {  // exponential moving average over the rows of (n, 64)
  auto init = dyn::slice(xs, {0, 0}, {1, 64}) * 0.0;
  return dyn::scan([](auto c, auto x) {
    auto c2 = 0.9 * c + 0.1 * dyn::reshape(x, {1, 64});
    return std::tuple{c2, dyn::sum(c2)};
  }, init, xs);
};

// A Stockham-style FFT of n = 2^k >= 32 points carried as (real, imaginary)
// pairs of f64 arrays, as a NumPy user ports the vectorised textbook FFT
// (issue 25): a DFT of 32 points as small matrix products over the columns,
// then log2(n / 32) radix-2 stages of slices, twiddle products and
// concatenations. Returns the pair (re, im) of the n-point DFT.
inline constexpr auto fft_stockham = [](auto xr, auto xi) {
  const std::int64_t n = dyn::Dim(xr.shape()[0]).value();
  constexpr std::int64_t nmin = 32;
  const double pi = 3.14159265358979323846;
  std::vector<double> mr(nmin * nmin), mi(nmin * nmin);
  for (std::int64_t k = 0; k < nmin; ++k)
    for (std::int64_t j = 0; j < nmin; ++j) {
      const double a = -2.0 * pi * static_cast<double>(k * j) / static_cast<double>(nmin);
      mr[static_cast<std::size_t>(k * nmin + j)] = std::cos(a);
      mi[static_cast<std::size_t>(k * nmin + j)] = std::sin(a);
    }
  const dyn::Array<double> Mr({nmin, nmin}, mr), Mi({nmin, nmin}, mi);
  auto a = dyn::reshape(xr, {nmin, n / nmin}), b = dyn::reshape(xi, {nmin, n / nmin});
  auto Xr = dyn::matmul(Mr, a) - dyn::matmul(Mi, b);
  auto Xi = dyn::matmul(Mr, b) + dyn::matmul(Mi, a);
  for (std::int64_t rows = nmin; rows < n; rows *= 2) {
    const std::int64_t cols = n / rows, h = cols / 2;
    std::vector<double> fr(static_cast<std::size_t>(rows)), fi(static_cast<std::size_t>(rows));
    for (std::int64_t k = 0; k < rows; ++k) {
      fr[static_cast<std::size_t>(k)] = std::cos(-pi * static_cast<double>(k) / static_cast<double>(rows));
      fi[static_cast<std::size_t>(k)] = std::sin(-pi * static_cast<double>(k) / static_cast<double>(rows));
    }
    const dyn::Array<double> Fr({rows, 1}, fr), Fi({rows, 1}, fi);
    auto er = dyn::slice(Xr, {0, 0}, {rows, h}), ei = dyn::slice(Xi, {0, 0}, {rows, h});
    auto odr = dyn::slice(Xr, {0, h}, {rows, cols}), odi = dyn::slice(Xi, {0, h}, {rows, cols});
    auto tr = Fr * odr - Fi * odi, ti = Fr * odi + Fi * odr;
    Xr = dyn::concatenate({er + tr, er - tr}, 0);
    Xi = dyn::concatenate({ei + ti, ei - ti}, 0);
  }
  return std::tuple{dyn::reshape(Xr, {n}), dyn::reshape(Xi, {n})};
};

// Mandelbrot escape counts with complex arithmetic (issue 24): for each point
// c, the number of the `iters` iterations z <- z*z + c (from z = 0) at whose
// start |z| <= 2; an escaped z stays where it escaped.
template <int Iters>
inline constexpr auto mandelbrot = [](auto c) {
  auto counts = dyn::zeros<std::int32_t>(c.shape());
  auto [z, n] = dyn::for_loop(0, Iters, 1)([&](auto, auto z, auto n) {
    auto inside = dyn::abs(z) <= 2.0;
    return std::tuple{dyn::where(inside, z * z + c, z), n + dyn::astype<std::int32_t>(inside)};
  })(dyn::zeros_like(c), counts);
  return n;
};

}  // namespace realistic
