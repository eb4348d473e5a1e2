// dynstage disk cache benchmark (issue 21): a program with 10 realistic
// kernels, run twice as two processes on one cache directory
// (scripts/bench_disk_cache.sh). The first process compiles every kernel and
// stores it; the second should load all ten from disk (0 compiles, 10 disk
// hits) and reach its first results at least 10x sooner.
//
// Prints one line: the time from the start of main to the first results of
// all ten kernels (the process's LLVM start-up included: the first jit call
// initialises it; the sizes are small, so running the kernels is a small
// part), the compiles and disk hits of the ten, and the time the ten jits
// spent tracing and compiling or loading (jf.stats().compile_seconds), of
// which tracing. Each kernel's result is summed into a checksum, which must be
// the same in both processes (the same kernels' machine code).
//
//   DYNSTAGE_CACHE_DIR=/tmp/dir build-bench/benchmarks/bench_disk_cache
#include <dynstage/dynstage.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "realistic_kernels.hpp"

namespace {

using namespace realistic;

auto mlp = [](auto x, auto w1, auto b1, auto w2, auto b2) {  // 784-256-10, ReLU, softmax
  auto h = dyn::maximum(dyn::matmul(x, w1) + b1, 0.0f);
  auto z = dyn::matmul(h, w2) + b2;
  auto e = dyn::exp(z - dyn::max(z, {1}, dyn::keepdims));
  return e / dyn::sum(e, {1}, dyn::keepdims);
};

auto softmax = [](auto x) {  // over the rows of f64[256,256]
  auto e = dyn::exp(x - dyn::max(x, {1}, dyn::keepdims));
  return e / dyn::sum(e, {1}, dyn::keepdims);
};

auto elementwise = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y - dyn::tanh(y); };  // f64[1e4]

auto sorted_cumsum = [](auto x) { return dyn::cumsum(dyn::sort(x), 0); };  // f64[1e4]

double total(const dyn::Array<double>& a) {
  double s = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) s += a.data()[i];
  return s;
}
double total(const dyn::Array<float>& a) {
  double s = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) s += a.data()[i];
  return s;
}
template <class A, class B>
double total(const std::tuple<A, B>& t) {
  return total(std::get<0>(t)) + total(std::get<1>(t));
}

}  // namespace

int main() {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::size_t compiles = 0, disk_hits = 0;
  double trace_s = 0, jit_s = 0, checksum = 0;
  auto run = [&](const auto& f, const auto&... args) {
    auto jf = dyn::jit(f);
    checksum += total(jf(args...));
    const dyn::JitStats s = jf.stats();
    compiles += s.compiles;
    disk_hits += s.disk_hits;
    trace_s += s.trace_seconds;
    jit_s += s.compile_seconds;
  };
  dyn::Array<double> spd = dyn::ones<double>({64, 64});
  for (std::int64_t i = 0; i < 64; ++i) spd.mutable_data()[i * 64 + i] += 64.0;
  run(stencil2d, dyn::ones<double>({128, 128}));
  run(stencil3d, dyn::ones<double>({32, 32, 32}));
  run(conv2d, dyn::ones<float>({2, 32, 32, 3}), dyn::ones<float>({3, 3, 3, 16}), dyn::ones<float>({16}));
  run(mlp, dyn::ones<float>({16, 784}), dyn::ones<float>({784, 256}), dyn::ones<float>({256}),
      dyn::ones<float>({256, 10}), dyn::ones<float>({10}));
  run(softmax, dyn::ones<double>({256, 256}));
  run(nbody, dyn::ones<double>({128, 3}), dyn::ones<double>({128, 3}), dyn::ones<double>({128}));
  run(cholesky, spd);
  run(ema_scan, dyn::ones<double>({200, 64}));
  run(elementwise, dyn::ones<double>({10000}), dyn::ones<double>({10000}));
  run(sorted_cumsum, dyn::ones<double>({10000}));
  const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  std::printf("10 kernels: first results after %.1f ms; %zu compiles, %zu disk hits; jit %.1f ms (trace %.1f ms); "
              "checksum %.17g\n",
              ms, compiles, disk_hits, jit_s * 1e3, trace_s * 1e3, checksum);
  return 0;
}
