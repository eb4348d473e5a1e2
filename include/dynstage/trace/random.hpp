// dynstage: random numbers (API.md section 13), namespace dyn::random.
//
// Counter based, as jax.random: a key is a u32[2] array, and every function
// is a pure function of (key, shape). The generator is threefry2x32 with 20
// rounds (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC'11), written exactly as JAX's jax/_src/prng.py writes it, and everything
// here is a composition of existing primitives (add, xor, shift_left,
// shift_right_logical, or, iota, slice, concatenate, convert_element_type,
// sort): no primitive of its own, so the same code runs eagerly, traces to a
// jaxpr and compiles (and fuses) with dyn::jit, giving the same bits on
// every path.
//
// What reproduces jax.random bit for bit (with jax_threefry_partitionable
// off, JAX's default before 0.5.0) and what does not: docs/random.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops.hpp"
#include "ops_shape.hpp"
#include "ops_sort.hpp"

namespace dyn::random {

namespace detail {
using dyn::detail::Loc;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// The kind of array (Array or Tracer) of element type T that goes with K.
template <class T, class K>
using like_t = dyn::detail::result_of_t<T, K>;

// arange<T>(n) of K's kind: staged (an iota equation) while tracing, so that
// a large counter is not baked into the program as a constant.
template <class T, class K>
like_t<T, K> arange_like(std::int64_t n) {
  if constexpr (is_tracer_v<K>)
    return dyn::arange<T>(Dim(n));
  else
    return dyn::arange<T>(n);
}

template <class K>
std::string type_str(const K& key) {
  std::string r(dyn::dtype_name(dtype_v<dyn::detail::elem_t<K>>));
  r += "[";
  for (std::size_t i = 0; i < key.shape().size(); ++i) {
    if (i) r += ",";
    if constexpr (is_tracer_v<K>)
      r += key.shape()[i].to_string();
    else
      r += std::to_string(key.shape()[i]);
  }
  return r + "]";
}

// A key is u32[2]: anything else is the user's mistake, named with the
// function and (through the caller's OpSite) the user's line. Returns the key
// as a u32 array (the conversion of another dtype is never reached: it
// throws first; it only lets the rest compile).
template <class K>
like_t<u32, K> checked_key(const K& key, const char* fn) {
  const std::string msg = std::string("dyn::random::") + fn +
                          ": the key must be a u32[2] array (from dyn::random::key or split), got " + type_str(key);
  if constexpr (!std::is_same_v<dyn::detail::elem_t<K>, u32>) {
    dyn::detail::fail<TypeError>(msg);
  } else {
    bool ok = key.shape().size() == 1;
    if (ok) {
      if constexpr (is_tracer_v<K>)
        ok = key.shape()[0].is_static() && key.shape()[0].value() == 2;
      else
        ok = key.shape()[0] == 2;
    }
    if (!ok) dyn::detail::fail<ShapeError>(msg);
    return key;
  }
}

inline std::int64_t shape_size(const std::vector<std::int64_t>& shape, const char* fn) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0)
      dyn::detail::fail<ShapeError>(std::string("dyn::random::") + fn + ": negative dimension " + std::to_string(d) +
                                    " in the shape");
    n *= d;
  }
  return n;
}

// The two key words as u32[] scalars.
template <class K>
auto key_words(const K& key) {
  return std::pair{dyn::squeeze(dyn::slice(key, {0}, {1})), dyn::squeeze(dyn::slice(key, {1}, {2}))};
}

// rotate_left(v, r) for u32 (prng.py's rotate_left).
template <class X>
X rotl(const X& v, u32 r) {
  return (v << r) | (v >> (u32{32} - r));
}
}  // namespace detail

// threefry2x32(k0, k1, x0, x1): the threefry-2x32 block cipher with 20 rounds
// applied elementwise to the counter pairs (x0, x1) under the key (k0, k1),
// as prng.py's _threefry2x32_lowering (unrolled): five groups of four rounds,
// the key schedule injected after each group. k0, k1: u32[] scalars; x0, x1:
// u32 arrays of one shape. Returns the two output words.
template <class S, class X>
auto threefry2x32(const S& k0, const S& k1, const X& x0, const X& x1) {
  using detail::u32;
  static constexpr u32 rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const std::remove_cvref_t<S> ks[3] = {k0, k1, k0 ^ k1 ^ u32{0x1BD11BDA}};
  auto a = x0 + k0;
  auto b = x1 + k1;
  for (int group = 0; group < 5; ++group) {
    for (u32 r : rotations[group % 2]) {
      a = a + b;
      b = detail::rotl(b, r);
      b = a ^ b;
    }
    a = a + ks[(group + 1) % 3];
    b = b + ks[(group + 2) % 3] + u32(group + 1);
  }
  return std::pair{a, b};
}

namespace detail {
// prng.py's threefry_2x32(key, count) for a flat u32 count: split the counts
// into halves (padded with a 0 when odd), encrypt pairwise, concatenate.
template <class K, class C>
C threefry_2x32(const K& key, const C& count, std::int64_t n) {
  const bool odd = n % 2 != 0;
  C c = count;
  if (odd) c = dyn::concatenate({count, dyn::zeros_like(dyn::slice(count, {0}, {1}))});
  const std::int64_t half = (n + 1) / 2;
  const auto [k0, k1] = key_words(key);
  auto [y0, y1] = dyn::random::threefry2x32(k0, k1, dyn::slice(c, {0}, {half}), dyn::slice(c, {half}, {2 * half}));
  C out = dyn::concatenate({C(y0), C(y1)});
  if (odd) out = dyn::slice(out, {0}, {n});
  return out;
}

// prng.py's _threefry_random_bits_original for bit widths 32 and 64, flat.
template <class K>
like_t<u32, K> bits32(const K& key, std::int64_t n) {
  return threefry_2x32(key, arange_like<u32, K>(n), n);
}
template <class K>
like_t<u64, K> bits64(const K& key, std::int64_t n) {
  const auto bits = bits32(key, 2 * n);
  const auto hi = dyn::astype<u64>(dyn::slice(bits, {0}, {n}));
  const auto lo = dyn::astype<u64>(dyn::slice(bits, {n}, {2 * n}));
  return (hi << u64{32}) | lo;
}
// prng.py's _threefry_random_bits_original for 8 and 16 bits ("essentially
// bits.view(dtype)[:size]"): ceil(bw n / 32) words of 32 random bits, each
// cut into 32 / bw pieces, the lowest bits first, the first n kept. JAX
// masks each piece before converting; the conversion to U truncates anyway.
template <class U, class K>
like_t<U, K> bits_narrow(const K& key, std::int64_t n) {
  constexpr u32 bw = 8 * sizeof(U);
  constexpr std::int64_t per = 32 / bw;
  const std::int64_t words = (n * bw + 31) / 32;
  const auto w = dyn::reshape(bits32(key, words), {words, 1});
  const auto shifts = dyn::reshape(arange_like<u32, K>(per) * bw, {1, per});
  const auto pieces = dyn::reshape(w >> shifts, {words * per});
  return dyn::slice(dyn::astype<U>(pieces), {0}, {n});
}

// n random bits of U's width (8, 16, 32 or 64), flat.
template <class U, class K>
like_t<U, K> bits_of(const K& key, std::int64_t n) {
  if constexpr (sizeof(U) == 4)
    return bits32(key, n);
  else if constexpr (sizeof(U) == 8)
    return bits64(key, n);
  else
    return bits_narrow<U>(key, n);
}

// A bound of element type T: a C++ scalar (converted to T) or an array or
// tracer of T.
template <class X, class T>
concept Bound = (ArrayLike<X> && std::is_same_v<dyn::detail::elem_t<X>, T>) ||
                (std::is_arithmetic_v<std::remove_cvref_t<X>> && !std::is_same_v<std::remove_cvref_t<X>, bool>);

template <class T, class X>
auto as_bound(const X& x) {
  if constexpr (ArrayLike<X>)
    return x;
  else
    return static_cast<T>(x);
}

// A bound's shape as numbers (a scalar's is ()); a dynamic dimension is
// reported as -1, which broadcasts against nothing.
template <class X>
std::vector<std::int64_t> bound_shape(const X& x) {
  std::vector<std::int64_t> r;
  if constexpr (ArrayLike<X>) {
    for (const auto& d : x.shape()) {
      if constexpr (is_tracer_v<X>)
        r.push_back(d.is_static() ? d.value() : -1);
      else
        r.push_back(d);
    }
  }
  return r;
}

inline std::string tuple_str(const std::vector<std::int64_t>& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// jax.random's _check_shape: each parameter's shape broadcasts to `shape`
// and the broadcast is `shape` itself (numpy rules, aligned on the right).
inline bool broadcasts_to(const std::vector<std::int64_t>& p, const std::vector<std::int64_t>& shape) {
  if (p.size() > shape.size()) return false;
  const std::size_t off = shape.size() - p.size();
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != 1 && p[i] != shape[off + i]) return false;
  return true;
}

template <class Lo, class Hi>
void check_bounds(const char* fn, const Lo& lo, const Hi& hi, const std::vector<std::int64_t>& shape) {
  const auto sl = bound_shape(lo), sh = bound_shape(hi);
  if (!broadcasts_to(sl, shape) || !broadcasts_to(sh, shape))
    dyn::detail::fail<ShapeError>(std::string("dyn::random::") + fn + ": lo and hi (shapes " + tuple_str(sl) +
                                  " and " + tuple_str(sh) + ") must broadcast to the shape argument " +
                                  tuple_str(shape));
}
}  // namespace detail

// key(seed): jax.random.PRNGKey(seed) (threefry_seed): [0, seed] for a seed
// of 32 bits or fewer, [seed >> 32, seed & 0xFFFFFFFF] for a 64-bit seed (JAX
// with jax_enable_x64). A concrete u32[2] array (a constant when traced).
template <class S> requires std::is_integral_v<S> && (!std::is_same_v<S, bool>)
Array<std::uint32_t> key(S seed) {
  const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(seed));
  const std::uint32_t hi = sizeof(S) == 8 ? static_cast<std::uint32_t>(bits >> 32) : 0u;
  return Array<std::uint32_t>({2}, {hi, static_cast<std::uint32_t>(bits)});
}

// split(key, n): jax.random.split(key, n), threefry_split: the threefry of
// the key over the counters 0 .. 2n-1, as u32[n, 2] keys.
template <ArrayLike K>
auto split(const K& key, std::int64_t n, detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "split");
  if (n < 0) dyn::detail::fail<ShapeError>("dyn::random::split: negative number of keys " + std::to_string(n));
  return dyn::reshape(detail::bits32(k, 2 * n), {n, 2});
}

// split(key): the two keys of jax.random.split(key): auto [k1, k2] = split(k).
template <ArrayLike K>
auto split(const K& key, detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto keys = split(key, 2, loc);  // checks the key
  return std::pair{dyn::reshape(dyn::slice(keys, {0, 0}, {1, 2}), {2}),
                   dyn::reshape(dyn::slice(keys, {1, 0}, {2, 2}), {2})};
}

// random_bits(key, shape): jax.random.bits for u32 (_threefry_random_bits,
// unpartitioned).
template <ArrayLike K>
auto random_bits(const K& key, const std::vector<std::int64_t>& shape, detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "random_bits");
  const std::int64_t n = detail::shape_size(shape, "random_bits");
  return dyn::reshape(detail::bits32(k, n), ConcreteSizes(shape));
}

// uniform<T>(key, shape, lo, hi): jax.random.uniform: the top mantissa bits
// of random bits make a float in [1, 2) (JAX bitcasts (bits >> 9) | 1.0f);
// minus 1 it is exactly (bits >> 9) * 2^-23, which is how it is computed here
// (the same number, without a bitcast); then * (hi - lo) + lo, max with lo.
template <class T, ArrayLike K>
auto uniform(const K& key, const std::vector<std::int64_t>& shape, T lo = T(0), T hi = T(1),
             detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "dyn::random::uniform<T>: T must be float or double");
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "uniform");
  const std::int64_t n = detail::shape_size(shape, "uniform");
  auto unit = [&] {
    if constexpr (std::is_same_v<T, float>)
      return dyn::astype<float>(detail::bits32(k, n) >> detail::u32{32 - 23}) * 0x1p-23f;
    else
      return dyn::astype<double>(detail::bits64(k, n) >> detail::u64{64 - 52}) * 0x1p-52;
  }();
  const T span = hi - lo;
  return dyn::maximum(lo, dyn::reshape(unit * span + lo, ConcreteSizes(shape)));
}

// uniform<T>(key, shape, lo, hi) with array-valued lo and/or hi (arrays or
// tracers of T, or a scalar on one side): jax.random.uniform's broadcasting;
// lo and hi must broadcast to `shape` (a dyn::ShapeError otherwise, JAX's
// ValueError). The same bits and arithmetic as the scalar form.
template <class T, ArrayLike K, class Lo, class Hi>
  requires detail::Bound<Lo, T> && detail::Bound<Hi, T> && (ArrayLike<Lo> || ArrayLike<Hi>)
auto uniform(const K& key, const std::vector<std::int64_t>& shape, const Lo& lo_, const Hi& hi_,
             detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "uniform");
  detail::check_bounds("uniform", lo_, hi_, shape);
  const auto lo = detail::as_bound<T>(lo_);
  const auto hi = detail::as_bound<T>(hi_);
  const auto unit = dyn::reshape(uniform<T>(k, shape, T(0), T(1), loc), ConcreteSizes(shape));
  return dyn::maximum(lo, unit * (hi - lo) + lo);
}

// normal<T>(key, shape): jax.random.normal's algorithm and bits: uniform
// numbers in (-1, 1) (lo = nextafter(-1, 0), so erf_inv never sees -1), then
// sqrt(2) * erf_inv(u), erf_inv being Giles' approximation as XLA computes
// it (eager/kernels_math.hpp).
template <class T, ArrayLike K>
auto normal(const K& key, const std::vector<std::int64_t>& shape, detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "dyn::random::normal<T>: T must be float or double");
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "normal");
  const auto u = uniform<T>(k, shape, std::nextafter(T(-1), T(0)), T(1), loc);
  return T(std::numbers::sqrt2) * dyn::erf_inv(u, loc);
}

namespace detail {

// jax.random.randint's combination of two draws of random bits (higher,
// lower) into an offset in [0, span): (higher % span) * m + lower % span,
// modulo span, with m = 2^(nbits/2) squared modulo span, every step in the
// unsigned type U (m < 2^(nbits/2), so m * m does not overflow). span is a
// U (C++ bounds) or an array of U (array bounds).
template <class U, class Bits, class Span>
auto combine_draws(const Bits& higher, const Bits& lower, const Span& span) {
  constexpr U half = static_cast<U>(U{1} << (4 * sizeof(U)));
  if constexpr (std::is_integral_v<Span>) {
    const U m = static_cast<U>(half % span);
    const U multiplier = static_cast<U>(static_cast<U>(m * m) % span);
    return ((higher % span) * multiplier + (lower % span)) % span;
  } else {
    const auto m = half % span;
    const auto multiplier = (m * m) % span;
    return ((higher % span) * multiplier + (lower % span)) % span;
  }
}

}  // namespace detail

// randint<T>(key, shape, lo, hi): jax.random.randint for integer T of 8,
// 16, 32 or 64 bits: integers in [lo, hi), from two draws of random bits of
// T's width (the two keys of split(key)) combined modulo the span to reduce
// the bias, every step in the unsigned type of T's width, exactly as JAX
// does. Where hi <= lo the span is 1 and every number lo, as JAX (and as
// with array bounds below).
template <class T, ArrayLike K>
auto randint(const K& key, const std::vector<std::int64_t>& shape, T lo, T hi,
             detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "dyn::random::randint<T>: T must be an integer type");
  using U = std::make_unsigned_t<T>;
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "randint");
  const std::int64_t n = detail::shape_size(shape, "randint");
  const auto [k1, k2] = split(k, loc);
  const auto higher = detail::bits_of<U>(k1, n), lower = detail::bits_of<U>(k2, n);
  const U span = hi <= lo ? U{1} : static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  const auto offset = detail::combine_draws<U>(higher, lower, span);
  return dyn::reshape(lo + dyn::astype<T>(offset), ConcreteSizes(shape));
}

// randint<T>(key, shape, lo, hi) with array-valued lo and/or hi (arrays or
// tracers of T, or a scalar on one side): jax.random.randint's broadcasting
// (lo and hi must broadcast to `shape`, a dyn::ShapeError otherwise). Where
// hi <= lo the span is 1 and the result lo, as JAX (no error: the bounds may
// be known only at run time).
template <class T, ArrayLike K, class Lo, class Hi>
  requires detail::Bound<Lo, T> && detail::Bound<Hi, T> && (ArrayLike<Lo> || ArrayLike<Hi>)
auto randint(const K& key, const std::vector<std::int64_t>& shape, const Lo& lo_, const Hi& hi_,
             detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                "dyn::random::randint<T>: T must be an integer type");
  using U = std::make_unsigned_t<T>;
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "randint");
  detail::check_bounds("randint", lo_, hi_, shape);
  const std::int64_t n = detail::shape_size(shape, "randint");
  const auto lo = detail::as_bound<T>(lo_);
  const auto hi = detail::as_bound<T>(hi_);
  const auto [k1, k2] = split(k, loc);
  const auto higher = dyn::reshape(detail::bits_of<U>(k1, n), ConcreteSizes(shape));
  const auto lower = dyn::reshape(detail::bits_of<U>(k2, n), ConcreteSizes(shape));
  const auto span = dyn::where(hi <= lo, U{1}, dyn::astype<U>(hi - lo));
  return lo + dyn::astype<T>(detail::combine_draws<U>(higher, lower, span));
}

// bernoulli(key, p, shape): jax.random.bernoulli with a float32 p:
// uniform<float>(key, shape) < p.
template <ArrayLike K>
auto bernoulli(const K& key, float p, const std::vector<std::int64_t>& shape = {},
               detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "bernoulli");
  return uniform<float>(k, shape, 0.0f, 1.0f, loc) < p;
}

// bernoulli(key, p[, shape]) with an array or tracer p of float or double:
// jax.random.bernoulli: uniform<P>(key, shape) < p, P being p's element type
// (JAX draws the uniform numbers in p's dtype); the shape defaults to p's,
// and p must broadcast to it (a dyn::ShapeError otherwise).
template <ArrayLike K, ArrayLike P>
auto bernoulli(const K& key, const P& p, const std::vector<std::int64_t>& shape,
               detail::Loc loc = detail::Loc::current()) {
  using T = dyn::detail::elem_t<P>;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "dyn::random::bernoulli: p must be an array of float or double");
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "bernoulli");
  const auto sp = detail::bound_shape(p);
  if (!detail::broadcasts_to(sp, shape))
    dyn::detail::fail<ShapeError>("dyn::random::bernoulli: p (shape " + detail::tuple_str(sp) +
                                  ") must broadcast to the shape argument " + detail::tuple_str(shape));
  return dyn::reshape(uniform<T>(k, shape, T(0), T(1), loc), ConcreteSizes(shape)) < p;
}
template <ArrayLike K, ArrayLike P>
auto bernoulli(const K& key, const P& p, detail::Loc loc = detail::Loc::current()) {
  const auto sp = detail::bound_shape(p);
  for (auto d : sp)
    if (d < 0)
      dyn::detail::fail<ShapeError>("dyn::random::bernoulli: p has a dynamic shape; pass the shape argument");
  return bernoulli(key, p, sp, loc);
}

// fold_in(key, data): jax.random.fold_in (threefry_fold_in): a new key, the
// threefry of the key over the counter pair (0, data) (threefry_seed(data)
// is [0, data] for 32-bit data). data: a C++ integer or an integer scalar
// array or tracer, taken modulo 2^32 as jnp.uint32(data).
template <ArrayLike K, class D>
  requires(std::is_integral_v<D> || (ArrayLike<D> && std::is_integral_v<dyn::detail::elem_t<D>>))
auto fold_in(const K& key, const D& data, detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "fold_in");
  if constexpr (ArrayLike<D>) {
    if (data.shape().size() != 0)
      dyn::detail::fail<ShapeError>("dyn::random::fold_in: data must be a scalar, got " +
                                    detail::type_str(data));
    const auto d = dyn::reshape(dyn::astype<detail::u32>(data), {1});
    return detail::threefry_2x32(k, dyn::concatenate({dyn::zeros_like(d), d}), 2);
  } else {
    return detail::threefry_2x32(k, detail::arange_like<detail::u32, K>(2) * static_cast<detail::u32>(data), 2);
  }
}

// permutation(key, n): jax.random.permutation(key, n): arange<i32>(n)
// shuffled by sorting it under random u32 sort keys (lax.sort_key_val),
// ceil(3 ln n / ln(2^32 - 1)) rounds, each with the second key of a split.
template <ArrayLike K>
auto permutation(const K& key, std::int64_t n, detail::Loc loc = detail::Loc::current()) {
  dyn::detail::OpSite site(loc);
  const auto k = detail::checked_key(key, "permutation");
  if (n < 0) dyn::detail::fail<ShapeError>("dyn::random::permutation: negative length " + std::to_string(n));
  const int rounds = static_cast<int>(
      std::ceil(3.0 * std::log(static_cast<double>(std::max<std::int64_t>(1, n))) / std::log(4294967295.0)));
  auto x = detail::arange_like<std::int32_t, K>(n);
  auto cur = k;
  for (int r = 0; r < rounds; ++r) {
    auto [next, sub] = split(cur, loc);
    cur = next;
    x = std::get<1>(dyn::sort_key_val(detail::bits32(sub, n), x, 0, loc));
  }
  return x;
}

}  // namespace dyn::random
