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
// Tangents have the primal's dtype; only floating-point and complex values
// have them (an integer or boolean result has none, as JAX's float0). The
// non-holomorphic complex primitives (real, imag, conj, complex, abs of a
// complex value) have their rules in transform/jvp_complex.hpp. A primitive
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

// Whether values of dtype `d` carry tangents: the real and complex floats
// (a complex value's tangent is complex: JAX's convention,
// docs/transformations.md "Complex numbers").
inline bool differentiable_dtype(DType d) { return is_float(d) || is_complex(d); }

// Primitives with no JVP rule yet (differentiating through one of them is a
// TypeError), and why. Primitives whose outputs are never floating point
// (comparisons, bit operations, argmax, ...) need no rule and are not here.
inline const char* jvp_missing(Prim p) {
  switch (p) {
    case Prim::pmax:
    case Prim::pmin: return "JAX defines no derivative of pmax/pmin either (which rank's block is chosen is not smooth)";
    default: return nullptr;
  }
}

// The rules of the non-holomorphic complex primitives (real, imag, conj,
// complex, abs of a complex value), nullopt for every other primitive.
// Defined in transform/jvp_complex.hpp.
std::optional<JvpOut> complex_jvp(Prim p, const std::vector<Value>& x, const std::vector<std::optional<Value>>& t,
                                  const Params& params);

// Out of line (DYNSTAGE_IMPLEMENTATION): the rules reach most of the trace layer.
JvpOut jvp_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params);
// The control-flow primitives' rule (transform/jvp_control.hpp): the bodies
// differentiated into bodies that also carry tangents, the primitive bound again.
JvpOut control_jvp(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params);

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

// psi''(x), trigamma's derivative (JAX: polygamma(2, x)), from primitives
// that have derivatives themselves (so hessians go on): for x > 0 the
// recurrence psi''(x) = psi''(x + 8) - 2 sum_{k<8} (x + k)^-3 and the
// asymptotic series at z = x + 8 >= 8,
//   psi''(z) ~ -1/z^2 - 1/z^3 - 1/(2 z^4) + 1/(6 z^6) - 1/(6 z^8) + 3/(10 z^10) - 5/(6 z^12)
// (the next term, 691/(210 z^14), is below 1e-10 of the sum); for x <= 0
// the reflection psi''(x) = psi''(1 - x) - 2 pi^3 cos(pi x) / sin(pi x)^3.
inline Value polygamma2(const Value& x) {
  const DType dt = x.dtype();
  auto positive = [&](const Value& a) {
    Value inv_cubes = lit(dt, 0);
    for (int k = 0; k < 8; ++k) {
      const Value ak = add(a, lit(dt, k));
      inv_cubes = add(inv_cubes, div(lit(dt, 1), mul(mul(ak, ak), ak)));
    }
    const Value w = div(lit(dt, 1), add(a, lit(dt, 8))), w2 = mul(w, w);
    Value poly = lit(dt, -5.0 / 6.0);
    for (double c : {3.0 / 10.0, -1.0 / 6.0, 1.0 / 6.0, -0.5, -1.0}) poly = add(mul(poly, w2), lit(dt, c));
    const Value series = sub(mul(poly, w2), mul(w2, w));  // ... - w^2 - w^3
    return sub(series, mulc(inv_cubes, 2));
  };
  constexpr double pi = 3.14159265358979323846;
  const Value px = mulc(x, pi), s = op(Prim::sin, {px});
  const Value reflection = mulc(div(op(Prim::cos, {px}), mul(mul(s, s), s)), 2 * pi * pi * pi);
  const Value reflected = sub(positive(sub(lit(dt, 1), x)), reflection);
  return select(op(Prim::gt, {x, lit(dt, 0)}), positive(x), reflected);
}

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
    case Prim::lgamma: return op(Prim::digamma, {x});
    case Prim::digamma: return op(Prim::trigamma, {x});  // JAX: polygamma(1, x)
    case Prim::trigamma: return polygamma2(x);              // JAX: polygamma(2, x)
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

// reduce_prod and cumprod: the product rule, d(prod x) = sum_i t_i prod_{j != i} x_j,
// made exact at zeros by counting them (JAX's _reduce_prod_jvp_rule is also
// exact at zeros, by a tree of pairwise products; this form needs only the
// primitive and its additive counterpart, so dynamic sizes and reversed
// cumulative products need nothing more). With z the number of zeros in a
// product and P the product of its nonzero factors, prod_{j != i} x_j is
// P / x_i when z = 0, P for the one zero x_i when z = 1, and 0 when z >= 2:
//   tangent = P * sum(t / x')   where z = 0  (x': x with zeros set to 1)
//             P * sum(t * [x == 0])   where z = 1
//             0                       where z >= 2
// the sums being reduce_sum (cumsum) with the primitive's params.
inline JvpOut product_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                           const Params& params) {
  const Value y = op(p, x, params);
  if (!t[0]) return {{y}, {std::nullopt}};
  const Prim sum = p == Prim::reduce_prod ? Prim::reduce_sum : Prim::cumsum;
  const DType dt = x[0].dtype();
  const Value tx = instantiate(t[0], x[0]);
  const Value is0 = op(Prim::eq, {x[0], lit(dt, 0)});
  const Value zero = as_dtype(is0, dt);
  const Value safe = select(is0, lit(dt, 1), x[0]);
  const Value z = op(sum, {zero}, params);
  const Value prod_nz = op(p, {safe}, params);
  const Value none_zero = mul(prod_nz, op(sum, {div(tx, safe)}, params));
  const Value one_zero = mul(prod_nz, op(sum, {mul(tx, zero)}, params));
  return {{y}, {select(op(Prim::eq, {z, lit(dt, 0)}), none_zero,
                       select(op(Prim::eq, {z, lit(dt, 1)}), one_zero, lit(dt, 0)))}};
}

// cummax / cummin: the tangent of the element that is the running extremum.
// Element i is a record where it equals the running result (x_i == y_i); the
// element y_k comes from is the last record at or before k in the scan's
// direction: a cummax (reverse: cummin) of the records' positions, other
// positions -1 (reverse: INT32_MAX), which the first element of the scan
// (always a record) overrides. The tangents are gathered there
// (take_along_axis). At a tie the latest tied element's tangent is taken
// (JAX differentiates the associative scan of max, which averages tied
// pairs); away from ties the two agree.
inline JvpOut cumulative_chooser(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                                 const Params& params) {
  const Value y = op(p, x, params);
  if (!t[0]) return {{y}, {std::nullopt}};
  const CumulativeParams cp = std::get<CumulativeParams>(params);
  const Value pos = iota(DType::i32, x[0].shape(), cp.axis, x[0].is_tracer());
  const Value none = lit(DType::i32, cp.reverse ? 2147483647.0 : -1.0);
  const Value from = op(cp.reverse ? Prim::cummin : Prim::cummax, {select(op(Prim::eq, {x[0], y}), pos, none)}, params);
  return {{y}, {take_along_axis(instantiate(t[0], x[0]), from, cp.axis)}};
}

inline Value ones_like(const Value& x) {
  return broadcast_to_shape(lit(x.dtype(), 1), x.shape(), "jvp", x.is_tracer());
}

// scatter-mul: out = x * (the product of the updates that land there).
// Linear in x: the same scatter-mul of x's tangent. In the updates, the
// product rule of product_rule per position, with scatters for the sums:
// Z (the count of zero updates) and the sums are scatter-adds, P (the
// product of the nonzero updates) a scatter-mul into ones. JAX's
// _scatter_mul_jvp_rhs (x * scatter_add(0, i, t_u)... divided out) requires
// unique indices; this form takes duplicates and zeros. Dropped updates
// (out of bounds) drop out of every scatter alike.
inline JvpOut scatter_mul_rule(const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params) {
  const Value y = op(Prim::scatter_mul, x, params);
  if (!t[0] && !t[2]) return {{y}, {std::nullopt}};
  const Value &idx = x[1], &u = x[2];
  const DType dt = y.dtype();
  Tangent r;
  if (t[0]) r = op(Prim::scatter_mul, {instantiate(t[0], x[0]), idx, u}, params);
  if (t[2]) {
    const Value tu = instantiate(t[2], u);
    const Value zeros = zeros_like(x[0]);
    const Value is0 = op(Prim::eq, {u, lit(dt, 0)});
    const Value zero = as_dtype(is0, dt);
    const Value safe = select(is0, lit(dt, 1), u);
    const Value z = op(Prim::scatter_add, {zeros, idx, zero}, params);
    const Value prod_nz = op(Prim::scatter_mul, {ones_like(x[0]), idx, safe}, params);
    const Value none_zero = mul(prod_nz, op(Prim::scatter_add, {zeros, idx, div(tu, safe)}, params));
    const Value one_zero = mul(prod_nz, op(Prim::scatter_add, {zeros, idx, mul(tu, zero)}, params));
    const Value d = select(op(Prim::eq, {z, lit(dt, 0)}), none_zero,
                           select(op(Prim::eq, {z, lit(dt, 1)}), one_zero, lit(dt, 0)));
    r = plus(r, mul(x[0], d), y.shape());
  }
  return {{y}, {r}};
}

// scatter-min / scatter-max: JAX's chooser rule (_scatter_extremal_jvp):
// each result element takes the mean of the tangents of the values that
// equal it, the operand's (if it was kept) and the updates' that won. Which
// updates won is read by the scatter's inverse gather of the result at the
// updates' windows; a dropped (out of bounds) update may read a clamped
// element, but its share goes through scatter-adds that drop it again.
inline JvpOut scatter_chooser(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                              const Params& params) {
  const Value y = op(p, x, params);
  if (!t[0] && !t[2]) return {{y}, {std::nullopt}};
  const ScatterParams& sp = std::get<ScatterParams>(params);
  const Value &idx = x[1], &u = x[2];
  const DType dt = y.dtype();
  GatherParams g{sp.update_window_dims, sp.inserted_window_dims, sp.scatter_dims_to_operand_dims, {}};
  std::vector<Value> gin{y, idx};
  const Shape us = u.shape();
  std::size_t w = 0;
  for (std::int64_t a = 0; a < x[0].rank(); ++a) {
    if (std::find(sp.inserted_window_dims.begin(), sp.inserted_window_dims.end(), a) != sp.inserted_window_dims.end()) {
      g.slice_sizes.push_back(1);
      continue;
    }
    const Dim d = us.at(static_cast<std::size_t>(sp.update_window_dims.at(w++)));
    if (d.is_static()) {
      g.slice_sizes.push_back(d.value());
    } else {
      g.slice_sizes.push_back(kDynamicDim);
      gin.push_back(current_trace()->dim_operand(d));
    }
  }
  const Value won = as_dtype(op(Prim::eq, {u, op(Prim::gather, gin, g)}), dt);
  const Value kept = as_dtype(op(Prim::eq, {x[0], y}), dt);
  const Value zeros = zeros_like(x[0]);
  const Value count = add(kept, op(Prim::scatter_add, {zeros, idx, won}, params));
  const Value sum = add(mul(kept, instantiate(t[0], x[0])),
                        op(Prim::scatter_add, {zeros, idx, mul(won, instantiate(t[2], u))}, params));
  return {{y}, {div(sum, op(Prim::max, {count, lit(dt, 1)}))}};
}

// clamp(lo, x, hi) = min(max(x, lo), hi): the tangent of whichever operand
// the result is: hi's where max(x, lo) > hi (also where lo > hi, whatever
// x is), else lo's where x < lo, else x's. A tie of x with a bound takes x's
// tangent (JAX's rule gives zero there, although clamp(lo, x, x) is x).
inline JvpOut clamp_rule(const std::vector<Value>& x, const std::vector<Tangent>& t) {
  const Value y = op(Prim::clamp, x);
  if (!t[0] && !t[1] && !t[2]) return {{y}, {std::nullopt}};
  const Shape out = y.shape();
  const Value below = op(Prim::lt, {x[1], x[0]}), above = op(Prim::gt, {op(Prim::max, {x[1], x[0]}), x[2]});
  const Value r = select(fit(above, out), instantiate(t[2], y), select(fit(below, out), instantiate(t[0], y),
                                                                        instantiate(t[1], y)));
  return {{y}, {r}};
}

}  // namespace jvp_detail

JvpOut jvp_rule(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params) {
  using namespace jvp_detail;
  if (const char* why = jvp_missing(p))
    fail<TypeError>("jvp: cannot differentiate through " + std::string(prim_name(p)) + ": " + why);
  if (std::optional<JvpOut> c = complex_jvp(p, x, t, params)) return *c;
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
      // Between real and complex dtypes too: the conversion is real-linear
      // (to complex: an imaginary part of 0; from complex: the real part).
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
    case Kind::scatter:
      if (p == Prim::scatter_mul) return scatter_mul_rule(x, t, params);
      if (p == Prim::scatter_min || p == Prim::scatter_max) return scatter_chooser(p, x, t, params);
      return linear_in(p, x, t, params, {0, 2});  // scatter, scatter-add: linear in operand and updates
    case Kind::reduction:
      // reduce_sum; segment_sum_offsets: linear in data, the offsets' tangent (integers) is none
      if (p == Prim::reduce_sum || p == Prim::segment_sum_offsets) return linear_in_first(p, x, t, params);
      if (p == Prim::reduce_max || p == Prim::reduce_min) return chooser_reduce(p, x, t, params);
      if (p == Prim::reduce_prod) return product_rule(p, x, t, params);
      return {{op(p, x, params)}, {std::nullopt}};  // boolean and index results
    case Kind::cumulative:
      if (p == Prim::cumprod) return product_rule(p, x, t, params);
      if (p == Prim::cummax || p == Prim::cummin) return cumulative_chooser(p, x, t, params);
      return linear_in_first(p, x, t, params);  // cumsum
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
    case Kind::fft: return linear_in_first(p, x, t, params);  // linear: the tangent's transform (JAX's deflinear2)
    case Kind::contraction: {
      const Value y = op(p, x, params);
      Tangent ta, tb;
      if (t[0]) ta = op(p, {fit(*t[0], x[0].shape()), x[1]}, params);
      if (t[1]) tb = op(p, {x[0], fit(*t[1], x[1].shape())}, params);
      return {{y}, {plus(ta, tb, y.shape())}};
    }
    case Kind::effect: return {bind(p, x, params), {}};  // debug_callback: no outputs; it prints the primals
    case Kind::collective: {
      // psum, all_gather, ppermute, all_to_all are linear: the tangent goes
      // through the same collective (JAX's deflinear2). axis_index has no
      // tangent. Staged whenever tracing: a rank's index or block is never a
      // constant of the program.
      const std::vector<Value> y = bind(p, x, params, /*stage=*/true);
      if (p == Prim::axis_index || !t[0]) return {y, {std::nullopt}};
      return {y, {Tangent(bind(p, {instantiate(t[0], x[0])}, params, /*stage=*/true).at(0))}};
    }
    case Kind::control: return control_jvp(p, x, t, params);
  }
  internal_error("jvp: no rule for " + std::string(prim_name(p)));
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
