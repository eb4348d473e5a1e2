// dynstage: the user-facing indexing operations (API section 12):
// `x.at(i, j, ...)` (a member of dyn::Array and dyn::Tracer) returns an
// AtRef whose get() reads (primitive gather) and whose set/add/mul/min/max
// return updated copies (primitives scatter, scatter-add, ...), as
// jnp's `x[...]` and `x.at[...]`; dyn::all() is numpy's `:`; take and
// take_along_axis; nonzero and compress. Templates that forward to the numpy layer
// (numpy_index.hpp), which says how an index list becomes a gather.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "numpy_index.hpp"
#include "ops.hpp"

namespace dyn {

// dyn::all() (ops.hpp) is a whole axis, numpy's `:` (x.at(dyn::all(), j)
// is x[:, j]); dyn::all(x) is the reduction.

namespace detail {
template <class I>
inline constexpr bool is_index_v =
    std::is_same_v<std::remove_cvref_t<I>, all_t> || is_tracer_v<I> || is_array_v<I> || is_dim_v<I> ||
    (std::is_integral_v<std::remove_cvref_t<I>> && !std::is_same_v<std::remove_cvref_t<I>, bool>);

template <class I>
IndexArg index_arg(const I& i) {
  using U = std::remove_cvref_t<I>;
  if constexpr (std::is_same_v<U, all_t>) return IndexArg{};
  else if constexpr (std::is_integral_v<U>) return IndexArg{IndexArg::Kind::value, to_value(i), true};
  else return IndexArg{IndexArg::Kind::value, to_value(i), false};
}
}  // namespace detail

// An index into an array or tracer: one index per leading axis (a C++
// integer, an integer dyn::Tracer/dyn::Array, a dyn::Dim, or dyn::all()).
template <class I>
concept IndexLike = detail::is_index_v<I>;

// x.at(...): what to read or update. Out-of-range indices clamp when read
// and drop the update when written (JAX's defaults); negative ones count
// from the end.
template <ArrayLike X, IndexLike... I>
class AtRef {
public:
  explicit AtRef(const X& x, const I&... i) : x_(x), idx_{detail::index_arg(i)...} {}

  // x[i, ...]
  auto get(detail::Loc loc = detail::Loc::current()) const {
    detail::OpSite site(loc);
    return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, I...>>(
        detail::index_get(detail::to_value(x_), idx_));
  }
  // A copy of x with x[i, ...] = v, += v, *= v, min(., v), max(., v).
  template <Operand V>
  auto set(const V& v, detail::Loc loc = detail::Loc::current()) const {
    return update(detail::Prim::scatter, v, loc);
  }
  template <Operand V>
  auto add(const V& v, detail::Loc loc = detail::Loc::current()) const {
    return update(detail::Prim::scatter_add, v, loc);
  }
  template <Operand V>
  auto mul(const V& v, detail::Loc loc = detail::Loc::current()) const {
    return update(detail::Prim::scatter_mul, v, loc);
  }
  template <Operand V>
  auto min(const V& v, detail::Loc loc = detail::Loc::current()) const {
    return update(detail::Prim::scatter_min, v, loc);
  }
  template <Operand V>
  auto max(const V& v, detail::Loc loc = detail::Loc::current()) const {
    return update(detail::Prim::scatter_max, v, loc);
  }

private:
  template <class V>
  auto update(detail::Prim p, const V& v, detail::Loc loc) const {
    detail::OpSite site(loc);
    return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, V, I...>>(
        detail::index_update(p, detail::to_value(x_), idx_, detail::to_value(v)));
  }
  X x_;
  std::vector<detail::IndexArg> idx_;
};

// What Array::at and Tracer::at call (found by argument-dependent lookup).
template <ArrayLike X, IndexLike... I>
AtRef<X, I...> at_ref(const X& x, const I&... i) {
  return AtRef<X, I...>(x, i...);
}

// numpy's take: x's elements at idx along `axis` (the result has idx's
// shape in place of that axis); without an axis, of the flattened x.
template <ArrayLike X, ArrayLike I>
auto take(const X& x, const I& idx, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, I>>(
      detail::take(detail::to_value(x), detail::to_value(idx), axis));
}
template <ArrayLike X, ArrayLike I>
auto take(const X& x, const I& idx, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, I>>(
      detail::take_flat(detail::to_value(x), detail::to_value(idx)));
}
// numpy's take_along_axis: out[..., k, ...] = x[..., idx[..., k, ...], ...]
// along `axis` (idx has x's rank; the other axes broadcast).
template <ArrayLike X, ArrayLike I>
auto take_along_axis(const X& x, const I& idx, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, I>>(
      detail::take_along_axis(detail::to_value(x), detail::to_value(idx), axis));
}

// The indices of the nonzero (true) elements of x: i64[k], k a dynamic
// dimension computed from the data (no size= needed under jit). For an
// array of rank N > 1, dyn::nonzero<N>(x) returns jnp.nonzero's tuple, a
// std::tuple of N i64[k] arrays (the element's index along each axis, in
// row-major order); N is x's rank, written where the results are unpacked
// (auto [i, j] = dyn::nonzero<2>(mask)), as in Python's i, j = jnp.nonzero(m).
template <std::size_t N = 1, ArrayLike X>
auto nonzero(const X& x, detail::Loc loc = detail::Loc::current()) {
  static_assert(N >= 1, "dyn::nonzero<N>: N is the array's rank, at least 1");
  detail::OpSite site(loc);
  using R = detail::result_of_t<std::int64_t, X>;
  const std::vector<detail::Value> v = detail::nonzero(detail::to_value(x), N);
  if constexpr (N == 1) {
    return detail::from_value<R>(v[0]);
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(detail::from_value<R>(v[I])...);
    }(std::make_index_sequence<N>{});
  }
}
// x[mask] along axis 0 (a 1-D mask of x's first length): dynamic length.
template <ArrayLike M, ArrayLike X>
auto compress(const M& mask, const X& x, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, M, X>>(
      detail::compress(detail::to_value(mask), detail::to_value(x)));
}

// Segment sums over offsets (CSR's row_ptr): result[r] is the sum of
// data[offsets[r] : offsets[r + 1]], for data of n elements (1-D, a number
// dtype) and offsets of m + 1 integers; the result has m elements of data's
// dtype. Offsets are clamped into [0, n]; an empty or reversed range sums to
// 0. Each row is summed in order from 0, so the result is bit-identical to
// the scatter-add form `zeros(m).at(row_of_nz).add(data)` of the same
// segments. Not jax.ops.segment_sum, which takes a segment id per element
// (that is `dyn::zeros<T>({m}).at(ids).add(data)`); the name says which
// form this is. Primitive segment_sum_offsets (docs/jaxpr.md).
template <ArrayLike X, ArrayLike O>
auto segment_sum_offsets(const X& data, const O& offsets, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, O>>(
      detail::segment_sum_offsets(detail::to_value(data), detail::to_value(offsets)));
}

}  // namespace dyn
