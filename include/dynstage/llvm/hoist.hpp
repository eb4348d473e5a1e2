// dynstage: hoist_loop_invariants, loop-invariant code motion on the jaxpr
// before fusion planning (issue 18, item 2; no LLVM here).
//
// A loop body is lowered as a function called once per iteration, so LLVM
// hoists invariant scalars within one iteration's loops but never a whole
// loop nest: `sum(exp(w))` of a constant `w` inside a for_loop ran every
// iteration. Here, in a for_loop, while_loop or scan body, an equation whose
// operands are the body's constants (or results of equations already
// hoisted) and whose result sizes are too moves to the enclosing jaxpr,
// before the loop, with the loop's constant operands for the body's
// constant inputs; its results enter the body as new constants (appended to
// the body's constants: body_nconsts / num_consts grow). As XLA's
// while-loop invariant code motion, hoisted code runs even when the loop
// runs no iteration, so equations that can fail at run time (integer
// division and remainder, which raise on a zero divisor) stay in the body,
// as do effects, control flow and collectives (run once per iteration by
// definition), and cheap equations that inflate (a broadcast the body
// reads: below). Loops nested in a body are handled when that body is lowered
// (lower_control.hpp canonicalizes each body): an equation invariant in both
// loops moves one level per lowering.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "fusion_plan.hpp"

namespace dyn::detail {

// Whether an equation of a loop body may run before the loop instead.
inline bool hoistable_prim(const Jaxpr& body, const Eqn& e) {
  switch (prim_kind(e.prim)) {
    case Kind::unary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert:
    case Kind::structural:
    case Kind::scatter:
    case Kind::reduction:
    case Kind::cumulative:
    case Kind::sort:
    case Kind::fft:
    case Kind::contraction: return true;
    case Kind::binary:
      return !((e.prim == Prim::div || e.prim == Prim::rem) && !e.outputs.empty() &&
               !is_inexact(body.types.at(static_cast<std::size_t>(e.outputs[0])).dtype));
    case Kind::control:
    case Kind::effect:
    case Kind::collective: return false;
  }
  return false;
}

// Whether e's result may hold more elements than its array operands
// together (sizes that do not provably compare count as more).
inline bool inflates(const Jaxpr& body, const Eqn& e) {
  const SymNumel r = sym_numel(body.types[static_cast<std::size_t>(e.outputs[0])]);
  SymNumel in{0, {}};  // the operands' elements together, while static
  for (const Atom& a : e.inputs) {
    if (!a.is_var()) continue;
    const SymNumel x = sym_numel(body.type_of(a));
    if (x == r) return false;
    if (!x.is_static()) return true;
    in.k += x.k;
  }
  return may_grow(in, r);
}

// The loop equation `e` of `out` (its body at params, its body's constants
// at operands [off, off + nconsts)) with its invariant equations emitted
// into `out` first. Returns the new body (nullptr: nothing hoisted).
inline std::shared_ptr<Jaxpr> hoist_from_body(Jaxpr& out, Eqn& e, const Jaxpr& body, std::size_t off,
                                              std::size_t nconsts) {
  const std::size_t n = body.types.size();
  std::vector<std::optional<Atom>> outer(n);  // an invariant body variable's value in `out`
  for (std::size_t k = 0; k < nconsts; ++k) outer[static_cast<std::size_t>(body.invars[k])] = e.inputs.at(off + k);
  auto as_outer = [&](const Atom& a) { return a.is_var() ? *outer[static_cast<std::size_t>(a.var)] : a; };
  // outside[q]: equation q runs before the loop; inside[q]: it stays in the
  // body (both: a copy of it runs before the loop for hoisted readers).
  std::vector<bool> outside(body.eqns.size(), false), inside(body.eqns.size(), true);
  {
    std::vector<bool> inv(n, false);  // invariant: the loop's constants, and what hoisted equations compute
    for (std::size_t k = 0; k < nconsts; ++k) inv[static_cast<std::size_t>(body.invars[k])] = true;
    for (std::size_t q = 0; q < body.eqns.size(); ++q) {
      const Eqn& be = body.eqns[q];
      if (!hoistable_prim(body, be)) continue;
      bool ok = true;
      for (const Atom& a : be.inputs) ok = ok && (!a.is_var() || inv[static_cast<std::size_t>(a.var)]);
      for (int v : be.outputs)
        for (const JDim& d : body.types[static_cast<std::size_t>(v)].shape)
          ok = ok && (d.is_static() || inv[static_cast<std::size_t>(d.var)]);
      if (!ok) continue;
      outside[q] = true;
      inside[q] = false;
      for (int v : be.outputs) inv[static_cast<std::size_t>(v)] = true;
    }
    // A cheap equation that inflates (a broadcast, a pad, an iota) stays in
    // the body when the body reads its result, as in XLA's invariant code
    // motion (no size-inflating ops): hoisted, its result would enter the
    // body as a buffer of the large size, read from memory every iteration
    // (a [n, 1] mask broadcast to [n, n]: n * n elements per iteration),
    // where fused it costs no memory. It still runs before the loop too
    // when a hoisted equation reads it (`sum(broadcast(w))`). Backwards, so
    // that what such an equation reads counts as read by the body in turn.
    std::vector<bool> read_in(n, false), read_out(n, false);
    for (const Atom& a : body.outvars)
      if (a.is_var()) read_in[static_cast<std::size_t>(a.var)] = true;
    for (std::size_t q = body.eqns.size(); q-- > 0;) {
      const Eqn& be = body.eqns[q];
      if (outside[q] && prim_info(be.prim).fused && inflates(body, be)) {
        bool in = false, out = false;
        for (int v : be.outputs) {
          in = in || read_in[static_cast<std::size_t>(v)];
          out = out || read_out[static_cast<std::size_t>(v)];
        }
        inside[q] = in;
        outside[q] = out || !in;
      }
      for (const Atom& a : be.inputs)
        if (a.is_var()) {
          if (inside[q]) read_in[static_cast<std::size_t>(a.var)] = true;
          if (outside[q]) read_out[static_cast<std::size_t>(a.var)] = true;
        }
    }
  }
  std::vector<int> new_consts;  // body variables that become constants, in definition order
  for (std::size_t q = 0; q < body.eqns.size(); ++q) {
    const Eqn& be = body.eqns[q];
    if (!outside[q]) continue;
    Eqn h = be;
    for (Atom& a : h.inputs) a = as_outer(a);
    for (int& v : h.outputs) {
      Type t = body.types[static_cast<std::size_t>(v)];
      for (JDim& d : t.shape)
        if (!d.is_static()) {
          const Atom a = *outer[static_cast<std::size_t>(d.var)];
          d = a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.as<std::int64_t>(), -1};
        }
      const int w = out.new_var(std::move(t));
      outer[static_cast<std::size_t>(v)] = Atom::of_var(w);
      if (!inside[q]) new_consts.push_back(v);
      v = w;
    }
    out.eqns.push_back(std::move(h));
  }
  if (new_consts.empty()) return nullptr;
  auto nb = std::make_shared<Jaxpr>(body);
  nb->eqns.clear();
  for (std::size_t q = 0; q < body.eqns.size(); ++q)
    if (inside[q]) nb->eqns.push_back(body.eqns[q]);
  nb->invars.insert(nb->invars.begin() + static_cast<std::ptrdiff_t>(nconsts), new_consts.begin(), new_consts.end());
  if (!nb->in_explicit.empty())
    nb->in_explicit.insert(nb->in_explicit.begin() + static_cast<std::ptrdiff_t>(nconsts), new_consts.size(), true);
  std::vector<Atom> ops;
  for (int v : new_consts) ops.push_back(*outer[static_cast<std::size_t>(v)]);
  e.inputs.insert(e.inputs.begin() + static_cast<std::ptrdiff_t>(off + nconsts), ops.begin(), ops.end());
  return nb;
}

inline Jaxpr hoist_loop_invariants(const Jaxpr& in) {
  Jaxpr j = in;
  j.eqns.clear();
  for (const Eqn& e0 : in.eqns) {
    Eqn e = e0;
    if (auto* p = std::get_if<ForLoopParams>(&e.params)) {
      if (auto b = hoist_from_body(j, e, *p->body_jaxpr, 0, static_cast<std::size_t>(p->body_nconsts))) {
        p->body_nconsts += static_cast<int>(b->invars.size() - p->body_jaxpr->invars.size());
        p->body_jaxpr = std::move(b);
      }
    } else if (auto* w = std::get_if<WhileLoopParams>(&e.params)) {
      if (auto b = hoist_from_body(j, e, *w->body_jaxpr, static_cast<std::size_t>(w->cond_nconsts),
                                   static_cast<std::size_t>(w->body_nconsts))) {
        w->body_nconsts += static_cast<int>(b->invars.size() - w->body_jaxpr->invars.size());
        w->body_jaxpr = std::move(b);
      }
    } else if (auto* s = std::get_if<ScanParams>(&e.params)) {
      if (auto b = hoist_from_body(j, e, *s->jaxpr, 0, static_cast<std::size_t>(s->num_consts))) {
        s->num_consts += static_cast<int>(b->invars.size() - s->jaxpr->invars.size());
        s->jaxpr = std::move(b);
      }
    }
    j.eqns.push_back(std::move(e));
  }
  return j;
}

}  // namespace dyn::detail
