// dynstage: the lowering of fft (issue 24). Part of the backend
// implementation (DYNSTAGE_IMPLEMENTATION): a member of Lowering (lower.hpp).
//
// The transform is not inlined: the kernel calls the runtime's
// `dynstage_fft(fft_type, dtype, rank, lengths, batch, in, out)`
// (runtime/fft.hpp; FFTW when dynstage is built with it, else the native
// transforms), the routine the eager kernel calls too, with the operand's
// buffer (the fusion plan materialises it) and the lengths and batch read
// from the run-time dimensions: one compiled kernel serves every size of a
// symbolic axis, and FFTW's plan for each size is made on its first call and
// cached. It is a root of its own, on the calling thread.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include "lower.hpp"
#include "session.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_fft(const Eqn& e, llvm::Value* out) {
  const auto& p = std::get<FftParams>(e.params);
  const Atom& x = e.inputs[0];
  if (!x.is_var()) internal_error("LLVM lowering: an fft operand is a literal");  // rank >= 1
  llvm::Value* in = buf_[static_cast<std::size_t>(x.var)];
  if (!in) internal_error("LLVM lowering: an fft operand has no buffer");
  // The lengths: the operand's trailing sizes (IRFFT: the result's).
  const Dims d = p.fft_type == FftType::irfft ? dims_of(e.outputs[0]) : dims_of(x.var);
  const std::size_t r = p.fft_lengths.size(), lead = d.size() - r;
  llvm::Value* lengths = E.entry_alloca(E.i64, static_cast<std::int64_t>(r), 8);
  for (std::size_t k = 0; k < r; ++k) b.CreateStore(d[lead + k], b.CreateConstInBoundsGEP1_64(E.i64, lengths, k));
  llvm::Value* batch = E.c64(1);
  for (std::size_t i = 0; i < lead; ++i) batch = E.mul(batch, d[i]);
  llvm::FunctionType* fty =
      llvm::FunctionType::get(E.b.getVoidTy(), {E.i32, E.i32, E.i64, E.ptr, E.i64, E.ptr, E.ptr}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(kFftRoutine, fty);
  b.CreateCall(f, {b.getInt32(static_cast<std::int32_t>(p.fft_type)),
                   b.getInt32(static_cast<std::int32_t>(j_.type_of(x).dtype)), E.c64(static_cast<std::int64_t>(r)),
                   lengths, batch, in, out});
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
