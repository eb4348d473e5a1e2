// dynstage: fused operands and epilogues of the blocked GEMM (issue 25,
// item 1). Part of the backend implementation.
//
// The GEMM stays one shared, precompiled routine (lower_gemm.hpp); a kernel
// whose product has a FUSED operand (an elementwise expression: `alpha * A`,
// an astype, `A + C`, a transpose of one, ... planned in fusion.hpp) or an
// elementwise CONSUMER of its result (`relu(x @ W + b)`) hands it a record
// of three optional functions of its own module:
//   pack_a / pack_b  compute the operand's expression element by element
//                    (the lowering's fused-expression emitter, through the
//                    index maps) straight into the packed panel, in the
//                    panel's layout; no temporary of the operand exists;
//   epilogue         computes the consumer over one finished block of C,
//                    called by the task that computed the block right after
//                    its last KC block, while it is in cache: no separate
//                    pass over the result.
// They are written like any code of the kernel, into a function of their
// own, with the kernel's values they use (buffers, sizes) passed in a
// context struct, as parallel.hpp outlines a parallel region. The routine
// calls pack_a once per A block and pack_b once per B panel (an indirect
// call per panel, nothing per element) and packs from memory where a
// function is null, so an unfused product runs exactly as before. Packed
// values are the operand's values, so the product's bits are those of the
// product of the materialised operand; the epilogue computes each consumer
// element from the final C element, as the separate nest did.
// Only expressions that cannot fault are fused (fusion.hpp): the routine
// ignores the functions' fault bits.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "emit.hpp"
#include "lower_gemm.hpp"

namespace dyn::detail::llvmjit {

// Whether the product runs the blocked routine, as an i1 (a constant when
// the sizes are static): emit_matmul's test.
inline llvm::Value* gemm_blocked_cond(Emitter& E, DType d, const DotShape& s) {
  auto& b = E.b;
  if (!is_float(d)) return b.getFalse();
  llvm::Value* flops = E.mul(E.mul(s.M, s.N), s.K);
  llvm::Value* big = b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(flops, E.c64(kBlockedFlops)), b.CreateICmpSGE(s.N, E.c64(8))),
                                 b.CreateICmpSGE(s.M, E.c64(4)));
  return b.CreateAnd(big, b.CreateAnd(b.CreateICmpSGE(s.B, E.c64(1)), b.CreateICmpSGE(s.K, E.c64(1))));
}

// Emit `body` into a new internal function
//     i32 name(ptr ctxs, params...)
// of the current module, with the current function's values it uses loaded
// from a struct the current function fills here, whose address the
// function finds at ctxs[slot] (the functions of one product share one
// array of contexts); returns the function and the struct (an alloca of
// the current function). The Emitter's state is
// the new function's while `body` runs (parallel.hpp, parallel_region, does
// the same for task functions). `no_slp`: the function gets
// noimplicitfloat, which keeps the SLP and loop vectorisers out of it.
inline std::pair<llvm::Function*, llvm::Value*> outline_callback(
    Emitter& E, const std::string& name, unsigned slot, const std::vector<llvm::Type*>& params,
    const std::function<void(const std::vector<llvm::Value*>&)>& body, bool no_slp = false) {
  llvm::IRBuilder<>& b = E.b;
  llvm::Function* outer = E.fn;
  llvm::BasicBlock* resume = b.GetInsertBlock();
  llvm::BasicBlock* outer_entry = E.entry;
  llvm::Value* outer_err = E.err;
  std::vector<llvm::Value*> outer_heap = std::move(E.live_heap), outer_slots = std::move(E.live_slots);
  const std::int64_t outer_stack = E.stack_bytes;
  E.live_heap.clear();
  E.live_slots.clear();
  E.stack_bytes = 0;

  auto* scratch_ty = llvm::FunctionType::get(E.i32, params, false);
  llvm::Function* scratch = llvm::Function::Create(scratch_ty, llvm::Function::InternalLinkage, "", E.mod);
  E.begin_function(scratch);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : scratch->args()) args.push_back(&a);
  body(args);
  while (!E.live_heap.empty()) E.release(E.live_heap.back());
  b.CreateRet(b.CreateLoad(E.i32, E.err));

  E.fn = outer;
  E.entry = outer_entry;
  E.err = outer_err;
  E.live_heap = std::move(outer_heap);
  E.live_slots = std::move(outer_slots);
  E.stack_bytes = outer_stack;

  // The outer function's values the body uses, in order of first use.
  std::vector<llvm::Value*> live;
  std::map<llvm::Value*, std::size_t> seen;
  for (llvm::BasicBlock& bb : *scratch)
    for (llvm::Instruction& inst : bb)
      for (llvm::Use& u : inst.operands()) {
        llvm::Value* v = u.get();
        const bool foreign = (llvm::isa<llvm::Instruction>(v) && llvm::cast<llvm::Instruction>(v)->getFunction() != scratch) ||
                             (llvm::isa<llvm::Argument>(v) && llvm::cast<llvm::Argument>(v)->getParent() != scratch);
        if (foreign && seen.emplace(v, live.size()).second) live.push_back(v);
      }
  // body(params..., the live values...): the code, with the outer values as
  // parameters; a buffer that is noalias in the outer function (an argument
  // that is, a fresh allocation) is noalias here too, so once body is
  // inlined into f (scope metadata) its loops need no run-time overlap
  // checks (parallel.hpp does the same for task functions).
  std::vector<llvm::Type*> fields, bparams(params.begin(), params.end());
  for (llvm::Value* v : live) fields.push_back(v->getType());
  bparams.insert(bparams.end(), fields.begin(), fields.end());
  llvm::Function* body_fn = llvm::Function::Create(llvm::FunctionType::get(E.i32, bparams, false),
                                                   llvm::Function::InternalLinkage, outer->getName() + "." + name + ".body", E.mod);
  body_fn->addFnAttr(llvm::Attribute::AlwaysInline);
  if (no_slp) body_fn->addFnAttr(llvm::Attribute::NoImplicitFloat);  // (SLP and the loop vectoriser stay out)
  body_fn->splice(body_fn->begin(), scratch);
  for (unsigned i = 0; i < params.size(); ++i) {
    scratch->getArg(i)->replaceAllUsesWith(body_fn->getArg(i));
    if (params[i]->isPointerTy()) body_fn->addParamAttr(i, llvm::Attribute::NoAlias);  // the packing buffer
  }
  scratch->eraseFromParent();
  for (std::size_t k = 0; k < live.size(); ++k) {
    const auto ai = static_cast<unsigned>(params.size() + k);
    llvm::Value* v = live[k];
    v->replaceUsesWithIf(body_fn->getArg(ai), [body_fn](llvm::Use& u) {
      auto* i = llvm::dyn_cast<llvm::Instruction>(u.getUser());
      return i && i->getFunction() == body_fn;
    });
    bool fresh = llvm::isa<llvm::AllocaInst>(v);
    if (auto* arg = llvm::dyn_cast<llvm::Argument>(v)) fresh = arg->hasNoAliasAttr();
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(v))
      fresh = call->getCalledFunction() && (call->getCalledFunction()->getName() == "aligned_alloc" ||
                                            call->getCalledFunction()->getName() == kTempAllocRoutine);
    if (fresh && v->getType()->isPointerTy()) body_fn->addParamAttr(ai, llvm::Attribute::NoAlias);
  }
  // f(ctxs, params...): loads its context's fields and calls body.
  llvm::StructType* st = llvm::StructType::get(E.ctx, fields);
  std::vector<llvm::Type*> fparams{E.ptr};
  fparams.insert(fparams.end(), params.begin(), params.end());
  llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(E.i32, fparams, false),
                                             llvm::Function::InternalLinkage, outer->getName() + "." + name, E.mod);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (no_slp) f->addFnAttr(llvm::Attribute::NoImplicitFloat);
  {
    llvm::IRBuilder<> eb(llvm::BasicBlock::Create(E.ctx, "entry", f));
    llvm::Value* own = eb.CreateLoad(E.ptr, eb.CreateConstInBoundsGEP1_64(E.ptr, f->getArg(0), slot));
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < params.size(); ++i) args.push_back(f->getArg(i + 1));
    for (std::size_t k = 0; k < live.size(); ++k)
      args.push_back(eb.CreateLoad(fields[k], eb.CreateStructGEP(st, own, static_cast<unsigned>(k))));
    eb.CreateRet(eb.CreateCall(body_fn, args));
  }
  b.SetInsertPoint(resume);
  llvm::Value* ctx = E.entry_alloca(st);
  for (std::size_t k = 0; k < live.size(); ++k) b.CreateStore(live[k], b.CreateStructGEP(st, ctx, static_cast<unsigned>(k)));
  return {f, ctx};
}

// An operand element at (batch, row, column) of its logical matrix: A[b,i,k]
// or B[b,k,j], whatever form it is stored in.
using GemmElement = std::function<llvm::Value*(llvm::Value* bt, llvm::Value* row, llvm::Value* col)>;

// pack_a's body: Ap[(tile * kc + p) * MR + r] = A[bt, ic + tile*MR + r, pc + p],
// zero past row ic + mc (the element is computed at a valid row, then
// replaced: the expression is never evaluated out of bounds). Per p, the
// tile's MR rows (consecutive stores, one cache line of f64), as the
// built-in packing. For A stored (B,M,K) the MR reads are a stored row
// apart, which SLP turned into masked gathers (1.1x the plain product's
// time on a thin product; a row-at-a-time order with stores MR apart was
// slower still): gemm_fusion_record keeps SLP off that function.
inline void emit_fused_pack_a(Emitter& E, DType d, const GemmElement& a, const std::vector<llvm::Value*>& args) {
  auto& b = E.b;
  const Blocking k = blocking_for(d);
  llvm::Type* t = E.reg_type(d);
  llvm::Value *Ap = args[0], *bt = args[1], *ic = args[2], *mc = args[3], *pc = args[4], *kc = args[5];
  auto add = [&](llvm::Value* x, llvm::Value* y) { return b.CreateAdd(x, y, "", true, true); };
  auto mul = [&](llvm::Value* x, std::int64_t c) { return b.CreateMul(x, E.c64(c), "", true, true); };
  llvm::Value* ntiles = b.CreateUDiv(add(mc, E.c64(k.MR - 1)), E.c64(k.MR));
  llvm::Value* zero = llvm::ConstantFP::get(t, 0.0);
  E.loop_dyn(ntiles, [&](llvm::Value* tl) {
    llvm::Value* row0 = add(ic, mul(tl, k.MR));
    std::vector<llvm::Value*> ok, row;
    for (std::int64_t r = 0; r < k.MR; ++r) {
      llvm::Value* off = E.c64(r);
      ok.push_back(b.CreateICmpSLT(add(mul(tl, k.MR), off), mc));
      row.push_back(b.CreateSelect(ok.back(), add(row0, off), ic));
    }
    llvm::Value* dst0 = b.CreateInBoundsGEP(t, Ap, mul(b.CreateMul(tl, kc), k.MR));
    E.loop_dyn(kc, [&](llvm::Value* p) {
      llvm::Value* col = add(pc, p);
      for (std::int64_t r = 0; r < k.MR; ++r) {
        llvm::Value* v = b.CreateSelect(ok[static_cast<std::size_t>(r)], a(bt, row[static_cast<std::size_t>(r)], col), zero);
        b.CreateStore(v, b.CreateInBoundsGEP(t, dst0, add(mul(p, k.MR), E.c64(r))));
      }
    }, LoopHint::plain);
  }, LoopHint::plain);
}

// pack_b's body: Bp[(strip * kc + p) * NR + c] = B[bt, pc + p, jc + strip*NR + c],
// zero past column jc + nc; along the stored rows as pack_a: B stored
// (B,K,N) NR neighbours per p, stored (B,N,K) (`transposed`) one column of
// the strip at a time over p.
inline void emit_fused_pack_b(Emitter& E, DType d, const GemmElement& bm, bool transposed,
                              const std::vector<llvm::Value*>& args) {
  auto& b = E.b;
  const Blocking k = blocking_for(d);
  llvm::Type* t = E.reg_type(d);
  llvm::Value *Bp = args[0], *bt = args[1], *jc = args[2], *nc = args[3], *pc = args[4], *kc = args[5];
  auto add = [&](llvm::Value* x, llvm::Value* y) { return b.CreateAdd(x, y, "", true, true); };
  auto mul = [&](llvm::Value* x, std::int64_t c) { return b.CreateMul(x, E.c64(c), "", true, true); };
  llvm::Value* nstrips = b.CreateUDiv(add(nc, E.c64(k.NR - 1)), E.c64(k.NR));
  llvm::Value* zero = llvm::ConstantFP::get(t, 0.0);
  E.loop_dyn(nstrips, [&](llvm::Value* st) {
    llvm::Value* c0 = mul(st, k.NR);
    llvm::Value* dst0 = b.CreateInBoundsGEP(t, Bp, mul(b.CreateMul(st, kc), k.NR));
    auto element = [&](llvm::Value* c, llvm::Value* p) {
      llvm::Value* ok = b.CreateICmpSLT(add(c0, c), nc);
      llvm::Value* col = b.CreateSelect(ok, add(jc, add(c0, c)), jc);
      b.CreateStore(b.CreateSelect(ok, bm(bt, add(pc, p), col), zero), b.CreateInBoundsGEP(t, dst0, add(mul(p, k.NR), c)));
    };
    if (transposed)
      E.loop_dyn(E.c64(k.NR), [&](llvm::Value* c) {
        E.loop_dyn(kc, [&](llvm::Value* p) { element(c, p); }, LoopHint::plain);
      }, LoopHint::plain);
    else
      E.loop_dyn(kc, [&](llvm::Value* p) {
        E.loop_dyn(E.c64(k.NR), [&](llvm::Value* c) { element(c, p); });
      }, LoopHint::plain);
  }, LoopHint::plain);
}

// The fusion record (lower_gemm.hpp, gemm_fusion_type) of a product, in the
// current function: `a` / `bm` null for an operand read from memory,
// `epilogue(bt, ic, mc, jc, nc)` null without one.
using GemmEpilogue = std::function<void(llvm::Value* bt, llvm::Value* ic, llvm::Value* mc, llvm::Value* jc, llvm::Value* nc)>;
inline llvm::Value* gemm_fusion_record(Emitter& E, DType d, const DotShape& s, const GemmElement& a, const GemmElement& bm,
                                       const GemmEpilogue& epilogue) {
  auto& b = E.b;
  llvm::Value* null = llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(E.ptr));
  const std::vector<llvm::Type*> pack{E.ptr, E.i64, E.i64, E.i64, E.i64, E.i64};
  llvm::Value* fns[3] = {null, null, null};
  llvm::Value* ctxs[3] = {null, null, null};
  if (a) {
    auto [f, c] = outline_callback(E, "pack_a", 0, pack, [&](const std::vector<llvm::Value*>& args) {
      emit_fused_pack_a(E, d, a, args);
    }, /*no_slp=*/!s.ta);  // (the stored-row-apart reads: see emit_fused_pack_a; its loops are plain)
    fns[0] = f, ctxs[0] = c;
  }
  if (bm) {
    auto [f, c] = outline_callback(E, "pack_b", 1, pack, [&](const std::vector<llvm::Value*>& args) {
      emit_fused_pack_b(E, d, bm, s.tb, args);
    });
    fns[1] = f, ctxs[1] = c;
  }
  if (epilogue) {
    auto [f, c] = outline_callback(E, "epilogue", 2, {E.i64, E.i64, E.i64, E.i64, E.i64},
                                   [&](const std::vector<llvm::Value*>& args) {
                                     epilogue(args[0], args[1], args[2], args[3], args[4]);
                                   });
    fns[2] = f, ctxs[2] = c;
  }
  // The record: {the array of the three contexts, pack_a, pack_b, epilogue}.
  llvm::StructType* ct = llvm::StructType::get(E.ctx, {E.ptr, E.ptr, E.ptr});
  llvm::Value* ctx = E.entry_alloca(ct);
  for (unsigned i = 0; i < 3; ++i) b.CreateStore(ctxs[i], b.CreateStructGEP(ct, ctx, i));
  llvm::StructType* ft = gemm_fusion_type(E);
  llvm::Value* rec = E.entry_alloca(ft);
  b.CreateStore(ctx, b.CreateStructGEP(ft, rec, 0));
  for (unsigned i = 0; i < 3; ++i) b.CreateStore(fns[i], b.CreateStructGEP(ft, rec, i + 1));
  return rec;
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
