// dynstage: linearize and transpose, the two halves of reverse mode
// (issue 20, API.md section 14; JAX's design: jax.linearize is JVP followed
// by partial evaluation, jax.vjp the transpose of the linear part).
//
//   1. The JVP of f's jaxpr is traced into a jaxpr of its own (invars: the
//      primals, then the tangents), in a scope nested in the current trace.
//   2. Partial evaluation: the tangents are unknown; every equation none of
//      whose operands depends on a tangent is known and is evaluated now (in
//      eager code it computes, under jit or make_jaxpr it records in the
//      caller's jaxpr): that is the forward pass, and the values the other
//      equations read are its residuals. The equations that depend on a
//      tangent make up the linear program; by construction of the JVP rules
//      each is linear in its tangent operands.
//   3. The backward pass walks the linear program in reverse, turning the
//      cotangents of each equation's outputs into those of its operands with
//      the primitive's transpose rule (transform/transpose_rules.hpp), and
//      gives the cotangents of the tangent inputs. The linear program can
//      also run forwards (jacfwd: one pass per basis tangent).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jvp.hpp"
#include "transpose_rules.hpp"

namespace dyn::detail {

// f linearized at a point: the linear program and its residuals.
struct Linearized {
  std::shared_ptr<const Jaxpr> jvp;   // invars: primals, then one tangent per differentiated primal
  std::vector<std::size_t> lin_eqns;  // the equations of jvp that depend on a tangent, in order
  std::vector<char> linear;           // per variable of jvp: depends on a tangent
  std::vector<Shape> shapes;          // per linear variable: its shape (dims of the caller)
  std::vector<std::optional<Value>> residuals;  // per variable: the values the linear equations read
  std::vector<int> tangent_in;        // per primal leaf: its tangent invar, or -1 (not differentiated)
  std::vector<Value> primals_out;     // f's results
  std::vector<Atom> tangents_out;     // per result: its tangent (a var of jvp), or a literal: zero
};

// Linearize the traced function `t` at `xs`; `wrt[k]`: leaf k is
// differentiated (it must be floating point).
Linearized linearize(const TracedFn& t, const std::vector<Value>& xs, const std::vector<char>& wrt);

// The linear map applied to tangents of the differentiated leaves (one per
// leaf of `xs`; nullopt: zero): the tangents of the results (jacfwd).
std::vector<Tangent> linear_apply(const Linearized& l, const std::vector<Tangent>& tangents);

// Its transpose applied to cotangents of the results (nullopt: zero): the
// cotangents of the leaves (nullopt: zero or not differentiated).
std::vector<Tangent> linear_transpose(const Linearized& l, const std::vector<Tangent>& cts);

#ifdef DYNSTAGE_IMPLEMENTATION

Linearized linearize(const TracedFn& t, const std::vector<Value>& xs, const std::vector<char>& wrt) {
  Linearized l;
  // 1. The JVP program.
  std::vector<Value> jconsts;
  {
    TraceScope scope;
    std::vector<Value> ps;
    std::vector<Tangent> ts;
    for (const Value& x : xs) ps.push_back(scope.new_arg(x.aval()));
    for (std::size_t k = 0; k < xs.size(); ++k)
      ts.push_back(wrt[k] ? Tangent(scope.new_arg(xs[k].aval())) : std::nullopt);
    const JvpOut o = jvp_eval(*t.jaxpr, t.consts, ps, ts);
    std::vector<Value> outs = o.primals;
    std::vector<int> tangent_pos;
    for (const Tangent& tg : o.tangents) {
      tangent_pos.push_back(tg ? static_cast<int>(outs.size()) : -1);
      if (tg) outs.push_back(*tg);
    }
    auto j = scope.finish(outs, /*implicit_results=*/false);
    jconsts = scope.const_sources();
    // Which invars are tangents: new_arg numbered them in order.
    std::size_t next = xs.size();
    for (std::size_t k = 0; k < xs.size(); ++k) l.tangent_in.push_back(wrt[k] ? j->invars.at(next++) : -1);
    for (int pos : tangent_pos)
      l.tangents_out.push_back(pos < 0 ? Atom::literal(Scalar{}) : j->outvars.at(static_cast<std::size_t>(pos)));
    j->outvars.resize(o.primals.size());
    l.jvp = std::move(j);
  }
  // 2. Partial evaluation: known equations now, the others kept.
  const Jaxpr& j = *l.jvp;
  std::vector<std::optional<Value>> env(j.types.size());
  l.linear.assign(j.types.size(), 0);
  l.shapes.resize(j.types.size());
  for (std::size_t i = 0; i < jconsts.size(); ++i) env.at(static_cast<std::size_t>(j.constvars.at(i))) = jconsts[i];
  for (std::size_t k = 0; k < xs.size(); ++k) env.at(static_cast<std::size_t>(j.invars.at(k))) = xs[k];
  auto read = [&](const Atom& a) { return a.is_var() ? *env[static_cast<std::size_t>(a.var)] : scalar_value(a.lit, a.weak); };
  auto shape_of = [&](int v) {
    Shape s;
    for (const JDim& d : j.types[static_cast<std::size_t>(v)].shape)
      s.push_back(d.is_static() ? Dim(d.value) : dim_of(*env.at(static_cast<std::size_t>(d.var)), "vjp"));
    return s;
  };
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (l.tangent_in[k] >= 0) {
      l.linear[static_cast<std::size_t>(l.tangent_in[k])] = 1;
      l.shapes[static_cast<std::size_t>(l.tangent_in[k])] = xs[k].shape();
    }
  std::vector<char> residual(j.types.size(), 0);
  for (std::size_t e = 0; e < j.eqns.size(); ++e) {
    const Eqn& q = j.eqns[e];
    bool lin = false;
    for (const Atom& a : q.inputs) lin = lin || (a.is_var() && l.linear[static_cast<std::size_t>(a.var)]);
    if (!lin) {
      std::vector<Value> in;
      for (const Atom& a : q.inputs) in.push_back(read(a));
      // Staged when tracing, as the equation was (an iota stays an iota, not a constant).
      const std::vector<Value> out = bind(q.prim, in, q.params, current_trace() != nullptr);
      for (std::size_t o = 0; o < q.outputs.size(); ++o) env[static_cast<std::size_t>(q.outputs[o])] = out.at(o);
      continue;
    }
    // A control-flow equation's JVP carries primal and tangent values
    // together; splitting it (a known loop saving residuals, a linear loop
    // run backwards) is not built yet.
    if (prim_info(q.prim).kind == Kind::control)
      fail<TypeError>("vjp: cannot differentiate through " + std::string(prim_name(q.prim)) +
                      " in reverse mode yet (forward mode, dyn::jvp, works through it)");
    l.lin_eqns.push_back(e);
    for (const Atom& a : q.inputs)
      if (a.is_var() && !l.linear[static_cast<std::size_t>(a.var)]) residual[static_cast<std::size_t>(a.var)] = 1;
    for (int v : q.outputs) {
      l.linear[static_cast<std::size_t>(v)] = 1;
      l.shapes[static_cast<std::size_t>(v)] = shape_of(v);
    }
  }
  for (const Atom& a : j.outvars) {
    if (a.is_var() && l.linear[static_cast<std::size_t>(a.var)])
      internal_error("vjp: a primal result of the JVP program depends on a tangent");
    l.primals_out.push_back(read(a));
  }
  // Keep only the residuals (a tangent result may also be a known value: a zero).
  for (const Atom& a : l.tangents_out)
    if (a.is_var() && !l.linear[static_cast<std::size_t>(a.var)]) residual[static_cast<std::size_t>(a.var)] = 1;
  l.residuals.resize(j.types.size());
  for (std::size_t v = 0; v < j.types.size(); ++v)
    if (residual[v]) l.residuals[v] = env[v];
  return l;
}

namespace linearize_detail {

inline Value read_known(const Linearized& l, const Atom& a) {
  return a.is_var() ? *l.residuals.at(static_cast<std::size_t>(a.var)) : scalar_value(a.lit, a.weak);
}

// Add a cotangent (or tangent) into slot v.
inline void accumulate(std::vector<Tangent>& env, int v, const Value& x) {
  Tangent& slot = env[static_cast<std::size_t>(v)];
  slot = slot ? bind1(Prim::add, {*slot, x}) : x;
}

}  // namespace linearize_detail

std::vector<Tangent> linear_apply(const Linearized& l, const std::vector<Tangent>& tangents) {
  using namespace linearize_detail;
  const Jaxpr& j = *l.jvp;
  std::vector<Tangent> env(j.types.size());
  for (std::size_t k = 0; k < tangents.size(); ++k)
    if (l.tangent_in[k] >= 0 && tangents[k]) env[static_cast<std::size_t>(l.tangent_in[k])] = tangents[k];
  for (std::size_t e : l.lin_eqns) {
    const Eqn& q = j.eqns[e];
    std::vector<Value> in;
    bool any = false;
    for (const Atom& a : q.inputs) {
      if (a.is_var() && l.linear[static_cast<std::size_t>(a.var)]) {
        const Tangent& t = env[static_cast<std::size_t>(a.var)];
        any = any || t.has_value();
        in.push_back(t ? *t
                       : broadcast_to_shape(jvp_detail::lit(j.type_of(a).dtype, 0),
                                            l.shapes[static_cast<std::size_t>(a.var)], "jacfwd",
                                            current_trace() != nullptr));
      } else {
        in.push_back(read_known(l, a));
      }
    }
    if (!any) continue;  // zero in, zero out: the equations are linear
    const std::vector<Value> out = bind(q.prim, in, q.params);
    for (std::size_t o = 0; o < q.outputs.size(); ++o) env[static_cast<std::size_t>(q.outputs[o])] = out.at(o);
  }
  std::vector<Tangent> r;
  for (const Atom& a : l.tangents_out)
    r.push_back(a.is_var() && l.linear[static_cast<std::size_t>(a.var)] ? env[static_cast<std::size_t>(a.var)]
                                                                         : std::nullopt);
  return r;
}

std::vector<Tangent> linear_transpose(const Linearized& l, const std::vector<Tangent>& cts) {
  using namespace linearize_detail;
  const Jaxpr& j = *l.jvp;
  std::vector<Tangent> ct(j.types.size());
  for (std::size_t k = 0; k < l.tangents_out.size(); ++k) {
    const Atom& a = l.tangents_out[k];
    if (cts.at(k) && a.is_var() && l.linear[static_cast<std::size_t>(a.var)]) accumulate(ct, a.var, *cts[k]);
  }
  for (auto it = l.lin_eqns.rbegin(); it != l.lin_eqns.rend(); ++it) {
    const Eqn& q = j.eqns[*it];
    std::vector<Tangent> out;
    bool any = false;
    for (int v : q.outputs) {
      out.push_back(ct[static_cast<std::size_t>(v)]);
      any = any || out.back().has_value();
      ct[static_cast<std::size_t>(v)].reset();  // no longer needed: free it early
    }
    if (!any) continue;
    std::vector<LinArg> in;
    for (const Atom& a : q.inputs) {
      if (a.is_var() && l.linear[static_cast<std::size_t>(a.var)])
        in.push_back(LinArg{std::nullopt, j.type_of(a).dtype, l.shapes[static_cast<std::size_t>(a.var)]});
      else {
        const Value v = read_known(l, a);
        in.push_back(LinArg{v, v.dtype(), v.shape()});
      }
    }
    const std::vector<Tangent> r = transpose_rule(q.prim, in, out, q.params);
    for (std::size_t k = 0; k < q.inputs.size(); ++k)
      if (in[k].linear() && r.at(k)) accumulate(ct, q.inputs[k].var, *r[k]);
  }
  std::vector<Tangent> res;
  for (int v : l.tangent_in) res.push_back(v >= 0 ? ct[static_cast<std::size_t>(v)] : std::nullopt);
  return res;
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
