// dynstage: partial evaluation of a jaxpr (JAX's
// pe.partial_eval_jaxpr_nounits), the step that reverse mode through control
// flow needs: a loop body's JVP is split into the part that computes primal
// values (known: it runs in the forward pass, as a loop of its own that also
// emits the residuals) and the part that is linear in the tangents (unknown:
// the loop the backward pass transposes; transform/scan_reverse.hpp).
//
// Next (issue 20): the same split for for_loop (as a scan of length
// trip_count(lower, upper, step), the index carried), while_loop (run once
// to count its trips N, then as a scan of dynamic length N: the iterates'
// buffer is a dynamic dimension), cond (each branch split, the residuals
// their union) and loops nested in a loop body (a rule per primitive here,
// called recursively).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../ir/jaxpr.hpp"

namespace dyn::detail {

// A jaxpr without constvars split by which of its invars are unknown.
struct SplitJaxpr {
  // invars: j's known invars; outvars: j's known outvars, then the residuals.
  std::shared_ptr<Jaxpr> known;
  // invars: the residuals, then j's unknown invars; outvars: j's unknown outvars.
  std::shared_ptr<Jaxpr> unknown;
  std::vector<bool> out_unknown;  // per outvar of j
  std::vector<int> residuals;     // variables of j (known) the unknown part reads, in order of definition
};

// An equation is unknown when one of its operands is; an outvar is unknown
// when it is an unknown variable or `force_unknown` says so (a loop carry
// whose value entering the body is unknown: the unknown part must return
// it, even if this iteration computed it from known values alone).
SplitJaxpr partial_eval_jaxpr(const Jaxpr& j, const std::vector<bool>& in_unknown,
                              const std::vector<bool>& force_unknown);

// A loop body (carries: invars [first_carry, first_carry + ncar), the first
// ncar outvars) split at the fixed point of its unknown carries: a carry
// whose new value is unknown is unknown on entry too, until nothing changes
// (as for the JVP). `uk` (per invar) is updated to the fixed point.
SplitJaxpr split_loop_body(const Jaxpr& body, std::vector<bool>& uk, std::size_t first_carry, std::size_t ncar);

// Reverse mode does not split a loop or cond nested in the unknown part of
// a body yet: a TypeError naming both (`where`: "a scan", "a cond branch").
void check_no_nested_control(const Jaxpr& unknown, const std::string& where);

#ifdef DYNSTAGE_IMPLEMENTATION
SplitJaxpr partial_eval_jaxpr(const Jaxpr& j, const std::vector<bool>& in_unknown,
                              const std::vector<bool>& force_unknown) {
  if (!j.constvars.empty()) internal_error("partial_eval_jaxpr: a jaxpr with constvars");
  const std::size_t nv = j.types.size();
  std::vector<char> unknown(nv, 0), residual(nv, 0);
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    if (in_unknown.at(k)) unknown[static_cast<std::size_t>(j.invars[k])] = 1;
  std::vector<const Eqn*> known_eqns, unknown_eqns;
  auto needs = [&](int v) {  // the unknown part reads known v: a residual, with its dimensions
    if (unknown[static_cast<std::size_t>(v)]) return;
    residual[static_cast<std::size_t>(v)] = 1;
  };
  for (const Eqn& e : j.eqns) {
    bool u = false;
    for (const Atom& a : e.inputs) u = u || (a.is_var() && unknown[static_cast<std::size_t>(a.var)]);
    if (!u) {
      known_eqns.push_back(&e);
      continue;
    }
    unknown_eqns.push_back(&e);
    for (const Atom& a : e.inputs)
      if (a.is_var()) needs(a.var);
    for (int o : e.outputs) unknown[static_cast<std::size_t>(o)] = 1;
  }
  SplitJaxpr r;
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Atom& a = j.outvars[k];
    const bool u = (a.is_var() && unknown[static_cast<std::size_t>(a.var)]) || force_unknown.at(k);
    r.out_unknown.push_back(u);
    if (u && a.is_var()) needs(a.var);  // a known value the unknown part returns
  }
  // The dimensions of the unknown part's variables (and of the residuals)
  // must be bound there too: known dimension variables are residuals.
  for (std::size_t v = nv; v-- > 0;)
    if (unknown[v] || residual[v])
      for (const JDim& d : j.types[v].shape)
        if (!d.is_static()) needs(d.var);
  for (std::size_t v = 0; v < nv; ++v)
    if (residual[v]) r.residuals.push_back(static_cast<int>(v));  // definition order: dimensions first

  auto base = [&] {
    auto p = std::make_shared<Jaxpr>();
    p->types = j.types;
    return p;
  };
  r.known = base();
  r.unknown = base();
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    (in_unknown[k] ? r.unknown : r.known)->invars.push_back(j.invars[k]);
  r.unknown->invars.insert(r.unknown->invars.begin(), r.residuals.begin(), r.residuals.end());
  for (const Eqn* e : known_eqns) r.known->eqns.push_back(*e);
  for (const Eqn* e : unknown_eqns) r.unknown->eqns.push_back(*e);
  for (std::size_t k = 0; k < j.outvars.size(); ++k) (r.out_unknown[k] ? r.unknown : r.known)->outvars.push_back(j.outvars[k]);
  for (int v : r.residuals) r.known->outvars.push_back(Atom::of_var(v));
  return r;
}

SplitJaxpr split_loop_body(const Jaxpr& body, std::vector<bool>& uk, std::size_t first_carry, std::size_t ncar) {
  for (;;) {
    std::vector<bool> force(body.outvars.size(), false);
    for (std::size_t i = 0; i < ncar; ++i) force[i] = uk[first_carry + i];
    SplitJaxpr sp = partial_eval_jaxpr(body, uk, force);
    bool changed = false;
    for (std::size_t i = 0; i < ncar; ++i)
      if (sp.out_unknown[i] && !uk[first_carry + i]) changed = uk[first_carry + i] = true;
    if (!changed) return sp;
  }
}

void check_no_nested_control(const Jaxpr& unknown, const std::string& where) {
  for (const Eqn& e : unknown.eqns)
    if (prim_info(e.prim).kind == Kind::control)
      fail<TypeError>("vjp: cannot differentiate through a " + std::string(prim_name(e.prim)) + " inside " + where +
                      " in reverse mode yet");
}
#endif

}  // namespace dyn::detail
