// dynstage: the jaxpr IR.
//
// Grammar (JAX's, with Catalyst's dynamic dimensions):
//
//   Jaxpr    ::= { lambda Var* ; Var* . let Eqn* in ( Atom* ) }
//   Eqn      ::= Var+ = Prim [ Params ] Atom*  |  Prim [ Params ] Atom*  (an effect: no outputs)
//   Atom     ::= Var | Literal
//   Literal  ::= value:dtype[]                  (rank-0 only)
//   Type     ::= dtype[ Dim,* ]   Dim ::= int | Var (an i64[] variable in scope)
//
// A Jaxpr owns a flat table of variables (`types`); a variable is an index
// into it. Every dimension of a variable's type is a static integer or a
// reference to another i64[] variable of the same jaxpr that is bound before
// it (a constvar, an invar or an earlier equation's output), so every jaxpr is
// closed and can be type-checked, interpreted or lowered on its own. Nested
// jaxprs (control-flow bodies) are separate Jaxpr objects with their own
// tables, shared immutably through shared_ptr<const Jaxpr>.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../array/array.hpp"
#include "../array/dtype.hpp"
#include "prims.hpp"

namespace dyn {

// A dimension in a jaxpr type: static, or the value of variable `var`.
struct JDim {
  std::int64_t value = 0;
  int var = -1;  // >= 0: the i64[] variable holding this dimension
  bool is_static() const { return var < 0; }
  static JDim of_var(int v) { return JDim{0, v}; }
  friend bool operator==(const JDim&, const JDim&) = default;
};

// The type of a jaxpr variable.
struct Type {
  DType dtype = DType::f64;
  std::vector<JDim> shape;
  bool weak = false;  // weakly typed (from a C++ scalar literal); not printed
  int rank() const { return static_cast<int>(shape.size()); }
  friend bool operator==(const Type&, const Type&) = default;
};

// A rank-0 constant. Integers and bools are held in `i`, floats in `f`
// (an f32 literal holds its float value exactly as a double). A u64 value is
// held as its two's-complement bits (`i` is -1 for 2^64 - 1); every other
// integer dtype's values fit `i` as they are.
struct Scalar {
  DType dtype = DType::f64;
  std::int64_t i = 0;
  double f = 0.0;   // a float's value; a complex one's real part
  double fi = 0.0;  // a complex value's imaginary part

  template <class T>
  static Scalar of(T v) {
    Scalar s;
    s.dtype = dtype_v<T>;
    if constexpr (is_complex_v<T>) {
      s.f = static_cast<double>(v.real());
      s.fi = static_cast<double>(v.imag());
    } else if constexpr (std::is_floating_point_v<T>) s.f = static_cast<double>(v);
    else s.i = static_cast<std::int64_t>(v);
    return s;
  }
  // The value converted to C++ type T (a complex value to a real T: its
  // real part, as numpy's astype).
  template <class T>
  T as() const {
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      if (is_inexact(dtype)) return T(static_cast<R>(f), static_cast<R>(fi));
      if (dtype == DType::u64) return T(static_cast<R>(static_cast<std::uint64_t>(i)));
      return T(static_cast<R>(i));
    } else {
      if (is_inexact(dtype)) return static_cast<T>(f);
      if (dtype == DType::u64) return static_cast<T>(static_cast<std::uint64_t>(i));
      return static_cast<T>(i);
    }
  }
  friend bool operator==(const Scalar&, const Scalar&) = default;
};

// An equation operand: a variable or a literal.
struct Atom {
  int var = -1;  // >= 0: a variable of the enclosing jaxpr
  Scalar lit;    // when var < 0
  bool weak = false;
  bool is_var() const { return var >= 0; }
  static Atom of_var(int v) { return Atom{v, {}, false}; }
  static Atom literal(Scalar s, bool weak = false) { return Atom{-1, s, weak}; }
  friend bool operator==(const Atom&, const Atom&) = default;
};

struct Eqn {
  detail::Prim prim;
  std::vector<Atom> inputs;
  std::vector<int> outputs;  // variables defined by this equation
  detail::Params params;
};

struct Jaxpr {
  std::vector<Type> types;     // the variable table; var i has type types[i]
  std::vector<int> constvars;  // before ';'
  std::vector<int> invars;     // after ';'
  std::vector<Eqn> eqns;
  std::vector<Atom> outvars;
  // Explicitness of invars and outvars (true = written by the user, false =
  // an implicit dimension argument or result). Empty means all explicit.
  std::vector<bool> in_explicit, out_explicit;

  int new_var(Type t) {
    types.push_back(std::move(t));
    return static_cast<int>(types.size()) - 1;
  }
  const Type& type_of(const Atom& a) const;
};

// A jaxpr with the values of its constvars.
struct ClosedJaxpr {
  std::shared_ptr<const Jaxpr> jaxpr;
  std::vector<AnyArray> consts;
};

// The type of a literal.
inline Type literal_type(const Scalar& s, bool weak) { return Type{s.dtype, {}, weak}; }

inline const Type& Jaxpr::type_of(const Atom& a) const {
  if (!a.is_var()) {
    thread_local Type t;
    t = literal_type(a.lit, a.weak);
    return t;
  }
  return types.at(static_cast<std::size_t>(a.var));
}

namespace detail {
// Whether an equation has an effect (JAX's effects): a debug_callback, or a
// control-flow equation with one in a body. Such an equation is kept even
// when no output is used, and effects keep their program order (the trace's
// canonical order, the backend's liveness).
bool has_effect(const Eqn& e);
bool has_effect(const Jaxpr& j);

// The nested jaxprs a control-flow equation's params hold (none for other
// params): a for_loop's body, a while_loop's cond and body, a cond's
// branches, a scan's and a checkpoint's jaxpr. Walks that only visit every
// body use this; rules that read a body's layout use the params.
std::vector<const Jaxpr*> bodies_of(const Params& p);
}  // namespace detail

#ifdef DYNSTAGE_IMPLEMENTATION
namespace detail {
bool has_effect(const Jaxpr& j) {
  for (const Eqn& e : j.eqns)
    if (has_effect(e)) return true;
  return false;
}
bool has_effect(const Eqn& e) {
  switch (prim_kind(e.prim)) {
    case Kind::effect: return true;
    case Kind::control: break;
    case Kind::unary:
    case Kind::binary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert:
    case Kind::structural:
    case Kind::scatter:
    case Kind::reduction:
    case Kind::cumulative:
    case Kind::sort:
    case Kind::fft:
    case Kind::contraction:
    case Kind::collective: return false;  // (every rank runs the same program: dead on one, dead on all)
  }
  for (const Jaxpr* b : bodies_of(e.params))
    if (has_effect(*b)) return true;
  return false;
}
std::vector<const Jaxpr*> bodies_of(const Params& params) {
  return std::visit(
      [](const auto& p) -> std::vector<const Jaxpr*> {
        using P = std::remove_cvref_t<decltype(p)>;
        if constexpr (std::is_same_v<P, ForLoopParams>) return {p.body_jaxpr.get()};
        else if constexpr (std::is_same_v<P, WhileLoopParams>) return {p.cond_jaxpr.get(), p.body_jaxpr.get()};
        else if constexpr (std::is_same_v<P, CondParams>) {
          std::vector<const Jaxpr*> r;
          for (const auto& b : p.branches) r.push_back(b.get());
          return r;
        } else if constexpr (std::is_same_v<P, ScanParams> || std::is_same_v<P, CheckpointParams>) return {p.jaxpr.get()};
        else return {};
      },
      params);
}
}  // namespace detail
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn
