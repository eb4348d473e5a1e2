// dynstage benchmarks: the problem sizes, written down once.
//
// bench_main.cpp registers its benchmarks with these sizes, and
// benchmarks/numpy_baselines.py reads this file (every line of the form
// `constexpr <type> <name> = <integer or {integers}>;`) to time NumPy on the
// same shapes and dtypes. Keep that one-line form; the Python side parses it.
//
// Data (both sides; generated independently, so the values differ but not
// their distributions): floats uniform in [-4, 4]; indices uniform over their
// range; fixed seeds.
#pragma once

#include <array>
#include <cstdint>

namespace bench::sizes {

// Fused elementwise sin(x)*2 + x*y (f64), element counts.
constexpr std::array<std::int64_t, 3> fused_n = {1000, 100000, 10000000};
// Sum of squares (f64), element counts.
constexpr std::array<std::int64_t, 2> sumsq_n = {100000, 10000000};
// Softmax over the rows of an n x n matrix (f64).
constexpr std::array<std::int64_t, 1> softmax_n = {1000};
// Matmul n x n @ n x n (f64).
constexpr std::array<std::int64_t, 2> matmul_n = {256, 512};

// Issue 16 kernels.
// Running sum of n doubles (f64).
constexpr std::int64_t cumsum_n = 10000000;
// CSR sparse matrix-vector product y = A x: A is csr_rows x csr_rows with
// exactly csr_nnz_per_row nonzeros per row (f64 values) at uniformly random
// columns (i32, unsorted within a row, repeats allowed), x f64[csr_rows];
// row_ptr i32[csr_rows + 1] = 0, k, 2k, ...
constexpr std::int64_t csr_rows = 100000;
constexpr std::int64_t csr_nnz_per_row = 10;
// Histogram by scatter-add: counts[bins[i]] += 1 for hist_samples bin
// indices (i32, uniform in [0, hist_bins)); counts i64[hist_bins].
constexpr std::int64_t hist_samples = 10000000;
constexpr std::int64_t hist_bins = 1000;
// argmax along axis 1 of an argmax_n x argmax_n f32 matrix (first occurrence).
constexpr std::int64_t argmax_n = 1000;
// Sort of sort_n f32 (ascending, into a new array).
constexpr std::int64_t sort_n = 1000000;

// Issue 17: MurmurHash3's 32-bit finaliser (fmix32) of hash_n u32 (uniform
// over all 2^32 values), into a new u32 array.
constexpr std::int64_t hash_n = 10000000;
// Issue 17: einsum "bij,bjk->bik" of two f32 arrays (einsum_batch, einsum_n,
// einsum_n): a batched matrix product.
constexpr std::int64_t einsum_batch = 64;
constexpr std::int64_t einsum_n = 128;
// Issue 25: gesummv, y = alpha A x + beta B x with A, B gesummv_n x gesummv_n
// f64 (alpha 1.5, beta 1.2), and matmul(alpha A, x) against matmul(A, x).
constexpr std::int64_t gesummv_n = 4000;

}  // namespace bench::sizes
