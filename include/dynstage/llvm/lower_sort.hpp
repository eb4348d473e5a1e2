// dynstage: the lowering of sort. Part of the backend implementation
// (DYNSTAGE_IMPLEMENTATION): a member of Lowering (lower.hpp).
//
// Native code by a call into a well-kept library routine: the kernel writes
// the operand into the output buffer (one nest over it; an elementwise
// producer is computed inline there, never materialised), then calls
// `dynstage_sort_<dtype>(out, outer, n, inner)`, which sorts every line
// along the axis in place with std::stable_sort (eager/kernels_sort.hpp:
// the eager kernel's own routine, so jit equals eager exactly; the JIT
// resolves the name to it, llvm/session.hpp).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include "lower.hpp"
#include "session.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_sort(const Eqn& e, llvm::Value* out) {
  const Atom& x = e.inputs[0];
  if (!x.is_var()) internal_error("LLVM lowering: a sort operand is a literal");  // rank >= 1
  const auto& sp = std::get<SortParams>(e.params);
  const DType d = type(e.outputs[0]).dtype;
  const Dims od = dims_of(e.outputs[0]);
  nest(od, !needs_multi(x), [&](Ix& ix) { E.store(out, d, lin(ix), operand(x, ix)); });
  const auto a = static_cast<std::size_t>(sp.dimension);
  llvm::FunctionType* fty = llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.i64, E.i64, E.i64}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(sort_routine(d), fty);
  llvm::Value* outer = E.c64(1);
  for (std::size_t i = 0; i < a; ++i) outer = E.mul(outer, od[i]);
  b.CreateCall(f, {out, outer, od[a], numel(od, a + 1)});
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
