// dynstage benchmarks of issue 25: an elementwise producer of a
// matrix-vector product's matrix, fused into the product (llvm/fusion.hpp,
// canonicalize.hpp's dot_fuses_lhs). f64, n = gesummv_n (bench_sizes.hpp):
//   scaled_matvec/jit          dyn::jit(matmul(alpha * A, x))
//   scaled_matvec/jit_plain    dyn::jit(matmul(A, x)): the target, within 10%
//   scaled_matvec/jit_post     dyn::jit(alpha * matmul(A, x))
//   gesummv/jit                alpha * matmul(A, x) + beta * matmul(B, x)
//   gesummv/jit_scaled         matmul(alpha * A, x) + matmul(beta * B, x)
//   gesummv/loops, /fastmath   the hand-written loop (baseline_loops.inc):
//                              one pass over A and B, -O3 -march=native,
//                              strict IEEE and -ffast-math
// NumPy's forms are in numpy_baselines.py (gesummv/numpy*, scaled_matvec/numpy*).
// Each jitted result is checked against the hand-written loop before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_sizes.hpp"

namespace {

using i64 = std::int64_t;
constexpr i64 kN = bench::sizes::gesummv_n;
constexpr double kAlpha = 1.5, kBeta = 1.2;

dyn::Array<double> filled(std::vector<i64> shape, double phase) {
  dyn::Array<double> a(shape);
  double* p = a.mutable_data();
  for (i64 k = 0; k < a.size(); ++k) p[k] = 4.0 * std::sin(0.37 * static_cast<double>(k) + phase);
  return a;
}
struct Inputs {
  dyn::Array<double> A = filled({kN, kN}, 0.1), B = filled({kN, kN}, 0.7), x = filled({kN}, 1.3);
};
const Inputs& inputs() {
  static const Inputs in;
  return in;
}

const auto jit_scaled = dyn::jit([](auto A, auto x) { return dyn::matmul(kAlpha * A, x); });
const auto jit_plain = dyn::jit([](auto A, auto x) { return dyn::matmul(A, x); });
const auto jit_post = dyn::jit([](auto A, auto x) { return kAlpha * dyn::matmul(A, x); });
const auto jit_gesummv =
    dyn::jit([](auto A, auto B, auto x) { return kAlpha * dyn::matmul(A, x) + kBeta * dyn::matmul(B, x); });
const auto jit_gesummv_scaled =
    dyn::jit([](auto A, auto B, auto x) { return dyn::matmul(kAlpha * A, x) + dyn::matmul(kBeta * B, x); });

// Within the dot products' rounding of the hand-written loop's result (the
// loop sums in order; the kernel reassociates).
bool matches(benchmark::State& st, const char* what, const dyn::Array<double>& got, double alpha, double beta) {
  const Inputs& in = inputs();
  std::vector<double> ref(static_cast<std::size_t>(kN));
  bench::loops::gesummv(in.A.data(), in.B.data(), in.x.data(), alpha, beta, ref.data(), kN);
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::abs(got.data()[i] - ref[i]) <= 1e-9 * (1 + std::abs(ref[i])) * kN)) {
      const std::string err = std::string(what) + ": element " + std::to_string(i) + " is " +
                              std::to_string(got.data()[i]) + ", the hand-written loop's " + std::to_string(ref[i]);
      st.SkipWithError(err.c_str());
      return false;
    }
  return true;
}

template <class F>
void run_matvec(benchmark::State& st, const F& f, const char* what, double alpha) {
  const Inputs& in = inputs();
  if (!matches(st, what, f(in.A, in.x), alpha, 0.0)) return;
  for (auto _ : st) {
    auto y = f(in.A, in.x);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * kN * kN);
}
void BM_scaled(benchmark::State& st) { run_matvec(st, jit_scaled, "scaled_matvec/jit", kAlpha); }
void BM_plain(benchmark::State& st) { run_matvec(st, jit_plain, "scaled_matvec/jit_plain", 1.0); }
void BM_post(benchmark::State& st) { run_matvec(st, jit_post, "scaled_matvec/jit_post", kAlpha); }

template <class F>
void run_gesummv(benchmark::State& st, const F& f, const char* what) {
  const Inputs& in = inputs();
  if (!matches(st, what, f(in.A, in.B, in.x), kAlpha, kBeta)) return;
  for (auto _ : st) {
    auto y = f(in.A, in.B, in.x);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * 2 * kN * kN);
}
void BM_gesummv(benchmark::State& st) { run_gesummv(st, jit_gesummv, "gesummv/jit"); }
void BM_gesummv_scaled(benchmark::State& st) { run_gesummv(st, jit_gesummv_scaled, "gesummv/jit_scaled"); }

template <class Loop>
void run_loop(benchmark::State& st, Loop loop) {
  const Inputs& in = inputs();
  std::vector<double> y(static_cast<std::size_t>(kN));
  for (auto _ : st) {
    loop(in.A.data(), in.B.data(), in.x.data(), kAlpha, kBeta, y.data(), kN);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * 2 * kN * kN);
}
void BM_loops(benchmark::State& st) { run_loop(st, bench::loops::gesummv); }
void BM_fastmath(benchmark::State& st) { run_loop(st, bench::fastmath::gesummv); }

// Names "case/variant/arg" (arg: n), as the other suites'.
BENCHMARK(BM_scaled)->Name("scaled_matvec/jit")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_plain)->Name("scaled_matvec/jit_plain")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_post)->Name("scaled_matvec/jit_post")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gesummv)->Name("gesummv/jit")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gesummv_scaled)->Name("gesummv/jit_scaled")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_loops)->Name("gesummv/loops")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fastmath)->Name("gesummv/fastmath")->Arg(kN)->Unit(benchmark::kMillisecond);

}  // namespace
