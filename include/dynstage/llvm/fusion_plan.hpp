// dynstage: what the fusion planner decides (FusionPlan) and the facts about
// sizes and primitives it decides with (no LLVM here). The rule is written
// at the top of fusion.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../ir/jaxpr.hpp"

namespace dyn::detail {

// The number of elements of a type whose dimensions are all static.
inline std::int64_t numel_of(const Type& t) {
  std::int64_t n = 1;
  for (const JDim& d : t.shape) {
    if (!d.is_static()) internal_error("LLVM backend: numel_of a type with a runtime dimension");
    n *= d.value;
  }
  return n;
}

// A number of elements with runtime dimensions: a static factor times a
// product of dimension variables (sorted). Two of them are provably equal
// when their factors and variables are; nothing else is known about them at
// compile time, so every decision that compares sizes must be sound when
// the variables take any value >= 0 (see "Unknown sizes" at plan_fusion).
struct SymNumel {
  std::int64_t k = 1;
  std::vector<int> vars;
  bool is_static() const { return vars.empty(); }
  // Whether the size may exceed `n` at run time.
  bool may_exceed(std::int64_t n) const { return !vars.empty() ? k != 0 : k > n; }
  friend bool operator==(const SymNumel&, const SymNumel&) = default;
};

inline SymNumel sym_numel(const std::vector<JDim>& dims, std::size_t from = 0) {
  SymNumel r;
  for (std::size_t i = from; i < dims.size(); ++i) {
    if (dims[i].is_static()) r.k *= dims[i].value;
    else r.vars.push_back(dims[i].var);
  }
  if (r.k == 0) r.vars.clear();
  std::sort(r.vars.begin(), r.vars.end());
  return r;
}
inline SymNumel sym_numel(const Type& t) { return sym_numel(t.shape); }

// Whether `to` may hold more elements than `from`: with run-time factors,
// unless the sizes are provably equal (decisions taken on it stay correct
// for any value).
inline bool may_grow(const SymNumel& from, const SymNumel& to) {
  if (from.is_static() && to.is_static()) return from.k < to.k;
  return !(from == to);
}

// A dimension that is statically 1 (a runtime dimension never counts as 1:
// decisions taken for "not 1" stay correct when it is 1 at run time).
inline bool is_unit(const JDim& d) { return d.is_static() && d.value == 1; }

// The table's columns (ir/prims.hpp) this pass reads.
inline bool is_fusible(Prim p) { return prim_info(p).fused; }
inline bool is_transcendental(Prim p) { return prim_info(p).cost == Cost::transcendental; }

// The inputs of an equation that carry data (the row's arity; -1: all); the
// rest are the values of the kDynamicDim entries of its shape parameters
// (broadcast_in_dim, reshape, iota, slice), which the lowering reads as
// dimensions.
inline std::size_t num_data_inputs(const Eqn& e) {
  const int arity = prim_info(e.prim).arity;
  if (arity == kVariadic) return e.inputs.size();
  return std::min(static_cast<std::size_t>(arity), e.inputs.size());
}

// ---------------------------------------------------------------------------
// plan_fusion

// Rule 4: a run of consecutive materialised roots emitted as ONE loop over
// the rows of `rows` (the leading axes all members share), each member's nest
// running over one row inside it.
struct RowGroup {
  std::vector<int> members;         // eqn indices, in emission order (consecutive roots)
  std::vector<JDim> row_dims;       // the shared leading axes (the row space)
  std::vector<std::int64_t> rows;   // the same as integers, kDynamicDim for a runtime dimension
};

struct FusionPlan {
  std::vector<int> def;             // var -> index of its defining eqn; -1 for constvars/invars
  std::vector<bool> live;           // eqn -> some output is needed
  std::vector<bool> materialised;   // var -> has a buffer (argument, result or temporary)
  std::vector<int> out_slot;        // var -> first outvar position it is written to, or -1
  std::vector<int> last_read;       // var -> last eqn whose nest reads its buffer (eqns.size(): output copies)
  std::vector<std::string> why;     // var -> why it was materialised (for dumps and tests)
  std::vector<RowGroup> groups;     // rule 4
  std::vector<int> group_of;        // eqn -> index into groups, or -1
  std::vector<bool> row_local;      // var -> its temporary holds only the current row of its group
  // Runtime dimensions (see "Unknown sizes" above plan_fusion):
  std::vector<bool> dim_var;        // var -> its value is a dimension (of a live type or a shape parameter)
  std::vector<int> prologue;        // eqns emitted at kernel entry: the scalars the dimensions are computed from
  std::vector<bool> in_prologue;    // eqn -> in `prologue`
  // Buffer assignment (buffers.hpp):
  std::vector<int> reuse;           // var -> the var whose buffer it updates in place, or -1
  std::vector<int> paired;          // outvar -> the invar position whose buffer it is (in-place loop state, donation), or -1
  // The GEMM's epilogue (fusion_gemm.hpp):
  std::vector<int> epilogue;        // eqn (a product) -> the root its GEMM computes block by block, or -1
  std::vector<int> in_epilogue;     // eqn -> the product whose GEMM computes it, or -1
};

// One line per live equation: its output variable (#index), primitive, and
// "buffer (why)" or "fused". For dumps and tests.
inline std::string plan_str(const Jaxpr& j, const FusionPlan& plan) {
  std::string r;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    if (!plan.live[i]) continue;
    if (j.eqns[i].outputs.empty()) {  // an effect
      r += std::string(prim_name(j.eqns[i].prim)) + ": effect, in order\n";
      continue;
    }
    const int v = j.eqns[i].outputs[0];
    const auto vs = static_cast<std::size_t>(v);
    r += "#" + std::to_string(v) + " = " + std::string(prim_name(j.eqns[i].prim)) + ": " +
         (plan.materialised[vs] ? "buffer (" + plan.why[vs] + ")" : std::string("fused"));
    if (!plan.in_prologue.empty() && plan.in_prologue[i]) r += ", at entry";
    if (!plan.reuse.empty() && plan.reuse[vs] >= 0) r += ", in place of #" + std::to_string(plan.reuse[vs]);
    if (!plan.in_epilogue.empty() && plan.in_epilogue[i] >= 0)
      r += ", in the epilogue of #" + std::to_string(j.eqns[static_cast<std::size_t>(plan.in_epilogue[i])].outputs[0]);
    if (!plan.group_of.empty() && plan.group_of[i] >= 0)
      r += ", row group " + std::to_string(plan.group_of[i]) + (plan.row_local[vs] ? ", one row" : "");
    r += "\n";
  }
  return r;
}

}  // namespace dyn::detail
