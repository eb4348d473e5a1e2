// dynstage: forward mode through control flow: the JVP rules of for_loop,
// while_loop, cond (and switch_, which is cond with an index) and scan
// (issue 20; JAX's _cond_jvp, _scan_jvp and _while_loop_jvp in
// jax/_src/lax/control_flow/{conditionals,loops}.py).
//
// A rule differentiates the bodies into bodies that also carry tangents and
// binds the primitive again with the extended operands and params:
//   - jvp_jaxpr, the JVP of a jaxpr: jvp_eval traced over it in a new
//     TraceScope, on argument tracers of the body's input types (each body
//     input's dimensions are the earlier inputs' dimension variables), giving
//     a new body whose inputs are the old ones plus one tangent per input
//     with a nonzero tangent, and whose outputs are the old ones plus one
//     tangent per output with a nonzero tangent (or one asked for).
//   - Symbolic zeros stay out: only nonzero tangents are operands, carries
//     or results. A loop carry whose tangent is zero on entry but nonzero
//     after the body (`c * x` with x differentiated) is found by a fixed
//     point (JAX's _jvp_fixpoint): the set of carries with tangents grows
//     until the body's nonzero tangent outputs are inside it.
//   - Dimension and size operands (implicit loop variables, bounds, the
//     for-loop index, a dynamic scan length) keep their places; tangents go
//     into the float groups: constants' tangents after the constants, the
//     carries' after the carries, xs tangents after the xs, so the layouts
//     of params.hpp hold and loop-carried sizes flow as they are (a
//     tangent has its primal's type, so it shares its dimension variables).
//   - while_loop's predicate sees primals only: its body takes the carries'
//     tangents as unused inputs.
// Constants the differentiated body captures (concrete arrays made by a
// rule) become leading body constants, as Catalyst's no-constant form has
// them.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "jvp.hpp"

namespace dyn::detail {

// The JVP of a jaxpr without constvars (a control-flow body).
struct JvpJaxpr {
  // invars: the new constants, j's invars, then a tangent per j invar k
  // with nonzero_in[k]; outvars: j's outvars, then a tangent per outvar k
  // with nonzero_out[k]. (No constvars.)
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;  // the new constants' values
  std::vector<bool> nonzero_out;
};

// nonzero_in: which invars have tangents (floating-point ones only);
// instantiate: outvars whose tangent is returned even when it is zero.
JvpJaxpr jvp_jaxpr(const Jaxpr& j, const std::vector<bool>& nonzero_in, const std::vector<bool>& instantiate);

#ifdef DYNSTAGE_IMPLEMENTATION

JvpJaxpr jvp_jaxpr(const Jaxpr& j, const std::vector<bool>& nonzero_in, const std::vector<bool>& instantiate) {
  if (!j.constvars.empty()) internal_error("jvp_jaxpr: a body with constvars");
  TraceScope scope;
  std::vector<std::optional<Dim>> dim(j.types.size());  // the dimension each i64[] invar stands for
  std::vector<Value> args;
  for (int v : j.invars) args.push_back(new_body_arg(scope, j, v, dim));
  std::vector<Tangent> targs;
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    targs.push_back(nonzero_in.at(k) ? Tangent(scope.new_arg(args[k].aval())) : std::nullopt);
  const JvpOut o = jvp_eval(j, {}, args, targs);
  JvpJaxpr r;
  std::vector<Value> outs = o.primals;
  for (std::size_t k = 0; k < o.primals.size(); ++k) {
    const Value& y = o.primals[k];
    const bool nz = differentiable_dtype(y.dtype()) && (o.tangents[k] || instantiate.at(k));
    r.nonzero_out.push_back(nz);
    if (nz)
      outs.push_back(o.tangents[k] ? jvp_detail::fit(*o.tangents[k], y.shape(), /*stage=*/true)
                                   : jvp_detail::zeros_like(y));
  }
  r.jaxpr = scope.finish(outs, /*implicit_results=*/false);
  r.consts = scope.const_sources();
  Jaxpr& b = *r.jaxpr;
  // Catalyst's no-constant form; explicitness as j's, the additions explicit.
  const std::size_t m = b.constvars.size();
  b.invars.insert(b.invars.begin(), b.constvars.begin(), b.constvars.end());
  b.constvars.clear();
  b.in_explicit.clear();
  if (!j.in_explicit.empty()) {
    b.in_explicit.assign(m, true);
    b.in_explicit.insert(b.in_explicit.end(), j.in_explicit.begin(), j.in_explicit.end());
    b.in_explicit.resize(b.invars.size(), true);
  }
  b.out_explicit.clear();
  if (!j.out_explicit.empty()) {
    b.out_explicit = j.out_explicit;
    b.out_explicit.resize(b.outvars.size(), true);
  }
  return r;
}

namespace jvp_control {

// The invars of `b` (laid out as jvp_jaxpr's: m new constants, n old
// invars, then the tangents) reordered: `order` lists positions in the old
// list. Explicitness follows.
inline void reorder_invars(Jaxpr& b, const std::vector<std::size_t>& order) {
  std::vector<int> invars;
  std::vector<bool> expl;
  for (std::size_t q : order) {
    invars.push_back(b.invars.at(q));
    if (!b.in_explicit.empty()) expl.push_back(b.in_explicit.at(q));
  }
  b.invars = std::move(invars);
  b.in_explicit = std::move(expl);
}

inline std::vector<std::size_t> range(std::size_t from, std::size_t to) {
  std::vector<std::size_t> r;
  for (std::size_t q = from; q < to; ++q) r.push_back(q);
  return r;
}
inline void append(std::vector<std::size_t>& v, const std::vector<std::size_t>& w) { v.insert(v.end(), w.begin(), w.end()); }

inline bool has_tangent(const Tangent& t, const Value& x) { return t.has_value() && differentiable_dtype(x.dtype()); }

// A loop body's JVP at the fixed point of its carried tangents. The body's
// invars are [consts (nc), other (no tangents: implicit, index), carried
// (ncar), rest (xs for scan)], its outvars [outpre (no tangents), carried,
// outpost]; `nonzero` holds the constants', carries' and rest's tangent
// flags on entry and the carries' at the fixed point on return.
struct LoopJvp {
  JvpJaxpr jj;
  std::vector<bool> carried;  // which carries have tangents
};
inline LoopJvp loop_fixpoint(const Jaxpr& body, const std::vector<bool>& consts_nz, std::size_t nother,
                             std::vector<bool> carried_nz, const std::vector<bool>& rest_nz, std::size_t noutpre,
                             std::size_t noutpost) {
  for (;;) {
    std::vector<bool> in = consts_nz;
    in.resize(in.size() + nother, false);
    in.insert(in.end(), carried_nz.begin(), carried_nz.end());
    in.insert(in.end(), rest_nz.begin(), rest_nz.end());
    std::vector<bool> inst(noutpre, false);
    inst.insert(inst.end(), carried_nz.begin(), carried_nz.end());
    inst.resize(inst.size() + noutpost, false);
    JvpJaxpr jj = jvp_jaxpr(body, in, inst);
    bool grew = false;
    for (std::size_t c = 0; c < carried_nz.size(); ++c)
      if (jj.nonzero_out[noutpre + c] && !carried_nz[c]) grew = carried_nz[c] = true;
    if (!grew) return {std::move(jj), carried_nz};
  }
}

// Positions of the set flags, offset by `base`.
inline std::vector<std::size_t> flagged(const std::vector<bool>& f, std::size_t base = 0) {
  std::vector<std::size_t> r;
  for (std::size_t k = 0; k < f.size(); ++k)
    if (f[k]) r.push_back(base + k);
  return r;
}
inline std::size_t count(const std::vector<bool>& f) { return flagged(f).size(); }

// The tangent operands for the flagged values of x[from..], zeros where t has none.
inline void push_tangents(std::vector<Value>& ops, const std::vector<Value>& x, const std::vector<Tangent>& t,
                          std::size_t from, const std::vector<bool>& f) {
  for (std::size_t k = 0; k < f.size(); ++k)
    if (f[k]) ops.push_back(jvp_detail::instantiate(t.at(from + k), x.at(from + k)));
}

// A loop body's JVP with its invars in the loop's layout: the JVP's own
// m constants, the body's nc constants and their nct tangents first (all
// body constants), then implicit values, index and carries, then the
// carries' tangents (jvp_jaxpr puts every tangent after the primals).
inline void constants_first(LoopJvp& l, std::size_t nc, std::size_t nct, std::size_t body_invars) {
  const std::size_t m = l.jj.consts.size(), n = body_invars;
  std::vector<std::size_t> order = range(0, m + nc);
  append(order, range(m + n, m + n + nct));
  append(order, range(m + nc, m + n));
  append(order, range(m + n + nct, l.jj.jaxpr->invars.size()));
  reorder_invars(*l.jj.jaxpr, order);
}

// A loop's outputs (implicit values, carries, then the tangents of the
// carries that have one) as primals and tangents.
inline JvpOut loop_results(const std::vector<Value>& outs, std::size_t ni, std::size_t ncar,
                           const std::vector<bool>& carried) {
  JvpOut r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(ni + ncar));
  r.tangents.assign(ni + ncar, std::nullopt);
  std::size_t next = ni + ncar;
  for (std::size_t c = 0; c < ncar; ++c)
    if (carried[c]) r.tangents[ni + c] = outs.at(next++);
  return r;
}

inline JvpOut for_loop_jvp(const std::vector<Value>& x, const std::vector<Tangent>& t, const ForLoopParams& p) {
  const Jaxpr& body = *p.body_jaxpr;
  const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
  const std::size_t ncar = body.invars.size() - nc - ni - 1, first_carried = nc + ni + 4;
  std::vector<bool> cnz, inz;
  for (std::size_t k = 0; k < nc; ++k) cnz.push_back(has_tangent(t[k], x[k]));
  for (std::size_t c = 0; c < ncar; ++c) inz.push_back(has_tangent(t[first_carried + c], x[first_carried + c]));
  LoopJvp l = loop_fixpoint(body, cnz, ni + 1, inz, {}, ni, 0);
  // jj's invars: m new consts, consts, implicit, index, carried, then tangents
  // of the consts and of the carries.
  const std::size_t m = l.jj.consts.size(), nct = count(cnz);
  constants_first(l, nc, nct, body.invars.size());
  ForLoopParams q{l.jj.jaxpr, static_cast<int>(m + nc + nct), p.nimplicit, p.preserve_dimensions};
  std::vector<Value> ops = l.jj.consts;
  ops.insert(ops.end(), x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nc));
  push_tangents(ops, x, t, 0, cnz);
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(nc), x.end());
  push_tangents(ops, x, t, first_carried, l.carried);
  std::vector<Value> outs = bind(Prim::for_loop, ops, q);
  return loop_results(outs, ni, ncar, l.carried);
}

inline JvpOut while_loop_jvp(const std::vector<Value>& x, const std::vector<Tangent>& t, const WhileLoopParams& p) {
  const Jaxpr& body = *p.body_jaxpr;
  const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
  const auto ni = static_cast<std::size_t>(p.nimplicit);
  const std::size_t ncar = body.invars.size() - bnc - ni, first_carried = cnc + bnc + ni;
  std::vector<bool> cnz, inz;
  for (std::size_t k = 0; k < bnc; ++k) cnz.push_back(has_tangent(t[cnc + k], x[cnc + k]));
  for (std::size_t c = 0; c < ncar; ++c) inz.push_back(has_tangent(t[first_carried + c], x[first_carried + c]));
  LoopJvp l = loop_fixpoint(body, cnz, ni, inz, {}, ni, 0);
  const std::size_t m = l.jj.consts.size(), nct = count(cnz);
  constants_first(l, bnc, nct, body.invars.size());
  // The predicate reads primals only: the carries' tangents are unused inputs.
  auto cj = std::make_shared<Jaxpr>(*p.cond_jaxpr);
  for (std::size_t c = 0; c < ncar; ++c)
    if (l.carried[c]) {
      const int v = cj->invars.at(cnc + ni + c);
      cj->invars.push_back(cj->new_var(cj->types.at(static_cast<std::size_t>(v))));
      if (!cj->in_explicit.empty()) cj->in_explicit.push_back(true);
    }
  WhileLoopParams q{cj, l.jj.jaxpr, p.cond_nconsts, static_cast<int>(m + bnc + nct), p.nimplicit,
                    p.preserve_dimensions};
  std::vector<Value> ops(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(cnc));
  ops.insert(ops.end(), l.jj.consts.begin(), l.jj.consts.end());
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(cnc), x.begin() + static_cast<std::ptrdiff_t>(cnc + bnc));
  push_tangents(ops, x, t, cnc, cnz);
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(cnc + bnc), x.end());
  push_tangents(ops, x, t, first_carried, l.carried);
  std::vector<Value> outs = bind(Prim::while_loop, ops, q);
  return loop_results(outs, ni, ncar, l.carried);
}

// A cond's branches, each with its own captured constants as leading
// invars (values consts[b]): every branch takes the constants of all of
// them, its own in its place (each has a static shape: a concrete array).
// Returns all the constants' values in order.
inline std::vector<Value> join_branch_constants(const std::vector<std::shared_ptr<Jaxpr>>& branches,
                                                const std::vector<std::vector<Value>>& own) {
  std::vector<Value> consts;
  for (const std::vector<Value>& c : own) consts.insert(consts.end(), c.begin(), c.end());
  std::size_t before = 0;
  for (std::size_t b = 0; b < branches.size(); ++b) {
    Jaxpr& j = *branches[b];
    const std::size_t m = own[b].size();
    std::vector<int> cv;
    for (std::size_t c = 0; c < consts.size(); ++c) {
      if (c >= before && c < before + m) {
        cv.push_back(j.invars[c - before]);
        continue;
      }
      const Aval a = consts[c].aval();
      Type ty{a.dtype, {}, false};
      for (const Dim& d : a.shape) {
        if (!d.is_static()) internal_error("cond: a captured constant of a dynamic shape");
        ty.shape.push_back(JDim{d.value(), -1});
      }
      cv.push_back(j.new_var(std::move(ty)));
    }
    j.invars.erase(j.invars.begin(), j.invars.begin() + static_cast<std::ptrdiff_t>(m));
    j.invars.insert(j.invars.begin(), cv.begin(), cv.end());
    if (!j.in_explicit.empty()) {
      j.in_explicit.erase(j.in_explicit.begin(), j.in_explicit.begin() + static_cast<std::ptrdiff_t>(m));
      j.in_explicit.insert(j.in_explicit.begin(), consts.size(), true);
    }
    before += m;
  }
  return consts;
}

inline JvpOut cond_jvp(const std::vector<Value>& x, const std::vector<Tangent>& t, const CondParams& p) {
  const std::size_t nin = x.size() - 1, nb = p.branches.size();
  const std::size_t nout = p.branches[0]->outvars.size();
  std::vector<bool> in;
  for (std::size_t k = 0; k < nin; ++k) in.push_back(has_tangent(t[1 + k], x[1 + k]));
  // Every branch returns the tangents that any branch has (JAX's _cond_jvp:
  // the union of the branches' nonzero outputs, instantiated).
  std::vector<JvpJaxpr> br;
  std::vector<bool> out(nout, false);
  for (const auto& b : p.branches) {
    br.push_back(jvp_jaxpr(*b, in, std::vector<bool>(nout, false)));
    for (std::size_t k = 0; k < nout; ++k) out[k] = out[k] || br.back().nonzero_out[k];
  }
  for (std::size_t b = 0; b < nb; ++b)
    if (br[b].nonzero_out != out) br[b] = jvp_jaxpr(*p.branches[b], in, out);
  std::vector<std::shared_ptr<Jaxpr>> js;
  std::vector<std::vector<Value>> cs;
  for (JvpJaxpr& b : br) {
    js.push_back(b.jaxpr);
    cs.push_back(b.consts);
  }
  const std::vector<Value> consts = join_branch_constants(js, cs);
  CondParams q{{}, p.nimplicit_outputs, p.indexed};
  for (JvpJaxpr& b : br) q.branches.push_back(b.jaxpr);
  std::vector<Value> ops{x[0]};
  ops.insert(ops.end(), consts.begin(), consts.end());
  ops.insert(ops.end(), x.begin() + 1, x.end());
  push_tangents(ops, x, t, 1, in);
  std::vector<Value> outs = bind(Prim::cond, ops, q);
  JvpOut r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nout));
  r.tangents.assign(nout, std::nullopt);
  std::size_t next = nout;
  for (std::size_t k = 0; k < nout; ++k)
    if (out[k]) r.tangents[k] = outs.at(next++);
  return r;
}

inline JvpOut scan_jvp(const std::vector<Value>& x, const std::vector<Tangent>& t, const ScanParams& p) {
  const Jaxpr& body = *p.jaxpr;
  const auto nc = static_cast<std::size_t>(p.num_consts), ncar = static_cast<std::size_t>(p.num_carry);
  const std::size_t nxs = body.invars.size() - nc - ncar, ny = body.outvars.size() - ncar;
  std::vector<bool> cnz, inz, xnz;
  for (std::size_t k = 0; k < nc; ++k) cnz.push_back(has_tangent(t[k], x[k]));
  for (std::size_t c = 0; c < ncar; ++c) inz.push_back(has_tangent(t[nc + c], x[nc + c]));
  for (std::size_t s = 0; s < nxs; ++s) xnz.push_back(has_tangent(t[nc + ncar + s], x[nc + ncar + s]));
  LoopJvp l = loop_fixpoint(body, cnz, 0, inz, xnz, 0, ny);
  const std::size_t m = l.jj.consts.size(), n = body.invars.size();
  const std::size_t nct = count(cnz), nit = count(l.carried);
  // invars: [m, consts, carry, xs, t consts, t carry, t xs] ->
  //         [m, consts, t consts, carry, t carry, xs, t xs]
  std::vector<std::size_t> order = range(0, m + nc);
  append(order, range(m + n, m + n + nct));
  append(order, range(m + nc, m + nc + ncar));
  append(order, range(m + n + nct, m + n + nct + nit));
  append(order, range(m + nc + ncar, m + n));
  append(order, range(m + n + nct + nit, l.jj.jaxpr->invars.size()));
  reorder_invars(*l.jj.jaxpr, order);
  // outvars: [carry, ys, t carry, t ys] -> [carry, t carry, ys, t ys]
  Jaxpr& b = *l.jj.jaxpr;
  std::vector<Atom> outs(b.outvars.begin(), b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar));
  outs.insert(outs.end(), b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar + ny),
              b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar + ny + nit));
  outs.insert(outs.end(), b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar),
              b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar + ny));
  outs.insert(outs.end(), b.outvars.begin() + static_cast<std::ptrdiff_t>(ncar + ny + nit), b.outvars.end());
  b.outvars = std::move(outs);
  ScanParams q{l.jj.jaxpr, p.length, p.reverse, static_cast<int>(m + nc + nct), static_cast<int>(ncar + nit)};
  std::vector<Value> ops = l.jj.consts;
  ops.insert(ops.end(), x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nc));
  push_tangents(ops, x, t, 0, cnz);
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(nc), x.begin() + static_cast<std::ptrdiff_t>(nc + ncar));
  push_tangents(ops, x, t, nc, l.carried);
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(nc + ncar),
             x.begin() + static_cast<std::ptrdiff_t>(nc + ncar + nxs));
  push_tangents(ops, x, t, nc + ncar, xnz);
  ops.insert(ops.end(), x.begin() + static_cast<std::ptrdiff_t>(nc + ncar + nxs), x.end());  // the dynamic length
  const std::vector<Value> res = bind(Prim::scan, ops, q);
  // res: [carry, t carry, ys, t ys]
  const std::vector<bool>& ynz = l.jj.nonzero_out;  // [carry, ys] flags
  JvpOut r;
  r.tangents.assign(ncar + ny, std::nullopt);
  for (std::size_t c = 0; c < ncar; ++c) r.primals.push_back(res.at(c));
  std::size_t next = ncar;
  for (std::size_t c = 0; c < ncar; ++c)
    if (l.carried[c]) r.tangents[c] = res.at(next++);
  for (std::size_t s = 0; s < ny; ++s) r.primals.push_back(res.at(next++));
  for (std::size_t s = 0; s < ny; ++s)
    if (ynz[ncar + s]) r.tangents[ncar + s] = res.at(next++);
  return r;
}

// checkpoint (JAX's remat_jvp): a checkpoint of the body's JVP, primals
// then the nonzero tangents, so reverse mode can split it without saving
// the body's intermediates.
inline JvpOut checkpoint_jvp(const std::vector<Value>& x, const std::vector<Tangent>& t, const CheckpointParams& p) {
  const std::size_t nout = p.jaxpr->outvars.size();
  std::vector<bool> in;
  for (std::size_t k = 0; k < x.size(); ++k) in.push_back(has_tangent(t[k], x[k]));
  JvpJaxpr b = jvp_jaxpr(*p.jaxpr, in, std::vector<bool>(nout, false));
  std::vector<std::shared_ptr<Jaxpr>> js{b.jaxpr};
  std::vector<std::vector<Value>> cs{b.consts};
  std::vector<Value> ops = join_branch_constants(js, cs);
  ops.insert(ops.end(), x.begin(), x.end());
  push_tangents(ops, x, t, 0, in);
  const std::vector<Value> outs = bind(Prim::checkpoint, ops, CheckpointParams{b.jaxpr, p.prevent_cse, p.differentiated});
  JvpOut r;
  r.primals.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(nout));
  r.tangents.assign(nout, std::nullopt);
  std::size_t next = nout;
  for (std::size_t k = 0; k < nout; ++k)
    if (b.nonzero_out[k]) r.tangents[k] = outs.at(next++);
  return r;
}

}  // namespace jvp_control

JvpOut control_jvp(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t, const Params& params) {
  using namespace jvp_control;
  switch (p) {
    case Prim::for_loop: return for_loop_jvp(x, t, std::get<ForLoopParams>(params));
    case Prim::while_loop: return while_loop_jvp(x, t, std::get<WhileLoopParams>(params));
    case Prim::cond: return cond_jvp(x, t, std::get<CondParams>(params));
    case Prim::scan: return scan_jvp(x, t, std::get<ScanParams>(params));
    case Prim::checkpoint: return checkpoint_jvp(x, t, std::get<CheckpointParams>(params));
    default: internal_error("control_jvp: " + std::string(prim_name(p)) + " is not a control-flow primitive");
  }
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
