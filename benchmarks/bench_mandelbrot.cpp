// dynstage benchmarks of issue 24, part 3: a Mandelbrot set of 1000x1000
// points at 100 iterations, written with complex arithmetic
// (realistic::mandelbrot: a for_loop carrying z and the counts, where(|z| <=
// 2, z*z + c, z)), c128 as NumPy's default complex type. Variants: jit, eager
// and the hand loop of baseline_loops.cpp (-O3 -march=native, per point
// until its first escape). NumPy's versions: benchmarks/numpy_mandelbrot.py,
// on the same grid. Each benchmark checks its counts against the hand loop's
// before timing: equal but for points on the boundary |z| = 2, where |z|^2 <=
// 4 and hypot(re, im) <= 2 can round apart (at most 1 in 10^4 points).
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <complex>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "realistic_kernels.hpp"

namespace {

using c128 = std::complex<double>;
constexpr std::int64_t kSide = 1000;
constexpr int kIters = 100;

// c = re + i im on the grid re in linspace(-2, 0.5), im in linspace(-1.25, 1.25).
struct Grid {
  std::vector<double> re, im;
  dyn::Array<c128> c;
};
const Grid& grid() {
  static const Grid g = [] {
    Grid g;
    std::vector<c128> c;
    for (std::int64_t i = 0; i < kSide; ++i)
      for (std::int64_t k = 0; k < kSide; ++k) {
        const double x = -2.0 + 2.5 * static_cast<double>(k) / (kSide - 1);
        const double y = -1.25 + 2.5 * static_cast<double>(i) / (kSide - 1);
        g.re.push_back(x);
        g.im.push_back(y);
        c.emplace_back(x, y);
      }
    g.c = dyn::Array<c128>({kSide, kSide}, c);
    return g;
  }();
  return g;
}

const std::vector<std::int32_t>& reference() {
  static const std::vector<std::int32_t> ref = [] {
    std::vector<std::int32_t> out(static_cast<std::size_t>(kSide * kSide));
    bench::loops::mandelbrot(grid().re.data(), grid().im.data(), out.data(), kSide * kSide, kIters);
    return out;
  }();
  return ref;
}

template <class F>
void run(benchmark::State& st, const F& f) {
  const dyn::Array<std::int32_t> first = f(grid().c);
  std::int64_t differ = 0;
  for (std::int64_t p = 0; p < kSide * kSide; ++p) differ += first.data()[p] != reference()[static_cast<std::size_t>(p)];
  if (differ > kSide * kSide / 10000) {
    st.SkipWithError(("counts differ from the hand loop's at " + std::to_string(differ) + " points").c_str());
    return;
  }
  for (auto _ : st) benchmark::DoNotOptimize(f(grid().c));
}

void BM_mandelbrot_jit(benchmark::State& st) {
  static const auto jf = dyn::jit(realistic::mandelbrot<kIters>);
  run(st, jf);
}
void BM_mandelbrot_eager(benchmark::State& st) { run(st, dyn::eager(realistic::mandelbrot<kIters>)); }
void BM_mandelbrot_loops(benchmark::State& st) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(kSide * kSide));
  for (auto _ : st) {
    bench::loops::mandelbrot(grid().re.data(), grid().im.data(), out.data(), kSide * kSide, kIters);
    benchmark::DoNotOptimize(out.data());
  }
}

}  // namespace

BENCHMARK(BM_mandelbrot_jit)->Name("mandelbrot/jit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mandelbrot_eager)->Name("mandelbrot/eager")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mandelbrot_loops)->Name("mandelbrot/loops")->Unit(benchmark::kMillisecond);
