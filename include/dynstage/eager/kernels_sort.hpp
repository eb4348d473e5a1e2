// dynstage: sorting (primitive sort): the one routine that sorts the lines
// of an array in place, the eager kernel built on it, and its C-ABI entry
// points, which compiled kernels call (llvm/lower_sort.hpp; the JIT resolves
// them by name, llvm/session.hpp). Eager and jit run the same code, so their
// results are identical.
//
// The order is lax.sort's (and NumPy's): ascending, NaNs last (all NaNs
// equal), -0.0 equal to 0.0, false < true; std::stable_sort keeps equal
// elements in their order (is_stable=True, what jnp.sort binds).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

// A strict weak order: NaN after everything, NaNs equivalent.
template <class T>
bool sort_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Sorts, in place, each line along the middle axis of `data` seen as
// [outer, n, inner] (row-major). A line with inner > 1 is strided: it is
// gathered into a buffer, sorted and scattered back.
template <class T>
void sort_lines(T* data, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (n <= 1 || outer <= 0 || inner <= 0) return;
  if (inner == 1) {
    for (std::int64_t o = 0; o < outer; ++o) std::stable_sort(data + o * n, data + (o + 1) * n, sort_less<T>);
    return;
  }
  std::vector<T> line(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      T* base = data + o * n * inner + i;
      for (std::int64_t k = 0; k < n; ++k) line[static_cast<std::size_t>(k)] = base[k * inner];
      std::stable_sort(line.begin(), line.end(), sort_less<T>);
      for (std::int64_t k = 0; k < n; ++k) base[k * inner] = line[static_cast<std::size_t>(k)];
    }
}

// The entry points of compiled kernels, one per dtype (bool: one byte 0/1):
// void(ptr data, i64 outer, i64 n, i64 inner). No exception can escape
// (std::stable_sort falls back to an in-place merge when memory is short;
// the strided buffer's allocation failure terminates, as any OOM in a kernel).
template <class T>
void sort_lines_entry(void* data, std::int64_t outer, std::int64_t n, std::int64_t inner) noexcept {
  sort_lines(static_cast<T*>(data), outer, n, inner);
}

inline AnyArray impl_rule(PrimTag<Prim::sort>, const std::vector<AnyArray>& in, const Aval& out,
                          const SortParams& p) {
  const AnyArray& x = in[0];
  Storage o = alloc_output(out);
  const auto& shape = x.shape();
  const auto ax = static_cast<std::size_t>(p.dimension);
  visit_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    if (o.size == 0) return;
    std::copy(data_as<T>(x), data_as<T>(x) + o.size, data_as<T>(o));
    sort_lines(data_as<T>(o), product(shape, 0, ax), shape[ax], product(shape, ax + 1, shape.size()));
  });
  return AnyArray(std::move(o));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
