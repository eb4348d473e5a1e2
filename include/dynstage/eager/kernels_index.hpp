// dynstage: the eager kernels of gather, the scatters and segment_sum_offsets, included by
// kernels.hpp. Both follow the maps of ir/index_map.hpp (slice_map,
// index_vector_map), the same the LLVM lowering follows: for each element
// of the gather's output (the scatter's updates), the operand element it
// reads (combines into).
//
// Semantics: a gather clamps each start so that the slice lies inside the
// operand (mode CLIP); a scatter drops an update element whose window does
// not fit (FILL_OR_DROP), and combines the others into a copy of the
// operand in row-major order of the updates, so duplicate indices
// accumulate (scatter-add) and the last one wins (scatter). The compiled
// kernels visit the updates in the same order: results are bit-identical.
#pragma once

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

// Element l of an integer indices array, as i64.
inline std::int64_t index_at(const AnyArray& idx, std::int64_t l) {
  return idx.dtype() == DType::i64 ? data_as<std::int64_t>(idx)[l] : data_as<std::int32_t>(idx)[l];
}

// Calls f(o, x) for every element o (row-major, linear) of an array of
// shape `dims` (a gather's output, a scatter's updates), with x the linear
// index of the operand element that map m (slice_map) gives it, or -1 for a
// scattered window that does not fit. A gathered start along an empty
// operand axis has nowhere to read from: an IndexError.
template <class F>
void walk_slice_map(Prim p, const IndexMap& m, const IndexMap& iv, const std::vector<std::int64_t>& dims,
                    const std::vector<std::int64_t>& xshape, const AnyArray& idx, F f) {
  const auto xs = row_major_strides(xshape);
  const auto is = row_major_strides(idx.shape());
  const std::int64_t n = product(dims, 0, dims.size());
  std::vector<std::int64_t> o(dims.size(), 0);
  for (std::int64_t l = 0; l < n; ++l) {
    std::int64_t vec = 0;  // the index vector's first element in idx
    for (std::size_t i = 0; i + 1 < iv.axes.size(); ++i) vec += o[static_cast<std::size_t>(iv.axes[i].out_axis)] * is[i];
    std::int64_t off = 0;
    bool drop = false;
    for (std::size_t d = 0; d < m.axes.size(); ++d) {
      const AxisMap& a = m.axes[d];
      const auto oa = static_cast<std::size_t>(a.out_axis);
      std::int64_t s = 0;
      if (a.start == AxisMap::Start::gathered || a.start == AxisMap::Start::scattered) {
        const std::int64_t limit = xshape[d] - (a.out_axis >= 0 ? dims[oa] : 1);
        s = index_at(idx, vec + a.value);
        if (a.start == AxisMap::Start::scattered) {
          drop = drop || s < 0 || s > limit;
        } else {
          if (limit < 0)
            fail<IndexError>(prim_str(p) + ": cannot index into operand axis " + std::to_string(d) +
                             " of size 0 of operand shape " + shape_str(to_shape(xshape)));
          s = std::clamp<std::int64_t>(s, 0, limit);
        }
      }
      if (a.out_axis >= 0) s += o[oa];
      off += s * xs[d];
    }
    f(l, drop ? -1 : off);
    for (std::size_t k = dims.size(); k-- > 0;) {
      if (++o[k] < dims[k]) break;
      o[k] = 0;
    }
  }
}

inline AnyArray gather_impl(const std::vector<AnyArray>& in, const Aval& out, const GatherParams& gp) {
  const AnyArray &x = in[0], &idx = in[1];
  Storage o = alloc_output(out);
  const IndexMap m = slice_map(gp.offset_dims, gp.collapsed_slice_dims, gp.start_index_map, x.shape().size(),
                               AxisMap::Start::gathered);
  const IndexMap iv = index_vector_map(gp.offset_dims, o.shape.size());
  visit_width(x.dtype(), [&](auto t) {
    using W = decltype(t);
    const W* a = data_as<W>(x);
    W* r = data_as<W>(o);
    walk_slice_map(Prim::gather, m, iv, o.shape, x.shape(), idx, [&](std::int64_t l, std::int64_t k) { r[l] = a[k]; });
  });
  return AnyArray(std::move(o));
}

// combine(old, update) -> new, per scatter primitive.
template <class Combine>
AnyArray scatter_impl(Prim p, const std::vector<AnyArray>& in, const ScatterParams& sp, Combine combine) {
  const AnyArray &x = in[0], &idx = in[1], &u = in[2];
  Storage o = x.storage().clone();
  const IndexMap m = scatter_map(sp, x.shape().size());
  const IndexMap iv = index_vector_map(sp.update_window_dims, u.shape().size());
  visit_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* v = data_as<T>(u);
    T* r = data_as<T>(o);
    walk_slice_map(p, m, iv, u.shape(), x.shape(), idx, [&](std::int64_t l, std::int64_t k) {
      if (k >= 0) r[k] = combine(r[k], v[l]);
    });
  });
  return AnyArray(std::move(o));
}

inline AnyArray impl_rule(PrimTag<Prim::gather>, const std::vector<AnyArray>& in, const Aval& out,
                          const GatherParams& p) {
  return gather_impl(in, out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::scatter>, const std::vector<AnyArray>& in, const Aval&, const ScatterParams& p) {
  return scatter_impl(Prim::scatter, in, p, [](auto, auto b) { return b; });
}
// On bool, add is or and mul is and (as lax's add/mul).
inline AnyArray impl_rule(PrimTag<Prim::scatter_add>, const std::vector<AnyArray>& in, const Aval&,
                          const ScatterParams& p) {
  return scatter_impl(Prim::scatter_add, in, p, []<class T>(T a, T b) -> T {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else return wrap_add(a, b);
  });
}
inline AnyArray impl_rule(PrimTag<Prim::scatter_mul>, const std::vector<AnyArray>& in, const Aval&,
                          const ScatterParams& p) {
  return scatter_impl(Prim::scatter_mul, in, p, []<class T>(T a, T b) -> T {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return wrap_mul(a, b);
  });
}
inline AnyArray impl_rule(PrimTag<Prim::scatter_min>, const std::vector<AnyArray>& in, const Aval&,
                          const ScatterParams& p) {
  return scatter_impl(Prim::scatter_min, in, p, [](auto a, auto b) { return min_value(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::scatter_max>, const std::vector<AnyArray>& in, const Aval&,
                          const ScatterParams& p) {
  return scatter_impl(Prim::scatter_max, in, p, [](auto a, auto b) { return max_value(a, b); });
}

// segment_sum_offsets: row r sums data[lo : hi] in order from 0 (lo, hi
// offsets r and r + 1 clamped into [0, n]; hi <= lo: 0), as scatter-add of
// the same elements into zeros adds them, and as the compiled kernel does
// (llvm/lower_scatter.hpp, emit_segment_sum): the same bits.
inline AnyArray impl_rule(PrimTag<Prim::segment_sum_offsets>, const std::vector<AnyArray>& in, const Aval& out,
                          const NoParams&) {
  const AnyArray &x = in[0], &off = in[1];
  Storage o = alloc_output(out);
  const std::int64_t n = x.shape().at(0), m = o.size;
  visit_dtype_in<prim_info(Prim::segment_sum_offsets).dtypes>(Prim::segment_sum_offsets, x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* a = data_as<T>(x);
    T* r = data_as<T>(o);
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t lo = std::clamp<std::int64_t>(index_at(off, i), 0, n);
      const std::int64_t hi = std::clamp<std::int64_t>(index_at(off, i + 1), 0, n);
      T s = T(0);
      for (std::int64_t k = lo; k < hi; ++k) s = wrap_add(s, a[k]);
      r[i] = s;
    }
  });
  return AnyArray(std::move(o));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
