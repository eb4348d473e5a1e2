// dynstage: dyn::Tracer<T>, the stand-in for an array while staging.
//
// A Tracer is a thin typed handle on a detail::TracerNode (a variable of a
// trace and its abstract value). All operations on it are free functions in
// ops.hpp that forward to the non-template numpy layer and end in bind.
// Like JAX's tracers it has no value: converting it to bool or to a C++
// number is a compile-time error naming JAX's error.
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>

#include "trace.hpp"

namespace dyn {

namespace detail {
template <class U>
inline constexpr bool dependent_false = false;

// Tracer<want> built on a node of dtype `got` (out of line: every Tracer<T>
// constructor checks).
[[noreturn]] void tracer_dtype_error(DType want, DType got);
#ifdef DYNSTAGE_IMPLEMENTATION
void tracer_dtype_error(DType want, DType got) {
  internal_error("Tracer<" + std::string(dtype_name(want)) + "> built on a node of dtype " +
                 std::string(dtype_name(got)));
}
#endif
}  // namespace detail

template <class T>
class Tracer {
  static_assert(is_element_v<T>, "dyn::Tracer<T>: T must be bool, an 8/16/32/64-bit signed or unsigned std:: integer (std::int8_t ... std::uint64_t), float or double");

public:
  using value_type = T;

  Tracer() = default;  // an empty handle, for building pytrees of tracers
  explicit Tracer(detail::TracerRef node) : node_(std::move(node)) {
    if (node_ && node_->aval.dtype != dtype_v<T>) detail::tracer_dtype_error(dtype_v<T>, node_->aval.dtype);
  }

  const Shape& shape() const { return node().aval.shape; }
  Dim shape(int i) const {
    int r = rank();
    if (i < -r || i >= r)
      detail::fail<IndexError>("shape(" + std::to_string(i) + ") out of range for a tracer of rank " +
                               std::to_string(r));
    return shape()[static_cast<std::size_t>(i < 0 ? i + r : i)];
  }
  int rank() const { return static_cast<int>(shape().size()); }
  DType dtype() const { return dtype_v<T>; }
  bool valid() const { return node_ != nullptr; }

  // `if (x > 0)` and `double d = x` must not compile: a tracer has no value
  // (JAX raises TracerBoolConversionError, ConcretizationTypeError; JAX's
  // tracing doc).
  // (Not offered from an integer tracer to an integer type: that tracer is a
  // size in `zeros<double>({n, 4})`, which must pick the dyn::Size overload.)
  template <class U>
    requires std::is_arithmetic_v<U> &&
             (!std::is_integral_v<T> || std::is_same_v<T, bool> || !std::is_integral_v<U> || std::is_same_v<U, bool>)
  operator U() const {
    static_assert(!std::is_same_v<U, bool> || detail::dependent_false<U>,
                  "TracerBoolConversionError: attempted boolean conversion of a traced array "
                  "(dyn::Tracer). Its value is not known while tracing: use dyn::where or dyn::cond, "
                  "or make the argument static with dyn::static_argnums.");
    static_assert(std::is_same_v<U, bool> || detail::dependent_false<U>,
                  "ConcretizationTypeError: attempted conversion of a traced array (dyn::Tracer) to a "
                  "C++ number. Its value is not known while tracing: keep computing with dyn:: "
                  "operations, or make the argument static with dyn::static_argnums.");
    return U{};
  }

  // x.at(i, j, ...): indexing and functional updates (trace/ops_index.hpp).
  template <class... I>
  auto at(const I&... i) const {
    return at_ref(*this, i...);
  }

  // Internal: the node and its value form.
  const detail::TracerRef& node_ref() const { return node_; }
  detail::Value value() const { return detail::Value{AnyArray(), node_, node().aval.weak}; }

private:
  const detail::TracerNode& node() const {
    if (!node_) detail::fail<TypeError>("use of an empty dyn::Tracer handle");
    return *node_;
  }
  detail::TracerRef node_;
};

template <class T>
std::ostream& operator<<(std::ostream& os, const Tracer<T>& t) {
  std::string s = std::string(dtype_name(dtype_v<T>)) + "[";
  for (int i = 0; i < t.rank(); ++i) {
    if (i) s += ",";
    s += t.shape(i).to_string();
  }
  return os << "Tracer<" << s << "]>";
}

// ---------------------------------------------------------------------------
// Compile-time classification of operands.

template <class X> struct is_tracer : std::false_type {};
template <class T> struct is_tracer<Tracer<T>> : std::true_type {};
template <class X> inline constexpr bool is_tracer_v = is_tracer<std::remove_cvref_t<X>>::value;

template <class X> struct is_array : std::false_type {};
template <class T> struct is_array<Array<T>> : std::true_type {};
template <class X> inline constexpr bool is_array_v = is_array<std::remove_cvref_t<X>>::value;

// C++ numbers, std::complex<float> and std::complex<double> included.
template <class X>
inline constexpr bool is_scalar_v =
    std::is_arithmetic_v<std::remove_cvref_t<X>> || is_complex_v<std::remove_cvref_t<X>>;

template <class X>
inline constexpr bool is_dim_v = std::is_same_v<std::remove_cvref_t<X>, Dim>;

// A dyn:: operand: a tracer, a concrete array, a C++ scalar (weak literal),
// or a dimension (a weak i64 scalar: its value, like jnp.array(x.shape[0])).
template <class X>
concept Operand = is_tracer_v<X> || is_array_v<X> || is_scalar_v<X> || is_dim_v<X>;
// An array-like operand (what a dyn:: operation needs at least one of).
template <class X>
concept ArrayLike = is_tracer_v<X> || is_array_v<X>;

namespace detail {

// C++ element type of a scalar: int -> int32_t, long -> int64_t, unsigned char -> uint8_t, ...
template <class S>
constexpr auto scalar_element() {
  using U = std::remove_cvref_t<S>;
  if constexpr (std::is_same_v<U, bool>) return bool{};
  else if constexpr (is_complex_v<U>) {
    static_assert(sizeof(U) <= 16, "dynstage: std::complex<long double> is not a supported element type");
    return U{};
  } else if constexpr (std::is_floating_point_v<U>) {
    static_assert(sizeof(U) <= 8, "dynstage: long double is not a supported element type");
    if constexpr (std::is_same_v<U, float>) return float{};
    else return double{};
  } else {
    // by signedness and width: short -> int16_t, unsigned -> uint32_t, ...
    if constexpr (std::is_signed_v<U>) {
      if constexpr (sizeof(U) == 1) return std::int8_t{};
      else if constexpr (sizeof(U) == 2) return std::int16_t{};
      else if constexpr (sizeof(U) == 4) return std::int32_t{};
      else return std::int64_t{};
    } else {
      if constexpr (sizeof(U) == 1) return std::uint8_t{};
      else if constexpr (sizeof(U) == 2) return std::uint16_t{};
      else if constexpr (sizeof(U) == 4) return std::uint32_t{};
      else return std::uint64_t{};
    }
  }
}
template <class S> using scalar_element_t = decltype(scalar_element<S>());

template <class X> struct element_type_of { using type = scalar_element_t<X>; };
template <> struct element_type_of<Dim> { using type = std::int64_t; };
template <class T> struct element_type_of<Tracer<T>> { using type = T; };
template <class T> struct element_type_of<Array<T>> { using type = T; };
template <class X> using elem_t = typename element_type_of<std::remove_cvref_t<X>>::type;

// Static type info of an operand: strong for arrays and tracers, weak for scalars.
template <class X>
constexpr TypeInfo info_of() {
  if constexpr (is_scalar_v<X>) return weak_type_of<std::remove_cvref_t<X>>();
  else if constexpr (is_dim_v<X>) return TypeInfo{DType::i64, true};
  else return TypeInfo{dtype_v<elem_t<X>>, false};
}

template <class A, class B>
constexpr DType promoted_dtype() {
  return promote_types(info_of<A>(), info_of<B>()).dtype;
}

// A dyn::Dim operand counts as traced: its value is known only while tracing
// (a symbolic dimension's value is a tracer).
template <class... X>
inline constexpr bool any_tracer_v = ((is_tracer_v<X> || is_dim_v<X>) || ...);

// Tracer<T> if any operand is traced, else Array<T>.
template <class T, class... X>
using result_of_t = std::conditional_t<any_tracer_v<X...>, Tracer<T>, Array<T>>;

// The value of a dimension: a weak i64 literal when static, else (while
// tracing) the i64[] tracer holding it.
Value dim_to_value(const Dim& d);
#ifdef DYNSTAGE_IMPLEMENTATION
Value dim_to_value(const Dim& d) {
  if (d.is_static()) return scalar_value(Scalar::of<std::int64_t>(d.value()), true);
  TraceState* t = current_trace();
  if (!t)
    fail<TypeError>("the symbolic dimension " + d.to_string() + " has a value only while tracing");
  Value v = t->dim_operand(d);
  v.weak = true;
  return v;
}
#endif

// A C++ scalar's value `s` as a weak literal of dtype `weak` (out of line:
// one copy for every scalar type).
Value weak_literal(const Scalar& s, DType weak);
#ifdef DYNSTAGE_IMPLEMENTATION
Value weak_literal(const Scalar& s0, DType weak) {
  // The literal keeps its exact value; its dtype is the weak kind's.
  Value v = scalar_value(s0, true);
  if (v.dtype() != weak) {
    Scalar s = scalar_of(v.array);
    Scalar r;
    r.dtype = weak;
    r.i = s.i;
    r.f = is_inexact(s.dtype) ? s.f : static_cast<double>(s.i);
    r.fi = is_complex(s.dtype) && is_complex(weak) ? s.fi : 0.0;
    if (is_integer(weak) && is_float(s.dtype)) r.i = static_cast<std::int64_t>(s.f);
    v = scalar_value(r, true);
  }
  return v;
}
#endif

template <class X>
Value to_value(const X& x) {
  using U = std::remove_cvref_t<X>;
  if constexpr (is_tracer_v<U>) return x.value();
  else if constexpr (is_array_v<U>) return Value{AnyArray(x), nullptr, false};
  else if constexpr (is_dim_v<U>) return dim_to_value(x);
  else {
    using E = scalar_element_t<U>;
    TypeInfo w = weak_type_of<U>();
    // A weak integer literal is held as i32 when it fits, else as i64 (found
    // by dynstage_fuzz: `x_i64 + 3000000000LL` was truncated to 32 bits). The
    // weak dtype never decides a result type against an array (promote_types),
    // so only the held value changes.
    if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool>) {
      constexpr std::int64_t lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
      const bool fits = std::is_signed_v<U> ? static_cast<std::int64_t>(x) >= lo && static_cast<std::int64_t>(x) <= hi
                                            : static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(hi);
      if (!fits) w.dtype = DType::i64;
    }
    return weak_literal(Scalar::of<E>(static_cast<E>(x)), w.dtype);
  }
}

// The tracer of a Value whose static type is Tracer of `want` (a concrete
// value, folded from a traced computation, is lifted back into the trace),
// and the array of one whose static type is Array of `want`. Out of line:
// every operation's result goes through them.
TracerRef value_to_tracer(const Value& v, DType want);
const AnyArray& value_to_array(const Value& v, DType want);

#ifdef DYNSTAGE_IMPLEMENTATION
TracerRef value_to_tracer(const Value& v, DType want) {
  if (!v.is_tracer()) {
    // A traced computation can fold to a concrete value (e.g. reshape to the
    // same shape of a lifted constant); lift it back into the trace.
    TraceState* t = current_trace();
    if (!t) fail<TypeError>("an operation on a dyn::Dim gives a dyn::Tracer and can only be used while tracing");
    Value lifted = t->lift(v);
    if (!lifted.is_tracer())  // a scalar stays a literal: stage it
      lifted = bind1(Prim::convert_element_type, {v}, ConvertParams{v.dtype(), false}, true);
    return value_to_tracer(lifted, want);
  }
  if (v.dtype() != want)
    internal_error("static result type " + std::string(dtype_name(want)) + " differs from the traced " +
                   std::string(dtype_name(v.dtype())));
  return v.tracer;
}

const AnyArray& value_to_array(const Value& v, DType want) {
  if (v.is_tracer()) internal_error("from_value: a tracer where a concrete array was expected");
  if (v.array.dtype() != want)
    internal_error("static result type " + std::string(dtype_name(want)) + " differs from the computed " +
                   std::string(dtype_name(v.array.dtype())));
  return v.array;
}
#endif

// Wrap a Value as the statically expected result type R (Tracer<T> or Array<T>).
template <class R>
R from_value(const Value& v) {
  using T = typename R::value_type;
  if constexpr (is_tracer_v<R>) return R(value_to_tracer(v, dtype_v<T>));
  else return value_to_array(v, dtype_v<T>).template get<T>();
}

}  // namespace detail
}  // namespace dyn
