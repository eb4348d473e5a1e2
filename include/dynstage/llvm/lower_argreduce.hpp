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
// Along the last axis (contiguous rows) the scan is vectorised by hand
// (LLVM 19's vectoriser does not vectorise a select that carries an index):
// kLanes vector accumulators of W lanes (one 32-byte vector each) run
// `better` lane-wise over chunks of W * kLanes elements, each lane keeping
// the first of its own elements, then one pass merges the lanes (better,
// or the same value at a lower index: the first occurrence overall), and
// the scalar loop above finishes the tail. The same answer as the
// sequential scan, since every lane keeps its first best and the merge
// takes the lowest index among equals (NaNs: the first NaN).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <string>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

// The vector accumulators of the lane form (4: enough to hide the latency
// of compare + two selects per vector).
inline constexpr std::size_t kArgLanes = 4;

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
    if (d == DType::bool_) return is_max ? b.CreateICmpUGT(v, best) : b.CreateICmpULT(v, best);
    return is_max ? b.CreateICmpSGT(v, best) : b.CreateICmpSLT(v, best);
  };
  // The same value, or both NaN (the lane merge's tie).
  auto same = [&](llvm::Value* v, llvm::Value* w) -> llvm::Value* {
    if (is_float(d))
      return b.CreateOr(b.CreateFCmpOEQ(v, w), b.CreateAnd(b.CreateFCmpUNO(v, v), b.CreateFCmpUNO(w, w)));
    return b.CreateICmpEQ(v, w);
  };
  llvm::Type* st = E.reg_type(d);
  llvm::AllocaInst* best = E.entry_alloca(st);
  llvm::AllocaInst* at = E.entry_alloca(E.i64);
  llvm::AllocaInst* from = E.entry_alloca(E.i64);  // where the scalar scan starts
  const bool lanes = a + 1 == r && d != DType::bool_;
  const auto W = static_cast<std::int64_t>(32 / dtype_size(d));
  const std::int64_t chunk = W * static_cast<std::int64_t>(kArgLanes);
  const bool from_buffer = buf_[static_cast<std::size_t>(x.var)] && !plan_.row_local[static_cast<std::size_t>(x.var)];
  auto* vt = llvm::FixedVectorType::get(st, static_cast<unsigned>(W));
  auto* it = llvm::FixedVectorType::get(E.i64, static_cast<unsigned>(W));
  // x[ol, k .. k+W-1] (last axis: il is 0) and the lane positions k + 0..W-1.
  auto chunk_at = [&](llvm::Value* ol, llvm::Value* k) -> llvm::Value* {
    if (from_buffer)
      return b.CreateAlignedLoad(vt, E.elem_ptr(buf_[static_cast<std::size_t>(x.var)], d, E.add(b.CreateMul(ol, n, "", true, true), k)),
                                 llvm::Align(dtype_size(d)));
    llvm::Value* v = llvm::PoisonValue::get(vt);
    for (std::int64_t l = 0; l < W; ++l)
      v = b.CreateInsertElement(v, element(ol, E.add(k, E.c64(l)), E.c64(0)), static_cast<std::uint64_t>(l));
    return v;
  };
  auto positions = [&](llvm::Value* k) -> llvm::Value* {
    std::vector<llvm::Constant*> steps;
    for (std::int64_t l = 0; l < W; ++l) steps.push_back(E.b.getInt64(static_cast<std::uint64_t>(l)));
    return b.CreateAdd(b.CreateVectorSplat(static_cast<unsigned>(W), k), llvm::ConstantVector::get(steps));
  };
  auto lane_scan = [&](llvm::Value* ol, llvm::Value* nv) {
    std::vector<llvm::AllocaInst*> vb(kArgLanes), va(kArgLanes);
    for (std::size_t u = 0; u < kArgLanes; ++u) {
      vb[u] = E.entry_alloca(vt);
      va[u] = E.entry_alloca(it);
      llvm::Value* k = E.c64(static_cast<std::int64_t>(u) * W);
      b.CreateStore(chunk_at(ol, k), vb[u]);
      b.CreateStore(positions(k), va[u]);
    }
    E.loop(b.CreateSub(b.CreateUDiv(nv, E.c64(chunk)), E.c64(1)), [&](llvm::Value* s) {
      llvm::Value* base = b.CreateMul(b.CreateAdd(s, E.c64(1), "", true, true), E.c64(chunk), "", true, true);
      for (std::size_t u = 0; u < kArgLanes; ++u) {
        llvm::Value* k = E.add(base, E.c64(static_cast<std::int64_t>(u) * W));
        llvm::Value* v = chunk_at(ol, k);
        llvm::Value* cur = b.CreateLoad(vt, vb[u]);
        llvm::Value* take = better(v, cur);
        b.CreateStore(b.CreateSelect(take, v, cur), vb[u]);
        b.CreateStore(b.CreateSelect(take, positions(k), b.CreateLoad(it, va[u])), va[u]);
      }
    }, LoopHint::plain);
    llvm::Value* bv = nullptr;
    llvm::Value* bi = nullptr;
    for (std::size_t u = 0; u < kArgLanes; ++u) {
      llvm::Value* vs = b.CreateLoad(vt, vb[u]);
      llvm::Value* is = b.CreateLoad(it, va[u]);
      for (std::int64_t l = 0; l < W; ++l) {
        llvm::Value* v = b.CreateExtractElement(vs, static_cast<std::uint64_t>(l));
        llvm::Value* i = b.CreateExtractElement(is, static_cast<std::uint64_t>(l));
        if (!bv) {
          bv = v, bi = i;
          continue;
        }
        llvm::Value* take = b.CreateOr(better(v, bv), b.CreateAnd(same(v, bv), b.CreateICmpSLT(i, bi)));
        bv = b.CreateSelect(take, v, bv);
        bi = b.CreateSelect(take, i, bi);
      }
    }
    b.CreateStore(bv, best);
    b.CreateStore(bi, at);
    b.CreateStore(nv, from);
  };
  llvm::Value* on_inner = inner;  // output strides: [outer, inner]
  loops(xd, 0, a, multi, E.c64(0), [&](llvm::Value* ol) {
    loops(xd, a + 1, r, multi, E.c64(0), [&](llvm::Value* il) {
      auto scan = [&] {
        b.CreateStore(element(ol, E.c64(0), il), best);
        b.CreateStore(E.c64(0), at);
        b.CreateStore(E.c64(1), from);
        if (lanes) {
          llvm::Value* nv = b.CreateMul(b.CreateUDiv(n, E.c64(chunk)), E.c64(chunk));
          if (auto k = Emitter::konst(nv)) {
            if (*k > 0) lane_scan(ol, nv);
          } else {
            E.when(b.CreateICmpSGT(nv, E.c64(0)), [&] { lane_scan(ol, nv); });
          }
        }
        llvm::Value* k0 = b.CreateLoad(E.i64, from);
        E.loop(b.CreateSub(n, k0), [&](llvm::Value* s) {
          llvm::Value* k = b.CreateAdd(k0, s, "", true, true);
          llvm::Value* v = element(ol, k, il);
          llvm::Value* bv = b.CreateLoad(st, best);
          llvm::Value* take = better(v, bv);
          b.CreateStore(b.CreateSelect(take, v, bv), best);
          b.CreateStore(b.CreateSelect(take, k, b.CreateLoad(E.i64, at)), at);
        });
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
