// dynstage benchmarks of issue 20: the three dot_general forms of an MLP's
// gradient, jitted alone, f64 (the shapes of bench_issue20.cpp's backward
// pass; each is 256 * 512 * 512 multiply-adds):
//   nn  x w      (256x512) . (512x512), contracting ([1], [0]): the forward GEMM
//   nt  x w^T    (256x512) . (512x512), contracting ([1], [1]): dz w2^T
//   tn  x^T y    (256x512) . (256x512), contracting ([0], [0]): h^T dz, x^T da
// Each on 1 and 2 threads (the arg; dyn::set_num_threads). The transposed
// forms must cost no more than the plain one: the GEMM routine packs the
// operand from its stored layout (llvm/lower_dot.hpp), no transpose is
// materialised. Every form is checked against eager before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using i64 = std::int64_t;
constexpr i64 kRows = 256, kWidth = 512;

auto nn_fn = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {0}}); };
auto nt_fn = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {1}}); };
auto tn_fn = [](auto a, auto b) { return dyn::dot_general(a, b, {{0}, {0}}); };
const auto jit_nn = dyn::jit(nn_fn);
const auto jit_nt = dyn::jit(nt_fn);
const auto jit_tn = dyn::jit(tn_fn);

dyn::Array<double> filled(i64 rows, i64 cols, double phase) {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.37 * static_cast<double>(k) + phase);
  return dyn::Array<double>({rows, cols}, v);
}
struct Inputs {
  dyn::Array<double> x = filled(kRows, kWidth, 1.3), w = filled(kWidth, kWidth, 0.1), y = filled(kRows, kWidth, 2.9);
};
const Inputs& inputs() {
  static const Inputs in;
  return in;
}

template <class Jit, class Fn>
void run(benchmark::State& st, const char* what, const Jit& jf, const Fn& f, const dyn::Array<double>& a,
         const dyn::Array<double>& b) {
  const int saved = dyn::num_threads();
  dyn::set_num_threads(static_cast<int>(st.range(0)));
  {
    const dyn::Array<double> got = jf(a, b), want = f(a, b);
    for (i64 i = 0; i < want.size(); ++i)
      if (!(std::abs(got.data()[i] - want.data()[i]) <= 1e-12 * (1 + std::abs(want.data()[i])))) {
        const std::string err = std::string(what) + ": element " + std::to_string(i) + " is " +
                                std::to_string(got.data()[i]) + ", eager " + std::to_string(want.data()[i]);
        st.SkipWithError(err.c_str());
        dyn::set_num_threads(saved);
        return;
      }
  }
  for (auto _ : st) {
    auto r = jf(a, b);
    benchmark::DoNotOptimize(r.data());
  }
  st.SetItemsProcessed(st.iterations() * kRows * kWidth * kWidth);  // multiply-adds
  dyn::set_num_threads(saved);
}

void BM_nn(benchmark::State& st) { run(st, "dot_forms/nn", jit_nn, nn_fn, inputs().x, inputs().w); }
void BM_nt(benchmark::State& st) { run(st, "dot_forms/nt", jit_nt, nt_fn, inputs().x, inputs().w); }
void BM_tn(benchmark::State& st) { run(st, "dot_forms/tn", jit_tn, tn_fn, inputs().x, inputs().y); }

// Names "case/variant/arg" (arg: the thread count), as the other suites'.
BENCHMARK(BM_nn)->Name("dot_forms/nn")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_nt)->Name("dot_forms/nt")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_tn)->Name("dot_forms/tn")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace
