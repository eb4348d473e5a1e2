// Harness of the jit differential tests (test_jit_diff*.cpp): deterministic
// inputs, ulp distances, running a function three ways (dyn::jit,
// dyn::eval_jaxpr of dyn::make_jaxpr, dyn::eager) and comparing the results.
//
// Compile cost: the tests call one generic lambda per family of operations,
// switching on a run-time op code passed as static argument 0. Its argument
// is a bundle — a tuple with one std::vector of operands per dtype (or dtype
// pair) — so the lambda and the jit/make_jaxpr/eager machinery are
// instantiated once per family, not once per (op, dtype): each call fills one
// dtype's vector (the others stay empty), and that vector's operands of many
// shapes go through one kernel.
#pragma once

#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../test_util.hpp"

namespace jit_diff {

using i32 = std::int32_t;
using i64 = std::int64_t;
using Shp = std::vector<i64>;
using dyn::AnyArray;
using dyn::DType;

// docs/backend.md: sin cos tan exp log log1p tanh pow atan2 measured at <= 3
// ulp, logistic at <= 4; tested at <= 4.
constexpr double kUlps = 4;

inline std::string dt_name(DType d) { return std::string(dyn::dtype_name(d)); }

// ---------------------------------------------------------------------------
// Deterministic inputs.

inline std::uint64_t lcg(std::uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 11;
}

enum class Gen {
  general,   // ints in [-100, 100] and extremes (never INT_MIN); floats in [-8, 8] and every special
  nonzero,   // as general, without zeros (integer divisors; bools all true)
  exponent,  // ints in [-2, 6]; floats in [-3, 3] with NaN, inf, 0 (pow exponents)
  mild,      // ints in [-5, 5]; floats in [-2, 2] with NaN, +-inf, +-0 only (dot products)
  reduce,    // ints as general; floats of magnitude in [0.5, 2] (products neither overflow nor
             // underflow in any order) with NaN, +-inf, +-0 now and then
};

template <class T>
dyn::Array<T> gen(const Shp& shape, std::uint64_t seed, Gen g = Gen::general) {
  dyn::Array<T> a(shape);
  T* p = a.mutable_data();
  std::uint64_t s = seed * 7919 + 17;
  for (i64 i = 0; i < a.size(); ++i) {
    const double u = static_cast<double>(lcg(s)) / 9007199254740992.0;  // [0, 1)
    const bool special = i % 7 == 3;
    const auto k = static_cast<std::size_t>(i / 7 + static_cast<i64>(seed));
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = g == Gen::nonzero || u < 0.5;
    } else if constexpr (std::is_integral_v<T>) {
      // (small integers wrap to the same bits in every dtype; a double goes
      // through i64, as a negative double converted to unsigned is undefined)
      constexpr T big = sizeof(T) == 4 ? T(123456789) : T(1234567890123456789LL);
      const T ext[] = {std::numeric_limits<T>::max(), T(std::numeric_limits<T>::min() + 1), big, T(-big), T(-1), T(0),
                       T(1)};
      switch (g) {
        case Gen::general:
        case Gen::nonzero:
        case Gen::reduce:
          p[i] = static_cast<T>(static_cast<i64>(std::floor(-100 + 201 * u)));
          if (special) p[i] = ext[k % 7];
          if (g == Gen::nonzero && p[i] == 0) p[i] = T(3);
          break;
        case Gen::exponent: p[i] = static_cast<T>(static_cast<i64>(std::floor(-2 + 9 * u))); break;
        case Gen::mild: p[i] = static_cast<T>(static_cast<i64>(std::floor(-5 + 11 * u))); break;
      }
    } else {
      constexpr T inf = std::numeric_limits<T>::infinity();
      const T nan = std::numeric_limits<T>::quiet_NaN();
      switch (g) {
        case Gen::general:
        case Gen::nonzero: {
          p[i] = static_cast<T>(-8 + 16 * u);
          const T sp[] = {nan, inf, -inf, T(0), -T(0), T(1e30), T(-1e30), T(1e-30), T(0.5), T(-2.5), T(2.5), T(-1)};
          if (special) p[i] = sp[k % 12];
          break;
        }
        case Gen::exponent: {
          p[i] = static_cast<T>(-3 + 6 * u);
          const T sp[] = {nan, inf, T(0), T(2), T(-1), T(0.5)};
          if (special) p[i] = sp[k % 6];
          break;
        }
        case Gen::mild: {
          p[i] = static_cast<T>(-2 + 4 * u);
          const T sp[] = {nan, inf, -inf, T(0), -T(0), T(1)};
          if (special) p[i] = sp[k % 6];
          break;
        }
        case Gen::reduce: {
          const double m = 0.5 + 1.5 * std::fmod(u * 2, 1.0);
          p[i] = static_cast<T>(u < 0.5 ? -m : m);
          const T sp[] = {nan, inf, -inf, T(0), -T(0), T(1)};
          if (i % 29 == 11) p[i] = sp[k % 6];
          break;
        }
      }
    }
  }
  return a;
}

// ---------------------------------------------------------------------------
// Comparing results.

using test_util::ulp_distance;

// How the kernel's result may differ from the interpreter's for one leaf.
struct Tol {
  double ulps = 0;             // 0: identical bits (NaN payloads aside)
  bool any_zero_sign = false;  // +0 and -0 match (llvm.maximum/minimum reductions)
  AnyArray abs;                // if valid: |kernel - interpreter| <= abs[i] also passes (finite values)
  Tol() = default;
  Tol(double u, bool z = false, AnyArray a = {}) : ulps(u), any_zero_sign(z), abs(std::move(a)) {}  // NOLINT
};

inline std::string leaf_type(const AnyArray& a) { return dyn::detail::array_type_str(a); }

inline std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// "" if `got` matches `ref` within `tol`, else a description of the first
// mismatch.
inline std::string mismatch(const AnyArray& got, const AnyArray& ref, const Tol& tol) {
  if (got.dtype() != ref.dtype() || got.shape() != ref.shape())
    return "type " + leaf_type(got) + " vs " + leaf_type(ref);
  return dyn::visit_dtype(got.dtype(), [&](auto t) -> std::string {
    using T = decltype(t);
    const T* x = static_cast<const T*>(got.data());
    const T* y = static_cast<const T*>(ref.data());
    const double* bound = nullptr;
    dyn::Array<double> abs_d;
    if (tol.abs.valid()) {
      abs_d = dyn::visit_dtype(tol.abs.dtype(), [&](auto u) -> dyn::Array<double> {
        using U = decltype(u);
        if constexpr (std::is_same_v<U, double>) return tol.abs.get<double>();
        else return dyn::astype<double>(tol.abs.get<U>());
      });
      if (abs_d.size() != got.size()) return "bad test: tolerance array of the wrong size";
      bound = abs_d.data();
    }
    for (i64 i = 0; i < got.size(); ++i) {
      bool ok;
      if constexpr (dyn::is_complex_v<T>) {
        // part by part, each as a float element
        auto part_ok = [&](auto a, auto c) {
          if (std::isnan(a) || std::isnan(c)) return std::isnan(a) && std::isnan(c);
          if (a == c) return true;
          if (ulp_distance(a, c) <= tol.ulps) return true;
          return bound && std::isfinite(a) && std::isfinite(c) &&
                 std::fabs(static_cast<double>(a) - static_cast<double>(c)) <= bound[i];
        };
        ok = part_ok(x[i].real(), y[i].real()) && part_ok(x[i].imag(), y[i].imag());
        if (!ok)
          return "element " + std::to_string(i) + ": kernel (" + fmt(static_cast<double>(x[i].real())) + ", " +
                 fmt(static_cast<double>(x[i].imag())) + "), reference (" + fmt(static_cast<double>(y[i].real())) +
                 ", " + fmt(static_cast<double>(y[i].imag())) + ")";
      } else if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) || std::isnan(y[i])) ok = std::isnan(x[i]) && std::isnan(y[i]);
        else if (std::memcmp(&x[i], &y[i], sizeof(T)) == 0) ok = true;
        else if (x[i] == y[i]) ok = tol.any_zero_sign || tol.ulps > 0;  // +0 vs -0
        else if (ulp_distance(x[i], y[i]) <= tol.ulps) ok = true;
        else
          ok = bound && std::isfinite(x[i]) && std::isfinite(y[i]) &&
               std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])) <= bound[i];
        if (!ok)
          return "element " + std::to_string(i) + ": kernel " + fmt(static_cast<double>(x[i])) + ", reference " +
                 fmt(static_cast<double>(y[i])) + " (" + fmt(ulp_distance(x[i], y[i])) + " ulp" +
                 (bound ? ", bound " + fmt(bound[i]) : std::string()) + ")";
      } else {
        ok = x[i] == y[i];
        if (!ok)
          return "element " + std::to_string(i) + ": kernel " + std::to_string(x[i]) + ", reference " +
                 std::to_string(y[i]);
      }
    }
    return "";
  });
}

// ---------------------------------------------------------------------------
// Running a function three ways.

struct Outcome {
  std::string error;    // "" or the dyn:: error class
  std::string message;  // its what()
  std::vector<AnyArray> out;
};

template <class G>
Outcome attempt(G&& g) {
  Outcome o;
  try {
    o.out = g();
  } catch (const dyn::ArithmeticError& e) {
    o.error = "ArithmeticError", o.message = e.what();
  } catch (const dyn::TypeError& e) {
    o.error = "TypeError", o.message = e.what();
  } catch (const dyn::ShapeError& e) {
    o.error = "ShapeError", o.message = e.what();
  } catch (const dyn::IndexError& e) {
    o.error = "IndexError", o.message = e.what();
  } catch (const dyn::InternalError& e) {
    o.error = "InternalError", o.message = e.what();
  } catch (const dyn::Error& e) {
    o.error = "Error", o.message = e.what();
  } catch (const std::exception& e) {
    o.error = "std::exception", o.message = e.what();
  }
  return o;
}

template <class X>
std::vector<AnyArray> leaves(const X& x) {
  std::vector<AnyArray> r;
  dyn::detail::for_each_leaf(x, [&](const auto& l) { r.push_back(dyn::detail::leaf_array(l)); });
  return r;
}

struct Three {
  Outcome jit, ref, eager;
  std::string jaxpr;
  bool ok() const { return jit.error.empty() && ref.error.empty() && eager.error.empty(); }
  const std::string& error() const { return eager.error; }
};

// f(op, args...) with op static: compiled (twice: a miss, then a cache hit),
// interpreted, eager. Checks the static result types agree.
template <class F, class... Args>
Three run3(const F& f, int op, const Args&... args) {
  using Static = dyn::static_argnums<0>;
  Three r;
  const auto jf = dyn::jit(f, Static{});
  using JitR = decltype(jf(op, args...));
  using EagerR = decltype(dyn::eager(f, Static{})(op, args...));
  static_assert(std::is_same_v<JitR, EagerR>, "jit and eager disagree on the static result type");
  r.jit = attempt([&] {
    auto first = leaves(jf(op, args...));
    auto again = leaves(jf(op, args...));
    for (std::size_t k = 0; k < first.size(); ++k) {
      const std::string m = mismatch(again.at(k), first[k], Tol{});
      if (!m.empty()) FAIL_CHECK("a cache hit gave another result than the compile: output #", k, ": ", m);
    }
    if (jf.stats().compiles != 1 || jf.stats().cache_hits != 1)
      FAIL_CHECK("expected 1 compile and 1 cache hit, got ", jf.stats().compiles, " and ", jf.stats().cache_hits);
    return first;
  });
  r.ref = attempt([&] {
    const dyn::ClosedJaxpr cj = dyn::make_jaxpr(f, Static{})(op, args...);
    r.jaxpr = dyn::to_string(cj);
    std::vector<AnyArray> flat;
    (dyn::detail::for_each_leaf(args, [&](const auto& l) { flat.push_back(dyn::detail::leaf_array(l)); }), ...);
    return dyn::eval_jaxpr(cj, flat);
  });
  r.eager = attempt([&] { return leaves(dyn::eager(f, Static{})(op, args...)); });
  return r;
}

// The three outcomes agree: the same error class, or results with equal
// types, eager == interpreter exactly, kernel == interpreter within
// tols[k % tols.size()] (one Tol for every output, or one per output of a
// repeated group). Returns whether the op ran.
inline bool agree(const Three& r, const std::string& what, const std::vector<Tol>& tols = {Tol{}}) {
  INFO(what);
  const bool same_error = r.jit.error == r.ref.error && r.ref.error == r.eager.error;
  CHECK_MESSAGE(same_error, "errors differ: jit [", r.jit.error, "] ", r.jit.message, "\n  eval_jaxpr [",
                r.ref.error, "] ", r.ref.message, "\n  eager [", r.eager.error, "] ", r.eager.message);
  if (!same_error || !r.ok()) return false;
  INFO("jaxpr:\n", r.jaxpr);
  REQUIRE(r.jit.out.size() == r.ref.out.size());
  REQUIRE(r.eager.out.size() == r.ref.out.size());
  for (std::size_t k = 0; k < r.ref.out.size(); ++k) {
    const std::string e = mismatch(r.eager.out[k], r.ref.out[k], Tol{});
    CHECK_MESSAGE(e.empty(), "output #", k, " ", leaf_type(r.ref.out[k]), ": eager vs eval_jaxpr: ", e);
    const Tol& tol = tols[k % tols.size()];
    const std::string j = mismatch(r.jit.out[k], r.ref.out[k], tol);
    CHECK_MESSAGE(j.empty(), "output #", k, " ", leaf_type(r.ref.out[k]), ": jit vs eval_jaxpr: ", j);
  }
  return true;
}

// Whether the op was rejected for the dtype (TypeError everywhere) and that
// this is what the table of accepted pairs says. A rejection's message must
// start with `message` in all three ways (if given; the place appended to it
// differs between them).
inline void expect_accepted(const Three& r, bool accepted, const std::string& what,
                            const std::string& message = "") {
  INFO(what);
  if (accepted) {
    CHECK_MESSAGE(r.ok(), "expected the operation to be accepted; error: ", r.eager.message);
    return;
  }
  CHECK_MESSAGE(r.error() == "TypeError", "expected a TypeError, got [", r.error(), "]");
  if (message.empty()) return;
  for (const Outcome* o : {&r.jit, &r.ref, &r.eager})
    CHECK_MESSAGE(o->message.rfind(message, 0) == 0, "expected a message starting with\n  ", message,
                  "\ngot\n  ", o->message);
}

// The three ways ran without error (agree() alone also passes when all three
// throw the same error).
inline void expect_ok(const Three& r, const std::string& what) { expect_accepted(r, true, what); }

// The message of a primitive's dtype check (shape_rules.hpp, check_dtype).
inline std::string dtype_rejection(const std::string& prim, DType d, const std::string& required) {
  return prim + " does not accept dtype " + dt_name(d) + "; it requires " + required;
}
inline const std::string kNumeric = "a numeric dtype (integer or floating-point)";
// arithmetic that complex values have too (add, mul, neg, abs, dot_general, ...)
inline const std::string kNumber = "a numeric dtype (integer, floating-point or complex)";
inline const std::string kIntegerOrBool = "a boolean or integer dtype";

// f jitted once with polymorphic_shapes{"(n, m)"} serves every size of an
// f64[n, m] input (one compile), with eager's results exactly.
template <class F>
void check_polymorphic_2d(const F& f, std::uint64_t seed, Gen g) {
  const auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n, m)"});
  for (auto [n, m] : std::vector<std::pair<i64, i64>>{{1, 1}, {4, 3}, {17, 1}, {1, 40}, {64, 33}, {2, 1000}}) {
    const auto x = gen<double>({n, m}, seed++, g);
    const auto got = leaves(jf(x));
    const auto want = leaves(dyn::eager(f)(x));
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "output #", k, " for n=", n, " m=", m, ": ",
                    mismatch(got[k], want[k], Tol{}));
  }
  CHECK(jf.stats().compiles == 1);
}

template <class T>
std::vector<dyn::Array<T>> gens(const std::vector<Shp>& shapes, std::uint64_t seed, Gen g = Gen::general) {
  std::vector<dyn::Array<T>> r;
  for (const Shp& s : shapes) r.push_back(gen<T>(s, seed++, g));
  return r;
}

// Shapes for elementwise operations: rank 0, empty, size 1, a vector tail
// longer than any vector width, rank 3, and an empty dimension in the middle.
inline const std::vector<Shp> kShapes = {{}, {0}, {1}, {7}, {3, 5}, {1, 1}, {2, 0, 3}, {67}, {2, 3, 4}};

// Operand shape pairs for binary operations: equal shapes and every kind of
// numpy broadcasting.
inline const std::vector<std::pair<Shp, Shp>> kPairShapes = {
    {{}, {}},     {{7}, {7}},     {{}, {7}},         {{7}, {}},       {{3, 1}, {1, 4}}, {{5}, {3, 5}},
    {{0}, {0}},   {{2, 0}, {1, 0}}, {{1}, {6}},      {{2, 3, 4}, {3, 1}}, {{67}, {67}},  {{4, 1, 3}, {1, 2, 1}}};

template <class A, class B>
std::vector<std::pair<dyn::Array<A>, dyn::Array<B>>> gen_pairs(std::uint64_t seed, Gen ga, Gen gb) {
  std::vector<std::pair<dyn::Array<A>, dyn::Array<B>>> r;
  for (const auto& [sa, sb] : kPairShapes) {
    r.emplace_back(gen<A>(sa, seed, ga), gen<B>(sb, seed + 1000, gb));
    ++seed;
  }
  return r;
}

template <class T>
constexpr bool is_bool_v = std::is_same_v<T, bool>;

// ---------------------------------------------------------------------------
// Operand bundles: one vector per dtype (pair), in one pytree.

template <class T>
using Arrs = std::vector<dyn::Array<T>>;
template <class A, class B = A>
using Pairs = std::vector<std::pair<dyn::Array<A>, dyn::Array<B>>>;
template <class T>
using Triples = std::vector<std::tuple<dyn::Array<bool>, dyn::Array<T>, dyn::Array<T>>>;

using Singles = std::tuple<Arrs<bool>, Arrs<i32>, Arrs<i64>, Arrs<float>, Arrs<double>>;
using SamePairs = std::tuple<Pairs<bool>, Pairs<i32>, Pairs<i64>, Pairs<float>, Pairs<double>>;
// The mixed pairs that promotion is tested on (a few: every pair instantiates
// the family's lambda again).
using MixedPairs = std::tuple<Pairs<i32, i64>, Pairs<i32, float>, Pairs<i64, double>, Pairs<float, double>,
                              Pairs<bool, i32>, Pairs<i64, float>, Pairs<bool, double>>;
using AllTriples = std::tuple<Triples<bool>, Triples<i32>, Triples<i64>, Triples<float>, Triples<double>>;

// A bundle whose vector of type V (and only it) holds `v`.
template <class Bundle, class V>
Bundle only(V v) {
  Bundle b{};
  std::get<V>(b) = std::move(v);
  return b;
}

// fn applied to every operand of every vector of the bundle.
template <class V, class Fn>
auto map_vec(const V& v, const Fn& fn) {
  std::vector<decltype(fn(std::declval<const typename V::value_type&>()))> r;
  for (const auto& e : v) r.push_back(fn(e));
  return r;
}
template <class Bundle, class Fn>
auto map_all(const Bundle& b, const Fn& fn) {
  return std::apply([&](const auto&... vs) { return std::make_tuple(map_vec(vs, fn)...); }, b);
}

}  // namespace jit_diff
