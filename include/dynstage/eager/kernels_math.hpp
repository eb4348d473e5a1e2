// dynstage: the eager kernels of the math functions of API.md section 13
// (square, expm1 ... lgamma, is_finite, integer_pow, nextafter), included
// by kernels.hpp before its shared unary/binary impl_rule templates, which
// find the scalar functions here.
//
// Each scalar function is the C library's (glibc libm, < 1 ulp in
// round-to-nearest for these; docs/backend.md states the measured bounds).
// The compiled kernels call libm or its vector variants
// (llvm/lower_expr.hpp), so eager is the reference they are measured against.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernel_util.hpp"

namespace dyn::detail {

// erf_inv: M. Giles, "Approximating the erfinv function" (GPU Computing Gems
// Jade Edition, 2011), the approximation XLA's ErfInv uses (why w is not
// XLA's -log1p(-x * x): below). With w = -log((1 - |x|) * (1 + |x|)):
//   f32: w < 5: Horner in w - 2.5 over kErfInv32Small, else in sqrt(w) - 3
//        over kErfInv32Large;
//   f64: w < 6.25: in w - 3.125 over kErfInv64Small (23 terms), w < 16: in
//        sqrt(w) - 3.25 over kErfInv64Mid (19), else in sqrt(w) - 5 over
//        kErfInv64Large (17);
// then times x; erf_inv(+-1) = +-inf, NaN outside [-1, 1]. Highest power
// first. Eager (below) and the compiled kernel (llvm/lower_expr.hpp,
// Lowering::erf_inv) evaluate the same expression.
inline constexpr float kErfInv32Small[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                            -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                            -0.00417768164f,  0.246640727f,    1.50140941f};
inline constexpr float kErfInv32Large[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                            -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                            0.00943887047f,   1.00167406f,     2.83297682f};
inline constexpr double kErfInv64Small[23] = {
    -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18, 1.115787767802518096e-17,
    -1.333171662854620906e-16,  2.0972767875968561637e-17,  6.6376381343583238325e-15, -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352,  -0.00074070253416626697512,
    -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
inline constexpr double kErfInv64Mid[19] = {
    2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06,  -4.013867526981545969e-06, 2.9234449089955446044e-06,  1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05,  -0.0003550375203628474796,
    0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,   -0.0037512085075692412107,
    0.005370914553590063617,    1.0052589676941592334,     3.0838856104922207635};
inline constexpr double kErfInv64Large[17] = {
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,  -3.7894654401267369937e-09,
    7.6157012080783393804e-09,  -1.4960026627149240478e-08, 2.9147953450901080826e-08,  -6.7711997758452339498e-08,
    2.2900482228026654717e-07,  -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
    7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221};

// digamma (polygamma(0, x)) and trigamma (polygamma(1, x)). Neither is in
// libm or SLEEF; one formula, evaluated by eager (polygamma_value, below) and
// by the compiled kernel (llvm/lower_expr.hpp, Lowering::polygamma) with the
// same operations in the same order, every branch a select:
//   reflection for x < 1/2, on z = 1 - x (Euler's, as XLA's Digamma):
//     psi(x) = psi(1 - x) - pi cos(pi f) / sin(pi f),
//     psi1(x) = pi^2 / sin(pi f)^2 - psi1(1 - x), f = x - floor(x), less 1
//     if above 1/2 (exact; the terms have period 1 in x): pi f keeps its
//     precision for large |x|, and sin(pi f) near the poles, |f| small;
//   then kPolygammaShift steps of the recurrence psi(z) = psi(z + 1) - 1/z,
//     psi1(z) = psi1(z + 1) + 1/z^2, each applied while z < kPolygammaFrom,
//     so that z >= 10 (z >= 1/2 needs at most ten steps);
//   then the asymptotic series in r = 1/z (Abramowitz and Stegun 6.3.18,
//     6.4.12), B_2k the Bernoulli numbers, through B_16 (the next term is
//     below 1e-17 at z = 10, under an ulp of f64):
//     psi(z)  = log z - r/2 - sum B_2k / (2k) r^2k,
//     psi1(z) = r + r^2/2 + sum B_2k r^(2k+1).
// The series' coefficients in r^2, highest power first (Horner).
// At the poles (0, -1, -2, ...) digamma is NaN, as lax.digamma (scipy's psi
// gives -inf at 0 instead); trigamma is +inf there, its limit.
inline constexpr int kPolygammaShift = 10;
inline constexpr double kPolygammaFrom = 10.0;
inline constexpr double kDigammaSeries[8] = {-3617.0 / 8160.0, 1.0 / 12.0,   -691.0 / 32760.0, 1.0 / 132.0,
                                             -1.0 / 240.0,     1.0 / 252.0,  -1.0 / 120.0,     1.0 / 12.0};
inline constexpr double kTrigammaSeries[8] = {-3617.0 / 510.0, 7.0 / 6.0,    -691.0 / 2730.0, 5.0 / 66.0,
                                              -1.0 / 30.0,     1.0 / 42.0,   -1.0 / 30.0,     1.0 / 6.0};
inline constexpr double kPi = 3.14159265358979323846;

}  // namespace dyn::detail

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail::kernels {

auto scalar(PrimTag<Prim::square>, auto v) { return wrap_mul(v, v); }
auto scalar(PrimTag<Prim::stop_gradient>, auto v) { return v; }  // the identity; derivatives see a constant
auto scalar(PrimTag<Prim::expm1>, auto v) { return std::expm1(v); }
auto scalar(PrimTag<Prim::exp2>, auto v) { return std::exp2(v); }
auto scalar(PrimTag<Prim::cbrt>, auto v) { return std::cbrt(v); }
auto scalar(PrimTag<Prim::sinh>, auto v) { return std::sinh(v); }
auto scalar(PrimTag<Prim::cosh>, auto v) { return std::cosh(v); }
auto scalar(PrimTag<Prim::asin>, auto v) { return std::asin(v); }
auto scalar(PrimTag<Prim::acos>, auto v) { return std::acos(v); }
auto scalar(PrimTag<Prim::atan>, auto v) { return std::atan(v); }
auto scalar(PrimTag<Prim::asinh>, auto v) { return std::asinh(v); }
auto scalar(PrimTag<Prim::acosh>, auto v) { return std::acosh(v); }
auto scalar(PrimTag<Prim::atanh>, auto v) { return std::atanh(v); }
auto scalar(PrimTag<Prim::erf>, auto v) { return std::erf(v); }
auto scalar(PrimTag<Prim::erfc>, auto v) { return std::erfc(v); }
// lgamma_r: std::lgamma writes the global signgam, a data race between
// threads evaluating kernels at once.
inline float scalar(PrimTag<Prim::lgamma>, float v) {
  int sign;
  return ::lgammaf_r(v, &sign);
}
inline double scalar(PrimTag<Prim::lgamma>, double v) {
  int sign;
  return ::lgamma_r(v, &sign);
}
// w as XLA's comment writes it. XLA's code computes -log1p(-x * x), whose
// rounding of x * x near |x| = 1 costs up to 5e5 ulp in f64 (at 1 - 2^-27)
// and 60 in f32; 1 - |x| is exact there, so this w is good to an ulp, and
// the values are JAX's up to the last few bits.
inline float scalar(PrimTag<Prim::erf_inv>, float x) {
  const float a = std::fabs(x);
  float w = -std::log((1.0f - a) * (1.0f + a));
  float p;
  if (w < 5.0f) {
    w = w - 2.5f;
    p = kErfInv32Small[0];
    for (int i = 1; i < 9; ++i) p = kErfInv32Small[i] + p * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    p = kErfInv32Large[0];
    for (int i = 1; i < 9; ++i) p = kErfInv32Large[i] + p * w;
  }
  return std::fabs(x) == 1.0f ? x * INFINITY : p * x;
}
inline double scalar(PrimTag<Prim::erf_inv>, double x) {
  const double a = std::fabs(x);
  double w = -std::log((1.0 - a) * (1.0 + a));
  double p;
  if (w < 6.25) {
    w = w - 3.125;
    p = kErfInv64Small[0];
    for (int i = 1; i < 23; ++i) p = kErfInv64Small[i] + p * w;
  } else if (w < 16.0) {
    w = std::sqrt(w) - 3.25;
    p = kErfInv64Mid[0];
    for (int i = 1; i < 19; ++i) p = kErfInv64Mid[i] + p * w;
  } else {
    w = std::sqrt(w) - 5.0;
    p = kErfInv64Large[0];
    for (int i = 1; i < 17; ++i) p = kErfInv64Large[i] + p * w;
  }
  return std::fabs(x) == 1.0 ? x * INFINITY : p * x;
}
// polygamma(n, x) for n = 0 (digamma) and 1 (trigamma): the formula above.
template <class T>
T polygamma_value(int n, T x) {
  const bool reflect = x < T(0.5);
  T z = reflect ? T(1) - x : x;
  T acc = 0;
  for (int i = 0; i < kPolygammaShift; ++i) {
    const bool shift = z < T(kPolygammaFrom);
    acc = acc + (shift ? (n == 0 ? T(1) / z : T(1) / (z * z)) : T(0));
    z = shift ? z + T(1) : z;
  }
  const T r = T(1) / z, r2 = r * r;
  const double* c = n == 0 ? kDigammaSeries : kTrigammaSeries;
  T s = T(c[0]);
  for (int i = 1; i < 8; ++i) s = T(c[i]) + s * r2;
  const T fx = x - std::floor(x);
  const T pif = T(kPi) * (fx > T(0.5) ? fx - T(1) : fx);
  if (n == 0) {
    const T psi = std::log(z) - T(0.5) * r - r2 * s - acc;
    const T reflected = psi - T(kPi) * std::cos(pif) / std::sin(pif);
    const bool pole = x <= T(0) && x == std::floor(x);
    return pole ? std::numeric_limits<T>::quiet_NaN() : reflect ? reflected : psi;
  }
  const T psi1 = r + T(0.5) * r2 + r * r2 * s + acc;
  const T sn = std::sin(pif);
  return reflect ? T(kPi * kPi) / (sn * sn) - psi1 : psi1;
}
auto scalar(PrimTag<Prim::digamma>, auto v) { return polygamma_value(0, v); }
auto scalar(PrimTag<Prim::trigamma>, auto v) { return polygamma_value(1, v); }
auto scalar(PrimTag<Prim::nextafter>, auto a, auto b) { return std::nextafter(a, b); }

// x ** y by JAX's square-and-multiply (its integer_pow lowering): the
// multiplications of the compiled kernel (llvm/lower_expr.hpp), in the same
// order; a negative y is 1 / x ** -y (floats only: the shape rule refuses
// integers), integers wrap.
template <class T>
T integer_pow_value(T x, int y) {
  if (y == 0) return T(1);
  const bool reciprocal = y < 0;
  unsigned n = reciprocal ? 0u - static_cast<unsigned>(y) : static_cast<unsigned>(y);
  bool have = false;
  T acc = T(1);
  while (n > 0) {
    if (n & 1u) acc = have ? wrap_mul(acc, x) : x, have = true;
    n >>= 1;
    if (n > 0) x = wrap_mul(x, x);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (reciprocal) return T(1) / acc;
  } else if constexpr (is_complex_v<T>) {
    if (reciprocal) return complex_div(T(1), acc);
  }
  return acc;
}
inline AnyArray impl_rule(PrimTag<Prim::integer_pow>, const std::vector<AnyArray>& in, const Aval& out,
                          const IntegerPowParams& ip) {
  const int y = ip.y;
  Storage o = alloc_output(out);
  visit_dtype_in<prim_info(Prim::integer_pow).dtypes>(Prim::integer_pow, in[0].dtype(), [&](auto t) {
    using T = decltype(t);
    loop_map(data_as<T>(o), data_as<T>(in[0]), o.size, [y](T v) { return integer_pow_value(v, y); });
  });
  return AnyArray(std::move(o));
}
inline AnyArray impl_rule(PrimTag<Prim::is_finite>, const std::vector<AnyArray>& in, const Aval& out,
                          const NoParams&) {
  Storage o = alloc_output(out);
  visit_dtype_in<prim_info(Prim::is_finite).dtypes>(Prim::is_finite, in[0].dtype(), [&](auto t) {
    using T = decltype(t);
    loop_map(data_as<bool>(o), data_as<T>(in[0]), o.size, [](T v) { return std::isfinite(v); });
  });
  return AnyArray(std::move(o));
}

}  // namespace dyn::detail::kernels

#endif  // DYNSTAGE_IMPLEMENTATION
