// The user-level differential suite (issue 2).
//
// Every operation of API.md section 4, for every dtype it accepts, runs three
// ways: eagerly (dyn::eager), staged (dyn::make_jaxpr) and interpreted
// (dyn::eval_jaxpr). check_all_ways asserts that the jaxpr's output types
// equal the eager results' dtypes and shapes and that the interpreted program
// gives the eager numbers exactly (NaN-aware, signed zeros distinguished);
// each case then asserts hand-computed numbers. Then: promotion and weak
// types (static C++ types and runtime dtypes), broadcasting, pytrees, static
// arguments, and the value semantics of dyn::Array.
//
// Golden jaxpr texts live in test_golden.cpp; here jaxprs are only inspected
// structurally (output types, invars, primitive names).
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <boost/hana.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// A layer whose leaves are arrays or tracers (pytree.hpp: Hana structs must be
// templates over their leaf types so they can be rebuilt with tracers).
namespace ops_test {
template <class A>
struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (A, w), (A, b));
};
}  // namespace ops_test

namespace {

using i32 = std::int32_t;
using i64 = std::int64_t;
using Shp = std::vector<std::int64_t>;
using Vals = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------
// Building arrays from doubles (exact for every value used here).

template <class T>
T cv(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

template <class T>
dyn::Array<T> mk(Shp shape, const Vals& vals) {
  std::vector<T> v;
  for (double d : vals) v.push_back(cv<T>(d));
  return dyn::Array<T>(std::move(shape), v);
}

// The i-th element of seq<T>: i, or for bool i odd.
template <class T>
T val(i64 i) {
  if constexpr (std::is_same_v<T, bool>) return i % 2 == 1;
  else return static_cast<T>(i);
}

template <class T>
dyn::Array<T> seq(Shp shape) {
  i64 n = 1;
  for (auto d : shape) n *= d;
  std::vector<T> v;
  for (i64 i = 0; i < n; ++i) v.push_back(val<T>(i));
  return dyn::Array<T>(std::move(shape), v);
}

// The elements of seq<T> at the given flat indices, as expected values.
template <class T>
Vals seq_at(const std::vector<i64>& idx) {
  Vals r;
  for (auto i : idx) r.push_back(static_cast<double>(val<T>(i)));
  return r;
}

// ---------------------------------------------------------------------------
// Exact comparison: same dtype, shape and elements; NaN equals NaN, -0.0 and
// 0.0 differ.

template <class T>
bool same_elem(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

std::string describe(const dyn::AnyArray& a) {
  std::ostringstream os;
  os << dyn::detail::array_type_str(a) << " " << a;
  return os.str();
}

bool identical(const dyn::AnyArray& a, const dyn::AnyArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return dyn::visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(a.data());
    const T* y = static_cast<const T*>(b.data());
    for (i64 i = 0; i < a.size(); ++i)
      if (!same_elem(x[i], y[i])) return false;
    return true;
  });
}

// "" if `got` is a dyn::Array<T> of `shape` holding `want`, else why not.
template <class T, class G>
std::string match_array(const G& got, const Shp& shape, const Vals& want) {
  if constexpr (!std::is_same_v<G, dyn::Array<T>>) {
    return std::string("static type is not dyn::Array<") + std::string(dyn::dtype_name(dyn::dtype_v<T>)) + ">";
  } else {
    i64 n = 1;
    for (auto d : shape) n *= d;
    if (n != static_cast<i64>(want.size())) return "bad test: wrong number of expected values";
    dyn::Array<T> w = mk<T>(shape, want);
    if (identical(got, w)) return "";
    return "got " + describe(got) + "\n want " + describe(w);
  }
}

#define CHECK_ARR(T, got, ...)                                           \
  do {                                                                   \
    const std::string m_ = match_array<T>((got), __VA_ARGS__);           \
    CHECK_MESSAGE(m_.empty(), m_);                                       \
  } while (false)

// Whether `f()` throws E with a message containing `needle`.
template <class E, class F>
std::string throws_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    std::string msg = e.what();
    if (msg.find(needle) != std::string::npos) return "";
    return "message was: " + msg;
  } catch (const std::exception& e) {
    return std::string("threw another exception: ") + e.what();
  }
  return "did not throw";
}

#define CHECK_THROWS_CONTAINING(E, needle, ...)                                 \
  do {                                                                          \
    const std::string m_ = throws_with<E>([&] { (void)(__VA_ARGS__); }, needle); \
    CHECK_MESSAGE(m_.empty(), m_);                                              \
  } while (false)

// ---------------------------------------------------------------------------
// Jaxpr inspection.

std::vector<std::string> prims(const dyn::ClosedJaxpr& cj) {
  std::vector<std::string> r;
  for (const auto& e : cj.jaxpr->eqns) r.emplace_back(dyn::detail::prim_name(e.prim));
  return r;
}

std::string type_str(const dyn::Jaxpr& j, const dyn::Type& t) { return dyn::detail::type_str(j, t); }

std::vector<std::string> invar_types(const dyn::ClosedJaxpr& cj) {
  std::vector<std::string> r;
  for (int v : cj.jaxpr->invars) r.push_back(type_str(*cj.jaxpr, cj.jaxpr->types.at(static_cast<std::size_t>(v))));
  return r;
}

std::vector<std::string> outvar_types(const dyn::ClosedJaxpr& cj) {
  std::vector<std::string> r;
  for (const auto& a : cj.jaxpr->outvars) r.push_back(type_str(*cj.jaxpr, cj.jaxpr->type_of(a)));
  return r;
}

// The leaves of a pytree of arrays / scalars as AnyArrays, in order.
template <class X>
std::vector<dyn::AnyArray> leaves(const X& x) {
  std::vector<dyn::AnyArray> r;
  dyn::detail::for_each_leaf(x, [&](const auto& l) { r.push_back(dyn::detail::leaf_array(l)); });
  return r;
}

// "" if the jaxpr type `t` has the dtype and static shape of `a`.
std::string type_mismatch(const dyn::Jaxpr& j, const dyn::Type& t, const dyn::AnyArray& a) {
  bool ok = t.dtype == a.dtype() && t.shape.size() == a.shape().size();
  for (std::size_t i = 0; ok && i < t.shape.size(); ++i)
    ok = t.shape[i].is_static() && t.shape[i].value == a.shape()[i];
  if (ok) return "";
  return "jaxpr type " + type_str(j, t) + " but eager result " + dyn::detail::array_type_str(a);
}

// ---------------------------------------------------------------------------
// The differential check. Runs f eagerly, stages it, interprets the jaxpr on
// the flattened arguments and compares; returns the eager result for the
// caller's hand-computed assertions.

template <class F, class... Args>
auto check_all_ways(const F& f, const Args&... args) {
  auto eager_out = dyn::eager(f)(args...);
  const std::vector<dyn::AnyArray> want = leaves(eager_out);

  // The static result type of the traced function, made concrete, is the
  // eager one: Tracer<T> and Array<T> agree on T.
  using Traced = std::invoke_result_t<const F&, dyn::detail::traced_t<Args>&...>;
  CHECK_MESSAGE((std::is_same_v<dyn::detail::concrete_t<Traced>, decltype(eager_out)>),
                "the traced and eager runs have different static result types");

  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(f)(args...);
  const dyn::Jaxpr& j = *cj.jaxpr;
  INFO("jaxpr:\n", dyn::to_string(cj));

  std::vector<dyn::AnyArray> flat_args;
  (dyn::detail::for_each_leaf(args, [&](const auto& l) { flat_args.push_back(dyn::detail::leaf_array(l)); }), ...);
  CHECK(j.invars.size() == flat_args.size());
  CHECK(cj.consts.size() == j.constvars.size());

  REQUIRE(j.outvars.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    const std::string m = type_mismatch(j, j.type_of(j.outvars[k]), want[k]);
    CHECK_MESSAGE(m.empty(), "output #", k, ": ", m);
  }

  const std::vector<dyn::AnyArray> got = dyn::eval_jaxpr(cj, flat_args);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k)
    CHECK_MESSAGE(identical(got[k], want[k]), "output #", k, ": eval_jaxpr gave ", describe(got[k]),
                  "\n eager gave ", describe(want[k]));
  return eager_out;
}

template <class T>
using inexact = std::conditional_t<std::is_floating_point_v<T>, T, float>;

}  // namespace

// ===========================================================================
// Elementwise arithmetic.

TEST_CASE_TEMPLATE("ops: + - * / % and unary minus, hand-computed", T, i32, i64, float, double) {
  constexpr bool fl = std::is_floating_point_v<T>;
  const auto x = mk<T>({6}, {-7, 7, -7, 7, 6, 0});
  const auto y = mk<T>({6}, {2, 2, -2, -2, 3, 5});

  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a + b; }, x, y), {6}, {-5, 9, -9, 5, 9, 5});
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a - b; }, x, y), {6}, {-9, 5, -5, 9, 3, -5});
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a * b; }, x, y), {6}, {-14, 14, 14, -14, 18, 0});
  // Integers divide truncating toward zero (lax.div): div(-7, 2) == -3.
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a / b; }, x, y), {6},
            fl ? Vals{-3.5, 3.5, 3.5, -3.5, 2, 0} : Vals{-3, 3, 3, -3, 2, 0});
  // The remainder has the dividend's sign (lax.rem): rem(-7, 2) == -1.
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a % b; }, x, y), {6}, {-1, 1, -1, 1, 0, 0});
  CHECK_ARR(T, check_all_ways([](auto a) { return -a; }, x), {6}, {7, -7, 7, -7, -6, -0.0});
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::neg(a); }, x), {6}, {7, -7, 7, -7, -6, -0.0});

  // With weak C++ scalars on either side: the array's dtype is kept.
  CHECK_ARR(T, check_all_ways([](auto a) { return a + 1; }, x), {6}, {-6, 8, -6, 8, 7, 1});
  CHECK_ARR(T, check_all_ways([](auto a) { return 2 - a; }, x), {6}, {9, -5, 9, -5, -4, 2});
  CHECK_ARR(T, check_all_ways([](auto a) { return a * 3; }, x), {6}, {-21, 21, -21, 21, 18, 0});
  CHECK_ARR(T, check_all_ways([](auto a) { return a / 2; }, x), {6},
            fl ? Vals{-3.5, 3.5, -3.5, 3.5, 3, 0} : Vals{-3, 3, -3, 3, 3, 0});
  CHECK_ARR(T, check_all_ways([](auto a) { return a % 3; }, x), {6}, {-1, 1, -1, 1, 0, 0});
  CHECK_ARR(T, check_all_ways([](auto a) { return 7 % a; }, y), {6}, {1, 1, 1, 1, 1, 2});

  // A weak literal is a literal of the array's dtype in the jaxpr.
  const auto cj = dyn::make_jaxpr([](auto a) { return a + 1; })(x);
  CHECK(prims(cj) == std::vector<std::string>{"add"});
  const auto& lit = cj.jaxpr->eqns.at(0).inputs.at(1);
  CHECK_FALSE(lit.is_var());
  CHECK(lit.lit.dtype == dyn::dtype_v<T>);
}

TEST_CASE_TEMPLATE("ops: division by zero", T, i32, i64, float, double) {
  const auto x = mk<T>({3}, {-1, 1, 0});
  const auto z = mk<T>({3}, {0, 0, 0});
  if constexpr (std::is_floating_point_v<T>) {
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a / b; }, x, z), {3}, {-kInf, kInf, kNaN});
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return a % b; }, x, z), {3}, {kNaN, kNaN, kNaN});
  } else {
    CHECK_THROWS_AS(x / z, dyn::ArithmeticError);
    CHECK_THROWS_AS(x % 0, dyn::ArithmeticError);
    // The staged program fails the same way when interpreted.
    const auto cj = dyn::make_jaxpr([](auto a, auto b) { return a / b; })(x, z);
    CHECK_THROWS_AS(dyn::eval_jaxpr(cj, {x, z}), dyn::ArithmeticError);
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
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::neg(a); }, x), {6}, {2.5, -3, -0.0, 0, kNaN, kInf});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::abs(a); }, x), {6}, {2.5, 3, 0, 0, kNaN, kInf});
    // sign keeps the zero's sign and NaN: sign(-0.0) == -0.0.
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::sign(a); }, x), {6}, {-1, 1, 0, -0.0, kNaN, -1});
  } else {
    const auto x = mk<T>({4}, {-2, 3, 0, -1});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::neg(a); }, x), {4}, {2, -3, 0, 1});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::abs(a); }, x), {4}, {2, 3, 0, 1});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::sign(a); }, x), {4}, {-1, 1, 0, -1});
  }
}

TEST_CASE("ops: neg abs sign reject bool") {
  const auto b = mk<bool>({2}, {1, 0});
  CHECK_THROWS_AS(dyn::neg(b), dyn::TypeError);
  CHECK_THROWS_AS(-b, dyn::TypeError);
  CHECK_THROWS_AS(dyn::abs(b), dyn::TypeError);
  CHECK_THROWS_AS(dyn::sign(b), dyn::TypeError);
  CHECK_THROWS_AS(dyn::make_jaxpr([](auto a) { return dyn::neg(a); })(b), dyn::TypeError);
}

// ===========================================================================
// Comparisons and logic.

TEST_CASE_TEMPLATE("ops: comparisons give bool", T, bool, i32, i64, float, double) {
  // bool: x = [F T T T], y = [T T T F]; numbers: x = [0 1 2 1], y = [1 1 1 0].
  constexpr bool b = std::is_same_v<T, bool>;
  const auto x = mk<T>({4}, {0, 1, 2, 1});
  const auto y = mk<T>({4}, {1, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p < q; }, x, y), {4}, {1, 0, 0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p <= q; }, x, y), {4}, b ? Vals{1, 1, 1, 0} : Vals{1, 1, 0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p > q; }, x, y), {4}, b ? Vals{0, 0, 0, 1} : Vals{0, 0, 1, 1});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p >= q; }, x, y), {4}, {0, 1, 1, 1});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p == q; }, x, y), {4}, b ? Vals{0, 1, 1, 0} : Vals{0, 1, 0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p != q; }, x, y), {4}, b ? Vals{1, 0, 0, 1} : Vals{1, 0, 1, 1});
  if constexpr (!b) {
    // Against a weak scalar on either side.
    CHECK_ARR(bool, check_all_ways([](auto p) { return p > 1; }, x), {4}, {0, 0, 1, 0});
    CHECK_ARR(bool, check_all_ways([](auto p) { return 1 >= p; }, x), {4}, {1, 1, 0, 1});
    CHECK_ARR(bool, check_all_ways([](auto p) { return p == 1.0; }, x), {4}, {0, 1, 0, 1});
  }
}

TEST_CASE_TEMPLATE("ops: comparisons with NaN", T, float, double) {
  const auto x = mk<T>({2}, {kNaN, 1});
  const auto y = mk<T>({2}, {kNaN, kNaN});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p == q; }, x, y), {2}, {0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p != q; }, x, y), {2}, {1, 1});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p < q; }, x, y), {2}, {0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p >= q; }, x, y), {2}, {0, 0});
}

TEST_CASE("ops: & | ! on bool") {
  const auto a = mk<bool>({4}, {1, 1, 0, 0});
  const auto b = mk<bool>({4}, {1, 0, 1, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p & q; }, a, b), {4}, {1, 0, 0, 0});
  CHECK_ARR(bool, check_all_ways([](auto p, auto q) { return p | q; }, a, b), {4}, {1, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways([](auto p) { return !p; }, a), {4}, {0, 0, 1, 1});
  // Combined with comparisons: (x > 0) & !(x > 2).
  const auto x = mk<double>({4}, {-1, 1, 2, 3});
  CHECK_ARR(bool, check_all_ways([](auto v) { return (v > 0) & !(v > 2); }, x), {4}, {0, 1, 1, 0});
  CHECK_ARR(bool, check_all_ways([](auto p) { return p | false; }, a), {4}, {1, 1, 0, 0});
}

TEST_CASE_TEMPLATE("ops: & | are bitwise on integers", T, i32, i64) {
  const auto a = mk<T>({3}, {12, -1, 5});
  const auto b = mk<T>({3}, {10, 7, 3});
  CHECK_ARR(T, check_all_ways([](auto p, auto q) { return p & q; }, a, b), {3}, {8, 7, 1});
  CHECK_ARR(T, check_all_ways([](auto p, auto q) { return p | q; }, a, b), {3}, {14, -1, 7});
  CHECK_ARR(T, check_all_ways([](auto p) { return p & 6; }, a), {3}, {4, 6, 4});
}

TEST_CASE("ops: & | reject floats") {
  const auto x = mk<double>({2}, {1, 0});
  CHECK_THROWS_AS(x & x, dyn::TypeError);
  CHECK_THROWS_AS(x | x, dyn::TypeError);
}

// ===========================================================================
// Rounding.

TEST_CASE_TEMPLATE("ops: floor ceil round on floats", T, float, double) {
  const auto x = mk<T>({9}, {-1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.5, 3.7, kNaN});
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::floor(a); }, x), {9}, {-2, -1, 0, 1, 2, 2, -3, 3, kNaN});
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::ceil(a); }, x), {9}, {-1, -0.0, 1, 2, 3, 3, -2, 4, kNaN});
  // Half to even, as jnp.round: round(2.5) == 2, round(0.5) == 0, round(-0.5) == -0.0.
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::round(a); }, x), {9}, {-2, -0.0, 0, 2, 2, 2, -2, 4, kNaN});
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

// f (a dyn:: function) on x equals g (the std:: function, applied in the
// result type R) elementwise, exactly.
template <class T, class F, class G>
void check_float_unary(const F& f, const G& g, const dyn::Array<T>& x) {
  using R = inexact<T>;
  Vals want;
  for (i64 i = 0; i < x.size(); ++i) want.push_back(static_cast<double>(g(static_cast<R>(x.data()[i]))));
  CHECK_ARR(R, check_all_ways(f, x), x.shape(), want);
}

}  // namespace

TEST_CASE_TEMPLATE("ops: exp log log1p sqrt rsqrt sin cos tan tanh logistic", T, bool, i32, i64, float, double) {
  using R = inexact<T>;
  const auto x = std::is_same_v<T, bool> ? mk<T>({2}, {0, 1})
                 : std::is_floating_point_v<T> ? mk<T>({6}, {0, 0.5, 1, 2, 4, -0.25})
                                               : mk<T>({5}, {0, 1, 2, 4, -3});
  check_float_unary([](auto a) { return dyn::exp(a); }, [](R v) { return std::exp(v); }, x);
  check_float_unary([](auto a) { return dyn::log(a); }, [](R v) { return std::log(v); }, x);
  check_float_unary([](auto a) { return dyn::log1p(a); }, [](R v) { return std::log1p(v); }, x);
  check_float_unary([](auto a) { return dyn::sqrt(a); }, [](R v) { return std::sqrt(v); }, x);
  check_float_unary([](auto a) { return dyn::rsqrt(a); }, [](R v) { return R(1) / std::sqrt(v); }, x);
  check_float_unary([](auto a) { return dyn::sin(a); }, [](R v) { return std::sin(v); }, x);
  check_float_unary([](auto a) { return dyn::cos(a); }, [](R v) { return std::cos(v); }, x);
  check_float_unary([](auto a) { return dyn::tan(a); }, [](R v) { return std::tan(v); }, x);
  check_float_unary([](auto a) { return dyn::tanh(a); }, [](R v) { return std::tanh(v); }, x);
  check_float_unary([](auto a) { return dyn::logistic(a); }, [](R v) { return R(1) / (R(1) + std::exp(-v)); }, x);

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
    // sqrt(4) == 2, rsqrt(4) == 0.5; negative inputs give NaN.
    const auto y = mk<T>({3}, {4, -1, 1});
    const auto r = check_all_ways([](auto a) { return std::make_tuple(dyn::sqrt(a), dyn::rsqrt(a), dyn::log(a)); }, y);
    CHECK_ARR(R, std::get<0>(r), {3}, {2, kNaN, 1});
    CHECK_ARR(R, std::get<1>(r), {3}, {0.5, kNaN, 1});
    CHECK_ARR(R, std::get<2>(r), {3}, {static_cast<double>(std::log(R(4))), kNaN, 0});
  }
}

// ===========================================================================
// Binary functions.

TEST_CASE_TEMPLATE("ops: pow", T, i32, i64, float, double) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto x = mk<T>({5}, {2, 4, -8, 2, -1});
    const auto y = mk<T>({5}, {0.5, -0.5, 3, 10, 0.5});
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::pow(a, b); }, x, y), {5},
              {static_cast<double>(std::pow(T(2), T(0.5))), 0.5, -512, 1024, kNaN});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::pow(a, 2); }, x), {5}, {4, 16, 64, 4, 1});
  } else {
    // Integer powers, including negative exponents (truncated reciprocals).
    const auto x = mk<T>({7}, {2, -3, 2, 1, -1, 0, 3});
    const auto y = mk<T>({7}, {10, 3, -1, -5, -3, 0, 0});
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::pow(a, b); }, x, y), {7}, {1024, -27, 0, 1, -1, 1, 1});
    CHECK_ARR(T, check_all_ways([](auto a) { return dyn::pow(2, a); }, mk<T>({3}, {0, 1, 5})), {3}, {1, 2, 32});
  }
}

TEST_CASE_TEMPLATE("ops: maximum minimum", T, i32, i64, float, double) {
  const auto x = mk<T>({3}, {1, 5, -3});
  const auto y = mk<T>({3}, {2, 4, -3});
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::maximum(a, b); }, x, y), {3}, {2, 5, -3});
  CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::minimum(a, b); }, x, y), {3}, {1, 4, -3});
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::maximum(a, 0); }, x), {3}, {1, 5, 0});
  CHECK_ARR(T, check_all_ways([](auto a) { return dyn::minimum(2, a); }, x), {3}, {1, 2, -3});
  if constexpr (std::is_floating_point_v<T>) {
    // NaN propagates from either side, as lax.max / lax.min.
    const auto p = mk<T>({3}, {kNaN, 1, -0.0});
    const auto q = mk<T>({3}, {1, kNaN, 2});
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::maximum(a, b); }, p, q), {3}, {kNaN, kNaN, 2});
    CHECK_ARR(T, check_all_ways([](auto a, auto b) { return dyn::minimum(a, b); }, p, q), {3}, {kNaN, kNaN, -0.0});
  }
}

TEST_CASE_TEMPLATE("ops: atan2", T, i32, i64, float, double) {
  using R = inexact<T>;
  const auto y = mk<T>({4}, {1, 0, -1, 0});
  const auto x = mk<T>({4}, {1, -1, 0, 1});
  CHECK_ARR(R, check_all_ways([](auto a, auto b) { return dyn::atan2(a, b); }, y, x), {4},
            {static_cast<double>(std::atan2(R(1), R(1))), static_cast<double>(std::atan2(R(0), R(-1))),
             static_cast<double>(std::atan2(R(-1), R(0))), 0});
  // atan2(0, -1) == pi in the result type.
  CHECK(check_all_ways([](auto a, auto b) { return dyn::atan2(a, b); }, y, x)(1) == static_cast<R>(std::numbers::pi));
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
  const auto p = mk<bool>({3}, {1, 0, 1});
  const auto a = mk<T>({3}, {5, 6, 0});
  const auto b = mk<T>({3}, {0, 0, 7});
  CHECK_ARR(T, check_all_ways([](auto c, auto u, auto v) { return dyn::where(c, u, v); }, p, a, b), {3}, {5, 0, 0});
  // A traced predicate from a comparison, a weak scalar case.
  if constexpr (!std::is_same_v<T, bool>) {
    const auto x = mk<T>({4}, {-2, 3, 0, -1});
    CHECK_ARR(T, check_all_ways([](auto v) { return dyn::where(v > 0, v, -v); }, x), {4}, {2, 3, -0.0, 1});
    CHECK_ARR(T, check_all_ways([](auto v) { return dyn::where(v < 0, 0, v); }, x), {4}, {0, 3, 0, 0});
    CHECK(prims(dyn::make_jaxpr([](auto v) { return dyn::where(v < 0, 0, v); })(x)) ==
          std::vector<std::string>{"lt", "broadcast_in_dim", "select_n"});
  }
  // Broadcasting: a (3,1) predicate against (1,2) and rank-0 cases.
  const auto pc = mk<bool>({3, 1}, {1, 0, 1});
  const auto row = mk<T>({1, 2}, {1, 0});
  const auto s = dyn::Array<T>::scalar(cv<T>(0));
  CHECK_ARR(T, check_all_ways([](auto c, auto u, auto v) { return dyn::where(c, u, v); }, pc, row, s), {3, 2},
            {1, 0, 0, 0, 1, 0});
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

template <class T, class U>
void check_astype(const dyn::Array<T>& x) {
  Vals want;
  for (i64 i = 0; i < x.size(); ++i) {
    T v = x.data()[i];
    U u;
    if constexpr (std::is_same_v<U, bool>) u = v != T(0);
    else if constexpr (std::is_floating_point_v<T> && std::is_integral_v<U>) u = std::isnan(v) ? U(0) : static_cast<U>(v);
    else u = static_cast<U>(v);
    want.push_back(static_cast<double>(u));
  }
  CHECK_ARR(U, check_all_ways([](auto a) { return dyn::astype<U>(a); }, x), x.shape(), want);
  const auto cj = dyn::make_jaxpr([](auto a) { return dyn::astype<U>(a); })(x);
  CHECK(prims(cj) == (std::is_same_v<T, U> ? std::vector<std::string>{} : std::vector<std::string>{"convert_element_type"}));
}

}  // namespace

TEST_CASE_TEMPLATE("ops: astype between every pair of dtypes", T, bool, i32, i64, float, double) {
  // In range for every target, so the generic expectation is plain casting.
  const auto x = std::is_floating_point_v<T> ? mk<T>({5}, {-2.75, 0, 1.5, 3, -0.0})
                                             : mk<T>({4}, {-2, 0, 1, 3});
  check_astype<T, bool>(x);
  check_astype<T, i32>(x);
  check_astype<T, i64>(x);
  check_astype<T, float>(x);
  check_astype<T, double>(x);
}

TEST_CASE("ops: astype, hand-computed edge cases") {
  const auto x = mk<double>({6}, {-1.7, 0, 2.5, 3e10, kNaN, -3e10});
  // Truncation toward zero; NaN -> 0; out-of-range saturates.
  CHECK_ARR(i32, check_all_ways([](auto a) { return dyn::astype<i32>(a); }, x), {6},
            {-1, 0, 2, 2147483647, 0, -2147483648.0});
  CHECK_ARR(i64, check_all_ways([](auto a) { return dyn::astype<i64>(a); }, x), {6},
            {-1, 0, 2, 30000000000.0, 0, -30000000000.0});
  CHECK_ARR(bool, check_all_ways([](auto a) { return dyn::astype<bool>(a); }, x), {6}, {1, 0, 1, 1, 1, 1});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::astype<float>(a); }, x), {6},
            {static_cast<double>(-1.7f), 0, 2.5, 3e10, kNaN, -3e10});
  const auto b = mk<bool>({2}, {1, 0});
  CHECK_ARR(i32, check_all_ways([](auto a) { return dyn::astype<i32>(a); }, b), {2}, {1, 0});
  CHECK_ARR(double, check_all_ways([](auto a) { return dyn::astype<double>(a); }, b), {2}, {1, 0});
  // A rank-0 argument is converted by the same kernel as any other.
  CHECK_ARR(i32, check_all_ways([](auto a) { return dyn::astype<i32>(a); }, dyn::Array<double>::scalar(-3e10)), {},
            {-2147483648.0});
}

// ===========================================================================
// Creation.

TEST_CASE_TEMPLATE("ops: zeros ones full arange", T, bool, i32, i64, float, double) {
  CHECK_ARR(T, dyn::zeros<T>({2, 3}), {2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_ARR(T, dyn::ones<T>({2}), {2}, {1, 1});
  CHECK_ARR(T, dyn::full<T>({2, 2}, cv<T>(7)), {2, 2}, {7, 7, 7, 7});
  CHECK_ARR(T, dyn::zeros<T>({0}), {0}, {});
  CHECK_ARR(T, dyn::ones<T>({}), {}, {1});
  if constexpr (std::is_same_v<T, bool>) {
    CHECK_THROWS_AS(dyn::arange<T>(3), dyn::TypeError);
  } else {
    CHECK_ARR(T, dyn::arange<T>(4), {4}, {0, 1, 2, 3});
    CHECK_ARR(T, dyn::arange<T>(0), {0}, {});
    CHECK_THROWS_AS(dyn::arange<T>(-1), dyn::ShapeError);
  }
  CHECK_THROWS_AS(dyn::zeros<T>({2, -1}), dyn::ShapeError);

  // With integer sizes they are concrete even inside a trace: a constant.
  const auto x = mk<T>({3}, {0, 1, 0});
  const auto f = [](auto v) {
    if constexpr (std::is_same_v<T, bool>) return v | dyn::ones<T>({3});
    else return v + dyn::ones<T>({3});
  };
  CHECK_ARR(T, check_all_ways(f, x), {3}, std::is_same_v<T, bool> ? Vals{1, 1, 1} : Vals{1, 2, 1});
  const auto cj = dyn::make_jaxpr(f)(x);
  CHECK(cj.consts.size() == 1);
  CHECK(cj.jaxpr->constvars.size() == 1);
}

TEST_CASE_TEMPLATE("ops: zeros_like ones_like full_like", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::zeros_like(v), dyn::ones_like(v), dyn::full_like(v, 3)); }, x);
  CHECK_ARR(T, std::get<0>(r), {2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_ARR(T, std::get<1>(r), {2, 3}, {1, 1, 1, 1, 1, 1});
  CHECK_ARR(T, std::get<2>(r), {2, 3}, {3, 3, 3, 3, 3, 3});
  // Staged for a tracer, as jnp.zeros_like: one broadcast_in_dim, no constant.
  const auto cj = dyn::make_jaxpr([](auto v) { return dyn::zeros_like(v); })(x);
  CHECK(prims(cj) == std::vector<std::string>{"broadcast_in_dim"});
  CHECK(cj.consts.empty());
  CHECK(outvar_types(cj) == std::vector<std::string>{std::string(dyn::dtype_name(dyn::dtype_v<T>)) + "[2,3]"});
  // full_like converts the fill value to x's dtype: full_like(int, 2.7) == 2.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    CHECK_ARR(T, check_all_ways([](auto v) { return dyn::full_like(v, 2.7); }, x), {2, 3}, {2, 2, 2, 2, 2, 2});
  // On a concrete array they are concrete.
  static_assert(std::is_same_v<decltype(dyn::zeros_like(x)), dyn::Array<T>>);
}

// ===========================================================================
// Shape operations (every dtype: they only move elements).

TEST_CASE_TEMPLATE("ops: reshape", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  const Vals all = seq_at<T>({0, 1, 2, 3, 4, 5});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {3, 2}); }, x), {3, 2}, all);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {-1}); }, x), {6}, all);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {3, -1}); }, x), {3, 2}, all);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {1, -1, 2, 1}); }, x), {1, 3, 2, 1}, all);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {6}); }, x), {6}, all);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::reshape(v, {}); }, seq<T>({1, 1})), {}, seq_at<T>({0}));
  CHECK_THROWS_AS(dyn::reshape(x, {4, -1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::reshape(x, {-1, -1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::reshape(x, {7}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::make_jaxpr([](auto v) { return dyn::reshape(v, {4, 2}); })(x), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: transpose", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::transpose(v); }, x), {3, 2}, seq_at<T>({0, 3, 1, 4, 2, 5}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::transpose(v, {1, 0}); }, x), {3, 2},
            seq_at<T>({0, 3, 1, 4, 2, 5}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::transpose(v, {0, 1}); }, x), {2, 3},
            seq_at<T>({0, 1, 2, 3, 4, 5}));
  // (2,3,4) -> axes (2,0,1): out[k][i][j] = x[i][j][k] = 12i + 4j + k.
  const auto y = seq<T>({2, 3, 4});
  std::vector<i64> idx;
  for (i64 k = 0; k < 4; ++k)
    for (i64 i = 0; i < 2; ++i)
      for (i64 j = 0; j < 3; ++j) idx.push_back(12 * i + 4 * j + k);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::transpose(v, {2, 0, 1}); }, y), {4, 2, 3}, seq_at<T>(idx));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::transpose(v, {-1, 0, 1}); }, y), {4, 2, 3}, seq_at<T>(idx));
  CHECK_THROWS_AS(dyn::transpose(y, {0, 0, 1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::transpose(y, {0, 1}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: expand_dims squeeze", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({3});
  const Vals v3 = seq_at<T>({0, 1, 2});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::expand_dims(v, 0); }, x), {1, 3}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::expand_dims(v, 1); }, x), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::expand_dims(v, -1); }, x), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::expand_dims(v, 1); }, seq<T>({2, 3})), {2, 1, 3},
            seq_at<T>({0, 1, 2, 3, 4, 5}));
  CHECK_THROWS_AS(dyn::expand_dims(x, 2), dyn::IndexError);

  const auto y = seq<T>({1, 3, 1});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::squeeze(v); }, y), {3}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::squeeze(v, {0}); }, y), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::squeeze(v, {-1}); }, y), {1, 3}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::squeeze(v, {0, 2}); }, y), {3}, v3);
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::squeeze(v); }, seq<T>({1, 1})), {}, seq_at<T>({0}));
  CHECK_THROWS_AS(dyn::squeeze(y, {1}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: broadcast_to", T, bool, i32, i64, float, double) {
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::broadcast_to(v, {2, 3}); }, seq<T>({3})), {2, 3},
            seq_at<T>({0, 1, 2, 0, 1, 2}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::broadcast_to(v, {3, 2}); }, seq<T>({3, 1})), {3, 2},
            seq_at<T>({0, 0, 1, 1, 2, 2}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::broadcast_to(v, {2, 2}); }, dyn::Array<T>::scalar(val<T>(1))),
            {2, 2}, seq_at<T>({1, 1, 1, 1}));
  CHECK_THROWS_AS(dyn::broadcast_to(seq<T>({3}), {2, 4}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::broadcast_to(seq<T>({2, 3}), {3}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: concatenate", T, bool, i32, i64, float, double) {
  const auto a = seq<T>({2, 3});
  const auto b = mk<T>({1, 3}, {1, 1, 1});
  const auto c = mk<T>({2, 2}, {1, 0, 0, 1});
  const Vals av = seq_at<T>({0, 1, 2, 3, 4, 5});
  CHECK_ARR(T, check_all_ways([](auto p, auto q) { return dyn::concatenate({p, q}, 0); }, a, b), {3, 3},
            {av[0], av[1], av[2], av[3], av[4], av[5], 1, 1, 1});
  CHECK_ARR(T, check_all_ways([](auto p, auto q) { return dyn::concatenate({p, q}, 1); }, a, c), {2, 5},
            {av[0], av[1], av[2], 1, 0, av[3], av[4], av[5], 0, 1});
  CHECK_ARR(T, check_all_ways([](auto p, auto q) { return dyn::concatenate({p, q, p}, -1); }, a, c), {2, 8},
            {av[0], av[1], av[2], 1, 0, av[0], av[1], av[2], av[3], av[4], av[5], 0, 1, av[3], av[4], av[5]});
  CHECK_ARR(T, check_all_ways([](auto p) { return dyn::concatenate({p}); }, a), {2, 3}, av);
  CHECK_THROWS_AS(dyn::concatenate({a, c}, 0), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::concatenate({a, seq<T>({6})}, 0), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::concatenate({a, b}, 2), dyn::IndexError);
}

TEST_CASE_TEMPLATE("ops: slice, with strides", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({4, 5});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::slice(v, {0, 1}, {2, 3}); }, x), {2, 2},
            seq_at<T>({1, 2, 6, 7}));
  // Rows 1 and 3, columns 0, 2 and 4.
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::slice(v, {1, 0}, {4, 5}, {2, 2}); }, x), {2, 3},
            seq_at<T>({5, 7, 9, 15, 17, 19}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::slice(v, {0, 4}, {4, 5}, {3, 1}); }, x), {2, 1},
            seq_at<T>({4, 19}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::slice(v, {2, 2}, {2, 5}); }, x), {0, 3}, {});
  CHECK_THROWS_AS(dyn::slice(x, {0, 0}, {5, 5}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::slice(x, {3, 0}, {2, 5}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::slice(x, {0}, {2}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: dynamic_slice, clamping, traced starts", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({4, 5});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::dynamic_slice(v, {1, 2}, {2, 2}); }, x), {2, 2},
            seq_at<T>({7, 8, 12, 13}));
  // Starts are clamped into [0, dim - size], as in JAX: (3, 4) -> (2, 3), (-1, -7) -> (0, 0).
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::dynamic_slice(v, {3, 4}, {2, 2}); }, x), {2, 2},
            seq_at<T>({13, 14, 18, 19}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::dynamic_slice(v, {-1, -7}, {2, 2}); }, x), {2, 2},
            seq_at<T>({0, 1, 5, 6}));

  // Traced starts: C++ int arguments become i32[] invars.
  const auto f = [](auto v, auto i, auto j) { return dyn::dynamic_slice(v, {i, j}, {2, 3}); };
  CHECK_ARR(T, check_all_ways(f, x, 1, 2), {2, 3}, seq_at<T>({7, 8, 9, 12, 13, 14}));
  CHECK_ARR(T, check_all_ways(f, x, 5, 9), {2, 3}, seq_at<T>({12, 13, 14, 17, 18, 19}));
  CHECK_ARR(T, check_all_ways(f, x, -3, 0), {2, 3}, seq_at<T>({0, 1, 2, 5, 6, 7}));
  const auto cj = dyn::make_jaxpr(f)(x, 1, 2);
  CHECK(invar_types(cj) == std::vector<std::string>{std::string(dyn::dtype_name(dyn::dtype_v<T>)) + "[4,5]",
                                                    "i32[]", "i32[]"});
  CHECK(prims(cj) == std::vector<std::string>{"dynamic_slice"});
  // One staged program serves every start: interpret it with clamped ones.
  const auto r = dyn::eval_jaxpr(cj, {x, dyn::Array<i32>::scalar(3), dyn::Array<i32>::scalar(4)});
  CHECK_ARR(T, r.at(0).template get<T>(), {2, 3}, seq_at<T>({12, 13, 14, 17, 18, 19}));
  // i64 starts, and a mix of a traced start and a literal.
  CHECK_ARR(T, check_all_ways(f, x, i64{2}, i64{1}), {2, 3}, seq_at<T>({11, 12, 13, 16, 17, 18}));
  CHECK_ARR(T, check_all_ways([](auto v, auto i) { return dyn::dynamic_slice(v, {i, 0}, {1, 5}); }, x, i64{3}), {1, 5},
            seq_at<T>({15, 16, 17, 18, 19}));
  // A concrete index array as a start.
  CHECK_ARR(T, dyn::dynamic_slice(x, {dyn::Array<i64>::scalar(2), 0}, {1, 2}), {1, 2}, seq_at<T>({10, 11}));

  CHECK_THROWS_AS(dyn::dynamic_slice(x, {0, 0}, {5, 1}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::dynamic_slice(x, {0}, {1, 1}), dyn::IndexError);
}

TEST_CASE_TEMPLATE("ops: dynamic_update_slice, clamping, traced starts", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({3, 4});
  const auto u = mk<T>({2, 2}, {1, 1, 1, 1});
  const Vals xv = seq_at<T>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto with_update = [&](i64 r0, i64 c0) {
    Vals w = xv;
    for (i64 r = 0; r < 2; ++r)
      for (i64 c = 0; c < 2; ++c) w[static_cast<std::size_t>((r0 + r) * 4 + c0 + c)] = 1;
    return w;
  };
  CHECK_ARR(T, check_all_ways([](auto v, auto w) { return dyn::dynamic_update_slice(v, w, {1, 1}); }, x, u), {3, 4},
            with_update(1, 1));
  // Clamped: (2, 3) -> (1, 2); (-4, -1) -> (0, 0).
  CHECK_ARR(T, check_all_ways([](auto v, auto w) { return dyn::dynamic_update_slice(v, w, {2, 3}); }, x, u), {3, 4},
            with_update(1, 2));
  CHECK_ARR(T, check_all_ways([](auto v, auto w) { return dyn::dynamic_update_slice(v, w, {-4, -1}); }, x, u),
            {3, 4}, with_update(0, 0));
  const auto f = [](auto v, auto w, auto i, auto j) { return dyn::dynamic_update_slice(v, w, {i, j}); };
  CHECK_ARR(T, check_all_ways(f, x, u, 0, 2), {3, 4}, with_update(0, 2));
  CHECK_ARR(T, check_all_ways(f, x, u, 7, 7), {3, 4}, with_update(1, 2));
  // The operand is not modified (value semantics).
  CHECK_ARR(T, x, {3, 4}, xv);
  CHECK_THROWS_AS(dyn::dynamic_update_slice(x, seq<T>({4, 1}), {0, 0}), dyn::ShapeError);
}

// ===========================================================================
// Reductions.

TEST_CASE_TEMPLATE("ops: sum max min prod mean, with and without axes", T, i32, i64, float, double) {
  using R = inexact<T>;
  const auto x = mk<T>({2, 3}, {1, -2, 3, 4, 5, -6});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::sum(v), dyn::sum(v, {0}), dyn::sum(v, {1}), dyn::sum(v, {-1}),
                               dyn::sum(v, {0, 1}), dyn::sum(v, {-2}));
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {}, {5});
  CHECK_ARR(T, std::get<1>(r), {3}, {5, 3, -3});
  CHECK_ARR(T, std::get<2>(r), {2}, {2, 3});
  CHECK_ARR(T, std::get<3>(r), {2}, {2, 3});
  CHECK_ARR(T, std::get<4>(r), {}, {5});
  CHECK_ARR(T, std::get<5>(r), {3}, {5, 3, -3});

  const auto mx = check_all_ways([](auto v) { return std::make_tuple(dyn::max(v), dyn::max(v, {0}), dyn::max(v, {-1})); }, x);
  CHECK_ARR(T, std::get<0>(mx), {}, {5});
  CHECK_ARR(T, std::get<1>(mx), {3}, {4, 5, 3});
  CHECK_ARR(T, std::get<2>(mx), {2}, {3, 5});

  const auto mn = check_all_ways([](auto v) { return std::make_tuple(dyn::min(v), dyn::min(v, {0}), dyn::min(v, {1})); }, x);
  CHECK_ARR(T, std::get<0>(mn), {}, {-6});
  CHECK_ARR(T, std::get<1>(mn), {3}, {1, -2, -6});
  CHECK_ARR(T, std::get<2>(mn), {2}, {-2, -6});

  const auto pr = check_all_ways([](auto v) { return std::make_tuple(dyn::prod(v), dyn::prod(v, {0}), dyn::prod(v, {-1})); }, x);
  CHECK_ARR(T, std::get<0>(pr), {}, {720});
  CHECK_ARR(T, std::get<1>(pr), {3}, {4, -10, -18});
  CHECK_ARR(T, std::get<2>(pr), {2}, {-6, -120});

  // mean is computed in a float type (f32 for integers): sum / count.
  const auto me = check_all_ways([](auto v) { return std::make_tuple(dyn::mean(v), dyn::mean(v, {0}), dyn::mean(v, {-1})); }, x);
  CHECK_ARR(R, std::get<0>(me), {}, {static_cast<double>(R(5) / R(6))});
  CHECK_ARR(R, std::get<1>(me), {3}, {2.5, 1.5, -1.5});
  CHECK_ARR(R, std::get<2>(me), {2}, {static_cast<double>(R(2) / R(3)), 1});

  // An explicitly empty axis list reduces nothing.
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::sum(v, std::vector<i64>{}); }, x), {2, 3}, {1, -2, 3, 4, 5, -6});
  // A 3-D reduction over non-adjacent axes: x3[i][j][k] = 12i + 4j + k.
  const auto x3 = seq<T>({2, 3, 4});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::sum(v, {0, 2}); }, x3), {3}, {60, 92, 124});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::max(v, {-1, 0}); }, x3), {3}, {15, 19, 23});

  CHECK_THROWS_AS(dyn::sum(x, {2}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::sum(x, {0, -2}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::make_jaxpr([](auto v) { return dyn::max(v, {-3}); })(x), dyn::IndexError);
}

TEST_CASE("ops: reductions of bools: sum and prod are i64, max/min bool, mean f32") {
  const auto x = mk<bool>({2, 3}, {1, 0, 1, 1, 1, 0});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::sum(v), dyn::sum(v, {0}), dyn::sum(v, {1}), dyn::prod(v), dyn::prod(v, {0}),
                               dyn::max(v), dyn::max(v, {1}), dyn::min(v), dyn::min(v, {0}), dyn::mean(v),
                               dyn::mean(v, {0}));
      },
      x);
  CHECK_ARR(i64, std::get<0>(r), {}, {4});
  CHECK_ARR(i64, std::get<1>(r), {3}, {2, 1, 1});
  CHECK_ARR(i64, std::get<2>(r), {2}, {2, 2});
  CHECK_ARR(i64, std::get<3>(r), {}, {0});
  CHECK_ARR(i64, std::get<4>(r), {3}, {1, 0, 0});
  CHECK_ARR(bool, std::get<5>(r), {}, {1});
  CHECK_ARR(bool, std::get<6>(r), {2}, {1, 1});
  CHECK_ARR(bool, std::get<7>(r), {}, {0});
  CHECK_ARR(bool, std::get<8>(r), {3}, {1, 0, 0});
  CHECK_ARR(float, std::get<9>(r), {}, {static_cast<double>(4.0f / 6.0f)});
  CHECK_ARR(float, std::get<10>(r), {3}, {1, 0.5, 0.5});
}

TEST_CASE_TEMPLATE("ops: float reductions propagate NaN", T, float, double) {
  const auto x = mk<T>({2, 2}, {1, kNaN, 2, 3});
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::max(v, {1}), dyn::min(v, {1}), dyn::sum(v, {0}), dyn::max(v)); }, x);
  CHECK_ARR(T, std::get<0>(r), {2}, {kNaN, 3});
  CHECK_ARR(T, std::get<1>(r), {2}, {kNaN, 2});
  CHECK_ARR(T, std::get<2>(r), {2}, {3, kNaN});
  CHECK_ARR(T, std::get<3>(r), {}, {kNaN});
  // Reductions over an empty axis give the identity.
  const auto e = mk<T>({0, 2}, {});
  const auto z = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::sum(v, {0}), dyn::prod(v, {0}), dyn::max(v, {0}), dyn::min(v, {0})); },
      e);
  CHECK_ARR(T, std::get<0>(z), {2}, {0, 0});
  CHECK_ARR(T, std::get<1>(z), {2}, {1, 1});
  CHECK_ARR(T, std::get<2>(z), {2}, {-kInf, -kInf});
  CHECK_ARR(T, std::get<3>(z), {2}, {kInf, kInf});
}

// ===========================================================================
// Linear algebra.

TEST_CASE_TEMPLATE("ops: dot for ranks 1 and 2", T, i32, i64, float, double) {
  const auto A = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto B = mk<T>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto v = mk<T>({3}, {1, 2, -1});
  const auto w = mk<T>({2}, {2, -1});
  const auto d = [](auto a, auto b) { return dyn::dot(a, b); };
  CHECK_ARR(T, check_all_ways(d, v, mk<T>({3}, {4, 5, 6})), {}, {8});  // 4 + 10 - 6
  CHECK_ARR(T, check_all_ways(d, A, v), {2}, {2, 8});
  CHECK_ARR(T, check_all_ways(d, w, A), {3}, {-2, -1, 0});
  CHECK_ARR(T, check_all_ways(d, A, B), {2, 2}, {58, 64, 139, 154});
  CHECK_ARR(T, check_all_ways(d, B, A), {3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105});
  const auto cj = dyn::make_jaxpr(d)(A, v);
  CHECK(prims(cj) == std::vector<std::string>{"dot_general"});
  CHECK_THROWS_AS(dyn::dot(A, A), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::make_jaxpr(d)(A, w), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: matmul, batched", T, i32, i64, float, double) {
  const auto A = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto B = mk<T>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto v = mk<T>({3}, {1, 2, -1});
  // X[0] = A, X[1] = [[1 0 0] [0 1 0]]; Y[0] = Y[1] = B.
  const auto X = mk<T>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const auto Y = mk<T>({2, 3, 2}, {7, 8, 9, 10, 11, 12, 7, 8, 9, 10, 11, 12});
  const auto m = [](auto a, auto b) { return dyn::matmul(a, b); };
  CHECK_ARR(T, check_all_ways(m, A, B), {2, 2}, {58, 64, 139, 154});
  CHECK_ARR(T, check_all_ways(m, A, v), {2}, {2, 8});
  CHECK_ARR(T, check_all_ways(m, X, Y), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  // Batch dimensions broadcast: (2,2,3) @ (3,2) and (3,) @ (2,3,2) and (2,2,3) @ (3,).
  CHECK_ARR(T, check_all_ways(m, X, B), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  CHECK_ARR(T, check_all_ways(m, v, Y), {2, 2}, {14, 16, 14, 16});
  CHECK_ARR(T, check_all_ways(m, X, v), {2, 2}, {2, 8, 1, 2});
  CHECK_ARR(T, check_all_ways(m, mk<T>({1, 2, 3}, {1, 2, 3, 4, 5, 6}), Y), {2, 2, 2},
            {58, 64, 139, 154, 58, 64, 139, 154});
  CHECK_THROWS_AS(dyn::matmul(A, A), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::matmul(X, mk<T>({3, 3, 2}, Vals(18, 1))), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::matmul(dyn::Array<T>::scalar(T(1)), A), dyn::ShapeError);
}

TEST_CASE("ops: a traced matmul keeps a closed-over operand as the constant it is") {
  const auto B = mk<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto X = mk<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const auto f = [&](auto x) { return dyn::matmul(x, B); };
  CHECK_ARR(float, check_all_ways(f, X), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  const auto cj = dyn::make_jaxpr(f)(X);
  REQUIRE(cj.consts.size() == 1);
  CHECK(cj.consts[0].data() == B.data());  // the user's buffer, not a broadcast copy of it
  CHECK(prims(cj) == std::vector<std::string>{"broadcast_in_dim", "dot_general"});
}

TEST_CASE("ops: dot and matmul promote mixed dtypes") {
  const auto A = mk<i32>({2, 2}, {1, 2, 3, 4});
  const auto B = mk<double>({2, 2}, {0.5, 0, 0, 0.25});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return dyn::dot(a, b); }, A, B), {2, 2}, {0.5, 0.5, 1.5, 1});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return dyn::matmul(a, b); }, A, B), {2, 2}, {0.5, 0.5, 1.5, 1});
  CHECK_ARR(i32, check_all_ways([](auto a) { return dyn::dot(a, dyn::Array<i32>::scalar(2)); }, A), {2, 2}, {2, 4, 6, 8});
}

// ===========================================================================
// Promotion and weak types.

TEST_CASE("promotion: static C++ result types, arrays and tracers") {
  using dyn::Array;
  using dyn::Tracer;
  using std::declval;
  using std::is_same_v;
  // x_i32 + 1.5 is f32; x_f32 + 1 stays f32; x_bool + 1 is i32.
  static_assert(is_same_v<decltype(declval<Array<i32>>() + 1.5), Array<float>>);
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() + 1.5), Tracer<float>>);
  static_assert(is_same_v<decltype(1.5 + declval<Tracer<i32>>()), Tracer<float>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() + 1), Array<float>>);
  static_assert(is_same_v<decltype(declval<Tracer<float>>() + 1), Tracer<float>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() + 1.5), Array<float>>);
  static_assert(is_same_v<decltype(declval<Array<double>>() + 1.5f), Array<double>>);
  static_assert(is_same_v<decltype(declval<Array<bool>>() + 1), Array<i32>>);
  static_assert(is_same_v<decltype(declval<Tracer<bool>>() + 1), Tracer<i32>>);
  static_assert(is_same_v<decltype(declval<Array<i32>>() + i64{1}), Array<i32>>);  // C++ ints are weak, any width
  static_assert(is_same_v<decltype(declval<Array<i64>>() * 2), Array<i64>>);
  // Strong operands: the wider wins.
  static_assert(is_same_v<decltype(declval<Array<i32>>() + declval<Array<i64>>()), Array<i64>>);
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() + declval<Tracer<i64>>()), Tracer<i64>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() * declval<Array<double>>()), Array<double>>);
  static_assert(is_same_v<decltype(declval<Tracer<float>>() * declval<Tracer<double>>()), Tracer<double>>);
  static_assert(is_same_v<decltype(declval<Array<i64>>() + declval<Array<float>>()), Array<float>>);
  static_assert(is_same_v<decltype(declval<Array<bool>>() + declval<Array<i32>>()), Array<i32>>);
  // A tracer with a concrete array is a tracer.
  static_assert(is_same_v<decltype(declval<Array<double>>() + declval<Tracer<float>>()), Tracer<double>>);
  // Reductions and float-only functions.
  static_assert(is_same_v<decltype(dyn::sum(declval<Array<bool>>())), Array<i64>>);
  static_assert(is_same_v<decltype(dyn::sum(declval<Tracer<bool>>())), Tracer<i64>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Array<i32>>())), Array<float>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Tracer<i64>>())), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Tracer<double>>())), Tracer<double>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Array<i32>>())), Array<float>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Tracer<i32>>())), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Tracer<double>>())), Tracer<double>>);
  static_assert(is_same_v<decltype(dyn::atan2(declval<Tracer<i32>>(), 1)), Tracer<float>>);
  // Comparisons give bool; where promotes its cases.
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() < 1.5), Tracer<bool>>);
  static_assert(is_same_v<decltype(dyn::where(declval<Tracer<bool>>(), declval<Array<i32>>(), 1.5)), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::astype<double>(declval<Tracer<bool>>())), Tracer<double>>);
  CHECK(true);
}

TEST_CASE("promotion: runtime dtypes agree with the static types, eager and staged") {
  const auto xi = mk<i32>({2}, {1, 2});
  const auto xl = mk<i64>({2}, {10, 20});
  const auto xf = mk<float>({2}, {1.5, 2.5});
  const auto xd = mk<double>({2}, {0.25, 0.5});
  const auto xb = mk<bool>({2}, {1, 0});

  CHECK_ARR(float, check_all_ways([](auto a) { return a + 1.5; }, xi), {2}, {2.5, 3.5});
  CHECK(prims(dyn::make_jaxpr([](auto a) { return a + 1.5; })(xi)) ==
        std::vector<std::string>{"convert_element_type", "add"});
  CHECK_ARR(float, check_all_ways([](auto a) { return a + 1; }, xf), {2}, {2.5, 3.5});
  {
    const auto cj = dyn::make_jaxpr([](auto a) { return a + 1; })(xf);
    CHECK(prims(cj) == std::vector<std::string>{"add"});
    CHECK(cj.jaxpr->eqns.at(0).inputs.at(1).lit.dtype == dyn::DType::f32);
  }
  CHECK_ARR(i32, check_all_ways([](auto a) { return a + 1; }, xb), {2}, {2, 1});
  CHECK_ARR(i64, check_all_ways([](auto a, auto b) { return a + b; }, xi, xl), {2}, {11, 22});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a * b; }, xf, xd), {2}, {0.375, 1.25});
  CHECK_ARR(i64, check_all_ways([](auto a) { return dyn::sum(a); }, xb), {}, {1});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::mean(a); }, xi), {}, {1.5});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::mean(a); }, xl), {}, {15});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::sin(a); }, xi), {2},
            {static_cast<double>(std::sin(1.0f)), static_cast<double>(std::sin(2.0f))});
  CHECK_ARR(float, check_all_ways([](auto a, auto b) { return a + b; }, xl, xf), {2}, {11.5, 22.5});
  CHECK_ARR(float, check_all_ways([](auto p, auto a) { return dyn::where(p, a, 0.5); }, xb, xi), {2}, {1, 0.5});
  // Two weak-typed steps stay weak: (x_f32 * 2) + 0.5 is f32 all the way.
  CHECK_ARR(float, check_all_ways([](auto a) { return a * 2 + 0.5; }, xf), {2}, {3.5, 5.5});
  CHECK(outvar_types(dyn::make_jaxpr([](auto a) { return a * 2 + 0.5; })(xf)) == std::vector<std::string>{"f32[2]"});
  // Arithmetic on concrete rank-0 arrays: still strong.
  CHECK_ARR(double, dyn::Array<double>::scalar(1) + dyn::Array<float>::scalar(2), {}, {3});
}

// ===========================================================================
// Broadcasting.

TEST_CASE("broadcasting: numpy rules, eager and staged") {
  const auto col = mk<double>({3, 1}, {1, 2, 3});
  const auto row = mk<double>({1, 4}, {10, 20, 30, 40});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a + b; }, col, row), {3, 4},
            {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  // Rank promotion: (4,) + (3,4).
  const auto v = mk<double>({4}, {1, 2, 3, 4});
  const auto m = mk<double>({3, 4}, {0, 0, 0, 0, 10, 10, 10, 10, 20, 20, 20, 20});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a + b; }, v, m), {3, 4},
            {1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  CHECK(prims(dyn::make_jaxpr([](auto a, auto b) { return a + b; })(v, m)) ==
        std::vector<std::string>{"broadcast_in_dim", "add"});
  // Scalar (rank-0) arrays broadcast without broadcast_in_dim.
  const auto s = dyn::Array<double>::scalar(2);
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a * b; }, s, v), {4}, {2, 4, 6, 8});
  CHECK(prims(dyn::make_jaxpr([](auto a, auto b) { return a * b; })(s, v)) == std::vector<std::string>{"mul"});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a - b; }, s, s), {}, {0});
  // Mixed dtypes and shapes: (3,1) i32 against (4,) f32.
  CHECK_ARR(float, check_all_ways([](auto a, auto b) { return a * b; }, mk<i32>({3, 1}, {1, 2, 3}), mk<float>({2}, {0.5, 1})),
            {3, 2}, {0.5, 1, 1, 2, 1.5, 3});
  // Comparisons and where broadcast too.
  CHECK_ARR(bool, check_all_ways([](auto a, auto b) { return a < b; }, col, mk<double>({2}, {1.5, 2.5})), {3, 2},
            {1, 1, 0, 1, 0, 0});
}

TEST_CASE("broadcasting: incompatible shapes throw ShapeError naming the primitive and the shapes") {
  const auto a = mk<double>({3}, {1, 2, 3});
  const auto b = mk<double>({4}, {1, 2, 3, 4});
  const std::string msg = "add got incompatible shapes for broadcasting: (3,), (4,)";
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, a + b);
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, dyn::eager([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, dyn::make_jaxpr([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "The error occurred while tracing the function at",
                          dyn::make_jaxpr([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "mul got incompatible shapes for broadcasting: (2, 3), (3, 2)",
                          mk<float>({2, 3}, Vals(6, 1)) * mk<float>({3, 2}, Vals(6, 1)));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "lt got incompatible shapes for broadcasting: (3,), (4,)", a < b);
}

// ===========================================================================
// Pytrees.

TEST_CASE("pytrees: std::tuple and std::pair arguments and results") {
  const auto a = mk<double>({2}, {1, 2});
  const auto b = mk<float>({3}, {1, 2, 3});
  const auto f = [](auto t) {
    const auto& [x, y] = t;
    return std::make_tuple(x * 2, y + 1, dyn::sum(x));
  };
  const auto r = check_all_ways(f, std::make_tuple(a, b));
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<double>, dyn::Array<float>, dyn::Array<double>>>);
  CHECK_ARR(double, std::get<0>(r), {2}, {2, 4});
  CHECK_ARR(float, std::get<1>(r), {3}, {2, 3, 4});
  CHECK_ARR(double, std::get<2>(r), {}, {3});
  CHECK(invar_types(dyn::make_jaxpr(f)(std::make_tuple(a, b))) == std::vector<std::string>{"f64[2]", "f32[3]"});

  // A pair argument is a pair inside the function; a pair result comes back as a tuple.
  const auto g = [](auto p) { return std::make_pair(p.second, p.first - 1); };
  const auto q = check_all_ways(g, std::make_pair(a, b));
  static_assert(std::is_same_v<decltype(q), const std::tuple<dyn::Array<float>, dyn::Array<double>>>);
  CHECK_ARR(float, std::get<0>(q), {3}, {1, 2, 3});
  CHECK_ARR(double, std::get<1>(q), {2}, {0, 1});
  const auto cj = dyn::make_jaxpr(g)(std::make_pair(a, b));
  CHECK(invar_types(cj) == std::vector<std::string>{"f64[2]", "f32[3]"});
  CHECK(outvar_types(cj) == std::vector<std::string>{"f32[3]", "f64[2]"});
  // The first output is the second input itself.
  CHECK(cj.jaxpr->outvars.at(0).var == cj.jaxpr->invars.at(1));
}

TEST_CASE("pytrees: std::array and std::vector (its length is part of the structure)") {
  const std::array<dyn::Array<i32>, 3> arr{mk<i32>({2}, {1, 2}), mk<i32>({2}, {3, 4}), mk<i32>({2}, {5, 6})};
  const auto f = [](auto xs) {
    auto ys = xs;
    for (auto& y : ys) y = y * xs[0];
    return ys;
  };
  const auto r = check_all_ways(f, arr);
  static_assert(std::is_same_v<decltype(r), const std::array<dyn::Array<i32>, 3>>);
  CHECK_ARR(i32, r[0], {2}, {1, 4});
  CHECK_ARR(i32, r[1], {2}, {3, 8});
  CHECK_ARR(i32, r[2], {2}, {5, 12});

  const auto total = [](const auto& xs) {
    auto acc = xs.at(0);
    for (std::size_t i = 1; i < xs.size(); ++i) acc = acc + xs[i];
    return std::make_tuple(acc, xs);
  };
  std::vector<dyn::Array<double>> v2{mk<double>({2}, {1, 2}), mk<double>({2}, {10, 20})};
  std::vector<dyn::Array<double>> v3{mk<double>({2}, {1, 2}), mk<double>({2}, {10, 20}), mk<double>({2}, {100, 200})};
  const auto r2 = check_all_ways(total, v2);
  const auto r3 = check_all_ways(total, v3);
  CHECK_ARR(double, std::get<0>(r2), {2}, {11, 22});
  CHECK_ARR(double, std::get<0>(r3), {2}, {111, 222});
  REQUIRE(std::get<1>(r3).size() == 3);
  CHECK_ARR(double, std::get<1>(r3)[2], {2}, {100, 200});
  const auto c2 = dyn::make_jaxpr(total)(v2);
  const auto c3 = dyn::make_jaxpr(total)(v3);
  CHECK(c2.jaxpr->invars.size() == 2);
  CHECK(c3.jaxpr->invars.size() == 3);
  CHECK(c3.jaxpr->outvars.size() == 4);
  CHECK(prims(c3) == std::vector<std::string>{"add", "add"});
  // Vectors of different element shapes keep their order.
  std::vector<dyn::Array<double>> mixed{mk<double>({1}, {1}), mk<double>({2}, {1, 2}), mk<double>({3}, {1, 2, 3})};
  CHECK(invar_types(dyn::make_jaxpr([](auto xs) { return xs; })(mixed)) ==
        std::vector<std::string>{"f64[1]", "f64[2]", "f64[3]"});
}

TEST_CASE("pytrees: nested structures flatten depth first, left to right") {
  using P = std::pair<dyn::Array<float>, dyn::Array<i32>>;
  const auto arg = std::make_tuple(mk<double>({1}, {1}), std::vector<P>{P{mk<float>({2}, {1, 2}), mk<i32>({3}, {1, 2, 3})},
                                                                         P{mk<float>({4}, {1, 2, 3, 4}), mk<i32>({5}, Vals(5, 7))}},
                                   std::array<dyn::Array<i64>, 2>{mk<i64>({6}, Vals(6, 1)), mk<i64>({7}, Vals(7, 2))});
  const auto f = [](auto t) {
    auto [d, ps, arr] = t;
    return std::make_tuple(ps[1].second + 7, std::make_pair(d, ps[0].first * 2), dyn::sum(arr[1]));
  };
  const auto cj = dyn::make_jaxpr(f)(arg);
  CHECK(invar_types(cj) ==
        std::vector<std::string>{"f64[1]", "f32[2]", "i32[3]", "f32[4]", "i32[5]", "i64[6]", "i64[7]"});
  const auto r = check_all_ways(f, arg);
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<i32>, std::tuple<dyn::Array<double>, dyn::Array<float>>,
                                                             dyn::Array<i64>>>);
  CHECK_ARR(i32, std::get<0>(r), {5}, {14, 14, 14, 14, 14});
  CHECK_ARR(double, std::get<0>(std::get<1>(r)), {1}, {1});
  CHECK_ARR(float, std::get<1>(std::get<1>(r)), {2}, {2, 4});
  CHECK_ARR(i64, std::get<2>(r), {}, {14});
}

TEST_CASE("pytrees: a Boost.Hana struct templated on its leaves") {
  using L = ops_test::Layer<dyn::Array<double>>;
  const L layer{mk<double>({3, 2}, {1, 0, 0, 1, 1, 1}), mk<double>({2}, {0.5, -0.5})};
  const auto x = mk<double>({3}, {1, 2, 3});
  const auto apply = [](auto l, auto v) { return dyn::dot(v, l.w) + l.b; };
  CHECK_ARR(double, check_all_ways(apply, layer, x), {2}, {4.5, 4.5});
  const auto cj = dyn::make_jaxpr(apply)(layer, x);
  // Members in declaration order (w, b), then the next argument.
  CHECK(invar_types(cj) == std::vector<std::string>{"f64[3,2]", "f64[2]", "f64[3]"});

  // A struct as the result: rebuilt with arrays.
  const auto scale = [](auto l) {
    decltype(l) r;
    r.w = l.w * 2;
    r.b = l.b - 1;
    return r;
  };
  const auto s = check_all_ways(scale, layer);
  static_assert(std::is_same_v<decltype(s), const L>);
  CHECK_ARR(double, s.w, {3, 2}, {2, 0, 0, 2, 2, 2});
  CHECK_ARR(double, s.b, {2}, {-0.5, -1.5});
  CHECK(outvar_types(dyn::make_jaxpr(scale)(layer)) == std::vector<std::string>{"f64[3,2]", "f64[2]"});

  // Structs inside containers.
  const std::vector<L> net{layer, L{mk<double>({2, 2}, {1, 1, 0, 1}), mk<double>({2}, {0, 1})}};
  const auto mlp = [](const auto& layers, auto v) {
    auto h = dyn::dot(v, layers[0].w) + layers[0].b;
    return dyn::dot(h, layers[1].w) + layers[1].b;
  };
  CHECK_ARR(double, check_all_ways(mlp, net, x), {2}, {4.5, 10});
  CHECK(dyn::make_jaxpr(mlp)(net, x).jaxpr->invars.size() == 5);
}

TEST_CASE("pytrees: C++ scalar arguments are traced as rank-0 arrays of their exact type") {
  const auto f = [](auto a, auto s) { return a * s; };
  const auto xd = mk<double>({3}, {1, 2, 3});
  CHECK(invar_types(dyn::make_jaxpr(f)(xd, 2.0)) == std::vector<std::string>{"f64[3]", "f64[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n + 1; })(3)) == std::vector<std::string>{"i32[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n + 1; })(i64{3})) == std::vector<std::string>{"i64[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n; })(2.5f)) == std::vector<std::string>{"f32[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return !n; })(true)) == std::vector<std::string>{"bool[]"});
  static_assert(std::is_same_v<dyn::detail::traced_t<double>, dyn::Tracer<double>>);
  static_assert(std::is_same_v<dyn::detail::traced_t<int>, dyn::Tracer<i32>>);

  CHECK_ARR(double, check_all_ways(f, xd, 2.0), {3}, {2, 4, 6});
  CHECK_ARR(i32, check_all_ways([](auto n) { return n + 1; }, 3), {}, {4});
  CHECK_ARR(double, check_all_ways([](auto p, auto q) { return p - q; }, 1.0, 0.25), {}, {0.75});
  // Mixing a scalar argument with an array of another dtype: eager and staged
  // must agree on the result type (the staged double is f64[]).
  const auto xf = mk<float>({2}, {1, 2});
  CHECK_ARR(double, check_all_ways(f, xf, 0.5), {2}, {0.5, 1});
  CHECK_ARR(i64, check_all_ways([](auto a, auto n) { return a + n; }, mk<i64>({2}, {1, 2}), 1), {2}, {2, 3});
}

TEST_CASE("pytrees: C++ scalars and concrete arrays in results are lifted") {
  const auto x = mk<double>({2}, {1, 2});
  const auto f = [](auto a) { return std::make_tuple(a + 1, 2.5, 7, dyn::ones<float>({2})); };
  const auto r = check_all_ways(f, x);
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<double>, dyn::Array<double>, dyn::Array<i32>,
                                                             dyn::Array<float>>>);
  CHECK_ARR(double, std::get<1>(r), {}, {2.5});
  CHECK_ARR(i32, std::get<2>(r), {}, {7});
  CHECK_ARR(float, std::get<3>(r), {2}, {1, 1});
  CHECK(outvar_types(dyn::make_jaxpr(f)(x)) == std::vector<std::string>{"f64[2]", "f64[]", "i32[]", "f32[2]"});
}

// ===========================================================================
// Static arguments.

TEST_CASE("static_argnums: a static bool chooses the branch (reference 002)") {
  // def f(x, neg): return -x if neg else x
  const auto f = [](auto x, bool neg) { return neg ? -x : x; };
  const auto x = mk<i32>({3}, {1, -2, 3});
  const auto neg = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(x, true);
  const auto pos = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(x, false);
  CHECK(neg.jaxpr->invars.size() == 1);
  CHECK(pos.jaxpr->invars.size() == 1);
  CHECK(prims(neg) == std::vector<std::string>{"neg"});
  CHECK(prims(pos).empty());
  CHECK(pos.jaxpr->outvars.at(0).var == pos.jaxpr->invars.at(0));
  CHECK_ARR(i32, dyn::eval_jaxpr(neg, {x}).at(0).get<i32>(), {3}, {-1, 2, -3});
  CHECK_ARR(i32, dyn::eval_jaxpr(pos, {x}).at(0).get<i32>(), {3}, {1, -2, 3});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(x, true), {3}, {-1, 2, -3});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(x, false), {3}, {1, -2, 3});

  // The reference's f(1, True): a C++ int argument, traced as i32[].
  const auto one = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(1, true);
  CHECK(invar_types(one) == std::vector<std::string>{"i32[]"});
  CHECK(prims(one) == std::vector<std::string>{"neg"});
  CHECK_ARR(i32, dyn::eval_jaxpr(one, {dyn::Array<i32>::scalar(1)}).at(0).get<i32>(), {}, {-1});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(1, true), {}, {-1});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(1, false), {}, {1});

  // A static argument in first position, used as a Python-level number.
  const auto g = [](int k, auto v) { return v * k + dyn::sum(v); };
  const auto cj = dyn::make_jaxpr(g, dyn::static_argnums<0>{})(3, x);
  CHECK(invar_types(cj) == std::vector<std::string>{"i32[3]"});
  CHECK_ARR(i32, dyn::eval_jaxpr(cj, {x}).at(0).get<i32>(), {3}, {5, -4, 11});
  CHECK_ARR(i32, dyn::eager(g, dyn::static_argnums<0>{})(3, x), {3}, {5, -4, 11});
}

// ===========================================================================
// dyn::Array.

TEST_CASE("Array: construction, shape, element access") {
  const dyn::Array<double> z({3, 4});
  CHECK(z.shape() == Shp{3, 4});
  CHECK(z.shape(0) == 3);
  CHECK(z.shape(-1) == 4);
  CHECK(z.rank() == 2);
  CHECK(z.size() == 12);
  CHECK(z.dtype() == dyn::DType::f64);
  CHECK(z(2, 3) == 0.0);
  const dyn::Array<i32> m({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(m(0, 0) == 1);
  CHECK(m(1, 2) == 6);
  CHECK(m(1, 0) == 4);
  CHECK_THROWS_AS(m(2, 0), dyn::IndexError);
  CHECK_THROWS_AS(m(0, 3), dyn::IndexError);
  CHECK_THROWS_AS(m(-1, 0), dyn::IndexError);
  CHECK_THROWS_AS(m(0), dyn::IndexError);
  CHECK_THROWS_AS(m(0, 0, 0), dyn::IndexError);
  CHECK_THROWS_AS(m.shape(2), dyn::IndexError);
  CHECK_THROWS_AS(dyn::Array<i32>({2, 2}, {1, 2, 3}), dyn::ShapeError);
  const auto b = dyn::array({1.0, 2.0, 3.0});
  CHECK(b.shape() == Shp{3});
  CHECK(b(1) == 2.0);
  const auto s = dyn::Array<double>::scalar(2.5);
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(s() == 2.5);
  // AnyArray round trip, checked dtype.
  const dyn::AnyArray any = m;
  CHECK(any.dtype() == dyn::DType::i32);
  CHECK(any.shape() == Shp{2, 3});
  CHECK(any.get<i32>().data() == m.data());
  CHECK_THROWS_AS(any.get<float>(), dyn::TypeError);
}

TEST_CASE("Array: copy-on-write") {
  dyn::Array<double> a({3}, {1, 2, 3});
  dyn::Array<double> b = a;
  CHECK(b.data() == a.data());  // copies share the buffer
  b.mutable_data()[0] = 9;      // a shared buffer is copied first
  CHECK(b.data() != a.data());
  CHECK(a(0) == 1.0);
  CHECK(b(0) == 9.0);
  // An exclusively held buffer is written in place.
  const double* p = b.data();
  b.mutable_data()[1] = 8;
  CHECK(b.data() == p);
  CHECK_ARR(double, b, {3}, {9, 8, 3});
  CHECK_ARR(double, a, {3}, {1, 2, 3});
  // Through AnyArray too.
  dyn::AnyArray any = a;
  dyn::Array<double> c = any.get<double>();
  c.mutable_data()[2] = 7;
  CHECK(a(2) == 3.0);
  // An array captured as a constant by a jaxpr never changes under it.
  dyn::Array<double> k({2}, {1, 2});
  const auto cj = dyn::make_jaxpr([&](auto v) { return v + k; })(mk<double>({2}, {0, 0}));
  REQUIRE(cj.consts.size() == 1);
  k.mutable_data()[0] = 100;
  CHECK_ARR(double, cj.consts[0].get<double>(), {2}, {1, 2});
  CHECK_ARR(double, dyn::eval_jaxpr(cj, {mk<double>({2}, {0, 0})}).at(0).get<double>(), {2}, {1, 2});
  // Operations never modify their operands.
  dyn::Array<double> x({2}, {1, 2});
  const double* xp = x.data();
  const auto y = x + 1;
  CHECK(x.data() == xp);
  CHECK_ARR(double, x, {2}, {1, 2});
  CHECK_ARR(double, y, {2}, {2, 3});
}

TEST_CASE("Array: zero-copy view over user memory") {
  std::vector<double> buf{1, 2, 3, 4, 5, 6};
  auto v = dyn::Array<double>::view(buf.data(), {2, 3});
  CHECK(v.data() == buf.data());
  CHECK(v.shape() == Shp{2, 3});
  CHECK(v(1, 1) == 5.0);
  buf[4] = 50;  // the view sees the user's memory
  CHECK(v(1, 1) == 50.0);
  // Copies of a view share the same memory.
  const auto w = v;
  CHECK(w.data() == buf.data());
  // Eager operations read it without copying it first, and do not write to it.
  CHECK_ARR(double, v * 2, {2, 3}, {2, 4, 6, 8, 100, 12});
  CHECK_ARR(double, check_all_ways([](auto a) { return dyn::sum(a, {1}); }, v), {2}, {6, 60});
  CHECK(buf == std::vector<double>{1, 2, 3, 4, 50, 6});
  // A const view.
  const std::vector<i32> cbuf{7, 8};
  const auto cv_ = dyn::Array<i32>::view(cbuf.data(), {2});
  CHECK(cv_.data() == cbuf.data());
  CHECK_ARR(i32, cv_ + 1, {2}, {8, 9});
}

TEST_CASE("Array: printing, numpy style") {
  auto str = [](const auto& a) {
    std::ostringstream os;
    os << a;
    return os.str();
  };
  CHECK(str(dyn::array({1.0, 2.0, 3.0})) == "[1. 2. 3.]");
  CHECK(str(dyn::Array<float>({3}, {1, 2, 3})) == "[1. 2. 3.]");
  CHECK(str(dyn::Array<i32>({2, 3}, {1, 2, 3, 4, 5, 6})) == "[[1 2 3]\n [4 5 6]]");
  CHECK(str(dyn::Array<i64>({3}, {-1, 10, 3})) == "[-1 10  3]");
  CHECK(str(mk<bool>({3}, {1, 0, 1})) == "[ True False  True]");
  CHECK(str(mk<bool>({2, 2}, {1, 1, 0, 1})) == "[[ True  True]\n [False  True]]");
  CHECK(str(dyn::Array<double>::scalar(2.5)) == "2.5");
  CHECK(str(dyn::Array<i32>::scalar(-4)) == "-4");
  CHECK(str(dyn::Array<double>({2, 2}, {1, 2, 3, 4})) == "[[1. 2.]\n [3. 4.]]");
  CHECK(str(dyn::Array<i32>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})) == "[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]");
  CHECK(str(mk<double>({3}, {kNaN, kInf, -kInf})) == "[ nan  inf -inf]");
  CHECK(str(mk<double>({2}, {0.5, -0.25})) == "[ 0.5  -0.25]");
  CHECK(str(dyn::Array<double>({0}, std::vector<double>{})) == "[]");
  // numpy aligns the decimal points: print(np.array([1.5, 2., 3.])) is "[1.5 2.  3. ]".
  CHECK(str(dyn::array({1.5, 2.0, 3.0})) == "[1.5 2.  3. ]");
  CHECK(str(dyn::Array<double>({2, 2}, {1, 2.5, 3, 4})) == "[[1.  2.5]\n [3.  4. ]]");
  // Through AnyArray.
  CHECK(str(dyn::AnyArray(dyn::Array<i32>({2}, {1, 2}))) == "[1 2]");
}

TEST_CASE("Array: allclose and array_equal") {
  const auto a = dyn::array({1.0, 2.0, 3.0});
  const auto b = dyn::array({1.0, 2.0 + 1e-9, 3.0});
  CHECK(dyn::array_equal(a, a));
  CHECK_FALSE(dyn::array_equal(a, b));
  CHECK(dyn::allclose(a, b));
  CHECK_FALSE(dyn::allclose(a, b, 1e-12, 0));
  CHECK(dyn::allclose(a, b, 0, 1e-8));
  CHECK_FALSE(dyn::allclose(a, dyn::array({1.0, 2.0})));
  CHECK_FALSE(dyn::array_equal(a, dyn::Array<double>({3, 1}, {1, 2, 3})));
  // Across element types: compares values.
  CHECK(dyn::array_equal(dyn::Array<i32>({2}, {1, 2}), dyn::Array<double>({2}, {1, 2})));
  // NaN: never array_equal; allclose only with equal_nan.
  const auto n = dyn::array({kNaN, 1.0});
  CHECK_FALSE(dyn::array_equal(n, n));
  CHECK_FALSE(dyn::allclose(n, n));
  CHECK(dyn::allclose(n, n, 1e-7, 0, true));
  CHECK(dyn::allclose(dyn::array({kInf}), dyn::array({kInf})));
  // AnyArray versions also compare dtypes.
  CHECK(dyn::array_equal(dyn::AnyArray(a), dyn::AnyArray(a)));
  CHECK_FALSE(dyn::array_equal(dyn::AnyArray(dyn::Array<i32>({1}, {1})), dyn::AnyArray(dyn::Array<i64>({1}, {1}))));
}
