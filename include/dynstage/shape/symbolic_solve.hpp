// dynstage: solving dimension variables from concrete shapes at call time
// (JAX's shape-polymorphism doc).
//
// Call-time solving (JAX `_solve_dim_equations`): each symbolic dimension of
// an argument's spec is an equation `spec == concrete size`. Repeatedly, an
// equation whose unknown part is one variable with a coefficient (`4*b2`,
// `b1 + 2*b2` once b2 is known) determines that variable by an exact
// division; an equation with nothing unknown becomes a consistency check.
// The plan (which variable from which equation, in which order) is computed
// once, when the function is traced (DimSolver's constructor, which rejects
// unsolvable specs); solve() then runs it on integers at every call.
//
// The top layer of the symbolic headers (see dim.hpp): it includes
// symbolic_spec.hpp (an argument's spec) and the layers below it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "symbolic_spec.hpp"

namespace dyn::detail {

// One symbolic dimension of an argument: its spec and its name in messages
// ("args[0].shape[2]").
struct DimEquation {
  Dim spec;
  std::string dim_name;
};
// An argument's spec for messages (and for DimSolver::solve_shapes):
// {"args[0]", (b, b, 2*d)}.
struct ArgSpec {
  std::string name;
  Shape shape;
};
// An equation with its concrete size, for solve_dim_vars.
struct DimValue {
  Dim spec;
  std::int64_t value;
  std::string dim_name;
};

class DimSolver {
public:
  // One equation per symbolic dimension of the arguments.
  explicit DimSolver(std::vector<ArgSpec> args);
  // Explicit equations; `args` only describe the arguments in messages. If
  // empty, the specs are pieced together from the equations' names
  // ("args[0].shape[2]"), with `_` for dimensions not given.
  DimSolver(std::vector<DimEquation> eqns, const std::vector<ArgSpec>& args);

  const std::vector<DimEquation>& equations() const { return eqns_; }
  // The variables, in the order they are solved.
  std::vector<std::string> variables() const;

  // The values of the variables given values[i] for equations()[i]; checks
  // every equation, divisibility, variable >= 1 and the scope's constraints,
  // throwing ShapeAssertionError with JAX's wording.
  Bindings solve(const std::vector<std::int64_t>& values) const;

  // solve() from the concrete shapes of the arguments (only for a solver
  // built from ArgSpecs): ranks and constant dimensions are checked too.
  Bindings solve_shapes(const std::vector<std::vector<std::int64_t>>& shapes) const;

private:
  struct Step {
    std::size_t eqn;
    bool solves;              // determines `var`; else checks the equation
    std::string var;
    std::int64_t var_k = 1;
    const DimTerm* var_term = nullptr;  // the term of `var` in the equation
  };

  // Is every variable of t known (directly, or through an equality rule)?
  bool known(const DimExpr& e, const std::set<std::string>& vars) const;
  bool known(const DimTerm& t, const std::set<std::string>& vars) const;

  void plan();

  [[noreturn]] void unsolvable(const std::vector<std::size_t>& left, const std::set<std::string>& solved) const;

  std::string specs_block() const;

  // "'b' = 3 from specification 'b' for dimension args[0].shape[0] (= 3), "
  // for the first n variables solved (built only for error messages).
  std::string obtained(const Bindings& env, const std::vector<std::int64_t>& values, std::size_t n) const;

  [[noreturn]] void assertion_error(const std::string& what, const std::string& vars) const;

  std::vector<ArgSpec> args_;  // when built from arguments (solve_shapes)
  std::vector<std::pair<std::string, std::string>> spec_texts_;  // ("args[0]", "(b, b, 2*d)")
  std::vector<DimEquation> eqns_;
  std::vector<std::pair<std::size_t, std::size_t>> eqn_pos_;  // (arg, dim) of each equation
  std::vector<Step> steps_;
  SymbolicScope* scope_ = nullptr;
  std::shared_ptr<SymbolicScope> scope_owner_;
};

// Solve (spec, concrete size, name) equations in one go; `args` as for
// DimSolver.
Bindings solve_dim_vars(const std::vector<DimValue>& dims, const std::vector<ArgSpec>& args = {});

}  // namespace dyn::detail

// ---------------------------------------------------------------------------
// Definitions: compiled once per program (non-inline).
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>

namespace dyn::detail {

inline const char* kShapeAssertionHelp =
    "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html#shape-assertion-errors for more details.";
inline const char* kSolvableHelp =
    "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
    "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.";

DimSolver::DimSolver(std::vector<ArgSpec> args) : args_(std::move(args)) {
  for (const auto& a : args_) spec_texts_.emplace_back(a.name, shape_str(a.shape));
  for (std::size_t a = 0; a < args_.size(); ++a)
    for (std::size_t i = 0; i < args_[a].shape.size(); ++i)
      if (args_[a].shape[i].is_symbolic()) {
        eqns_.push_back({args_[a].shape[i], args_[a].name + ".shape[" + std::to_string(i) + "]"});
        eqn_pos_.emplace_back(a, i);
      }
  plan();
}

DimSolver::DimSolver(std::vector<DimEquation> eqns, const std::vector<ArgSpec>& args) : eqns_(std::move(eqns)) {
  for (const auto& a : args) spec_texts_.emplace_back(a.name, shape_str(a.shape));
  if (args.empty()) {
    std::vector<std::pair<std::string, std::vector<std::string>>> per_arg;
    for (const auto& e : eqns_) {
      const auto p = e.dim_name.rfind(".shape[");
      const std::string arg = p == std::string::npos ? e.dim_name : e.dim_name.substr(0, p);
      std::size_t idx = 0;
      for (std::size_t i = p == std::string::npos ? e.dim_name.size() : p + 7;
           i < e.dim_name.size() && std::isdigit(static_cast<unsigned char>(e.dim_name[i])) && idx < 4096; ++i)
        idx = idx * 10 + static_cast<std::size_t>(e.dim_name[i] - '0');
      auto it = std::find_if(per_arg.begin(), per_arg.end(), [&](const auto& x) { return x.first == arg; });
      if (it == per_arg.end()) it = per_arg.insert(per_arg.end(), {arg, {}});
      if (it->second.size() <= idx) it->second.resize(idx + 1, "_");
      it->second[idx] = e.spec.to_string();
    }
    for (const auto& [arg, dims] : per_arg) {
      std::string t = "(";
      for (std::size_t i = 0; i < dims.size(); ++i) t += (i ? ", " : "") + dims[i];
      spec_texts_.emplace_back(arg, t + (dims.size() == 1 ? ",)" : ")"));
    }
  }
  plan();
}

std::vector<std::string> DimSolver::variables() const {
  std::vector<std::string> r;
  for (const auto& s : steps_)
    if (s.solves) r.push_back(s.var);
  return r;
}

Bindings DimSolver::solve(const std::vector<std::int64_t>& values) const {
  if (values.size() != eqns_.size())
    internal_error("DimSolver::solve: " + std::to_string(values.size()) + " values for " +
                   std::to_string(eqns_.size()) + " equations");
  Bindings env;
  std::size_t nsolved = 0;  // steps_[i] for the first nsolved solving steps have values in env
  for (const auto& st : steps_) {
    const DimEquation& eq = eqns_[st.eqn];
    const std::int64_t dim_value = values[st.eqn];
    if (!st.solves) {
      const std::int64_t ev = evaluate(eq.spec, env);
      if (ev != dim_value)
        assertion_error("Found inconsistency between dimension size " + eq.dim_name + " (= " +
                            std::to_string(dim_value) + ") and the specification '" + eq.spec.to_string() +
                            "' (= " + std::to_string(ev) + ").",
                        obtained(env, values, nsolved));
      continue;
    }
    std::int64_t rest = dim_value;
    Terms storage;
    for (const auto& [t, k] : terms_of(eq.spec, storage)) {
      if (&*t == st.var_term) continue;
      rest = checked_sub(rest, checked_mul(k, evaluate_term(*t, env, scope_)));
    }
    std::int64_t v = rest;
    if (st.var_k != 1) {
      check_divisor(rest, st.var_k, "floordiv");
      const std::int64_t r = mod_int(rest, st.var_k);
      if (r != 0)
        assertion_error("Division had remainder " + std::to_string(r) + " when computing the value of '" + st.var +
                            "'.",
                        obtained(env, values, nsolved));
      v = floordiv_int(rest, st.var_k);
    }
    env[st.var] = v;
    ++nsolved;
    if (v < 1)
      assertion_error("Expected value >= 1 for dimension variable '" + st.var + "'.", obtained(env, values, nsolved));
  }
  if (!env.empty() && scope_) {
    for (const auto& c : scope_->explicit_constraints) {
      const std::int64_t d = evaluate(c.diff, env);
      if ((c.cmp == Comparator::geq && d < 0) || (c.cmp == Comparator::eq && d != 0))
        fail<ShapeAssertionError>("Input shapes do not match the symbolic shape constraint " + c.debug_str +
                                  ".\nExpected '" + c.diff.to_string() + "' to be " +
                                  (c.cmp == Comparator::geq ? "greater or equal" : "equal") +
                                  " to 0, but found " + std::to_string(d) + ".\n" + specs_block() +
                                  "\nObtained dimension variables: " + obtained(env, values, nsolved) + ".\n" +
                                  kShapeAssertionHelp);
    }
  }
  return env;
}

Bindings DimSolver::solve_shapes(const std::vector<std::vector<std::int64_t>>& shapes) const {
  if (shapes.size() != args_.size())
    internal_error("DimSolver::solve_shapes: " + std::to_string(shapes.size()) + " shapes for " +
                   std::to_string(args_.size()) + " arguments");
  for (std::size_t a = 0; a < args_.size(); ++a) {
    const Shape& spec = args_[a].shape;
    if (shapes[a].size() != spec.size())
      assertion_error("Expected rank " + std::to_string(spec.size()) + " for " + args_[a].name +
                          " but found shape " + shape_str(to_shape(shapes[a])) + ".",
                      "");
    for (std::size_t i = 0; i < spec.size(); ++i)
      if (spec[i].is_static() && spec[i].value() != shapes[a][i])
        assertion_error("Found inconsistency between dimension size " + args_[a].name + ".shape[" +
                            std::to_string(i) + "] (= " + std::to_string(shapes[a][i]) +
                            ") and the specification '" + spec[i].to_string() + "' (= " + spec[i].to_string() +
                            ").",
                        "");
  }
  std::vector<std::int64_t> values;
  values.reserve(eqns_.size());
  for (const auto& [a, i] : eqn_pos_) values.push_back(shapes[a][i]);
  return solve(values);
}

bool DimSolver::known(const DimExpr& e, const std::set<std::string>& vars) const {
  for (const auto& [t, k] : e.terms)
    if (!known(*t, vars)) return false;
  return true;
}

bool DimSolver::known(const DimTerm& t, const std::set<std::string>& vars) const {
  for (const auto& [f, x] : t.factors) {
    if (f->op != DimOp::var) {
      if (!known(*f->lhs, vars) || !known(*f->rhs, vars)) return false;
      continue;
    }
    if (vars.count(f->var)) continue;
    if (!scope_) return false;
    const Dim n = from_var(f->var, scope_);
    if (n.is_static()) continue;
    const std::string* v1 = n.expr()->terms.size() == 1 ? term_to_var(*n.expr()->terms[0].first) : nullptr;
    if (v1 && *v1 == f->var) return false;
    if (!known(*n.expr(), vars)) return false;
  }
  return true;
}

void DimSolver::plan() {
  const Dim* first = nullptr;
  for (const auto& e : eqns_)
    if (SymbolicScope* s = scope_of(e.spec)) {
      if (scope_ && s != scope_) scope_mixing_error(*first, e.spec, "when solving dimension variables");
      if (!scope_) first = &e.spec;
      scope_ = s;
      scope_owner_ = e.spec.expr()->owner;
    }
  std::set<std::string> vars;
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < eqns_.size(); ++i) pending.push_back(i);
  while (!pending.empty()) {
    std::vector<std::size_t> left;
    for (std::size_t i : pending) {
      Step st{i, false, "", 1, nullptr};
      Terms storage;
      bool ok = true;
      for (const auto& [t, k] : terms_of(eqns_[i].spec, storage)) {
        if (known(*t, vars)) continue;
        const std::string* v = term_to_var(*t);
        if (v && !st.solves) {
          st = Step{i, true, *v, k, t.get()};
          continue;
        }
        ok = false;
        break;
      }
      if (!ok) {
        left.push_back(i);
        continue;
      }
      if (st.solves) vars.insert(st.var);
      steps_.push_back(std::move(st));
    }
    if (left.size() >= pending.size()) unsolvable(left, vars);
    pending = std::move(left);
  }
  // Constraints mentioning variables that no argument determines.
  if (scope_ && !vars.empty())
    for (const auto& c : scope_->explicit_constraints)
      for (const auto& v : dim_vars(c.diff))
        if (!known(*from_var(v, scope_).expr(), vars) && !vars.count(v))
          fail<ShapeAssertionError>(unexpected_var_message(v));
}

void DimSolver::unsolvable(const std::vector<std::size_t>& left, const std::set<std::string>& solved) const {
  std::set<std::string> vars;
  for (std::size_t i : left)
    for (const auto& v : dim_vars(eqns_[i].spec))
      if (!solved.count(v)) vars.insert(v);
  std::string vs, unprocessed;
  for (const auto& v : vars) vs += (vs.empty() ? "'" : ", '") + v + "'";
  for (std::size_t i : left)
    unprocessed += (unprocessed.empty() ? "'" : ", '") + eqns_[i].spec.to_string() + "' for dimension size " +
                   eqns_[i].dim_name;
  std::string specs;
  for (const auto& [name, text] : spec_texts_) specs += (specs.empty() ? "" : ",") + name + ".shape = " + text;
  fail<ShapeAssertionError>("Cannot solve for values of dimension variables {" + vs +
                            "}.\nWe can only solve linear uni-variate constraints.\n"
                            "Using the following polymorphic shapes specifications: " +
                            specs + ".\nUnprocessed specifications: " + unprocessed + ".\n" + kSolvableHelp);
}

std::string DimSolver::specs_block() const {
  std::string r = "Using the following polymorphic shapes specifications:";
  for (std::size_t i = 0; i < spec_texts_.size(); ++i)
    r += std::string(i ? "," : "") + "\n  " + spec_texts_[i].first + ".shape = " + spec_texts_[i].second;
  return r + ".";
}

std::string DimSolver::obtained(const Bindings& env, const std::vector<std::int64_t>& values, std::size_t n) const {
  std::string r;
  for (const auto& st : steps_) {
    if (!st.solves) continue;
    if (n-- == 0) break;
    const DimEquation& eq = eqns_[st.eqn];
    r += "'" + st.var + "' = " + std::to_string(env.find(st.var)->second) + " from specification '" +
         eq.spec.to_string() + "' for dimension " + eq.dim_name + " (= " + std::to_string(values[st.eqn]) + "), ";
  }
  return r;
}

void DimSolver::assertion_error(const std::string& what, const std::string& vars) const {
  fail<ShapeAssertionError>("Input shapes do not match the polymorphic shapes specification.\n" + what + "\n" +
                            specs_block() + "\nObtained dimension variables: " + vars + ".\n" +
                            kShapeAssertionHelp);
}

// Solve (spec, concrete size, name) equations in one go; `args` as for
// DimSolver.
Bindings solve_dim_vars(const std::vector<DimValue>& dims, const std::vector<ArgSpec>& args) {
  std::vector<DimEquation> eqns;
  std::vector<std::int64_t> values;
  for (const auto& d : dims) {
    eqns.push_back({d.spec, d.dim_name});
    values.push_back(d.value);
  }
  return DimSolver(std::move(eqns), args).solve(values);
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
