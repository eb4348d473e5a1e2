// Hand-written baseline loops, compiled -O3 -march=native (strict IEEE: the
// sum-of-squares reduction cannot be reassociated, so GCC keeps it in order).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "baselines.hpp"

namespace bench::loops {

#include "baseline_loops.inc"

// The textbook i-k-j loop (unit-stride inner loop, vectorised by GCC), no
// blocking: what a user writes without a library. Shown for scale only; the
// issue's matmul target is against Eigen.
void matmul(const double* __restrict a, const double* __restrict b, double* __restrict c, std::int64_t n) {
  std::memset(c, 0, sizeof(double) * n * n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
}

// A running sum, left to right (the order dyn::cumsum keeps).
void cumsum(const double* __restrict x, double* __restrict out, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) out[i] = s += x[i];
}

// The issue-16 kernels as a C++ user writes them. Inputs are assumed valid
// (indices in range, no NaNs): the hand loops check nothing, while dynstage
// clamps gather indices, drops out-of-range scatter updates and orders NaNs.

// CSR y = A x, one row at a time: the row's products summed in order.
void csr_matvec(const std::int32_t* __restrict row_ptr, const std::int32_t* __restrict cols,
                const double* __restrict vals, const double* __restrict x, double* __restrict y,
                std::int64_t rows) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int32_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) s += vals[k] * x[cols[k]];
    y[r] = s;
  }
}

// counts[bins[i]] += 1 (counts zeroed first: the output is the whole histogram).
void histogram(const std::int32_t* __restrict bins, std::int64_t n, std::int64_t* __restrict counts,
               std::int64_t nbins) {
  std::memset(counts, 0, sizeof(std::int64_t) * nbins);
  for (std::int64_t i = 0; i < n; ++i) ++counts[bins[i]];
}

// Index of the first largest element of each row.
void argmax_rows(const float* __restrict x, std::int32_t* __restrict out, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < cols; ++c)
      if (xr[c] > xr[best]) best = c;
    out[r] = static_cast<std::int32_t>(best);
  }
}

// A sorted copy: copy, then std::sort (introsort) in place.
// MurmurHash3's fmix32 of each element (issue 17): shifts, xors and wrapping
// multiplies of u32, which GCC vectorises.
void hash_u32(const std::uint32_t* __restrict x, std::uint32_t* __restrict out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t h = x[i];
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    out[i] = h;
  }
}

void sort_copy(const float* __restrict x, float* __restrict out, std::int64_t n) {
  std::memcpy(out, x, sizeof(float) * n);
  std::sort(out, out + n);
}

// Issue 17: the batched product of einsum("bij,bjk->bik"), the textbook
// i-k-j loop per batch (as matmul above, in f32).
void batched_matmul_f32(const float* __restrict a, const float* __restrict b, float* __restrict c, std::int64_t batch,
                        std::int64_t n) {
  std::memset(c, 0, sizeof(float) * batch * n * n);
  for (std::int64_t t = 0; t < batch; ++t) {
    const float* at = a + t * n * n;
    const float* bt = b + t * n * n;
    float* ct = c + t * n * n;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < n; ++k) {
        const float aik = at[i * n + k];
        for (std::int64_t j = 0; j < n; ++j) ct[i * n + j] += aik * bt[k * n + j];
      }
  }
}

// Issue 18 (baselines.hpp): the staged kernels' algorithms, written by hand.
void row_update(const double* __restrict x, double* __restrict out, std::int64_t n) {
  std::memcpy(out, x, sizeof(double) * n * n);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k) out[i * n + k] = out[i * n + k] * 0.5 + 1.0;
}

void conv2d_3x3(const float* __restrict img, const float* __restrict w, const float* __restrict b,
                float* __restrict out, std::int64_t nb, std::int64_t h, std::int64_t wd, std::int64_t c,
                std::int64_t nf) {
  const std::int64_t oh = h - 2, ow = wd - 2;
  for (std::int64_t n = 0; n < nb; ++n)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t x = 0; x < ow; ++x) {
        float* o = out + ((n * oh + y) * ow + x) * nf;
        for (std::int64_t f = 0; f < nf; ++f) o[f] = b[f];
        for (std::int64_t i = 0; i < 3; ++i)
          for (std::int64_t j = 0; j < 3; ++j) {
            const float* px = img + ((n * h + y + i) * wd + x + j) * c;
            const float* wij = w + (i * 3 + j) * c * nf;
            for (std::int64_t k = 0; k < c; ++k)
              for (std::int64_t f = 0; f < nf; ++f) o[f] += px[k] * wij[k * nf + f];  // vectorised over f
          }
      }
}

void cholesky_rows(const double* __restrict a, double* __restrict u, std::int64_t n) {
  std::memcpy(u, a, sizeof(double) * n * n);
  for (std::int64_t j = 0; j < n; ++j) {
    double* __restrict rj = u + j * n;
    const double d = std::sqrt(rj[j]);
    for (std::int64_t k = 0; k < n; ++k) rj[k] = k >= j ? rj[k] / d : 0.0;
    for (std::int64_t i = j + 1; i < n; ++i) {
      double* __restrict ri = u + i * n;
      const double f = rj[i];
      for (std::int64_t k = j; k < n; ++k) ri[k] -= f * rj[k];  // (rj is 0 left of j)
    }
  }
}

// Issue 24: per point, iterate until the first escape (no vector lanes wait
// for the slowest point, unlike an array program).
void mandelbrot(const double* __restrict re, const double* __restrict im, std::int32_t* __restrict counts,
                std::int64_t n, int iters) {
  for (std::int64_t p = 0; p < n; ++p) {
    const double cr = re[p], ci = im[p];
    double zr = 0, zi = 0;
    int k = 0;
    for (; k < iters && zr * zr + zi * zi <= 4.0; ++k) {
      const double t = zr * zr - zi * zi + cr;
      zi = 2 * zr * zi + ci;
      zr = t;
    }
    counts[p] = k;
  }
}

}  // namespace bench::loops
