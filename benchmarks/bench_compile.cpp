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

#include "realistic_kernels.hpp"

namespace {

using namespace realistic;

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

auto mlp = [](auto x, auto w1, auto b1, auto w2, auto b2, auto w3, auto b3) {  // 784-256-128-10, softmax
  auto h1 = dyn::maximum(dyn::matmul(x, w1) + b1, 0.0f);
  auto h2 = dyn::maximum(dyn::matmul(h1, w2) + b2, 0.0f);
  auto z = dyn::matmul(h2, w3) + b3;
  auto e = dyn::exp(z - dyn::max(z, {1}, dyn::keepdims));
  return e / dyn::sum(e, {1}, dyn::keepdims);
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
  rows.push_back(measure("Stockham FFT", "2^14 points as (re, im) f64 pairs: 32-point DFT by matmuls, 9 radix-2 stages",
                         reps, fft_stockham, dyn::ones<double>({16384}), dyn::ones<double>({16384})));

  std::printf("| kernel | what | trace ms | lower ms | LLVM ms | total ms | thread CPU ms | optimised IR KB |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Row& r : rows)
    std::printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", r.name.c_str(), r.what.c_str(), r.trace_ms,
                r.lower_ms, r.llvm_ms, r.trace_ms + r.lower_ms + r.llvm_ms, r.cpu_ms,
                r.ir_bytes ? std::to_string((r.ir_bytes + 512) / 1024).c_str() : "-");
  return 0;
}
