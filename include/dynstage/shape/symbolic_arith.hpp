// dynstage: arithmetic on symbolic dimensions, in canonical form (JAX's
// `_normalize_sorted_terms`, `_linear_combination`, `_divmod`, `max_dim`),
// and their evaluation for values of the variables.
//
// The third layer of the symbolic headers (see dim.hpp): it includes
// symbolic.hpp only. It defines the arithmetic that symbolic.hpp declares
// (add_dims, divmod_dims, ...), the sym_* entry points of dim.hpp's
// operators, and the helpers the layers above build expressions with
// (lincomb, from_term, from_operation). All of it is compiled once per
// program, in the translation unit that defines DYNSTAGE_IMPLEMENTATION.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "symbolic.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <optional>

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Normalisation and arithmetic (JAX `_normalize_sorted_terms`, `_divmod`, ...)

const NormalizationRule* find_rule(const SymbolicScope& s, const DimTerm& t) {
  for (const auto& r : s.normalization_rules)
    if (term_equal(*r.before, t)) return &r;
  return nullptr;
}

// The updates to add to an expression containing t*t_k when a rule applies.
Terms normalize_term(const SymbolicScope& s, const TermPtr& t, std::int64_t t_k) {
  Terms updates;
  if (s.normalization_rules.empty()) return updates;
  Terms tmp;
  if (const auto* r = find_rule(s, *t); r && mod_int(t_k, r->k) == 0) {
    updates.emplace_back(t, -t_k);
    for (const auto& [t2, c2] : terms_of(r->after, tmp))
      updates.emplace_back(t2, checked_mul(c2, floordiv_int(t_k, r->k)));
    return updates;
  }
  if (t->factors.size() <= 1) return updates;
  for (const auto& fp : t->factors) {
    const TermPtr ft = make_term({fp});
    const auto* r = find_rule(s, *ft);
    if (!r || mod_int(t_k, r->k) != 0) continue;
    updates.emplace_back(t, -t_k);
    const TermPtr without_f = *term_divide(*t, *ft);
    for (const auto& [t2, c2] : terms_of(r->after, tmp))
      updates.emplace_back(term_mul(*t2, *without_f), checked_mul(c2, floordiv_int(t_k, r->k)));
    return updates;
  }
  return updates;
}

// The canonical Dim for sorted terms: rules applied (once, as JAX), and a
// static Dim when the result is a constant.
Dim normalize_terms(Terms terms, SymbolicScope* scope) {
  if (scope && !scope->normalization_rules.empty()) {
    for (const auto& [t, k] : terms) {
      Terms updates = normalize_term(*scope, t, k);
      if (updates.empty()) continue;
      Terms all = terms;
      all.insert(all.end(), updates.begin(), updates.end());
      terms = sort_and_merge(std::move(all));
      break;
    }
  }
  if (terms.empty()) return Dim(0);
  if (terms[0].first->is_constant()) return Dim(terms[0].second);
  return Dim(make_expr(std::move(terms), scope));
}

Dim from_term(const TermPtr& t, std::int64_t k, SymbolicScope* scope) {
  if (k == 0) return Dim(0);
  return normalize_terms({{t, k}}, scope);
}

Dim from_var(const std::string& name, SymbolicScope* scope) {
  return from_term(make_term({{make_var_factor(name), 1}}), 1, scope);
}

Dim from_operation(DimOp op, const Dim& a, const Dim& b, SymbolicScope* scope) {
  return from_term(make_term({{make_op_factor(op, operand_expr(a), operand_expr(b)), 1}}), 1, scope);
}

// e1*k1 + e2*k2, normalised (JAX `_linear_combination`).
Dim lincomb(const Dim& e1, std::int64_t k1, const Dim& e2, std::int64_t k2) {
  if (e1.is_static() && e2.is_static())
    return Dim(checked_add(checked_mul(e1.value(), k1), checked_mul(e2.value(), k2)));
  SymbolicScope* s = common_scope(e1, e2, "for linear combination");
  Terms s1, s2;
  return normalize_terms(lincomb_pairs(terms_of(e1, s1), 0, k1, terms_of(e2, s2), 0, k2), s);
}

Dim add_dims(const Dim& a, const Dim& b) {
  if (b.is_static() && b.value() == 0) return a;
  if (a.is_static() && a.value() == 0) return b;
  return lincomb(a, 1, b, 1);
}
Dim sub_dims(const Dim& a, const Dim& b) {
  if (b.is_static() && b.value() == 0) return a;
  return lincomb(a, 1, b, -1);
}

Dim mul_dims(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return Dim(checked_mul(a.value(), b.value()));
  if (a.is_static() || b.is_static()) {
    const std::int64_t k = a.is_static() ? a.value() : b.value();
    const Dim& e = a.is_static() ? b : a;
    if (k == 1) return e;
    if (k == 0) return Dim(0);
    return lincomb(e, k, Dim(0), 0);
  }
  SymbolicScope* s = common_scope(a, b, "for operation mul");
  Terms prod;
  for (const auto& [t1, c1] : a.expr()->terms)
    for (const auto& [t2, c2] : b.expr()->terms) prod.emplace_back(term_mul(*t1, *t2), checked_mul(c1, c2));
  return normalize_terms(sort_and_merge(std::move(prod)), s);
}

// Floor division with remainder generalised to expressions (JAX `_divmod`):
// polynomial division when it is exact (a symbolic divisor) or leaves an
// integer remainder (a static divisor), else floordiv(a, b) and mod(a, b).
std::pair<Dim, Dim> divmod_dims(const Dim& a, const Dim& b) {
  if (b.is_static() && b.value() == 0)
    fail<ArithmeticError>("Division by zero in dimension expression floordiv(" + a.to_string() + ", 0)");
  SymbolicScope* s = common_scope(a, b, "for operation floordiv");
  auto symbolic = [&] {
    return std::pair<Dim, Dim>(from_operation(DimOp::floordiv, a, b, s), from_operation(DimOp::mod, a, b, s));
  };
  Dim dividend = a, quotient = Dim(0);
  // The leading term of the dividend decreases at each step; the bound only
  // guards against rewrite rules that would reintroduce larger terms.
  for (int steps = 0; dividend.is_symbolic(); ++steps) {
    if (steps > 1000) return symbolic();
    const auto& [mon, count] = dividend.expr()->terms[0];
    TermPtr qterm = mon;
    std::int64_t dcount;
    if (b.is_symbolic()) {
      const auto& [dterm, dk] = b.expr()->terms[0];
      auto q = term_divide(*mon, *dterm);
      if (!q) return symbolic();
      qterm = *q;
      dcount = dk;
    } else {
      dcount = b.value();
    }
    if (mod_int(count, dcount) != 0) return symbolic();
    const Dim q = from_term(qterm, floordiv_int(count, dcount), s);
    quotient = add_dims(quotient, q);
    dividend = sub_dims(dividend, mul_dims(q, b));
  }
  const std::int64_t d = dividend.value();
  if (b.is_symbolic()) {
    if (d != 0) return symbolic();
    return {quotient, Dim(0)};
  }
  check_divisor(d, b.value(), "floordiv");
  return {add_dims(quotient, Dim(floordiv_int(d, b.value()))), Dim(mod_int(d, b.value()))};
}

// JAX `core.max_dim` / `core.min_dim`: decided where the bounds allow.
Dim max_dims(const Dim& d1, const Dim& d2) {
  if (d1.is_static() && d2.is_static()) return d1.value() >= d2.value() ? d1 : d2;
  SymbolicScope* s = common_scope(d1, d2, "for operation max");
  if (d1.is_static()) {  // d2.rmax(d1)
    auto [lb, ub] = bounds_decision(sub_dims(d2, d1), BoundsPrecision::geq0_or_leq0);
    if (lb >= 0) return d2;
    if (ub <= 0) return d1;
  } else {
    auto [lb, ub] = bounds_decision(sub_dims(d1, d2), BoundsPrecision::geq0_or_leq0);
    if (lb >= 0) return d1;
    if (ub <= 0) return d2;
  }
  return from_operation(DimOp::max, d1, d2, s);
}

Dim min_dims(const Dim& d1, const Dim& d2) {
  if (d1.is_static() && d2.is_static()) return d1.value() <= d2.value() ? d1 : d2;
  SymbolicScope* s = common_scope(d1, d2, "for operation min");
  if (d1.is_static()) {  // d2.rmin(d1)
    auto [lb, ub] = bounds_decision(sub_dims(d2, d1), BoundsPrecision::geq0_or_leq0);
    if (lb >= 0) return d1;
    if (ub <= 0) return d2;
  } else {
    auto [lb, ub] = bounds_decision(sub_dims(d1, d2), BoundsPrecision::geq0_or_leq0);
    if (lb >= 0) return d2;
    if (ub <= 0) return d1;
  }
  return from_operation(DimOp::min, d1, d2, s);
}

// The help text of every InconclusiveDimensionOperation (JAX's text).
std::string inconclusive_help(const std::string& constraint_example) {
  return "\nThis error arises for comparison operations with shapes that\n"
         "are non-constant, and the result of the operation cannot be represented as\n"
         "a boolean value for all values of the symbolic dimensions involved.\n"
         "You can try:\n"
         "  - dyn::max_dim(d1, d2) and dyn::min_dim(d1, d2) instead of std::max/std::min or of\n"
         "    conditionals such as `d > 0 ? d : 0` (write dyn::max_dim(d, 0)): they delay the\n"
         "    comparison until the dimensions are known;\n"
         "  - symbolic constraints that decide the comparison, e.g. dyn::constraints{\"" +
         constraint_example +
         "\"}.\n"
         "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
         "#comparison-of-symbolic-dimensions-is-partially-supported for more details.";
}

// JAX `_geq_decision`.
bool geq_decision(const Dim& e1, const Dim& e2, const Dim& lhs, const char* op, const Dim& rhs) {
  if (e1.is_static() && e2.is_static()) return e1.value() >= e2.value();
  SymbolicScope* s = scope_of(e1) ? scope_of(e1) : scope_of(e2);
  if (scope_of(e1) && scope_of(e2) && scope_of(e1) != scope_of(e2))
    scope_mixing_error(e1, e2, "when comparing '" + lhs.to_string() + "' " + op + " '" + rhs.to_string() + "'");
  auto [lb, ub] = bounds_decision(sub_dims(e1, e2), BoundsPrecision::geq0_or_lt0);
  if (lb >= 0) return true;
  if (ub < 0) return false;
  std::string scope_desc;
  if (!s->explicit_constraints.empty()) scope_desc = "\nUsing symbolic scope" + s->constraints_str();
  fail<InconclusiveDimensionOperation>("Symbolic dimension comparison '" + lhs.to_string() + "' " + op + " '" +
                                       rhs.to_string() + "' is inconclusive." + scope_desc +
                                       inconclusive_help(e1.to_string() + " >= " + e2.to_string()));
}

// The variables of an expression, sorted (JAX `_get_vars`).
void collect_vars(const DimExpr& e, std::set<std::string>& acc) {
  for (const auto& [t, k] : e.terms)
    for (const auto& [f, x] : t->factors) {
      if (f->op == DimOp::var) {
        acc.insert(f->var);
      } else {
        collect_vars(*f->lhs, acc);
        collect_vars(*f->rhs, acc);
      }
    }
}
std::set<std::string> dim_vars(const Dim& d) {
  std::set<std::string> acc;
  if (d.is_symbolic()) collect_vars(*d.expr(), acc);
  return acc;
}

// ---------------------------------------------------------------------------
// The engine entry points declared in dim.hpp
// (non-inline: one definition per program, in the DYNSTAGE_IMPLEMENTATION TU)

Dim sym_add(const Dim& a, const Dim& b) { return adopt(add_dims(a, b)); }
Dim sym_sub(const Dim& a, const Dim& b) { return adopt(sub_dims(a, b)); }
Dim sym_mul(const Dim& a, const Dim& b) { return adopt(mul_dims(a, b)); }
Dim sym_neg(const Dim& a) { return adopt(lincomb(a, -1, Dim(0), 0)); }
Dim sym_floordiv(const Dim& a, const Dim& b) { return adopt(divmod_dims(a, b).first); }
Dim sym_mod(const Dim& a, const Dim& b) { return adopt(divmod_dims(a, b).second); }
Dim sym_max(const Dim& a, const Dim& b) { return adopt(max_dims(a, b)); }
Dim sym_min(const Dim& a, const Dim& b) { return adopt(min_dims(a, b)); }
bool sym_geq(const Dim& e1, const Dim& e2, const Dim& lhs, const char* op, const Dim& rhs) {
  return geq_decision(e1, e2, lhs, op, rhs);
}
bool sym_equal(const DimExpr& a, const DimExpr& b) {
  return a.scope == b.scope && a.hash == b.hash && cmp_expr(a, b) == 0;
}
std::string sym_str(const DimExpr& e) { return expr_str(e); }

// ---------------------------------------------------------------------------
// Evaluation with values for the variables (floor semantics).

std::string unexpected_var_message(const std::string& v) {
  return "Encountered dimension variable '" + v +
         "' that is not appearing in the shapes of the function arguments.\n"
         "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
         "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.";
}

std::int64_t evaluate_expr(const DimExpr& e, const Bindings& env, SymbolicScope* scope);

std::int64_t evaluate_factor(const DimFactor& f, const Bindings& env, SymbolicScope* scope) {
  switch (f.op) {
    case DimOp::var: {
      if (auto it = env.find(f.var); it != env.end()) return it->second;
      // Perhaps an equality constraint defines this variable.
      if (scope) {
        const Dim n = from_var(f.var, scope);
        if (n.is_static()) return n.value();
        const std::string* v1 = n.expr()->terms.size() == 1 ? term_to_var(*n.expr()->terms[0].first) : nullptr;
        if (!(v1 && *v1 == f.var && n.expr()->terms[0].second == 1)) return evaluate_expr(*n.expr(), env, scope);
      }
      fail<ShapeAssertionError>(unexpected_var_message(f.var));
    }
    case DimOp::floordiv:
    case DimOp::mod: {
      const std::int64_t a = evaluate_expr(*f.lhs, env, scope), b = evaluate_expr(*f.rhs, env, scope);
      if (b == 0)
        fail<ArithmeticError>("Division by zero while evaluating the dimension " + factor_str(f) + " (" +
                              expr_str(*f.rhs) + " = 0)");
      check_divisor(a, b, dim_op_name(f.op));
      return f.op == DimOp::floordiv ? floordiv_int(a, b) : mod_int(a, b);
    }
    case DimOp::max: return std::max(evaluate_expr(*f.lhs, env, scope), evaluate_expr(*f.rhs, env, scope));
    case DimOp::min: return std::min(evaluate_expr(*f.lhs, env, scope), evaluate_expr(*f.rhs, env, scope));
  }
  internal_error("bad DimOp");
}

std::int64_t evaluate_term(const DimTerm& t, const Bindings& env, SymbolicScope* scope) {
  std::int64_t r = 1;
  for (const auto& [f, x] : t.factors) {
    const std::int64_t v = evaluate_factor(*f, env, scope);
    for (std::int64_t i = 0; i < x; ++i) r = checked_mul(r, v);
  }
  return r;
}

std::int64_t evaluate_expr(const DimExpr& e, const Bindings& env, SymbolicScope* scope) {
  std::int64_t r = 0;
  for (const auto& [t, k] : e.terms) r = checked_add(r, checked_mul(k, evaluate_term(*t, env, scope)));
  return r;
}

// The value of `d` for these values of its variables. A missing variable
// throws ShapeAssertionError (JAX's UnexpectedDimVar wording).
std::int64_t evaluate(const Dim& d, const Bindings& env) {
  if (d.is_static()) return d.value();
  return evaluate_expr(*d.expr(), env, d.expr()->scope);
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
