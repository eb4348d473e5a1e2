// dynstage: the jaxpr rewrites before fusion planning (no LLVM here):
// inline_checkpoints puts each checkpoint's body in its place, and
// canonicalize_dots makes every dot_general a batched matrix product
// (B,M,K) x (B,K,N) on reshaped/transposed operands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "fusion_plan.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// canonicalize_dots
//
// 1. For dot_general(lhs, rhs): lhs axes in the order batch, free,
//    contracting and rhs axes in the order batch, contracting, free.
// 2. Insert a transpose where that order is not the identity, and a reshape
//    to (B,M,K) / (B,K,N) where the rank or shape differs. Except: an operand
//    whose axes are already in the order batch, contracting, free (lhs) or
//    batch, free, contracting (rhs) is kept as it is stored, reshaped to
//    (B,K,M) / (B,N,K): the GEMM's packing reads it transposed, so the
//    transposed forms of a gradient (x^T y, x y^T) materialise no transpose.
// 3. The dot keeps its output variable and type: (B,M,N) in row-major order is
//    exactly the layout of [batch..., lhs free..., rhs free...].
// The lowering then handles only dot_general((B,M,K) or (B,K,M), (B,K,N) or
// (B,N,K)): contracting axis 2 or 1 of the lhs, 1 or 2 of the rhs, batch 0.

inline bool is_canonical_dot(const DotGeneralParams& p) {
  const auto one = [](const std::vector<std::int64_t>& v, std::int64_t a, std::int64_t b) {
    return v.size() == 1 && (v[0] == a || v[0] == b);
  };
  return one(p.lhs_contracting, 2, 1) && one(p.rhs_contracting, 1, 2) && p.lhs_batch == std::vector<std::int64_t>{0} &&
         p.rhs_batch == std::vector<std::int64_t>{0};
}
// Of a canonical dot: the lhs stored (B,K,M), the rhs stored (B,N,K).
inline bool dot_lhs_transposed(const DotGeneralParams& p) { return p.lhs_contracting[0] == 1; }
inline bool dot_rhs_transposed(const DotGeneralParams& p) { return p.rhs_contracting[0] == 2; }

// ---------------------------------------------------------------------------
// inline_checkpoints
//
// A checkpoint equation computes its body on its operands; what reverse mode
// recomputes is already a second checkpoint in the program. The backend
// lowers the body's equations in place, so they fuse with their neighbours
// (a checkpoint is no barrier to fusion here, and the backend does no CSE
// that could undo the recomputation). Each body variable becomes a new
// variable of `j` (its dimensions mapped as its values are), and uses of
// the equation's outputs read the body's results. Checkpoints nested in
// loop bodies and branches are inlined when those are lowered
// (lower_control.hpp canonicalizes each body).
inline Jaxpr inline_checkpoints(const Jaxpr& in) {
  if (std::none_of(in.eqns.begin(), in.eqns.end(), [](const Eqn& e) { return e.prim == Prim::checkpoint; }))
    return in;
  Jaxpr j = in;
  j.eqns.clear();
  std::vector<std::optional<Atom>> sub(in.types.size());  // an inlined equation's output -> its value
  auto outer = [&](const Atom& a) {
    return a.is_var() && sub[static_cast<std::size_t>(a.var)] ? *sub[static_cast<std::size_t>(a.var)] : a;
  };
  auto as_dim = [](const Atom& a) { return a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.as<std::int64_t>(), -1}; };
  for (const Eqn& e0 : in.eqns) {
    Eqn e = e0;
    for (Atom& a : e.inputs) a = outer(a);
    if (e.prim != Prim::checkpoint) {
      j.eqns.push_back(std::move(e));
      continue;
    }
    const Jaxpr body = inline_checkpoints(*std::get<CheckpointParams>(e.params).jaxpr);
    if (!body.constvars.empty()) internal_error("inline_checkpoints: a checkpoint body with constvars");
    std::vector<std::optional<Atom>> map(body.types.size());
    for (std::size_t k = 0; k < body.invars.size(); ++k) map[static_cast<std::size_t>(body.invars[k])] = e.inputs.at(k);
    auto read = [&](const Atom& a) { return a.is_var() ? *map.at(static_cast<std::size_t>(a.var)) : a; };
    for (const Eqn& be : body.eqns) {
      Eqn q = be;
      for (Atom& a : q.inputs) a = read(a);
      for (int& v : q.outputs) {
        Type t = body.types[static_cast<std::size_t>(v)];
        for (JDim& d : t.shape)
          if (!d.is_static()) d = as_dim(read(Atom::of_var(d.var)));
        const int w = j.new_var(std::move(t));
        map[static_cast<std::size_t>(v)] = Atom::of_var(w);
        v = w;
      }
      j.eqns.push_back(std::move(q));
    }
    for (std::size_t k = 0; k < e.outputs.size(); ++k) sub[static_cast<std::size_t>(e.outputs[k])] = read(body.outvars.at(k));
  }
  for (Type& t : j.types)
    for (JDim& d : t.shape)
      if (!d.is_static() && static_cast<std::size_t>(d.var) < sub.size()) d = as_dim(outer(Atom::of_var(d.var)));
  for (Atom& a : j.outvars) a = outer(a);
  return j;
}

// ---------------------------------------------------------------------------
// canonicalize_dots (checkpoints inlined first)

inline Jaxpr canonicalize_dots(const Jaxpr& in0) {
  const Jaxpr in = inline_checkpoints(in0);
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
    auto order = [](std::vector<std::int64_t> v, const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& y) {
      v.insert(v.end(), x.begin(), x.end());
      v.insert(v.end(), y.begin(), y.end());
      return v;
    };
    auto is_identity = [](const std::vector<std::int64_t>& perm) {
      for (std::size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<std::int64_t>(i)) return false;
      return true;
    };
    const auto lperm = order(p.lhs_batch, lf, p.lhs_contracting), rperm = order(p.rhs_batch, p.rhs_contracting, rf);
    const auto lperm_t = order(p.lhs_batch, p.lhs_contracting, lf), rperm_t = order(p.rhs_batch, rf, p.rhs_contracting);
    const bool ta = !is_identity(lperm) && is_identity(lperm_t), tb = !is_identity(rperm) && is_identity(rperm_t);
    Eqn d = e;
    d.inputs = {ta ? canon(e.inputs[0], lperm_t, {B, K, M}) : canon(e.inputs[0], lperm, {B, M, K}),
                tb ? canon(e.inputs[1], rperm_t, {B, N, K}) : canon(e.inputs[1], rperm, {B, K, N})};
    d.params = DotGeneralParams{{ta ? 1 : 2}, {tb ? 2 : 1}, {0}, {0}};
    j.eqns.push_back(std::move(d));
  }
  return j;
}

}  // namespace dyn::detail
