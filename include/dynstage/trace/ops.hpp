// dynstage: the user-facing operations (API.md §4, §8).
//
// Every function here is a one-liner: compute the static result type, turn
// the operands into detail::Values, call the numpy layer (numpy.hpp), wrap the
// result. Operands may be tracers, concrete arrays or C++ scalars (weak
// literals); the result is a Tracer<T> if any operand is traced, else an
// Array<T> computed at once. The static element type is computed with the
// same promote_types the runtime uses, so the two cannot disagree.
//
// Named functions take a defaulted std::source_location so that errors name
// the user's line; operators cannot, and rely on the trace's location.
//
// This header: operators, elementwise functions, reductions, linear
// algebra. The operations that take sizes (shape operations, creation) are
// ops_shape.hpp.
#pragma once

#include <initializer_list>
#include <source_location>
#include <vector>

#include "numpy.hpp"
#include "numpy_shape.hpp"
#include "tracer.hpp"

namespace dyn {

namespace detail {

template <class A, class B>
using promoted_t = element_t<promote_types(info_of<A>(), info_of<B>()).dtype>;

template <class A, class B, class C>
using promoted3_t = element_t<promote_types(promote_types(info_of<A>(), info_of<B>()), info_of<C>()).dtype>;

template <class T>
using inexact_t = std::conditional_t<std::is_floating_point_v<T> || is_complex_v<T>, T, float>;

// The real type of a complex element type's parts (std::complex<float> ->
// float); other types are their own.
template <class T>
using real_t = real_part_t<T>;

// A unary function's result element type, from its primitive's dtype rule
// (abs of a complex value is real, as lax.abs).
template <Prim P, class T>
using unary_result_t = std::conditional_t<
    prim_info(P).dtypes == DTypeSet::floating || prim_info(P).dtypes == DTypeSet::inexact, inexact_t<T>,
    std::conditional_t<P == Prim::abs, real_t<T>, T>>;

// Whether primitive P's dtype rule takes complex operands: an operation
// whose C++ operand type is complex and whose primitive does not (ordering,
// floor, %, bit operations, ...) fails to compile with a static_assert
// naming it (JAX raises TypeError when tracing; a hand-built jaxpr still
// meets the primitive's dtype rule).
template <Prim P>
inline constexpr bool takes_complex_v = dtype_in(DType::c64, prim_info(P).dtypes);
template <class... X>
inline constexpr bool any_complex_v = (is_complex_v<elem_t<X>> || ...);

template <class A, class B>
concept BinaryOperands = Operand<A> && Operand<B> && (ArrayLike<A> || ArrayLike<B>);

// Bit operations (& | ^ ~ << >>, population_count, clz) take bools and
// integers: a floating-point operand, whose type C++ knows, does not compile
// (JAX raises a TypeError when tracing; in a hand-built jaxpr the
// primitive's dtype rule still does).
template <class X>
concept NotFloatingPoint = !std::is_floating_point_v<elem_t<X>> && !is_complex_v<elem_t<X>>;
template <class A, class B>
concept BitOperands = BinaryOperands<A, B> && NotFloatingPoint<A> && NotFloatingPoint<B>;

template <Prim P, class A, class B>
auto arith(const A& a, const B& b) {
  static_assert(takes_complex_v<P> || !any_complex_v<A, B>,
                "dynstage: this operation (%, maximum, minimum, bit operations, ...) is not defined for complex "
                "numbers (std::complex<T> operands): complex numbers have no order and no bits (JAX raises "
                "TypeError)");
  using T = promoted_t<A, B>;
  return from_value<result_of_t<T, A, B>>(binary(P, to_value(a), to_value(b)));
}

template <Prim P, class A, class B>
auto cmp(const A& a, const B& b) {
  static_assert(takes_complex_v<P> || !any_complex_v<A, B>,
                "dynstage: ordering comparisons (< <= > >=) are not defined for complex numbers (std::complex<T> "
                "operands); only == and != are (JAX raises TypeError)");
  return from_value<result_of_t<bool, A, B>>(compare(P, to_value(a), to_value(b)));
}

template <Prim P, class T, class X>
auto un(const X& x, const std::source_location& loc) {
  static_assert(takes_complex_v<P> || !any_complex_v<X>,
                "dynstage: this function (floor, ceil, round, sign, log1p, tan, ...) is not defined for complex "
                "numbers (a std::complex<T> operand) in dynstage; see docs/jaxpr.md, \"Complex numbers\"");
  OpSite site(loc);
  return from_value<result_of_t<T, X>>(unary(P, to_value(x)));
}

using Loc = std::source_location;

}  // namespace detail

// ---------------------------------------------------------------------------
// Operators.

template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator+(const A& a, const B& b) { return detail::arith<detail::Prim::add>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator-(const A& a, const B& b) { return detail::arith<detail::Prim::sub>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator*(const A& a, const B& b) { return detail::arith<detail::Prim::mul>(a, b); }
// Integer operands divide with truncation toward zero (lax.div, C++ `/`).
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator/(const A& a, const B& b) { return detail::arith<detail::Prim::div>(a, b); }
// Remainder with the dividend's sign (lax.rem, C++ `%`, std::fmod).
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator%(const A& a, const B& b) { return detail::arith<detail::Prim::rem>(a, b); }

template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator==(const A& a, const B& b) { return detail::cmp<detail::Prim::eq>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator!=(const A& a, const B& b) { return detail::cmp<detail::Prim::ne>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator<(const A& a, const B& b) { return detail::cmp<detail::Prim::lt>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator<=(const A& a, const B& b) { return detail::cmp<detail::Prim::le>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator>(const A& a, const B& b) { return detail::cmp<detail::Prim::gt>(a, b); }
template <class A, class B> requires detail::BinaryOperands<A, B>
auto operator>=(const A& a, const B& b) { return detail::cmp<detail::Prim::ge>(a, b); }

// Logical on bool, bitwise on integers (primitives and, or, xor, not);
// floating-point operands do not compile (detail::BitOperands).
template <class A, class B> requires detail::BitOperands<A, B>
auto operator&(const A& a, const B& b) { return detail::arith<detail::Prim::and_>(a, b); }
template <class A, class B> requires detail::BitOperands<A, B>
auto operator|(const A& a, const B& b) { return detail::arith<detail::Prim::or_>(a, b); }
template <class A, class B> requires detail::BitOperands<A, B>
auto operator^(const A& a, const B& b) { return detail::arith<detail::Prim::xor_>(a, b); }
// Shifts of integers (jnp.left_shift, jnp.right_shift): `>>` is arithmetic for
// a signed and logical for an unsigned dtype (after promotion); an amount >=
// the bit width or negative gives XLA's result (0, or the sign fill).
template <class A, class B> requires detail::BitOperands<A, B>
auto operator<<(const A& a, const B& b) { return detail::arith<detail::Prim::shift_left>(a, b); }
template <class A, class B> requires detail::BitOperands<A, B>
auto operator>>(const A& a, const B& b) {
  using T = detail::promoted_t<A, B>;
  return detail::from_value<detail::result_of_t<T, A, B>>(detail::right_shift(detail::to_value(a), detail::to_value(b)));
}

template <ArrayLike X>
auto operator-(const X& x) { return detail::un<detail::Prim::neg, detail::elem_t<X>>(x, std::source_location::current()); }
template <ArrayLike X>
auto operator!(const X& x) { return detail::un<detail::Prim::not_, detail::elem_t<X>>(x, std::source_location::current()); }
template <ArrayLike X> requires detail::NotFloatingPoint<X>
auto operator~(const X& x) { return detail::un<detail::Prim::not_, detail::elem_t<X>>(x, std::source_location::current()); }

// The number of set bits, and of leading zero bits (lax.population_count,
// lax.clz), of each element of an integer array; same dtype out.
template <ArrayLike X> requires detail::NotFloatingPoint<X>
auto population_count(const X& x, detail::Loc loc = detail::Loc::current()) {
  return detail::un<detail::Prim::population_count, detail::elem_t<X>>(x, loc);
}
template <ArrayLike X> requires detail::NotFloatingPoint<X>
auto clz(const X& x, detail::Loc loc = detail::Loc::current()) {
  return detail::un<detail::Prim::clz, detail::elem_t<X>>(x, loc);
}

// ---------------------------------------------------------------------------
// Elementwise functions.

// The result's element type follows the primitive's dtype rule (prims.hpp):
// a float-only function computes integers and bools in f32 (jnp.exp(int32)).
#define DYN_UNARY(name)                                                                           \
  template <ArrayLike X>                                                                          \
  auto name(const X& x, detail::Loc loc = detail::Loc::current()) {                               \
    using R = detail::unary_result_t<detail::Prim::name, detail::elem_t<X>>;                      \
    return detail::un<detail::Prim::name, R>(x, loc);                                             \
  }
DYN_UNARY(neg)
DYN_UNARY(abs)
DYN_UNARY(sign)
DYN_UNARY(floor)
DYN_UNARY(ceil)
DYN_UNARY(round)
DYN_UNARY(exp)
DYN_UNARY(log)
DYN_UNARY(log1p)
DYN_UNARY(sqrt)
DYN_UNARY(rsqrt)
DYN_UNARY(sin)
DYN_UNARY(cos)
DYN_UNARY(tan)
DYN_UNARY(tanh)
DYN_UNARY(logistic)
DYN_UNARY(expm1)
DYN_UNARY(exp2)
DYN_UNARY(cbrt)
DYN_UNARY(sinh)
DYN_UNARY(cosh)
DYN_UNARY(asin)
DYN_UNARY(acos)
DYN_UNARY(atan)
DYN_UNARY(asinh)
DYN_UNARY(acosh)
DYN_UNARY(atanh)
DYN_UNARY(erf)
DYN_UNARY(erfc)
DYN_UNARY(lgamma)
DYN_UNARY(erf_inv)
DYN_UNARY(digamma)   // lax.digamma, jax.scipy.special.digamma
DYN_UNARY(trigamma)  // polygamma(1, x): jax.scipy.special.polygamma(1, x)
#undef DYN_UNARY

// square (jnp.square): promote_dtypes_numeric first, so a bool operand is
// squared as i32 (convert_element_type, then square) and the result is i32.
template <ArrayLike X>
auto square(const X& x, detail::Loc loc = detail::Loc::current()) {
  using E = detail::elem_t<X>;
  using R = std::conditional_t<std::is_same_v<E, bool>, std::int32_t, E>;
  return detail::un<detail::Prim::square, R>(x, loc);
}

// stop_gradient (lax.stop_gradient): x itself, which every derivative
// (dyn::jvp, grad, vjp, jacfwd, ...) treats as a constant. A floating-point
// x, real or complex (complex values have tangents too), binds the
// primitive; any other x is returned as it is (it has no derivative to
// stop), as JAX does.
template <ArrayLike X>
auto stop_gradient(const X& x, detail::Loc loc = detail::Loc::current()) {
  using E = detail::elem_t<X>;
  if constexpr (std::is_floating_point_v<E> || is_complex_v<E>) return detail::un<detail::Prim::stop_gradient, E>(x, loc);
  else return detail::from_value<detail::result_of_t<E, X>>(detail::to_value(x));
}

template <class A, class B> requires detail::BinaryOperands<A, B>
auto pow(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::arith<detail::Prim::pow>(a, b);
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto maximum(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::arith<detail::Prim::max>(a, b);
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto minimum(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::arith<detail::Prim::min>(a, b);
}
template <class A, class B> requires detail::BinaryOperands<A, B>
auto atan2(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::inexact_t<detail::promoted_t<A, B>>;
  return detail::from_value<detail::result_of_t<T, A, B>>(
      detail::binary(detail::Prim::atan2, detail::to_value(a), detail::to_value(b)));
}

// where(pred, a, b): a where pred is true, else b (numpy broadcasting).
template <class P, class A, class B>
  requires Operand<P> && Operand<A> && Operand<B> && (ArrayLike<P> || ArrayLike<A> || ArrayLike<B>)
auto where(const P& pred, const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<detail::elem_t<P>, bool>, "dyn::where: the predicate must be a bool array or tracer");
  detail::OpSite site(loc);
  using T = detail::promoted_t<A, B>;
  return detail::from_value<detail::result_of_t<T, P, A, B>>(
      detail::where(detail::to_value(pred), detail::to_value(a), detail::to_value(b)));
}

// clamp(lo, x, hi) (lax.clamp, primitive clamp): min(max(x, lo), hi); lo and
// hi are rank 0 or of x's shape. clip(x, lo, hi) (jnp.clip): the same with
// numpy broadcasting. A NaN in any operand gives NaN; lo > hi gives hi.
template <class L, class X, class H>
  requires Operand<L> && Operand<X> && Operand<H> && (ArrayLike<L> || ArrayLike<X> || ArrayLike<H>)
auto clamp(const L& lo, const X& x, const H& hi, detail::Loc loc = detail::Loc::current()) {
  static_assert(!detail::any_complex_v<L, X, H>, "dyn::clamp, dyn::clip: complex numbers have no order (JAX raises TypeError)");
  detail::OpSite site(loc);
  using T = detail::promoted3_t<L, X, H>;
  return detail::from_value<detail::result_of_t<T, L, X, H>>(
      detail::clamp(detail::to_value(lo), detail::to_value(x), detail::to_value(hi)));
}
template <class X, class L, class H>
  requires Operand<X> && Operand<L> && Operand<H> && (ArrayLike<X> || ArrayLike<L> || ArrayLike<H>)
auto clip(const X& x, const L& lo, const H& hi, detail::Loc loc = detail::Loc::current()) {
  static_assert(!detail::any_complex_v<L, X, H>, "dyn::clamp, dyn::clip: complex numbers have no order (JAX raises TypeError)");
  detail::OpSite site(loc);
  using T = detail::promoted3_t<L, X, H>;
  return detail::from_value<detail::result_of_t<T, L, X, H>>(
      detail::clip(detail::to_value(x), detail::to_value(lo), detail::to_value(hi)));
}

// astype<U>(x): convert_element_type.
template <class U, ArrayLike X>
auto astype(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<U, X>>(detail::convert(detail::to_value(x), dtype_v<U>));
}

// ---------------------------------------------------------------------------
// Reductions: over all axes, or over the given ones; `dyn::keepdims` as the
// last argument keeps the reduced axes as size 1 (jnp's keepdims=True):
// dyn::sum(x, {1}, dyn::keepdims).

struct keepdims_t {
  explicit constexpr keepdims_t() = default;
};
inline constexpr keepdims_t keepdims{};

// dyn::all() with no argument: the whole-axis index (numpy's `:`) of
// x.at(dyn::all(), j); dyn::all(x) is the reduction (as in xtensor).
struct all_t {};
constexpr all_t all() { return {}; }

namespace detail {
template <class T>
using sum_t = element_t<sum_dtype(dtype_v<T>)>;
}

#define DYN_REDUCTION(name, prim, ResultT)                                                             \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, detail::Loc loc = detail::Loc::current()) {                                    \
    detail::OpSite site(loc);                                                                          \
    static_assert(detail::takes_complex_v<detail::Prim::prim> || !detail::any_complex_v<X>,           \
                  "dyn::" #name ": complex numbers have no order (JAX raises TypeError)");                   \
    return detail::from_value<detail::result_of_t<ResultT, X>>(                                        \
        detail::reduce(detail::Prim::prim, detail::to_value(x), {}, true));                            \
  }                                                                                                    \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, const std::vector<std::int64_t>& axes, detail::Loc loc = detail::Loc::current()) { \
    detail::OpSite site(loc);                                                                          \
    static_assert(detail::takes_complex_v<detail::Prim::prim> || !detail::any_complex_v<X>,           \
                  "dyn::" #name ": complex numbers have no order (JAX raises TypeError)");                   \
    return detail::from_value<detail::result_of_t<ResultT, X>>(                                        \
        detail::reduce(detail::Prim::prim, detail::to_value(x), axes, false));                         \
  }                                                                                                    \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, keepdims_t, detail::Loc loc = detail::Loc::current()) {                        \
    detail::OpSite site(loc);                                                                          \
    static_assert(detail::takes_complex_v<detail::Prim::prim> || !detail::any_complex_v<X>,           \
                  "dyn::" #name ": complex numbers have no order (JAX raises TypeError)");                   \
    return detail::from_value<detail::result_of_t<ResultT, X>>(                                        \
        detail::reduce(detail::Prim::prim, detail::to_value(x), {}, true, true));                      \
  }                                                                                                    \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, const std::vector<std::int64_t>& axes, keepdims_t,                            \
            detail::Loc loc = detail::Loc::current()) {                                                \
    detail::OpSite site(loc);                                                                          \
    static_assert(detail::takes_complex_v<detail::Prim::prim> || !detail::any_complex_v<X>,           \
                  "dyn::" #name ": complex numbers have no order (JAX raises TypeError)");                   \
    return detail::from_value<detail::result_of_t<ResultT, X>>(                                        \
        detail::reduce(detail::Prim::prim, detail::to_value(x), axes, false, true));                   \
  }
DYN_REDUCTION(sum, reduce_sum, detail::sum_t<detail::elem_t<X>>)
DYN_REDUCTION(prod, reduce_prod, detail::sum_t<detail::elem_t<X>>)
DYN_REDUCTION(max, reduce_max, detail::elem_t<X>)
DYN_REDUCTION(min, reduce_min, detail::elem_t<X>)
// any, all (jnp's): x != 0 reduced by or / and (primitives reduce_or, reduce_and).
DYN_REDUCTION(any, reduce_or, bool)
DYN_REDUCTION(all, reduce_and, bool)
#undef DYN_REDUCTION

template <ArrayLike X>
auto mean(const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::mean(detail::to_value(x), {}, true));
}
template <ArrayLike X>
auto mean(const X& x, const std::vector<std::int64_t>& axes, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::mean(detail::to_value(x), axes, false));
}
template <ArrayLike X>
auto mean(const X& x, keepdims_t, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::mean(detail::to_value(x), {}, true, true));
}
template <ArrayLike X>
auto mean(const X& x, const std::vector<std::int64_t>& axes, keepdims_t, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::mean(detail::to_value(x), axes, false, true));
}

// var (jnp.var): the mean squared deviation from the mean, in the floating
// type mean uses, divided by N - ddof (jnp.var's ddof, default 0; 1 gives
// the unbiased sample variance): dyn::var(x, {1}, dyn::ddof(1)); NaN where
// N - ddof <= 0, as jnp. Composed of existing primitives (numpy.hpp).
// (ddof_t is built by dyn::ddof(n) only: a plain braced integer must keep
// meaning the axes, var(x, {1}), not a ddof.)
class ddof_t {
  struct key {};
  constexpr ddof_t(std::int64_t v, key) : value(v) {}
  friend constexpr ddof_t ddof(std::int64_t v);

public:
  std::int64_t value;
};
constexpr ddof_t ddof(std::int64_t v) { return ddof_t(v, ddof_t::key{}); }

template <ArrayLike X>
auto var(const X& x, ddof_t d, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::var(detail::to_value(x), {}, true, false, d.value));
}
template <ArrayLike X>
auto var(const X& x, const std::vector<std::int64_t>& axes, ddof_t d, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::var(detail::to_value(x), axes, false, false, d.value));
}
template <ArrayLike X>
auto var(const X& x, ddof_t d, keepdims_t, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::var(detail::to_value(x), {}, true, true, d.value));
}
template <ArrayLike X>
auto var(const X& x, const std::vector<std::int64_t>& axes, ddof_t d, keepdims_t,
         detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::inexact_t<detail::elem_t<X>>, X>>(
      detail::var(detail::to_value(x), axes, false, true, d.value));
}
template <ArrayLike X>
auto var(const X& x, detail::Loc loc = detail::Loc::current()) {
  return var(x, ddof(0), loc);
}
template <ArrayLike X>
auto var(const X& x, const std::vector<std::int64_t>& axes, detail::Loc loc = detail::Loc::current()) {
  return var(x, axes, ddof(0), loc);
}
template <ArrayLike X>
auto var(const X& x, keepdims_t, detail::Loc loc = detail::Loc::current()) {
  return var(x, ddof(0), keepdims, loc);
}
template <ArrayLike X>
auto var(const X& x, const std::vector<std::int64_t>& axes, keepdims_t, detail::Loc loc = detail::Loc::current()) {
  return var(x, axes, ddof(0), keepdims, loc);
}

// argmax, argmin along one axis (negative counts from the end): the i32
// index of the first maximum (minimum); a NaN counts as the maximum (and
// the minimum), so the first NaN wins, as in JAX and NumPy.
#define DYN_ARG_REDUCTION(name)                                                                        \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {                 \
    detail::OpSite site(loc);                                                                          \
    return detail::from_value<detail::result_of_t<std::int32_t, X>>(                                   \
        detail::arg_reduce(detail::Prim::name, detail::to_value(x), axis, false));                     \
  }                                                                                                    \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, std::int64_t axis, keepdims_t, detail::Loc loc = detail::Loc::current()) {     \
    detail::OpSite site(loc);                                                                          \
    return detail::from_value<detail::result_of_t<std::int32_t, X>>(                                   \
        detail::arg_reduce(detail::Prim::name, detail::to_value(x), axis, true));                      \
  }
DYN_ARG_REDUCTION(argmax)
DYN_ARG_REDUCTION(argmin)
#undef DYN_ARG_REDUCTION

// ---------------------------------------------------------------------------
// Cumulative reductions along one axis (negative counts from the end), from
// the first element on, or from the last with reverse = true: primitives
// cumsum, cumprod, cummax, cummin (lax's). cumsum/cumprod of bool give i64,
// as sum; cummax/cummin take numbers only (a TypeError for bool).

#define DYN_CUMULATIVE(name, ResultT)                                                                  \
  template <ArrayLike X>                                                                               \
  auto name(const X& x, std::int64_t axis, bool reverse = false, detail::Loc loc = detail::Loc::current()) { \
    detail::OpSite site(loc);                                                                          \
    return detail::from_value<detail::result_of_t<ResultT, X>>(                                        \
        detail::cumulative(detail::Prim::name, detail::to_value(x), axis, reverse));                   \
  }
DYN_CUMULATIVE(cumsum, detail::sum_t<detail::elem_t<X>>)
DYN_CUMULATIVE(cumprod, detail::sum_t<detail::elem_t<X>>)
DYN_CUMULATIVE(cummax, detail::elem_t<X>)
DYN_CUMULATIVE(cummin, detail::elem_t<X>)
#undef DYN_CUMULATIVE

// ---------------------------------------------------------------------------
// Linear algebra.

template <ArrayLike A, ArrayLike B>
auto dot(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::promoted_t<A, B>, A, B>>(
      detail::dot(detail::to_value(a), detail::to_value(b)));
}
template <ArrayLike A, ArrayLike B>
auto matmul(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::promoted_t<A, B>, A, B>>(
      detail::matmul(detail::to_value(a), detail::to_value(b)));
}

}  // namespace dyn
