// A reproducer exactly as dynstage_fuzz prints one (--doctest, fuzz_gen.cpp
// to_doctest), checked in so that the printed form is known to compile and
// pass: it is a test case of dynstage_jit_tests (the 'fuzz_llvm' test), and
// the meson test 'fuzz_doctest' (dynstage_fuzz --golden) fails when the
// printer's output for it changes. The program: seed 64's (a scan, take, a
// scatter-max, pad, rev, and a complex node with an fft), printed as the
// failure --fault jit makes (a perturbed jit output), not shrunk.
//
// After changing the printer, regenerate everything below the marker line:
//   dynstage_fuzz --seed 64 --count 1 --transforms none --fault jit --no-shrink --doctest
// (the lines from "// dynstage_fuzz --seed 64" to the TEST_CASE's closing brace).
#include <doctest/doctest.h>
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

// ---- dynstage_fuzz output (generated: do not edit below this line)
// dynstage_fuzz --seed 64 --count 1: jit vs eager, output 0
// A doctest case for a test file of dynstage_jit_tests (<dynstage/dynstage.hpp>, <cmath>,
// <complex>, <cstring>, <limits>, <optional>, <string>, <tuple>, <typeinfo>).
TEST_CASE("dynstage_fuzz seed 64: eager, jit and jit with 1 vs 2 threads agree") {
  // A concrete array as the fuzzer's interpreter uses it: lifted into the trace
  // (a constvar) while tracing, so that nothing is folded at trace time.
  auto L = [](const auto& ref, const auto& a) {
    using T = typename std::remove_cvref_t<decltype(a)>::value_type;
    if constexpr (dyn::is_tracer_v<std::remove_cvref_t<decltype(ref)>>)
      return dyn::detail::from_value<dyn::Tracer<T>>(dyn::detail::to_value(a));
    else return a;
  };
  // jit vs eager: exact outputs bitwise (a NaN matches any NaN); inexact ones
  // within ~16 ulp or tol * max(1, max |eager|) (docs/reliability.md).
  auto match = [](const auto& got, const auto& want, bool inexact, double tol) {
    using T = typename std::remove_cvref_t<decltype(want)>::value_type;
    if (got.shape() != want.shape()) return false;
    const T* x = got.data();
    const T* y = want.data();
    double scale = 1;
    if constexpr (std::is_floating_point_v<T>)
      for (std::int64_t i = 0; i < want.size(); ++i)
        if (std::isfinite(y[i])) scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
    for (std::int64_t i = 0; i < want.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) || std::isnan(y[i])) {
          if (!(std::isnan(x[i]) && std::isnan(y[i]))) return false;
        } else if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0) {
          const double d = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));
          if (!inexact || !std::isfinite(x[i]) || !std::isfinite(y[i]) ||
              (d > tol * scale && d > 16 * std::numeric_limits<T>::epsilon() * std::fabs(static_cast<double>(y[i]))))
            return false;
        }
      } else if (x[i] != y[i]) {
        return false;
      }
    }
    return true;
  };
  auto same_bits = [](const auto& a, const auto& b) {
    using T = typename std::remove_cvref_t<decltype(a)>::value_type;
    return a.shape() == b.shape() &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0);
  };
  const auto in0 = dyn::Array<std::uint32_t>(std::vector<std::int64_t>{1, 1}, std::vector<std::uint32_t>{4294967294});
  const auto in1 = dyn::Array<float>(std::vector<std::int64_t>{4, 1}, std::vector<float>{4.67850924f, 5.91740751f, -0.220564157f, -4.89199257f});
  const auto in2 = dyn::Array<std::uint8_t>(std::vector<std::int64_t>{3, 2, 1}, std::vector<std::uint8_t>{3, 255, 3, 3, 254, 3});
  const auto in3 = dyn::Array<float>(std::vector<std::int64_t>{3, 4, 1}, std::vector<float>{1.00000002e+30f, -5.72995996f, -3.55055785f, 7.27424383f, 4.79097462f, -0.548561037f, -2.89137578f, 5.46251488f, 1.00000002e+30f, -6.18095541f, -0.639139771f, -3.46747828f});
  const auto c1 = dyn::Array<std::int64_t>(std::vector<std::int64_t>{3}, std::vector<std::int64_t>{58, 65, 34});
  const auto c3 = dyn::Array<std::uint8_t>(std::vector<std::int64_t>{3, 1}, std::vector<std::uint8_t>{64, 222, 52});
  const auto c16 = dyn::Array<std::int32_t>(std::vector<std::int64_t>{3}, std::vector<std::int32_t>{-7, 0, 29});
  const auto c18 = dyn::Array<float>(std::vector<std::int64_t>{3, 1}, std::vector<float>{-std::numeric_limits<float>::infinity(), 6.07828999f, 2.36000681f});
  auto f = [&]([[maybe_unused]] auto x0, [[maybe_unused]] auto x1, [[maybe_unused]] auto x2, [[maybe_unused]] auto x3) {
    auto v0 = (x3 <= x3);
    auto v2 = L(x0, c1);
    auto v4 = L(x0, c3);
    auto v5 = dyn::take(v4, v2, 0);
    auto v6 = dyn::pad(x0, {{0, 0, 0}, {0, -1, 0}}, -2);
    auto v7 = dyn::rev(v6, {0, 1});
    auto t8 = dyn::scan([&]([[maybe_unused]] auto c9, [[maybe_unused]] auto x10) {
      auto [p11] = c9;
      auto [p12, p13] = x10;
      return std::make_tuple(std::make_tuple(p11), std::make_tuple(p11));
    }, std::make_tuple(v6), std::make_tuple(x1, x1), {.reverse = false});
    auto v14 = std::get<0>(std::get<0>(t8));
    auto v15 = std::get<0>(std::get<1>(t8));
    auto v17 = L(x0, c16);
    auto v19 = L(x0, c18);
    auto v20 = x1.at(v17).max(v19);
    auto v21 = [&] {
    using Z = decltype(dyn::complex(v20, x1));
    const Z z0 = dyn::astype<std::complex<float>>(v20) - std::complex<float>(0, 1) * x1;
    Z z = z0;
    z = dyn::fft::fft(z);
    return dyn::abs(z);
  }();
    auto v22 = dyn::logistic(v21);
    auto v23 = dyn::clamp(v21, v22, v21);
    auto v24 = dyn::where(v0, v23, v23);
    return std::make_tuple(v24, v15, v14, v7, v5);
  };
  auto jf = dyn::jit(f);
  using R = decltype(dyn::eager(f)(in0, in1, in2, in3));
  std::optional<R> want, got;
  std::string want_error, got_error;  // the error class (typeid), if any
  try {
    want = dyn::eager(f)(in0, in1, in2, in3);
  } catch (const dyn::Error& e) {
    want_error = typeid(e).name();
    MESSAGE("eager: " << e.what());
  }
  try {
    got = jf(in0, in1, in2, in3);
  } catch (const dyn::Error& e) {
    got_error = typeid(e).name();
    MESSAGE("jit: " << e.what());
  }
  REQUIRE(want_error == got_error);
  if (!want) return;
  CHECK(match(std::get<0>(*got), std::get<0>(*want), true, 1e-4));
  CHECK(match(std::get<1>(*got), std::get<1>(*want), false, 1e-11));
  CHECK(match(std::get<2>(*got), std::get<2>(*want), false, 1e-11));
  CHECK(match(std::get<3>(*got), std::get<3>(*want), false, 1e-11));
  CHECK(match(std::get<4>(*got), std::get<4>(*want), false, 1e-11));
  // The thread count never changes a result (runtime/threads.hpp).
  const int threads = dyn::num_threads();
  dyn::set_num_threads(1);
  const R one = jf(in0, in1, in2, in3);
  dyn::set_num_threads(2);
  const R two = jf(in0, in1, in2, in3);
  dyn::set_num_threads(threads);
  CHECK(same_bits(std::get<0>(one), std::get<0>(two)));
  CHECK(same_bits(std::get<1>(one), std::get<1>(two)));
  CHECK(same_bits(std::get<2>(one), std::get<2>(two)));
  CHECK(same_bits(std::get<3>(one), std::get<3>(two)));
  CHECK(same_bits(std::get<4>(one), std::get<4>(two)));
}
