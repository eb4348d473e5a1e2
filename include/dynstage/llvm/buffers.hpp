// dynstage: buffer assignment, the part of the fusion planner that lets an
// update reuse its operand's buffer (no LLVM here). docs/backend.md,
// "Buffer assignment", describes it for users; this is the rule.
//
// A dynamic_update_slice or scatter copies its operand into its result and
// then writes the update; a loop (for_loop, while_loop, scan) starts from a
// copy of its initial state. Both copies are of the whole array. When
// nothing reads the operand's old value afterwards, the result may take the
// operand's buffer over instead (XLA's buffer assignment: a value may share
// its operand's buffer when the operand's live range ends at that use; JAX's
// donation is the same for arguments). The planner records this as
// `reuse[v] = x`: v's buffer IS x's buffer, and the lowering skips the copy.
//
// v = update(x, ...) takes x's buffer over when
//   - x is OWNED by the function: a temporary it computes (not an output:
//     a result buffer is the caller's), a donated argument of the kernel
//     (dyn::donate_argnums), or a loop body's carried input that the loop
//     runs in place (below); never an ordinary argument;
//   - x's buffer is last read by this equation (plan.last_read, which
//     follows the fused expressions of every later nest to the buffers they
//     read, views through reshapes and slices included);
//   - x is not read by the same equation's other nests: an update or
//     scatter index whose fused expression reads x (row i+1 computed from
//     row i) is materialised first ("read by an in-place update"), so every
//     read of the old value happens before the first write; a loop whose
//     other operands include x keeps its copy;
//   - v is not a result of the function, unless the result is PAIRED with
//     the argument x's chain starts from (below);
//   - for a dynamic_update_slice whose update reads x elsewhere than at the
//     element it writes: the update holds less than half of x's elements.
//     In place, such an update is first written to a temporary and copied
//     into x (4 accesses per update element: x read, the temporary written
//     and read, x written); into a buffer of its own the lowering writes
//     each element of the result once and reads x only outside the window
//     (2 per element of x). A stencil step `dus(u, stencil(u), {0, 1})` so
//     moves half the memory; in a loop its state is double buffered.
// A reused buffer is freed after the last read of whichever value holds it
// last (last_read is extended along the chain at the end).
//
// Pairs. A loop body runs state s in place when its result s is its carried
// input s updated in place: the chain of reuses from outvar s leads back to
// invar s (through updates and inner loops); the loop then passes ONE buffer
// as both (allocated and filled once before the loop, or the operand's
// buffer taken over), so an iteration writes only what it updates. The
// candidates are given (`BufferOwnership::pair`); a candidate whose chain
// does not reach its invar is dropped and the plan computed again without it
// (its invar is then not owned: in double buffering the first iteration
// reads the loop's operand itself). Donated kernel arguments pair with a
// result of their type the same way: the host then passes the argument's
// buffer as that result's.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "backend.hpp"  // buffer_reuse()
#include "fusion_plan.hpp"

namespace dyn::detail {

// What a function may overwrite among its inputs: per invar (position in
// j.invars), whether it is owned outright (a donated argument), and per
// outvar, the invar position it is a candidate to share its buffer with
// (-1: none).
struct BufferOwnership {
  std::vector<bool> owned_invars;
  std::vector<int> pair;
  bool empty() const {
    return std::find(owned_invars.begin(), owned_invars.end(), true) == owned_invars.end() &&
           std::find_if(pair.begin(), pair.end(), [](int p) { return p >= 0; }) == pair.end();
  }
};

// Whether update type u provably holds at least half the elements of x.
// (Sizes with different run-time factors never compare: false.)
inline bool covers_half(const Type& u, const Type& x) {
  const SymNumel a = sym_numel(u), b = sym_numel(x);
  return a.vars == b.vars && 2 * a.k >= b.k;
}

// The same buffer layout: dtype and shape (weak typing aside).
inline bool same_type(const Type& a, const Type& b) { return a.dtype == b.dtype && a.shape == b.shape; }

inline bool is_loop_prim(Prim p) { return p == Prim::for_loop || p == Prim::while_loop || p == Prim::scan; }

// Operand index of state s of loop equation e (the layouts above
// ForLoopParams in ir/params.hpp), and the number of state values.
inline std::size_t loop_state_operand(const Eqn& e, std::size_t s) {
  if (e.prim == Prim::for_loop) {
    const auto& p = std::get<ForLoopParams>(e.params);
    const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
    return s >= ni ? nc + s + 4 : nc + s;
  }
  if (e.prim == Prim::scan) return static_cast<std::size_t>(std::get<ScanParams>(e.params).num_consts) + s;
  const auto& p = std::get<WhileLoopParams>(e.params);
  return static_cast<std::size_t>(p.cond_nconsts + p.body_nconsts) + s;
}
inline std::size_t loop_num_state(const Eqn& e) {
  return e.prim == Prim::scan ? static_cast<std::size_t>(std::get<ScanParams>(e.params).num_carry) : e.outputs.size();
}

namespace fusion_detail {

// One round of buffer assignment on a plan whose materialisation and
// last_read are final. Returns false when it materialised an update that
// read its operand: the caller then recomputes rule 3 and calls it again.
inline bool assign_buffers(const Jaxpr& j, FusionPlan& plan, const BufferOwnership& own) {
  const std::size_t nv = j.types.size(), ne = j.eqns.size();
  plan.reuse.assign(nv, -1);
  if (!buffer_reuse().load(std::memory_order_relaxed)) {
    plan.paired.assign(j.outvars.size(), -1);
    return true;
  }
  std::vector<bool> owned(nv, false), is_out(nv, false);
  std::vector<int> invar_pos(nv, -1);
  for (std::size_t m = 0; m < j.invars.size(); ++m) invar_pos[static_cast<std::size_t>(j.invars[m])] = static_cast<int>(m);
  for (const Atom& a : j.outvars)
    if (a.is_var()) is_out[static_cast<std::size_t>(a.var)] = true;
  for (std::size_t m = 0; m < j.invars.size(); ++m) {
    const bool paired = std::find(own.pair.begin(), own.pair.end(), static_cast<int>(m)) != own.pair.end();
    if ((m < own.owned_invars.size() && own.owned_invars[m]) || paired) owned[static_cast<std::size_t>(j.invars[m])] = true;
  }
  for (std::size_t v = 0; v < nv; ++v)
    if (plan.def[v] >= 0 && plan.materialised[v] && !is_out[v] && !plan.dim_var[v] && j.types[v].rank() > 0)
      owned[v] = true;
  auto root = [&](int x) {
    while (plan.reuse[static_cast<std::size_t>(x)] >= 0) x = plan.reuse[static_cast<std::size_t>(x)];
    return x;
  };
  // Whether v may take x's buffer over as far as results go: v is no result,
  // or a result paired with the argument x's chain starts from.
  auto result_ok = [&](int v, int x) {
    if (!is_out[static_cast<std::size_t>(v)]) return true;
    const int r = invar_pos[static_cast<std::size_t>(root(x))];
    for (std::size_t k = 0; k < j.outvars.size(); ++k)
      if (j.outvars[k].is_var() && j.outvars[k].var == v && k < own.pair.size() && own.pair[k] >= 0 && own.pair[k] == r) return true;
    return false;
  };
  auto same_atom = [](const Atom& a, const Atom& b) {
    return a.is_var() ? b.is_var() && a.var == b.var : !b.is_var() && a.lit.i == b.lit.i && a.lit.f == b.lit.f && a.lit.fi == b.lit.fi;
  };
  // Whether the fused expression of `a`, an input of update equation `upd`,
  // reads x's buffer anywhere but at the element the update writes: the
  // read-modify-write `x.at[i].set(f(x[i]))`, a dynamic_slice of x at the
  // dynamic_update_slice's own starts and of the update's type reached through
  // elementwise operations only (`same`), reads each element just before the
  // nest stores it, in the same iteration: no hazard.
  std::function<bool(const Atom&, int, const Eqn&, bool)> reads = [&](const Atom& a, int x, const Eqn& upd,
                                                                       bool same) -> bool {
    if (!a.is_var()) return false;
    if (a.var == x) return true;
    const auto vs = static_cast<std::size_t>(a.var);
    if (plan.materialised[vs] || plan.def[vs] < 0) return false;
    const Eqn& d = j.eqns[static_cast<std::size_t>(plan.def[vs])];
    if (same && upd.prim == Prim::dynamic_update_slice && d.prim == Prim::dynamic_slice && d.inputs[0].is_var() &&
        d.inputs[0].var == x && same_type(j.types[vs], j.type_of(upd.inputs[1])) && d.inputs.size() == upd.inputs.size() - 1) {
      bool starts = true;
      for (std::size_t k = 1; k < d.inputs.size(); ++k) starts = starts && same_atom(d.inputs[k], upd.inputs[k + 1]);
      if (starts) {
        for (std::size_t k = 1; k < d.inputs.size(); ++k)
          if (reads(d.inputs[k], x, upd, false)) return true;
        return false;
      }
    }
    const Kind kind = prim_kind(d.prim);
    const bool elementwise = kind == Kind::unary || kind == Kind::binary || kind == Kind::compare ||
                             kind == Kind::select || kind == Kind::convert;
    for (const Atom& in : d.inputs)
      if (reads(in, x, upd, same && elementwise && (!in.is_var() || j.types[static_cast<std::size_t>(in.var)] .shape == j.types[vs].shape)))
        return true;
    return false;
  };
  bool stable = true;
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i]) continue;
    if (e.prim == Prim::dynamic_update_slice || prim_kind(e.prim) == Kind::scatter) {
      const Atom& x = e.inputs[0];
      const int v = e.outputs[0];
      if (!x.is_var() || !owned[static_cast<std::size_t>(x.var)] || plan.last_read[static_cast<std::size_t>(x.var)] != static_cast<int>(i) ||
          !same_type(j.type_of(x), j.types[static_cast<std::size_t>(v)]) || !result_ok(v, x.var))
        continue;
      // The inputs read while the result is written: the update (dus) or
      // the indices and updates (scatter, read per update element).
      const std::size_t hi = e.prim == Prim::dynamic_update_slice ? 2 : 3;
      bool direct = false;
      for (std::size_t k = 1; k < hi; ++k) direct = direct || (e.inputs[k].is_var() && e.inputs[k].var == x.var);
      if (direct) continue;
      if (e.prim == Prim::dynamic_update_slice && reads(e.inputs[1], x.var, e, true) &&
          covers_half(j.type_of(e.inputs[1]), j.type_of(x)))
        continue;  // one pass into a buffer of its own (below)
      for (std::size_t k = 1; k < hi; ++k)
        if (reads(e.inputs[k], x.var, e, k == 1)) {
          plan.materialised[static_cast<std::size_t>(e.inputs[k].var)] = true;
          plan.why[static_cast<std::size_t>(e.inputs[k].var)] = "read by an in-place update";
          stable = false;
        }
      plan.reuse[static_cast<std::size_t>(v)] = x.var;
      owned[static_cast<std::size_t>(v)] = !is_out[static_cast<std::size_t>(v)];
      continue;
    }
    if (!is_loop_prim(e.prim)) continue;
    for (std::size_t s = 0; s < loop_num_state(e); ++s) {
      const Atom& x = e.inputs[loop_state_operand(e, s)];
      const int o = e.outputs[s];
      if (!x.is_var() || !owned[static_cast<std::size_t>(x.var)] || plan.last_read[static_cast<std::size_t>(x.var)] != static_cast<int>(i) ||
          !same_type(j.type_of(x), j.types[static_cast<std::size_t>(o)]) || !result_ok(o, x.var) ||
          std::count_if(e.inputs.begin(), e.inputs.end(), [&](const Atom& a) { return a.is_var() && a.var == x.var; }) != 1)
        continue;
      plan.reuse[static_cast<std::size_t>(o)] = x.var;
    }
  }
  if (!stable) return false;
  // Confirm the pairs: outvar k's chain of reuses leads to invar pair[k].
  plan.paired.assign(j.outvars.size(), -1);
  for (std::size_t k = 0; k < j.outvars.size() && k < own.pair.size(); ++k) {
    const Atom& a = j.outvars[k];
    if (own.pair[k] < 0 || !a.is_var()) continue;
    if (root(a.var) != j.invars[static_cast<std::size_t>(own.pair[k])]) continue;
    bool first = true;  // an invar pairs with one result
    for (std::size_t q = 0; q < k; ++q) first = first && plan.paired[q] != own.pair[k];
    if (first) plan.paired[k] = own.pair[k];
  }
  // A result that holds a reused buffer is copied into its slot at the end
  // (the copy is skipped when the slot is that very buffer: a pair).
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Atom& a = j.outvars[k];
    if (a.is_var() && plan.reuse[static_cast<std::size_t>(a.var)] >= 0) {
      plan.out_slot[static_cast<std::size_t>(a.var)] = -1;
      plan.last_read[static_cast<std::size_t>(a.var)] = static_cast<int>(ne);
    }
  }
  return true;
}

// After row groups: a buffer lives until the last read of the last value
// that holds it.
inline void extend_reused_lifetimes(const Jaxpr& j, FusionPlan& plan) {
  for (std::size_t i = j.eqns.size(); i-- > 0;)
    for (int v : j.eqns[i].outputs)
      if (const int x = plan.reuse[static_cast<std::size_t>(v)]; x >= 0)
        plan.last_read[static_cast<std::size_t>(x)] =
            std::max(plan.last_read[static_cast<std::size_t>(x)], plan.last_read[static_cast<std::size_t>(v)]);
}

}  // namespace fusion_detail

// The candidate pairs of a kernel's donated arguments: result k whose value
// is, through updates (operand 0 of a dynamic_update_slice or scatter) and
// loop states, a donated argument of its own type. The plan confirms them.
inline std::vector<int> donation_pairs(const Jaxpr& j, const std::vector<bool>& donated,
                                       const std::vector<bool>& kernel_sized) {
  std::vector<int> def(j.types.size(), -1), pair(j.outvars.size(), -1);
  for (std::size_t i = 0; i < j.eqns.size(); ++i)
    for (int v : j.eqns[i].outputs) def[static_cast<std::size_t>(v)] = static_cast<int>(i);
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    if (!j.outvars[k].is_var() || (k < kernel_sized.size() && kernel_sized[k])) continue;
    Atom a = j.outvars[k];
    while (a.is_var() && def[static_cast<std::size_t>(a.var)] >= 0) {
      const Eqn& e = j.eqns[static_cast<std::size_t>(def[static_cast<std::size_t>(a.var)])];
      if (e.prim == Prim::dynamic_update_slice || prim_kind(e.prim) == Kind::scatter) {
        a = e.inputs[0];
      } else if (is_loop_prim(e.prim)) {
        const auto s = static_cast<std::size_t>(std::find(e.outputs.begin(), e.outputs.end(), a.var) - e.outputs.begin());
        if (s >= loop_num_state(e)) break;
        a = e.inputs[loop_state_operand(e, s)];
      } else {
        break;
      }
    }
    if (!a.is_var()) continue;
    const auto it = std::find(j.invars.begin(), j.invars.end(), a.var);
    if (it == j.invars.end()) continue;
    const auto m = static_cast<std::size_t>(it - j.invars.begin());
    if (m < donated.size() && donated[m] && same_type(j.type_of(a), j.type_of(j.outvars[k])) && j.type_of(a).rank() > 0)
      pair[k] = static_cast<int>(m);
  }
  return pair;
}

}  // namespace dyn::detail
