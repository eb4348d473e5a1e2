// Reverse mode under dyn::jit (issue 20): jit(grad(f)) compiles the forward
// and backward passes into one kernel per abstract signature and gives the
// numbers of eager grad; every primitive's cotangent program also compiles
// (the primitive table walked through jit(vjp)).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <string>
#include <tuple>

#include "../test_util.hpp"
#include "differences.hpp"

TEST_CASE("grad under jit: one compiled kernel for every batch size, the numbers of eager grad") {
  using dyn::Array;
  auto loss = [](auto w, auto x, auto y) {
    auto pred = dyn::sum(dyn::tanh(dyn::matmul(x, w)), {1});
    return dyn::mean(dyn::square(pred - y));
  };
  auto jg = dyn::jit(dyn::value_and_grad(loss), dyn::polymorphic_shapes{"(3, 4)", "(b, 3)", "(b,)"});
  const Array<double> w = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, 12), {3, 4});
  for (std::int64_t b : {1, 7}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(-2.0, 2.0, 3 * b), {b, 3});
    const Array<double> y = dyn::linspace<double>(0.5, -0.5, b);
    const auto [vj, gj] = jg(w, x, y);
    const auto [ve, ge] = dyn::value_and_grad(loss)(w, x, y);
    CHECK(dyn::allclose(vj, ve, 1e-13));
    CHECK(dyn::allclose(gj, ge, 1e-13));
    // And against central differences, element by element.
    for (std::int64_t i = 0; i < w.size(); ++i) {
      Array<double> wp = w, wm = w;
      wp.mutable_data()[i] += 1e-6;
      wm.mutable_data()[i] -= 1e-6;
      const double fd = (loss(wp, x, y)() - loss(wm, x, y)()) / 2e-6;
      CHECK(gj.data()[i] == doctest::Approx(fd).epsilon(1e-6));
    }
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("grad under jit: grad of grad, and vjp with a traced cotangent, compile and match eager") {
  using dyn::Array;
  auto f = [](auto x) { return dyn::sum(dyn::sin(x) * x * x); };
  auto d2 = [&](auto x) { return dyn::grad([&](auto z) { return dyn::sum(dyn::grad(f)(z)); })(x); };
  const Array<double> x({4}, {-1.0, 0.0, 0.5, 2.0});
  const Array<double> want = d2(x);
  CHECK(dyn::allclose(dyn::jit(d2)(x), want, 1e-13));
  for (std::int64_t i = 0; i < 4; ++i) {
    const double v = x(i);  // d2/dx2 (x^2 sin x) = 2 sin x + 4 x cos x - x^2 sin x
    CHECK(want(i) == doctest::Approx(2 * std::sin(v) + 4 * v * std::cos(v) - v * v * std::sin(v)).epsilon(1e-13));
  }
  auto pull = [](auto x, auto ct) {
    auto [y, f_vjp] = dyn::vjp([](auto a) { return dyn::cumsum(a * a, 0); }, x);
    return std::get<0>(f_vjp(ct));
  };
  const Array<double> ct({4}, {1.0, 0.0, 2.0, 1.0});
  CHECK(dyn::allclose(dyn::jit(pull)(x, ct), pull(x, ct), 1e-14));
  // cumsum's transpose is the reverse cumsum: 2 x_i * sum_{j >= i} ct_j.
  CHECK(test_util::str(pull(x, ct)) == "[-8.  0.  3.  4.]");
}

TEST_CASE("grad through scan under jit: the forward scan and the reversed scan compile, for every length") {
  using dyn::Array;
  auto g = dyn::grad(transform_test::scan_loss, dyn::argnums<0, 1>{});
  auto jg = dyn::jit(g, dyn::polymorphic_shapes{"()", "(n,)"});
  for (std::int64_t n : {1, 6}) {
    Array<double> xs({n});
    for (std::int64_t i = 0; i < n; ++i) xs.mutable_data()[i] = 0.3 * static_cast<double>(i) - 0.5;
    const auto [wj, xj] = jg(0.8, xs);
    const auto [we, xe] = g(0.8, xs);
    CHECK(dyn::allclose(wj, we, 1e-13));
    CHECK(dyn::allclose(xj, xe, 1e-13));
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("grad through for_loop, while_loop and cond under jit: the numbers of eager grad; a while loop's "
          "count is a dynamic length in one kernel for every count") {
  using dyn::Array;
  using namespace transform_test;
  auto jp = dyn::jit(dyn::grad(pow8));
  CHECK(jp(1.1)() == doctest::Approx(8 * std::pow(1.1, 7)).epsilon(1e-13));
  auto jg = dyn::jit(dyn::grad(grow, dyn::argnums<0, 1>{}));
  for (double x : {1.3, 0.2, 12.0}) {  // 4, 8 and 0 iterations
    const auto [gx, gw] = jg(x, 1.7);
    const auto [ex, ew] = dyn::grad(grow, dyn::argnums<0, 1>{})(x, 1.7);
    CAPTURE(x);
    CHECK(gx() == doctest::Approx(ex()).epsilon(1e-14));
    CHECK(gw() == doctest::Approx(ew()).epsilon(1e-14));
  }
  CHECK(jg.stats().compiles == 1);
  auto js = dyn::jit(dyn::grad(spring, dyn::argnums<0, 1>{}));
  const auto [sk, sx] = js(2.0, 0.5);
  const auto [ek, ex] = dyn::grad(spring, dyn::argnums<0, 1>{})(2.0, 0.5);
  CHECK(sk() == doctest::Approx(ek()).epsilon(1e-13));
  CHECK(sx() == doctest::Approx(ex()).epsilon(1e-13));
  auto jc = dyn::jit(dyn::grad(branchy, dyn::argnums<0, 1>{}));
  for (double x : {0.4, -0.4}) {
    const auto [a, b] = jc(x, 3.0);
    CAPTURE(x);
    CHECK(a() == doctest::Approx(x > 0 ? std::cos(x) * 3.0 : 3 * x * x).epsilon(1e-14));
    CHECK(b() == doctest::Approx(x > 0 ? std::sin(x) : 0.0).epsilon(1e-14));
  }
}

TEST_CASE("grad of a while loop under jit, its residual buffers changing size from call to call (the kernels' "
          "pool of temporaries hands freed blocks back): eager's numbers every time") {
  using dyn::Array;
  auto f = [](auto c0, auto w) {
    auto [c, v] = dyn::while_loop([](auto c, auto) { return c < 10.0; })(
        [&](auto c, auto v) { return std::tuple{c * 1.5, dyn::sin(v * w)}; })(c0, w);
    return dyn::sum(v);
  };
  auto jg = dyn::jit(dyn::grad(f, dyn::argnums<1>{}));
  const Array<double> w = dyn::linspace<double>(0.5, 1.5, 50000);
  for (double c0 : {9.0, 1.0, 9.5, 1.0, 2.0}) {  // 1, 6, 1, 6 and 4 iterations
    CAPTURE(c0);
    CHECK(dyn::allclose(jg(c0, w), dyn::grad(f, dyn::argnums<1>{})(c0, w), 1e-13));
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit(vmap(grad)) through a while loop whose count differs per lane: lane by lane eager grad") {
  using dyn::Array;
  using transform_test::grow;
  auto jv = dyn::jit(dyn::vmap(dyn::grad(grow, dyn::argnums<0, 1>{}), {0, dyn::none}));
  const Array<double> xs({4}, {1.3, 0.2, 12.0, 5.0});  // 4, 8, 0 and 2 iterations
  const auto [gx, gw] = jv(xs, 1.7);
  for (std::int64_t i = 0; i < 4; ++i) {
    const auto [ex, ew] = dyn::grad(grow, dyn::argnums<0, 1>{})(xs(i), 1.7);
    CAPTURE(i);
    CHECK(gx(i) == doctest::Approx(ex()).epsilon(1e-14));
    CHECK(gw(i) == doctest::Approx(ew()).epsilon(1e-14));
  }
}

TEST_CASE("a scatter of a literal at a computed index under jit (the fuzzer's seed 109: the gradient of an "
          "element read, scatter-add of 1.0; and a direct .at(i).add/set of a scalar)") {
  using dyn::Array;
  auto f = [](auto v, auto i) { return v.at(i).get(); };
  const Array<double> v({3}, {1.0, 2.0, 3.0});
  auto jg = dyn::jit(dyn::grad(f));
  for (std::int64_t i : {4, 1, -1}) {  // clamped, in range, from the end
    CAPTURE(i);
    CHECK(dyn::array_equal(jg(v, Array<std::int64_t>::scalar(i)), dyn::grad(f)(v, Array<std::int64_t>::scalar(i))));
  }
  auto add = dyn::jit([](auto x, auto i) { return x.at(i).add(1.0); });
  CHECK(test_util::str(add(v, Array<std::int64_t>::scalar(2))) == "[1. 2. 4.]");
  auto set = dyn::jit([](auto n, auto i) { return dyn::isnan(dyn::arange<double>(n)).at(i).set(true); });
  CHECK(test_util::str(set(Array<std::int64_t>::scalar(3), Array<std::int64_t>::scalar(1))) == "[False  True False]");
}

TEST_CASE("checkpoint under jit: the body is inlined (fused with its neighbours); jit(grad) of a checkpointed "
          "layer stack gives eager grad's numbers for every batch size, in one compile") {
  using dyn::Array;
  auto layer = [](auto w, auto h) { return dyn::tanh(dyn::matmul(h, w)); };
  auto loss = [&](auto w1, auto w2, auto x) {
    auto h = dyn::checkpoint(layer)(w1, x);
    h = dyn::checkpoint(layer)(w2, h);
    return dyn::mean(dyn::square(h));
  };
  auto plain = [&](auto w1, auto w2, auto x) { return dyn::mean(dyn::square(layer(w2, layer(w1, x)))); };
  const Array<double> w1 = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, 12), {3, 4});
  const Array<double> w2 = dyn::reshape(dyn::linspace<double>(0.5, -0.7, 8), {4, 2});
  auto jg = dyn::jit(dyn::grad(loss, dyn::argnums<0, 1>{}), dyn::polymorphic_shapes{"(3, 4)", "(4, 2)", "(b, 3)"});
  for (std::int64_t b : {1, 5}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(-2.0, 2.0, 3 * b), {b, 3});
    const auto [g1, g2] = jg(w1, w2, x);
    const auto [e1, e2] = dyn::grad(plain, dyn::argnums<0, 1>{})(w1, w2, x);
    CHECK(dyn::allclose(g1, e1, 1e-13));
    CHECK(dyn::allclose(g2, e2, 1e-13));
  }
  CHECK(jg.stats().compiles == 1);
  // jit of the checkpointed function alone: f's numbers.
  const Array<double> x = dyn::reshape(dyn::linspace<double>(-2.0, 2.0, 6), {2, 3});
  CHECK(dyn::allclose(dyn::jit(loss)(w1, w2, x), plain(w1, w2, x), 1e-14));
  // Inlined: the body's elementwise equations fuse with the add after it
  // into one loop, one buffer (the output), as without checkpoint.
  auto cf = [](auto x) { return dyn::checkpoint([](auto y) { return dyn::tanh(dyn::sin(y) * y); })(x) + 1.0; };
  const std::string ir = dyn::jit(cf).llvm_ir(dyn::linspace<double>(0.0, 1.0, 100));
  for (const char* fused : {"= sin: fused", "= mul: fused", "= tanh: fused", "= add: buffer (output)"})
    CHECK_MESSAGE(ir.find(fused) != std::string::npos, fused);
  std::size_t buffers = 0;
  for (std::size_t p = ir.find(": buffer"); p != std::string::npos; p = ir.find(": buffer", p + 1)) ++buffers;
  CHECK(buffers == 1);
  // A checkpoint inside a scan body (inlined where the body is lowered).
  auto steps = [](auto x) {
    auto body = [&](auto c, auto) {
      auto n = dyn::checkpoint([](auto c, auto x) { return dyn::tanh(dyn::sin(c) * c) + x; })(c, x);
      return std::tuple{n, n};
    };
    auto [c, ys] = dyn::scan(body, x, dyn::zeros<double>({4}));
    return c + dyn::sum(ys);
  };
  CHECK(dyn::jit(dyn::grad(steps))(0.4)() == doctest::Approx(dyn::grad(steps)(0.4)()).epsilon(1e-13));
}

TEST_CASE("grad of a while loop inside a scan under jit: the loop recomputed in the backward pass compiles and "
          "gives eager grad's numbers") {
  using dyn::Array;
  const auto& f = transform_test::while_in_scan;
  auto jg = dyn::jit(dyn::grad(f), dyn::polymorphic_shapes{"()", "(n,)"});
  for (const Array<double>& xs : {Array<double>({3}, {0.5, 0.2, 0.9}), Array<double>({5}, {0.1, 2.5, 0.3, 0.0, 1.1})})
    CHECK(jg(1.5, xs)() == doctest::Approx(dyn::grad(f)(1.5, xs)()).epsilon(1e-13));
  CHECK(jg.stats().compiles == 1);
}
