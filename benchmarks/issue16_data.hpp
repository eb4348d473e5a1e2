// dynstage benchmarks: the inputs of the issue-16 kernels (CSR matvec,
// histogram, argmax over rows, sort), generated once per process and shared
// by the hand-loop benchmarks (bench_main.cpp) and the dynstage ones
// (bench_issue16.cpp), so both time the same data. Shapes and dtypes come
// from bench_sizes.hpp, which numpy_baselines.py reads too.
#pragma once

#include <dynstage/core.hpp>

#include <cstdint>
#include <random>

#include "bench_sizes.hpp"

namespace bench::data {

template <class T>
dyn::Array<T> uniform_real(std::vector<std::int64_t> shape, std::uint64_t seed) {
  dyn::Array<T> a(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<T> dist(-4, 4);
  T* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = dist(rng);
  return a;
}

inline dyn::Array<std::int32_t> uniform_index(std::int64_t n, std::int64_t bound, std::uint64_t seed) {
  dyn::Array<std::int32_t> a({n});
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, static_cast<std::int32_t>(bound - 1));
  std::int32_t* p = a.mutable_data();
  for (std::int64_t i = 0; i < n; ++i) p[i] = dist(rng);
  return a;
}

// A rows x rows CSR matrix with exactly k nonzeros per row (see bench_sizes.hpp).
struct Csr {
  std::int64_t rows = 0, nnz = 0;
  dyn::Array<std::int32_t> row_ptr;    // i32[rows + 1]: row r is [row_ptr[r], row_ptr[r + 1])
  dyn::Array<std::int32_t> row_of_nz;  // i32[nnz]: the row of each nonzero (the scatter-add form)
  dyn::Array<std::int32_t> cols;       // i32[nnz]
  dyn::Array<double> vals;             // f64[nnz]
  dyn::Array<double> x;                // f64[rows]
};

inline const Csr& csr() {
  static const Csr m = [] {
    Csr c;
    c.rows = sizes::csr_rows;
    const std::int64_t k = sizes::csr_nnz_per_row;
    c.nnz = c.rows * k;
    c.row_ptr = dyn::Array<std::int32_t>({c.rows + 1});
    c.row_of_nz = dyn::Array<std::int32_t>({c.nnz});
    std::int32_t* rp = c.row_ptr.mutable_data();
    std::int32_t* rn = c.row_of_nz.mutable_data();
    for (std::int64_t r = 0; r <= c.rows; ++r) rp[r] = static_cast<std::int32_t>(r * k);
    for (std::int64_t i = 0; i < c.nnz; ++i) rn[i] = static_cast<std::int32_t>(i / k);
    c.cols = uniform_index(c.nnz, c.rows, 15);
    c.vals = uniform_real<double>({c.nnz}, 16);
    c.x = uniform_real<double>({c.rows}, 17);
    return c;
  }();
  return m;
}

inline const dyn::Array<std::int32_t>& hist_bins() {
  static const auto a = uniform_index(sizes::hist_samples, sizes::hist_bins, 18);
  return a;
}

inline const dyn::Array<float>& argmax_matrix() {
  static const auto a = uniform_real<float>({sizes::argmax_n, sizes::argmax_n}, 19);
  return a;
}

inline const dyn::Array<float>& sort_input() {
  static const auto a = uniform_real<float>({sizes::sort_n}, 20);
  return a;
}

}  // namespace bench::data
