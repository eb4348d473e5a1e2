// dynstage benchmarks of issue 24, part 2: dyn::fft on complex128 data (what
// numpy.fft computes in), one thread (FFTW's single-threaded plans; NumPy's
// pocketfft is single-threaded too):
//   fft1d/jit/1048576     dyn::jit(dyn::fft::fft) of 2^20 points
//   fft1d/eager/1048576   dyn::fft::fft eagerly (the same runtime routine)
//   fft1d/native/1048576  dynstage's own transform (runtime/fft_impl.hpp),
//                         what runs in a build without FFTW
//   fft2d/jit/1024        dyn::jit(dyn::fft::fft2) of 1024 x 1024
//   fft2d/eager/1024, fft2d/native/1024
// NumPy's: benchmarks/numpy_issue24.py (numpy.fft.fft, numpy.fft.fft2, the
// same inputs). The jitted results are checked against eager before timing;
// each case's first call (FFTW's plan: FFTW_MEASURE at these sizes, about a
// second) is made before its timed loop.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

namespace {

using i64 = std::int64_t;
using c128 = std::complex<double>;

// x[k] = (sin(0.001 k), cos(0.0007 k)): numpy_issue24.py's inputs.
dyn::Array<c128> input(std::vector<i64> shape) {
  dyn::Array<c128> a(shape);
  c128* p = a.mutable_data();
  for (i64 k = 0; k < a.size(); ++k) p[k] = {std::sin(0.001 * static_cast<double>(k)), std::cos(0.0007 * static_cast<double>(k))};
  return a;
}
const dyn::Array<c128>& x1() {
  static const dyn::Array<c128> a = input({1 << 20});
  return a;
}
const dyn::Array<c128>& x2() {
  static const dyn::Array<c128> a = input({1024, 1024});
  return a;
}

const auto jit_fft = dyn::jit([](auto x) { return dyn::fft::fft(x); });
const auto jit_fft2 = dyn::jit([](auto x) { return dyn::fft::fft2(x); });

template <class F>
void run(benchmark::State& st, const dyn::Array<c128>& x, const F& f, bool check_jit) {
  (void)f(x);  // the first call plans (FFTW_MEASURE for these sizes: about a second)
  if (check_jit) {
    const dyn::Array<c128> got = f(x), want = x.rank() == 1 ? dyn::fft::fft(x) : dyn::fft::fft2(x);
    for (i64 k = 0; k < got.size(); ++k)
      if (got.data()[k] != want.data()[k]) {
        st.SkipWithError("jit differs from eager");
        return;
      }
  }
  for (auto _ : st) {
    auto y = f(x);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * x.size());
}

void BM_fft1d_jit(benchmark::State& st) { run(st, x1(), jit_fft, true); }
void BM_fft1d_eager(benchmark::State& st) {
  run(st, x1(), [](const auto& x) { return dyn::fft::fft(x); }, false);
}
void BM_fft2d_jit(benchmark::State& st) { run(st, x2(), jit_fft2, true); }
void BM_fft2d_eager(benchmark::State& st) {
  run(st, x2(), [](const auto& x) { return dyn::fft::fft2(x); }, false);
}
void native(benchmark::State& st, const dyn::Array<c128>& x) {
  std::vector<i64> lengths = x.shape();
  std::vector<c128> out(static_cast<std::size_t>(x.size()));
  for (auto _ : st) {
    dyn::detail::fft_native(0, static_cast<int>(dyn::DType::c128), static_cast<i64>(lengths.size()), lengths.data(), 1,
                            x.data(), out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * x.size());
}
void BM_fft1d_native(benchmark::State& st) { native(st, x1()); }
void BM_fft2d_native(benchmark::State& st) { native(st, x2()); }

BENCHMARK(BM_fft1d_jit)->Name("fft1d/jit")->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft1d_eager)->Name("fft1d/eager")->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft1d_native)->Name("fft1d/native")->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft2d_jit)->Name("fft2d/jit")->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft2d_eager)->Name("fft2d/eager")->Arg(1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_fft2d_native)->Name("fft2d/native")->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
