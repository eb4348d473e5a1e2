// dynstage: element types and JAX type promotion.
//
// DType is the runtime tag; dtype_v<T> maps a C++ element type to it. The
// promotion lattice is JAX's (jnp.promote_types; see promote_types below),
// with weak types for C++ scalar literals: a weak operand adopts the other
// operand's dtype when both are of the same kind (int/float), and a weak float
// meeting an integer array gives the default float f32, as JAX does with
// x64 disabled ("x_i32 + 1.5 becomes f32").
#pragma once

#include <complex>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "../errors.hpp"

namespace dyn {

// c64 and c128 are std::complex<float> and std::complex<double> (JAX's
// complex64 and complex128): two floats, real part first, as C++ and numpy
// lay them out.
enum class DType : std::uint8_t { bool_, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, c64, c128 };

inline constexpr int kNumDTypes = 13;

template <class T>
inline constexpr bool is_element_v =
    std::is_same_v<T, bool> || std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int16_t> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint8_t> ||
    std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::complex<float>> ||
    std::is_same_v<T, std::complex<double>>;

// std::complex<float>, std::complex<double>: the complex element types.
template <class T> inline constexpr bool is_complex_v = false;
template <class T> inline constexpr bool is_complex_v<std::complex<T>> = true;
// The type of a complex element type's parts (std::complex<float> ->
// float); other types are their own.
template <class T> struct real_part_of { using type = T; };
template <class T> struct real_part_of<std::complex<T>> { using type = T; };
template <class T> using real_part_t = typename real_part_of<T>::type;

template <class T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::c64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::c128; };

template <class T>
inline constexpr DType dtype_v = dtype_of<T>::value;

// Short name used in types: f64[3,4], u8[4].
constexpr std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::c64: return "c64";
    case DType::c128: return "c128";
  }
  return "?";
}

// NumPy name used in parameters: new_dtype=float64.
constexpr std::string_view dtype_numpy_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
  }
  return "?";
}

// The C++ element type, as code spells it: error messages' suggested fixes
// (astype<double>) and the fuzzer's reproductions.
constexpr std::string_view dtype_cpp_name(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i8: return "std::int8_t";
    case DType::i16: return "std::int16_t";
    case DType::i32: return "std::int32_t";
    case DType::i64: return "std::int64_t";
    case DType::u8: return "std::uint8_t";
    case DType::u16: return "std::uint16_t";
    case DType::u32: return "std::uint32_t";
    case DType::u64: return "std::uint64_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::c64: return "std::complex<float>";
    case DType::c128: return "std::complex<double>";
  }
  return "?";
}

constexpr std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::bool_: return 1;
    case DType::i8: return 1;
    case DType::i16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    case DType::u16: return 2;
    case DType::u32: return 4;
    case DType::u64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::c64: return 8;
    case DType::c128: return 16;
  }
  return 0;
}

// Real floating point only: f32, f64 (complex dtypes are is_complex).
constexpr bool is_float(DType d) { return d == DType::f32 || d == DType::f64; }
constexpr bool is_complex(DType d) { return d == DType::c64 || d == DType::c128; }
// Floating or complex (numpy's "inexact").
constexpr bool is_inexact(DType d) { return is_float(d) || is_complex(d); }
// The real dtype of a complex one's parts (c64 -> f32, c128 -> f64); other
// dtypes are their own.
constexpr DType real_dtype(DType d) {
  return d == DType::c64 ? DType::f32 : d == DType::c128 ? DType::f64 : d;
}
// The complex dtype whose parts are the float dtype d (f32 -> c64, f64 ->
// c128); complex dtypes are their own.
constexpr DType complex_dtype(DType d) {
  return d == DType::f32 ? DType::c64 : d == DType::f64 ? DType::c128 : d;
}
constexpr bool is_signed_integer(DType d) {
  return d == DType::i8 || d == DType::i16 || d == DType::i32 || d == DType::i64;
}
constexpr bool is_unsigned_integer(DType d) {
  return d == DType::u8 || d == DType::u16 || d == DType::u32 || d == DType::u64;
}
constexpr bool is_integer(DType d) { return is_signed_integer(d) || is_unsigned_integer(d); }
constexpr bool is_bool(DType d) { return d == DType::bool_; }
// The dtypes of dimension values, sizes and the index operands of the
// primitives (gather and scatter indices, dynamic_slice starts, switch's
// index): i32 and i64. The numpy layer converts other integer indices to one
// of them (index_dtype_for); an integer scalar of another dtype is never a
// dimension (its arithmetic wraps at another width).
constexpr bool is_index_dtype(DType d) { return d == DType::i32 || d == DType::i64; }
// The index dtype an integer index of dtype d is converted to: i32 holds
// every value of i8, i16, u8 and u16; u32 and u64 go to i64 (u64 values above
// 2^63 wrap, which clamped or dropped indices do not notice).
constexpr DType index_dtype_for(DType d) {
  if (is_index_dtype(d)) return d;
  return dtype_size(d) <= 2 ? DType::i32 : DType::i64;
}
// Bits of an integer dtype (bool: 1).
constexpr int dtype_bits(DType d) { return is_bool(d) ? 1 : static_cast<int>(8 * dtype_size(d)); }

// Call f(T{}) with the C++ type of a runtime dtype: the one switch that turns
// a tag back into a type.
template <class F>
decltype(auto) visit_dtype(DType d, F&& f) {
  switch (d) {
    case DType::bool_: return f(bool{});
    case DType::i8: return f(std::int8_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::u64: return f(std::uint64_t{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::c64: return f(std::complex<float>{});
    case DType::c128: return f(std::complex<double>{});
  }
  detail::internal_error("visit_dtype: bad dtype tag");
}

// ---------------------------------------------------------------------------
// Promotion. An operand is (dtype, weak). Weak operands come from C++ scalar
// literals; they are bool, i32 ("int") or f64 ("float") by kind only.

struct TypeInfo {
  DType dtype;
  bool weak = false;
  friend constexpr bool operator==(TypeInfo, TypeInfo) = default;
};

namespace dtype_detail {
constexpr DType signed_of_bits(int bits) {
  return bits <= 8 ? DType::i8 : bits <= 16 ? DType::i16 : bits <= 32 ? DType::i32 : DType::i64;
}
// Two strong dtypes: the least upper bound in JAX's lattice (jax/_src/dtypes.py,
// _type_promotion_lattice, with x64):
//   bool -> i* -> {u8, i8};  u8 -> {i16, u16};  u16 -> {i32, u32};  u32 -> {i64, u64};  u64 -> f*
//   i8 -> i16 -> i32 -> i64 -> f*;  f* -> f32 -> f64
// so a signed and an unsigned integer meet at the narrowest signed type wider
// than the unsigned one (u8 + i8 -> i16, u32 + i32 -> i64), and u64 with any
// signed integer meets at the weak float f*, which jnp.promote_types gives as
// float64 (np.dtype(float)); dynstage gives f64 too, strongly typed.
//   and on to the complex ones: f32 -> {f64, c64};  f64 -> c128;  c64 -> c128
// so an integer meets a complex dtype at that dtype, f32 + c64 -> c64 and
// f64 + c64 -> c128 (a complex dtype as wide as both operands' parts).
constexpr DType strong_lub(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_complex(a) || is_complex(b)) {
    const DType ra = is_inexact(a) ? real_dtype(a) : DType::f32, rb = is_inexact(b) ? real_dtype(b) : DType::f32;
    // an integer operand adds nothing: c64 with any integer is c64
    if (!is_inexact(a)) return b;
    if (!is_inexact(b)) return a;
    return complex_dtype(dtype_size(ra) >= dtype_size(rb) ? ra : rb);
  }
  if (is_float(a) || is_float(b)) {
    if (is_float(a) && is_float(b)) return dtype_size(a) >= dtype_size(b) ? a : b;
    return is_float(a) ? a : b;
  }
  // two different integers
  if (is_signed_integer(a) == is_signed_integer(b)) return dtype_size(a) >= dtype_size(b) ? a : b;
  const DType u = is_unsigned_integer(a) ? a : b;
  const DType s = is_unsigned_integer(a) ? b : a;
  if (dtype_size(s) > dtype_size(u)) return s;
  if (u == DType::u64) return DType::f64;
  return signed_of_bits(2 * dtype_bits(u));
}
// The kind order of weak literals: bool < int < float < complex.
constexpr int weak_kind(DType d) { return is_bool(d) ? 0 : is_complex(d) ? 3 : is_float(d) ? 2 : 1; }
}  // namespace dtype_detail

// JAX's lattice on our dtypes, with the weak int i* and weak float f* of C++
// scalar literals: a weak int adopts any integer dtype (u8 + 1 is u8), a weak
// float any float dtype; a weak float meeting an integer array gives the
// default float f32 (as JAX without x64: `x_i32 + 1.5` is f32).
constexpr TypeInfo promote_types(TypeInfo a, TypeInfo b) {
  if (a.weak && b.weak) {
    // Two literals: the wider kind wins, still weak.
    return dtype_detail::weak_kind(a.dtype) >= dtype_detail::weak_kind(b.dtype) ? a : b;
  }
  if (a.weak) std::swap(a, b);
  if (b.weak) {
    // a strong, b weak.
    // A weak complex c* (a std::complex literal) is above f*: a complex
    // operand keeps its dtype, a float one becomes the complex dtype of its
    // width (f32 -> c64, f64 -> c128), an integer or bool one the default
    // complex c64 (JAX without x64, as for f* above).
    if (is_complex(b.dtype)) {
      if (is_inexact(a.dtype)) return TypeInfo{complex_dtype(a.dtype), false};
      return TypeInfo{DType::c64, false};
    }
    if (is_float(b.dtype)) return is_inexact(a.dtype) ? a : TypeInfo{DType::f32, false};
    if (is_integer(b.dtype)) return is_bool(a.dtype) ? TypeInfo{DType::i32, false} : a;
    return a;  // weak bool never widens anything
  }
  return TypeInfo{dtype_detail::strong_lub(a.dtype, b.dtype), false};
}

// Whether a value of dtype `from` promotes to `to` without a cast: `to` is
// `from` or above it in the lattice (loop carries: a body result of a wider
// dtype than its init value is the body promoting the carry).
constexpr bool promotes_to(DType from, DType to) { return promote_types({from}, {to}).dtype == to; }

// The dtype sum, prod, cumsum and cumprod compute in (jnp's
// promote_integers): bool counts in i64 (API.md section 8); integers narrower
// than 32 bits widen to i32 or u32, as jnp.sum(int8) is int32 and
// jnp.sum(uint8) uint32 with JAX's 32-bit default integer; the rest keep
// their dtype (integer sums wrap).
constexpr DType sum_dtype(DType d) {
  if (is_bool(d)) return DType::i64;
  if (d == DType::i8 || d == DType::i16) return DType::i32;
  if (d == DType::u8 || d == DType::u16) return DType::u32;
  return d;
}

// Weak type of a C++ scalar literal. A float literal is held as a weak f64 so
// that it keeps its exact value (`x * 0.001` on f64 must not see 0.001
// rounded to float); in the lattice every weak float is f*, so with an
// integer operand it still gives f32.
template <class S>
constexpr TypeInfo weak_type_of() {
  if constexpr (std::is_same_v<S, bool>) return {DType::bool_, true};
  else if constexpr (is_complex_v<S>) return {DType::c128, true};
  else if constexpr (std::is_floating_point_v<S>) return {DType::f64, true};
  else return {DType::i32, true};
}

// C++ element type for a DType, at compile time.
template <DType D> struct element_of;
template <> struct element_of<DType::bool_> { using type = bool; };
template <> struct element_of<DType::i8> { using type = std::int8_t; };
template <> struct element_of<DType::i16> { using type = std::int16_t; };
template <> struct element_of<DType::i32> { using type = std::int32_t; };
template <> struct element_of<DType::i64> { using type = std::int64_t; };
template <> struct element_of<DType::u8> { using type = std::uint8_t; };
template <> struct element_of<DType::u16> { using type = std::uint16_t; };
template <> struct element_of<DType::u32> { using type = std::uint32_t; };
template <> struct element_of<DType::u64> { using type = std::uint64_t; };
template <> struct element_of<DType::f32> { using type = float; };
template <> struct element_of<DType::f64> { using type = double; };
template <> struct element_of<DType::c64> { using type = std::complex<float>; };
template <> struct element_of<DType::c128> { using type = std::complex<double>; };
template <DType D> using element_t = typename element_of<D>::type;

}  // namespace dyn
