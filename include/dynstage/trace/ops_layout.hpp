// dynstage: the user-facing layout and creation operations of API.md §13
// (rev, flip, pad, stack, tile, repeat, tril, triu, eye, linspace) and the
// public linear algebra (dot_general, outer; einsum is trace/einsum.hpp).
// One-liners over the numpy layer (numpy_layout.hpp), as ops_shape.hpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "numpy_layout.hpp"
#include "ops_shape.hpp"

namespace dyn {

// One axis of pad's configuration: `lo` elements before, `hi` after,
// `interior` between neighbours (negative lo/hi crop, as lax.pad).
using PadAxis = detail::PadParams::Axis;

// rev(x, {axes}): lax.rev, the elements along each axis in reverse order.
template <ArrayLike X>
auto rev(const X& x, const std::vector<std::int64_t>& axes, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::rev(detail::to_value(x), axes));
}
// flip(x, axis): jnp.flip of one axis (binds rev).
template <ArrayLike X>
auto flip(const X& x, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {
  return rev(x, {axis}, loc);
}

// pad(x, {{lo, hi, interior}, ...}, value): lax.pad, one entry per axis; the
// value (a scalar, converted to x's dtype) fills the new elements.
template <ArrayLike X, class V>
auto pad(const X& x, const std::vector<PadAxis>& config, const V& value, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, V>>(
      detail::pad(detail::to_value(x), config, detail::to_value(value)));
}

// stack({xs}, axis): jnp.stack, the arrays (of one shape) along a new axis.
template <ArrayLike X>
auto stack(const std::vector<X>& xs, std::int64_t axis = 0, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  std::vector<detail::Value> vs;
  for (const auto& x : xs) vs.push_back(detail::to_value(x));
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::stack(std::move(vs), axis));
}
template <ArrayLike X>
auto stack(std::initializer_list<X> xs, std::int64_t axis = 0, detail::Loc loc = detail::Loc::current()) {
  return stack(std::vector<X>(xs), axis, loc);
}

// tile(x, {reps}): jnp.tile.
template <ArrayLike X>
auto tile(const X& x, const std::vector<std::int64_t>& reps, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::tile(detail::to_value(x), reps));
}
// repeat(x, n, axis): jnp.repeat with a scalar count, each element n times.
template <ArrayLike X>
auto repeat(const X& x, std::int64_t repeats, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::repeat(detail::to_value(x), repeats, axis));
}

// tril(x, k), triu(x, k): jnp.tril/triu over the last two axes, the
// elements below/above diagonal k kept and the others zero.
template <ArrayLike X>
auto tril(const X& x, std::int64_t k = 0, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::tril(detail::to_value(x), k));
}
template <ArrayLike X>
auto triu(const X& x, std::int64_t k = 0, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::triu(detail::to_value(x), k));
}

// eye<T>(n): the n x n identity (jnp.eye). An integer n gives a concrete
// array; a dyn::Dim (a symbolic size) a tracer staged in the active trace.
template <class T>
Array<T> eye(std::int64_t n, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<Array<T>>(detail::eye(dtype_v<T>, Dim(n), false));
}
template <class T>
Tracer<T> eye(const Dim& n, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("eye");
  return detail::from_value<Tracer<T>>(detail::eye(dtype_v<T>, n, true));
}

// linspace<T>(start, stop, num): num evenly spaced values from start to stop
// inclusive (jnp.linspace). An integer num gives a concrete array; a
// dyn::Dim a tracer. A negative num is a ShapeError.
template <class T>
Array<T> linspace(double start, double stop, std::int64_t num, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<Array<T>>(detail::linspace(dtype_v<T>, start, stop, Dim(num), false));
}
template <class T>
Tracer<T> linspace(double start, double stop, const Dim& num, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("linspace");
  return detail::from_value<Tracer<T>>(detail::linspace(dtype_v<T>, start, stop, num, true));
}

// dot_general(a, b, {{lhs_contract}, {rhs_contract}}, {{lhs_batch},
// {rhs_batch}}): lax.dot_general. The output is the batch axes, then a's
// free axes, then b's.
struct DotAxes {
  std::vector<std::int64_t> lhs, rhs;
};
template <ArrayLike A, ArrayLike B>
auto dot_general(const A& a, const B& b, const DotAxes& contracting, const DotAxes& batch = {},
                 detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::DotGeneralParams p{contracting.lhs, contracting.rhs, batch.lhs, batch.rhs};
  return detail::from_value<detail::result_of_t<detail::promoted_t<A, B>, A, B>>(
      detail::dot_general(detail::to_value(a), detail::to_value(b), p));
}

// outer(a, b): jnp.outer, ravel(a)[:, None] * ravel(b)[None, :].
template <ArrayLike A, ArrayLike B>
auto outer(const A& a, const B& b, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  auto flat = [](const detail::Value& v) {
    Dim n = 1;
    for (const Dim& d : v.shape()) n = n * d;
    return detail::reshape(v, Shape{n});
  };
  return detail::from_value<detail::result_of_t<detail::promoted_t<A, B>, A, B>>(
      detail::binary(detail::Prim::mul, detail::expand_dims(flat(detail::to_value(a)), 1),
                     detail::expand_dims(flat(detail::to_value(b)), 0)));
}

}  // namespace dyn
