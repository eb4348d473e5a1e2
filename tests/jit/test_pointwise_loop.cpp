// Pointwise loops, strip-mined (llvm/lower_pointwise.hpp): a for_loop whose
// body computes each element of its carries from the same element of the
// carries and array constants runs the whole loop per block of elements,
// in L1, instead of one pass over the arrays per iteration. Checked: which
// loops qualify (the plan-level test on the jaxpr the backend lowers), and
// values equal to eager's (bit for bit where the body has no libmvec
// function),
// with partial last blocks, several carries of several dtypes, the index
// and scalar constants in the body, zero trips, negative steps, results
// that are the kernel's own outputs, and a loop whose result feeds more code.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>
#include <dynstage/llvm/canonicalize.hpp>
#include <dynstage/llvm/lower_pointwise.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;
using c128 = std::complex<double>;

// Whether the backend lowers f's for_loop as a pointwise loop (the jaxpr it
// lowers: canonicalize_dots' rewrites first). `opts`: make_jaxpr's options.
template <class F, class... O>
auto pointwise(const F& f, O... opts) {
  return [=](const auto&... args) {
    const dyn::Jaxpr j = dyn::detail::canonicalize_dots(*dyn::make_jaxpr(f, opts...)(args...).jaxpr);
    for (const auto& e : j.eqns)
      if (e.prim == dyn::detail::Prim::for_loop) return dyn::detail::is_pointwise_loop(j, e);
    return false;
  };
}

template <class T>
Array<T> ramp(std::vector<i64> shape, double scale) {
  Array<T> a(shape);
  for (i64 i = 0; i < a.size(); ++i) a.mutable_data()[i] = static_cast<T>(std::sin(scale * static_cast<double>(i) + 0.3));
  return a;
}

using test_util::vals;

// Escape counts with complex arithmetic (bench_mandelbrot.cpp's kernel).
auto mandel = [](auto c) {
  auto [z, n] = dyn::for_loop(0, 30, 1)([&](auto, auto z, auto n) {
    auto inside = dyn::abs(z) <= 2.0;
    return std::tuple{dyn::where(inside, z * z + c, z), n + dyn::astype<std::int32_t>(inside)};
  })(dyn::zeros_like(c), dyn::zeros<std::int32_t>(c.shape()));
  return n;
};

Array<c128> plane(i64 rows, i64 cols) {
  Array<c128> c({rows, cols});
  for (i64 i = 0; i < rows; ++i)
    for (i64 k = 0; k < cols; ++k)
      c.mutable_data()[i * cols + k] = c128(-2.0 + 2.5 * static_cast<double>(k) / static_cast<double>(cols - 1),
                                            -1.25 + 2.5 * static_cast<double>(i) / static_cast<double>(rows - 1));
  return c;
}

}  // namespace

TEST_CASE("pointwise loops: a Mandelbrot loop qualifies and its counts equal eager's, partial last block included") {
  for (i64 side : {i64{23}, i64{32}, i64{45}}) {  // 529, 1024 (four whole blocks), 2025 elements
    const Array<c128> c = plane(side, side);
    CHECK(pointwise(mandel)(c));
    const Array<std::int32_t> want = mandel(c);
    CHECK(vals(dyn::jit(mandel)(c)) == vals(want));
    i64 in_set = 0;
    for (i64 i = 0; i < want.size(); ++i) in_set += want.data()[i] == 30;
    CHECK(in_set > 0);            // the set's points stay 30 iterations
    CHECK(in_set < want.size());  // and the others escape
  }
}

TEST_CASE("pointwise loops: the index, scalar constants, several carries of several dtypes, all returned") {
  auto f = [](auto x, auto a, auto s) {
    return dyn::for_loop(0, 17, 2)([&](auto i, auto u, auto k, auto flag) {
      auto u2 = u * s + a * dyn::astype<double>(i) - dyn::sin(u);
      auto k2 = k + dyn::astype<std::int64_t>(u2 > 0.0);
      return std::tuple{u2, k2, flag ^ (u2 < a)};
    })(x, dyn::zeros<std::int64_t>(x.shape()), x > 0.0);
  };
  const Array<double> x = ramp<double>({3, 301}, 0.37), a = ramp<double>({3, 301}, 0.11);
  const Array<double> s = Array<double>::scalar(0.75);
  CHECK(pointwise(f)(x, a, s));
  auto [u, k, flag] = dyn::jit(f)(x, a, s);
  auto [u0, k0, flag0] = f(x, a, s);
  CHECK(dyn::allclose(u, u0, 1e-12, 1e-12));  // sin: libmvec under jit (lower_expr.hpp)
  CHECK(vals(k) == vals(k0));
  CHECK(vals(flag) == vals(flag0));
}

TEST_CASE("pointwise loops: zero trips and a negative step give eager's results") {
  for (auto [lo, hi, st] : {std::tuple{i64{5}, i64{5}, i64{1}}, std::tuple{i64{9}, i64{0}, i64{-3}}}) {
    auto f = [lo, hi, st](auto x) {
      return dyn::for_loop(lo, hi, st)([](auto i, auto u) { return u * 0.5 + dyn::astype<double>(i); })(x);
    };
    const Array<double> x = ramp<double>({1000}, 0.01);
    CHECK(pointwise(f)(x));
    CHECK(vals(dyn::jit(f)(x)) == vals(f(x)));
  }
}

TEST_CASE("pointwise loops: a block stops at a fixed point only when the body does not read the index") {
  // u' = u * 0 + i: unchanged by iteration 0 (from zeros), changed by the next
  auto with_index = [](auto x) {
    return dyn::for_loop(0, 5, 1)([](auto i, auto u) { return u * 0.0 + dyn::astype<double>(i); })(x);
  };
  const Array<double> zeros = dyn::zeros<double>({1000});
  CHECK(vals(dyn::jit(with_index)(zeros)) == std::vector<double>(1000, 4.0));
  // halving to zero: every element reaches 0 (a fixed point) long before
  // the 2000th iteration, some blocks sooner than others
  auto halve = [](auto x) {
    return dyn::for_loop(0, 2000, 1)([](auto, auto u, auto k) {
      return std::tuple{u * 0.5, k + dyn::astype<std::int32_t>(u != 0.0)};
    })(x, dyn::zeros<std::int32_t>(x.shape()));
  };
  Array<double> x({1000});
  for (i64 i = 0; i < 1000; ++i) x.mutable_data()[i] = i < 600 ? 0.0 : std::ldexp(1.0, static_cast<int>(i % 700));
  auto [u, k] = dyn::jit(halve)(x);
  auto [u0, k0] = halve(x);
  CHECK(vals(u) == vals(u0));
  CHECK(vals(k) == vals(k0));
  CHECK(k0.data()[999] == 299 + 1075);  // 2^299 (999 % 700) halves to the smallest subnormal, then to 0
}

TEST_CASE("pointwise loops: a result read by more code, and a loop over an input updated in place") {
  auto f = [](auto x) {
    auto y = dyn::for_loop(0, 8, 1)([](auto, auto u) { return dyn::cos(u) + 0.25 * u; })(x);
    return std::tuple{dyn::sum(y), y * 2.0};
  };
  const Array<double> x = ramp<double>({777}, 0.05);
  auto [s, y2] = dyn::jit(f)(x);
  auto [s0, y20] = f(x);
  CHECK(dyn::allclose(y2, y20, 1e-12, 1e-12));  // cos: libmvec under jit
  CHECK(s() == doctest::Approx(s0()).epsilon(1e-13));  // the jit's sum vectorises (lower_expr.hpp)
  // a donated argument
  auto g = [](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto u) { return u * u - 1.0; })(x); };
  const Array<double> want = g(x);
  Array<double> xd = Array<double>(x);
  const Array<double> r = dyn::jit(g, dyn::donate_argnums<0>{})(std::move(xd));
  CHECK(vals(r) == vals(want));
}

TEST_CASE("pointwise loops: what does not qualify is lowered as before") {
  const Array<double> x = ramp<double>({1000}, 0.02);
  // a reduction in the body
  auto red = [](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto u) { return u - dyn::sum(u) * 1e-3; })(x); };
  CHECK(!pointwise(red)(x));
  CHECK(dyn::allclose(dyn::jit(red)(x), red(x), 1e-12, 1e-12));
  // a layout change in the body (a shift)
  auto shift = [](auto x) {
    return dyn::for_loop(0, 3, 1)([](auto, auto u) { return dyn::concatenate({dyn::slice(u, {1}, {1000}), dyn::slice(u, {0}, {1})}, 0); })(x);
  };
  CHECK(!pointwise(shift)(x));
  CHECK(vals(dyn::jit(shift)(x)) == vals(shift(x)));
  // too small to split into blocks
  auto small = [](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto u) { return u * 2.0; })(x); };
  CHECK(!pointwise(small)(ramp<double>({100}, 0.1)));
  // symbolic sizes: pointwise, whatever the size turns out to be
  CHECK(pointwise(small, dyn::polymorphic_shapes{"(n,)"})(x));
  auto jf = dyn::jit(small, dyn::polymorphic_shapes{"(n,)"});
  CHECK(vals(jf(x)) == vals(small(x)));
}

TEST_CASE("pointwise loops: symbolic sizes, one kernel for every size (the Mandelbrot of lesson 7)") {
  const Array<c128> c = plane(23, 45);
  CHECK(pointwise(mandel, dyn::polymorphic_shapes{"(h, w)"})(c));
  auto jm = dyn::jit(mandel, dyn::polymorphic_shapes{"(h, w)"});
  for (auto [h, w] : {std::pair<i64, i64>{23, 45}, {40, 40}, {1, 3}, {7, 300}}) {
    const Array<c128> ch = plane(h, w);
    CHECK(vals(jm(ch)) == vals(mandel(ch)));
  }
  CHECK(jm.stats().compiles == 1);
  // a scalar constant and the index, with a symbolic length
  auto f = [](auto x, auto s) {
    return dyn::for_loop(0, 9, 1)([&](auto i, auto u) { return u * s + dyn::astype<double>(i) * 0.125; })(x);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)", "()"});
  for (i64 n : {i64{1}, i64{255}, i64{256}, i64{257}, i64{5000}}) {  // (a dimension variable is >= 1)
    const Array<double> x = ramp<double>({n}, 0.3), s = Array<double>::scalar(0.9);
    CHECK(vals(jf(x, s)) == vals(f(x, s)));
  }
  CHECK(jf.stats().compiles == 1);
}
