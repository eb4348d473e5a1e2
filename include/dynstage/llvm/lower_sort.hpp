// dynstage: the lowering of sort and top_k. Part of the backend
// implementation (DYNSTAGE_IMPLEMENTATION): members of Lowering (lower.hpp).
//
// Native code by calls into well-kept library routines (std::stable_sort,
// std::sort, std::partial_sort), the eager kernels' own routines
// (eager/kernels_sort.hpp), so jit equals eager exactly; the JIT resolves
// their names (llvm/session.hpp).
//   sort:  the kernel writes each operand into its output buffer (one nest
//          per operand; an elementwise producer is computed inline there,
//          never materialised), then sorts the outputs in place:
//          `dynstage_sort_<dtype>(out, outer, n, inner)` for one operand,
//          `dynstage_sort_multi(ptrs, dtypes, nops, num_keys, outer, n,
//          inner)` for several.
//   top_k: `dynstage_top_k_<dtype>(x, values, indices, outer, n, inner, k)`
//          on the operand's buffer, after checking k <= n when the shapes
//          did not decide it (a symbolic or dynamic axis).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include "lower.hpp"
#include "session.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_sort(const Eqn& e) {
  if (e.prim == Prim::top_k) return emit_top_k(e);
  const auto& sp = std::get<SortParams>(e.params);
  const Dims od = dims_of(e.outputs[0]);
  const std::size_t nops = e.inputs.size();
  for (std::size_t q = 0; q < nops; ++q) {
    const Atom& x = e.inputs[q];
    if (!x.is_var()) internal_error("LLVM lowering: a sort operand is a literal");  // rank >= 1
    llvm::Value* out = buf_[static_cast<std::size_t>(e.outputs[q])];
    const DType d = type(e.outputs[q]).dtype;
    nest(od, !needs_multi(x), [&](Ix& ix) { E.store(out, d, lin(ix), operand(x, ix)); });
  }
  const auto a = static_cast<std::size_t>(sp.dimension);
  llvm::Value* outer = E.c64(1);
  for (std::size_t i = 0; i < a; ++i) outer = E.mul(outer, od[i]);
  if (nops == 1) {
    llvm::FunctionType* fty = llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.i64, E.i64, E.i64}, false);
    llvm::FunctionCallee f = E.mod.getOrInsertFunction(sort_routine(type(e.outputs[0]).dtype), fty);
    b.CreateCall(f, {buf_[static_cast<std::size_t>(e.outputs[0])], outer, od[a], numel(od, a + 1)});
    return;
  }
  const auto n = static_cast<std::int64_t>(nops);
  llvm::Value* ptrs = E.entry_alloca(E.ptr, n, 8);
  llvm::Value* dtypes = E.entry_alloca(E.i32, n, 4);
  for (std::size_t q = 0; q < nops; ++q) {
    b.CreateStore(buf_[static_cast<std::size_t>(e.outputs[q])], b.CreateConstInBoundsGEP1_64(E.ptr, ptrs, q));
    b.CreateStore(b.getInt32(static_cast<std::int32_t>(type(e.outputs[q]).dtype)),
                  b.CreateConstInBoundsGEP1_64(E.i32, dtypes, q));
  }
  llvm::FunctionType* fty =
      llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.ptr, E.i32, E.i32, E.i64, E.i64, E.i64}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(kSortMultiRoutine, fty);
  b.CreateCall(f, {ptrs, dtypes, b.getInt32(static_cast<std::int32_t>(n)), b.getInt32(sp.num_keys), outer, od[a],
                   numel(od, a + 1)});
}

inline void Lowering::emit_top_k(const Eqn& e) {
  const auto& tp = std::get<TopKParams>(e.params);
  const Atom& x = e.inputs[0];
  if (!x.is_var()) internal_error("LLVM lowering: a top_k operand is a literal");  // rank >= 1
  const Dims xd = dims_of(x.var);
  const auto a = static_cast<std::size_t>(tp.axis);
  llvm::Value* k = E.c64(tp.k);
  if (!Emitter::konst(xd[a])) {  // the shape rule could not decide k <= n: stop the kernel if not
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(E.ctx, "top_k.too_large", fn);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(E.ctx, "top_k.ok", fn);
    b.CreateCondBr(b.CreateICmpSLT(xd[a], k), bad, ok, E.weights(1, 1000));
    b.SetInsertPoint(bad);
    E.exit_with(b.getInt32(kKernelTopKTooLarge));
    b.SetInsertPoint(ok);
  }
  llvm::Value* outer = E.c64(1);
  for (std::size_t i = 0; i < a; ++i) outer = E.mul(outer, xd[i]);
  llvm::FunctionType* fty =
      llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.ptr, E.ptr, E.i64, E.i64, E.i64, E.i64}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(top_k_routine(type(x.var).dtype), fty);
  b.CreateCall(f, {operand_ptr(x), buf_[static_cast<std::size_t>(e.outputs[0])],
                   buf_[static_cast<std::size_t>(e.outputs[1])], outer, xd[a], numel(xd, a + 1), k});
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
