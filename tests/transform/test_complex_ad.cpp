// Differentiating complex functions (issue 24): JAX's convention
// (docs/transformations.md, "Complex numbers"). Tangents of complex values
// are complex; jvp of a holomorphic f is f'(z) dz, of the others (conj, abs,
// real, imag, angle, complex) the real-linear map; vjp transposes that map
// without conjugating; grad of a real-valued f of z = x + iy is
// df/dx - i df/dy (grad(|z|^2)(z) = 2 conj(z)). Checked against central
// differences in the complex plane (re and im moved separately), against
// hand-computed values, under jit against eager, under vmap, and over the
// primitive table with complex samples.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <string>
#include <tuple>
#include <vector>

#include "../ir/prim_samples.hpp"
#include "../test_util.hpp"
#include "differences.hpp"

namespace {

using dyn::Array;
using c128 = std::complex<double>;
using c64 = std::complex<float>;
using test_util::message_of;
using namespace transform_test;

bool close(c128 a, c128 b, double tol) { return std::abs(a - b) <= tol * (1 + std::abs(b)); }

// The value of a rank-0 array as complex.
template <class T>
c128 value(const Array<T>& a) {
  return c128(a.data()[0]);
}

// jvp of f at z along dz (a scalar function of a c128 scalar) against the
// central difference (f(z + h dz) - f(z - h dz)) / 2h, for dz = 1 and dz = i
// (the real and imaginary parts moved separately).
template <class F>
void check_jvp_fd(const F& f, c128 z, const char* what) {
  CAPTURE(what);
  const double h = 1e-6;
  for (c128 dz : {c128(1, 0), c128(0, 1), c128(0.6, -0.8)}) {
    CAPTURE(dz);
    const Array<c128> zs = Array<c128>::scalar(z), ts = Array<c128>::scalar(dz);
    const auto [y, t] = dyn::jvp(f, std::tuple{zs}, std::tuple{ts});
    const c128 fd = (value(f(Array<c128>::scalar(z + h * dz))) - value(f(Array<c128>::scalar(z - h * dz)))) / (2 * h);
    CHECK(close(value(y), value(f(zs)), 1e-15));
    CHECK(close(value(t), fd, 1e-7));
  }
}

TEST_CASE("complex jvp: holomorphic functions give f'(z) dz (hand-computed derivatives)") {
  const c128 z(0.7, -0.4), dz(0.3, 0.9);
  auto jv = [&](auto f) {
    return value(std::get<1>(dyn::jvp(f, std::tuple{Array<c128>::scalar(z)}, std::tuple{Array<c128>::scalar(dz)})));
  };
  CHECK(close(jv([](auto x) { return x * x; }), 2.0 * z * dz, 1e-15));
  CHECK(close(jv([](auto x) { return 1.0 / x; }), -dz / (z * z), 1e-14));
  CHECK(close(jv([](auto x) { return dyn::exp(x); }), std::exp(z) * dz, 1e-15));
  CHECK(close(jv([](auto x) { return dyn::log(x); }), dz / z, 1e-15));
  CHECK(close(jv([](auto x) { return dyn::sqrt(x); }), dz / (2.0 * std::sqrt(z)), 1e-15));
  CHECK(close(jv([](auto x) { return dyn::sin(x); }), std::cos(z) * dz, 1e-15));
  CHECK(close(jv([](auto x) { return dyn::cos(x); }), -std::sin(z) * dz, 1e-15));
  CHECK(close(jv([](auto x) { return dyn::tanh(x); }), (1.0 - std::tanh(z) * std::tanh(z)) * dz, 1e-14));
  CHECK(close(jv([](auto x) { return dyn::integer_pow(x, 3); }), 3.0 * z * z * dz, 1e-15));
  CHECK(close(jv([](auto x) { return dyn::pow(x, c128(1.5, 0.5)); }),
              c128(1.5, 0.5) * std::pow(z, c128(0.5, 0.5)) * dz, 1e-14));
  CHECK(close(jv([](auto x) { return dyn::pow(c128(2, 1), x); }), std::log(c128(2, 1)) * std::pow(c128(2, 1), z) * dz,
              1e-14));
  // c64: the same rules in single precision
  const auto [y32, t32] = dyn::jvp([](auto x) { return dyn::exp(x * x); }, std::tuple{Array<c64>::scalar(c64(0.5f, 0.25f))},
                                   std::tuple{Array<c64>::scalar(c64(1, 0))});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(t32)>, Array<c64>>);
  CHECK(close(c128(t32.data()[0]), 2.0 * c128(0.5, 0.25) * std::exp(c128(0.5, 0.25) * c128(0.5, 0.25)), 1e-6));
}

TEST_CASE("complex jvp: against central differences in the complex plane (holomorphic and not)") {
  const c128 z(0.7, -0.4);
  check_jvp_fd([](auto x) { return x * x * dyn::exp(x) / (x + 2.0); }, z, "z^2 e^z / (z + 2)");
  check_jvp_fd([](auto x) { return dyn::conj(x); }, z, "conj");
  check_jvp_fd([](auto x) { return dyn::complex(dyn::abs(x), 0.0); }, z, "abs");
  check_jvp_fd([](auto x) { return dyn::complex(dyn::real(x), dyn::imag(x) * 2.0); }, z, "complex(real, 2 imag)");
  check_jvp_fd([](auto x) { return dyn::complex(dyn::angle(x), 0.0); }, z, "angle");
  check_jvp_fd([](auto x) { return x * dyn::conj(x) + dyn::sqrt(dyn::conj(x)); }, z, "z conj(z) + sqrt(conj z)");
  check_jvp_fd([](auto x) { return dyn::tanh(dyn::sin(x) * dyn::cos(dyn::conj(x))); }, z, "tanh(sin z cos conj z)");
  check_jvp_fd([](auto x) { return dyn::pow(x, dyn::conj(x)); }, z, "z ^ conj(z)");
  // Reductions and dot: sum, prod, mean and matmul of arrays built from z.
  check_jvp_fd(
      [](auto x) {
        auto v = dyn::stack({x, x * x, dyn::conj(x) + 1.0});
        return dyn::sum(v * v) + dyn::prod(v) + dyn::mean(v) + dyn::sum(dyn::matmul(dyn::reshape(v, {1, 3}),
                                                                                     dyn::reshape(v, {3, 1})));
      },
      z, "sum, prod, mean, matmul");
}

TEST_CASE("complex jvp: real functions of complex values, and complex functions of real ones") {
  // f: R -> C -> R
  auto f = [](auto x) { return dyn::abs(dyn::exp(dyn::complex(x, 2.0 * x))); };  // e^x
  const auto [y, t] = dyn::jvp(f, std::tuple{Array<double>::scalar(0.3)}, std::tuple{Array<double>::scalar(1.0)});
  CHECK(t.data()[0] == doctest::Approx(std::exp(0.3)).epsilon(1e-14));
  // convert_element_type f64 -> c128 (x * 1i) and back (real)
  auto g = [](auto x) { return x * c128(0, 1); };
  const auto [gy, gt] = dyn::jvp(g, std::tuple{Array<double>::scalar(0.3)}, std::tuple{Array<double>::scalar(2.0)});
  CHECK(value(gt) == c128(0, 2));
  // stop_gradient of a complex value: a constant
  const auto [sy, st] = dyn::jvp([](auto x) { return x * dyn::stop_gradient(x); }, std::tuple{Array<c128>::scalar(c128(1, 2))},
                                 std::tuple{Array<c128>::scalar(c128(1, 0))});
  CHECK(value(st) == c128(1, 2));
  // abs at 0: JAX's rule gives a zero tangent (|z| replaced by 1 in the division)
  const auto [ay, at0] = dyn::jvp([](auto x) { return dyn::abs(x); }, std::tuple{Array<c128>::scalar(c128(0, 0))},
                                  std::tuple{Array<c128>::scalar(c128(1, 1))});
  CHECK(at0.data()[0] == 0.0);
}

TEST_CASE("complex grad: JAX's convention, grad(f)(z) = df/dx - i df/dy for real-valued f (hand-computed)") {
  const c128 z(3, 4);
  auto g = [&](auto f) { return value(dyn::grad(f)(Array<c128>::scalar(z))); };
  CHECK(close(g([](auto x) { return dyn::square(dyn::abs(x)); }), c128(6, -8), 1e-15));  // 2 conj(z)
  CHECK(close(g([](auto x) { return dyn::real(x * dyn::conj(x)); }), c128(6, -8), 1e-15));
  CHECK(close(g([](auto x) { return dyn::real(x * x); }), 2.0 * z, 1e-15));  // x^2 - y^2: 2x + 2iy
  CHECK(close(g([](auto x) { return dyn::abs(x); }), std::conj(z) / 5.0, 1e-15));
  CHECK(close(g([](auto x) { return dyn::imag(x); }), c128(0, -1), 1e-15));
  CHECK(close(g([](auto x) { return dyn::real(x); }), c128(1, 0), 1e-15));
  CHECK(close(g([](auto x) { return dyn::angle(x); }), c128(-4.0 / 25, -3.0 / 25), 1e-15));
  // arrays, and a real argument next to a complex one
  const Array<c128> zs({3}, {c128(1, 2), c128(-0.5, 0.25), c128(0, -1)});
  const Array<double> w({3}, {2, -1, 0.5});
  auto loss = [](auto z, auto w) { return dyn::sum(dyn::square(dyn::abs(z)) * w) + dyn::sum(dyn::real(z) * w * w); };
  const auto [gz, gw] = dyn::grad(loss, dyn::argnums<0, 1>{})(zs, w);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(gz)>, Array<c128>>);
  for (int i = 0; i < 3; ++i) {
    const c128 zi = zs.data()[i];
    const double wi = w.data()[i];
    CHECK(close(gz.data()[i], 2.0 * wi * std::conj(zi) + wi * wi, 1e-14));
    CHECK(gw.data()[i] == doctest::Approx(std::norm(zi) + 2 * wi * zi.real()).epsilon(1e-14));
  }
  // value_and_grad, and the value itself
  const auto [v, vg] = dyn::value_and_grad([](auto x) { return dyn::abs(x); })(Array<c128>::scalar(z));
  CHECK(v.data()[0] == 5.0);
  CHECK(close(value(vg), c128(0.6, -0.8), 1e-15));
}

// grad(f)(z)[k] = df/dx_k - i df/dy_k for a real-valued f of a complex
// array, by central differences of each part of each element.
template <class F>
void check_grad_fd(const F& f, const Array<c128>& z) {
  const Array<c128> g = dyn::grad(f)(z);
  const double h = 1e-6;
  for (std::int64_t k = 0; k < z.size(); ++k) {
    CAPTURE(k);
    c128 want;
    for (c128 d : {c128(1, 0), c128(0, 1)}) {
      std::vector<c128> vp(z.data(), z.data() + z.size()), vm = vp;
      vp[static_cast<std::size_t>(k)] += h * d;
      vm[static_cast<std::size_t>(k)] -= h * d;
      const Array<c128> zp(z.shape(), vp), zm(z.shape(), vm);
      const double fd = (f(zp).data()[0] - f(zm).data()[0]) / (2 * h);
      want += d.real() != 0 ? c128(fd, 0) : c128(0, -fd);
    }
    CHECK(close(g.data()[k], want, 1e-7));
  }
}

TEST_CASE("complex grad: through the layout primitives, select and sort, against central differences") {
  const Array<c128> z({2, 3}, {c128(1, 2), c128(-0.5, 0.25), c128(0, -1), c128(0.3, 0.3), c128(2, -1), c128(-1, -1)});
  check_grad_fd(
      [](auto x) {
        auto t = dyn::transpose(x) * c128(0.5, -1);                          // transpose
        auto r = dyn::reshape(t, {6});                                        // reshape
        auto c = dyn::concatenate({r, dyn::slice(r, {1}, {4})});              // concatenate, slice
        auto p = dyn::pad(c, {{1, 2, 1}}, c128(0, 0));                        // pad
        auto w = dyn::where(dyn::real(p) > 0.1, p * p, dyn::conj(p));         // select_n
        auto b = dyn::broadcast_to(dyn::sum(w), {3}) + dyn::flip(dyn::take(r, Array<std::int32_t>({3}, {5, 0, 2}), 0), 0);
        return dyn::sum(dyn::square(dyn::abs(b))) + dyn::real(dyn::sum(dyn::exp(dyn::conj(x) * 0.3)));
      },
      z);
  check_grad_fd([](auto x) { return dyn::sum(dyn::abs(dyn::sort(dyn::reshape(x, {6})) * c128(1, 1)) *
                                             Array<double>({6}, {1, 2, 3, 4, 5, 6})); },
                z);
}

TEST_CASE("complex grad through control flow: a complex loop carry, a cond of complex operands, a scan (against differences)") {
  const Array<c128> z({2}, {c128(0.3, 0.2), c128(-0.4, 0.1)});
  // z -> z^2 + c three times (a Mandelbrot step), |.|^2 summed
  check_grad_fd([](auto x) {
    auto w = dyn::for_loop(0, 3, 1)([&](auto, auto c) { return c * c + x; })(x);
    return dyn::sum(dyn::square(dyn::abs(w)));
  }, z);
  check_grad_fd([](auto x) {
    auto w = dyn::cond(dyn::real(dyn::sum(x)) > 0.0, [](auto v) { return dyn::exp(v); },
                       [](auto v) { return dyn::conj(v) * v * c128(1, 2); })(x);
    return dyn::sum(dyn::real(w) + dyn::imag(w));
  }, z);
  check_grad_fd([](auto x) {
    auto [c, ys] = dyn::scan([](auto c, auto v) { return std::tuple{c * v + 1.0, dyn::sin(c)}; }, c128(1, 0), x);
    return dyn::abs(c) + dyn::sum(dyn::imag(ys));
  }, z);
}

TEST_CASE("complex grad through fft (its rules, JAX's _fft_transpose_rule): Parseval, central differences, jit") {
  const Array<c128> z({4}, {c128(1, 2), c128(-0.5, 0.25), c128(0, -1), c128(0.3, 0.7)});
  // sum |fft(z)|^2 = N sum |z|^2: grad 2 N conj(z)
  auto parseval = [](auto v) { return dyn::sum(dyn::square(dyn::abs(dyn::fft::fft(v)))); };
  const Array<c128> g = dyn::grad(parseval)(z);
  for (int k = 0; k < 4; ++k) CHECK(close(g.data()[k], 8.0 * std::conj(z.data()[k]), 1e-13));
  check_grad_fd([](auto v) { return dyn::sum(dyn::real(dyn::fft::ifft(v * v)) * Array<double>({4}, {1, -2, 3, 0.5})); },
                z);
  // rfft and irfft of a real x, against central differences
  const Array<double> x({5}, {0.4, -1.2, 2.0, 0.3, -0.7});
  auto h = [](auto v) {
    auto X = dyn::fft::rfft(v);
    return dyn::sum(dyn::imag(X * X) + dyn::abs(X)) + dyn::sum(dyn::fft::irfft(X * c128(0.5, 1), 5) * v);
  };
  const Array<double> gx = dyn::grad(h)(x), gj = dyn::jit(dyn::grad(h))(x);
  for (int k = 0; k < 5; ++k) {
    std::vector<double> p(x.data(), x.data() + 5), m = p;
    p[static_cast<std::size_t>(k)] += 1e-6;
    m[static_cast<std::size_t>(k)] -= 1e-6;
    const double fd = (h(Array<double>({5}, p)).data()[0] - h(Array<double>({5}, m)).data()[0]) / 2e-6;
    CHECK(gx.data()[k] == doctest::Approx(fd).epsilon(1e-7));
    CHECK(gj.data()[k] == doctest::Approx(gx.data()[k]).epsilon(1e-12));
  }
}

TEST_CASE("complex vjp: transposes without conjugation (JAX's rules of lax.py)") {
  const c128 z(0.7, -0.4), c(2, 3), w(0.5, -1.5);
  auto vj = [&](auto f, auto x, auto ct) { return std::get<0>(std::get<1>(dyn::vjp(f, x))(ct)); };
  const Array<c128> zs = Array<c128>::scalar(z), ws = Array<c128>::scalar(w);
  // mul by c: transpose mul by c (not conj(c))
  CHECK(close(value(vj([&](auto x) { return x * c; }, zs, ws)), c * w, 1e-15));
  // holomorphic f: ct f'(z); with ct = 1 that is JAX's grad(f, holomorphic=True)
  CHECK(close(value(vj([](auto x) { return dyn::exp(x) * x; }, zs, Array<c128>::scalar(c128(1, 0)))),
              std::exp(z) * (z + 1.0), 1e-15));
  // conj: conj(ct)
  CHECK(close(value(vj([](auto x) { return dyn::conj(x); }, zs, ws)), std::conj(w), 1e-15));
  // real: complex(ct, 0); imag: complex(0, -ct)
  CHECK(value(vj([](auto x) { return dyn::real(x); }, zs, Array<double>::scalar(2.5))) == c128(2.5, 0));
  CHECK(value(vj([](auto x) { return dyn::imag(x); }, zs, Array<double>::scalar(2.5))) == c128(0, -2.5));
  // complex(x, y): (real ct, -imag ct)
  const auto [cy, cf] = dyn::vjp([](auto x, auto y) { return dyn::complex(x, y); }, Array<double>::scalar(1.0),
                                 Array<double>::scalar(2.0));
  const auto [cx, cyy] = cf(ws);
  CHECK(cx.data()[0] == w.real());
  CHECK(cyy.data()[0] == -w.imag());
  // convert f64 -> c128 transposes to the real part
  CHECK(std::get<0>(std::get<1>(dyn::vjp([](auto x) { return x * c128(0, 1); }, Array<double>::scalar(1.0)))(ws))
            .data()[0] == (c128(0, 1) * w).real());
  // matmul: the transpose of A v in v is A^T ct (not A^H ct)
  const Array<c128> a({2, 2}, {c128(1, 1), c128(2, 0), c128(0, -1), c128(3, 2)});
  const Array<c128> v({2}, {c128(1, 0), c128(0, 1)});
  const Array<c128> ct({2}, {c128(1, -1), c128(2, 0.5)});
  const Array<c128> av = vj([&](auto x) { return dyn::matmul(a, x); }, v, ct);
  for (int j = 0; j < 2; ++j)
    CHECK(close(av.data()[j], a.data()[0 * 2 + j] * ct.data()[0] + a.data()[1 * 2 + j] * ct.data()[1], 1e-15));
}

TEST_CASE("complex grad: grad of grad through complex intermediates, and jacfwd/grad errors") {
  // d/dx |e^{(1+2i) x}|^2 = d/dx e^{2x} = 2 e^{2x}; second derivative 4 e^{2x}
  auto f = [](auto x) { return dyn::square(dyn::abs(dyn::exp(x * c128(1, 2)))); };
  CHECK(dyn::grad(f)(Array<double>::scalar(0.2)).data()[0] == doctest::Approx(2 * std::exp(0.4)).epsilon(1e-13));
  CHECK(dyn::grad(dyn::grad(f))(Array<double>::scalar(0.2)).data()[0] ==
        doctest::Approx(4 * std::exp(0.4)).epsilon(1e-13));
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jacfwd([](auto z) { return dyn::abs(z); })(Array<c64>({3})); }) ==
        "dyn::jacfwd: the argument has type c64[3]; Jacobians of functions of complex arguments are not built (JAX's "
        "holomorphic=True); use dyn::jvp or dyn::vjp");
}

TEST_CASE("complex grad under jit equals eager; vmap of complex functions and of their grads") {
  auto loss = [](auto z, auto w) {
    auto y = dyn::matmul(z, w) + dyn::conj(z) * 0.5;
    return dyn::sum(dyn::square(dyn::abs(dyn::exp(y * 0.1)))) + dyn::real(dyn::sum(y * y));
  };
  const Array<c128> z({2, 2}, {c128(1, 2), c128(-0.5, 0.25), c128(0, -1), c128(0.3, 0.3)});
  const Array<c128> w({2, 2}, {c128(0.2, 0), c128(0, 0.4), c128(-1, 1), c128(0.5, -0.5)});
  const auto ge = dyn::grad(loss, dyn::argnums<0, 1>{})(z, w);
  const auto gj = dyn::jit(dyn::grad(loss, dyn::argnums<0, 1>{}))(z, w);
  for (int i = 0; i < 4; ++i) {
    CHECK(close(std::get<0>(gj).data()[i], std::get<0>(ge).data()[i], 1e-13));
    CHECK(close(std::get<1>(gj).data()[i], std::get<1>(ge).data()[i], 1e-13));
  }
  // jvp under jit
  auto h = [](auto x) { return dyn::sin(x) * dyn::conj(x); };
  const auto [ye, te] = dyn::jvp(h, std::tuple{z}, std::tuple{w});
  const auto [yj, tj] = dyn::jit([&](auto x, auto t) { return dyn::jvp(h, std::tuple{x}, std::tuple{t}); })(z, w);
  for (int i = 0; i < 4; ++i) {
    CHECK(close(yj.data()[i], ye.data()[i], 1e-14));
    CHECK(close(tj.data()[i], te.data()[i], 1e-14));
  }
  // vmap of a complex function and of a grad, row by row
  auto row = [](auto v) { return dyn::sum(dyn::exp(v) * dyn::conj(v)); };
  const Array<c128> vm = dyn::vmap(row)(z);
  auto gr = [](auto v) { return dyn::sum(dyn::abs(v * v)); };
  const Array<c128> vg = dyn::vmap(dyn::grad(gr))(z);
  for (int r = 0; r < 2; ++r) {
    const Array<c128> zr({2}, {z.data()[2 * r], z.data()[2 * r + 1]});
    CHECK(close(vm.data()[r], value(row(zr)), 1e-14));
    const Array<c128> g = dyn::grad(gr)(zr);
    for (int k = 0; k < 2; ++k) {
      CHECK(close(vg.data()[2 * r + k], g.data()[k], 1e-14));
      CHECK(close(g.data()[k], 2.0 * std::conj(zr.data()[k]), 1e-14));  // |z^2| = |z|^2: 2 conj(z)
    }
  }
}

// The primitive table with c128 samples: every primitive that takes
// complex operands (elementwise, reductions, dot_general) differentiated
// along a complex direction against central differences, and its
// transpose by the dot-product test under the pairing Re(sum a b).
TEST_CASE("complex jvp/vjp rules: every complex-capable primitive on c128 samples") {
  using namespace dyn::detail;
  std::string checked;
  for (Prim p : prim_samples::all_prims()) {
    const PrimInfo& info = prim_info(p);
    if (!dtype_in(DType::c128, info.dtypes)) continue;
    prim_samples::OneEqn b;
    std::optional<prim_samples::Sample> s;
    try {
      switch (info.kind) {
        case Kind::unary:
        case Kind::binary: {
          std::vector<Atom> ins;
          for (int k = 0; k < info.arity; ++k) ins.push_back(b.in(DType::c128, {2, 3}));
          Params params = prim_samples::default_params(p);
          if (p == Prim::conj) params = ConjParams{DType::c128};
          if (p == Prim::integer_pow) params = IntegerPowParams{3};
          s = b.eqn(p, ins, params);
          break;
        }
        case Kind::reduction: s = b.eqn(p, {b.in(DType::c128, {2, 3})}, ReduceParams{{1}}); break;
        case Kind::contraction:
          s = b.eqn(p, {b.in(DType::c128, {2, 3}), b.in(DType::c128, {3, 2})}, DotGeneralParams{{1}, {0}, {}, {}});
          break;
        default: continue;
      }
    } catch (const dyn::TypeError&) {
      continue;  // the dtype rule refuses c128 (sign, ...)
    }
    CAPTURE(std::string(prim_name(p)));
    const Jaxpr& j = *s->jaxpr.jaxpr;
    bool diff_out = false;
    for (const Atom& o : j.outvars) diff_out = diff_out || differentiable_dtype(j.type_of(o).dtype);
    if (!diff_out) continue;  // eq, ne
    checked += std::string(checked.empty() ? "" : " ") + std::string(prim_name(p));
    std::vector<Value> args;
    std::vector<Tangent> tangents;
    std::vector<AnyArray> dirs, plus, minus;
    const double h = 1e-5;
    for (std::size_t k = 0; k < s->args.size(); ++k) {
      args.push_back(Value{s->args[k], nullptr, false});
      dirs.push_back(direction(s->args[k], static_cast<int>(k)));
      tangents.emplace_back(Value{dirs.back(), nullptr, false});
      plus.push_back(shifted(s->args[k], dirs[k], h));
      minus.push_back(shifted(s->args[k], dirs[k], -h));
    }
    const JvpOut r = jvp_eval(j, {}, args, tangents);
    if (p == Prim::stop_gradient) {  // a constant to every derivative, complex values too
      CHECK(!r.tangents.at(0).has_value());
      continue;
    }
    const std::vector<AnyArray> fp = dyn::eval_jaxpr(s->jaxpr, plus), fm = dyn::eval_jaxpr(s->jaxpr, minus);
    const AnyArray t = jvp_detail::fit(*r.tangents.at(0), r.primals[0].shape()).array;
    for (std::int64_t i = 0; i < t.size(); ++i) {
      CAPTURE(i);
      const double re = (at(fp[0], i) - at(fm[0], i)) / (2 * h), im = (at_im(fp[0], i) - at_im(fm[0], i)) / (2 * h);
      CHECK(std::abs(at(t, i) - re) <= 1e-6 * (1 + std::abs(re)));
      CHECK(std::abs(at_im(t, i) - im) <= 1e-6 * (1 + std::abs(im)));
    }
    // <u, J v> == <J^T u, v>, the pairing Re(sum a b).
    TracedFn tf;
    tf.jaxpr = std::make_shared<Jaxpr>(j);
    const Linearized l = linearize(tf, args, std::vector<char>(args.size(), 1));
    const AnyArray u = direction(l.primals_out[0].array, 10);
    const std::vector<Tangent> jv = linear_apply(l, tangents);
    const std::vector<Tangent> jtu = linear_transpose(l, {Tangent(Value{u, nullptr, false})});
    auto pair = [](const AnyArray& a, const AnyArray& c) {
      double sum = 0;
      for (std::int64_t i = 0; i < a.size(); ++i) sum += at(a, i) * at(c, i) - at_im(a, i) * at_im(c, i);
      return sum;
    };
    const double lhs = pair(u, jvp_detail::fit(*jv[0], l.primals_out[0].shape()).array);
    double rhs = 0;
    for (std::size_t k = 0; k < jtu.size(); ++k) {
      REQUIRE(jtu[k].has_value());
      CHECK(jtu[k]->dtype() == DType::c128);
      rhs += pair(jvp_detail::fit(*jtu[k], args[k].shape()).array, dirs[k]);
    }
    CHECK(std::abs(lhs - rhs) <= 1e-10 * (1 + std::abs(lhs)));
  }
  CHECK(checked ==
        "neg abs exp log sqrt sin cos tanh square stop_gradient integer_pow real imag conj add sub mul div pow "
        "reduce_sum reduce_prod dot_general");
}

}  // namespace
