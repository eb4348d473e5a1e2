// dynstage: the eager kernel of fft (issue 24), included by kernels.hpp. It
// calls the runtime's dynstage_fft (runtime/fft.hpp: FFTW when dynstage is
// built with it, else the native transforms), as compiled kernels do
// (llvm/lower_fft.hpp), so eager and jit agree exactly.
#pragma once

#include "../runtime/fft.hpp"
#include "kernel_util.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include "../runtime/fft_impl.hpp"

namespace dyn::detail::kernels {

// The transform's lengths (the input's trailing sizes; IRFFT: the output's)
// and its batch, the product of the leading axes.
inline AnyArray impl_rule(PrimTag<Prim::fft>, const std::vector<AnyArray>& in, const Aval& out, const FftParams& p) {
  Storage o = alloc_output(out);
  const AnyArray& x = in[0];
  const auto r = static_cast<std::size_t>(p.fft_lengths.size());
  const std::vector<std::int64_t>& full = p.fft_type == FftType::irfft ? o.shape : x.shape();
  const std::vector<std::int64_t> lengths(full.end() - static_cast<std::ptrdiff_t>(r), full.end());
  std::int64_t batch = 1;
  for (std::size_t i = 0; i + r < full.size(); ++i) batch *= full[i];
  dynstage_fft(static_cast<std::int32_t>(p.fft_type), static_cast<std::int32_t>(x.dtype()),
               static_cast<std::int64_t>(r), lengths.data(), batch, x.data(), o.data);
  return AnyArray(std::move(o));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
