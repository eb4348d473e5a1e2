// dynstage: the shape rules of gather, the scatters and segment_sum_offsets (included by
// shape_rules.hpp, inside namespace dyn::detail::rule_util, before
// abstract_eval; it uses that file's helpers).
//
// The checks are XLA's for Gather and Scatter with the index vector as the
// last axis of the indices, as JAX always builds them; the messages name the
// primitive, the dimension numbers and the shapes.
#pragma once

#ifdef DYNSTAGE_IMPLEMENTATION

// The indices operand (batch + [K]) of a gather or scatter whose index
// vectors map to operand axes `start_map`: an integer array whose last axis
// has size K = start_map.size(); the start map's axes in range and distinct.
inline void check_indices(Prim p, const Aval& x, const Aval& idx, const char* map_name,
                          const std::vector<std::int64_t>& start_map) {
  if (!is_integer(idx.dtype))
    fail<TypeError>(prim_str(p) + " indices must have an integer dtype, got " + aval_str(idx));
  if (!is_index_dtype(idx.dtype))
    fail<TypeError>(prim_str(p) + " indices must have dtype i32 or i64, got " + aval_str(idx) +
                    "; convert them (the numpy-level dyn:: functions do)");
  if (idx.rank() == 0)
    fail<ShapeError>(prim_str(p) + " indices must have rank >= 1 (the index vector is the last axis), got " +
                     aval_str(idx));
  const Dim& k = idx.shape.back();
  if (k != Dim(static_cast<std::int64_t>(start_map.size())))
    fail<ShapeError>(prim_str(p) + " the last axis of the indices must have size " +
                     std::to_string(start_map.size()) + " (the length of " + map_name + " " + ints_str(start_map) +
                     "), got indices shape " + shape_str(idx.shape));
  check_axes(p, map_name, start_map, x.shape);
}

// The window (slice) axes of an operand of rank r: `dropped` (collapsed or
// inserted, sorted and in range) and `window_dims` (ascending output/update
// axes, one per kept operand axis, in range for `out_rank`).
inline void check_window_dims(Prim p, const Aval& x, const char* window_name,
                              const std::vector<std::int64_t>& window_dims, const char* dropped_name,
                              const std::vector<std::int64_t>& dropped, std::size_t out_rank) {
  check_axes(p, dropped_name, dropped, x.shape);
  if (!std::is_sorted(dropped.begin(), dropped.end()))
    fail<IndexError>(prim_str(p) + " " + dropped_name + " must be sorted, got " + ints_str(dropped));
  if (window_dims.size() + dropped.size() != static_cast<std::size_t>(x.rank()))
    fail<ShapeError>(prim_str(p) + " " + window_name + " " + ints_str(window_dims) + " and " + dropped_name + " " +
                     ints_str(dropped) + " must together have one entry per operand axis, got operand shape " +
                     shape_str(x.shape));
  for (std::size_t i = 0; i < window_dims.size(); ++i)
    if (window_dims[i] < 0 || window_dims[i] >= static_cast<std::int64_t>(out_rank) ||
        (i > 0 && window_dims[i] <= window_dims[i - 1]))
      fail<IndexError>(prim_str(p) + " " + window_name + " " + ints_str(window_dims) +
                       " must be ascending and in range for a result of rank " + std::to_string(out_rank));
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::gather>, const std::vector<Aval>& in, const GatherParams& gp) {
  const Prim p = Prim::gather;
  if (in.size() < 2)
    fail<TypeError>("gather takes an operand and indices, got " + std::to_string(in.size()) + " operands");
  const Aval &x = in[0], &idx = in[1];
  check_indices(p, x, idx, "start_index_map", gp.start_index_map);
  if (gp.slice_sizes.size() != static_cast<std::size_t>(x.rank()))
    fail<ShapeError>("gather slice_sizes must have the same length as the operand rank, got slice_sizes " +
                     ints_str(gp.slice_sizes) + " for operand shape " + shape_str(x.shape));
  const Shape sizes = resolve_dynamic_shape(p, "slice_sizes", gp.slice_sizes, in, 2);
  const std::size_t batch = static_cast<std::size_t>(idx.rank()) - 1;
  const std::size_t out_rank = batch + gp.offset_dims.size();
  check_window_dims(p, x, "offset_dims", gp.offset_dims, "collapsed_slice_dims", gp.collapsed_slice_dims, out_rank);
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const bool collapsed = std::count(gp.collapsed_slice_dims.begin(), gp.collapsed_slice_dims.end(),
                                      static_cast<std::int64_t>(d)) > 0;
    // (Unlike XLA, a collapsed axis of size 0 may be gathered from with slice
    // size 1 when nothing is read: an empty index list; reading from it is
    // an IndexError when the kernel runs.)
    const bool empty_ok = collapsed && sizes[d] == Dim(1);
    if (!(sizes[d] >= Dim(0)) || (!empty_ok && !(x.shape[d] >= sizes[d])))
      fail<IndexError>("gather slice_sizes must be non-negative and at most the operand shape, got slice_sizes " +
                       shape_str(sizes) + " for operand shape " + shape_str(x.shape));
    if (collapsed && !(Dim(1) >= sizes[d]))
      fail<ShapeError>("gather collapsed_slice_dims " + ints_str(gp.collapsed_slice_dims) +
                       " must have slice size 0 or 1, got slice_sizes " + shape_str(sizes));
  }
  Shape out(out_rank);
  std::size_t next_offset = 0, next_batch = 0;
  for (std::size_t o = 0; o < out_rank; ++o) {
    if (next_offset < gp.offset_dims.size() && gp.offset_dims[next_offset] == static_cast<std::int64_t>(o)) {
      ++next_offset;
      continue;
    }
    out[o] = idx.shape[next_batch++];
  }
  const IndexMap m = slice_map(gp.offset_dims, gp.collapsed_slice_dims, gp.start_index_map,
                               static_cast<std::size_t>(x.rank()), AxisMap::Start::gathered);
  for (std::size_t d = 0; d < m.axes.size(); ++d)
    if (m.axes[d].out_axis >= 0) out[static_cast<std::size_t>(m.axes[d].out_axis)] = sizes[d];
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> scatter_rule(Prim p, const std::vector<Aval>& in, const ScatterParams& sp) {
  check_arity(p, in, 3);
  const Aval &x = in[0], &idx = in[1], &u = in[2];
  check_dtype(p, x.dtype, prim_info(p).dtypes);  // scatter-min/max: not complex
  if (u.dtype != x.dtype)
    fail<TypeError>(prim_str(p) + " updates dtype must match operand dtype, got updates dtype " +
                    dtype_str(u.dtype) + " and operand dtype " + dtype_str(x.dtype));
  check_indices(p, x, idx, "scatter_dims_to_operand_dims", sp.scatter_dims_to_operand_dims);
  const std::size_t batch = static_cast<std::size_t>(idx.rank()) - 1;
  if (static_cast<std::size_t>(u.rank()) != batch + sp.update_window_dims.size())
    fail<ShapeError>(prim_str(p) + " updates must have rank " + std::to_string(batch + sp.update_window_dims.size()) +
                     " (the indices' batch axes plus update_window_dims " + ints_str(sp.update_window_dims) +
                     "), got updates shape " + shape_str(u.shape) + " for indices shape " + shape_str(idx.shape));
  check_window_dims(p, x, "update_window_dims", sp.update_window_dims, "inserted_window_dims",
                    sp.inserted_window_dims, static_cast<std::size_t>(u.rank()));
  const IndexMap iv = index_vector_map(sp.update_window_dims, static_cast<std::size_t>(u.rank()));
  for (std::size_t i = 0; i < batch; ++i)
    if (u.shape[static_cast<std::size_t>(iv.axes[i].out_axis)] != idx.shape[i])
      fail<ShapeError>(prim_str(p) + " updates shape " + shape_str(u.shape) +
                       " does not match the batch axes of indices shape " + shape_str(idx.shape));
  const IndexMap m = scatter_map(sp, static_cast<std::size_t>(x.rank()));
  for (std::size_t d = 0; d < m.axes.size(); ++d)
    if (m.axes[d].out_axis >= 0 && !(x.shape[d] >= u.shape[static_cast<std::size_t>(m.axes[d].out_axis)]))
      fail<ShapeError>(prim_str(p) + " update windows must fit the operand, got updates shape " + shape_str(u.shape) +
                       " with update_window_dims " + ints_str(sp.update_window_dims) + " for operand shape " +
                       shape_str(x.shape));
  return {make_aval(x.dtype, x.shape, x.weak)};
}

#define DYN_X(e, ...)                                                                                  \
  inline std::vector<Aval> shape_rule(PrimTag<Prim::e>, const std::vector<Aval>& in, const ScatterParams& sp) { \
    return scatter_rule(Prim::e, in, sp);                                                              \
  }
DYN_SCATTER_PRIMITIVES(DYN_X)
#undef DYN_X

// segment_sum_offsets(data, offsets): data of n elements (rank 1, a number
// dtype), offsets an i32/i64 vector of m + 1 entries; the result has m
// elements of data's type (row r sums data[offsets[r] : offsets[r + 1]]).
// The length m is offsets' length - 1, a dimension expression when that
// length is symbolic (JAX's dimension variables are >= 1, so m >= 0).
inline std::vector<Aval> shape_rule(PrimTag<Prim::segment_sum_offsets>, const std::vector<Aval>& in, const NoParams&) {
  const Prim p = Prim::segment_sum_offsets;
  check_arity(p, in, 2);
  const Aval &x = in[0], &off = in[1];
  check_dtype(p, x.dtype, prim_info(p).dtypes);
  if (!is_integer(off.dtype))
    fail<TypeError>(prim_str(p) + " offsets must have an integer dtype, got offsets " + aval_str(off) +
                    " for data " + aval_str(x));
  if (!is_index_dtype(off.dtype))
    fail<TypeError>(prim_str(p) + " offsets must have dtype i32 or i64, got " + aval_str(off) +
                    "; convert them (dyn::segment_sum_offsets does)");
  if (x.rank() != 1)
    fail<ShapeError>(prim_str(p) + " data must have rank 1, got data shape " + shape_str(x.shape) +
                     " with offsets shape " + shape_str(off.shape));
  if (off.rank() != 1)
    fail<ShapeError>(prim_str(p) + " offsets must have rank 1 (m + 1 row boundaries), got offsets shape " +
                     shape_str(off.shape) + " with data shape " + shape_str(x.shape));
  const Dim& len = off.shape[0];
  if (len.is_static() && len.value() < 1)
    fail<ShapeError>(prim_str(p) + " offsets must have at least one entry (m + 1 row boundaries for m rows), "
                     "got offsets shape " + shape_str(off.shape) + " with data shape " + shape_str(x.shape));
  return {make_aval(x.dtype, Shape{len - Dim(1)}, x.weak)};
}

#endif  // DYNSTAGE_IMPLEMENTATION
