// dynstage: the user-facing math functions of API.md section 13 that are
// not one unary primitive each (those are DYN_UNARY lines in ops.hpp):
// log2, log10, isnan, isinf, is_finite, integer_pow, hypot, nextafter and
// logical_and/or/xor/not. One-liners over the numpy layer
// (numpy_math.hpp), as ops.hpp.
#pragma once

#include <type_traits>

#include "numpy_math.hpp"
#include "ops.hpp"

namespace dyn {

// log2(x), log10(x) (jnp.log2, jnp.log10): log(x) divided by log(2), times
// 1/log(10); integers and bools are computed in f32.
template <ArrayLike X>
auto log2(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::inexact_t<detail::elem_t<X>>;
  return detail::from_value<detail::result_of_t<T, X>>(detail::log2(detail::to_value(x)));
}
template <ArrayLike X>
auto log10(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::inexact_t<detail::elem_t<X>>;
  return detail::from_value<detail::result_of_t<T, X>>(detail::log10(detail::to_value(x)));
}

// isnan, isinf, is_finite (jnp.isnan, jnp.isinf, jnp.isfinite): bool arrays;
// an integer or bool operand is never NaN or infinite.
template <ArrayLike X>
auto isnan(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, X>>(detail::isnan(detail::to_value(x)));
}
template <ArrayLike X>
auto isinf(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, X>>(detail::isinf(detail::to_value(x)));
}
template <ArrayLike X>
auto is_finite(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, X>>(detail::is_finite(detail::to_value(x)));
}

// integer_pow(x, n) (lax.integer_pow): x ** n for a C++ int n, by repeated
// squaring; same dtype out. The exponent is a compile-time parameter of the
// program, so a traced exponent does not compile (use dyn::pow). A negative
// n of an integer x raises dyn::TypeError.
template <ArrayLike X>
auto integer_pow(const X& x, int n, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::integer_pow(detail::to_value(x), n));
}

template <ArrayLike X, class N>
  requires(!std::is_arithmetic_v<N>)
auto integer_pow(const X&, const N&, detail::Loc = detail::Loc::current()) {
  static_assert(detail::dependent_false<N>,
                "dyn::integer_pow: the exponent must be a C++ int (lax.integer_pow's parameter y), known when "
                "the program is traced; for a traced exponent use dyn::pow(x, n).");
}

// hypot(a, b) (jnp.hypot): sqrt(a^2 + b^2) without overflow; nextafter(a,
// b) (lax.nextafter): the next representable float after a toward b. Both
// computed in a float dtype.
template <class A, class B> requires detail::BinaryOperands<A, B>
auto hypot(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::inexact_t<detail::promoted_t<A, B>>;
  return detail::from_value<detail::result_of_t<T, A, B>>(detail::hypot(detail::to_value(a), detail::to_value(b)));
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto nextafter(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::inexact_t<detail::promoted_t<A, B>>;
  return detail::from_value<detail::result_of_t<T, A, B>>(
      detail::binary(detail::Prim::nextafter, detail::to_value(a), detail::to_value(b)));
}

// ---------------------------------------------------------------------------
// Complex numbers: element types std::complex<float> (c64) and
// std::complex<double> (c128).

// real(x), imag(x) (jnp.real, jnp.imag): the parts of a complex x, of the
// real dtype of its width (c64 -> f32); a real x is its own real part and
// has zeros as imaginary part.
template <ArrayLike X>
auto real(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::real_t<detail::elem_t<X>>, X>>(
      detail::real(detail::to_value(x)));
}
template <ArrayLike X>
auto imag(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::real_t<detail::elem_t<X>>, X>>(
      detail::imag(detail::to_value(x)));
}
// conj(x) (jnp.conj): the complex conjugate; a real x is itself.
template <ArrayLike X>
auto conj(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::conj(detail::to_value(x)));
}
// angle(x) (jnp.angle): the argument atan2(imag(x), real(x)), real (c64 ->
// f32; integers and bools are computed in f32).
template <ArrayLike X>
auto angle(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::real_t<detail::inexact_t<detail::elem_t<X>>>;
  return detail::from_value<detail::result_of_t<T, X>>(detail::angle(detail::to_value(x)));
}
// complex(re, im) (lax.complex, primitive complex): re + im * 1j from two
// real operands, promoted to one float dtype (f32 -> c64, f64 -> c128;
// integers as f32) and broadcast. A complex operand does not compile.
template <class A, class B> requires detail::BinaryOperands<A, B>
auto complex(const A& re, const B& im, detail::Loc loc = detail::Loc::current()) {
  static_assert(!detail::any_complex_v<A, B>,
                "dyn::complex(re, im): the parts must be real (lax.complex takes floating-point operands)");
  detail::OpSite site(loc);
  using T = std::complex<detail::inexact_t<detail::promoted_t<A, B>>>;
  return detail::from_value<detail::result_of_t<T, A, B>>(
      detail::make_complex(detail::to_value(re), detail::to_value(im)));
}

// logical_and/or/xor/not (jnp.logical_*): operands of any dtype, nonzero
// is true; a bool result.
template <class A, class B> requires detail::BinaryOperands<A, B>
auto logical_and(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, A, B>>(
      detail::logical(detail::Prim::and_, detail::to_value(a), detail::to_value(b)));
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto logical_or(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, A, B>>(
      detail::logical(detail::Prim::or_, detail::to_value(a), detail::to_value(b)));
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto logical_xor(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, A, B>>(
      detail::logical(detail::Prim::xor_, detail::to_value(a), detail::to_value(b)));
}
template <ArrayLike X>
auto logical_not(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<bool, X>>(detail::logical_not(detail::to_value(x)));
}

}  // namespace dyn
