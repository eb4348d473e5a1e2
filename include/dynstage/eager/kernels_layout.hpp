// dynstage: the eager kernels of rev and pad, included by kernels.hpp. Both
// walk the output and read the operand element their index map gives
// (ir/index_map.hpp: rev_map, pad_map, pad_source), the map the LLVM
// lowering follows too.
#pragma once

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

// out[o] = x[map(o)] for every output element o, or the padding value
// (`fill`, a scalar; form pad) where the map reads no operand element.
inline AnyArray remap_impl(const AnyArray& x, const AnyArray* fill, const Aval& out, const IndexMap& m) {
  Storage o = alloc_output(out);
  const std::vector<std::int64_t> xs = x.shape(), xstr = row_major_strides(xs);
  const std::size_t r = xs.size();
  const std::int64_t n = product(o.shape, 0, r);
  visit_width(x.dtype(), [&](auto t) {
    using W = decltype(t);
    const W* src = data_as<W>(x);
    W* dst = data_as<W>(o);
    std::vector<std::int64_t> idx(r, 0);  // the output multi-index, row-major
    for (std::int64_t l = 0; l < n; ++l) {
      std::int64_t at = 0;
      for (std::size_t a = 0; a < r && at >= 0; ++a) {
        const AxisMap& am = m.axes[a];
        const std::int64_t oi = idx[static_cast<std::size_t>(am.out_axis)];
        std::int64_t i = 0;
        if (m.form == IndexMap::Form::pad) i = pad_source(am, oi, xs[a]);
        else i = (am.start == AxisMap::Start::last ? xs[a] - 1 : am.value) + am.stride * oi;
        at = i < 0 ? -1 : at + i * xstr[a];
      }
      dst[l] = at >= 0 ? src[at] : *data_as<W>(*fill);
      for (std::size_t a = r; a-- > 0;) {
        if (++idx[a] < o.shape[a]) break;
        idx[a] = 0;
      }
    }
  });
  return AnyArray(std::move(o));
}

inline AnyArray impl_rule(PrimTag<Prim::rev>, const std::vector<AnyArray>& in, const Aval& out, const RevParams& p) {
  return remap_impl(in[0], nullptr, out, rev_map(p, in[0].shape().size()));
}
inline AnyArray impl_rule(PrimTag<Prim::pad>, const std::vector<AnyArray>& in, const Aval& out, const PadParams& p) {
  return remap_impl(in[0], &in[1], out, pad_map(p, in[0].shape().size()));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
