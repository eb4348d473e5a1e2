// dynstage: the eager kernels of the cumulative primitives (cumsum, cumprod,
// cummax, cummin), one impl_rule each, included by kernels.hpp.
//
// The order of evaluation is the definition: along the axis, the first
// element (the last when reversed) is copied, then out[k] = op(out[k-1],
// x[k]) one element after the other, in the element type (integers wrap,
// max/min propagate NaN as lax.max does). No reassociation, so the compiled
// kernels (llvm/lower_cumulative.hpp) give bit-identical results.
#pragma once

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

// The operand as [outer, n, inner] (row-major; n along the axis, inner the
// product of the axes after it). With inner > 1 the running value is the
// previous row of the output and each step is one elementwise pass over a
// contiguous row (vectorised); along the last axis it is a register.
template <DTypeSet S, class Op>
AnyArray cumulative_impl(Prim p, const AnyArray& x, const Aval& out, const CumulativeParams& cp, Op op) {
  Storage o = alloc_output(out);
  const auto& shape = x.shape();
  const auto ax = static_cast<std::size_t>(cp.axis);
  const std::int64_t outer = product(shape, 0, ax), n = shape[ax], inner = product(shape, ax + 1, shape.size());
  if (o.size == 0) return AnyArray(std::move(o));
  visit_dtype_in<S>(p, x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* a = data_as<T>(x);
    T* r = data_as<T>(o);
    const std::int64_t step = cp.reverse ? -inner : inner;  // from one position along the axis to the next
    for (std::int64_t i = 0; i < outer; ++i) {
      const std::int64_t first = i * n * inner + (cp.reverse ? (n - 1) * inner : 0);
      if (inner == 1) {
        T acc = a[first];
        r[first] = acc;
        for (std::int64_t s = 1, off = first + step; s < n; ++s, off += step) {
          acc = op(acc, a[off]);
          r[off] = acc;
        }
        continue;
      }
      std::copy(a + first, a + first + inner, r + first);
      for (std::int64_t s = 1, off = first + step; s < n; ++s, off += step) loop_zip(r + off, r + off - step, a + off, inner, op);
    }
  });
  return AnyArray(std::move(o));
}

inline AnyArray impl_rule(PrimTag<Prim::cumsum>, const std::vector<AnyArray>& in, const Aval& out,
                          const CumulativeParams& p) {
  return cumulative_impl<prim_info(Prim::cumsum).dtypes>(Prim::cumsum, in[0], out, p,
                                                         [](auto a, auto b) { return wrap_add(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::cumprod>, const std::vector<AnyArray>& in, const Aval& out,
                          const CumulativeParams& p) {
  return cumulative_impl<prim_info(Prim::cumprod).dtypes>(Prim::cumprod, in[0], out, p,
                                                          [](auto a, auto b) { return wrap_mul(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::cummax>, const std::vector<AnyArray>& in, const Aval& out,
                          const CumulativeParams& p) {
  return cumulative_impl<prim_info(Prim::cummax).dtypes>(Prim::cummax, in[0], out, p,
                                                         [](auto a, auto b) { return max_value(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::cummin>, const std::vector<AnyArray>& in, const Aval& out,
                          const CumulativeParams& p) {
  return cumulative_impl<prim_info(Prim::cummin).dtypes>(Prim::cummin, in[0], out, p,
                                                         [](auto a, auto b) { return min_value(a, b); });
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
