// Eigen's GEMM on several threads (issue 19: dyn::jit's matmul against Eigen
// with the same number of threads). Eigen parallelises its products with
// OpenMP only, so this TU alone is built with -fopenmp (benchmarks/meson.build).
#include <Eigen/Core>

#include <cstdint>

#include "baselines.hpp"

namespace bench::eigen {

void matmul_threads(const double* a, const double* b, double* c, std::int64_t n, int threads) {
  using M = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::setNbThreads(threads);
  Eigen::Map<const M> A(a, n, n), B(b, n, n);
  Eigen::Map<M> C(c, n, n);
  C.noalias() = A * B;
}

}  // namespace bench::eigen
