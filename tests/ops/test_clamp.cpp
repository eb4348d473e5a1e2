// clamp(lo, x, hi) and clip(x, lo, hi) (API.md §13; lax.clamp, jnp.clip):
// the jaxpr JAX prints (`clamp 0:i32[] a 2:i32[]`), values against the
// definition min(max(x, lo), hi) with NaN propagating from every operand,
// the shape and dtype rules and their errors. dyn::jit runs the same
// functions in control/test_jit_switch.cpp.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../test_util.hpp"

using test_util::message_of;
using test_util::str;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_SUITE("ops") {

TEST_CASE("clamp: the jaxpr as JAX prints lax.clamp, weak literals take the operand's dtype") {
  auto f = [](auto x) { return dyn::clamp(0, x, 2); };
  auto j = dyn::make_jaxpr(f)(dyn::Array<std::int32_t>({3}));
  CHECK(str(j) == "{ lambda ; a:i32[3]. let b:i32[3] = clamp 0:i32[] a 2:i32[] in (b,) }");
  dyn::check_jaxpr(j);
  // Float literals meet an f32 operand: f32 literals, an f32 result.
  auto g = [](auto x) { return dyn::clamp(-1.5, x, 1.0); };
  auto jg = dyn::make_jaxpr(g)(dyn::Array<float>({2, 3}));
  CHECK(str(jg) == "{ lambda ; a:f32[2,3]. let b:f32[2,3] = clamp -1.5:f32[] a 1.0:f32[] in (b,) }");
  // Bounds of x's shape are operands as they are.
  auto h = [](auto lo, auto x, auto hi) { return dyn::clamp(lo, x, hi); };
  auto jh = dyn::make_jaxpr(h)(dyn::Array<double>({4}), dyn::Array<double>({4}), 0.5);
  CHECK(str(jh) == "{ lambda ; a:f64[4] b:f64[4] c:f64[]. let d:f64[4] = clamp a b c in (d,) }");
  dyn::check_jaxpr(jh);
}

TEST_CASE("clip: numpy broadcasting of all three, then one clamp") {
  auto f = [](auto x, auto lo) { return dyn::clip(x, lo, 0.5); };
  auto j = dyn::make_jaxpr(f)(dyn::Array<double>({2, 3}), dyn::Array<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:f64[2,3] b:f64[3]. let\n"
        "    c:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b\n"
        "    d:f64[2,3] = clamp c a 0.5:f64[]\n"
        "  in (d,) }");
  dyn::check_jaxpr(j);
  // x itself broadcasts when a bound is larger.
  auto x = dyn::Array<double>::scalar(0.25);
  auto lo = dyn::array({0.0, 0.5, 1.0});
  auto r = dyn::clip(x, lo, 0.75);
  CHECK(r.shape() == std::vector<std::int64_t>{3});
  CHECK(dyn::array_equal(r, dyn::array({0.25, 0.5, 0.75})));
  CHECK(dyn::array_equal(dyn::eager(f)(dyn::Array<double>({2, 3}, {-1, 0.1, 2, 0.3, 0.7, -0.2}), dyn::array({0.0, 0.2, 0.4})),
                         dyn::Array<double>({2, 3}, {0.0, 0.2, 0.5, 0.3, 0.5, 0.4})));
}

TEST_CASE("clamp: values, lo > hi, and NaN in any operand gives NaN (XLA's min(max(x, lo), hi))") {
  auto xi = dyn::Array<std::int32_t>({5}, {-7, 0, 1, 2, 9});
  CHECK(dyn::array_equal(dyn::clamp(0, xi, 2), dyn::Array<std::int32_t>({5}, {0, 0, 1, 2, 2})));
  CHECK(dyn::array_equal(dyn::clamp(3, xi, 1), dyn::Array<std::int32_t>({5}, {1, 1, 1, 1, 1})));  // hi wins
  auto x = dyn::array({kNaN, -3.0, 0.25, 4.0});
  auto r = dyn::clamp(0.0, x, 1.0);
  CHECK(std::isnan(r(0)));
  CHECK(r(1) == 0.0);
  CHECK(r(2) == 0.25);
  CHECK(r(3) == 1.0);
  auto lo_nan = dyn::clamp(kNaN, x, 1.0);
  auto hi_nan = dyn::clamp(0.0, x, kNaN);
  for (std::int64_t i = 0; i < 4; ++i) {
    CHECK(std::isnan(lo_nan(i)));
    CHECK(std::isnan(hi_nan(i)));
  }
  // Elementwise bounds, and bool (max is or, min is and).
  auto lo = dyn::array({1.0, kNaN, 0.0, 5.0});
  auto e = dyn::clamp(lo, x, 2.0);
  CHECK(std::isnan(e(0)));
  CHECK(std::isnan(e(1)));
  CHECK(e(2) == 0.25);
  CHECK(e(3) == 2.0);
  auto b = dyn::Array<bool>({2}, {true, false});
  CHECK(dyn::array_equal(dyn::clamp(true, b, true), dyn::Array<bool>({2}, {true, true})));
  // Mixed dtypes promote as everywhere (an i32 array bound and an f64 x).
  auto m = dyn::clamp(dyn::Array<std::int32_t>({4}, {1, 1, 1, 1}), x, 3);
  static_assert(std::is_same_v<decltype(m), dyn::Array<double>>);
  CHECK(m(1) == 1.0);
  CHECK(m(3) == 3.0);
}

TEST_CASE("clamp and clip: shape errors name the operation and the shapes") {
  auto x = dyn::Array<double>({3});
  auto lo = dyn::Array<double>({2});
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::clamp(lo, x, 1.0); }) ==
        "clamp requires min.shape == operand.shape or min.shape == (), got min.shape=(2,) and operand.shape=(3,)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::clamp(0.0, x, lo); }) ==
        "clamp requires max.shape == operand.shape or max.shape == (), got max.shape=(2,) and operand.shape=(3,)");
  auto f = [](auto a, auto l) { return dyn::clamp(l, a, 1.0); };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(f)(x, lo); }) ==
        "clamp requires min.shape == operand.shape or min.shape == (), got min.shape=(2,) and operand.shape=(3,)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::clip(x, lo, 1.0); }) ==
        "clip got incompatible shapes for broadcasting: (2,), (3,), ()");
  // The primitive itself requires equal dtypes (lax's rule; the operations promote first).
  using namespace dyn::detail;
  const Aval f64{dyn::DType::f64, {dyn::Dim(3)}, false, std::nullopt};
  const Aval f32{dyn::DType::f32, {}, false, std::nullopt};
  CHECK(message_of<dyn::TypeError>([&] { abstract_eval(Prim::clamp, {f32, f64, f32}, NoParams{}); }) ==
        "clamp requires arguments to have the same dtypes, got f32, f64, f32");
}

}  // TEST_SUITE
