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

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jvp.hpp"
#include "partial_eval.hpp"
#include "transpose_rules.hpp"

namespace dyn::detail {

// f linearized at a point: the linear program and its residuals.
struct Linearized {
  std::vector<Type> types;        // the JVP program's variables, then those partial evaluation added
  std::vector<Eqn> lin;           // the linear program: equations each with a linear operand, in order
  std::vector<char> linear;       // per variable: depends on a tangent
  std::vector<Shape> shapes;      // per linear variable: its shape (dims of the caller)
  std::vector<std::optional<Value>> residuals;  // per variable: the values the linear equations read
  std::vector<int> tangent_in;    // per primal leaf: its tangent invar, or -1 (not differentiated)
  std::vector<Value> primals_out; // f's results
  std::vector<Atom> tangents_out; // per result: its tangent (a variable), or a literal: zero
};

// The shape of a variable of type `t` whose dimension variables have the
// values `env` (known i64[] values: dims of the caller or of a body's scope).
inline Shape type_shape(const Type& t, const std::vector<std::optional<Value>>& env) {
  Shape s;
  for (const JDim& d : t.shape)
    s.push_back(d.is_static() ? Dim(d.value) : dim_of(*env.at(static_cast<std::size_t>(d.var)), "vjp"));
  return s;
}

// Partial evaluation in progress (linearize and the control-flow rules).
struct PartialEval {
  Linearized& l;
  std::vector<std::optional<Value>> env;  // the value of every known variable so far
  std::vector<char> residual;             // known variables the linear program reads
  // Splitting a loop body or a branch: a while_loop there is recomputed in
  // the backward pass (partial_eval_recomputed) instead of keeping residual
  // buffers whose length, its count, the body computes (no buffer of the
  // enclosing loop stacks them, and no cond output has their size).
  bool recompute_whiles = false;

  bool is_linear(const Atom& a) const { return a.is_var() && l.linear[static_cast<std::size_t>(a.var)]; }
  Value read(const Atom& a) const {
    return a.is_var() ? *env.at(static_cast<std::size_t>(a.var)) : scalar_value(a.lit, a.weak);
  }
  Shape shape_of(int v) const { return type_shape(l.types.at(static_cast<std::size_t>(v)), env); }
  // A known atom the linear program reads.
  void keep(const Atom& a) {
    if (a.is_var() && !l.linear[static_cast<std::size_t>(a.var)]) residual[static_cast<std::size_t>(a.var)] = 1;
  }
  void define_linear(int v) {
    l.linear[static_cast<std::size_t>(v)] = 1;
    l.shapes[static_cast<std::size_t>(v)] = shape_of(v);
  }
  // A new known variable of type t (an output of an equation partial
  // evaluation made).
  int new_known(Type t) {
    l.types.push_back(std::move(t));
    l.linear.push_back(0);
    l.shapes.emplace_back();
    env.emplace_back();
    residual.push_back(0);
    return static_cast<int>(l.types.size()) - 1;
  }
  // A new known variable of type t holding v (a residual partial evaluation made).
  int new_residual(Type t, Value v) {
    l.types.push_back(std::move(t));
    l.linear.push_back(0);
    l.shapes.emplace_back();
    env.emplace_back(std::move(v));
    residual.push_back(1);
    return static_cast<int>(l.types.size()) - 1;
  }
};

// The control-flow rules: a control equation's JVP split into a known
// part, run now, and a linear part, kept (transform/scan_reverse.hpp for
// scan; transform/control_reverse.hpp: for_loop and while_loop as scans,
// cond); and the transposes of the linear parts (scans and conds).
void partial_eval_scan(PartialEval& pe, const Eqn& q);
void partial_eval_for_loop(PartialEval& pe, const Eqn& q);
void partial_eval_while_loop(PartialEval& pe, const Eqn& q);
void partial_eval_cond(PartialEval& pe, const Eqn& q);
void partial_eval_checkpoint(PartialEval& pe, const Eqn& q);
void partial_eval_recomputed(PartialEval& pe, const Eqn& q);
std::vector<Tangent> transpose_scan(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const std::vector<Shape>& out_shapes);
std::vector<Tangent> transpose_cond(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const std::vector<Shape>& out_shapes);
std::vector<Tangent> transpose_checkpoint(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                          const std::vector<Shape>& out_shapes);

// Partial evaluation of `eqns` in order: an equation none of whose operands
// is linear is bound now (staged when tracing, as it was), a control-flow
// equation is split by its rule, any other is kept in the linear program.
void partial_eval_eqns(PartialEval& pe, const std::vector<Eqn>& eqns);

// A body (a jaxpr without constvars) split by which of its invars are
// unknown (linear): the known part traced, in a scope nested in the current
// trace, by partial evaluation, so control flow nested in the body is split
// by its own rule, recursively; the unknown part is the linear equations.
// Outvars with force_unknown[k] are unknown even when known (a loop carry
// whose value entering the body is unknown).
// With `recompute_whiles` (a loop body or a branch), while loops in it are
// recomputed in the backward pass (PartialEval::recompute_whiles).
SplitJaxpr split_body(const Jaxpr& j, const std::vector<bool>& in_unknown, const std::vector<bool>& force_unknown,
                      bool recompute_whiles = true);

// A loop body (carries: invars [first_carry, first_carry + ncar), the first
// ncar outvars) split at the fixed point of its unknown carries: a carry
// whose new value is unknown is unknown on entry too, until nothing changes
// (as for the JVP). `uk` (per invar) is updated to the fixed point.
SplitJaxpr split_loop_body(const Jaxpr& body, std::vector<bool>& uk, std::size_t first_carry, std::size_t ncar);

// Linearize the traced function `t` at `xs`; `wrt[k]`: leaf k is
// differentiated (it must be floating point).
Linearized linearize(const TracedFn& t, const std::vector<Value>& xs, const std::vector<char>& wrt);

// The linear map applied to tangents of the differentiated leaves (one per
// leaf of `xs`; nullopt: zero): the tangents of the results (jacfwd).
std::vector<Tangent> linear_apply(const Linearized& l, const std::vector<Tangent>& tangents);

// Its transpose applied to cotangents of the results (nullopt: zero): the
// cotangents of the leaves (nullopt: zero or not differentiated).
std::vector<Tangent> linear_transpose(const Linearized& l, const std::vector<Tangent>& cts);

// The backward pass over linear equations `eqns` of the variable table
// `types`: `known` reads a known atom, `linear` marks the linear variables
// and `shapes` gives their shapes; `ct` holds the cotangents of the
// variables, those of the program's results on entry, of every linear
// variable on exit (nullopt: zero). Top level and loop bodies alike.
void backward_pass(const std::vector<Eqn>& eqns, const std::vector<Type>& types,
                   const std::function<Value(const Atom&)>& known, const std::vector<char>& linear,
                   const std::vector<Shape>& shapes, std::vector<Tangent>& ct);

#ifdef DYNSTAGE_IMPLEMENTATION

Linearized linearize(const TracedFn& t, const std::vector<Value>& xs, const std::vector<char>& wrt) {
  Linearized l;
  // 1. The JVP program.
  std::vector<Value> jconsts;
  std::shared_ptr<Jaxpr> jvp;
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
    jvp = scope.finish(outs, /*implicit_results=*/false);
    jconsts = scope.const_sources();
    std::size_t next = xs.size();  // new_arg numbered the tangents after the primals
    for (std::size_t k = 0; k < xs.size(); ++k) l.tangent_in.push_back(wrt[k] ? jvp->invars.at(next++) : -1);
    for (int pos : tangent_pos)
      l.tangents_out.push_back(pos < 0 ? Atom::literal(Scalar{}) : jvp->outvars.at(static_cast<std::size_t>(pos)));
    jvp->outvars.resize(o.primals.size());
  }
  // 2. Partial evaluation: known equations now, the others kept.
  const Jaxpr& j = *jvp;
  l.types = j.types;
  l.linear.assign(j.types.size(), 0);
  l.shapes.resize(j.types.size());
  PartialEval pe{l, std::vector<std::optional<Value>>(j.types.size()), std::vector<char>(j.types.size(), 0)};
  for (std::size_t i = 0; i < jconsts.size(); ++i) pe.env.at(static_cast<std::size_t>(j.constvars.at(i))) = jconsts[i];
  for (std::size_t k = 0; k < xs.size(); ++k) pe.env.at(static_cast<std::size_t>(j.invars.at(k))) = xs[k];
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (l.tangent_in[k] >= 0) {
      l.linear[static_cast<std::size_t>(l.tangent_in[k])] = 1;
      l.shapes[static_cast<std::size_t>(l.tangent_in[k])] = xs[k].shape();
    }
  partial_eval_eqns(pe, j.eqns);
  for (const Atom& a : j.outvars) {
    if (pe.is_linear(a)) internal_error("vjp: a primal result of the JVP program depends on a tangent");
    l.primals_out.push_back(pe.read(a));
  }
  // Keep only the residuals (a tangent result may also be a known value: a zero).
  for (const Atom& a : l.tangents_out) pe.keep(a);
  l.residuals.resize(l.types.size());
  for (std::size_t v = 0; v < l.types.size(); ++v)
    if (pe.residual[v]) l.residuals[v] = pe.env[v];
  return l;
}

void partial_eval_eqns(PartialEval& pe, const std::vector<Eqn>& eqns) {
  for (const Eqn& q : eqns) {
    bool lin = false;
    for (const Atom& a : q.inputs) lin = lin || pe.is_linear(a);
    if (!lin) {
      std::vector<Value> in;
      for (const Atom& a : q.inputs) in.push_back(pe.read(a));
      // Staged when tracing, as the equation was (an iota stays an iota, not a constant).
      const std::vector<Value> out = bind(q.prim, in, q.params, current_trace() != nullptr);
      for (std::size_t o = 0; o < q.outputs.size(); ++o) pe.env[static_cast<std::size_t>(q.outputs[o])] = out.at(o);
      continue;
    }
    if (prim_info(q.prim).kind == Kind::control) {
      switch (q.prim) {
        case Prim::scan: partial_eval_scan(pe, q); break;
        case Prim::for_loop: partial_eval_for_loop(pe, q); break;
        case Prim::while_loop:
          if (pe.recompute_whiles) partial_eval_recomputed(pe, q);
          else partial_eval_while_loop(pe, q);
          break;
        case Prim::cond: partial_eval_cond(pe, q); break;
        case Prim::checkpoint: partial_eval_checkpoint(pe, q); break;
        default: internal_error("vjp: no partial evaluation rule for " + std::string(prim_name(q.prim)));
      }
      continue;
    }
    pe.l.lin.push_back(q);
    for (const Atom& a : q.inputs) pe.keep(a);
    for (int v : q.outputs) pe.define_linear(v);
  }
}

SplitJaxpr split_body(const Jaxpr& j, const std::vector<bool>& in_unknown, const std::vector<bool>& force_unknown,
                      bool recompute_whiles) {
  if (!j.constvars.empty()) internal_error("split_body: a body with constvars");
  const std::size_t n = j.types.size();
  Linearized l;
  l.types = j.types;
  l.linear.assign(n, 0);
  l.shapes.resize(n);
  PartialEval pe{l, std::vector<std::optional<Value>>(n), std::vector<char>(n, 0), recompute_whiles};
  TraceScope scope;
  // The known invars as arguments, their dimensions earlier arguments'.
  std::vector<std::optional<Dim>> dim(n);
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    if (!in_unknown.at(k)) pe.env[static_cast<std::size_t>(j.invars[k])] = new_body_arg(scope, j, j.invars[k], dim);
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    if (in_unknown[k]) pe.define_linear(j.invars[k]);
  partial_eval_eqns(pe, j.eqns);
  SplitJaxpr r;
  std::vector<Value> known_out;
  std::vector<Atom> unknown_out;
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Atom& a = j.outvars[k];
    const bool u = pe.is_linear(a) || force_unknown.at(k);
    r.out_unknown.push_back(u);
    if (u) {
      pe.keep(a);  // a known value the unknown part returns: a residual
      unknown_out.push_back(a);
    } else {
      known_out.push_back(pe.read(a));
    }
  }
  // The residuals' dimension variables are residuals too.
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t v = 0; v < l.types.size(); ++v)
      if (pe.residual[v])
        for (const JDim& d : l.types[v].shape)
          if (!d.is_static() && !pe.residual[static_cast<std::size_t>(d.var)])
            grew = (pe.residual[static_cast<std::size_t>(d.var)] = 1) != 0;
  }
  for (std::size_t v = 0; v < l.types.size(); ++v)
    if (pe.residual[v]) {
      r.residuals.push_back(static_cast<int>(v));
      known_out.push_back(*pe.env[v]);
    }
  r.known = scope.finish(known_out, /*implicit_results=*/false);
  r.known_consts = scope.const_sources();
  r.unknown = std::make_shared<Jaxpr>();
  r.unknown->types = std::move(l.types);
  r.unknown->eqns = std::move(l.lin);
  r.unknown->invars = r.residuals;
  for (std::size_t k = 0; k < j.invars.size(); ++k)
    if (in_unknown[k]) r.unknown->invars.push_back(j.invars[k]);
  r.unknown->outvars = std::move(unknown_out);
  return r;
}

SplitJaxpr split_loop_body(const Jaxpr& body, std::vector<bool>& uk, std::size_t first_carry, std::size_t ncar) {
  for (;;) {
    std::vector<bool> force(body.outvars.size(), false);
    for (std::size_t i = 0; i < ncar; ++i) force[i] = uk[first_carry + i];
    SplitJaxpr sp = split_body(body, uk, force);
    bool changed = false;
    for (std::size_t i = 0; i < ncar; ++i)
      if (sp.out_unknown[i] && !uk[first_carry + i]) changed = uk[first_carry + i] = true;
    if (!changed) return sp;
  }
}

namespace linearize_detail {

inline Value read_known(const Linearized& l, const Atom& a) {
  return a.is_var() ? *l.residuals.at(static_cast<std::size_t>(a.var)) : scalar_value(a.lit, a.weak);
}

inline DType atom_dtype(const std::vector<Type>& types, const Atom& a) {
  return a.is_var() ? types.at(static_cast<std::size_t>(a.var)).dtype : a.lit.dtype;
}

// Add a cotangent (or tangent) into slot v.
inline void accumulate(std::vector<Tangent>& env, int v, const Value& x) {
  Tangent& slot = env[static_cast<std::size_t>(v)];
  slot = slot ? bind1(Prim::add, {*slot, x}) : x;
}

}  // namespace linearize_detail

std::vector<Tangent> linear_apply(const Linearized& l, const std::vector<Tangent>& tangents) {
  using namespace linearize_detail;
  std::vector<Tangent> env(l.types.size());
  for (std::size_t k = 0; k < tangents.size(); ++k)
    if (l.tangent_in[k] >= 0 && tangents[k]) env[static_cast<std::size_t>(l.tangent_in[k])] = tangents[k];
  for (const Eqn& q : l.lin) {
    std::vector<Value> in;
    bool any = false;
    for (const Atom& a : q.inputs) {
      if (a.is_var() && l.linear[static_cast<std::size_t>(a.var)]) {
        const Tangent& t = env[static_cast<std::size_t>(a.var)];
        any = any || t.has_value();
        in.push_back(t ? *t : transpose_detail::zeros(l.shapes[static_cast<std::size_t>(a.var)], atom_dtype(l.types, a)));
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

void backward_pass(const std::vector<Eqn>& eqns, const std::vector<Type>& types,
                   const std::function<Value(const Atom&)>& known, const std::vector<char>& linear,
                   const std::vector<Shape>& shapes, std::vector<Tangent>& ct) {
  using namespace linearize_detail;
  for (auto it = eqns.rbegin(); it != eqns.rend(); ++it) {
    const Eqn& q = *it;
    std::vector<Tangent> out;
    std::vector<Shape> out_shapes;
    bool any = false;
    for (int v : q.outputs) {
      out.push_back(ct[static_cast<std::size_t>(v)]);
      out_shapes.push_back(shapes[static_cast<std::size_t>(v)]);
      any = any || out.back().has_value();
      ct[static_cast<std::size_t>(v)].reset();  // no longer needed: free it early
    }
    if (!any) continue;
    std::vector<LinArg> in;
    for (const Atom& a : q.inputs) {
      if (a.is_var() && linear[static_cast<std::size_t>(a.var)]) {
        in.push_back(LinArg{std::nullopt, atom_dtype(types, a), shapes[static_cast<std::size_t>(a.var)]});
      } else {
        const Value v = known(a);
        in.push_back(LinArg{v, v.dtype(), v.shape()});
      }
    }
    const std::vector<Tangent> r = q.prim == Prim::scan         ? transpose_scan(q, in, out, out_shapes)
                                   : q.prim == Prim::cond       ? transpose_cond(q, in, out, out_shapes)
                                   : q.prim == Prim::checkpoint ? transpose_checkpoint(q, in, out, out_shapes)
                                                                : transpose_rule(q.prim, in, out, q.params);
    for (std::size_t k = 0; k < q.inputs.size(); ++k)
      if (in[k].linear() && r.at(k)) accumulate(ct, q.inputs[k].var, *r[k]);
  }
}

std::vector<Tangent> linear_transpose(const Linearized& l, const std::vector<Tangent>& cts) {
  using namespace linearize_detail;
  std::vector<Tangent> ct(l.types.size());
  for (std::size_t k = 0; k < l.tangents_out.size(); ++k) {
    const Atom& a = l.tangents_out[k];
    if (cts.at(k) && a.is_var() && l.linear[static_cast<std::size_t>(a.var)]) accumulate(ct, a.var, *cts[k]);
  }
  backward_pass(l.lin, l.types, [&](const Atom& a) { return read_known(l, a); }, l.linear, l.shapes, ct);
  std::vector<Tangent> res;
  for (int v : l.tangent_in) res.push_back(v >= 0 ? ct[static_cast<std::size_t>(v)] : std::nullopt);
  return res;
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
