// dynstage: polymorphic shape specifications and scopes with constraints
// (JAX's shape-polymorphism doc).
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
// The fifth layer of the symbolic headers (see dim.hpp): it includes
// symbolic.hpp, symbolic_arith.hpp and symbolic_decision.hpp (checking a
// scope's constraints runs the decision procedure). It also defines
// SymbolicScope's member functions, declared in symbolic.hpp, since they
// parse constraints.
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

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
