// dynstage_fuzz: ONE interpreter of fuzz programs over the public dyn:: API,
// templated on the array kind (dyn::Array or dyn::Tracer), so the same code
// runs eagerly, under make_jaxpr (then eval_jaxpr) and under dyn::jit; and
// the comparison of the three (docs/reliability.md, "Differential fuzzing").
#include "fuzz.hpp"

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <utility>
#include <variant>

#include "../test_util.hpp"

namespace fuzz {
namespace {

using dyn::Array;
using dyn::Tracer;

// What the jit-vs-eager tolerance (compare) scales with, recorded while an
// eager run has t_scales set. A reassociated sum errs relative to the
// magnitudes of its terms, not to its result (seed 47035: f32 terms of
// +-3.7e9 that cancel to 0), and by up to ~n eps for n terms (seed 65035: a
// mean of 140001 f32 values, summed in order by eager and in 64 partial sums
// by jit, differs by 8e-4 relative). Each top-level slot gets, over its own
// node, its operands' slots and every node inside its bodies, the largest
// finite |value| and the largest ratio of a node's operand size to its result
// size (the most terms one result element can sum).
struct Scales {
  std::vector<Scale> slot;  // per top-level slot, in the program's slot order
  Scale inner;              // over the nodes inside the current top-level node
  int depth = 0;            // Interp::run's nesting
};
thread_local Scales* t_scales = nullptr;

// Kinks for the grad check (fuzz_transform.cpp): set while an eager run
// evaluates abs at 0 or a maximum or minimum of equal float operands, at
// any depth (loop and cond bodies too). There the derivative is JAX's
// convention, not a slope (seeds 14561, 60835).
thread_local bool* t_kink = nullptr;

template <class V>
double max_abs(const V& v) {
  return std::visit([](const auto& a) {
    using T = typename std::remove_cvref_t<decltype(a)>::value_type;
    double m = 0;
    if constexpr (std::is_floating_point_v<T> && requires { a.data(); }) {  // (a Tracer has no values)
      const T* p = a.data();
      for (std::int64_t i = 0; i < a.size(); ++i)
        if (std::isfinite(p[i])) m = std::max(m, std::fabs(static_cast<double>(p[i])));
    }
    return m;
  }, v);
}

template <class V>
double elements(const V& v) {
  return std::visit([](const auto& a) {
    if constexpr (requires { a.size(); }) return static_cast<double>(a.size());
    else return 1.0;
  }, v);
}

Scale widest(Scale a, Scale b) { return {std::max(a.magnitude, b.magnitude), std::max(a.terms, b.terms)}; }

template <template <class> class A>
struct Kind {
  // One alternative per dtype, in DType's order (dt_index).
  using V = std::variant<A<bool>, A<std::int8_t>, A<std::int16_t>, A<std::int32_t>, A<i64>, A<std::uint8_t>,
                         A<std::uint16_t>, A<std::uint32_t>, A<std::uint64_t>, A<float>, A<double>>;
  // Values of a pytree boundary (arguments, carries, results): one vector per dtype.
  using Bundle = std::tuple<std::vector<A<bool>>, std::vector<A<std::int8_t>>, std::vector<A<std::int16_t>>,
                            std::vector<A<std::int32_t>>, std::vector<A<i64>>, std::vector<A<std::uint8_t>>,
                            std::vector<A<std::uint16_t>>, std::vector<A<std::uint32_t>>,
                            std::vector<A<std::uint64_t>>, std::vector<A<float>>, std::vector<A<double>>>;
  static constexpr bool traced = std::is_same_v<A<float>, Tracer<float>>;
};

// The variant / bundle index of a dtype: its enumerator's value.
int dt_index(DType d) { return static_cast<int>(d); }
constexpr int kI64 = static_cast<int>(DType::i64);

template <class T>
using elem = typename std::remove_cvref_t<T>::value_type;

// A concrete array as a value of kind K: lifted into the current trace
// (a constvar) when tracing, so every value of a traced program is a tracer.
template <class K, class T>
typename K::V lift(const Array<T>& a) {
  if constexpr (K::traced) return dyn::detail::from_value<Tracer<T>>(dyn::detail::to_value(a));
  else return a;
}
template <class K, class X>
typename K::V as_v(const X& x) {
  if constexpr (dyn::is_tracer_v<X>) {
    if constexpr (K::traced) return x;
    else throw std::logic_error("fuzz: a tracer in eager mode");
  } else {
    return lift<K>(x);
  }
}

template <class K>
typename K::V from_any(const dyn::AnyArray& a) {
  return fuzz::visit_dtype(a.dtype(), [&](auto t) -> typename K::V { return lift<K>(a.get<decltype(t)>()); });
}

template <class K>
void pack(typename K::Bundle& b, const typename K::V& v) {
  std::visit([&](const auto& x) { std::get<std::vector<std::remove_cvref_t<decltype(x)>>>(b).push_back(x); }, v);
}
template <class K>
typename K::Bundle pack_all(const std::vector<typename K::V>& vs) {
  typename K::Bundle b;
  for (const auto& v : vs) pack<K>(b, v);
  return b;
}
// Unpack values of the given types, in order (each dtype's vector in order).
template <class K>
std::vector<typename K::V> unpack(const typename K::Bundle& b, const std::vector<Ty>& tys, int skip_i64 = 0) {
  std::vector<typename K::V> r;
  int pos[kNumFuzzDTypes] = {};
  pos[kI64] = skip_i64;
  for (const Ty& t : tys) {
    const int d = dt_index(t.dt);
    const int k = pos[d]++;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((static_cast<int>(I) == d ? (r.push_back(std::get<I>(b).at(k)), 0) : 0), ...);
    }(std::make_index_sequence<kNumFuzzDTypes>{});
  }
  return r;
}

template <class X>
dyn::Dim dim_of(const X& x, i64 j) {
  return dyn::Dim(x.shape(static_cast<std::size_t>(j)));
}

template <class K>
struct Interp {
  using V = typename K::V;

  static V unary(int k, const V& v) {
    return std::visit([&](const auto& x) -> V {
      switch (static_cast<Unary>(k)) {
        case u_neg: return as_v<K>(-x);
        case u_abs: return as_v<K>(dyn::abs(x));
        case u_sign: return as_v<K>(dyn::sign(x));
        case u_floor: return as_v<K>(dyn::floor(x));
        case u_ceil: return as_v<K>(dyn::ceil(x));
        case u_round: return as_v<K>(dyn::round(x));
        case u_exp: return as_v<K>(dyn::exp(x));
        case u_log: return as_v<K>(dyn::log(x));
        case u_log1p: return as_v<K>(dyn::log1p(x));
        case u_sqrt: return as_v<K>(dyn::sqrt(x));
        case u_rsqrt: return as_v<K>(dyn::rsqrt(x));
        case u_sin: return as_v<K>(dyn::sin(x));
        case u_cos: return as_v<K>(dyn::cos(x));
        case u_tan: return as_v<K>(dyn::tan(x));
        case u_tanh: return as_v<K>(dyn::tanh(x));
        case u_logistic: return as_v<K>(dyn::logistic(x));
        case u_expm1: return as_v<K>(dyn::expm1(x));
        case u_exp2: return as_v<K>(dyn::exp2(x));
        case u_cbrt: return as_v<K>(dyn::cbrt(x));
        case u_sinh: return as_v<K>(dyn::sinh(x));
        case u_cosh: return as_v<K>(dyn::cosh(x));
        case u_asin: return as_v<K>(dyn::asin(x));
        case u_acos: return as_v<K>(dyn::acos(x));
        case u_atan: return as_v<K>(dyn::atan(x));
        case u_asinh: return as_v<K>(dyn::asinh(x));
        case u_acosh: return as_v<K>(dyn::acosh(x));
        case u_atanh: return as_v<K>(dyn::atanh(x));
        case u_erf: return as_v<K>(dyn::erf(x));
        case u_erfc: return as_v<K>(dyn::erfc(x));
        case u_lgamma: return as_v<K>(dyn::lgamma(x));
        case u_erf_inv: return as_v<K>(dyn::erf_inv(x));
        case u_digamma: return as_v<K>(dyn::digamma(x));
        case u_trigamma: return as_v<K>(dyn::trigamma(x));
        case u_log2: return as_v<K>(dyn::log2(x));
        case u_log10: return as_v<K>(dyn::log10(x));
        case u_square: return as_v<K>(dyn::square(x));
        case u_ipow: return as_v<K>(dyn::integer_pow(x, 3));
        case u_stop_gradient: return as_v<K>(dyn::stop_gradient(x));
        case u_isfinite: return as_v<K>(dyn::is_finite(x));
        case u_isnan: return as_v<K>(dyn::isnan(x));
        case u_isinf: return as_v<K>(dyn::isinf(x));
        case u_not:
          if constexpr (std::is_same_v<elem<decltype(x)>, bool>) return as_v<K>(!x);
          else if constexpr (requires { ~x; }) return as_v<K>(~x);
          else break;
        case u_popcount:
          if constexpr (requires { dyn::population_count(x); }) return as_v<K>(dyn::population_count(x));
          else break;
        case u_clz:
          if constexpr (requires { dyn::clz(x); }) return as_v<K>(dyn::clz(x));
          else break;
        case kUnaryCount: break;
      }
      throw std::logic_error("fuzz: bad unary");
    }, v);
  }

  template <class X, class Y>
  static V bin(int k, const X& x, const Y& y) {
    switch (static_cast<Binary>(k)) {
      case b_add: return as_v<K>(x + y);
      case b_sub: return as_v<K>(x - y);
      case b_mul: return as_v<K>(x * y);
      case b_div: return as_v<K>(x / y);
      case b_rem: return as_v<K>(x % y);
      case b_pow: return as_v<K>(dyn::pow(x, y));
      case b_max: return as_v<K>(dyn::maximum(x, y));
      case b_min: return as_v<K>(dyn::minimum(x, y));
      case b_atan2: return as_v<K>(dyn::atan2(x, y));
      case b_hypot: return as_v<K>(dyn::hypot(x, y));
      case b_nextafter: return as_v<K>(dyn::nextafter(x, y));
      case b_logical_and: return as_v<K>(dyn::logical_and(x, y));
      // (bit operations of floats do not compile: never generated)
      case b_and:
        if constexpr (requires { x & y; }) return as_v<K>(x & y);
        else break;
      case b_or:
        if constexpr (requires { x | y; }) return as_v<K>(x | y);
        else break;
      case b_xor:
        if constexpr (requires { x ^ y; }) return as_v<K>(x ^ y);
        else break;
      case b_shl:
        if constexpr (requires { x << y; }) return as_v<K>(x << y);
        else break;
      case b_shr:
        if constexpr (requires { x >> y; }) return as_v<K>(x >> y);
        else break;
      case kBinaryCount: break;
    }
    throw std::logic_error("fuzz: bad binary");
  }

  template <class X, class Y>
  static V cmp(int k, const X& x, const Y& y) {
    switch (static_cast<Cmp>(k)) {
      case c_eq: return as_v<K>(x == y);
      case c_ne: return as_v<K>(x != y);
      case c_lt: return as_v<K>(x < y);
      case c_le: return as_v<K>(x <= y);
      case c_gt: return as_v<K>(x > y);
      case c_ge: return as_v<K>(x >= y);
      case kCmpCount: break;
    }
    throw std::logic_error("fuzz: bad compare");
  }

  // A cplx node (fuzz.hpp): complex values of x's float dtype, made,
  // transformed and projected back to a real (or bool) value here, so that
  // no complex value crosses a slot.
  template <class X>
  static V cplx(const Node& n, const X& x, const V& yv) {
    using T = elem<X>;
    if constexpr (!std::is_floating_point_v<T>) {
      throw std::logic_error("fuzz: a cplx node of a non-float operand");
    } else {
      using C = std::complex<T>;
      const X& y = same(x, yv);
      using Z = decltype(dyn::complex(x, y));
      const Z z0 = n.p.at(0) == 0 ? dyn::complex(x, y) : n.p[0] == 1 ? Z(x + y * C(0, 1)) : Z(dyn::astype<C>(x) - C(0, 1) * y);
      Z z = z0;
      for (std::size_t i = 1; i < n.p.size(); ++i) {
        switch (static_cast<CStep>(n.p[i])) {
          case cs_neg: z = -z; break;
          case cs_conj: z = dyn::conj(z); break;
          case cs_exp: z = dyn::exp(z); break;
          case cs_log: z = dyn::log(z); break;
          case cs_sqrt: z = dyn::sqrt(z); break;
          case cs_sin: z = dyn::sin(z); break;
          case cs_cos: z = dyn::cos(z); break;
          case cs_tanh: z = dyn::tanh(z); break;
          case cs_square: z = dyn::square(z); break;
          case cs_ipow: z = dyn::integer_pow(z, 3); break;
          case cs_add: z = z + z0; break;
          case cs_sub: z = z - z0; break;
          case cs_mul: z = z * z0; break;
          case cs_div: z = z / (z0 + C(2, 1)); break;
          case cs_pow: z = dyn::pow(z, z0); break;
          case cs_mul_lit: z = z * C(0.5, -1.5); break;
          case cs_sum: z = dyn::sum(z); break;
          case cs_prod: z = dyn::prod(z); break;
          case cs_mean: z = dyn::mean(z); break;
          case cs_dot: z = z.rank() == 1 ? Z(dyn::dot(z, z0)) : Z(dyn::matmul(z, dyn::transpose(z0))); break;
          case cs_flat: z = dyn::reshape(z, dyn::Shape{dyn::Dim(-1)}); break;
          case cs_rev: z = dyn::rev(z, {0}); break;
          case cs_stop_gradient: z = dyn::stop_gradient(z); break;
          case cs_transpose: z = dyn::transpose(z); break;
          case cs_fft: z = dyn::fft::fft(z); break;
          case cs_ifft: z = dyn::fft::ifft(z, std::nullopt, -1, "ortho"); break;
          case kCStepCount: throw std::logic_error("fuzz: bad complex step");
        }
      }
      switch (static_cast<CProj>(n.k)) {
        case cp_real: return as_v<K>(dyn::real(z));
        case cp_imag: return as_v<K>(dyn::imag(z));
        case cp_abs: return as_v<K>(dyn::abs(z));
        case cp_angle: return as_v<K>(dyn::angle(z));
        case cp_eq: return as_v<K>(z == dyn::conj(z));
        case cp_ne: return as_v<K>(z != dyn::conj(z));
        case kCProjCount: break;
      }
      throw std::logic_error("fuzz: bad complex projection");
    }
  }

  // A collective node (fuzz.hpp, Op::collective): the collective inside a
  // shard_map over the one-rank mesh, which every process has.
  template <class X>
  static V collective(const Node& n, const X& x) {
    using T = elem<X>;
    static const dyn::Mesh mesh({"x"}, {1});
    auto body = [&n](auto v) -> decltype(v) {
      switch (static_cast<Coll>(n.k)) {
        case co_psum:
          if constexpr (!std::is_same_v<T, bool>) return dyn::psum(v, "x");
          else break;
        case co_pmax:
          if constexpr (!std::is_same_v<T, bool>) return dyn::pmax(v, "x");
          else break;
        case co_pmin:
          if constexpr (!std::is_same_v<T, bool>) return dyn::pmin(v, "x");
          else break;
        case co_all_gather: return dyn::all_gather(v, "x", n.p.at(0), n.p.at(1) != 0);
        case co_ppermute: return dyn::ppermute(v, "x", {{0, 0}});
        case co_all_to_all: return dyn::all_to_all(v, "x", n.p.at(0), n.p.at(1), n.p.at(2) != 0);
        case co_axis_index:
          if constexpr (!std::is_same_v<T, bool>) return v + dyn::astype<T>(dyn::axis_index("x"));
          else break;
        case kCollCount: break;
      }
      throw std::logic_error("fuzz: bad collective");
    };
    return as_v<K>(dyn::shard_map(body, mesh, {dyn::P()}, dyn::P())(x));
  }

  // The value of a slot as the alternative of the same type as x.
  template <class X>
  static const X& same(const X&, const V& v) {
    return std::get<X>(v);
  }

  template <class X>
  static V reduce(const Node& n, const X& x) {
    const int bits = static_cast<int>(n.lit);
    const bool all = (bits & 1) != 0;
    const std::vector<i64>& ax = n.p;
    if (bits & 2) {  // dyn::keepdims
      auto fix_zero = [](auto r) -> V {
        if constexpr (std::is_floating_point_v<elem<decltype(r)>>) return as_v<K>(r + 0.0);
        else return as_v<K>(r);
      };
      switch (static_cast<Red>(n.k)) {
        case r_sum: return as_v<K>(all ? dyn::sum(x, dyn::keepdims) : dyn::sum(x, ax, dyn::keepdims));
        case r_prod: return as_v<K>(all ? dyn::prod(x, dyn::keepdims) : dyn::prod(x, ax, dyn::keepdims));
        case r_max: return fix_zero(all ? dyn::max(x, dyn::keepdims) : dyn::max(x, ax, dyn::keepdims));
        case r_min: return fix_zero(all ? dyn::min(x, dyn::keepdims) : dyn::min(x, ax, dyn::keepdims));
        case r_mean: return as_v<K>(all ? dyn::mean(x, dyn::keepdims) : dyn::mean(x, ax, dyn::keepdims));
        case r_any: return as_v<K>(all ? dyn::any(x, dyn::keepdims) : dyn::any(x, ax, dyn::keepdims));
        case r_all: return as_v<K>(all ? dyn::all(x, dyn::keepdims) : dyn::all(x, ax, dyn::keepdims));
        case kRedCount: break;
      }
      throw std::logic_error("fuzz: bad reduction");
    }
    auto fix_zero = [](auto r) -> V {
      // reduce_max/min of ±0 may give +0 where eager gives -0 (docs/backend.md,
      // llvm.maximum): `+ 0.0` maps -0 to +0 and changes nothing else.
      if constexpr (std::is_floating_point_v<elem<decltype(r)>>) return as_v<K>(r + 0.0);
      else return as_v<K>(r);
    };
    switch (static_cast<Red>(n.k)) {
      case r_sum: return as_v<K>(all ? dyn::sum(x) : dyn::sum(x, ax));
      case r_prod: return as_v<K>(all ? dyn::prod(x) : dyn::prod(x, ax));
      case r_max: return fix_zero(all ? dyn::max(x) : dyn::max(x, ax));
      case r_min: return fix_zero(all ? dyn::min(x) : dyn::min(x, ax));
      case r_mean: return as_v<K>(all ? dyn::mean(x) : dyn::mean(x, ax));
      case r_any: return as_v<K>(all ? dyn::any(x) : dyn::any(x, ax));
      case r_all: return as_v<K>(all ? dyn::all(x) : dyn::all(x, ax));
      case kRedCount: break;
    }
    throw std::logic_error("fuzz: bad reduction");
  }

  template <class X>
  static V argreduce(const Node& n, const X& x) {
    const i64 axis = n.p.at(0);
    if (n.lit != 0) return as_v<K>(n.k ? dyn::argmin(x, axis, dyn::keepdims) : dyn::argmax(x, axis, dyn::keepdims));
    return as_v<K>(n.k ? dyn::argmin(x, axis) : dyn::argmax(x, axis));
  }

  template <class X>
  static V cumulative(const Node& n, const X& x) {
    const i64 axis = n.p.at(0);
    const bool rev = n.p.at(1) != 0;
    switch (static_cast<Cum>(n.k)) {
      case cu_sum: return as_v<K>(dyn::cumsum(x, axis, rev));
      case cu_prod: return as_v<K>(dyn::cumprod(x, axis, rev));
      case cu_max: return as_v<K>(dyn::cummax(x, axis, rev));
      case cu_min: return as_v<K>(dyn::cummin(x, axis, rev));
      case kCumCount: break;
    }
    throw std::logic_error("fuzz: bad cumulative op");
  }

  // x.at(all()..., idx) along axis a, then f(at).
  template <class X, class I, class F>
  static V at_axis(const X& x, const I& idx, i64 a, F f) {
    switch (a) {
      case 0: return as_v<K>(f(x.at(idx)));
      case 1: return as_v<K>(f(x.at(dyn::all(), idx)));
      case 2: return as_v<K>(f(x.at(dyn::all(), dyn::all(), idx)));
      default: throw std::logic_error("fuzz: gather axis out of range");
    }
  }

  // Index arrays are i32 or i64 (the generator's; other integer dtypes of
  // indices are converted by the numpy layer, tested in test_dtypes.cpp).
  template <class I>
  static constexpr bool index_elem = [] {
    if constexpr (std::is_integral_v<I>) return true;  // a C++ integer (std::int64_t)
    else return std::is_same_v<elem<I>, std::int32_t> || std::is_same_v<elem<I>, i64>;
  }();

  template <class X, class I>
  static V gather(const Node& n, const X& x, const I& idx) {
    if constexpr (index_elem<I>) {
      if (n.k == 1) return as_v<K>(dyn::take(x, idx, n.p.at(0)));
      if (n.k == 2) return as_v<K>(dyn::take_along_axis(x, idx, n.p.at(0)));
      return at_axis(x, idx, n.p.at(0), [](const auto& r) { return r.get(); });
    } else {
      throw std::logic_error("fuzz: a non-integer index array");
    }
  }

  template <class X, class I>
  static V scatter(const Node& n, const X& x, const I& idx, const V& uv) {
    if constexpr (index_elem<I>) {
      const auto u = same(x, uv);
      return at_axis(x, idx, n.p.at(0), [&](const auto& r) {
        switch (n.k) {
          case 0: return r.set(u);
          case 1: return r.add(u);
          case 2: return r.mul(u);
          case 3: return r.min(u);
          default: return r.max(u);
        }
      });
    } else {
      throw std::logic_error("fuzz: a non-integer index array");
    }
  }

  template <class T>
  static V full_of(const std::vector<i64>& shape, double lit) {
    return lift<K>(dyn::full<T>(shape, static_cast<T>(lit)));
  }

  static std::vector<dyn::Index> indices(const std::vector<V>& env, const Node& n, std::size_t from) {
    std::vector<dyn::Index> r;
    for (std::size_t j = from; j < n.in.size(); ++j)
      std::visit([&](const auto& x) {
        if constexpr (std::is_integral_v<elem<decltype(x)>> && !std::is_same_v<elem<decltype(x)>, bool>)
          r.emplace_back(x);
        else
          throw std::logic_error("fuzz: a non-integer index");
      }, env.at(n.in[j]));
    return r;
  }

  // Runs p with env holding the visible outer slots; returns p's outputs.
  // An eager run records its scales while t_scales is set.
  static std::vector<V> run(const Program& p, std::vector<V> env, const std::vector<V>& params) {
    Scales* m = K::traced ? nullptr : t_scales;
    const bool top = m && m->depth == 0;
    struct Depth {
      Scales* m;
      ~Depth() { if (m) --m->depth; }
    } depth{m};
    if (m) ++m->depth;
    for (const V& v : params) {
      env.push_back(v);
      if (top) m->slot.push_back({max_abs(v), 1});
    }
    for (const Node& n : p.nodes) {
      if (top) m->inner = {};
      std::vector<V> o = eval(n, env);
      if constexpr (!K::traced)
        if (t_kink && !*t_kink) *t_kink = at_kink(n, env);
      if (m) {
        double in_size = 1, out_size = 1;
        for (int s : n.in) in_size = std::max(in_size, elements(env.at(static_cast<std::size_t>(s))));
        Scale own{0, 1};
        for (const V& v : o) own.magnitude = std::max(own.magnitude, max_abs(v)), out_size = std::max(out_size, elements(v));
        own.terms = std::max(1.0, in_size / out_size);
        if (top) {
          own = widest(own, m->inner);
          for (int s : n.in) own = widest(own, m->slot.at(static_cast<std::size_t>(s)));
          m->slot.insert(m->slot.end(), o.size(), own);
        } else {
          m->inner = widest(m->inner, own);
        }
      }
      for (V& v : o) env.push_back(std::move(v));
    }
    std::vector<V> r;
    for (int s : p.outs) r.push_back(env.at(s));
    return r;
  }

  // Whether node n, on env's values, is abs at 0 or a maximum or minimum of
  // equal float operands somewhere (t_kink).
  static bool at_kink(const Node& n, const std::vector<V>& env) {
    const bool abs = n.op == Op::unary && n.k == u_abs;
    if (!abs && !((n.op == Op::binary || n.op == Op::scalar) && (n.k == b_max || n.k == b_min))) return false;
    return std::visit([&](const auto& x) {
      using T = elem<decltype(x)>;
      if constexpr (!std::is_floating_point_v<T> || K::traced) {
        return false;
      } else {
        const Array<bool> hit = abs                   ? dyn::any(x == T(0))
                                : n.op == Op::scalar  ? dyn::any(x == static_cast<T>(n.lit))
                                                      : dyn::any(x == same(x, env.at(static_cast<std::size_t>(n.in.at(1)))));
        return hit.data()[0];
      }
    }, env.at(static_cast<std::size_t>(n.in.at(0))));
  }

  static std::vector<V> eval(const Node& n, const std::vector<V>& env) {
    auto in = [&](std::size_t j) -> const V& { return env.at(n.in.at(j)); };
    const DType odt = n.out.empty() ? DType::f64 : n.out[0].dt;
    switch (n.op) {
      case Op::constant: return {from_any<K>(n.data)};
      case Op::full:
        return {fuzz::visit_dtype(odt, [&](auto t) { return full_of<decltype(t)>(n.p, n.lit); })};
      case Op::iota:
        return {fuzz::visit_dtype(odt, [&](auto t) -> V {
          using T = decltype(t);
          if constexpr (std::is_same_v<T, bool>) throw std::logic_error("fuzz: bool iota");
          else return lift<K>(dyn::arange<T>(n.p.at(0)));
        })};
      case Op::iota_dyn: {
        const auto& sz = std::get<kI64>(in(0));
        return {fuzz::visit_dtype(odt, [&](auto t) -> V {
          using T = decltype(t);
          if constexpr (std::is_same_v<T, bool>) throw std::logic_error("fuzz: bool iota");
          else return as_v<K>(dyn::arange<T>(sz));
        })};
      }
      case Op::unary: return {unary(n.k, in(0))};
      case Op::binary:
        return {std::visit([&](const auto& x) { return bin(n.k, x, same(x, in(1))); }, in(0))};
      case Op::add_mixed:
        return {std::visit([&](const auto& x, const auto& y) { return as_v<K>(x + y); }, in(0), in(1))};
      case Op::scalar:
        return {std::visit([&](const auto& x) -> V {
          using T = elem<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) throw std::logic_error("fuzz: bool literal");
          else if constexpr (std::is_integral_v<T>) {
            const int l = static_cast<int>(n.lit);
            return n.p.at(0) ? bin(n.k, l, x) : bin(n.k, x, l);
          } else {
            return n.p.at(0) ? bin(n.k, n.lit, x) : bin(n.k, x, n.lit);
          }
        }, in(0))};
      case Op::compare:
        return {std::visit([&](const auto& x) { return cmp(n.k, x, same(x, in(1))); }, in(0))};
      case Op::cplx: return {std::visit([&](const auto& x) { return cplx(n, x, in(1)); }, in(0))};
      case Op::collective: return {std::visit([&](const auto& x) { return collective(n, x); }, in(0))};
      case Op::where: {
        const auto& pred = std::get<0>(in(0));
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::where(pred, x, same(x, in(2)))); }, in(1))};
      }
      case Op::clamp:
        return {std::visit([&](const auto& x) {
          return as_v<K>(n.p.at(0) ? dyn::clamp(same(x, in(1)), x, same(x, in(2))) : dyn::clip(x, same(x, in(1)), same(x, in(2))));
        }, in(0))};
      case Op::astype:
        return {std::visit([&](const auto& x) {
          return fuzz::visit_dtype(odt, [&](auto t) -> V { return as_v<K>(dyn::astype<decltype(t)>(x)); });
        }, in(0))};
      case Op::reduce: return {std::visit([&](const auto& x) { return reduce(n, x); }, in(0))};
      case Op::cumulative: return {std::visit([&](const auto& x) { return cumulative(n, x); }, in(0))};
      case Op::segment_sum:
        return {std::visit([&](const auto& x, const auto& o) { return as_v<K>(dyn::segment_sum_offsets(x, o)); }, in(0), in(1))};
      case Op::gather:
        if (n.p.size() > 1)  // a C++ integer index
          return {std::visit([&](const auto& x) { return at_axis(x, n.p[1], n.p[0], [](const auto& r) { return r.get(); }); }, in(0))};
        return {std::visit([&](const auto& x, const auto& i) { return gather(n, x, i); }, in(0), in(1))};
      case Op::scatter:
        if (n.p.size() > 1)
          return {std::visit([&](const auto& x) { return scatter(n, x, n.p[1], in(1)); }, in(0))};
        return {std::visit([&](const auto& x, const auto& i) { return scatter(n, x, i, in(2)); }, in(0), in(1))};
      case Op::argreduce: return {std::visit([&](const auto& x) { return argreduce(n, x); }, in(0))};
      case Op::sort:
        return {std::visit([&](const auto& x) -> V {
          switch (n.k) {
            case 0: return as_v<K>(dyn::sort(x, n.p.at(0)));
            case 1: return as_v<K>(dyn::argsort(x, n.p.at(0)));
            case 2: return as_v<K>(std::get<0>(dyn::top_k(x, n.p.at(0))));
            default: return as_v<K>(std::get<1>(dyn::top_k(x, n.p.at(0))));
          }
        }, in(0))};
      case Op::rev: return {std::visit([&](const auto& x) { return as_v<K>(dyn::rev(x, n.p)); }, in(0))};
      case Op::pad:
        return {std::visit([&](const auto& x) {
          std::vector<dyn::PadAxis> cfg;
          for (std::size_t i = 0; i < n.p.size(); i += 3) cfg.push_back({n.p[i], n.p[i + 1], n.p[i + 2]});
          return as_v<K>(dyn::pad(x, cfg, static_cast<i64>(n.lit)));
        }, in(0))};
      case Op::reshape:
        return {std::visit([&](const auto& x) {
          return as_v<K>(dyn::reshape(x, dyn::Shape(n.p.begin(), n.p.end())));
        }, in(0))};
      case Op::transpose:
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::transpose(x, n.p)); }, in(0))};
      case Op::slice:
        return {std::visit([&](const auto& x) {
          const dyn::Dim lim = n.p[2] < 0 ? dim_of(x, n.p[0]) : dyn::Dim(n.p[2]);
          return as_v<K>(dyn::slice_in_dim(x, n.p[1], lim, n.p[3], n.p[0]));
        }, in(0))};
      case Op::concat:
        return {std::visit([&](const auto& x) {
          std::vector<std::remove_cvref_t<decltype(x)>> xs;
          for (std::size_t j = 0; j < n.in.size(); ++j) xs.push_back(same(x, in(j)));
          return as_v<K>(dyn::concatenate(xs, n.p.at(0)));
        }, in(0))};
      case Op::expand_dims:
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::expand_dims(x, n.p.at(0))); }, in(0))};
      case Op::squeeze:
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::squeeze(x, n.p)); }, in(0))};
      case Op::broadcast_to:
        return {std::visit([&](const auto& x) {
          dyn::Shape s;
          for (i64 d : n.p) s.push_back(d >= 0 ? dyn::Dim(d) : dim_of(x, -1 - d));
          return as_v<K>(dyn::broadcast_to(x, s));
        }, in(0))};
      case Op::dot:
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::dot(x, same(x, in(1)))); }, in(0))};
      case Op::matmul:
        return {std::visit([&](const auto& x) { return as_v<K>(dyn::matmul(x, same(x, in(1)))); }, in(0))};
      case Op::dynamic_slice:
        return {std::visit([&](const auto& x) {
          return as_v<K>(dyn::dynamic_slice(x, indices(env, n, 1), n.p));
        }, in(0))};
      case Op::dynamic_update_slice:
        return {std::visit([&](const auto& x) {
          return as_v<K>(dyn::dynamic_update_slice(x, same(x, in(1)), indices(env, n, 2)));
        }, in(0))};
      case Op::for_loop: {
        std::vector<V> init;
        for (int s : n.in) init.push_back(env.at(s));
        const Program& body = n.body.at(0);
        std::vector<Ty> carry(body.params.begin() + 1, body.params.end());
        auto fn = [&](auto i, auto c) {
          std::vector<V> ps{V(i)};
          for (V& v : unpack<K>(c, carry)) ps.push_back(std::move(v));
          return pack_all<K>(run(body, env, ps));
        };
        auto r = dyn::for_loop(n.p[0], n.p[1], n.p[2], {.preserve_dimensions = n.p[3] != 0})(fn)(pack_all<K>(init));
        return unpack<K>(r, n.out);
      }
      case Op::scan: {
        const auto nc = static_cast<std::size_t>(n.p[2]);
        std::vector<V> init, xs;
        for (std::size_t j = 0; j < n.in.size(); ++j) (j < nc ? init : xs).push_back(env.at(n.in[j]));
        const Program& body = n.body.at(0);
        const std::vector<Ty> carry(body.params.begin(), body.params.begin() + static_cast<std::ptrdiff_t>(nc));
        const std::vector<Ty> rows(body.params.begin() + static_cast<std::ptrdiff_t>(nc), body.params.end());
        auto fn = [&](auto c, auto x) {
          std::vector<V> ps = unpack<K>(c, carry);
          for (V& v : unpack<K>(x, rows)) ps.push_back(std::move(v));
          std::vector<V> res = run(body, env, ps);
          const std::vector<V> cr(res.begin(), res.begin() + static_cast<std::ptrdiff_t>(nc));
          const std::vector<V> yr(res.begin() + static_cast<std::ptrdiff_t>(nc), res.end());
          return std::tuple{pack_all<K>(cr), pack_all<K>(yr)};
        };
        dyn::ScanOptions opts{.reverse = n.p[0] != 0};
        if (xs.empty()) opts.length = n.p[1];
        auto r = dyn::scan(fn, pack_all<K>(init), pack_all<K>(xs), opts);
        std::vector<V> out = unpack<K>(std::get<0>(r), carry);
        const std::vector<Ty> ys(n.out.begin() + static_cast<std::ptrdiff_t>(nc), n.out.end());
        for (V& v : unpack<K>(std::get<1>(r), ys)) out.push_back(std::move(v));
        return out;
      }
      case Op::while_loop: {
        // A counter bounds the trip count: it is the first i64 carry.
        std::vector<V> init{lift<K>(Array<i64>::scalar(0))};
        for (int s : n.in) init.push_back(env.at(s));
        const Program& body = n.body.at(0);
        const std::vector<Ty>& carry = body.params;
        const i64 trips = n.p[0];
        auto cond_fn = [&](auto c) {
          auto r = std::get<kI64>(c).at(0) < trips;
          if (n.body.size() > 1) r = r & std::get<decltype(r)>(run(n.body[1], env, unpack<K>(c, carry, 1)).at(0));
          return r;
        };
        auto body_fn = [&](auto c) {
          std::vector<V> ps = unpack<K>(c, carry, 1);
          typename K::Bundle b;
          pack<K>(b, as_v<K>(std::get<kI64>(c).at(0) + 1));
          for (const V& v : run(body, env, ps)) pack<K>(b, v);
          return b;
        };
        auto r = dyn::while_loop(cond_fn, {.preserve_dimensions = n.p[1] != 0})(body_fn)(pack_all<K>(init));
        return unpack<K>(r, n.out, 1);
      }
      case Op::cond: {
        std::vector<V> ops;
        for (std::size_t j = 1; j < n.in.size(); ++j) ops.push_back(in(j));
        auto branch = [&](const Program& b) {
          return [&](auto c) { return pack_all<K>(run(b, env, unpack<K>(c, b.params))); };
        };
        if (n.k != 0) {  // switch_ on an integer index, 2 or 3 branches
          return std::visit([&](const auto& i) -> std::vector<V> {
            if constexpr (!std::is_integral_v<elem<decltype(i)>> || std::is_same_v<elem<decltype(i)>, bool>) {
              throw std::logic_error("fuzz: a switch_ index that is not an integer");
            } else if (n.body.size() == 2) {
              return unpack<K>(dyn::switch_(i, branch(n.body[0]), branch(n.body[1]))(pack_all<K>(ops)), n.out);
            } else {
              return unpack<K>(dyn::switch_(i, branch(n.body[0]), branch(n.body[1]), branch(n.body.at(2)))(
                                   pack_all<K>(ops)),
                               n.out);
            }
          }, in(0));
        }
        auto r = dyn::cond(std::get<0>(in(0)), branch(n.body.at(0)), branch(n.body.at(1)))(pack_all<K>(ops));
        return unpack<K>(r, n.out);
      }
      case Op::checkpoint: {
        std::vector<V> ops;
        for (int s : n.in) ops.push_back(env.at(s));
        const Program& b = n.body.at(0);
        auto body = [&](auto c) { return pack_all<K>(run(b, env, unpack<K>(c, b.params))); };
        return unpack<K>(dyn::checkpoint(body)(pack_all<K>(ops)), n.out);
      }
    }
    throw std::logic_error("fuzz: bad op");
  }
};

// The function the three ways run: (poly inputs, static inputs) -> results.
struct Fn {
  const Case* c;
  template <class B>
  auto operator()(B poly, B stat) const {
    using K = std::conditional_t<std::is_same_v<std::tuple_element_t<0, B>, std::vector<Array<bool>>>, Kind<Array>,
                                 Kind<Tracer>>;
    std::vector<Ty> pt, st;
    for (std::size_t j = 0; j < c->inputs.size(); ++j) (c->poly[j] ? pt : st).push_back(c->prog.params[j]);
    std::vector<typename K::V> pv = unpack<K>(poly, pt), sv = unpack<K>(stat, st), params;
    std::size_t a = 0, b = 0;
    for (std::size_t j = 0; j < c->inputs.size(); ++j) params.push_back(c->poly[j] ? pv.at(a++) : sv.at(b++));
    return pack_all<K>(Interp<K>::run(c->prog, {}, params));
  }
};

using Bundle = Kind<Array>::Bundle;

template <class G>
Outcome attempt(G&& g) {
  Outcome o;
  try {
    o.out = g();
  } catch (const dyn::Error& e) {
    o.kind = Outcome::dyn_error;
    if (dynamic_cast<const dyn::ArithmeticError*>(&e)) o.error = "ArithmeticError";
    else if (dynamic_cast<const dyn::InconclusiveDimensionOperation*>(&e)) o.error = "InconclusiveDimensionOperation";
    else if (dynamic_cast<const dyn::ShapeAssertionError*>(&e)) o.error = "ShapeAssertionError";
    else if (dynamic_cast<const dyn::ShapeError*>(&e)) o.error = "ShapeError";
    else if (dynamic_cast<const dyn::TypeError*>(&e)) o.error = "TypeError";
    else if (dynamic_cast<const dyn::IndexError*>(&e)) o.error = "IndexError";
    else if (dynamic_cast<const dyn::InternalError*>(&e)) o.error = "InternalError";
    else o.error = "Error";
    o.message = e.what();
  } catch (const std::exception& e) {
    o.kind = Outcome::other_error, o.error = "std::exception", o.message = e.what();
  } catch (...) {
    o.kind = Outcome::other_error, o.error = "unknown exception";
  }
  return o;
}

std::vector<dyn::AnyArray> leaves(const Bundle& b) {
  std::vector<dyn::AnyArray> r;
  dyn::detail::for_each_leaf(b, [&](const auto& l) { r.push_back(dyn::detail::leaf_array(l)); });
  return r;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}


bool threads_on = true;
bool jit_fault = false;

// a with its first element changed (Fault for the tests: a wrong jit result).
dyn::AnyArray perturbed(const dyn::AnyArray& a) {
  if (a.size() == 0) return a;
  return fuzz::visit_dtype(a.dtype(), [&](auto t) -> dyn::AnyArray {
    using T = decltype(t);
    dyn::Array<T> r(a.shape());
    std::memcpy(r.mutable_data(), a.data(), static_cast<std::size_t>(a.size()) * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) r.mutable_data()[0] = !r.mutable_data()[0];
    else if constexpr (std::is_floating_point_v<T>) r.mutable_data()[0] = std::isfinite(r.mutable_data()[0]) ? r.mutable_data()[0] * 2 + 1 : T(3);
    else r.mutable_data()[0] = static_cast<T>(r.mutable_data()[0] ^ T(1));
    return r;
  });
}

// "" if x and y are bitwise identical (the same type, the same bytes).
std::string bitwise(const dyn::AnyArray& x, const dyn::AnyArray& y) {
  if (x.dtype() != y.dtype() || x.shape() != y.shape())
    return "type " + dyn::detail::array_type_str(x) + " vs " + dyn::detail::array_type_str(y);
  const std::size_t w = dyn::dtype_size(x.dtype());
  const auto* a = static_cast<const unsigned char*>(x.data());
  const auto* b = static_cast<const unsigned char*>(y.data());
  for (i64 i = 0; i < x.size(); ++i)
    if (std::memcmp(a + static_cast<std::size_t>(i) * w, b + static_cast<std::size_t>(i) * w, w) != 0)
      return "element " + std::to_string(i) + " differs: " + fuzz::visit_dtype(x.dtype(), [&](auto t) {
               using T = decltype(t);
               return fmt(static_cast<double>(static_cast<const T*>(x.data())[i])) + " vs " +
                      fmt(static_cast<double>(static_cast<const T*>(y.data())[i]));
             });
  return "";
}

}  // namespace

void set_check_threads(bool on) { threads_on = on; }
bool check_threads() { return threads_on; }
void set_jit_fault(bool on) { jit_fault = on; }

// Tolerance of an inexact float leaf (jit vs eager): within kUlps, or within
// max(kRel[dtype], terms * eps) * max(1, max |finite reference element|,
// magnitude) absolutely (Scales: a sum of `terms` reassociated errs relative
// to the magnitudes of its terms, not to its result). Two non-finite values
// match: which of +-inf and NaN an overflow gives depends on the order
// (seeds 93190, 96492). Everything else must be identical.
constexpr double kUlps = 16;
constexpr double kRel32 = 1e-4, kRel64 = 1e-11;

double relative_tolerance(bool single, Scale s) {
  return std::max(single ? kRel32 : kRel64,
                  s.terms * (single ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon()));
}

// "" if `got` matches `ref`.
std::string compare(const dyn::AnyArray& got, const dyn::AnyArray& ref, bool inexact, bool lowp, Scale s) {
  if (got.dtype() != ref.dtype() || got.shape() != ref.shape())
    return "type " + dyn::detail::array_type_str(got) + " vs " + dyn::detail::array_type_str(ref);
  return fuzz::visit_dtype(got.dtype(), [&](auto t) -> std::string {
    using T = decltype(t);
    const T* x = static_cast<const T*>(got.data());
    const T* y = static_cast<const T*>(ref.data());
    const double rel = relative_tolerance(sizeof(T) == 4 || lowp, s);
    double scale = std::isfinite(s.magnitude) ? std::max(1.0, s.magnitude) : 1.0;
    if constexpr (std::is_floating_point_v<T>)
      for (i64 i = 0; i < ref.size(); ++i)
        if (std::isfinite(y[i])) scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
    for (i64 i = 0; i < got.size(); ++i) {
      bool ok;
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x[i]) || std::isnan(y[i]))
          ok = (std::isnan(x[i]) && std::isnan(y[i])) || (inexact && !std::isfinite(x[i]) && !std::isfinite(y[i]));
        else if (std::memcmp(&x[i], &y[i], sizeof(T)) == 0) ok = true;
        else if (!inexact) ok = false;
        else if (x[i] == y[i] || test_util::ulp_distance(x[i], y[i]) <= kUlps) ok = true;
        else
          ok = std::isfinite(x[i]) && std::isfinite(y[i])
                   ? std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])) <=
                         rel * scale
                   : !std::isfinite(x[i]) && !std::isfinite(y[i]);
        if (!ok)
          return "element " + std::to_string(i) + ": " + fmt(static_cast<double>(x[i])) + " vs " +
                 fmt(static_cast<double>(y[i]));
      } else {
        ok = x[i] == y[i];
        if (!ok)
          return "element " + std::to_string(i) + ": " + std::to_string(x[i]) + " vs " + std::to_string(y[i]);
      }
    }
    return "";
  });
}

std::vector<Scale> output_scales(const Case& c) {
  Bundle poly, stat;
  for (std::size_t j = 0; j < c.inputs.size(); ++j)
    pack<Kind<Array>>(c.poly[j] ? poly : stat, from_any<Kind<Array>>(c.inputs[j]));
  Scales scales;
  t_scales = &scales;
  const Outcome eager = attempt([&] { return leaves(dyn::eager(Fn{&c})(poly, stat)); });
  t_scales = nullptr;
  std::vector<Scale> r;
  for (int s : c.prog.outs)
    r.push_back(eager.kind == Outcome::ok && static_cast<std::size_t>(s) < scales.slot.size()
                    ? scales.slot[static_cast<std::size_t>(s)] : Scale{});
  return r;
}

namespace {

// The IndexError messages of the C++ integer indices out of range (gather
// k = 3 and scatter with p[1], fuzz_gen.cpp static_index) inside the bodies
// of p's loops and conds: "index I is out of bounds for axis A with size N".
// `scope` holds the types of the slots visible to p (fuzz.hpp: captured
// slots, then p's parameters and node outputs).
void body_index_errors(const Program& p, std::vector<Ty> scope, bool in_body, std::vector<std::string>& out) {
  scope.insert(scope.end(), p.params.begin(), p.params.end());
  for (const Node& n : p.nodes) {
    if (in_body && n.p.size() > 1 && ((n.op == Op::gather && n.k == 3) || n.op == Op::scatter)) {
      const Ty& x = scope.at(static_cast<std::size_t>(n.in.at(0)));
      const i64 size = x.shape.at(static_cast<std::size_t>(n.p[0])).n, i = n.p[1];
      if (i >= size || i < -size)
        out.push_back("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(n.p[0]) +
                      " with size " + std::to_string(size));
    }
    for (const Program& b : n.body) body_index_errors(b, scope, true, out);
    scope.insert(scope.end(), n.out.begin(), n.out.end());
  }
}

// eval_jaxpr and jit raise the same IndexError of a C++ integer index out
// of range in a loop or cond body, and eager raises nothing: it did not run
// that body (a branch not taken, a loop of zero trips; it would have raised
// the same error). make_jaxpr traces every body, as JAX does, and the index
// is checked at trace time; eager runs only the code it takes (API.md
// section 7, trace/control.hpp). Each way follows its contract (seeds
// 16956, 25501, 27044).
bool index_error_in_untaken_body(const Program& p, const Outcome& eager, const Outcome& interp, const Outcome& jit) {
  if (eager.kind != Outcome::ok || interp.error != "IndexError" || jit.error != "IndexError") return false;
  const std::string m = interp.message.substr(0, interp.message.find('\n'));
  if (m != jit.message.substr(0, jit.message.find('\n'))) return false;
  std::vector<std::string> errs;
  body_index_errors(p, {}, false, errs);
  for (const std::string& e : errs)
    if (m.find(e) != std::string::npos) return true;
  return false;
}

}  // namespace

Verdict run_case(const Case& c, Outcome* pe, Outcome* pi, Outcome* pj) {
  Bundle poly, stat;
  for (std::size_t j = 0; j < c.inputs.size(); ++j)
    pack<Kind<Array>>(c.poly[j] ? poly : stat, from_any<Kind<Array>>(c.inputs[j]));
  const Fn f{&c};
  std::vector<std::string> specs;
  if (c.symbolic) specs = {"(n, ...)", "..."};
  Scales scales;
  t_scales = &scales;
  Outcome eager = attempt([&] { return leaves(dyn::eager(f)(poly, stat)); });
  t_scales = nullptr;
  Outcome interp = attempt([&] {
    dyn::ClosedJaxpr cj = c.symbolic ? dyn::make_jaxpr(f, dyn::polymorphic_shapes(specs))(poly, stat)
                                     : dyn::make_jaxpr(f)(poly, stat);
    std::vector<dyn::AnyArray> flat = leaves(poly), s = leaves(stat);
    flat.insert(flat.end(), s.begin(), s.end());
    std::vector<dyn::AnyArray> all = dyn::eval_jaxpr(cj, flat);
    const std::size_t n = c.prog.outs.size();
    if (all.size() < n) throw std::logic_error("fuzz: eval_jaxpr returned too few outputs");
    return std::vector<dyn::AnyArray>(all.end() - static_cast<std::ptrdiff_t>(n), all.end());
  });
  // jit, then the same jitted function with 1 and with 2 threads.
  Outcome jit, jit1, jit2;
  auto jit_ways = [&](auto jf) {
    jit = attempt([&] { return leaves(jf(poly, stat)); });
    if (jit_fault && jit.kind == Outcome::ok && !jit.out.empty()) jit.out[0] = perturbed(jit.out[0]);
    if (!threads_on || jit.kind != Outcome::ok) return;
    const int saved = dyn::num_threads();
    dyn::set_num_threads(1);
    jit1 = attempt([&] { return leaves(jf(poly, stat)); });
    dyn::set_num_threads(2);
    jit2 = attempt([&] { return leaves(jf(poly, stat)); });
    dyn::set_num_threads(saved);
  };
  if (c.symbolic) jit_ways(dyn::jit(f, dyn::polymorphic_shapes(specs)));
  else jit_ways(dyn::jit(f));
  Verdict v;
  const Outcome* all[3] = {&eager, &interp, &jit};
  const char* names[3] = {"eager", "eval_jaxpr", "jit"};
  std::string errs;
  for (int k = 0; k < 3; ++k)
    if (all[k]->kind != Outcome::ok)
      errs += std::string("\n  ") + names[k] + ": [" + all[k]->error + "] " + all[k]->message;
  for (int k = 0; k < 3; ++k)
    if (all[k]->kind == Outcome::other_error) {
      v.kind = Verdict::crash, v.what = std::string("crash in ") + names[k], v.detail = errs;
    }
  if (v.kind == Verdict::pass) {
    if (eager.kind == Outcome::dyn_error && interp.kind == Outcome::dyn_error && jit.kind == Outcome::dyn_error) {
      if (eager.error == interp.error && interp.error == jit.error)
        v.kind = Verdict::consistent_error, v.what = eager.error, v.detail = errs;
      else
        v.kind = Verdict::mismatch, v.what = "different error classes", v.detail = errs;
    } else if (!errs.empty()) {
      std::string who;
      for (int k = 0; k < 3; ++k)
        if (all[k]->kind != Outcome::ok) who += std::string(who.empty() ? "" : "+") + names[k];
      v.kind = Verdict::mismatch, v.what = "error only in " + who, v.detail = errs;
      if (index_error_in_untaken_body(c.prog, eager, interp, jit))
        v.kind = Verdict::consistent_error, v.what = "IndexError in a body eager does not run";
      if (eager.error == "ArithmeticError" && interp.error == "ArithmeticError" && jit.kind == Outcome::ok)
        v.kind = Verdict::elided;
    } else {
      // Result leaves are grouped by dtype (the output bundle); so are the flags.
      std::vector<bool> inexact, lowp;
      std::vector<Scale> scale;
      {
        // Types of the top-level slots.
        std::vector<const Ty*> slot;
        for (const Ty& t : c.prog.params) slot.push_back(&t);
        for (const Node& n : c.prog.nodes)
          for (const Ty& t : n.out) slot.push_back(&t);
        for (int d = 0; d < kNumFuzzDTypes; ++d)
          for (int s : c.prog.outs)
            if (dt_index(slot.at(s)->dt) == d) {
              inexact.push_back(slot.at(s)->inexact);
              lowp.push_back(slot.at(s)->lowp);
              scale.push_back(scales.slot.size() == slot.size() ? scales.slot.at(s) : Scale{});
            }
      }
      if (eager.out.size() != inexact.size() || interp.out.size() != inexact.size() ||
          jit.out.size() != inexact.size()) {
        v.kind = Verdict::mismatch, v.what = "output count";
        v.detail = std::to_string(eager.out.size()) + ", " + std::to_string(interp.out.size()) + ", " +
                   std::to_string(jit.out.size());
      }
      for (std::size_t k = 0; v.kind == Verdict::pass && k < inexact.size(); ++k) {
        std::string m = compare(interp.out[k], eager.out[k], false);
        if (!m.empty()) {
          v.kind = Verdict::mismatch, v.what = "eval_jaxpr vs eager, output " + std::to_string(k), v.detail = m;
          break;
        }
        m = compare(jit.out[k], eager.out[k], inexact[k], lowp[k], scale[k]);
        if (!m.empty())
          v.kind = Verdict::mismatch, v.what = "jit vs eager, output " + std::to_string(k),
          v.detail = m + (inexact[k] ? lowp[k] ? " (inexact, f32 tolerance)" : " (inexact)" : " (exact)");
      }
      if (v.kind == Verdict::pass && threads_on) {
        if (jit1.kind != Outcome::ok || jit2.kind != Outcome::ok) {
          v.kind = Verdict::mismatch, v.what = "jit 1 vs 2 threads: an error";
          v.detail = "1 thread: [" + jit1.error + "] " + jit1.message + "\n  2 threads: [" + jit2.error + "] " + jit2.message;
        } else {
          for (std::size_t k = 0; v.kind == Verdict::pass && k < jit1.out.size() && k < jit2.out.size(); ++k) {
            const std::string m = bitwise(jit1.out[k], jit2.out[k]);
            if (!m.empty()) v.kind = Verdict::mismatch, v.what = "jit 1 vs 2 threads, output " + std::to_string(k), v.detail = m;
          }
        }
      }
    }
  }
  if (pe) *pe = eager;
  if (pi) *pi = interp;
  if (pj) *pj = jit;
  return v;
}

namespace {

void collect_primitives(const dyn::Jaxpr& j, std::set<dyn::detail::Prim>& out) {
  using namespace dyn::detail;
  for (const dyn::Eqn& e : j.eqns) {
    out.insert(e.prim);
    if (const auto* p = std::get_if<ForLoopParams>(&e.params)) collect_primitives(*p->body_jaxpr, out);
    if (const auto* p = std::get_if<ScanParams>(&e.params)) collect_primitives(*p->jaxpr, out);
    if (const auto* p = std::get_if<WhileLoopParams>(&e.params)) {
      collect_primitives(*p->cond_jaxpr, out);
      collect_primitives(*p->body_jaxpr, out);
    }
    if (const auto* p = std::get_if<CondParams>(&e.params))
      for (const auto& b : p->branches) collect_primitives(*b, out);
  }
}

}  // namespace

std::set<dyn::detail::Prim> traced_primitives(const Case& c) {
  Bundle poly, stat;
  for (std::size_t j = 0; j < c.inputs.size(); ++j)
    pack<Kind<Array>>(c.poly[j] ? poly : stat, from_any<Kind<Array>>(c.inputs[j]));
  const Fn f{&c};
  std::set<dyn::detail::Prim> r;
  try {
    const dyn::ClosedJaxpr cj = c.symbolic ? dyn::make_jaxpr(f, dyn::polymorphic_shapes({"(n, ...)", "..."}))(poly, stat)
                                           : dyn::make_jaxpr(f)(poly, stat);
    collect_primitives(*cj.jaxpr, r);
  } catch (const dyn::Error&) {
    r.clear();
  }
  return r;
}

std::set<dyn::detail::Prim> generated_primitives(std::uint64_t first, int count, int max_nodes) {
  std::set<dyn::detail::Prim> r;
  for (int k = 0; k < count; ++k) {
    const std::set<dyn::detail::Prim> p = traced_primitives(generate(first + static_cast<std::uint64_t>(k), max_nodes));
    r.insert(p.begin(), p.end());
  }
  return r;
}

std::vector<dyn::detail::Value> run_values(const Program& p, const std::vector<dyn::detail::Value>& params,
                                           bool traced, std::vector<Scale>* scales) {
  auto go = [&](auto kind) {
    using K = decltype(kind);
    std::vector<typename K::V> ps;
    for (const dyn::detail::Value& v : params)
      ps.push_back(fuzz::visit_dtype(v.dtype(), [&](auto t) -> typename K::V {
        using T = decltype(t);
        if constexpr (K::traced) return dyn::detail::from_value<Tracer<T>>(v);
        else return dyn::detail::from_value<Array<T>>(v);
      }));
    Scales s;
    if (scales) t_scales = &s;
    std::vector<typename K::V> out;
    try {
      out = Interp<K>::run(p, {}, ps);
    } catch (...) {
      t_scales = nullptr;
      throw;
    }
    t_scales = nullptr;
    if (scales) {
      scales->clear();
      for (int o : p.outs)
        scales->push_back(static_cast<std::size_t>(o) < s.slot.size() ? s.slot[static_cast<std::size_t>(o)] : Scale{});
    }
    std::vector<dyn::detail::Value> r;
    for (const typename K::V& o : out)
      r.push_back(std::visit([](const auto& x) { return dyn::detail::to_value(x); }, o));
    return r;
  };
  return traced ? go(Kind<Tracer>{}) : go(Kind<Array>{});
}

bool at_kink(const Case& c) {
  bool kink = false;
  t_kink = &kink;
  try {
    using K = Kind<Array>;
    std::vector<K::V> ps;
    for (const auto& a : c.inputs) ps.push_back(from_any<K>(a));
    Interp<K>::run(c.prog, {}, ps);
  } catch (const std::exception&) {
  }
  t_kink = nullptr;
  return kink;
}

std::vector<dyn::AnyArray> eager_slots(const Case& c) {
  using K = Kind<Array>;
  try {
    std::vector<K::V> env;
    for (const auto& a : c.inputs) env.push_back(from_any<K>(a));
    for (const Node& n : c.prog.nodes)
      for (K::V& v : Interp<K>::eval(n, env)) env.push_back(std::move(v));
    std::vector<dyn::AnyArray> r;
    for (const K::V& v : env) r.push_back(std::visit([](const auto& x) { return dyn::AnyArray(x); }, v));
    return r;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace fuzz
