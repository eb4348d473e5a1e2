// A reproducer exactly as dynstage_fuzz prints one (--doctest, fuzz_gen.cpp
// to_doctest), checked in so that the printed form is known to compile and
// pass: it is a test case of dynstage_jit_tests (the 'fuzz_llvm' test), and
// the meson test 'fuzz_doctest' (dynstage_fuzz --golden) fails when the
// printer's output for it changes. The program: seed 881's (two collectives
// in shard_maps, a scatter at a negative C++ integer index, switch_, while
// loops), printed as the failure --fault jit makes (a perturbed jit output),
// not shrunk.
//
// After changing the printer, regenerate everything below the marker line:
//   dynstage_fuzz --seed 881 --count 1 --transforms none --fault jit --no-shrink --doctest
// (the lines from "// dynstage_fuzz --seed 881" to the TEST_CASE's closing brace).
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
// dynstage_fuzz --seed 881 --count 1: jit vs eager, output 0
// A doctest case for a test file of dynstage_jit_tests (<dynstage/dynstage.hpp>, <cmath>,
// <complex>, <cstring>, <limits>, <optional>, <string>, <tuple>, <typeinfo>).
TEST_CASE("dynstage_fuzz seed 881: eager, jit and jit with 1 vs 2 threads agree") {
  // A concrete array as the fuzzer's interpreter uses it: lifted into the trace
  // (a constvar) while tracing, so that nothing is folded at trace time.
  auto L = [](const auto& ref, const auto& a) {
    using T = typename std::remove_cvref_t<decltype(a)>::value_type;
    if constexpr (dyn::is_tracer_v<std::remove_cvref_t<decltype(ref)>>)
      return dyn::detail::from_value<dyn::Tracer<T>>(dyn::detail::to_value(a));
    else return a;
  };
  // jit vs eager: exact outputs bitwise (a NaN matches any NaN); inexact ones
  // within ~16 ulp or tol * max(1, max |eager|, the magnitude of what they were
  // computed from), or both non-finite (docs/reliability.md).
  auto match = [](const auto& got, const auto& want, bool inexact, double tol, double magnitude) {
    using T = typename std::remove_cvref_t<decltype(want)>::value_type;
    if (got.shape() != want.shape()) return false;
    const T* x = got.data();
    const T* y = want.data();
    double scale = std::max(1.0, magnitude);
    if constexpr (std::is_floating_point_v<T>)
      for (std::int64_t i = 0; i < want.size(); ++i)
        if (std::isfinite(y[i])) scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
    for (std::int64_t i = 0; i < want.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (inexact && !std::isfinite(x[i]) && !std::isfinite(y[i])) continue;
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
  const auto in0 = dyn::Array<std::int16_t>(std::vector<std::int64_t>{5, 2, 0}, std::vector<std::int16_t>{});
  const auto in1 = dyn::Array<std::int64_t>(std::vector<std::int64_t>{1, 2, 0}, std::vector<std::int64_t>{});
  const auto in2 = dyn::Array<std::uint32_t>(std::vector<std::int64_t>{5, 3, 2}, std::vector<std::uint32_t>{4294967218, 4294967211, 4294967217, 64, 37, 4294967209, 4294967259, 4294967254, 97, 4294967258, 58, 61, 2, 4294967265, 34, 74, 40, 4294967290, 4294967269, 4294967205, 63, 4294967280, 29, 4294967258, 30, 4294967246, 94, 4294967283, 4294967280, 4294967295});
  const auto c8 = dyn::Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{9223372036854775807});
  const auto c15 = dyn::Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{76});
  const auto c29 = dyn::Array<bool>(std::vector<std::int64_t>{}, std::vector<bool>{true});
  const auto c39 = dyn::Array<std::int32_t>(std::vector<std::int64_t>{}, std::vector<std::int32_t>{-44});
  const auto c50 = dyn::Array<bool>(std::vector<std::int64_t>{}, std::vector<bool>{true});
  const auto c53 = dyn::Array<bool>(std::vector<std::int64_t>{}, std::vector<bool>{true});
  auto f = [&]([[maybe_unused]] auto x0, [[maybe_unused]] auto x1, [[maybe_unused]] auto x2) {
    auto v0 = (x2 >= x2);
    auto v1 = dyn::broadcast_to(v0, dyn::Shape{dyn::Dim(2), dyn::Dim(v0.shape(0)), dyn::Dim(v0.shape(1)), dyn::Dim(v0.shape(2))});
    auto t2 = dyn::while_loop([&](auto k3, [[maybe_unused]] auto q4, [[maybe_unused]] auto q5, [[maybe_unused]] auto q6) {
      auto v7 = dyn::sum(q5);
      auto v9 = L(x0, c8);
      auto v10 = (v7 == v9);
      return ((k3 < 3) & v10);
    }, {.preserve_dimensions = false})([&]([[maybe_unused]] auto k11, [[maybe_unused]] auto p12, [[maybe_unused]] auto p13, [[maybe_unused]] auto p14) {
      auto v16 = L(x0, c15);
      auto t17 = dyn::switch_(v16, [&]([[maybe_unused]] auto p18) {
        return p18;
      }, [&]([[maybe_unused]] auto p19) {
        return p19;
      }, [&]([[maybe_unused]] auto p20) {
        auto v21 = !(p13);
        return v21;
      })(p13);
      auto v22 = t17;
      auto v23 = dyn::concatenate({p14, p14}, 0);
      return std::make_tuple(k11 + 1, v22, p13, v23);
    })(dyn::Array<std::int64_t>::scalar(0), v1, v1, v0);
    auto v24 = std::get<1>(t2);
    auto v25 = std::get<2>(t2);
    auto v26 = std::get<3>(t2);
    auto v27 = dyn::transpose(v26, {2, 1, 0});
    auto v28 = dyn::where(v25, v25, v25);
    auto v30 = L(x0, c29);
    auto v31 = dyn::clamp(v30, v1, v1);
    auto v32 = (x0 + v30);
    auto t33 = dyn::while_loop([&](auto k34, [[maybe_unused]] auto q35, [[maybe_unused]] auto q36, [[maybe_unused]] auto q37) {
      auto v38 = dyn::sum(q37);
      auto v40 = L(x0, c39);
      auto v41 = (v38 == v40);
      return ((k34 < 1) & v41);
    }, {.preserve_dimensions = true})([&]([[maybe_unused]] auto k42, [[maybe_unused]] auto p43, [[maybe_unused]] auto p44, [[maybe_unused]] auto p45) {
      auto v46 = dyn::shard_map([](auto v) { return dyn::all_gather(v, "x", 1, true); }, dyn::Mesh({"x"}, {1}), {dyn::P()}, dyn::P())(p43);
      return std::make_tuple(k42 + 1, v46, p45, p45);
    })(dyn::Array<std::int64_t>::scalar(0), v31, x0, v32);
    auto v47 = std::get<1>(t33);
    auto v48 = std::get<2>(t33);
    auto v49 = std::get<3>(t33);
    auto v51 = L(x0, c50);
    auto v52 = dyn::shard_map([](auto v) { return dyn::all_gather(v, "x", 0); }, dyn::Mesh({"x"}, {1}), {dyn::P()}, dyn::P())(v51);
    auto v54 = L(x0, c53);
    auto v55 = v52.at(std::int64_t{-1}).set(v54);
    auto v56 = dyn::squeeze(v55, std::vector<std::int64_t>{0});
    return std::make_tuple(v56, v49, v48, v28, v27, v24);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n, ...)", "...", "(n, ...)"});
  using R = decltype(dyn::eager(f)(in0, in1, in2));
  std::optional<R> want, got;
  std::string want_error, got_error;  // the error class (typeid), if any
  try {
    want = dyn::eager(f)(in0, in1, in2);
  } catch (const dyn::Error& e) {
    want_error = typeid(e).name();
    MESSAGE("eager: " << e.what());
  }
  try {
    got = jf(in0, in1, in2);
  } catch (const dyn::Error& e) {
    got_error = typeid(e).name();
    MESSAGE("jit: " << e.what());
  }
  REQUIRE(want_error == got_error);
  if (!want) return;
  CHECK(match(std::get<0>(*got), std::get<0>(*want), false, 1e-11, 0));
  CHECK(match(std::get<1>(*got), std::get<1>(*want), false, 1e-11, 0));
  CHECK(match(std::get<2>(*got), std::get<2>(*want), false, 1e-11, 0));
  CHECK(match(std::get<3>(*got), std::get<3>(*want), false, 1e-11, 0));
  CHECK(match(std::get<4>(*got), std::get<4>(*want), false, 1e-11, 0));
  CHECK(match(std::get<5>(*got), std::get<5>(*want), false, 1e-11, 0));
  // The thread count never changes a result (runtime/threads.hpp).
  const int threads = dyn::num_threads();
  dyn::set_num_threads(1);
  const R one = jf(in0, in1, in2);
  dyn::set_num_threads(2);
  const R two = jf(in0, in1, in2);
  dyn::set_num_threads(threads);
  CHECK(same_bits(std::get<0>(one), std::get<0>(two)));
  CHECK(same_bits(std::get<1>(one), std::get<1>(two)));
  CHECK(same_bits(std::get<2>(one), std::get<2>(two)));
  CHECK(same_bits(std::get<3>(one), std::get<3>(two)));
  CHECK(same_bits(std::get<4>(one), std::get<4>(two)));
  CHECK(same_bits(std::get<5>(one), std::get<5>(two)));
}
