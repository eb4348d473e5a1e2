// dynstage: the eager dot_general (real and complex dtypes): both operands
// are brought (by a strided copy, skipped when already so laid out) to [batch, free, contracting] for lhs and
// [batch, contracting, free] for rhs, then a batched i-k-j matrix product
// writes [batch, lhs free, rhs free], which is the output's layout.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

template <class T>
void matmul_ikj(const T* l, const T* r, T* o, std::int64_t B, std::int64_t M, std::int64_t K, std::int64_t N) {
  if constexpr (is_complex_v<T>) {
    // Complex: the products as complex_mul computes them (no Annex G
    // recovery, as the compiled kernels), summed over k in order.
    for (std::int64_t b = 0; b < B; ++b, l += M * K, r += K * N, o += M * N)
      for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          T acc(0);
          for (std::int64_t k = 0; k < K; ++k) acc += complex_mul(l[i * K + k], r[k * N + j]);
          o[i * N + j] = acc;
        }
    return;
  } else {
  // Integers wrap: run in the unsigned type of the same width.
  using A = typename WrapType<T>::type;
  const A* L = reinterpret_cast<const A*>(l);
  const A* R = reinterpret_cast<const A*>(r);
  A* O = reinterpret_cast<A*>(o);
  for (std::int64_t b = 0; b < B; ++b, L += M * K, R += K * N, O += M * N) {
    if (N == 1) {
      for (std::int64_t i = 0; i < M; ++i) {
        A acc = 0;
        for (std::int64_t k = 0; k < K; ++k) acc = static_cast<A>(acc + static_cast<MulType<A>>(L[i * K + k]) * R[k]);
        O[i] = acc;
      }
      continue;
    }
    for (std::int64_t i = 0; i < M; ++i) {
      A* orow = O + i * N;
      std::fill(orow, orow + N, A(0));
      for (std::int64_t k = 0; k < K; ++k) {
        const A a = L[i * K + k];
        const A* rrow = R + k * N;
        loop_axpy(orow, rrow, a, N);
      }
    }
  }
  }
}

// x's axes in the order `perm`, as a contiguous buffer (x itself if perm is
// the identity).
inline AnyArray permuted(const AnyArray& x, const std::vector<std::int64_t>& perm) {
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
  if (identity) return x;
  const auto in_strides = row_major_strides(x.shape());
  Shape shape;
  std::vector<std::int64_t> src;
  for (auto a : perm) {
    shape.emplace_back(x.shape()[static_cast<std::size_t>(a)]);
    src.push_back(in_strides[static_cast<std::size_t>(a)]);
  }
  return gather(x, make_aval(x.dtype(), std::move(shape), false), 0, std::move(src));
}

inline AnyArray dot_general_impl(const std::vector<AnyArray>& in, const Aval& out, const DotGeneralParams& dp) {
  const AnyArray &x = in[0], &y = in[1];
  const auto lf = dot_free_axes(x.rank(), dp.lhs_batch, dp.lhs_contracting);
  const auto rf = dot_free_axes(y.rank(), dp.rhs_batch, dp.rhs_contracting);
  auto size_of = [](const AnyArray& a, const std::vector<std::int64_t>& axes) {
    std::int64_t n = 1;
    for (auto i : axes) n *= a.shape()[static_cast<std::size_t>(i)];
    return n;
  };
  const std::int64_t B = size_of(x, dp.lhs_batch), M = size_of(x, lf), K = size_of(x, dp.lhs_contracting),
                     N = size_of(y, rf);
  std::vector<std::int64_t> lperm = dp.lhs_batch, rperm = dp.rhs_batch;
  lperm.insert(lperm.end(), lf.begin(), lf.end());
  lperm.insert(lperm.end(), dp.lhs_contracting.begin(), dp.lhs_contracting.end());
  rperm.insert(rperm.end(), dp.rhs_contracting.begin(), dp.rhs_contracting.end());
  rperm.insert(rperm.end(), rf.begin(), rf.end());
  const AnyArray l = permuted(x, lperm), r = permuted(y, rperm);
  Storage o = alloc_output(out);
  visit_dtype_in<DTypeSet::number>(Prim::dot_general, o.dtype, [&](auto t) {
    using T = decltype(t);
    matmul_ikj(data_as<T>(l), data_as<T>(r), data_as<T>(o), B, M, K, N);
  });
  return AnyArray(std::move(o));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
