// dyn::jit on complex element types (issue 24, part 1): every complex
// operation compiled agrees with eager (the reference) and with
// hand-computed values, and the compiled loops are vectorised with the
// complex product and quotient inlined (no __mulsc3 / __divsc3 calls).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

using test_util::vals;

// n values spread over the plane (no zeros), in dtype C.
template <class C>
Array<C> plane(std::int64_t n, double salt) {
  using R = typename C::value_type;
  std::vector<C> v;
  for (std::int64_t i = 0; i < n; ++i)
    v.push_back(C(static_cast<R>(std::sin(1.3 * static_cast<double>(i) + salt) * 2.5 + 0.1),
                  static_cast<R>(std::cos(0.7 * static_cast<double>(i) - salt) * 1.5 - 0.05)));
  return Array<C>({n}, v);
}

template <class C>
void check_elementwise(double tol) {
  const Array<C> x = plane<C>(37, 0.2), y = plane<C>(37, 1.1);
  const Array<typename C::value_type> r = dyn::real(plane<C>(37, 2.0));
  auto f = [](auto x, auto y, auto r) {
    return std::tuple{x + y, x - y, x * y, x / y, -x, x * r + 2.0, x == y, x != x,
                      dyn::abs(x), dyn::real(x), dyn::imag(x), dyn::conj(x), dyn::angle(x),
                      dyn::complex(r, r * 2), dyn::exp(x), dyn::log(x), dyn::sqrt(x), dyn::pow(x, y),
                      dyn::sin(x), dyn::cos(x), dyn::tanh(x), dyn::integer_pow(x, 3), dyn::integer_pow(x, -2),
                      dyn::square(x), dyn::astype<C>(r), dyn::sum(x * y), dyn::prod(x / dyn::abs(x)), dyn::mean(x)};
  };
  const auto eager = f(x, y, r);
  const auto compiled = dyn::jit(f)(x, y, r);
  int k = 0;
  auto cmp = [&](const auto& e, const auto& c) {
    CAPTURE(k);
    CHECK(dyn::allclose(c, e, tol, tol));
    ++k;
  };
  std::apply([&](const auto&... e) { std::apply([&](const auto&... c) { (cmp(e, c), ...); }, compiled); }, eager);
}

TEST_CASE_TEMPLATE("jit complex: every elementwise operation and reduction agrees with eager", C, c64, c128) {
  check_elementwise<C>(std::is_same_v<C, c64> ? 2e-5 : 1e-12);
}

TEST_CASE("jit complex: hand-computed values") {
  const Array<c64> a({2}, {c64(1, 2), c64(-3, 0.5f)});
  const Array<c64> b({2}, {c64(3, -1), c64(0, 2)});
  auto jf = dyn::jit([](auto a, auto b) { return std::tuple{a * b, a / b, dyn::abs(a * b)}; });
  const auto [m, d, ab] = jf(a, b);
  CHECK(vals(m) == std::vector<c64>{c64(5, 5), c64(-1, -6)});  // exact: no rounding in these products
  CHECK(dyn::allclose(d, Array<c64>({2}, {c64(0.1f, 0.7f), c64(0.25f, 1.5f)}), 1e-6, 1e-7));
  CHECK(dyn::allclose(ab, Array<float>({2}, {static_cast<float>(std::sqrt(50.0)), static_cast<float>(std::sqrt(37.0))}),
                      1e-6));
  // Smith's division does not overflow
  const Array<c128> big({1}, {c128(1e300, 1e300)});
  CHECK(vals(dyn::jit([](auto z) { return z / z; })(big)) == std::vector<c128>{c128(1, 0)});
  // a complex literal in a compiled kernel
  CHECK(vals(dyn::jit([](auto z) { return z * c128(0, 1) + 1; })(a)) == std::vector<c64>{c64(-1, 1), c64(0.5f, -3)});
  // matmul, dot, einsum
  const Array<c64> m2({2, 2}, {c64(1, 1), c64(2, 0), c64(0, 0), c64(0, 1)});
  const Array<c64> v({2}, {c64(0, 1), c64(1, 0)});
  auto mm = dyn::jit([](auto m, auto v) { return std::tuple{dyn::matmul(m, v), dyn::matmul(m, m), dyn::dot(v, v)}; });
  const auto [mv, mmm, vv] = mm(m2, v);
  CHECK(vals(mv) == std::vector<c64>{c64(1, 1), c64(0, 1)});
  // [[1+i, 2], [0, i]]^2 = [[(1+i)^2, 2(1+i) + 2i], [0, -1]] = [[2i, 2+4i], [0, -1]]
  CHECK(vals(mmm) == std::vector<c64>{c64(0, 2), c64(2, 4), c64(0, 0), c64(-1, 0)});
  CHECK(vals(vv) == std::vector<c64>{c64(0, 0)});
}

TEST_CASE("jit complex: larger products agree with eager (the loop nest, transposed operands)") {
  const Array<c128> a = dyn::reshape(plane<c128>(12 * 9, 0.3), {12, 9});
  const Array<c128> b = dyn::reshape(plane<c128>(9 * 7, 0.8), {9, 7});
  auto f = [](auto a, auto b) {
    return std::tuple{dyn::matmul(a, b), dyn::matmul(dyn::transpose(a), a), dyn::einsum("ij,kj->ik", b, b)};
  };
  const auto e = f(a, b);
  const auto c = dyn::jit(f)(a, b);
  CHECK(dyn::allclose(std::get<0>(c), std::get<0>(e), 1e-12, 1e-12));
  CHECK(dyn::allclose(std::get<1>(c), std::get<1>(e), 1e-12, 1e-12));
  CHECK(dyn::allclose(std::get<2>(c), std::get<2>(e), 1e-12, 1e-12));
}

TEST_CASE("jit complex: a matrix-vector product whose lhs is a fused expression (the fuzzer's seed 745)") {
  // The lhs square(z) fuses into the matvec nest (fusion.hpp, dot_fuses_lhs),
  // which multiplied and added complex values as integers (invalid IR).
  const Array<double> a({1, 3}, {-7.2254614365438394, -12.620543671428836, -0.43227847532770075});
  auto f = [](auto x) {
    const auto z = dyn::complex(x, x);
    return dyn::matmul(dyn::square(z), dyn::transpose(z)) + dyn::matmul(z * c128(0, 1), dyn::transpose(z));
  };
  const Array<c128> e = f(a), c = dyn::jit(f)(a);
  CHECK(c.shape() == std::vector<std::int64_t>{1, 1});
  CHECK(c.data()[0] == e.data()[0]);  // the same products and sums in the same order: bit for bit
}

TEST_CASE("jit complex: a fused lhs read transposed, contracting its first axis (the fuzzer's seed 24056)") {
  // x^T y with a fused complex x (the form of a product's gradient,
  // jit(grad) of seed 24056): the axpy nest over the stored rows
  // (lower_dot.hpp, emit_matvec_t_of) multiplied and added complex values
  // as integers (invalid IR).
  const Array<double> a({2, 3}, {-1.59, 2.14, 7.31, 0.5, -2.25, 1.5});
  const Array<c128> y({2, 1}, {c128(0.75, -1.25), c128(-0.5, 2.0)});
  auto f = [](auto x, auto y) {
    const auto z = dyn::complex(x, x * 0.5);
    return dyn::dot_general(dyn::integer_pow(z, 3), y, {{0}, {0}}, {{}, {}});
  };
  const Array<c128> e = f(a, y), c = dyn::jit(f)(a, y);
  REQUIRE(c.shape() == std::vector<std::int64_t>{3, 1});
  // Each element is one sum over k in order, of the same inlined products: bit for bit.
  for (std::int64_t i = 0; i < 3; ++i) CHECK(c.data()[i] == e.data()[i]);
}

// A Mandelbrot iteration with complex arithmetic: a complex loop carry,
// where (select_n on complex values), abs.
TEST_CASE("jit complex: a Mandelbrot set in a for_loop, eager and compiled alike") {
  auto mandel = [](auto c) {
    auto z = dyn::for_loop(0, 30, 1)([&](auto, auto z) { return dyn::where(dyn::abs(z) <= 2.0f, z * z + c, z); })(
        dyn::zeros_like(c));
    return dyn::abs(z) <= 2.0f;
  };
  // c = 0, -1, i, -2 are in the set; 1, 0.5, 2i, -2.5 are not
  const Array<c64> pts({8}, {c64(0, 0), c64(-1, 0), c64(0, 1), c64(-2, 0), c64(1, 0), c64(0.5f, 0), c64(0, 2),
                             c64(-2.5f, 0)});
  const std::vector<bool> want{true, true, true, true, false, false, false, false};
  CHECK(vals(mandel(pts)) == want);
  CHECK(vals(dyn::jit(mandel)(pts)) == want);
  std::vector<c64> grid;
  for (int i = 0; i < 24; ++i)
    for (int k = 0; k < 24; ++k) grid.push_back(c64(-2.0f + 2.5f * static_cast<float>(k) / 23, -1.25f + 2.5f * static_cast<float>(i) / 23));
  const Array<c64> g({24, 24}, grid);
  CHECK(vals(dyn::jit(mandel)(g)) == vals(mandel(g)));  // the same operations, bit for bit
}

TEST_CASE("jit complex: multiply and divide are inlined and vectorised") {
  auto jf = dyn::jit([](auto a, auto b) { return a * b + a / b; });
  const Array<c64> x = plane<c64>(1024, 0.1), y = plane<c64>(1024, 0.9);
  const std::string ir = jf.llvm_ir(x, y);
  CHECK(ir.find("__mulsc3") == std::string::npos);
  CHECK(ir.find("__divsc3") == std::string::npos);
  CHECK(ir.find("x float>") != std::string::npos);  // vectors of parts
  CHECK(dyn::allclose(jf(x, y), x * y + x / y, 1e-6, 1e-6));
}

}  // namespace
