// dynstage benchmarks of issue 20: reverse mode. grad_mlp/*: the loss
// mean((tanh(x w1) w2 - y)^2) of a two-layer MLP, batch 256, width 512, f64:
//   jit_loss  dyn::jit(loss): the forward pass alone
//   jit_grad  dyn::jit(dyn::grad(loss, argnums<0, 1>)): forward and backward
//             in one compiled kernel (target: <= 3x jit_loss)
//   eigen     the gradient written by hand with Eigen (baseline_eigen.cpp,
//             -O3 -march=native; target: jit_grad within 1.5x of it)
//   eager     dyn::grad on dyn::Array, no jit
// The jitted gradient is checked against the hand-written one before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "baselines.hpp"

namespace {

using i64 = std::int64_t;
constexpr i64 kBatch = 256, kWidth = 512;

auto mlp_loss = [](auto w1, auto w2, auto x, auto y) {
  auto h = dyn::tanh(dyn::matmul(x, w1));
  return dyn::mean(dyn::square(dyn::matmul(h, w2) - y));
};
auto mlp_grad = dyn::grad(mlp_loss, dyn::argnums<0, 1>{});
const auto jit_loss = dyn::jit(mlp_loss);
const auto jit_grad = dyn::jit(mlp_grad);

dyn::Array<double> filled(i64 rows, i64 cols, double phase, double scale) {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = scale * std::sin(0.37 * static_cast<double>(k) + phase);
  return dyn::Array<double>({rows, cols}, v);
}
struct Inputs {
  dyn::Array<double> w1 = filled(kWidth, kWidth, 0.1, 0.05), w2 = filled(kWidth, kWidth, 0.7, 0.05);
  dyn::Array<double> x = filled(kBatch, kWidth, 1.3, 1.0), y = filled(kBatch, kWidth, 2.9, 0.5);
};
const Inputs& inputs() {
  static const Inputs in;
  return in;
}

bool matches(benchmark::State& st, const char* what, const dyn::Array<double>& g1, const dyn::Array<double>& g2) {
  const Inputs& in = inputs();
  std::vector<double> r1(static_cast<std::size_t>(kWidth * kWidth)), r2(r1.size());
  bench::eigen::mlp_grad(in.x.data(), in.w1.data(), in.w2.data(), in.y.data(), r1.data(), r2.data(), kBatch, kWidth);
  for (const auto& [got, ref] : {std::pair{&g1, &r1}, std::pair{&g2, &r2}})
    for (std::size_t i = 0; i < ref->size(); ++i)
      if (!(std::abs(got->data()[i] - (*ref)[i]) <= 1e-9 * (1 + std::abs((*ref)[i])))) {
        const std::string err = std::string(what) + ": gradient element " + std::to_string(i) + " is " +
                                std::to_string(got->data()[i]) + ", the hand-written one " + std::to_string((*ref)[i]);
        st.SkipWithError(err.c_str());
        return false;
      }
  return true;
}

void items(benchmark::State& st) {
  st.SetItemsProcessed(st.iterations() * kBatch * kWidth * kWidth);  // multiply-adds of one forward GEMM
  st.counters["batch"] = static_cast<double>(kBatch);
}

void BM_jit_loss(benchmark::State& st) {
  const Inputs& in = inputs();
  for (auto _ : st) {
    auto l = jit_loss(in.w1, in.w2, in.x, in.y);
    benchmark::DoNotOptimize(l.data());
  }
  items(st);
}

void BM_jit_grad(benchmark::State& st) {
  const Inputs& in = inputs();
  {
    const auto [g1, g2] = jit_grad(in.w1, in.w2, in.x, in.y);
    if (!matches(st, "grad_mlp/jit_grad", g1, g2)) return;
  }
  for (auto _ : st) {
    auto g = jit_grad(in.w1, in.w2, in.x, in.y);
    benchmark::DoNotOptimize(std::get<0>(g).data());
  }
  items(st);
}

void BM_eager_grad(benchmark::State& st) {
  const Inputs& in = inputs();
  {
    const auto [g1, g2] = mlp_grad(in.w1, in.w2, in.x, in.y);
    if (!matches(st, "grad_mlp/eager", g1, g2)) return;
  }
  for (auto _ : st) {
    auto g = mlp_grad(in.w1, in.w2, in.x, in.y);
    benchmark::DoNotOptimize(std::get<0>(g).data());
  }
  items(st);
}

void BM_eigen_grad(benchmark::State& st) {
  const Inputs& in = inputs();
  std::vector<double> g1(static_cast<std::size_t>(kWidth * kWidth)), g2(g1.size());
  for (auto _ : st) {
    benchmark::DoNotOptimize(
        bench::eigen::mlp_grad(in.x.data(), in.w1.data(), in.w2.data(), in.y.data(), g1.data(), g2.data(), kBatch, kWidth));
    benchmark::ClobberMemory();
  }
  items(st);
}

// Names "case/variant/arg" (arg: the batch size), as the other suites'.
BENCHMARK(BM_jit_loss)->Name("grad_mlp/jit_loss")->Arg(kBatch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_jit_grad)->Name("grad_mlp/jit_grad")->Arg(kBatch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eigen_grad)->Name("grad_mlp/eigen")->Arg(kBatch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eager_grad)->Name("grad_mlp/eager")->Arg(kBatch)->Unit(benchmark::kMillisecond);

}  // namespace
