// Complex element types (issue 24, part 1): std::complex<float> (c64) and
// std::complex<double> (c128). Written from the contract: promotion
// as jnp.promote_types, JAX's jaxpr text (c64, c128, complex literals as
// Python prints them), eager values against hand-computed constants, the
// new primitives real, imag, conj, complex, reductions and dot, and the
// errors for what complex numbers do not have (order, bits, floor, %).
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::DType;
using c64 = std::complex<float>;
using c128 = std::complex<double>;
using test_util::message_of;

constexpr double kPi = 3.14159265358979323846;

using test_util::vals;

// |got - want| <= tol * max(1, |want|) for every element.
template <class T>
bool near(const Array<T>& a, const std::vector<T>& want, double tol) {
  if (a.size() != static_cast<std::int64_t>(want.size())) return false;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(std::complex<double>(a.data()[i]) - std::complex<double>(want[i]));
    if (!(err <= tol * std::max(1.0, std::abs(std::complex<double>(want[i]))))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// The dtype table.

TEST_CASE("complex: dtype names, sizes and C++ types") {
  CHECK(dyn::dtype_v<c64> == DType::c64);
  CHECK(dyn::dtype_v<c128> == DType::c128);
  CHECK(dyn::dtype_name(DType::c64) == "c64");
  CHECK(dyn::dtype_name(DType::c128) == "c128");
  CHECK(dyn::dtype_numpy_name(DType::c64) == "complex64");
  CHECK(dyn::dtype_numpy_name(DType::c128) == "complex128");
  CHECK(dyn::dtype_size(DType::c64) == 8);
  CHECK(dyn::dtype_size(DType::c128) == 16);
  CHECK(dyn::is_complex(DType::c64));
  CHECK(!dyn::is_float(DType::c64));
  CHECK(dyn::is_inexact(DType::c128));
  CHECK(dyn::real_dtype(DType::c64) == DType::f32);
  CHECK(dyn::complex_dtype(DType::f64) == DType::c128);
  static_assert(std::is_same_v<dyn::element_t<DType::c128>, c128>);
  static_assert(dyn::is_element_v<c64> && dyn::is_element_v<c128>);
  static_assert(!dyn::is_element_v<std::complex<long double>>);
}

// ---------------------------------------------------------------------------
// Promotion: jnp.promote_types (JAX's lattice: f32 -> {f64, c64}, f64 ->
// c128, c64 -> c128; every integer and bool below f*, below c*).

TEST_CASE("complex: promotion of strong dtypes is jnp.promote_types") {
  auto lub = [](DType a, DType b) { return dyn::promote_types({a, false}, {b, false}).dtype; };
  CHECK(lub(DType::f32, DType::c64) == DType::c64);
  CHECK(lub(DType::f64, DType::c64) == DType::c128);
  CHECK(lub(DType::f32, DType::c128) == DType::c128);
  CHECK(lub(DType::c64, DType::c128) == DType::c128);
  CHECK(lub(DType::c64, DType::c64) == DType::c64);
  for (DType d : {DType::bool_, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32,
                  DType::u64}) {
    CHECK(lub(d, DType::c64) == DType::c64);
    CHECK(lub(DType::c64, d) == DType::c64);
    CHECK(lub(d, DType::c128) == DType::c128);
  }
  // C++ static types follow the same table.
  static_assert(std::is_same_v<decltype(Array<float>() + Array<c64>()), Array<c64>>);
  static_assert(std::is_same_v<decltype(Array<double>() + Array<c64>()), Array<c128>>);
  static_assert(std::is_same_v<decltype(Array<std::int32_t>() * Array<c64>()), Array<c64>>);
  static_assert(std::is_same_v<decltype(Array<std::int64_t>() - Array<c128>()), Array<c128>>);
}

TEST_CASE("complex: weak literals (JAX without x64)") {
  auto pt = [](dyn::TypeInfo a, dyn::TypeInfo b) { return dyn::promote_types(a, b); };
  const dyn::TypeInfo wc{DType::c128, true}, wf{DType::f64, true}, wi{DType::i32, true};
  // a complex literal: c* adopts a complex array's dtype, a float array's
  // width, and the default complex c64 for integers and bools
  CHECK(pt({DType::c64, false}, wc) == dyn::TypeInfo{DType::c64, false});
  CHECK(pt({DType::f32, false}, wc) == dyn::TypeInfo{DType::c64, false});
  CHECK(pt({DType::f64, false}, wc) == dyn::TypeInfo{DType::c128, false});
  CHECK(pt({DType::i32, false}, wc) == dyn::TypeInfo{DType::c64, false});
  CHECK(pt({DType::bool_, false}, wc) == dyn::TypeInfo{DType::c64, false});
  // int and float literals keep a complex array's dtype
  CHECK(pt({DType::c64, false}, wf) == dyn::TypeInfo{DType::c64, false});
  CHECK(pt({DType::c64, false}, wi) == dyn::TypeInfo{DType::c64, false});
  // two literals: the wider kind, still weak
  CHECK(pt(wf, wc) == wc);
  CHECK(pt(wc, wi) == wc);
  static_assert(std::is_same_v<decltype(Array<float>() * c128(1, 2)), Array<c64>>);
  static_assert(std::is_same_v<decltype(Array<double>() * c64(1, 2)), Array<c128>>);
  static_assert(std::is_same_v<decltype(Array<std::int32_t>() + c128(0, 1)), Array<c64>>);
  static_assert(std::is_same_v<decltype(Array<c64>() * 2.5), Array<c64>>);
  static_assert(std::is_same_v<decltype(Array<c64>() + 1), Array<c64>>);
}

// ---------------------------------------------------------------------------
// Eager values (hand-computed).

TEST_CASE("complex: arithmetic") {
  const Array<c64> a({2}, {c64(1, 2), c64(-3, 0.5f)});
  const Array<c64> b({2}, {c64(3, -1), c64(0, 2)});
  // (1+2j)(3-1j) = 5+5j; (-3+0.5j)(2j) = -1-6j
  CHECK(vals(a * b) == std::vector<c64>{c64(5, 5), c64(-1, -6)});
  CHECK(vals(a + b) == std::vector<c64>{c64(4, 1), c64(-3, 2.5f)});
  CHECK(vals(a - b) == std::vector<c64>{c64(-2, 3), c64(-3, -1.5f)});
  CHECK(vals(-a) == std::vector<c64>{c64(-1, -2), c64(3, -0.5f)});
  // (1+2j)/(3-1j) = (1+7j)/10; (-3+0.5j)/(2j) = 0.25+1.5j
  CHECK(near(a / b, {c64(0.1f, 0.7f), c64(0.25f, 1.5f)}, 1e-6));
  // Smith's division does not overflow where c^2 + d^2 would
  const Array<c128> big({1}, {c128(1e300, 1e300)});
  CHECK(near(big / big, {c128(1, 0)}, 1e-15));
  // mixed with real arrays and literals
  const Array<float> r({2}, {2.0f, -1.0f});
  CHECK(vals(a * r) == std::vector<c64>{c64(2, 4), c64(3, -0.5f)});
  CHECK(vals(a * 2) == std::vector<c64>{c64(2, 4), c64(-6, 1)});
  CHECK(vals(a + c128(0, 1)) == std::vector<c64>{c64(1, 3), c64(-3, 1.5f)});
  const Array<std::int32_t> k({2}, {1, 2});
  CHECK(vals(k * c64(0, 1)) == std::vector<c64>{c64(0, 1), c64(0, 2)});
  CHECK(vals(a == b) == std::vector<bool>{false, false});
  CHECK(vals(a == a) == std::vector<bool>{true, true});
  CHECK(vals(a != Array<c64>({2}, {c64(1, 2), c64(-3, 1)})) == std::vector<bool>{false, true});
  CHECK(vals(dyn::integer_pow(a, 2)) == std::vector<c64>{c64(-3, 4), c64(8.75f, -3)});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Array<c64> s({4}, {c64(1, 2), c64(inf, 0), c64(0, -inf), c64(nan, 1)});
  CHECK(vals(dyn::isinf(s)) == std::vector<bool>{false, true, true, false});
  CHECK(vals(dyn::is_finite(s)) == std::vector<bool>{true, false, false, false});
  CHECK(vals(dyn::isnan(s)) == std::vector<bool>{false, false, false, true});
}

TEST_CASE("complex: real, imag, conj, abs, angle, complex") {
  const Array<c128> z({3}, {c128(3, 4), c128(-1, 0), c128(0, -2)});
  CHECK(vals(dyn::real(z)) == std::vector<double>{3, -1, 0});
  CHECK(vals(dyn::imag(z)) == std::vector<double>{4, 0, -2});
  CHECK(vals(dyn::conj(z)) == std::vector<c128>{c128(3, -4), c128(-1, -0.0), c128(0, 2)});
  CHECK(vals(dyn::abs(z)) == std::vector<double>{5, 1, 2});
  static_assert(std::is_same_v<decltype(dyn::abs(z)), Array<double>>);
  static_assert(std::is_same_v<decltype(dyn::real(Array<c64>())), Array<float>>);
  CHECK(near(dyn::angle(z), {std::atan2(4.0, 3.0), kPi, -kPi / 2}, 1e-15));
  // a real operand: real is itself, imag zeros, conj itself (jnp's)
  const Array<float> x({2}, {1.5f, -2});
  CHECK(vals(dyn::real(x)) == std::vector<float>{1.5f, -2});
  CHECK(vals(dyn::imag(x)) == std::vector<float>{0, 0});
  CHECK(vals(dyn::conj(x)) == std::vector<float>{1.5f, -2});
  CHECK(near(dyn::angle(x), {0.0f, static_cast<float>(kPi)}, 1e-7));
  // complex(re, im): the parts promoted to one float dtype
  const Array<float> y({2}, {0.5f, 4});
  CHECK(vals(dyn::complex(x, y)) == std::vector<c64>{c64(1.5f, 0.5f), c64(-2, 4)});
  static_assert(std::is_same_v<decltype(dyn::complex(x, Array<double>())), Array<c128>>);
  static_assert(std::is_same_v<decltype(dyn::complex(Array<std::int32_t>(), 1)), Array<c64>>);
  CHECK(vals(dyn::complex(x, 1)) == std::vector<c64>{c64(1.5f, 1), c64(-2, 1)});
}

TEST_CASE("complex: exp, log, sqrt, pow, sin, cos, tanh") {
  const Array<c128> z({2}, {c128(0, kPi), c128(1, 1)});
  // exp(i pi) = -1; exp(1+i) = e (cos 1 + i sin 1)
  CHECK(near(dyn::exp(z), {c128(-1, 0), c128(std::exp(1.0) * std::cos(1.0), std::exp(1.0) * std::sin(1.0))}, 1e-15));
  const Array<c128> w({3}, {c128(-1, 0), c128(3, 4), c128(-4, 0)});
  // log(-1) = i pi; log(3+4i) = log 5 + i atan2(4, 3)
  CHECK(near(dyn::log(w), {c128(0, kPi), c128(std::log(5.0), std::atan2(4.0, 3.0)), c128(std::log(4.0), kPi)}, 1e-15));
  // sqrt(3+4i) = 2+i, sqrt(-4) = 2i
  CHECK(near(dyn::sqrt(w), {c128(0, 1), c128(2, 1), c128(0, 2)}, 1e-15));
  // (1+i)^2 = 2i; (1+i)^(1+i) by exp((1+i) log(1+i))
  const Array<c128> u({2}, {c128(1, 1), c128(1, 1)});
  const Array<c128> e({2}, {c128(2, 0), c128(1, 1)});
  const c128 l = std::log(c128(1, 1));
  CHECK(near(dyn::pow(u, e), {c128(0, 2), std::exp(c128(1, 1) * l)}, 1e-14));
  // sin(i) = i sinh 1, cos(i) = cosh 1, tanh(i pi/4) = i tan(pi/4) = i
  const Array<c64> v({3}, {c64(0, 1), c64(0, 1), c64(0, static_cast<float>(kPi / 4))});
  CHECK(near(dyn::sin(dyn::slice(v, {0}, {1})), {c64(0, static_cast<float>(std::sinh(1.0)))}, 1e-6));
  CHECK(near(dyn::cos(dyn::slice(v, {1}, {2})), {c64(static_cast<float>(std::cosh(1.0)), 0)}, 1e-6));
  CHECK(near(dyn::tanh(dyn::slice(v, {2}, {3})), {c64(0, 1)}, 1e-6));
}

TEST_CASE("complex: sum, prod, mean, dot, matmul, einsum") {
  const Array<c64> a({2, 2}, {c64(1, 1), c64(2, 0), c64(0, 0), c64(0, 1)});
  CHECK(vals(dyn::sum(a)) == std::vector<c64>{c64(3, 2)});
  CHECK(vals(dyn::sum(a, {1})) == std::vector<c64>{c64(3, 1), c64(0, 1)});
  // (1+i) * 2 * 0 * i = 0; row products (2+2i), 0
  CHECK(vals(dyn::prod(a, {1})) == std::vector<c64>{c64(2, 2), c64(0, 0)});
  CHECK(vals(dyn::mean(a)) == std::vector<c64>{c64(0.75f, 0.5f)});
  static_assert(std::is_same_v<decltype(dyn::mean(a)), Array<c64>>);
  const Array<c64> v({2}, {c64(0, 1), c64(1, 0)});
  // [[1+i, 2], [0, i]] @ [i, 1] = [(1+i)i + 2, i] = [1+i, i]
  CHECK(vals(dyn::matmul(a, v)) == std::vector<c64>{c64(1, 1), c64(0, 1)});
  CHECK(vals(dyn::dot(v, v)) == std::vector<c64>{c64(0, 0)});  // i*i + 1*1
  CHECK(vals(dyn::einsum("ij,j->i", a, v)) == std::vector<c64>{c64(1, 1), c64(0, 1)});
  // a real matrix times a complex vector promotes to complex
  const Array<float> m({2, 2}, {1, 2, 3, 4});
  CHECK(vals(dyn::matmul(m, v)) == std::vector<c64>{c64(2, 1), c64(4, 3)});
}

// (numpy also aligns the real and imaginary columns separately: "[ 1. +2.j
// -0.5-1.j]"; dynstage right-aligns whole elements.)
TEST_CASE("complex: arrays print elements as numpy's 1.+2.j") {
  const Array<c64> a({2}, {c64(1, 2), c64(-0.5f, -1)});
  CHECK(test_util::str(a) == "[  1.+2.j -0.5-1.j]");
}

// ---------------------------------------------------------------------------
// The jaxpr text, as JAX prints it.

TEST_CASE("complex: jaxpr text (c64, c128, complex literals)") {
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return x * c128(1, 2); })(Array<c64>({2}))) ==
        "{ lambda ; a:c64[2]. let b:c64[2] = mul a (1+2j):c64[] in (b,) }");
  // a real part of +0 prints without it (Python's repr: 2j, (-0-2j))
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return x + c128(0, 2); })(Array<c128>({2}))) ==
        "{ lambda ; a:c128[2]. let b:c128[2] = add a 2j:c128[] in (b,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return x - c128(1.5, -0.25); })(Array<c128>({2}))) ==
        "{ lambda ; a:c128[2]. let b:c128[2] = sub a (1.5-0.25j):c128[] in (b,) }");
  // a float array meets a complex one: converted first
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x, auto y) { return x + y; })(Array<float>({3}), Array<c64>({3}))) ==
        "{ lambda ; a:f32[3] b:c64[3]. let\n"
        "    c:c64[3] = convert_element_type[new_dtype=complex64 weak_type=False] a\n"
        "    d:c64[3] = add c b\n"
        "  in (d,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::real(x) + dyn::imag(x); })(Array<c64>({3}))) ==
        "{ lambda ; a:c64[3]. let\n"
        "    b:f32[3] = real a\n"
        "    c:f32[3] = imag a\n"
        "    d:f32[3] = add b c\n"
        "  in (d,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::conj(x); })(Array<c64>({3}))) ==
        "{ lambda ; a:c64[3]. let b:c64[3] = conj[input_dtype=complex64] a in (b,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::abs(x); })(Array<c128>({3}))) ==
        "{ lambda ; a:c128[3]. let b:f64[3] = abs a in (b,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x, auto y) { return dyn::complex(x, y); })(Array<float>({3}),
                                                                                           Array<float>({3}))) ==
        "{ lambda ; a:f32[3] b:f32[3]. let c:c64[3] = complex a b in (c,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::angle(x); })(Array<c64>({3}))) ==
        "{ lambda ; a:c64[3]. let\n"
        "    b:f32[3] = imag a\n"
        "    c:f32[3] = real a\n"
        "    d:f32[3] = atan2 b c\n"
        "  in (d,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::sum(x); })(Array<c64>({4}))) ==
        "{ lambda ; a:c64[4]. let b:c64[] = reduce_sum[axes=(0,)] a in (b,) }");
}

TEST_CASE("complex: traced programs check and interpret as eager computes") {
  auto f = [](auto x, auto y) {
    auto z = x * y + dyn::conj(x) / (y + 1);
    return dyn::sum(dyn::exp(z) * dyn::complex(dyn::abs(z), dyn::angle(z)));
  };
  const Array<c64> x({3}, {c64(1, 2), c64(-0.5f, 0.25f), c64(0, 1)});
  const Array<c64> y({3}, {c64(0.5f, -1), c64(2, 0), c64(-1, 1)});
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(f)(x, y);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const auto out = dyn::eval_jaxpr(cj, {dyn::AnyArray(x), dyn::AnyArray(y)});
  REQUIRE(out.size() == 1);
  CHECK(out[0].dtype() == DType::c64);
  CHECK(vals(out[0].get<c64>()) == vals(f(x, y)));
}

// ---------------------------------------------------------------------------
// What complex numbers do not have.

template <class X>
concept HasBitAnd = requires(X x) { x & x; };
template <class X>
concept HasShift = requires(X x) { x << x; };
template <class X>
concept HasPopcount = requires(X x) { dyn::population_count(x); };

TEST_CASE("complex: ordering, floor, % and bit operations are refused") {
  // Where the C++ types show it: bit operations do not match (and <, <=, >,
  // >=, %, floor, maximum, clamp, max/min reductions fail a static_assert
  // naming the rule, which a test cannot instantiate).
  static_assert(!HasBitAnd<Array<c64>> && !HasShift<Array<c128>> && !HasPopcount<Array<c64>>);
  static_assert(HasBitAnd<Array<std::int32_t>>);
  // Where they do not (a hand-built equation, the numpy layer on run-time
  // values): a dyn::TypeError naming the operation and the dtype.
  using dyn::detail::Aval;
  using dyn::detail::Prim;
  const Aval c{DType::c64, {dyn::Dim(2)}, false, std::nullopt};
  for (Prim p : {Prim::lt, Prim::le, Prim::gt, Prim::ge, Prim::max, Prim::min, Prim::rem, Prim::and_, Prim::or_,
                 Prim::xor_, Prim::shift_left}) {
    const std::string m = message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(p, {c, c}, {}); });
    CHECK_MESSAGE(m.find(std::string(dyn::detail::prim_name(p)) + " does not accept dtype c64") == 0, m);
  }
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(Prim::lt, {c, c}, {}); }) ==
        "lt does not accept dtype c64; it requires an ordered dtype (complex numbers have no order)");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(Prim::floor, {c}, {}); }) ==
        "floor does not accept dtype c64; it requires a floating-point dtype");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(Prim::not_, {c}, {}); }) ==
        "not does not accept dtype c64; it requires a boolean or integer dtype");
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::detail::abstract_eval(Prim::reduce_max, {c}, dyn::detail::ReduceParams{{0}});
        }) == "reduce_max does not accept dtype c64; it requires an ordered dtype (complex numbers have no order)");
  // x.at(i).max(v) of a complex x: scatter-max's dtype rule
  const Array<c64> z({3}, {c64(1, 0), c64(2, 0), c64(3, 0)});
  CHECK(message_of<dyn::TypeError>([&] { (void)z.at(Array<std::int32_t>({1}, {1})).max(c64(5, 0)); })
            .rfind("scatter-max does not accept dtype c64; it requires an ordered dtype", 0) == 0);
  // a complex scatter-add is fine
  CHECK(vals(z.at(Array<std::int32_t>({2}, {0, 0})).add(c64(0, 1))) ==
        std::vector<c64>{c64(1, 2), c64(2, 0), c64(3, 0)});
  // floor of a complex value in the numpy layer (jnp.floor(int) is the
  // identity; complex is refused)
  const dyn::detail::Value v{dyn::AnyArray(Array<c64>({2})), nullptr, false};
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::unary(Prim::floor, v); }) ==
        "floor does not accept dtype c64: complex numbers have no order (as in JAX)");
  // real and imag take complex operands only; complex takes real ones
  const Aval f{DType::f32, {dyn::Dim(2)}, false, std::nullopt};
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(Prim::real, {f}, {}); }) ==
        "real does not accept dtype f32; it requires a complex dtype");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::detail::abstract_eval(Prim::complex, {c, c}, {}); }) ==
        "complex does not accept dtype c64; it requires a floating-point dtype");
}

TEST_CASE("complex: derivatives through complex values (JAX's convention; the rest in test_complex_ad.cpp)") {
  // |x + ix| = sqrt(2) |x|: d/dx = sqrt(2) at 1
  auto f = [](auto x) { return dyn::abs(dyn::complex(x, x)); };
  const Array<float> x = Array<float>::scalar(1.0f);
  CHECK(dyn::grad(f)(x).data()[0] == doctest::Approx(std::sqrt(2.0)).epsilon(1e-6));
  // real(i x) = 0 whatever x is: a zero gradient, through the convert to c64
  auto g = [](auto x) { return dyn::real(x * c64(0, 1)); };
  CHECK(dyn::grad(g)(x).data()[0] == 0.0f);
  // grad needs a real result (JAX's holomorphic=True is not offered)
  auto h = [](auto z) { return z * z; };
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::grad(h)(Array<c64>::scalar(c64(1, 1))); }) ==
        "dyn::grad: the function returns a complex scalar (c64[]); grad differentiates real-valued functions (of "
        "real or complex arguments); for a complex result use dyn::vjp (cotangent 1 gives JAX's grad(f, "
        "holomorphic=True)) or dyn::jvp");
  // a function of a float that stays real differentiates as before
  CHECK(dyn::grad([](auto x) { return x * x; })(x).data()[0] == 2.0f);
}

}  // namespace
