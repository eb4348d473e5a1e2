// dynstage benchmarks of issue 18: loops that update an array in place
// (llvm/buffers.hpp, docs/backend.md "Buffer assignment"). rowupd/*: a
// for_loop over the 1000 rows of a 1000x1000 f64 carry, row i = row i * 0.5
// + 1 (a dynamic_update_slice of the carry per iteration); chol/*: Cholesky
// of a 1000x1000 SPD matrix written with a for_loop over pivots and, inside,
// a for_loop of row updates. Variants: jit (in place), jit_copying (the same
// kernel compiled with buffer reuse off, detail::buffer_reuse(): every
// iteration copies the carry, as before issue 18), loops (the hand loop of
// baseline_loops.cpp, -O3 -march=native, writing into a preallocated
// output). conv/*: the 3x3 convolution with bias of the compile-time
// benchmark (realistic_kernels.hpp, (8,64,64,3) -> 16 channels, f32) at run
// time: jit, eager and the hand loop. NumPy's versions:
// benchmarks/numpy_issue18.py. Each benchmark checks its result against the
// hand loop's before timing.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "realistic_kernels.hpp"

namespace {

using i64 = std::int64_t;
constexpr i64 kN = 1000;

auto rowupd_fn = [](auto a) {
  return dyn::for_loop(0, kN, 1)([](auto i, auto c) {
    auto row = dyn::dynamic_slice(c, {i, i64{0}}, {1, kN});
    return dyn::dynamic_update_slice(c, row * 0.5 + 1.0, {i, i64{0}});
  })(a);
};

// Right-looking Cholesky by rows: row j of the working matrix becomes row j
// of U (divided by the pivot's square root, zeros left of the diagonal),
// then every later row i loses U[j][i] times it. U^T U = a.
auto chol_fn = [](auto a) {
  auto cols = dyn::reshape(dyn::arange<i64>(kN), {1, kN});
  return dyn::for_loop(0, kN, 1)([&](auto j, auto c) {
    auto row = dyn::dynamic_slice(c, {j, i64{0}}, {1, kN});
    auto d = dyn::sqrt(dyn::dynamic_slice(c, {j, j}, {1, 1}));
    auto u = dyn::where(cols >= j, row / d, 0.0);
    auto c1 = dyn::dynamic_update_slice(c, u, {j, i64{0}});
    return dyn::for_loop(j + 1, kN, 1)([&](auto i, auto c2) {
      auto ri = dyn::dynamic_slice(c2, {i, i64{0}}, {1, kN});
      auto f = dyn::dynamic_slice(u, {i64{0}, i}, {1, 1});
      return dyn::dynamic_update_slice(c2, ri - f * u, {i, i64{0}});
    })(c1);
  })(a);
};

const dyn::Array<double>& square_input() {
  static const dyn::Array<double> x = [] {
    std::vector<double> v(static_cast<std::size_t>(kN * kN));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(static_cast<double>(k) * 0.001);
    return dyn::Array<double>({kN, kN}, v);
  }();
  return x;
}

// A = B B^T / n + I (symmetric positive definite, well conditioned).
const dyn::Array<double>& spd_input() {
  static const dyn::Array<double> a = [] {
    std::vector<double> b(static_cast<std::size_t>(kN * kN)), v(static_cast<std::size_t>(kN * kN), 0.0);
    for (std::size_t k = 0; k < b.size(); ++k) b[k] = std::cos(static_cast<double>(k % 977) * 0.37 + static_cast<double>(k / 977));
    for (i64 i = 0; i < kN; ++i)
      for (i64 k = 0; k < kN; ++k) {
        const double bik = b[static_cast<std::size_t>(i * kN + k)];
        for (i64 j = 0; j < kN; ++j) v[static_cast<std::size_t>(i * kN + j)] += bik * b[static_cast<std::size_t>(j * kN + k)];
      }
    for (i64 i = 0; i < kN; ++i)
      for (i64 j = 0; j < kN; ++j)
        v[static_cast<std::size_t>(i * kN + j)] = v[static_cast<std::size_t>(i * kN + j)] / kN + (i == j ? 1.0 : 0.0);
    return dyn::Array<double>({kN, kN}, v);
  }();
  return a;
}

bool close_to(benchmark::State& st, const dyn::Array<double>& got, const std::vector<double>& ref, double tol) {
  for (std::size_t k = 0; k < ref.size(); ++k)
    if (!(std::abs(got.data()[k] - ref[k]) <= tol * std::max(1.0, std::abs(ref[k])))) {
      st.SkipWithError(("element " + std::to_string(k) + " differs from the hand loop's").c_str());
      return false;
    }
  return true;
}

const std::vector<double>& rowupd_ref() {
  static const std::vector<double> r = [] {
    std::vector<double> out(static_cast<std::size_t>(kN * kN));
    bench::loops::row_update(square_input().data(), out.data(), kN);
    return out;
  }();
  return r;
}
const std::vector<double>& chol_ref() {
  static const std::vector<double> r = [] {
    std::vector<double> out(static_cast<std::size_t>(kN * kN));
    bench::loops::cholesky_rows(spd_input().data(), out.data(), kN);
    return out;
  }();
  return r;
}

template <class J>
void run(benchmark::State& st, const J& jf, const dyn::Array<double>& x, const std::vector<double>& ref, double tol) {
  if (!close_to(st, jf(x), ref, tol)) return;
  for (auto _ : st) {
    auto r = jf(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  st.counters["per_iter"] = benchmark::Counter(static_cast<double>(st.iterations()) * kN,
                                               benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_rowupd_jit(benchmark::State& st) {
  dyn::detail::buffer_reuse().store(true);
  static const auto jf = dyn::jit(rowupd_fn);
  run(st, jf, square_input(), rowupd_ref(), 0.0);
}
void BM_rowupd_jit_copying(benchmark::State& st) {
  dyn::detail::buffer_reuse().store(false);
  static const auto jf = dyn::jit(rowupd_fn);
  (void)jf(square_input());  // compiled without buffer reuse
  dyn::detail::buffer_reuse().store(true);
  run(st, jf, square_input(), rowupd_ref(), 0.0);
}
void BM_rowupd_loops(benchmark::State& st) {
  std::vector<double> out(static_cast<std::size_t>(kN * kN));
  for (auto _ : st) {
    bench::loops::row_update(square_input().data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["per_iter"] = benchmark::Counter(static_cast<double>(st.iterations()) * kN,
                                               benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_chol_jit(benchmark::State& st) {
  dyn::detail::buffer_reuse().store(true);
  static const auto jf = dyn::jit(chol_fn);
  run(st, jf, spd_input(), chol_ref(), 1e-9);
}
void BM_chol_jit_copying(benchmark::State& st) {
  dyn::detail::buffer_reuse().store(false);
  static const auto jf = dyn::jit(chol_fn);
  (void)jf(spd_input());
  dyn::detail::buffer_reuse().store(true);
  run(st, jf, spd_input(), chol_ref(), 1e-9);
}
void BM_chol_loops(benchmark::State& st) {
  std::vector<double> out(static_cast<std::size_t>(kN * kN));
  for (auto _ : st) {
    bench::loops::cholesky_rows(spd_input().data(), out.data(), kN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.counters["per_iter"] = benchmark::Counter(static_cast<double>(st.iterations()) * kN,
                                               benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// conv/*: inputs as numpy_issue18.py makes them (sin/cos of the flat index).
constexpr i64 kCb = 8, kCh = 64, kCw = 64, kCc = 3, kCf = 16;
struct ConvInputs {
  dyn::Array<float> img, w, b;
};
dyn::Array<float> filled(std::vector<i64> shape, double scale, bool cosine) {
  i64 n = 1;
  for (i64 d : shape) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) {
    const double t = static_cast<double>(k) * scale;
    v[k] = static_cast<float>(cosine ? std::cos(t) : std::sin(t));
  }
  return dyn::Array<float>(shape, v);
}
const ConvInputs& conv_inputs() {
  static const ConvInputs in{filled({kCb, kCh, kCw, kCc}, 0.01, false), filled({3, 3, kCc, kCf}, 0.1, true),
                             filled({kCf}, 0.5, false)};
  return in;
}
const std::vector<float>& conv_ref() {
  static const std::vector<float> r = [] {
    const ConvInputs& in = conv_inputs();
    std::vector<float> out(static_cast<std::size_t>(kCb * (kCh - 2) * (kCw - 2) * kCf));
    bench::loops::conv2d_3x3(in.img.data(), in.w.data(), in.b.data(), out.data(), kCb, kCh, kCw, kCc, kCf);
    return out;
  }();
  return r;
}
template <class F>
void run_conv(benchmark::State& st, const F& f) {
  const ConvInputs& in = conv_inputs();
  {
    const dyn::Array<float> got = f(in.img, in.w, in.b);
    const std::vector<float>& ref = conv_ref();
    for (std::size_t k = 0; k < ref.size(); ++k)
      if (!(std::abs(got.data()[k] - ref[k]) <= 1e-4f * std::max(1.0f, std::abs(ref[k])))) {
        st.SkipWithError(("element " + std::to_string(k) + " differs from the hand loop's").c_str());
        return;
      }
  }
  for (auto _ : st) {
    auto r = f(in.img, in.w, in.b);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
}
void BM_conv_jit(benchmark::State& st) {
  static const auto jf = dyn::jit(realistic::conv2d);
  run_conv(st, jf);
}
void BM_conv_eager(benchmark::State& st) { run_conv(st, dyn::eager(realistic::conv2d)); }
void BM_conv_loops(benchmark::State& st) {
  const ConvInputs& in = conv_inputs();
  std::vector<float> out(conv_ref().size());
  for (auto _ : st) {
    bench::loops::conv2d_3x3(in.img.data(), in.w.data(), in.b.data(), out.data(), kCb, kCh, kCw, kCc, kCf);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
}

BENCHMARK(BM_rowupd_jit)->Name("rowupd/jit")->Arg(kN)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_rowupd_jit_copying)->Name("rowupd/jit_copying")->Arg(kN)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_rowupd_loops)->Name("rowupd/loops")->Arg(kN)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_chol_jit)->Name("chol/jit")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_chol_jit_copying)->Name("chol/jit_copying")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_chol_loops)->Name("chol/loops")->Arg(kN)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv_jit)->Name("conv/jit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv_eager)->Name("conv/eager")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_conv_loops)->Name("conv/loops")->Unit(benchmark::kMillisecond);

}  // namespace
