// dynstage: the loop nest of the cumulative primitives (cumsum, cumprod,
// cummax, cummin). Part of the backend implementation
// (DYNSTAGE_IMPLEMENTATION): a member of Lowering (lower.hpp).
//
// The operand is seen as [outer axes, the axis, inner axes]. The nest is:
// loops over the outer axes; a sequential loop along the axis (downwards
// when reversed); inside it a loop over the inner axes, flat over their
// contiguous linear index when the operand needs no multi-index:
//
//   out[o, k, i] = op(out[o, k - 1, i], x[o, k, i])    (the first k: x)
//
// so the innermost loop is elementwise over contiguous memory and vectorises
// whenever the axis is not the last one; along the last axis (inner size 1)
// the running value is a register. The operand is computed inline at each
// element (an elementwise producer is fused into this nest, never
// materialised), once per element. Order and operations are the eager
// kernel's (eager/kernels_cumulative.hpp): no reassociation, max/min as
// lax.max (NaN propagates, the later operand on ties), so the results are
// bit-identical to eager. With outer axes the scans are independent and run
// on every core, whole outermost indices a task.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <string>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_cumulative(const Eqn& e, llvm::Value* out) {
  const Atom& x = e.inputs[0];
  if (!x.is_var()) internal_error("LLVM lowering: a cumulative operand is a literal");
  const auto& cp = std::get<CumulativeParams>(e.params);
  const DType d = dtype_of(x);
  const bool fl = is_float(d);
  const Dims xd = dims_of(x.var);
  const std::size_t r = xd.size(), a = static_cast<std::size_t>(cp.axis);
  llvm::Value* n = xd[a];
  llvm::Value* inner = numel(xd, a + 1);
  const Prim p = e.prim;
  auto combine = [&](llvm::Value* acc, llvm::Value* v) -> llvm::Value* {
    switch (p) {
      case Prim::cumsum: return fl ? b.CreateFAdd(acc, v) : b.CreateAdd(acc, v);
      case Prim::cumprod: return fl ? b.CreateFMul(acc, v) : b.CreateMul(acc, v);
      case Prim::cummax:
      case Prim::cummin: return max_min(p == Prim::cummax, d, acc, v);  // exactly eager's max/min
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
    }
    internal_error("emit_cumulative: " + std::string(prim_name(p)) + " is not a cumulative primitive");
  };
  const bool flat_inner = !needs_multi(x);
  std::vector<llvm::Value*> multi(r, nullptr);
  // The index along the axis of position s of the scan.
  auto at = [&](llvm::Value* s) { return cp.reverse ? b.CreateSub(b.CreateSub(n, E.c64(1)), s) : s; };
  // The element at linear index l (multi[0, a] set): x there.
  auto element = [&](llvm::Value* l) -> llvm::Value* {
    if (flat_inner) return operand(x, body_ix(xd, {}, l));
    return operand(x, body_ix(xd, multi, l));
  };
  // The distance in linear index from one position along the axis to the previous one.
  llvm::Value* back = cp.reverse ? b.CreateNeg(inner) : inner;

  // Position s of the scan of outer index ol: all its inner elements.
  // `first`: the first position, which copies the operand.
  auto position = [&](llvm::Value* ol, llvm::Value* s, bool first, llvm::AllocaInst* acc) {
    llvm::Value* k = at(s);
    multi[a] = k;
    llvm::Value* row = E.add(b.CreateMul(ol, n, "", true, true), k);  // (outer, k) in units of `inner`
    if (acc) {  // inner size 1: the running value in a register
      for (std::size_t i = a + 1; i < r; ++i) multi[i] = E.c64(0);
      llvm::Value* v = element(row);
      if (!first) v = combine(b.CreateLoad(E.reg_type(d), acc), v);
      b.CreateStore(v, acc);
      E.store(out, d, row, v);
      return;
    }
    auto one = [&](llvm::Value* l) {
      llvm::Value* v = element(l);
      if (!first) v = combine(E.load(out, d, b.CreateSub(l, back, "", true, true)), v);
      E.store(out, d, l, v);
    };
    if (flat_inner) {
      llvm::Value* base = b.CreateMul(row, inner, "", true, true);
      E.loop(inner, [&](llvm::Value* i) { one(b.CreateAdd(base, i, "", true, true)); });
    } else {
      loops(xd, a + 1, r, multi, row, one);
    }
  };
  // The scan of outer index ol: the first position (if the axis is not
  // empty), then the others in order.
  auto scan = [&](llvm::Value* ol, llvm::AllocaInst* acc) {
    if (auto k = Emitter::konst(n)) {
      if (*k > 0) position(ol, E.c64(0), true, acc);
    } else {
      E.when(b.CreateICmpSGT(n, E.c64(0)), [&] { position(ol, E.c64(0), true, acc); });
    }
    E.loop(b.CreateSub(n, E.c64(1)), [&](llvm::Value* s) {
      position(ol, b.CreateAdd(s, E.c64(1), "", true, true), false, acc);
    });
  };
  // With outer axes, the scans are independent: whole indices of the
  // outermost axis a task (lower_parallel.hpp), each scan in one task, in
  // order, so the bits are the same for every thread count.
  const std::int64_t per = task_elems({x});
  if (a >= 1 && worth_parallel(numel(xd), per)) {
    parallel_tasks(xd[0], rows_per_task(numel(xd, 1), per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
      llvm::AllocaInst* acc = unit(inner) ? E.entry_alloca(E.reg_type(d)) : nullptr;  // the task's own
      E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
        multi[0] = b.CreateAdd(begin, i, "", true, true);
        loops(xd, 1, a, multi, multi[0], [&](llvm::Value* ol) { scan(ol, acc); });
      });
    });
    return;
  }
  llvm::AllocaInst* acc = unit(inner) ? E.entry_alloca(E.reg_type(d)) : nullptr;
  loops(xd, 0, a, multi, E.c64(0), [&](llvm::Value* ol) { scan(ol, acc); });
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
