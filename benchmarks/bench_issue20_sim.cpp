// dynstage benchmarks of issue 20: reverse mode through a while loop.
// grad_sim/*: 4096 damped pendulums stepped by a while loop until t >= 1
// (dt = 0.01: 100 steps); the loss is mean(x^2) at the end, differentiated
// with respect to the stiffness k and the initial velocities v0:
//   jit_f     dyn::jit(sim): the simulation alone
//   jit_grad  dyn::jit(dyn::grad(sim, argnums<0, 2>)): the iteration count
//             (the predicate's part of the loop: t alone), the forward scan
//             keeping each step's positions, the reversed scan (target:
//             <= 3x jit_f)
//   eager     dyn::grad on dyn::Array, no jit
// The jitted gradient is checked against central differences (d/dk) and
// eager grad before timing. JAX has no reverse mode through while_loop.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace {

using i64 = std::int64_t;
constexpr i64 kPendulums = 4096;

auto sim = [](auto k, auto x0, auto v0) {
  auto [x, v, t] = dyn::while_loop([](auto, auto, auto t) { return t < 0.9995; })([&](auto x, auto v, auto t) {
    auto a = -k * dyn::sin(x) - 0.1 * v;
    return std::tuple{x + 0.01 * v, v + 0.01 * a, t + 0.01};
  })(x0, v0, 0.0);
  return dyn::mean(dyn::square(x));
};
auto sim_grad = dyn::grad(sim, dyn::argnums<0, 2>{});
const auto jit_f = dyn::jit(sim);
const auto jit_grad = dyn::jit(sim_grad);

struct Inputs {
  dyn::Array<double> x0 = dyn::sin(dyn::linspace<double>(0.0, 20.0, kPendulums)) * 1.5;
  dyn::Array<double> v0 = dyn::cos(dyn::linspace<double>(0.0, 7.0, kPendulums)) * 0.5;
};
const Inputs& inputs() {
  static const Inputs in;
  return in;
}

bool checked(benchmark::State& st, const dyn::Array<double>& gk, const dyn::Array<double>& gv) {
  const Inputs& in = inputs();
  const double h = 1e-6, k = 2.0;
  const double fd = (sim(k + h, in.x0, in.v0)() - sim(k - h, in.x0, in.v0)()) / (2 * h);
  const auto [ek, ev] = sim_grad(k, in.x0, in.v0);
  bool ok = std::abs(gk() - fd) <= 1e-6 * (1 + std::abs(fd)) && std::abs(gk() - ek()) <= 1e-12 * (1 + std::abs(fd));
  for (i64 i = 0; ok && i < kPendulums; ++i) ok = std::abs(gv(i) - ev(i)) <= 1e-12 * (1 + std::abs(ev(i)));
  if (!ok) st.SkipWithError("grad_sim/jit_grad: the gradient differs from central differences or eager grad");
  return ok;
}

void items(benchmark::State& st) {
  st.SetItemsProcessed(st.iterations() * kPendulums * 100);  // pendulum steps
}

void BM_jit_f(benchmark::State& st) {
  const Inputs& in = inputs();
  for (auto _ : st) {
    auto l = jit_f(2.0, in.x0, in.v0);
    benchmark::DoNotOptimize(l.data());
  }
  items(st);
}

void BM_jit_grad(benchmark::State& st) {
  const Inputs& in = inputs();
  {
    const auto [gk, gv] = jit_grad(2.0, in.x0, in.v0);
    if (!checked(st, gk, gv)) return;
  }
  for (auto _ : st) {
    auto g = jit_grad(2.0, in.x0, in.v0);
    benchmark::DoNotOptimize(std::get<0>(g).data());
  }
  items(st);
}

void BM_eager_grad(benchmark::State& st) {
  const Inputs& in = inputs();
  for (auto _ : st) {
    auto g = sim_grad(2.0, in.x0, in.v0);
    benchmark::DoNotOptimize(std::get<0>(g).data());
  }
  items(st);
}

BENCHMARK(BM_jit_f)->Name("grad_sim/jit_f")->Arg(kPendulums)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_jit_grad)->Name("grad_sim/jit_grad")->Arg(kPendulums)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eager_grad)->Name("grad_sim/eager")->Arg(kPendulums)->Unit(benchmark::kMillisecond);

}  // namespace
