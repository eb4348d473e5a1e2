// Per-primitive laws of the two rule tables: for every primitive and every
// dtype it accepts, abstract_eval's output type equals the type of what impl
// computes, and impl computes the hand-computed numbers; invalid operands and
// parameters raise the documented exception type and message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <dynstage/eager/kernels.hpp>
#include <dynstage/shape/symbolic_spec.hpp>

using namespace dyn;
using namespace dyn::detail;
using dyn::detail::rule_util::dtype_in;
using dyn::detail::rule_util::DTypeSet;
using I32 = std::int32_t;
using I64 = std::int64_t;

namespace {

constexpr DType kAllDTypes[] = {DType::bool_, DType::i8,  DType::i16, DType::i32, DType::i64, DType::u8,
                                 DType::u16,   DType::u32, DType::u64, DType::f32, DType::f64};

// impl's outputs, after checking that they have the types abstract_eval
// predicts.
std::vector<AnyArray> run(Prim p, const std::vector<AnyArray>& in, const Params& params = NoParams{}) {
  std::vector<Aval> avals;
  for (const auto& a : in) avals.push_back(aval_of(a));
  const auto types = abstract_eval(p, avals, params);
  auto out = impl(p, in, params);
  REQUIRE(out.size() == types.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    CHECK(out[i].dtype() == types[i].dtype);
    CHECK(to_shape(out[i].shape()) == types[i].shape);
  }
  return out;
}
AnyArray run1(Prim p, const std::vector<AnyArray>& in, const Params& params = NoParams{}) {
  return run(p, in, params).at(0);
}

template <class T>
AnyArray arr(std::vector<I64> shape, std::vector<T> values) {
  return Array<T>(std::move(shape), values);
}
template <class T>
AnyArray scal(T v) {
  return Array<T>::scalar(v);
}
// Values given as doubles, converted to T (for tests written once for all dtypes).
template <class T>
AnyArray arr_as(std::vector<I64> shape, std::vector<double> values) {
  std::vector<T> v;
  for (double x : values) v.push_back(static_cast<T>(x));
  return Array<T>(std::move(shape), v);
}

// Exact equality; NaN matches NaN and the sign of a zero must match.
template <class T>
void check_values(const AnyArray& a, std::vector<I64> shape, std::vector<T> expected) {
  REQUIRE(a.dtype() == dtype_v<T>);
  REQUIRE(a.shape() == shape);
  const auto x = a.get<T>();
  REQUIRE(x.size() == static_cast<I64>(expected.size()));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(expected[i])) {
        CHECK(std::isnan(x.data()[i]));
        continue;
      }
      CHECK(std::signbit(x.data()[i]) == std::signbit(expected[i]));
    }
    CHECK(x.data()[i] == expected[i]);
  }
}
template <class T>
void check_as(const AnyArray& a, std::vector<I64> shape, std::vector<double> expected) {
  std::vector<T> v;
  for (double x : expected) v.push_back(static_cast<T>(x));
  check_values<T>(a, std::move(shape), v);
}
// Within rtol of the (double) expectation, for transcendental functions.
template <class T>
void check_close(const AnyArray& a, std::vector<I64> shape, std::vector<double> expected, double rtol) {
  REQUIRE(a.dtype() == dtype_v<T>);
  REQUIRE(a.shape() == shape);
  const auto x = a.get<T>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    const double got = static_cast<double>(x.data()[i]);
    CAPTURE(got);
    CHECK(std::fabs(got - expected[i]) <= rtol * std::fabs(expected[i]));
  }
}

Aval av(DType d, Shape s, bool weak = false) {
  Aval a;
  a.dtype = d;
  a.shape = std::move(s);
  a.weak = weak;
  return a;
}
Aval dim_operand(I64 v) {
  Aval a = av(DType::i64, {});
  a.dim_value = Dim(v);
  return a;
}

std::vector<Aval> ae(Prim p, const std::vector<Aval>& in, const Params& params = NoParams{}) {
  return abstract_eval(p, in, params);
}

const Prim kFloatUnary[] = {Prim::floor, Prim::ceil, Prim::exp,  Prim::log, Prim::log1p, Prim::sqrt,
                            Prim::rsqrt, Prim::sin,  Prim::cos,  Prim::tan, Prim::tanh,  Prim::logistic,
                            Prim::expm1, Prim::exp2, Prim::cbrt, Prim::sinh, Prim::cosh, Prim::asin,
                            Prim::acos,  Prim::atan, Prim::asinh, Prim::acosh, Prim::atanh, Prim::erf,
                            Prim::erfc,  Prim::lgamma, Prim::erf_inv, Prim::digamma, Prim::trigamma};

}  // namespace

// ===========================================================================
// Dtype acceptance: every elementwise primitive against every dtype.

TEST_CASE("elementwise primitives accept exactly their dtypes, and impl agrees with abstract_eval") {
  struct Row {
    Prim prim;
    DTypeSet accepts;
  };
  std::vector<Row> unary = {{Prim::neg, DTypeSet::numeric}, {Prim::abs, DTypeSet::numeric},
                            {Prim::sign, DTypeSet::numeric}, {Prim::round, DTypeSet::floating},
                            {Prim::not_, DTypeSet::integer_or_bool}, {Prim::population_count, DTypeSet::integer},
                            {Prim::clz, DTypeSet::integer}, {Prim::square, DTypeSet::numeric}};
  for (Prim p : kFloatUnary) unary.push_back({p, DTypeSet::floating});
  const Row binary[] = {{Prim::add, DTypeSet::numeric},   {Prim::sub, DTypeSet::numeric},
                        {Prim::mul, DTypeSet::numeric},   {Prim::div, DTypeSet::numeric},
                        {Prim::rem, DTypeSet::numeric},   {Prim::pow, DTypeSet::numeric},
                        {Prim::max, DTypeSet::numeric},   {Prim::min, DTypeSet::numeric},
                        {Prim::atan2, DTypeSet::floating}, {Prim::and_, DTypeSet::integer_or_bool},
                        {Prim::or_, DTypeSet::integer_or_bool}, {Prim::xor_, DTypeSet::integer_or_bool},
                        {Prim::shift_left, DTypeSet::integer}, {Prim::shift_right_arithmetic, DTypeSet::integer},
                        {Prim::shift_right_logical, DTypeSet::integer}, {Prim::eq, DTypeSet::any},
                        {Prim::ne, DTypeSet::any},        {Prim::lt, DTypeSet::any},
                        {Prim::le, DTypeSet::any},        {Prim::gt, DTypeSet::any},
                        {Prim::ge, DTypeSet::any}};
  for (DType d : kAllDTypes) {
    CAPTURE(dtype_name(d));
    // Operands of value 2 (true for bool): valid for every kernel (no division by zero).
    const AnyArray x = visit_dtype(d, [](auto t) {
      using T = decltype(t);
      return AnyArray(Array<T>({2, 3}, std::vector<T>(6, static_cast<T>(2))));
    });
    const Params round_params = RoundParams{};
    for (const auto& r : unary) {
      CAPTURE(prim_name(r.prim));
      const Params& params = r.prim == Prim::round ? round_params : Params{NoParams{}};
      if (dtype_in(d, r.accepts)) {
        const AnyArray y = run1(r.prim, {x}, params);
        CHECK(y.dtype() == d);
      } else {
        CHECK_THROWS_WITH_AS(ae(r.prim, {aval_of(x)}, params),
                             doctest::Contains((std::string(prim_name(r.prim)) + " does not accept dtype " +
                                                std::string(dtype_name(d)))
                                                   .c_str()),
                             TypeError);
      }
    }
    for (const auto& r : binary) {
      CAPTURE(prim_name(r.prim));
      if (dtype_in(d, r.accepts)) {
        const AnyArray y = run1(r.prim, {x, x});
        CHECK(y.dtype() == (prim_kind(r.prim) == Kind::compare ? DType::bool_ : d));
      } else {
        CHECK_THROWS_AS(ae(r.prim, {aval_of(x), aval_of(x)}), TypeError);
      }
    }
  }
}

TEST_CASE("dtype error messages name the primitive, the dtype and what is required") {
  CHECK_THROWS_WITH_AS(ae(Prim::sin, {av(DType::i32, {3})}),
                       "sin does not accept dtype i32; it requires a floating-point or complex dtype", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::neg, {av(DType::bool_, {3})}),
                       "neg does not accept dtype bool; it requires a numeric dtype (integer, floating-point or complex)",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::sign, {av(DType::bool_, {3})}),
                       "sign does not accept dtype bool; it requires a numeric dtype (integer or floating-point)",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::and_, {av(DType::f32, {3}), av(DType::f32, {3})}),
                       "and does not accept dtype f32; it requires a boolean or integer dtype", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::atan2, {av(DType::i64, {}), av(DType::i64, {})}),
                       "atan2 does not accept dtype i64; it requires a floating-point dtype", TypeError);
}

TEST_CASE("arity errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::add, {av(DType::f32, {3})}), "add takes 2 operands, got 1", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::sin, {av(DType::f32, {3}), av(DType::f32, {3})}), "sin takes 1 operand, got 2",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::transpose, {}, TransposeParams{{}}), "transpose takes 1 operand, got 0", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_sum, {}, ReduceParams{{}}), "reduce_sum takes 1 operand, got 0", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {3})}, DotGeneralParams{}),
                       "dot_general takes 2 operands, got 1", TypeError);
}

TEST_CASE("parameters of the wrong kind are a TypeError") {
  CHECK_THROWS_WITH_AS(ae(Prim::transpose, {av(DType::f32, {3})}, NoParams{}),
                       "transpose got parameters of the wrong kind", TypeError);
}

TEST_CASE("impl rejects empty AnyArrays") {
  CHECK_THROWS_WITH_AS(impl(Prim::neg, {AnyArray()}, NoParams{}), "neg: operand #0 is an empty AnyArray", TypeError);
}

// ===========================================================================
// Unary elementwise.

TEST_CASE_TEMPLATE("neg abs sign", T, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({2, 2}, {-3, 0, 2, -1});
  check_as<T>(run1(Prim::neg, {x}), {2, 2}, {3, -0.0, -2, 1});  // -0.0 for floats
  check_as<T>(run1(Prim::abs, {x}), {2, 2}, {3, 0, 2, 1});
  check_as<T>(run1(Prim::sign, {x}), {2, 2}, {-1, 0, 1, -1});
  check_as<T>(run1(Prim::neg, {scal<T>(5)}), {}, {-5});
}

TEST_CASE_TEMPLATE("integer neg and abs of the minimum wrap", T, I32, I64) {
  const T lo = std::numeric_limits<T>::min();
  check_values<T>(run1(Prim::neg, {arr<T>({2}, {lo, std::numeric_limits<T>::max()})}), {2},
                  {lo, static_cast<T>(-std::numeric_limits<T>::max())});
  check_values<T>(run1(Prim::abs, {arr<T>({1}, {lo})}), {1}, {lo});
}

TEST_CASE_TEMPLATE("float sign keeps signed zeros and NaN; neg flips zero", T, float, double) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const AnyArray x = arr<T>({5}, {T(-0.0), T(0.0), nan, -inf, T(0.25)});
  check_values<T>(run1(Prim::sign, {x}), {5}, {T(-0.0), T(0.0), nan, T(-1), T(1)});
  check_values<T>(run1(Prim::neg, {x}), {5}, {T(0.0), T(-0.0), nan, inf, T(-0.25)});
  check_values<T>(run1(Prim::abs, {x}), {5}, {T(0.0), T(0.0), nan, inf, T(0.25)});
}

TEST_CASE_TEMPLATE("floor ceil round", T, float, double) {
  const AnyArray x = arr_as<T>({7}, {-2.5, -0.5, 0.5, 1.5, 2.5, 1.2, -1.7});
  check_as<T>(run1(Prim::floor, {x}), {7}, {-3, -1, 0, 1, 2, 1, -2});
  check_as<T>(run1(Prim::ceil, {x}), {7}, {-2, -0.0, 1, 2, 3, 2, -1});
  // rounding_method=1: half to even; 0: half away from zero.
  check_as<T>(run1(Prim::round, {x}, RoundParams{1}), {7}, {-2, -0.0, 0, 2, 2, 1, -2});
  check_as<T>(run1(Prim::round, {x}, RoundParams{0}), {7}, {-3, -1, 1, 2, 3, 1, -2});
  CHECK_THROWS_WITH_AS(ae(Prim::round, {aval_of(x)}, RoundParams{2}),
                       "round rounding_method must be 0 (away from zero) or 1 (to nearest even), got 2", TypeError);
}

TEST_CASE_TEMPLATE("transcendental unary functions", T, float, double) {
  const double rtol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  const AnyArray zero_one = arr_as<T>({2}, {0, 1});
  check_close<T>(run1(Prim::exp, {zero_one}), {2}, {1, 2.718281828459045}, rtol);
  check_close<T>(run1(Prim::sin, {zero_one}), {2}, {0, 0.8414709848078965}, rtol);
  check_close<T>(run1(Prim::cos, {zero_one}), {2}, {1, 0.5403023058681398}, rtol);
  check_close<T>(run1(Prim::tan, {zero_one}), {2}, {0, 1.5574077246549023}, rtol);
  check_close<T>(run1(Prim::tanh, {zero_one}), {2}, {0, 0.7615941559557649}, rtol);
  check_close<T>(run1(Prim::logistic, {arr_as<T>({3}, {0, 2, -2})}), {3},
                 {0.5, 0.8807970779778823, 0.11920292202211755}, rtol);
  check_close<T>(run1(Prim::log, {arr_as<T>({2}, {1, 2})}), {2}, {0, 0.6931471805599453}, rtol);
  check_close<T>(run1(Prim::log1p, {arr_as<T>({2}, {1e-10, 1})}), {2}, {9.9999999995e-11, 0.6931471805599453}, rtol);
  check_as<T>(run1(Prim::sqrt, {arr_as<T>({3}, {4, 0.25, 0})}), {3}, {2, 0.5, 0});
  check_as<T>(run1(Prim::rsqrt, {arr_as<T>({2}, {4, 0.25})}), {2}, {0.5, 2});
  const auto r = run1(Prim::sqrt, {arr_as<T>({1}, {-1})}).template get<T>();
  CHECK(std::isnan(r(0)));
  check_values<T>(run1(Prim::log, {arr_as<T>({1}, {0})}), {1}, {-std::numeric_limits<T>::infinity()});
}

TEST_CASE("not is logical on bool and bitwise on integers") {
  check_values<bool>(run1(Prim::not_, {arr<bool>({2}, {true, false})}), {2}, {false, true});
  check_values<I32>(run1(Prim::not_, {arr<I32>({3}, {5, 0, -1})}), {3}, {-6, -1, 0});
  check_values<I64>(run1(Prim::not_, {arr<I64>({1}, {std::numeric_limits<I64>::max()})}), {1},
                    {std::numeric_limits<I64>::min()});
}

TEST_CASE("unary output keeps the operand's weak type") {
  CHECK(ae(Prim::neg, {av(DType::f32, {}, true)})[0].weak);
  CHECK_FALSE(ae(Prim::neg, {av(DType::f32, {})})[0].weak);
  const auto out = ae(Prim::exp, {av(DType::f64, {3, 4})});
  CHECK(out[0].dtype == DType::f64);
  CHECK(out[0].shape == Shape{3, 4});
}

// ===========================================================================
// Binary elementwise.

TEST_CASE_TEMPLATE("add sub mul div rem pow max min", T, I32, I64, float, double) {
  const AnyArray a = arr_as<T>({2, 2}, {7, -7, 6, 2});
  const AnyArray b = arr_as<T>({2, 2}, {2, 2, -4, 3});
  check_as<T>(run1(Prim::add, {a, b}), {2, 2}, {9, -5, 2, 5});
  check_as<T>(run1(Prim::sub, {a, b}), {2, 2}, {5, -9, 10, -1});
  check_as<T>(run1(Prim::mul, {a, b}), {2, 2}, {14, -14, -24, 6});
  check_as<T>(run1(Prim::max, {a, b}), {2, 2}, {7, 2, 6, 3});
  check_as<T>(run1(Prim::min, {a, b}), {2, 2}, {2, -7, -4, 2});
  // rem has the dividend's sign, for integers (C++ %) and floats (fmod).
  check_as<T>(run1(Prim::rem, {a, b}), {2, 2}, {1, -1, 2, 2});
  if constexpr (std::is_integral_v<T>) {
    check_as<T>(run1(Prim::div, {a, b}), {2, 2}, {3, -3, -1, 0});  // truncates toward zero
    check_as<T>(run1(Prim::pow, {a, b}), {2, 2}, {49, 49, 0, 8});  // 6^-4 truncates to 0
  } else {
    check_as<T>(run1(Prim::div, {a, b}), {2, 2}, {3.5, -3.5, -1.5, static_cast<double>(T(2) / T(3))});
    check_values<T>(run1(Prim::pow, {a, b}), {2, 2}, {T(49), T(49), std::pow(T(6), T(-4)), T(8)});
  }
}

TEST_CASE_TEMPLATE("a rank-0 operand broadcasts against the other", T, I32, I64, float, double) {
  const AnyArray a = arr_as<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  check_as<T>(run1(Prim::add, {a, scal<T>(10)}), {2, 3}, {11, 12, 13, 14, 15, 16});
  check_as<T>(run1(Prim::sub, {scal<T>(10), a}), {2, 3}, {9, 8, 7, 6, 5, 4});
  check_as<T>(run1(Prim::mul, {scal<T>(2), scal<T>(3)}), {}, {6});
  check_values<bool>(run1(Prim::lt, {a, scal<T>(3)}), {2, 3}, {true, true, false, false, false, false});
  check_values<bool>(run1(Prim::ge, {scal<T>(3), a}), {2, 3}, {true, true, true, false, false, false});
}

TEST_CASE("binary output shape, dtype and weak type") {
  const auto s = ae(Prim::add, {av(DType::f32, {3, 4}), av(DType::f32, {}, true)});
  CHECK(s[0].shape == Shape{3, 4});
  CHECK(s[0].dtype == DType::f32);
  CHECK_FALSE(s[0].weak);
  CHECK(ae(Prim::add, {av(DType::f32, {}, true), av(DType::f32, {}, true)})[0].weak);
  CHECK(ae(Prim::mul, {av(DType::i32, {}, true), av(DType::i32, {5})})[0].shape == Shape{5});
  const auto c = ae(Prim::lt, {av(DType::f64, {}, true), av(DType::f64, {}, true)});
  CHECK(c[0].dtype == DType::bool_);
  CHECK_FALSE(c[0].weak);
}

TEST_CASE("binary shape and dtype errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::add, {av(DType::f32, {3}), av(DType::f32, {4})}),
                       "add got incompatible shapes for broadcasting: (3,), (4,)", ShapeError);
  // lax-level: no numpy broadcasting of size-1 axes.
  CHECK_THROWS_WITH_AS(ae(Prim::mul, {av(DType::f64, {3, 4}), av(DType::f64, {1, 4})}),
                       "mul got incompatible shapes for broadcasting: (3, 4), (1, 4)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::eq, {av(DType::i32, {2}), av(DType::i32, {2, 1})}),
                       "eq got incompatible shapes for broadcasting: (2,), (2, 1)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::add, {av(DType::f32, {3}), av(DType::i32, {3})}),
                       "add requires arguments to have the same dtypes, got f32, i32", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::lt, {av(DType::f32, {}), av(DType::f64, {})}),
                       "lt requires arguments to have the same dtypes, got f32, f64", TypeError);
}

TEST_CASE_TEMPLATE("integer division and remainder by zero give XLA's results; 0 ** -1 throws", T, I32, I64) {
  const AnyArray a = arr<T>({2}, {1, 2}), z = arr<T>({2}, {1, 0});
  check_values<T>(impl(Prim::div, {a, z}, NoParams{}).at(0), {2}, {1, -1});  // x / 0 = -1 (all bits set)
  check_values<T>(impl(Prim::rem, {a, z}, NoParams{}).at(0), {2}, {0, 2});   // x % 0 = x
  check_values<T>(impl(Prim::div, {a, scal<T>(0)}, NoParams{}).at(0), {2}, {-1, -1});
  CHECK_THROWS_WITH_AS(impl(Prim::pow, {scal<T>(0), scal<T>(-1)}, NoParams{}),
                       doctest::Contains("pow: integer zero raised to a negative power"), ArithmeticError);
}

TEST_CASE_TEMPLATE("integer arithmetic wraps instead of overflowing", T, I32, I64) {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  check_values<T>(run1(Prim::div, {arr<T>({2}, {lo, 7}), scal<T>(-1)}), {2}, {lo, -7});
  check_values<T>(run1(Prim::rem, {arr<T>({2}, {lo, 7}), scal<T>(-1)}), {2}, {0, 0});
  check_values<T>(run1(Prim::add, {scal<T>(hi), scal<T>(1)}), {}, {lo});
  check_values<T>(run1(Prim::sub, {scal<T>(lo), scal<T>(1)}), {}, {hi});
  check_values<T>(run1(Prim::mul, {scal<T>(hi), scal<T>(2)}), {}, {T(-2)});
  // 2^(bits-1) wraps to the minimum; 2^bits wraps to 0.
  constexpr T bits = sizeof(T) * 8;
  check_values<T>(run1(Prim::pow, {scal<T>(2), arr<T>({3}, {bits - 1, bits, bits - 2})}), {3},
                  {lo, 0, static_cast<T>(T(1) << (bits - 2))});
}

TEST_CASE_TEMPLATE("integer pow with negative and zero exponents", T, I32, I64) {
  const AnyArray base = arr<T>({5}, {1, -1, -1, 2, -3});
  check_values<T>(run1(Prim::pow, {base, arr<T>({5}, {-5, -3, -2, -1, -2})}), {5}, {1, -1, 1, 0, 0});
  check_values<T>(run1(Prim::pow, {base, scal<T>(0)}), {5}, {1, 1, 1, 1, 1});
  check_values<T>(run1(Prim::pow, {scal<T>(0), scal<T>(0)}), {}, {1});
  check_values<T>(run1(Prim::pow, {base, scal<T>(3)}), {5}, {1, -1, -1, 8, -27});
}

TEST_CASE_TEMPLATE("float max and min propagate NaN; float division and fmod", T, float, double) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const AnyArray a = arr<T>({3}, {nan, 1, 2}), b = arr<T>({3}, {1, nan, 3});
  check_values<T>(run1(Prim::max, {a, b}), {3}, {nan, nan, 3});
  check_values<T>(run1(Prim::min, {a, b}), {3}, {nan, nan, 2});
  check_values<T>(run1(Prim::div, {arr<T>({3}, {1, -1, 0}), scal<T>(0)}), {3}, {inf, -inf, nan});
  check_values<T>(run1(Prim::rem, {arr<T>({3}, {T(5.5), T(-5.5), 1}), arr<T>({3}, {2, 2, 0})}), {3},
                  {T(1.5), T(-1.5), nan});
}

TEST_CASE_TEMPLATE("atan2", T, float, double) {
  const double rtol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  check_close<T>(run1(Prim::atan2, {arr_as<T>({3}, {1, 0, -1}), arr_as<T>({3}, {1, -1, 0})}), {3},
                 {0.7853981633974483, 3.141592653589793, -1.5707963267948966}, rtol);
}

TEST_CASE("and or: logical on bool, bitwise on integers") {
  const AnyArray p = arr<bool>({4}, {false, false, true, true}), q = arr<bool>({4}, {false, true, false, true});
  check_values<bool>(run1(Prim::and_, {p, q}), {4}, {false, false, false, true});
  check_values<bool>(run1(Prim::or_, {p, q}), {4}, {false, true, true, true});
  check_values<I32>(run1(Prim::and_, {arr<I32>({2}, {12, -1}), arr<I32>({2}, {10, 7})}), {2}, {8, 7});
  check_values<I32>(run1(Prim::or_, {arr<I32>({2}, {12, -8}), arr<I32>({2}, {10, 7})}), {2}, {14, -1});
  check_values<I64>(run1(Prim::and_, {arr<I64>({1}, {I64{1} << 40 | 3}), scal<I64>(I64{1} << 40)}), {1},
                    {I64{1} << 40});
  check_values<I64>(run1(Prim::or_, {scal<I64>(I64{1} << 40), scal<I64>(1)}), {}, {(I64{1} << 40) | 1});
}

TEST_CASE_TEMPLATE("comparisons on every dtype (bool ordered false < true)", T, bool, I32, I64, float, double) {
  const AnyArray a = arr_as<T>({4}, {0, 0, 1, 1}), b = arr_as<T>({4}, {0, 1, 0, 1});
  check_values<bool>(run1(Prim::eq, {a, b}), {4}, {true, false, false, true});
  check_values<bool>(run1(Prim::ne, {a, b}), {4}, {false, true, true, false});
  check_values<bool>(run1(Prim::lt, {a, b}), {4}, {false, true, false, false});
  check_values<bool>(run1(Prim::le, {a, b}), {4}, {true, true, false, true});
  check_values<bool>(run1(Prim::gt, {a, b}), {4}, {false, false, true, false});
  check_values<bool>(run1(Prim::ge, {a, b}), {4}, {true, false, true, true});
}

TEST_CASE("comparisons with NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const AnyArray a = arr<double>({2}, {nan, 1.0}), b = arr<double>({2}, {nan, nan});
  check_values<bool>(run1(Prim::eq, {a, b}), {2}, {false, false});
  check_values<bool>(run1(Prim::ne, {a, b}), {2}, {true, true});
  check_values<bool>(run1(Prim::lt, {a, b}), {2}, {false, false});
  check_values<bool>(run1(Prim::ge, {a, b}), {2}, {false, false});
}

// ===========================================================================
// select_n and convert_element_type.

TEST_CASE_TEMPLATE("select_n picks case1 where pred is true", T, bool, I32, I64, float, double) {
  const AnyArray c0 = arr_as<T>({2, 2}, {0, 0, 1, 1}), c1 = arr_as<T>({2, 2}, {1, 1, 0, 0});
  const AnyArray pred = arr<bool>({2, 2}, {true, false, true, false});
  check_as<T>(run1(Prim::select_n, {pred, c0, c1}), {2, 2}, {1, 0, 0, 1});
  check_as<T>(run1(Prim::select_n, {scal<bool>(true), c0, c1}), {2, 2}, {1, 1, 0, 0});
  check_as<T>(run1(Prim::select_n, {scal<bool>(false), c0, c1}), {2, 2}, {0, 0, 1, 1});
  check_as<T>(run1(Prim::select_n, {scal<bool>(false), scal<T>(1), scal<T>(0)}), {}, {1});
}

TEST_CASE("select_n types and errors") {
  const auto out = ae(Prim::select_n, {av(DType::bool_, {}), av(DType::f32, {3}, true), av(DType::f32, {3}, true)});
  CHECK(out[0].dtype == DType::f32);
  CHECK(out[0].shape == Shape{3});
  CHECK(out[0].weak);
  CHECK_THROWS_WITH_AS(ae(Prim::select_n, {av(DType::bool_, {}), av(DType::f32, {3})}),
                       "select_n takes a predicate and 2 cases, got 2 operands", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::select_n, {av(DType::i32, {}), av(DType::f32, {3}), av(DType::f32, {3})}),
                       "select_n requires a bool predicate, got dtype i32", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::select_n, {av(DType::bool_, {}), av(DType::f32, {3}), av(DType::f64, {3})}),
                       "select_n cases must have the same dtypes, got f32, f64", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::select_n, {av(DType::bool_, {}), av(DType::f32, {3}), av(DType::f32, {2})}),
                       "select_n cases must have the same shapes, got (3,), (2,)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::select_n, {av(DType::bool_, {2}), av(DType::f32, {3}), av(DType::f32, {3})}),
                       "select_n predicate must be scalar or have the same shape as cases, got predicate shape "
                       "(2,) but case shape (3,)",
                       ShapeError);
}

TEST_CASE("convert_element_type between every pair of dtypes") {
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      CAPTURE(dtype_name(from));
      CAPTURE(dtype_name(to));
      const AnyArray x = visit_dtype(from, [](auto t) {
        using T = decltype(t);
        return AnyArray(arr_as<T>({3}, {0, 1, 1}));
      });
      const AnyArray y = run1(Prim::convert_element_type, {x}, ConvertParams{to, false});
      visit_dtype(to, [&](auto t) {
        using T = decltype(t);
        check_as<T>(y, {3}, {0, 1, 1});
      });
    }
  const auto out = ae(Prim::convert_element_type, {av(DType::f64, {2, 3})}, ConvertParams{DType::f32, true});
  CHECK(out[0].dtype == DType::f32);
  CHECK(out[0].shape == Shape{2, 3});
  CHECK(out[0].weak);
  CHECK_FALSE(ae(Prim::convert_element_type, {av(DType::f64, {}, true)}, ConvertParams{DType::f32, false})[0].weak);
}

TEST_CASE("convert_element_type: float to int truncates, saturates and maps NaN to 0") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const AnyArray x = arr<double>({8}, {1.9, -1.9, nan, 1e10, -1e10, inf, -inf, 2147483647.5});
  check_values<I32>(run1(Prim::convert_element_type, {x}, ConvertParams{DType::i32}), {8},
                    {1, -1, 0, std::numeric_limits<I32>::max(), std::numeric_limits<I32>::min(),
                     std::numeric_limits<I32>::max(), std::numeric_limits<I32>::min(), 2147483647});
  const AnyArray f = arr<float>({4}, {1e19f, -1e19f, -9.2233720e18f, 3.99f});
  check_values<I64>(run1(Prim::convert_element_type, {f}, ConvertParams{DType::i64}), {4},
                    {std::numeric_limits<I64>::max(), std::numeric_limits<I64>::min(),
                     static_cast<I64>(-9.2233720e18f), 3});
  check_values<bool>(run1(Prim::convert_element_type, {arr<double>({4}, {0.0, -0.0, 0.5, nan})},
                          ConvertParams{DType::bool_}),
                     {4}, {false, false, true, true});
  check_values<bool>(run1(Prim::convert_element_type, {arr<I64>({3}, {0, -5, 1})}, ConvertParams{DType::bool_}),
                     {3}, {false, true, true});
  check_values<float>(run1(Prim::convert_element_type, {arr<bool>({2}, {true, false})}, ConvertParams{DType::f32}),
                      {2}, {1.0f, 0.0f});
  check_values<I32>(run1(Prim::convert_element_type, {arr<I64>({2}, {(I64{1} << 32) + 5, -1})},
                         ConvertParams{DType::i32}),
                    {2}, {5, -1});
  check_values<float>(run1(Prim::convert_element_type, {arr<double>({1}, {0.1})}, ConvertParams{DType::f32}), {1},
                      {0.1f});
}

// ===========================================================================
// broadcast_in_dim, reshape, transpose, squeeze.

TEST_CASE_TEMPLATE("broadcast_in_dim", T, bool, I32, I64, float, double) {
  const AnyArray v = arr_as<T>({3}, {1, 0, 1});
  check_as<T>(run1(Prim::broadcast_in_dim, {v}, BroadcastInDimParams{{2, 3}, {1}}), {2, 3}, {1, 0, 1, 1, 0, 1});
  check_as<T>(run1(Prim::broadcast_in_dim, {v}, BroadcastInDimParams{{3, 2}, {0}}), {3, 2}, {1, 1, 0, 0, 1, 1});
  // Size-1 operand axes stretch.
  const AnyArray row = arr_as<T>({1, 3}, {0, 1, 1});
  check_as<T>(run1(Prim::broadcast_in_dim, {row}, BroadcastInDimParams{{2, 3}, {0, 1}}), {2, 3}, {0, 1, 1, 0, 1, 1});
  check_as<T>(run1(Prim::broadcast_in_dim, {scal<T>(1)}, BroadcastInDimParams{{2, 2}, {}}), {2, 2}, {1, 1, 1, 1});
  // Rank 3, operand in the middle axis.
  check_as<T>(run1(Prim::broadcast_in_dim, {arr_as<T>({2}, {0, 1})}, BroadcastInDimParams{{2, 2, 2}, {1}}),
              {2, 2, 2}, {0, 0, 1, 1, 0, 0, 1, 1});
  // Zero-size output.
  check_as<T>(run1(Prim::broadcast_in_dim, {v}, BroadcastInDimParams{{0, 3}, {1}}), {0, 3}, {});
}

TEST_CASE("broadcast_in_dim with dynamic dimensions from operands") {
  const AnyArray v = arr<double>({3}, {1, 2, 3});
  const BroadcastInDimParams p{{kDynamicDim, 3}, {1}};
  check_values<double>(run1(Prim::broadcast_in_dim, {v, scal<I64>(2)}, p), {2, 3}, {1, 2, 3, 1, 2, 3});
  const auto out = ae(Prim::broadcast_in_dim, {av(DType::f64, {3}, true), dim_operand(4)}, p);
  CHECK(out[0].shape == Shape{4, 3});
  CHECK(out[0].weak);
  // Two dynamic entries, taken in order.
  const BroadcastInDimParams p2{{kDynamicDim, kDynamicDim}, {}};
  CHECK(ae(Prim::broadcast_in_dim, {av(DType::f32, {}), dim_operand(5), dim_operand(7)}, p2)[0].shape == Shape{5, 7});
  check_values<I32>(run1(Prim::broadcast_in_dim, {scal<I32>(9), scal<I64>(1), scal<I32>(2)}, p2), {1, 2}, {9, 9});
}

TEST_CASE("broadcast_in_dim errors") {
  const Prim p = Prim::broadcast_in_dim;
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3})}, BroadcastInDimParams{{4}, {0}}),
                       "broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
                       "corresponding dimensions in the target broadcast shape; got operand of shape (3,), target "
                       "broadcast shape (4,), broadcast_dimensions (0,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {2, 3})}, BroadcastInDimParams{{2, 3}, {0}}),
                       "broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; got "
                       "broadcast_dimensions (0,) for operand shape (2, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3})}, BroadcastInDimParams{{2, 3}, {2}}),
                       "broadcast_in_dim broadcast_dimensions must be in range for the target shape; got "
                       "broadcast_dimensions (2,) for target shape (2, 3)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3, 3})}, BroadcastInDimParams{{3, 3}, {1, 0}}),
                       "broadcast_in_dim broadcast_dimensions must be strictly increasing; got broadcast_dimensions "
                       "(1, 0)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3})}, BroadcastInDimParams{{kDynamicDim, 3}, {1}}),
                       "broadcast_in_dim takes 1 operand plus one integer scalar per None in shape (None, 3), got 1 "
                       "operands",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3}), av(DType::f32, {})}, BroadcastInDimParams{{kDynamicDim, 3}, {1}}),
                       "broadcast_in_dim dimension operand #1 must be an integer scalar, got f32[]", TypeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3}), dim_operand(-2)}, BroadcastInDimParams{{kDynamicDim, 3}, {1}}),
                       "broadcast_in_dim got the negative dimension -2 for a None in shape (None, 3)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3})}, BroadcastInDimParams{{-1, 3}, {1}}),
                       "broadcast_in_dim shape must be non-negative, got (-1, 3)", ShapeError);
  CHECK_THROWS_AS(ae(p, {av(DType::f32, {3}), av(DType::i64, {})}, BroadcastInDimParams{{kDynamicDim, 3}, {1}}),
                  InternalError);  // a dimension operand must carry its value
}

TEST_CASE_TEMPLATE("reshape keeps row-major order", T, bool, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({2, 3}, {1, 0, 1, 1, 1, 0});
  check_as<T>(run1(Prim::reshape, {x}, ReshapeParams{{3, 2}}), {3, 2}, {1, 0, 1, 1, 1, 0});
  check_as<T>(run1(Prim::reshape, {x}, ReshapeParams{{6}}), {6}, {1, 0, 1, 1, 1, 0});
  check_as<T>(run1(Prim::reshape, {scal<T>(1)}, ReshapeParams{{1, 1}}), {1, 1}, {1});
}

TEST_CASE("reshape with a dynamic size, sharing and borrowed views") {
  const AnyArray x = arr<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const ReshapeParams p{{kDynamicDim, 2}};
  const AnyArray y = run1(Prim::reshape, {x, scal<I64>(3)}, p);
  check_values<double>(y, {3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(y.data() == x.data());  // an owned buffer is shared, immutable while shared
  std::vector<double> mem = {1, 2, 3, 4};
  const AnyArray v = Array<double>::view(mem.data(), {4});
  const AnyArray w = run1(Prim::reshape, {v}, ReshapeParams{{2, 2}});
  CHECK(w.data() != static_cast<const void*>(mem.data()));  // a borrowed view is copied
  mem[0] = 100;
  check_values<double>(w, {2, 2}, {1, 2, 3, 4});
}

TEST_CASE("reshape errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::reshape, {av(DType::f32, {2, 3})}, ReshapeParams{{4}}),
                       "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4,) (size 4)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::reshape, {av(DType::f32, {2, 3}), dim_operand(4)}, ReshapeParams{{kDynamicDim, 2}}),
                       "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4, 2) (size 8)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::reshape, {av(DType::f32, {6})}, ReshapeParams{{-1, 6}}),
                       "reshape new_sizes must be non-negative, got (-1, 6)", ShapeError);
}

TEST_CASE_TEMPLATE("transpose", T, bool, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({2, 3}, {1, 0, 0, 1, 1, 0});
  check_as<T>(run1(Prim::transpose, {x}, TransposeParams{{1, 0}}), {3, 2}, {1, 1, 0, 1, 0, 0});
  check_as<T>(run1(Prim::transpose, {x}, TransposeParams{{0, 1}}), {2, 3}, {1, 0, 0, 1, 1, 0});
}

TEST_CASE("transpose of rank 3") {
  std::vector<I32> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = i;
  const AnyArray x = arr<I32>({2, 3, 4}, v);  // x[a][b][c] = 12a + 4b + c
  // out[i][j][k] = x[j][k][i], out shape (4, 2, 3)
  const AnyArray y = run1(Prim::transpose, {x}, TransposeParams{{2, 0, 1}});
  std::vector<I32> expected;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) expected.push_back(12 * j + 4 * k + i);
  check_values<I32>(y, {4, 2, 3}, expected);
  CHECK(run1(Prim::transpose, {scal<I32>(3)}, TransposeParams{{}}).shape().empty());
}

TEST_CASE("transpose errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::transpose, {av(DType::f32, {2, 3})}, TransposeParams{{0, 0}}),
                       "transpose permutation isn't a permutation of operand dimensions, got permutation (0, 0) for "
                       "operand shape (2, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::transpose, {av(DType::f32, {2, 3})}, TransposeParams{{1}}),
                       "transpose permutation isn't a permutation of operand dimensions, got permutation (1,) for "
                       "operand shape (2, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::transpose, {av(DType::f32, {2, 3})}, TransposeParams{{0, 2}}),
                       "transpose permutation isn't a permutation of operand dimensions, got permutation (0, 2) for "
                       "operand shape (2, 3)",
                       ShapeError);
}

TEST_CASE_TEMPLATE("squeeze", T, bool, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({1, 3, 1}, {1, 0, 1});
  check_as<T>(run1(Prim::squeeze, {x}, SqueezeParams{{0, 2}}), {3}, {1, 0, 1});
  check_as<T>(run1(Prim::squeeze, {x}, SqueezeParams{{2}}), {1, 3}, {1, 0, 1});
  check_as<T>(run1(Prim::squeeze, {x}, SqueezeParams{{}}), {1, 3, 1}, {1, 0, 1});
  check_as<T>(run1(Prim::squeeze, {arr_as<T>({1}, {1})}, SqueezeParams{{0}}), {}, {1});
}

TEST_CASE("squeeze errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::squeeze, {av(DType::f32, {2, 3})}, SqueezeParams{{0}}),
                       "squeeze: cannot select an axis to squeeze out which has size not equal to one, got "
                       "shape=(2, 3) and dimensions=(0,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::squeeze, {av(DType::f32, {1, 3})}, SqueezeParams{{2}}),
                       "squeeze dimensions (2,) out of range for operand shape (1, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::squeeze, {av(DType::f32, {1, 3})}, SqueezeParams{{-1}}),
                       "squeeze dimensions (-1,) out of range for operand shape (1, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::squeeze, {av(DType::f32, {1, 3})}, SqueezeParams{{0, 0}}),
                       "duplicate value in 'dimensions' of squeeze: (0, 0)", IndexError);
}

// ===========================================================================
// concatenate, slice, dynamic_slice, dynamic_update_slice, iota.

TEST_CASE_TEMPLATE("concatenate", T, bool, I32, I64, float, double) {
  const AnyArray a = arr_as<T>({2, 2}, {1, 0, 0, 1}), b = arr_as<T>({2, 1}, {1, 1}), c = arr_as<T>({1, 2}, {0, 0});
  check_as<T>(run1(Prim::concatenate, {a, b}, ConcatenateParams{1}), {2, 3}, {1, 0, 1, 0, 1, 1});
  check_as<T>(run1(Prim::concatenate, {a, c, a}, ConcatenateParams{0}), {5, 2}, {1, 0, 0, 1, 0, 0, 1, 0, 0, 1});
  check_as<T>(run1(Prim::concatenate, {a}, ConcatenateParams{0}), {2, 2}, {1, 0, 0, 1});
  const AnyArray empty = arr_as<T>({2, 0}, {});
  check_as<T>(run1(Prim::concatenate, {empty, b, empty}, ConcatenateParams{1}), {2, 1}, {1, 1});
}

TEST_CASE("concatenate types and errors") {
  const auto out = ae(Prim::concatenate, {av(DType::f32, {2, 3}, true), av(DType::f32, {4, 3}, true)},
                      ConcatenateParams{0});
  CHECK(out[0].shape == Shape{6, 3});
  CHECK(out[0].weak);
  CHECK_THROWS_WITH_AS(ae(Prim::concatenate, {}, ConcatenateParams{0}), "concatenate takes at least one operand, got 0",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::concatenate, {av(DType::f32, {2}), av(DType::i32, {2})}, ConcatenateParams{0}),
                       "concatenate requires arguments to have the same dtypes, got f32, i32", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::concatenate, {av(DType::f32, {2}), av(DType::f32, {2, 3})}, ConcatenateParams{0}),
                       "concatenate requires operands of the same rank, got shapes (2,), (2, 3)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::concatenate, {av(DType::f32, {2, 3}), av(DType::f32, {2, 3})}, ConcatenateParams{2}),
                       "concatenate dimension out of bounds: dimension 2 for shapes (2, 3), (2, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::concatenate, {av(DType::f32, {2, 3}), av(DType::f32, {2, 4})}, ConcatenateParams{0}),
                       "concatenate requires operands to have the same shape except along dimension 0, got shapes "
                       "(2, 3), (2, 4)",
                       ShapeError);
}

TEST_CASE_TEMPLATE("slice", T, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_as<T>(run1(Prim::slice, {x}, SliceParams{{2}, {5}, {}}), {3}, {2, 3, 4});
  check_as<T>(run1(Prim::slice, {x}, SliceParams{{1}, {8}, {3}}), {3}, {1, 4, 7});
  check_as<T>(run1(Prim::slice, {x}, SliceParams{{1}, {7}, {3}}), {2}, {1, 4});
  check_as<T>(run1(Prim::slice, {x}, SliceParams{{4}, {4}, {2}}), {0}, {});
  check_as<T>(run1(Prim::slice, {x}, SliceParams{{0}, {10}, {1}}), {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const AnyArray m = arr_as<T>({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  check_as<T>(run1(Prim::slice, {m}, SliceParams{{1, 1}, {3, 4}, {}}), {2, 3}, {11, 12, 13, 21, 22, 23});
  check_as<T>(run1(Prim::slice, {m}, SliceParams{{0, 0}, {3, 4}, {2, 3}}), {2, 2}, {0, 3, 20, 23});
}

TEST_CASE("slice of bool") {
  check_values<bool>(run1(Prim::slice, {arr<bool>({3}, {true, false, true})}, SliceParams{{1}, {3}, {}}), {2},
                     {false, true});
}

TEST_CASE("slice errors") {
  const Aval x = av(DType::f32, {2, 3});
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{0}, {1, 1}, {}}),
                       "slice start_indices must have length equal to the number of dimensions of the operand, got "
                       "start_indices (0,) for operand shape (2, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{0, 0}, {1, 1}, {1}}),
                       "slice strides must have length equal to the number of dimensions of the operand, got strides "
                       "(1,) for operand shape (2, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{-1, 0}, {1, 1}, {}}),
                       "slice start_indices must be greater than or equal to zero, got start_indices (-1, 0) for "
                       "operand shape (2, 3)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{0, 0}, {1, 4}, {}}),
                       "slice limit_indices must be less than or equal to operand shape, got limit_indices (1, 4) for "
                       "operand shape (2, 3)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{0, 2}, {1, 1}, {}}),
                       "slice limit_indices must be greater than or equal to start_indices, got start_indices (0, 2) "
                       "and limit_indices (1, 1)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::slice, {x}, SliceParams{{0, 0}, {1, 1}, {1, 0}}),
                       "slice strides must be positive, got (1, 0)", IndexError);
}

TEST_CASE("rev and pad: the primitives' own checks (lax's _rev_shape_rule, _pad_shape_rule, _pad_dtype_rule)") {
  const Aval x = av(DType::f32, {2, 3});
  CHECK(ae(Prim::rev, {x}, RevParams{{0, 1}})[0].shape == Shape{2, 3});
  CHECK_THROWS_WITH_AS(ae(Prim::rev, {x}, RevParams{{2}}), "rev dimensions (2,) out of range for operand shape (2, 3)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::rev, {x}, RevParams{{1, 1}}), "duplicate value in 'dimensions' of rev: (1, 1)",
                       IndexError);
  const Aval v = av(DType::f32, {});
  CHECK(ae(Prim::pad, {x, v}, PadParams{{{1, 2, 0}, {-1, 0, 2}}})[0].shape == Shape{5, 6});
  CHECK(ae(Prim::pad, {av(DType::f32, {0}), v}, PadParams{{{1, 1, 5}}})[0].shape == Shape{2});
  CHECK_THROWS_WITH_AS(ae(Prim::pad, {x, av(DType::f64, {})}, PadParams{{{0, 0, 0}, {0, 0, 0}}}),
                       "pad operand and padding_value must be same dtype: got f32 and f64", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::pad, {x, av(DType::f32, {1})}, PadParams{{{0, 0, 0}, {0, 0, 0}}}),
                       "pad padding_value must be a scalar, got f32[1]", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::pad, {x}, PadParams{{{0, 0, 0}, {0, 0, 0}}}), "pad takes 2 operands, got 1", TypeError);
}

TEST_CASE_TEMPLATE("dynamic_slice clamps its start indices", T, bool, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({5}, {0, 1, 1, 0, 1});
  const DynamicSliceParams p{{2}};
  check_as<T>(run1(Prim::dynamic_slice, {x, scal<I32>(1)}, p), {2}, {1, 1});
  check_as<T>(run1(Prim::dynamic_slice, {x, scal<I64>(10)}, p), {2}, {0, 1});  // clamped to 3
  check_as<T>(run1(Prim::dynamic_slice, {x, scal<I32>(-5)}, p), {2}, {0, 1});  // clamped to 0
  check_as<T>(run1(Prim::dynamic_slice, {x, scal<I64>(2)}, DynamicSliceParams{{0}}), {0}, {});
}

TEST_CASE("dynamic_slice of rank 2 with mixed index dtypes") {
  const AnyArray m = arr<double>({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  const DynamicSliceParams p{{2, 2}};
  check_values<double>(run1(Prim::dynamic_slice, {m, scal<I32>(1), scal<I64>(1)}, p), {2, 2}, {11, 12, 21, 22});
  check_values<double>(run1(Prim::dynamic_slice, {m, scal<I64>(5), scal<I32>(3)}, p), {2, 2}, {12, 13, 22, 23});
  const AnyArray s = run1(Prim::dynamic_slice, {scal<double>(7)}, DynamicSliceParams{{}});
  check_values<double>(s, {}, {7});
}

TEST_CASE("dynamic_slice errors") {
  const Aval x = av(DType::f32, {3, 4}), i = av(DType::i32, {});
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i}, DynamicSliceParams{{1, 1}}),
                       "dynamic_slice takes an operand and one start index per operand axis (2 for operand shape "
                       "(3, 4)), got 2 operands",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {}, DynamicSliceParams{{}}),
                       "dynamic_slice takes an operand and one start index per operand axis, got 0 operands",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i, av(DType::f32, {})}, DynamicSliceParams{{1, 1}}),
                       "dynamic_slice start indices must be integer scalars, got f32[] for operand #2", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i, av(DType::i64, {1})}, DynamicSliceParams{{1, 1}}),
                       "dynamic_slice start indices must be integer scalars, got i64[1] for operand #2", TypeError);
  // Other integer dtypes than i32/i64: the numpy layer converts them first (index_dtype_for).
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i, av(DType::u8, {})}, DynamicSliceParams{{1, 1}}),
                       "dynamic_slice start indices must be i32 or i64 scalars, got u8[] for operand #2; convert them "
                       "(the numpy-level dyn:: functions do)",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i, i}, DynamicSliceParams{{1}}),
                       "dynamic_slice slice_sizes must have the same length as the operand rank, got slice_sizes (1,) "
                       "for operand shape (3, 4)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_slice, {x, i, i}, DynamicSliceParams{{4, 1}}),
                       "dynamic_slice slice_sizes must be non-negative and at most the operand shape, got slice_sizes "
                       "(4, 1) for operand shape (3, 4)",
                       IndexError);
  CHECK_THROWS_AS(ae(Prim::dynamic_slice, {x, i, i}, DynamicSliceParams{{1, -1}}), IndexError);
}

TEST_CASE_TEMPLATE("dynamic_update_slice writes at the clamped position", T, bool, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({4}, {0, 0, 0, 0}), u = arr_as<T>({2}, {1, 1});
  check_as<T>(run1(Prim::dynamic_update_slice, {x, u, scal<I32>(1)}), {4}, {0, 1, 1, 0});
  check_as<T>(run1(Prim::dynamic_update_slice, {x, u, scal<I64>(3)}), {4}, {0, 0, 1, 1});
  check_as<T>(run1(Prim::dynamic_update_slice, {x, u, scal<I64>(-3)}), {4}, {1, 1, 0, 0});
  check_as<T>(x, {4}, {0, 0, 0, 0});  // the operand is unchanged
}

TEST_CASE("dynamic_update_slice of rank 2") {
  const AnyArray x = arr<I64>({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
  const AnyArray u = arr<I64>({2, 2}, {1, 2, 3, 4});
  check_values<I64>(run1(Prim::dynamic_update_slice, {x, u, scal<I32>(1), scal<I32>(0)}), {3, 3},
                    {0, 0, 0, 1, 2, 0, 3, 4, 0});
  check_values<I64>(run1(Prim::dynamic_update_slice, {x, u, scal<I32>(9), scal<I64>(9)}), {3, 3},
                    {0, 0, 0, 0, 1, 2, 0, 3, 4});
  check_values<I64>(run1(Prim::dynamic_update_slice, {x, arr<I64>({0, 2}, {}), scal<I32>(1), scal<I32>(1)}), {3, 3},
                    {0, 0, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("dynamic_update_slice types and errors") {
  const Aval x = av(DType::f32, {3}, true), i = av(DType::i32, {});
  const auto out = ae(Prim::dynamic_update_slice, {x, av(DType::f32, {2}), i});
  CHECK(out[0].shape == Shape{3});
  CHECK(out[0].weak);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x, av(DType::f32, {2})}),
                       "dynamic_update_slice takes an operand, an update and one start index per operand axis (1 for "
                       "operand shape (3,)), got 2 operands",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x}),
                       "dynamic_update_slice takes an operand, an update and one start index per operand axis, got 1 "
                       "operands",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x, av(DType::i32, {2}), i}),
                       "dynamic_update_slice update dtype must match operand dtype, got update dtype i32 and operand "
                       "dtype f32",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x, av(DType::f32, {1, 1}), i}),
                       "dynamic_update_slice update must have the same rank as operand, got update shape (1, 1) for "
                       "operand shape (3,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x, av(DType::f32, {4}), i}),
                       "dynamic_update_slice update shape must be smaller than operand shape, got update shape (4,) "
                       "for operand shape (3,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dynamic_update_slice, {x, av(DType::f32, {2}), av(DType::bool_, {})}),
                       "dynamic_update_slice start indices must be integer scalars, got bool[] for operand #2",
                       TypeError);
}

TEST_CASE_TEMPLATE("iota", T, I32, I64, float, double) {
  constexpr DType d = dtype_v<T>;
  check_as<T>(run1(Prim::iota, {}, IotaParams{d, {4}, 0}), {4}, {0, 1, 2, 3});
  check_as<T>(run1(Prim::iota, {}, IotaParams{d, {2, 3}, 1}), {2, 3}, {0, 1, 2, 0, 1, 2});
  check_as<T>(run1(Prim::iota, {}, IotaParams{d, {2, 3}, 0}), {2, 3}, {0, 0, 0, 1, 1, 1});
  check_as<T>(run1(Prim::iota, {}, IotaParams{d, {2, 2, 2}, 1}), {2, 2, 2}, {0, 0, 1, 1, 0, 0, 1, 1});
  check_as<T>(run1(Prim::iota, {scal<I64>(3)}, IotaParams{d, {kDynamicDim}, 0}), {3}, {0, 1, 2});
  check_as<T>(run1(Prim::iota, {}, IotaParams{d, {0}, 0}), {0}, {});
  const auto out = ae(Prim::iota, {dim_operand(5)}, IotaParams{d, {2, kDynamicDim}, 1});
  CHECK(out[0].dtype == d);
  CHECK(out[0].shape == Shape{2, 5});
  CHECK_FALSE(out[0].weak);
}

TEST_CASE("iota errors") {
  CHECK_THROWS_WITH_AS(ae(Prim::iota, {}, IotaParams{DType::bool_, {3}, 0}),
                       doctest::Contains("iota does not accept dtype bool; it requires a numeric dtype"), TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::iota, {}, IotaParams{DType::i32, {3, 4}, 2}),
                       "iota dimension must be between 0 and len(shape), got dimension=2 for shape (3, 4)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::iota, {av(DType::f32, {3})}, IotaParams{DType::i32, {3}, 0}),
                       "iota takes 0 operands plus one integer scalar per None in shape (3,), got 1 operands",
                       TypeError);
}

// ===========================================================================
// Reductions.

TEST_CASE_TEMPLATE("reduce_sum reduce_prod reduce_max reduce_min", T, I32, I64, float, double) {
  const AnyArray x = arr_as<T>({2, 3}, {1, 5, 3, 4, 2, 6});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{0}}), {3}, {5, 7, 9});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{1}}), {2}, {9, 12});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{0, 1}}), {}, {21});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{1, 0}}), {}, {21});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{}}), {2, 3}, {1, 5, 3, 4, 2, 6});
  check_as<T>(run1(Prim::reduce_prod, {x}, ReduceParams{{1}}), {2}, {15, 48});
  check_as<T>(run1(Prim::reduce_prod, {x}, ReduceParams{{0}}), {3}, {4, 10, 18});
  check_as<T>(run1(Prim::reduce_max, {x}, ReduceParams{{0}}), {3}, {4, 5, 6});
  check_as<T>(run1(Prim::reduce_max, {x}, ReduceParams{{1}}), {2}, {5, 6});
  check_as<T>(run1(Prim::reduce_min, {x}, ReduceParams{{0}}), {3}, {1, 2, 3});
  check_as<T>(run1(Prim::reduce_min, {x}, ReduceParams{{0, 1}}), {}, {1});
  check_as<T>(run1(Prim::reduce_sum, {scal<T>(4)}, ReduceParams{{}}), {}, {4});
}

TEST_CASE("reductions of rank 3 over inner and outer axes") {
  std::vector<I64> v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = i;
  const AnyArray x = arr<I64>({2, 3, 4}, v);  // x[a][b][c] = 12a + 4b + c
  // Over b: sum_b (12a + 4b + c) = 36a + 12 + 3c
  check_values<I64>(run1(Prim::reduce_sum, {x}, ReduceParams{{1}}), {2, 4},
                    {12, 15, 18, 21, 48, 51, 54, 57});
  // Over a and c: sum (12a + 4b + c) = 8*(4b) + 4*12 + 2*6 = 32b + 60
  check_values<I64>(run1(Prim::reduce_sum, {x}, ReduceParams{{0, 2}}), {3}, {60, 92, 124});
  check_values<I64>(run1(Prim::reduce_max, {x}, ReduceParams{{0, 2}}), {3}, {15, 19, 23});
  check_values<I64>(run1(Prim::reduce_min, {x}, ReduceParams{{2, 1}}), {2}, {0, 12});
  // Size-1 axes are reduced or kept like any other.
  check_values<I64>(run1(Prim::reduce_sum, {arr<I64>({1, 3, 1}, {1, 2, 3})}, ReduceParams{{0}}), {3, 1}, {1, 2, 3});
  check_values<I64>(run1(Prim::reduce_sum, {arr<I64>({1, 3, 1}, {1, 2, 3})}, ReduceParams{{1}}), {1, 1}, {6});
}

TEST_CASE_TEMPLATE("reductions over empty axes give the identity", T, I32, I64, float, double) {
  const AnyArray x = arr<T>({2, 0}, {});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{1}}), {2}, {0, 0});
  check_as<T>(run1(Prim::reduce_prod, {x}, ReduceParams{{1}}), {2}, {1, 1});
  check_as<T>(run1(Prim::reduce_sum, {x}, ReduceParams{{0}}), {0}, {});
  T lo, hi;
  if constexpr (std::is_floating_point_v<T>) {
    hi = std::numeric_limits<T>::infinity();
    lo = -hi;
  } else {
    lo = std::numeric_limits<T>::lowest();
    hi = std::numeric_limits<T>::max();
  }
  check_values<T>(run1(Prim::reduce_max, {x}, ReduceParams{{1}}), {2}, {lo, lo});
  check_values<T>(run1(Prim::reduce_min, {x}, ReduceParams{{0, 1}}), {}, {hi});
}

TEST_CASE("reduce_max and reduce_min on bool") {
  const AnyArray x = arr<bool>({2, 2}, {false, true, false, false});
  check_values<bool>(run1(Prim::reduce_max, {x}, ReduceParams{{1}}), {2}, {true, false});
  check_values<bool>(run1(Prim::reduce_min, {x}, ReduceParams{{0}}), {2}, {false, false});
  const AnyArray e = arr<bool>({0}, {});
  check_values<bool>(run1(Prim::reduce_max, {e}, ReduceParams{{0}}), {}, {false});
  check_values<bool>(run1(Prim::reduce_min, {e}, ReduceParams{{0}}), {}, {true});
}

TEST_CASE_TEMPLATE("float reductions: NaN propagates, sums run left to right", T, float, double) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const AnyArray x = arr<T>({2, 3}, {1, nan, 3, 4, 5, 6});
  check_values<T>(run1(Prim::reduce_max, {x}, ReduceParams{{1}}), {2}, {nan, 6});
  check_values<T>(run1(Prim::reduce_min, {x}, ReduceParams{{0}}), {3}, {1, nan, 3});
  check_values<T>(run1(Prim::reduce_max, {arr<T>({3}, {nan, 1, 2})}, ReduceParams{{0}}), {}, {nan});
  // ((big + 1) - big): 1 is absorbed by big in the element type.
  const T big = std::is_same_v<T, float> ? T(1e8) : T(1e17);
  check_values<T>(run1(Prim::reduce_sum, {arr<T>({3}, {big, T(1), -big})}, ReduceParams{{0}}), {}, {T(0)});
  check_values<T>(run1(Prim::reduce_sum, {arr<T>({3, 1}, {big, T(1), -big})}, ReduceParams{{0}}), {1}, {T(0)});
}

TEST_CASE("integer reductions wrap") {
  const I32 hi = std::numeric_limits<I32>::max();
  check_values<I32>(run1(Prim::reduce_sum, {arr<I32>({2}, {hi, 1})}, ReduceParams{{0}}), {},
                    {std::numeric_limits<I32>::min()});
  check_values<I32>(run1(Prim::reduce_prod, {arr<I32>({2}, {hi, 2})}, ReduceParams{{0}}), {}, {-2});
}

TEST_CASE("reduction types and errors") {
  const auto out = ae(Prim::reduce_sum, {av(DType::f32, {2, 3, 4}, true)}, ReduceParams{{0, 2}});
  CHECK(out[0].shape == Shape{3});
  CHECK(out[0].dtype == DType::f32);
  CHECK(out[0].weak);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_sum, {av(DType::f32, {2, 3})}, ReduceParams{{2}}),
                       "reduce_sum axes (2,) out of range for operand shape (2, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_max, {av(DType::f32, {2, 3})}, ReduceParams{{-1}}),
                       "reduce_max axes (-1,) out of range for operand shape (2, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_min, {av(DType::f32, {2, 3})}, ReduceParams{{1, 1}}),
                       "duplicate value in 'axes' of reduce_min: (1, 1)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_sum, {av(DType::bool_, {2})}, ReduceParams{{0}}),
                       doctest::Contains("reduce_sum does not accept dtype bool; it requires a numeric dtype"), TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::reduce_prod, {av(DType::bool_, {2})}, ReduceParams{{0}}),
                       doctest::Contains("reduce_prod does not accept dtype bool"), TypeError);
}

// ===========================================================================
// dot_general.

namespace {
DotGeneralParams dims(std::vector<I64> lc, std::vector<I64> rc, std::vector<I64> lb = {}, std::vector<I64> rb = {}) {
  return DotGeneralParams{std::move(lc), std::move(rc), std::move(lb), std::move(rb)};
}
}  // namespace

TEST_CASE_TEMPLATE("dot_general: matrix, vector and outer products", T, I32, I64, float, double) {
  const AnyArray a = arr_as<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const AnyArray b = arr_as<T>({3, 2}, {7, 8, 9, 10, 11, 12});
  check_as<T>(run1(Prim::dot_general, {a, b}, dims({1}, {0})), {2, 2}, {58, 64, 139, 154});
  const AnyArray v = arr_as<T>({3}, {1, 0, -1});
  check_as<T>(run1(Prim::dot_general, {a, v}, dims({1}, {0})), {2}, {-2, -2});
  check_as<T>(run1(Prim::dot_general, {v, b}, dims({0}, {0})), {2}, {-4, -4});
  check_as<T>(run1(Prim::dot_general, {v, v}, dims({0}, {0})), {}, {2});
  // No contraction: outer product.
  check_as<T>(run1(Prim::dot_general, {arr_as<T>({2}, {1, 2}), v}, dims({}, {})), {2, 3}, {1, 0, -1, 2, 0, -2});
  // a^T b^T: contract lhs axis 0 with rhs axis 1 -> (3, 3).
  check_as<T>(run1(Prim::dot_general, {a, b}, dims({0}, {1})), {3, 3},
              {1 * 7 + 4 * 8, 1 * 9 + 4 * 10, 1 * 11 + 4 * 12, 2 * 7 + 5 * 8, 2 * 9 + 5 * 10, 2 * 11 + 5 * 12,
               3 * 7 + 6 * 8, 3 * 9 + 6 * 10, 3 * 11 + 6 * 12});
  // a a^T: contract axis 1 of both.
  check_as<T>(run1(Prim::dot_general, {a, a}, dims({1}, {1})), {2, 2}, {14, 32, 32, 77});
  // Contracting over zero elements gives zeros.
  check_as<T>(run1(Prim::dot_general, {arr_as<T>({2, 0}, {}), arr_as<T>({0, 2}, {})}, dims({1}, {0})), {2, 2},
              {0, 0, 0, 0});
}

TEST_CASE_TEMPLATE("dot_general with batch dimensions", T, I32, I64, float, double) {
  // Batch of two 2x2 @ 2x1.
  const AnyArray a = arr_as<T>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const AnyArray b = arr_as<T>({2, 2, 1}, {1, 1, 2, -1});
  check_as<T>(run1(Prim::dot_general, {a, b}, dims({2}, {1}, {0}, {0})), {2, 2, 1}, {3, 7, 4, 6});
  // Batch axis not leading: lhs (2, B=2, 2) batch axis 1; rhs (2, B=2) contracting 0, batch 1.
  // lhs[i][b][k] = a[b][i][k] laid out differently; result (B, i).
  const AnyArray l = arr_as<T>({2, 2, 2}, {1, 2, 5, 6, 3, 4, 7, 8});  // l[i][b][k] = a[b][i][k]
  const AnyArray r = arr_as<T>({2, 2}, {1, 2, 1, -1});                 // r[k][b] = b_[b][k]
  check_as<T>(run1(Prim::dot_general, {l, r}, dims({2}, {0}, {1}, {1})), {2, 2}, {3, 7, 4, 6});
}

TEST_CASE("dot_general: larger products against a naive reference") {
  const I64 M = 7, K = 13, N = 5;
  std::vector<double> av_(static_cast<std::size_t>(M * K)), bv(static_cast<std::size_t>(K * N));
  for (std::size_t i = 0; i < av_.size(); ++i) av_[i] = static_cast<double>((i * 7) % 11) - 5;
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<double>((i * 5) % 9) - 4;
  std::vector<double> expect(static_cast<std::size_t>(M * N), 0.0);
  for (I64 i = 0; i < M; ++i)
    for (I64 j = 0; j < N; ++j)
      for (I64 k = 0; k < K; ++k)
        expect[static_cast<std::size_t>(i * N + j)] +=
            av_[static_cast<std::size_t>(i * K + k)] * bv[static_cast<std::size_t>(k * N + j)];
  check_values<double>(run1(Prim::dot_general, {arr<double>({M, K}, av_), arr<double>({K, N}, bv)}, dims({1}, {0})),
                       {M, N}, expect);
}

TEST_CASE("integer dot_general wraps") {
  const I32 hi = std::numeric_limits<I32>::max();
  check_values<I32>(run1(Prim::dot_general, {arr<I32>({2}, {hi, 1}), arr<I32>({2}, {1, 1})}, dims({0}, {0})), {},
                    {std::numeric_limits<I32>::min()});
}

TEST_CASE("dot_general types and errors") {
  const auto out = ae(Prim::dot_general, {av(DType::f64, {5, 3, 4}, true), av(DType::f64, {4, 5, 6}, true)},
                      dims({2}, {0}, {0}, {1}));
  CHECK(out[0].shape == Shape{5, 3, 6});
  CHECK(out[0].weak);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {3, 4}), av(DType::f32, {5, 2})}, dims({1}, {0})),
                       "dot_general requires contracting dimensions to have the same shape, got (4,) and (5,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      ae(Prim::dot_general, {av(DType::f32, {2, 3, 4}), av(DType::f32, {3, 4, 5})}, dims({2}, {1}, {0}, {0})),
      "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, got (2,) and (3,)",
      ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {3, 4}), av(DType::f32, {4})}, dims({1}, {0}, {0}, {})),
                       "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch (0,) "
                       "and rhs_batch ()",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {3, 4}), av(DType::f32, {4})}, dims({1}, {})),
                       "dot_general requires equal numbers of lhs_contracting and rhs_contracting dimensions, got "
                       "lhs_contracting (1,) and rhs_contracting ()",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {3, 4}), av(DType::f32, {4})}, dims({2}, {0})),
                       "dot_general requires lhs dimension numbers to be nonnegative and less than the number of axes "
                       "of the lhs value, got lhs_batch of () and lhs_contracting of (2,) for lhs of rank 2",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {4, 4}), av(DType::f32, {4, 4})}, dims({0}, {2})),
                       "dot_general requires rhs dimension numbers to be nonnegative and less than the number of axes "
                       "of the rhs value, got rhs_batch of () and rhs_contracting of (2,) for rhs of rank 2",
                       IndexError);
  CHECK_THROWS_WITH_AS(
      ae(Prim::dot_general, {av(DType::f32, {4, 4}), av(DType::f32, {4, 4})}, dims({0}, {0}, {0}, {1})),
      "dot_general requires lhs dimension numbers to be distinct, got lhs_batch of (0,) and lhs_contracting of (0,)",
      IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::f32, {4}), av(DType::f64, {4})}, dims({0}, {0})),
                       "dot_general requires operands of the same dtype, got f32, f64", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::dot_general, {av(DType::bool_, {4}), av(DType::bool_, {4})}, dims({0}, {0})),
                       doctest::Contains("dot_general does not accept dtype bool; it requires a numeric dtype"), TypeError);
}

// ===========================================================================
// Errors carry the user's location when one is recorded.

TEST_CASE("shape errors name the operation site when one is active") {
  const auto here = std::source_location::current();
  OpSite site(here);
  CHECK_THROWS_WITH_AS(ae(Prim::add, {av(DType::f32, {3}), av(DType::f32, {4})}),
                       doctest::Contains(("add got incompatible shapes for broadcasting: (3,), (4,) (at " +
                                          format_location(here) + ")")
                                             .c_str()),
                       ShapeError);
}

// ===========================================================================
// The rules compute on Dims, so symbolic shapes go through the same code.

TEST_CASE("shape rules on symbolic dimensions") {
  auto scope = SymbolicScope::make();
  auto shape = [&](const char* spec) { return symbolic_shape(spec, scope); };
  const Aval x = av(DType::f32, shape("(n, 4)"));
  CHECK(ae(Prim::add, {x, x})[0].shape == shape("(n, 4)"));
  CHECK(ae(Prim::add, {x, av(DType::f32, {})})[0].shape == shape("(n, 4)"));
  CHECK_THROWS_WITH_AS(ae(Prim::add, {av(DType::f32, shape("(n,)")), av(DType::f32, {4})}),
                       "add got incompatible shapes for broadcasting: (n,), (4,)", ShapeError);
  CHECK_THROWS_WITH_AS(
      ae(Prim::dot_general, {av(DType::f32, {3, 4}), av(DType::f32, shape("(n, 2)"))}, dims({1}, {0})),
      "dot_general requires contracting dimensions to have the same shape, got (4,) and (n,)", ShapeError);
  CHECK(ae(Prim::dot_general, {x, av(DType::f32, shape("(4, m)"))}, dims({1}, {0}))[0].shape == shape("(n, m)"));

  // reshape compares sizes symbolically: (n, 4) has the size of (4*n,), not of (n,).
  Aval size = av(DType::i64, {});
  size.dim_value = shape("(4*n,)")[0];
  CHECK(ae(Prim::reshape, {x, size}, ReshapeParams{{kDynamicDim}})[0].shape == shape("(4*n,)"));
  CHECK_THROWS_AS(ae(Prim::reshape, {x}, ReshapeParams{{4, 1}}), ShapeError);
  size.dim_value = shape("(n,)")[0];
  CHECK_THROWS_WITH_AS(ae(Prim::reshape, {x, size}, ReshapeParams{{kDynamicDim}}),
                       doctest::Contains("reshape: cannot reshape array of shape (n, 4)"), ShapeError);

  // Sums along the concatenated axis; broadcasting needs equal Dims or 1.
  CHECK(ae(Prim::concatenate, {x, av(DType::f32, shape("(m, 4)"))}, ConcatenateParams{0})[0].shape ==
        shape("(n + m, 4)"));
  Aval n = av(DType::i64, {});
  n.dim_value = shape("(n,)")[0];
  CHECK(ae(Prim::broadcast_in_dim, {av(DType::f32, {1, 4}), n}, BroadcastInDimParams{{kDynamicDim, 4}, {0, 1}})[0].shape ==
        shape("(n, 4)"));
  CHECK(ae(Prim::broadcast_in_dim, {x, n}, BroadcastInDimParams{{2, kDynamicDim, 4}, {1, 2}})[0].shape ==
        shape("(2, n, 4)"));
  CHECK(ae(Prim::reduce_sum, {x}, ReduceParams{{1}})[0].shape == shape("(n,)"));
  CHECK(ae(Prim::transpose, {x}, TransposeParams{{1, 0}})[0].shape == shape("(4, n)"));

  // Bounds are decided where provable (every dimension variable is >= 1) ...
  CHECK(ae(Prim::dynamic_slice, {x, av(DType::i32, {}), av(DType::i32, {})}, DynamicSliceParams{{1, 4}})[0].shape ==
        Shape{1, 4});
  CHECK(ae(Prim::slice, {x}, SliceParams{{0, 1}, {1, 3}, {}})[0].shape == Shape{1, 2});
  // ... and are inconclusive otherwise.
  CHECK_THROWS_AS(ae(Prim::slice, {x}, SliceParams{{0, 0}, {5, 4}, {}}), InconclusiveDimensionOperation);
}

TEST_CASE("rules: argmax and argmin drop their one axis and give index_dtype; reduce_or and reduce_and take bools and integers") {
  for (Prim p : {Prim::argmax, Prim::argmin}) {
    CAPTURE(prim_name(p));
    for (DType d : kAllDTypes) {
      const auto out = ae(p, {av(d, {2, 3, 4}, true)}, ArgReduceParams{{1}, DType::i32});
      REQUIRE(out.size() == 1);
      CHECK(out[0].dtype == DType::i32);
      CHECK(out[0].shape == Shape{Dim(2), Dim(4)});
      CHECK(!out[0].weak);
    }
    CHECK(ae(p, {av(DType::f64, {5})}, ArgReduceParams{{0}, DType::i64})[0].dtype == DType::i64);
    const std::string n(prim_name(p));
    CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {2, 3})}, ArgReduceParams{{0, 1}, DType::i32}),
                         (n + " reduces exactly one axis, got axes=(0, 1)").c_str(), ShapeError);
    CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {2, 3})}, ArgReduceParams{{2}, DType::i32}),
                         (n + " axes (2,) out of range for operand shape (2, 3)").c_str(), IndexError);
    CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {2, 3})}, ArgReduceParams{{0}, DType::f32}),
                         (n + " index_dtype must be i32 or i64, got f32").c_str(), TypeError);
  }
  // Eager: the first maximum (minimum); the first NaN wins.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_values<I32>(run1(Prim::argmax, {arr<double>({2, 3}, {1, 5, 5, 2, nan, nan})}, ArgReduceParams{{1}, DType::i32}),
                    {2}, {1, 1});
  check_values<I64>(run1(Prim::argmin, {arr<I64>({2, 3}, {4, 1, 1, 0, 9, 0})}, ArgReduceParams{{0}, DType::i64}),
                    {3}, {1, 0, 1});
  for (Prim p : {Prim::reduce_or, Prim::reduce_and}) {
    CAPTURE(prim_name(p));
    CHECK(ae(p, {av(DType::bool_, {2, 3})}, ReduceParams{{0}})[0].shape == Shape{Dim(3)});
    CHECK(ae(p, {av(DType::i32, {2, 3})}, ReduceParams{{0, 1}})[0].dtype == DType::i32);
    CHECK_THROWS_WITH_AS(ae(p, {av(DType::f32, {3})}, ReduceParams{{0}}),
                         (std::string(prim_name(p)) + " does not accept dtype f32; it requires a boolean or integer dtype")
                             .c_str(),
                         TypeError);
  }
  const auto b = arr<bool>({2, 3}, {false, true, false, false, false, false});
  check_values<bool>(run1(Prim::reduce_or, {b}, ReduceParams{{1}}), {2}, {true, false});
  check_values<bool>(run1(Prim::reduce_and, {b}, ReduceParams{{0}}), {3}, {false, false, false});
  check_values<bool>(run1(Prim::reduce_and, {arr<bool>({0}, {})}, ReduceParams{{0}}), {}, {true});
  // Integers: bitwise (lax's reduce_or of ints).
  check_values<I32>(run1(Prim::reduce_or, {arr<I32>({3}, {1, 4, 4})}, ReduceParams{{0}}), {}, {5});
  check_values<I32>(run1(Prim::reduce_and, {arr<I32>({2}, {6, 3})}, ReduceParams{{0}}), {}, {2});
}

TEST_CASE("rules: sort keeps its operands' types; operands of one shape, 1 <= num_keys <= N, an axis in range") {
  for (DType d : kAllDTypes) {
    const auto out = ae(Prim::sort, {av(d, {2, 3}, true)}, SortParams{1, true, 1});
    REQUIRE(out.size() == 1);
    CHECK(out[0].dtype == d);
    CHECK(out[0].shape == Shape{Dim(2), Dim(3)});
    CHECK(out[0].weak);
  }
  CHECK_THROWS_WITH_AS(ae(Prim::sort, {av(DType::f32, {2, 3})}, SortParams{2, true, 1}),
                       "sort: dimension 2 is out of bounds for an array of shape (2, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::sort, {av(DType::f32, {3})}, SortParams{0, true, 2}),
                       "sort: num_keys must be between 1 and the number of operands (1), got num_keys=2", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::sort, {av(DType::f32, {3}), av(DType::i32, {3})}, SortParams{0, true, 0}),
                       "sort: num_keys must be between 1 and the number of operands (2), got num_keys=0", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::sort, {}, SortParams{0, true, 1}), "sort takes at least one operand, got 0", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::sort, {av(DType::f32, {3}), av(DType::i32, {2})}, SortParams{0, true, 1}),
                       "sort: all operands must have the same shape, got f32[3], i32[2]", ShapeError);
  // Several operands: one output of each operand's type.
  const auto two = ae(Prim::sort, {av(DType::f32, {2, 3}), av(DType::i64, {2, 3})}, SortParams{0, true, 2});
  REQUIRE(two.size() == 2);
  CHECK(two[0].dtype == DType::f32);
  CHECK(two[1].dtype == DType::i64);
  CHECK(two[1].shape == Shape{Dim(2), Dim(3)});
  // Two keys, lexicographic: (1, 9) (0, 5) (1, 2) (0, 7) -> (0, 5) (0, 7) (1, 2) (1, 9); the third
  // operand follows.
  const auto r = dyn::detail::impl(Prim::sort, {arr<I32>({4}, {1, 0, 1, 0}), arr<double>({4}, {9, 5, 2, 7}),
                                                arr<I32>({4}, {10, 11, 12, 13})},
                                   SortParams{0, true, 2});
  REQUIRE(r.size() == 3);
  check_values<I32>(r[0], {4}, {0, 0, 1, 1});
  check_values<double>(r[1], {4}, {5, 7, 2, 9});
  check_values<I32>(r[2], {4}, {11, 13, 12, 10});
  // Eager: NaNs last, stable (the -0.0 before the 0.0 stays first).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_values<double>(run1(Prim::sort, {arr<double>({2, 3}, {nan, -0.0, 0.0, 3, 1, 2})}, SortParams{1, true, 1}),
                       {2, 3}, {-0.0, 0.0, nan, 1, 2, 3});
  check_values<I32>(run1(Prim::sort, {arr<I32>({3, 2}, {5, 0, -1, 4, 2, 1})}, SortParams{0, true, 1}), {3, 2},
                    {-1, 0, 2, 1, 5, 4});
}

TEST_CASE("rules: cumulative primitives keep their operand's type; a bad axis or a bool operand is rejected") {
  for (Prim p : {Prim::cumsum, Prim::cumprod, Prim::cummax, Prim::cummin}) {
    CAPTURE(prim_name(p));
    const auto out = ae(p, {av(DType::i32, {2, 3}, true)}, CumulativeParams{1, true});
    REQUIRE(out.size() == 1);
    CHECK(out[0].dtype == DType::i32);
    CHECK(out[0].shape == Shape{Dim(2), Dim(3)});
    CHECK(out[0].weak);
    CHECK_THROWS_WITH_AS(ae(p, {av(DType::bool_, {3})}, CumulativeParams{0, false}),
                         (std::string(prim_name(p)) +
                          " does not accept dtype bool; it requires a numeric dtype (integer or floating-point)")
                             .c_str(),
                         TypeError);
  }
  CHECK_THROWS_WITH_AS(ae(Prim::cumsum, {av(DType::f32, {2, 3})}, CumulativeParams{2, false}),
                       "cumsum: axis 2 is out of bounds for an array of shape (2, 3)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::cummin, {av(DType::f64, {4})}, CumulativeParams{-1, false}),
                       "cummin: axis -1 is out of bounds for an array of shape (4,)", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::cumprod, {av(DType::f64, {})}, CumulativeParams{0, false}),
                       "cumprod: axis 0 is out of bounds for an array of shape ()", IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::cummax, {}, CumulativeParams{0, false}), "cummax takes 1 operand, got 0", TypeError);
}

// XLA's Gather and Scatter with the index vector last (ir/shape_rules_index.hpp).
TEST_CASE("rules: gather and scatter shapes from their dimension numbers; bad numbers are rejected") {
  // x[idx] of an f32[5,3] at i32[4]: (4, 3).
  const GatherParams rows{{1}, {0}, {0}, {1, 3}};
  auto out = ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4, 1})}, rows);
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape == Shape{Dim(4), Dim(3)});
  // x[:, idx] of an f32[5,3] at i64[2,6]: the batch axes replace axis 1.
  out = ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i64, {2, 6, 1})}, GatherParams{{0}, {1}, {1}, {5, 1}});
  CHECK(out[0].shape == Shape{Dim(5), Dim(2), Dim(6)});
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::f32, {4, 1})}, rows),
                       "gather indices must have an integer dtype, got f32[4,1]", TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::u8, {4, 1})}, rows),
                       "gather indices must have dtype i32 or i64, got u8[4,1]; convert them (the numpy-level dyn:: "
                       "functions do)",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4})}, rows),
                       "gather the last axis of the indices must have size 1 (the length of start_index_map (0,)), "
                       "got indices shape (4,)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4, 1})}, GatherParams{{1}, {0}, {0}, {1, 4}}),
                       "gather slice_sizes must be non-negative and at most the operand shape, got slice_sizes (1, 4) "
                       "for operand shape (5, 3)",
                       IndexError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4, 1})}, GatherParams{{1}, {0}, {0}, {2, 3}}),
                       "gather collapsed_slice_dims (0,) must have slice size 0 or 1, got slice_sizes (2, 3)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4, 1})}, GatherParams{{}, {0}, {0}, {1, 3}}),
                       "gather offset_dims () and collapsed_slice_dims (0,) must together have one entry per operand "
                       "axis, got operand shape (5, 3)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::gather, {av(DType::f32, {5, 3}), av(DType::i32, {4, 1})}, GatherParams{{1}, {0}, {2}, {1, 3}}),
                       "gather start_index_map (2,) out of range for operand shape (5, 3)", IndexError);

  // counts.at(bins).add(1): i32[4] at i32[6,1] with i32[6] updates.
  const ScatterParams hist{{}, {0}, {0}};
  for (Prim p : {Prim::scatter, Prim::scatter_add, Prim::scatter_mul, Prim::scatter_min, Prim::scatter_max}) {
    CAPTURE(prim_name(p));
    out = ae(p, {av(DType::i32, {4}), av(DType::i32, {6, 1}), av(DType::i32, {6})}, hist);
    CHECK(out[0].shape == Shape{Dim(4)});
  }
  CHECK_THROWS_WITH_AS(ae(Prim::scatter_add, {av(DType::f32, {4, 3}), av(DType::i32, {3, 1}), av(DType::f32, {3})},
                          ScatterParams{{1}, {0}, {0}}),
                       "scatter-add updates must have rank 2 (the indices' batch axes plus update_window_dims (1,)), "
                       "got updates shape (3,) for indices shape (3, 1)",
                       ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::scatter, {av(DType::f32, {4}), av(DType::i32, {6, 1}), av(DType::i32, {6})}, hist),
                       "scatter updates dtype must match operand dtype, got updates dtype i32 and operand dtype f32",
                       TypeError);
  CHECK_THROWS_WITH_AS(ae(Prim::scatter_max, {av(DType::i32, {4}), av(DType::i32, {6, 1}), av(DType::i32, {5})}, hist),
                       "scatter-max updates shape (5,) does not match the batch axes of indices shape (6, 1)", ShapeError);
  CHECK_THROWS_WITH_AS(ae(Prim::scatter_mul, {av(DType::f32, {4, 3}), av(DType::i32, {2, 1}), av(DType::f32, {2, 5})},
                          ScatterParams{{1}, {0}, {0}}),
                       "scatter-mul update windows must fit the operand, got updates shape (2, 5) with update_window_dims "
                       "(1,) for operand shape (4, 3)",
                       ShapeError);
}
