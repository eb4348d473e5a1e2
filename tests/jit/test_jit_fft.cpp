// The fft primitive under dyn::jit (issue 24, part 2): the compiled kernel
// calls the runtime's dynstage_fft, the routine eager calls, so jit and eager
// agree exactly; one compile serves every size of a symbolic length (the
// lengths are read when the kernel runs, FFTW's plans made then); vmap under
// jit; several threads transforming at once (the plan cache's lock).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <class T>
std::vector<T> vals(const Array<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.size());
}

template <class T>
Array<T> wave(std::vector<std::int64_t> shape, double f) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<T>(std::sin(f * i * i + 0.3) + 0.1 * i);
  return Array<T>(shape, v);
}

}  // namespace

TEST_CASE("jit fft: every function, norms, axes, fused producers and consumers: jit equals eager exactly") {
  auto f = [](auto x, auto z) {
    auto a = dyn::fft::fft(x * 2.0);                                      // a producer fused into the operand's buffer
    auto b = dyn::abs(dyn::fft::ifft(z, 6, 0, "ortho"));                  // crop/pad along axis 0, a consumer
    auto c = dyn::fft::rfft(x, std::nullopt, -1, "forward");
    auto d = dyn::fft::irfft(c, 8, -1, "forward");
    auto e = dyn::fft::fft2(z, std::nullopt, {1, 0});
    auto g = dyn::fft::ifftn(dyn::fft::fftn(x));
    return std::make_tuple(a, b, c, d, e, g);
  };
  const Array<double> x = wave<double>({3, 8}, 0.7);
  const Array<c128> z = dyn::astype<c128>(wave<double>({5, 4}, 0.3)) * c128(1, 0.5);
  const auto want = f(x, z);
  const auto got = dyn::jit(f)(x, z);
  CHECK(vals(std::get<0>(got)) == vals(std::get<0>(want)));
  CHECK(vals(std::get<1>(got)) == vals(std::get<1>(want)));
  CHECK(vals(std::get<2>(got)) == vals(std::get<2>(want)));
  CHECK(vals(std::get<3>(got)) == vals(std::get<3>(want)));
  CHECK(vals(std::get<4>(got)) == vals(std::get<4>(want)));
  CHECK(vals(std::get<5>(got)) == vals(std::get<5>(want)));
  CHECK(std::get<1>(got).shape() == std::vector<std::int64_t>{6, 4});
  // The round trips are the input.
  for (std::int64_t i = 0; i < x.size(); ++i) {
    CHECK(std::abs(std::get<3>(got).data()[i] - x.data()[i]) <= 1e-13);
    CHECK(std::abs(std::get<5>(got).data()[i] - x.data()[i]) <= 1e-13);
  }
  // f32 / c64.
  auto h = [](auto v) { return dyn::fft::irfft(dyn::fft::rfft(v) * 2.0f); };
  const Array<float> xf = wave<float>({2, 6}, 0.5);
  CHECK(vals(dyn::jit(h)(xf)) == vals(h(xf)));
}

TEST_CASE("jit fft: a symbolic length: one compile serves 8, 12, 5 and 1024 points") {
  auto f = [](auto x) { return dyn::fft::fft(x, std::nullopt, -1, "ortho") + dyn::sum(dyn::fft::rfft(x)); };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(2, n)"});
  for (std::int64_t n : {8, 12, 5, 1024}) {
    CAPTURE(n);
    const Array<double> x = wave<double>({2, n}, 0.11);
    const Array<c128> got = jf(x);
    REQUIRE(got.shape() == std::vector<std::int64_t>{2, n});
    CHECK(vals(got) == vals(f(x)));
  }
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().traces == 1);
}

TEST_CASE("jit fft: vmap under jit equals a loop of calls") {
  auto f = [](auto x) { return dyn::fft::fft2(x); };
  const Array<double> xs = wave<double>({4, 3, 5}, 0.2);
  const Array<c128> got = dyn::jit(dyn::vmap(f))(xs);
  REQUIRE(got.shape() == std::vector<std::int64_t>{4, 3, 5});
  for (std::int64_t i = 0; i < 4; ++i) {
    std::vector<double> s(xs.data() + 15 * i, xs.data() + 15 * i + 15);
    const auto one = vals(f(Array<double>({3, 5}, s)));
    for (std::int64_t k = 0; k < 15; ++k) CHECK(std::abs(got.data()[15 * i + k] - one[static_cast<std::size_t>(k)]) <= 1e-13);
  }
}

TEST_CASE("jit fft: four threads transforming different sizes at once agree with eager") {
  auto f = [](auto x) { return dyn::fft::fft(x); };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
  std::vector<int> ok(4, 0);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      bool good = true;
      for (int rep = 0; rep < 20; ++rep) {
        const Array<double> x = wave<double>({64 + 7 * t + rep}, 0.05 * (t + 1));
        good = good && vals(jf(x)) == vals(f(x));
      }
      ok[static_cast<std::size_t>(t)] = good;
    });
  for (auto& t : ts) t.join();
  CHECK(ok == std::vector<int>{1, 1, 1, 1});
}

TEST_CASE("jit fft: inside a for_loop body, three transforms and inverses: jit equals eager") {
  auto f = [](auto x) {
    return dyn::for_loop(0, 3, 1)([](auto, auto c) { return dyn::fft::ifft(dyn::fft::fft(c) * 2.0); })(x);
  };
  const Array<c128> x = dyn::astype<c128>(wave<double>({2, 6}, 0.4));
  const Array<c128> got = dyn::jit(f)(x), eager = f(x);
  CHECK(vals(got) == vals(eager));
  for (std::int64_t i = 0; i < x.size(); ++i) CHECK(std::abs(got.data()[i] - 8.0 * x.data()[i]) <= 1e-13);
}

TEST_CASE("jit fft: dyn::export_aot refuses an fft, a call of dynstage's runtime") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dynstage_test_fft_aot";
  std::filesystem::create_directories(dir);
  auto f = [](const auto& x) { return dyn::fft::irfft(dyn::fft::rfft(x) * 2.0, 8); };
  const std::string m =
      test_util::message_of<dyn::TypeError>([&] { dyn::export_aot(f, "spectrum", dir.string(), dyn::arg<double>("(8,)")); });
  CHECK(m == "dyn::export_aot: the function uses fft (FFTW or dynstage's transforms, through dynstage's runtime) "
             "(dynstage's runtime routine dynstage_fft), which an exported object cannot contain; ahead-of-time "
             "export supports the primitives whose code LLVM generates");
  CHECK(!std::filesystem::exists(dir / "spectrum.o"));
}
