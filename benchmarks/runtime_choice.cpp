// Which thread pool kernels run on: oneTBB against an OpenMP runtime, on the
// two loops issue 19 names (a fused elementwise loop, a reduction), split as
// dynstage splits them (tasks of 16384 elements, per-task partial sums
// combined in order). Built and run by scripts/runtime_choice.sh, twice:
// with oneTBB, and with -fopenmp linked to LLVM's libomp-19.
// Prints, per size, the median time of the runtime's parallel loop over the
// same loop run on the calling thread: < 1 is a speed-up, > 1 an overhead.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#if defined(USE_OMP)
#include <omp.h>
#else
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace {

constexpr std::int64_t kTask = 16384;

__attribute__((noinline)) void elementwise(const double* x, const double* y, double* r, std::int64_t lo, std::int64_t hi) {
  for (std::int64_t i = lo; i < hi; ++i) r[i] = std::sin(x[i]) * 2.0 + x[i] * y[i];
}
__attribute__((noinline)) double sumsq(const double* x, std::int64_t lo, std::int64_t hi) {
  double s = 0;
  for (std::int64_t i = lo; i < hi; ++i) s += x[i] * x[i];
  return s;
}

template <class F>
double median_seconds(F&& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
#if defined(USE_OMP)
  const char* name = "OpenMP (libomp-19)";
  const int threads = omp_get_max_threads();
#else
  const char* name = "oneTBB";
  tbb::task_arena arena;
  const int threads = arena.max_concurrency();
#endif
  std::printf("%s, %d threads\n%10s %14s %14s\n", name, threads, "n", "elementwise", "sum of squares");
  for (std::int64_t n : {1000, 10000, 100000, 1000000, 10000000}) {
    std::vector<double> x(static_cast<std::size_t>(n)), y(x.size()), r(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.001 * static_cast<double>(i % 1000), y[i] = 1.0 - x[i];
    const std::int64_t ntasks = (n + kTask - 1) / kTask;
    std::vector<double> part(static_cast<std::size_t>(ntasks));
    const int reps = n >= 1000000 ? 21 : 2001;
    volatile double sink = 0;
    const double t1e = median_seconds([&] { elementwise(x.data(), y.data(), r.data(), 0, n); }, reps);
    const double t1s = median_seconds([&] { sink = sumsq(x.data(), 0, n); }, reps);
    auto run_tasks = [&](auto&& task) {
#if defined(USE_OMP)
      if (ntasks == 1) return task(0);
#pragma omp parallel for schedule(static)
      for (std::int64_t k = 0; k < ntasks; ++k) task(k);
#else
      if (ntasks == 1) return task(0);
      arena.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, ntasks, 1), [&](const tbb::blocked_range<std::int64_t>& b) {
          for (std::int64_t k = b.begin(); k < b.end(); ++k) task(k);
        });
      });
#endif
    };
    const double tpe = median_seconds([&] {
      run_tasks([&](std::int64_t k) { elementwise(x.data(), y.data(), r.data(), k * kTask, std::min(n, (k + 1) * kTask)); });
    }, reps);
    const double tps = median_seconds([&] {
      run_tasks([&](std::int64_t k) { part[static_cast<std::size_t>(k)] = sumsq(x.data(), k * kTask, std::min(n, (k + 1) * kTask)); });
      double s = 0;
      for (double p : part) s += p;
      sink = s;
    }, reps);
    std::printf("%10lld %8.3f (%6.1f us) %8.3f (%6.1f us)\n", static_cast<long long>(n), tpe / t1e, tpe * 1e6, tps / t1s,
                tps * 1e6);
  }
}
