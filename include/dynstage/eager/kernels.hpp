// dynstage: eager kernels, the impl rule of every primitive.
//
// impl validates and types its operands through abstract_eval, allocates the
// outputs and fills them with plain loops over contiguous row-major data. The
// element type is resolved once per call (visit_dtype); the per-primitive
// arithmetic (an elementwise primitive's scalar function, below) is
// instantiated into the loop, so there is no dispatch per element. These kernels are the reference the compiled kernels are
// tested against, so they are deliberately simple and deterministic: sums
// run left to right in the element type.
//
// Integer arithmetic wraps (two's complement) instead of being undefined:
// add/sub/mul/neg/abs/pow compute in the unsigned type, INT_MIN / -1 gives
// INT_MIN and INT_MIN % -1 gives 0; x / 0 gives -1 (all bits set) and
// x % 0 gives x, XLA's results (docs/backend.md). Float -> int conversion truncates, maps NaN to 0 and
// saturates out-of-range values.
#pragma once

#include <bit>

#include "../runtime/distributed.hpp"
#include "debug_print.hpp"
#include "kernel_util.hpp"
#include "kernels_arg.hpp"
#include "kernels_cumulative.hpp"
#include "kernels_dot.hpp"
#include "kernels_fft.hpp"
#include "kernels_index.hpp"
#include "kernels_layout.hpp"
#include "kernels_math.hpp"
#include "kernels_sort.hpp"

// The eager kernels are compiled once per program, in the one translation
// unit that defines DYNSTAGE_IMPLEMENTATION; rules.hpp declares impl.
#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail {

// The kernels, in their own namespace so that their short names cannot
// collide with other dyn::detail code.
namespace kernels {

using namespace rule_util;

// ---------------------------------------------------------------------------
// Elementwise kernels.

template <DTypeSet S, class F>
AnyArray map_unary(Prim p, const AnyArray& x, const Aval& out, F f) {
  Storage o = alloc_output(out);
  visit_dtype_in<S>(p, x.dtype(), [&](auto t) {
    using T = decltype(t);
    // T, or for abs, real, imag of complex and conj of real another dtype (a
    // bool's `!v` is bool; integer promotion of other results is wrapped back)
    using Fr = decltype(f(t));
    using R = std::conditional_t<is_complex_v<T> || is_complex_v<Fr>, Fr, T>;
    loop_map(data_as<R>(o), data_as<T>(x), o.size, f);
  });
  return AnyArray(std::move(o));
}

// Binary elementwise (R = T) and comparisons (R = bool); a rank-0 operand
// broadcasts against the other.
template <DTypeSet S, bool Compare, class F>
AnyArray map_binary(Prim p, const std::vector<AnyArray>& in, const Aval& out, F f) {
  Storage o = alloc_output(out);
  visit_dtype_in<S>(p, in[0].dtype(), [&](auto t) {
    using T = decltype(t);
    // T (bool & bool is an int, stored back as bool); complex(re, im): complex of T
    using Fr = decltype(f(t, t));
    using R = std::conditional_t<Compare, bool, std::conditional_t<is_complex_v<Fr> && !is_complex_v<T>, Fr, T>>;
    const T* a = data_as<T>(in[0]);
    const T* b = data_as<T>(in[1]);
    R* r = data_as<R>(o);
    const std::int64_t n = o.size;
    if (in[0].rank() == 0 && in[1].rank() != 0) {
      const T av = a[0];
      loop_map(r, b, n, [av, &f](T v) { return f(av, v); });
    } else if (in[1].rank() == 0 && in[0].rank() != 0) {
      const T bv = b[0];
      loop_map(r, a, n, [bv, &f](T v) { return f(v, bv); });
    } else {
      loop_zip(r, a, b, n, f);
    }
  });
  return AnyArray(std::move(o));
}

inline AnyArray select_n_impl(const std::vector<AnyArray>& in, const Aval& out) {
  Storage o = alloc_output(out);
  const bool* pred = data_as<bool>(in[0]);
  const bool scalar_pred = in[0].rank() == 0;
  visit_width(in[1].dtype(), [&](auto t) {
    using W = decltype(t);
    const W* c0 = data_as<W>(in[1]);
    const W* c1 = data_as<W>(in[2]);
    W* r = data_as<W>(o);
    const std::int64_t n = o.size;
    if (scalar_pred) {
      if (n) std::memcpy(r, pred[0] ? c1 : c0, static_cast<std::size_t>(n) * sizeof(W));
    } else {
      loop_select(r, pred, c0, c1, n);
    }
  });
  return AnyArray(std::move(o));
}

// clamp(lo, x, hi); lo and hi may be rank 0.
inline AnyArray clamp_impl(const std::vector<AnyArray>& in, const Aval& out) {
  Storage o = alloc_output(out);
  visit_dtype_in<DTypeSet::ordered>(Prim::clamp, in[1].dtype(), [&](auto t) {
    using T = decltype(t);
    const T* lo = data_as<T>(in[0]);
    const T* x = data_as<T>(in[1]);
    const T* hi = data_as<T>(in[2]);
    const std::int64_t lo_step = in[0].rank() == 0 ? 0 : 1, hi_step = in[2].rank() == 0 ? 0 : 1;
    T* r = data_as<T>(o);
    for (std::int64_t i = 0; i < o.size; ++i) r[i] = clamp_value(lo[i * lo_step], x[i], hi[i * hi_step]);
  });
  return AnyArray(std::move(o));
}

inline AnyArray convert_impl(const AnyArray& x, const Aval& out) {
  Storage o = alloc_output(out);
  visit_dtype(x.dtype(), [&](auto s) {
    using Src = decltype(s);
    visit_dtype(out.dtype, [&](auto d) {
      using Dst = decltype(d);
      loop_map(data_as<Dst>(o), data_as<Src>(x), o.size, [](Src v) { return convert_value<Dst>(v); });
    });
  });
  return AnyArray(std::move(o));
}

// ---------------------------------------------------------------------------
// Structural kernels.

inline AnyArray broadcast_in_dim_impl(const AnyArray& x, const Aval& out, const BroadcastInDimParams& bp) {
  const auto in_strides = row_major_strides(x.shape());
  std::vector<std::int64_t> src(out.shape.size(), 0);
  for (std::size_t i = 0; i < bp.broadcast_dimensions.size(); ++i)
    if (x.shape()[i] != 1) src[static_cast<std::size_t>(bp.broadcast_dimensions[i])] = in_strides[i];
  return gather(x, out, 0, std::move(src));
}

// Same elements, new shape: shares the buffer (immutable while shared), except
// for a borrowed view, whose memory the user may change or write through.
inline AnyArray reshape_impl(const AnyArray& x, const Aval& out) {
  Storage s = x.storage().borrowed ? x.storage().clone() : x.storage();
  s.shape = static_shape(out.shape);
  return AnyArray(std::move(s));
}

inline AnyArray transpose_impl(const AnyArray& x, const Aval& out, const TransposeParams& tp) {
  const auto in_strides = row_major_strides(x.shape());
  std::vector<std::int64_t> src;
  for (auto a : tp.permutation) src.push_back(in_strides[static_cast<std::size_t>(a)]);
  return gather(x, out, 0, std::move(src));
}

inline AnyArray concatenate_impl(const std::vector<AnyArray>& in, const Aval& out, const ConcatenateParams& cp) {
  Storage o = alloc_output(out);
  const auto d = static_cast<std::size_t>(cp.dimension);
  const std::int64_t outer = product(o.shape, 0, d), inner = product(o.shape, d + 1, o.shape.size());
  const std::size_t esize = dtype_size(o.dtype);
  std::vector<std::size_t> chunk;  // bytes of one operand per outer index
  for (const auto& a : in) chunk.push_back(static_cast<std::size_t>(a.shape()[d] * inner) * esize);
  auto* dst = static_cast<unsigned char*>(o.data);
  for (std::int64_t i = 0; i < outer; ++i)
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (chunk[k]) std::memcpy(dst, static_cast<const unsigned char*>(in[k].data()) + static_cast<std::size_t>(i) * chunk[k], chunk[k]);
      dst += chunk[k];
    }
  return AnyArray(std::move(o));
}

inline AnyArray slice_impl(const std::vector<AnyArray>& in, const Aval& out, const SliceParams& sp) {
  const AnyArray& x = in[0];
  auto strides = row_major_strides(x.shape());
  std::int64_t offset = 0;
  std::size_t k = 1;  // dynamic start indices come first among the operands
  for (std::size_t i = 0; i < strides.size(); ++i) {
    const std::int64_t start = sp.start_indices[i] == kDynamicDim ? scalar_int(in[k++]) : sp.start_indices[i];
    offset += start * strides[i];
    if (!sp.strides.empty()) strides[i] *= sp.strides[i];
  }
  return gather(x, out, offset, std::move(strides));
}

// Start indices of dynamic_slice / dynamic_update_slice, clamped into
// [0, dim - size] as in JAX.
inline std::int64_t clamped_offset(const std::vector<AnyArray>& in, std::size_t first,
                                   const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& sizes) {
  const auto strides = row_major_strides(shape);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t start = std::clamp<std::int64_t>(scalar_int(in[first + i]), 0, shape[i] - sizes[i]);
    offset += start * strides[i];
  }
  return offset;
}

inline AnyArray dynamic_slice_impl(const std::vector<AnyArray>& in, const Aval& out, const DynamicSliceParams& dp) {
  const AnyArray& x = in[0];
  (void)dp;  // the sizes, static or from operands, are the output's shape
  return gather(x, out, clamped_offset(in, 1, x.shape(), static_shape(out.shape)), row_major_strides(x.shape()));
}

inline AnyArray dynamic_update_slice_impl(const std::vector<AnyArray>& in) {
  const AnyArray &x = in[0], &u = in[1];
  Storage o = x.storage().clone();
  const std::int64_t offset = clamped_offset(in, 2, x.shape(), u.shape());
  StridedCopy c{u.shape(), row_major_strides(u.shape()), row_major_strides(x.shape())};
  visit_width(x.dtype(), [&](auto t) {
    using W = decltype(t);
    c.run(data_as<W>(u), data_as<W>(o) + offset);
  });
  return AnyArray(std::move(o));
}

inline AnyArray iota_impl(const Aval& out, const IotaParams& ip) {
  Storage o = alloc_output(out);
  const auto d = static_cast<std::size_t>(ip.dimension);
  const std::int64_t outer = product(o.shape, 0, d), len = o.shape[d], inner = product(o.shape, d + 1, o.shape.size());
  visit_dtype_in<DTypeSet::numeric>(Prim::iota, o.dtype, [&](auto t) {
    using T = decltype(t);
    T* r = data_as<T>(o);
    for (std::int64_t i = 0; i < outer; ++i)
      for (std::int64_t k = 0; k < len; ++k, r += inner) std::fill(r, r + inner, static_cast<T>(k));
  });
  return AnyArray(std::move(o));
}

// ---------------------------------------------------------------------------
// Reductions: the input is read once in row-major order; each element is
// combined into the output element it maps to (output stride 0 along reduced
// axes), so every output accumulates its inputs left to right.

template <DTypeSet S, class Init, class Op>
AnyArray reduce_impl(Prim p, const AnyArray& x, const Aval& out, const ReduceParams& rp, Init init, Op op) {
  Storage o = alloc_output(out);
  // Output stride of every input axis: 0 where reduced.
  const auto& shape = x.shape();
  std::vector<std::int64_t> ostr(shape.size(), 0);
  {
    std::int64_t acc = 1;
    for (std::size_t i = shape.size(); i-- > 0;)
      if (std::find(rp.axes.begin(), rp.axes.end(), static_cast<std::int64_t>(i)) == rp.axes.end()) {
        ostr[i] = acc;
        acc *= shape[i];
      }
  }
  // Merge adjacent axes that stay contiguous in the output (or are both reduced).
  std::vector<std::int64_t> sh, os;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!sh.empty() && os.back() == ostr[i] * shape[i]) {
      sh.back() *= shape[i];
      os.back() = ostr[i];
    } else {
      sh.push_back(shape[i]);
      os.push_back(ostr[i]);
    }
  }
  visit_dtype_in<S>(p, x.dtype(), [&](auto t) {
    using T = decltype(t);
    T* r = data_as<T>(o);
    std::fill(r, r + o.size, static_cast<T>(init(t)));
    if (x.size() == 0) return;
    const T* a = data_as<T>(x);
    if (sh.empty()) {
      r[0] = op(r[0], a[0]);
      return;
    }
    const std::int64_t n = sh.back(), inner_stride = os.back();
    const std::vector<std::int64_t> outer(sh.begin(), sh.end() - 1);
    const auto in_strides = row_major_strides(sh);
    for_each_offset(outer, in_strides, os, [&](std::int64_t in_off, std::int64_t out_off) {
      const T* row = a + in_off;
      if (inner_stride == 0) {
        T acc = r[out_off];
        for (std::int64_t k = 0; k < n; ++k) acc = op(acc, row[k]);
        r[out_off] = acc;
      } else {
        loop_accumulate(r + out_off, row, n, op);
      }
    });
  });
  return AnyArray(std::move(o));
}

// ---------------------------------------------------------------------------
// The scalar function of every unary, binary and compare primitive: what its
// kernel maps over the elements, instantiated for the dtypes the
// primitive's row allows (prims.hpp). One overload per primitive.

auto scalar(PrimTag<Prim::neg>, auto v) { return wrap_neg(v); }
auto scalar(PrimTag<Prim::abs>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_abs(v.real(), v.imag());  // |z|, real (lax.abs)
  else if constexpr (std::is_unsigned_v<decltype(v)>) return v;
  else if constexpr (std::is_integral_v<decltype(v)>) return v < 0 ? wrap_neg(v) : v;
  else return std::fabs(v);
}
auto scalar(PrimTag<Prim::sign>, auto v) {
  using T = decltype(v);
  if constexpr (std::is_unsigned_v<T>) return static_cast<T>(v != 0);
  else if constexpr (std::is_integral_v<T>) return static_cast<T>((v > 0) - (v < 0));
  else return v > 0 ? T(1) : v < 0 ? T(-1) : v;  // keeps -0.0, 0.0 and NaN
}
auto scalar(PrimTag<Prim::floor>, auto v) { return std::floor(v); }
auto scalar(PrimTag<Prim::ceil>, auto v) { return std::ceil(v); }
auto scalar(PrimTag<Prim::exp>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_exp(v);
  else return std::exp(v);
}
auto scalar(PrimTag<Prim::log>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_log(v);
  else return std::log(v);
}
auto scalar(PrimTag<Prim::log1p>, auto v) { return std::log1p(v); }
auto scalar(PrimTag<Prim::sqrt>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_sqrt(v);
  else return std::sqrt(v);
}
auto scalar(PrimTag<Prim::rsqrt>, auto v) { return decltype(v)(1) / std::sqrt(v); }
auto scalar(PrimTag<Prim::sin>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_sin(v);
  else return std::sin(v);
}
auto scalar(PrimTag<Prim::cos>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_cos(v);
  else return std::cos(v);
}
auto scalar(PrimTag<Prim::tan>, auto v) { return std::tan(v); }
auto scalar(PrimTag<Prim::tanh>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return complex_tanh(v);
  else return std::tanh(v);
}
auto scalar(PrimTag<Prim::logistic>, auto v) {
  using T = decltype(v);
  return T(1) / (T(1) + std::exp(-v));
}
// Complex numbers: the parts, the conjugate (a real operand gives the
// complex dtype of its width, lax.conj), and complex(re, im).
auto scalar(PrimTag<Prim::real>, auto v) { return v.real(); }
auto scalar(PrimTag<Prim::imag>, auto v) { return v.imag(); }
auto scalar(PrimTag<Prim::conj>, auto v) {
  if constexpr (is_complex_v<decltype(v)>) return std::conj(v);
  else return std::complex<decltype(v)>(v, -decltype(v)(0));
}
auto scalar(PrimTag<Prim::complex>, auto a, auto b) { return std::complex<decltype(a)>(a, b); }
auto scalar(PrimTag<Prim::not_>, auto v) {
  if constexpr (std::is_same_v<decltype(v), bool>) return !v;
  else return static_cast<decltype(v)>(~v);
}

auto scalar(PrimTag<Prim::add>, auto a, auto b) { return wrap_add(a, b); }
auto scalar(PrimTag<Prim::sub>, auto a, auto b) { return wrap_sub(a, b); }
auto scalar(PrimTag<Prim::mul>, auto a, auto b) { return wrap_mul(a, b); }
auto scalar(PrimTag<Prim::div>, auto a, auto b) {
  if constexpr (std::is_integral_v<decltype(a)>) return int_div(a, b);
  else if constexpr (is_complex_v<decltype(a)>) return complex_div(a, b);
  else return a / b;
}
auto scalar(PrimTag<Prim::rem>, auto a, auto b) {
  if constexpr (std::is_integral_v<decltype(a)>) return int_rem(a, b);
  else return std::fmod(a, b);
}
auto scalar(PrimTag<Prim::pow>, auto a, auto b) {
  if constexpr (std::is_integral_v<decltype(a)>) return int_pow(a, b);
  else if constexpr (is_complex_v<decltype(a)>) return complex_pow(a, b);
  else return std::pow(a, b);
}
auto scalar(PrimTag<Prim::max>, auto a, auto b) { return max_value(a, b); }
auto scalar(PrimTag<Prim::min>, auto a, auto b) { return min_value(a, b); }
auto scalar(PrimTag<Prim::atan2>, auto a, auto b) { return std::atan2(a, b); }
auto scalar(PrimTag<Prim::and_>, auto a, auto b) { return a & b; }
auto scalar(PrimTag<Prim::or_>, auto a, auto b) { return a | b; }
auto scalar(PrimTag<Prim::xor_>, auto a, auto b) { return static_cast<decltype(a)>(a ^ b); }
// Shifts as XLA defines them: the amount is read as unsigned, and an amount
// >= the bit width (a negative one included) shifts everything out: 0 for
// shift_left and shift_right_logical, the sign fill for
// shift_right_arithmetic (which reads the bits as signed, also of an
// unsigned dtype). C++ shifts by >= the width are undefined: never reached.
template <class T>
bool shift_out_of_range(T amount) {
  return static_cast<std::make_unsigned_t<T>>(amount) >= 8 * sizeof(T);
}
auto scalar(PrimTag<Prim::shift_left>, auto a, auto b) {
  using T = decltype(a);
  if (shift_out_of_range(b)) return T(0);
  return static_cast<T>(static_cast<Unsigned<T>>(static_cast<std::make_unsigned_t<T>>(a)) << b);
}
auto scalar(PrimTag<Prim::shift_right_logical>, auto a, auto b) {
  using T = decltype(a);
  if (shift_out_of_range(b)) return T(0);
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) >> b);
}
auto scalar(PrimTag<Prim::shift_right_arithmetic>, auto a, auto b) {
  using T = decltype(a);
  using S = std::make_signed_t<T>;
  const auto s = static_cast<S>(a);  // C++20: >> of a negative value is arithmetic
  if (shift_out_of_range(b)) return static_cast<T>(s < 0 ? S(-1) : S(0));
  return static_cast<T>(static_cast<S>(s >> b));
}
auto scalar(PrimTag<Prim::population_count>, auto v) {
  using T = decltype(v);
  return static_cast<T>(std::popcount(static_cast<std::make_unsigned_t<T>>(v)));
}
auto scalar(PrimTag<Prim::clz>, auto v) {
  using T = decltype(v);
  return static_cast<T>(std::countl_zero(static_cast<std::make_unsigned_t<T>>(v)));
}

auto scalar(PrimTag<Prim::eq>, auto a, auto b) { return a == b; }
auto scalar(PrimTag<Prim::ne>, auto a, auto b) { return a != b; }
auto scalar(PrimTag<Prim::lt>, auto a, auto b) { return a < b; }
auto scalar(PrimTag<Prim::le>, auto a, auto b) { return a <= b; }
auto scalar(PrimTag<Prim::gt>, auto a, auto b) { return a > b; }
auto scalar(PrimTag<Prim::ge>, auto a, auto b) { return a >= b; }

// ---------------------------------------------------------------------------
// The registrations: impl_rule(PrimTag<P>, operands, output type, params)
// computes the output of primitive P. The unary, binary and compare
// primitives share theirs (their scalar function mapped over the elements);
// the others have one each. A primitive with none fails to compile (the
// unconstrained template, last). Control flow runs its bodies instead
// (control_impl, trace/control_bind.hpp).

template <Prim P>
  requires(prim_kind(P) == Kind::unary)
AnyArray impl_rule(PrimTag<P>, const std::vector<AnyArray>& in, const Aval& out, const params_of_t<P>&) {
  return map_unary<prim_info(P).dtypes>(P, in[0], out, [](auto v) { return scalar(PrimTag<P>{}, v); });
}
template <Prim P>
  requires(prim_kind(P) == Kind::binary || prim_kind(P) == Kind::compare)
AnyArray impl_rule(PrimTag<P>, const std::vector<AnyArray>& in, const Aval& out, const params_of_t<P>&) {
  return map_binary<prim_info(P).dtypes, prim_kind(P) == Kind::compare>(
      P, in, out, [](auto a, auto b) { return scalar(PrimTag<P>{}, a, b); });
}

inline AnyArray impl_rule(PrimTag<Prim::round>, const std::vector<AnyArray>& in, const Aval& out,
                          const RoundParams& rp) {
  constexpr DTypeSet S = prim_info(Prim::round).dtypes;
  if (rp.rounding_method == 0) return map_unary<S>(Prim::round, in[0], out, [](auto v) { return std::round(v); });
  // Half to even: nearbyint under the default rounding mode.
  return map_unary<S>(Prim::round, in[0], out, [](auto v) { return std::nearbyint(v); });
}
inline AnyArray impl_rule(PrimTag<Prim::select_n>, const std::vector<AnyArray>& in, const Aval& out,
                          const NoParams&) {
  return select_n_impl(in, out);
}
inline AnyArray impl_rule(PrimTag<Prim::clamp>, const std::vector<AnyArray>& in, const Aval& out, const NoParams&) {
  return clamp_impl(in, out);
}
inline AnyArray impl_rule(PrimTag<Prim::convert_element_type>, const std::vector<AnyArray>& in, const Aval& out,
                          const ConvertParams&) {
  return convert_impl(in[0], out);
}

inline AnyArray impl_rule(PrimTag<Prim::broadcast_in_dim>, const std::vector<AnyArray>& in, const Aval& out,
                          const BroadcastInDimParams& p) {
  return broadcast_in_dim_impl(in[0], out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::reshape>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReshapeParams&) {
  return reshape_impl(in[0], out);
}
inline AnyArray impl_rule(PrimTag<Prim::squeeze>, const std::vector<AnyArray>& in, const Aval& out,
                          const SqueezeParams&) {
  return reshape_impl(in[0], out);
}
inline AnyArray impl_rule(PrimTag<Prim::transpose>, const std::vector<AnyArray>& in, const Aval& out,
                          const TransposeParams& p) {
  return transpose_impl(in[0], out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::concatenate>, const std::vector<AnyArray>& in, const Aval& out,
                          const ConcatenateParams& p) {
  return concatenate_impl(in, out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::slice>, const std::vector<AnyArray>& in, const Aval& out,
                          const SliceParams& p) {
  return slice_impl(in, out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::dynamic_slice>, const std::vector<AnyArray>& in, const Aval& out,
                          const DynamicSliceParams& p) {
  return dynamic_slice_impl(in, out, p);
}
inline AnyArray impl_rule(PrimTag<Prim::dynamic_update_slice>, const std::vector<AnyArray>& in, const Aval&,
                          const NoParams&) {
  return dynamic_update_slice_impl(in);
}
inline AnyArray impl_rule(PrimTag<Prim::iota>, const std::vector<AnyArray>&, const Aval& out, const IotaParams& p) {
  return iota_impl(out, p);
}

inline AnyArray impl_rule(PrimTag<Prim::reduce_sum>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_sum).dtypes>(
      Prim::reduce_sum, in[0], out, p, [](auto) { return 0; }, [](auto a, auto b) { return wrap_add(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::reduce_prod>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_prod).dtypes>(
      Prim::reduce_prod, in[0], out, p, [](auto) { return 1; }, [](auto a, auto b) { return wrap_mul(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::reduce_max>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_max).dtypes>(Prim::reduce_max, in[0], out, p, [](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();  // false for bool
  }, [](auto a, auto b) { return max_value(a, b); });
}
inline AnyArray impl_rule(PrimTag<Prim::reduce_min>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_min).dtypes>(Prim::reduce_min, in[0], out, p, [](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();  // true for bool
  }, [](auto a, auto b) { return min_value(a, b); });
}

// reduce_or, reduce_and: bitwise on integers, logical on bool (lax's).
inline AnyArray impl_rule(PrimTag<Prim::reduce_or>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_or).dtypes>(
      Prim::reduce_or, in[0], out, p, [](auto) { return 0; },
      [](auto a, auto b) { return static_cast<decltype(a)>(a | b); });
}
inline AnyArray impl_rule(PrimTag<Prim::reduce_and>, const std::vector<AnyArray>& in, const Aval& out,
                          const ReduceParams& p) {
  return reduce_impl<prim_info(Prim::reduce_and).dtypes>(
      Prim::reduce_and, in[0], out, p, [](auto) { return -1; },  // all bits set; true for bool
      [](auto a, auto b) { return static_cast<decltype(a)>(a & b); });
}

inline AnyArray impl_rule(PrimTag<Prim::dot_general>, const std::vector<AnyArray>& in, const Aval& out,
                          const DotGeneralParams& p) {
  return dot_general_impl(in, out, p);
}

// debug_callback: prints at once (dyn::debug_print outside a trace, and
// eval_jaxpr); no outputs.
inline std::vector<AnyArray> impl_rule(PrimTag<Prim::debug_callback>, const std::vector<AnyArray>& in,
                                       const std::vector<Aval>&, const DebugCallbackParams& p) {
  std::vector<DebugValue> values;
  values.reserve(in.size());
  for (const AnyArray& a : in) values.push_back(DebugValue{a.dtype(), a.data(), a.shape()});
  debug_print_line(p.fmt, values);
  return {};
}

// The collectives: runtime/distributed.hpp moves the data (one rank alone:
// no MPI).
#define DYN_COLLECTIVE_IMPL(e, ...)                                                                   \
  inline AnyArray impl_rule(PrimTag<Prim::e>, const std::vector<AnyArray>& in, const Aval&,           \
                            const CollectiveParams& p) {                                              \
    return collective_impl(Prim::e, in, p).at(0);                                                     \
  }
DYN_COLLECTIVE_PRIMITIVES(DYN_COLLECTIVE_IMPL)
#undef DYN_COLLECTIVE_IMPL

template <Prim P>
AnyArray impl_rule(PrimTag<P>, const std::vector<AnyArray>&, const Aval&, const params_of_t<P>&) {
  static_assert(P != P, "no eager kernel for this primitive: define impl_rule(PrimTag<Prim::...>, ...) in "
                        "eager/kernels.hpp (an elementwise one needs only its "
                        "scalar(PrimTag<Prim::...>, ...))");
  return {};
}

}  // namespace kernels

std::vector<AnyArray> impl(Prim prim, const std::vector<AnyArray>& in, const Params& params) {
  return visit_prim(prim, [&]<Prim P>(PrimTag<P> tag) -> std::vector<AnyArray> {
    if constexpr (prim_kind(P) == Kind::control) {
      return control_impl(P, in, params);  // its output types come from running its bodies
    } else if constexpr (prim_kind(P) == Kind::sort || prim_kind(P) == Kind::effect) {  // several outputs, or none
      const AllocationSite site(prim_name(P).data());  // (names the primitive if memory runs out)
      return kernels::impl_rule(tag, in, abstract_eval(P, kernels::avals_of(P, in), params),
                                std::get<params_of_t<P>>(params));
    } else {
      const std::vector<Aval> outs = abstract_eval(P, kernels::avals_of(P, in), params);
      const AllocationSite site(prim_name(P).data());
      return {kernels::impl_rule(tag, in, outs.at(0), std::get<params_of_t<P>>(params))};
    }
  });
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
