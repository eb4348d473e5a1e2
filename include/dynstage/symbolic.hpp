// dynstage: symbolic dimensions (shape polymorphism, reference 003).
//
// A port of JAX's `_DimExpr` (jax/_src/export/shape_poly.py). The grammar of
// the representation:
//
//   DimExpr   = sum of (DimTerm, coefficient), largest term first; the
//               constant is the term with no factors, printed last
//   DimTerm   = product of (DimFactor, exponent >= 1), largest factor first
//   DimFactor = variable | floordiv(e1, e2) | mod(e1, e2) | max(e1, e2)
//               | min(e1, e2)           (e1, e2 are DimExprs)
//
// "Largest" is JAX's syntactic order (`_syntactic_cmp`: size first, then
// lexicographic), which fixes both the canonical form (`b + b` is `2*b`,
// `a*b` is `b*a`) and JAX's printing order (`b*d + b*c`, `b + a`). A
// canonical form that is a constant is never a DimExpr: it is a static Dim.
//
// Scopes. Every symbolic expression belongs to a SymbolicScope: variables are
// identified by name within it, and it holds the user's constraints
// (`"a >= b"`, and `"a*b == c + d"` as a rewrite rule applied during
// normalisation). Mixing scopes throws dyn::TypeError.
// Ownership: a Dim handed to user code owns its scope (DimExpr::owner);
// expressions stored INSIDE a scope (rules, constraints, caches, factor
// operands) never do, so there are no reference cycles.
//
// Errors (all through detail::fail, so they carry the user's location):
//   InconclusiveDimensionOperation  an ordering that cannot be decided
//   ShapeError                      spec/constraint syntax, unsatisfiable or
//                                   invalid constraints
//   TypeError                       mixing symbolic scopes
//   ArithmeticError                 division by a static 0, int64 overflow
//   ShapeAssertionError             call-time shape checks; unsolvable specs
//                                   (trace time); unknown variables in evaluate
//
// The second layer of the symbolic headers (see dim.hpp): it includes only
// dim.hpp. Comparisons are symbolic_decision.hpp, spec parsing and solving
// symbolic_spec.hpp.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dim.hpp"
#include "errors.hpp"

namespace dyn::detail {

struct SymbolicScope;
struct DimFactor;
struct DimTerm;
using ExprPtr = std::shared_ptr<const DimExpr>;
using FactorPtr = std::shared_ptr<const DimFactor>;
using TermPtr = std::shared_ptr<const DimTerm>;
using FactorPows = std::vector<std::pair<FactorPtr, std::int64_t>>;  // (factor, exponent)
using Terms = std::vector<std::pair<TermPtr, std::int64_t>>;         // (term, coefficient)
using Bindings = std::map<std::string, std::int64_t, std::less<>>;   // variable -> value

// ---------------------------------------------------------------------------
// Data

enum class DimOp : std::uint8_t { var, floordiv, mod, max, min };

const char* dim_op_name(DimOp op);

// A variable, or an operation on two expressions. Operands are scope-less
// (owner == nullptr) and may be constants (one constant term, as JAX's
// `_ensure_poly`).
struct DimFactor {
  DimOp op = DimOp::var;
  std::string var;
  ExprPtr lhs, rhs;
  std::int64_t size = 1;  // JAX's _size: 1 for a variable, 1 + operand sizes
  std::size_t hash = 0;
};

struct DimTerm {
  FactorPows factors;     // largest first; empty: the constant 1
  std::int64_t size = 0;  // sum of 1 + exponent * factor size
  std::size_t hash = 0;
  bool is_constant() const { return factors.empty(); }
};

struct DimExpr {
  Terms terms;            // largest first, coefficients != 0 (a constant operand: [(1, k)])
  std::int64_t size = 0;  // sum of 1 + |coefficient| * term size
  std::size_t hash = 0;
  SymbolicScope* scope = nullptr;
  std::shared_ptr<SymbolicScope> owner;  // set only on expressions held by user Dims
};

inline std::size_t hash_mix(std::size_t seed, std::size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// JAX's syntactic order on expressions (`_syntactic_cmp`), for ordered containers.
struct TermLess {
  bool operator()(const TermPtr& a, const TermPtr& b) const;
};
struct ExprLess {
  bool operator()(const ExprPtr& a, const ExprPtr& b) const;
};

// ---------------------------------------------------------------------------
// Scopes

enum class Comparator : std::uint8_t { eq, geq };

// An explicit constraint `e1 == e2` or `e1 >= e2` (`<=` is swapped), as the
// user wrote it (debug_str). e1, e2 and diff = e1 - e2 are normalised with
// the rules of the constraints before it only.
struct SymbolicConstraint {
  Comparator cmp = Comparator::geq;
  std::string debug_str;
  Dim e1, e2, diff;
};

// An equality constraint `before * k == after`, applied while normalising.
struct NormalizationRule {
  TermPtr before;
  Dim after;
  std::int64_t k = 1;
};

enum class BoundsPrecision : std::uint8_t { geq0_or_leq0 = 0, geq0_or_lt0 = 1, best = 2 };

// Bounds are int64 with two sentinels for -inf and +inf; results beyond
// int64 saturate to the infinities (no dimension gets that large).
using Bound = std::int64_t;
inline constexpr Bound kNegInf = std::numeric_limits<std::int64_t>::min();
inline constexpr Bound kPosInf = std::numeric_limits<std::int64_t>::max();

class DimDecision;  // symbolic_decision.hpp

struct CachedBounds {
  Bound lb, ub;
  BoundsPrecision prec;
};

// Variables by name, constraints, and the decision procedure's caches.
// Create with make(); the fields are internals of the engine. The member
// functions parse and check constraints, so they are defined with the parser
// (symbolic_spec.hpp).
struct SymbolicScope : std::enable_shared_from_this<SymbolicScope> {
  // A scope with these constraints ("a >= b", "b <= 16", "floordiv(a, b) == c").
  // Throws ShapeError for a malformed or unsatisfiable constraint.
  static std::shared_ptr<SymbolicScope> make(const std::vector<std::string>& constraints = {});

  // The dimension variable `name` (normalised: an equality constraint with
  // `name` on the left rewrites it).
  Dim var(std::string_view name);
  // Names of the variables created so far, in order of creation.
  std::vector<std::string> variables() const;
  // " with constraints:\n  a >= b\n  b >= 16", or "" without constraints.
  std::string constraints_str() const;

  std::vector<SymbolicConstraint> explicit_constraints;
  std::vector<NormalizationRule> normalization_rules;
  std::vector<std::string> var_names;
  bool initialized = false;
  std::map<ExprPtr, CachedBounds, ExprLess> bounds_cache;
  std::shared_ptr<const DimDecision> decision_initial_state;
  mutable std::recursive_mutex mutex;  // guards the caches and var_names

private:
  void add_constraint(const std::string& c);
  void process_constraint(SymbolicConstraint c);
};

// A hash consistent with ==, for caches keyed by (symbolic) shapes.
inline std::size_t dim_hash(const Dim& d) {
  if (d.is_static()) return std::hash<std::int64_t>{}(d.value());
  return hash_mix(d.expr()->hash, std::hash<const void*>{}(d.expr()->scope));
}

// ---------------------------------------------------------------------------
// The engine's functions. Declared here; defined once per program, in the
// translation unit that defines DYNSTAGE_IMPLEMENTATION (below), so a user
// file neither parses the engine nor instantiates the containers it uses.

// JAX's __str__: "2*b", "a + 1", "floordiv(a, 2)".
std::string expr_str(const DimExpr& e);
std::string term_str(const DimTerm& t);
std::string factor_str(const DimFactor& f);

// A Dim for user code: it owns its scope.
Dim adopt(Dim d);
// The canonical Dim of variable `name` in `scope` (rules applied).
Dim from_var(const std::string& name, SymbolicScope* scope);
SymbolicScope* scope_of(const Dim& d);
// Normalised arithmetic in the Dim's scope, without adopt().
Dim add_dims(const Dim& a, const Dim& b);
Dim sub_dims(const Dim& a, const Dim& b);
Dim mul_dims(const Dim& a, const Dim& b);
std::pair<Dim, Dim> divmod_dims(const Dim& a, const Dim& b);
Dim max_dims(const Dim& d1, const Dim& d2);
Dim min_dims(const Dim& d1, const Dim& d2);

// Bounds of a Dim from "every variable >= 1", the constraints and the
// implicit bounds of floordiv/mod/max/min. The decision procedure's entry
// point, defined in symbolic_decision.hpp; declared here because the
// canonical forms call it (max_dims/min_dims simplify with it, sym_geq
// decides with it).
std::pair<Bound, Bound> bounds_decision(const Dim& e, BoundsPrecision prec);

// The variables of an expression, sorted (JAX `_get_vars`).
std::set<std::string> dim_vars(const Dim& d);

// JAX's UnexpectedDimVar message for variable `v`.
std::string unexpected_var_message(const std::string& v);
// The value of `d` for these values of its variables. A missing variable
// throws ShapeAssertionError (JAX's UnexpectedDimVar wording).
std::int64_t evaluate(const Dim& d, const Bindings& env);

}  // namespace dyn::detail

// ---------------------------------------------------------------------------
// The engine's definitions: compiled once per program (non-inline).
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <optional>

namespace dyn::detail {

const char* dim_op_name(DimOp op) {
  switch (op) {
    case DimOp::var: return "var";
    case DimOp::floordiv: return "floordiv";
    case DimOp::mod: return "mod";
    case DimOp::max: return "max";
    case DimOp::min: return "min";
  }
  internal_error("bad DimOp");
}


// Sizes only order expressions; saturate instead of overflowing.
std::int64_t size_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}
std::int64_t size_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
std::int64_t abs_coeff(std::int64_t k) { return k == INT64_MIN ? INT64_MAX : (k < 0 ? -k : k); }

FactorPtr make_var_factor(std::string name) {
  auto f = std::make_shared<DimFactor>();
  f->hash = hash_mix(std::hash<std::string>{}(name), 17);
  f->var = std::move(name);
  return f;
}

FactorPtr make_op_factor(DimOp op, ExprPtr lhs, ExprPtr rhs) {
  auto f = std::make_shared<DimFactor>();
  f->op = op;
  f->size = size_add(1, size_add(lhs->size, rhs->size));
  f->hash = hash_mix(hash_mix(static_cast<std::size_t>(op) + 31, lhs->hash), rhs->hash);
  f->lhs = std::move(lhs);
  f->rhs = std::move(rhs);
  return f;
}

TermPtr make_term(FactorPows factors) {
  auto t = std::make_shared<DimTerm>();
  std::size_t h = 7;
  for (const auto& [f, e] : factors) {
    t->size = size_add(t->size, size_add(1, size_mul(e, f->size)));
    h = hash_mix(hash_mix(h, f->hash), static_cast<std::size_t>(e));
  }
  t->hash = h;
  t->factors = std::move(factors);
  return t;
}

const TermPtr& term_one() {
  static const TermPtr one = make_term({});
  return one;
}

// A DimExpr with exactly these (already sorted, normalised) terms. It owns
// its scope when the scope is managed by a shared_ptr; strip() removes that
// for storage inside a scope.
ExprPtr make_expr(Terms terms, SymbolicScope* scope);

ExprPtr strip(const ExprPtr& e) {
  if (!e || !e->owner) return e;
  auto c = std::make_shared<DimExpr>(*e);
  c->owner.reset();
  return c;
}

// ---------------------------------------------------------------------------
// JAX's syntactic order (`_syntactic_cmp`); -1, 0, 1.

template <class T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

int cmp_expr(const DimExpr& a, const DimExpr& b);

int cmp_factor(const DimFactor& a, const DimFactor& b) {
  if (&a == &b) return 0;
  if (int c = cmp3(a.size, b.size)) return c;
  if (a.op == DimOp::var || b.op == DimOp::var) {
    if (a.op != b.op) return a.op == DimOp::var ? -1 : 1;
    return cmp3(a.var, b.var);
  }
  if (int c = cmp3(std::string_view(dim_op_name(a.op)), std::string_view(dim_op_name(b.op)))) return c;
  if (int c = cmp_expr(*a.lhs, *b.lhs)) return c;
  return cmp_expr(*a.rhs, *b.rhs);
}

int cmp_term(const DimTerm& a, const DimTerm& b) {
  if (&a == &b) return 0;
  if (int c = cmp3(a.size, b.size)) return c;
  const std::size_t n = std::min(a.factors.size(), b.factors.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (int c = cmp_factor(*a.factors[i].first, *b.factors[i].first)) return c;
    if (int c = cmp3(a.factors[i].second, b.factors[i].second)) return c;
  }
  return cmp3(a.factors.size(), b.factors.size());
}

int cmp_expr(const DimExpr& a, const DimExpr& b) {
  if (&a == &b) return 0;
  if (int c = cmp3(a.size, b.size)) return c;
  const std::size_t n = std::min(a.terms.size(), b.terms.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (int c = cmp_term(*a.terms[i].first, *b.terms[i].first)) return c;
    if (int c = cmp3(a.terms[i].second, b.terms[i].second)) return c;
  }
  return cmp3(a.terms.size(), b.terms.size());
}

int cmp_ptr(const TermPtr& a, const TermPtr& b) { return cmp_term(*a, *b); }
int cmp_ptr(const FactorPtr& a, const FactorPtr& b) { return cmp_factor(*a, *b); }

bool term_equal(const DimTerm& a, const DimTerm& b) {
  return &a == &b || (a.hash == b.hash && cmp_term(a, b) == 0);
}

bool TermLess::operator()(const TermPtr& a, const TermPtr& b) const { return cmp_term(*a, *b) < 0; }
bool ExprLess::operator()(const ExprPtr& a, const ExprPtr& b) const { return cmp_expr(*a, *b) < 0; }

// e1[i1:] * f1 + e2[i2:] * f2 of two sorted pair lists (terms or factors),
// sorted, zero coefficients dropped (JAX `_linear_combination_sorted_pairs`).
template <class P>
std::vector<std::pair<P, std::int64_t>> lincomb_pairs(const std::vector<std::pair<P, std::int64_t>>& p1,
                                                      std::size_t i1, std::int64_t f1,
                                                      const std::vector<std::pair<P, std::int64_t>>& p2,
                                                      std::size_t i2, std::int64_t f2) {
  std::vector<std::pair<P, std::int64_t>> acc;
  acc.reserve(p1.size() + p2.size());
  auto push = [&](const P& m, std::int64_t c) {
    if (c != 0) acc.emplace_back(m, c);
  };
  while (i1 < p1.size() && i2 < p2.size()) {
    const int c = cmp_ptr(p1[i1].first, p2[i2].first);
    if (c < 0) {
      push(p2[i2].first, checked_mul(p2[i2].second, f2));
      ++i2;
    } else if (c > 0) {
      push(p1[i1].first, checked_mul(p1[i1].second, f1));
      ++i1;
    } else {
      push(p1[i1].first, checked_add(checked_mul(p1[i1].second, f1), checked_mul(p2[i2].second, f2)));
      ++i1;
      ++i2;
    }
  }
  for (; i1 < p1.size(); ++i1) push(p1[i1].first, checked_mul(p1[i1].second, f1));
  for (; i2 < p2.size(); ++i2) push(p2[i2].first, checked_mul(p2[i2].second, f2));
  return acc;
}

// Sort pairs largest first and merge equal keys (JAX `_coeff_to_sorted_terms`).
template <class P>
std::vector<std::pair<P, std::int64_t>> sort_and_merge(std::vector<std::pair<P, std::int64_t>> v) {
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return cmp_ptr(a.first, b.first) > 0; });
  std::vector<std::pair<P, std::int64_t>> out;
  for (auto& p : v) {
    if (!out.empty() && cmp_ptr(out.back().first, p.first) == 0)
      out.back().second = checked_add(out.back().second, p.second);
    else
      out.push_back(std::move(p));
  }
  std::erase_if(out, [](const auto& p) { return p.second == 0; });
  return out;
}

TermPtr term_mul(const DimTerm& a, const DimTerm& b) {
  if (a.is_constant()) return make_term(b.factors);
  if (b.is_constant()) return make_term(a.factors);
  return make_term(lincomb_pairs(a.factors, 0, 1, b.factors, 0, 1));
}

// a / b as a term, or nullopt when b does not divide a ((n^3*m) / n == n^2*m).
std::optional<TermPtr> term_divide(const DimTerm& a, const DimTerm& b) {
  auto f = lincomb_pairs(a.factors, 0, 1, b.factors, 0, -1);
  for (const auto& p : f)
    if (p.second <= 0) return std::nullopt;
  return make_term(std::move(f));
}

const DimFactor* term_to_factor(const DimTerm& t) {
  if (t.factors.size() != 1 || t.factors[0].second != 1) return nullptr;
  return t.factors[0].first.get();
}
const std::string* term_to_var(const DimTerm& t) {
  const DimFactor* f = term_to_factor(t);
  return f && f->op == DimOp::var ? &f->var : nullptr;
}

// ---------------------------------------------------------------------------
// Printing, exactly as JAX's __str__.

std::string expr_str(const DimExpr& e);

std::string factor_str(const DimFactor& f) {
  if (f.op == DimOp::var) return f.var;
  return std::string(dim_op_name(f.op)) + "(" + expr_str(*f.lhs) + ", " + expr_str(*f.rhs) + ")";
}

// Factors in ascending order, `f^k` for exponents > 1: "b*c", "a^2".
std::string term_str(const DimTerm& t) {
  std::string r;
  for (auto it = t.factors.rbegin(); it != t.factors.rend(); ++it) {
    if (!r.empty()) r += "*";
    r += factor_str(*it->first);
    if (it->second != 1) r += "^" + std::to_string(it->second);
  }
  return r;
}

// Terms largest first, the constant last: "2*b", "a + 1", "- b + 3".
std::string expr_str(const DimExpr& e) {
  std::string r;
  for (const auto& [t, k] : e.terms) {
    if (!r.empty()) r += " ";
    const std::string abs_k = k < 0 ? std::to_string(k).substr(1) : std::to_string(k);
    const char* sgn = k > 0 ? "+ " : "- ";
    if (t->is_constant())
      r += k == 0 ? std::string("0") : sgn + abs_k;
    else if (k == 1 || k == -1)
      r += sgn + term_str(*t);
    else
      r += sgn + abs_k + "*" + term_str(*t);
  }
  if (r.rfind("+ ", 0) == 0) r.erase(0, 2);
  return r;
}


ExprPtr make_expr(Terms terms, SymbolicScope* scope) {
  auto e = std::make_shared<DimExpr>();
  std::size_t h = 11;
  for (const auto& [t, k] : terms) {
    e->size = size_add(e->size, size_add(1, size_mul(abs_coeff(k), t->size)));
    h = hash_mix(hash_mix(h, t->hash), static_cast<std::size_t>(k));
  }
  e->hash = h;
  e->terms = std::move(terms);
  e->scope = scope;
  if (scope) e->owner = scope->weak_from_this().lock();
  return e;
}

// ---------------------------------------------------------------------------
// Dim <-> expressions

SymbolicScope* scope_of(const Dim& d) { return d.is_static() ? nullptr : d.expr()->scope; }

[[noreturn]] void scope_mixing_error(const Dim& a, const Dim& b, const std::string& when) {
  fail<TypeError>("Invalid mixing of symbolic scopes " + when + ".\nExpected scope" + scope_of(a)->constraints_str() +
                  "\nand found for '" + b.to_string() + "' scope" + scope_of(b)->constraints_str() +
                  "\nSymbolic dimensions from different dyn::polymorphic_shapes/scopes cannot be combined.");
}

// The scope of whichever operand is symbolic (they must agree).
SymbolicScope* common_scope(const Dim& a, const Dim& b, const char* when) {
  SymbolicScope* sa = scope_of(a);
  SymbolicScope* sb = scope_of(b);
  if (sa && sb && sa != sb) scope_mixing_error(a, b, when);
  return sa ? sa : sb;
}

// The terms of a Dim; a static k is [(1, k)] (empty for 0).
const Terms& terms_of(const Dim& d, Terms& storage) {
  if (d.is_symbolic()) return d.expr()->terms;
  storage.clear();
  if (d.value() != 0) storage.emplace_back(term_one(), d.value());
  return storage;
}

// A factor operand: scope-less, constants as one constant term.
ExprPtr operand_expr(const Dim& d) {
  if (d.is_symbolic()) return strip(d.expr());
  return make_expr({{term_one(), d.value()}}, nullptr);
}

Dim operand_dim(const ExprPtr& e, SymbolicScope* scope) {
  if (e->terms.size() == 1 && e->terms[0].first->is_constant()) return Dim(e->terms[0].second);
  if (e->scope == scope) return Dim(e);
  auto c = std::make_shared<DimExpr>(*e);
  c->scope = scope;
  return Dim(ExprPtr(std::move(c)));
}

// A Dim for user code: it must own its scope.
Dim adopt(Dim d) {
  if (d.is_static() || d.expr()->owner || !d.expr()->scope) return d;
  auto c = std::make_shared<DimExpr>(*d.expr());
  c->owner = c->scope->weak_from_this().lock();
  return Dim(ExprPtr(std::move(c)));
}

// A non-normalised expression with the given terms (JAX `_DimExpr(terms)`).
Dim raw_dim(Terms terms, SymbolicScope* scope) {
  if (terms.empty()) return Dim(0);
  if (terms.size() == 1 && terms[0].first->is_constant()) return Dim(terms[0].second);
  return Dim(make_expr(std::move(terms), scope));
}

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

// The help text of every InconclusiveDimensionOperation (reference 003).
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
