// The user-level differential suite (issue 2), elementwise operations:
// arithmetic, comparisons and logic, rounding, transcendental functions,
// pow, maximum/minimum, atan2, where and astype, for every dtype they accept
// (helpers and the three-way check in ops_test.hpp).
//
// Each family of operations is one closure type: a factory lambda returns a
// lambda capturing the operation's name, so check_all_ways is instantiated
// once per family and dtype rather than once per operation and dtype.
#include "ops_test.hpp"

#include <numbers>
#include <string_view>
#include <tuple>

namespace {

using namespace ops_test;

// a OP b for the operators and functions whose result has the promoted dtype.
const auto bin = [](std::string_view op) {
  return [op](auto a, auto b) {
    using R = decltype(a + b);
    if (op == "+") return R(a + b);
    if (op == "-") return R(a - b);
    if (op == "*") return R(a * b);
    if (op == "/") return R(a / b);
    if (op == "%") return R(a % b);
    if constexpr (requires { a & b; }) {  // (floats: does not compile)
      if (op == "&") return R(a & b);
      if (op == "|") return R(a | b);
    }
    if (op == "pow") return R(dyn::pow(a, b));
    if (op == "max") return R(dyn::maximum(a, b));
    if (op == "min") return R(dyn::minimum(a, b));
    throw std::logic_error("bin: unknown op");
  };
};

// Comparisons: a OP b, and the forms with a weak C++ literal.
const auto cmp = [](std::string_view op) {
  return [op](auto a, auto b) {
    using R = decltype(a < b);
    if (op == "<") return R(a < b);
    if (op == "<=") return R(a <= b);
    if (op == ">") return R(a > b);
    if (op == ">=") return R(a >= b);
    if (op == "==") return R(a == b);
    if (op == "!=") return R(a != b);
    throw std::logic_error("cmp: unknown op");
  };
};
const auto cmp1 = [](std::string_view op) {
  return [op](auto a) {
    using R = decltype(a > 1);
    if (op == "a>1") return R(a > 1);
    if (op == "1>=a") return R(1 >= a);
    if (op == "a==1.0") return R(a == 1.0);
    throw std::logic_error("cmp1: unknown op");
  };
};

// One-operand forms keeping the operand's dtype: unary operators and
// functions, and binary operators with a weak C++ literal (not for bool
// operands, which an int literal promotes to i32).
const auto un = [](std::string_view op) {
  return [op](auto a) {
    using A = decltype(a);
    if (op == "-a") return A(-a);
    if (op == "neg") return A(dyn::neg(a));
    if (op == "abs") return A(dyn::abs(a));
    if (op == "sign") return A(dyn::sign(a));
    if (op == "floor") return A(dyn::floor(a));
    if (op == "ceil") return A(dyn::ceil(a));
    if (op == "round") return A(dyn::round(a));
    if (op == "!a") return A(!a);
    if constexpr (requires { a | false; })
      if (op == "a|false") return A(a | false);
    if constexpr (!std::is_same_v<typename A::value_type, bool>) {
      if (op == "a+1") return A(a + 1);
      if (op == "2-a") return A(2 - a);
      if (op == "a*3") return A(a * 3);
      if (op == "a/2") return A(a / 2);
      if (op == "a%3") return A(a % 3);
      if (op == "7%a") return A(7 % a);
      if constexpr (requires { a & 6; })
        if (op == "a&6") return A(a & 6);
      if (op == "pow(a,2)") return A(dyn::pow(a, 2));
      if (op == "pow(2,a)") return A(dyn::pow(2, a));
      if (op == "max(a,0)") return A(dyn::maximum(a, 0));
      if (op == "min(2,a)") return A(dyn::minimum(2, a));
      if (op == "where(a>0,a,-a)") return A(dyn::where(a > 0, a, -a));
      if (op == "where(a<0,0,a)") return A(dyn::where(a < 0, 0, a));
    }
    throw std::logic_error("un: unknown op");
  };
};

// Functions computed in a float type (f32 for integers and bools).
const auto fun = [](std::string_view op) {
  return [op](auto a) {
    using R = decltype(dyn::exp(a));
    if (op == "exp") return R(dyn::exp(a));
    if (op == "log") return R(dyn::log(a));
    if (op == "log1p") return R(dyn::log1p(a));
    if (op == "sqrt") return R(dyn::sqrt(a));
    if (op == "rsqrt") return R(dyn::rsqrt(a));
    if (op == "sin") return R(dyn::sin(a));
    if (op == "cos") return R(dyn::cos(a));
    if (op == "tan") return R(dyn::tan(a));
    if (op == "tanh") return R(dyn::tanh(a));
    if (op == "logistic") return R(dyn::logistic(a));
    throw std::logic_error("fun: unknown op");
  };
};

}  // namespace

// ===========================================================================
// Elementwise arithmetic.

TEST_CASE_TEMPLATE("ops: + - * / % and unary minus, hand-computed", T, i32, i64, float, double) {
  constexpr bool fl = std::is_floating_point_v<T>;
  const auto x = mk<T>({6}, {-7, 7, -7, 7, 6, 0});
  const auto y = mk<T>({6}, {2, 2, -2, -2, 3, 5});

  CHECK_ARR(T, check_all_ways(bin("+"), x, y), {6}, {-5, 9, -9, 5, 9, 5});
  CHECK_ARR(T, check_all_ways(bin("-"), x, y), {6}, {-9, 5, -5, 9, 3, -5});
  CHECK_ARR(T, check_all_ways(bin("*"), x, y), {6}, {-14, 14, 14, -14, 18, 0});
  // Integers divide truncating toward zero (lax.div): div(-7, 2) == -3.
  CHECK_ARR(T, check_all_ways(bin("/"), x, y), {6}, fl ? Vals{-3.5, 3.5, 3.5, -3.5, 2, 0} : Vals{-3, 3, 3, -3, 2, 0});
  // The remainder has the dividend's sign (lax.rem): rem(-7, 2) == -1.
  CHECK_ARR(T, check_all_ways(bin("%"), x, y), {6}, {-1, 1, -1, 1, 0, 0});
  CHECK_ARR(T, check_all_ways(un("-a"), x), {6}, {7, -7, 7, -7, -6, -0.0});
  CHECK_ARR(T, check_all_ways(un("neg"), x), {6}, {7, -7, 7, -7, -6, -0.0});

  // With weak C++ scalars on either side: the array's dtype is kept.
  CHECK_ARR(T, check_all_ways(un("a+1"), x), {6}, {-6, 8, -6, 8, 7, 1});
  CHECK_ARR(T, check_all_ways(un("2-a"), x), {6}, {9, -5, 9, -5, -4, 2});
  CHECK_ARR(T, check_all_ways(un("a*3"), x), {6}, {-21, 21, -21, 21, 18, 0});
  CHECK_ARR(T, check_all_ways(un("a/2"), x), {6}, fl ? Vals{-3.5, 3.5, -3.5, 3.5, 3, 0} : Vals{-3, 3, -3, 3, 3, 0});
  CHECK_ARR(T, check_all_ways(un("a%3"), x), {6}, {-1, 1, -1, 1, 0, 0});
  CHECK_ARR(T, check_all_ways(un("7%a"), y), {6}, {1, 1, 1, 1, 1, 2});

  // A weak literal is a literal of the array's dtype in the jaxpr.
  const auto cj = dyn::make_jaxpr(un("a+1"))(x);
  CHECK(prims(cj) == std::vector<std::string>{"add"});
  const auto& lit = cj.jaxpr->eqns.at(0).inputs.at(1);
  CHECK_FALSE(lit.is_var());
  CHECK(lit.lit.dtype == dyn::dtype_v<T>);
}

TEST_CASE_TEMPLATE("ops: division by zero", T, i32, i64, float, double) {
  const auto x = mk<T>({3}, {-1, 1, 0});
  const auto z = mk<T>({3}, {0, 0, 0});
  if constexpr (std::is_floating_point_v<T>) {
    CHECK_ARR(T, check_all_ways(bin("/"), x, z), {3}, {-kInf, kInf, kNaN});
    CHECK_ARR(T, check_all_ways(bin("%"), x, z), {3}, {kNaN, kNaN, kNaN});
  } else {
    // XLA's results (lax.div, lax.rem): x / 0 = -1, x % 0 = x.
    CHECK_ARR(T, check_all_ways(bin("/"), x, z), {3}, {-1, -1, -1});
    CHECK_ARR(T, check_all_ways(bin("%"), x, z), {3}, {-1, 1, 0});
    CHECK_ARR(T, x % 0, {3}, {-1, 1, 0});
  }
}

TEST_CASE_TEMPLATE("ops: integer arithmetic wraps", T, i32, i64) {
  constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const dyn::Array<T> x({2}, {lo, hi});
  const auto r = check_all_ways([](auto a) { return std::make_tuple(a + 1, a / -1, -a, a % -1); }, x);
  CHECK(std::get<0>(r)(0) == lo + 1);
  CHECK(std::get<0>(r)(1) == lo);  // hi + 1 wraps
  CHECK(std::get<1>(r)(0) == lo);  // INT_MIN / -1 wraps
  CHECK(std::get<1>(r)(1) == -hi);
  CHECK(std::get<2>(r)(0) == lo);
  CHECK(std::get<3>(r)(0) == 0);
}

TEST_CASE_TEMPLATE("ops: neg abs sign", T, i32, i64, float, double) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto x = mk<T>({6}, {-2.5, 3, 0, -0.0, kNaN, -kInf});
    CHECK_ARR(T, check_all_ways(un("neg"), x), {6}, {2.5, -3, -0.0, 0, kNaN, kInf});
    CHECK_ARR(T, check_all_ways(un("abs"), x), {6}, {2.5, 3, 0, 0, kNaN, kInf});
    // sign keeps the zero's sign and NaN: sign(-0.0) == -0.0.
    CHECK_ARR(T, check_all_ways(un("sign"), x), {6}, {-1, 1, 0, -0.0, kNaN, -1});
  } else {
    const auto x = mk<T>({4}, {-2, 3, 0, -1});
    CHECK_ARR(T, check_all_ways(un("neg"), x), {4}, {2, -3, 0, 1});
    CHECK_ARR(T, check_all_ways(un("abs"), x), {4}, {2, 3, 0, 1});
    CHECK_ARR(T, check_all_ways(un("sign"), x), {4}, {-1, 1, 0, -1});
  }
}

TEST_CASE("ops: neg abs sign reject bool") {
  const auto b = mk<bool>({2}, {1, 0});
  CHECK_THROWS_AS(dyn::neg(b), dyn::TypeError);
  CHECK_THROWS_AS(-b, dyn::TypeError);
  CHECK_THROWS_AS(dyn::abs(b), dyn::TypeError);
  CHECK_THROWS_AS(dyn::sign(b), dyn::TypeError);
  CHECK_THROWS_AS(dyn::make_jaxpr(un("neg"))(b), dyn::TypeError);
}

// ===========================================================================
// Comparisons and logic.

TEST_CASE_TEMPLATE("ops: comparisons give bool", T, bool, i32, i64, float, double) {
  // bool: x = [F T T T], y = [T T T F]; numbers: x = [0 1 2 1], y = [1 1 1 0].
  constexpr bool b = std::is_same_v<T, bool>;
  const auto x = mk<T>({4}, {0, 1, 2, 1});
  const auto y = mk<T>({4}, {1, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways(cmp("<"), x, y), {4}, {1, 0, 0, 0});
  CHECK_ARR(bool, check_all_ways(cmp("<="), x, y), {4}, b ? Vals{1, 1, 1, 0} : Vals{1, 1, 0, 0});
  CHECK_ARR(bool, check_all_ways(cmp(">"), x, y), {4}, b ? Vals{0, 0, 0, 1} : Vals{0, 0, 1, 1});
  CHECK_ARR(bool, check_all_ways(cmp(">="), x, y), {4}, {0, 1, 1, 1});
  CHECK_ARR(bool, check_all_ways(cmp("=="), x, y), {4}, b ? Vals{0, 1, 1, 0} : Vals{0, 1, 0, 0});
  CHECK_ARR(bool, check_all_ways(cmp("!="), x, y), {4}, b ? Vals{1, 0, 0, 1} : Vals{1, 0, 1, 1});
  if constexpr (!b) {
    // Against a weak scalar on either side.
    CHECK_ARR(bool, check_all_ways(cmp1("a>1"), x), {4}, {0, 0, 1, 0});
    CHECK_ARR(bool, check_all_ways(cmp1("1>=a"), x), {4}, {1, 1, 0, 1});
    CHECK_ARR(bool, check_all_ways(cmp1("a==1.0"), x), {4}, {0, 1, 0, 1});
  }
}

TEST_CASE_TEMPLATE("ops: comparisons with NaN", T, float, double) {
  const auto x = mk<T>({2}, {kNaN, 1});
  const auto y = mk<T>({2}, {kNaN, kNaN});
  CHECK_ARR(bool, check_all_ways(cmp("=="), x, y), {2}, {0, 0});
  CHECK_ARR(bool, check_all_ways(cmp("!="), x, y), {2}, {1, 1});
  CHECK_ARR(bool, check_all_ways(cmp("<"), x, y), {2}, {0, 0});
  CHECK_ARR(bool, check_all_ways(cmp(">="), x, y), {2}, {0, 0});
}

TEST_CASE("ops: & | ! on bool") {
  const auto a = mk<bool>({4}, {1, 1, 0, 0});
  const auto b = mk<bool>({4}, {1, 0, 1, 0});
  CHECK_ARR(bool, check_all_ways(bin("&"), a, b), {4}, {1, 0, 0, 0});
  CHECK_ARR(bool, check_all_ways(bin("|"), a, b), {4}, {1, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways(un("!a"), a), {4}, {0, 0, 1, 1});
  // Combined with comparisons: (x > 0) & !(x > 2).
  const auto x = mk<double>({4}, {-1, 1, 2, 3});
  CHECK_ARR(bool, check_all_ways([](auto v) { return (v > 0) & !(v > 2); }, x), {4}, {0, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways(un("a|false"), a), {4}, {1, 1, 0, 0});
}

TEST_CASE_TEMPLATE("ops: & | are bitwise on integers", T, i32, i64) {
  const auto a = mk<T>({3}, {12, -1, 5});
  const auto b = mk<T>({3}, {10, 7, 3});
  CHECK_ARR(T, check_all_ways(bin("&"), a, b), {3}, {8, 7, 1});
  CHECK_ARR(T, check_all_ways(bin("|"), a, b), {3}, {14, -1, 7});
  CHECK_ARR(T, check_all_ways(un("a&6"), a), {3}, {4, 6, 4});
}

template <class A, class B>
concept CanAnd = requires(A a, B b) { a & b; };
template <class A, class B>
concept CanOr = requires(A a, B b) { a | b; };

TEST_CASE("ops: & | of floats do not compile (API.md section 13); the primitives reject them") {
  static_assert(!CanAnd<dyn::Array<double>, dyn::Array<double>>);
  static_assert(!CanOr<dyn::Array<float>, dyn::Array<float>>);
  static_assert(!CanAnd<dyn::Array<std::int32_t>, double>);
  static_assert(!CanAnd<dyn::Tracer<float>, dyn::Tracer<bool>>);
  static_assert(CanAnd<dyn::Array<std::int32_t>, int> && CanOr<dyn::Tracer<bool>, dyn::Array<bool>>);
  // A hand-built equation (or eval_jaxpr) still meets the dtype rule.
  const auto x = mk<double>({2}, {1, 0});
  CHECK_THROWS_WITH_AS(dyn::detail::impl(dyn::detail::Prim::and_, {x, x}, dyn::detail::NoParams{}),
                       doctest::Contains("and does not accept dtype f64; it requires a boolean or integer dtype"),
                       dyn::TypeError);
}

// ===========================================================================
// Rounding.

TEST_CASE_TEMPLATE("ops: floor ceil round on floats", T, float, double) {
  const auto x = mk<T>({9}, {-1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.5, 3.7, kNaN});
  CHECK_ARR(T, check_all_ways(un("floor"), x), {9}, {-2, -1, 0, 1, 2, 2, -3, 3, kNaN});
  CHECK_ARR(T, check_all_ways(un("ceil"), x), {9}, {-1, -0.0, 1, 2, 3, 3, -2, 4, kNaN});
  // Half to even, as jnp.round: round(2.5) == 2, round(0.5) == 0, round(-0.5) == -0.0.
  CHECK_ARR(T, check_all_ways(un("round"), x), {9}, {-2, -0.0, 0, 2, 2, 2, -2, 4, kNaN});
}

TEST_CASE_TEMPLATE("ops: floor ceil round are the identity on integers and bools", T, bool, i32, i64) {
  const auto x = mk<T>({3}, {-3, 0, 4});
  const auto f = [](auto a) { return std::make_tuple(dyn::floor(a), dyn::ceil(a), dyn::round(a)); };
  const auto r = check_all_ways(f, x);
  CHECK_ARR(T, std::get<0>(r), {3}, {-3, 0, 4});
  CHECK_ARR(T, std::get<1>(r), {3}, {-3, 0, 4});
  CHECK_ARR(T, std::get<2>(r), {3}, {-3, 0, 4});
  CHECK(prims(dyn::make_jaxpr(f)(x)).empty());
}

// ===========================================================================
// Transcendental functions: computed in the input's float type, or in f32 for
// integers and bools (jnp.sin(int32) is float32).

namespace {

// fun(name) on x equals g (the std:: function, applied in the result type R)
// elementwise, exactly.
template <class T, class G>
void check_float_unary(std::string_view name, const G& g, const dyn::Array<T>& x) {
  using R = inexact<T>;
  INFO(name);
  Vals want;
  for (i64 i = 0; i < x.size(); ++i) want.push_back(static_cast<double>(g(static_cast<R>(x.data()[i]))));
  CHECK_ARR(R, check_all_ways(fun(name), x), x.shape(), want);
}

}  // namespace

TEST_CASE_TEMPLATE("ops: exp log log1p sqrt rsqrt sin cos tan tanh logistic", T, bool, i32, i64, float, double) {
  using R = inexact<T>;
  const auto x = std::is_same_v<T, bool> ? mk<T>({2}, {0, 1})
                 : std::is_floating_point_v<T> ? mk<T>({6}, {0, 0.5, 1, 2, 4, -0.25})
                                               : mk<T>({5}, {0, 1, 2, 4, -3});
  check_float_unary("exp", [](R v) { return std::exp(v); }, x);
  check_float_unary("log", [](R v) { return std::log(v); }, x);
  check_float_unary("log1p", [](R v) { return std::log1p(v); }, x);
  check_float_unary("sqrt", [](R v) { return std::sqrt(v); }, x);
  check_float_unary("rsqrt", [](R v) { return R(1) / std::sqrt(v); }, x);
  check_float_unary("sin", [](R v) { return std::sin(v); }, x);
  check_float_unary("cos", [](R v) { return std::cos(v); }, x);
  check_float_unary("tan", [](R v) { return std::tan(v); }, x);
  check_float_unary("tanh", [](R v) { return std::tanh(v); }, x);
  check_float_unary("logistic", [](R v) { return R(1) / (R(1) + std::exp(-v)); }, x);

  // Hand-computed values at 0 (the first element for every dtype) and 1.
  const auto all = check_all_ways(
      [](auto a) {
        return std::make_tuple(dyn::exp(a), dyn::log(a), dyn::log1p(a), dyn::sqrt(a), dyn::rsqrt(a), dyn::sin(a),
                               dyn::cos(a), dyn::tan(a), dyn::tanh(a), dyn::logistic(a));
      },
      x);
  CHECK(std::get<0>(all)(0) == R(1));
  CHECK(std::get<1>(all)(0) == -std::numeric_limits<R>::infinity());
  CHECK(std::get<1>(all)(1) == (std::is_floating_point_v<T> ? std::log(R(0.5)) : R(0)));
  CHECK(std::get<2>(all)(0) == R(0));
  CHECK(std::get<3>(all)(0) == R(0));
  CHECK(std::get<4>(all)(0) == std::numeric_limits<R>::infinity());
  CHECK(std::get<5>(all)(0) == R(0));
  CHECK(std::get<6>(all)(0) == R(1));
  CHECK(std::get<7>(all)(0) == R(0));
  CHECK(std::get<8>(all)(0) == R(0));
  CHECK(std::get<9>(all)(0) == R(0.5));
  if constexpr (!std::is_same_v<T, bool>) {
    // sqrt(4) == 2, rsqrt(4) == 0.5; negative inputs give NaN. (The same
    // three-way check as above: one instantiation serves both.)
    const auto y = mk<T>({3}, {4, -1, 1});
    const auto r = check_all_ways(
        [](auto a) {
          return std::make_tuple(dyn::exp(a), dyn::log(a), dyn::log1p(a), dyn::sqrt(a), dyn::rsqrt(a), dyn::sin(a),
                                 dyn::cos(a), dyn::tan(a), dyn::tanh(a), dyn::logistic(a));
        },
        y);
    CHECK_ARR(R, std::get<3>(r), {3}, {2, kNaN, 1});
    CHECK_ARR(R, std::get<4>(r), {3}, {0.5, kNaN, 1});
    CHECK_ARR(R, std::get<1>(r), {3}, {static_cast<double>(std::log(R(4))), kNaN, 0});
  }
}

// ===========================================================================
// Binary functions.

TEST_CASE_TEMPLATE("ops: pow", T, i32, i64, float, double) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto x = mk<T>({5}, {2, 4, -8, 2, -1});
    const auto y = mk<T>({5}, {0.5, -0.5, 3, 10, 0.5});
    CHECK_ARR(T, check_all_ways(bin("pow"), x, y), {5},
              {static_cast<double>(std::pow(T(2), T(0.5))), 0.5, -512, 1024, kNaN});
    CHECK_ARR(T, check_all_ways(un("pow(a,2)"), x), {5}, {4, 16, 64, 4, 1});
  } else {
    // Integer powers, including negative exponents (truncated reciprocals).
    const auto x = mk<T>({7}, {2, -3, 2, 1, -1, 0, 3});
    const auto y = mk<T>({7}, {10, 3, -1, -5, -3, 0, 0});
    CHECK_ARR(T, check_all_ways(bin("pow"), x, y), {7}, {1024, -27, 0, 1, -1, 1, 1});
    CHECK_ARR(T, check_all_ways(un("pow(2,a)"), mk<T>({3}, {0, 1, 5})), {3}, {1, 2, 32});
  }
}

TEST_CASE_TEMPLATE("ops: maximum minimum", T, i32, i64, float, double) {
  const auto x = mk<T>({3}, {1, 5, -3});
  const auto y = mk<T>({3}, {2, 4, -3});
  CHECK_ARR(T, check_all_ways(bin("max"), x, y), {3}, {2, 5, -3});
  CHECK_ARR(T, check_all_ways(bin("min"), x, y), {3}, {1, 4, -3});
  CHECK_ARR(T, check_all_ways(un("max(a,0)"), x), {3}, {1, 5, 0});
  CHECK_ARR(T, check_all_ways(un("min(2,a)"), x), {3}, {1, 2, -3});
  if constexpr (std::is_floating_point_v<T>) {
    // NaN propagates from either side, as lax.max / lax.min.
    const auto p = mk<T>({3}, {kNaN, 1, -0.0});
    const auto q = mk<T>({3}, {1, kNaN, 2});
    CHECK_ARR(T, check_all_ways(bin("max"), p, q), {3}, {kNaN, kNaN, 2});
    CHECK_ARR(T, check_all_ways(bin("min"), p, q), {3}, {kNaN, kNaN, -0.0});
  }
}

TEST_CASE_TEMPLATE("ops: atan2", T, i32, i64, float, double) {
  using R = inexact<T>;
  const auto y = mk<T>({4}, {1, 0, -1, 0});
  const auto x = mk<T>({4}, {1, -1, 0, 1});
  const auto at = [](auto a, auto b) { return dyn::atan2(a, b); };
  const auto r = check_all_ways(at, y, x);
  CHECK_ARR(R, r, {4},
            {static_cast<double>(std::atan2(R(1), R(1))), static_cast<double>(std::atan2(R(0), R(-1))),
             static_cast<double>(std::atan2(R(-1), R(0))), 0});
  // atan2(0, -1) == pi in the result type.
  CHECK(r(1) == static_cast<R>(std::numbers::pi));
}

TEST_CASE("ops: arithmetic rejects bool, maximum rejects bool") {
  const auto b = mk<bool>({2}, {1, 0});
  CHECK_THROWS_AS(dyn::maximum(b, b), dyn::TypeError);
  CHECK_THROWS_AS(dyn::pow(b, b), dyn::TypeError);
  CHECK_THROWS_AS(b - b, dyn::TypeError);
}

// ===========================================================================
// where and astype.

TEST_CASE_TEMPLATE("ops: where", T, bool, i32, i64, float, double) {
  const auto where3 = [](auto c, auto u, auto v) { return dyn::where(c, u, v); };
  const auto p = mk<bool>({3}, {1, 0, 1});
  const auto a = mk<T>({3}, {5, 6, 0});
  const auto b = mk<T>({3}, {0, 0, 7});
  CHECK_ARR(T, check_all_ways(where3, p, a, b), {3}, {5, 0, 0});
  // A traced predicate from a comparison, a weak scalar case.
  if constexpr (!std::is_same_v<T, bool>) {
    const auto x = mk<T>({4}, {-2, 3, 0, -1});
    CHECK_ARR(T, check_all_ways(un("where(a>0,a,-a)"), x), {4}, {2, 3, -0.0, 1});
    CHECK_ARR(T, check_all_ways(un("where(a<0,0,a)"), x), {4}, {0, 3, 0, 0});
    CHECK(prims(dyn::make_jaxpr(un("where(a<0,0,a)"))(x)) ==
          std::vector<std::string>{"lt", "broadcast_in_dim", "select_n"});
  }
  // Broadcasting: a (3,1) predicate against (1,2) and rank-0 cases.
  const auto pc = mk<bool>({3, 1}, {1, 0, 1});
  const auto row = mk<T>({1, 2}, {1, 0});
  const auto s = dyn::Array<T>::scalar(cv<T>(0));
  CHECK_ARR(T, check_all_ways(where3, pc, row, s), {3, 2}, {1, 0, 0, 0, 1, 0});
}

TEST_CASE("ops: a traced where stages the broadcast of a literal case (no folded constant)") {
  const auto x = mk<double>({3, 2}, {1, -1, 2, -2, 0, 3});
  const auto f = [](auto v) { return dyn::where(v > 0, 1.0, v); };
  CHECK_ARR(double, check_all_ways(f, x), {3, 2}, {1, -1, 1, -2, 0, 1});
  const auto cj = dyn::make_jaxpr(f)(x);
  CHECK(cj.consts.empty());
  CHECK(prims(cj) == std::vector<std::string>{"gt", "broadcast_in_dim", "select_n"});
}

TEST_CASE("ops: where with incompatible shapes") {
  const auto p = mk<bool>({2}, {1, 0});
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "where got incompatible shapes for broadcasting",
                          dyn::where(p, mk<double>({3}, {1, 2, 3}), 0.0));
}

namespace {

// Every conversion of one operand in one function: a single instantiation
// per source dtype.
const auto astype_all = [](auto a) {
  return std::make_tuple(dyn::astype<bool>(a), dyn::astype<i32>(a), dyn::astype<i64>(a), dyn::astype<float>(a),
                         dyn::astype<double>(a));
};

template <class T, class U>
Vals astype_want(const dyn::Array<T>& x) {
  Vals want;
  for (i64 i = 0; i < x.size(); ++i) {
    T v = x.data()[i];
    U u;
    if constexpr (std::is_same_v<U, bool>) u = v != T(0);
    else if constexpr (std::is_floating_point_v<T> && std::is_integral_v<U>) u = std::isnan(v) ? U(0) : static_cast<U>(v);
    else u = static_cast<U>(v);
    want.push_back(static_cast<double>(u));
  }
  return want;
}

}  // namespace

TEST_CASE_TEMPLATE("ops: astype between every pair of dtypes", T, bool, i32, i64, float, double) {
  // In range for every target, so the generic expectation is plain casting.
  const auto x = std::is_floating_point_v<T> ? mk<T>({5}, {-2.75, 0, 1.5, 3, -0.0})
                                             : mk<T>({4}, {-2, 0, 1, 3});
  const auto r = check_all_ways(astype_all, x);
  CHECK_ARR(bool, std::get<0>(r), x.shape(), (astype_want<T, bool>(x)));
  CHECK_ARR(i32, std::get<1>(r), x.shape(), (astype_want<T, i32>(x)));
  CHECK_ARR(i64, std::get<2>(r), x.shape(), (astype_want<T, i64>(x)));
  CHECK_ARR(float, std::get<3>(r), x.shape(), (astype_want<T, float>(x)));
  CHECK_ARR(double, std::get<4>(r), x.shape(), (astype_want<T, double>(x)));
  // One convert_element_type per target dtype, none for astype<T> itself,
  // which returns its operand.
  const auto cj = dyn::make_jaxpr(astype_all)(x);
  CHECK(prims(cj) == std::vector<std::string>(4, "convert_element_type"));
  // (astype_all's outputs: bool, i32, i64, f32, f64, in this order)
  const int self = std::is_same_v<T, bool> ? 0 : std::is_same_v<T, i32> ? 1 : std::is_same_v<T, i64> ? 2
                                               : std::is_same_v<T, float> ? 3 : 4;
  CHECK(cj.jaxpr->outvars.at(static_cast<std::size_t>(self)).var == cj.jaxpr->invars.at(0));
  for (const auto& e : cj.jaxpr->eqns)
    CHECK(std::get<dyn::detail::ConvertParams>(e.params).new_dtype != dyn::dtype_v<T>);
}

TEST_CASE("ops: astype, hand-computed edge cases") {
  const auto x = mk<double>({6}, {-1.7, 0, 2.5, 3e10, kNaN, -3e10});
  // Truncation toward zero; NaN -> 0; out-of-range saturates.
  const auto r = check_all_ways(astype_all, x);
  CHECK_ARR(i32, std::get<1>(r), {6}, {-1, 0, 2, 2147483647, 0, -2147483648.0});
  CHECK_ARR(i64, std::get<2>(r), {6}, {-1, 0, 2, 30000000000.0, 0, -30000000000.0});
  CHECK_ARR(bool, std::get<0>(r), {6}, {1, 0, 1, 1, 1, 1});
  CHECK_ARR(float, std::get<3>(r), {6}, {static_cast<double>(-1.7f), 0, 2.5, 3e10, kNaN, -3e10});
  const auto b = mk<bool>({2}, {1, 0});
  const auto rb = check_all_ways(astype_all, b);
  CHECK_ARR(i32, std::get<1>(rb), {2}, {1, 0});
  CHECK_ARR(double, std::get<4>(rb), {2}, {1, 0});
  // A rank-0 argument is converted by the same kernel as any other.
  CHECK_ARR(i32, std::get<1>(check_all_ways(astype_all, dyn::Array<double>::scalar(-3e10))), {},
            {-2147483648.0});
}
