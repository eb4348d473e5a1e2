// Helpers of the user-level differential suite (issue 2), test_ops_*.cpp.
//
// Every operation of API.md section 4, for every dtype it accepts, runs three
// ways: eagerly (dyn::eager), staged (dyn::make_jaxpr) and interpreted
// (dyn::eval_jaxpr). check_all_ways asserts that the jaxpr's output types
// equal the eager results' dtypes and shapes and that the interpreted program
// gives the eager numbers exactly (NaN-aware, signed zeros distinguished);
// each case then asserts hand-computed numbers.
//
// Compile cost: each check_all_ways<F, Args...> instantiation (eager run,
// trace, pytree handling) costs about a CPU-second at -O2. The tests therefore
// pass one closure type per family of operations — a lambda that captures a
// run-time op code — instead of a fresh lambda per operation, so that an
// instantiation serves every operation of the family.
#pragma once

#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ops_test {

using i32 = std::int32_t;
using i64 = std::int64_t;
using Shp = std::vector<std::int64_t>;
using Vals = std::vector<double>;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

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
  if constexpr (dyn::is_complex_v<T>) {
    return same_elem(a.real(), b.real()) && same_elem(a.imag(), b.imag());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

inline std::string describe(const dyn::AnyArray& a) {
  std::ostringstream os;
  os << dyn::detail::array_type_str(a) << " " << a;
  return os.str();
}

inline bool identical(const dyn::AnyArray& a, const dyn::AnyArray& b) {
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

inline std::vector<std::string> prims(const dyn::ClosedJaxpr& cj) {
  std::vector<std::string> r;
  for (const auto& e : cj.jaxpr->eqns) r.emplace_back(dyn::detail::prim_name(e.prim));
  return r;
}

inline std::string type_str(const dyn::Jaxpr& j, const dyn::Type& t) { return dyn::detail::type_str(j, t); }

inline std::vector<std::string> invar_types(const dyn::ClosedJaxpr& cj) {
  std::vector<std::string> r;
  for (int v : cj.jaxpr->invars) r.push_back(type_str(*cj.jaxpr, cj.jaxpr->types.at(static_cast<std::size_t>(v))));
  return r;
}

inline std::vector<std::string> outvar_types(const dyn::ClosedJaxpr& cj) {
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
inline std::string type_mismatch(const dyn::Jaxpr& j, const dyn::Type& t, const dyn::AnyArray& a) {
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

}  // namespace ops_test
