// The LLVM backend below dyn::jit: hand-built jaxprs compiled with
// detail::compile_kernel and compared with the eager interpreter
// (detail::eval_jaxpr): exact for integers, bools and exactly rounded float
// operations; within kTranscendentalUlps for libm/libmvec functions; within
// a summation bound for reassociated reductions and FMA dot products.
#include <dynstage/core.hpp>
#include <dynstage/llvm/backend.hpp>
#include <dynstage/llvm/fusion.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <malloc.h>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../test_util.hpp"

namespace {

using namespace dyn;
using namespace dyn::detail;

// glibc documents libm at < 1 ulp and libmvec at <= 4 ulp; measured: at most
// 3 ulp (f64 and f32) for sin cos tan exp log log1p tanh pow atan2 over wide
// ranges, 4 ulp for logistic (exp composed with a division).
constexpr double kTranscendentalUlps = 4;

Type ty(DType d, std::vector<std::int64_t> s) {
  Type t{d, {}, false};
  for (auto x : s) t.shape.push_back(JDim{x, -1});
  return t;
}

// Builds a jaxpr equation by equation, typing outputs with abstract_eval.
struct Builder {
  Jaxpr j;
  Atom in(DType d, std::vector<std::int64_t> s) {
    int v = j.new_var(ty(d, std::move(s)));
    j.invars.push_back(v);
    return Atom::of_var(v);
  }
  Atom cst(DType d, std::vector<std::int64_t> s) {
    int v = j.new_var(ty(d, std::move(s)));
    j.constvars.push_back(v);
    return Atom::of_var(v);
  }
  Aval aval(const Atom& a) {
    const Type t = j.type_of(a);
    Aval r{t.dtype, {}, a.is_var() ? t.weak : a.weak, std::nullopt};
    for (auto& d : t.shape) r.shape.push_back(Dim(d.value));
    if (!a.is_var() && is_integer(a.lit.dtype)) r.dim_value = Dim(a.lit.i);
    return r;
  }
  Atom eq(Prim p, std::vector<Atom> ins, Params params = NoParams{}) {
    std::vector<Aval> avals;
    for (auto& a : ins) avals.push_back(aval(a));
    auto outs = abstract_eval(p, avals, params);
    Type t{outs[0].dtype, {}, outs[0].weak};
    for (auto& d : outs[0].shape) t.shape.push_back(JDim{d.value(), -1});
    int v = j.new_var(t);
    j.eqns.push_back(Eqn{p, std::move(ins), {v}, std::move(params)});
    return Atom::of_var(v);
  }
  void out(Atom a) { j.outvars.push_back(a); }
};

template <class T>
Atom lit(T x) {
  return Atom::literal(Scalar::of(x));
}

std::vector<AnyArray> run(const Kernel& k, const Jaxpr& j, const std::vector<AnyArray>& consts,
                          const std::vector<AnyArray>& args) {
  std::vector<const void*> in;
  for (auto& a : consts) in.push_back(a.data());
  for (auto& a : args) in.push_back(a.data());
  std::vector<AnyArray> outs;
  std::vector<void*> res;
  for (auto& o : j.outvars) {
    const Type& t = j.type_of(o);
    std::vector<std::int64_t> s;
    for (auto& d : t.shape) s.push_back(d.value);
    outs.emplace_back(Storage::make(t.dtype, s, false));
    res.push_back(outs.back().storage().data);
  }
  run_kernel(k, in.data(), res.data());
  return outs;
}

std::vector<AnyArray> compile_and_run(const Jaxpr& j, const std::vector<AnyArray>& args,
                                      const std::vector<AnyArray>& consts = {}) {
  auto r = compile_kernel(j, false);
  return run(*r.kernel, j, consts, args);
}

using test_util::ulp_distance;

// Part 0 (the value, or a complex value's real part) or 1 (the imaginary
// part; 0 for real values) as a double.
template <class T>
double part_of(T v, int part) {
  if constexpr (dyn::is_complex_v<T>) return static_cast<double>(part ? v.imag() : v.real());
  else return part ? 0.0 : static_cast<double>(v);
}

// Exact: equal bits, except that any NaN equals any NaN.
bool same(const AnyArray& a, const AnyArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(a.data());
    const T* y = static_cast<const T*>(b.data());
    for (std::int64_t i = 0; i < a.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) && std::isnan(y[i])) continue;
        if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0) return false;
      } else {
        if (x[i] != y[i]) return false;
      }
    }
    return true;
  });
}

double max_ulps(const AnyArray& a, const AnyArray& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = static_cast<const T*>(a.data());
      const T* y = static_cast<const T*>(b.data());
      for (std::int64_t i = 0; i < a.size(); ++i) m = std::max(m, ulp_distance(x[i], y[i]));
    } else {
      m = same(a, b) ? 0 : 1e300;
    }
  });
  return m;
}

// |a - b| <= tol elementwise (floats), NaN matching NaN.
bool within(const AnyArray& a, const AnyArray& b, double tol) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(a.data());
    const T* y = static_cast<const T*>(b.data());
    for (std::int64_t i = 0; i < a.size(); ++i)
      for (int part = 0; part < 2; ++part) {
        const double u = part_of(x[i], part), v = part_of(y[i], part);
        if (std::isnan(u) && std::isnan(v)) continue;
        if (u == v) continue;
        if (!(std::fabs(u - v) <= tol)) return false;
      }
    return true;
  });
}

// Deterministic test data. Floats mix ordinary values with the special ones
// (NaN, +-inf, +-0, huge, tiny) every 16th element; integers include the
// extremes.
std::uint64_t lcg(std::uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 11;
}

template <class T>
Array<T> data(std::vector<std::int64_t> shape, std::uint64_t seed, double lo = -4, double hi = 4,
              bool specials = true) {
  Array<T> a(shape);
  T* p = a.mutable_data();
  std::uint64_t s = seed * 7919 + 17;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double u = static_cast<double>(lcg(s)) / 9007199254740992.0;
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = u < 0.5;
    } else if constexpr (dyn::is_complex_v<T>) {
      using R = typename T::value_type;
      const double v = static_cast<double>(lcg(s)) / 9007199254740992.0;
      p[i] = T(static_cast<R>(lo + (hi - lo) * u), static_cast<R>(lo + (hi - lo) * v));
    } else if constexpr (std::is_integral_v<T>) {
      const std::int64_t r = static_cast<std::int64_t>(lo + (hi - lo) * u);
      p[i] = static_cast<T>(r);
      if (specials && i % 16 == 5) p[i] = std::numeric_limits<T>::min();
      if (specials && i % 16 == 6) p[i] = std::numeric_limits<T>::max();
      if (specials && i % 16 == 7) p[i] = T(-1);
    } else {
      p[i] = static_cast<T>(lo + (hi - lo) * u);
      if (specials && i % 16 == 15) {
        const T sp[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0), -T(0), T(1e30), T(-1e30), T(1e-30), T(0.5),
                        T(-0.5), T(2.5), T(-2.5)};
        p[i] = sp[(i / 16) % (sizeof sp / sizeof sp[0])];
      }
    }
  }
  return a;
}

AnyArray data_any(DType d, std::vector<std::int64_t> shape, std::uint64_t seed, double lo = -4, double hi = 4,
                  bool specials = true) {
  return visit_dtype(d, [&](auto t) -> AnyArray {
    using T = decltype(t);
    return data<T>(shape, seed, lo, hi, specials);
  });
}

const DType kAll[] = {DType::bool_, DType::i8,  DType::i16, DType::i32, DType::i64, DType::u8,
                      DType::u16,   DType::u32, DType::u64, DType::f32, DType::f64};
const DType kNumeric[] = {DType::i8,  DType::i16, DType::i32, DType::i64, DType::u8,
                          DType::u16, DType::u32, DType::u64, DType::f32, DType::f64};
const DType kFloat[] = {DType::f32, DType::f64};
const DType kIntegerOrBool[] = {DType::bool_, DType::i8,  DType::i16, DType::i32, DType::i64,
                                DType::u8,    DType::u16, DType::u32, DType::u64};

std::string name_of(Prim p, DType d) { return std::string(prim_name(p)) + " " + std::string(dtype_name(d)); }

// One primitive on fresh inputs: compiled vs eager.
double unary_ulps(Prim p, DType d, Params params = NoParams{}, double lo = -4, double hi = 4) {
  Builder b;
  Atom x = b.in(d, {37, 5});
  b.out(b.eq(p, {x}, params));
  std::vector<AnyArray> args{data_any(d, {37, 5}, 1, lo, hi)};
  return max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]);
}

}  // namespace

// ---------------------------------------------------------------------------
// Elementwise primitives, every dtype they accept.

TEST_CASE("backend: exact unary primitives") {
  for (DType d : kNumeric) {
    for (Prim p : {Prim::neg, Prim::abs, Prim::sign}) {
      CAPTURE(name_of(p, d));
      CHECK(unary_ulps(p, d) == 0);
    }
  }
  for (DType d : kFloat) {
    for (Prim p : {Prim::floor, Prim::ceil, Prim::sqrt, Prim::rsqrt}) {
      CAPTURE(name_of(p, d));
      CHECK(unary_ulps(p, d) == 0);
    }
    CHECK(unary_ulps(Prim::round, d, RoundParams{0}) == 0);
    CHECK(unary_ulps(Prim::round, d, RoundParams{1}) == 0);
  }
  for (DType d : kIntegerOrBool) {
    CAPTURE(name_of(Prim::not_, d));
    CHECK(unary_ulps(Prim::not_, d) == 0);
  }
}

TEST_CASE("backend: transcendental unary primitives within the ulp bound") {
  struct Case {
    Prim p;
    double lo, hi;
  };
  const Case cases[] = {{Prim::exp, -30, 30}, {Prim::log, 0, 100},      {Prim::log1p, -1, 10},
                        {Prim::sin, -50, 50}, {Prim::cos, -50, 50},     {Prim::tan, -1.5, 1.5},
                        {Prim::tanh, -8, 8},  {Prim::logistic, -20, 20}};
  for (DType d : kFloat)
    for (const Case& c : cases) {
      CAPTURE(name_of(c.p, d));
      CHECK(unary_ulps(c.p, d, NoParams{}, c.lo, c.hi) <= kTranscendentalUlps);
    }
}

TEST_CASE("backend: binary primitives") {
  for (DType d : kNumeric) {
    for (Prim p : {Prim::add, Prim::sub, Prim::mul, Prim::max, Prim::min, Prim::div, Prim::rem, Prim::pow}) {
      CAPTURE(name_of(p, d));
      Builder b;
      Atom x = b.in(d, {9, 31}), y = b.in(d, {9, 31});
      b.out(b.eq(p, {x, y}));
      const bool is_int = is_integer(d);
      // Integer divisors and exponents avoid zero / negative powers of zero
      // (those raise errors, tested below); pow exponents stay small.
      AnyArray xa = data_any(d, {9, 31}, 2, p == Prim::pow && !is_int ? 0 : -50, 50, !(p == Prim::pow && !is_int));
      AnyArray ya = data_any(d, {9, 31}, 3, p == Prim::pow ? 0 : 1, p == Prim::pow ? 7 : 20, p != Prim::pow);
      if (is_int && (p == Prim::div || p == Prim::rem)) {
        // Keep the INT_MIN / -1 cases, but no zero divisors.
        visit_dtype(d, [&](auto t) {
          using T = decltype(t);
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            T* q = const_cast<T*>(static_cast<const T*>(ya.data()));
            for (std::int64_t i = 0; i < ya.size(); ++i) {
              if (q[i] == 0) q[i] = 3;
              if (i % 16 == 5) q[i] = -1;
            }
          }
        });
      }
      std::vector<AnyArray> args{xa, ya};
      const double bound = (p == Prim::pow && !is_int) ? kTranscendentalUlps : 0;
      CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= bound);
    }
  }
  for (DType d : kFloat) {
    Builder b;
    Atom x = b.in(d, {64}), y = b.in(d, {64});
    b.out(b.eq(Prim::atan2, {x, y}));
    std::vector<AnyArray> args{data_any(d, {64}, 4), data_any(d, {64}, 5)};
    CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= kTranscendentalUlps);
  }
  for (DType d : kIntegerOrBool)
    for (Prim p : {Prim::and_, Prim::or_}) {
      CAPTURE(name_of(p, d));
      Builder b;
      Atom x = b.in(d, {50}), y = b.in(d, {50});
      b.out(b.eq(p, {x, y}));
      std::vector<AnyArray> args{data_any(d, {50}, 6, -1000, 1000), data_any(d, {50}, 7, -1000, 1000)};
      CHECK(same(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]));
    }
}

TEST_CASE("backend: NaN-propagating max/min and signed zeros match eager exactly") {
  for (DType d : kFloat) {
    Builder b;
    Atom x = b.in(d, {6}), y = b.in(d, {6});
    b.out(b.eq(Prim::max, {x, y}));
    b.out(b.eq(Prim::min, {x, y}));
    const double nan = std::nan("");
    AnyArray xa = visit_dtype(d, [&](auto t) -> AnyArray {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) return Array<T>({6}, {T(nan), T(1), T(0.0), T(-0.0), T(2), T(nan)});
      else return {};
    });
    AnyArray ya = visit_dtype(d, [&](auto t) -> AnyArray {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) return Array<T>({6}, {T(1), T(nan), T(-0.0), T(0.0), T(2), T(nan)});
      else return {};
    });
    auto got = compile_and_run(b.j, {xa, ya});
    auto ref = eval_jaxpr(b.j, {}, {xa, ya});
    CHECK(same(got[0], ref[0]));
    CHECK(same(got[1], ref[1]));
  }
}

TEST_CASE("backend: comparisons, every dtype") {
  for (DType d : kAll)
    for (Prim p : {Prim::eq, Prim::ne, Prim::lt, Prim::le, Prim::gt, Prim::ge}) {
      CAPTURE(name_of(p, d));
      Builder b;
      Atom x = b.in(d, {200}), y = b.in(d, {200});
      b.out(b.eq(p, {x, y}));
      // Few distinct values, so equality happens.
      std::vector<AnyArray> args{data_any(d, {200}, 8, -2, 2), data_any(d, {200}, 9, -2, 2)};
      CHECK(same(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]));
    }
}

TEST_CASE("backend: rank-0 operands and literals broadcast in binary primitives") {
  Builder b;
  Atom x = b.in(DType::f64, {4, 3}), s = b.in(DType::f64, {});
  Atom y = b.eq(Prim::mul, {x, s});
  Atom z = b.eq(Prim::sub, {lit(10.0), y});
  b.out(b.eq(Prim::div, {z, lit(4.0)}));
  std::vector<AnyArray> args{data<double>({4, 3}, 10), Array<double>::scalar(1.5)};
  CHECK(same(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]));
}

TEST_CASE("backend: select_n with an array and with a scalar predicate") {
  for (DType d : kAll) {
    CAPTURE(dtype_name(d));
    Builder b;
    Atom p = b.in(DType::bool_, {40}), q = b.in(DType::bool_, {});
    Atom x = b.in(d, {40}), y = b.in(d, {40});
    b.out(b.eq(Prim::select_n, {p, x, y}));
    b.out(b.eq(Prim::select_n, {q, x, y}));
    for (bool qv : {false, true}) {
      std::vector<AnyArray> args{data<bool>({40}, 11), Array<bool>::scalar(qv), data_any(d, {40}, 12),
                                 data_any(d, {40}, 13)};
      auto got = compile_and_run(b.j, args);
      auto ref = eval_jaxpr(b.j, {}, args);
      CHECK(same(got[0], ref[0]));
      CHECK(same(got[1], ref[1]));
    }
  }
}

TEST_CASE("backend: convert_element_type between every pair of dtypes (saturating, NaN -> 0)") {
  for (DType from : kAll)
    for (DType to : kAll) {
      CAPTURE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      Builder b;
      Atom x = b.in(from, {160});
      b.out(b.eq(Prim::convert_element_type, {x}, ConvertParams{to, false}));
      // Values beyond the i32 and i64 ranges, fractions, and the specials.
      std::vector<AnyArray> args{data_any(from, {160}, 14, -1e20, 1e20)};
      std::vector<AnyArray> args2{data_any(from, {160}, 15, -3e9, 3e9)};
      std::vector<AnyArray> args3{data_any(from, {160}, 16, -3.5, 3.5)};
      for (auto* a : {&args, &args2, &args3}) CHECK(same(compile_and_run(b.j, *a)[0], eval_jaxpr(b.j, {}, *a)[0]));
    }
}

// ---------------------------------------------------------------------------
// Integer faults.

TEST_CASE("backend: integer division by zero gives XLA's results; INT_MIN / -1 does not trap") {
  for (DType d : {DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32, DType::u64}) {
    INFO(dtype_name(d));
    Builder b;
    Atom x = b.in(d, {4}), y = b.in(d, {4});
    b.out(b.eq(Prim::div, {x, y}));
    b.out(b.eq(Prim::rem, {x, y}));
    auto k = compile_kernel(b.j, false);
    AnyArray xs = visit_dtype(d, [&](auto t) -> AnyArray {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        return Array<T>({4}, {std::numeric_limits<T>::min(), T(7), T(-7), T(5)});
      else return {};
    });
    AnyArray ok = visit_dtype(d, [&](auto t) -> AnyArray {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return Array<T>({4}, {T(-1), T(-2), T(2), T(-1)});
      else return {};
    });
    AnyArray zero = visit_dtype(d, [&](auto t) -> AnyArray {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return Array<T>({4}, {T(1), T(0), T(2), T(3)});
      else return {};
    });
    auto got = run(*k.kernel, b.j, {}, {xs, ok});
    auto ref = eval_jaxpr(b.j, {}, {xs, ok});
    CHECK(same(got[0], ref[0]));
    CHECK(same(got[1], ref[1]));
    // x / 0 = -1 (all bits set), x % 0 = x, as eager (XLA's semantics).
    auto got0 = run(*k.kernel, b.j, {}, {xs, zero});
    auto ref0 = eval_jaxpr(b.j, {}, {xs, zero});
    CHECK(same(got0[0], ref0[0]));
    CHECK(same(got0[1], ref0[1]));
    visit_dtype(d, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        CHECK(got0[0].get<T>()(1) == static_cast<T>(~std::uint64_t{0}));
        CHECK(got0[1].get<T>()(1) == T(7));
      }
    });
  }
}

TEST_CASE("backend: integer pow with negative exponents, and zero to a negative power") {
  Builder b;
  Atom x = b.in(DType::i64, {8}), y = b.in(DType::i64, {8});
  b.out(b.eq(Prim::pow, {x, y}));
  auto k = compile_kernel(b.j, false);
  std::vector<AnyArray> args{Array<std::int64_t>({8}, {1, -1, -1, 2, -3, 3, 0, 7}),
                             Array<std::int64_t>({8}, {-5, -3, -4, -1, 3, 40, 0, 63})};
  CHECK(same(run(*k.kernel, b.j, {}, args)[0], eval_jaxpr(b.j, {}, args)[0]));
  std::vector<AnyArray> bad{Array<std::int64_t>({8}, {1, 1, 1, 1, 1, 1, 0, 1}),
                            Array<std::int64_t>({8}, {1, 1, 1, 1, 1, 1, -2, 1})};
  CHECK_THROWS_WITH_AS(run(*k.kernel, b.j, {}, bad), "pow: integer zero raised to a negative power", ArithmeticError);
}

// ---------------------------------------------------------------------------
// Index remaps, fused into their consumers.

TEST_CASE("backend: broadcast_in_dim, transpose, reshape, squeeze, slice fused into one nest") {
  for (DType d : kAll) {
    CAPTURE(dtype_name(d));
    Builder b;
    Atom x = b.in(d, {3, 1, 5}), y = b.in(d, {4});
    Atom xb = b.eq(Prim::broadcast_in_dim, {x}, BroadcastInDimParams{{4, 3, 6, 5}, {1, 2, 3}});  // (4,3,6,5)
    Atom yb = b.eq(Prim::broadcast_in_dim, {y}, BroadcastInDimParams{{4, 3, 6, 5}, {0}});
    Atom s = d == DType::bool_ ? b.eq(Prim::or_, {xb, yb}) : b.eq(Prim::max, {xb, yb});
    Atom t = b.eq(Prim::transpose, {s}, TransposeParams{{2, 0, 3, 1}});                // (6,4,5,3)
    Atom r = b.eq(Prim::reshape, {t}, ReshapeParams{{24, 15}});
    Atom sl = b.eq(Prim::slice, {r}, SliceParams{{1, 2}, {23, 15}, {3, 4}});            // (8,4)
    Atom sq = b.eq(Prim::squeeze, {x}, SqueezeParams{{1}});                            // (3,5)
    b.out(sl);
    b.out(sq);
    b.out(t);
    std::vector<AnyArray> args{data_any(d, {3, 1, 5}, 20), data_any(d, {4}, 21)};
    auto got = compile_and_run(b.j, args);
    auto ref = eval_jaxpr(b.j, {}, args);
    for (std::size_t i = 0; i < 3; ++i) CHECK(same(got[i], ref[i]));
  }
}

TEST_CASE("backend: iota of every numeric dtype, fused with arithmetic") {
  for (DType d : kNumeric) {
    CAPTURE(dtype_name(d));
    Builder b;
    Atom x = b.in(d, {3, 4});
    Atom i0 = b.eq(Prim::iota, {}, IotaParams{d, {3, 4}, 0});
    Atom i1 = b.eq(Prim::iota, {}, IotaParams{d, {3, 4}, 1});
    b.out(b.eq(Prim::add, {b.eq(Prim::mul, {i0, x}), i1}));
    std::vector<AnyArray> args{data_any(d, {3, 4}, 22, -3, 3, false)};
    CHECK(same(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]));
  }
}

TEST_CASE("backend: dynamic_slice clamps its start indices (i32 and i64 starts)") {
  Builder b;
  Atom x = b.in(DType::f32, {6, 7});
  Atom i = b.in(DType::i32, {}), j = b.in(DType::i64, {});
  Atom s = b.eq(Prim::dynamic_slice, {x, i, j}, DynamicSliceParams{{2, 3}});
  b.out(b.eq(Prim::mul, {s, lit(2.0f)}));
  auto k = compile_kernel(b.j, false);
  for (auto [iv, jv] : std::vector<std::pair<int, long>>{{0, 0}, {1, 2}, {4, 4}, {5, 9}, {-3, -1}, {100, 3}}) {
    CAPTURE(iv);
    CAPTURE(jv);
    std::vector<AnyArray> args{data<float>({6, 7}, 23), Array<std::int32_t>::scalar(iv),
                               Array<std::int64_t>::scalar(jv)};
    CHECK(same(run(*k.kernel, b.j, {}, args)[0], eval_jaxpr(b.j, {}, args)[0]));
  }
}

TEST_CASE("backend: dynamic_update_slice and concatenate") {
  Builder b;
  Atom x = b.in(DType::i64, {5, 6}), u = b.in(DType::i64, {2, 3}), i = b.in(DType::i32, {}), j = b.in(DType::i32, {});
  Atom xp = b.eq(Prim::add, {x, lit(std::int64_t{1})});
  b.out(b.eq(Prim::dynamic_update_slice, {xp, b.eq(Prim::neg, {u}), i, j}));
  Atom c0 = b.eq(Prim::concatenate, {x, xp, x}, ConcatenateParams{0});  // (15,6)
  Atom ut = b.eq(Prim::transpose, {u}, TransposeParams{{1, 0}});        // (3,2)
  Atom c1 = b.eq(Prim::concatenate, {b.eq(Prim::slice, {x}, SliceParams{{0, 0}, {3, 6}, {}}), ut},
                 ConcatenateParams{1});  // (3,8)
  b.out(c0);
  b.out(c1);
  auto k = compile_kernel(b.j, false);
  for (auto [iv, jv] : std::vector<std::pair<int, int>>{{0, 0}, {3, 3}, {4, 5}, {-1, 9}}) {
    std::vector<AnyArray> args{data<std::int64_t>({5, 6}, 24, -9, 9), data<std::int64_t>({2, 3}, 25, -9, 9),
                               Array<std::int32_t>::scalar(iv), Array<std::int32_t>::scalar(jv)};
    auto got = run(*k.kernel, b.j, {}, args);
    auto ref = eval_jaxpr(b.j, {}, args);
    for (std::size_t n = 0; n < 3; ++n) CHECK(same(got[n], ref[n]));
  }
}

// ---------------------------------------------------------------------------
// Reductions.

TEST_CASE("backend: reductions over every axis set, every dtype") {
  const std::vector<std::vector<std::int64_t>> axis_sets = {{}, {0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  for (DType d : kAll)
    for (Prim p : {Prim::reduce_sum, Prim::reduce_prod, Prim::reduce_max, Prim::reduce_min}) {
      if (d == DType::bool_ && (p == Prim::reduce_sum || p == Prim::reduce_prod)) continue;
      for (const auto& axes : axis_sets) {
        CAPTURE(name_of(p, d));
        CAPTURE(axes.size());
        Builder b;
        Atom x = b.in(d, {6, 5, 33});
        // Fused operand: reductions read their input expression in place.
        Atom y = d == DType::bool_ ? b.eq(Prim::not_, {x}) : b.eq(Prim::mul, {x, x});
        if (p == Prim::reduce_prod && is_float(d)) y = b.eq(Prim::mul, {x, d == DType::f32 ? lit(1.0f) : lit(1.0)});
        b.out(b.eq(p, {y}, ReduceParams{axes}));
        const bool prod = p == Prim::reduce_prod;
        std::vector<AnyArray> args{data_any(d, {6, 5, 33}, 30, prod ? 0.5 : -3, prod ? 1.5 : 3, false)};
        auto got = compile_and_run(b.j, args)[0];
        auto ref = eval_jaxpr(b.j, {}, args)[0];
        if (is_float(d) && (p == Prim::reduce_sum || prod)) {
          // Reassociated: |error| <= n * eps * sum|terms| (bounded crudely by the count).
          const double eps = d == DType::f32 ? 1.2e-7 : 2.3e-16;
          CHECK(within(got, ref, 6 * 5 * 33 * eps * 9 * 6 * 5 * 33 / 10));
          CHECK(max_ulps(got, ref) <= (d == DType::f32 ? 64 : 64));
        } else {
          CHECK(same(got, ref));
        }
      }
    }
}

TEST_CASE("backend: float reductions propagate NaN and handle empty operands") {
  Builder b;
  Atom x = b.in(DType::f64, {4, 100});
  b.out(b.eq(Prim::reduce_max, {x}, ReduceParams{{1}}));
  b.out(b.eq(Prim::reduce_min, {x}, ReduceParams{{0}}));
  b.out(b.eq(Prim::reduce_sum, {x}, ReduceParams{{1}}));
  Array<double> a = data<double>({4, 100}, 31, -1, 1, false);
  a.mutable_data()[150] = std::nan("");
  auto got = compile_and_run(b.j, {a});
  auto ref = eval_jaxpr(b.j, {}, {a});
  CHECK(same(got[0], ref[0]));
  CHECK(same(got[1], ref[1]));
  CHECK(std::isnan(got[2].get<double>()(1)));
  CHECK(within(got[2], ref[2], 1e-13));

  Builder e;
  Atom z = e.in(DType::f32, {3, 0});
  e.out(e.eq(Prim::reduce_sum, {z}, ReduceParams{{1}}));
  e.out(e.eq(Prim::reduce_max, {z}, ReduceParams{{1}}));
  auto ge = compile_and_run(e.j, {Array<float>({3, 0})});
  CHECK(same(ge[0], eval_jaxpr(e.j, {}, {Array<float>({3, 0})})[0]));
  CHECK(same(ge[1], eval_jaxpr(e.j, {}, {Array<float>({3, 0})})[1]));
}

TEST_CASE("backend: a large float sum stays within the reassociation bound") {
  Builder b;
  Atom x = b.in(DType::f32, {100000});
  b.out(b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {x, x})}, ReduceParams{{0}}));
  std::vector<AnyArray> args{data<float>({100000}, 32, -1, 1, false)};
  const float got = compile_and_run(b.j, args)[0].get<float>()(), ref = eval_jaxpr(b.j, {}, args)[0].get<float>()();
  double exact = 0;
  for (float v : args[0].get<float>()) exact += double(v) * double(v);
  // Vectorised partial sums are at least as accurate as the eager left-to-right sum here.
  CHECK(std::fabs(got - exact) <= std::fabs(ref - exact) * 1.5 + 1e-3);
  CHECK(std::fabs(got - exact) / exact < 1e-4);
}

// ---------------------------------------------------------------------------
// Row groups (fusion rule 4): a reduction over trailing axes, broadcast back
// and consumed row by row, becomes one loop over the rows.

namespace {

// Softmax over the last axis of x (R, C), as dyn traces it (keepdims through
// broadcast_in_dim to (R, 1), then to (R, C)).
struct SoftmaxVars {
  Atom m, e, s, out;
};
SoftmaxVars softmax_rows(Builder& b, Atom x, std::int64_t R, std::int64_t C) {
  auto back = [&](Atom r) {
    Atom r1 = b.eq(Prim::broadcast_in_dim, {r}, BroadcastInDimParams{{R, 1}, {0}});
    return b.eq(Prim::broadcast_in_dim, {r1}, BroadcastInDimParams{{R, C}, {0, 1}});
  };
  SoftmaxVars v;
  v.m = b.eq(Prim::reduce_max, {x}, ReduceParams{{1}});
  v.e = b.eq(Prim::exp, {b.eq(Prim::sub, {x, back(v.m)})});
  v.s = b.eq(Prim::reduce_sum, {v.e}, ReduceParams{{1}});
  v.out = b.eq(Prim::div, {v.e, back(v.s)});
  return v;
}

int eqn_of(const FusionPlan& plan, const Atom& a) { return plan.def[static_cast<std::size_t>(a.var)]; }
bool row_local(const FusionPlan& plan, const Atom& a) { return plan.row_local[static_cast<std::size_t>(a.var)]; }

}  // namespace

TEST_CASE("backend: row groups: softmax over rows is one loop with one-row temporaries") {
  for (DType d : kFloat) {
    CAPTURE(dtype_name(d));
    Builder b;
    Atom x = b.in(d, {64, 300});
    const SoftmaxVars v = softmax_rows(b, x, 64, 300);
    b.out(v.out);
    const FusionPlan plan = plan_fusion(b.j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{64});
    CHECK(plan.groups[0].members ==
          std::vector<int>{eqn_of(plan, v.m), eqn_of(plan, v.e), eqn_of(plan, v.s), eqn_of(plan, v.out)});
    CHECK(row_local(plan, v.m));
    CHECK(row_local(plan, v.e));
    CHECK(row_local(plan, v.s));
    CHECK_FALSE(row_local(plan, v.out));
    CHECK(plan_str(b.j, plan) ==
          "#1 = reduce_max: buffer (reduce_max), row group 0, one row\n"
          "#2 = broadcast_in_dim: fused\n"
          "#3 = broadcast_in_dim: fused\n"
          "#4 = sub: fused\n"
          "#5 = exp: buffer (expensive, several consumers), row group 0, one row\n"
          "#6 = reduce_sum: buffer (reduce_sum), row group 0, one row\n"
          "#7 = broadcast_in_dim: fused\n"
          "#8 = broadcast_in_dim: fused\n"
          "#9 = div: buffer (output), row group 0\n");
    // The one-row temporaries (300 elements, not 64 x 300) fit on the stack:
    // the kernel allocates nothing.
    const auto r = compile_kernel(b.j, true);
    CHECK(r.llvm_ir.rfind("; fusion plan (fusion.hpp):\n;   #1 = reduce_max: buffer (reduce_max), row group 0, one row\n", 0) == 0);
    CHECK(r.llvm_ir.find("aligned_alloc") == std::string::npos);
    CHECK(r.llvm_ir.find("dynstage_temp_alloc") == std::string::npos);
    if (host_target_id().find("libmvec") != std::string::npos) CHECK(r.llvm_ir.find("@_ZGV") != std::string::npos);

    // Numbers: exp through libmvec (<= 3 ulp), a row sum of 300 positive
    // terms in another order than eager's (each order within 299 eps of the
    // exact sum; measured: the two differ by up to ~8 ulp), one exactly
    // rounded division. Measured at most 9 (f32) and 11 (f64) ulp.
    std::vector<AnyArray> args{data_any(d, {64, 300}, 70, -30, 30, false)};
    const auto got = run(*r.kernel, b.j, {}, args)[0];
    const auto ref = eval_jaxpr(b.j, {}, args)[0];
    CHECK(max_ulps(got, ref) <= 24);
    visit_dtype(d, [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        const T* p = static_cast<const T*>(got.data());
        for (int i = 0; i < 64; ++i) {
          double sum = 0;
          for (int k = 0; k < 300; ++k) sum += static_cast<double>(p[i * 300 + k]);
          CHECK(std::fabs(sum - 1) < (d == DType::f32 ? 1e-5 : 1e-13));
        }
      }
    });
    // NaN, infinities, signed zeros and huge values in the rows behave as in eager.
    std::vector<AnyArray> special{data_any(d, {64, 300}, 71, -30, 30, true)};
    CHECK(max_ulps(run(*r.kernel, b.j, {}, special)[0], eval_jaxpr(b.j, {}, special)[0]) <= 24);
  }
}

TEST_CASE("backend: row groups: trailing reductions of rank-3 operands, several reductions, integers") {
  SUBCASE("layer norm over the last axis: rows (5, 12)") {
    Builder b;
    Atom x = b.in(DType::f64, {5, 12, 70});
    auto back = [&](Atom r) { return b.eq(Prim::broadcast_in_dim, {r}, BroadcastInDimParams{{5, 12, 70}, {0, 1}}); };
    Atom mean = b.eq(Prim::div, {b.eq(Prim::reduce_sum, {x}, ReduceParams{{2}}), lit(70.0)});
    Atom xc = b.eq(Prim::sub, {x, back(mean)});
    Atom var = b.eq(Prim::div, {b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {xc, xc})}, ReduceParams{{2}}), lit(70.0)});
    b.out(b.eq(Prim::div, {xc, back(b.eq(Prim::sqrt, {b.eq(Prim::add, {var, lit(1e-5)})}))}));
    const FusionPlan plan = plan_fusion(b.j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{5, 12});
    CHECK(plan.groups[0].members.size() == 3);  // two reduce_sums and the output
    std::vector<AnyArray> args{data<double>({5, 12, 70}, 72, -3, 3, false)};
    const auto got = compile_and_run(b.j, args)[0];
    const auto ref = eval_jaxpr(b.j, {}, args)[0];
    CHECK(within(got, ref, 1e-13));
  }
  SUBCASE("a reduction over the two trailing axes: rows (6,), 20 x 9 elements each") {
    Builder b;
    Atom x = b.in(DType::f32, {6, 20, 9});
    Atom s = b.eq(Prim::reduce_sum, {x}, ReduceParams{{1, 2}});
    b.out(b.eq(Prim::div, {x, b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{6, 20, 9}, {0}})}));
    const FusionPlan plan = plan_fusion(b.j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{6});
    CHECK(row_local(plan, s));
    std::vector<AnyArray> args{data<float>({6, 20, 9}, 73, 0.5, 2, false)};
    CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= 8);
  }
  SUBCASE("integers: exact; keepdims through reshape; the row sum is also an output") {
    for (DType d : {DType::i32, DType::i64}) {
      CAPTURE(dtype_name(d));
      Builder b;
      Atom x = b.in(d, {40, 50});
      Atom m = b.eq(Prim::reduce_max, {x}, ReduceParams{{1}});
      Atom m1 = b.eq(Prim::reshape, {m}, ReshapeParams{{40, 1}});
      Atom y = b.eq(Prim::sub, {x, b.eq(Prim::broadcast_in_dim, {m1}, BroadcastInDimParams{{40, 50}, {0, 1}})});
      Atom s = b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {y, y})}, ReduceParams{{1}});
      Atom s1 = b.eq(Prim::reshape, {s}, ReshapeParams{{40, 1}});
      b.out(b.eq(Prim::add, {y, b.eq(Prim::broadcast_in_dim, {s1}, BroadcastInDimParams{{40, 50}, {0, 1}})}));
      b.out(s);
      const FusionPlan plan = plan_fusion(b.j);
      REQUIRE(plan.groups.size() == 1);
      CHECK(plan.groups[0].members.size() == 3);
      CHECK(row_local(plan, m));
      CHECK_FALSE(row_local(plan, s));  // an output: the full array, written row by row
      std::vector<AnyArray> args{data_any(d, {40, 50}, 74, -1000, 1000, false)};
      const auto got = compile_and_run(b.j, args);
      const auto ref = eval_jaxpr(b.j, {}, args);
      CHECK(same(got[0], ref[0]));
      CHECK(same(got[1], ref[1]));
    }
  }
  SUBCASE("a unit row axis and a size-1 trailing axis") {
    Builder b;
    Atom x = b.in(DType::f64, {3, 1, 40, 1});
    Atom s = b.eq(Prim::reduce_sum, {x}, ReduceParams{{2, 3}});  // (3, 1)
    b.out(b.eq(Prim::mul, {x, b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{3, 1, 40, 1}, {0, 1}})}));
    const FusionPlan plan = plan_fusion(b.j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{3, 1});
    std::vector<AnyArray> args{data<double>({3, 1, 40, 1}, 75, -2, 2, false)};
    CHECK(within(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0], 1e-13));
  }
}

TEST_CASE("backend: row groups: non-trailing reductions and reads across rows are not grouped") {
  SUBCASE("a reduction over the leading axis") {
    Builder b;
    Atom x = b.in(DType::f64, {30, 40});
    Atom m = b.eq(Prim::reduce_max, {x}, ReduceParams{{0}});
    b.out(b.eq(Prim::sub, {x, b.eq(Prim::broadcast_in_dim, {m}, BroadcastInDimParams{{30, 40}, {1}})}));
    const FusionPlan plan = plan_fusion(b.j);
    CHECK(plan.groups.empty());
    std::vector<AnyArray> args{data<double>({30, 40}, 76)};
    CHECK(same(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]));
  }
  SUBCASE("row sums read by column (another row's value)") {
    Builder b;
    Atom x = b.in(DType::f64, {32, 32});
    Atom s = b.eq(Prim::reduce_sum, {x}, ReduceParams{{1}});
    b.out(b.eq(Prim::mul, {x, b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{32, 32}, {1}})}));
    const FusionPlan plan = plan_fusion(b.j);
    CHECK(plan.groups.empty());
    std::vector<AnyArray> args{data<double>({32, 32}, 77, -1, 1, false)};
    CHECK(within(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0], 1e-13));
  }
  SUBCASE("row sums read through a transpose, and through a slice that shifts rows") {
    Builder b;
    Atom x = b.in(DType::f64, {24, 24});
    Atom s = b.eq(Prim::reduce_sum, {x}, ReduceParams{{1}});
    Atom sb = b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{24, 24}, {0}});
    b.out(b.eq(Prim::add, {x, b.eq(Prim::transpose, {sb}, TransposeParams{{1, 0}})}));
    Builder c;
    Atom y = c.in(DType::f64, {25, 24});
    Atom t = c.eq(Prim::reduce_sum, {y}, ReduceParams{{1}});                      // (25,)
    Atom ts = c.eq(Prim::slice, {t}, SliceParams{{1}, {25}, {}});                  // rows 1..24
    Atom ys = c.eq(Prim::slice, {y}, SliceParams{{0, 0}, {24, 24}, {}});           // rows 0..23
    c.out(c.eq(Prim::sub, {ys, c.eq(Prim::broadcast_in_dim, {ts}, BroadcastInDimParams{{24, 24}, {0}})}));
    CHECK(plan_fusion(b.j).groups.empty());
    CHECK(plan_fusion(c.j).groups.empty());
    std::vector<AnyArray> args{data<double>({24, 24}, 78, -1, 1, false)};
    CHECK(within(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0], 1e-13));
    std::vector<AnyArray> args2{data<double>({25, 24}, 79, -1, 1, false)};
    CHECK(within(compile_and_run(c.j, args2)[0], eval_jaxpr(c.j, {}, args2)[0], 1e-13));
  }
  SUBCASE("a member read outside the group keeps its full buffer") {
    Builder b;
    Atom x = b.in(DType::f64, {40, 50});
    Atom s = b.eq(Prim::reduce_sum, {x}, ReduceParams{{1}});
    Atom y = b.eq(Prim::exp, {b.eq(Prim::sub, {x, b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{40, 50}, {0}})})});
    Atom w = b.eq(Prim::reduce_max, {y}, ReduceParams{{0}});  // over rows: not in the group
    b.out(b.eq(Prim::add, {y, b.eq(Prim::broadcast_in_dim, {w}, BroadcastInDimParams{{40, 50}, {1}})}));
    const FusionPlan plan = plan_fusion(b.j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].members == std::vector<int>{eqn_of(plan, s), eqn_of(plan, y)});
    CHECK(row_local(plan, s));
    CHECK(plan.materialised[static_cast<std::size_t>(y.var)]);
    CHECK_FALSE(row_local(plan, y));
    std::vector<AnyArray> args{data<double>({40, 50}, 80, -0.1, 0.1, false)};
    CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= 64);
  }
  SUBCASE("short rows (fewer than kMinRowElements) stay flat") {
    Builder b;
    Atom x = b.in(DType::f64, {500, 8});
    b.out(softmax_rows(b, x, 500, 8).out);
    CHECK(plan_fusion(b.j).groups.empty());
    std::vector<AnyArray> args{data<double>({500, 8}, 81, -5, 5, false)};
    CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= 8);
  }
}

TEST_CASE("backend: float sums of products use FMA; results are deterministic") {
  Builder b;
  Atom x = b.in(DType::f64, {100003}), y = b.in(DType::f64, {100003});
  b.out(b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {x, y})}, ReduceParams{{0}}));
  const auto r = compile_kernel(b.j, true);
  CHECK(r.llvm_ir.find("@llvm.fmuladd") != std::string::npos);
  CHECK(r.llvm_ir.find(" fmul ") == std::string::npos);  // every product is fused into its addition
  std::vector<AnyArray> args{data<double>({100003}, 82, -1, 1, false), data<double>({100003}, 83, -1, 1, false)};
  const double got = run(*r.kernel, b.j, {}, args)[0].get<double>()();
  const double ref = eval_jaxpr(b.j, {}, args)[0].get<double>()();
  for (int k = 0; k < 3; ++k) CHECK(run(*r.kernel, b.j, {}, args)[0].get<double>()() == got);  // bit-identical
  // Against the exact sum (long double accumulation of exact products is
  // close enough here): no worse than eager's left-to-right sum, within the
  // reassociation bound n * eps * sum |x_i y_i|.
  long double exact = 0, abs_sum = 0;
  const double *xp = static_cast<const double*>(args[0].data()), *yp = static_cast<const double*>(args[1].data());
  for (int i = 0; i < 100003; ++i) {
    exact += static_cast<long double>(xp[i]) * yp[i];
    abs_sum += std::fabs(static_cast<long double>(xp[i]) * yp[i]);
  }
  CHECK(std::fabs(static_cast<double>(got - exact)) <= std::fabs(static_cast<double>(ref - exact)) + 1e-12);
  CHECK(std::fabs(static_cast<double>(got - exact)) <= 100003 * 1.2e-16 * static_cast<double>(abs_sum));
}

// ---------------------------------------------------------------------------
// dot_general.

TEST_CASE("backend: dot_general shapes: matmul (blocked and i-k-j), matvec, batched, transposed") {
  struct Case {
    std::vector<std::int64_t> ls, rs;
    DotGeneralParams p;
  };
  const Case cases[] = {
      {{67, 45}, {45, 83}, {{1}, {0}, {}, {}}},            // blocked, ragged edges
      {{128, 130}, {130, 129}, {{1}, {0}, {}, {}}},        // several KC blocks
      {{5, 7}, {7, 3}, {{1}, {0}, {}, {}}},                // small: i-k-j
      {{40, 30}, {30}, {{1}, {0}, {}, {}}},                // matvec
      {{300}, {300}, {{0}, {0}, {}, {}}},                  // dot product
      {{3, 20, 9}, {3, 9, 11}, {{2}, {1}, {0}, {0}}},      // batched
      {{33, 40}, {50, 40}, {{1}, {1}, {}, {}}},            // A @ B.T
      {{9, 4, 6}, {6, 5, 9}, {{0, 2}, {2, 0}, {}, {}}},    // two contracting dims
      {{2, 3, 4}, {4, 3, 2}, {{1}, {1}, {0}, {2}}},        // batch dims not leading
      {{3}, {4}, {{}, {}, {}, {}}},                        // outer product (K = 1)
      {{}, {}, {{}, {}, {}, {}}},                          // scalars
      {{0, 5}, {5, 3}, {{1}, {0}, {}, {}}},                // empty M
      {{4, 0}, {0, 3}, {{1}, {0}, {}, {}}},                // empty K: zeros
  };
  for (DType d : kNumeric)
    for (const Case& c : cases) {
      CAPTURE(dtype_name(d));
      CAPTURE(c.ls.size());
      Builder b;
      Atom x = b.in(d, c.ls), y = b.in(d, c.rs);
      b.out(b.eq(Prim::dot_general, {x, y}, c.p));
      std::vector<AnyArray> args{data_any(d, c.ls, 40, -3, 3, false), data_any(d, c.rs, 41, -3, 3, false)};
      auto got = compile_and_run(b.j, args)[0];
      auto ref = eval_jaxpr(b.j, {}, args)[0];
      if (is_float(d)) {
        // FMA rounding (and reassociation for N == 1): K terms of magnitude <= 9.
        std::int64_t K = 1;
        for (auto a : c.p.lhs_contracting) K *= c.ls[static_cast<std::size_t>(a)];
        const double eps = d == DType::f32 ? 1.2e-7 : 2.3e-16;
        CHECK(within(got, ref, 2 * static_cast<double>(K) * 9 * eps * static_cast<double>(K)));
      } else {
        CHECK(same(got, ref));
      }
    }
}

TEST_CASE("backend: dot_general with fused operands and a fused consumer") {
  Builder b;
  Atom x = b.in(DType::f64, {64, 48}), y = b.in(DType::f64, {64, 48});
  Atom xs = b.eq(Prim::sin, {x});
  Atom yt = b.eq(Prim::transpose, {b.eq(Prim::add, {y, lit(1.0)})}, TransposeParams{{1, 0}});  // (48,64)
  Atom m = b.eq(Prim::dot_general, {xs, yt}, DotGeneralParams{{1}, {0}, {}, {}});          // (64,64)
  b.out(b.eq(Prim::tanh, {m}));
  std::vector<AnyArray> args{data<double>({64, 48}, 42, -1, 1, false), data<double>({64, 48}, 43, -1, 1, false)};
  CHECK(within(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0], 1e-13));
}

// ---------------------------------------------------------------------------
// Kernel interface: constants, results that are inputs / literals / repeated,
// rank 0, temporaries on the heap.

TEST_CASE("backend: constvars come first; outputs may be inputs, literals or repeated") {
  Builder b;
  Atom c = b.cst(DType::f64, {3});
  Atom x = b.in(DType::f64, {3});
  Atom y = b.eq(Prim::add, {x, c});
  b.out(y);
  b.out(x);
  b.out(lit(std::int32_t{7}));
  b.out(y);
  b.out(c);
  auto r = compile_kernel(b.j, false);
  Array<double> cv({3}, {10, 20, 30}), xv({3}, {1, 2, 3});
  auto got = run(*r.kernel, b.j, {cv}, {xv});
  auto ref = eval_jaxpr(b.j, {cv}, {xv});
  REQUIRE(got.size() == 5);
  for (std::size_t i = 0; i < 5; ++i) CHECK(same(got[i], ref[i]));
  CHECK(got[2].get<std::int32_t>()() == 7);
}

TEST_CASE("backend: an all-scalar kernel") {
  Builder b;
  Atom x = b.in(DType::f32, {}), y = b.in(DType::i32, {});
  Atom z = b.eq(Prim::add, {b.eq(Prim::convert_element_type, {y}, ConvertParams{DType::f32, false}), x});
  b.out(b.eq(Prim::sqrt, {z}));
  std::vector<AnyArray> args{Array<float>::scalar(2.25f), Array<std::int32_t>::scalar(4)};
  CHECK(compile_and_run(b.j, args)[0].get<float>()() == 2.5f);
}

TEST_CASE("backend: fusion plan materialises expensive shared values and nothing else") {
  Builder b;
  Atom x = b.in(DType::f64, {500}), y = b.in(DType::f64, {500});
  Atom cheap = b.eq(Prim::add, {x, y});                    // used twice: recomputed
  Atom s = b.eq(Prim::exp, {x});                           // used by two nests: materialised
  Atom sb = b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{7, 500}, {1}});  // expanding
  Atom t = b.eq(Prim::mul, {b.eq(Prim::sin, {y}), cheap}); // single use: fused
  b.out(b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {s, cheap})}, ReduceParams{{0}}));
  b.out(b.eq(Prim::add, {sb, sb}));
  b.out(b.eq(Prim::add, {t, cheap}));
  const FusionPlan plan = plan_fusion(b.j);
  CHECK_FALSE(plan.materialised[static_cast<std::size_t>(cheap.var)]);
  CHECK(plan.materialised[static_cast<std::size_t>(s.var)]);
  CHECK(plan.why[static_cast<std::size_t>(s.var)].rfind("expensive", 0) == 0);
  CHECK_FALSE(plan.materialised[static_cast<std::size_t>(sb.var)]);
  CHECK_FALSE(plan.materialised[static_cast<std::size_t>(t.var)]);
  std::vector<AnyArray> args{data<double>({500}, 50, -1, 1, false), data<double>({500}, 51, -1, 1, false)};
  auto got = compile_and_run(b.j, args);
  auto ref = eval_jaxpr(b.j, {}, args);
  CHECK(within(got[0], ref[0], 1e-12));
  CHECK(max_ulps(got[1], ref[1]) <= kTranscendentalUlps);
  CHECK(max_ulps(got[2], ref[2]) <= 2 * kTranscendentalUlps);
}

TEST_CASE("backend: a deep chain with shared subexpressions compiles (memoised emission)") {
  Builder b;
  Atom x = b.in(DType::f64, {16});
  Atom v = x;
  for (int i = 0; i < 40; ++i) v = b.eq(Prim::mul, {b.eq(Prim::add, {v, v}), lit(0.5)});  // 2^40 paths if not memoised
  b.out(b.eq(Prim::add, {v, lit(1.0)}));  // v stays fused, in both nests
  b.out(b.eq(Prim::reduce_max, {b.eq(Prim::transpose, {v}, TransposeParams{{0}})}, ReduceParams{{0}}));
  std::vector<AnyArray> args{data<double>({16}, 52)};
  auto got = compile_and_run(b.j, args);
  auto ref = eval_jaxpr(b.j, {}, args);
  CHECK(same(got[0], ref[0]));
  CHECK(same(got[1], ref[1]));
}

TEST_CASE("backend: heap temporaries (expensive values broadcast into a large nest)") {
  Builder b;
  Atom x = b.in(DType::f32, {3000}), y = b.in(DType::f32, {4, 3000});
  Atom s = b.eq(Prim::log1p, {b.eq(Prim::abs, {x})});  // 12 KB: a heap temporary
  Atom sb = b.eq(Prim::broadcast_in_dim, {s}, BroadcastInDimParams{{4, 3000}, {1}});
  b.out(b.eq(Prim::mul, {sb, y}));
  const FusionPlan plan = plan_fusion(b.j);
  CHECK(plan.materialised[static_cast<std::size_t>(s.var)]);
  std::vector<AnyArray> args{data<float>({3000}, 53), data<float>({4, 3000}, 54)};
  CHECK(max_ulps(compile_and_run(b.j, args)[0], eval_jaxpr(b.j, {}, args)[0]) <= kTranscendentalUlps + 1);
}

// ---------------------------------------------------------------------------
// Host specialisation, IR, lifetime, threads.

TEST_CASE("backend: the optimised IR is vectorised and calls libmvec for sin") {
  Builder b;
  Atom x = b.in(DType::f64, {1000}), y = b.in(DType::f64, {1000});
  b.out(b.eq(Prim::add, {b.eq(Prim::mul, {b.eq(Prim::sin, {x}), lit(2.0)}), b.eq(Prim::mul, {x, y})}));
  auto r = compile_kernel(b.j, true);
  CHECK(r.llvm_ir.find("define") != std::string::npos);
  CHECK(r.llvm_ir.find("x double>") != std::string::npos);  // vector code
  const bool libmvec = host_target_id().find("libmvec") != std::string::npos;
  if (libmvec) CHECK(r.llvm_ir.find("@_ZGV") != std::string::npos);
  if (host_target_id().find("+avx512f") != std::string::npos && libmvec)
    CHECK(r.llvm_ir.find("_ZGVeN8v_sin") != std::string::npos);
  CHECK(r.seconds > 0);
  CHECK(compile_kernel(b.j, false).llvm_ir.empty());
}

TEST_CASE("backend: a dimension must be an integer scalar variable") {
  Jaxpr j;
  const int n = j.new_var(ty(DType::f64, {}));
  Type t{DType::f64, {JDim::of_var(n)}, false};
  const int x = j.new_var(t);
  j.invars = {n, x};
  j.outvars = {Atom::of_var(x)};
  CHECK_THROWS_AS(compile_kernel(j, false), TypeError);
}

TEST_CASE("backend: kernels free their code; compiles run concurrently") {
  for (int i = 0; i < 20; ++i) {
    Builder b;
    Atom x = b.in(DType::i32, {8});
    b.out(b.eq(Prim::add, {x, lit(std::int32_t{i})}));
    auto r = compile_kernel(b.j, false);
    CHECK(run(*r.kernel, b.j, {}, {data<std::int32_t>({8}, 60, 0, 10, false)})[0].get<std::int32_t>()(0) >= i);
  }  // each kernel's ResourceTracker is removed here
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        Builder b;
        Atom x = b.in(DType::f64, {100 + t}), y = b.in(DType::f64, {100 + t});
        b.out(b.eq(Prim::reduce_sum, {b.eq(Prim::mul, {b.eq(Prim::exp, {x}), y})}, ReduceParams{{0}}));
        b.out(b.eq(Prim::dot_general, {x, y}, DotGeneralParams{{0}, {0}, {}, {}}));
        auto r = compile_kernel(b.j, false);
        std::vector<AnyArray> args{data<double>({100 + t}, 61, -1, 1, false), data<double>({100 + t}, 62, -1, 1, false)};
        auto got = run(*r.kernel, b.j, {}, args);
        auto ref = eval_jaxpr(b.j, {}, args);
        ok[static_cast<std::size_t>(t)] += within(got[0], ref[0], 1e-12) && within(got[1], ref[1], 1e-12);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) CHECK(ok[static_cast<std::size_t>(t)] == 3);
}

// ---------------------------------------------------------------------------
// Runtime dimensions: jaxprs traced with symbolic (polymorphic_shapes) or
// dynamic (Tracer<int64_t> sizes) dimensions, compiled ONCE, run at several
// sizes (0 and 1 included) and compared with eval_jaxpr at the same inputs.

namespace {

// Every input of cj (implicit dimension arguments first) for explicit args.
std::vector<AnyArray> all_inputs(const ClosedJaxpr& cj, const std::vector<AnyArray>& explicit_args) {
  if (cj.jaxpr->in_explicit.empty()) return explicit_args;  // no implicit arguments
  return expand_explicit_args(*cj.jaxpr, explicit_args);
}

// Runs the kernel with outputs shaped as eval_jaxpr's results `ref`.
std::vector<AnyArray> run_like(const Kernel& k, const ClosedJaxpr& cj, const std::vector<AnyArray>& inputs,
                               const std::vector<AnyArray>& ref) {
  std::vector<const void*> in;
  for (auto& a : cj.consts) in.push_back(a.data());
  for (auto& a : inputs) in.push_back(a.data());
  std::vector<AnyArray> outs;
  std::vector<void*> res;
  for (auto& r : ref) {
    outs.emplace_back(Storage::make(r.dtype(), r.shape(), false));
    res.push_back(outs.back().storage().data);
  }
  run_kernel(k, in.data(), res.data());
  return outs;
}

// Equal shapes and dtypes; integers and bools exact, floats within a
// relative tolerance (reductions and FMA change the rounding).
bool near(const AnyArray& a, const AnyArray& b, double rel = 1e-12) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (!is_inexact(a.dtype())) return same(a, b);
  if (a.dtype() == DType::f32 || a.dtype() == DType::c64) rel = std::max(rel, 1e-5);
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(a.data());
    const T* y = static_cast<const T*>(b.data());
    for (std::int64_t i = 0; i < a.size(); ++i)
      for (int part = 0; part < 2; ++part) {
        const double u = part_of(x[i], part), v = part_of(y[i], part);
        if ((std::isnan(u) && std::isnan(v)) || u == v) continue;
        if (!(std::fabs(u - v) <= rel * (1 + std::fabs(v)))) return false;
      }
    return true;
  });
}

// Compile cj once; for each set of explicit arguments, compare every result
// (implicit ones included) with eval_jaxpr. Returns the number of runs.
int check_sizes(const ClosedJaxpr& cj, const std::vector<std::vector<AnyArray>>& arg_sets, double rel = 1e-12) {
  const auto r = compile_kernel(*cj.jaxpr, false);
  int runs = 0;
  for (const auto& args : arg_sets) {
    const auto inputs = all_inputs(cj, args);
    std::string sizes;
    for (const auto& a : inputs)
      if (a.rank() == 0 && a.dtype() == DType::i64) sizes += std::to_string(*static_cast<const std::int64_t*>(a.data())) + " ";
    CAPTURE(sizes);
    const auto ref = eval_jaxpr(*cj.jaxpr, cj.consts, inputs);
    const auto got = run_like(*r.kernel, cj, inputs, ref);
    REQUIRE(got.size() == ref.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      CHECK(near(got[k], ref[k], rel));
    }
    ++runs;
  }
  return runs;
}

template <class T>
AnyArray arr(std::vector<std::int64_t> shape, std::uint64_t seed, double lo = -3, double hi = 3) {
  return data<T>(std::move(shape), seed, lo, hi, false);
}

AnyArray i64s(std::int64_t v) { return Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{v}); }

}  // namespace

TEST_CASE("backend: runtime dims: fused elementwise, broadcasting, converts and select_n") {
  auto f = [](auto x, auto y, auto v) {
    auto e = dyn::sin(x) * 2.0 + x * y;
    auto w = dyn::where(x > y, e, dyn::astype<double>(dyn::astype<std::int32_t>(y * 3.0)));
    return std::make_tuple(e, w + v, dyn::astype<float>(w), dyn::abs(x - v) < 1.0);
  };
  auto cj = make_jaxpr(f, polymorphic_shapes{"b, c", "b, c", "c"})(Array<double>({2, 3}), Array<double>({2, 3}),
                                                                   Array<double>({3}));
  std::vector<std::vector<AnyArray>> sets;
  for (auto [b, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 7}, {5, 3}, {33, 17}, {3, 100}, {0, 3}, {4, 0}})
    sets.push_back({arr<double>({b, c}, 1), arr<double>({b, c}, 2), arr<double>({c}, 3)});
  CHECK(check_sizes(cj, sets, 1e-15) == 7);

  // Integer arithmetic (a zero divisor gives XLA's results), weak scalars.
  auto g = [](auto x, auto y) { return std::make_tuple(x / y + x % y, dyn::maximum(x, y) * 3); };
  auto cg = make_jaxpr(g, polymorphic_shapes{"n", "n"})(Array<std::int32_t>({4}), Array<std::int32_t>({4}));
  std::vector<std::vector<AnyArray>> isets;
  for (std::int64_t n : {0, 1, 2, 31, 1000}) isets.push_back({arr<std::int32_t>({n}, 4, -50, 50), arr<std::int32_t>({n}, 5, 1, 9)});
  CHECK(check_sizes(cg, isets) == 5);
  const auto k = compile_kernel(*cg.jaxpr, false);
  std::vector<AnyArray> zero_div{Array<std::int32_t>({3}, {1, 2, 3}), Array<std::int32_t>({3}, {1, 0, 1})};
  const auto in = all_inputs(cg, zero_div);
  const auto ref = eval_jaxpr(*cg.jaxpr, {}, {in[0], in[1], in[2]});
  const auto got = run_like(*k.kernel, cg, in, ref);
  REQUIRE(got.size() == ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(same(got[i], ref[i]));
  CHECK(ref.at(0).get<std::int32_t>()(1) == 1);  // 2 / 0 + 2 % 0 = -1 + 2
}

TEST_CASE("backend: runtime dims: the fused elementwise kernel is one vectorised loop with a runtime trip count") {
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  auto cj = make_jaxpr(f, polymorphic_shapes{"n", "n"})(Array<double>({8}), Array<double>({8}));
  const auto r = compile_kernel(*cj.jaxpr, true);
  CHECK(r.llvm_ir.find("x double>") != std::string::npos);
  if (host_target_id().find("libmvec") != std::string::npos) CHECK(r.llvm_ir.find("@_ZGV") != std::string::npos);
  CHECK(r.llvm_ir.find("aligned_alloc") == std::string::npos);
  CHECK(r.llvm_ir.find("dynstage_temp_alloc") == std::string::npos);
  std::vector<std::vector<AnyArray>> sets;
  for (std::int64_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 100003}) sets.push_back({arr<double>({n}, 6), arr<double>({n}, 7)});
  // sin through libmvec in the vector body, libm in the remainder.
  CHECK(check_sizes(cj, sets, 1e-15) == 10);
}

TEST_CASE("backend: runtime dims: reductions and row groups with a runtime row length") {
  auto f = [](auto x) {
    return std::make_tuple(dyn::sum(x, {0}), dyn::sum(x, {1}), dyn::max(x), dyn::min(x, {0}), dyn::prod(x * 0.1 + 1.0, {1}),
                           dyn::mean(x, {1}), dyn::sum(dyn::astype<std::int32_t>(x * 10.0)));
  };
  auto cj = make_jaxpr(f, polymorphic_shapes{"b, c"})(Array<double>({2, 3}));
  std::vector<std::vector<AnyArray>> sets;
  for (auto [b, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 40}, {40, 1}, {7, 33}, {64, 300}, {3, 9000}, {0, 5}, {5, 0}})
    sets.push_back({arr<double>({b, c}, 8)});
  CHECK(check_sizes(cj, sets, 1e-12) == 8);

  auto softmax = [](auto x) {
    auto e = dyn::exp(x - dyn::expand_dims(dyn::max(x, {1}), 1));
    return e / dyn::expand_dims(dyn::sum(e, {1}), 1);
  };
  SUBCASE("runtime row length: one group, the one-row buffer on the heap") {
    auto cs = make_jaxpr(softmax, polymorphic_shapes{"b, c"})(Array<double>({2, 3}));
    const Jaxpr j = canonicalize_dots(*cs.jaxpr);
    const FusionPlan plan = plan_fusion(j);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{kDynamicDim});
    CHECK(plan.groups[0].members.size() == 4);
    const auto r = compile_kernel(*cs.jaxpr, true);
    CHECK(r.llvm_ir.find("dynstage_temp_alloc") != std::string::npos);  // a heap temporary: the pool (llvm/session.hpp)
    std::vector<std::vector<AnyArray>> ss;
    for (auto [b, c] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {64, 300}, {5, 5000}, {0, 4}, {3, 0}})
      ss.push_back({arr<double>({b, c}, 9, -20, 20)});
    CHECK(check_sizes(cs, ss, 1e-13) == 6);
  }
  SUBCASE("static row length, runtime number of rows: the one-row buffer stays on the stack") {
    auto cs = make_jaxpr(softmax, polymorphic_shapes{"b, 300"})(Array<double>({2, 300}));
    const FusionPlan plan = plan_fusion(*cs.jaxpr);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].rows == std::vector<std::int64_t>{kDynamicDim});
    const auto r = compile_kernel(*cs.jaxpr, true);
    CHECK(r.llvm_ir.find("aligned_alloc") == std::string::npos);
    CHECK(r.llvm_ir.find("dynstage_temp_alloc") == std::string::npos);
    std::vector<std::vector<AnyArray>> ss;
    for (std::int64_t b : {1, 2, 64}) ss.push_back({arr<double>({b, 300}, 10, -20, 20)});
    CHECK(check_sizes(cs, ss, 1e-13) == 3);
  }
  SUBCASE("rank 3: layer norm over runtime rows (a, b), middle and outer reduced axes") {
    auto g = [](auto x) {
      auto mu = dyn::mean(x, {2});
      auto xc = x - dyn::expand_dims(mu, 2);
      auto var = dyn::mean(xc * xc, {2});
      return std::make_tuple(xc / dyn::expand_dims(dyn::sqrt(var + 1e-5), 2), dyn::sum(x, {1}), dyn::max(x, {0, 2}));
    };
    auto cs = make_jaxpr(g, polymorphic_shapes{"a, b, c"})(Array<double>({2, 3, 4}));
    CHECK(plan_fusion(*cs.jaxpr).groups.size() == 1);
    std::vector<std::vector<AnyArray>> ss;
    for (auto [a, b, c] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1}, {2, 3, 70}, {5, 1, 17},
                           {3, 4, 0}, {0, 2, 3}})
      ss.push_back({arr<double>({a, b, c}, 26)});
    CHECK(check_sizes(cs, ss, 1e-12) == 5);
  }
  SUBCASE("short static rows stay flat whatever the number of rows") {
    auto cs = make_jaxpr(softmax, polymorphic_shapes{"b, 8"})(Array<double>({2, 8}));
    CHECK(plan_fusion(*cs.jaxpr).groups.empty());
  }
}

TEST_CASE("backend: runtime dims: dot_general with runtime M, N, K (matvec, i-k-j and the packed kernel)") {
  auto mm = [](auto a, auto b) { return dyn::matmul(a, b); };
  auto cj = make_jaxpr(mm, polymorphic_shapes{"m, k", "k, n"})(Array<double>({2, 3}), Array<double>({3, 4}));
  std::vector<std::vector<AnyArray>> sets;
  for (auto [m, k, n] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1}, {5, 7, 1}, {1, 7, 5}, {3, 0, 4},
                         {0, 3, 4}, {40, 50, 60}, {129, 130, 131}, {4, 2048, 8}, {7, 33, 9}})
    sets.push_back({arr<double>({m, k}, 11), arr<double>({k, n}, 12)});
  CHECK(check_sizes(cj, sets, 1e-12) == 9);
  // f32 and i32, and a batched product with a runtime batch.
  auto cf = make_jaxpr(mm, polymorphic_shapes{"m, k", "k, n"})(Array<float>({2, 3}), Array<float>({3, 4}));
  std::vector<std::vector<AnyArray>> fsets;
  for (auto [m, k, n] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 1}, {64, 64, 64}, {33, 300, 17}})
    fsets.push_back({arr<float>({m, k}, 13), arr<float>({k, n}, 14)});
  CHECK(check_sizes(cf, fsets, 1e-5) == 3);
  auto ci = make_jaxpr(mm, polymorphic_shapes{"m, k", "k, n"})(Array<std::int32_t>({2, 3}), Array<std::int32_t>({3, 4}));
  CHECK(check_sizes(ci, {{arr<std::int32_t>({9, 5}, 15, -9, 9), arr<std::int32_t>({5, 3}, 16, -9, 9)},
                         {arr<std::int32_t>({40, 40}, 15, -9, 9), arr<std::int32_t>({40, 40}, 16, -9, 9)}}) == 2);
  auto cb = make_jaxpr(mm, polymorphic_shapes{"b, m, 8", "b, 8, n"})(Array<double>({2, 3, 8}), Array<double>({2, 8, 4}));
  CHECK(check_sizes(cb, {{arr<double>({1, 1, 8}, 17), arr<double>({1, 8, 1}, 18)},
                         {arr<double>({3, 40, 8}, 17), arr<double>({3, 8, 120}, 18)},
                         {arr<double>({0, 4, 8}, 17), arr<double>({0, 8, 4}, 18)}}) == 3);
  // Contracting over two axes, one of them runtime: K = 4*k becomes an i64[] mul.
  auto c2 = [](auto a, auto b) { return dyn::matmul(dyn::reshape(a, {a.shape(0), -1}), dyn::reshape(b, {-1, b.shape(2)})); };
  auto cc = make_jaxpr(c2, polymorphic_shapes{"m, k, 4", "k, 4, n"})(Array<double>({2, 3, 4}), Array<double>({3, 4, 5}));
  CHECK(check_sizes(cc, {{arr<double>({6, 10, 4}, 19), arr<double>({10, 4, 70}, 20)},
                         {arr<double>({1, 1, 4}, 19), arr<double>({1, 4, 1}, 20)}}) == 2);
}

TEST_CASE("backend: runtime dims: transpose, reshape, slices, concatenate, iota, dynamic_(update_)slice") {
  auto f = [](auto x, auto y) {
    auto t = dyn::transpose(x, {1, 0});                                         // (4, b)
    auto r = dyn::reshape(x, {-1});                                             // (4*b,)
    auto s = dyn::slice_in_dim(r, 1, r.shape(0) - 1);                           // runtime limit
    auto s2 = dyn::slice_in_dim(y, y.shape(0) - 2, y.shape(0));                 // runtime start and limit
    auto c = dyn::concatenate({y, y * 2.0}, 0);                                 // (2*b,)
    auto io = dyn::astype<double>(dyn::arange<std::int32_t>(c.shape(0))) + c;   // iota with a runtime size
    auto ds = dyn::dynamic_slice(x, {dyn::dim_value(x.shape(0)) - 2, std::int64_t{1}}, {2, 2});
    auto u = dyn::dynamic_update_slice(x, dyn::zeros<double>({1, 4}) + 7.0, {std::int64_t{1}, std::int64_t{0}});
    auto bt = dyn::broadcast_to(dyn::expand_dims(y, 0), {3, y.shape(0)});      // (3, b)
    return std::make_tuple(t, s, s2, io, ds, u, dyn::squeeze(dyn::expand_dims(y, 1), {1}) + bt);
  };
  auto cj = make_jaxpr(f, polymorphic_shapes{"b, 4", "b"}, constraints{"b >= 2"})(Array<double>({3, 4}), Array<double>({3}));
  std::vector<std::vector<AnyArray>> sets;
  for (std::int64_t b : {2, 3, 17, 100}) sets.push_back({arr<double>({b, 4}, 21), arr<double>({b}, 22)});
  CHECK(check_sizes(cj, sets, 0) == 4);

  // JAX's shape-polymorphism doc: (a, 2*b) concatenation and the 4*b flattening, with the
  // implicit results (the materialised sizes) written by the kernel.
  auto cat = make_jaxpr([](auto x) { return dyn::concatenate({x, x}, 1); }, polymorphic_shapes{"a, b"})(
      Array<std::int32_t>({3, 4}));
  CHECK(check_sizes(cat, {{arr<std::int32_t>({3, 4}, 23, -9, 9)}, {arr<std::int32_t>({1, 1}, 24, -9, 9)},
                          {arr<std::int32_t>({0, 5}, 24, -9, 9)}, {arr<std::int32_t>({6, 0}, 24, -9, 9)}}) == 4);
  auto flat = make_jaxpr([](auto x) { return dyn::reshape(x, {x.shape(0) * x.shape(1)}); }, polymorphic_shapes{"b, 4"})(
      Array<std::int32_t>({3, 4}));
  CHECK(check_sizes(flat, {{arr<std::int32_t>({3, 4}, 25, -9, 9)}, {arr<std::int32_t>({0, 4}, 25, -9, 9)}}) == 2);
}

TEST_CASE("backend: runtime dims: Catalyst dynamic sizes computed in the kernel (kDynamicDim parameters)") {
  auto f = [](Tracer<std::int64_t> n) {
    auto o = dyn::ones<double>({n + 1});                                  // broadcast_in_dim, shape=(None,)
    auto a = dyn::arange<std::int32_t>(n * 2);                            // iota, shape=(None,)
    auto fl = dyn::full<double>({n, 3}, 0.5);
    auto m = dyn::reshape(fl, {fl.shape(0) * 3});                         // reshape, new_sizes=(None,)
    return std::make_tuple(o, a, m + dyn::astype<double>(dyn::arange<std::int32_t>(3 * n)), dyn::sum(o));
  };
  auto cj = make_jaxpr(f)(std::int64_t{3});
  const FusionPlan plan = plan_fusion(*cj.jaxpr);
  CHECK(!plan.prologue.empty());  // n + 1, 2 * n, 3 * n at entry
  std::vector<std::vector<AnyArray>> sets;
  for (std::int64_t n : {0, 1, 4, 1000}) sets.push_back({i64s(n)});
  CHECK(check_sizes(cj, sets, 0) == 4);
}

TEST_CASE("backend: runtime dims: a size computed from array data; runtime-sized temporaries are freed") {
  // e has a data-dependent size and is read twice (expensive): a heap
  // temporary of runtime size.
  auto f = [](auto x) {
    auto n = dyn::astype<std::int64_t>(dyn::sum(x));
    auto e = dyn::exp(dyn::astype<double>(dyn::arange<std::int32_t>(n)) * 0.001);
    return dyn::sum(e) + dyn::max(e);
  };
  auto cj = make_jaxpr(f)(Array<std::int32_t>({3}, {1, 2, 3}));
  const auto r = compile_kernel(*cj.jaxpr, true);
  CHECK(r.llvm_ir.find("dynstage_temp_alloc") != std::string::npos);  // a heap temporary: the pool (llvm/session.hpp)
  CHECK(check_sizes(cj, {{Array<std::int32_t>({3}, {1, 2, 3})}, {Array<std::int32_t>({3}, {0, 0, 0})},
                         {Array<std::int32_t>({3}, {5000, 7, 1})}}, 1e-13) == 3);
}

TEST_CASE("backend: runtime dims: allocation failure frees the runtime-sized temporaries already allocated") {
  // Two runtime-sized temporaries alive at once; the second allocation fails.
  auto f = [](Tracer<std::int64_t> n, Tracer<std::int64_t> m) {
    auto e1 = dyn::exp(dyn::astype<double>(dyn::arange<std::int64_t>(n)) * 0.001);
    auto e2 = dyn::exp(dyn::astype<double>(dyn::arange<std::int64_t>(m)) * 0.001);
    return dyn::sum(e1) + dyn::sum(e2) + dyn::max(e1) + dyn::max(e2);
  };
  auto cj = make_jaxpr(f)(std::int64_t{3}, std::int64_t{3});
  const auto r = compile_kernel(*cj.jaxpr, false);
  auto once = [&](std::int64_t n, std::int64_t m) {
    const std::vector<AnyArray> in{i64s(n), i64s(m)};
    std::vector<AnyArray> ref{AnyArray(Array<double>(std::vector<std::int64_t>{}))};
    return run_like(*r.kernel, cj, in, ref);
  };
  const auto ok = once(1000, 10);
  CHECK(near(ok[0], eval_jaxpr(*cj.jaxpr, {}, {i64s(1000), i64s(10)})[0], 1e-13));
  CHECK_THROWS_WITH_AS(once(1000, std::int64_t{1} << 58), doctest::Contains("out of memory"), Error);
  // No leak: 200 successful and 200 failed calls, each with an 800 KB
  // temporary, leave the heap in use where it was (up to allocator noise).
  auto churn = [&](int n) {
    int failed = 0;
    for (int i = 0; i < n; ++i) {
      once(100000, 3);
      try {
        once(100000, std::int64_t{1} << 58);
      } catch (const Error&) {
        ++failed;
      }
    }
    return failed;
  };
  churn(10);
  const struct mallinfo2 before = mallinfo2();
  CHECK(churn(200) == 200);
  const struct mallinfo2 after = mallinfo2();
  const auto in_use = [](const struct mallinfo2& m) { return static_cast<double>(m.uordblks + m.hblkhd); };
  CHECK(std::fabs(in_use(after) - in_use(before)) < 64 * 1024);
}
