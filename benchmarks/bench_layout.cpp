// dynstage benchmarks of issue 25, item 2: layout changes read through as
// index maps instead of copied. f64; each jitted result is checked against
// the hand-written loop (or eager) before timing:
//   layout_sum/jit       sum(transpose(reshape(x, {m, n})) * y), x (n*m), y (n, m)
//   layout_sum/loops     the hand-written loop (baseline_loops.inc, -O3 -march=native)
//   gemv_t/jit           matmul(transpose(A), x), A (n, n): A^T read where stored
//   gemv_t/jit_stored    matmul(At, x), At = A^T stored (the plain product)
//   gemv_t/loops         the hand-written A^T x (an axpy per row of A; baseline_loops.inc)
//   gemm_tn/jit          matmul(transpose(A), B), A, B (n, n)
//   gemm_tn/jit_stored   matmul(At, B), At = A^T stored
//   rows_gemm/jit        matmul(slice(X, {r0, 0}, {r0 + n, n}), W): a row block
//   rows_gemm/jit_stored matmul(Xr, W), Xr that block stored
// Before this change the transposes and the slice were copied into a
// temporary before each product; the `_stored` variants are the target.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baselines.hpp"

namespace {

using i64 = std::int64_t;
constexpr i64 kSum = 2048;   // layout_sum: (kSum, kSum)
constexpr i64 kGemv = 3000;  // gemv_t: A (kGemv, kGemv)
constexpr i64 kGemm = 512;   // gemm_tn, rows_gemm

dyn::Array<double> filled(std::vector<i64> shape, double phase) {
  dyn::Array<double> a(shape);
  double* p = a.mutable_data();
  for (i64 k = 0; k < a.size(); ++k) p[k] = 4.0 * std::sin(0.37 * static_cast<double>(k) + phase);
  return a;
}

bool near(benchmark::State& st, const char* what, const double* got, const double* want, i64 n, double tol) {
  for (i64 i = 0; i < n; ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])))) {
      const std::string err = std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                              ", expected " + std::to_string(want[i]);
      st.SkipWithError(err.c_str());
      return false;
    }
  return true;
}

// --- layout_sum ------------------------------------------------------------

const auto jit_sum = dyn::jit([](auto x, auto y) {
  return dyn::sum(dyn::transpose(dyn::reshape(x, {kSum, kSum}), {1, 0}) * y);
});
void BM_sum_jit(benchmark::State& st) {
  const auto x = filled({kSum * kSum}, 0.1), y = filled({kSum, kSum}, 0.2);
  const double want = bench::loops::layout_sum(x.data(), y.data(), kSum);
  const double got = jit_sum(x, y)();
  if (!near(st, "layout_sum/jit", &got, &want, 1, 1e-9)) return;
  for (auto _ : st) benchmark::DoNotOptimize(jit_sum(x, y)());
}
void BM_sum_loops(benchmark::State& st) {
  const auto x = filled({kSum * kSum}, 0.1), y = filled({kSum, kSum}, 0.2);
  for (auto _ : st) benchmark::DoNotOptimize(bench::loops::layout_sum(x.data(), y.data(), kSum));
}

// --- gemv_t ------------------------------------------------------------------

const auto jit_gemv_t = dyn::jit([](auto A, auto x) { return dyn::matmul(dyn::transpose(A, {1, 0}), x); });
const auto jit_gemv = dyn::jit([](auto At, auto x) { return dyn::matmul(At, x); });
struct GemvIn {
  dyn::Array<double> A = filled({kGemv, kGemv}, 0.3), x = filled({kGemv}, 0.4);
  dyn::Array<double> At = dyn::eager([](auto A) { return dyn::transpose(A, {1, 0}); })(A);
  std::vector<double> want = [this] {
    std::vector<double> y(static_cast<std::size_t>(kGemv));
    bench::loops::gemv_t(A.data(), x.data(), y.data(), kGemv);
    return y;
  }();
};
const GemvIn& gemv_in() {
  static const GemvIn in;
  return in;
}
void BM_gemv_t_jit(benchmark::State& st) {
  const GemvIn& in = gemv_in();
  if (!near(st, "gemv_t/jit", jit_gemv_t(in.A, in.x).data(), in.want.data(), kGemv, 1e-9)) return;
  for (auto _ : st) {
    auto y = jit_gemv_t(in.A, in.x);
    benchmark::DoNotOptimize(y.data());
  }
}
void BM_gemv_t_stored(benchmark::State& st) {
  const GemvIn& in = gemv_in();
  if (!near(st, "gemv_t/jit_stored", jit_gemv(in.At, in.x).data(), in.want.data(), kGemv, 1e-9)) return;
  for (auto _ : st) {
    auto y = jit_gemv(in.At, in.x);
    benchmark::DoNotOptimize(y.data());
  }
}
void BM_gemv_t_loops(benchmark::State& st) {
  const GemvIn& in = gemv_in();
  std::vector<double> y(static_cast<std::size_t>(kGemv));
  for (auto _ : st) {
    bench::loops::gemv_t(in.A.data(), in.x.data(), y.data(), kGemv);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}

// --- gemm_tn, rows_gemm ------------------------------------------------------

const auto jit_tn = dyn::jit([](auto A, auto B) { return dyn::matmul(dyn::transpose(A, {1, 0}), B); });
const auto jit_nn = dyn::jit([](auto A, auto B) { return dyn::matmul(A, B); });
const auto jit_rows = dyn::jit([](auto X, auto W) { return dyn::matmul(dyn::slice(X, {kGemm, 0}, {2 * kGemm, kGemm}), W); });
struct GemmIn {
  dyn::Array<double> A = filled({kGemm, kGemm}, 0.5), B = filled({kGemm, kGemm}, 0.6), X = filled({3 * kGemm, kGemm}, 0.7);
  dyn::Array<double> At = dyn::eager([](auto A) { return dyn::transpose(A, {1, 0}); })(A);
  dyn::Array<double> Xr = dyn::eager([](auto X) { return dyn::slice(X, {kGemm, 0}, {2 * kGemm, kGemm}); })(X);
};
const GemmIn& gemm_in() {
  static const GemmIn in;
  return in;
}
template <class F>
void run_gemm(benchmark::State& st, const char* what, const F& f, const dyn::Array<double>& a, const dyn::Array<double>& b,
              const dyn::Array<double>& want_a) {
  const auto want = dyn::eager([](auto a, auto b) { return dyn::matmul(a, b); })(want_a, b);
  if (!near(st, what, f(a, b).data(), want.data(), kGemm * kGemm, 1e-9)) return;
  for (auto _ : st) {
    auto c = f(a, b);
    benchmark::DoNotOptimize(c.data());
  }
}
void BM_tn_jit(benchmark::State& st) { run_gemm(st, "gemm_tn/jit", jit_tn, gemm_in().A, gemm_in().B, gemm_in().At); }
void BM_tn_stored(benchmark::State& st) { run_gemm(st, "gemm_tn/jit_stored", jit_nn, gemm_in().At, gemm_in().B, gemm_in().At); }
void BM_rows_jit(benchmark::State& st) { run_gemm(st, "rows_gemm/jit", jit_rows, gemm_in().X, gemm_in().B, gemm_in().Xr); }
void BM_rows_stored(benchmark::State& st) { run_gemm(st, "rows_gemm/jit_stored", jit_nn, gemm_in().Xr, gemm_in().B, gemm_in().Xr); }

BENCHMARK(BM_sum_jit)->Name("layout_sum/jit")->Arg(kSum)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sum_loops)->Name("layout_sum/loops")->Arg(kSum)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemv_t_jit)->Name("gemv_t/jit")->Arg(kGemv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemv_t_stored)->Name("gemv_t/jit_stored")->Arg(kGemv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemv_t_loops)->Name("gemv_t/loops")->Arg(kGemv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tn_jit)->Name("gemm_tn/jit")->Arg(kGemm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tn_stored)->Name("gemm_tn/jit_stored")->Arg(kGemm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rows_jit)->Name("rows_gemm/jit")->Arg(kGemm)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rows_stored)->Name("rows_gemm/jit_stored")->Arg(kGemm)->Unit(benchmark::kMillisecond);

}  // namespace
