// dynstage: fusion rule 4, row groups (no LLVM here): which consecutive
// roots run as one loop over the rows of a trailing-axes reduction, and
// which of their buffers hold one row only. The rule is written at the top
// of fusion.hpp; the index maps it follows are ir/index_map.hpp's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "../ir/index_map.hpp"
#include "../ir/jaxpr.hpp"
#include "fusion_plan.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Rule 4: row groups.

// A seed's rows must be long enough for the member nests' inner loops to
// vectorise (a short row would turn a flat vectorised loop, libmvec calls
// included, into scalar code).
inline constexpr std::int64_t kMinRowElements = 16;

namespace row_detail {

// Where one axis of a value's index comes from, seen from a member's nest
// with t row axes: >= 0 exactly row axis k; kInner: the nest's inner axes or
// a constant only; kMixed: a row axis remapped (another row may be read).
inline constexpr int kInner = -1;
inline constexpr int kMixed = -2;

// Whether eqn e reduces exactly the trailing axes [t, r) of a var operand
// with t >= 1 (output shape = the leading axes).
inline bool trailing_reduction(const Jaxpr& j, const Eqn& e, std::size_t& t, std::vector<JDim>& rows) {
  // argmax/argmin have a nest of their own (emit_arg_reduction), never in a row group.
  if (prim_kind(e.prim) != Kind::reduction || !e.inputs[0].is_var() || !std::holds_alternative<ReduceParams>(e.params))
    return false;
  const std::vector<JDim>& xd = j.type_of(e.inputs[0]).shape;
  auto axes = std::get<ReduceParams>(e.params).axes;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty() || axes.size() >= xd.size()) return false;
  t = xd.size() - axes.size();
  for (std::size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != static_cast<std::int64_t>(t + k)) return false;
  rows.assign(xd.begin(), xd.begin() + static_cast<std::ptrdiff_t>(t));
  return true;
}

// The tags of a reshape's operand axes (same row-major linear index), from
// the tags of its output axes `od`.
inline std::vector<int> linear_tags(const std::vector<JDim>& xd, const std::vector<JDim>& od, const std::vector<int>& tags) {
  // Same row-major linear index. Match the non-unit axes in blocks of
  // equal size products: a one-to-one block keeps its tag; a merged or
  // split block is row-free only if all its output axes are. Runtime
  // dimensions match only one-to-one (equal variables); past a block
  // that cannot be matched, the remaining operand axes are row-free if
  // all remaining output axes are, else mixed (conservative).
  std::vector<int> xt(xd.size(), kInner);
  std::vector<std::size_t> ia, ib;
  for (std::size_t i = 0; i < xd.size(); ++i)
    if (!is_unit(xd[i])) ia.push_back(i);
  for (std::size_t i = 0; i < od.size(); ++i)
    if (!is_unit(od[i])) ib.push_back(i);
  std::size_t p = 0, q = 0;
  while (p < ia.size() && q < ib.size()) {
    std::size_t p1 = p + 1, q1 = q + 1;
    bool matched = xd[ia[p]] == od[ib[q]];
    if (!matched && xd[ia[p]].is_static() && od[ib[q]].is_static()) {
      std::int64_t pa = xd[ia[p]].value, pb = od[ib[q]].value;
      while (pa != pb) {
        if (pa < pb && p1 < ia.size() && xd[ia[p1]].is_static()) pa *= xd[ia[p1++]].value;
        else if (pb < pa && q1 < ib.size() && od[ib[q1]].is_static()) pb *= od[ib[q1++]].value;
        else break;
      }
      matched = pa == pb;
    }
    if (!matched) {
      bool rest_free = true;
      for (std::size_t k = q; k < ib.size(); ++k) rest_free = rest_free && tags[ib[k]] == kInner;
      for (std::size_t i = p; i < ia.size(); ++i) xt[ia[i]] = rest_free ? kInner : kMixed;
      break;
    }
    bool row_free = true;
    for (std::size_t k = q; k < q1; ++k) row_free = row_free && tags[ib[k]] == kInner;
    for (std::size_t k = p; k < p1; ++k)
      xt[ia[k]] = (p1 - p == 1 && q1 - q == 1) ? tags[ib[q]] : row_free ? kInner : kMixed;
    p = p1;
    q = q1;
  }
  return xt;
}

// The walk of one candidate member's nest: every buffer it reads, with the
// index map tags of the read.
struct RowWalk {
  const Jaxpr& j;
  const FusionPlan& plan;
  std::size_t t;
  const std::vector<JDim>& rows;
  const std::vector<bool>& member;  // var -> output of an earlier member
  bool aligned = true;               // every read of a member's buffer stays in the row
  bool linked = false;               // some member's buffer is read
  std::set<std::pair<int, std::vector<int>>> seen;

  RowWalk(const Jaxpr& jj, const FusionPlan& p, std::size_t tt, const std::vector<JDim>& r,
          const std::vector<bool>& m)
      : j(jj), plan(p), t(tt), rows(r), member(m) {}

  std::vector<int> root_tags(const std::vector<JDim>& dims) const {
    std::vector<int> tags(dims.size(), kInner);
    for (std::size_t d = 0; d < dims.size() && d < t; ++d)
      if (!is_unit(dims[d])) tags[d] = static_cast<int>(d);
    return tags;
  }

  void read_buffer(int v, const std::vector<int>& tags) {
    if (!member[static_cast<std::size_t>(v)]) return;  // computed before the group: any index
    linked = true;
    const std::vector<JDim>& dims = j.types[static_cast<std::size_t>(v)].shape;
    std::vector<int> seq, want;
    for (std::size_t d = 0; d < dims.size(); ++d)
      if (!is_unit(dims[d])) seq.push_back(tags[d]);
    for (std::size_t k = 0; k < t; ++k)
      if (!is_unit(rows[k])) want.push_back(static_cast<int>(k));
    if (seq.size() < want.size()) {
      aligned = false;
      return;
    }
    for (std::size_t i = 0; i < seq.size(); ++i)
      if (seq[i] != (i < want.size() ? want[i] : kInner)) aligned = false;
  }

  void visit(const Atom& a, const std::vector<int>& tags) {
    if (!a.is_var()) return;
    const int v = a.var;
    const auto vs = static_cast<std::size_t>(v);
    if (plan.materialised[vs]) return read_buffer(v, tags);
    if (!seen.insert({v, tags}).second) return;
    eqn(j.eqns[static_cast<std::size_t>(plan.def[vs])], tags);
  }

  // Propagate the tags of e's output to its inputs: elementwise operands
  // share the output's index; a layout primitive's operand gets the tags its
  // index map (ir/index_map.hpp) gives; the start indices and dimension values
  // it reads are scalars.
  void eqn(const Eqn& e, const std::vector<int>& tags) {
    if (prim_kind(e.prim) != Kind::structural) {
      if (!is_fusible(e.prim)) return;
      for (const Atom& in : e.inputs) visit(in, j.type_of(in).rank() == 0 ? std::vector<int>{} : tags);
      return;
    }
    for (std::size_t k = mapped_inputs(e); k < e.inputs.size(); ++k) visit(e.inputs[k], {});
    if (e.prim == Prim::concatenate) {  // fused: the pieces of an index vector (fusion.hpp)
      std::vector<int> t = tags;
      int& last = t[static_cast<std::size_t>(std::get<ConcatenateParams>(e.params).dimension)];
      if (last != kInner) last = kMixed;
      for (const Atom& in : e.inputs) visit(in, t);
      return;
    }
    if (e.prim == Prim::gather) visit(e.inputs[1], axes_tags(j, e, index_map(j, e, 1), tags, 1));
    const IndexMap m = index_map(j, e);
    if (m.form == IndexMap::Form::iota || !e.inputs[0].is_var()) return;  // reads no array
    const std::vector<JDim>& od = j.types[static_cast<std::size_t>(e.outputs[0])].shape;
    const std::vector<JDim>& xd = j.type_of(e.inputs[0]).shape;
    if (m.form == IndexMap::Form::linear) return visit(e.inputs[0], linear_tags(xd, od, tags));
    visit(e.inputs[0], axes_tags(j, e, m, tags, 0));
  }

  // The tags of input k's axes under axes-form map m, from the output's.
  // An input axis that follows an output axis unchanged keeps its tag; one
  // that shifts or strides it stays in the row only if that axis is not a
  // row axis. A start read from data (gather) may be any row: mixed.
  static std::vector<int> axes_tags(const Jaxpr& j, const Eqn& e, const IndexMap& m, const std::vector<int>& tags,
                                    std::size_t k) {
    const std::vector<JDim>& od = j.types[static_cast<std::size_t>(e.outputs[0])].shape;
    const std::vector<JDim>& xd = j.type_of(e.inputs[k]).shape;
    std::vector<int> xt(xd.size(), kInner);
    for (std::size_t i = 0; i < xd.size(); ++i) {
      const AxisMap& a = m.axes[i];
      if (is_unit(xd[i])) continue;
      if (a.start == AxisMap::Start::gathered) {
        xt[i] = kMixed;
        continue;
      }
      if (a.out_axis < 0) continue;
      const int tag = tags[static_cast<std::size_t>(a.out_axis)];
      xt[i] = a.passes_through() && xd[i] == od[static_cast<std::size_t>(a.out_axis)] ? tag
              : tag == kInner                                                          ? kInner
                                                                                       : kMixed;
    }
    return xt;
  }
};

}  // namespace row_detail

inline void plan_row_groups(const Jaxpr& j, FusionPlan& plan) {
  using namespace row_detail;
  const std::size_t nv = j.types.size(), ne = j.eqns.size();
  plan.groups.clear();
  plan.group_of.assign(ne, -1);
  plan.row_local.assign(nv, false);
  std::vector<int> roots;  // what the lowering emits, in order
  for (std::size_t i = 0; i < ne; ++i)
    if (plan.live[i] && (j.eqns[i].outputs.empty() || plan.materialised[static_cast<std::size_t>(j.eqns[i].outputs[0])]) &&
        (plan.in_prologue.empty() || !plan.in_prologue[i]))
      roots.push_back(static_cast<int>(i));
  std::vector<bool> member(nv, false);
  for (std::size_t k = 0; k < roots.size();) {
    const Eqn& seed = j.eqns[static_cast<std::size_t>(roots[k])];
    std::size_t t = 0;
    std::vector<JDim> rows;
    // Unknown sizes: a runtime number of rows may be >= 2, and a row with a
    // runtime dimension counts as long (>= kMinRowElements); see plan_fusion.
    if (!trailing_reduction(j, seed, t, rows) || !sym_numel(rows).may_exceed(1) ||
        !sym_numel(j.type_of(seed.inputs[0]).shape, t).may_exceed(kMinRowElements - 1)) {
      ++k;
      continue;
    }
    RowGroup g{{roots[k]}, rows, {}};
    for (const JDim& d : rows) g.rows.push_back(d.is_static() ? d.value : kDynamicDim);
    member.assign(nv, false);
    member[static_cast<std::size_t>(seed.outputs[0])] = true;
    std::size_t m = k + 1;
    for (; m < roots.size(); ++m) {
      const Eqn& e = j.eqns[static_cast<std::size_t>(roots[m])];
      RowWalk w(j, plan, t, rows, member);
      if (prim_kind(e.prim) == Kind::reduction) {
        std::size_t te = 0;
        std::vector<JDim> re;
        if (!trailing_reduction(j, e, te, re) || te != t || re != rows ||
            !sym_numel(j.type_of(e.inputs[0]).shape, t).may_exceed(0))
          break;
        w.visit(e.inputs[0], w.root_tags(j.type_of(e.inputs[0]).shape));
      } else if (is_fusible(e.prim)) {
        const std::vector<JDim>& od = j.types[static_cast<std::size_t>(e.outputs[0])].shape;
        if (od.size() < t || !std::equal(rows.begin(), rows.end(), od.begin())) break;
        w.eqn(e, w.root_tags(od));
      } else {
        break;
      }
      if (!w.aligned || !w.linked) break;
      g.members.push_back(roots[m]);
      member[static_cast<std::size_t>(e.outputs[0])] = true;
    }
    if (g.members.size() >= 2) {
      const int gi = static_cast<int>(plan.groups.size());
      const int last = g.members.back();
      for (int ei : g.members) {
        plan.group_of[static_cast<std::size_t>(ei)] = gi;
        const auto vs = static_cast<std::size_t>(j.eqns[static_cast<std::size_t>(ei)].outputs[0]);
        // Read only inside the group (and row-aligned there, by the join
        // condition): one row suffices.
        if (plan.out_slot[vs] < 0 && plan.last_read[vs] <= last) plan.row_local[vs] = true;
      }
      plan.groups.push_back(std::move(g));
      k = m;
    } else {
      ++k;
    }
  }
}

}  // namespace dyn::detail
