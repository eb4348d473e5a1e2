// dynstage: what the eager kernels (kernels.hpp) are made of: C++ scalar
// semantics (wrapping integer arithmetic, NaN-propagating max/min,
// saturating conversions), vectorisable loops, buffers and dtype dispatch,
// and strided block copies. Compiled once per program, with the kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "../ir/shape_rules.hpp"

// The eager kernels are compiled once per program, in the one translation
// unit that defines DYNSTAGE_IMPLEMENTATION; rules.hpp declares impl.
#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail {

// The kernels, in their own namespace so that their short names cannot
// collide with other dyn::detail code.
namespace kernels {

using namespace rule_util;

// ---------------------------------------------------------------------------
// Scalar semantics.

// The unsigned type integer arithmetic on T is computed in: T's own unsigned
// type, at least `unsigned int` (u16 * u16 would otherwise be promoted to a
// signed int and overflow, which is undefined).
template <class T>
using Unsigned = std::make_unsigned_t<std::common_type_t<T, unsigned>>;

// The type integer arithmetic wraps in: the unsigned type of the same width
// (floats stay floats).
template <class T, bool = std::is_integral_v<T>>
struct WrapType {
  using type = T;
};
template <class T>
struct WrapType<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
  else return a + b;
}
template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
  else return a - b;
}
// Complex multiply and divide as the compiled kernels compute them
// (llvm/lower_expr.hpp, complex_mul, complex_div), operation for operation,
// instead of std::complex's operators (libgcc's __mulsc3 and __divsc3, with
// Annex G's inf/NaN recovery, which the vectorised kernels do not do):
//   (a+bi)(c+di) = (ac - bd) + (ad + bc)i, as XLA;
//   (a+bi)/(c+di) by Smith's algorithm (no overflow of c^2 + d^2): with
//   |c| >= |d|, r = d/c, t = c + d r: ((a + b r)/t, (b - a r)/t); else
//   r = c/d, t = c r + d: ((a r + b)/t, (b r - a)/t).
template <class C>
C complex_mul(C x, C y) {
  const auto a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  return C(a * c - b * d, a * d + b * c);
}
template <class C>
C complex_div(C x, C y) {
  using R = typename C::value_type;
  const R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  if (std::fabs(c) >= std::fabs(d)) {
    const R r = d / c, t = c + d * r;
    return C((a + b * r) / t, (b - a * r) / t);
  }
  const R r = c / d, t = c * r + d;
  return C((a * r + b) / t, (b * r - a) / t);
}

// The complex functions, by formulas on the parts that the compiled kernels
// evaluate the same way (llvm/lower_expr.hpp, Lowering::complex_fused):
//   abs   sqrt(x^2 + y^2) / s with x = |a| s, y = |b| s: s = 1, or a power of
//         two when max(|a|, |b|) is so large or small that the squares
//         would overflow or lose precision (exact scalings); +inf when a
//         part is infinite. One square root, no division; at most 1.2 ulp
//         from |z| over 2e6 random pairs of every magnitude (libm's hypot,
//         < 1 ulp, is a call per element that does not vectorise)
//   exp   e^a (cos b, sin b); (e^a, b) when b == 0 (exact on the real line)
//   log   (log |z|, atan2(b, a))
//   sqrt  t = sqrt((|a| + |z|) / 2): (t, b / 2t) for a >= 0, else
//         (|b| / 2t, copysign(t, b)); (0, b) when t == 0
//   sin   (sin a cosh b, cos a sinh b);  cos  (cos a cosh b, -sin a sinh b)
//   tanh  (sinh 2a, sin 2b) / (cosh 2a + cos 2b); (+-1, +-0) for |a| > 20
//   pow   exp(w log z); 0 ** w is 1 for w == 0, else 0
// (a = re z, b = im z.) They agree with glibc's cexp, clog, ... to a few
// ulp away from overflow; the special values of C's Annex G (infinite
// parts, signed zeros on branch cuts) are not all reproduced.
template <class C>
C complex_exp(C z) {
  using R = typename C::value_type;
  const R a = z.real(), b = z.imag(), ea = std::exp(a);
  if (b == R(0)) return C(ea, b);
  return C(ea * std::cos(b), ea * std::sin(b));
}
// The scaling of complex_abs for real type R: (threshold, its power of two).
template <class R>
struct AbsScale {
  static constexpr bool f32 = sizeof(R) == 4;
  static constexpr R big = R(f32 ? 0x1p50 : 0x1p500), small = R(f32 ? 0x1p-50 : 0x1p-500);
  static constexpr R down = R(f32 ? 0x1p-100 : 0x1p-600), up = R(f32 ? 0x1p100 : 0x1p600);
};
template <class R>
R complex_abs(R a, R b) {
  using S = AbsScale<R>;
  const R fa = std::fabs(a), fb = std::fabs(b);
  const R mx = fa > fb ? fa : fb;
  const R s = mx > S::big ? S::down : mx < S::small ? S::up : R(1);
  const R inv = mx > S::big ? S::up : mx < S::small ? S::down : R(1);
  const R x = fa * s, y = fb * s;
  const R h = std::sqrt(x * x + y * y) * inv;
  return std::isinf(a) || std::isinf(b) ? std::numeric_limits<R>::infinity() : h;
}
template <class C>
C complex_log(C z) {
  return C(std::log(complex_abs(z.real(), z.imag())), std::atan2(z.imag(), z.real()));
}
template <class C>
C complex_sqrt(C z) {
  using R = typename C::value_type;
  const R a = z.real(), b = z.imag();
  const R t = std::sqrt((std::fabs(a) + complex_abs(a, b)) * R(0.5));
  if (t == R(0)) return C(R(0), b);
  if (a >= R(0)) return C(t, b / (t + t));
  return C(std::fabs(b) / (t + t), std::copysign(t, b));
}
template <class C>
C complex_sin(C z) {
  const auto a = z.real(), b = z.imag();
  return C(std::sin(a) * std::cosh(b), std::cos(a) * std::sinh(b));
}
template <class C>
C complex_cos(C z) {
  const auto a = z.real(), b = z.imag();
  return C(std::cos(a) * std::cosh(b), -(std::sin(a) * std::sinh(b)));
}
template <class C>
C complex_tanh(C z) {
  using R = typename C::value_type;
  const R a = z.real(), b = z.imag();
  const R a2 = a + a, b2 = b + b;
  const R den = std::cosh(a2) + std::cos(b2);
  const R im = std::sin(b2) / den;
  if (std::fabs(a) > R(20)) return C(std::copysign(R(1), a), std::copysign(R(0), im));
  return C(std::sinh(a2) / den, im);
}
template <class C>
C complex_pow(C z, C w) {
  using R = typename C::value_type;
  if (z.real() == R(0) && z.imag() == R(0)) return w.real() == R(0) && w.imag() == R(0) ? C(R(1), R(0)) : C(R(0), R(0));
  return complex_exp(complex_mul(w, complex_log(z)));
}

template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
  else if constexpr (is_complex_v<T>) return complex_mul(a, b);
  else return a * b;
}
template <class T>
T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(Unsigned<T>{0} - static_cast<Unsigned<T>>(a));
  else return -a;
}

// Integer division as XLA defines it (lax.div, lax.rem on CPU and GPU): x / 0
// is -1 (all bits set: UINT_MAX for unsigned), x % 0 is x, INT_MIN / -1 is
// INT_MIN and INT_MIN % -1 is 0. Never undefined, never a trap.
template <class T>
T int_div(T a, T b) {
  if (b == 0) return static_cast<T>(~Unsigned<T>{0});
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return wrap_neg(a);  // INT_MIN / -1 overflows
  return static_cast<T>(a / b);
}
template <class T>
T int_rem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return 0;  // INT_MIN % -1 overflows
  return static_cast<T>(a % b);
}

// Integer power by repeated squaring, wrapping. A negative exponent gives the
// truncated reciprocal: 1 for base 1, +-1 for base -1, 0 otherwise.
template <class T>
T int_pow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>)
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
      if (base == 0) fail<ArithmeticError>("pow: integer zero raised to a negative power");
      return 0;
    }
  Unsigned<T> result = 1, b = static_cast<Unsigned<T>>(base);
  for (T e = exponent; e != 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

// max/min propagating NaN, as lax.max/lax.min.
template <class T>
T max_value(T a, T b) {
  if constexpr (is_complex_v<T>) internal_error("max of complex values: refused by the dtype rules");
  else if constexpr (std::is_floating_point_v<T>) return (a > b || a != a) ? a : b;
  else return a > b ? a : b;
}
template <class T>
T min_value(T a, T b) {
  if constexpr (is_complex_v<T>) internal_error("min of complex values: refused by the dtype rules");
  else if constexpr (std::is_floating_point_v<T>) return (a < b || a != a) ? a : b;
  else return a < b ? a : b;
}
// clamp(lo, x, hi) as XLA defines it, min(max(x, lo), hi) with the max and
// min above: a NaN in any operand gives NaN; lo > hi gives hi.
template <class T>
T clamp_value(T lo, T x, T hi) {
  return min_value(max_value(x, lo), hi);
}

template <class D, class S>
D convert_value(S v) {
  if constexpr (is_complex_v<D>) {
    // to complex: the parts converted (a real value is the real part)
    using R = typename D::value_type;
    if constexpr (is_complex_v<S>) return D(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    else return D(static_cast<R>(v));
  } else if constexpr (is_complex_v<S>) {
    // complex to a real dtype: nonzero for bool, else the real part
    // (convert_element_type's rule, numpy's astype)
    if constexpr (std::is_same_v<D, bool>) return v != S(0);
    else return convert_value<D>(v.real());
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) {
    // Saturating (llvm.fpto[su]i.sat): 2^digits is one past max, a power of
    // two, exact in every float type; min is -2^digits (signed) or 0.
    const S bound = std::ldexp(S(1), std::numeric_limits<D>::digits);  // folded by the compiler
    if (v != v) return 0;
    if (v >= bound) return std::numeric_limits<D>::max();
    if constexpr (std::is_signed_v<D>) {
      if (v < -bound) return std::numeric_limits<D>::min();
    } else {
      if (v <= S(-1)) return 0;
    }
    return static_cast<D>(v);
  } else {
    return static_cast<D>(v);  // int -> narrower int wraps (C++20)
  }
}

// ---------------------------------------------------------------------------
// Loops. GCC at -O2 (meson's debugoptimized) vectorizes only loops that need
// neither run-time alias checks nor a scalar epilogue, so the hot loops take
// restrict pointers (outputs are always fresh buffers) and run a main part
// whose trip count is a multiple of kVecBlock, then the tail. They are kept
// out of line: inlined into the kernels, GCC 12 loses the restrict facts and
// leaves them scalar.

#if defined(__GNUC__) || defined(__clang__)
#define DYN_RESTRICT __restrict
#define DYN_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define DYN_RESTRICT __restrict
#define DYN_NOINLINE __declspec(noinline)
#else
#define DYN_RESTRICT
#define DYN_NOINLINE
#endif

inline constexpr std::int64_t kVecBlock = 8;

// r[i] = f(a[i])
template <class R, class A, class F>
DYN_NOINLINE void loop_map(R* DYN_RESTRICT r, const A* DYN_RESTRICT a, std::int64_t n, F f) {
  const std::int64_t m = n & ~(kVecBlock - 1);
  for (std::int64_t i = 0; i < m; ++i) r[i] = static_cast<R>(f(a[i]));
  for (std::int64_t i = m; i < n; ++i) r[i] = static_cast<R>(f(a[i]));
}
// r[i] = f(a[i], b[i])
template <class R, class A, class F>
DYN_NOINLINE void loop_zip(R* DYN_RESTRICT r, const A* DYN_RESTRICT a, const A* DYN_RESTRICT b, std::int64_t n, F f) {
  const std::int64_t m = n & ~(kVecBlock - 1);
  for (std::int64_t i = 0; i < m; ++i) r[i] = static_cast<R>(f(a[i], b[i]));
  for (std::int64_t i = m; i < n; ++i) r[i] = static_cast<R>(f(a[i], b[i]));
}
// acc[i] = op(acc[i], x[i])
template <class A, class F>
DYN_NOINLINE void loop_accumulate(A* DYN_RESTRICT acc, const A* DYN_RESTRICT x, std::int64_t n, F op) {
  const std::int64_t m = n & ~(kVecBlock - 1);
  for (std::int64_t i = 0; i < m; ++i) acc[i] = op(acc[i], x[i]);
  for (std::int64_t i = m; i < n; ++i) acc[i] = op(acc[i], x[i]);
}
// The type a product of two A is computed in: A, or for an (unsigned) integer
// A at least `unsigned int`, as u16 * u16 would be promoted to a signed int
// and overflow.
template <class A>
using MulType = std::conditional_t<std::is_integral_v<A>, std::common_type_t<A, unsigned>, A>;

// o[i] += a * x[i]
template <class A>
DYN_NOINLINE void loop_axpy(A* DYN_RESTRICT o, const A* DYN_RESTRICT x, A a, std::int64_t n) {
  const std::int64_t m = n & ~(kVecBlock - 1);
  const MulType<A> w = a;
  for (std::int64_t i = 0; i < m; ++i) o[i] = static_cast<A>(o[i] + w * x[i]);
  for (std::int64_t i = m; i < n; ++i) o[i] = static_cast<A>(o[i] + w * x[i]);
}
// r[i] = p[i] ? c1[i] : c0[i]
template <class W>
DYN_NOINLINE void loop_select(W* DYN_RESTRICT r, const bool* DYN_RESTRICT p, const W* DYN_RESTRICT c0, const W* DYN_RESTRICT c1,
                 std::int64_t n) {
  const std::int64_t m = n & ~(kVecBlock - 1);
  for (std::int64_t i = 0; i < m; ++i) r[i] = p[i] ? c1[i] : c0[i];
  for (std::int64_t i = m; i < n; ++i) r[i] = p[i] ? c1[i] : c0[i];
}

// ---------------------------------------------------------------------------
// Buffers.

template <class T>
const T* data_as(const AnyArray& a) {
  return static_cast<const T*>(a.data());
}
template <class T>
T* data_as(Storage& s) {
  return static_cast<T*>(s.data);
}

inline Storage alloc_output(const Aval& a) { return Storage::make(a.dtype, static_shape(a.shape), false); }

inline std::vector<Aval> avals_of(Prim p, const std::vector<AnyArray>& in) {
  std::vector<Aval> r;
  r.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!in[i].valid())
      fail<TypeError>(prim_str(p) + ": operand #" + std::to_string(i) + " is an empty AnyArray");
    r.push_back(aval_of(in[i]));
  }
  return r;
}

inline std::int64_t scalar_int(const AnyArray& a) {
  return a.dtype() == DType::i64 ? *data_as<std::int64_t>(a) : *data_as<std::int32_t>(a);
}

inline std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

inline std::int64_t product(const std::vector<std::int64_t>& v, std::size_t begin, std::size_t end) {
  std::int64_t r = 1;
  for (std::size_t i = begin; i < end; ++i) r *= v[i];
  return r;
}

// Call f(T{}) for the dtype's C++ type if it is in the set; other dtypes were
// rejected by abstract_eval, and not instantiating them keeps kernels that
// make no sense for them (sin on bool) out of the build.
template <DTypeSet S, class T>
constexpr bool type_in() {
  return dtype_in(dtype_v<T>, S);
}

template <DTypeSet S, class F>
void visit_dtype_in(Prim p, DType d, F&& f) {
  visit_dtype(d, [&](auto t) {
    using T = decltype(t);
    if constexpr (type_in<S, T>()) f(t);
    else internal_error(prim_str(p) + ": eager kernel reached with dtype " + dtype_str(d));
  });
}

// Sixteen bytes (a c128 element), for the kernels that only move elements.
struct Bytes16 {
  std::uint64_t lo = 0, hi = 0;
  friend bool operator==(const Bytes16&, const Bytes16&) = default;
};

// Unsigned integer of the element's width: structural kernels only move
// bytes, so they need one instantiation per width, not per dtype.
template <class F>
void visit_width(DType d, F&& f) {
  switch (dtype_size(d)) {
    case 1: f(std::uint8_t{}); return;
    case 2: f(std::uint16_t{}); return;
    case 4: f(std::uint32_t{}); return;
    case 8: f(std::uint64_t{}); return;
    case 16: f(Bytes16{}); return;  // c128
    default: internal_error("visit_width: unexpected element size");
  }
}

// Calls f(a, b) with the offsets a = idx . sa and b = idx . sb for every
// index idx of `shape` (row-major order), keeping running offsets instead of
// recomputing them.
template <class F>
void for_each_offset(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& sa,
                     const std::vector<std::int64_t>& sb, F f) {
  for (auto n : shape)
    if (n == 0) return;
  const std::size_t r = shape.size();
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t a = 0, b = 0;
  for (;;) {
    f(a, b);
    std::size_t ax = r;
    while (ax-- > 0) {
      if (++idx[ax] < shape[ax]) {
        a += sa[ax];
        b += sb[ax];
        break;
      }
      a -= (shape[ax] - 1) * sa[ax];
      b -= (shape[ax] - 1) * sb[ax];
      idx[ax] = 0;
    }
    if (ax == static_cast<std::size_t>(-1)) return;
  }
}

// A strided block copy: element idx of `shape` is read at offset idx . src
// and written at idx . dst (strides in elements). Merging axes that are
// contiguous in both src and dst and dropping size-1 axes turns most copies
// into few long inner loops; a transposing copy (dst contiguous along one
// axis, src along another) is tiled so both sides stay in cache.
struct StridedCopy {
  std::vector<std::int64_t> shape, src, dst;

  void simplify() {
    StridedCopy r;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 1) continue;
      if (!r.shape.empty() && r.src.back() == src[i] * shape[i] && r.dst.back() == dst[i] * shape[i]) {
        r.shape.back() *= shape[i];
        r.src.back() = src[i];
        r.dst.back() = dst[i];
        continue;
      }
      r.shape.push_back(shape[i]);
      r.src.push_back(src[i]);
      r.dst.push_back(dst[i]);
    }
    *this = std::move(r);
  }

  template <class T>
  static void copy_1d(const T* DYN_RESTRICT s, T* DYN_RESTRICT d, std::int64_t n, std::int64_t ss, std::int64_t ds) {
    if (ss == 1 && ds == 1) std::memcpy(d, s, static_cast<std::size_t>(n) * sizeof(T));
    else if (ss == 0 && ds == 1) std::fill(d, d + n, *s);
    else for (std::int64_t k = 0; k < n; ++k) d[k * ds] = s[k * ss];
  }

  template <class T>
  static void copy_2d_tiled(const T* DYN_RESTRICT s, T* DYN_RESTRICT d, std::int64_t n0, std::int64_t s0,
                            std::int64_t d0, std::int64_t n1, std::int64_t s1, std::int64_t d1) {
    constexpr std::int64_t kTile = 32;
    for (std::int64_t i0 = 0; i0 < n0; i0 += kTile)
      for (std::int64_t j0 = 0; j0 < n1; j0 += kTile) {
        const std::int64_t ie = std::min(n0, i0 + kTile), je = std::min(n1, j0 + kTile);
        for (std::int64_t i = i0; i < ie; ++i)
          for (std::int64_t j = j0; j < je; ++j) d[i * d0 + j * d1] = s[i * s0 + j * s1];
      }
  }

  template <class T>
  void run(const T* s, T* d) {
    for (auto n : shape)
      if (n == 0) return;
    simplify();
    const std::size_t r = shape.size();
    if (r == 0) {
      *d = *s;
      return;
    }
    // Transposing: some outer axis p is contiguous in src but the last is not.
    std::size_t p = r;
    if (r >= 2 && src[r - 1] != 1 && src[r - 1] != 0)
      for (std::size_t i = 0; i + 1 < r; ++i)
        if (src[i] == 1) p = i;
    if (p < r) {
      // The order of the outer loops is free: make p the second to last axis.
      std::swap(shape[p], shape[r - 2]);
      std::swap(src[p], src[r - 2]);
      std::swap(dst[p], dst[r - 2]);
      const std::vector<std::int64_t> outer(shape.begin(), shape.end() - 2);
      const std::int64_t n0 = shape[r - 2], s0 = src[r - 2], d0 = dst[r - 2];
      const std::int64_t n1 = shape[r - 1], s1 = src[r - 1], d1 = dst[r - 1];
      for_each_offset(outer, src, dst, [&](std::int64_t so, std::int64_t dof) {
        copy_2d_tiled(s + so, d + dof, n0, s0, d0, n1, s1, d1);
      });
      return;
    }
    const std::vector<std::int64_t> outer(shape.begin(), shape.end() - 1);
    const std::int64_t n = shape[r - 1], ss = src[r - 1], ds = dst[r - 1];
    for_each_offset(outer, src, dst, [&](std::int64_t so, std::int64_t dof) { copy_1d(s + so, d + dof, n, ss, ds); });
  }
};

// Gather from x into a fresh row-major array of `out`'s shape.
inline AnyArray gather(const AnyArray& x, const Aval& out, std::int64_t src_offset, std::vector<std::int64_t> src_strides) {
  Storage o = alloc_output(out);
  StridedCopy c{o.shape, std::move(src_strides), row_major_strides(o.shape)};
  visit_width(x.dtype(), [&](auto t) {
    using W = decltype(t);
    c.run(data_as<W>(x) + src_offset, data_as<W>(o));
  });
  return AnyArray(std::move(o));
}

}  // namespace kernels

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
