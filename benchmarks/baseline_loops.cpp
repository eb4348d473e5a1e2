// Hand-written baseline loops, compiled -O3 -march=native (strict IEEE: the
// sum-of-squares reduction cannot be reassociated, so GCC keeps it in order).
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

}  // namespace bench::loops
