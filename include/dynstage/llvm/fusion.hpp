// dynstage: the backend's jaxpr-level passes (no LLVM here).
//
//   canonicalize_dots  every dot_general becomes a batched matrix product
//                      (B,M,K) x (B,K,N) on reshaped/transposed operands
//   plan_fusion        decides which values get a buffer ("materialised");
//                      every other value is computed inline, at the index
//                      its consumer asks for, inside the consumer's loop nest
//
// Fusion rule (what the LLVM lowering relies on):
//  1. Fusible primitives: those whose table row says `fused` (prims.hpp):
//     elementwise (unary, binary, compare, select_n, convert_element_type)
//     and index remaps (broadcast_in_dim, reshape, squeeze, transpose,
//     slice, dynamic_slice, iota). They never get a buffer of their own
//     unless rule 3 says so.
//  2. Materialisation points (own loop nests): jaxpr inputs and outputs,
//     reductions, dot_general, concatenate, dynamic_update_slice.
//     A dot_general operand must be a buffer: if it is not one (possibly
//     through reshapes, which keep the row-major order), it is materialised.
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

// A dimension that is statically 1 (a runtime dimension never counts as 1:
// decisions taken for "not 1" stay correct when it is 1 at run time).
inline bool is_unit(const JDim& d) { return d.is_static() && d.value == 1; }

// The table's columns (prims.hpp) this pass reads.
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
// canonicalize_dots
//
// 1. For dot_general(lhs, rhs): lhs axes in the order batch, free,
//    contracting and rhs axes in the order batch, contracting, free.
// 2. Insert a transpose where that order is not the identity, and a reshape
//    to (B,M,K) / (B,K,N) where the rank or shape differs.
// 3. The dot keeps its output variable and type: (B,M,N) in row-major order is
//    exactly the layout of [batch..., lhs free..., rhs free...].
// The lowering then handles only dot_general((B,M,K), (B,K,N)).

inline bool is_canonical_dot(const DotGeneralParams& p) {
  return p.lhs_contracting == std::vector<std::int64_t>{2} && p.rhs_contracting == std::vector<std::int64_t>{1} &&
         p.lhs_batch == std::vector<std::int64_t>{0} && p.rhs_batch == std::vector<std::int64_t>{0};
}

inline Jaxpr canonicalize_dots(const Jaxpr& in) {
  Jaxpr j = in;
  j.eqns.clear();
  // A product of dimensions as one JDim: static, a dimension variable, or a
  // new i64[] `mul` equation over the variables (runtime dimensions), so the
  // (B,M,K)/(B,K,N) operand types stay closed jaxpr types.
  auto prod = [&](const std::vector<JDim>& dims, const std::vector<std::int64_t>& axes) -> JDim {
    std::int64_t k = 1;
    std::vector<int> vars;
    for (auto a : axes) {
      const JDim& d = dims[static_cast<std::size_t>(a)];
      if (d.is_static()) k *= d.value;
      else vars.push_back(d.var);
    }
    if (vars.empty() || k == 0) return JDim{k, -1};
    if (vars.size() == 1 && k == 1) return JDim::of_var(vars[0]);
    const Type i64s{DType::i64, {}, false};
    Atom acc = Atom::of_var(vars[0]);
    auto mul = [&](Atom y) {
      const int v = j.new_var(i64s);
      j.eqns.push_back(Eqn{Prim::mul, {acc, y}, {v}, NoParams{}});
      acc = Atom::of_var(v);
    };
    for (std::size_t i = 1; i < vars.size(); ++i) mul(Atom::of_var(vars[i]));
    if (k != 1) mul(Atom::literal(Scalar::of<std::int64_t>(k)));
    return JDim::of_var(acc.var);
  };
  // Bring operand `x` to axis order `perm` and shape `target`.
  auto canon = [&](const Atom& x, const std::vector<std::int64_t>& perm, const std::vector<JDim>& target) -> Atom {
    const Type t = j.type_of(x);
    Atom cur = x;
    bool identity = true;
    for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
    std::vector<JDim> pdims;
    for (auto a : perm) pdims.push_back(t.shape[static_cast<std::size_t>(a)]);
    if (!identity) {
      const int v = j.new_var(Type{t.dtype, pdims, false});
      j.eqns.push_back(Eqn{Prim::transpose, {cur}, {v}, TransposeParams{perm}});
      cur = Atom::of_var(v);
    }
    if (pdims != target) {
      const int v = j.new_var(Type{t.dtype, target, false});
      ReshapeParams rp;
      std::vector<Atom> ins{cur};
      for (const JDim& d : target) {
        rp.new_sizes.push_back(d.is_static() ? d.value : kDynamicDim);
        if (!d.is_static()) ins.push_back(Atom::of_var(d.var));
      }
      j.eqns.push_back(Eqn{Prim::reshape, std::move(ins), {v}, std::move(rp)});
      cur = Atom::of_var(v);
    }
    return cur;
  };
  for (const Eqn& e : in.eqns) {
    if (e.prim != Prim::dot_general) {
      j.eqns.push_back(e);
      continue;
    }
    const auto& p = std::get<DotGeneralParams>(e.params);
    const std::vector<JDim> ld = j.type_of(e.inputs[0]).shape, rd = j.type_of(e.inputs[1]).shape;
    const auto lf = dot_free_axes(static_cast<int>(ld.size()), p.lhs_batch, p.lhs_contracting);
    const auto rf = dot_free_axes(static_cast<int>(rd.size()), p.rhs_batch, p.rhs_contracting);
    const JDim B = prod(ld, p.lhs_batch), M = prod(ld, lf), K = prod(ld, p.lhs_contracting), N = prod(rd, rf);
    std::vector<std::int64_t> lperm = p.lhs_batch, rperm = p.rhs_batch;
    lperm.insert(lperm.end(), lf.begin(), lf.end());
    lperm.insert(lperm.end(), p.lhs_contracting.begin(), p.lhs_contracting.end());
    rperm.insert(rperm.end(), p.rhs_contracting.begin(), p.rhs_contracting.end());
    rperm.insert(rperm.end(), rf.begin(), rf.end());
    Eqn d = e;
    d.inputs = {canon(e.inputs[0], lperm, {B, M, K}), canon(e.inputs[1], rperm, {B, K, N})};
    d.params = DotGeneralParams{{2}, {1}, {0}, {0}};
    j.eqns.push_back(std::move(d));
  }
  return j;
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
};

inline constexpr int kExpensiveCost = 20;

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
        for (std::size_t i = 0; i < num_data_inputs(e); ++i) visit(e.inputs[i], nest, ei, space, order);
        return;
      }
      case Kind::reduction:
      case Kind::contraction:
      case Kind::control: internal_error("plan_fusion: a reduction, dot_general or control equation is not fusible");
    }
  }

  // Whether a broadcast from `from` to `to` repeats elements. With runtime
  // dimensions: unless the sizes are provably equal (conservative: an
  // expensive operand is then materialised rather than recomputed).
  static bool expands(const Type& from, const Type& to) {
    const SymNumel a = sym_numel(from), b = sym_numel(to);
    if (a.is_static() && b.is_static()) return a.k < b.k;
    return !(a == b);
  }

  // Walk the nest(s) of root eqn `ei`.
  void walk_root(int ei) {
    const Eqn& e = j.eqns[static_cast<std::size_t>(ei)];
    const SymNumel space = sym_numel(j.types[static_cast<std::size_t>(e.outputs[0])]);
    switch (e.prim) {
      case Prim::dot_general:
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
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
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
        visit(e.inputs[0], ei, -1, sym_numel(j.type_of(e.inputs[0])), ei);
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
      case Prim::iota:
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
  if (prim_kind(e.prim) != Kind::reduction || !e.inputs[0].is_var()) return false;
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

  // Propagate the tags of e's output to its data inputs.
  void eqn(const Eqn& e, const std::vector<int>& tags) {
    const std::vector<JDim>& od = j.types[static_cast<std::size_t>(e.outputs[0])].shape;
    auto dims_of = [&](const Atom& x) { return j.type_of(x).shape; };
    const Atom x = e.inputs.empty() ? Atom{} : e.inputs[0];  // an index remap's operand
    switch (e.prim) {
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
        for (const Atom& in : e.inputs) visit(in, j.type_of(in).rank() == 0 ? std::vector<int>{} : tags);
        return;
      case Prim::iota: return;  // reads no array
      case Prim::concatenate:
      case Prim::dynamic_update_slice:
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
      case Prim::dot_general:
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL) return;  // never fused
      case Prim::broadcast_in_dim: {
        if (!x.is_var()) return;
        const auto xd = dims_of(x);
        const auto& bd = std::get<BroadcastInDimParams>(e.params).broadcast_dimensions;
        std::vector<int> xt(xd.size(), kInner);
        for (std::size_t i = 0; i < xd.size(); ++i)
          if (!is_unit(xd[i])) xt[i] = tags[static_cast<std::size_t>(bd[i])];
        return visit(x, xt);
      }
      case Prim::transpose: {
        if (!x.is_var()) return;
        const auto& perm = std::get<TransposeParams>(e.params).permutation;
        std::vector<int> xt(perm.size(), kInner);
        for (std::size_t i = 0; i < perm.size(); ++i) xt[static_cast<std::size_t>(perm[i])] = tags[i];
        return visit(x, xt);
      }
      case Prim::reshape:
      case Prim::squeeze: {
        if (!x.is_var()) return;
        // Same row-major linear index. Match the non-unit axes in blocks of
        // equal size products: a one-to-one block keeps its tag; a merged or
        // split block is row-free only if all its output axes are. Runtime
        // dimensions match only one-to-one (equal variables); past a block
        // that cannot be matched, the remaining operand axes are row-free if
        // all remaining output axes are, else mixed (conservative).
        const auto xd = dims_of(x);
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
        return visit(x, xt);
      }
      case Prim::slice:
      case Prim::dynamic_slice: {
        if (!x.is_var()) return;
        const auto xd = dims_of(x);
        std::vector<int> xt(xd.size(), kInner);
        for (std::size_t i = 0; i < xd.size(); ++i) {
          bool identity = od[i] == xd[i];  // runtime dimensions: the same variable
          if (e.prim == Prim::slice) {
            const auto& sp = std::get<SliceParams>(e.params);
            identity = identity && sp.start_indices[i] == 0 && (sp.strides.empty() || sp.strides[i] == 1);
          }
          if (is_unit(xd[i])) xt[i] = kInner;
          else if (identity) xt[i] = tags[i];
          else xt[i] = tags[i] == kInner ? kInner : kMixed;
        }
        if (e.prim == Prim::dynamic_slice)
          for (std::size_t k = 1; k < e.inputs.size(); ++k) visit(e.inputs[k], {});
        return visit(x, xt);
      }
    }
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
    if (plan.live[i] && plan.materialised[static_cast<std::size_t>(j.eqns[i].outputs[0])] &&
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
inline FusionPlan plan_fusion(const Jaxpr& j) {
  using namespace fusion_detail;
  const std::size_t nv = j.types.size(), ne = j.eqns.size();
  FusionPlan plan;
  plan.def.assign(nv, -1);
  plan.live.assign(ne, false);
  plan.materialised.assign(nv, false);
  plan.out_slot.assign(nv, -1);
  plan.why.assign(nv, "");
  for (std::size_t i = 0; i < ne; ++i) {
    if (j.eqns[i].outputs.size() != 1 && prim_kind(j.eqns[i].prim) != Kind::control)
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
    bool any = false;
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
    // buffers): they are copied into the results afterwards.
    const bool control = plan.def[vs] >= 0 && prim_kind(j.eqns[static_cast<std::size_t>(plan.def[vs])].prim) == Kind::control;
    if (plan.out_slot[vs] < 0 && plan.def[vs] >= 0 && !control) plan.out_slot[vs] = static_cast<int>(k);
  }
  for (std::size_t i = 0; i < ne; ++i) {
    const Eqn& e = j.eqns[i];
    if (!plan.live[i]) continue;
    if (!is_fusible(e.prim))
      for (int v : e.outputs) mark(plan, v, std::string(prim_name(e.prim)));
    // Control flow is a materialisation barrier: its bodies are functions
    // of their own that take buffers (lower_control.hpp).
    if (prim_kind(e.prim) == Kind::control)
      for (const Atom& a : e.inputs)
        if (a.is_var()) mark(plan, a.var, "control operand");
    if (e.prim == Prim::dot_general) {
      for (const Atom& a : e.inputs) {
        if (!a.is_var()) continue;
        int v = a.var;
        while (!plan.materialised[static_cast<std::size_t>(v)]) {
          const Eqn& d = j.eqns[static_cast<std::size_t>(plan.def[static_cast<std::size_t>(v)])];
          if ((d.prim != Prim::reshape && d.prim != Prim::squeeze) || !d.inputs[0].is_var()) break;
          v = d.inputs[0].var;
        }
        mark(plan, v, "dot_general operand");
      }
    }
  }

  // Rule 3, to a fixed point.
  for (;;) {
    plan.last_read.assign(nv, -1);
    Walk w(j, plan);
    for (std::size_t i = 0; i < ne; ++i)
      if (plan.live[i] && plan.materialised[static_cast<std::size_t>(j.eqns[i].outputs[0])])
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
  return plan;
}

// One line per live equation: its output variable (#index), primitive, and
// "buffer (why)" or "fused". For dumps and tests.
inline std::string plan_str(const Jaxpr& j, const FusionPlan& plan) {
  std::string r;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    if (!plan.live[i]) continue;
    const int v = j.eqns[i].outputs[0];
    const auto vs = static_cast<std::size_t>(v);
    r += "#" + std::to_string(v) + " = " + std::string(prim_name(j.eqns[i].prim)) + ": " +
         (plan.materialised[vs] ? "buffer (" + plan.why[vs] + ")" : std::string("fused"));
    if (!plan.in_prologue.empty() && plan.in_prologue[i]) r += ", at entry";
    if (!plan.group_of.empty() && plan.group_of[i] >= 0)
      r += ", row group " + std::to_string(plan.group_of[i]) + (plan.row_local[vs] ? ", one row" : "");
    r += "\n";
  }
  return r;
}

}  // namespace dyn::detail
