// dynstage: reverse mode through scan (issue 20; JAX's _scan_partial_eval
// and _scan_transpose in jax/_src/lax/control_flow/loops.py).
//
// Linearize meets a scan whose JVP carries tangents (transform/jvp_control.hpp
// made it): partial_eval_scan splits its body (transform/partial_eval.hpp)
// into the known part, run now as a scan of its own that also returns, per
// iteration, the residuals the other part reads (stacked like ys: a buffer
// of the scan's length, dynamic when the length is), and the unknown part,
// kept as a linear scan that reads those residuals as xs (loop-invariant
// ones, the body's constants, as constants). A carry is unknown when its
// initial value is or the body makes it so: a fixed point, as for the JVP.
// transpose_scan runs that linear scan backwards: a scan in the other
// direction whose body is the backward pass over the linear body, carrying
// the cotangents of the carries and sums of the cotangents of the linear
// constants, reading the residuals and the cotangents of the ys, and
// returning the cotangents of the xs.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "linearize.hpp"
#include "partial_eval.hpp"

namespace dyn::detail {

#ifdef DYNSTAGE_IMPLEMENTATION

namespace scan_reverse {

inline int position(const std::vector<int>& v, int x) {
  const auto it = std::find(v.begin(), v.end(), x);
  return it == v.end() ? -1 : static_cast<int>(it - v.begin());
}

// A body made in a TraceScope in Catalyst's no-constant form: its captured
// constants become its leading invars (their values: `consts`).
inline std::shared_ptr<Jaxpr> constants_as_invars(std::shared_ptr<Jaxpr> b) {
  b->invars.insert(b->invars.begin(), b->constvars.begin(), b->constvars.end());
  b->constvars.clear();
  b->in_explicit.clear();
  b->out_explicit.clear();
  return b;
}

// A shape without its leading (scanned) axis.
inline Shape row_shape(const Shape& s) { return Shape(s.begin() + 1, s.end()); }
inline Shape stacked(const Dim& n, const Shape& s) {
  Shape r{n};
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

}  // namespace scan_reverse

void partial_eval_scan(PartialEval& pe, const Eqn& q) {
  using namespace scan_reverse;
  using linearize_detail::atom_dtype;
  const ScanParams& p = std::get<ScanParams>(q.params);
  const Jaxpr& body = *p.jaxpr;
  const auto nc = static_cast<std::size_t>(p.num_consts), ncar = static_cast<std::size_t>(p.num_carry);
  const std::size_t nin = body.invars.size(), nout = body.outvars.size();
  const bool dynamic_length = q.inputs.size() == nin + 1;
  std::vector<bool> uk(nin);
  for (std::size_t k = 0; k < nin; ++k) uk[k] = pe.is_linear(q.inputs[k]);
  // Which carries are unknown: a fixed point.
  const SplitJaxpr sp = split_loop_body(body, uk, nc, ncar);
  const Jaxpr& lin_body = *sp.unknown;
  // Residuals: the body's known constants are passed as they are; every
  // other residual is returned per iteration by the known scan, stacked
  // (its sizes must be loop-invariant: static or the body's constants').
  std::vector<int> const_res;
  std::vector<std::size_t> const_pos, row_idx;
  std::vector<Type> row_types;
  for (std::size_t r = 0; r < sp.residuals.size(); ++r) {
    const int v = sp.residuals[r];
    const int k = position(body.invars, v);
    if (k >= 0 && static_cast<std::size_t>(k) < nc) {
      const_res.push_back(v);
      const_pos.push_back(static_cast<std::size_t>(k));
      continue;
    }
    row_idx.push_back(r);
    Type t = lin_body.types.at(static_cast<std::size_t>(v));
    for (JDim& d : t.shape)
      if (!d.is_static()) {
        const int c = position(body.invars, d.var);
        if (c < 0 || static_cast<std::size_t>(c) >= nc)
          fail<TypeError>("vjp: cannot differentiate through a scan whose backward pass needs a value whose size "
                          "the scan's body computes (a while_loop nested in a loop) in reverse mode yet; forward "
                          "mode (dyn::jvp, dyn::jacfwd) works");
        const Atom& a = q.inputs[static_cast<std::size_t>(c)];
        d = a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.i, -1};
      }
    t.shape.insert(t.shape.begin(), dynamic_length ? JDim::of_var(q.inputs.back().var) : JDim{p.length, -1});
    row_types.push_back(std::move(t));
  }
  // The known scan (the split's constants first): known outputs, then the
  // residual rows.
  auto known = constants_as_invars(sp.known);
  const std::size_t nknown_out = known->outvars.size() - sp.residuals.size();
  {
    std::vector<Atom> outvars(known->outvars.begin(), known->outvars.begin() + static_cast<std::ptrdiff_t>(nknown_out));
    for (std::size_t r : row_idx) outvars.push_back(known->outvars[nknown_out + r]);
    known->outvars = std::move(outvars);
  }
  int kc = static_cast<int>(sp.known_consts.size()), kcar = 0;
  std::vector<Value> ops = sp.known_consts;
  for (std::size_t k = 0; k < nin; ++k)
    if (!uk[k]) {
      ops.push_back(pe.read(q.inputs[k]));
      if (k < nc) ++kc;
      else if (k < nc + ncar) ++kcar;
    }
  if (dynamic_length) ops.push_back(pe.read(q.inputs.back()));
  const std::vector<Value> outs =
      bind(Prim::scan, ops, ScanParams{known, p.length, p.reverse, kc, kcar}, current_trace() != nullptr);
  std::size_t o = 0;
  for (std::size_t i = 0; i < nout; ++i)
    if (!sp.out_unknown[i]) pe.env[static_cast<std::size_t>(q.outputs[i])] = outs.at(o++);
  // The residual rows as new known variables of the linear program.
  std::vector<int> row_vars, row_res;
  for (std::size_t i = 0; i < row_idx.size(); ++i) {
    row_res.push_back(sp.residuals[row_idx[i]]);
    row_vars.push_back(pe.new_residual(std::move(row_types[i]), outs.at(o++)));
  }
  // The linear scan: consts = constant residuals, unknown consts; carries =
  // unknown carries; xs = residual rows, unknown xs.
  auto lin = sp.unknown;
  std::vector<int> invars(const_res);
  std::vector<Atom> inputs;
  for (std::size_t k : const_pos) inputs.push_back(q.inputs[k]);
  const std::size_t nres = sp.residuals.size();
  std::size_t u = nres;  // lin's unknown invars follow the residuals, in the body's order
  std::vector<int> uk_vars;
  for (std::size_t k = 0; k < nin; ++k)
    if (uk[k]) uk_vars.push_back(lin->invars.at(u++));
  std::size_t next = 0;
  int lc = 0, lcar = 0;
  for (std::size_t k = 0; k < nc + ncar; ++k)
    if (uk[k]) {
      invars.push_back(uk_vars.at(next++));
      inputs.push_back(q.inputs[k]);
      (k < nc ? lc : lcar) += 1;
    }
  for (std::size_t r = 0; r < row_res.size(); ++r) {
    invars.push_back(row_res[r]);
    inputs.push_back(Atom::of_var(row_vars[r]));
  }
  for (std::size_t k = nc + ncar; k < nin; ++k)
    if (uk[k]) {
      invars.push_back(uk_vars.at(next++));
      inputs.push_back(q.inputs[k]);
    }
  if (dynamic_length) inputs.push_back(q.inputs.back());
  lin->invars = std::move(invars);
  Eqn e;
  e.prim = Prim::scan;
  e.params = ScanParams{lin, p.length, p.reverse, static_cast<int>(const_res.size()) + lc, lcar};
  e.inputs = std::move(inputs);
  for (std::size_t i = 0; i < nout; ++i)
    if (sp.out_unknown[i]) e.outputs.push_back(q.outputs[i]);
  for (const Atom& a : e.inputs) pe.keep(a);
  for (int v : e.outputs) pe.define_linear(v);
  pe.l.lin.push_back(std::move(e));
}

std::vector<Tangent> transpose_scan(const Eqn& q, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const std::vector<Shape>& out_shapes) {
  using namespace scan_reverse;
  using linearize_detail::atom_dtype;
  const ScanParams& p = std::get<ScanParams>(q.params);
  const Jaxpr& body = *p.jaxpr;
  const auto nc = static_cast<std::size_t>(p.num_consts), ncar = static_cast<std::size_t>(p.num_carry);
  const std::size_t nin = body.invars.size(), ny = body.outvars.size() - ncar;
  const bool dynamic_length = in.size() == nin + 1;
  using transpose_detail::zeros;
  std::vector<std::size_t> kc, lc, kx, lx;
  for (std::size_t k = 0; k < nc; ++k) (in[k].linear() ? lc : kc).push_back(k);
  for (std::size_t k = nc + ncar; k < nin; ++k) (in[k].linear() ? lx : kx).push_back(k);
  // The transposed body: (known consts; sums for the linear consts, the
  // carries' cotangents; known x rows, the ys' cotangent rows) ->
  // (sums, carries' cotangents; linear xs' cotangent rows).
  std::shared_ptr<Jaxpr> tb;
  std::vector<Value> tconsts;
  {
    TraceScope scope;
    std::vector<std::optional<Value>> env(body.types.size());
    std::vector<Value> acc, ctc, cty;
    for (std::size_t k : kc) env[static_cast<std::size_t>(body.invars[k])] = scope.new_arg(in[k].value->aval());
    for (std::size_t k : lc) acc.push_back(scope.new_arg(Aval{in[k].dtype, in[k].shape, false, std::nullopt}));
    for (std::size_t i = 0; i < ncar; ++i)
      ctc.push_back(scope.new_arg(Aval{in[nc + i].dtype, in[nc + i].shape, false, std::nullopt}));
    for (std::size_t k : kx) {
      Aval a = in[k].value->aval();
      a.shape = row_shape(a.shape);
      env[static_cast<std::size_t>(body.invars[k])] = scope.new_arg(a);
    }
    for (std::size_t j = 0; j < ny; ++j)
      cty.push_back(scope.new_arg(Aval{atom_dtype(body.types, body.outvars[ncar + j]),
                                       row_shape(out_shapes.at(ncar + j)), false, std::nullopt}));
    // The body's linear variables and their shapes (dims: known invars).
    std::vector<char> linear(body.types.size(), 0);
    std::vector<Shape> shapes(body.types.size());
    for (std::size_t k = 0; k < nin; ++k)
      if (in[k].linear() || (k >= nc && k < nc + ncar)) {
        const int v = body.invars[k];
        linear[static_cast<std::size_t>(v)] = 1;
        shapes[static_cast<std::size_t>(v)] = k >= nc + ncar ? row_shape(in[k].shape) : in[k].shape;
      }
    for (const Eqn& e : body.eqns)
      for (int v : e.outputs) {
        linear[static_cast<std::size_t>(v)] = 1;
        shapes[static_cast<std::size_t>(v)] = type_shape(body.types.at(static_cast<std::size_t>(v)), env);
      }
    std::vector<Tangent> cts(body.types.size());
    auto seed = [&](const Atom& a, const Value& c) {
      if (a.is_var() && linear[static_cast<std::size_t>(a.var)]) {
        Tangent& s = cts[static_cast<std::size_t>(a.var)];
        s = s ? bind1(Prim::add, {*s, c}) : c;
      }
    };
    for (std::size_t i = 0; i < ncar; ++i) seed(body.outvars[i], ctc[i]);
    for (std::size_t j = 0; j < ny; ++j) seed(body.outvars[ncar + j], cty[j]);
    auto known = [&](const Atom& a) {
      return a.is_var() ? *env.at(static_cast<std::size_t>(a.var)) : scalar_value(a.lit, a.weak);
    };
    backward_pass(body.eqns, body.types, known, linear, shapes, cts);
    auto ct_of = [&](std::size_t k, const Shape& s) {
      const Tangent& c = cts[static_cast<std::size_t>(body.invars[k])];
      return c ? jvp_detail::fit(*c, s) : zeros(s, in[k].dtype);
    };
    std::vector<Value> outs;
    for (std::size_t i = 0; i < lc.size(); ++i) outs.push_back(bind1(Prim::add, {acc[i], ct_of(lc[i], in[lc[i]].shape)}));
    for (std::size_t i = 0; i < ncar; ++i) outs.push_back(ct_of(nc + i, in[nc + i].shape));
    for (std::size_t k : lx) outs.push_back(ct_of(k, row_shape(in[k].shape)));
    tb = constants_as_invars(scope.finish(outs, /*implicit_results=*/false));
    tconsts = scope.const_sources();
  }
  std::vector<Value> ops = tconsts;
  for (std::size_t k : kc) ops.push_back(*in[k].value);
  for (std::size_t k : lc) ops.push_back(zeros(in[k].shape, in[k].dtype));
  for (std::size_t i = 0; i < ncar; ++i)
    ops.push_back(ct.at(i) ? jvp_detail::fit(*ct[i], in[nc + i].shape) : zeros(in[nc + i].shape, in[nc + i].dtype));
  for (std::size_t k : kx) ops.push_back(*in[k].value);
  for (std::size_t j = 0; j < ny; ++j) {
    const DType dt = atom_dtype(body.types, body.outvars[ncar + j]);
    ops.push_back(ct.at(ncar + j) ? *ct[ncar + j] : zeros(out_shapes.at(ncar + j), dt));
  }
  if (dynamic_length) ops.push_back(*in.back().value);
  const ScanParams tp{tb, p.length, !p.reverse, static_cast<int>(tconsts.size() + kc.size()),
                      static_cast<int>(lc.size() + ncar)};
  const std::vector<Value> outs = bind(Prim::scan, ops, tp);
  std::vector<Tangent> r(in.size());
  std::size_t o = 0;
  for (std::size_t k : lc) r[k] = outs.at(o++);
  for (std::size_t i = 0; i < ncar; ++i, ++o)
    if (in[nc + i].linear()) r[nc + i] = outs.at(o);
  for (std::size_t k : lx) r[k] = outs.at(o++);
  return r;
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
