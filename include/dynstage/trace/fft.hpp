// dynstage: dyn::fft (issue 24), numpy.fft's functions as jax.numpy.fft
// writes them on the primitive fft (lax.fft): fft ifft rfft irfft fft2 ifft2
// fftn ifftn, with numpy's n / s (crop or zero-pad each transformed axis),
// axis / axes and norm ("backward", "ortho", "forward"). The primitive
// transforms the trailing axes: other axes are moved there by a transpose
// and back after (jnp.moveaxis), as jnp.fft does. fft, ifft and their n-d
// forms take any numeric input, converted to the complex dtype of its width
// (ints, bools and f32 to c64, f64 to c128); rfft takes real input (ints to
// f32); irfft complex (a real input is converted first).
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numpy.hpp"
#include "numpy_layout.hpp"
#include "numpy_shape.hpp"
#include "ops.hpp"

namespace dyn {
namespace detail {

// The jnp.fft core (jax/_src/numpy/fft.py, _fft_core): `op` names the user's
// function in messages; `s` the lengths (nullopt: the axes' sizes; irfft:
// 2 (m - 1) along the last); `axes` nullopt: the last s->size() axes, or all.
Value fft_core(std::string_view op, FftType type, Value a, const std::optional<std::vector<std::int64_t>>& s,
               const std::optional<std::vector<std::int64_t>>& axes, std::string_view norm);

#ifdef DYNSTAGE_IMPLEMENTATION
namespace fft_detail {
inline Value zero_of(DType d) {
  return visit_dtype(d, [&](auto z) {
    using T = decltype(z);
    return scalar_value(Scalar::of<T>(T{}), false);
  });
}
inline Value real_scalar(DType d, double v) {
  return d == DType::f32 ? scalar_value(Scalar::of<float>(static_cast<float>(v)), false)
                         : scalar_value(Scalar::of<double>(v), false);
}
}  // namespace fft_detail

Value fft_core(std::string_view op_in, FftType type, Value a, const std::optional<std::vector<std::int64_t>>& s,
               const std::optional<std::vector<std::int64_t>>& axes_in, std::string_view norm) {
  using namespace fft_detail;
  const std::string op = "dyn::fft::" + std::string(op_in);
  if (norm != "backward" && norm != "ortho" && norm != "forward")
    fail<TypeError>(op + ": norm must be \"backward\", \"ortho\" or \"forward\", got \"" + std::string(norm) + "\"");
  // The dtype: complex for fft/ifft/irfft, real for rfft.
  const DType d = a.dtype();
  if (type == FftType::rfft) {
    if (is_complex(d)) fail<TypeError>(op + ": the input must be real, got dtype " + std::string(dtype_name(d)));
    a = convert(a, is_float(d) ? d : DType::f32);
  } else {
    a = convert(a, is_complex(d) ? d : complex_dtype(is_float(d) ? d : DType::f32));
  }
  const int rank = a.rank();
  std::vector<std::int64_t> axes;
  if (axes_in) {
    for (std::int64_t ax : *axes_in) axes.push_back(normalize_axis(op, ax, rank));
  } else {
    const int k = s ? static_cast<int>(s->size()) : rank;
    if (k > rank)
      fail<ShapeError>(op + ": s has " + std::to_string(k) + " lengths, more than the " + std::to_string(rank) +
                       " axes of the input");
    for (int i = rank - k; i < rank; ++i) axes.push_back(i);
  }
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (axes[i] == axes[j]) fail<IndexError>(op + ": axis " + std::to_string(axes[i]) + " appears twice in axes");
  if (s && s->size() != axes.size())
    fail<ShapeError>(op + ": s and axes must have the same length, got " + std::to_string(s->size()) + " and " +
                     std::to_string(axes.size()));
  if (axes.empty()) return a;  // nothing to transform (jnp returns the converted input)
  // Move the axes to the end, in their order.
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < rank; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) perm.push_back(i);
  perm.insert(perm.end(), axes.begin(), axes.end());
  bool identity = true;
  for (std::int64_t i = 0; i < rank; ++i) identity = identity && perm[static_cast<std::size_t>(i)] == i;
  if (!identity) a = transpose(a, perm);
  const std::size_t r = axes.size(), first = static_cast<std::size_t>(rank) - r;
  std::vector<std::int64_t> lengths(r);
  Dim total(1);
  if (s) {
    // Crop or zero-pad each axis to its length (irfft: n // 2 + 1 along the last).
    Shape starts(static_cast<std::size_t>(rank), Dim(0)), limits = a.shape();
    std::vector<PadParams::Axis> padding(static_cast<std::size_t>(rank));
    bool crop = false, pad_any = false;
    for (std::size_t i = 0; i < r; ++i) {
      const std::int64_t n = (*s)[i];
      if (n < 1) fail<ShapeError>(op + ": invalid number of data points (" + std::to_string(n) + ") specified");
      lengths[i] = n;
      total = total * Dim(n);
      const std::int64_t want = type == FftType::irfft && i == r - 1 ? n / 2 + 1 : n;
      const Dim have = a.shape()[first + i];
      bool shorter = false;
      try {
        shorter = have < Dim(want);
        if (!shorter && !(have == Dim(want))) {
          limits[first + i] = Dim(want);
          crop = true;
        }
      } catch (const InconclusiveDimensionOperation&) {
        fail<ShapeError>(op + ": cannot crop or pad axis " + std::to_string(axes[i]) + " of symbolic size " +
                         have.to_string() + " to " + std::to_string(want));
      }
      if (shorter) {
        padding[first + i].hi = want - have.value();
        pad_any = true;
      }
    }
    if (crop) a = slice(a, starts, limits, std::vector<std::int64_t>(static_cast<std::size_t>(rank), 1));
    if (pad_any) a = pad(a, padding, zero_of(a.dtype()));
  } else {
    for (std::size_t i = 0; i < r; ++i) {
      const Dim have = a.shape()[first + i];
      if (type == FftType::irfft && i == r - 1) {
        if (!have.is_static())
          fail<ShapeError>(op + ": the output length of an irfft over an axis of symbolic size " + have.to_string() +
                           " must be given (n)");
        const std::int64_t n = 2 * (have.value() - 1);
        if (n < 1) fail<ShapeError>(op + ": invalid number of data points (" + std::to_string(n) + ") specified");
        lengths[i] = n;
        total = total * Dim(n);
        continue;
      }
      lengths[i] = have.is_static() ? have.value() : kDynamicDim;
      total = total * have;
    }
  }
  Value y = bind1(Prim::fft, {a}, FftParams{type, lengths});
  if (norm != "backward") {
    const bool inverse = type == FftType::ifft || type == FftType::irfft;
    const DType rd = real_dtype(y.dtype());
    Value f;
    if (total.is_static()) {
      const double nt = static_cast<double>(total.value());
      const double v = norm == "ortho" ? (inverse ? std::sqrt(nt) : 1.0 / std::sqrt(nt)) : (inverse ? nt : 1.0 / nt);
      f = real_scalar(rd, v);
    } else {
      TraceState* t = current_trace();
      if (!t) internal_error(op + ": a symbolic length outside a trace");
      Value nt = convert(t->dim_operand(total), rd);
      if (norm == "ortho") nt = unary(Prim::sqrt, nt);
      f = inverse ? nt : binary(Prim::div, real_scalar(rd, 1.0), nt);
    }
    y = binary(Prim::mul, y, f);
  }
  if (!identity) {
    std::vector<std::int64_t> inv(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
    y = transpose(y, inv);
  }
  return y;
}
#endif

template <class T>
using fft_complex_t = std::conditional_t<is_complex_v<T>, T, std::complex<inexact_t<T>>>;

// A 1-D transform's optional `n` as fft_core's lengths `s`.
inline std::optional<std::vector<std::int64_t>> fft_length(std::optional<std::int64_t> n) {
  if (n) return std::vector<std::int64_t>{*n};
  return std::nullopt;
}

}  // namespace detail

namespace fft {

// fft(x, n, axis, norm) (numpy.fft.fft): the 1-D discrete Fourier transform
// along `axis`, X_k = sum_j x_j e^{-2 pi i jk / n}; n crops or zero-pads the
// axis first. norm: "backward" (no scaling), "ortho" (1 / sqrt(n)),
// "forward" (1 / n). Complex result (c64; c128 for f64 and c128 input).
template <ArrayLike X>
auto fft(const X& x, std::optional<std::int64_t> n = std::nullopt, std::int64_t axis = -1,
         std::string_view norm = "backward", detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("fft", detail::FftType::fft, detail::to_value(x), detail::fft_length(n), std::vector<std::int64_t>{axis}, norm));
}

// ifft(x, n, axis, norm) (numpy.fft.ifft): the inverse, x_j = (1/n) sum_k
// X_k e^{2 pi i jk / n} ("backward"; "ortho": 1 / sqrt(n); "forward": no scaling).
template <ArrayLike X>
auto ifft(const X& x, std::optional<std::int64_t> n = std::nullopt, std::int64_t axis = -1,
          std::string_view norm = "backward", detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("ifft", detail::FftType::ifft, detail::to_value(x), detail::fft_length(n), std::vector<std::int64_t>{axis}, norm));
}

// rfft(x, n, axis, norm) (numpy.fft.rfft): the transform of real input, its
// n // 2 + 1 non-negative frequencies. A complex x does not compile.
template <ArrayLike X>
auto rfft(const X& x, std::optional<std::int64_t> n = std::nullopt, std::int64_t axis = -1,
          std::string_view norm = "backward", detail::Loc loc = detail::Loc::current()) {
  static_assert(!is_complex_v<detail::elem_t<X>>, "dyn::fft::rfft: the input must be real (numpy's rfft discards "
                                                   "imaginary parts; jnp's refuses them)");
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<std::complex<detail::inexact_t<detail::elem_t<X>>>, X>>(
      detail::fft_core("rfft", detail::FftType::rfft, detail::to_value(x), detail::fft_length(n), std::vector<std::int64_t>{axis}, norm));
}

// irfft(x, n, axis, norm) (numpy.fft.irfft): the inverse of rfft, n real
// values (default 2 (m - 1) for m input values); the input is cropped or
// zero-padded to n // 2 + 1 values first.
template <ArrayLike X>
auto irfft(const X& x, std::optional<std::int64_t> n = std::nullopt, std::int64_t axis = -1,
           std::string_view norm = "backward", detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::real_t<detail::fft_complex_t<detail::elem_t<X>>>, X>>(
      detail::fft_core("irfft", detail::FftType::irfft, detail::to_value(x), detail::fft_length(n), std::vector<std::int64_t>{axis}, norm));
}

// fftn(x, s, axes, norm) (numpy.fft.fftn): the transform over `axes` (all
// axes, or the last len(s) when s is given), each cropped or zero-padded to
// its length in s. ifftn: the inverse.
template <ArrayLike X>
auto fftn(const X& x, std::optional<std::vector<std::int64_t>> s = std::nullopt,
          std::optional<std::vector<std::int64_t>> axes = std::nullopt, std::string_view norm = "backward",
          detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("fftn", detail::FftType::fft, detail::to_value(x), s, axes, norm));
}
template <ArrayLike X>
auto ifftn(const X& x, std::optional<std::vector<std::int64_t>> s = std::nullopt,
           std::optional<std::vector<std::int64_t>> axes = std::nullopt, std::string_view norm = "backward",
           detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("ifftn", detail::FftType::ifft, detail::to_value(x), s, axes, norm));
}

// fft2, ifft2 (numpy.fft.fft2, ifft2): fftn, ifftn over axes (-2, -1) by default.
template <ArrayLike X>
auto fft2(const X& x, std::optional<std::vector<std::int64_t>> s = std::nullopt,
          std::vector<std::int64_t> axes = {-2, -1}, std::string_view norm = "backward",
          detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("fft2", detail::FftType::fft, detail::to_value(x), s, axes, norm));
}
template <ArrayLike X>
auto ifft2(const X& x, std::optional<std::vector<std::int64_t>> s = std::nullopt,
           std::vector<std::int64_t> axes = {-2, -1}, std::string_view norm = "backward",
           detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::fft_complex_t<detail::elem_t<X>>, X>>(
      detail::fft_core("ifft2", detail::FftType::ifft, detail::to_value(x), s, axes, norm));
}

}  // namespace fft
}  // namespace dyn
