// dynstage on every core (issue 19): each kernel jitted once, timed with
// dyn::set_num_threads(1) and with every thread, in the same run, against the
// hand-written -O3 -march=native loop (one thread) and, for the sum of
// squares, the -ffast-math loop (vectorised, so memory bound) split over every
// thread with oneTBB: the machine's read bandwidth, a STREAM-like figure; and
// Eigen's GEMM (1 and every thread, OpenMP).
// Prints a Markdown table; with a file argument also writes the speed-ups
// against size as CSV (scripts/bench_threads.sh plots them).
//
//   build-bench/benchmarks/bench_threads [reps] [speedups.csv]
#include <dynstage/dynstage.hpp>

#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "baselines.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

int reps = 11;

template <class F>
double median_ms(F&& f) {
  f();  // warm: compile, first touch
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Array<double> data(std::vector<i64> shape, double scale) {
  i64 n = 1;
  for (i64 d : shape) n *= d;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<double>((i * 7919) % 1000) / 1000.0;
  return Array<double>(shape, v);
}

std::string size_str(i64 n) {
  std::string s = std::to_string(n), r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) r += ',';
    r += s[i];
  }
  return r;
}

// Times f under 1 and under all threads.
template <class F>
std::pair<double, double> one_and_all(int all, F&& f) {
  dyn::set_num_threads(1);
  const double t1 = median_ms(f);
  dyn::set_num_threads(all);
  const double tn = median_ms(f);
  return {t1, tn};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) reps = std::max(3, std::atoi(argv[1]));
  const char* csv_path = argc > 2 ? argv[2] : nullptr;
  const int all = dyn::num_threads();
  std::FILE* csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv) std::fprintf(csv, "kernel,n,speedup\n");
  std::printf("| kernel | n | dyn::jit, 1 thread | dyn::jit, %d threads | speed-up | baselines (same run) |\n", all);
  std::printf("| --- | ---: | ---: | ---: | ---: | --- |\n");

  auto fused = dyn::jit([](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; });
  auto sumsq = dyn::jit([](auto x) { return dyn::sum(x * x); });
  for (i64 n : {1000, 10000, 100000, 1000000, 10000000}) {
    const Array<double> x = data({n}, 3.0), y = data({n}, -1.0);
    Array<double> r;
    const auto [f1, fn] = one_and_all(all, [&] { r = fused(x, y); });
    std::vector<double> out(static_cast<std::size_t>(n));
    const double hand = median_ms([&] { bench::loops::fused(x.data(), y.data(), out.data(), n); });
    std::printf("| `sin(x)*2 + x*y` | %s | %.3f ms | %.3f ms | %.2fx | hand loop, 1 thread: %.3f ms |\n", size_str(n).c_str(),
                f1, fn, f1 / fn, hand);
    if (csv) std::fprintf(csv, "sin(x)*2 + x*y,%lld,%.4f\n", static_cast<long long>(n), f1 / fn);

    const auto [s1, sn] = one_and_all(all, [&] { r = sumsq(x); });
    volatile double sink = 0;
    const double hand1 = median_ms([&] { sink = bench::loops::sum_squares(x.data(), n); });
    // The vectorised loop over every thread, 65536-element chunks: the read bandwidth.
    const i64 chunk = 65536, nchunks = (n + chunk - 1) / chunk;
    std::vector<double> part(static_cast<std::size_t>(nchunks));
    tbb::task_arena arena(all);
    const double handn = median_ms([&] {
      arena.execute([&] {
        tbb::parallel_for(i64{0}, nchunks, [&](i64 k) {
          part[static_cast<std::size_t>(k)] = bench::fastmath::sum_squares(x.data() + k * chunk, std::min(chunk, n - k * chunk));
        });
      });
      double s = 0;
      for (double p : part) s += p;
      sink = s;
    });
    std::printf("| sum of squares | %s | %.3f ms | %.3f ms | %.2fx | hand loop, 1 thread: %.3f ms; -ffast-math loop, %d threads: %.3f ms (jit at %.0f%% of its speed) |\n",
                size_str(n).c_str(), s1, sn, s1 / sn, hand1, all, handn, 100.0 * handn / sn);
    if (csv) std::fprintf(csv, "sum of squares,%lld,%.4f\n", static_cast<long long>(n), s1 / sn);
  }

  auto softmax = dyn::jit([](auto x) {
    auto e = dyn::exp(x - dyn::max(x, {1}, dyn::keepdims));
    return e / dyn::sum(e, {1}, dyn::keepdims);
  });
  {
    const Array<double> m = data({1000, 1000}, 4.0);
    Array<double> r;
    const auto [t1, tn] = one_and_all(all, [&] { r = softmax(m); });
    std::vector<double> out(1000 * 1000);
    const double hand = median_ms([&] { bench::loops::softmax_rows(m.data(), out.data(), 1000, 1000); });
    std::printf("| softmax over rows | 1000 x 1000 | %.3f ms | %.3f ms | %.2fx | hand loop, 1 thread: %.3f ms |\n", t1, tn, t1 / tn,
                hand);
  }
  auto matmul = dyn::jit([](auto a, auto b) { return dyn::matmul(a, b); });
  {
    const i64 n = 1024;
    const Array<double> a = data({n, n}, 1.0), b = data({n, n}, -1.0);
    Array<double> r;
    const auto [t1, tn] = one_and_all(all, [&] { r = matmul(a, b); });
    std::vector<double> c(static_cast<std::size_t>(n * n));
    const double e1 = median_ms([&] { bench::eigen::matmul_threads(a.data(), b.data(), c.data(), n, 1); });
    const double en = median_ms([&] { bench::eigen::matmul_threads(a.data(), b.data(), c.data(), n, all); });
    std::printf("| matmul f64 | 1024 x 1024 | %.2f ms | %.2f ms | %.2fx | Eigen, 1 thread: %.2f ms; %d threads: %.2f ms (jit %.2fx Eigen) |\n",
                t1, tn, t1 / tn, e1, all, en, en / tn);
  }
  if (csv) std::fclose(csv);
}
