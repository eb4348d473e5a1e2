// dynstage: dimensions.
//
// A Dim is one entry of a shape. It is a static integer, or (shape
// polymorphism, dynamic sizes) a canonical symbolic expression over dimension
// variables. Shape rules, broadcasting and printing all work on Dims, so they
// serve static, symbolic and dynamic shapes with one code path.
//
// Semantics follow JAX shape polymorphism (reference 003): == is total,
// orderings are decided where provable, integer division and modulo floor.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "errors.hpp"

namespace dyn {

namespace detail {
struct DimExpr;  // symbolic expression (sum of monomials); see symbolic.hpp
}

class Dim {
public:
  Dim() = default;
  Dim(std::int64_t v) : value_(v) {}  // NOLINT: implicit from integers by design
  Dim(int v) : value_(v) {}           // NOLINT
  explicit Dim(std::shared_ptr<const detail::DimExpr> e) : expr_(std::move(e)) {}

  bool is_static() const { return expr_ == nullptr; }
  // The value of a static dimension; throws InconclusiveDimensionOperation for
  // a symbolic one.
  std::int64_t value() const {
    if (!is_static())
      detail::fail<InconclusiveDimensionOperation>("Symbolic dimension '" + to_string() +
                                                   "' used where a constant is required");
    return value_;
  }
  const std::shared_ptr<const detail::DimExpr>& expr() const { return expr_; }

  std::string to_string() const;

  friend bool operator==(const Dim& a, const Dim& b);
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }

private:
  std::int64_t value_ = 0;
  std::shared_ptr<const detail::DimExpr> expr_;
};

using Shape = std::vector<Dim>;

inline bool operator==(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value_ == b.value_;
  if (a.is_static() != b.is_static()) return false;
  return a.expr_ == b.expr_;  // refined by the symbolic layer (canonical forms are interned)
}

inline std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value_);
  return "<symbolic>";
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

inline bool all_static(const Shape& s) {
  for (const auto& d : s)
    if (!d.is_static()) return false;
  return true;
}

inline std::vector<std::int64_t> static_shape(const Shape& s) {
  std::vector<std::int64_t> r;
  r.reserve(s.size());
  for (const auto& d : s) r.push_back(d.value());
  return r;
}

inline Shape to_shape(const std::vector<std::int64_t>& s) { return Shape(s.begin(), s.end()); }

// "(3, 4)" as JAX prints shapes in messages; "(v,)" for rank 1.
inline std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += s[i].to_string();
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}

}  // namespace detail
}  // namespace dyn
