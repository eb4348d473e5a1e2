// dynstage: the shape rule of fft (included by shape_rules.hpp, inside
// namespace dyn::detail::rule_util, before abstract_eval; it uses that
// file's helpers). XLA's Fft checks, as jax/_src/lax/fft.py's
// fft_abstract_eval makes them, with dynstage's messages.
#pragma once

#ifdef DYNSTAGE_IMPLEMENTATION

inline std::string fft_type_str(FftType t) {
  switch (t) {
    case FftType::fft: return "fft";
    case FftType::ifft: return "ifft";
    case FftType::rfft: return "rfft";
    case FftType::irfft: return "irfft";
  }
  return "fft_type " + std::to_string(static_cast<int>(t));
}

// fft[fft_type fft_lengths]: one operand of rank >= r = len(fft_lengths) >=
// 1. FFT, IFFT: complex, the trailing r axes of sizes fft_lengths, the
// operand's type out. RFFT: f32/f64 with those trailing sizes, the complex
// dtype of its width out, the last axis n -> n // 2 + 1. IRFFT: complex, the
// trailing axes fft_lengths[:-1] and n // 2 + 1 for n = fft_lengths[-1]
// (static), the real dtype out with last axis n. A kDynamicDim length is the
// operand's size on that axis.
inline std::vector<Aval> shape_rule(PrimTag<Prim::fft>, const std::vector<Aval>& in, const FftParams& fp) {
  check_arity(Prim::fft, in, 1);
  const Aval& x = in[0];
  const auto t = static_cast<int>(fp.fft_type);
  if (t < 0 || t > 3) fail<TypeError>("fft: fft_type must be 0 (FFT), 1 (IFFT), 2 (RFFT) or 3 (IRFFT), got " + std::to_string(t));
  const std::string what = "fft (" + fft_type_str(fp.fft_type) + ", fft_lengths=" + ints_str(fp.fft_lengths) + ")";
  const auto r = static_cast<int>(fp.fft_lengths.size());
  if (r == 0) fail<ShapeError>(what + ": fft_lengths must not be empty");
  if (r > x.rank())
    fail<ShapeError>(what + ": the operand must have at least " + std::to_string(r) + " axes, got " + aval_str(x));
  for (std::int64_t n : fp.fft_lengths)
    if (n < 0 && n != kDynamicDim) fail<ShapeError>(what + ": the lengths must be >= 0");
  const bool real_in = fp.fft_type == FftType::rfft;
  if (real_in) {
    if (!is_float(x.dtype)) fail<TypeError>(what + " does not accept dtype " + dtype_str(x.dtype) + "; it requires f32 or f64");
  } else if (!is_complex(x.dtype)) {
    fail<TypeError>(what + " does not accept dtype " + dtype_str(x.dtype) + "; it requires a complex dtype");
  }
  const auto first = static_cast<std::size_t>(x.rank() - r);
  Shape out = x.shape;
  for (int k = 0; k < r; ++k) {
    const std::size_t a = first + static_cast<std::size_t>(k);
    const std::int64_t n = fp.fft_lengths[static_cast<std::size_t>(k)];
    const bool last = k == r - 1;
    if (last && fp.fft_type == FftType::irfft) {
      if (n == kDynamicDim) fail<ShapeError>(what + ": the last length of an irfft must be static");
      const Dim want(n / 2 + 1);
      if (!(x.shape[a] == want))
        fail<ShapeError>(what + ": an irfft of length " + std::to_string(n) + " needs " + want.to_string() +
                         " complex values along the last axis (n // 2 + 1), got " + x.shape[a].to_string() +
                         " (operand " + aval_str(x) + ")");
      out[a] = Dim(n);
      continue;
    }
    if (n != kDynamicDim && !(x.shape[a] == Dim(n)))
      fail<ShapeError>(what + ": axis " + std::to_string(a) + " of the operand " + aval_str(x) + " must have size " +
                       std::to_string(n) + ", got " + x.shape[a].to_string());
    if (last && real_in) out[a] = floordiv(x.shape[a], Dim(2)) + Dim(1);
  }
  DType d = x.dtype;
  if (real_in) d = complex_dtype(x.dtype);
  if (fp.fft_type == FftType::irfft) d = real_dtype(x.dtype);
  return {make_aval(d, std::move(out), false)};
}

#endif  // DYNSTAGE_IMPLEMENTATION
