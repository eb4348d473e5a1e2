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
//   gemm_scaled/jit            dyn::jit(matmul(alpha * A, B)), 1024 x 1024: the
//                              scaling computed in the GEMM's packing
//                              (llvm/lower_gemm_fusion.hpp)
//   gemm_scaled/jit_plain      dyn::jit(matmul(A, B)): the target, within 10%
//   gemm_scaled/jit_unfused    as /jit, compiled with detail::gemm_fusion() off
//                              (alpha * A materialised first: before)
//   gemm_thin/*                the same three at A 4000 x 4000, B 4000 x 32:
//                              a thin product, where the temporary of alpha * A
//                              (128 MB) is not small against the arithmetic
//   mlp_layer/jit, /eigen      relu(x @ W + b) (below); /jit_unfused: the
//                              bias and max a separate pass after the GEMM
// NumPy's forms are in numpy_baselines.py (gesummv/numpy*, scaled_matvec/numpy*).
// Each jitted result is checked against the hand-written loop before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>
#include <dynstage/llvm/fusion.hpp>  // detail::gemm_fusion()

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

// mlp_layer/*: relu(x @ W + b), batch 256, 1024 x 1024, f64 (issue 25's
// target: jit >= 0.9x Eigen's (x*W).rowwise() + b then the max, one thread).
constexpr i64 kBatch = 256, kWidth = 1024;
auto mlp_layer = [](auto x, auto w, auto b) { return dyn::maximum(dyn::matmul(x, w) + b, 0.0); };
const auto jit_mlp_layer = dyn::jit(mlp_layer);
struct MlpInputs {
  dyn::Array<double> x = filled({kBatch, kWidth}, 0.3), w = filled({kWidth, kWidth}, 0.9), b = filled({kWidth}, 2.1);
};
const MlpInputs& mlp_inputs() {
  static const MlpInputs in;
  return in;
}
void BM_mlp_layer_jit(benchmark::State& st) {
  const MlpInputs& in = mlp_inputs();
  std::vector<double> ref(static_cast<std::size_t>(kBatch * kWidth));
  bench::eigen::mlp_layer(in.x.data(), in.w.data(), in.b.data(), ref.data(), kBatch, kWidth, kWidth);
  const dyn::Array<double> got = jit_mlp_layer(in.x, in.w, in.b);
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::abs(got.data()[i] - ref[i]) <= 1e-9 * (1 + std::abs(ref[i])) * kWidth)) {
      st.SkipWithError("mlp_layer/jit differs from Eigen's");
      return;
    }
  for (auto _ : st) benchmark::DoNotOptimize(jit_mlp_layer(in.x, in.w, in.b));
  st.SetItemsProcessed(st.iterations() * 2 * kBatch * kWidth * kWidth);
}
void BM_mlp_layer_eigen(benchmark::State& st) {
  const MlpInputs& in = mlp_inputs();
  std::vector<double> out(static_cast<std::size_t>(kBatch * kWidth));
  for (auto _ : st) {
    bench::eigen::mlp_layer(in.x.data(), in.w.data(), in.b.data(), out.data(), kBatch, kWidth, kWidth);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * 2 * kBatch * kWidth * kWidth);
}

void BM_mlp_layer_jit_unfused(benchmark::State& st) {
  const MlpInputs& in = mlp_inputs();
  static const auto jf = dyn::jit(mlp_layer);
  dyn::detail::gemm_fusion().store(false);
  const dyn::Array<double> got = jf(in.x, in.w, in.b);  // compiled without the GEMM's epilogue
  dyn::detail::gemm_fusion().store(true);
  const dyn::Array<double> want = jit_mlp_layer(in.x, in.w, in.b);
  for (i64 i = 0; i < got.size(); ++i)
    if (!(std::abs(got.data()[i] - want.data()[i]) <= 1e-9 * (1 + std::abs(want.data()[i])) * kWidth)) {
      st.SkipWithError("mlp_layer/jit_unfused differs from mlp_layer/jit");
      return;
    }
  for (auto _ : st) benchmark::DoNotOptimize(jf(in.x, in.w, in.b));
  st.SetItemsProcessed(st.iterations() * 2 * kBatch * kWidth * kWidth);
}

// gemm_scaled/*: matmul(alpha * A, B) against matmul(A, B), f64, 1024 x 1024.
constexpr i64 kGemmN = 1024, kThinM = 4000, kThinN = 32;
struct GemmInputs {
  dyn::Array<double> A, B;
};
const GemmInputs& gemm_inputs(bool thin) {
  static const GemmInputs square{filled({kGemmN, kGemmN}, 0.5), filled({kGemmN, kGemmN}, 1.1)};
  static const GemmInputs narrow{filled({kThinM, kThinM}, 0.5), filled({kThinM, kThinN}, 1.1)};
  return thin ? narrow : square;
}
auto gemm_scaled = [](auto A, auto B) { return dyn::matmul(kAlpha * A, B); };
auto gemm_plain = [](auto A, auto B) { return dyn::matmul(A, B); };
template <class F>
void run_gemm(benchmark::State& st, const F& f, bool fused, bool thin = false) {
  const GemmInputs& in = gemm_inputs(thin);
  dyn::detail::gemm_fusion().store(fused);
  const dyn::Array<double> got = f(in.A, in.B);  // compiled here
  dyn::detail::gemm_fusion().store(true);
  static const auto reference = dyn::jit(gemm_plain);
  const dyn::Array<double> want = reference(in.A, in.B);
  const double scale = f(in.A, in.B).data()[0] / want.data()[0];  // alpha or 1
  for (i64 i = 0; i < got.size(); i += 97)
    if (!(std::abs(got.data()[i] - scale * want.data()[i]) <= 1e-9 * (1 + std::abs(want.data()[i])) * in.A.shape()[1])) {
      st.SkipWithError("gemm_scaled: a result differs from the plain product's");
      return;
    }
  for (auto _ : st) benchmark::DoNotOptimize(f(in.A, in.B));
  st.SetItemsProcessed(st.iterations() * 2 * in.A.shape()[0] * in.A.shape()[1] * in.B.shape()[1]);
}
void BM_gemm_scaled(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_scaled);
  run_gemm(st, jf, true);
}
void BM_gemm_plain(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_plain);
  run_gemm(st, jf, true);
}
void BM_gemm_scaled_unfused(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_scaled);
  run_gemm(st, jf, false);
}
void BM_thin_scaled(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_scaled);
  run_gemm(st, jf, true, true);
}
void BM_thin_plain(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_plain);
  run_gemm(st, jf, true, true);
}
void BM_thin_scaled_unfused(benchmark::State& st) {
  static const auto jf = dyn::jit(gemm_scaled);
  run_gemm(st, jf, false, true);
}

}  // namespace
BENCHMARK(BM_thin_scaled)->Name("gemm_thin/jit")->Arg(kThinM)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thin_plain)->Name("gemm_thin/jit_plain")->Arg(kThinM)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_thin_scaled_unfused)->Name("gemm_thin/jit_unfused")->Arg(kThinM)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm_scaled)->Name("gemm_scaled/jit")->Arg(kGemmN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm_plain)->Name("gemm_scaled/jit_plain")->Arg(kGemmN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gemm_scaled_unfused)->Name("gemm_scaled/jit_unfused")->Arg(kGemmN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mlp_layer_jit_unfused)->Name("mlp_layer/jit_unfused")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mlp_layer_jit)->Name("mlp_layer/jit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mlp_layer_eigen)->Name("mlp_layer/eigen")->Unit(benchmark::kMillisecond);
