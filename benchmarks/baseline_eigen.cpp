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

double mlp_loss(const double* x, const double* w1, const double* w2, const double* y, std::int64_t batch,
                std::int64_t width) {
  Eigen::Map<const MatM> X(x, batch, width), W1(w1, width, width), W2(w2, width, width), Y(y, batch, width);
  const MatM h = (X * W1).array().tanh().matrix();
  return ((h * W2) - Y).squaredNorm() / static_cast<double>(batch * width);
}

double mlp_grad(const double* x, const double* w1, const double* w2, const double* y, double* g1, double* g2,
                std::int64_t batch, std::int64_t width) {
  Eigen::Map<const MatM> X(x, batch, width), W1(w1, width, width), W2(w2, width, width), Y(y, batch, width);
  Eigen::Map<MatM> G1(g1, width, width), G2(g2, width, width);
  const MatM h = (X * W1).array().tanh().matrix();
  const MatM dz = ((h * W2) - Y) * (2.0 / static_cast<double>(batch * width));  // d loss / d (h w2)
  G2.noalias() = h.transpose() * dz;
  const MatM da = ((dz * W2.transpose()).array() * (1.0 - h.array().square())).matrix();  // through tanh
  G1.noalias() = X.transpose() * da;
  return dz.squaredNorm();
}

// Issue 25: relu(x W + b) as an Eigen user writes it: the product, the bias
// broadcast over the rows, then the max with 0.
void mlp_layer(const double* x, const double* w, const double* b, double* out, std::int64_t batch, std::int64_t in,
               std::int64_t width) {
  Eigen::Map<const MatM> X(x, batch, in), W(w, in, width);
  Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>> B(b, width);
  Eigen::Map<MatM> O(out, batch, width);
  O.noalias() = X * W;
  O.rowwise() += B;
  O = O.cwiseMax(0.0);
}

}  // namespace bench::eigen
