// dynstage: dimensions.
//
// A Dim is one entry of a shape. It is a static integer, or (shape
// polymorphism, dynamic sizes) a canonical symbolic expression over dimension
// variables. Shape rules, broadcasting and printing all work on Dims, so they
// serve static, symbolic and dynamic shapes with one code path.
//
// Semantics follow JAX's shape-polymorphism doc: == is total, orderings are
// decided where provable, integer division and modulo floor.
//
// Cost model: a static Dim is a plain int64 with a null expression pointer,
// and every operation below takes an inline fast path when all operands are
// static. Only symbolic operands reach the engine, through the sym_* entry
// points declared below.
//
// Layers. This header is the bottom of the symbolic headers and includes none
// of them; each layer includes only the ones below it:
//
//   dim.hpp                the Dim value type; declares the sym_* entry points
//   symbolic.hpp           canonical expressions (`detail::DimExpr`), scopes,
//                          their order and printing
//   symbolic_arith.hpp     arithmetic in canonical form, evaluation
//   symbolic_decision.hpp  comparisons: bounds and the decision procedure
//   symbolic_spec.hpp      spec and constraint parsing
//   symbolic_solve.hpp     call-time solving of dimension variables
//
// A header that names a type or function of a layer includes that layer
// itself. The engine's definitions (all under DYNSTAGE_IMPLEMENTATION) call
// upward through declarations (dim.hpp's sym_*, symbolic.hpp's
// bounds_decision and SymbolicScope::make); the umbrella headers include the
// top layer, so the implementation TU compiles every definition once.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "../errors.hpp"

namespace dyn {

class Dim;

namespace detail {
struct DimExpr;  // symbolic expression (sum of monomials); see symbolic.hpp

// Integer arithmetic on dimensions: overflow is a user error, not UB.
[[noreturn]] inline void dim_overflow() {
  fail<ArithmeticError>("integer overflow in dimension arithmetic");
}
inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) dim_overflow();
  return r;
}
inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) dim_overflow();
  return r;
}
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) dim_overflow();
  return r;
}

// The symbolic engine (defined in symbolic_arith.hpp, compiled once per program
// under DYNSTAGE_IMPLEMENTATION); reached only when an operand is symbolic.
Dim sym_add(const Dim& a, const Dim& b);
Dim sym_sub(const Dim& a, const Dim& b);
Dim sym_mul(const Dim& a, const Dim& b);
Dim sym_neg(const Dim& a);
Dim sym_floordiv(const Dim& a, const Dim& b);
Dim sym_mod(const Dim& a, const Dim& b);
Dim sym_max(const Dim& a, const Dim& b);
Dim sym_min(const Dim& a, const Dim& b);
// e1 >= e2, decided or InconclusiveDimensionOperation; the message shows the
// comparison as the user wrote it: 'lhs' op 'rhs'.
bool sym_geq(const Dim& e1, const Dim& e2, const Dim& lhs, const char* op, const Dim& rhs);
bool sym_equal(const DimExpr& a, const DimExpr& b);
std::string sym_str(const DimExpr& e);
}  // namespace detail

class Dim {
public:
  Dim() = default;
  Dim(std::int64_t v) : value_(v) {}  // NOLINT: implicit from integers by design
  Dim(int v) : value_(v) {}           // NOLINT
  explicit Dim(std::shared_ptr<const detail::DimExpr> e) : expr_(std::move(e)) {}

  bool is_static() const { return expr_ == nullptr; }
  bool is_symbolic() const { return expr_ != nullptr; }
  // The value of a static dimension; throws InconclusiveDimensionOperation for
  // a symbolic one.
  std::int64_t value() const {
    if (!is_static())
      detail::fail<InconclusiveDimensionOperation>("Symbolic dimension '" + to_string() +
                                                   "' used where a constant is required");
    return value_;
  }
  const std::shared_ptr<const detail::DimExpr>& expr() const { return expr_; }

  // JAX's printing: "4", "2*b", "a + 1", "b*d + b*c", "floordiv(a, 2)".
  std::string to_string() const;

  friend bool operator==(const Dim& a, const Dim& b);
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }

  // Arithmetic: + - * and unary -, with integers on either side.
  friend Dim operator+(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return Dim(detail::checked_add(a.value_, b.value_));
    return detail::sym_add(a, b);
  }
  friend Dim operator-(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return Dim(detail::checked_sub(a.value_, b.value_));
    return detail::sym_sub(a, b);
  }
  friend Dim operator*(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return Dim(detail::checked_mul(a.value_, b.value_));
    return detail::sym_mul(a, b);
  }
  friend Dim operator-(const Dim& a) {
    if (a.is_static()) return Dim(detail::checked_sub(0, a.value_));
    return detail::sym_neg(a);
  }
  Dim& operator+=(const Dim& b) { return *this = *this + b; }
  Dim& operator-=(const Dim& b) { return *this = *this - b; }
  Dim& operator*=(const Dim& b) { return *this = *this * b; }

  // Orderings: decided from "every variable >= 1" and the scope's
  // constraints, else InconclusiveDimensionOperation (as in JAX).
  friend bool operator>=(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return a.value_ >= b.value_;
    return detail::sym_geq(a, b, a, ">=", b);
  }
  friend bool operator<=(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return a.value_ <= b.value_;
    return detail::sym_geq(b, a, a, "<=", b);
  }
  friend bool operator>(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return a.value_ > b.value_;
    return !detail::sym_geq(b, a, a, ">", b);
  }
  friend bool operator<(const Dim& a, const Dim& b) {
    if (a.is_static() && b.is_static()) return a.value_ < b.value_;
    return !detail::sym_geq(a, b, a, "<", b);
  }

private:
  std::int64_t value_ = 0;
  std::shared_ptr<const detail::DimExpr> expr_;
};

using Shape = std::vector<Dim>;

// Total equality (as in JAX): equal iff the canonical forms are equal
// (same scope, same terms). Unsound only in JAX's documented way: `a == b`
// is false even though a and b may take equal values.
inline bool operator==(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value_ == b.value_;
  if (a.is_static() != b.is_static()) return false;
  return a.expr_ == b.expr_ || detail::sym_equal(*a.expr_, *b.expr_);
}

inline std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value_);
  return detail::sym_str(*expr_);
}

inline std::ostream& operator<<(std::ostream& os, const Dim& d) { return os << d.to_string(); }

namespace detail {

// Floor division and modulo with Python semantics.
inline std::int64_t floordiv_int(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline std::int64_t mod_int(std::int64_t a, std::int64_t b) { return a - floordiv_int(a, b) * b; }

inline void check_divisor(std::int64_t a, std::int64_t b, const char* what) {
  if (b == 0)
    fail<ArithmeticError>(std::string("dyn::") + what + "(" + std::to_string(a) + ", 0): division by zero");
  if (b == -1 && a == INT64_MIN) dim_overflow();
}

inline bool all_static(const Shape& s) {
  for (const auto& d : s)
    if (!d.is_static()) return false;
  return true;
}

// The int64 sizes of a shape; InconclusiveDimensionOperation if symbolic.
std::vector<std::int64_t> static_shape(const Shape& s);

inline Shape to_shape(const std::vector<std::int64_t>& s) { return Shape(s.begin(), s.end()); }

// "(3, 4)" as JAX prints shapes in messages; "(v,)" for rank 1.
std::string shape_str(const Shape& s);

// (Out of line: one definition per program, in the DYNSTAGE_IMPLEMENTATION
// translation unit.)
#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<std::int64_t> static_shape(const Shape& s) {
  std::vector<std::int64_t> r;
  r.reserve(s.size());
  for (const auto& d : s) r.push_back(d.value());
  return r;
}

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += s[i].to_string();
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace detail

// Floor division and modulo, as Python's // and % (floordiv(3, -2) == -2,
// mod(-3, 2) == 1), for static and symbolic dimensions alike:
// a == b * floordiv(a, b) + mod(a, b). Division by a static 0 throws
// ArithmeticError.
inline Dim floordiv(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) {
    detail::check_divisor(a.value(), b.value(), "floordiv");
    return Dim(detail::floordiv_int(a.value(), b.value()));
  }
  return detail::sym_floordiv(a, b);
}
inline Dim mod(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) {
    detail::check_divisor(a.value(), b.value(), "mod");
    return Dim(detail::mod_int(a.value(), b.value()));
  }
  return detail::sym_mod(a, b);
}

// max/min of dimensions without deciding a comparison: the result is the
// operand that is provably larger (smaller), else the symbolic max(a, b)
// (min(a, b)). Use them instead of std::max or `d > 0 ? d : 0`.
inline Dim max_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() >= b.value() ? a : b;
  return detail::sym_max(a, b);
}
inline Dim min_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() <= b.value() ? a : b;
  return detail::sym_min(a, b);
}

}  // namespace dyn
