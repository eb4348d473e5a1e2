// dynstage: sorting (primitives sort and top_k): the routines that sort the
// lines of arrays in place and select the top k of each line, the eager
// kernels built on them, and their C-ABI entry points, which compiled
// kernels call (llvm/lower_sort.hpp; the JIT resolves them by name,
// llvm/session.hpp). Eager and jit run the same code, so their results are
// identical.
//
// The order is lax.sort's (and NumPy's): ascending, NaNs last (all NaNs
// equal), -0.0 equal to 0.0, false < true; equal elements keep their order
// (is_stable=True, what jnp.sort binds: spreadsort plus a fix-up of zeros
// and NaNs for one operand, sort_line; for several, std::sort of (key,
// position) pairs or std::stable_sort of positions). top_k's is
// its reverse with ties broken by position: descending, NaNs first, equal
// elements lower index first (XLA's TopK).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <type_traits>
#include <vector>

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <boost/sort/spreadsort/spreadsort.hpp>

namespace dyn::detail::kernels {

// A strict weak order: NaN after everything, NaNs equivalent.
// Complex values: lexicographic on (real, imag), as numpy and lax.sort.
template <class T>
bool sort_less(T a, T b) {
  if constexpr (is_complex_v<T>) {
    if (sort_less(a.real(), b.real())) return true;
    if (sort_less(b.real(), a.real())) return false;
    return sort_less(a.imag(), b.imag());
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a)) return false;
      if (std::isnan(b)) return true;
    }
    return a < b;
  }
}

// Sorts one contiguous line stably. Equal elements are indistinguishable
// except float zeros (-0.0 == 0.0) and NaNs (their payloads), so an unstable
// sort gives the stable result once the NaNs' tail and the zeros' run hold
// them in input order (collected first; empty for most data). The sort is
// Boost.Sort's spreadsort (a radix/comparison hybrid, 3-4x std::sort on
// 1e6 floats): float_sort, integer_sort; bool: std::sort.
template <class T>
void sort_line(T* first, T* last, std::vector<T>& zeros, std::vector<T>& nans) {
  if constexpr (std::is_floating_point_v<T>) {
    // The NaNs move out (the rest keeps its order), so the sort compares
    // with a plain `<`.
    zeros.clear();
    nans.clear();
    T* end = first;
    for (T* p = first; p != last; ++p) {
      const T v = *p;
      if (std::isnan(v)) {
        nans.push_back(v);
        continue;
      }
      if (v == T(0)) zeros.push_back(v);
      *end++ = v;
    }
    boost::sort::spreadsort::float_sort(first, end);  // (-0.0 before 0.0: the zeros' run is rewritten below)
    std::copy(nans.begin(), nans.end(), end);
    if (!zeros.empty()) std::copy(zeros.begin(), zeros.end(), std::lower_bound(first, end, T(0)));
  } else if constexpr (std::is_same_v<T, bool>) {
    std::sort(first, last);
  } else if constexpr (is_complex_v<T>) {
    std::stable_sort(first, last, [](T a, T b) { return sort_less(a, b); });  // lexicographic, NaN parts last
  } else {
    boost::sort::spreadsort::integer_sort(first, last);
  }
}

// Sorts, in place, each line along the middle axis of `data` seen as
// [outer, n, inner] (row-major). A line with inner > 1 is strided: it is
// gathered into a buffer, sorted and scattered back.
template <class T>
void sort_lines(T* data, std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (n <= 1 || outer <= 0 || inner <= 0) return;
  std::vector<T> zeros, nans;
  if (inner == 1) {
    for (std::int64_t o = 0; o < outer; ++o) sort_line(data + o * n, data + (o + 1) * n, zeros, nans);
    return;
  }
  const std::unique_ptr<T[]> line(new T[static_cast<std::size_t>(n)]);  // (not vector<bool>: no data())
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      T* base = data + o * n * inner + i;
      for (std::int64_t k = 0; k < n; ++k) line[k] = base[k * inner];
      sort_line(line.get(), line.get() + n, zeros, nans);
      for (std::int64_t k = 0; k < n; ++k) base[k * inner] = line[k];
    }
}

// The entry points of compiled kernels, one per dtype (bool: one byte 0/1):
// void(ptr data, i64 outer, i64 n, i64 inner). No exception can escape
// (spreadsort allocates only its small bin arrays, std::stable_sort falls back to an in-place merge when memory is short;
// the strided buffer's allocation failure terminates, as any OOM in a kernel).
template <class T>
void sort_lines_entry(void* data, std::int64_t outer, std::int64_t n, std::int64_t inner) noexcept {
  sort_lines(static_cast<T*>(data), outer, n, inner);
}

// One line of a multi-operand sort: operand q's element k of the line is
// at data[q] + (start + k * inner) * size(q).
struct SortLines {
  void* const* data;
  const std::int32_t* dtypes;  // DType values
  std::int32_t nops, num_keys;
  std::int64_t n, inner;
};

// The permutation that sorts one line (starting at element `start`) by the
// keys, lexicographically: perm[k] is the position, in the line, of the
// element that goes to position k. Stable.
inline void line_permutation(const SortLines& s, std::int64_t start, std::vector<std::int64_t>& perm) {
  const auto n = static_cast<std::size_t>(s.n);
  perm.resize(n);
  for (std::size_t k = 0; k < n; ++k) perm[k] = static_cast<std::int64_t>(k);
  auto key_at = [&](std::int32_t q, auto t, std::int64_t k) {
    using T = decltype(t);
    return static_cast<const T*>(s.data[q])[start + k * s.inner];
  };
  if (s.num_keys == 1) {  // the common case (argsort, sort_key_val): pairs sorted by (key, position)
    visit_dtype(static_cast<DType>(s.dtypes[0]), [&](auto t) {
      using T = decltype(t);
      std::vector<std::pair<T, std::int64_t>> kv(n);
      for (std::size_t k = 0; k < n; ++k) kv[k] = {key_at(0, t, static_cast<std::int64_t>(k)), static_cast<std::int64_t>(k)};
      std::sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) {
        if (sort_less(a.first, b.first)) return true;
        if (sort_less(b.first, a.first)) return false;
        return a.second < b.second;
      });
      for (std::size_t k = 0; k < n; ++k) perm[k] = kv[k].second;
    });
    return;
  }
  // Several keys: -1, 0 or 1 per key, the first that differs decides.
  auto cmp = [&](std::int64_t a, std::int64_t b) {
    for (std::int32_t q = 0; q < s.num_keys; ++q) {
      const int c = visit_dtype(static_cast<DType>(s.dtypes[q]), [&](auto t) {
        const auto x = key_at(q, t, a), y = key_at(q, t, b);
        return sort_less(x, y) ? -1 : sort_less(y, x) ? 1 : 0;
      });
      if (c != 0) return c < 0;
    }
    return false;
  };
  std::stable_sort(perm.begin(), perm.end(), cmp);
}

// Sorts, in place, every line along the middle axis of the operands seen as
// [outer, n, inner], all by the permutation of their keys.
inline void sort_lines_multi(const SortLines& s, std::int64_t outer) {
  if (s.n <= 1 || outer <= 0 || s.inner <= 0) return;
  std::vector<std::int64_t> perm;
  std::vector<unsigned char> line;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i) {
      const std::int64_t start = o * s.n * s.inner + i;
      line_permutation(s, start, perm);
      for (std::int32_t q = 0; q < s.nops; ++q)
        visit_dtype(static_cast<DType>(s.dtypes[q]), [&](auto t) {
          using T = decltype(t);
          T* base = static_cast<T*>(s.data[q]) + start;
          line.resize(static_cast<std::size_t>(s.n) * sizeof(T));
          T* tmp = reinterpret_cast<T*>(line.data());
          for (std::int64_t k = 0; k < s.n; ++k) tmp[k] = base[perm[static_cast<std::size_t>(k)] * s.inner];
          for (std::int64_t k = 0; k < s.n; ++k) base[k * s.inner] = tmp[k];
        });
    }
}

// void(ptr data[nops], ptr dtypes (i32[nops]), i32 nops, i32 num_keys, i64
// outer, i64 n, i64 inner): the compiled kernels' entry point.
inline void sort_multi_entry(void* const* data, const std::int32_t* dtypes, std::int32_t nops, std::int32_t num_keys,
                             std::int64_t outer, std::int64_t n, std::int64_t inner) noexcept {
  sort_lines_multi(SortLines{data, dtypes, nops, num_keys, n, inner}, outer);
}

// top_k along the middle axis of x seen as [outer, n, inner]: the k first
// elements of each line in top_k's order into `values` and their positions
// into `indices`, both [outer, k, inner]. k <= n (checked before).
template <class T>
void top_k_lines(const T* x, T* values, std::int32_t* indices, std::int64_t outer, std::int64_t n, std::int64_t inner,
                 std::int64_t k) {
  if (k <= 0 || outer <= 0 || inner <= 0) return;
  std::vector<std::pair<T, std::int64_t>> line(static_cast<std::size_t>(n));
  auto before = [](const std::pair<T, std::int64_t>& a, const std::pair<T, std::int64_t>& b) {
    if (sort_less(b.first, a.first)) return true;
    if (sort_less(a.first, b.first)) return false;
    return a.second < b.second;
  };
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const T* src = x + o * n * inner + i;
      for (std::int64_t m = 0; m < n; ++m) line[static_cast<std::size_t>(m)] = {src[m * inner], m};
      std::partial_sort(line.begin(), line.begin() + k, line.end(), before);
      const std::int64_t dst = o * k * inner + i;
      for (std::int64_t m = 0; m < k; ++m) {
        values[dst + m * inner] = line[static_cast<std::size_t>(m)].first;
        indices[dst + m * inner] = static_cast<std::int32_t>(line[static_cast<std::size_t>(m)].second);
      }
    }
}

// void(ptr x, ptr values, ptr indices, i64 outer, i64 n, i64 inner, i64 k).
template <class T>
void top_k_entry(const void* x, void* values, void* indices, std::int64_t outer, std::int64_t n, std::int64_t inner,
                 std::int64_t k) noexcept {
  top_k_lines(static_cast<const T*>(x), static_cast<T*>(values), static_cast<std::int32_t*>(indices), outer, n, inner, k);
}

// The eager kernels. One operand: its own copy sorted (sort_lines); several:
// copies sorted together (sort_lines_multi).
inline std::vector<AnyArray> impl_rule(PrimTag<Prim::sort>, const std::vector<AnyArray>& in,
                                       const std::vector<Aval>& outs, const SortParams& p) {
  std::vector<Storage> o;
  std::vector<void*> data;
  std::vector<std::int32_t> dtypes;
  for (std::size_t q = 0; q < in.size(); ++q) {
    o.push_back(alloc_output(outs[q]));
    if (o.back().size) std::memcpy(o.back().data, in[q].data(), o.back().size * dtype_size(in[q].dtype()));
    data.push_back(o.back().data);
    dtypes.push_back(static_cast<std::int32_t>(in[q].dtype()));
  }
  const auto& shape = in[0].shape();
  const auto ax = static_cast<std::size_t>(p.dimension);
  const std::int64_t outer = product(shape, 0, ax), n = shape[ax], inner = product(shape, ax + 1, shape.size());
  if (in.size() == 1) {
    visit_dtype(in[0].dtype(), [&](auto t) {
      using T = decltype(t);
      if (o[0].size) sort_lines(data_as<T>(o[0]), outer, n, inner);
    });
  } else if (o[0].size) {
    sort_lines_multi(SortLines{data.data(), dtypes.data(), static_cast<std::int32_t>(in.size()), p.num_keys, n, inner},
                     outer);
  }
  std::vector<AnyArray> r;
  for (Storage& s : o) r.emplace_back(std::move(s));
  return r;
}

inline std::vector<AnyArray> impl_rule(PrimTag<Prim::top_k>, const std::vector<AnyArray>& in,
                                       const std::vector<Aval>& outs, const TopKParams& p) {
  const AnyArray& x = in[0];
  const auto& shape = x.shape();
  const auto ax = static_cast<std::size_t>(p.axis);
  if (p.k > shape[ax])  // a symbolic axis the shape rule could not decide
    fail<ShapeError>("top_k: k=" + std::to_string(p.k) + " is larger than the size " + std::to_string(shape[ax]) +
                     " of axis " + std::to_string(p.axis) + " of an array of shape " + shape_str(to_shape(shape)));
  Storage v = alloc_output(outs[0]), i = alloc_output(outs[1]);
  visit_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    top_k_lines(data_as<T>(x), data_as<T>(v), data_as<std::int32_t>(i), product(shape, 0, ax), shape[ax],
                product(shape, ax + 1, shape.size()), p.k);
  });
  std::vector<AnyArray> r;
  r.emplace_back(std::move(v));
  r.emplace_back(std::move(i));
  return r;
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
