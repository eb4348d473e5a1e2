// dynstage: the numpy layer's math functions of API.md section 13 that
// jax.numpy composes from other primitives (log2, log10, isnan, isinf,
// isfinite on integers, hypot, logical_and/or/xor/not), and the two that
// bind a primitive with parameters or an extra rule (integer_pow,
// nextafter). Each follows jax/_src/numpy/ufuncs.py equation by equation, so
// the jaxpr reads as JAX's. Non-template code over detail::Value, as
// numpy.hpp.
#pragma once

#include <cmath>
#include <string>

#include "numpy.hpp"

namespace dyn::detail {

Value log2(const Value& x);
Value log10(const Value& x);
Value isnan(const Value& x);
Value isinf(const Value& x);
Value is_finite(const Value& x);
Value hypot(Value a, Value b);
Value logical(Prim p, Value a, Value b);  // p: and_, or_, xor_
Value logical_not(const Value& x);
Value integer_pow(const Value& x, int n);
Value real(const Value& x);
Value imag(const Value& x);
Value conj(const Value& x);
Value angle(const Value& x);
Value make_complex(Value re, Value im);

#ifdef DYNSTAGE_IMPLEMENTATION

namespace math_detail {
// A strong rank-0 constant of float dtype d (ufuncs.py's _constant_like and
// lax._const: np.array(v, dtype)), rounded to d.
inline Value float_const(double v, DType d) {
  if (d == DType::f32) return scalar_value(Scalar::of<float>(static_cast<float>(v)), false);
  return scalar_value(Scalar::of<double>(v), false);
}
// A strong rank-0 zero of dtype d.
inline Value zero_of(DType d) {
  Scalar s;
  s.dtype = d;
  return scalar_value(s, false);
}
// The operand in the dtype a float-only function computes it in (jnp's
// promote_args_inexact: integers and bools to f32).
inline Value inexact_operand(const Value& x) {
  return is_float(x.dtype()) ? x : convert(x, inexact(x.type_info()).dtype, x.weak);
}
// lax.full_like(x, v, dtype=bool): the answer of isinf/isfinite for a
// non-float x, staged when x is traced.
inline Value full_bool_like(const Value& x, bool v, std::string_view op) {
  std::vector<Value> vs{x};
  const Value b = scalar_value(Scalar::of<bool>(v), false);
  return x.rank() == 0 ? b : broadcast_to_shape(b, x.shape(), op, any_tracer(vs));
}
}  // namespace math_detail

// jnp.log2: div(log(x), log(2)), log(2) a constant of x's dtype.
Value log2(const Value& x) {
  const Value xf = math_detail::inexact_operand(x);
  const DType d = xf.dtype();
  const double ln2 = d == DType::f32 ? static_cast<double>(std::log(2.0f)) : std::log(2.0);
  return binary(Prim::div, unary(Prim::log, xf), math_detail::float_const(ln2, d));
}

// jnp.log10: mul(log(x), 1 / log(10)) with the constant rounded to x's dtype.
Value log10(const Value& x) {
  const Value xf = math_detail::inexact_operand(x);
  return binary(Prim::mul, unary(Prim::log, xf), math_detail::float_const(0.4342944819032518, xf.dtype()));
}

// jnp.isnan: ne(x, x), for every dtype (always false for integers).
Value isnan(const Value& x) { return compare(Prim::ne, x, x); }

// jnp.isinf: eq(abs(x), inf) for floats; either part infinite for complex
// values (jnp's isinf(real) | isinf(imag)); all false otherwise.
Value isinf(const Value& x) {
  if (is_complex(x.dtype())) return binary(Prim::or_, isinf(real(x)), isinf(imag(x)));
  if (!is_float(x.dtype())) return math_detail::full_bool_like(x, false, "isinf");
  return compare(Prim::eq, unary(Prim::abs, x), math_detail::float_const(INFINITY, x.dtype()));
}

// jnp.isfinite: the primitive is_finite for floats; both parts finite for
// complex values; all true otherwise.
Value is_finite(const Value& x) {
  if (is_complex(x.dtype())) return binary(Prim::and_, is_finite(real(x)), is_finite(imag(x)));
  if (!is_float(x.dtype())) return math_detail::full_bool_like(x, true, "isfinite");
  return bind1(Prim::is_finite, {x});
}

// jnp.hypot, as ufuncs.py writes it (overflow-free: the larger magnitude
// times sqrt(1 + (smaller / larger)^2), inf if either is inf):
//   x1, x2 = abs(x1), abs(x2)
//   idx_inf = isposinf(x1) | isposinf(x2)
//   x1, x2 = maximum(x1, x2), minimum(x1, x2)
//   x = where(x1 == 0, x1, x1 * sqrt(1 + square(x2 / where(x1 == 0, 1, x1))))
//   return where(idx_inf, inf, x)
Value hypot(Value a, Value b) {
  std::vector<Value> vs{std::move(a), std::move(b)};
  promote_and_broadcast("hypot", vs, inexact(result_type(vs)));
  Value x1 = unary(Prim::abs, vs[0]);
  Value x2 = unary(Prim::abs, vs[1]);
  const DType d = x1.dtype();
  const Value inf = math_detail::float_const(INFINITY, d);
  const Value idx_inf = binary(Prim::or_, compare(Prim::eq, x1, inf), compare(Prim::eq, x2, inf));
  const Value hi = binary(Prim::max, x1, x2);
  const Value lo = binary(Prim::min, x1, x2);
  const Value zero = scalar_value(Scalar::of<double>(0.0), true);  // the Python 0 of `x1 == 0`
  const Value is_zero = compare(Prim::eq, hi, zero);
  const Value safe = where(compare(Prim::eq, hi, zero), math_detail::float_const(1.0, d), hi);
  const Value one = scalar_value(Scalar::of<double>(1.0), true);
  const Value r = binary(Prim::mul, hi,
                         unary(Prim::sqrt, binary(Prim::add, one, unary(Prim::square, binary(Prim::div, lo, safe)))));
  const Value x = where(is_zero, hi, r);
  return where(idx_inf, inf, x);
}

// jnp.logical_and/or/xor: the operands promoted together, each made bool
// (ne(x, 0) unless it is), then the bitwise primitive.
Value logical(Prim p, Value a, Value b) {
  std::vector<Value> vs{std::move(a), std::move(b)};
  promote_and_broadcast(prim_name(p), vs, result_type(vs));
  for (auto& v : vs)
    if (v.dtype() != DType::bool_) v = compare(Prim::ne, v, math_detail::zero_of(v.dtype()));
  return binary(p, vs[0], vs[1]);
}

// jnp.logical_not: not(x != 0).
Value logical_not(const Value& x) {
  const Value b = x.dtype() == DType::bool_ ? x : compare(Prim::ne, x, math_detail::zero_of(x.dtype()));
  return unary(Prim::not_, b);
}

// lax.integer_pow(x, n): the primitive with its exponent as parameter y.
Value integer_pow(const Value& x, int n) { return bind1(Prim::integer_pow, {x}, IntegerPowParams{n}); }

// ---------------------------------------------------------------------------
// Complex numbers (jnp.real, jnp.imag, jnp.conj, jnp.angle, lax.complex).

// jnp.real: the primitive real of a complex x; any other x is itself.
Value real(const Value& x) { return is_complex(x.dtype()) ? bind1(Prim::real, {x}) : x; }

// jnp.imag: the primitive imag of a complex x; zeros of x's dtype for any
// other (lax.full_like(x, 0)).
Value imag(const Value& x) {
  if (is_complex(x.dtype())) return bind1(Prim::imag, {x});
  std::vector<Value> vs{x};
  const Value z = math_detail::zero_of(x.dtype());
  return x.rank() == 0 ? z : broadcast_to_shape(z, x.shape(), "imag", any_tracer(vs));
}

// jnp.conj: the primitive conj[input_dtype] of a complex x; any other x is
// itself (jnp.conjugate binds conj only for complex operands).
Value conj(const Value& x) {
  return is_complex(x.dtype()) ? bind1(Prim::conj, {x}, ConjParams{x.dtype()}) : x;
}

// jnp.angle: atan2(imag(z), real(z)), in a float dtype (integers and bools
// as f32).
Value angle(const Value& x) {
  const Value z = is_complex(x.dtype()) ? x : math_detail::inexact_operand(x);
  return binary(Prim::atan2, imag(z), real(z));
}

// lax.complex(re, im): re + im*1j, both parts promoted to one real float
// dtype (integers and bools to f32) and broadcast; a complex part is a
// TypeError from the primitive's dtype rule.
Value make_complex(Value re, Value im) {
  std::vector<Value> vs{std::move(re), std::move(im)};
  promote_and_broadcast("complex", vs, inexact(result_type(vs)));
  return bind1(Prim::complex, vs);
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
