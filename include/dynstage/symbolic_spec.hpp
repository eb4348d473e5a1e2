// dynstage: polymorphic shape specifications, scopes with constraints, and
// solving dimension variables from concrete shapes (reference 003).
//
// Spec grammar (JAX's `_Parser`, jax/_src/export/shape_poly.py):
//   shape  := '(' shape ')' | [item {',' item} [',']]
//   item   := expr | '_' | '...'      ('...' only last: the rest of the dims)
//   expr   := ['+'|'-'] term {('+'|'-') term}
//   term   := factor ['^' int] {'*' factor ['^' int]}
//   factor := name | int | '-' int | op '(' expr ',' expr ')'
//   op     := floordiv | mod | max | min
// Constraints are `expr >= expr`, `expr <= expr` or `expr == expr`.
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
// symbolic.hpp, symbolic_arith.hpp and symbolic_decision.hpp (checking a
// scope's constraints runs the decision procedure). It also defines SymbolicScope's member
// functions, declared in symbolic.hpp, since they parse constraints.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "symbolic.hpp"
#include "symbolic_arith.hpp"
#include "symbolic_decision.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Spec items

// One item of a parsed spec: a dimension expression, `_` (one dimension, as it
// comes) or `...` (all remaining dimensions, as they come).
struct SpecItem {
  enum class Kind : std::uint8_t { dim, one, rest };
  Kind kind = Kind::dim;
  Dim dim;  // for Kind::dim
};

struct ShapeSpec {
  std::string text;  // as the user wrote it, for messages
  std::vector<SpecItem> items;
};

// Python's repr of a string, for messages: '(b, 4)'.
std::string py_repr(std::string_view s);

// Parse a polymorphic shape spec ("(b, 4)", "(batch, ...)", "_", "2*d",
// "b + 15", "a, ...", "b1+2*b2, 4*b2, b1*b1+16") in `scope` (a new scope
// without constraints if null). Throws ShapeError with the offending text.
ShapeSpec parse_shape_spec(std::string_view spec, std::shared_ptr<SymbolicScope> scope = nullptr);
// A shape of dimension expressions only, like jax.export.symbolic_shape.
Shape symbolic_shape(std::string_view spec, std::shared_ptr<SymbolicScope> scope = nullptr);
// The spec for an argument of rank `rank`: `...` expands to `_` items; throws
// ShapeError unless the spec has exactly `rank` dimensions.
std::vector<SpecItem> resolve_spec(const ShapeSpec& s, std::size_t rank);
// The spec applied to an argument's concrete shape: `_` and `...` take the
// concrete sizes; constant dimensions must match them.
Shape resolve_spec(const ShapeSpec& s, const std::vector<std::int64_t>& like);

// ---------------------------------------------------------------------------
// Solving dimension variables at call time

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
#include <cctype>

namespace dyn::detail {

std::string py_repr(std::string_view s) { return "'" + std::string(s) + "'"; }

// ---------------------------------------------------------------------------
// Parser

class SpecParser {
public:
  SpecParser(std::string_view spec, SymbolicScope& scope, std::string what = "symbolic shape")
      : spec_(spec), scope_(scope), what_(std::move(what)) {
    tokenize();
  }

  std::vector<SpecItem> parse() {
    shape();
    expect({Tok::end});
    return std::move(items_);
  }

private:
  enum class Tok : std::uint8_t { name, number, lpar, rpar, comma, plus, minus, star, circumflex, ellipsis, dot, end, error };
  struct Token {
    Tok kind;
    std::string_view text;
    std::size_t pos;
  };

  static const char* tok_name(Tok t) {
    switch (t) {
      case Tok::name: return "NAME";
      case Tok::number: return "NUMBER";
      case Tok::lpar: return "LPAR";
      case Tok::rpar: return "RPAR";
      case Tok::comma: return "COMMA";
      case Tok::plus: return "PLUS";
      case Tok::minus: return "MINUS";
      case Tok::star: return "STAR";
      case Tok::circumflex: return "CIRCUMFLEX";
      case Tok::ellipsis: return "ELLIPSIS";
      case Tok::dot: return "DOT";
      case Tok::end: return "ENDMARKER";
      case Tok::error: return "ERRORTOKEN";
    }
    return "?";
  }

  void tokenize() {
    std::size_t i = 0;
    const std::size_t n = spec_.size();
    auto is_name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    while (i < n) {
      const char c = spec_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      std::size_t j = i + 1;
      Tok k = Tok::error;
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        while (j < n && is_name_char(spec_[j])) ++j;
        k = Tok::name;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        while (j < n && (is_name_char(spec_[j]) || spec_[j] == '.')) ++j;  // Python's NUMBER: "1_000", "1.5"
        k = Tok::number;
      } else if (spec_.substr(i, 3) == "...") {
        j = i + 3;
        k = Tok::ellipsis;
      } else {
        switch (c) {
          case '(': k = Tok::lpar; break;
          case ')': k = Tok::rpar; break;
          case ',': k = Tok::comma; break;
          case '+': k = Tok::plus; break;
          case '-': k = Tok::minus; break;
          case '*': k = Tok::star; break;
          case '^': k = Tok::circumflex; break;
          case '.': k = Tok::dot; break;
          default: k = Tok::error; break;
        }
      }
      toks_.push_back({k, spec_.substr(i, j - i), i});
      i = j;
    }
    toks_.push_back({Tok::end, {}, n});
  }

  const Token& tok() const { return toks_[pos_]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }

  [[noreturn]] void parse_err(const std::string& detail) const {
    const std::size_t p = tok().pos;
    fail<ShapeError>("syntax error in " + what_ + " " + py_repr(spec_) + " in dimension " +
                     std::to_string(items_.size()) + ": " + detail + ". Parsed '" + std::string(spec_.substr(0, p)) +
                     "', remaining '" + std::string(spec_.substr(p)) + "'.");
  }

  void expect(std::initializer_list<Tok> kinds) const {
    for (Tok k : kinds)
      if (tok().kind == k) return;
    std::string names;
    for (Tok k : kinds) names += std::string(names.empty() ? "" : ", ") + tok_name(k);
    parse_err("expecting one of {" + names + "} but found " + tok_name(tok().kind));
  }
  void consume(Tok k) {
    expect({k});
    next();
  }
  bool at(std::initializer_list<Tok> kinds) const {
    for (Tok k : kinds)
      if (tok().kind == k) return true;
    return false;
  }

  std::int64_t integer() {
    expect({Tok::number});
    std::int64_t v = 0;
    bool ok = !tok().text.empty();
    for (char c : tok().text) {
      if (c == '_') continue;
      if (!std::isdigit(static_cast<unsigned char>(c)) || __builtin_mul_overflow(v, 10, &v) ||
          __builtin_add_overflow(v, c - '0', &v)) {
        ok = false;
        break;
      }
    }
    if (!ok) parse_err("expecting integer, found " + std::string(tok().text));
    next();
    return v;
  }

  void shape() {
    if (tok().kind == Tok::lpar) {
      next();
      shape();
      consume(Tok::rpar);
      return;
    }
    while (!at({Tok::end, Tok::rpar})) {
      if (tok().kind == Tok::ellipsis) {
        items_.push_back({SpecItem::Kind::rest, Dim()});
        next();
        break;
      }
      if (tok().kind == Tok::name && tok().text == "_") {
        items_.push_back({SpecItem::Kind::one, Dim()});
        next();
      } else {
        items_.push_back({SpecItem::Kind::dim, expr()});
      }
      if (at({Tok::end, Tok::rpar})) break;
      consume(Tok::comma);
    }
  }

  Dim expr() {
    bool negated = tok().kind == Tok::minus;
    if (negated || tok().kind == Tok::plus) next();
    Dim acc;
    bool first = true;
    while (true) {
      Dim t = term();
      if (negated) t = lincomb(t, -1, Dim(0), 0);
      acc = first ? t : add_dims(acc, t);
      first = false;
      if (at({Tok::end, Tok::rpar, Tok::comma})) return acc;
      negated = tok().kind == Tok::minus;
      expect({Tok::plus, Tok::minus});
      next();
    }
  }

  Dim term() {
    Dim acc;
    bool first = true;
    while (true) {
      Dim f = factor();
      if (tok().kind == Tok::circumflex) {
        next();
        const std::int64_t power = integer();
        Dim p = Dim(1);
        for (std::int64_t i = 0; i < power; ++i) p = mul_dims(p, f);
        f = p;
      }
      acc = first ? f : mul_dims(acc, f);
      first = false;
      if (at({Tok::end, Tok::rpar, Tok::comma, Tok::plus, Tok::minus})) return acc;
      consume(Tok::star);
    }
  }

  Dim factor() {
    if (tok().kind == Tok::name) {
      const std::string name(tok().text);
      next();
      if (name == "floordiv" || name == "mod" || name == "max" || name == "min") return binary_op(name);
      if (name == "_") parse_err("'_' stands for a whole dimension and cannot be used in an expression");
      register_var(name);
      return from_var(name, &scope_);
    }
    std::int64_t sign = 1;
    if (tok().kind == Tok::minus) {
      sign = -1;
      next();
      expect({Tok::number});
    }
    if (tok().kind == Tok::number) return Dim(integer() * sign);
    expect({Tok::name, Tok::minus, Tok::number});
    internal_error("unreachable");
  }

  Dim binary_op(const std::string& op) {
    consume(Tok::lpar);
    const Dim e1 = expr();
    consume(Tok::comma);
    const Dim e2 = expr();
    consume(Tok::rpar);
    if (op == "max") return max_dims(e1, e2);
    if (op == "min") return min_dims(e1, e2);
    if (e1.is_static() && e2.is_static()) {  // constants fold (JAX keeps floordiv(6, 3))
      check_divisor(e1.value(), e2.value(), op.c_str());
      return Dim(op == "mod" ? mod_int(e1.value(), e2.value()) : floordiv_int(e1.value(), e2.value()));
    }
    return from_operation(op == "mod" ? DimOp::mod : DimOp::floordiv, e1, e2, &scope_);
  }

  void register_var(const std::string& name) {
    std::lock_guard<std::recursive_mutex> lock(scope_.mutex);
    if (std::find(scope_.var_names.begin(), scope_.var_names.end(), name) == scope_.var_names.end())
      scope_.var_names.push_back(name);
  }

  std::string_view spec_;
  SymbolicScope& scope_;
  std::string what_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::vector<SpecItem> items_;
};

// Parse a polymorphic shape spec ("(b, 4)", "(batch, ...)", "_", "2*d",
// "b + 15", "a, ...", "b1+2*b2, 4*b2, b1*b1+16") in `scope` (a new scope
// without constraints if null). Throws ShapeError with the offending text.
ShapeSpec parse_shape_spec(std::string_view spec, std::shared_ptr<SymbolicScope> scope) {
  if (!scope) scope = SymbolicScope::make();
  ShapeSpec r{std::string(spec), SpecParser(spec, *scope).parse()};
  for (auto& it : r.items) it.dim = adopt(it.dim);
  return r;
}

// A shape of dimension expressions only, like jax.export.symbolic_shape.
Shape symbolic_shape(std::string_view spec, std::shared_ptr<SymbolicScope> scope) {
  const ShapeSpec s = parse_shape_spec(spec, std::move(scope));
  Shape r;
  for (const auto& it : s.items) {
    if (it.kind != SpecItem::Kind::dim)
      fail<ShapeError>("syntax error in symbolic shape " + py_repr(s.text) + " in dimension " +
                       std::to_string(r.size()) + ": spec contains ... or _ but no 'like' shape was given.");
    r.push_back(it.dim);
  }
  return r;
}

// ---------------------------------------------------------------------------
// Resolving `_` and `...` against an argument

[[noreturn]] void spec_err(const ShapeSpec& s, std::size_t dim, const std::string& detail) {
  fail<ShapeError>("syntax error in symbolic shape " + py_repr(s.text) + " in dimension " + std::to_string(dim) +
                   ": " + detail + ".");
}

// The spec for an argument of rank `rank`: `...` expands to `_` items; throws
// ShapeError unless the spec has exactly `rank` dimensions.
std::vector<SpecItem> resolve_spec(const ShapeSpec& s, std::size_t rank) {
  std::vector<SpecItem> r;
  for (const auto& it : s.items) {
    if (it.kind == SpecItem::Kind::rest) {
      while (r.size() < rank) r.push_back({SpecItem::Kind::one, Dim()});
      break;
    }
    if (r.size() >= rank)
      spec_err(s, r.size(),
               it.kind == SpecItem::Kind::one ? "cannot resolve placeholder '_' because we parsed " +
                                                    std::to_string(r.size()) + " already and the argument has rank " +
                                                    std::to_string(rank)
                                              : "the spec has more dimensions than the argument's rank " +
                                                    std::to_string(rank));
    r.push_back(it);
  }
  if (r.size() != rank)
    spec_err(s, r.size(),
             "the spec has " + std::to_string(r.size()) + " dimensions but the argument has rank " + std::to_string(rank));
  return r;
}

// The spec applied to an argument's concrete shape: `_` and `...` take the
// concrete sizes; constant dimensions must match them.
Shape resolve_spec(const ShapeSpec& s, const std::vector<std::int64_t>& like) {
  const auto items = resolve_spec(s, like.size());
  Shape r;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind != SpecItem::Kind::dim) {
      r.emplace_back(like[i]);
      continue;
    }
    if (items[i].dim.is_static() && items[i].dim.value() != like[i])
      spec_err(s, i,
               "different size " + items[i].dim.to_string() + " for known dimension; like=" + shape_str(to_shape(like)));
    r.push_back(items[i].dim);
  }
  return r;
}

// ---------------------------------------------------------------------------
// Scopes: constraints

std::shared_ptr<SymbolicScope> SymbolicScope::make(const std::vector<std::string>& constraints) {
  auto s = std::make_shared<SymbolicScope>();
  std::lock_guard<std::recursive_mutex> lock(s->mutex);
  for (const auto& c : constraints) {
    s->add_constraint(c);
    s->bounds_cache.clear();
  }
  s->initialized = true;
  // Combine the constraints now, so that contradictory ones are reported here.
  if (!s->explicit_constraints.empty()) (void)DimDecision::build(*s);
  return s;
}

Dim SymbolicScope::var(std::string_view name) {
  const bool ident = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
  if (!ident || name == "_" || name == "floordiv" || name == "mod" || name == "max" || name == "min")
    fail<ShapeError>("Invalid dimension variable name " + py_repr(name) +
                     ": expected an identifier other than _, floordiv, mod, max and min");
  {
    std::lock_guard<std::recursive_mutex> lock(mutex);
    if (std::find(var_names.begin(), var_names.end(), name) == var_names.end()) var_names.emplace_back(name);
  }
  return adopt(from_var(std::string(name), this));
}

std::vector<std::string> SymbolicScope::variables() const {
  std::lock_guard<std::recursive_mutex> lock(mutex);
  return var_names;
}

std::string SymbolicScope::constraints_str() const {
  if (explicit_constraints.empty()) return "";
  std::string r = " with constraints:";
  for (const auto& c : explicit_constraints) r += "\n  " + c.debug_str;
  return r;
}

void SymbolicScope::add_constraint(const std::string& c_str) {
  Comparator cmp = Comparator::eq;
  bool is_geq = true;
  std::size_t p = c_str.find("==");
  if (p == std::string::npos) {
    cmp = Comparator::geq;
    p = c_str.find(">=");
    if (p == std::string::npos) {
      p = c_str.find("<=");
      is_geq = false;
    }
    if (p == std::string::npos)
      fail<ShapeError>("Constraint parsing error: must contain one of '==' or '>=' or '<=': " + py_repr(c_str));
  }
  auto side = [&](std::string_view s) {
    auto items = SpecParser(s, *this, "symbolic constraint").parse();
    if (items.size() != 1 || items[0].kind != SpecItem::Kind::dim)
      fail<ShapeError>("Constraint parsing error: expected one dimension expression on each side of " +
                       py_repr(c_str) + ", found " + py_repr(s));
    return items[0].dim;
  };
  Dim e1 = side(std::string_view(c_str).substr(0, p));
  Dim e2 = side(std::string_view(c_str).substr(p + 2));
  if (cmp == Comparator::geq && !is_geq) std::swap(e1, e2);
  // diff before this constraint's own rule exists
  const Dim diff = sub_dims(e1, e2);
  process_constraint(SymbolicConstraint{cmp, c_str, e1, e2, diff});
}

void SymbolicScope::process_constraint(SymbolicConstraint c) {
  if (c.diff.is_static()) {
    const std::int64_t d = c.diff.value();
    if ((c.cmp == Comparator::eq && d != 0) || (c.cmp == Comparator::geq && d < 0))
      fail<ShapeError>("Unsatisfiable explicit constraint: " + c.debug_str);
    return;
  }
  auto stored = [](const Dim& d) { return d.is_static() ? d : Dim(strip(d.expr())); };
  if (c.cmp == Comparator::eq) {
    if (c.e1.is_static() || c.e1.expr()->terms.size() != 1)
      fail<ShapeError>("Invalid equality constraint: " + c.e1.to_string() + " == " + c.e2.to_string() +
                       ". The left-hand-side must be of the form `term * coefficient` (no addition or "
                       "subtraction at the top level).");
    const auto& [before, before_k] = c.e1.expr()->terms[0];
    if (find_rule(*this, *before))
      fail<ShapeError>("Found multiple equality constraints with the same left-hand-side: " + term_str(*before));
    normalization_rules.push_back({before, stored(c.e2), before_k});
    // mod(e, k) == 0 also means k*floordiv(e, k) == e.
    const DimFactor* f = term_to_factor(*before);
    if (before_k == 1 && c.e2.is_static() && c.e2.value() == 0 && f && f->op == DimOp::mod) {
      const Dim k2 = operand_dim(f->rhs, this);
      if (k2.is_static()) {
        const Dim op1 = operand_dim(f->lhs, this);
        const Dim k_floordiv =
            from_term(make_term({{make_op_factor(DimOp::floordiv, f->lhs, f->rhs), 1}}), k2.value(), this);
        process_constraint(SymbolicConstraint{Comparator::eq, k_floordiv.to_string() + " == " + op1.to_string(),
                                              k_floordiv, op1, sub_dims(k_floordiv, op1)});
      }
    }
  }
  explicit_constraints.push_back({c.cmp, c.debug_str, stored(c.e1), stored(c.e2), stored(c.diff)});
}

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
