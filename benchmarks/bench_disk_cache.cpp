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

namespace {

auto stencil2d = [](auto u) {  // 5-point Laplacian, f64[128,128]
  const std::int64_t n = u.shape()[0].value(), m = u.shape()[1].value();
  auto s = [&](std::int64_t i, std::int64_t j) { return dyn::slice(u, {i, j}, {n - 2 + i, m - 2 + j}); };
  return s(0, 1) + s(2, 1) + s(1, 0) + s(1, 2) - 4.0 * s(1, 1);
};

auto stencil3d = [](auto u) {  // 7-point Laplacian, f64[32,32,32]
  const std::int64_t n = u.shape()[0].value();
  auto s = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return dyn::slice(u, {i, j, k}, {n - 2 + i, n - 2 + j, n - 2 + k});
  };
  return s(0, 1, 1) + s(2, 1, 1) + s(1, 0, 1) + s(1, 2, 1) + s(1, 1, 0) + s(1, 1, 2) - 6.0 * s(1, 1, 1);
};

auto conv2d = [](auto img, auto w, auto b) {  // 3x3, (2,32,32,3) -> (2,30,30,16), tap by tap
  auto s = dyn::matmul(dyn::slice(img, {0, 0, 0, 0}, {2, 30, 30, 3}), w.at(0, 0).get());
  for (std::int64_t t = 1; t < 9; ++t) {
    const std::int64_t i = t / 3, j = t % 3;
    s = s + dyn::matmul(dyn::slice(img, {0, i, j, 0}, {2, 30 + i, 30 + j, 3}), w.at(i, j).get());
  }
  return s + b;
};

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

auto nbody = [](auto x, auto v, auto m) {  // one step, 128 bodies
  const std::int64_t n = x.shape()[0].value();
  auto d = dyn::reshape(x, {1, n, 3}) - dyn::reshape(x, {n, 1, 3});
  auto r2 = dyn::sum(d * d, {2}) + 1e-3;
  auto inv = dyn::reshape(m, {1, n}) / (r2 * dyn::sqrt(r2));
  auto acc = dyn::sum(d * dyn::reshape(inv, {n, n, 1}), {1});
  auto v2 = v + 0.01 * acc;
  return std::tuple{x + 0.01 * v2, v2};
};

auto cholesky = [](auto a) {  // column by column in a for_loop, f64[64,64]
  const std::int64_t n = a.shape()[0].value();
  auto rows = dyn::arange<std::int64_t>(n);
  auto l0 = a * 0.0;
  return dyn::for_loop(0, n, 1)([&](auto j, auto l) {
    auto lj = l.at(j).get();
    auto d = dyn::sqrt(a.at(j, j).get() - dyn::sum(lj * lj));
    auto col = (a.at(dyn::all(), j).get() - dyn::matmul(l, lj)) / d;
    auto newcol = dyn::where(rows > j, col, dyn::where(rows == j, d, 0.0));
    return l.at(dyn::all(), j).set(newcol);
  })(l0);
};

auto ema_scan = [](auto xs) {  // exponential moving average over 200 rows of 64
  auto init = dyn::slice(xs, {0, 0}, {1, 64}) * 0.0;
  return dyn::scan([](auto c, auto x) {
    auto c2 = 0.9 * c + 0.1 * dyn::reshape(x, {1, 64});
    return std::tuple{c2, dyn::sum(c2)};
  }, init, xs);
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
