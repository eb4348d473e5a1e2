// dynstage: the loop nest of argmax and argmin. Part of the backend
// implementation (DYNSTAGE_IMPLEMENTATION): a member of Lowering (lower.hpp).
//
// The operand is seen as [outer axes, the axis, inner axes]; one output
// element per (outer, inner) index. The nest is: loops over the outer axes,
// loops over the inner axes, and inside them a sequential loop along the
// axis that carries the pair (best value, its index) in registers:
//
//   best = x[o, 0, i], at = 0
//   for k in 1..n-1: if better(x[o, k, i], best): best = x[o, k, i], at = k
//   out[o, i] = at
//
// better(v, b): b is not NaN and (v > b or v is NaN) for argmax (v < b for
// argmin); bool compares as unsigned (true > false). So ties keep the first
// index and the first NaN wins, exactly the eager kernel's definition
// (eager/kernels_arg.hpp), and jit equals eager bit for bit. The operand is
// computed inline at each element (an elementwise producer is fused in,
// never materialised). An empty axis (a runtime size of 0) gives index 0.
// The comparisons and selects are branch-free; along another axis than
// the last the reads are strided by the inner size.
//
// Along the last axis (contiguous rows) whole blocks are skipped with
// vector code (LLVM 19's vectoriser leaves a select that carries an index
// scalar): for each block of kArgBlockElems elements (32-byte vectors),
// one vector compare per vector asks whether any element is better than the
// current best (`v > best` or v NaN; argmin `<`). A block with nothing
// better leaves (best, index) unchanged in the sequential scan too; a block
// with a better element ends it with the block's maximum (minimum) at its
// first position, found by a vector reduction and a compare mask (a block
// holding a NaN is scanned by the scalar loop above, which finds the first
// NaN). So the answer is the sequential scan's, bit for bit, and on
// unsorted data, where few blocks hold a new best, the scan runs at the
// speed of a vector compare. A NaN best is final: no block is looked at
// after it. After the last whole block, the block ending at the row's end
// is looked at the same way (it overlaps positions already seen, which are
// never better); a row shorter than a block is scanned by the scalar loop.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <string>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

// The elements of a block: 16 (two 32-byte vectors of f32, four of f64;
// one vector of narrower types). Measured after the overlapping last
// block, 1000 x 1000 rows, one thread: f32 blocks of 8, 16, 32, 64 took
// 150, 79, 92, 112 us; f64 blocks of 8 and 16 took 159 and 147 us (10000 x
// 100: 438 and 226 us); 16 was also the fastest f32 block on 100 x 10000
// and 10000 x 100.
inline constexpr std::int64_t kArgBlockElems = 16;

inline void Lowering::emit_arg_reduction(const Eqn& e, llvm::Value* out) {
  const Atom& x = e.inputs[0];
  if (!x.is_var()) internal_error("LLVM lowering: an argmax/argmin operand is a literal");  // rank >= 1
  const auto& ap = std::get<ArgReduceParams>(e.params);
  const bool is_max = e.prim == Prim::argmax;
  const DType d = dtype_of(x);
  const DType od = type(e.outputs[0]).dtype;
  const Dims xd = dims_of(x.var);
  const std::size_t r = xd.size(), a = static_cast<std::size_t>(ap.axes.at(0));
  llvm::Value* n = xd[a];
  llvm::Value* inner = numel(xd, a + 1);
  const bool flat = !needs_multi(x);
  std::vector<llvm::Value*> multi(r, nullptr);
  // x at (outer linear index ol, position k along the axis, inner linear index il).
  auto element = [&](llvm::Value* ol, llvm::Value* k, llvm::Value* il) -> llvm::Value* {
    multi[a] = k;
    llvm::Value* l = E.add(b.CreateMul(E.add(b.CreateMul(ol, n, "", true, true), k), inner, "", true, true), il);
    return operand(x, flat ? body_ix(xd, {}, l) : body_ix(xd, multi, l));
  };
  auto better = [&](llvm::Value* v, llvm::Value* best) -> llvm::Value* {
    if (is_float(d)) {
      llvm::Value* cmp = is_max ? b.CreateFCmpOGT(v, best) : b.CreateFCmpOLT(v, best);
      return b.CreateAnd(b.CreateFCmpORD(best, best), b.CreateOr(cmp, b.CreateFCmpUNO(v, v)));
    }
    if (d == DType::bool_ || is_unsigned_integer(d)) return is_max ? b.CreateICmpUGT(v, best) : b.CreateICmpULT(v, best);
    return is_max ? b.CreateICmpSGT(v, best) : b.CreateICmpSLT(v, best);
  };
  llvm::Type* st = E.reg_type(d);
  llvm::AllocaInst* best = E.entry_alloca(st);
  llvm::AllocaInst* at = E.entry_alloca(E.i64);
  // x[ol, k] .. x[ol, k + W - 1] along the last axis (il is 0): a vector
  // load from a buffer, else the fused expression per lane (packed by SLP).
  const bool blocks = a + 1 == r && d != DType::bool_;
  const auto W = static_cast<std::int64_t>(32 / dtype_size(d));
  const std::int64_t vectors = std::max<std::int64_t>(1, kArgBlockElems / W), block = W * vectors;
  const bool from_buffer = buf_[static_cast<std::size_t>(x.var)] && !plan_.row_local[static_cast<std::size_t>(x.var)];
  auto* vt = llvm::FixedVectorType::get(st, static_cast<unsigned>(W));
  auto vector_at = [&](llvm::Value* ol, llvm::Value* k) -> llvm::Value* {
    if (from_buffer)
      return b.CreateAlignedLoad(
          vt, E.elem_ptr(buf_[static_cast<std::size_t>(x.var)], d, E.add(b.CreateMul(ol, n, "", true, true), k)),
          llvm::Align(dtype_size(d)));
    llvm::Value* v = llvm::PoisonValue::get(vt);
    for (std::int64_t l = 0; l < W; ++l)
      v = b.CreateInsertElement(v, element(ol, E.add(k, E.c64(l)), E.c64(0)), static_cast<std::uint64_t>(l));
    return v;
  };
  // Whether some lane of v may be better than bv (splat): better, or a NaN.
  auto maybe_better = [&](llvm::Value* v, llvm::Value* bv) -> llvm::Value* {
    if (is_float(d)) return is_max ? b.CreateFCmpUGT(v, bv) : b.CreateFCmpULT(v, bv);
    return better(v, bv);
  };
  // The sequential scan of positions [k0, k0 + count).
  auto scan_range = [&](llvm::Value* ol, llvm::Value* il, llvm::Value* k0, llvm::Value* count) {
    E.loop(count, [&](llvm::Value* s) {
      llvm::Value* k = b.CreateAdd(k0, s, "", true, true);
      llvm::Value* v = element(ol, k, il);
      llvm::Value* bv = b.CreateLoad(st, best);
      llvm::Value* take = better(v, bv);
      b.CreateStore(b.CreateSelect(take, v, bv), best);
      b.CreateStore(b.CreateSelect(take, k, b.CreateLoad(E.i64, at)), at);
    });
  };
  // A block with a better element: its extremum m (no NaN in it: a
  // vector reduction; else the scalar scan finds the first NaN) becomes the
  // best, at the first position holding m (a compare mask over the block,
  // count trailing zeros): what the sequential scan ends the block with
  // (equal elements are not better; -0.0 and 0.0 are equal).
  auto locate = [&](llvm::Value* ol, llvm::Value* il, llvm::Value* base, const std::vector<llvm::Value*>& vs) {
    llvm::Value* numbers = b.getTrue();
    if (is_float(d)) {
      llvm::Value* nan = nullptr;
      for (llvm::Value* v : vs) nan = nan ? b.CreateOr(nan, b.CreateFCmpUNO(v, v)) : b.CreateFCmpUNO(v, v);
      nan = b.CreateOrReduce(nan);
      numbers = b.CreateNot(nan);
      E.when(nan, [&] { scan_range(ol, il, base, E.c64(block)); });
    }
    E.when(numbers, [&] {
      const bool sgn = is_signed_integer(d);
      const llvm::Intrinsic::ID pick = is_float(d) ? (is_max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum)
                                       : sgn       ? (is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin)
                                                   : (is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin);
      llvm::Value* mv = vs[0];
      for (std::size_t u = 1; u < vs.size(); ++u) mv = b.CreateBinaryIntrinsic(pick, mv, vs[u]);
      llvm::Value* m = is_float(d) ? (is_max ? b.CreateFPMaxReduce(mv) : b.CreateFPMinReduce(mv))
                                   : (is_max ? b.CreateIntMaxReduce(mv, sgn) : b.CreateIntMinReduce(mv, sgn));
      llvm::Value* ms = b.CreateVectorSplat(static_cast<unsigned>(W), m);
      auto* mask_t = llvm::IntegerType::get(E.ctx, static_cast<unsigned>(block));
      llvm::Value* mask = nullptr;
      for (std::size_t u = 0; u < vs.size(); ++u) {
        llvm::Value* eq = is_float(d) ? b.CreateFCmpOEQ(vs[u], ms) : b.CreateICmpEQ(vs[u], ms);
        llvm::Value* bits = b.CreateZExt(b.CreateBitCast(eq, llvm::IntegerType::get(E.ctx, static_cast<unsigned>(W))), mask_t);
        bits = b.CreateShl(bits, static_cast<std::uint64_t>(static_cast<std::int64_t>(u) * W));
        mask = mask ? b.CreateOr(mask, bits) : bits;
      }
      llvm::Value* first = b.CreateZExtOrTrunc(b.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, mask, b.getTrue()), E.i64);
      b.CreateStore(m, best);
      b.CreateStore(E.add(base, first), at);
    });
  };
  llvm::Value* on_inner = inner;  // output strides: [outer, inner]
  loops(xd, 0, a, multi, E.c64(0), [&](llvm::Value* ol) {
    loops(xd, a + 1, r, multi, E.c64(0), [&](llvm::Value* il) {
      auto scan = [&] {
        b.CreateStore(element(ol, E.c64(0), il), best);
        b.CreateStore(E.c64(0), at);
        if (!blocks) return scan_range(ol, il, E.c64(1), b.CreateSub(n, E.c64(1)));
        // The block at [base, base + block): skipped unless a lane may be better.
        auto block_at = [&](llvm::Value* base) {
          llvm::Value* bv = b.CreateLoad(st, best);
          llvm::Value* splat = b.CreateVectorSplat(static_cast<unsigned>(W), bv);
          std::vector<llvm::Value*> vs;
          llvm::Value* any = nullptr;
          for (std::int64_t u = 0; u < vectors; ++u) {
            vs.push_back(vector_at(ol, E.add(base, E.c64(u * W))));
            llvm::Value* t = maybe_better(vs.back(), splat);
            any = any ? b.CreateOr(any, t) : t;
          }
          llvm::Value* hit = b.CreateOrReduce(any);
          if (is_float(d)) hit = b.CreateAnd(hit, b.CreateFCmpORD(bv, bv));  // a NaN best is final
          E.when(hit, [&] { locate(ol, il, base, vs); });
        };
        llvm::Value* nb = b.CreateUDiv(n, E.c64(block));
        E.loop(nb, [&](llvm::Value* s) { block_at(b.CreateMul(s, E.c64(block), "", true, true)); }, LoopHint::plain);
        // The tail: the last block again, ending at n, when there is one
        // (a scalar tail cost as much as the row's blocks: 20% of a
        // 1000-element row). Its first positions were seen already and are
        // not better than the best (no NaN among them, or the best would be
        // that NaN, which is final), so the block ends with the (best, index)
        // the sequential scan of the remaining positions would. Rows shorter
        // than a block: the scalar scan from position 1.
        const auto kn = Emitter::konst(n);
        llvm::Value* rem = b.CreateURem(n, E.c64(block));
        if (!kn || (*kn >= block && *kn % block != 0))
          E.when(b.CreateAnd(b.CreateICmpUGE(n, E.c64(block)), b.CreateICmpNE(rem, E.c64(0))),
                 [&] { block_at(b.CreateSub(n, E.c64(block), "", true, true)); });
        if (!kn || *kn < block)
          E.when(b.CreateICmpULT(n, E.c64(block)), [&] { scan_range(ol, il, E.c64(1), b.CreateSub(n, E.c64(1))); });
      };
      b.CreateStore(E.c64(0), at);
      if (auto k = Emitter::konst(n)) {
        if (*k > 0) scan();
      } else {
        E.when(b.CreateICmpSGT(n, E.c64(0)), scan);
      }
      llvm::Value* idx = b.CreateLoad(E.i64, at);
      if (od == DType::i32) idx = b.CreateTrunc(idx, E.reg_type(DType::i32));
      E.store(out, od, E.add(b.CreateMul(ol, on_inner, "", true, true), il), idx);
    });
  });
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
