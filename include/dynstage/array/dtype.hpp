// dynstage: element types and JAX type promotion.
//
// DType is the runtime tag; dtype_v<T> maps a C++ element type to it. The
// promotion lattice is JAX's (bool < i32 < i64 < f32 < f64 for our set, with
// weak types for C++ scalar literals): a weak operand adopts the other
// operand's dtype when both are of the same kind (int/float), and a weak float
// meeting an integer array gives the default float f32, as JAX does with
// x64 disabled ("x_i32 + 1.5 becomes f32").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "../errors.hpp"

namespace dyn {

enum class DType : std::uint8_t { bool_, i32, i64, f32, f64 };

inline constexpr int kNumDTypes = 5;

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, bool> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };

template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// Short name used in types: f64[3,4].
constexpr std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

// NumPy name used in parameters: new_dtype=float64.
constexpr std::string_view dtype_numpy_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
  }
  return "?";
}

// The C++ element type, as code spells it: error messages' suggested fixes
// (astype<double>) and the fuzzer's reproductions.
constexpr std::string_view dtype_cpp_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "std::int32_t";
    case DType::i64: return "std::int64_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
  }
  return "?";
}

constexpr std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::bool_: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

constexpr bool is_float(DType d) { return d == DType::f32 || d == DType::f64; }
constexpr bool is_integer(DType d) { return d == DType::i32 || d == DType::i64; }
constexpr bool is_bool(DType d) { return d == DType::bool_; }

// Call f(T{}) with the C++ type of a runtime dtype: the one switch that turns
// a tag back into a type.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(bool{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
  }
  detail::internal_error("visit_dtype: bad dtype tag");
}

// ---------------------------------------------------------------------------
// Promotion. An operand is (dtype, weak). Weak operands come from C++ scalar
// literals; they are bool, i32 ("int") or f32 ("float") by kind only.

struct TypeInfo {
  DType dtype;
  bool weak = false;
  friend constexpr bool operator==(TypeInfo, TypeInfo) = default;
};

constexpr int dtype_rank(DType d) { return static_cast<int>(d); }

// JAX's lattice restricted to our dtypes: bool -> i* -> i32 -> i64 -> f* -> f32 -> f64
// where i* and f* are the weak int and weak float.
constexpr TypeInfo promote_types(TypeInfo a, TypeInfo b) {
  if (a.weak && b.weak) {
    // Two literals: the wider kind wins, still weak.
    return dtype_rank(a.dtype) >= dtype_rank(b.dtype) ? a : b;
  }
  if (a.weak) std::swap(a, b);
  if (b.weak) {
    // a strong, b weak.
    if (is_float(b.dtype)) return is_float(a.dtype) ? a : TypeInfo{DType::f32, false};
    if (is_integer(b.dtype)) return is_bool(a.dtype) ? TypeInfo{DType::i32, false} : a;
    return a;  // weak bool never widens anything
  }
  return dtype_rank(a.dtype) >= dtype_rank(b.dtype) ? a : b;
}

// Weak type of a C++ scalar literal. A float literal is held as a weak f64 so
// that it keeps its exact value (`x * 0.001` on f64 must not see 0.001
// rounded to float); in the lattice every weak float is f*, so with an
// integer operand it still gives f32.
template <class S>
constexpr TypeInfo weak_type_of() {
  if constexpr (std::is_same_v<S, bool>) return {DType::bool_, true};
  else if constexpr (std::is_floating_point_v<S>) return {DType::f64, true};
  else return {DType::i32, true};
}

// C++ element type for a DType, at compile time.
template <DType D> struct element_of;
template <> struct element_of<DType::bool_> { using type = bool; };
template <> struct element_of<DType::i32> { using type = std::int32_t; };
template <> struct element_of<DType::i64> { using type = std::int64_t; };
template <> struct element_of<DType::f32> { using type = float; };
template <> struct element_of<DType::f64> { using type = double; };
template <DType D> using element_t = typename element_of<D>::type;

}  // namespace dyn
