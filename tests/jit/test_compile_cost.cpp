// Compile cost (issue 18, "compile times that stay small"): properties of
// the generated IR that keep compiles fast on real kernels, checked on the
// IR itself (sizes and calls, never times), and the per-stage times of
// jf.stats(). The figures (times per kernel) are benchmarks/bench_compile.cpp's.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>

#include "../../benchmarks/realistic_kernels.hpp"
#include "../test_util.hpp"

using test_util::code_of;
using test_util::count_of;
using test_util::iota_array;

TEST_CASE("compile cost: a large product calls the process's GEMM routine instead of inlining a copy of it") {
  auto f = [](auto a, auto b) { return dyn::matmul(a, b) + dyn::matmul(b, a); };
  const auto a = iota_array<double>({64, 64});
  const std::string ir = dyn::jit(f).llvm_ir(a, a);
  // The two 64x64 products are independent and of one shape: one GEMM call
  // over a batch of two (issue 25, canonicalize.hpp's batch_small_dots).
  CHECK(count_of(ir, "call void @dynstage_gemm_f64(") == 1);
  CHECK(count_of(ir, "define") == 1);  // the entry point only: no micro-kernel, no packing loops
  // The results are those of eager's i-k-j product (sum in k order; FMA rounding aside).
  CHECK(dyn::allclose(dyn::jit(f)(a, a), f(a, a), 1e-12, 1e-9));
  const auto af = iota_array<float>({40, 50}), bf = iota_array<float>({50, 30});
  auto g = [](auto x, auto y) { return dyn::matmul(x, y); };
  CHECK(count_of(dyn::jit(g).llvm_ir(af, bf), "call void @dynstage_gemm_f32(") == 1);
  CHECK(dyn::allclose(dyn::jit(g)(af, bf), g(af, bf), 1e-5f, 1e-2f));
}

TEST_CASE("compile cost: outer loops are not unrolled (the IR of a nest does not grow with its outer trip counts)") {
  // A transposed copy is a three-loop nest (not one flat loop); with the
  // batch loop unrolled, the batch-8 kernel would hold eight copies of the
  // inner nest.
  auto f = [](auto x) { return dyn::transpose(x, {0, 2, 1}) * 2.0f; };
  const std::size_t one = code_of(dyn::jit(f).llvm_ir(dyn::Array<float>({2, 64, 48}))).size();
  const std::size_t eight = code_of(dyn::jit(f).llvm_ir(dyn::Array<float>({8, 64, 48}))).size();
  CHECK(eight < one * 5 / 4);
}

TEST_CASE("compile cost: the IR grows linearly with the number of equations (a convolution written tap by tap)") {
  // The 3x3 convolution of the compile-time benchmark, with `taps` of its
  // nine products: each tap is a slice, a product and an add.
  auto conv = [](int taps) {
    return [taps](auto img, auto w) {
      auto s = dyn::matmul(dyn::slice(img, {0, 0, 0, 0}, {4, 30, 30, 3}), w.at(0, 0).get());
      for (int t = 1; t < taps; ++t) {
        const int i = t / 3, j = t % 3;
        s = s + dyn::matmul(dyn::slice(img, {0, i, j, 0}, {4, 30 + i, 30 + j, 3}), w.at(i, j).get());
      }
      return s;
    };
  };
  const dyn::Array<float> img({4, 32, 32, 3}), w({3, 3, 3, 16});
  const std::size_t three = code_of(dyn::jit(conv(3)).llvm_ir(img, w)).size();
  const std::size_t nine = code_of(dyn::jit(conv(9)).llvm_ir(img, w)).size();
  CHECK(nine < three * 7 / 2);  // linear: ~3x, plus the shared prologue
  // The nine products are independent and of one shape: one GEMM call over
  // a batch of nine (issue 25, canonicalize.hpp's batch_small_dots).
  CHECK(count_of(dyn::jit(conv(9)).llvm_ir(img, w), "call void @dynstage_gemm_f32(") == 1);
}

TEST_CASE("compile cost: jf.stats() splits the compile time into trace, lowering and LLVM") {
  auto jf = dyn::jit([](auto x) { return dyn::sin(x) * 2.0 + x; });
  (void)jf(iota_array<double>({100}));
  const auto s = jf.stats();
  CHECK(s.compiles == 1);
  CHECK(s.trace_seconds > 0);
  CHECK(s.lower_seconds > 0);
  CHECK(s.llvm_seconds > 0);
  // The parts are measured inside the total (which also holds the entry's set-up).
  CHECK(s.trace_seconds + s.lower_seconds + s.llvm_seconds <= s.compile_seconds * (1 + 1e-9));
  (void)jf(iota_array<double>({100}));  // a hit adds nothing
  CHECK(jf.stats().compile_seconds == s.compile_seconds);
}

// Issue 25's ported NumPy FFT (benchmarks/realistic_kernels.hpp): 32-point
// DFTs by small matrix products, then radix-2 stages of slices, twiddles
// and concatenations, on (re, im) pairs. Its values are dyn::fft's, and its
// module stays small: the four 32 x 32 products of one shape are one
// batched product (canonicalize.hpp), and the slices are read in place.
TEST_CASE("compile cost: a Stockham FFT written with small products, slices and concatenations") {
  const std::int64_t n = 1024;
  dyn::Array<double> xr({n}), xi({n});
  for (std::int64_t k = 0; k < n; ++k) {
    xr.mutable_data()[k] = std::sin(0.37 * static_cast<double>(k) + 0.2);
    xi.mutable_data()[k] = std::cos(0.11 * static_cast<double>(k) * static_cast<double>(k % 7));
  }
  auto jf = dyn::jit(realistic::fft_stockham);
  const auto [yr, yi] = jf(xr, xi);
  const dyn::Array<std::complex<double>> want = dyn::fft::fft(dyn::complex(xr, xi));
  CHECK(dyn::allclose(yr, dyn::real(want), 1e-9, 1e-9));
  CHECK(dyn::allclose(yi, dyn::imag(want), 1e-9, 1e-9));
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(realistic::fft_stockham)(xr, xi);
  CHECK(cj.jaxpr->eqns.size() > 80);  // a program of the kind, not a toy
  const std::string ir = jf.llvm_ir(xr, xi);
  // 2,919 lines at 1024 points (3,355 before concatenate twins, lower_roots.hpp); the 2^15-point version had 23,834
  CHECK(count_of(ir, "\n") < 3200);
}

namespace {
// Loops LLVM vectorised: the blocks it names vector.body, vector.body12, ...
std::size_t vector_loops(const std::string& ir) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = ir.find("\nvector.body", at)) != std::string::npos; ++at) ++n;
  return n;
}
}  // namespace

// A concatenate's twin (llvm/lower_roots.hpp, concatenate_twin): the next
// root, a concatenate of pieces of the same types that does not read the
// first, is written in the first's nests (an FFT stage's real and imaginary
// parts), so the pair costs LLVM one loop per piece, not two.
TEST_CASE("compile cost: two concatenates of the same pieces share their loops") {
  const std::int64_t n = 1000;
  const dyn::Array<double> a = iota_array<double>({n}, 0.5), c = iota_array<double>({n}, -3.0);
  auto pair = [](auto x, auto y) {
    return std::tuple{dyn::concatenate({x + y, x - y}, 0), dyn::concatenate({x * y, dyn::exp(x / 1000.0)}, 0)};
  };
  auto one = [](auto x, auto y) { return dyn::concatenate({x + y, x - y}, 0); };
  const auto [p, q] = dyn::jit(pair)(a, c);
  const auto [ep, eq] = pair(a, c);
  CHECK((p.shape() == ep.shape() && test_util::vals(p) == test_util::vals(ep)));
  CHECK(dyn::allclose(q, eq, 1e-15, 1e-15));
  const std::size_t loops_one = vector_loops(dyn::jit(one).llvm_ir(a, c));
  CHECK(loops_one == 2);
  CHECK(vector_loops(dyn::jit(pair).llvm_ir(a, c)) == loops_one);

  // Not twins: the second reads the first (it must see it written), or its
  // pieces differ in shape; each is its own nests, with eager's values.
  auto reads = [](auto x, auto y) {
    auto first = dyn::concatenate({x, y}, 0);
    auto second = dyn::concatenate({dyn::slice(first, {1}, {1001}) * 2.0, dyn::slice(first, {999}, {1999})}, 0);
    return std::tuple{first, second};
  };
  const auto [r1, r2] = dyn::jit(reads)(a, c);
  const auto [w1, w2] = reads(a, c);
  CHECK((r1.shape() == w1.shape() && test_util::vals(r1) == test_util::vals(w1)));
  CHECK((r2.shape() == w2.shape() && test_util::vals(r2) == test_util::vals(w2)));
  const dyn::Array<double> s = iota_array<double>({7}, 1.0);
  auto shapes = [](auto x, auto y, auto z) {
    return std::tuple{dyn::concatenate({x, z}, 0), dyn::concatenate({z, y}, 0)};
  };
  const auto [s1, s2] = dyn::jit(shapes)(a, c, s);
  const auto [v1, v2] = shapes(a, c, s);
  CHECK((s1.shape() == v1.shape() && test_util::vals(s1) == test_util::vals(v1)));
  CHECK((s2.shape() == v2.shape() && test_util::vals(s2) == test_util::vals(v2)));
}
