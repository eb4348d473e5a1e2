// dynstage: reverse mode through for_loop, while_loop, cond and switch_
// (issue 20, API.md section 14).
//
// Loops become scans, whose split and transpose transform/scan_reverse.hpp
// builds:
//   - for_loop(lower, upper, step) is a scan of trip_count(lower, upper,
//     step) iterations carrying the index (index + step each iteration); the
//     trip count is static when the bounds are concrete, else a dynamic
//     scan length computed in the program.
//   - while_loop runs twice forwards: a loop over the body's known part (the
//     primal computation) counts the iterations N, then the body runs as a
//     scan of length N, which keeps each iteration's residuals in buffers of
//     N rows: N is a dynamic dimension under jit, concrete in eager code.
//     The backward pass is the transposed scan: the iterations in reverse.
//     (JAX cannot do this: its while_loop has no reverse-mode rule.)
//   A loop whose carried sizes change from one iteration to the next
//   (implicit loop variables) has iterates of different shapes, which no
//   buffer stacks: a TypeError.
// cond (and switch_, an indexed cond) follows JAX's _cond_partial_eval and
// _cond_transpose: every branch is split with the same unknown inputs (an
// output unknown in one branch is unknown in all); the known cond returns
// the known outputs and the residuals of every branch (each branch its own,
// zeros for the others'); the linear cond takes all residuals, each branch
// reading its own; its transpose is a cond over the branches' backward
// passes. A residual's sizes must be static or sizes of the cond's operands.
// checkpoint follows JAX's remat_partial_eval and remat_transpose with
// policy None: the known outputs are computed by the body's known part, and
// none of its values is kept; the linear part is a checkpoint of the body
// (differentiated=True) that reads only the known operands and recomputes
// the rest, and its transpose is a checkpoint that recomputes them again
// and runs the backward pass of the linear equations.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jvp_control.hpp"
#include "scan_reverse.hpp"

namespace dyn::detail {

#ifdef DYNSTAGE_IMPLEMENTATION

namespace control_reverse {

inline void no_changing_sizes(int nimplicit, const char* prim) {
  if (nimplicit > 0)
    fail<TypeError>(std::string("vjp: cannot differentiate through a ") + prim +
                    " whose carried sizes change from one iteration to the next in reverse mode (each "
                    "iteration's values would need a buffer row of a different shape); give the carries fixed "
                    "sizes (preserve_dimensions=true) or use forward mode (dyn::jvp, dyn::jacfwd)");
}

// The number of iterations of for_loop(lo, hi, step) as a traced i64[]:
// for_loop_trip_count's formula in the program (a step of 0 divides by 1).
inline Value trip_count_value(const Value& lo, const Value& hi, const Value& st) {
  const Value zero = i64_literal(0), one = i64_literal(1);
  const Value pos = bind1(Prim::gt, {st, zero}), is0 = bind1(Prim::eq, {st, zero});
  const Value safe = bind1(Prim::select_n, {is0, st, one});
  const Value span = bind1(Prim::select_n, {pos, bind1(Prim::sub, {lo, hi}), bind1(Prim::sub, {hi, lo})});
  const Value mag = bind1(Prim::select_n, {pos, bind1(Prim::neg, {safe}), safe});
  const Value n = bind1(Prim::div, {bind1(Prim::sub, {bind1(Prim::add, {span, mag}), one}), mag});
  return bind1(Prim::select_n, {is0, bind1(Prim::max, {n, zero}), zero});
}

// The scan length of a loop of n iterations: static when n is concrete,
// else -1 with n's variable appended to `inputs` (a new known variable).
inline std::int64_t scan_length(PartialEval& pe, const Value& n, std::vector<Atom>& inputs) {
  if (!n.is_tracer()) return scalar_of(n.array).as<std::int64_t>();
  (void)dim_of(n, "vjp");  // a dimension: the length of the residuals' buffers
  inputs.push_back(Atom::of_var(pe.new_residual(Type{DType::i64, {}, false}, n)));
  return -1;
}

inline std::shared_ptr<Jaxpr> copy_body(const Jaxpr& b) {
  auto r = std::make_shared<Jaxpr>(b);
  r->in_explicit.clear();
  r->out_explicit.clear();
  return r;
}

}  // namespace control_reverse

void partial_eval_for_loop(PartialEval& pe, const Eqn& q) {
  using namespace control_reverse;
  const ForLoopParams& p = std::get<ForLoopParams>(q.params);
  no_changing_sizes(p.nimplicit, "for_loop");
  const auto nc = static_cast<std::size_t>(p.body_nconsts);
  // Operands: consts, lower, upper, step, index0, carried. The scan body:
  // (consts, step; index, carried) -> (index + step, carried).
  auto b = copy_body(*p.body_jaxpr);
  const int index = b->invars.at(nc);
  const Type it = b->types.at(static_cast<std::size_t>(index));
  const int step = b->new_var(it), next = b->new_var(it);
  b->eqns.push_back(Eqn{Prim::add, {Atom::of_var(index), Atom::of_var(step)}, {next}, NoParams{}});
  b->invars.insert(b->invars.begin() + static_cast<std::ptrdiff_t>(nc), step);
  b->outvars.insert(b->outvars.begin(), Atom::of_var(next));
  Eqn s;
  s.prim = Prim::scan;
  s.inputs.assign(q.inputs.begin(), q.inputs.begin() + static_cast<std::ptrdiff_t>(nc));
  s.inputs.push_back(q.inputs.at(nc + 2));                                                    // step
  s.inputs.insert(s.inputs.end(), q.inputs.begin() + static_cast<std::ptrdiff_t>(nc + 3), q.inputs.end());  // index0, carried
  const Value lo = pe.read(q.inputs.at(nc)), hi = pe.read(q.inputs.at(nc + 1)), st = pe.read(q.inputs.at(nc + 2));
  const Value n = lo.is_tracer() || hi.is_tracer() || st.is_tracer()
                      ? trip_count_value(lo, hi, st)
                      : i64_literal(for_loop_trip_count(scalar_of(lo.array).as<std::int64_t>(),
                                                        scalar_of(hi.array).as<std::int64_t>(),
                                                        scalar_of(st.array).as<std::int64_t>()));
  const std::int64_t length = scan_length(pe, n, s.inputs);
  s.outputs.push_back(pe.new_known(it));  // the final index
  s.outputs.insert(s.outputs.end(), q.outputs.begin(), q.outputs.end());
  s.params = ScanParams{b, length, false, static_cast<int>(nc + 1), static_cast<int>(b->outvars.size())};
  partial_eval_scan(pe, s);
}

void partial_eval_while_loop(PartialEval& pe, const Eqn& q) {
  using namespace control_reverse;
  const WhileLoopParams& p = std::get<WhileLoopParams>(q.params);
  no_changing_sizes(p.nimplicit, "while_loop");
  const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
  const Jaxpr& body = *p.body_jaxpr;
  const std::size_t ncar = body.invars.size() - bnc;
  std::vector<bool> uk(body.invars.size());
  for (std::size_t k = 0; k < uk.size(); ++k) uk[k] = pe.is_linear(q.inputs.at(cnc + k));
  const SplitJaxpr sp = split_loop_body(body, uk, bnc, ncar);
  // 1. Count the iterations: a while loop of the predicate and the part of
  // the body's known part the predicate needs (dead code eliminated to a
  // fixed point over the carries: a loop `while t < T` counts by stepping t
  // alone), with a counter. Effects are left to the scan (printed once).
  const Type i64{DType::i64, {}, false};
  std::vector<std::size_t> kcar;  // the known carries
  for (std::size_t c = 0; c < ncar; ++c)
    if (!uk[bnc + c]) kcar.push_back(c);
  std::size_t nkc = 0;
  for (std::size_t k = 0; k < bnc; ++k) nkc += uk[k] ? 0 : 1;
  const Jaxpr& known = *sp.known;  // invars: known consts, known carries; outvars: known carries, residuals
  std::vector<bool> need(kcar.size());
  {
    const std::vector<bool> read = dce_jaxpr(*p.cond_jaxpr, {true}).used_in;
    for (std::size_t i = 0; i < kcar.size(); ++i) need[i] = read.at(cnc + kcar[i]);
  }
  DceResult d;
  for (bool changed = true; changed;) {
    std::vector<bool> used_out(need);
    used_out.resize(known.outvars.size(), false);
    d = dce_jaxpr(known, used_out);
    changed = false;
    for (std::size_t i = 0; i < kcar.size(); ++i)
      if (d.used_in.at(nkc + i) && !need[i]) changed = need[i] = true;
  }
  auto kb = std::make_shared<Jaxpr>();
  kb->types = known.types;
  kb->eqns = std::move(d.eqns);
  const int count = kb->new_var(i64), count1 = kb->new_var(i64);
  kb->eqns.push_back(Eqn{Prim::add, {Atom::of_var(count), Atom::literal(Scalar::of<std::int64_t>(1))}, {count1}, NoParams{}});
  kb->invars = known.constvars;  // the split's constants, then the known body constants
  kb->invars.insert(kb->invars.end(), known.invars.begin(), known.invars.begin() + static_cast<std::ptrdiff_t>(nkc));
  kb->invars.push_back(count);
  kb->outvars.push_back(Atom::of_var(count1));
  auto cj = copy_body(*p.cond_jaxpr);
  cj->invars.resize(cnc);
  cj->invars.push_back(cj->new_var(i64));
  std::vector<Value> ops;
  for (std::size_t k = 0; k < cnc; ++k) ops.push_back(pe.read(q.inputs[k]));
  ops.insert(ops.end(), sp.known_consts.begin(), sp.known_consts.end());
  for (std::size_t k = 0; k < bnc; ++k)
    if (!uk[k]) ops.push_back(pe.read(q.inputs[cnc + k]));
  ops.push_back(i64_literal(0));
  for (std::size_t i = 0; i < kcar.size(); ++i)
    if (need[i]) {
      kb->invars.push_back(known.invars.at(nkc + i));
      kb->outvars.push_back(known.outvars.at(i));
      cj->invars.push_back(p.cond_jaxpr->invars.at(cnc + kcar[i]));
      ops.push_back(pe.read(q.inputs[cnc + bnc + kcar[i]]));
    }
  const WhileLoopParams cp{cj, kb, p.cond_nconsts, static_cast<int>(sp.known_consts.size() + nkc), 0,
                          p.preserve_dimensions};
  const Value n = bind(Prim::while_loop, ops, cp, current_trace() != nullptr).at(0);
  // 2. The loop as a scan of n iterations.
  Eqn s;
  s.prim = Prim::scan;
  s.inputs.assign(q.inputs.begin() + static_cast<std::ptrdiff_t>(cnc), q.inputs.end());
  const std::int64_t length = scan_length(pe, n, s.inputs);
  s.outputs = q.outputs;
  s.params = ScanParams{copy_body(body), length, false, static_cast<int>(bnc), static_cast<int>(ncar)};
  partial_eval_scan(pe, s);
}

namespace control_reverse {

// The position among a branch's operands of `var`, a dimension variable of
// a residual: a size the branch computes has none (a TypeError).
inline std::size_t size_operand(const Jaxpr& br, int var) {
  const int k = scan_reverse::position(br.invars, var);
  if (k < 0)
    fail<TypeError>("vjp: cannot differentiate through a cond whose backward pass needs a value whose size a "
                    "branch computes in reverse mode yet; forward mode (dyn::jvp, dyn::jacfwd) works");
  return static_cast<std::size_t>(k);
}

// The shape of `t` (a type of branch `br`) in a scope where the branch's
// operands have the values `in` (the i64[] dimension operands are read).
inline Shape branch_shape(const Jaxpr& br, const Type& t, const std::vector<std::optional<Value>>& in) {
  Shape s;
  for (const JDim& d : t.shape) {
    if (d.is_static()) {
      s.push_back(Dim(d.value));
      continue;
    }
    const std::optional<Value>& x = in.at(size_operand(br, d.var));
    if (!x) internal_error("vjp: a residual's size is an unknown operand of the cond");
    s.push_back(dim_of(*x, "vjp"));
  }
  return s;
}

// A traced branch body with its captured constants as leading invars.
struct Body {
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;
};

// Every branch takes the constants of all (jvp_control's join): their values.
inline std::vector<Value> join_bodies(std::vector<Body>& bodies) {
  std::vector<std::shared_ptr<Jaxpr>> js;
  std::vector<std::vector<Value>> cs;
  for (Body& b : bodies) {
    js.push_back(b.jaxpr);
    cs.push_back(b.consts);
  }
  return jvp_control::join_branch_constants(js, cs);
}

}  // namespace control_reverse

void partial_eval_cond(PartialEval& pe, const Eqn& q) {
  using namespace control_reverse;
  const CondParams& p = std::get<CondParams>(q.params);
  if (p.nimplicit_outputs > 0)
    fail<TypeError>("vjp: cannot differentiate through a cond whose results' sizes depend on the branch in "
                    "reverse mode yet");
  const std::size_t nb = p.branches.size(), nin = q.inputs.size() - 1, nout = q.outputs.size();
  std::vector<bool> uk(nin);
  for (std::size_t k = 0; k < nin; ++k) uk[k] = pe.is_linear(q.inputs[1 + k]);
  // An output unknown in one branch is unknown in all: a fixed point.
  std::vector<bool> force(nout, false);
  std::vector<SplitJaxpr> sp(nb);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t b = 0; b < nb; ++b) {
      sp[b] = split_body(*p.branches[b], uk, force);
      for (std::size_t o = 0; o < nout; ++o)
        if (sp[b].out_unknown[o] && !force[o]) changed = force[o] = true;
    }
  }
  // Residuals: operands (by position, shared by the branches) and values a
  // branch computes (each branch's own).
  std::vector<bool> res_in(nin, false);
  std::vector<std::vector<int>> computed(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    for (int v : sp[b].residuals) {
      const int k = scan_reverse::position(p.branches[b]->invars, v);
      if (k >= 0) res_in[static_cast<std::size_t>(k)] = true;
      else computed[b].push_back(v);
    }
  }
  for (std::size_t c = 0; c < nb; ++c)  // their sizes must be operands' (checked before anything is bound)
    for (int v : computed[c])
      for (const JDim& d : sp[c].unknown->types.at(static_cast<std::size_t>(v)).shape)
        if (!d.is_static()) (void)size_operand(*p.branches[c], d.var);
  // The known cond: known outputs, then every branch's computed residuals.
  std::vector<Value> kin;  // the known operands
  std::vector<std::optional<Value>> outer(nin);
  for (std::size_t k = 0; k < nin; ++k)
    if (!uk[k]) kin.push_back(*(outer[k] = pe.read(q.inputs[1 + k])));
  std::vector<Body> known(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    TraceScope scope;
    std::vector<std::optional<Value>> in(nin);
    std::vector<Value> args;
    for (std::size_t k = 0; k < nin; ++k)
      if (!uk[k]) args.push_back(*(in[k] = scope.new_arg(outer[k]->aval())));
    const std::vector<Value> all =
        jvp_eval(*sp[b].known, sp[b].known_consts, args, std::vector<Tangent>(args.size())).primals;
    const std::size_t nk = all.size() - sp[b].residuals.size();
    std::vector<Value> outs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nk));
    std::vector<std::optional<Value>> env(sp[b].unknown->types.size());
    for (std::size_t r = 0; r < sp[b].residuals.size(); ++r)
      env[static_cast<std::size_t>(sp[b].residuals[r])] = all[nk + r];
    for (std::size_t c = 0; c < nb; ++c)
      for (int v : computed[c]) {
        const Type& t = sp[c].unknown->types.at(static_cast<std::size_t>(v));
        outs.push_back(c == b ? *env[static_cast<std::size_t>(v)]
                              : transpose_detail::zeros(branch_shape(*p.branches[c], t, in), t.dtype));
      }
    known[b] = Body{scan_reverse::constants_as_invars(scope.finish(outs, /*implicit_results=*/false)),
                    scope.const_sources()};
  }
  std::vector<Value> ops{pe.read(q.inputs[0])};
  {
    const std::vector<Value> consts = join_bodies(known);
    ops.insert(ops.end(), consts.begin(), consts.end());
    ops.insert(ops.end(), kin.begin(), kin.end());
  }
  CondParams kp{{}, 0, p.indexed};
  for (const Body& k : known) kp.branches.push_back(k.jaxpr);
  const std::vector<Value> outs = bind(Prim::cond, ops, kp, current_trace() != nullptr);
  std::size_t o = 0;
  for (std::size_t i = 0; i < nout; ++i)
    if (!force[i]) pe.env[static_cast<std::size_t>(q.outputs[i])] = outs.at(o++);
  // The computed residuals as known variables of the linear program: their
  // sizes are the cond's operands'.
  auto outer_type = [&](std::size_t c, int v) {
    Type t = sp[c].unknown->types.at(static_cast<std::size_t>(v));
    for (JDim& d : t.shape)
      if (!d.is_static()) {
        const Atom& a = q.inputs.at(1 + size_operand(*p.branches[c], d.var));
        d = a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.i, -1};
      }
    return t;
  };
  std::vector<int> res_vars;
  for (std::size_t c = 0; c < nb; ++c)
    for (int v : computed[c]) res_vars.push_back(pe.new_residual(outer_type(c, v), outs.at(o++)));
  // The linear cond: (pred; operand residuals, computed residuals, unknown
  // operands) -> unknown outputs; each branch reads its own residuals.
  Eqn e;
  e.prim = Prim::cond;
  e.inputs.push_back(q.inputs[0]);
  for (std::size_t k = 0; k < nin; ++k)
    if (res_in[k]) e.inputs.push_back(q.inputs[1 + k]);
  for (int v : res_vars) e.inputs.push_back(Atom::of_var(v));
  for (std::size_t k = 0; k < nin; ++k)
    if (uk[k]) e.inputs.push_back(q.inputs[1 + k]);
  CondParams lp{{}, 0, p.indexed};
  for (std::size_t b = 0; b < nb; ++b) {
    const Jaxpr& br = *p.branches[b];
    std::shared_ptr<Jaxpr> lj = control_reverse::copy_body(*sp[b].unknown);
    std::vector<int> invars;
    for (std::size_t k = 0; k < nin; ++k)
      if (res_in[k]) invars.push_back(br.invars[k]);
    for (std::size_t c = 0; c < nb; ++c)
      for (int v : computed[c]) {
        if (c == b) {
          invars.push_back(v);
          continue;
        }
        Type t = sp[c].unknown->types.at(static_cast<std::size_t>(v));  // another branch's: sizes by position
        for (JDim& d : t.shape)
          if (!d.is_static()) d = JDim::of_var(br.invars.at(size_operand(*p.branches[c], d.var)));
        invars.push_back(lj->new_var(std::move(t)));
      }
    invars.insert(invars.end(), lj->invars.begin() + static_cast<std::ptrdiff_t>(sp[b].residuals.size()),
                  lj->invars.end());
    lj->invars = std::move(invars);
    lp.branches.push_back(lj);
  }
  e.params = std::move(lp);
  for (std::size_t i = 0; i < nout; ++i)
    if (force[i]) e.outputs.push_back(q.outputs[i]);
  for (const Atom& a : e.inputs) pe.keep(a);
  for (int v : e.outputs) pe.define_linear(v);
  pe.l.lin.push_back(std::move(e));
}

std::vector<Tangent> transpose_cond(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const std::vector<Shape>& out_shapes) {
  using namespace control_reverse;
  using linearize_detail::atom_dtype;
  const CondParams& p = std::get<CondParams>(q.params);
  const std::size_t nin = in.size() - 1, nout = ct.size();
  std::vector<DType> out_dtypes;
  for (const Atom& a : p.branches[0]->outvars) out_dtypes.push_back(atom_dtype(p.branches[0]->types, a));
  // Each branch's backward pass: (known operands, the outputs' cotangents)
  // -> the linear operands' cotangents.
  std::vector<Body> tb;
  for (const auto& bp : p.branches) {
    const Jaxpr& br = *bp;
    TraceScope scope;
    std::vector<std::optional<Value>> env(br.types.size());
    std::vector<char> linear(br.types.size(), 0);
    std::vector<Shape> shapes(br.types.size());
    for (std::size_t k = 0; k < nin; ++k) {
      const auto v = static_cast<std::size_t>(br.invars[k]);
      if (in[1 + k].linear()) {
        linear[v] = 1;
        shapes[v] = in[1 + k].shape;
      } else {
        env[v] = scope.new_arg(in[1 + k].value->aval());
      }
    }
    std::vector<Value> ct_args;
    for (std::size_t o = 0; o < nout; ++o)
      ct_args.push_back(scope.new_arg(Aval{out_dtypes[o], out_shapes.at(o), false, std::nullopt}));
    for (const Eqn& e : br.eqns)
      for (int v : e.outputs) {
        linear[static_cast<std::size_t>(v)] = 1;
        shapes[static_cast<std::size_t>(v)] = type_shape(br.types.at(static_cast<std::size_t>(v)), env);
      }
    std::vector<Tangent> cts(br.types.size());
    for (std::size_t o = 0; o < nout; ++o) {
      const Atom& a = br.outvars[o];
      if (a.is_var() && linear[static_cast<std::size_t>(a.var)]) linearize_detail::accumulate(cts, a.var, ct_args[o]);
    }
    auto known = [&](const Atom& a) {
      return a.is_var() ? *env.at(static_cast<std::size_t>(a.var)) : scalar_value(a.lit, a.weak);
    };
    backward_pass(br.eqns, br.types, known, linear, shapes, cts);
    std::vector<Value> outs;
    for (std::size_t k = 0; k < nin; ++k)
      if (in[1 + k].linear()) {
        const Tangent& c = cts[static_cast<std::size_t>(br.invars[k])];
        outs.push_back(c ? jvp_detail::fit(*c, in[1 + k].shape) : transpose_detail::zeros(in[1 + k].shape, in[1 + k].dtype));
      }
    tb.push_back(Body{scan_reverse::constants_as_invars(scope.finish(outs, /*implicit_results=*/false)),
                      scope.const_sources()});
  }
  std::vector<Value> ops{*in[0].value};
  const std::vector<Value> consts = join_bodies(tb);
  ops.insert(ops.end(), consts.begin(), consts.end());
  for (std::size_t k = 0; k < nin; ++k)
    if (!in[1 + k].linear()) ops.push_back(*in[1 + k].value);
  for (std::size_t o = 0; o < nout; ++o)
    ops.push_back(ct[o] ? jvp_detail::fit(*ct[o], out_shapes[o]) : transpose_detail::zeros(out_shapes[o], out_dtypes[o]));
  CondParams tp{{}, 0, p.indexed};
  for (const Body& b : tb) tp.branches.push_back(b.jaxpr);
  const std::vector<Value> outs = bind(Prim::cond, ops, tp);
  std::vector<Tangent> r(in.size());
  std::size_t o = 0;
  for (std::size_t k = 0; k < nin; ++k)
    if (in[1 + k].linear()) r[1 + k] = outs.at(o++);
  return r;
}

void partial_eval_checkpoint(PartialEval& pe, const Eqn& q) {
  const CheckpointParams& p = std::get<CheckpointParams>(q.params);
  const Jaxpr& body = *p.jaxpr;
  const std::size_t nin = q.inputs.size(), nout = q.outputs.size();
  std::vector<bool> uk(nin);
  for (std::size_t k = 0; k < nin; ++k) uk[k] = pe.is_linear(q.inputs[k]);
  // (Its while loops keep their residuals: they stay inside the split.)
  const SplitJaxpr sp = split_body(body, uk, std::vector<bool>(nout, false), /*recompute_whiles=*/false);
  // The known outputs, by the known part without its residuals, inlined (as
  // JAX evaluates jaxpr_known).
  std::vector<Value> kin;
  for (std::size_t k = 0; k < nin; ++k)
    if (!uk[k]) kin.push_back(pe.read(q.inputs[k]));
  Jaxpr known = *sp.known;
  known.outvars.resize(known.outvars.size() - sp.residuals.size());
  known.eqns = dce_jaxpr(known, std::vector<bool>(known.outvars.size(), true)).eqns;
  const std::vector<Value> kout = jvp_eval(known, sp.known_consts, kin, std::vector<Tangent>(kin.size())).primals;
  std::size_t o = 0;
  for (std::size_t i = 0; i < nout; ++i)
    if (!sp.out_unknown[i]) pe.env[static_cast<std::size_t>(q.outputs[i])] = kout.at(o++);
  // The linear checkpoint: the body's equations the unknown outputs need,
  // on the operands they read.
  auto lj = control_reverse::copy_body(body);
  lj->outvars.clear();
  for (std::size_t i = 0; i < nout; ++i)
    if (sp.out_unknown[i]) lj->outvars.push_back(body.outvars[i]);
  const DceResult d = dce_jaxpr(*lj, std::vector<bool>(lj->outvars.size(), true));
  lj->eqns = d.eqns;
  lj->invars.clear();
  Eqn e;
  e.prim = Prim::checkpoint;
  for (std::size_t k = 0; k < nin; ++k)
    if (d.used_in[k]) {
      lj->invars.push_back(body.invars[k]);
      e.inputs.push_back(q.inputs[k]);
    }
  for (std::size_t i = 0; i < nout; ++i)
    if (sp.out_unknown[i]) e.outputs.push_back(q.outputs[i]);
  e.params = CheckpointParams{lj, p.prevent_cse, true};
  for (const Atom& a : e.inputs) pe.keep(a);
  for (int v : e.outputs) pe.define_linear(v);
  pe.l.lin.push_back(std::move(e));
}

void partial_eval_recomputed(PartialEval& pe, const Eqn& q) {
  if (const auto* w = std::get_if<WhileLoopParams>(&q.params))
    control_reverse::no_changing_sizes(w->nimplicit, "while_loop");
  // The checkpoint's operands: the dimension variables of q's types that
  // are not q's own operands or outputs, then q's variable operands.
  const std::vector<Type>& types = pe.l.types;
  std::vector<int> ops;
  auto add = [&](int v) {
    if (std::find(ops.begin(), ops.end(), v) == ops.end()) ops.push_back(v);
  };
  auto add_dims = [&](int v) {
    for (const JDim& d : types.at(static_cast<std::size_t>(v)).shape)
      if (!d.is_static() && std::find(q.outputs.begin(), q.outputs.end(), d.var) == q.outputs.end()) add(d.var);
  };
  for (const Atom& a : q.inputs)
    if (a.is_var()) add_dims(a.var);
  for (int v : q.outputs) add_dims(v);
  for (const Atom& a : q.inputs)
    if (a.is_var()) add(a.var);
  // The body: one equation, q, on fresh variables.
  auto body = std::make_shared<Jaxpr>();
  std::map<int, int> local;
  auto fresh = [&](int v) {
    Type t = types.at(static_cast<std::size_t>(v));
    for (JDim& d : t.shape)
      if (!d.is_static()) d.var = local.at(d.var);
    return local[v] = body->new_var(std::move(t));
  };
  for (int v : ops) body->invars.push_back(fresh(v));
  Eqn inner = q;
  for (Atom& a : inner.inputs)
    if (a.is_var()) a.var = local.at(a.var);
  for (int& v : inner.outputs) v = fresh(v);
  for (int v : inner.outputs) body->outvars.push_back(Atom::of_var(v));
  body->eqns.push_back(std::move(inner));
  Eqn e;
  e.prim = Prim::checkpoint;
  for (int v : ops) e.inputs.push_back(Atom::of_var(v));
  e.outputs = q.outputs;
  e.params = CheckpointParams{body, true, false};
  partial_eval_checkpoint(pe, e);
}

std::vector<Tangent> transpose_checkpoint(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                          const std::vector<Shape>& out_shapes) {
  using linearize_detail::atom_dtype;
  const CheckpointParams& p = std::get<CheckpointParams>(q.params);
  const Jaxpr& body = *p.jaxpr;
  const std::size_t nin = in.size(), nout = ct.size(), n = body.types.size();
  // The body: (known operands, the outputs' cotangents) -> the linear
  // operands' cotangents, recomputing the known values by partial evaluation.
  std::shared_ptr<Jaxpr> tj;
  std::vector<Value> consts;
  {
    TraceScope scope;
    Linearized l;
    l.types = body.types;
    l.linear.assign(n, 0);
    l.shapes.resize(n);
    PartialEval pe{l, std::vector<std::optional<Value>>(n), std::vector<char>(n, 0)};
    for (std::size_t k = 0; k < nin; ++k) {
      const auto v = static_cast<std::size_t>(body.invars[k]);
      if (in[k].linear()) {
        l.linear[v] = 1;
        l.shapes[v] = in[k].shape;
      } else {
        pe.env[v] = scope.new_arg(in[k].value->aval());
      }
    }
    std::vector<Value> ct_args;
    for (std::size_t o = 0; o < nout; ++o)
      ct_args.push_back(scope.new_arg(Aval{atom_dtype(body.types, body.outvars[o]), out_shapes.at(o), false, std::nullopt}));
    partial_eval_eqns(pe, body.eqns);
    std::vector<Tangent> cts(l.types.size());
    for (std::size_t o = 0; o < nout; ++o) {
      const Atom& a = body.outvars[o];
      if (pe.is_linear(a)) linearize_detail::accumulate(cts, a.var, ct_args[o]);
    }
    auto known = [&](const Atom& a) { return pe.read(a); };
    backward_pass(l.lin, l.types, known, l.linear, l.shapes, cts);
    std::vector<Value> outs;
    for (std::size_t k = 0; k < nin; ++k)
      if (in[k].linear()) {
        const Tangent& c = cts[static_cast<std::size_t>(body.invars[k])];
        outs.push_back(c ? jvp_detail::fit(*c, in[k].shape) : transpose_detail::zeros(in[k].shape, in[k].dtype));
      }
    tj = scan_reverse::constants_as_invars(scope.finish(outs, /*implicit_results=*/false));
    consts = scope.const_sources();
  }
  std::vector<Value> ops = consts;
  for (std::size_t k = 0; k < nin; ++k)
    if (!in[k].linear()) ops.push_back(*in[k].value);
  for (std::size_t o = 0; o < nout; ++o) {
    const DType dt = atom_dtype(body.types, body.outvars[o]);
    ops.push_back(ct[o] ? jvp_detail::fit(*ct[o], out_shapes[o]) : transpose_detail::zeros(out_shapes[o], dt));
  }
  const std::vector<Value> outs = bind(Prim::checkpoint, ops, CheckpointParams{tj, p.prevent_cse, true});
  std::vector<Tangent> r(nin);
  std::size_t o = 0;
  for (std::size_t k = 0; k < nin; ++k)
    if (in[k].linear()) r[k] = outs.at(o++);
  return r;
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
