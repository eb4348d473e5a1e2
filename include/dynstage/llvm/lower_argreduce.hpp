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
// The comparisons and selects are branch-free; along the last axis the
// reads are contiguous, along another axis strided by the inner size.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <string>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

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
  llvm::AllocaInst* best = E.entry_alloca(E.reg_type(d));
  llvm::AllocaInst* at = E.entry_alloca(E.reg_type(DType::i64));
  llvm::Value* on_inner = inner;  // output strides: [outer, inner]
  loops(xd, 0, a, multi, E.c64(0), [&](llvm::Value* ol) {
    loops(xd, a + 1, r, multi, E.c64(0), [&](llvm::Value* il) {
      b.CreateStore(E.c64(0), at);
      auto scan = [&] {
        b.CreateStore(element(ol, E.c64(0), il), best);
        E.loop(b.CreateSub(n, E.c64(1)), [&](llvm::Value* s) {
          llvm::Value* k = b.CreateAdd(s, E.c64(1), "", true, true);
          llvm::Value* v = element(ol, k, il);
          llvm::Value* bv = b.CreateLoad(E.reg_type(d), best);
          llvm::Value* take = better(v, bv);
          b.CreateStore(b.CreateSelect(take, v, bv), best);
          b.CreateStore(b.CreateSelect(take, k, b.CreateLoad(E.reg_type(DType::i64), at)), at);
        });
      };
      if (auto k = Emitter::konst(n)) {
        if (*k > 0) scan();
      } else {
        E.when(b.CreateICmpSGT(n, E.c64(0)), scan);
      }
      llvm::Value* idx = b.CreateLoad(E.reg_type(DType::i64), at);
      if (od == DType::i32) idx = b.CreateTrunc(idx, E.reg_type(DType::i32));
      E.store(out, od, E.add(b.CreateMul(ol, on_inner, "", true, true), il), idx);
    });
  });
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
