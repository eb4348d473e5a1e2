// The math functions of API.md section 13 (issue 17 part 3): the jaxprs JAX
// prints for the same jnp/lax functions (jax/_src/numpy/ufuncs.py,
// jax/_src/lax/lax.py: a primitive where lax has one, the composition jnp
// writes otherwise), values against C's <cmath>, and the errors. dyn::jit
// runs them in tests/jit/test_jit_math.cpp; their accuracy is measured there.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::detail::Prim;
using test_util::message_of;
using test_util::str;
using namespace test_util::element_types;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using test_util::vals;

}  // namespace

TEST_SUITE("ops") {

TEST_CASE("math: one primitive each, printed as JAX prints lax.square, lax.expm1, ..., lax.integer_pow") {
  auto f = [](auto x) {
    return std::make_tuple(dyn::square(x), dyn::expm1(x), dyn::exp2(x), dyn::cbrt(x), dyn::sinh(x), dyn::cosh(x),
                           dyn::asin(x), dyn::acos(x), dyn::atan(x), dyn::asinh(x), dyn::acosh(x), dyn::atanh(x),
                           dyn::erf(x), dyn::erfc(x), dyn::lgamma(x), dyn::is_finite(x), dyn::integer_pow(x, 3),
                           dyn::integer_pow(x, -2));
  };
  const auto j = dyn::make_jaxpr(f)(Array<float>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = square a\n"
        "    c:f32[3] = expm1 a\n"
        "    d:f32[3] = exp2 a\n"
        "    e:f32[3] = cbrt a\n"
        "    f:f32[3] = sinh a\n"
        "    g:f32[3] = cosh a\n"
        "    h:f32[3] = asin a\n"
        "    i:f32[3] = acos a\n"
        "    j:f32[3] = atan a\n"
        "    k:f32[3] = asinh a\n"
        "    l:f32[3] = acosh a\n"
        "    m:f32[3] = atanh a\n"
        "    n:f32[3] = erf a\n"
        "    o:f32[3] = erfc a\n"
        "    p:f32[3] = lgamma a\n"
        "    q:bool[3] = is_finite a\n"
        "    r:f32[3] = integer_pow[y=3] a\n"
        "    s:f32[3] = integer_pow[y=-2] a\n"
        "  in (b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s) }");
  CHECK_NOTHROW(dyn::check_jaxpr(j));
  // Integers: square and integer_pow keep the dtype (jnp.square, lax.integer_pow);
  // the float functions compute in f32 (jnp's promote_args_inexact).
  auto g = [](auto x) { return std::make_tuple(dyn::square(x), dyn::integer_pow(x, 5), dyn::erf(x)); };
  const auto jg = dyn::make_jaxpr(g)(Array<i32>({2}));
  CHECK(str(jg) ==
        "{ lambda ; a:i32[2]. let\n"
        "    b:i32[2] = square a\n"
        "    c:i32[2] = integer_pow[y=5] a\n"
        "    d:f32[2] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    e:f32[2] = erf d\n"
        "  in (b, c, e) }");
  CHECK_NOTHROW(dyn::check_jaxpr(jg));
  // A bool: jnp.square's promote_dtypes_numeric makes it i32 first.
  const auto jb = dyn::make_jaxpr([](auto x) { return dyn::square(x); })(Array<bool>({2}));
  CHECK(str(jb) ==
        "{ lambda ; a:bool[2]. let\n"
        "    b:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "    c:i32[2] = square b\n"
        "  in (c,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(jb));
  static_assert(std::is_same_v<decltype(dyn::square(Array<bool>({1}))), Array<i32>>);
  CHECK(vals(dyn::square(Array<bool>({3}, {true, false, true}))) == std::vector<i32>{1, 0, 1});
  // nextafter: a binary primitive computed in a float dtype (lax.nextafter).
  const auto jn = dyn::make_jaxpr([](auto a, auto b) { return dyn::nextafter(a, b); })(Array<double>({2}),
                                                                                      Array<double>({2}));
  CHECK(str(jn) == "{ lambda ; a:f64[2] b:f64[2]. let c:f64[2] = nextafter a b in (c,) }");
}

TEST_CASE("math: erf_inv (lax.erf_inv): Giles' approximation, +-inf at +-1, NaN outside") {
  const auto j = dyn::make_jaxpr([](auto x) { return dyn::erf_inv(x); })(Array<double>({3}));
  CHECK(str(j) == "{ lambda ; a:f64[3]. let b:f64[3] = erf_inv a in (b,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(j));
  const auto y = dyn::array({-0.999, -0.3, 0.0, 0.5, 0.9999999});
  const auto x = dyn::erf_inv(dyn::erf(y));
  for (std::int64_t i = 0; i < 5; ++i) CHECK(x(i) == doctest::Approx(y(i)).epsilon(1e-8));
  const auto e = dyn::erf_inv(dyn::array({1.0, -1.0, 1.5, kNaN}));
  CHECK(e(0) == kInf);
  CHECK(e(1) == -kInf);
  CHECK(std::isnan(e(2)));
  CHECK(std::isnan(e(3)));
  const auto ef = dyn::erf_inv(Array<float>({3}, {0.5f, -1.0f, 0.0f}));
  CHECK(ef(0) == doctest::Approx(0.4769362762044699).epsilon(1e-6));
  CHECK(ef(1) == -INFINITY);
  CHECK(ef(2) == 0.0f);
}

TEST_CASE("math: log2, log10, isnan, isinf as jnp composes them") {
  const auto j2 = dyn::make_jaxpr([](auto x) { return dyn::log2(x); })(Array<float>({3}));
  CHECK(str(j2) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = log a\n"
        "    c:f32[3] = div b 0.6931471824645996:f32[]\n"
        "  in (c,) }");
  const auto j2d = dyn::make_jaxpr([](auto x) { return dyn::log2(x); })(Array<i32>({3}));
  CHECK(str(j2d) ==
        "{ lambda ; a:i32[3]. let\n"
        "    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    c:f32[3] = log b\n"
        "    d:f32[3] = div c 0.6931471824645996:f32[]\n"
        "  in (d,) }");
  const auto j10 = dyn::make_jaxpr([](auto x) { return dyn::log10(x); })(Array<double>({3}));
  CHECK(str(j10) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = log a\n"
        "    c:f64[3] = mul b 0.4342944819032518:f64[]\n"
        "  in (c,) }");
  const auto j10f = dyn::make_jaxpr([](auto x) { return dyn::log10(x); })(Array<float>({3}));
  CHECK(str(j10f) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = log a\n"
        "    c:f32[3] = mul b 0.4342944920063019:f32[]\n"
        "  in (c,) }");
  const auto jn = dyn::make_jaxpr([](auto x) { return dyn::isnan(x); })(Array<float>({3}));
  CHECK(str(jn) == "{ lambda ; a:f32[3]. let b:bool[3] = ne a a in (b,) }");
  const auto ji = dyn::make_jaxpr([](auto x) { return dyn::isinf(x); })(Array<double>({3}));
  CHECK(str(ji) == "{ lambda ; a:f64[3]. let b:f64[3] = abs a; c:bool[3] = eq b inf:f64[] in (c,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(ji));
  // An integer is never infinite: lax.full_like(x, False), a broadcast constant.
  const auto jii = dyn::make_jaxpr([](auto x) { return dyn::isinf(x); })(Array<i32>({3}));
  CHECK(str(jii) ==
        "{ lambda ; a:i32[3]. let\n"
        "    b:bool[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] False:bool[]\n"
        "  in (b,) }");
  // jnp.isfinite of an integer: lax.full_like(x, True); jnp.isnan: ne(x, x) on
  // the integers themselves (no float operation staged).
  const auto jfi = dyn::make_jaxpr([](auto x) { return dyn::is_finite(x); })(Array<u8>({2, 3}));
  CHECK(str(jfi) ==
        "{ lambda ; a:u8[2,3]. let\n"
        "    b:bool[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] True:bool[]\n"
        "  in (b,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(jfi));
  const auto jni = dyn::make_jaxpr([](auto x) { return dyn::isnan(x); })(Array<i16>({4}));
  CHECK(str(jni) == "{ lambda ; a:i16[4]. let b:bool[4] = ne a a in (b,) }");
  const auto jsi = dyn::make_jaxpr([](auto x) { return dyn::isinf(x); })(Array<i64>({}));
  // (rank 0: JAX's output is the literal False; dynstage stages a constant output as its
  // convert_element_type, docs/jaxpr.md)
  CHECK(str(jsi) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:bool[] = convert_element_type[new_dtype=bool weak_type=False] False:bool[]\n"
        "  in (b,) }");
  // Values.
  const auto x = dyn::array({0.25, 1.0, 8.0, 1000.0});
  CHECK(vals(dyn::log2(x)) == std::vector<double>{-2.0, 0.0, 3.0, std::log(1000.0) / std::log(2.0)});
  CHECK(dyn::log10(x)(3) == doctest::Approx(3.0).epsilon(1e-15));
  const auto s = dyn::array({kNaN, kInf, -kInf, 0.0, -1.5});
  CHECK(vals(dyn::isnan(s)) == std::vector<bool>{true, false, false, false, false});
  CHECK(vals(dyn::isinf(s)) == std::vector<bool>{false, true, true, false, false});
  CHECK(vals(dyn::is_finite(s)) == std::vector<bool>{false, false, false, true, true});
  const Array<i32> n({2}, {1, -7});
  CHECK(vals(dyn::isnan(n)) == std::vector<bool>{false, false});
  CHECK(vals(dyn::isinf(n)) == std::vector<bool>{false, false});
  CHECK(vals(dyn::is_finite(n)) == std::vector<bool>{true, true});
}

// jnp.hypot's equations (ufuncs.py), in dynstage's canonical order (post-order
// from the output, docs/jaxpr.md "Equation order"; JAX lists the same
// equations in creation order).
TEST_CASE("math: hypot as jnp.hypot writes it (overflow-free, inf wins over NaN)") {
  const auto j = dyn::make_jaxpr([](auto a, auto b) { return dyn::hypot(a, b); })(Array<float>({3}), Array<float>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:f32[3] b:f32[3]. let\n"
        "    c:f32[3] = abs a\n"
        "    d:bool[3] = eq c inf:f32[]\n"
        "    e:f32[3] = abs b\n"
        "    f:bool[3] = eq e inf:f32[]\n"
        "    g:bool[3] = or d f\n"
        "    h:f32[3] = max c e\n"
        "    i:bool[3] = eq h 0.0:f32[]\n"
        "    j:f32[3] = min c e\n"
        "    k:bool[3] = eq h 0.0:f32[]\n"
        "    l:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0:f32[]\n"
        "    m:f32[3] = select_n k h l\n"
        "    n:f32[3] = div j m\n"
        "    o:f32[3] = square n\n"
        "    p:f32[3] = add 1.0:f32[] o\n"
        "    q:f32[3] = sqrt p\n"
        "    r:f32[3] = mul h q\n"
        "    s:f32[3] = select_n i r h\n"
        "    t:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] inf:f32[]\n"
        "    u:f32[3] = select_n g s t\n"
        "  in (u,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(j));
  const auto a = dyn::array({3.0, 0.0, -5.0, 1e300, kInf, kNaN});
  const auto b = dyn::array({4.0, 0.0, 12.0, 1e300, kNaN, 1.0});
  const auto h = dyn::hypot(a, b);
  CHECK(h(0) == 5.0);
  CHECK(h(1) == 0.0);
  CHECK(h(2) == 13.0);
  CHECK(h(3) == doctest::Approx(std::sqrt(2.0) * 1e300));  // no overflow
  CHECK(h(4) == kInf);
  CHECK(std::isnan(h(5)));
  // Integers compute in f32.
  CHECK(dyn::hypot(Array<i32>({1}, {3}), 4)(0) == 5.0f);
}

TEST_CASE("math: logical_and/or/xor/not: bools as they are, other dtypes through ne(x, 0)") {
  const auto jb = dyn::make_jaxpr([](auto a, auto b) {
    return std::make_tuple(dyn::logical_and(a, b), dyn::logical_or(a, b), dyn::logical_xor(a, b), dyn::logical_not(a));
  })(Array<bool>({2}), Array<bool>({2}));
  CHECK(str(jb) ==
        "{ lambda ; a:bool[2] b:bool[2]. let\n"
        "    c:bool[2] = and a b\n"
        "    d:bool[2] = or a b\n"
        "    e:bool[2] = xor a b\n"
        "    f:bool[2] = not a\n"
        "  in (c, d, e, f) }");
  const auto ji = dyn::make_jaxpr([](auto a, auto b) { return std::make_tuple(dyn::logical_and(a, b), dyn::logical_not(b)); })(
      Array<i32>({2}), Array<float>({2}));
  CHECK(str(ji) ==
        "{ lambda ; a:i32[2] b:f32[2]. let\n"
        "    c:f32[2] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    d:bool[2] = ne c 0.0:f32[]\n"
        "    e:bool[2] = ne b 0.0:f32[]\n"
        "    f:bool[2] = and d e\n"
        "    g:bool[2] = ne b 0.0:f32[]\n"
        "    h:bool[2] = not g\n"
        "  in (f, h) }");
  CHECK_NOTHROW(dyn::check_jaxpr(ji));
  const Array<i32> x({4}, {0, 0, 3, -1});
  const Array<double> y({4}, {0, 2.5, 0, kNaN});
  CHECK(vals(dyn::logical_and(x, y)) == std::vector<bool>{false, false, false, true});
  CHECK(vals(dyn::logical_or(x, y)) == std::vector<bool>{false, true, true, true});
  CHECK(vals(dyn::logical_xor(x, y)) == std::vector<bool>{false, true, true, false});
  CHECK(vals(dyn::logical_not(x)) == std::vector<bool>{true, true, false, false});
}

TEST_CASE("math: values of the primitives against <cmath>") {
  const auto x = dyn::array({-0.75, -0.1, 0.0, 0.3, 0.9});
  const std::vector<double> xs(x.data(), x.data() + x.size());
  auto same = [&](const Array<double>& got, double (*f)(double)) {
    for (std::size_t i = 0; i < xs.size(); ++i) {
      CAPTURE(xs[i]);
      const double want = f(xs[i]);
      if (std::isnan(want)) CHECK(std::isnan(got(static_cast<std::int64_t>(i))));
      else CHECK(got(static_cast<std::int64_t>(i)) == want);
    }
  };
  same(dyn::expm1(x), std::expm1);
  same(dyn::exp2(x), std::exp2);
  same(dyn::cbrt(x), std::cbrt);
  same(dyn::sinh(x), std::sinh);
  same(dyn::cosh(x), std::cosh);
  same(dyn::asin(x), std::asin);
  same(dyn::acos(x), std::acos);
  same(dyn::atan(x), std::atan);
  same(dyn::asinh(x), std::asinh);
  same(dyn::acosh(x), std::acosh);  // NaN below 1
  same(dyn::atanh(x), std::atanh);
  same(dyn::erf(x), std::erf);
  same(dyn::erfc(x), std::erfc);
  same(dyn::lgamma(x), std::lgamma);
  CHECK(vals(dyn::square(Array<i32>({3}, {-3, 46341, 7}))) == std::vector<i32>{9, -2147479015, 49});  // wraps
  CHECK(vals(dyn::integer_pow(Array<i32>({3}, {2, -3, 0}), 5)) == std::vector<i32>{32, -243, 0});
  CHECK(vals(dyn::integer_pow(Array<u8>({2}, {3, 200}), 2)) == std::vector<u8>{9, 64});
  CHECK(vals(dyn::integer_pow(dyn::array({2.0, -0.5}), -3)) == std::vector<double>{0.125, -8.0});
  CHECK(vals(dyn::integer_pow(dyn::array({0.0, kNaN}), 0)) == std::vector<double>{1.0, 1.0});
  const double tiny = std::numeric_limits<double>::denorm_min();
  CHECK(vals(dyn::nextafter(dyn::array({1.0, 0.0, -0.0, 1.0, kInf}), dyn::array({2.0, -1.0, 1.0, 1.0, 0.0}))) ==
        std::vector<double>{std::nextafter(1.0, 2.0), -tiny, tiny, 1.0, std::numeric_limits<double>::max()});
  CHECK(std::isnan(dyn::nextafter(dyn::array({kNaN}), 1.0)(0)));
}

TEST_CASE("math: errors: float-only primitives reject integers, integer_pow refuses negative integer powers") {
  using dyn::detail::NoParams;
  const dyn::AnyArray i(Array<i32>({2}, {1, 2}));
  for (Prim p : {Prim::expm1, Prim::lgamma, Prim::erf, Prim::is_finite, Prim::nextafter}) {
    const std::vector<dyn::AnyArray> in = p == Prim::nextafter ? std::vector<dyn::AnyArray>{i, i} : std::vector<dyn::AnyArray>{i};
    CHECK(message_of<dyn::TypeError>([&] { dyn::detail::impl(p, in, NoParams{}); }) ==
          std::string(dyn::detail::prim_name(p)) + " does not accept dtype i32; it requires a floating-point dtype");
  }
  CHECK(message_of<dyn::TypeError>([&] { dyn::detail::impl(Prim::square, {Array<bool>({1}, {true})}, NoParams{}); }) ==
        "square does not accept dtype bool; it requires a numeric dtype (integer, floating-point or complex)");
  const Array<i32> x({2}, {1, 2});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::integer_pow(x, -2); }) ==
        "integer_pow: integers cannot be raised to negative powers, got integer_pow(x, -2) with x of dtype i32; "
        "convert x to a float dtype first");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr([](auto v) { return dyn::integer_pow(v, -1); })(x); })
            .starts_with("integer_pow: integers cannot be raised to negative powers"));
  // The user's line is named.
  try {
    (void)dyn::integer_pow(x, -2);
    FAIL("no error");
  } catch (const dyn::TypeError& e) {
    CHECK(std::string(e.what()).find("test_math.cpp") != std::string::npos);
  }
}

}  // TEST_SUITE
