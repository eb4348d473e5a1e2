// dynstage compile-time benchmark (issue 18): how long realistic kernels take
// to trace, to lower to LLVM IR and to go through LLVM (optimisation and code
// generation), and how large their optimised IR is. Prints a Markdown table
// (scripts/bench.sh puts it in docs/benchmarks.md).
//
// Each kernel is compiled `reps` times, each time by a fresh dyn::jit (a
// cache miss), on one thread; a column is the median of its repetitions
// (jf.stats(): trace_seconds, lower_seconds, llvm_seconds). The GEMM routines
// that large products call are compiled once per process, on first use: that
// one-time cost is its own row, measured first. The stage times are wall
// times; the machine may be shared, so the first call's thread CPU time (the
// compile's cost proper: it runs on the calling thread) is a column too.
//
//   build-bench/benchmarks/bench_compile [reps]
#include <dynstage/dynstage.hpp>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string name, what;
  double trace_ms, lower_ms, llvm_ms, cpu_ms;
  std::size_t ir_bytes;
};

template <class F, class... Args>
Row measure(const char* name, const char* what, int reps, const F& f, const Args&... args) {
  std::vector<double> tr, lo, ll, cpu;
  for (int r = 0; r < reps; ++r) {
    auto jf = dyn::jit(f);
    const double c0 = thread_cpu_ms();
    (void)jf(args...);
    cpu.push_back(thread_cpu_ms() - c0);
    const auto s = jf.stats();
    tr.push_back(s.trace_seconds * 1e3);
    lo.push_back(s.lower_seconds * 1e3);
    ll.push_back(s.llvm_seconds * 1e3);
  }
  const std::size_t ir = dyn::jit(f).llvm_ir(args...).size();
  return {name, what, median(tr), median(lo), median(ll), median(cpu), ir};
}

// --- the kernels -------------------------------------------------------------

auto stencil1d = [](auto x) {  // second difference, f64[1e6]
  const std::int64_t n = x.shape()[0].value();
  return dyn::slice(x, {2}, {n}) - 2.0 * dyn::slice(x, {1}, {n - 1}) + dyn::slice(x, {0}, {n - 2});
};

auto stencil2d = [](auto u) {  // 5-point Laplacian, f64[512,512]
  const std::int64_t n = u.shape()[0].value(), m = u.shape()[1].value();
  auto s = [&](std::int64_t i, std::int64_t j) { return dyn::slice(u, {i, j}, {n - 2 + i, m - 2 + j}); };
  return s(0, 1) + s(2, 1) + s(1, 0) + s(1, 2) - 4.0 * s(1, 1);
};

auto stencil3d = [](auto u) {  // 7-point Laplacian, f64[64,64,64]
  const std::int64_t n = u.shape()[0].value();
  auto s = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return dyn::slice(u, {i, j, k}, {n - 2 + i, n - 2 + j, n - 2 + k});
  };
  return s(0, 1, 1) + s(2, 1, 1) + s(1, 0, 1) + s(1, 2, 1) + s(1, 1, 0) + s(1, 1, 2) - 6.0 * s(1, 1, 1);
};

auto conv2d = [](auto img, auto w, auto b) {  // 3x3, (8,64,64,3) -> (8,62,62,16), tap by tap
  auto s = dyn::matmul(dyn::slice(img, {0, 0, 0, 0}, {8, 62, 62, 3}), w.at(0, 0).get());
  for (std::int64_t t = 1; t < 9; ++t) {
    const std::int64_t i = t / 3, j = t % 3;
    s = s + dyn::matmul(dyn::slice(img, {0, i, j, 0}, {8, 62 + i, 62 + j, 3}), w.at(i, j).get());
  }
  return s + b;
};

auto mlp = [](auto x, auto w1, auto b1, auto w2, auto b2, auto w3, auto b3) {  // 784-256-128-10, softmax
  auto h1 = dyn::maximum(dyn::matmul(x, w1) + b1, 0.0f);
  auto h2 = dyn::maximum(dyn::matmul(h1, w2) + b2, 0.0f);
  auto z = dyn::matmul(h2, w3) + b3;
  auto e = dyn::exp(z - dyn::max(z, {1}, dyn::keepdims));
  return e / dyn::sum(e, {1}, dyn::keepdims);
};

auto cholesky = [](auto a) {  // column by column in a for_loop, f64[256,256]
  const std::int64_t n = a.shape()[0].value();
  auto rows = dyn::arange<std::int64_t>(n);
  auto l0 = a * 0.0;
  return dyn::for_loop(0, n, 1)([&](auto j, auto l) {
    auto lj = l.at(j).get();                                   // row j: L[j, :j], zeros after
    auto d = dyn::sqrt(a.at(j, j).get() - dyn::sum(lj * lj));
    auto col = (a.at(dyn::all(), j).get() - dyn::matmul(l, lj)) / d;
    auto newcol = dyn::where(rows > j, col, dyn::where(rows == j, d, 0.0));
    return l.at(dyn::all(), j).set(newcol);
  })(l0);
};

auto nbody = [](auto x, auto v, auto m) {  // one step, 512 bodies
  const std::int64_t n = x.shape()[0].value();
  auto d = dyn::reshape(x, {1, n, 3}) - dyn::reshape(x, {n, 1, 3});
  auto r2 = dyn::sum(d * d, {2}) + 1e-3;
  auto inv = dyn::reshape(m, {1, n}) / (r2 * dyn::sqrt(r2));
  auto acc = dyn::sum(d * dyn::reshape(inv, {n, n, 1}), {1});
  auto v2 = v + 0.01 * acc;
  return std::tuple{x + 0.01 * v2, v2};
};

auto ema_scan = [](auto xs) {  // exponential moving average over 1000 rows of 64
  auto init = dyn::slice(xs, {0, 0}, {1, 64}) * 0.0;
  return dyn::scan([](auto c, auto x) {
    auto c2 = 0.9 * c + 0.1 * dyn::reshape(x, {1, 64});
    return std::tuple{c2, dyn::sum(c2)};
  }, init, xs);
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<Row> rows;
  {
    // The first large product of the process compiles the GEMM routines.
    dyn::Array<double> a = dyn::ones<double>({64, 64});
    auto jf = dyn::jit([](auto x) { return dyn::matmul(x, x); });
    const double c0 = thread_cpu_ms();
    (void)jf(a);
    const double first_cpu = thread_cpu_ms() - c0;
    const auto s = jf.stats();
    auto again = dyn::jit([](auto x) { return dyn::matmul(x, x) * 1.0; });
    const double c1 = thread_cpu_ms();
    (void)again(a);
    const double second_cpu = thread_cpu_ms() - c1;
    const auto t = again.stats();
    rows.push_back({"GEMM routines", "once per process: first large product minus a later one", 0,
                    (s.lower_seconds - t.lower_seconds) * 1e3, (s.llvm_seconds - t.llvm_seconds) * 1e3, first_cpu - second_cpu, 0});
  }
  rows.push_back(measure("stencil 1-D", "second difference, f64[1e6]", reps, stencil1d, dyn::ones<double>({1000000})));
  rows.push_back(measure("stencil 2-D", "5-point Laplacian, f64[512,512]", reps, stencil2d, dyn::ones<double>({512, 512})));
  rows.push_back(measure("stencil 3-D", "7-point Laplacian, f64[64,64,64]", reps, stencil3d, dyn::ones<double>({64, 64, 64})));
  rows.push_back(measure("conv2d 3x3", "(8,64,64,3) -> 16 channels + bias, 9 slice-matmul taps", reps, conv2d,
                         dyn::ones<float>({8, 64, 64, 3}), dyn::ones<float>({3, 3, 3, 16}), dyn::ones<float>({16})));
  rows.push_back(measure("MLP", "784-256-128-10, ReLU, softmax, batch 256, f32", reps, mlp, dyn::ones<float>({256, 784}),
                         dyn::ones<float>({784, 256}), dyn::ones<float>({256}), dyn::ones<float>({256, 128}),
                         dyn::ones<float>({128}), dyn::ones<float>({128, 10}), dyn::ones<float>({10})));
  {
    // A symmetric positive definite matrix: n I + ones.
    const std::int64_t n = 256;
    dyn::Array<double> a = dyn::ones<double>({n, n});
    for (std::int64_t i = 0; i < n; ++i) a.mutable_data()[i * n + i] += static_cast<double>(n);
    rows.push_back(measure("Cholesky", "for_loop over columns, f64[256,256]", reps, cholesky, a));
  }
  rows.push_back(measure("n-body step", "all pairs, 512 bodies, f64", reps, nbody, dyn::ones<double>({512, 3}),
                         dyn::ones<double>({512, 3}), dyn::ones<double>({512})));
  rows.push_back(measure("scan", "moving average over f64[1000,64] (lax.scan)", reps, ema_scan, dyn::ones<double>({1000, 64})));

  std::printf("| kernel | what | trace ms | lower ms | LLVM ms | total ms | thread CPU ms | optimised IR KB |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", r.name.c_str(), r.what.c_str(), r.trace_ms,
                r.lower_ms, r.llvm_ms, r.trace_ms + r.lower_ms + r.llvm_ms, r.cpu_ms,
                r.ir_bytes ? std::to_string((r.ir_bytes + 512) / 1024).c_str() : "-");
  return 0;
}
