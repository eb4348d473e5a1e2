// dynstage: symbolic dimensions (JAX's shape polymorphism).
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
// dim.hpp. Arithmetic is symbolic_arith.hpp, comparisons
// symbolic_decision.hpp, spec parsing and solving symbolic_spec.hpp.
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
#include "../errors.hpp"

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

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
