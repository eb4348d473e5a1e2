// dynstage: deciding inequalities of symbolic dimensions.
//
// A port of JAX's `_DecisionByElimination`
// (jax/_src/export/shape_poly_decision.py). The state is a set of facts
// `c >= 0` / `c == 0`: bounds for single terms (`a >= 16`, `mod(b, 3) <= 2`)
// and expressions indexed by their leading term. Facts come from the scope's
// explicit constraints and, per query, from the implicit constraints of the
// terms involved: every variable >= 1; a product is bounded by the products
// of its factors' bounds; 0 <= mod(e, k) <= k - 1 for k > 0; floordiv(e1, e2)
// is bounded by the quotients of the operands' bounds and
// e1 == e2*floordiv(e1, e2) + mod(e1, e2); max/min dominate their operands.
//
// The bounds of e = t*t_k + rest (t the largest term) are found by
// eliminating t with each fact `c` that contains it,
//   e*t_s + c*c_s = rest'   (t cancels, c_s > 0)
// so e*t_s <= UB(rest') since c >= 0, recursively on the smaller rest'.
// Sound but incomplete: what it cannot prove is inconclusive.
//
// Where dynstage differs from JAX: bounds are exact int64 (JAX uses floats
// for the divisions), 0 * inf is 0, and the bounds of f^k for a factor that
// may be negative account for the sign (JAX takes lb^k, ub^k).
//
// The fourth layer of the symbolic headers (see dim.hpp): it includes
// symbolic_arith.hpp (and through it symbolic.hpp) only. The whole decision
// procedure is compiled once per program, in the translation unit that
// defines DYNSTAGE_IMPLEMENTATION.
// Its entry point bounds_decision is declared in symbolic.hpp, whose
// canonical forms call it; orderings of Dims (`a >= b`) reach it through
// dim.hpp's sym_geq.
#pragma once

#include <utility>

#include "symbolic_arith.hpp"

namespace dyn::detail {

// The bounds of a dimension as the decision procedure sees them (kNegInf /
// kPosInf when unbounded); for diagnostics and for shape rules that want to
// reason about ranges themselves.
std::pair<Bound, Bound> dim_bounds(const Dim& d);

}  // namespace dyn::detail

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dyn::detail {

// --- Bound arithmetic (int64 with -inf/+inf sentinels) ---

bool is_inf(Bound b) { return b == kNegInf || b == kPosInf; }
std::int64_t sgn(std::int64_t x) { return x >= 0 ? 1 : -1; }

// floor(a / b) and ceil(a / b) for b != 0 finite, a possibly infinite.
Bound bound_floordiv(Bound a, std::int64_t b) {
  if (is_inf(a)) return ((a > 0) == (b > 0)) ? kPosInf : kNegInf;
  if (b == -1) return a == kNegInf + 1 ? kPosInf : -a;
  return floordiv_int(a, b);
}
Bound bound_ceildiv(Bound a, std::int64_t b) {
  if (is_inf(a)) return ((a > 0) == (b > 0)) ? kPosInf : kNegInf;
  if (b == -1) return a == kNegInf + 1 ? kPosInf : -a;
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  return q;
}

Bound bound_mul(Bound a, Bound b) {
  if (a == 0 || b == 0) return 0;  // a bounded factor that is 0 makes the product 0
  const bool neg = (a < 0) != (b < 0);
  if (is_inf(a) || is_inf(b)) return neg ? kNegInf : kPosInf;
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || is_inf(r)) return neg ? kNegInf : kPosInf;
  return r;
}

Bound bound_add(Bound a, std::int64_t k) {
  if (is_inf(a)) return a;
  std::int64_t r;
  if (__builtin_add_overflow(a, k, &r) || is_inf(r)) return k > 0 ? kPosInf : kNegInf;
  return r;
}

// Bounds of f^k given the bounds of f.
std::pair<Bound, Bound> bound_pow(Bound lo, Bound hi, std::int64_t k) {
  auto p = [k](Bound v) {
    Bound r = 1;
    for (std::int64_t i = 0; i < k; ++i) r = bound_mul(r, v);
    return r;
  };
  if (k % 2 == 0 && lo < 0) {
    if (hi <= 0) return {p(hi), p(lo)};
    return {0, std::max(p(lo), p(hi))};
  }
  return {p(lo), p(hi)};
}

// floor(a / b) over the extended integers (JAX `math_floor_with_inf`).
Bound bound_floor_with_inf(Bound a, Bound b) {
  if (!is_inf(b)) {
    if (!is_inf(a)) return b == -1 ? bound_floordiv(a, b) : floordiv_int(a, b);
    return ((a >= 0) != (b >= 0)) ? kNegInf : kPosInf;
  }
  if (!is_inf(a)) return ((a >= 0) != (b >= 0)) ? -1 : 0;
  return ((a >= 0) != (b >= 0)) ? kNegInf : kPosInf;
}

bool bounds_sufficient(BoundsPrecision p, Bound lb, Bound ub) {
  switch (p) {
    case BoundsPrecision::geq0_or_leq0: return lb >= 0 || ub <= 0;
    case BoundsPrecision::geq0_or_lt0: return lb >= 0 || ub < 0;
    case BoundsPrecision::best: return false;
  }
  return false;
}

[[noreturn]] void unsatisfiable(const std::string& what) { fail<ShapeError>("Unsatisfiable constraint: " + what); }

// --- The decision procedure ---

class DimDecision {
public:
  explicit DimDecision(SymbolicScope* scope) : scope_(scope) {}

  // A decision state with the scope's explicit constraints; the initial state
  // is computed once per scope and copied for each query.
  static DimDecision build(SymbolicScope& scope) {
    if (!scope.initialized || scope.explicit_constraints.empty()) return DimDecision(&scope).initialize();
    if (!scope.decision_initial_state)
      scope.decision_initial_state = std::make_shared<const DimDecision>(DimDecision(&scope).initialize());
    return *scope.decision_initial_state;
  }

  DimDecision& initialize() {
    // In the user's order: the heuristics depend on it.
    for (const auto& c : scope_->explicit_constraints) {
      if (c.diff.is_symbolic()) add_implicit_constraints_expr(c.diff);
      combine_and_add_constraint(c.cmp, c.diff, Dim(0), &c.debug_str);
      scope_->bounds_cache.clear();
    }
    return *this;
  }

  // The lower and upper bounds of e (kNegInf/kPosInf when unknown).
  std::pair<Bound, Bound> bounds(const Dim& e, BoundsPrecision prec, bool add_implicit = false) {
    if (e.is_static()) return {e.value(), e.value()};
    // Cached per scope; a cached result stands if it is good enough for
    // `prec` or was computed with at least that precision.
    if (auto it = scope_->bounds_cache.find(e.expr()); it != scope_->bounds_cache.end()) {
      const CachedBounds& c = it->second;
      if (bounds_sufficient(prec, c.lb, c.ub) || c.prec >= prec) return {c.lb, c.ub};
    }
    if (add_implicit) add_implicit_constraints_expr(e);
    auto [lb, ub] = bounds_for_sorted_terms(e.expr()->terms, 0, prec);
    scope_->bounds_cache[strip(e.expr())] = CachedBounds{lb, ub, prec};
    return {lb, ub};
  }

private:
  struct Fact {  // c >= 0 (geq) or c == 0 (eq), whose leading term has coefficient k
    Comparator cmp;
    std::int64_t k;
    Dim c;
  };
  struct Combination {  // fact c to combine as e*t_s + c*c_s
    Comparator cmp;
    Dim c;
    std::int64_t c_s, t_s;
  };

  // e1 >= e2 (geq) or e1 == e2 (eq); infinite bounds add nothing.
  void combine_and_add_constraint(Comparator cmp, const Dim& e1, const Dim& e2, const std::string* debug = nullptr) {
    const Dim e = sub_dims(e1, e2);
    if (e.is_static()) {
      if (e.value() < 0) unsatisfiable(debug ? *debug : e1.to_string() + " >= " + e2.to_string());
      return;
    }
    add_to_state(cmp, e, debug);
    for (const auto& [c, a] : combine_constraint_with_existing(cmp, e, debug)) add_to_state(c, a, nullptr);
  }
  void add_geq_lb(const Dim& e, Bound lb) {  // e >= lb
    if (lb != kNegInf) combine_and_add_constraint(Comparator::geq, e, Dim(lb));
  }
  void add_geq_ub(Bound ub, const Dim& e) {  // ub >= e
    if (ub != kPosInf) combine_and_add_constraint(Comparator::geq, Dim(ub), e);
  }

  // Record `e >= 0` / `e == 0`.
  void add_to_state(Comparator cmp, const Dim& e, const std::string* debug) {
    const Terms& terms = e.expr()->terms;
    const bool has_const = terms.back().first->is_constant();
    const std::size_t nonconst = terms.size() - (has_const ? 1 : 0);
    if (nonconst == 1) {  // n + t*t_k
      const std::int64_t n = has_const ? terms.back().second : 0;
      const auto& [t, t_k] = terms[0];
      auto [it, fresh] = term_bounds_.try_emplace(t, kNegInf, kPosInf);
      Bound& lb = it->second.first;
      Bound& ub = it->second.second;
      const std::string what = debug ? *debug : e.to_string() + (cmp == Comparator::eq ? " == 0" : " >= 0");
      if (cmp == Comparator::eq) {
        if (mod_int(n, t_k) != 0) unsatisfiable(what);
        const std::int64_t v = checked_sub(0, floordiv_int(n, t_k));
        lb = std::max(lb, v);
        ub = std::min(ub, v);
      } else if (t_k > 0) {
        lb = std::max(lb, bound_ceildiv(checked_sub(0, n), t_k));
      } else {
        ub = std::min(ub, bound_floordiv(checked_sub(0, n), t_k));
      }
      if (lb > ub) unsatisfiable(what);
      return;
    }
    auto& facts = expr_constraints_[terms[0].first];
    for (const auto& f : facts)
      if (f.cmp == cmp && f.k == terms[0].second && f.c == e) return;
    facts.push_back(Fact{cmp, terms[0].second, Dim(strip(e.expr()))});
  }

  // The facts that eliminate t from e*t_s + c*c_s (with only smaller terms
  // left when only_smaller_than_t).
  std::vector<Combination> combine_term_with_existing(const TermPtr& t, std::int64_t t_k, bool only_smaller_than_t) {
    std::vector<Combination> acc;
    Bound t_lb = kNegInf, t_ub = kPosInf;
    if (auto it = term_bounds_.find(t); it != term_bounds_.end()) std::tie(t_lb, t_ub) = it->second;
    const std::int64_t c_s = abs_coeff(t_k);
    auto t_minus = [&](Bound k) {  // t - k
      const Dim raw = raw_dim({{t, 1}}, scope_);
      return k == 0 ? raw : lincomb(raw, 1, Dim(k), -1);
    };
    if (t_lb == t_ub) {
      acc.push_back({Comparator::eq, t_minus(t_lb), c_s, -sgn(t_k)});
    } else {
      if (t_lb != kNegInf) acc.push_back({Comparator::geq, t_minus(t_lb), c_s, -sgn(t_k)});
      if (t_ub != kPosInf) {
        const Dim raw = raw_dim({{t, -1}}, scope_);
        acc.push_back({Comparator::geq, t_ub == 0 ? raw : lincomb(raw, 1, Dim(t_ub), 1), c_s, sgn(t_k)});
      }
    }
    auto scan = [&](const std::vector<Fact>& facts) {
      for (const auto& f : facts)
        for (const auto& [ct, tc_k] : f.c.expr()->terms)
          if (term_equal(*ct, *t)) {
            acc.push_back({f.cmp, f.c, c_s, checked_mul(-tc_k, sgn(t_k))});
            break;
          }
    };
    if (only_smaller_than_t) {
      if (auto it = expr_constraints_.find(t); it != expr_constraints_.end()) scan(it->second);
    } else {
      for (const auto& [lead, facts] : expr_constraints_) scan(facts);
    }
    return acc;
  }

  std::vector<std::pair<Comparator, Dim>> combine_constraint_with_existing(Comparator eq, const Dim& e,
                                                                           const std::string* debug) {
    std::vector<std::pair<Comparator, Dim>> combinations;
    for (const auto& [t, t_k] : e.expr()->terms) {
      if (t->is_constant()) continue;
      for (const auto& comb : combine_term_with_existing(t, t_k, false)) {
        if (!(comb.t_s > 0 || eq == Comparator::eq)) continue;
        const Comparator new_eq =
            (eq == Comparator::eq && comb.cmp == Comparator::eq) ? Comparator::eq : Comparator::geq;
        const Dim new_e = lincomb(e, comb.t_s, comb.c, comb.c_s);
        if (new_e.is_static()) {
          const std::int64_t v = new_e.value();
          if ((new_eq == Comparator::geq && v < 0) || (new_eq == Comparator::eq && v != 0))
            unsatisfiable(debug ? *debug : e.to_string() + " >= 0");
          continue;
        }
        combinations.emplace_back(new_eq, new_e);
      }
    }
    return combinations;
  }

  // The bounds of e[i:].
  std::pair<Bound, Bound> bounds_for_sorted_terms(const Terms& e, std::size_t i, BoundsPrecision prec) {
    if (i >= e.size()) return {0, 0};
    const auto& [t, t_k] = e[i];
    if (t->is_constant()) return {t_k, t_k};
    Bound lb = kNegInf, ub = kPosInf;
    Terms storage;
    for (const auto& comb : combine_term_with_existing(t, t_k, true)) {
      // rest = e[i:]*t_s + c*c_s has only terms smaller than t, and
      // e[i:]*t_s = rest - c*c_s <= UB(rest) as c >= 0.
      const Terms rest = lincomb_pairs(e, i, comb.t_s, terms_of(comb.c, storage), 0, comb.c_s);
      auto [rest_lb, rest_ub] = bounds_for_sorted_terms(rest, 0, BoundsPrecision::best);
      if (rest_ub != kPosInf) {
        if (comb.t_s > 0)
          ub = std::min(ub, bound_floordiv(rest_ub, comb.t_s));
        else
          lb = std::max(lb, bound_ceildiv(rest_ub, comb.t_s));
      }
      if (rest_lb != kNegInf && comb.cmp == Comparator::eq) {
        if (comb.t_s > 0)
          lb = std::max(lb, bound_ceildiv(rest_lb, comb.t_s));
        else
          ub = std::min(ub, bound_floordiv(rest_lb, comb.t_s));
      }
      if (bounds_sufficient(prec, lb, ub)) return {lb, ub};
    }
    // k*max(op1, op2) + rest is between max/min of k*op1 + rest and k*op2 + rest.
    if (const DimFactor* f = term_to_factor(*t); f && (f->op == DimOp::max || f->op == DimOp::min)) {
      const Terms rest1 = lincomb_pairs(e, i + 1, 1, f->lhs->terms, 0, t_k);
      const Terms rest2 = lincomb_pairs(e, i + 1, 1, f->rhs->terms, 0, t_k);
      auto [l1, u1] = bounds_for_sorted_terms(rest1, 0, BoundsPrecision::best);
      auto [l2, u2] = bounds_for_sorted_terms(rest2, 0, BoundsPrecision::best);
      const bool like_max = f->op == DimOp::max ? t_k > 0 : t_k < 0;
      if (like_max) {
        lb = std::max(lb, std::max(l1, l2));
        ub = std::min(ub, std::max(u1, u2));
      } else {
        lb = std::max(lb, std::min(l1, l2));
        ub = std::min(ub, std::min(u1, u2));
      }
    }
    return {lb, ub};
  }

  void add_implicit_constraints_expr(const Dim& e) {
    if (e.is_static()) return;
    for (const auto& [t, k] : e.expr()->terms)
      if (!t->is_constant()) add_implicit_constraints_term(t);
  }

  void add_implicit_constraints_term(const TermPtr& t) {
    if (!processed_.insert(t).second) return;
    const Dim t_e = from_term(t, 1, scope_);
    const DimFactor* f = term_to_factor(*t);
    if (!f) {  // a product: bounded by the products of the factors' bounds
      Bound m_l = 1, m_u = 1;
      for (const auto& [f1, f1_exp] : t->factors) {
        const TermPtr f1_t = make_term({{f1, 1}});
        const Dim f1_e = from_term(f1_t, 1, scope_);
        add_implicit_constraints_term(f1_t);
        auto [a_l, a_u] = bounds(f1_e, BoundsPrecision::best);
        auto [p_l, p_u] = bound_pow(a_l, a_u, f1_exp);
        const Bound c[4] = {bound_mul(m_l, p_l), bound_mul(m_l, p_u), bound_mul(m_u, p_l), bound_mul(m_u, p_u)};
        m_l = *std::min_element(c, c + 4);
        m_u = *std::max_element(c, c + 4);
      }
      add_geq_lb(t_e, m_l);
      add_geq_ub(m_u, t_e);
      return;
    }
    if (f->op == DimOp::var) {
      combine_and_add_constraint(Comparator::geq, t_e, Dim(1));
      return;
    }
    const Dim op1 = operand_dim(f->lhs, scope_), op2 = operand_dim(f->rhs, scope_);
    add_implicit_constraints_expr(op1);
    add_implicit_constraints_expr(op2);
    switch (f->op) {
      case DimOp::var: return;
      case DimOp::mod: {
        auto [l2, u2] = bounds(op2, BoundsPrecision::geq0_or_lt0);
        if (l2 > 0) {  // 0 <= mod <= op2 - 1
          combine_and_add_constraint(Comparator::geq, t_e, Dim(0));
          combine_and_add_constraint(Comparator::geq, sub_dims(op2, Dim(1)), t_e);
          add_geq_ub(bound_add(u2, -1), t_e);
        } else if (u2 < 0) {  // op2 + 1 <= mod <= 0
          combine_and_add_constraint(Comparator::geq, t_e, add_dims(op2, Dim(1)));
          add_geq_lb(t_e, bound_add(l2, 1));
          combine_and_add_constraint(Comparator::geq, Dim(0), t_e);
        }
        return;
      }
      case DimOp::floordiv: {
        auto [l1, u1] = bounds(op1, BoundsPrecision::best);
        auto [l2, u2] = bounds(op2, BoundsPrecision::best);
        if (l2 <= 0 && 0 <= u2)
          fail<InconclusiveDimensionOperation>("Possible division by 0 in division by " + op2.to_string() +
                                               inconclusive_help(op2.to_string() + " >= 1"));
        const Bound c[4] = {bound_floor_with_inf(l1, l2), bound_floor_with_inf(l1, u2),
                            bound_floor_with_inf(u1, l2), bound_floor_with_inf(u1, u2)};
        add_geq_lb(t_e, *std::min_element(c, c + 4));
        add_geq_ub(*std::max_element(c, c + 4), t_e);
        if (l2 >= 0) {
          if (l1 >= 0) combine_and_add_constraint(Comparator::geq, t_e, Dim(0));
          const Dim mod_e = from_operation(DimOp::mod, op1, op2, scope_);
          add_implicit_constraints_expr(mod_e);
          combine_and_add_constraint(Comparator::eq, op1, add_dims(mul_dims(op2, t_e), mod_e));
        }
        return;
      }
      case DimOp::max:
      case DimOp::min: {
        auto [l1, u1] = bounds(op1, BoundsPrecision::best);
        auto [l2, u2] = bounds(op2, BoundsPrecision::best);
        if (f->op == DimOp::max) {
          add_geq_lb(t_e, std::max(l1, l2));
          add_geq_ub(std::max(u1, u2), t_e);
          combine_and_add_constraint(Comparator::geq, t_e, op1);
          combine_and_add_constraint(Comparator::geq, t_e, op2);
        } else {
          add_geq_lb(t_e, std::min(l1, l2));
          add_geq_ub(std::min(u1, u2), t_e);
          combine_and_add_constraint(Comparator::geq, op1, t_e);
          combine_and_add_constraint(Comparator::geq, op2, t_e);
        }
        return;
      }
    }
  }

  SymbolicScope* scope_;
  std::set<TermPtr, TermLess> processed_;
  std::map<TermPtr, std::pair<Bound, Bound>, TermLess> term_bounds_;
  std::map<TermPtr, std::vector<Fact>, TermLess> expr_constraints_;
};

std::pair<Bound, Bound> bounds_decision(const Dim& e, BoundsPrecision prec) {
  if (e.is_static()) return {e.value(), e.value()};
  SymbolicScope& scope = *e.expr()->scope;
  std::lock_guard<std::recursive_mutex> lock(scope.mutex);
  DimDecision decision = DimDecision::build(scope);
  return decision.bounds(e, prec, true);
}

std::pair<Bound, Bound> dim_bounds(const Dim& d) { return bounds_decision(d, BoundsPrecision::best); }

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
