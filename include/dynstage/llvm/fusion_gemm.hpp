// dynstage: what the fusion planner fuses into the blocked GEMM (issue 25,
// item 1; no LLVM here). The lowering's side is lower_gemm_fusion.hpp.
//
// A product that may run the blocked routine (canonicalize.hpp,
// dot_may_block):
//  - an operand that is a fused expression stays FUSED (no buffer) when the
//    expression is cheap (its cost, down to the buffers it reads, is below
//    kExpensiveCost: the A panel of a row block is packed once per NC
//    columns of the result, so an element may be computed a few times) and
//    cannot fault (elementwise primitives and the layout changes other than
//    gather: `alpha * A`, an astype, `A + C`, a transpose or a strided slice
//    of one). The GEMM's packing computes it into the panels.
//  - its EPILOGUE root: the next materialised equation after the product,
//    when it is an elementwise root of the product's shape whose expression
//    reads the product's result only through elementwise primitives (at its
//    own index), and which cannot fault (as above), is in no row group, and
//    writes a buffer that is not one the product reads (a fresh temporary,
//    a result, or the product's own buffer in place). It is computed block
//    by block as the GEMM finishes each block of C (`relu(x @ W + b)`).
// The test hook gemm_fusions lists both.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "canonicalize.hpp"
#include "fusion_plan.hpp"

namespace dyn::detail {

// Benchmarks only: false plans as before this fusion existed (fused operands
// of a GEMM materialised, its consumer a nest of its own), so that one run
// can time both. Read when a kernel is compiled.
inline std::atomic<bool>& gemm_fusion() {
  static std::atomic<bool> on{true};
  return on;
}

// Whether fused value `v`'s expression, down to buffers, uses only
// primitives that cannot fault in a GEMM callback; `cost` accumulates the
// table's costs (1 simple, 4 costly, `limit` transcendental).
inline bool gemm_safe_expr(const Jaxpr& j, const FusionPlan& plan, int v, int& cost, int limit) {
  const auto vs = static_cast<std::size_t>(v);
  if (plan.materialised[vs] || plan.def[vs] < 0) return true;
  const Eqn& e = j.eqns[static_cast<std::size_t>(plan.def[vs])];
  if (!is_fusible(e.prim) || e.prim == Prim::gather) return false;
  switch (prim_info(e.prim).cost) {
    case Cost::simple: cost += 1; break;
    case Cost::costly: cost += 4; break;
    case Cost::transcendental: cost += limit; break;
  }
  if (cost >= limit) return false;
  for (std::size_t i = 0; i < num_data_inputs(e); ++i)
    if (e.inputs[i].is_var() && !gemm_safe_expr(j, plan, e.inputs[i].var, cost, limit)) return false;
  return true;
}

// Whether the GEMM of product `e` packs fused operand value `v` (the end of
// the operand's chain of reshapes and contiguous slices) itself.
inline bool gemm_packs_operand(const Jaxpr& j, const FusionPlan& plan, const Eqn& e, int v, int limit) {
  if (!gemm_fusion().load(std::memory_order_relaxed) || !dot_may_block(j, e)) return false;
  const auto vs = static_cast<std::size_t>(v);
  if (plan.materialised[vs] || plan.def[vs] < 0) return false;
  int cost = 0;
  return gemm_safe_expr(j, plan, v, cost, limit);
}

// Whether root value `v`'s expression reads `dot` only through elementwise
// primitives (so at its own index) and reads it at all; `reads` is set
// when it does.
inline bool reads_elementwise(const Jaxpr& j, const FusionPlan& plan, int v, int dot, bool& reads) {
  if (v == dot) {
    reads = true;
    return true;
  }
  const auto vs = static_cast<std::size_t>(v);
  if (plan.materialised[vs] || plan.def[vs] < 0) return true;
  const Eqn& e = j.eqns[static_cast<std::size_t>(plan.def[vs])];
  const Kind k = prim_kind(e.prim);
  const bool elementwise = k == Kind::unary || k == Kind::binary || k == Kind::compare || k == Kind::select ||
                           k == Kind::convert;
  for (std::size_t i = 0; i < num_data_inputs(e); ++i) {
    if (!e.inputs[i].is_var()) continue;
    bool r = false;
    if (!reads_elementwise(j, plan, e.inputs[i].var, dot, r)) return false;
    if (r && !elementwise) return false;  // the product read through an index map
    reads = reads || r;
  }
  return true;
}

// Fills plan.epilogue / plan.in_epilogue (after buffer assignment and row
// groups: the roots and buffers are final).
inline void plan_gemm_epilogues(const Jaxpr& j, FusionPlan& plan) {
  const std::size_t ne = j.eqns.size();
  plan.epilogue.assign(ne, -1);
  plan.in_epilogue.assign(ne, -1);
  if (!gemm_fusion().load(std::memory_order_relaxed)) return;
  auto root = [&](std::size_t i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i] || (!plan.in_prologue.empty() && plan.in_prologue[i])) return false;
    return e.outputs.empty() || plan.materialised[static_cast<std::size_t>(e.outputs[0])];
  };
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (e.prim != Prim::dot_general || !root(i) || !dot_may_block(j, e) || plan.group_of[i] >= 0) continue;
    std::size_t r = i + 1;
    while (r < ne && !root(r)) ++r;
    if (r == ne) continue;
    const Eqn& c = j.eqns[r];
    const Kind k = prim_kind(c.prim);
    if (!(k == Kind::unary || k == Kind::binary || k == Kind::compare || k == Kind::select || k == Kind::convert))
      continue;
    if (c.outputs.size() != 1 || plan.group_of[r] >= 0) continue;
    const int dot = e.outputs[0], out = c.outputs[0];
    const auto os = static_cast<std::size_t>(out);
    if (!(j.types[os].shape == j.types[static_cast<std::size_t>(dot)].shape)) continue;
    if (plan.reuse[os] >= 0 && plan.reuse[os] != dot) continue;
    if (plan.out_slot[os] >= 0 && !plan.paired.empty() && plan.paired[static_cast<std::size_t>(plan.out_slot[os])] >= 0)
      continue;
    bool reads = false, ok = true;
    int cost = 0;
    for (std::size_t a = 0; a < num_data_inputs(c) && ok; ++a) {
      if (!c.inputs[a].is_var()) continue;
      ok = reads_elementwise(j, plan, c.inputs[a].var, dot, reads) &&
           gemm_safe_expr(j, plan, c.inputs[a].var, cost, 1 << 20);
    }
    if (!ok || !reads) continue;
    plan.epilogue[i] = static_cast<int>(r);
    plan.in_epilogue[r] = static_cast<int>(i);
  }
}

// The test hook: per live product, "#v packed into A" / "#v packed into B"
// for a fused operand (v: the operand's value, before its reshapes) and
// "#v in the epilogue" for its epilogue root's output v.
inline std::vector<std::string> gemm_fusions(const Jaxpr& j, const FusionPlan& plan) {
  std::vector<std::string> r;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i] || e.prim != Prim::dot_general || !dot_may_block(j, e)) continue;
    for (std::size_t k = 0; k < 2; ++k) {
      int v = e.inputs[k].var;
      while (!plan.materialised[static_cast<std::size_t>(v)] && plan.def[static_cast<std::size_t>(v)] >= 0) {
        const Eqn& d = j.eqns[static_cast<std::size_t>(plan.def[static_cast<std::size_t>(v)])];
        if (!dot_reads_through(j, d)) break;
        v = d.inputs[0].var;
      }
      if (!plan.materialised[static_cast<std::size_t>(v)] && plan.def[static_cast<std::size_t>(v)] >= 0)
        r.push_back("#" + std::to_string(v) + (k == 0 ? " packed into A" : " packed into B"));
    }
    if (!plan.epilogue.empty() && plan.epilogue[i] >= 0)
      r.push_back("#" + std::to_string(j.eqns[static_cast<std::size_t>(plan.epilogue[i])].outputs[0]) + " in the epilogue");
  }
  return r;
}

}  // namespace dyn::detail
