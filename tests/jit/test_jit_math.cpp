// The math functions of API.md section 13 under dyn::jit (issue 17 part 3):
//  * accuracy: for each function, f32 and f64, the largest error in ulps of
//    eager and of jit against a long-double reference (C's sinhl, erfl,
//    lgammal, ...) over a fixed grid and fixed random points covering its
//    domain (tiny, large, the edges); each bound is docs/backend.md's table
//    "Accuracy of the math functions", asserted here as measured (rounded up);
//  * the exact ones (square, integer_pow, nextafter, is_finite, isnan, isinf,
//    logical_*) agree with eager bit for bit, specials included;
//  * vectorised: the kernel of lgamma (SLEEF) and erf (libmvec) over f64[1024]
//    calls the vector variants (on an AVX2 host).
// The jaxprs and eager values: tests/ops/test_math.cpp.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using dyn::Array;
using i32 = std::int32_t;

// ---------------------------------------------------------------------------
// Errors in ulps against a long-double reference: |got - ref| / ulp(ref),
// where ulp(ref) is the spacing of T's floats at |ref| (the subnormal
// spacing below the normal range). An infinite or NaN reference must be
// matched exactly.
template <class T>
double ulps(T got, long double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  const long double maxv = std::numeric_limits<T>::max();
  if (std::isinf(ref) || std::fabs(ref) > maxv) {
    // Beyond T's range: inf (or the largest float, one rounding short) is right.
    if (std::isinf(got) && (got > 0) == (ref > 0)) return 0;
    return std::fabs(static_cast<long double>(got)) == maxv ? 1 : INFINITY;
  }
  if (std::isinf(got)) return INFINITY;
  int e = 0;
  (void)std::frexp(ref, &e);  // |ref| in [2^(e-1), 2^e)
  const int digits = std::numeric_limits<T>::digits;
  const int min_e = std::numeric_limits<T>::min_exponent;  // normal floats: e >= min_e
  const long double ulp = std::ldexp(1.0L, std::max(e, min_e) - digits);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - ref) / ulp);
}

// Points of a domain [lo, hi]: a log-spaced grid of magnitudes (both signs
// where the domain has them), a uniform grid, fixed-seed uniform random
// points, the ends and the tiny ones (the subnormal and normal minimum).
template <class T>
std::vector<T> domain_points(double lo, double hi, int n = 4000) {
  std::vector<T> v;
  auto add = [&](long double x) {
    if (x >= lo && x <= hi) v.push_back(static_cast<T>(x));
  };
  const long double tiny = std::numeric_limits<T>::denorm_min();
  const long double big = std::min<long double>(std::max(std::fabs(lo), std::fabs(hi)), std::numeric_limits<T>::max());
  const long double l0 = std::log(tiny), l1 = std::log(big);
  for (int i = 0; i <= n; ++i) {
    const long double m = std::exp(l0 + (l1 - l0) * i / n);
    add(m), add(-m);
  }
  for (int i = 0; i <= n; ++i) add(lo + (hi - lo) * static_cast<long double>(i) / n);
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int i = 0; i < n; ++i) add(u(rng));
  for (long double x : {static_cast<long double>(lo), static_cast<long double>(hi), 0.0L, tiny,
                        static_cast<long double>(std::numeric_limits<T>::min())})
    add(x), add(-x);
  return v;
}

// The functions measured, with the domain of their points and the reference.
struct Fn {
  const char* name;
  double lo32, hi32, lo64, hi64;
  long double (*ref)(long double);
};

long double lgamma_ref(long double x) {
  int sign;
  return lgammal_r(x, &sign);
}

// erf_inv in long double: Newton's method on erf(y) = |x| (|x| <= 1/2) or
// on erfc(y) = 1 - |x| (exact in long double; well conditioned in the tail),
// from the left of the root, where both converge monotonically.
long double erf_inv_ref(long double x) {
  if (std::isnan(x) || std::fabs(x) > 1) return NAN;
  if (std::fabs(x) == 1) return x * INFINITY;
  if (x == 0) return x;
  const long double a = std::fabs(x);
  const long double two_over_sqrt_pi = 1.1283791670955125738961589031215452L;
  long double y = 0;
  if (a <= 0.5L) {
    for (int i = 0; i < 100; ++i) {
      const long double step = (std::erf(y) - a) / (two_over_sqrt_pi * std::exp(-y * y));
      y -= step;
      if (std::fabs(step) <= 1e-21L * std::fabs(y)) break;
    }
  } else {
    const long double t = 1 - a;
    y = 0.4L;
    for (int i = 0; i < 2000; ++i) {
      const long double step = (std::erfc(y) - t) / (two_over_sqrt_pi * std::exp(-y * y));
      y += step;
      if (std::fabs(step) <= 1e-21L * y) break;
    }
  }
  return x < 0 ? -y : y;
}

const Fn kFns[] = {
    {"expm1", -40, 88, -60, 709, [](long double x) { return std::expm1(x); }},
    {"exp2", -150, 127, -1075, 1023, [](long double x) { return std::exp2(x); }},
    {"cbrt", -3e38, 3e38, -1e308, 1e308, [](long double x) { return std::cbrt(x); }},
    {"sinh", -89, 89, -710, 710, [](long double x) { return std::sinh(x); }},
    {"cosh", -89, 89, -710, 710, [](long double x) { return std::cosh(x); }},
    {"asin", -1, 1, -1, 1, [](long double x) { return std::asin(x); }},
    {"acos", -1, 1, -1, 1, [](long double x) { return std::acos(x); }},
    {"atan", -3e38, 3e38, -1e308, 1e308, [](long double x) { return std::atan(x); }},
    {"asinh", -3e38, 3e38, -1e308, 1e308, [](long double x) { return std::asinh(x); }},
    {"acosh", 1, 3e38, 1, 1e308, [](long double x) { return std::acosh(x); }},
    {"atanh", -1, 1, -1, 1, [](long double x) { return std::atanh(x); }},
    {"erf", -6, 6, -7, 7, [](long double x) { return std::erf(x); }},
    {"erfc", -4, 10, -6, 27, [](long double x) { return std::erfc(x); }},
    {"lgamma", 1e-30, 1e36, 1e-300, 1e300, lgamma_ref},
    {"lgamma_neg", -30, 0, -30, 0, lgamma_ref},
    {"log2", 0, 3e38, 0, 1e308, [](long double x) { return std::log2(x); }},
    {"log10", 0, 3e38, 0, 1e308, [](long double x) { return std::log10(x); }},
    {"erf_inv", -1, 1, -1, 1, erf_inv_ref},
};
constexpr int kFnCount = sizeof(kFns) / sizeof(kFns[0]);

// Every function at once, each on its own operand (one jit instantiation
// per dtype for the file).
auto all_math(const auto& a0, const auto& a1, const auto& a2, const auto& a3, const auto& a4, const auto& a5,
              const auto& a6, const auto& a7, const auto& a8, const auto& a9, const auto& a10, const auto& a11,
              const auto& a12, const auto& a13, const auto& a14, const auto& a15, const auto& a16,
              const auto& a17) {
  return std::tuple{dyn::expm1(a0),  dyn::exp2(a1),   dyn::cbrt(a2),  dyn::sinh(a3),   dyn::cosh(a4),   dyn::asin(a5),
                    dyn::acos(a6),   dyn::atan(a7),   dyn::asinh(a8), dyn::acosh(a9),  dyn::atanh(a10), dyn::erf(a11),
                    dyn::erfc(a12),  dyn::lgamma(a13), dyn::lgamma(a14), dyn::log2(a15), dyn::log10(a16),
                    dyn::erf_inv(a17)};
}

template <class T>
struct Measured {
  double eager[kFnCount];
  double jit[kFnCount];
};

template <class T>
Measured<T> measure() {
  std::vector<std::vector<T>> xs;
  std::vector<Array<T>> in;
  for (const Fn& f : kFns) {
    const bool f32 = std::is_same_v<T, float>;
    xs.push_back(domain_points<T>(f32 ? f.lo32 : f.lo64, f32 ? f.hi32 : f.hi64));
    // lgamma of negative arguments: away from the poles (integers) and from
    // the zeros of lgamma, where an error relative to the result is unbounded
    // for every implementation (glibc's included): points at least 1e-3
    // from an integer and with |lgamma| >= 1e-2.
    if (std::string(f.name) == "lgamma_neg") {
      std::vector<T> keep;
      for (T x : xs.back())
        if (std::fabs(x - std::round(x)) > 1e-3 && std::fabs(lgamma_ref(x)) >= 1e-2) keep.push_back(x);
      xs.back() = keep;
    }
    // erf_inv: also 1 - 2^-k and its negative, for every k, into the tails.
    if (std::string(f.name) == "erf_inv")
      for (int k = 1; k <= std::numeric_limits<T>::digits; ++k) {
        xs.back().push_back(T(1) - std::ldexp(T(1), -k));
        xs.back().push_back(std::ldexp(T(1), -k) - T(1));
      }
    in.emplace_back(std::vector<std::int64_t>{static_cast<std::int64_t>(xs.back().size())}, xs.back());
  }
  auto f = [](const auto&... a) { return all_math(a...); };
  auto call = [&](auto g) {
    return g(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], in[9], in[10], in[11], in[12], in[13],
             in[14], in[15], in[16], in[17]);
  };
  const auto eager = call(f);
  const auto jitted = call(dyn::jit(f));
  Measured<T> m{};
  auto each = [&]<std::size_t... K>(std::index_sequence<K...>) {
    auto one = [&](std::size_t k, const Array<T>& e, const Array<T>& j) {
      m.eager[k] = m.jit[k] = 0;
      for (std::size_t i = 0; i < xs[k].size(); ++i) {
        const long double ref = kFns[k].ref(static_cast<long double>(xs[k][i]));
        const double ue = ulps<T>(e(static_cast<std::int64_t>(i)), ref);
        const double uj = ulps<T>(j(static_cast<std::int64_t>(i)), ref);
        m.eager[k] = std::max(m.eager[k], ue);
        m.jit[k] = std::max(m.jit[k], uj);
      }
    };
    (one(K, std::get<K>(eager), std::get<K>(jitted)), ...);
  };
  each(std::make_index_sequence<kFnCount>{});
  return m;
}

// The bounds of docs/backend.md, "Accuracy of the math functions": the
// measured maximum rounded up to a tenth of an ulp (eager: glibc's libm;
// jit: libmvec, SLEEF's u10 variants for lgamma, libm in scalar remainders),
// on an AVX2 host; except the jit bounds of the functions libmvec computes,
// which are glibc's documented bound for libmvec, 4 ulp (kLibmvec): libmvec
// has a variant per instruction set, and an AVX-512 host's measured up to
// 3.98 (erf, f32) where the AVX2 ones stay within 2.2.
struct Bound {
  double eager32, jit32, eager64, jit64;
};
constexpr double kLibmvec = 4.0;
const Bound kBounds[kFnCount] = {
    /* expm1 */ {0.8, kLibmvec, 0.8, kLibmvec},
    /* exp2 */ {0.6, kLibmvec, 0.6, kLibmvec},
    /* cbrt */ {1.0, kLibmvec, 2.6, kLibmvec},
    /* sinh */ {1.4, kLibmvec, 1.1, kLibmvec},
    /* cosh */ {1.4, kLibmvec, 1.0, kLibmvec},
    /* asin */ {0.8, kLibmvec, 0.6, kLibmvec},
    /* acos */ {0.9, kLibmvec, 0.6, kLibmvec},
    /* atan */ {0.8, kLibmvec, 0.5, kLibmvec},
    /* asinh */ {1.0, kLibmvec, 1.0, kLibmvec},
    /* acosh */ {0.9, kLibmvec, 1.0, kLibmvec},
    /* atanh */ {1.5, kLibmvec, 1.4, kLibmvec},
    /* erf */ {0.8, kLibmvec, 0.8, kLibmvec},
    /* erfc */ {2.2, kLibmvec, 2.2, kLibmvec},
    /* lgamma */ {2.0, 0.8, 1.5, 0.6},
    /* lgamma_neg */ {5.3, 1.1, 3.7, 1.1},
    /* log2 */ {1.3, 3.4, 1.6, 1.3},
    /* log10 */ {1.7, 2.5, 1.6, 1.9},
    /* erf_inv */ {3.2, 3.4, 3.7, 3.7},
};

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("math accuracy: every function within its stated ulp bound, eager and jit, f32 and f64") {
  const Measured<float> m32 = measure<float>();
  const Measured<double> m64 = measure<double>();
  for (int k = 0; k < kFnCount; ++k) {
    CAPTURE(kFns[k].name);
    // The measured figures, for docs/backend.md.
    std::printf("math accuracy %-10s f32 eager %6.3f jit %6.3f | f64 eager %6.3f jit %6.3f\n", kFns[k].name,
                m32.eager[k], m32.jit[k], m64.eager[k], m64.jit[k]);
    CHECK(m32.eager[k] <= kBounds[k].eager32);
    CHECK(m32.jit[k] <= kBounds[k].jit32);
    CHECK(m64.eager[k] <= kBounds[k].eager64);
    CHECK(m64.jit[k] <= kBounds[k].jit64);
  }
}

TEST_CASE("math: the exact functions compiled agree with eager bit for bit, specials included") {
  const double inf = INFINITY, nan = NAN;
  const std::vector<double> v = {0.0, -0.0, 1.0, -1.5, 3.25, 1e-310, -1e300, 1e300, inf, -inf, nan, 7.0};
  const std::vector<double> w = {1.0, 1.0, 1.0, -2.0, 3.25, 0.0, 0.0, inf, 0.0, 2.0, 1.0, nan};
  auto f = [](const auto& x, const auto& y, const auto& n) {
    return std::tuple{dyn::square(x), dyn::integer_pow(x, 3), dyn::integer_pow(x, -2), dyn::integer_pow(x, 0),
                      dyn::nextafter(x, y), dyn::is_finite(x), dyn::isnan(x), dyn::isinf(x), dyn::hypot(x, y),
                      dyn::logical_and(x, y), dyn::logical_or(x, y), dyn::logical_xor(x, n), dyn::logical_not(x),
                      dyn::square(n), dyn::integer_pow(n, 7), dyn::log2(x), dyn::log10(x)};
  };
  auto run = [&](auto t) {
    using T = decltype(t);
    std::vector<T> vt(v.begin(), v.end()), wt(w.begin(), w.end());
    const Array<T> x({12}, vt), y({12}, wt);
    const Array<i32> n({12}, {0, 1, -1, 2, 46341, -3, 5, 100, 1000, -7, 9, 65536});
    const auto e = f(x, y, n);
    const auto j = dyn::jit(f)(x, y, n);
    // Equal elements (NaN with NaN, -0 apart from +0).
    auto same = [](const auto& a, const auto& b) {
      if (a.shape() != b.shape()) return false;
      for (std::int64_t i = 0; i < a.size(); ++i) {
        const auto p = a.data()[i], q = b.data()[i];
        if constexpr (std::is_floating_point_v<std::decay_t<decltype(p)>>) {
          if (std::isnan(p) && std::isnan(q)) continue;
          if (std::signbit(p) != std::signbit(q)) return false;
        }
        if (!(p == q)) return false;
      }
      return true;
    };
    CHECK(same(std::get<0>(j), std::get<0>(e)));
    CHECK(same(std::get<1>(j), std::get<1>(e)));
    CHECK(same(std::get<2>(j), std::get<2>(e)));
    CHECK(same(std::get<3>(j), std::get<3>(e)));
    CHECK(same(std::get<4>(j), std::get<4>(e)));
    CHECK(same(std::get<5>(j), std::get<5>(e)));
    CHECK(same(std::get<6>(j), std::get<6>(e)));
    CHECK(same(std::get<7>(j), std::get<7>(e)));
    CHECK(same(std::get<8>(j), std::get<8>(e)));
    CHECK(same(std::get<9>(j), std::get<9>(e)));
    CHECK(same(std::get<10>(j), std::get<10>(e)));
    CHECK(same(std::get<11>(j), std::get<11>(e)));
    CHECK(same(std::get<12>(j), std::get<12>(e)));
    CHECK(same(std::get<13>(j), std::get<13>(e)));
    CHECK(same(std::get<14>(j), std::get<14>(e)));
    // log2/log10: a vectorised log (libmvec) then an exact division/product.
    CHECK(dyn::allclose(std::get<15>(j), std::get<15>(e), 1e-6, 0.0, true));
    CHECK(dyn::allclose(std::get<16>(j), std::get<16>(e), 1e-6, 0.0, true));
  };
  run(0.0);
  run(0.0f);
}

TEST_CASE("math: lgamma (SLEEF) and erf (libmvec) over f64[1024] compile to vector calls (AVX2 hosts)") {
  const std::string& host = dyn::detail::host_target_id();
  if (host.find("+avx2") == std::string::npos) return;  // no AVX2: the scalar calls stay
  auto f = [](const auto& x) { return std::tuple{dyn::lgamma(x), dyn::erf(x)}; };
  const Array<double> x({1024});
  const std::string ir = dyn::jit(f).llvm_ir(x);
  if (host.find("sleef") != std::string::npos) CHECK(ir.find("@Sleef_lgammad4_u10avx2") != std::string::npos);
  if (host.find("libmvec") != std::string::npos) CHECK(ir.find("@_ZGVdN4v_erf") != std::string::npos);
  // and the kernel runs (the symbols resolve)
  const Array<double> y({4}, {0.5, 1.0, 2.5, 10.0});
  const auto r = dyn::jit(f)(y);
  CHECK(std::get<0>(r)(3) == doctest::Approx(std::lgamma(10.0)));
}

TEST_CASE("math: isinf/isfinite/isnan of integers and square of bools compile to jnp's answers") {
  const auto f = [](const auto& i, const auto& u, const auto& b) {
    return std::tuple{dyn::isinf(i), dyn::is_finite(i), dyn::isnan(i), dyn::isinf(u), dyn::is_finite(u),
                      dyn::isnan(u), dyn::square(b)};
  };
  const Array<i32> i({3}, {0, -5, 2147483647});
  const Array<std::uint8_t> u({2, 2}, {0, 1, 254, 255});
  const Array<bool> b({3}, {true, false, true});
  const auto r = dyn::jit(f)(i, u, b);
  auto vals = [](const auto& a) { return std::vector(a.data(), a.data() + a.size()); };
  CHECK(vals(std::get<0>(r)) == std::vector<bool>{false, false, false});
  CHECK(vals(std::get<1>(r)) == std::vector<bool>{true, true, true});
  CHECK(vals(std::get<2>(r)) == std::vector<bool>{false, false, false});
  CHECK(vals(std::get<3>(r)) == std::vector<bool>(4, false));
  CHECK(vals(std::get<4>(r)) == std::vector<bool>(4, true));
  CHECK(vals(std::get<5>(r)) == std::vector<bool>(4, false));
  CHECK(std::get<4>(r).shape() == std::vector<std::int64_t>{2, 2});
  CHECK(vals(std::get<6>(r)) == std::vector<i32>{1, 0, 1});
}

}  // TEST_SUITE
