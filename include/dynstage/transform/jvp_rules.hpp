// dynstage: forward-mode differentiation rules (JVP), one per primitive.
//
// jvp_rule(prim, primals, tangents, params) gives the primitive's outputs
// and their tangents (the Jacobian of the primitive at `primals` applied to
// `tangents`), written with bind, so the same rule computes at once on
// concrete values and records equations inside a trace (Autodidax's
// jvp_rules, with JAX's formulas: jax/_src/lax/lax.py and friends). A
// tangent is std::nullopt where it is a symbolic zero: nothing is computed
// for it, and a rule whose every input tangent is zero is never called.
//
// Tangents have the primal's dtype; only floating-point values have them
// (an integer or boolean result has none, as JAX's float0). A primitive
// listed in `jvp_missing` below has no rule yet: differentiating through it
// is a dyn::TypeError naming it; tests/transform/test_jvp_rules.cpp walks
// the primitive table so that a new primitive needs a rule or a place on
// that list.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../ir/params.hpp"
#include "../ir/prims.hpp"
#include "../trace/numpy.hpp"
#include "../trace/trace.hpp"

namespace dyn::detail {

using Tangent = std::optional<Value>;

struct JvpOut {
  std::vector<Value> primals;
  std::vector<Tangent> tangents;  // one per primal output; nullopt = zero
};

// Whether values of dtype `d` carry tangents.
inline bool differentiable_dtype(DType d) { return is_float(d); }

// Primitives with no JVP rule yet (differentiating through one of them is a
// TypeError), and why. Primitives whose outputs are never floating point
// (comparisons, bit operations, argmax, ...) need no rule and are not here.
inline const char* jvp_missing(Prim p) {
  switch (p) {
    case Prim::lgamma: return "its derivative is digamma, which has no primitive yet";
    case Prim::reduce_prod:
    case Prim::cumprod: return "the product rule over a reduction is not written yet";
    case Prim::cummax:
    case Prim::cummin: return "the cumulative chooser rule is not written yet";
    case Prim::scatter_mul:
    case Prim::scatter_min:
    case Prim::scatter_max: return "the rule for multiplicative and chooser scatters is not written yet";
    case Prim::for_loop:
    case Prim::while_loop:
    case Prim::cond:
    case Prim::scan: return "control flow is differentiated by the next step of issue 20 (JVP of the body)";
    default: return nullptr;
  }
}

// Out of line (DYNSTAGE_IMPLEMENTATION): the rules reach most of the trace layer.
JvpOut jvp_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params);

namespace jvp_detail {

// A literal of dtype `dt` (a typed scalar: `2.0:f64[]`).
inline Value lit(DType dt, double v) {
  return visit_dtype(dt, [&](auto z) {
    using T = decltype(z);
    return scalar_value(Scalar::of<T>(static_cast<T>(v)), false);
  });
}

inline Value op(Prim p, const std::vector<Value>& in, const Params& params = NoParams{}) {
  return bind1(p, in, params);
}
inline Value add(const Value& a, const Value& b) { return op(Prim::add, {a, b}); }
inline Value sub(const Value& a, const Value& b) { return op(Prim::sub, {a, b}); }
inline Value mul(const Value& a, const Value& b) { return op(Prim::mul, {a, b}); }
inline Value div(const Value& a, const Value& b) { return op(Prim::div, {a, b}); }
inline Value neg(const Value& a) { return op(Prim::neg, {a}); }
inline Value mulc(const Value& a, double c) { return mul(a, lit(a.dtype(), c)); }
// The value broadcast to `shape` when it is a scalar of a non-scalar result
// (the primitives broadcast rank-0 operands, so a tangent that comes only
// from a scalar operand has rank 0).
// `stage` records the broadcast in the trace even for a concrete scalar (a
// literal meeting traced values), rather than folding a constant array into
// the program; a symbolic shape is always staged.
inline Value fit(const Value& v, const Shape& shape, bool stage = false) {
  if (v.shape() == shape) return v;
  bool symbolic = false;
  for (const Dim& d : shape) symbolic = symbolic || !d.is_static();
  return broadcast_to_shape(v, shape, "jvp", stage || symbolic || v.is_tracer());
}
// c ? u : v (lax.select; select_n's case 0 is the false one), scalar
// cases broadcast to the others' shape.
inline Value select(const Value& c, const Value& u, const Value& v) {
  const Shape s = u.rank() ? u.shape() : v.rank() ? v.shape() : c.shape();
  const bool stage = c.is_tracer() || u.is_tracer() || v.is_tracer();
  return op(Prim::select_n, {c.rank() ? fit(c, s, stage) : c, fit(v, s, stage), fit(u, s, stage)});
}
inline Value as_dtype(const Value& b, DType dt) { return op(Prim::convert_element_type, {b}, ConvertParams{dt, false}); }

inline Value zeros_like(const Value& x) {
  return broadcast_to_shape(lit(x.dtype(), 0), x.shape(), "jvp", x.is_tracer());
}
inline Value instantiate(const Tangent& t, const Value& like) { return t ? fit(*t, like.shape()) : zeros_like(like); }

// t1 + t2 with zeros skipped, at the result's shape.
inline Tangent plus(const Tangent& a, const Tangent& b, const Shape& out) {
  if (!a && !b) return std::nullopt;
  if (!a) return fit(*b, out);
  if (!b) return fit(*a, out);
  return fit(add(*a, *b), out);
}
// t * factor (nullopt stays zero).
inline Tangent times(const Tangent& t, const Value& factor, const Shape& out) {
  if (!t) return std::nullopt;
  return fit(mul(*t, factor), out);
}

}  // namespace jvp_detail

#ifdef DYNSTAGE_IMPLEMENTATION

namespace jvp_detail {

// The derivative of a unary function at x with result y, as a factor of the
// tangent; nullopt: the derivative is zero almost everywhere.
inline std::optional<Value> unary_factor(Prim p, const Value& x, const Value& y, const Params& params) {
  const DType dt = x.dtype();
  auto one = [&] { return lit(dt, 1); };
  switch (p) {
    case Prim::neg: return lit(dt, -1);
    case Prim::abs: return op(Prim::sign, {x});
    case Prim::stop_gradient:  // the point of it: a constant to every derivative
    case Prim::sign:
    case Prim::floor:
    case Prim::ceil:
    case Prim::round: return std::nullopt;
    case Prim::exp: return y;
    case Prim::log: return div(one(), x);
    case Prim::log1p: return div(one(), add(x, one()));
    case Prim::sqrt: return div(lit(dt, 0.5), y);
    case Prim::rsqrt: return mul(lit(dt, -0.5), div(y, x));
    case Prim::sin: return op(Prim::cos, {x});
    case Prim::cos: return neg(op(Prim::sin, {x}));
    case Prim::tan: return add(one(), mul(y, y));
    case Prim::tanh: return sub(one(), mul(y, y));
    case Prim::logistic: return mul(y, sub(one(), y));
    case Prim::square: return mulc(x, 2);
    case Prim::expm1: return add(y, one());
    case Prim::exp2: return mulc(y, 0.69314718055994530942);
    case Prim::cbrt: return div(y, mulc(x, 3));  // y / (3x) = 1 / (3 y^2)
    case Prim::sinh: return op(Prim::cosh, {x});
    case Prim::cosh: return op(Prim::sinh, {x});
    case Prim::asin: return op(Prim::rsqrt, {sub(one(), mul(x, x))});
    case Prim::acos: return neg(op(Prim::rsqrt, {sub(one(), mul(x, x))}));
    case Prim::atan: return div(one(), add(one(), mul(x, x)));
    case Prim::asinh: return op(Prim::rsqrt, {add(mul(x, x), one())});
    case Prim::acosh: return op(Prim::rsqrt, {mul(sub(x, one()), add(x, one()))});
    case Prim::atanh: return div(one(), sub(one(), mul(x, x)));
    case Prim::erf: return mulc(op(Prim::exp, {neg(mul(x, x))}), 1.12837916709551257390);  // 2/sqrt(pi)
    case Prim::erfc: return mulc(op(Prim::exp, {neg(mul(x, x))}), -1.12837916709551257390);
    case Prim::erf_inv: return mulc(op(Prim::exp, {mul(y, y)}), 0.88622692545275801365);  // sqrt(pi)/2
    case Prim::integer_pow: {
      const int n = std::get<IntegerPowParams>(params).y;
      if (n == 0) return std::nullopt;
      if (n == 1) return one();
      const Value pw = n == 2 ? x : op(Prim::integer_pow, {x}, IntegerPowParams{n - 1});
      return mulc(pw, n);
    }
    default:
      internal_error("jvp: no unary derivative for " + std::string(prim_name(p)));
  }
}

inline JvpOut unary_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params) {
  const Value y = op(p, {x[0]}, params);
  const std::optional<Value> f = unary_factor(p, x[0], y, params);
  return {{y}, {f ? times(t[0], *f, y.shape()) : std::nullopt}};
}

inline JvpOut binary_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t) {
  const Value& a = x[0];
  const Value& b = x[1];
  const Value y = op(p, {a, b});
  const Shape out = y.shape();
  const DType dt = y.dtype();
  switch (p) {
    case Prim::add: return {{y}, {plus(t[0], t[1], out)}};
    case Prim::sub: return {{y}, {plus(t[0], t[1] ? std::optional(neg(*t[1])) : std::nullopt, out)}};
    case Prim::mul: return {{y}, {plus(times(t[0], b, out), times(t[1], a, out), out)}};
    case Prim::div:  // (ta - tb * y) / b
      return {{y}, {plus(times(t[0], div(lit(dt, 1), b), out), times(t[1], neg(div(y, b)), out), out)}};
    case Prim::pow: {
      // JAX's _pow_jvp_lhs / _pow_jvp_rhs: y * x^(y-1), and log(x) * x^y with log(0) taken as 0.
      Tangent ta, tb;
      if (t[0]) ta = times(t[0], mul(b, op(Prim::pow, {a, sub(b, lit(dt, 1))})), out);
      if (t[1]) {
        const Value safe = select(op(Prim::eq, {a, lit(dt, 0)}), lit(dt, 1), a);
        tb = times(t[1], mul(op(Prim::log, {safe}), y), out);
      }
      return {{y}, {plus(ta, tb, out)}};
    }
    case Prim::max:
    case Prim::min: {
      // JAX's balanced rule: the tangent of the chosen operand, half of each at a tie.
      const Prim wins = p == Prim::max ? Prim::gt : Prim::lt;
      const Value half = lit(dt, 0.5);
      const Value tie = op(Prim::eq, {a, b});
      const Value wa = select(tie, half, as_dtype(op(wins, {a, b}), dt));
      const Value wb = select(tie, half, as_dtype(op(wins, {b, a}), dt));
      return {{y}, {plus(times(t[0], wa, out), times(t[1], wb, out), out)}};
    }
    case Prim::atan2: {  // atan2(a, b): (ta b - tb a) / (a^2 + b^2)
      const Value den = add(mul(a, a), mul(b, b));
      return {{y}, {plus(times(t[0], div(b, den), out), times(t[1], neg(div(a, den)), out), out)}};
    }
    case Prim::rem: {  // a - b * trunc(a / b): JAX's rem jvp
      const Value q = div(a, b);
      const Value trunc = mul(op(Prim::sign, {q}), op(Prim::floor, {op(Prim::abs, {q})}));
      return {{y}, {plus(t[0] ? std::optional(fit(*t[0], out)) : std::nullopt, times(t[1], neg(trunc), out), out)}};
    }
    case Prim::nextafter:  // one ulp from a: a's tangent (JAX leaves it undefined)
      return {{y}, {t[0] ? std::optional(fit(*t[0], out)) : std::nullopt}};
    default: internal_error("jvp: no binary rule for " + std::string(prim_name(p)));
  }
}

// A primitive linear in its first operand, whose other operands are
// indices or sizes: the tangent goes through the same primitive.
inline JvpOut linear_in_first(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                              const Params& params) {
  const Value y = op(p, x, params);
  if (!t[0]) return {{y}, {std::nullopt}};
  std::vector<Value> tin = x;
  tin[0] = instantiate(t[0], x[0]);
  return {{y}, {op(p, tin, params)}};
}

// A primitive linear in all of its data operands `data` (the others:
// indices, sizes): the same primitive on their tangents (zeros instantiated).
inline JvpOut linear_in(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params,
                        const std::vector<std::size_t>& data) {
  const Value y = op(p, x, params);
  bool any = false;
  for (std::size_t k : data) any = any || (k < t.size() && t[k]);
  if (!any) return {{y}, {std::nullopt}};
  std::vector<Value> tin = x;
  for (std::size_t k : data) tin[k] = instantiate(t[k], x[k]);
  return {{y}, {op(p, tin, params)}};
}

// reduce_max / reduce_min: JAX's _reduce_chooser_jvp_rule: the tangents
// where the operand equals the result, averaged over ties.
inline JvpOut chooser_reduce(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                             const Params& params) {
  const Value y = op(p, x, params);
  if (!t[0]) return {{y}, {std::nullopt}};
  const auto& axes = std::get<ReduceParams>(params).axes;
  const Value yb = broadcast_to_shape(keep_reduced_axes(y, x[0].shape(), axes), x[0].shape(), "jvp", y.is_tracer());
  const Value at = as_dtype(op(Prim::eq, {x[0], yb}), x[0].dtype());
  const Value counts = op(Prim::reduce_sum, {at}, params);
  const Value num = op(Prim::reduce_sum, {mul(instantiate(t[0], x[0]), at)}, params);
  return {{y}, {div(num, counts)}};
}

// clamp(lo, x, hi): the tangent of whichever operand the result is.
inline JvpOut clamp_rule(const std::vector<Value>& x, const std::vector<Tangent>& t) {
  const Value y = op(Prim::clamp, x);
  if (!t[0] && !t[1] && !t[2]) return {{y}, {std::nullopt}};
  const Shape out = y.shape();
  const Value below = op(Prim::lt, {x[1], x[0]}), above = op(Prim::gt, {x[1], x[2]});
  const Value r = select(fit(below, out), instantiate(t[0], y), select(fit(above, out), instantiate(t[2], y),
                                                                        instantiate(t[1], y)));
  return {{y}, {r}};
}

}  // namespace jvp_detail

JvpOut jvp_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params) {
  using namespace jvp_detail;
  if (const char* why = jvp_missing(p))
    fail<TypeError>("jvp: cannot differentiate through " + std::string(prim_name(p)) + ": " + why);
  switch (prim_info(p).kind) {
    case Kind::unary: return unary_rule(p, x, t, params);
    case Kind::binary: return binary_rule(p, x, t);
    case Kind::compare: return {{op(p, x)}, {std::nullopt}};
    case Kind::select:
      if (p == Prim::clamp) return clamp_rule(x, t);
      {
        std::vector<std::size_t> cases;
        for (std::size_t k = 1; k < x.size(); ++k) cases.push_back(k);
        return linear_in(p, x, t, params, cases);
      }
    case Kind::convert: {
      const Value y = op(p, x, params);
      if (!t[0] || !differentiable_dtype(y.dtype())) return {{y}, {std::nullopt}};
      return {{y}, {op(p, {*t[0]}, params)}};
    }
    case Kind::structural:
      switch (p) {
        case Prim::concatenate: {
          std::vector<std::size_t> all;
          for (std::size_t k = 0; k < x.size(); ++k)
            if (differentiable_dtype(x[k].dtype())) all.push_back(k);
          return linear_in(p, x, t, params, all);
        }
        case Prim::pad: return linear_in(p, x, t, params, {0, 1});
        case Prim::dynamic_update_slice: return linear_in(p, x, t, params, {0, 1});
        default: return linear_in_first(p, x, t, params);  // iota has no tangent input
      }
    case Kind::scatter:  // scatter, scatter-add (the others are in jvp_missing): operand and updates
      return linear_in(p, x, t, params, {0, 2});
    case Kind::reduction:
      if (p == Prim::reduce_sum) return linear_in_first(p, x, t, params);
      if (p == Prim::reduce_max || p == Prim::reduce_min) return chooser_reduce(p, x, t, params);
      return {{op(p, x, params)}, {std::nullopt}};  // boolean and index results
    case Kind::cumulative: return linear_in_first(p, x, t, params);  // cumsum (the others are missing)
    case Kind::sort: {
      if (p == Prim::top_k) {
        const std::vector<Value> ys = bind(p, x, params);
        if (!t[0]) return {ys, {std::nullopt, std::nullopt}};
        const std::int64_t axis = std::get<TopKParams>(params).axis;
        return {ys, {take_along_axis(instantiate(t[0], x[0]), ys[1], axis), std::nullopt}};
      }
      // sort: JAX's _sort_jvp: an iota sorted along with the operands gives
      // the permutation, which gathers the tangents (linear in them, so
      // reverse mode transposes it; carrying the tangents through the sort
      // would mix primal and tangent results in one equation).
      const SortParams sp = std::get<SortParams>(params);
      std::vector<Value> in = x;
      in.push_back(iota(DType::i32, x[0].shape(), sp.dimension, x[0].is_tracer()));
      const std::vector<Value> all = bind(p, in, sp);
      JvpOut r;
      r.primals.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(x.size()));
      r.tangents.assign(x.size(), std::nullopt);
      for (std::size_t k = 0; k < x.size(); ++k)
        if (t[k]) r.tangents[k] = take_along_axis(instantiate(t[k], x[k]), all.back(), sp.dimension);
      return r;
    }
    case Kind::contraction: {
      const Value y = op(p, x, params);
      Tangent ta, tb;
      if (t[0]) ta = op(p, {fit(*t[0], x[0].shape()), x[1]}, params);
      if (t[1]) tb = op(p, {x[0], fit(*t[1], x[1].shape())}, params);
      return {{y}, {plus(ta, tb, y.shape())}};
    }
    case Kind::effect: return {bind(p, x, params), {}};  // debug_callback: no outputs; it prints the primals
    case Kind::control: break;                             // jvp_missing
  }
  internal_error("jvp: no rule for " + std::string(prim_name(p)));
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
