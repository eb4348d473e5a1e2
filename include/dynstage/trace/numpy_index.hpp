// dynstage: numpy indexing in terms of gather and scatter (what jnp's
// `x[idx]` and `x.at[idx].set(v)` do above lax): `x.at(i, j, ...)` with C++
// integers, integer scalars and arrays (advanced indexing, broadcast against
// each other) and dyn::all() (numpy's `:`), one per leading axis; take and
// take_along_axis. Non-template code over detail::Value, as numpy.hpp.
//
// How an index list becomes a gather (IndexPlan):
//   - C++ integers and dyn::all() only: a static slice and a squeeze (no
//     gather: nothing is read from data), as jnp does for static indices;
//     an integer out of range is an IndexError, a negative one counts from
//     the end;
//   - otherwise every integer index (C++, scalar or array) is an ADVANCED
//     index: negative values count from the end (lt, add, select_n, as jnp
//     writes it), they broadcast together to a batch shape B, and each gets
//     a trailing axis of 1 (broadcast_in_dim); several are concatenated
//     along it: the indices operand, B + [K]. The K indexed operand axes
//     are collapsed (slice size 1), the others kept whole (offset axes).
//     Output: numpy's rule: B replaces the indexed axes if they are
//     adjacent, else B comes first.
// A scatter uses the same plan with XLA's names for the same numbers; its
// updates are converted to x's dtype and broadcast to the shape the gather
// would return.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "numpy_shape.hpp"

namespace dyn::detail {

// One index of `x.at(...)`: an integer value (a C++ integer as a weak
// literal, a scalar, an array) or all of an axis.
struct IndexArg {
  enum class Kind : std::uint8_t { value, all };
  Kind kind = Kind::all;
  Value v;
  bool cpp_int = false;  // a C++ integer (a static index)
};

// Read x at the indices (x.at(...).get()).
Value index_get(const Value& x, const std::vector<IndexArg>& idx);
// A copy of x with v combined in at the indices: p is scatter, scatter_add,
// scatter_mul, scatter_min or scatter_max (x.at(...).set/add/mul/min/max).
Value index_update(Prim p, const Value& x, const std::vector<IndexArg>& idx, const Value& v);
// numpy's take along `axis` (no axis: of the flattened array) and
// take_along_axis.
Value take(const Value& x, const Value& idx, std::int64_t axis);
Value take_flat(const Value& x, const Value& idx);
Value take_along_axis(const Value& x, const Value& idx, std::int64_t axis);
// The indices of the nonzero (true) elements of x, one i64[k] array per
// axis (jnp.nonzero's tuple), k a dynamic dimension (the count, computed
// from the data: no `size=` as jnp.nonzero needs under jit); `axes` is the
// number of arrays the caller expects, x's rank. compress(mask, x) =
// x[mask] along axis 0, of dynamic length k.
std::vector<Value> nonzero(const Value& x, std::size_t axes);
Value compress(const Value& mask, const Value& x);
// Segment sums over offsets (CSR row_ptr): result[r] = the sum of
// data[offsets[r] : offsets[r + 1]], offsets clamped into [0, n], an empty or
// reversed range 0. Offsets of other integer dtypes are converted to i32/i64
// (index_dtype_for); float offsets are a TypeError. The primitive
// segment_sum_offsets; jax.ops.segment_sum (ids per element) is at().add.
Value segment_sum_offsets(const Value& data, const Value& offsets);
// What its rules are made of: the data cotangent of ct (m elements) for data
// of n elements, element k being the sum of ct over the rows whose clamped
// range holds k (a scatter-add of +ct at the starts and -ct at the ends, then
// a running sum: correct for any offsets, to rounding); and the primitive on
// a batch, data [B, n] and offsets [B, m + 1] (each batch's ranges moved by
// b * n into one flat call, interleaved with the gaps between them).
Value segment_sum_offsets_transpose(const Value& ct, const Value& offsets, const Dim& n, bool stage);
Value segment_sum_offsets_batched(const Value& data, const Value& offsets);

#ifdef DYNSTAGE_IMPLEMENTATION

namespace index_detail {

struct IndexPlan {
  Value indices;  // B + [K]
  std::vector<std::int64_t> offset_dims, collapsed, start_map;
  Shape gathered;  // the shape the gather returns
  Shape slice_sizes;
};

// The user's spelling of a scatter primitive, for messages.
inline std::string op_name(Prim p) {
  if (p == Prim::scatter) return "at().set";
  const std::string_view n = prim_name(p);  // scatter-add -> at().add
  return "at()." + std::string(n.substr(n.find('-') + 1));
}

inline void check_count(const std::string& op, const Value& x, std::size_t n) {
  if (n > static_cast<std::size_t>(x.rank()))
    fail<IndexError>(op + ": too many indices for an array of shape " + shape_str(x.shape()) + ": " +
                     std::to_string(n) + " were given, at most " + std::to_string(x.rank()));
}

// An integer index value v along an axis of size n, its negative values
// counting from the end.
inline Value wrap_negative(const Value& v, const Dim& n) {
  Value neg = compare(Prim::lt, v, scalar_value(Scalar::of<std::int32_t>(0), true));
  // The size as a weak value of the index's dtype: the sum keeps that dtype.
  Value plus = binary(Prim::add, v, convert(dim_to_value(n), v.dtype(), true));
  return bind1(Prim::select_n, {neg, v, plus});
}

inline IndexPlan plan(const std::string& op, const Value& x, std::vector<IndexArg> idx) {
  check_count(op, x, idx.size());
  const Shape xs = x.shape();
  idx.resize(xs.size());
  IndexPlan pl;
  std::vector<Value> adv;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].kind == IndexArg::Kind::all) continue;
    const Value& v = idx[d].v;
    if (v.dtype() == DType::bool_)
      fail<TypeError>(op + ": boolean index arrays are not supported, got " + aval_str(v.aval()) + " for axis " +
                      std::to_string(d) + "; use dyn::compress(mask, x) or dyn::nonzero(mask)");
    if (!is_integer(v.dtype()))
      fail<TypeError>(op + ": indices must be integers, got " + aval_str(v.aval()) + " for axis " +
                      std::to_string(d) + " of an array of shape " + shape_str(xs));
    pl.start_map.push_back(static_cast<std::int64_t>(d));
    // i8, u16, ... indices are computed in i32 or i64, the gather's index dtypes
    adv.push_back(wrap_negative(convert(v, index_dtype_for(v.dtype())), xs[d]));
  }
  lift_all(adv);
  const Shape batch = broadcast_shapes(op, adv);
  // An empty axis has no element to read or write: an error when some
  // index is known to be used (an empty index list reads nothing).
  Dim used = 1;
  for (const Dim& b : batch) used = used * b;
  for (std::int64_t d : pl.start_map) {
    const Dim& n = xs[static_cast<std::size_t>(d)];
    if (n.is_static() && n.value() == 0 && used.is_static() && used.value() > 0)
      fail<IndexError>(op + ": cannot index into axis " + std::to_string(d) + " of size 0 of an array of shape " +
                       shape_str(xs));
  }
  TypeInfo t = result_type(adv);
  promote_to(adv, TypeInfo{t.dtype, false});
  // Each index to B + [1], then the index vectors along the last axis.
  Shape b1 = batch;
  b1.emplace_back(1);
  for (Value& v : adv) {
    BroadcastInDimParams p;
    const auto off = static_cast<std::int64_t>(batch.size()) - v.rank();
    for (int i = 0; i < v.rank(); ++i) p.broadcast_dimensions.push_back(off + i);
    std::vector<Value> ops{v};
    p.shape = shape_param(op, b1, ops);
    v = bind1(Prim::broadcast_in_dim, ops, p);
  }
  pl.indices = adv.size() == 1 ? adv[0] : concatenate(adv, -1);
  pl.collapsed = pl.start_map;
  // numpy: the batch axes replace adjacent indexed axes, else come first.
  const auto& a = pl.start_map;
  const bool adjacent = a.back() - a.front() + 1 == static_cast<std::int64_t>(a.size());
  const std::size_t at = adjacent ? static_cast<std::size_t>(a.front()) : 0;
  std::size_t kept_before = 0;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    const bool indexed = std::find(a.begin(), a.end(), static_cast<std::int64_t>(d)) != a.end();
    pl.slice_sizes.push_back(indexed ? Dim(1) : xs[d]);
    if (indexed) continue;
    const std::size_t pos = kept_before < at ? kept_before : kept_before + batch.size();
    pl.offset_dims.push_back(static_cast<std::int64_t>(pos));
    ++kept_before;
  }
  pl.gathered.assign(xs.size() - a.size() + batch.size(), Dim(0));
  std::size_t next_batch = 0, next_kept = 0;
  std::vector<Dim> kept;
  for (std::size_t d = 0; d < xs.size(); ++d)
    if (std::find(a.begin(), a.end(), static_cast<std::int64_t>(d)) == a.end()) kept.push_back(xs[d]);
  for (std::size_t o = 0; o < pl.gathered.size(); ++o) {
    const bool offset = std::find(pl.offset_dims.begin(), pl.offset_dims.end(), static_cast<std::int64_t>(o)) !=
                        pl.offset_dims.end();
    pl.gathered[o] = offset ? kept[next_kept++] : batch[next_batch++];
  }
  return pl;
}

// Only C++ integers and dyn::all(): a static slice and a squeeze.
inline bool all_static(const std::vector<IndexArg>& idx) {
  for (const IndexArg& i : idx)
    if (i.kind == IndexArg::Kind::value && !i.cpp_int) return false;
  return true;
}

inline bool any_index(const std::vector<IndexArg>& idx) {
  for (const IndexArg& i : idx)
    if (i.kind == IndexArg::Kind::value) return true;
  return false;
}

inline Value static_get(const std::string& op, const Value& x, const std::vector<IndexArg>& idx) {
  const Shape xs = x.shape();
  Shape starts(xs.size(), Dim(0)), limits = xs;
  std::vector<std::int64_t> squeezed;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].kind == IndexArg::Kind::all) continue;
    std::int64_t i = scalar_of(idx[d].v.array).i;
    const Dim& n = xs[d];
    if (n.is_static()) {
      if (i < -n.value() || i >= n.value())
        fail<IndexError>(op + ": index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(d) +
                         " with size " + std::to_string(n.value()));
      if (i < 0) i += n.value();
      starts[d] = Dim(i);
    } else {
      // A symbolic size: a negative index counts from it.
      starts[d] = i < 0 ? n + Dim(i) : Dim(i);
    }
    limits[d] = starts[d] + Dim(1);
    squeezed.push_back(static_cast<std::int64_t>(d));
  }
  return squeeze(slice(x, starts, limits, {}), squeezed);
}

}  // namespace index_detail

Value index_get(const Value& x, const std::vector<IndexArg>& idx) {
  using namespace index_detail;
  const std::string op = "at().get";
  check_count(op, x, idx.size());
  if (!any_index(idx)) return x;
  if (all_static(idx)) return static_get(op, x, idx);
  IndexPlan pl = plan(op, x, idx);
  std::vector<Value> ops{x, pl.indices};
  lift_all(ops);
  GatherParams gp{pl.offset_dims, pl.collapsed, pl.start_map, shape_param("gather", pl.slice_sizes, ops)};
  return bind1(Prim::gather, ops, gp);
}

Value index_update(Prim p, const Value& x, const std::vector<IndexArg>& idx, const Value& v) {
  using namespace index_detail;
  const std::string op = op_name(p);
  check_count(op, x, idx.size());
  Value u = convert(v, x.dtype(), x.weak);
  if (!any_index(idx)) {
    // No index: every element is updated (x.at(dyn::all()).add(v) is x + v).
    Value ub = broadcast_to_shape(u, x.shape(), op, /*stage=*/true);
    if (p == Prim::scatter_add) return binary(Prim::add, x, ub);
    if (p == Prim::scatter_mul) return binary(Prim::mul, x, ub);
    if (p == Prim::scatter_min) return binary(Prim::min, x, ub);
    if (p == Prim::scatter_max) return binary(Prim::max, x, ub);
    return ub;
  }
  IndexPlan pl = plan(op, x, idx);
  Value ub = broadcast_to_shape(u, pl.gathered, op, /*stage=*/true);
  std::vector<Value> ops{x, pl.indices, ub};
  lift_all(ops);
  return bind1(p, ops, ScatterParams{pl.offset_dims, pl.collapsed, pl.start_map});
}

Value take(const Value& x, const Value& idx, std::int64_t axis) {
  const std::int64_t ax = normalize_axis("take", axis, x.rank());
  std::vector<IndexArg> args(static_cast<std::size_t>(ax) + 1);
  args.back() = IndexArg{IndexArg::Kind::value, idx, false};
  return index_get(x, args);
}

Value take_flat(const Value& x, const Value& idx) {
  return take(reshape(x, Shape{Dim(-1)}), idx, 0);
}

Value take_along_axis(const Value& x, const Value& idx, std::int64_t axis) {
  if (!is_integer(idx.dtype()))
    fail<TypeError>("take_along_axis: indices must be integers, got " + aval_str(idx.aval()));
  if (idx.rank() != x.rank())
    fail<ShapeError>("take_along_axis: indices and array must have the same rank, got indices shape " +
                     shape_str(idx.shape()) + " and array shape " + shape_str(x.shape()));
  const std::int64_t ax = normalize_axis("take_along_axis", axis, x.rank());
  // The result's shape: the broadcast of x's and idx's shapes off the axis,
  // idx's along it; every axis is indexed (by an iota off the axis).
  const Shape xs = x.shape(), is = idx.shape();
  Shape out(xs.size());
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (static_cast<std::int64_t>(d) == ax || xs[d] == is[d] || xs[d] == Dim(1)) {
      out[d] = is[d];
    } else if (is[d] == Dim(1)) {
      out[d] = xs[d];
    } else {
      fail<ShapeError>("take_along_axis: indices shape " + shape_str(is) + " is incompatible with array shape " +
                       shape_str(xs) + " off axis " + std::to_string(ax));
    }
  }
  std::vector<IndexArg> args;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    Value v = static_cast<std::int64_t>(d) == ax ? broadcast_to_shape(idx, out, "take_along_axis")
                                                 : iota(idx.dtype(), out, static_cast<std::int64_t>(d));
    // An axis of x of size 1 off the axis is read at 0 whatever the output.
    if (static_cast<std::int64_t>(d) != ax && xs[d] == Dim(1) && !(out[d] == Dim(1)))
      v = full(out, scalar_value(Scalar::of<std::int32_t>(0), true), idx.dtype());
    args.push_back(IndexArg{IndexArg::Kind::value, v, false});
  }
  return index_get(x, args);
}

namespace index_detail {

// The positions of the nonzero elements of a 1-D array, composed of
// primitives the backend already lowers (so it fuses and runs inside loops
// like any other code): with m the mask as i64,
//   k = sum(m)                 the count: a size computed from data
//   pos = cumsum(m) - 1        where each true element goes
//   out = zeros(k) scattered with iota at where(mask, pos, k)
// (a false element's target k is out of range: dropped).
// Dimension n as a weak i64 scalar: a literal when static.
inline Value i64_of(const Dim& n) {
  return n.is_static() ? scalar_value(Scalar::of<std::int64_t>(n.value()), true)
                       : convert(dim_to_value(n), DType::i64, true);
}

inline Value nonzero_1d(const Value& x) {
  const Value m = x.dtype() == DType::bool_ ? x : compare(Prim::ne, x, scalar_value(Scalar::of<std::int32_t>(0), true));
  const Value mi = convert(m, DType::i64);
  const Value k = reduce(Prim::reduce_sum, mi, {0});
  const Value pos = binary(Prim::sub, cumulative(Prim::cumsum, mi, 0, false),
                           scalar_value(Scalar::of<std::int64_t>(1), true));
  Value target = where(m, pos, k);
  std::vector<Value> ops{target};
  BroadcastInDimParams bp;
  bp.broadcast_dimensions = {0};
  bp.shape = shape_param("nonzero", Shape{x.shape()[0], Dim(1)}, ops);
  target = bind1(Prim::broadcast_in_dim, ops, bp);
  const Value base = full(Shape{dim_of(k, "nonzero")}, scalar_value(Scalar::of<std::int64_t>(0), false), DType::i64);
  std::vector<Value> sops{base, target, iota(DType::i64, x.shape(), 0, /*stage=*/true)};
  lift_all(sops);
  return bind1(Prim::scatter, sops, ScatterParams{{}, {0}, {0}});
}

}  // namespace index_detail

// An n-D array: the positions in its row-major flattening, then per axis
// (flat / stride) % size, as jnp.nonzero unravels them (div and rem: the
// positions are non-negative; no division for the last axis, whose stride
// is 1, and no remainder for the first, whose quotient is in range).
std::vector<Value> nonzero(const Value& x, std::size_t axes) {
  const std::size_t rank = static_cast<std::size_t>(x.rank());
  if (rank == 0)
    fail<ShapeError>("nonzero: a 0-d array has no axis to index, got " + aval_str(x.aval()) +
                     "; reshape it to one axis first (dyn::reshape(x, {1}))");
  if (rank != axes)
    fail<ShapeError>("nonzero: the array has rank " + std::to_string(rank) + ", got " + aval_str(x.aval()) +
                     ", but dyn::nonzero<" + std::to_string(axes) + "> returns " + std::to_string(axes) +
                     " index array(s); call dyn::nonzero<" + std::to_string(rank) + ">(x) (one per axis)");
  const Shape xs = x.shape();
  const Value flat = index_detail::nonzero_1d(rank == 1 ? x : reshape(x, Shape{Dim(-1)}));
  std::vector<Dim> strides(rank, Dim(1));
  for (std::size_t d = rank - 1; d-- > 0;) strides[d] = strides[d + 1] * xs[d + 1];
  std::vector<Value> out;
  for (std::size_t d = 0; d < rank; ++d) {
    Value v = flat;
    if (d + 1 < rank) v = binary(Prim::div, v, index_detail::i64_of(strides[d]));
    if (d > 0) v = binary(Prim::rem, v, index_detail::i64_of(xs[d]));
    out.push_back(v);
  }
  return out;
}

Value compress(const Value& mask, const Value& x) {
  if (mask.rank() != 1 || x.rank() < 1 || !(mask.shape()[0] == x.shape()[0]))
    fail<ShapeError>("compress: the mask must be 1-D with the length of the array's axis 0, got mask " +
                     aval_str(mask.aval()) + " for an array of shape " + shape_str(x.shape()));
  IndexArg rows{IndexArg::Kind::value, index_detail::nonzero_1d(mask), false};
  return index_get(x, {rows});
}

Value segment_sum_offsets(const Value& data, const Value& offsets) {
  if (!is_integer(offsets.dtype()))
    fail<TypeError>("segment_sum_offsets: offsets must be integers, got offsets " + aval_str(offsets.aval()) +
                    " for data " + aval_str(data.aval()));
  std::vector<Value> ops{data, is_index_dtype(offsets.dtype()) ? offsets
                                                               : convert(offsets, index_dtype_for(offsets.dtype()))};
  lift_all(ops);
  return bind1(Prim::segment_sum_offsets, ops, NoParams{});
}

Value segment_sum_offsets_transpose(const Value& ct, const Value& offsets, const Dim& n, bool stage) {
  using index_detail::i64_of;
  const Dim len = offsets.shape().at(0);
  const Value o = convert(offsets, DType::i64);
  const Value zero = scalar_value(Scalar::of<std::int64_t>(0), true), nv = i64_of(n);
  const Value lo = clip(slice_in_dim(o, Dim(0), len - Dim(1), 1, 0), zero, nv);
  const Value hi = binary(Prim::max, clip(slice_in_dim(o, Dim(1), len, 1, 0), zero, nv), lo);
  const auto spread = [&](const Value& g) {
    Value z = full(Shape{n + Dim(1)}, scalar_value(Scalar::of<std::int32_t>(0), true), g.dtype(), stage);
    z = index_update(Prim::scatter_add, z, {IndexArg{IndexArg::Kind::value, lo, false}}, g);
    z = index_update(Prim::scatter_add, z, {IndexArg{IndexArg::Kind::value, hi, false}}, unary(Prim::neg, g));
    return slice_in_dim(cumulative(Prim::cumsum, z, 0, false), Dim(0), n, 1, 0);
  };
  if (!is_complex(ct.dtype())) return spread(ct);
  return binary(Prim::complex, spread(unary(Prim::real, ct)), spread(unary(Prim::imag, ct)));
}

Value segment_sum_offsets_batched(const Value& data, const Value& offsets) {
  using index_detail::i64_of;
  const Dim b = data.shape().at(0), n = data.shape().at(1), len = offsets.shape().at(1), m = len - Dim(1);
  const Value o = convert(offsets, DType::i64);
  const Value zero = scalar_value(Scalar::of<std::int64_t>(0), true), nv = i64_of(n);
  const Value base = binary(Prim::mul, iota(DType::i64, Shape{b, Dim(1)}, 0), nv);
  const auto bound = [&](const Dim& from, const Dim& to) {
    const Value v = binary(Prim::add, clip(slice_in_dim(o, from, to, 1, 1), zero, nv), base);
    return reshape(v, Shape{b, m, Dim(1)});
  };
  // [lo_00, hi_00, lo_01, hi_01, ...] and a last 0: row 2i of the flat call
  // is row i of its batch, row 2i + 1 the gap to the next range (dropped).
  Value flat = reshape(concatenate({bound(Dim(0), m), bound(Dim(1), len)}, 2), Shape{b * m * Dim(2)});
  flat = concatenate({flat, full(Shape{Dim(1)}, zero, DType::i64)}, 0);
  const Value r = segment_sum_offsets(reshape(data, Shape{b * n}), flat);
  return reshape(slice_in_dim(reshape(r, Shape{b, m, Dim(2)}), Dim(0), Dim(1), 1, 2), Shape{b, m});
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
