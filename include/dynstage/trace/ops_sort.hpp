// dynstage: sorting (API section 13): sort, argsort, sort_key_val and
// top_k, in the numpy layer (Values, detail::) and as user-facing templates.
// Primitives sort (lax.sort, several operands sorted by the first num_keys)
// and top_k (lax.top_k); the order is NumPy's: ascending, NaNs last, equal
// elements (-0.0 and 0.0 too) in their order, false < true.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "numpy_shape.hpp"
#include "ops.hpp"

namespace dyn {
namespace detail {

// jnp.sort: lax.sort of one operand along `axis` (negative: from the end),
// stable, one key.
Value sort(const Value& x, std::int64_t axis);
// lax.sort_key_val: keys and values (one shape) sorted by the keys.
std::vector<Value> sort_key_val(const Value& keys, const Value& values, std::int64_t axis);
// jnp.argsort: the i32 positions that sort x along `axis`, stable: lax.sort
// of (x, iota) with num_keys=1, its second output (JAX's formulation, so
// the jaxpr is JAX's).
Value argsort(const Value& x, std::int64_t axis);
// lax.top_k over the last axis: (values, i32 indices).
std::vector<Value> top_k(const Value& x, std::int64_t k);

#ifdef DYNSTAGE_IMPLEMENTATION
Value sort(const Value& x, std::int64_t axis) {
  return bind1(Prim::sort, {x}, SortParams{normalize_axis("sort", axis, x.rank()), true, 1});
}
std::vector<Value> sort_key_val(const Value& keys, const Value& values, std::int64_t axis) {
  return bind(Prim::sort, {keys, values}, SortParams{normalize_axis("sort_key_val", axis, keys.rank()), true, 1});
}
Value argsort(const Value& x, std::int64_t axis) {
  const std::int64_t a = normalize_axis("argsort", axis, x.rank());
  return sort_key_val(x, iota(DType::i32, x.shape(), a, /*stage=*/true), a)[1];
}
std::vector<Value> top_k(const Value& x, std::int64_t k) {
  if (x.rank() == 0) fail<ShapeError>("top_k: the operand must have rank >= 1, got shape ()");
  return bind(Prim::top_k, {x}, TopKParams{k, x.rank() - 1});
}
#endif

}  // namespace detail

// sort(x, axis = -1) (jnp.sort): ascending along the axis; every dtype.
// Primitive sort (one operand).
template <ArrayLike X>
auto sort(const X& x, std::int64_t axis = -1, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::sort(detail::to_value(x), axis));
}

// argsort(x, axis = -1) (jnp.argsort, stable): the i32 indices that sort x
// along the axis, equal elements in their order. Primitive sort of (x,
// iota), num_keys=1.
template <ArrayLike X>
auto argsort(const X& x, std::int64_t axis = -1, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<std::int32_t, X>>(detail::argsort(detail::to_value(x), axis));
}

// sort_key_val(keys, values, axis = -1) (lax.sort_key_val): std::tuple{
// sorted keys, values in the keys' order}; keys and values of one shape.
template <ArrayLike K, ArrayLike V>
auto sort_key_val(const K& keys, const V& values, std::int64_t axis = -1, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  auto r = detail::sort_key_val(detail::to_value(keys), detail::to_value(values), axis);
  return std::tuple{detail::from_value<detail::result_of_t<detail::elem_t<K>, K, V>>(std::move(r[0])),
                    detail::from_value<detail::result_of_t<detail::elem_t<V>, K, V>>(std::move(r[1]))};
}

// top_k(x, k) (lax.top_k): std::tuple{values, i32 indices} of the k largest
// elements along the last axis, in descending order (NaNs largest; equal
// elements lower index first). k larger than the axis is a dyn::ShapeError
// (for a symbolic or dynamic axis, when the jitted function runs).
template <ArrayLike X>
auto top_k(const X& x, std::int64_t k, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  auto r = detail::top_k(detail::to_value(x), k);
  return std::tuple{detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(std::move(r[0])),
                    detail::from_value<detail::result_of_t<std::int32_t, X>>(std::move(r[1]))};
}

}  // namespace dyn
