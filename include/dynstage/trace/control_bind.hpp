// dynstage: the control-flow combinators' bind (bind_for_loop, bind_while_loop
// and bind_cond, declared in control.hpp) and the rules of the control-flow
// primitives (control_abstract_eval and control_impl, declared in rules.hpp),
// made of the steps of control_nested.hpp. Compiled once per program.
#pragma once

#include "control_nested.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
namespace dyn::detail {

// ---------------------------------------------------------------------------
// The combinators' bind.

std::vector<Value> bind_for_loop(const Value& lower_in, const Value& upper_in, const Value& step_in,
                                 const std::vector<Value>& init, const NestedFn& body, const LoopOptions& opts) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::for_loop");
  const Value lower = as_i64(lower_in, "dyn::for_loop", "lower bound");
  const Value upper = as_i64(upper_in, "dyn::for_loop", "upper bound");
  const Value step = as_i64(step_in, "dyn::for_loop", "step");
  if (!step.is_tracer() && scalar_of(step.array).as<std::int64_t>() == 0)
    fail<TypeError>("dyn::for_loop(): the step must not be 0");
  LoopTrace t = trace_loop("dyn::for_loop", caller, init, nullptr, body, true, opts);
  to_no_const_form(*t.body.jaxpr);
  const std::size_t nimplicit = t.in.implicit.size();
  ForLoopParams p{t.body.jaxpr, static_cast<int>(t.body.consts.size()), static_cast<int>(nimplicit),
                  opts.infer_dimensions ? nimplicit == 0 : opts.preserve_dimensions};
  std::vector<Value> operands = t.body.consts;
  operands.insert(operands.end(), t.in.implicit_operands.begin(), t.in.implicit_operands.end());
  for (const Value& v : {lower, upper, step, lower}) operands.push_back(v);
  operands.insert(operands.end(), init.begin(), init.end());
  std::vector<Value> outs = bind(Prim::for_loop, operands, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(nimplicit), outs.end()};
}

std::vector<Value> bind_while_loop(const std::vector<Value>& init, const NestedFn& cond_fn, const NestedFn& body,
                                   const LoopOptions& opts) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::while_loop");
  LoopTrace t = trace_loop("dyn::while_loop", caller, init, &cond_fn, body, false, opts);
  to_no_const_form(*t.cond->jaxpr);
  to_no_const_form(*t.body.jaxpr);
  const std::size_t nimplicit = t.in.implicit.size();
  WhileLoopParams p{t.cond->jaxpr,
                    t.body.jaxpr,
                    static_cast<int>(t.cond->consts.size()),
                    static_cast<int>(t.body.consts.size()),
                    static_cast<int>(nimplicit),
                    opts.infer_dimensions ? nimplicit == 0 : opts.preserve_dimensions};
  std::vector<Value> operands = t.cond->consts;
  operands.insert(operands.end(), t.body.consts.begin(), t.body.consts.end());
  operands.insert(operands.end(), t.in.implicit_operands.begin(), t.in.implicit_operands.end());
  operands.insert(operands.end(), init.begin(), init.end());
  std::vector<Value> outs = bind(Prim::while_loop, operands, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(nimplicit), outs.end()};
}

// cond and switch_: the branches are traced in the caller's dimensions, must
// agree on everything but dynamic sizes (branch b against branch 0), and a
// result dimension that is not the same caller-known dimension in every
// branch becomes an implicit output. `names(b)` is how messages name
// branch b ("the true branch", "branch 2").
namespace control {
std::vector<Value> bind_branches(const char* what, const Value& index, bool indexed,
                                 const std::vector<Value>& operands, const std::vector<NestedFn>& fns,
                                 const std::function<std::string(std::size_t)>& names) {
  TraceState& caller = caller_trace(what);
  const std::string op = std::string(what) + "()";
  const std::size_t nb = fns.size();
  const NestedInput in = deduce_input_type(caller, operands, false);
  // Every dynamic result dimension is returned provisionally; the ones that
  // are the same caller-known dimension in every branch are dropped below.
  struct Occurrence {
    std::size_t k, j;
    Dim d;
  };
  std::vector<std::vector<Occurrence>> occ(nb);
  std::vector<NestedBody> br(nb);
  for (std::size_t b = 0; b < nb; ++b)
    br[b] = trace_nested(in, false, fns[b], [&](TraceState& s, const std::vector<Value>& res) {
      std::vector<Value> imp;
      for (std::size_t k = 0; k < res.size(); ++k) {
        const Aval a = res[k].aval();
        for (std::size_t j = 0; j < a.shape.size(); ++j)
          if (a.shape[j].is_symbolic()) {
            occ[b].push_back({k, j, a.shape[j]});
            imp.push_back(s.dim_operand(a.shape[j]));
          }
      }
      return imp;
    });
  // The branches must agree on everything but dynamic sizes.
  const auto& r0 = br[0].results;
  for (std::size_t b = 1; b < nb; ++b) {
    const auto& r1 = br[b].results;
    if (r0.size() != r1.size())
      fail<TypeError>(op + ": " + names(0) + " returns " + std::to_string(r0.size()) + " values but " + names(b) +
                      (indexed ? " returns " : " ") + std::to_string(r1.size()) + "; return the same structure");
    for (std::size_t k = 0; k < r0.size(); ++k) {
      const std::string types = "branch output #" + std::to_string(k) + " has type " + aval_str(r0[k]) + " in " +
                                names(0) + " but " + aval_str(r1[k]) + " in " + names(b);
      if (r0[k].dtype != r1[k].dtype)
        fail<TypeError>(op + ": " + types + "; return the same dtype (e.g. astype<" +
                        std::string(dtype_cpp_name(r0[k].dtype)) + ">)");
      if (r0[k].rank() != r1[k].rank()) fail<TypeError>(op + ": " + types + "; the branches must return the same rank");
      for (std::size_t j = 0; j < r0[k].shape.size(); ++j) {
        const Dim& a = r0[k].shape[j];
        const Dim& c = r1[k].shape[j];
        if (a.is_static() && c.is_static() && a.value() != c.value())
          fail<ShapeError>(op + ": " + types + "; static sizes must be equal");
        if (a.is_static() != c.is_static())
          fail<TypeError>(op + ": " + types + " (dimension " + std::to_string(j) +
                          " is static in one branch and dynamic in the other); make both static or both dynamic");
      }
    }
  }
  // Implicit outputs: one per distinct tuple of branch dimensions, except a
  // dimension that is the same in every branch and known to the caller.
  std::vector<std::size_t> keep;
  for (std::size_t q = 0; q < occ[0].size(); ++q) {
    bool same = knows(caller, occ[0][q].d);
    for (std::size_t b = 1; b < nb && same; ++b) same = occ[b][q].d == occ[0][q].d;
    if (same) continue;
    bool dup = false;
    for (std::size_t q2 : keep) {
      bool eq = true;
      for (std::size_t b = 0; b < nb && eq; ++b) eq = occ[b][q2].d == occ[b][q].d;
      dup = dup || eq;
    }
    if (!dup) keep.push_back(q);
  }
  for (NestedBody& nb_ : br) {
    Jaxpr& j = *nb_.jaxpr;
    std::vector<Atom> outs;
    for (std::size_t q : keep) outs.push_back(j.outvars[q]);
    outs.insert(outs.end(), j.outvars.begin() + static_cast<std::ptrdiff_t>(nb_.nimplicit), j.outvars.end());
    j.outvars = std::move(outs);
    nb_.nimplicit = keep.size();
    j.out_explicit.clear();
    if (!keep.empty()) {
      j.out_explicit.assign(keep.size(), false);
      j.out_explicit.resize(j.outvars.size(), true);
    }
    TraceScope::order_jaxpr(j, nb_.consts);  // drops what only the dropped outputs used
  }
  // Every branch takes the union of their constants (deduplicated by the
  // caller's variable), each in the caller's order of first appearance.
  std::vector<int> union_vars;
  std::vector<Value> union_values;
  std::vector<std::vector<int>> caller_var(nb);
  for (std::size_t b = 0; b < nb; ++b)
    for (const Value& v : br[b].consts) {
      const Atom a = caller.atom_for(v);
      if (!a.is_var()) internal_error(op + ": a constant of a branch is a literal");
      caller_var[b].push_back(a.var);
      if (std::find(union_vars.begin(), union_vars.end(), a.var) == union_vars.end()) {
        union_vars.push_back(a.var);
        union_values.push_back(v);
      }
    }
  for (std::size_t b = 0; b < nb; ++b) {
    Jaxpr& j = *br[b].jaxpr;
    std::map<int, int> local;  // caller var -> this branch's var
    for (std::size_t i = 0; i < j.constvars.size(); ++i) local[caller_var[b][i]] = j.constvars[i];
    std::vector<int> constvars;
    for (int cv : union_vars) {
      auto it = local.find(cv);
      if (it == local.end()) {
        Type ty = caller.jaxpr.types[static_cast<std::size_t>(cv)];
        for (JDim& d : ty.shape)
          if (!d.is_static()) {
            auto dt = local.find(d.var);
            if (dt == local.end()) internal_error(op + ": a constant's dimension is not a constant of the branch");
            d.var = dt->second;
          }
        it = local.emplace(cv, j.new_var(std::move(ty))).first;
      }
      constvars.push_back(it->second);
    }
    j.constvars = std::move(constvars);
    to_no_const_form(j);
  }
  CondParams p;
  for (const NestedBody& b : br) p.branches.push_back(b.jaxpr);
  p.nimplicit_outputs = static_cast<int>(keep.size());
  p.indexed = indexed;
  std::vector<Value> ops{index};
  ops.insert(ops.end(), union_values.begin(), union_values.end());
  ops.insert(ops.end(), operands.begin(), operands.end());
  std::vector<Value> outs = bind(Prim::cond, ops, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(keep.size()), outs.end()};
}
}  // namespace control

std::vector<Value> bind_cond(const Value& pred, const std::vector<Value>& operands, const NestedFn& then_fn,
                             const NestedFn& else_fn) {
  if (pred.rank() != 0 || pred.dtype() != DType::bool_)
    fail<TypeError>("dyn::cond(): the predicate must be a scalar bool, got " + aval_str(pred.aval()) +
                    "; compare it first (e.g. p != 0)");
  return control::bind_branches("dyn::cond", pred, false, operands, {then_fn, else_fn},
                                [](std::size_t b) { return std::string(b == 0 ? "the true branch" : "the false branch"); });
}

void check_switch_index(const Aval& index) {
  if (index.rank() != 0 || !is_integer(index.dtype))
    fail<TypeError>("dyn::switch_(): the index must be an integer scalar, got " + aval_str(index) +
                    "; convert it first (e.g. dyn::astype<int>(x))");
}

std::vector<Value> bind_switch(const Value& index, const std::vector<Value>& operands,
                               const std::vector<NestedFn>& branches) {
  check_switch_index(index.aval());
  if (branches.size() < 2) internal_error("dyn::switch_: bind_switch of fewer than two branches");
  // lax.switch: the index as i32, clamped into [0, N-1].
  Value i = index;
  if (i.dtype() != DType::i32) i = bind1(Prim::convert_element_type, {i}, ConvertParams{DType::i32, false});
  auto i32 = [](std::int32_t v) { return Value{AnyArray(Array<std::int32_t>::scalar(v)), nullptr, false}; };
  i = bind1(Prim::clamp, {i32(0), i, i32(static_cast<std::int32_t>(branches.size() - 1))});
  return control::bind_branches("dyn::switch_", i, true, operands, branches,
                                [](std::size_t b) { return "branch " + std::to_string(b); });
}

StagedBody stage_body(const std::vector<Value>& operands, const NestedFn& fn) {
  TraceScope scope;
  std::vector<Value> args;
  for (const Value& x : operands) args.push_back(scope.new_arg(x.aval()));
  const std::vector<Value> outs = fn(args);
  StagedBody r;
  r.jaxpr = scope.finish(outs, /*implicit_results=*/false);
  r.consts = scope.const_sources();
  return r;
}

std::vector<Value> bind_checkpoint(const std::vector<Value>& operands, const NestedFn& body,
                                   const CheckpointParams& opts) {
  StagedBody b = stage_body(operands, body);
  control::to_no_const_form(*b.jaxpr);
  std::vector<Value> ops = std::move(b.consts);
  ops.insert(ops.end(), operands.begin(), operands.end());
  CheckpointParams p = opts;
  p.jaxpr = std::move(b.jaxpr);
  return bind(Prim::checkpoint, ops, p);
}

// ---------------------------------------------------------------------------
// The rules.

// The result types of a cond's branches (or a checkpoint's body), whose
// inputs have the types `in`: `ni` new dimension values first (a cond's
// implicit outputs), then each explicit result, a dimension of which is
// static, one of the implicit outputs (if every body returns it there) or
// computed from the inputs' dimensions.
std::vector<Aval> body_out_avals(const char* op, const std::vector<std::shared_ptr<const Jaxpr>>& bodies,
                                 std::size_t ni, const std::vector<Aval>& in, TraceState& t) {
  const Jaxpr& b0 = *bodies.at(0);
  std::vector<std::optional<Dim>> invar_dims;
  for (const Aval& a : in) invar_dims.push_back(a.dim_value);
  std::vector<Aval> out;
  for (std::size_t s = 0; s < ni; ++s) out.push_back(Aval{DType::i64, {}, false, t.new_dim_var()});
  for (std::size_t k = ni; k < b0.outvars.size(); ++k) {
    const Type& t0 = b0.type_of(b0.outvars[k]);
    Aval a{t0.dtype, {}, false, std::nullopt};
    for (std::size_t j = 0; j < t0.shape.size(); ++j) {
      if (t0.shape[j].is_static()) {
        a.shape.push_back(Dim(t0.shape[j].value));
        continue;
      }
      // Implicit output s, if every body returns its dimension j there.
      std::optional<Dim> d;
      for (std::size_t s = 0; s < ni && !d; ++s) {
        bool all = true;
        for (const auto& b : bodies) all = all && b->outvars[s].var == b->type_of(b->outvars[k]).shape[j].var;
        if (all) d = out[s].dim_value;
      }
      if (!d) d = control::eval_dim(b0, t0.shape[j].var, invar_dims);
      if (!d)
        fail<TypeError>(std::string(op) + ": result #" + std::to_string(k - ni) +
                        " has a dimension that is neither an output size nor computable from the inputs' sizes");
      a.shape.push_back(*d);
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<Aval> control_abstract_eval(Prim prim, const std::vector<Aval>& in, const Params& params) {
  using namespace control;
  switch (prim) {
    case Prim::for_loop: {
      const auto& p = std::get<ForLoopParams>(params);
      const Jaxpr& body = *p.body_jaxpr;
      const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
      if (in.size() != body.invars.size() + 3)
        internal_error("for_loop: " + std::to_string(in.size()) + " operands for a body of " +
                       std::to_string(body.invars.size()) + " inputs");
      check_operands("for_loop", body, in, [&](std::size_t q) { return q < nc + ni ? q : q + 3; });
      for (std::size_t q = nc + ni; q < nc + ni + 4; ++q)
        if (in[q].rank() != 0 || in[q].dtype != DType::i64)
          internal_error("for_loop: a bound is not an i64 scalar");
      return loop_out_avals("for_loop", body, nc, 0, ni, true, in);
    }
    case Prim::while_loop: {
      const auto& p = std::get<WhileLoopParams>(params);
      const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
      const auto ni = static_cast<std::size_t>(p.nimplicit);
      const Jaxpr& body = *p.body_jaxpr;
      const Jaxpr& cj = *p.cond_jaxpr;
      if (in.size() != cnc + body.invars.size() || cj.invars.size() != cnc + body.invars.size() - bnc)
        internal_error("while_loop: the operands do not match the bodies' inputs");
      check_operands("while_loop", body, in, [&](std::size_t q) { return cnc + q; });
      check_operands("while_loop", cj, in,
                     [&](std::size_t q) { return q < cnc ? q : cnc + bnc + (q - cnc); });
      if (cj.outvars.size() != 1 || cj.type_of(cj.outvars[0]).dtype != DType::bool_ ||
          cj.type_of(cj.outvars[0]).rank() != 0)
        internal_error("while_loop: the condition does not return one bool scalar");
      return loop_out_avals("while_loop", body, bnc, cnc, ni, false, in);
    }
    case Prim::cond: {
      const auto& p = std::get<CondParams>(params);
      const DType want = p.indexed ? DType::i32 : DType::bool_;
      if (in.empty() || in[0].rank() != 0 || in[0].dtype != want)
        fail<TypeError>(std::string(p.indexed ? "cond: the index must be an i32 scalar, got "
                                              : "cond: the predicate must be a scalar bool, got ") +
                        (in.empty() ? "nothing" : aval_str(in[0])));
      if (p.indexed ? p.branches.empty() : p.branches.size() != 2)
        internal_error(p.indexed ? "cond: no branches" : "cond: two branches expected");
      const Jaxpr& b0 = *p.branches[0];
      for (const auto& b : p.branches) {
        if (b->invars.size() + 1 != in.size()) internal_error("cond: a branch does not take every operand");
        check_operands("cond", *b, in, [](std::size_t q) { return q + 1; });
        if (b->outvars.size() != b0.outvars.size()) internal_error("cond: the branches return different counts");
      }
      TraceState* t = current_trace();
      if (!t) internal_error("cond: output types outside of a trace");
      return body_out_avals("cond", p.branches, static_cast<std::size_t>(p.nimplicit_outputs),
                            std::vector<Aval>(in.begin() + 1, in.end()), *t);
    }
    case Prim::scan: return scan_abstract_eval(in, std::get<ScanParams>(params));
    case Prim::checkpoint: {
      const auto& p = std::get<CheckpointParams>(params);
      if (!p.jaxpr || p.jaxpr->invars.size() != in.size()) internal_error("checkpoint: the operands do not match the body's inputs");
      check_operands("checkpoint", *p.jaxpr, in, [](std::size_t q) { return q; });
      TraceState* t = current_trace();
      if (!t) internal_error("checkpoint: output types outside of a trace");
      return body_out_avals("checkpoint", {p.jaxpr}, 0, in, *t);
    }
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("control_abstract_eval: " + std::string(prim_name(prim)) + " is not a control-flow primitive");
}

std::vector<AnyArray> control_impl(Prim prim, const std::vector<AnyArray>& in, const Params& params) {
  auto i64 = [&](std::size_t q) { return scalar_of(in.at(q)).as<std::int64_t>(); };
  switch (prim) {
    case Prim::for_loop: {
      const auto& p = std::get<ForLoopParams>(params);
      const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
      const std::int64_t lower = i64(nc + ni), upper = i64(nc + ni + 1), step = i64(nc + ni + 2);
      std::vector<AnyArray> state(in.begin() + static_cast<std::ptrdiff_t>(nc), in.begin() + static_cast<std::ptrdiff_t>(nc + ni));
      state.insert(state.end(), in.begin() + static_cast<std::ptrdiff_t>(nc + ni + 4), in.end());
      const std::int64_t n = for_loop_trip_count(lower, upper, step);
      std::vector<AnyArray> args;
      for (std::int64_t t = 0; t < n; ++t) {
        args.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc));
        args.insert(args.end(), state.begin(), state.begin() + static_cast<std::ptrdiff_t>(ni));
        args.push_back(AnyArray(Array<std::int64_t>::scalar(lower + t * step)));
        args.insert(args.end(), state.begin() + static_cast<std::ptrdiff_t>(ni), state.end());
        state = eval_jaxpr(*p.body_jaxpr, {}, args);
      }
      return state;
    }
    case Prim::while_loop: {
      const auto& p = std::get<WhileLoopParams>(params);
      const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
      std::vector<AnyArray> state(in.begin() + static_cast<std::ptrdiff_t>(cnc + bnc), in.end());
      std::vector<AnyArray> args;
      for (;;) {
        args.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cnc));
        args.insert(args.end(), state.begin(), state.end());
        if (!scalar_of(eval_jaxpr(*p.cond_jaxpr, {}, args).at(0)).as<bool>()) return state;
        args.assign(in.begin() + static_cast<std::ptrdiff_t>(cnc), in.begin() + static_cast<std::ptrdiff_t>(cnc + bnc));
        args.insert(args.end(), state.begin(), state.end());
        state = eval_jaxpr(*p.body_jaxpr, {}, args);
      }
    }
    case Prim::cond: {
      const auto& p = std::get<CondParams>(params);
      std::size_t b;
      if (p.indexed) {  // out of range: the last branch (XLA's Conditional)
        const std::int64_t i = i64(0);
        b = i >= 0 && i < static_cast<std::int64_t>(p.branches.size()) ? static_cast<std::size_t>(i)
                                                                        : p.branches.size() - 1;
      } else {
        b = scalar_of(in.at(0)).as<bool>() ? 0 : 1;
      }
      return eval_jaxpr(*p.branches[b], {}, std::vector<AnyArray>(in.begin() + 1, in.end()));
    }
    case Prim::scan: return scan_impl(in, std::get<ScanParams>(params));
    case Prim::checkpoint: return eval_jaxpr(*std::get<CheckpointParams>(params).jaxpr, {}, in);
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("control_impl: " + std::string(prim_name(prim)) + " is not a control-flow primitive");
}

std::vector<AnyArray> check_eager_results(const char* what, std::vector<AnyArray> got,
                                          const std::vector<AnyArray>& expected) {
  if (got.size() != expected.size()) fail<TypeError>(control::carry_count_error(what, got.size(), expected.size()));
  for (std::size_t k = 0; k < got.size(); ++k)
    if (got[k].dtype() != expected[k].dtype())
      fail<TypeError>(control::carry_dtype_error(what, k, aval_of(got[k]), aval_of(expected[k])));
  return got;
}

}  // namespace dyn::detail
#endif  // DYNSTAGE_IMPLEMENTATION
