// Random numbers (API.md section 13, issue 17 part 4): dyn::random.
//
// The bits are checked against an independent scalar threefry2x32 written
// here from the Random123 paper (Salmon et al., SC'11), itself checked
// against the paper's known-answer vectors; the jax.random algorithms
// (jax/_src/prng.py and jax/_src/random.py, with jax_threefry_partitionable
// off) are re-derived here in plain C++ on top of it (scalar loops, a real
// bitcast by memcpy), and dyn::random must give the same numbers exactly.
// Then statistical sanity with fixed seeds, the jaxpr, and the errors.
// Eager against jit: tests/jit/test_jit_random.cpp.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using namespace test_util::element_types;

using test_util::vals;

// --- the independent reference --------------------------------------------

u32 rotl(u32 v, int r) { return (v << r) | (v >> (32 - r)); }

// Threefry-2x32 with 20 rounds (Random123's threefry2x32_R(20, ...)).
std::pair<u32, u32> ref_threefry(u32 k0, u32 k1, u32 x0, u32 x1) {
  const u32 ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  x0 += ks[0];
  x1 += ks[1];
  for (int round = 0; round < 20; ++round) {
    x0 += x1;
    x1 = rotl(x1, rot[round % 8]);
    x1 ^= x0;
    if (round % 4 == 3) {  // key injection s = round / 4 + 1
      const int s = round / 4 + 1;
      x0 += ks[s % 3];
      x1 += ks[(s + 1) % 3] + static_cast<u32>(s);
    }
  }
  return {x0, x1};
}

// prng.py threefry_2x32 over the counters 0 .. n-1 (padded with a 0 when
// odd), i.e. _threefry_random_bits_original for 32 bits.
std::vector<u32> ref_bits(std::pair<u32, u32> key, i64 n) {
  std::vector<u32> c(static_cast<std::size_t>(n));
  std::iota(c.begin(), c.end(), 0u);
  if (n % 2) c.push_back(0);
  const std::size_t half = c.size() / 2;
  std::vector<u32> out(c.size());
  for (std::size_t i = 0; i < half; ++i) {
    auto [a, b] = ref_threefry(key.first, key.second, c[i], c[half + i]);
    out[i] = a;
    out[half + i] = b;
  }
  out.resize(static_cast<std::size_t>(n));
  return out;
}
std::vector<u64> ref_bits64(std::pair<u32, u32> key, i64 n) {
  const auto b = ref_bits(key, 2 * n);
  std::vector<u64> r;
  for (i64 i = 0; i < n; ++i) r.push_back((u64{b[i]} << 32) | b[n + i]);
  return r;
}
// jax.random.split(key, n): rows of threefry_2x32(key, iota(2n)) reshaped (n, 2).
std::vector<std::pair<u32, u32>> ref_split(std::pair<u32, u32> key, i64 n) {
  const auto b = ref_bits(key, 2 * n);
  std::vector<std::pair<u32, u32>> r;
  for (i64 i = 0; i < n; ++i) r.emplace_back(b[2 * i], b[2 * i + 1]);
  return r;
}
// jax.random.uniform (_uniform) for float32: bitcast((bits >> 9) | 1.0f) - 1.
std::vector<float> ref_uniform(std::pair<u32, u32> key, i64 n, float lo, float hi) {
  std::vector<float> r;
  for (u32 b : ref_bits(key, n)) {
    const u32 fb = (b >> 9) | 0x3F800000u;
    float f;
    std::memcpy(&f, &fb, 4);
    f -= 1.0f;
    r.push_back(std::max(lo, f * (hi - lo) + lo));
  }
  return r;
}
std::vector<double> ref_uniform64(std::pair<u32, u32> key, i64 n) {
  std::vector<double> r;
  for (u64 b : ref_bits64(key, n)) {
    const u64 fb = (b >> 12) | 0x3FF0000000000000ull;
    double f;
    std::memcpy(&f, &fb, 8);
    r.push_back(std::max(0.0, f - 1.0));
  }
  return r;
}
// jax.random.randint (_randint) for int32, lo < hi in range.
std::vector<i32> ref_randint(std::pair<u32, u32> key, i64 n, i32 lo, i32 hi) {
  const auto ks = ref_split(key, 2);
  const auto higher = ref_bits(ks[0], n), lower = ref_bits(ks[1], n);
  const u32 span = static_cast<u32>(hi) - static_cast<u32>(lo);
  u32 mult = (u32{1} << 16) % span;
  mult = (mult * mult) % span;
  std::vector<i32> r;
  for (i64 i = 0; i < n; ++i)
    r.push_back(static_cast<i32>(static_cast<u32>(lo) + ((higher[i] % span) * mult + lower[i] % span) % span));
  return r;
}
// _threefry_random_bits_original for 8 and 16 bits ("essentially
// bits.view(dtype)[:size]"): ceil(bw n / 32) words of 32 random bits, each
// cut into 32 / bw pieces, the lowest bits first.
template <class U>
std::vector<U> ref_bits_narrow(std::pair<u32, u32> key, i64 n) {
  constexpr int bw = 8 * sizeof(U);
  constexpr i64 per = 32 / bw;
  const auto w = ref_bits(key, (n * bw + 31) / 32);
  std::vector<U> r;
  for (i64 i = 0; i < n; ++i) r.push_back(static_cast<U>(w[static_cast<std::size_t>(i / per)] >> (bw * (i % per))));
  return r;
}
// _randint for any width, lo < hi or not (a span of 1 where hi <= lo), every
// step in the unsigned type of T's width (so the sum may wrap, as in XLA).
template <class T>
std::vector<T> ref_randint_any(std::pair<u32, u32> key, i64 n, const std::vector<T>& lo, const std::vector<T>& hi) {
  using U = std::make_unsigned_t<T>;
  constexpr int nbits = 8 * sizeof(T);
  const auto ks = ref_split(key, 2);
  std::vector<U> higher, lower;
  if constexpr (nbits < 32) {
    higher = ref_bits_narrow<U>(ks[0], n), lower = ref_bits_narrow<U>(ks[1], n);
  } else if constexpr (nbits == 32) {
    higher = ref_bits(ks[0], n), lower = ref_bits(ks[1], n);
  } else {
    higher = ref_bits64(ks[0], n), lower = ref_bits64(ks[1], n);
  }
  std::vector<T> r;
  for (i64 i = 0; i < n; ++i) {
    const T l = lo[static_cast<std::size_t>(i) % lo.size()], h = hi[static_cast<std::size_t>(i) % hi.size()];
    U span = static_cast<U>(static_cast<U>(h) - static_cast<U>(l));
    if (h <= l) span = 1;
    U mult = static_cast<U>(static_cast<U>(U{1} << (nbits / 2)) % span);
    mult = static_cast<U>(static_cast<U>(mult * mult) % span);
    const U a = static_cast<U>(static_cast<U>(higher[i] % span) * mult);
    const U off = static_cast<U>(static_cast<U>(a + static_cast<U>(lower[i] % span)) % span);
    r.push_back(static_cast<T>(static_cast<U>(static_cast<U>(l) + off)));
  }
  return r;
}
// jax.random.fold_in (threefry_fold_in): threefry_2x32(key, threefry_seed(d))
// = the two words of threefry2x32(key, (0, d)).
std::pair<u32, u32> ref_fold_in(std::pair<u32, u32> key, u32 d) { return ref_threefry(key.first, key.second, 0, d); }
// jax.random.permutation(key, n) for n < 1626 (one round): sort arange(n)
// under the random bits of the second key of split(key).
std::vector<i32> ref_permutation(std::pair<u32, u32> key, i64 n) {
  const auto sub = ref_split(key, 2)[1];
  const auto sk = ref_bits(sub, n);
  std::vector<i32> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  std::stable_sort(p.begin(), p.end(), [&](i32 a, i32 b) { return sk[a] < sk[b]; });
  return p;
}

std::pair<u32, u32> words(const Array<u32>& k) { return {k.data()[0], k.data()[1]}; }

// --- bits -------------------------------------------------------------------

TEST_CASE("random: threefry2x32 gives the Random123 known-answer vectors (20 rounds)") {
  struct Kat {
    u32 k0, k1, x0, x1, y0, y1;
  };
  const Kat kats[] = {{0, 0, 0, 0, 0x6b200159u, 0x99ba4efeu},
                      {~0u, ~0u, ~0u, ~0u, 0x1cb996fcu, 0xbb002be7u},
                      {0x13198a2eu, 0x03707344u, 0x243f6a88u, 0x85a308d3u, 0xc4923a9cu, 0x483df7a0u}};
  for (const Kat& t : kats) {
    CHECK(ref_threefry(t.k0, t.k1, t.x0, t.x1) == std::pair{t.y0, t.y1});
    auto [a, b] = dyn::random::threefry2x32(Array<u32>({}, {t.k0}), Array<u32>({}, {t.k1}), Array<u32>({1}, {t.x0}),
                                            Array<u32>({1}, {t.x1}));
    CHECK(vals(a) == std::vector<u32>{t.y0});
    CHECK(vals(b) == std::vector<u32>{t.y1});
  }
}

TEST_CASE("random: key(seed) is jax.random.PRNGKey(seed): [0, seed], or [hi, lo] of a 64-bit seed") {
  CHECK(vals(dyn::random::key(0)) == std::vector<u32>{0, 0});
  CHECK(vals(dyn::random::key(42)) == std::vector<u32>{0, 42});
  CHECK(vals(dyn::random::key(-1)) == std::vector<u32>{0, 0xFFFFFFFFu});
  CHECK(vals(dyn::random::key(i64{-1})) == std::vector<u32>{0xFFFFFFFFu, 0xFFFFFFFFu});
  CHECK(vals(dyn::random::key(i64{0x123456789})) == std::vector<u32>{1, 0x23456789u});
  CHECK(dyn::random::key(7).shape() == std::vector<i64>{2});
}

TEST_CASE("random: split is jax.random.split (threefry_split), derived from the reference") {
  const auto k = dyn::random::key(0);
  auto [k1, k2] = dyn::random::split(k);
  const auto want = ref_split({0, 0}, 2);
  CHECK(words(k1) == want[0]);
  CHECK(words(k2) == want[1]);
  // The numbers JAX's documentation prints for random.split(random.PRNGKey(0)).
  CHECK(vals(k1) == std::vector<u32>{4146024105u, 967050713u});
  CHECK(vals(k2) == std::vector<u32>{2718843009u, 1272950319u});
  const auto ks = dyn::random::split(dyn::random::key(1234), 3);
  CHECK(ks.shape() == std::vector<i64>{3, 2});
  const auto want3 = ref_split({0, 1234}, 3);
  for (int i = 0; i < 3; ++i) CHECK(std::pair{ks(i, 0), ks(i, 1)} == want3[static_cast<std::size_t>(i)]);
}

TEST_CASE("random: random_bits over odd and even sizes (the odd count is padded with a 0)") {
  const auto k = dyn::random::key(17);
  for (i64 n : {1, 2, 5, 8}) {
    const auto b = dyn::random::random_bits(k, {n});
    CHECK(vals(b) == ref_bits({0, 17}, n));
  }
  CHECK(dyn::random::random_bits(k, {2, 3}).shape() == std::vector<i64>{2, 3});
  CHECK(vals(dyn::random::random_bits(k, {2, 3})) == ref_bits({0, 17}, 6));
}

// --- distributions: the exact jax.random numbers ------------------------------

TEST_CASE("random: uniform<float> is jax.random.uniform bit for bit") {
  const auto k = dyn::random::key(0);
  // JAX's documented value of random.uniform(random.PRNGKey(0)).
  CHECK(dyn::random::uniform<float>(k, {}).data()[0] == 0.41845703f);
  CHECK(vals(dyn::random::uniform<float>(k, {})) == ref_uniform({0, 0}, 1, 0.f, 1.f));
  const auto u = dyn::random::uniform<float>(dyn::random::key(3), {2, 3}, -2.0f, 3.0f);
  CHECK(u.shape() == std::vector<i64>{2, 3});
  CHECK(vals(u) == ref_uniform({0, 3}, 6, -2.f, 3.f));
  CHECK(vals(dyn::random::uniform<float>(k, {7})) == ref_uniform({0, 0}, 7, 0.f, 1.f));
}

TEST_CASE("random: uniform<double> is jax.random.uniform with jax_enable_x64 (64-bit random bits)") {
  const auto k = dyn::random::key(5);
  CHECK(vals(dyn::random::uniform<double>(k, {5})) == ref_uniform64({0, 5}, 5));
}

TEST_CASE("random: randint<int> is jax.random.randint (two draws, combined modulo the span)") {
  const auto k = dyn::random::key(9);
  CHECK(vals(dyn::random::randint<i32>(k, {11}, 0, 10)) == ref_randint({0, 9}, 11, 0, 10));
  CHECK(vals(dyn::random::randint<i32>(k, {4}, -1000, 7)) == ref_randint({0, 9}, 4, -1000, 7));
  CHECK(vals(dyn::random::randint<i32>(k, {3}, INT32_MIN, INT32_MAX)) == ref_randint({0, 9}, 3, INT32_MIN, INT32_MAX));
  const auto r64 = dyn::random::randint<i64>(k, {100}, -5, 5);
  for (i64 v : vals(r64)) CHECK((v >= -5 && v < 5));
  // hi <= lo: the span is 1 and every number lo (JAX's select(maxval <= minval, 1, span)), for C++
  // bounds as for array bounds.
  CHECK(vals(dyn::random::randint<i32>(k, {3}, 5, 5)) == std::vector<i32>{5, 5, 5});
  CHECK(vals(dyn::random::randint<u8>(k, {2}, 200, 3)) == std::vector<u8>{200, 200});
  CHECK(vals(dyn::random::randint<i32>(k, {3}, 7, Array<i32>({3}, {2, 7, 9}))).at(0) == 7);
}

TEST_CASE("random: randint for 8- and 16-bit types is jax.random.randint (bits cut from 32-bit words, low first)") {
  const auto k = dyn::random::key(9);
  CHECK(vals(dyn::random::randint<i8>(k, {11}, -5, 100)) == ref_randint_any<i8>({0, 9}, 11, {-5}, {100}));
  CHECK(vals(dyn::random::randint<i8>(k, {3}, -128, 127)) == ref_randint_any<i8>({0, 9}, 3, {-128}, {127}));
  CHECK(vals(dyn::random::randint<u8>(k, {9}, 3, 250)) == ref_randint_any<u8>({0, 9}, 9, {3}, {250}));
  CHECK(vals(dyn::random::randint<i16>(k, {7}, -300, 3000)) == ref_randint_any<i16>({0, 9}, 7, {-300}, {3000}));
  CHECK(vals(dyn::random::randint<u16>(dyn::random::key(4), {2, 3}, 0, 60000)) ==
        ref_randint_any<u16>({0, 4}, 6, {0}, {60000}));
  CHECK(dyn::random::randint<u16>(k, {2, 3}, 0, 10).shape() == std::vector<i64>{2, 3});
  CHECK(dyn::random::randint<u8>(k, {0}, 0, 10).size() == 0);
  // Golden values of the reference above (JAX's algorithm), written out: a
  // change to either side shows here.
  CHECK(ref_bits_narrow<u8>({0, 9}, 5) ==
        std::vector<u8>{static_cast<u8>(ref_bits({0, 9}, 2)[0]), static_cast<u8>(ref_bits({0, 9}, 2)[0] >> 8),
                        static_cast<u8>(ref_bits({0, 9}, 2)[0] >> 16), static_cast<u8>(ref_bits({0, 9}, 2)[0] >> 24),
                        static_cast<u8>(ref_bits({0, 9}, 2)[1])});
  // The 32-bit path is the existing one.
  CHECK(ref_randint_any<i32>({0, 9}, 11, {0}, {10}) == ref_randint({0, 9}, 11, 0, 10));
  // Statistics. A span of 128 (a power of two: the multiplier is 0, the low draw alone
  // decides) is uniform; a span of 200 stays in range but is not uniform: the product
  // (hi % 200) * 56 wraps in u8, as in JAX (its algorithm's bias for narrow types).
  const auto r = dyn::random::randint<u8>(dyn::random::key(3), {100000}, 50, 178);
  std::vector<i64> counts(256);
  for (u8 x : vals(r)) counts[x]++;
  for (int v = 0; v < 256; ++v) {
    CAPTURE(v);
    if (v < 50 || v >= 178) CHECK(counts[static_cast<std::size_t>(v)] == 0);
    else CHECK((counts[static_cast<std::size_t>(v)] > 640 && counts[static_cast<std::size_t>(v)] < 920));  // 781, sd 28
  }
  for (u8 x : vals(dyn::random::randint<u8>(dyn::random::key(3), {10000}, 50, 250))) CHECK((x >= 50 && x < 250));
}

TEST_CASE("random: array-valued bounds broadcast against the shape, as jax.random (randint, uniform, bernoulli)") {
  const auto k = dyn::random::key(21);
  // randint: lo a row, hi a column, hi <= lo gives lo (a span of 1, JAX's rule).
  const Array<i32> lo({3}, {0, -10, 5}), hi({2, 1}, {10, 1});
  const auto r = dyn::random::randint<i32>(k, {2, 3}, lo, hi);
  CHECK(r.shape() == std::vector<i64>{2, 3});
  CHECK(vals(r) == ref_randint_any<i32>({0, 21}, 6, {0, -10, 5, 0, -10, 5}, {10, 10, 10, 1, 1, 1}));
  CHECK(r(1, 2) == 5);  // hi 1 <= lo 5
  // A scalar on one side, an array on the other; 8 bits.
  const Array<i8> hi8({4}, {1, 2, 100, -128});
  CHECK(vals(dyn::random::randint<i8>(k, {4}, i8{-3}, hi8)) == ref_randint_any<i8>({0, 21}, 4, {-3}, {1, 2, 100, -128}));
  // uniform: per-element [lo, hi).
  const Array<float> ulo({2}, {0.0f, -4.0f}), uhi({2}, {1.0f, 4.0f});
  const auto u = dyn::random::uniform<float>(k, {3, 2}, ulo, uhi);
  const auto base = ref_uniform({0, 21}, 6, 0.f, 1.f);
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    const float l = i % 2 ? -4.0f : 0.0f, h = i % 2 ? 4.0f : 1.0f;
    CHECK(u.data()[i] == std::max(l, base[i] * (h - l) + l));
  }
  CHECK(vals(dyn::random::uniform<float>(k, {3}, 2.0f, Array<float>({1}, {3.0f}))) == ref_uniform({0, 21}, 3, 2.f, 3.f));
  // bernoulli: p an array; the shape defaults to p's; the uniform has p's dtype.
  const Array<float> p({4}, {0.0f, 1.0f, 0.5f, 0.25f});
  const auto b = dyn::random::bernoulli(k, p);
  CHECK(b.shape() == std::vector<i64>{4});
  const auto bu = ref_uniform({0, 21}, 4, 0.f, 1.f);
  for (std::size_t i = 0; i < 4; ++i) CHECK(b.data()[i] == (bu[i] < p.data()[i]));
  CHECK(vals(b)[0] == false);
  CHECK(vals(b)[1] == true);
  const auto b2 = dyn::random::bernoulli(k, p, {3, 4});
  CHECK(b2.shape() == std::vector<i64>{3, 4});
  const auto bu2 = ref_uniform({0, 21}, 12, 0.f, 1.f);
  for (std::size_t i = 0; i < 12; ++i) CHECK(b2.data()[i] == (bu2[i] < p.data()[i % 4]));
  const Array<double> pd({}, {0.5});
  CHECK(dyn::random::bernoulli(k, pd, {5}).shape() == std::vector<i64>{5});
  const auto ud = dyn::random::uniform<double>(k, {5});
  for (i64 i = 0; i < 5; ++i) CHECK(dyn::random::bernoulli(k, pd, {5}).data()[i] == (ud.data()[i] < 0.5));
}

TEST_CASE("random: fold_in is jax.random.fold_in (threefry of the key over the counter pair (0, data))") {
  const auto k = dyn::random::key(0);
  const auto f = dyn::random::fold_in(k, 1);
  CHECK(f.shape() == std::vector<i64>{2});
  const auto want = ref_fold_in({0, 0}, 1);
  CHECK(vals(f) == std::vector<u32>{want.first, want.second});
  const auto k7 = dyn::random::key(7);
  for (u32 d : {0u, 5u, 0xFFFFFFFFu}) {
    const auto w = ref_fold_in({0, 7}, d);
    CHECK(vals(dyn::random::fold_in(k7, d)) == std::vector<u32>{w.first, w.second});
  }
  // A traced key and a traced datum give the same bits.
  const auto jf = dyn::make_jaxpr([](dyn::Tracer<u32> key, dyn::Tracer<u32> d) { return dyn::random::fold_in(key, d); });
  const auto cj = jf(k7, Array<u32>({}, {5u}));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(k7), dyn::AnyArray(Array<u32>({}, {5u}))});
  CHECK(vals(got.at(0).get<u32>()) == vals(dyn::random::fold_in(k7, 5u)));
}

TEST_CASE("random: bernoulli is uniform<float> < p; permutation is jax.random.permutation") {
  const auto k = dyn::random::key(11);
  const auto b = dyn::random::bernoulli(k, 0.3f, {9});
  const auto u = ref_uniform({0, 11}, 9, 0.f, 1.f);
  for (int i = 0; i < 9; ++i) CHECK(b.data()[i] == (u[static_cast<std::size_t>(i)] < 0.3f));
  CHECK(vals(dyn::random::permutation(k, 10)) == ref_permutation({0, 11}, 10));
  CHECK(vals(dyn::random::permutation(k, 1)) == std::vector<i32>{0});
  CHECK(dyn::random::permutation(k, 0).size() == 0);
}

TEST_CASE("random: different keys give different streams; the same key the same numbers") {
  const auto k = dyn::random::key(1);
  auto [k1, k2] = dyn::random::split(k);
  CHECK(vals(dyn::random::random_bits(k1, {4})) != vals(dyn::random::random_bits(k2, {4})));
  CHECK(vals(dyn::random::uniform<float>(k1, {4})) == vals(dyn::random::uniform<float>(k1, {4})));
}

// --- statistics, fixed seeds ---------------------------------------------------

template <class T>
std::pair<double, double> moments(const Array<T>& a) {
  double s = 0, s2 = 0;
  for (T v : vals(a)) s += static_cast<double>(v);
  const double m = s / static_cast<double>(a.size());
  for (T v : vals(a)) s2 += (static_cast<double>(v) - m) * (static_cast<double>(v) - m);
  return {m, s2 / static_cast<double>(a.size())};
}

constexpr i64 kN = 100000;

TEST_CASE("random statistics: uniform moments and a chi-square over 10 bins (1e5 samples)") {
  const auto u = dyn::random::uniform<float>(dyn::random::key(2024), {kN});
  const auto [m, v] = moments(u);
  CHECK(std::abs(m - 0.5) < 0.005);         // sd of the mean 0.0009
  CHECK(std::abs(v - 1.0 / 12) < 0.0015);   // sd of the variance 0.00024
  std::vector<double> bins(10);
  const auto xs = vals(u);
  REQUIRE(std::all_of(xs.begin(), xs.end(), [](float x) { return x >= 0.0f && x < 1.0f; }));
  for (float x : xs) bins[static_cast<std::size_t>(x * 10)] += 1;
  double chi2 = 0;
  for (double c : bins) chi2 += (c - kN / 10.0) * (c - kN / 10.0) / (kN / 10.0);
  CHECK(chi2 < 27.877);  // the 0.999 quantile of chi-square with 9 degrees of freedom
  const auto w = dyn::random::uniform<double>(dyn::random::key(7), {kN}, -3.0, 5.0);
  const auto [mw, vw] = moments(w);
  CHECK(std::abs(mw - 1.0) < 0.04);
  CHECK(std::abs(vw - 64.0 / 12) < 0.1);
}

TEST_CASE("random statistics: normal moments (1e5 samples, float and double)") {
  const auto [m, v] = moments(dyn::random::normal<float>(dyn::random::key(99), {kN}));
  CHECK(std::abs(m) < 0.02);       // sd of the mean 0.0032
  CHECK(std::abs(v - 1.0) < 0.03);  // sd of the variance 0.0045
  const auto z = dyn::random::normal<double>(dyn::random::key(100), {kN});
  const auto [md, vd] = moments(z);
  CHECK(std::abs(md) < 0.02);
  CHECK(std::abs(vd - 1.0) < 0.03);
  i64 beyond3 = 0;
  for (double x : vals(z)) beyond3 += std::abs(x) > 3;
  CHECK((beyond3 > 200 && beyond3 < 340));  // 0.27% of 1e5 = 270, sd 16
}

TEST_CASE("random: normal is jax.random.normal: sqrt(2) * erf_inv(uniform(key, lo = nextafter(-1, 0), hi = 1))") {
  // JAX's documentation (the jax.jit docstring, jax/_src/api.py) prints
  // selu(jax.random.normal(jax.random.key(0), (10,))) to 5 digits, selu(x) =
  // 1.05 x for x > 0, 1.05 * 1.67 (exp(x) - 1) otherwise; inverting selu
  // gives these values of normal(key(0), (10,)) (to about 1e-5).
  const std::vector<double> jax = {-0.37211, 0.264229, -0.182527, -0.736813, -0.440299,
                                   -0.152143, -0.671351, -0.590857, 0.731686, 0.567295};
  const auto z = dyn::random::normal<float>(dyn::random::key(0), {10});
  for (i64 i = 0; i < 10; ++i) {
    CAPTURE(i);
    CHECK(std::abs(z(i) - jax[static_cast<std::size_t>(i)]) < 2e-5);
  }
  // The composition, exactly.
  const auto k = dyn::random::key(5);
  const auto u = dyn::random::uniform<double>(k, {64}, std::nextafter(-1.0, 0.0), 1.0);
  const auto want = dyn::erf_inv(u) * std::sqrt(2.0);
  CHECK(dyn::array_equal(dyn::random::normal<double>(k, {64}), want));
}

TEST_CASE("random statistics: randint range and uniformity, bernoulli frequency, permutations") {
  const auto r = dyn::random::randint<i32>(dyn::random::key(5), {kN}, -3, 7);
  std::vector<i64> counts(10);
  for (i32 x : vals(r)) {
    REQUIRE((x >= -3 && x < 7));
    counts[static_cast<std::size_t>(x + 3)]++;
  }
  for (i64 c : counts) CHECK((c > 9500 && c < 10500));  // sd 95
  const auto b = dyn::random::bernoulli(dyn::random::key(6), 0.3f, {kN});
  const double freq = static_cast<double>(std::count(b.begin(), b.end(), true)) / kN;
  CHECK(std::abs(freq - 0.3) < 0.007);  // sd 0.00145
  const auto p = dyn::random::permutation(dyn::random::key(8), 1000);
  std::vector<i32> sorted = vals(p), id(1000);
  std::sort(sorted.begin(), sorted.end());
  std::iota(id.begin(), id.end(), 0);
  CHECK(sorted == id);
  CHECK(vals(p) != id);
  // 2000 > 1625 elements: two rounds of sorting (ceil(3 ln n / ln(2^32 - 1))).
  auto q = vals(dyn::random::permutation(dyn::random::key(8), 2000));
  std::sort(q.begin(), q.end());
  std::vector<i32> id2(2000);
  std::iota(id2.begin(), id2.end(), 0);
  CHECK(q == id2);
}

// --- jaxpr ------------------------------------------------------------------

TEST_CASE("random: uniform traces to a jaxpr of existing primitives; check_jaxpr-clean; eval_jaxpr == eager") {
  const auto f = [](dyn::Tracer<u32> k) { return dyn::random::uniform<float>(k, {3}); };
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(f)(dyn::random::key(0));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::string text = test_util::str(cj);
  CHECK(text.rfind("{ lambda ; a:u32[2]. let\n"
                   "    b:u32[3] = iota[dimension=0 dtype=uint32 shape=(3,)] \n"
                   "    c:u32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] 0:u32[]\n"
                   "    d:u32[4] = concatenate[dimension=0] b c\n",
                   0) == 0);
  CHECK(text.find("threefry") == std::string::npos);  // no primitive of its own
  CHECK(text.find("shift_right_logical l 19:u32[]") != std::string::npos);  // rotate_left by 13
  CHECK(text.find("convert_element_type[new_dtype=float32") != std::string::npos);
  const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(dyn::random::key(0))});
  REQUIRE(got.size() == 1);
  CHECK(vals(got[0].get<float>()) == vals(dyn::random::uniform<float>(dyn::random::key(0), {3})));
  // Every function traces clean.
  const auto g = [](dyn::Tracer<u32> k) {
    auto [k1, k2] = dyn::random::split(k);
    return std::tuple{dyn::random::normal<float>(k1, {4}), dyn::random::randint<i32>(k2, {5}, 0, 3),
                      dyn::random::bernoulli(k, 0.5f, {2}), dyn::random::permutation(k, 6),
                      dyn::random::split(k, 3), dyn::random::uniform<double>(k, {2})};
  };
  CHECK_NOTHROW(dyn::check_jaxpr(dyn::make_jaxpr(g)(dyn::random::key(0))));
}

// --- errors -----------------------------------------------------------------

TEST_CASE("random errors: a key of the wrong dtype or shape, bounds, fold_in data, bernoulli p; the function and line") {
  using test_util::message_of;
  CHECK(message_of<dyn::TypeError>([] { dyn::random::uniform<float>(Array<i32>({2}, {0, 1}), {3}); }) ==
        "dyn::random::uniform: the key must be a u32[2] array (from dyn::random::key or split), got i32[2]");
  CHECK(message_of<dyn::ShapeError>([] { dyn::random::split(Array<u32>({3}, {0, 1, 2})); }) ==
        "dyn::random::split: the key must be a u32[2] array (from dyn::random::key or split), got u32[3]");
  CHECK(message_of<dyn::ShapeError>([] { dyn::random::normal<float>(Array<u32>({1, 2}, {0, 1}), {3}); }) ==
        "dyn::random::normal: the key must be a u32[2] array (from dyn::random::key or split), got u32[1,2]");
  CHECK(message_of<dyn::ShapeError>([] { dyn::random::fold_in(dyn::random::key(0), Array<i32>({2}, {1, 2})); }) ==
        "dyn::random::fold_in: data must be a scalar, got i32[2]");
  // p whose length only the data knows (compress): the shape must be given.
  CHECK(message_of<dyn::ShapeError>([] {
          (void)dyn::make_jaxpr([](dyn::Tracer<float> p) {
            return dyn::random::bernoulli(dyn::random::key(0), dyn::compress(p > 0.5f, p));
          })(Array<float>({3}, {0.25f, 0.75f, 1.0f}));
        }) == "dyn::random::bernoulli: p has a dynamic shape; pass the shape argument");
  CHECK(message_of<dyn::ShapeError>([] { dyn::random::permutation(dyn::random::key(0), -1); }) ==
        "dyn::random::permutation: negative length -1");
  CHECK(message_of<dyn::ShapeError>([] {
          dyn::random::randint<i32>(dyn::random::key(0), {3}, Array<i32>({2}, {0, 1}), 5);
        }) == "dyn::random::randint: lo and hi (shapes (2,) and ()) must broadcast to the shape argument (3,)");
  CHECK(message_of<dyn::ShapeError>([] {
          dyn::random::uniform<float>(dyn::random::key(0), {3}, 0.0f, Array<float>({2, 3}, std::vector<float>(6)));
        }) == "dyn::random::uniform: lo and hi (shapes () and (2,3)) must broadcast to the shape argument (3,)");
  CHECK(message_of<dyn::ShapeError>([] {
          dyn::random::bernoulli(dyn::random::key(0), Array<float>({2}, {0.5f, 0.5f}), {3});
        }) == "dyn::random::bernoulli: p (shape (2,)) must broadcast to the shape argument (3,)");
  // The user's line.
  const int line = __LINE__ + 2;
  try {
    dyn::random::bernoulli(Array<u32>({4}, {0, 1, 2, 3}), 0.5f, {2});
    FAIL("no error");
  } catch (const dyn::ShapeError& e) {
    CHECK(std::string(e.what()).find("test_random.cpp:" + std::to_string(line) + ")") != std::string::npos);
  }
  // While tracing, too (a traced key of the wrong shape).
  CHECK(message_of<dyn::ShapeError>([] {
          (void)dyn::make_jaxpr([](dyn::Tracer<u32> k) { return dyn::random::uniform<float>(k, {2}); })(
              Array<u32>({3}, {0, 1, 2}));
        }) == "dyn::random::uniform: the key must be a u32[2] array (from dyn::random::key or split), got u32[3]");
}

}  // namespace
