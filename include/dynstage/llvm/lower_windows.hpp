// dynstage: window writes: concatenate and dynamic_update_slice roots.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). A window primitive writes each input into its box of
// the output (the window form of ir/index_map.hpp): a concatenate's pieces
// (with its twin's, in the same nests), an in-place update's window alone
// (buffers.hpp), or, for an update into a buffer of its own, one pass over
// the output's rows (emit_update_pass).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <set>
#include <vector>

#include "lower.hpp"
#include "lower_parallel.hpp"
#include "stream.hpp"

namespace dyn::detail::llvmjit {

// Where input k of window primitive e starts in e's output, per axis (the
// window form of its index map): a concatenate's offsets, an update's
// starts clamped so that the box fits.
inline std::vector<llvm::Value*> Lowering::window_starts(const Eqn& e, std::size_t k) {
  if (!e.inputs[k].is_var()) return {};  // a literal update: rank 0, no axes
  const Dims od = dims_of(e.outputs[0]), ud = dims_of(e.inputs[k].var);
  const IndexMap m = index_map(j_, e, k);
  std::vector<llvm::Value*> start;
  for (std::size_t i = 0; i < ud.size(); ++i) {
    const AxisMap& a = m.axes[i];
    start.push_back(start_of(e, a, i, a.start == AxisMap::Start::clamped ? b.CreateSub(od[i], ud[i]) : nullptr));
  }
  return start;
}

// Input k of window primitives written into its box of their outputs (the
// window form of the index map): output index = input index + start. The
// windows share the first one's shapes and starts (concatenate_twin).
inline void Lowering::emit_windows(const std::vector<Window>& ws, std::size_t k) {
  const Eqn& e = *ws.front().e;
  const Dims od = dims_of(e.outputs[0]);
  const Atom& u = e.inputs[k];
  const Dims ud = u.is_var() ? dims_of(u.var) : Dims{};
  begin_body();
  const std::vector<llvm::Value*> start = window_starts(e, k);
  const auto ost = strides_of(od);
  if (ws.size() == 1 && !ud.empty()) {
    // Row by row (the innermost axis is contiguous in the output), each row
    // a streamed range when what this root writes is large (stream.hpp): a
    // concatenate's whole output, a dynamic_update_slice's update (a small
    // update of a large carry, read again by the next iteration, stays in
    // the cache).
    const std::size_t r = ud.size();
    const DType d = type(e.outputs[0]).dtype;
    llvm::Value* written = stream_total(e.outputs[0], e.prim == Prim::concatenate ? numel(od) : numel(ud));
    std::vector<llvm::Value*> multi(r);
    loops(ud, 0, r - 1, multi, E.c64(0), [&](llvm::Value* l) {
      llvm::Value* o = start[r - 1];
      for (std::size_t i = 0; i + 1 < r; ++i)
        o = b.CreateAdd(o, b.CreateMul(b.CreateAdd(multi[i], start[i], "", true, true), ost[i], "", true, true), "",
                        true, true);
      emit_streamed_range(E, ws.front().out, d, written, o, ud[r - 1], [&](llvm::Value* at) {
        multi[r - 1] = b.CreateSub(at, o, "", true, true);
        return operand(u, body_ix(ud, multi, lin_step(l, ud[r - 1], multi[r - 1])));
      });
    });
    return;
  }
  nest(ud, false, [&](Ix& ix) {
    llvm::Value* o = E.c64(0);
    for (std::size_t i = 0; i < ud.size(); ++i) {
      llvm::Value* at = Emitter::is_k(start[i], 0) ? axis(ix, i) : b.CreateAdd(axis(ix, i), start[i], "", true, true);
      o = b.CreateAdd(o, b.CreateMul(at, ost[i], "", true, true), "", true, true);
    }
    for (const Window& w : ws) E.store(w.out, type(w.e->outputs[0]).dtype, o, operand(w.e->inputs[k], ix));
  });
}

// concatenate: each operand into its box (with its twin's, in the same
// nests). dynamic_update_slice in place (out is the operand's buffer,
// buffers.hpp): the update over its box; otherwise one pass.
inline void Lowering::emit_window_root(const Eqn& e, llvm::Value* out, const Window* twin) {
  if (e.prim == Prim::concatenate) {
    std::vector<Window> ws{{&e, out}};
    if (twin) ws.push_back(*twin);
    for (std::size_t k = 0; k < e.inputs.size(); ++k) emit_windows(ws, k);
    return;
  }
  if (plan_.reuse[static_cast<std::size_t>(e.outputs[0])] < 0) return emit_update_pass(e, out);
  if (e.inputs[1].is_var()) count_copy(bytes_of(dims_of(e.inputs[1].var), type(e.outputs[0]).dtype));
  emit_windows({{&e, out}}, 1);
}

// dynamic_update_slice into a buffer of its own: one pass over the output's
// rows (every axis but the last), each row three ranges: the operand's
// elements before the window, the update's inside it, the operand's after it
// (a row outside the window: the operand's alone). Every element is written
// once, streamed when the output is large (stream.hpp), and the operand is
// read only where it shows: a copy of the operand followed by the window
// wrote the window twice and read it once for nothing. Rows are
// independent: whole outermost indices a task.
inline void Lowering::emit_update_pass(const Eqn& e, llvm::Value* out) {
  const int v = e.outputs[0];
  const DType d = type(v).dtype;
  const Dims od = dims_of(v);
  const Atom &x = e.inputs[0], &u = e.inputs[1];
  count_copy(bytes_of(od, d));
  const std::size_t r = od.size();
  begin_body();
  if (r == 0) return E.store(out, d, E.c64(0), operand(u, scalar_ix()));
  const Dims ud = dims_of(u.var);
  const std::vector<llvm::Value*> start = window_starts(e, 1);
  llvm::Value* written = stream_total(v, numel(od));
  auto row = [&](std::vector<llvm::Value*>& multi, llvm::Value* l) {
    llvm::Value* inside = b.getTrue();
    llvm::Value* ul = E.c64(0);  // the update row's linear index (used inside the window only)
    std::vector<llvm::Value*> um(r);
    for (std::size_t i = 0; i + 1 < r; ++i) {
      um[i] = b.CreateSub(multi[i], start[i]);
      inside = b.CreateAnd(inside, b.CreateICmpULT(um[i], ud[i]));
      ul = lin_step(ul, ud[i], um[i]);
    }
    llvm::Value* n = od[r - 1];
    llvm::Value* lo = b.CreateSelect(inside, start[r - 1], n);
    llvm::Value* hi = b.CreateSelect(inside, b.CreateAdd(start[r - 1], ud[r - 1], "", true, true), n);
    llvm::Value* base = b.CreateMul(l, n, "", true, true);
    auto from_x = [&](llvm::Value* at) {
      multi[r - 1] = b.CreateSub(at, base, "", true, true);
      return operand(x, body_ix(od, multi, at));
    };
    auto from_u = [&](llvm::Value* at) {
      um[r - 1] = b.CreateSub(b.CreateSub(at, base, "", true, true), start[r - 1], "", true, true);
      return operand(u, body_ix(ud, um, lin_step(ul, ud[r - 1], um[r - 1])));
    };
    emit_streamed_range(E, out, d, written, base, lo, from_x, false);
    emit_streamed_range(E, out, d, written, b.CreateAdd(base, lo), b.CreateSub(hi, lo), from_u, false);
    emit_streamed_range(E, out, d, written, b.CreateAdd(base, hi), b.CreateSub(n, hi), from_x);
  };
  std::vector<llvm::Value*> multi(r);
  const std::int64_t per = task_elems({x, u});
  if (r >= 2 && worth_parallel(numel(od), per)) {
    parallel_tasks(od[0], rows_per_task(numel(od, 1), per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
      E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
        multi[0] = b.CreateAdd(begin, i, "", true, true);
        loops(od, 1, r - 1, multi, multi[0], [&](llvm::Value* l) { row(multi, l); });
      });
    });
    return;
  }
  loops(od, 0, r - 1, multi, E.c64(0), [&](llvm::Value* l) { row(multi, l); });
}

// The twin of concatenate root i: the next root, when it is a concatenate
// of pieces of the same types along the same axis that does not read i's
// result (an FFT stage's real and imaginary parts). It is written in i's
// nests, one loop per piece for both instead of one each: half the loops
// for LLVM to compile, and each piece's index computed once. -1 if none.
inline int Lowering::concatenate_twin(std::size_t i) {
  const Eqn& e = j_.eqns[i];
  if (e.prim != Prim::concatenate || plan_.group_of[i] >= 0) return -1;
  for (std::size_t k = i + 1; k < j_.eqns.size(); ++k) {
    if (!plan_.live[k] || plan_.in_prologue[k]) continue;
    const Eqn& f = j_.eqns[k];
    if (prim_kind(f.prim) == Kind::effect || prim_kind(f.prim) == Kind::control) return -1;
    if (!plan_.materialised[static_cast<std::size_t>(f.outputs[0])]) continue;
    if (f.prim != Prim::concatenate || plan_.group_of[k] >= 0 || f.inputs.size() != e.inputs.size() ||
        std::get<ConcatenateParams>(f.params).dimension != std::get<ConcatenateParams>(e.params).dimension ||
        (!plan_.in_epilogue.empty() && plan_.in_epilogue[k] >= 0))
      return -1;
    for (std::size_t p = 0; p < e.inputs.size(); ++p) {
      const Type &a = j_.type_of(e.inputs[p]), &c = j_.type_of(f.inputs[p]);
      if (a.dtype != c.dtype || a.shape != c.shape) return -1;
    }
    std::set<int> seen;
    for (const Atom& in : f.inputs)
      if (fused_reads(in, e.outputs[0], seen)) return -1;
    return static_cast<int>(k);
  }
  return -1;
}

// Whether the fused expression of `a` reads variable v.
inline bool Lowering::fused_reads(const Atom& a, int v, std::set<int>& seen) {
  if (!a.is_var()) return false;
  if (a.var == v) return true;
  const auto as = static_cast<std::size_t>(a.var);
  if (plan_.materialised[as] || plan_.def[as] < 0 || !seen.insert(a.var).second) return false;
  for (const Atom& in : j_.eqns[static_cast<std::size_t>(plan_.def[as])].inputs)
    if (fused_reads(in, v, seen)) return true;
  return false;
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
