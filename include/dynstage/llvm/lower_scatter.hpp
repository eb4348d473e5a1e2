// dynstage: the loop nests of the scatters (scatter, scatter-add, -mul,
// -min, -max) and of segment_sum_offsets (below). Part of the backend implementation (DYNSTAGE_IMPLEMENTATION):
// a member of Lowering (lower.hpp).
//
// The result is a copy of the operand (one flat nest; the operand fused into
// it), then one nest over the updates in row-major order: each update element
// is combined into the element the scatter map gives (ir/index_map.hpp,
// scatter_map; its start read from the indices at the update's batch index),
// unless its window does not fit in the operand (mode FILL_OR_DROP: the
// element is skipped). The updates and indices are computed inline at each
// update element. The order and the combining operations are the eager
// kernel's (eager/kernels_index.hpp): duplicates accumulate in the same
// order, so results are bit-identical to eager. The update nest does not
// vectorise (two updates may hit one element); consecutive updates of one
// element combine in a register (a run), so a run costs one load and one
// store, not one of each per update, in the blocks of updates where runs
// occur (emit_scatter).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lower.hpp"
#include "lower_parallel.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_scatter(const Eqn& e, llvm::Value* out) {
  const int v = e.outputs[0];
  const DType d = type(v).dtype;
  const bool fl = is_float(d);
  const Dims od = dims_of(v);
  const Atom &x = e.inputs[0], &u = e.inputs[2];
  if (plan_.reuse[static_cast<std::size_t>(v)] < 0) {  // else out is x's buffer (buffers.hpp)
    count_copy(bytes_of(od, d));
    nest(od, !needs_multi(x), [&](Ix& ix) { E.store(out, d, lin(ix), operand(x, ix)); });
  }

  const Prim p = e.prim;
  auto combine = [&](llvm::Value* old, llvm::Value* upd) -> llvm::Value* {
    if (is_complex(d) && p == Prim::scatter_add)
      return E.make_complex(d, b.CreateFAdd(E.re(old), E.re(upd)), b.CreateFAdd(E.im(old), E.im(upd)));
    if (is_complex(d) && p == Prim::scatter_mul) return complex_mul(d, old, upd);
    switch (p) {
      case Prim::scatter: return upd;
      case Prim::scatter_add: return fl ? b.CreateFAdd(old, upd) : d == DType::bool_ ? b.CreateOr(old, upd) : b.CreateAdd(old, upd);
      case Prim::scatter_mul: return fl ? b.CreateFMul(old, upd) : d == DType::bool_ ? b.CreateAnd(old, upd) : b.CreateMul(old, upd);
      case Prim::scatter_min:
      case Prim::scatter_max: return max_min(p == Prim::scatter_max, d, old, upd);  // exactly eager's max/min
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
    }
    internal_error("emit_scatter: " + std::string(prim_name(p)) + " is not a scatter primitive");
  };
  const Dims ud = u.is_var() ? dims_of(u.var) : Dims{};
  count_copy(bytes_of(ud, d));
  const Dims st = strides_of(od);
  const IndexMap m = scatter_map(std::get<ScatterParams>(e.params), od.size());
  // The current run: its element's offset and combined value. kNoRun, when
  // there is none, is below any index's range: a (raw) index equal to it
  // would be dropped anyway, so the hit test below may compare raw indices.
  constexpr std::int64_t kNoRun = std::numeric_limits<std::int64_t>::min();
  llvm::Type* rt = E.reg_type(d);
  llvm::Value* cur = E.entry_alloca(E.i64);
  llvm::Value* acc = E.entry_alloca(rt);
  b.CreateStore(E.c64(kNoRun), cur);
  auto flush = [&] {
    llvm::Value* at = b.CreateLoad(E.i64, cur);
    E.when(b.CreateICmpSGE(at, E.c64(0)), [&] { E.store(out, d, at, b.CreateLoad(rt, acc)); });
  };
  // One update element: combined into its run (run == true: counting the
  // updates that start a new run in `starts`) or read, combined and written
  // back at once.
  llvm::Value* starts = E.entry_alloca(E.i64);
  // A vector's elements scattered one by one (a histogram, CSR's rows).
  const bool simple = od.size() == 1 && m.axes.size() == 1 && m.axes[0].start == AxisMap::Start::scattered &&
                      m.axes[0].out_axis < 0;
  // The update nest does not vectorise: branch on likely indices in it.
  scalar_nest_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{scalar_nest_};
  auto element = [&](Ix& ix, bool run) {
    // The update first, so that the drop test ends the element's straight-
    // line code: a likely-in-range index (likely_in_range) then branches
    // straight to the combining code.
    llvm::Value* upd = operand(u, ix);
    auto start_run = [&](llvm::Value* off) {
      flush();
      b.CreateStore(b.CreateAdd(b.CreateLoad(E.i64, starts), E.c64(1)), starts);
      b.CreateStore(off, cur);
      b.CreateStore(combine(E.load(out, d, off), upd), acc);
    };
    auto continue_run = [&] { b.CreateStore(combine(b.CreateLoad(rt, acc), upd), acc); };
    if (run && simple) {
      // One index into a vector: an index equal to the open run's element
      // continues the run, and is in range since that element is, so the
      // test comes first, on the raw index (a CSR row's updates skip the
      // wrap and the range check); the others are wrapped, checked, and
      // start a run or are dropped.
      llvm::Value* s = start_of(e, m.axes[0], 0, nullptr, &ix);
      llvm::Value* raw = E.unwrapped(s);
      E.either(b.CreateICmpEQ(raw ? raw : s, b.CreateLoad(E.i64, cur)), continue_run, [&] {
        // The wrap is computed here, off the run's path (the one above, then
        // unused, is deleted as dead code).
        if (raw) s = start_of(e, m.axes[0], 0, nullptr, &ix);
        llvm::Value* hi = b.CreateSub(od[0], E.c64(1));
        auto in_range = [&](llvm::Value* x) {
          return std::make_pair(x, b.CreateAnd(b.CreateICmpSGE(x, E.c64(0)), b.CreateICmpSLE(x, hi)));
        };
        const auto fast = E.likely_in_range(s, hi, in_range);
        const auto [start, ok] = fast ? *fast : in_range(s);
        E.when(ok, [&] { start_run(start); });
      });
      return;
    }
    llvm::Value* fits = b.getTrue();
    llvm::Value* off = E.c64(0);
    for (std::size_t k = 0; k < m.axes.size(); ++k) {
      const AxisMap& a = m.axes[k];
      llvm::Value* s = E.c64(0);
      if (a.start == AxisMap::Start::scattered) {
        s = start_of(e, a, k, nullptr, &ix);
        llvm::Value* size = a.out_axis >= 0 ? ud[static_cast<std::size_t>(a.out_axis)] : E.c64(1);
        llvm::Value* hi = b.CreateSub(od[k], size);
        auto in_range = [&](llvm::Value* x) {
          return std::make_pair(x, b.CreateAnd(b.CreateICmpSGE(x, E.c64(0)), b.CreateICmpSLE(x, hi)));
        };
        const auto fast = E.likely_in_range(s, hi, in_range);
        const auto [start, ok] = fast ? *fast : in_range(s);
        s = start;
        fits = b.CreateAnd(fits, ok);
      }
      if (a.out_axis >= 0) s = b.CreateAdd(s, axis(ix, static_cast<std::size_t>(a.out_axis)));
      off = b.CreateAdd(off, b.CreateMul(s, st[k]));
    }
    if (!run) {
      E.when(fits, [&] { E.store(out, d, off, combine(E.load(out, d, off), upd)); });
      return;
    }
    // Runs of updates to one element (a CSR row's products, sorted bins)
    // combine in a register: the element is loaded at the run's first update
    // and stored when the run ends, instead of a store and a reload per
    // update (a store-to-load chain through memory). Same order, same
    // operations: still bit-identical to eager.
    E.when(fits, [&] { E.either(b.CreateICmpEQ(off, b.CreateLoad(E.i64, cur)), continue_run, [&] { start_run(off); }); });
  };
  // Runs pay only where they occur: random indices (a histogram's bins)
  // rarely repeat, and there the run's bookkeeping made the nest 1.5x slower
  // than writing each update back at once. A one-axis update nest therefore
  // goes in blocks of kScatterBlock updates; a block uses runs when at most
  // seven eighths of the last run block's updates started a new run (the
  // count is kept where a run starts, the costly path), and every
  // kScatterProbe-th block uses them regardless, to notice runs that appear.
  // Either way the updates are combined in the same order with the same
  // operations, so the mode never changes a result's bits.
  constexpr std::int64_t kScatterBlock = 512, kScatterProbe = 16;
  const auto static_n = ud.size() == 1 ? E.konst(ud[0]) : std::nullopt;
  if (ud.size() != 1 || (static_n && *static_n <= 2 * kScatterBlock)) {
    nest(ud, false, [&](Ix& ix) { element(ix, true); });
    flush();
    return;
  }
  llvm::Value* n = ud[0];
  b.CreateStore(E.c64(0), starts);  // start with runs
  llvm::Value* blocks = b.CreateSDiv(b.CreateAdd(n, E.c64(kScatterBlock - 1)), E.c64(kScatterBlock));
  E.loop(blocks, [&](llvm::Value* blk) {
    llvm::Value* lo = b.CreateMul(blk, E.c64(kScatterBlock), "", true, true);
    llvm::Value* len = E.smin(b.CreateSub(n, lo), E.c64(kScatterBlock));
    llvm::Value* probe = b.CreateICmpEQ(b.CreateAnd(blk, E.c64(kScatterProbe - 1)), E.c64(0));
    llvm::Value* runs = b.CreateOr(probe, b.CreateICmpSLE(b.CreateMul(b.CreateLoad(E.i64, starts), E.c64(8)), E.c64(7 * kScatterBlock)));
    auto block = [&](bool run) {
      E.loop_dyn(len, [&](llvm::Value* i) { element(body_ix(ud, {}, b.CreateAdd(lo, i, "", true, true)), run); });
    };
    E.either(runs,
                [&] {
                  b.CreateStore(E.c64(0), starts);
                  block(true);
                },
                [&] {
                  flush();  // the open run's element is written before any update reads it
                  b.CreateStore(E.c64(kNoRun), cur);
                  block(false);
                });
  });
  flush();
}

// segment_sum_offsets: one loop over the m rows; per row, its range
// [lo, hi) (offsets r and r + 1, clamped into [0, n]; offset r + 1 is
// carried to the next row) and a loop over it, the data computed inline at
// each element (a gather x[cols] * vals is fused: no temporary) and summed
// in order into a register from 0, as the eager kernel does, so results are
// bit-identical (float sums do not vectorise: reassociation would change
// them; integer ones do). An empty or reversed range runs no iteration.
// Whole rows a task on every core (lower_parallel.hpp's regions).
inline void Lowering::emit_segment_sum(const Eqn& e, llvm::Value* out) {
  const int v = e.outputs[0];
  const DType d = type(v).dtype;
  const Atom &x = e.inputs[0], &o = e.inputs[1];
  if (!x.is_var() || !o.is_var()) internal_error("LLVM lowering: a segment_sum_offsets operand is a literal");
  const Dims xd = dims_of(x.var), ofd = dims_of(o.var);
  llvm::Value* n = xd[0];
  llvm::Value* m = dims_of(v)[0];
  const DType odt = type(o.var).dtype;
  const bool fl = is_inexact(d);
  scalar_nest_ = fl;  // a gather in the data then branches on its likely in-range index
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{scalar_nest_};
  auto offset = [&](llvm::Value* i) {
    llvm::Value* r = operand(o, body_ix(ofd, {}, i));
    r = odt == DType::i64 ? r : b.CreateSExt(r, E.i64);
    return E.smin(E.smax(r, E.c64(0)), n);
  };
  auto add = [&](llvm::Value* acc, llvm::Value* val) -> llvm::Value* {
    if (is_complex(d)) return E.make_complex(d, b.CreateFAdd(E.re(acc), E.re(val)), b.CreateFAdd(E.im(acc), E.im(val)));
    return fl ? b.CreateFAdd(acc, val) : b.CreateAdd(acc, val);
  };
  llvm::Value* zero = is_complex(d) ? E.make_complex(d, E.number(real_dtype(d), 0.0), E.number(real_dtype(d), 0.0))
                                    : E.number(d, 0.0);
  // Rows [begin, end), begin < end: their registers are allocas of the
  // function being emitted (a task's own in a parallel region).
  auto rows = [&](llvm::Value* begin, llvm::Value* end) {
    llvm::AllocaInst* prev = E.entry_alloca(E.i64);
    llvm::AllocaInst* acc = E.entry_alloca(E.reg_type(d));
    b.CreateStore(offset(begin), prev);
    E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
      llvm::Value* r = b.CreateAdd(begin, i, "", true, true);
      llvm::Value* lo = b.CreateLoad(E.i64, prev);
      llvm::Value* hi = offset(b.CreateAdd(r, E.c64(1), "", true, true));
      b.CreateStore(hi, prev);
      b.CreateStore(zero, acc);
      E.loop(b.CreateSub(hi, lo), [&](llvm::Value* k) {
        llvm::Value* val = operand(x, body_ix(xd, {}, b.CreateAdd(lo, k, "", true, true)));
        b.CreateStore(add(b.CreateLoad(E.reg_type(d), acc), val), acc);
      }, fl ? LoopHint::plain : LoopHint::normal);
      E.store(out, d, r, b.CreateLoad(E.reg_type(d), acc));
    });
  };
  // Rows are independent: on every core, whole rows a task, about
  // kCheapTaskElems data elements each (by the mean row length); every
  // row is the same loop, so results do not depend on the thread count.
  if (worth_parallel(E.add(n, m), kCheapTaskElems)) {
    llvm::Value* mean_row = b.CreateSDiv(n, E.smax(m, E.c64(1)));
    parallel_tasks(m, rows_per_task(mean_row, kCheapTaskElems),
                   [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) { rows(begin, end); });
    return;
  }
  if (const auto k = Emitter::konst(m)) {
    if (*k > 0) rows(E.c64(0), m);
  } else {
    E.when(b.CreateICmpSGT(m, E.c64(0)), [&] { rows(E.c64(0), m); });
  }
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
