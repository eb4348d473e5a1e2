// dynstage benchmarks of issue 17 (part 5): einsum("bij,bjk->bik") of two f32 arrays
// of einsum_batch x einsum_n x einsum_n (bench_sizes.hpp): dyn::jit and
// eager, against the same product by Eigen (one GEMM per batch) and a hand
// i-k-j loop, registered here too (einsum/eigen, einsum/loops), and NumPy's
// np.einsum and np.matmul (benchmarks/numpy_baselines.py). einsum lowers
// this to one dot_general with a batch axis (trace/einsum.hpp), whose
// compiled kernel is llvm/lower_dot.hpp's blocked product per batch.
// Conventions as bench_issue16.cpp: inputs made once, the kernel compiled
// and its result checked against the hand loop's before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_sizes.hpp"

namespace {

using bench::sizes::einsum_batch;
using bench::sizes::einsum_n;

auto einsum_fn = [](auto a, auto b) { return dyn::einsum("bij,bjk->bik", a, b); };
const auto jit_einsum = dyn::jit(einsum_fn);

// Uniform in [-4, 4] (bench_sizes.hpp), fixed seeds.
dyn::Array<float> uniform_f32(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> v(static_cast<std::size_t>(einsum_batch * einsum_n * einsum_n));
  for (float& x : v) x = u(rng);
  return dyn::Array<float>({einsum_batch, einsum_n, einsum_n}, v);
}
const dyn::Array<float>& lhs() {
  static const dyn::Array<float> a = uniform_f32(1701);
  return a;
}
const dyn::Array<float>& rhs() {
  static const dyn::Array<float> b = uniform_f32(1702);
  return b;
}
const std::vector<float>& reference() {
  static const std::vector<float> c = [] {
    std::vector<float> r(static_cast<std::size_t>(lhs().size()));
    bench::loops::batched_matmul_f32(lhs().data(), rhs().data(), r.data(), einsum_batch, einsum_n);
    return r;
  }();
  return c;
}

// The same products summed in another order (blocking, FMA): f32 sums of
// 128 terms of size <= 16 agree to about 1e-3 relative to the row's scale.
bool matches(benchmark::State& st, const char* what, const float* got) {
  const auto& ref = reference();
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::abs(got[i] - ref[i]) <= 2e-3f * 64.0f)) {
      const std::string err = std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                              ", the hand loop's " + std::to_string(ref[i]);
      st.SkipWithError(err.c_str());
      return false;
    }
  return true;
}

void items(benchmark::State& st) {
  const std::int64_t flops = einsum_batch * einsum_n * einsum_n * einsum_n;  // multiply-adds
  st.SetItemsProcessed(st.iterations() * flops);
  st.counters["n"] = static_cast<double>(einsum_n);
}

void BM_einsum_jit(benchmark::State& st) {
  if (!matches(st, "einsum/jit", jit_einsum(lhs(), rhs()).data())) return;
  for (auto _ : st) {
    auto c = jit_einsum(lhs(), rhs());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  items(st);
}

void BM_einsum_eager(benchmark::State& st) {
  if (!matches(st, "einsum/eager", einsum_fn(lhs(), rhs()).data())) return;
  for (auto _ : st) {
    auto c = einsum_fn(lhs(), rhs());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  items(st);
}

void BM_einsum_eigen(benchmark::State& st) {
  std::vector<float> c(static_cast<std::size_t>(lhs().size()));
  bench::eigen::batched_matmul_f32(lhs().data(), rhs().data(), c.data(), einsum_batch, einsum_n);
  if (!matches(st, "einsum/eigen", c.data())) return;
  for (auto _ : st) {
    bench::eigen::batched_matmul_f32(lhs().data(), rhs().data(), c.data(), einsum_batch, einsum_n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  items(st);
}

void BM_einsum_loops(benchmark::State& st) {
  std::vector<float> c(static_cast<std::size_t>(lhs().size()));
  for (auto _ : st) {
    bench::loops::batched_matmul_f32(lhs().data(), rhs().data(), c.data(), einsum_batch, einsum_n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  items(st);
}

// Names "case/variant/arg" (arg: the batch size), as numpy_baselines.py's.
BENCHMARK(BM_einsum_jit)->Name("einsum/jit")->Arg(einsum_batch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_einsum_eager)->Name("einsum/eager")->Arg(einsum_batch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_einsum_eigen)->Name("einsum/eigen")->Arg(einsum_batch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_einsum_loops)->Name("einsum/loops")->Arg(einsum_batch)->Unit(benchmark::kMicrosecond);

}  // namespace
