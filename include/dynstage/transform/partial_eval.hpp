// dynstage: the pieces of partial evaluation shared by reverse mode through
// control flow (JAX's pe.partial_eval_jaxpr_nounits and pe.dce_jaxpr): a
// body's split into its known part (run in the forward pass, as a loop of
// its own that also emits the residuals) and its unknown part (linear in
// the tangents: the loop the backward pass transposes), made by split_body
// (transform/linearize.hpp); and dead-code elimination, which leaves a
// while loop's iteration count only the work its predicate needs.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "../ir/jaxpr.hpp"
#include "../trace/trace.hpp"

namespace dyn::detail {

// A body (a jaxpr without constvars) split by which of its invars are unknown.
struct SplitJaxpr {
  // constvars: known_consts; invars: the body's known invars; outvars: its
  // known outvars, then the residuals' values.
  std::shared_ptr<Jaxpr> known;
  std::vector<Value> known_consts;
  // invars: the residuals, then the body's unknown invars; outvars: its
  // unknown outvars. Its variables: the body's, then those the split added.
  std::shared_ptr<Jaxpr> unknown;
  std::vector<bool> out_unknown;  // per outvar of the body
  std::vector<int> residuals;     // known variables of `unknown` it reads, in order of definition
};

// Dead-code elimination (JAX's pe.dce_jaxpr): j's equations that an outvar
// with used_out[k] needs, transitively (with the dimension variables of the
// values kept). Effects (debug_callback) are not roots: the caller runs the
// kept equations for their values only. Returns the equations kept, in
// order, and which invars they (or the used outvars) read.
struct DceResult {
  std::vector<Eqn> eqns;
  std::vector<bool> used_in;
};
DceResult dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_out);

#ifdef DYNSTAGE_IMPLEMENTATION
DceResult dce_jaxpr(const Jaxpr& j, const std::vector<bool>& used_out) {
  std::vector<char> live(j.types.size(), 0);
  auto use = [&](int v) {
    if (live[static_cast<std::size_t>(v)]) return;
    live[static_cast<std::size_t>(v)] = 1;
    for (const JDim& d : j.types[static_cast<std::size_t>(v)].shape)
      if (!d.is_static()) live[static_cast<std::size_t>(d.var)] = 1;  // dimension variables are i64[] scalars
  };
  for (std::size_t k = 0; k < j.outvars.size(); ++k)
    if (used_out.at(k) && j.outvars[k].is_var()) use(j.outvars[k].var);
  std::vector<const Eqn*> kept;
  for (auto it = j.eqns.rbegin(); it != j.eqns.rend(); ++it) {
    bool needed = false;
    for (int o : it->outputs) needed = needed || live[static_cast<std::size_t>(o)];
    if (!needed) continue;
    kept.push_back(&*it);
    for (int o : it->outputs) use(o);
    for (const Atom& a : it->inputs)
      if (a.is_var()) use(a.var);
  }
  DceResult r;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) r.eqns.push_back(**it);
  for (int v : j.invars) r.used_in.push_back(live[static_cast<std::size_t>(v)] != 0);
  return r;
}

#endif

}  // namespace dyn::detail
