// dynstage: the roots whose loops run on every core.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). Each builds a parallel region (parallel.hpp) whose
// tasks are fixed by the problem size:
//   - an elementwise root: kTaskElems output elements a task (flat; four
//     times as many when no element calls a transcendental function), or
//     whole outermost rows (nests that need multi-indices);
//   - a reduction to one value (sum of squares): per-task partial results
//     into a temporary, then combined in task order on the calling thread, so
//     the result is the same for every thread count;
//   - a reduction over the inner axes of a matrix: whole output rows a task;
//   - a row group (fusion rule 4, e.g. softmax over rows): whole rows a
//     task, each task with one-row buffers of its own.
// Each returns false (and emits nothing) where it does not apply: the
// sequential nest of lower_roots.hpp runs instead. Static work below two
// tasks' worth is never outlined, so small kernels are unchanged.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <vector>

#include "lower.hpp"
#include "parallel.hpp"
#include "stream.hpp"

namespace dyn::detail::llvmjit {

inline bool Lowering::worth_parallel(llvm::Value* work, std::int64_t per) const {
  if (auto k = Emitter::konst(work)) return *k >= 2 * per;
  return true;  // a run-time size: one task when small, run on the calling thread
}

// Elements per task for loops computing these values (parallel.hpp).
inline std::int64_t Lowering::task_elems(const std::vector<Atom>& computed) {
  for (const Atom& a : computed)
    if (calls_transcendental(a)) return kTaskElems;
  return kCheapTaskElems;
}

// Tasks of `per` units over [0, n): body(task, begin, end) for each.
inline void Lowering::parallel_tasks(llvm::Value* n, llvm::Value* per, const TaskBody& body) {
  const auto memo = memo_;
  const auto remaps = remaps_;
  Ix* const scalar = scalar_ix_;
  parallel_region(E, task_count(E, n, per), [&](llvm::Value* lo, llvm::Value* hi) {
    E.loop(b.CreateSub(hi, lo), [&](llvm::Value* i) {
      llvm::Value* task = b.CreateAdd(lo, i, "", true, true);
      llvm::Value* begin = b.CreateMul(task, per, "", true, true);
      body(task, begin, E.smin(n, b.CreateAdd(begin, per, "", true, true)));
    });
  });
  // Values computed inside the region belong to its function.
  memo_ = memo;
  remaps_ = remaps;
  scalar_ix_ = scalar;
}

// max(1, per / row): rows of `row` elements a task.
inline llvm::Value* Lowering::rows_per_task(llvm::Value* row, std::int64_t per) {
  return E.smax(b.CreateUDiv(E.c64(per), E.smax(row, E.c64(1))), E.c64(1));
}

inline bool Lowering::emit_parallel_elementwise(const Eqn& e, llvm::Value* out) {
  const int v = e.outputs[0];
  const Dims dims = dims_of(v);
  llvm::Value* n = numel(dims);
  const std::int64_t per = is_transcendental(e.prim) ? kTaskElems : task_elems(e.inputs);
  if (dims.empty() || !worth_parallel(n, per)) return false;
  const DType od = type(v).dtype;
  if (flat_root(e)) {
    parallel_tasks(n, E.c64(per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
      emit_streamed_range(E, out, od, stream_total(v, n), begin, b.CreateSub(end, begin),
                          [&](llvm::Value* k) { return fused(e, body_ix(dims, {}, k)); });
    });
    return true;
  }
  // Whole rows of the outermost axis a task; the nest of each row as before.
  llvm::Value* row = numel(dims, 1);
  parallel_tasks(dims[0], rows_per_task(row, per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
    std::vector<llvm::Value*> multi(dims.size());
    E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
      multi[0] = b.CreateAdd(begin, i, "", true, true);
      loops(dims, 1, dims.size(), multi, multi[0], [&](llvm::Value* l) {
        Ix& ix = body_ix(dims, multi, l);
        E.store(out, od, lin(ix), fused(e, ix));
      });
    });
  });
  return true;
}

inline bool Lowering::emit_parallel_group(const RowGroup& g) {
  if (g.row_dims.size() != 1) return false;
  const Dims rows = dims_of(Type{DType::i64, g.row_dims, false});
  // The longest row of a member's operand or result: the work of one row.
  llvm::Value* row = E.c64(1);
  std::vector<Atom> computed;
  bool transcendental = false;
  for (int ei : g.members) {
    const Eqn& e = j_.eqns[static_cast<std::size_t>(ei)];
    computed.insert(computed.end(), e.inputs.begin(), e.inputs.end());
    transcendental = transcendental || is_transcendental(e.prim);
    row = E.smax(row, numel(dims_of(e.outputs[0]), 1));
    if (!e.inputs.empty() && e.inputs[0].is_var() && type(e.inputs[0].var).rank() >= 1)
      row = E.smax(row, numel(dims_of(e.inputs[0].var), 1));
  }
  const std::int64_t per = transcendental ? kTaskElems : task_elems(computed);
  if (!worth_parallel(E.mul(rows[0], row), per)) return false;
  parallel_tasks(rows[0], rows_per_task(row, per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
    // One-row buffers of this task's own (the kernel's are shared by all).
    std::vector<std::pair<std::size_t, llvm::Value*>> shared;
    for (int ei : g.members) {
      const int v = j_.eqns[static_cast<std::size_t>(ei)].outputs[0];
      const auto vs = static_cast<std::size_t>(v);
      if (!plan_.row_local[vs]) continue;
      shared.emplace_back(vs, buf_[vs]);
      buf_[vs] = E.temp(bytes_of(dims_of(v), type(v).dtype, 1));
    }
    E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
      llvm::Value* l = b.CreateAdd(begin, i, "", true, true);
      emit_group_row(g, Row{{l}, l});
    });
    for (auto& [vs, p] : shared) {
      E.release(buf_[vs]);
      buf_[vs] = p;
    }
  });
  for (int ei : g.members) rowoff_[static_cast<std::size_t>(j_.eqns[static_cast<std::size_t>(ei)].outputs[0])] = nullptr;
  return true;
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
