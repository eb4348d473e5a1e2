// dynstage: check_jaxpr's checks of control-flow equations (check.hpp): the
// bodies' layouts (params.hpp, above ForLoopParams), each body checked in its
// own frame, the operands against the body's inputs (de Bruijn: a body
// dimension that refers to body input q is operand q's value), a loop body's
// outputs against its next iteration's inputs, and cond's branches against
// the equation's outputs. Members of verify::Checker, compiled once per
// program.
#pragma once

#include "check.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <optional>
#include <variant>

namespace dyn::detail::verify {

class Checker::Frame {
public:
  Frame(Checker& c, const Jaxpr& j, std::size_t k, const std::string& body) : c_(c) {
    c_.frames_.push_back(body + " of equation #" + std::to_string(k) + " (" +
                         std::string(prim_name(j.eqns[k].prim)) + ")");
  }
  ~Frame() { c_.frames_.pop_back(); }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

private:
  Checker& c_;
};

[[noreturn]] void Checker::layout_error(const Jaxpr& j, std::size_t k, const std::string& what) {
  fail(j, k, what + " (the layouts are described in params.hpp, above ForLoopParams)");
}

// The index in b.invars of body input variable v (every dimension of an
// input's type is an earlier input: the body's check ensures it).
std::size_t Checker::input_index(const Jaxpr& b, int v) {
  return static_cast<std::size_t>(std::find(b.invars.begin(), b.invars.end(), v) - b.invars.begin());
}

// Checks body `b` (seeding the Dims of its first `nseeded` inputs from
// their operands, operand_of(p)) and its input types against the operands;
// returns its environment.
template <class OperandOf>
Env Checker::check_body(const Jaxpr& j, const Env& env, std::size_t k, const Jaxpr& b, const std::string& bname,
                        const std::vector<Aval>& in, std::size_t nseeded, OperandOf operand_of) {
  std::vector<std::optional<Dim>> seeds(b.invars.size());
  for (std::size_t p = 0; p < nseeded; ++p) seeds[p] = in[operand_of(p)].dim_value;
  Env benv;
  {
    Frame f(*this, j, k, bname);
    benv = check(b, nullptr, seeds, false);
  }
  // De Bruijn: where a body input's dimension is body input q, the caller
  // passes the size that operand_of(q) holds.
  for (std::size_t p = 0; p < b.invars.size(); ++p) {
    const Type& t = var_type(b, b.invars[p]);
    const Aval& op = in[operand_of(p)];
    Aval want{t.dtype, {}, false, std::nullopt};
    for (const JDim& d : t.shape) {
      if (d.is_static()) want.shape.emplace_back(d.value);
      else want.shape.push_back(in[operand_of(input_index(b, d.var))].dim_value.value_or(Dim(-1)));
    }
    if (!same(op, want, false))
      fail(j, k, "operand #" + std::to_string(operand_of(p)) + " has type " + aval_text(op, j, env) + " but " + bname +
                     " input #" + std::to_string(p) + " (" + name(b, b.invars[p]) + ":" + type_of(b, t) +
                     ") takes " + aval_text(want, j, env) + " here");
  }
  return benv;
}

// A loop body's outputs (implicit, carried) are its next inputs: output
// s < ni is the new value of implicit input s, an i64[]; output ni + c has
// carried input c's type, with the new implicit values as its dimensions.
void Checker::check_carry(const Jaxpr& j, std::size_t k, const Jaxpr& b, const Env& benv, std::size_t first_implicit,
                          std::size_t ni, std::size_t first_carried) {
  Frame f(*this, j, k, "body_jaxpr");
  for (std::size_t s = 0; s < ni; ++s) {
    const Aval a = atom_aval(benv, b.outvars[s]);
    const int v = b.invars[first_implicit + s];
    const Type& t = var_type(b, v);
    if (t.dtype != DType::i64 || t.rank() != 0 || a.dtype != DType::i64 || a.rank() != 0)
      fail(b, kNone, "implicit input #" + std::to_string(first_implicit + s) + " (" + name(b, v) + ":" +
                         type_of(b, t) + ") and output #" + std::to_string(s) + " (" + aval_text(a, b, benv) +
                         ") are a loop's dimension, an i64[]");
  }
  for (std::size_t s = ni; s < b.outvars.size(); ++s) {
    const Aval got = atom_aval(benv, b.outvars[s]);
    const std::size_t p = first_carried + (s - ni);
    const Type& t = var_type(b, b.invars[p]);
    Aval want{t.dtype, {}, got.weak, std::nullopt};
    for (const JDim& d : t.shape) {
      if (d.is_static()) {
        want.shape.emplace_back(d.value);
        continue;
      }
      const std::size_t q = input_index(b, d.var);
      const bool implicit = q >= first_implicit && q < first_implicit + ni;
      want.shape.push_back(implicit ? *atom_aval(benv, b.outvars[q - first_implicit]).dim_value
                                    : *benv[static_cast<std::size_t>(d.var)].aval.dim_value);
    }
    if (!same(got, want, false))
      fail(b, kNone, "output #" + std::to_string(s) + " has type " + aval_text(got, b, benv) +
                         " but the next iteration's input #" + std::to_string(p) + " (" + name(b, b.invars[p]) +
                         ":" + type_of(b, t) + ") takes " + aval_text(want, b, benv));
  }
}

std::size_t Checker::count(int n) { return n < 0 ? 0 : static_cast<std::size_t>(n); }

// The bodies of control-flow equation k: layouts, each body, the operands
// against the body inputs, a loop's carry. Returns cond's branches' envs.
std::vector<Env> Checker::check_bodies(const Jaxpr& j, const Env& env, std::size_t k, const std::vector<Aval>& in) {
  const Eqn& e = j.eqns[k];
  auto i64_scalar = [&](std::size_t o, const std::string& what) {
    if (in[o].dtype != DType::i64 || in[o].rank() != 0)
      layout_error(j, k, "operand #" + std::to_string(o) + " (the " + what + ") has type " + aval_text(in[o], j, env) +
                             " but is an i64[]");
  };
  if (const auto* p = std::get_if<ForLoopParams>(&e.params)) {
    const Jaxpr& b = *p->body_jaxpr;
    if (p->body_nconsts < 0 || p->nimplicit < 0 || (p->preserve_dimensions && p->nimplicit != 0))
      layout_error(j, k, "body_nconsts=" + std::to_string(p->body_nconsts) + " nimplicit=" +
                             std::to_string(p->nimplicit) + " preserve_dimensions=" + py_bool(p->preserve_dimensions) +
                             " are no for_loop's (counts >= 0; no implicit inputs with preserve_dimensions)");
    const std::size_t nc = count(p->body_nconsts), ni = count(p->nimplicit);
    if (b.invars.size() < nc + ni + 1 || in.size() != b.invars.size() + 3 ||
        b.outvars.size() != b.invars.size() - nc - 1)
      layout_error(j, k, std::to_string(in.size()) + " operands and a body_jaxpr of " +
                             std::to_string(b.invars.size()) + " inputs and " + std::to_string(b.outvars.size()) +
                             " outputs do not fit body_nconsts=" + std::to_string(nc) +
                             " nimplicit=" + std::to_string(ni));
    const char* bounds[] = {"lower bound", "upper bound", "step", "initial index"};
    for (std::size_t q = 0; q < 4; ++q) i64_scalar(nc + ni + q, bounds[q]);
    Env benv = check_body(j, env, k, b, "body_jaxpr", in, nc, [&](std::size_t q) { return q < nc + ni ? q : q + 3; });
    check_carry(j, k, b, benv, nc, ni, nc + ni + 1);
    return {};
  }
  if (const auto* p = std::get_if<WhileLoopParams>(&e.params)) {
    const Jaxpr& b = *p->body_jaxpr;
    const Jaxpr& c = *p->cond_jaxpr;
    if (p->cond_nconsts < 0 || p->body_nconsts < 0 || p->nimplicit < 0 ||
        (p->preserve_dimensions && p->nimplicit != 0))
      layout_error(j, k, "cond_nconsts=" + std::to_string(p->cond_nconsts) + " body_nconsts=" +
                             std::to_string(p->body_nconsts) + " nimplicit=" + std::to_string(p->nimplicit) +
                             " preserve_dimensions=" + py_bool(p->preserve_dimensions) +
                             " are no while_loop's (counts >= 0; no implicit inputs with preserve_dimensions)");
    const std::size_t cnc = count(p->cond_nconsts), bnc = count(p->body_nconsts), ni = count(p->nimplicit);
    if (b.invars.size() < bnc + ni || in.size() != cnc + b.invars.size() ||
        c.invars.size() != cnc + b.invars.size() - bnc || b.outvars.size() != b.invars.size() - bnc)
      layout_error(j, k, std::to_string(in.size()) + " operands, a cond_jaxpr of " +
                             std::to_string(c.invars.size()) + " inputs and a body_jaxpr of " +
                             std::to_string(b.invars.size()) + " inputs and " + std::to_string(b.outvars.size()) +
                             " outputs do not fit cond_nconsts=" + std::to_string(cnc) + " body_nconsts=" +
                             std::to_string(bnc) + " nimplicit=" + std::to_string(ni));
    Env cenv = check_body(j, env, k, c, "cond_jaxpr", in, cnc,
                          [&](std::size_t q) { return q < cnc ? q : cnc + bnc + (q - cnc); });
    const Aval r = c.outvars.size() == 1 ? atom_aval(cenv, c.outvars[0]) : Aval{};
    if (c.outvars.size() != 1 || r.dtype != DType::bool_ || r.rank() != 0) {
      Frame f(*this, j, k, "cond_jaxpr");
      fail(c, kNone, "it returns " + (c.outvars.size() == 1 ? aval_text(r, c, cenv) : std::to_string(c.outvars.size()) +
                                                                                 " values") +
                         "; a cond_jaxpr returns one bool[]");
    }
    Env benv = check_body(j, env, k, b, "body_jaxpr", in, bnc, [&](std::size_t q) { return cnc + q; });
    check_carry(j, k, b, benv, bnc, ni, bnc + ni);
    return {};
  }
  if (const auto* p = std::get_if<ScanParams>(&e.params)) {
    check_scan(j, env, k, in, *p);
    return {};
  }
  if (const auto* p = std::get_if<CheckpointParams>(&e.params)) {
    // checkpoint: the body takes the operands.
    if (in.size() != p->jaxpr->invars.size())
      layout_error(j, k, std::to_string(in.size()) + " operands do not fit a jaxpr of " +
                             std::to_string(p->jaxpr->invars.size()) + " inputs");
    return {check_body(j, env, k, *p->jaxpr, "jaxpr", in, in.size(), [](std::size_t q) { return q; })};
  }
  const auto& p = std::get<CondParams>(e.params);
  const std::size_t nb = p.branches.size();
  const Jaxpr& b0 = *p.branches[0];
  bool fits = !in.empty() && p.nimplicit_outputs >= 0 && b0.outvars.size() >= count(p.nimplicit_outputs);
  std::string counts;
  for (std::size_t r = 0; r < nb; ++r) {
    const Jaxpr& b = *p.branches[r];
    fits = fits && b.invars.size() + 1 == in.size() && b.outvars.size() == b0.outvars.size();
    counts += (r == 0 ? "" : r + 1 == nb ? " and " : ", ") + std::to_string(b.invars.size()) + " inputs/" +
              std::to_string(b.outvars.size()) + " outputs";
  }
  if (!fits)
    layout_error(j, k, std::to_string(in.size()) + " operands and " + (p.indexed ? "branches" : "branch_jaxprs") +
                           " of " + counts + " do not fit nimplicit_outputs=" + std::to_string(p.nimplicit_outputs) +
                           (p.indexed ? " (the index" : " (the predicate") +
                           ", then each branch's inputs; equal output counts)");
  // Each branch takes every operand after the predicate, with its Dims.
  std::vector<Env> envs;
  for (std::size_t r = 0; r < nb; ++r)
    envs.push_back(check_body(j, env, k, *p.branches[r], cond_branch_name(p, r), in, p.branches[r]->invars.size(),
                              [](std::size_t q) { return q + 1; }));
  // The branches agree on dtypes and ranks (the rule reads them all).
  for (std::size_t r = 1; r < nb; ++r) {
    const Jaxpr& b = *p.branches[r];
    for (std::size_t s = 0; s < b0.outvars.size(); ++s) {
      const Aval t0 = atom_aval(envs[0], b0.outvars[s]), t1 = atom_aval(envs[r], b.outvars[s]);
      if (t0.dtype != t1.dtype || t0.rank() != t1.rank())
        fail(j, k, cond_branch_name(p, 0) + " output #" + std::to_string(s) + " has type " +
                       aval_text(t0, b0, envs[0]) + " but " + cond_branch_name(p, r) + " output #" +
                       std::to_string(s) + " has type " + aval_text(t1, b, envs[r]) +
                       "; the branches return the same dtypes and ranks");
    }
  }
  return envs;
}

// scan: operands consts, carry, xs[, length] (prims.hpp); the body takes
// consts, carry and one row of each xs, and returns the carry, with the
// carry's type (no implicit inputs: lax.scan's carry keeps its type), and
// the ys' rows.
void Checker::check_scan(const Jaxpr& j, const Env& env, std::size_t k, const std::vector<Aval>& in,
                         const ScanParams& p) {
  const Jaxpr& b = *p.jaxpr;
  const std::size_t nc = count(p.num_consts), ncar = count(p.num_carry);
  const bool dyn_len = p.length < 0;
  if (p.num_consts < 0 || p.num_carry < 0 || nc + ncar > b.invars.size() || b.outvars.size() < ncar ||
      in.size() != b.invars.size() + (dyn_len ? 1 : 0))
    layout_error(j, k, std::to_string(in.size()) + " operands and a jaxpr of " + std::to_string(b.invars.size()) +
                           " inputs and " + std::to_string(b.outvars.size()) + " outputs do not fit num_consts=" +
                           std::to_string(p.num_consts) + " num_carry=" + std::to_string(p.num_carry) +
                           " length=" + (dyn_len ? std::string("None (a last i64[] operand)") : std::to_string(p.length)));
  std::optional<Dim> n;
  if (!dyn_len) n = Dim(p.length);
  else if (in.back().dtype == DType::i64 && in.back().rank() == 0) n = in.back().dim_value;
  if (!n)
    layout_error(j, k, "operand #" + std::to_string(in.size() - 1) + " (the length) has type " +
                           aval_text(in.back(), j, env) + " but is an i64[]");
  // The body sees a row of each xs: the operand without its leading
  // dimension, which must be the length.
  const Atom& len_atom = j.eqns[k].inputs.back();
  const std::string len_text = !dyn_len ? n->to_string() : len_atom.is_var() ? name(j, len_atom.var) : n->to_string();
  std::vector<Aval> rows(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(b.invars.size()));
  for (std::size_t q = nc + ncar; q < rows.size(); ++q) {
    if (rows[q].rank() == 0 || !(rows[q].shape[0] == *n))
      fail(j, k, "operand #" + std::to_string(q) + " (an xs) has type " + aval_text(in[q], j, env) +
                     " but its leading dimension must be the length, " + len_text);
    rows[q].shape.erase(rows[q].shape.begin());
  }
  Env benv = check_body(j, env, k, b, "jaxpr", rows, nc, [](std::size_t q) { return q; });
  Frame f(*this, j, k, "jaxpr");
  for (std::size_t s = 0; s < ncar; ++s) {
    const Aval got = atom_aval(benv, b.outvars[s]);
    const int v = b.invars[nc + s];
    const Aval want = benv[static_cast<std::size_t>(v)].aval;
    if (got.dtype != want.dtype || !(got.shape == want.shape))
      fail(b, kNone, "scan: carry output #" + std::to_string(s) + " has type " + aval_text(got, b, benv) +
                         " but carry input #" + std::to_string(s) + " (" + name(b, v) + ":" + type_of(b, var_type(b, v)) +
                         ") has type " + aval_text(want, b, benv) + "; the carry keeps its type");
  }
}

// A branch's (or a checkpoint's body's) outputs against the equation's (now bound) output types: a
// dimension that is output q of the equation is the branch's output q, any
// other the caller's variable, whose Dim the branch shares via its inputs.
void Checker::check_cond_outputs(const Jaxpr& j, const Env& env, std::size_t k, const CondParams& p,
                                 const std::vector<Env>& envs) {
  for (std::size_t r = 0; r < p.branches.size(); ++r)
    check_body_outputs(j, env, k, *p.branches[r], cond_branch_name(p, r), envs[r]);
}

void Checker::check_body_outputs(const Jaxpr& j, const Env& env, std::size_t k, const Jaxpr& b,
                                 const std::string& bname, const Env& benv) {
  const Eqn& e = j.eqns[k];
  for (std::size_t s = 0; s < b.outvars.size(); ++s) {
    const Aval got = atom_aval(benv, b.outvars[s]);
    const Type& t = var_type(j, e.outputs[s]);
    Aval want{t.dtype, {}, got.weak, std::nullopt};
    for (const JDim& d : t.shape) {
      if (d.is_static()) {
        want.shape.emplace_back(d.value);
        continue;
      }
      // An earlier output (its type is checked: an i64[]) or a caller variable.
      const auto q = static_cast<std::size_t>(std::find(e.outputs.begin(), e.outputs.end(), d.var) -
                                              e.outputs.begin());
      want.shape.push_back(q < s ? *atom_aval(benv, b.outvars[q]).dim_value
                                 : *env[static_cast<std::size_t>(d.var)].aval.dim_value);
    }
    if (!same(got, want, false))
      fail(j, k, bname + " output #" + std::to_string(s) + " has type " + aval_text(got, b, benv) +
                     " but the equation's output #" + std::to_string(s) + " (" + name(j, e.outputs[s]) + ":" +
                     type_of(j, t) + ") is " + aval_text(want, b, benv) + " for it");
  }
}

}  // namespace dyn::detail::verify

#endif  // DYNSTAGE_IMPLEMENTATION
