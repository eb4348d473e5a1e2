// dynstage: the fusion planner, the backend's jaxpr-level pass (no LLVM here).
// Its pieces: fusion_plan.hpp (the plan and the facts it uses),
// canonicalize.hpp (dot_general as batched matrix products, before
// planning), fusion_rows.hpp (rule 4), this file (rules 1-3 and plan_fusion).
//
//   canonicalize_dots  every dot_general becomes a batched matrix product
//                      (B,M,K) x (B,K,N) on reshaped/transposed operands
//   plan_fusion        decides which values get a buffer ("materialised");
//                      every other value is computed inline, at the index
//                      its consumer asks for, inside the consumer's loop nest
//
// Fusion rule (what the LLVM lowering relies on):
//  1. Fusible primitives: those whose table row says `fused` (ir/prims.hpp):
//     elementwise (unary, binary, compare, select_n, convert_element_type)
//     and index remaps (broadcast_in_dim, reshape, squeeze, transpose,
//     slice, dynamic_slice, gather, iota). They never get a buffer of their own
//     unless rule 3 says so.
//  2. Materialisation points (own loop nests): jaxpr inputs and outputs,
//     reductions, cumulative ops, scatters, dot_general, concatenate
//     (except the pieces of an index vector and rows of buffers, below),
//     dynamic_update_slice.
//     A dot_general operand must be a buffer: if it is not one (possibly
//     through reshapes, which keep the row-major order, and slices of
//     contiguous data: canonicalize.hpp, dot_reads_through; a transpose it
//     reads in place: fold_dot_transposes), it is materialised.
//     Except the lhs of a matrix-vector product (canonicalize.hpp,
//     dot_fuses_lhs): the matvec nest reads it once per element, so its
//     fused expression (`alpha * A`, an astype, a sum) is evaluated there;
//     and a cheap operand of a product that may run the blocked GEMM,
//     which computes it into its packed panels (fusion_gemm.hpp, which
//     also picks the elementwise root the GEMM's epilogue computes).
//     Control flow (for_loop, while_loop, cond) is a barrier: every operand
//     is materialised and every output is a buffer (the loop state or a
//     branch's results), never written into a result slot in place.
//  3. Recomputation guard: a fused value that is EXPENSIVE (its inline
//     expression, up to the buffers it reads, contains a transcendental or
//     costs >= kExpensiveCost simple operations; the cost column of the
//     table) is materialised when it would
//     be computed more than once per element: it is reached from two loop
//     nests, or from one nest through two different index maps, or through a
//     broadcast that expands it. A fused rank-0 value read by a nest of rank
//     > 0 is always materialised (one stack slot, computed once).
//     Cheap values are recomputed: re-reading a temporary costs as much
//     memory traffic as a few arithmetic operations.
//  Candidates are considered latest first, so materialising a consumer can
//  make its producers single-use again.
//  4. Row groups (plan_row_groups). A reduction over the trailing axes
//     [t, r) of its operand (the "row" axes; reduce_sum/max/min/prod) whose
//     rows hold >= kMinRowElements elements seeds a group with row space
//     P = the operand's leading axes [0, t). The roots that follow it in
//     emission order join while each one
//       - is a reduction over the trailing axes of an operand with the same
//         leading axes P, or a fusible root whose output starts with P
//         (dot_general, concatenate, dynamic_update_slice never join);
//       - reads the buffer of an earlier member (a data dependency), and
//       - reads every earlier member's buffer only within the row it is
//         computing ("row-aligned"): along the index maps of its fused
//         expression (broadcast_in_dim, reshape, transpose, slices, ...)
//         the buffer's leading non-unit axes are exactly the nest's row
//         axes, and its other axes depend on the row axes not at all.
//     A group of >= 2 members becomes one loop over the rows of P; per row
//     each member's nest runs over that row only, in order, so the row stays
//     in L1 between members. A member's temporary whose readers are all in
//     its group is ROW-LOCAL: a buffer of one row (the reduction results:
//     one scalar), allocated once for the group, never the full array.
//     Softmax, log-sum-exp, layer norms are instances, not special cases.
//  Runtime dimensions: every size comparison above is made on SymNumel
//  (static factor x dimension variables) and decided conservatively; the
//  policy is written above plan_fusion ("Unknown sizes").
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../ir/index_map.hpp"
#include "../ir/jaxpr.hpp"
#include "canonicalize.hpp"
#include "buffers.hpp"
#include "fusion_gemm.hpp"
#include "fusion_plan.hpp"
#include "fusion_rows.hpp"

namespace dyn::detail {

inline constexpr int kExpensiveCost = 20;

// Whether v is one of the ys of scan equation e (not its carry).
inline bool is_scan_ys(const Eqn& e, int v) {
  if (e.prim != Prim::scan) return false;
  const auto pos = std::find(e.outputs.begin(), e.outputs.end(), v) - e.outputs.begin();
  return pos >= std::get<ScanParams>(e.params).num_carry;
}

namespace fusion_detail {

inline int op_cost(Prim p) {
  switch (prim_info(p).cost) {
    case Cost::simple: return 1;
    case Cost::costly: return 4;
    case Cost::transcendental: return kExpensiveCost;
  }
  return 1;
}

// State of one analysis round.
struct Walk {
  const Jaxpr& j;
  FusionPlan& plan;
  std::vector<std::set<std::pair<int, int>>> keys;  // fused var -> {(nest, index map)} it is evaluated under
  std::vector<bool> expanded;                        // fused var -> evaluated under an expanding broadcast
  std::vector<bool> scalar_in_loop;                  // fused rank-0 var read by a nest of rank > 0
  std::vector<int> cost;                             // fused var -> inline cost (saturating), -1 = unknown

  explicit Walk(const Jaxpr& jj, FusionPlan& p)
      : j(jj), plan(p), keys(jj.types.size()), expanded(jj.types.size(), false),
        scalar_in_loop(jj.types.size(), false), cost(jj.types.size(), -1) {}

  bool fused(int v) const { return !plan.materialised[static_cast<std::size_t>(v)]; }

  int cost_of(int v) {
    if (!fused(v)) return 1;  // a load
    int& c = cost[static_cast<std::size_t>(v)];
    if (c >= 0) return c;
    const Eqn& e = j.eqns[static_cast<std::size_t>(plan.def[static_cast<std::size_t>(v)])];
    long total = op_cost(e.prim);
    for (std::size_t i = 0; i < num_data_inputs(e); ++i)
      if (e.inputs[i].is_var()) total += cost_of(e.inputs[i].var);
    c = static_cast<int>(std::min<long>(total, 1 << 20));
    return c;
  }

  // Visit the value `a`, evaluated by nest `nest` at index map `key`, inside
  // an iteration space of `space` elements. `order` is the nest's eqn index
  // (for last_read).
  void visit(const Atom& a, int nest, int key, const SymNumel& space, int order) {
    if (!a.is_var()) return;
    const int v = a.var;
    const auto vs = static_cast<std::size_t>(v);
    if (!fused(v)) {
      plan.last_read[vs] = std::max(plan.last_read[vs], order);
      return;
    }
    const Type& t = j.types[vs];
    if (t.rank() == 0 && space.may_exceed(1)) scalar_in_loop[vs] = true;
    if (!keys[vs].insert({nest, key}).second) return;  // already walked under this index map
    const int ei = plan.def[vs];
    const Eqn& e = j.eqns[static_cast<std::size_t>(ei)];
    switch (prim_kind(e.prim)) {
      case Kind::unary:
      case Kind::binary:
      case Kind::compare:
      case Kind::select:
      case Kind::convert:
        for (const Atom& in : e.inputs) visit(in, nest, key, space, order);
        return;
      case Kind::structural: {
        if (e.prim == Prim::broadcast_in_dim && e.inputs[0].is_var() && fused(e.inputs[0].var) &&
            expands(j.types[static_cast<std::size_t>(e.inputs[0].var)], t))
          expanded[static_cast<std::size_t>(e.inputs[0].var)] = true;
        // A gather may read an operand element, and reads an index vector,
        // more than once: expensive inputs are materialised (rule 3).
        if (e.prim == Prim::gather)
          for (std::size_t k = 0; k < 2; ++k)
            if (e.inputs[k].is_var() && fused(e.inputs[k].var)) expanded[static_cast<std::size_t>(e.inputs[k].var)] = true;
        for (std::size_t i = 0; i < num_data_inputs(e); ++i) visit(e.inputs[i], nest, ei, space, order);
        return;
      }
      case Kind::scatter:
      case Kind::reduction:
      case Kind::cumulative:
      case Kind::sort:
      case Kind::fft:
      case Kind::contraction:
      case Kind::control:
      case Kind::effect:
      case Kind::collective:
        internal_error("plan_fusion: a scatter, reduction, dot_general, control, effect or collective equation is not fusible");
    }
  }

  // Whether a broadcast from `from` to `to` repeats elements. With runtime
  // dimensions: unless the sizes are provably equal (conservative: an
  // expensive operand is then materialised rather than recomputed).
  static bool expands(const Type& from, const Type& to) { return may_grow(sym_numel(from), sym_numel(to)); }

  // Walk the nest(s) of root eqn `ei`.
  void walk_root(int ei) {
    const Eqn& e = j.eqns[static_cast<std::size_t>(ei)];
    if (prim_kind(e.prim) == Kind::effect) {  // reads its operands' buffers (no outputs)
      for (const Atom& a : e.inputs) visit(a, ei, -1, sym_numel(j.type_of(a)), ei);
      return;
    }
    const SymNumel space = sym_numel(j.types[static_cast<std::size_t>(e.outputs[0])]);
    switch (e.prim) {
      case Prim::dot_general:
        if (dot_fuses_lhs(j, e)) {  // the matvec nest evaluates the fused lhs once per element
          visit(e.inputs[0], ei, -2, sym_numel(j.type_of(e.inputs[0])), ei);
          visit(e.inputs[1], ei, -1, space, ei);
          return;
        }
        if (dot_may_block(j, e)) {  // fused operands: evaluated where the GEMM packs them
          for (std::size_t k = 0; k < 2; ++k) visit(e.inputs[k], ei, -2 - static_cast<int>(k), sym_numel(j.type_of(e.inputs[k])), ei);
          return;
        }
        [[fallthrough]];
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL)
        for (const Atom& a : e.inputs) visit(a, ei, -1, space, ei);  // operands are buffers by now
        return;
      case Prim::concatenate:
        // One nest per operand: distinct keys.
        for (std::size_t k = 0; k < e.inputs.size(); ++k)
          visit(e.inputs[k], ei, -2 - static_cast<int>(k), sym_numel(j.type_of(e.inputs[k])), ei);
        return;
      case Prim::dynamic_update_slice:
        visit(e.inputs[0], ei, -2, space, ei);
        for (std::size_t k = 1; k < e.inputs.size(); ++k)
          visit(e.inputs[k], ei, -2 - static_cast<int>(k), sym_numel(j.type_of(e.inputs[k])), ei);
        return;
      DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
        // The copy of the operand; the nest over the updates.
        visit(e.inputs[0], ei, -2, space, ei);
        for (std::size_t k = 1; k < 3; ++k) visit(e.inputs[k], ei, -3, sym_numel(j.type_of(e.inputs[2])), ei);
        return;
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)  // (each operand element read once)
      case Prim::top_k:                          // (a buffer: marked in plan_fusion)
      case Prim::fft:                            // (a buffer: marked in plan_fusion)
        if (e.prim == Prim::segment_sum_offsets) {
          // The data once per element (its nest); the offsets once per row,
          // but an expensive offsets expression is materialised (rule 3).
          visit(e.inputs[0], ei, -2, sym_numel(j.type_of(e.inputs[0])), ei);
          if (e.inputs[1].is_var() && fused(e.inputs[1].var)) expanded[static_cast<std::size_t>(e.inputs[1].var)] = true;
          visit(e.inputs[1], ei, -3, sym_numel(j.type_of(e.inputs[1])), ei);
          return;
        }
        visit(e.inputs[0], ei, -1, sym_numel(j.type_of(e.inputs[0])), ei);
        return;
      case Prim::sort:
        // One nest per operand, copying it into its output.
        for (std::size_t k = 0; k < e.inputs.size(); ++k)
          visit(e.inputs[k], ei, -2 - static_cast<int>(k), space, ei);
        return;
      // A fusible primitive whose output is materialised: its own expression
      // is the nest's body (an index remap's operands under its own key).
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      case Prim::broadcast_in_dim:
      case Prim::reshape:
      case Prim::transpose:
      case Prim::squeeze:
      case Prim::slice:
      case Prim::dynamic_slice:
      case Prim::gather:
      case Prim::iota:
      case Prim::rev:
      case Prim::pad:
        for (std::size_t i = 0; i < num_data_inputs(e); ++i) {
          const int key = prim_kind(e.prim) == Kind::structural ? ei : -1;
          visit(e.inputs[i], ei, key, space, ei);
        }
        return;
    }
  }
};

inline void mark(FusionPlan& plan, int v, std::string why) {
  auto vs = static_cast<std::size_t>(v);
  if (plan.materialised[vs]) return;
  plan.materialised[vs] = true;
  plan.why[vs] = std::move(why);
}

}  // namespace fusion_detail

// Index vectors of pieces (an exception to rule 2): numpy's advanced
// indexing with several index arrays, and take_along_axis, concatenate one
// [B..., 1] index array per indexed axis into the [B..., K] indices of a
// gather or scatter (as jnp does). A concatenate along that last axis whose
// every reader is a gather or scatter reading it as its indices stays fused:
// component c of an index vector is a static choice of piece (the lowering,
// index_vector_component, reads the piece directly), so no [B..., K]
// temporary is written and read back. Rule 3 still applies to it: an
// expensive index expression is materialised as before.
inline std::vector<bool> index_vector_pieces(const Jaxpr& j, const FusionPlan& plan) {
  const std::size_t ne = j.eqns.size();
  std::vector<bool> ok(ne, false);
  std::vector<int> cat_of(j.types.size(), -1);  // var -> its concatenate eqn, while still a candidate
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i] || e.prim != Prim::concatenate) continue;
    const Type& t = j.types[static_cast<std::size_t>(e.outputs[0])];
    bool static_pieces = t.rank() > 0 && std::get<ConcatenateParams>(e.params).dimension == t.rank() - 1;
    for (const Atom& a : e.inputs) static_pieces = static_pieces && a.is_var() && j.type_of(a).shape.back().is_static();
    if (!static_pieces) continue;
    ok[i] = true;
    cat_of[static_cast<std::size_t>(e.outputs[0])] = static_cast<int>(i);
  }
  const auto drop = [&](const Atom& a) {
    if (a.is_var() && cat_of[static_cast<std::size_t>(a.var)] >= 0)
      ok[static_cast<std::size_t>(cat_of[static_cast<std::size_t>(a.var)])] = false;
  };
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i]) continue;
    const bool indexes = e.prim == Prim::gather || prim_kind(e.prim) == Kind::scatter;
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      if (!(indexes && k == 1)) drop(e.inputs[k]);
  }
  for (const Atom& a : j.outvars) drop(a);
  return ok;
}

// Rows of buffers (the other exception to rule 2): a concatenate along an
// axis before the last whose pieces all have buffers by rule 2 (arguments,
// loop state, results of nests of their own: a halo exchange's
// `concatenate({above, u, below}, 0)`, a row appended to a matrix) stays
// fused. Along such an axis a whole run of the innermost axis lies in one
// piece, so its readers choose the piece per row: a select of the pieces'
// buffers, hoisted out of the inner loop, then a contiguous load there
// (Lowering::concatenated). The copy of every piece into a temporary that is
// read once, about as large as the pieces together, is gone. A concatenate
// along the last axis changes piece within a row (the choice would be per
// element: a gather), and fused pieces would be computed for every element
// of every piece; both keep their nest.
inline bool rows_of_buffers(const Jaxpr& j, const FusionPlan& plan, const Eqn& e) {
  if (e.prim != Prim::concatenate) return false;
  const Type& t = j.types[static_cast<std::size_t>(e.outputs[0])];
  if (std::get<ConcatenateParams>(e.params).dimension + 1 >= t.rank()) return false;
  for (const Atom& a : e.inputs)
    if (!a.is_var() || !plan.materialised[static_cast<std::size_t>(a.var)]) return false;
  return true;
}

// Whether the fused expression of `v` reads every buffer it reaches at v's
// own row-major linear index: elementwise operations (scalars aside) and
// reshapes down to buffers (inputs, and values with nests of their own). A
// matrix-vector product's lhs stays fused only then (dot_fuses_lhs): its
// inner loop then streams through memory and vectorises as the plain
// product does (the same bits for the same operand values). A transpose, a
// broadcast, a slice... would read with strides or recompute indices per
// element: those operands are materialised as before.
inline bool reads_linearly(const Jaxpr& j, const FusionPlan& plan, int v) {
  if (plan.materialised[static_cast<std::size_t>(v)] || plan.def[static_cast<std::size_t>(v)] < 0) return true;
  const Eqn& e = j.eqns[static_cast<std::size_t>(plan.def[static_cast<std::size_t>(v)])];
  if (!is_fusible(e.prim)) return true;  // a nest of its own (rule 2): a buffer
  switch (prim_kind(e.prim)) {
    case Kind::unary:
    case Kind::binary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert:
      for (const Atom& a : e.inputs)
        if (a.is_var() && j.type_of(a).rank() > 0 && !reads_linearly(j, plan, a.var)) return false;
      return true;
    default:
      if ((e.prim != Prim::reshape && e.prim != Prim::squeeze) || !e.inputs[0].is_var()) return false;
      return index_map(j, e).form == IndexMap::Form::linear && reads_linearly(j, plan, e.inputs[0].var);
  }
}


// Unknown sizes (runtime dimensions). A dimension of a type may be the value
// of an i64[] variable (JDim::of_var). The plan never needs its value; it
// decides as follows, so that every decision is correct for any value:
//  - sizes compare as SymNumel (static factor x variables): "equal" only when
//    provably equal; "may exceed n" whenever a variable is involved;
//  - rule 3: a broadcast expands unless its operand and result sizes are
//    provably equal; a rank-0 value is "read in a loop" if the nest's size
//    may exceed 1. Both materialise more, never less (an expensive value is
//    never recomputed per element because a size was unknown);
//  - rule 4: a runtime number of rows may be >= 2, and a row whose length
//    has a runtime factor counts as long (>= kMinRowElements): symbolic
//    dimensions stand for data sizes, and the grouped code is correct for
//    any row length (0 and 1 included), only slower than flat nests for
//    rows shorter than ~16. A runtime dimension never counts as 1, and
//    reshapes match runtime dimensions one-to-one only (else the row axes
//    are "mixed" and the candidate does not join);
//  - every variable a live type or a kDynamicDim operand refers to is live
//    and materialised ("dimension"): the lowering reads its value once, as
//    an i64, right after it is computed. Materialised scalars computable
//    from rank-0 inputs alone (arguments, literals, other such scalars) --
//    the dimensions, and e.g. convert(n) for x / n -- form the PROLOGUE,
//    emitted at kernel entry before any loop (so they never sit between
//    two row-group members either); the others (sizes computed from array
//    data) are emitted in equation order, which the jaxpr's scoping puts
//    before their users.
inline FusionPlan plan_fusion(const Jaxpr& j, const BufferOwnership& own = {}) {
  using namespace fusion_detail;
  const std::size_t nv = j.types.size(), ne = j.eqns.size();
  FusionPlan plan;
  plan.def.assign(nv, -1);
  plan.live.assign(ne, false);
  plan.materialised.assign(nv, false);
  plan.out_slot.assign(nv, -1);
  plan.why.assign(nv, "");
  for (std::size_t i = 0; i < ne; ++i) {
    if (j.eqns[i].outputs.size() != 1 && !has_several_outputs(prim_kind(j.eqns[i].prim)))
      internal_error("LLVM backend: " + std::string(prim_name(j.eqns[i].prim)) + " with " +
                     std::to_string(j.eqns[i].outputs.size()) + " outputs");
    for (int v : j.eqns[i].outputs) plan.def[static_cast<std::size_t>(v)] = static_cast<int>(i);
  }

  // Liveness: outvars and, backwards, the inputs of live eqns, and the
  // dimensions of the types of needed variables.
  std::vector<bool> needed(nv, false);
  plan.dim_var.assign(nv, false);
  auto need = [&](int v) {
    needed[static_cast<std::size_t>(v)] = true;
    for (const JDim& d : j.types[static_cast<std::size_t>(v)].shape)
      if (!d.is_static()) needed[static_cast<std::size_t>(d.var)] = plan.dim_var[static_cast<std::size_t>(d.var)] = true;
  };
  for (const Atom& a : j.outvars)
    if (a.is_var()) need(a.var);
  for (std::size_t i = ne; i-- > 0;) {
    const Eqn& e = j.eqns[i];
    // An effect (a debug print, a loop that prints) is live with no output used.
    bool any = has_effect(e);
    for (int v : e.outputs) any = any || needed[static_cast<std::size_t>(v)];
    if (!any) continue;
    plan.live[i] = true;
    for (int v : e.outputs) need(v);
    for (std::size_t k = 0; k < e.inputs.size(); ++k) {
      if (!e.inputs[k].is_var()) continue;
      need(e.inputs[k].var);
      if (k >= num_data_inputs(e)) plan.dim_var[static_cast<std::size_t>(e.inputs[k].var)] = true;
    }
  }

  // Rule 2.
  for (int v : j.constvars) mark(plan, v, "argument");
  for (int v : j.invars) mark(plan, v, "argument");
  for (std::size_t v = 0; v < nv; ++v)
    if (plan.dim_var[v]) mark(plan, static_cast<int>(v), "dimension");
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Atom& a = j.outvars[k];
    if (!a.is_var()) continue;
    auto vs = static_cast<std::size_t>(a.var);
    mark(plan, a.var, "output");
    // A control equation's outputs are its loop state (or a branch's
    // buffers): they are copied into the results afterwards. Except a
    // scan's ys: the loop writes their rows into the result in place.
    const bool control = plan.def[vs] >= 0 && prim_kind(j.eqns[static_cast<std::size_t>(plan.def[vs])].prim) == Kind::control &&
                         !is_scan_ys(j.eqns[static_cast<std::size_t>(plan.def[vs])], a.var);
    if (plan.out_slot[vs] < 0 && plan.def[vs] >= 0 && !control) plan.out_slot[vs] = static_cast<int>(k);
  }
  const std::vector<bool> pieces = index_vector_pieces(j, plan);
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i]) continue;
    if (!is_fusible(e.prim) && !pieces[i] && !rows_of_buffers(j, plan, e))
      for (int v : e.outputs) mark(plan, v, std::string(prim_name(e.prim)));
    // Control flow is a materialisation barrier: its bodies are functions
    // of their own that take buffers (lower_control.hpp).
    if (prim_kind(e.prim) == Kind::control)
      for (const Atom& a : e.inputs)
        if (a.is_var()) mark(plan, a.var, "control operand");
    // The print routine reads its operands from memory (literals: lower_body.hpp).
    if (prim_kind(e.prim) == Kind::effect)
      for (const Atom& a : e.inputs)
        if (a.is_var()) mark(plan, a.var, "debug_callback operand");
    // A collective's runtime routine (dynstage_collective) reads its operand from memory.
    if (prim_kind(e.prim) == Kind::collective)
      for (const Atom& a : e.inputs)
        if (a.is_var()) mark(plan, a.var, std::string(prim_name(e.prim)) + " operand");
    // fft's runtime routine (dynstage_fft) reads its operand from memory.
    if (prim_kind(e.prim) == Kind::fft && e.inputs[0].is_var()) mark(plan, e.inputs[0].var, "fft operand");
    // top_k's runtime routine reads its operand from memory.
    if (e.prim == Prim::top_k && e.inputs[0].is_var()) mark(plan, e.inputs[0].var, "top_k operand");
    if (e.prim == Prim::dot_general) {
      const bool fuse_lhs = dot_fuses_lhs(j, e) && e.inputs[0].is_var() && reads_linearly(j, plan, e.inputs[0].var);
      for (std::size_t k = 0; k < e.inputs.size(); ++k) {
        const Atom& a = e.inputs[k];
        if (!a.is_var() || (k == 0 && fuse_lhs)) continue;
        int v = a.var;
        while (!plan.materialised[static_cast<std::size_t>(v)]) {
          const Eqn& d = j.eqns[static_cast<std::size_t>(plan.def[static_cast<std::size_t>(v)])];
          if (!dot_reads_through(j, d)) break;  // reshapes, contiguous slices
          v = d.inputs[0].var;
        }
        if (gemm_packs_operand(j, plan, e, v, kExpensiveCost)) continue;  // fusion_gemm.hpp
        mark(plan, v, "dot_general operand");
      }
    }
  }

  // Rule 3, to a fixed point, then buffer assignment (buffers.hpp), which
  // may materialise an update that reads its operand: then again.
  for (;;) {
  for (;;) {
    plan.last_read.assign(nv, -1);
    Walk w(j, plan);
    for (std::size_t i = 0; i < ne; ++i)
      if (plan.live[i] && (j.eqns[i].outputs.empty() || plan.materialised[static_cast<std::size_t>(j.eqns[i].outputs[0])]))
        w.walk_root(static_cast<int>(i));
    for (std::size_t k = 0; k < j.outvars.size(); ++k) {
      const Atom& a = j.outvars[k];
      if (a.is_var() && plan.out_slot[static_cast<std::size_t>(a.var)] != static_cast<int>(k))
        plan.last_read[static_cast<std::size_t>(a.var)] = static_cast<int>(ne);  // copied into the result
    }
    int pick = -1;
    std::string why;
    for (std::size_t v = 0; v < nv; ++v) {
      if (plan.materialised[v] || w.keys[v].empty()) continue;
      std::string reason;
      if (w.scalar_in_loop[v]) reason = "scalar read in a loop";
      else if ((w.keys[v].size() > 1 || w.expanded[v]) && w.cost_of(static_cast<int>(v)) >= kExpensiveCost)
        reason = w.expanded[v] ? "expensive, broadcast" : "expensive, several consumers";
      else continue;
      if (pick < 0 || plan.def[v] > plan.def[static_cast<std::size_t>(pick)]) {
        pick = static_cast<int>(v);
        why = reason;
      }
    }
    if (pick < 0) break;
    mark(plan, pick, why);
  }
  if (assign_buffers(j, plan, own)) break;
  }
  if (own.pair.size() && plan.paired != own.pair) {
    // A candidate pair whose chain does not reach its invar: plan again
    // without it (its invar is then not owned).
    BufferOwnership confirmed = own;
    for (std::size_t k = 0; k < confirmed.pair.size(); ++k)
      if (plan.paired[k] < 0) confirmed.pair[k] = -1;
    return plan_fusion(j, confirmed);
  }

  // The prologue: the materialised scalars computable at entry (dimensions
  // included), and the rank-0 buffers their (fused) expressions read.
  plan.in_prologue.assign(ne, false);
  {
    std::vector<int> at_entry(nv, -1);  // var -> computable from rank-0 inputs only (-1 unknown)
    std::function<bool(int)> entry = [&](int v) -> bool {
      int& r = at_entry[static_cast<std::size_t>(v)];
      if (r >= 0) return r != 0;
      bool ok = j.types[static_cast<std::size_t>(v)].rank() == 0;
      const int ei = plan.def[static_cast<std::size_t>(v)];
      if (ok && ei >= 0) {
        const Eqn& e = j.eqns[static_cast<std::size_t>(ei)];
        ok = is_fusible(e.prim);
        for (const Atom& a : e.inputs) ok = ok && (!a.is_var() || entry(a.var));
      }
      r = ok ? 1 : 0;
      return ok;
    };
    std::function<void(int)> add = [&](int v) {
      const int ei = plan.def[static_cast<std::size_t>(v)];
      if (ei < 0) return;
      if (plan.materialised[static_cast<std::size_t>(v)]) {
        if (plan.in_prologue[static_cast<std::size_t>(ei)]) return;
        plan.in_prologue[static_cast<std::size_t>(ei)] = true;
      }
      for (const Atom& a : j.eqns[static_cast<std::size_t>(ei)].inputs)
        if (a.is_var()) add(a.var);
    };
    // Every materialised scalar computable at entry goes there, not only the
    // dimensions: a scalar root between two row-group members (x / n with a
    // runtime n: convert(n) is "read in a loop") would split the group.
    for (std::size_t v = 0; v < nv; ++v)
      if (plan.materialised[v] && plan.def[v] >= 0 && plan.live[static_cast<std::size_t>(plan.def[v])] &&
          entry(static_cast<int>(v)))
        add(static_cast<int>(v));
    for (std::size_t i = 0; i < ne; ++i)
      if (plan.in_prologue[i]) plan.prologue.push_back(static_cast<int>(i));
  }
  plan_row_groups(j, plan);
  extend_reused_lifetimes(j, plan);
  plan_gemm_epilogues(j, plan);
  return plan;
}

// Layout changes as index maps (issue 25, item 2). broadcast_in_dim,
// reshape, squeeze, transpose, slice, dynamic_slice, rev and pad compute
// nothing: every consumer that evaluates its operands at an index (an
// elementwise nest, a reduction, a cumulative op, a sort's or scatter's
// copy, a gather, a window write, another layout change) reads through
// their composed index maps, so chains cost no buffer, and neither do
// several consumers (each evaluates the map; rule 3 only materialises
// EXPENSIVE values, never a cheap map). A product reads a transposed
// operand where it is stored (canonicalize.hpp, fold_dot_transposes) and
// a reshape of a buffer as the buffer. A layout value is copied only where
// a dense layout is needed, once: a kernel output, a product operand in no
// form the product reads, the operand of control flow, a print, a
// collective or top_k (which read memory). `layout_copies` lists those
// copies of a plan, and the operands the product's nest copies
// (dot_copies_rhs): the test hook of tests/jit/test_layout_maps.cpp.
inline bool is_layout_change(Prim p) {
  // (iota reads nothing; concatenate and dynamic_update_slice write windows
  // of their own nest; gather reads at data-dependent starts.)
  return is_layout(p) && p != Prim::iota && p != Prim::concatenate && p != Prim::dynamic_update_slice &&
         p != Prim::gather;
}

struct LayoutCopy {
  int var;          // the value copied (a layout change's output, or a product's operand)
  std::string why;  // "output", "dot_general operand", "dot_general packing" (in the nest), ...
};

inline std::vector<LayoutCopy> layout_copies(const Jaxpr& j, const FusionPlan& plan) {
  std::vector<LayoutCopy> r;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i]) continue;
    if (is_layout_change(e.prim) && plan.materialised[static_cast<std::size_t>(e.outputs[0])])
      r.push_back({e.outputs[0], plan.why[static_cast<std::size_t>(e.outputs[0])]});
    if (e.prim == Prim::dot_general && dot_copies_rhs(j, e)) r.push_back({e.inputs[1].var, "dot_general packing"});
  }
  return r;
}

}  // namespace dyn::detail
