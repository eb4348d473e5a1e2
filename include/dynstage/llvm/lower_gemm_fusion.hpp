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

// An operand element at (batch, row, column) of its logical matrix: A[b,i,k]
// or B[b,k,j], whatever form it is stored in.
using GemmElement = std::function<llvm::Value*(llvm::Value* bt, llvm::Value* row, llvm::Value* col)>;

// pack_a's body: Ap[(tile * kc + p) * MR + r] = A[bt, ic + tile*MR + r, pc + p],
// zero past row ic + mc (the element is computed at a valid row, then
// replaced: the expression is never evaluated out of bounds). Per p, the
// tile's MR rows (consecutive stores, one cache line of f64), as the
// built-in packing. For A stored (B,M,K) the MR reads are a stored row
// apart, which the SLP vectoriser turned into masked gathers (1.1x the
// plain product's
// time on a thin product; a row-at-a-time order with stores MR apart was
// slower still): gemm_fusion_record keeps LLVM's vectorisers off that
// function (outline's no_vectorise).
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
    auto [f, c] = outline(E, "pack_a", 0, pack, [&](const std::vector<llvm::Value*>& args) {
      emit_fused_pack_a(E, d, a, args);
    }, /*no_vectorise=*/!s.ta);  // (the stored-row-apart reads: see emit_fused_pack_a; its loops are plain)
    fns[0] = f, ctxs[0] = c;
  }
  if (bm) {
    auto [f, c] = outline(E, "pack_b", 1, pack, [&](const std::vector<llvm::Value*>& args) {
      emit_fused_pack_b(E, d, bm, s.tb, args);
    });
    fns[1] = f, ctxs[1] = c;
  }
  if (epilogue) {
    auto [f, c] = outline(E, "epilogue", 2, {E.i64, E.i64, E.i64, E.i64, E.i64},
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
