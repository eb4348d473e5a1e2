// dynstage: the blocked float GEMM of the canonical dot_general,
// C[b] = A[b] (MxK) x B[b] (KxN) (lower_dot.hpp chooses it; the layouts are
// described there). Part of the backend implementation.
//
// GotoBLAS/BLIS blocking written with explicit vectors:
//   for jc (NC columns): for pc (KC depth): pack B[pc:+KC, jc:+NC] into
//     NR-wide column strips (zero padded);
//     for ic (MC rows): pack A[ic:+MC, pc:+KC] into MR-tall row tiles;
//       for each strip, for each tile: the MR x NR micro-kernel keeps
//       MR * NR/VL vector accumulators in registers over the KC loop
//       (a broadcast of A times a vector of B, fused multiply-add).
// Packing reads A and B as they are stored: a transposed operand is
// packed into the same panels, so every form runs the same micro-kernel
// on the same panels and gives the same bits as the plain product of the
// transposed matrices.
// AVX-512: VL = 8 (f64) / 16 (f32), MR = 8, NR = 3 VL (24 accumulators
// of 32 registers); AVX2: MR = 6, NR = 2 VL; SSE: MR = 4, NR = 2 VL.
// KC = 128 (f64) / 256 (f32): a B strip (KC x NR) stays in L1, the A block
// (MC x KC, MC = 16 MR) in L2, the packed B panel (KC x NC, NC ~ 1024) in
// L2/L3. Edge tiles use masked vector loads/stores (packing pads with
// zeros), so every tile runs the same micro-kernel. The accumulators start
// from C for later KC blocks, so every output element is summed in k
// order, as eager's i-k-j; only FMA rounding differs.
//
// Fused operands and epilogue (issue 25, item 1): see lower_gemm_fusion.hpp.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "../jit/disk_cache.hpp"  // the GEMM routines' object code (define_gemm_routines)
#include "emit.hpp"
#include "parallel.hpp"
#include "session.hpp"

namespace dyn::detail::llvmjit {
// The sizes as i64 values: constants when static, else run-time values.
struct DotShape {
  llvm::Value *B, *M, *K, *N;
  bool ta = false, tb = false;  // A stored (B,K,M), B stored (B,N,K)
};

// --- the blocked float kernel --------------------------------------------

struct Blocking {
  std::int64_t VL, MR, NV, NR, KC, MC, NC;
};

inline Blocking blocking_for(DType d) {
  const Host& h = host();
  const std::int64_t bits = h.avx512 ? 512 : h.avx2 ? 256 : 128;
  Blocking k{};
  k.VL = bits / (d == DType::f64 ? 64 : 32);
  if (h.avx512) k.MR = 8, k.NV = 3;
  else if (h.avx2) k.MR = 6, k.NV = 2;
  else k.MR = 4, k.NV = 2;
  k.NR = k.NV * k.VL;
  k.KC = d == DType::f64 ? 128 : 256;
  k.MC = 16 * k.MR;
  k.NC = (1024 + k.NR - 1) / k.NR * k.NR;
  return k;
}

// The micro-kernel as an internal function:
//   void micro(ptr Ap, ptr Bp, ptr C, i64 ldc, i64 kc, i1 first, i64 rows, i64 cols)
// Ap: kc x MR (packed), Bp: kc x NR (packed), C: the tile's top-left element.
inline llvm::Function* micro_kernel(Emitter& E, DType d, const Blocking& k) {
  auto& b = E.b;
  llvm::Type* t = E.reg_type(d);
  auto* vt = llvm::FixedVectorType::get(t, static_cast<unsigned>(k.VL));
  const std::string name = std::string("dynstage.micro.") + (d == DType::f64 ? "f64" : "f32");
  if (llvm::Function* f = E.mod.getFunction(name)) return f;
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), {E.ptr, E.ptr, E.ptr, E.i64, E.i64, E.i1, E.i64, E.i64}, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, E.mod);
  for (unsigned a = 0; a < 3; ++a) {
    f->addParamAttr(a, llvm::Attribute::NoAlias);
    f->addParamAttr(a, llvm::Attribute::NoCapture);
  }
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr(llvm::Attribute::NoInline);  // one copy; the call is per tile, not per element
  llvm::IRBuilderBase::InsertPointGuard guard(b);
  llvm::Function* saved = E.fn;
  E.fn = f;
  llvm::Value *Ap = f->getArg(0), *Bp = f->getArg(1), *C = f->getArg(2), *ldc = f->getArg(3), *kc = f->getArg(4),
              *first = f->getArg(5), *rows = f->getArg(6), *cols = f->getArg(7);
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(E.ctx, "entry", f);
  b.SetInsertPoint(entry);
  const llvm::Align elem_align(dtype_size(d));
  // Masks: lane l of vector v in row r is valid iff r < rows and v*VL + l < cols.
  std::vector<llvm::Constant*> lanes;
  for (std::int64_t l = 0; l < k.VL; ++l) lanes.push_back(llvm::ConstantInt::get(E.i64, static_cast<std::uint64_t>(l)));
  llvm::Value* lane_ix = llvm::ConstantVector::get(lanes);
  std::vector<llvm::Value*> colmask(static_cast<std::size_t>(k.NV));
  for (std::int64_t v = 0; v < k.NV; ++v)
    colmask[static_cast<std::size_t>(v)] = b.CreateICmpSLT(
        b.CreateAdd(lane_ix, b.CreateVectorSplat(static_cast<unsigned>(k.VL), E.c64(v * k.VL))),
        b.CreateVectorSplat(static_cast<unsigned>(k.VL), cols));
  auto mask = [&](std::int64_t r, std::int64_t v) {
    llvm::Value* rowok = b.CreateVectorSplat(static_cast<unsigned>(k.VL), b.CreateICmpSLT(E.c64(r), rows));
    return b.CreateAnd(colmask[static_cast<std::size_t>(v)], rowok);
  };
  auto cptr = [&](std::int64_t r, std::int64_t v) {
    // Not inbounds: rows past the matrix are masked off, never accessed.
    return b.CreateGEP(t, C, b.CreateAdd(b.CreateMul(E.c64(r), ldc), E.c64(v * k.VL)));
  };
  llvm::Value* zero = llvm::ConstantAggregateZero::get(vt);
  std::vector<llvm::Value*> init;
  for (std::int64_t r = 0; r < k.MR; ++r)
    for (std::int64_t v = 0; v < k.NV; ++v) {
      llvm::Value* loaded = b.CreateMaskedLoad(vt, cptr(r, v), elem_align, mask(r, v), zero);
      init.push_back(b.CreateSelect(first, zero, loaded));
    }
  // k loop with MR*NV vector accumulators as phis.
  llvm::BasicBlock* head = llvm::BasicBlock::Create(E.ctx, "k", f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(E.ctx, "k.end", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* kk = b.CreatePHI(E.i64, 2);
  kk->addIncoming(E.c64(0), entry);
  std::vector<llvm::PHINode*> acc;
  for (auto* v0 : init) {
    acc.push_back(b.CreatePHI(vt, 2));
    acc.back()->addIncoming(v0, entry);
  }
  std::vector<llvm::Value*> bv;
  llvm::Value* brow = b.CreateMul(kk, E.c64(k.NR));
  for (std::int64_t v = 0; v < k.NV; ++v)
    bv.push_back(b.CreateAlignedLoad(vt, b.CreateInBoundsGEP(t, Bp, b.CreateAdd(brow, E.c64(v * k.VL))), elem_align));
  llvm::Value* arow = b.CreateMul(kk, E.c64(k.MR));
  std::vector<llvm::Value*> next(acc.size());
  for (std::int64_t r = 0; r < k.MR; ++r) {
    llvm::Value* a = b.CreateLoad(t, b.CreateInBoundsGEP(t, Ap, b.CreateAdd(arow, E.c64(r))));
    llvm::Value* as = b.CreateVectorSplat(static_cast<unsigned>(k.VL), a);
    for (std::int64_t v = 0; v < k.NV; ++v) {
      const auto ai = static_cast<std::size_t>(r * k.NV + v);
      next[ai] = b.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {as, bv[static_cast<std::size_t>(v)], acc[ai]});
    }
  }
  llvm::Value* knext = b.CreateAdd(kk, E.c64(1));
  kk->addIncoming(knext, head);
  for (std::size_t ai = 0; ai < acc.size(); ++ai) acc[ai]->addIncoming(next[ai], head);
  b.CreateCondBr(b.CreateICmpSGE(knext, kc), done, head);
  b.SetInsertPoint(done);
  for (std::int64_t r = 0; r < k.MR; ++r)
    for (std::int64_t v = 0; v < k.NV; ++v)
      b.CreateMaskedStore(next[static_cast<std::size_t>(r * k.NV + v)], cptr(r, v), elem_align, mask(r, v));
  b.CreateRetVoid();
  E.fn = saved;
  return f;
}

// The fusion record a kernel may pass the routine (null: none), four
// pointers: {ctx, pack_a, pack_b, epilogue}; each function may be null
// (lower_gemm_fusion.hpp writes them):
//   i32 pack_a(ptr ctx, ptr Ap, i64 b, i64 ic, i64 mc, i64 pc, i64 kc)
//       fills the packed A block of rows [ic, ic+mc), depth [pc, pc+kc)
//       of batch b, exactly as the built-in packing (zeros past mc);
//   i32 pack_b(ptr ctx, ptr Bp, i64 b, i64 jc, i64 nc, i64 pc, i64 kc)
//       the packed B panel, likewise (zeros past nc);
//   i32 epilogue(ptr ctx, i64 b, i64 ic, i64 mc, i64 jc, i64 nc)
//       called once per finished C block (after its last KC block), by the
//       task that computed it, while the block is in cache.
inline llvm::StructType* gemm_fusion_type(Emitter& E) {
  return llvm::StructType::get(E.ctx, {E.ptr, E.ptr, E.ptr, E.ptr});
}
inline llvm::FunctionType* gemm_pack_type(Emitter& E) {
  return llvm::FunctionType::get(E.i32, {E.ptr, E.ptr, E.i64, E.i64, E.i64, E.i64, E.i64}, false);
}
inline llvm::FunctionType* gemm_epilogue_type(Emitter& E) {
  return llvm::FunctionType::get(E.i32, {E.ptr, E.i64, E.i64, E.i64, E.i64, E.i64}, false);
}

// The blocked loops over packing buffers Ap (one MC x KC block per row
// block, so concurrent tasks never share one) and Bp (KC x NC), of the sizes
// gemm_packing_bytes() gives.
// `trans` (i64): bit 0 set when A is stored transposed (B,K,M), bit 1 when
// B is (B,N,K); only the packing loops read it. `fusion`: the record above
// or null.
inline void emit_blocked_loops(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, llvm::Value* C,
                               llvm::Value* Ablocks, llvm::Value* Bp, llvm::Value* trans, llvm::Value* fusion) {
  auto& b = E.b;
  const Blocking k = blocking_for(d);
  // The record's four pointers (all null without one), read once.
  llvm::Value *fctx, *fpack_a, *fpack_b, *fepi;
  {
    llvm::StructType* st = gemm_fusion_type(E);
    llvm::BasicBlock* from = b.GetInsertBlock();
    llvm::BasicBlock* has = llvm::BasicBlock::Create(E.ctx, "fusion", E.fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(E.ctx, "fusion.end", E.fn);
    b.CreateCondBr(b.CreateIsNull(fusion), join, has);
    b.SetInsertPoint(has);
    llvm::Value* f[4];
    for (unsigned i = 0; i < 4; ++i) f[i] = b.CreateLoad(E.ptr, b.CreateStructGEP(st, fusion, i));
    b.CreateBr(join);
    b.SetInsertPoint(join);
    llvm::Value* null = llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(E.ptr));
    llvm::Value** out[4] = {&fctx, &fpack_a, &fpack_b, &fepi};
    for (unsigned i = 0; i < 4; ++i) {
      llvm::PHINode* phi = b.CreatePHI(E.ptr, 2);
      phi->addIncoming(null, from);
      phi->addIncoming(f[i], has);
      *out[i] = phi;
    }
  }
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(d));
  llvm::Type* t = E.reg_type(d);
  llvm::Function* micro = micro_kernel(E, d, k);
  auto mul = [&](llvm::Value* x, std::int64_t c) { return b.CreateMul(x, E.c64(c), "", true, true); };
  auto mulv = [&](llvm::Value* x, llvm::Value* y) { return b.CreateMul(x, y, "", true, true); };
  auto add = [&](llvm::Value* x, llvm::Value* y) { return b.CreateAdd(x, y, "", true, true); };
  auto smin = [&](llvm::Value* x, std::int64_t c) { return E.smin(x, E.c64(c)); };
  llvm::Value* zerof = llvm::ConstantFP::get(t, 0.0);
  llvm::Value* ta = b.CreateICmpNE(b.CreateAnd(trans, E.c64(1)), E.c64(0));
  llvm::Value* tb = b.CreateICmpNE(b.CreateAnd(trans, E.c64(2)), E.c64(0));
  E.loop(s.B, [&](llvm::Value* bt) {
    llvm::Value* Ab = b.CreateInBoundsGEP(t, A, mulv(bt, mulv(s.M, s.K)));
    llvm::Value* Bb = b.CreateInBoundsGEP(t, Bm, mulv(bt, mulv(s.K, s.N)));
    llvm::Value* Cb = b.CreateInBoundsGEP(t, C, mulv(bt, mulv(s.M, s.N)));
    E.loop_step(0, s.N, k.NC, [&](llvm::Value* jc) {
      llvm::Value* nc = smin(b.CreateSub(s.N, jc), k.NC);
      llvm::Value* nstrips = b.CreateUDiv(add(nc, E.c64(k.NR - 1)), E.c64(k.NR));
      E.loop_step(0, s.K, k.KC, [&](llvm::Value* pc) {
        llvm::Value* kc = smin(b.CreateSub(s.K, pc), k.KC);
        // Pack B: Bp[(strip * kc + p) * NR + c] = B[pc + p, jc + strip*NR + c], zero
        // past column N. Full strips are one NR-element copy per row.
        auto pack_b = [&] {
        E.loop_dyn(nstrips, [&](llvm::Value* st) {
          llvm::Value* j0 = add(jc, mul(st, k.NR));
          llvm::Value* full = b.CreateICmpSLE(add(j0, E.c64(k.NR)), s.N);
          E.loop_dyn(kc, [&](llvm::Value* p) {
            llvm::Value* src = b.CreateInBoundsGEP(t, Bb, add(mulv(add(pc, p), s.N), j0));
            llvm::Value* dst = b.CreateInBoundsGEP(t, Bp, mul(add(b.CreateMul(st, kc), p), k.NR));
            llvm::BasicBlock* fast = llvm::BasicBlock::Create(E.ctx, "pack.full", E.fn);
            llvm::BasicBlock* slow = llvm::BasicBlock::Create(E.ctx, "pack.edge", E.fn);
            llvm::BasicBlock* join = llvm::BasicBlock::Create(E.ctx, "pack.join", E.fn);
            b.CreateCondBr(full, fast, slow);
            b.SetInsertPoint(fast);
            b.CreateMemCpy(dst, llvm::MaybeAlign(), src, llvm::MaybeAlign(), E.c64(k.NR * es));
            b.CreateBr(join);
            b.SetInsertPoint(slow);
            llvm::Value* valid = b.CreateSub(s.N, j0);  // 1 .. NR-1
            E.loop_dyn(E.c64(k.NR), [&](llvm::Value* c) {
              llvm::Value* ok = b.CreateICmpSLT(c, valid);
              llvm::Value* cc = b.CreateSelect(ok, c, E.c64(0));
              llvm::Value* v = b.CreateLoad(t, b.CreateGEP(t, src, cc));
              b.CreateStore(b.CreateSelect(ok, v, llvm::ConstantFP::get(t, 0.0)), b.CreateGEP(t, dst, c));
            }, LoopHint::plain);
            b.CreateBr(join);
            b.SetInsertPoint(join);
          }, LoopHint::plain);
        }, LoopHint::plain);
        };
        // B stored transposed (N x K, row j of the stored matrix is column j):
        // the same panel, read as NR streams along k (columns past N read a
        // valid column, then zeroed).
        auto pack_bt = [&] {
          E.loop_dyn(nstrips, [&](llvm::Value* st) {
            llvm::Value* j0 = add(jc, mul(st, k.NR));
            std::vector<llvm::Value*> ok, src;
            for (std::int64_t c = 0; c < k.NR; ++c) {
              llvm::Value* j = add(j0, E.c64(c));
              ok.push_back(b.CreateICmpSLT(j, s.N));
              src.push_back(b.CreateInBoundsGEP(t, Bb, add(mulv(b.CreateSelect(ok.back(), j, E.c64(0)), s.K), pc)));
            }
            llvm::Value* dst0 = b.CreateInBoundsGEP(t, Bp, mul(b.CreateMul(st, kc), k.NR));
            E.loop_dyn(kc, [&](llvm::Value* p) {
              for (std::int64_t c = 0; c < k.NR; ++c) {
                llvm::Value* v = b.CreateLoad(t, b.CreateInBoundsGEP(t, src[static_cast<std::size_t>(c)], p));
                v = b.CreateSelect(ok[static_cast<std::size_t>(c)], v, zerof);
                b.CreateStore(v, b.CreateInBoundsGEP(t, dst0, add(mul(p, k.NR), E.c64(c))));
              }
            }, LoopHint::plain);
          }, LoopHint::plain);
        };
        E.either(b.CreateIsNull(fpack_b), [&] { E.either(tb, pack_bt, pack_b); }, [&] {
          b.CreateCall(gemm_pack_type(E), fpack_b, {fctx, Bp, bt, jc, nc, pc, kc});
        });
        // The row blocks on every core (llvm/parallel.hpp): B's panel is
        // packed once and shared, each row block packs A into its own block; every C
        // element is still summed in k order by one task, so the result is
        // the same for every thread count.
        llvm::Value* nblocks = b.CreateUDiv(add(s.M, E.c64(k.MC - 1)), E.c64(k.MC));
        parallel_region(E, nblocks, [&](llvm::Value* lo, llvm::Value* hi) {
          E.loop_dyn(b.CreateSub(hi, lo), [&](llvm::Value* blk) {
            llvm::Value* ic = mul(add(lo, blk), k.MC);
            llvm::Value* Ap = b.CreateInBoundsGEP(t, Ablocks, mul(add(lo, blk), k.MC * k.KC));
            llvm::Value* mc = smin(b.CreateSub(s.M, ic), k.MC);
            llvm::Value* ntiles = b.CreateUDiv(add(mc, E.c64(k.MR - 1)), E.c64(k.MR));
            // Pack A: Ap[(tile * kc + p) * MR + r] = A[ic + tile*MR + r, pc + p], zero
            // past row M (rows clamped to a valid one, then zeroed). A stored
            // normally: MR streams along k; stored transposed (K x M): MR
            // neighbours of one stored row per p.
            auto pack_a = [&](bool transposed) {
              E.loop_dyn(ntiles, [&](llvm::Value* tl) {
                std::vector<llvm::Value*> ok, src;
                for (std::int64_t r = 0; r < k.MR; ++r) {
                  llvm::Value* i = add(add(ic, mul(tl, k.MR)), E.c64(r));
                  ok.push_back(b.CreateICmpSLT(i, s.M));
                  llvm::Value* ii = b.CreateSelect(ok.back(), i, E.c64(0));
                  src.push_back(b.CreateInBoundsGEP(t, Ab, transposed ? add(mulv(pc, s.M), ii) : add(mulv(ii, s.K), pc)));
                }
                llvm::Value* dst0 = b.CreateInBoundsGEP(t, Ap, mul(b.CreateMul(tl, kc), k.MR));
                E.loop_dyn(kc, [&](llvm::Value* p) {
                  llvm::Value* off = transposed ? mulv(p, s.M) : p;
                  for (std::int64_t r = 0; r < k.MR; ++r) {
                    llvm::Value* v = b.CreateLoad(t, b.CreateInBoundsGEP(t, src[static_cast<std::size_t>(r)], off));
                    v = b.CreateSelect(ok[static_cast<std::size_t>(r)], v, zerof);
                    b.CreateStore(v, b.CreateInBoundsGEP(t, dst0, add(mul(p, k.MR), E.c64(r))));
                  }
                }, LoopHint::plain);
              }, LoopHint::plain);
            };
            E.either(b.CreateIsNull(fpack_a), [&] { E.either(ta, [&] { pack_a(true); }, [&] { pack_a(false); }); },
                        [&] { b.CreateCall(gemm_pack_type(E), fpack_a, {fctx, Ap, bt, ic, mc, pc, kc}); });
            llvm::Value* first = b.CreateICmpEQ(pc, E.c64(0));
            E.loop_dyn(nstrips, [&](llvm::Value* st) {
              llvm::Value* cols = smin(b.CreateSub(nc, mul(st, k.NR)), k.NR);
              llvm::Value* bstrip = b.CreateInBoundsGEP(t, Bp, mul(b.CreateMul(st, kc), k.NR));
              E.loop_dyn(ntiles, [&](llvm::Value* tl) {
                llvm::Value* rows = smin(b.CreateSub(mc, mul(tl, k.MR)), k.MR);
                llvm::Value* atile = b.CreateInBoundsGEP(t, Ap, mul(b.CreateMul(tl, kc), k.MR));
                llvm::Value* row0 = add(ic, mul(tl, k.MR));
                llvm::Value* col0 = add(jc, mul(st, k.NR));
                llvm::Value* ctile = b.CreateInBoundsGEP(t, Cb, add(mulv(row0, s.N), col0));
                b.CreateCall(micro, {atile, bstrip, ctile, s.N, kc, first, rows, cols});
              }, LoopHint::plain);
            }, LoopHint::plain);
            // The block is final after its last KC block: the epilogue, here.
            llvm::Value* last = b.CreateICmpSGE(add(pc, kc), s.K);
            E.either(b.CreateAnd(last, b.CreateIsNotNull(fepi)), [&] {
              b.CreateCall(gemm_epilogue_type(E), fepi, {fctx, bt, ic, mc, jc, nc});
            }, [] {});
          }, LoopHint::plain);
        }, /*check_faults=*/false);
      }, LoopHint::plain);
    }, LoopHint::plain);
  }, LoopHint::plain);
}

// The packing buffers' sizes in bytes for a product (K, M, N >= 1), as the
// caller allocates them: {Ap (an MC x KC block per row block), Bp}.
inline std::pair<llvm::Value*, llvm::Value*> gemm_packing_bytes(Emitter& E, DType d, const DotShape& s) {
  auto& b = E.b;
  const Blocking k = blocking_for(d);
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(d));
  auto mul = [&](llvm::Value* x, std::int64_t c) { return b.CreateMul(x, E.c64(c), "", true, true); };
  auto round_up = [&](llvm::Value* x, std::int64_t c) {
    return mul(b.CreateUDiv(b.CreateAdd(x, E.c64(c - 1), "", true, true), E.c64(c)), c);
  };
  llvm::Value* kc_max = E.smin(s.K, E.c64(k.KC));
  llvm::Value* nc_max = E.smin(round_up(s.N, k.NR), E.c64(k.NC));
  llvm::Value* blocks = b.CreateUDiv(b.CreateAdd(s.M, E.c64(k.MC - 1), "", true, true), E.c64(k.MC));
  return {mul(blocks, k.MC * k.KC * es), mul(b.CreateMul(kc_max, nc_max, "", true, true), es)};
}

// The blocked kernel is a runtime routine, not code in every kernel: one
// function per float dtype,
//   void dynstage_gemm_f64(ptr A, ptr B, ptr C, i64 batch, i64 M, i64 K, i64 N, ptr Ap, ptr Bp, i64 trans,
//                          ptr fusion)
// (sizes >= 1, row-major contiguous, Ap/Bp the packing buffers, trans: bit 0
// A stored (batch,K,M), bit 1 B stored (batch,N,K), fusion: the kernel's
// packing and epilogue functions or null, see gemm_fusion_type), emitted and
// optimised once per process and compiled by ORC on the first lookup of a
// kernel that calls it. Inlined, it cost every kernel with a large product
// ~25 ms of code generation per dot_general (a 3x3 convolution written as
// nine products compiled in 0.5 s); as a call it costs nothing per kernel
// and loses nothing (its loops run over run-time sizes anyway).
inline std::string gemm_routine(DType d) { return "dynstage_gemm_" + std::string(dtype_name(d)); }

inline llvm::FunctionType* gemm_type(Emitter& E) {
  return llvm::FunctionType::get(E.b.getVoidTy(), {E.ptr, E.ptr, E.ptr, E.i64, E.i64, E.i64, E.i64, E.ptr, E.ptr, E.i64, E.ptr},
                                 false);
}

// The routines' module in `ctx`, optimised (also linked into exported
// objects: llvm/aot.hpp).
inline std::unique_ptr<llvm::Module> gemm_routines_module(llvm::LLVMContext& ctx) {
  const Host& h = host();
  auto mod = std::make_unique<llvm::Module>("dynstage_gemm", ctx);
  mod->setDataLayout(thread_target_machine().createDataLayout());
  mod->setTargetTriple(h.triple);
  {
    Emitter E(*mod);
    for (DType d : {DType::f32, DType::f64}) {
      llvm::Function* f = llvm::Function::Create(gemm_type(E), llvm::Function::ExternalLinkage, gemm_routine(d), *mod);
      for (unsigned a : {0u, 1u, 2u, 7u, 8u}) {
        f->addParamAttr(a, llvm::Attribute::NoAlias);
        f->addParamAttr(a, llvm::Attribute::NoCapture);
      }
      E.fn = f;
      E.entry = llvm::BasicBlock::Create(E.ctx, "entry", f);
      E.b.SetInsertPoint(E.entry);
      const DotShape s{f->getArg(3), f->getArg(4), f->getArg(5), f->getArg(6)};
      emit_blocked_loops(E, d, s, f->getArg(0), f->getArg(1), f->getArg(2), f->getArg(7), f->getArg(8), f->getArg(9),
                         f->getArg(10));
      E.b.CreateRetVoid();
    }
  }
  set_host_attributes(*mod);
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(*mod, &os)) internal_error("LLVM lowering produced invalid IR for the GEMM routines: " + os.str());
  optimise(*mod);
  return mod;
}

// Adds the routines' object code to the process's JIT, once (thread-safe). A
// kernel that calls them must have called this before its lookup. With the
// disk cache on, the object comes from it when it is there (compiling the
// routines costs ~25 ms of LLVM on an idle machine, every process, several
// times the load of the kernels that call them), and goes into it otherwise.
inline void define_gemm_routines() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::orc::LLJIT& jit = Session::get().jit();
    const DiskCacheConfig dc = disk_cache_config();
    std::optional<DiskKey> key;
    if (!dc.dir.empty()) key = disk_routine_key("gemm with fusion");
    if (key)
      if (std::optional<DiskEntry> e = disk_cache_load(dc, *key)) {
        llvm::Error err = jit.addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(e->object, "dynstage_gemm"));
        if (!err) return;
        llvm::consumeError(std::move(err));  // (nothing was defined: compile below)
      }
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> mod = gemm_routines_module(ctx);
    CompileResult routines;
    routines.symbol = gemm_routine(DType::f64);
    std::unique_ptr<llvm::MemoryBuffer> object =
        take(llvm::orc::SimpleCompiler(thread_target_machine())(*mod), "generating the GEMM routines' code");
    routines.object.assign(object->getBufferStart(), object->getBufferSize());
    check(jit.addObjectFile(std::move(object)), "adding the GEMM routines");
    if (key) disk_cache_store(dc, *key, routines);
  });
}

// A call of the routine, with the packing buffers from the kernel's
// temporaries (so an allocation failure takes the kernel's out-of-memory exit).
// `fusion`: the record of gemm_fusion_type, or null.
inline void emit_blocked(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, llvm::Value* C,
                         llvm::Value* fusion = nullptr) {
  define_gemm_routines();
  const auto [ap_bytes, bp_bytes] = gemm_packing_bytes(E, d, s);
  llvm::Value* Bp = E.temp(bp_bytes);
  llvm::Value* Ap = E.temp(ap_bytes);
  llvm::FunctionCallee gemm = E.mod.getOrInsertFunction(gemm_routine(d), gemm_type(E));
  E.b.CreateCall(gemm, {A, Bm, C, s.B, s.M, s.K, s.N, Ap, Bp, E.c64((s.ta ? 1 : 0) | (s.tb ? 2 : 0)),
                          fusion ? fusion : llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(E.ptr))});
  E.release(Ap);
  E.release(Bp);
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
