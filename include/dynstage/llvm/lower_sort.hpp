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
// And debug_callback (dyn::debug_print), the other equation lowered to a
// runtime call: `dynstage_debug_print(fmt, n, data, dtypes, ranks, dims)`
// (eager/debug_print.hpp) with each operand's buffer (the fusion plan
// materialises them; a literal is stored in a stack slot), its dtype, rank
// and dimensions. It is a root of its own, emitted between the roots before
// and after it on the calling thread, never inside a parallel region or a
// row group: prints happen in program order, once per execution. A
// non-zero return (the print raised: the user's sink threw) stops the
// kernel with kKernelPrintFailed, and the call rethrows that exception.
// And the collectives (psum, all_gather, ...; runtime/distributed.hpp):
// `dynstage_collective(desc, x, rank, dims, out, out_bytes)` with the
// operand's buffer (materialised by the fusion plan; a literal in a stack
// slot), a root of its own on the calling thread (row groups end at it, as
// at every root that is neither fusible nor a reduction). A non-zero return
// (the ranks' blocks differ, ...) stops the kernel with
// kKernelCollectiveFailed, and the call rethrows the collective's error.
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
    E.exit_when(b.CreateICmpSLT(xd[a], k), kKernelTopKTooLarge, "top_k.too_large");
  }
  llvm::Value* outer = E.c64(1);
  for (std::size_t i = 0; i < a; ++i) outer = E.mul(outer, xd[i]);
  llvm::FunctionType* fty =
      llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.ptr, E.ptr, E.i64, E.i64, E.i64, E.i64}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(top_k_routine(type(x.var).dtype), fty);
  b.CreateCall(f, {operand_ptr(x), buf_[static_cast<std::size_t>(e.outputs[0])],
                   buf_[static_cast<std::size_t>(e.outputs[1])], outer, xd[a], numel(xd, a + 1), k});
}

inline void Lowering::emit_debug_print(const Eqn& e) {
  const auto& p = std::get<DebugCallbackParams>(e.params);
  const auto n = static_cast<std::int64_t>(e.inputs.size());
  std::int64_t ndims = 0;
  for (const Atom& a : e.inputs) ndims += static_cast<std::int64_t>(j_.type_of(a).rank());
  llvm::Value* data = E.entry_alloca(E.ptr, std::max<std::int64_t>(n, 1), 8);
  llvm::Value* dtypes = E.entry_alloca(E.i32, std::max<std::int64_t>(n, 1), 4);
  llvm::Value* ranks = E.entry_alloca(E.i64, std::max<std::int64_t>(n, 1), 8);
  llvm::Value* dims = E.entry_alloca(E.i64, std::max<std::int64_t>(ndims, 1), 8);
  std::int64_t off = 0;
  for (std::size_t q = 0; q < e.inputs.size(); ++q) {
    const Atom& a = e.inputs[q];
    const Type& t = j_.type_of(a);
    llvm::Value* ptr = nullptr;
    if (a.is_var()) {
      ptr = buf_[static_cast<std::size_t>(a.var)];
      if (!ptr) internal_error("LLVM lowering: a debug_callback operand has no buffer");
      const Dims d = dims_of(a.var);
      for (llvm::Value* x : d) b.CreateStore(x, b.CreateConstInBoundsGEP1_64(E.i64, dims, static_cast<std::uint64_t>(off++)));
    } else {
      ptr = E.entry_alloca(E.i8, 8, 8);
      E.store(ptr, a.lit.dtype, E.c64(0), E.constant(a.lit.dtype, a.lit.f, a.lit.i, a.lit.fi));
    }
    b.CreateStore(ptr, b.CreateConstInBoundsGEP1_64(E.ptr, data, q));
    b.CreateStore(b.getInt32(static_cast<std::int32_t>(t.dtype)), b.CreateConstInBoundsGEP1_64(E.i32, dtypes, q));
    b.CreateStore(E.c64(t.rank()), b.CreateConstInBoundsGEP1_64(E.i64, ranks, q));
  }
  llvm::FunctionType* fty = llvm::FunctionType::get(E.i32, {E.ptr, E.i64, E.ptr, E.ptr, E.ptr, E.ptr}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(kDebugPrintRoutine, fty);
  llvm::Value* fmt = b.CreateGlobalString(p.fmt, "debug.fmt", 0, &E.mod);
  llvm::Value* rc = b.CreateCall(f, {fmt, E.c64(n), data, dtypes, ranks, dims});
  // A print that raised (the sink threw) stops the kernel: what it owns is
  // freed and the call rethrows the exception (kKernelPrintFailed).
  E.exit_when(b.CreateICmpNE(rc, b.getInt32(0)), kKernelPrintFailed, "print");
}

inline void Lowering::emit_collective(const Eqn& e, llvm::Value* out) {
  const auto& p = std::get<CollectiveParams>(e.params);
  llvm::Value* x = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(E.ctx));
  llvm::Value* dims = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(E.ctx));
  std::int64_t rank = 0;
  DType dt = DType::i32;
  if (!e.inputs.empty()) {
    const Atom& a = e.inputs[0];
    const Type& t = j_.type_of(a);
    dt = t.dtype;
    rank = static_cast<std::int64_t>(t.rank());
    if (a.is_var()) {
      x = buf_[static_cast<std::size_t>(a.var)];
      if (!x) internal_error("LLVM lowering: a collective's operand has no buffer");
      const Dims d = dims_of(a.var);
      dims = E.entry_alloca(E.i64, std::max<std::int64_t>(rank, 1), 8);
      for (std::size_t k = 0; k < d.size(); ++k) b.CreateStore(d[k], b.CreateConstInBoundsGEP1_64(E.i64, dims, k));
    } else {
      x = E.entry_alloca(E.i8, 8, 8);
      E.store(x, a.lit.dtype, E.c64(0), E.constant(a.lit.dtype, a.lit.f, a.lit.i));
    }
  }
  const Dims od = dims_of(e.outputs[0]);
  llvm::Value* bytes = E.mul(numel(od, 0), E.c64(static_cast<std::int64_t>(dtype_size(type(e.outputs[0]).dtype))));
  llvm::FunctionType* fty = llvm::FunctionType::get(E.i32, {E.ptr, E.ptr, E.i64, E.ptr, E.ptr, E.i64}, false);
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(kCollectiveRoutine, fty);
  llvm::Value* desc = b.CreateGlobalString(collective_descriptor(e.prim, dt, p), "collective.desc", 0, &E.mod);
  llvm::Value* rc = b.CreateCall(f, {desc, x, E.c64(rank), dims, out, bytes});
  E.exit_when(b.CreateICmpNE(rc, b.getInt32(0)), kKernelCollectiveFailed, "collective");
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
