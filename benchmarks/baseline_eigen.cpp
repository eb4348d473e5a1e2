// Eigen 3 baselines, -O3 -march=native (no -ffast-math, no OpenMP: one
// thread, like the JIT's kernels). Array expressions over Eigen::Map of the
// caller's buffers, so nothing is copied in or out.
// GCC 12 at -march=native (AVX-512) reports a false -Wmaybe-uninitialized
// inside Eigen's packet transposes (an intrinsic's deliberately undefined
// operand, _mm256_undefined_pd), dozens of times; it is not ours to fix.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Dense>

#include "baselines.hpp"

namespace bench::eigen {

using Vec = Eigen::Array<double, Eigen::Dynamic, 1>;
using Mat = Eigen::Array<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatM = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void fused(const double* x, const double* y, double* out, std::int64_t n) {
  Eigen::Map<const Vec> X(x, n), Y(y, n);
  Eigen::Map<Vec> O(out, n);
  O = X.sin() * 2.0 + X * Y;
}

double sum_squares(const double* x, std::int64_t n) {
  Eigen::Map<const Vec> X(x, n);
  return X.square().sum();
}

void softmax_rows(const double* x, double* out, std::int64_t rows, std::int64_t cols) {
  Eigen::Map<const Mat> X(x, rows, cols);
  Eigen::Map<Mat> O(out, rows, cols);
  O = (X.colwise() - X.rowwise().maxCoeff()).exp();
  O.colwise() /= O.rowwise().sum();
}

void matmul(const double* a, const double* b, double* c, std::int64_t n) {
  Eigen::Map<const MatM> A(a, n, n), B(b, n, n);
  Eigen::Map<MatM> C(c, n, n);
  C.noalias() = A * B;
}

void batched_matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t n) {
  using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  for (std::int64_t t = 0; t < batch; ++t) {
    Eigen::Map<const MatF> A(a + t * n * n, n, n), B(b + t * n * n, n, n);
    Eigen::Map<MatF> C(c + t * n * n, n, n);
    C.noalias() = A * B;
  }
}

}  // namespace bench::eigen
