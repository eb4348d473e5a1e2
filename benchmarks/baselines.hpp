// dynstage benchmarks: the baselines' plain-function interface.
//
// Every baseline lives in its own translation unit so it gets its own flags
// (-O3 -march=native; the same with -ffast-math; Eigen at -O3 -march=native)
// while bench_main.cpp, which includes dynstage, builds at -O2. Only plain
// pointers and sizes cross this boundary, so no inline code compiled with one
// set of flags is ever used from a TU compiled with another (an ODR trap with
// -ffast-math). All outputs are caller-preallocated; row-major throughout.
#pragma once

#include <cstdint>

namespace bench {

// Hand-written loops, -O3 -march=native (baseline_loops.cpp).
namespace loops {
void fused(const double* x, const double* y, double* out, std::int64_t n);  // out = sin(x)*2 + x*y
double sum_squares(const double* x, std::int64_t n);
void softmax_rows(const double* x, double* out, std::int64_t rows, std::int64_t cols);
void matmul(const double* a, const double* b, double* c, std::int64_t n);  // c = a @ b, n x n, i-k-j order
void affine_loop(const double* x, double* out, std::int64_t n, std::int64_t iters);  // iters x (out = out*0.5 + 1)
void cumsum(const double* x, double* out, std::int64_t n);  // out[i] = x[0] + ... + x[i], in order
// Issue 16 (sizes and data: bench_sizes.hpp).
void csr_matvec(const std::int32_t* row_ptr, const std::int32_t* cols, const double* vals, const double* x,
                double* y, std::int64_t rows);  // y = A x, A in CSR form
void histogram(const std::int32_t* bins, std::int64_t n, std::int64_t* counts, std::int64_t nbins);
void argmax_rows(const float* x, std::int32_t* out, std::int64_t rows, std::int64_t cols);  // first occurrence
void sort_copy(const float* x, float* out, std::int64_t n);  // out = x sorted ascending
// Issue 17: MurmurHash3's 32-bit finaliser (fmix32) of each element.
void hash_u32(const std::uint32_t* x, std::uint32_t* out, std::int64_t n);
// Issue 17: c[b] = a[b] @ b[b] for `batch` n x n f32 matrices, i-k-j order.
void batched_matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t n);
// Issue 18: loops that update an n x n f64 array row by row, in place.
// out = x, then row i = row i * 0.5 + 1 for every i.
void row_update(const double* x, double* out, std::int64_t n);
// Cholesky, right-looking by rows (bench_issue18.cpp has the same algorithm
// staged): u = a, then for each j: row j /= sqrt(u[j][j]) (zeros left of the
// diagonal), and row i -= u[j][i] * row j for every i > j (from column j on:
// the staged kernel updates whole rows, whose part left of j is 0 - 0). u is
// upper triangular with u^T u = a.
void cholesky_rows(const double* a, double* u, std::int64_t n);
// Issue 18: a 3x3 convolution with bias, valid padding, NHWC f32:
// out[n, y, x, f] = b[f] + sum_{i, j, c} img[n, y + i, x + j, c] w[i, j, c, f],
// img (nb, h, wd, c), w (3, 3, c, nf), out (nb, h - 2, wd - 2, nf).
void conv2d_3x3(const float* img, const float* w, const float* b, float* out, std::int64_t nb, std::int64_t h,
                std::int64_t wd, std::int64_t c, std::int64_t nf);
// Issue 25: gesummv, y = alpha A x + beta B x (A, B n x n, one pass over both).
void gesummv(const double* a, const double* b, const double* x, double alpha, double beta, double* y, std::int64_t n);
// Issue 24: Mandelbrot escape counts of the n points c = re + i im: for each,
// the number of the `iters` iterations z <- z*z + c (from z = 0) at whose
// start |z| <= 2, written as C programmers do (|z|^2 <= 4, leaving the
// point's loop at its first escape).
void mandelbrot(const double* re, const double* im, std::int32_t* counts, std::int64_t n, int iters);
}  // namespace loops

// The same loops (same source) with -O3 -march=native -ffast-math (baseline_fastmath.cpp).
namespace fastmath {
void fused(const double* x, const double* y, double* out, std::int64_t n);
double sum_squares(const double* x, std::int64_t n);
void softmax_rows(const double* x, double* out, std::int64_t rows, std::int64_t cols);
void affine_loop(const double* x, double* out, std::int64_t n, std::int64_t iters);
void gesummv(const double* a, const double* b, const double* x, double alpha, double beta, double* y, std::int64_t n);
}  // namespace fastmath

// Eigen 3 expressions over Eigen::Map of the same buffers (baseline_eigen.cpp).
namespace eigen {
void fused(const double* x, const double* y, double* out, std::int64_t n);
double sum_squares(const double* x, std::int64_t n);
void softmax_rows(const double* x, double* out, std::int64_t rows, std::int64_t cols);
void matmul(const double* a, const double* b, double* c, std::int64_t n);
void batched_matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t n);  // GEMM per batch
// Issue 20: the loss mean((tanh(x w1) w2 - y)^2) of a two-layer MLP (x: batch x
// width, w1, w2: width x width) and its gradient with respect to w1 and w2,
// written by hand (the backward pass of the chain rule, four GEMMs).
double mlp_loss(const double* x, const double* w1, const double* w2, const double* y, std::int64_t batch,
                std::int64_t width);
double mlp_grad(const double* x, const double* w1, const double* w2, const double* y, double* g1, double* g2,
                std::int64_t batch, std::int64_t width);
// Issue 25: out = max((x w).rowwise() + b, 0), x batch x in, w in x width, b width.
void mlp_layer(const double* x, const double* w, const double* b, double* out, std::int64_t batch, std::int64_t in,
               std::int64_t width);
// Issue 19: the same GEMM on `threads` OpenMP threads (baseline_eigen_threads.cpp).
void matmul_threads(const double* a, const double* b, double* c, std::int64_t n, int threads);
}  // namespace eigen

}  // namespace bench
