// dynstage: the eager kernels of the index reductions (argmax, argmin), one
// impl_rule each, included by kernels.hpp.
//
// The definition, which the compiled kernel (llvm/lower_argreduce.hpp)
// follows: along the axis, the running best starts at position 0 and
// position k replaces it when its value is strictly greater (argmin: less),
// or is a NaN while the best is not. So ties keep the first index and the
// first NaN wins (lax.argmax, numpy.argmax). An empty axis gives index 0
// (lax's; jnp.argmax and dyn::argmax reject a static empty axis before).
#pragma once

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

// Whether v replaces the running best b (argmax when Max, else argmin).
template <bool Max, class T>
bool arg_better(T v, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return false;
    if (std::isnan(v)) return true;
  }
  return Max ? b < v : v < b;
}

// The operand as [outer, n, inner] (n along the axis); the output as
// [outer, inner]. With inner > 1 the running best values are one row (a
// vectorisable pass per position); along the last axis, registers.
template <bool Max>
AnyArray arg_reduce_impl(Prim p, const AnyArray& x, const Aval& out, const ArgReduceParams& ap) {
  Storage o = alloc_output(out);
  const auto& shape = x.shape();
  const auto ax = static_cast<std::size_t>(ap.axes.at(0));
  const std::int64_t outer = product(shape, 0, ax), n = shape[ax], inner = product(shape, ax + 1, shape.size());
  visit_dtype(out.dtype, [&](auto it) {
    using I = decltype(it);
    if constexpr (std::is_same_v<I, std::int32_t> || std::is_same_v<I, std::int64_t>) {
      I* r = data_as<I>(o);
      std::fill(r, r + o.size, I(0));
      if (n <= 1 || o.size == 0) return;
      visit_dtype_in<prim_info(Prim::argmax).dtypes>(p, x.dtype(), [&](auto t) {
        using T = decltype(t);
        const T* a = data_as<T>(x);
        std::vector<T> best(static_cast<std::size_t>(inner));
        for (std::int64_t i = 0; i < outer; ++i) {
          const T* base = a + i * n * inner;
          I* ri = r + i * inner;
          std::copy(base, base + inner, best.begin());
          for (std::int64_t k = 1; k < n; ++k) {
            const T* row = base + k * inner;
            for (std::int64_t j = 0; j < inner; ++j)
              if (arg_better<Max, T>(row[j], best[static_cast<std::size_t>(j)])) {
                best[static_cast<std::size_t>(j)] = row[j];
                ri[j] = static_cast<I>(k);
              }
          }
        }
      });
    } else {
      internal_error(prim_str(p) + ": index_dtype " + dtype_str(out.dtype));
    }
  });
  return AnyArray(std::move(o));
}

inline AnyArray impl_rule(PrimTag<Prim::argmax>, const std::vector<AnyArray>& in, const Aval& out,
                          const ArgReduceParams& p) {
  return arg_reduce_impl<true>(Prim::argmax, in[0], out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::argmin>, const std::vector<AnyArray>& in, const Aval& out,
                          const ArgReduceParams& p) {
  return arg_reduce_impl<false>(Prim::argmin, in[0], out, p);
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
