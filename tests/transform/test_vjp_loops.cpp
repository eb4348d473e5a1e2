// Reverse mode through for_loop, while_loop, cond and switch_ (issue 20,
// API.md section 14: "Reverse mode differentiates through for_loop, scan,
// cond, switch_ and while_loop (the forward iterates are kept in a buffer
// whose length is a dynamic dimension)"). Gradients against hand-computed
// values and central differences; the printed programs pass check_jaxpr;
// a dynamic trip count and a while loop's count flow as dynamic lengths.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>

#include "../test_util.hpp"
#include "differences.hpp"

using dyn::Array;
using test_util::message_of;
using test_util::str;
using transform_test::branchy;
using transform_test::grow;
using transform_test::pow8;
using transform_test::spring;

namespace {

double fd(const std::function<double(double)>& g, double x) { return (g(x + 1e-6) - g(x - 1e-6)) / 2e-6; }

// Iterations i = 5, 3, 1 of c -> c x + i from c = 1: x^3 + 5 x^2 + 3 x + 1.
auto down = [](auto x) {
  return dyn::for_loop(5, 0, -2)([&](auto i, auto c) { return c * x + dyn::astype<double>(i); })(1.0);
};

}  // namespace

TEST_CASE("grad through for_loop: x^8 (8 x^7), a negative step (hand-computed), the index read by the body") {
  CHECK(dyn::grad(pow8)(1.1)() == doctest::Approx(8 * std::pow(1.1, 7)).epsilon(1e-13));
  const double x = 0.7;
  CHECK(dyn::grad(down)(x)() == doctest::Approx(3 * x * x + 10 * x + 3).epsilon(1e-13));
  // A vector carry and a closed-over vector; the index scales the input.
  auto f = [](auto x) {
    auto c = dyn::for_loop(1, 4, 1)([&](auto i, auto c) { return dyn::sin(c * x * dyn::astype<double>(i)) + x; })(x);
    return dyn::sum(c * c);
  };
  const Array<double> x0({3}, {0.3, -0.5, 0.8});
  const Array<double> g = dyn::grad(f)(x0);
  for (std::int64_t i = 0; i < 3; ++i) {
    auto at_i = [&](double val) {
      Array<double> v = x0;
      v.mutable_data()[i] = val;
      return f(v)();
    };
    CAPTURE(i);
    CHECK(g(i) == doctest::Approx(fd(at_i, x0(i))).epsilon(1e-8));
  }
}

TEST_CASE("grad through for_loop: make_jaxpr prints the loop as a forward scan of its trip count and a reversed "
          "scan; a traced upper bound is a dynamic length (length=None); check_jaxpr passes") {
  const auto cj = dyn::make_jaxpr(dyn::grad(pow8))(1.1);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::string s = str(cj);
  CHECK(s.find("length=3") != std::string::npos);
  CHECK(s.find("reverse=True") != std::string::npos);
  CHECK(s.find("for_loop") == std::string::npos);
  // x^n: n x^(n-1), n traced.
  auto power = [](auto x, auto n) { return dyn::for_loop(0, n, 1)([&](auto, auto c) { return c * x; })(1.0 + 0.0 * x); };
  const auto cn = dyn::make_jaxpr(dyn::grad(power))(1.3, Array<std::int64_t>::scalar(3));
  CHECK_NOTHROW(dyn::check_jaxpr(cn));
  CHECK(str(cn).find("length=None") != std::string::npos);
  for (std::int64_t n : {0, 1, 4}) {
    const double got = dyn::eval_jaxpr(cn, {dyn::AnyArray(Array<double>::scalar(1.3)),
                                            dyn::AnyArray(Array<std::int64_t>::scalar(n))})
                           .back()
                           .get<double>()();
    CAPTURE(n);
    CHECK(got == doctest::Approx(n == 0 ? 0.0 : static_cast<double>(n) * std::pow(1.3, n - 1)).epsilon(1e-13));
    CHECK(got == doctest::Approx(dyn::grad(power)(1.3, Array<std::int64_t>::scalar(n))()).epsilon(1e-15));
  }
}

TEST_CASE("grad(grad(f)) through for_loop: 56 x^6") {
  CHECK(dyn::grad(dyn::grad(pow8))(1.1)() == doctest::Approx(56 * std::pow(1.1, 6)).epsilon(1e-12));
}

TEST_CASE("grad through while_loop: x w^N with N counted in the forward pass (hand-computed), unlike JAX") {
  // From x = 1.3, w = 1.7: 1.3, 2.21, 3.757, 6.3869, 10.85773: N = 4.
  const auto [gx, gw] = dyn::grad(grow, dyn::argnums<0, 1>{})(1.3, 1.7);
  CHECK(gx() == doctest::Approx(std::pow(1.7, 4)).epsilon(1e-13));
  CHECK(gw() == doctest::Approx(4 * 1.3 * std::pow(1.7, 3)).epsilon(1e-13));
  // No iteration: the identity.
  CHECK(dyn::grad(grow)(12.0, 1.7)() == 1.0);
}

TEST_CASE("grad through while_loop: a spring simulation against central differences (1e-7); the program keeps "
          "the iterates in buffers of a dynamic length and passes check_jaxpr") {
  const auto [gk, gx] = dyn::grad(spring, dyn::argnums<0, 1>{})(2.0, 0.5);
  CHECK(gk() == doctest::Approx(fd([](double k) { return spring(k, 0.5)(); }, 2.0)).epsilon(1e-7));
  CHECK(gx() == doctest::Approx(fd([](double x) { return spring(2.0, x)(); }, 0.5)).epsilon(1e-7));
  const auto cj = dyn::make_jaxpr(dyn::grad(spring, dyn::argnums<0, 1>{}))(2.0, 0.5);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::string s = str(cj);
  CHECK(s.find("while_loop") != std::string::npos);
  CHECK(s.find("length=None") != std::string::npos);
  CHECK(s.find("reverse=True") != std::string::npos);
  const auto out = dyn::eval_jaxpr(cj, {dyn::AnyArray(Array<double>::scalar(2.0)), dyn::AnyArray(Array<double>::scalar(0.5))});
  CHECK(out.at(0).get<double>()() == doctest::Approx(gk()).epsilon(1e-14));
  CHECK(out.at(1).get<double>()() == doctest::Approx(gx()).epsilon(1e-14));
}

TEST_CASE("grad through cond: each branch's derivative, residuals of different branches; hessian") {
  const auto& f = branchy;
  const auto [a, b] = dyn::grad(f, dyn::argnums<0, 1>{})(0.4, 3.0);
  CHECK(a() == doctest::Approx(std::cos(0.4) * 3.0).epsilon(1e-14));
  CHECK(b() == doctest::Approx(std::sin(0.4)).epsilon(1e-14));
  const auto [c, d] = dyn::grad(f, dyn::argnums<0, 1>{})(-0.4, 3.0);
  CHECK(c() == doctest::Approx(3 * 0.16).epsilon(1e-14));
  CHECK(d() == 0.0);
  CHECK(dyn::hessian([&](auto x) { return f(x, 3.0); })(-0.4)() == doctest::Approx(6 * -0.4).epsilon(1e-12));
  const auto cj = dyn::make_jaxpr(dyn::grad(f, dyn::argnums<0, 1>{}))(0.4, 3.0);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  for (double x : {0.4, -0.4}) {
    const auto out = dyn::eval_jaxpr(cj, {dyn::AnyArray(Array<double>::scalar(x)), dyn::AnyArray(Array<double>::scalar(3.0))});
    CAPTURE(x);
    CHECK(out.at(0).get<double>()() == doctest::Approx(x > 0 ? std::cos(x) * 3.0 : 3 * x * x).epsilon(1e-14));
  }
}

TEST_CASE("grad through switch_: three branches on vectors, the index clamped (against central differences)") {
  auto f = [](auto i, auto x) {
    auto y = dyn::switch_(i, [](auto v) { return dyn::sin(v) * v; }, [](auto v) { return v * v; },
                          [](auto v) { return dyn::exp(v) + 1.0; })(x);
    return dyn::sum(y * x);
  };
  const Array<double> x0({2}, {0.3, -0.6});
  for (int i : {-1, 0, 1, 2, 5}) {
    const Array<double> g = dyn::grad(f, dyn::argnums<1>{})(i, x0);
    for (std::int64_t k = 0; k < 2; ++k) {
      auto at_k = [&](double val) {
        Array<double> v = x0;
        v.mutable_data()[k] = val;
        return f(i, v)();
      };
      CAPTURE(i);
      CAPTURE(k);
      CHECK(g(k) == doctest::Approx(fd(at_k, x0(k))).epsilon(1e-8));
    }
  }
}

TEST_CASE("reverse mode through a loop whose carried sizes change: a TypeError naming the loop and the fix") {
  auto f = [](auto x, auto n) {
    auto a = dyn::for_loop(0, 2, 1, {.preserve_dimensions = false})(
        [](auto, auto a) { return dyn::concatenate({a, a}); })(x * dyn::ones<double>({n}));
    return dyn::sum(a);
  };
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr(dyn::grad(f))(1.5, Array<std::int64_t>::scalar(3)); }) ==
        "vjp: cannot differentiate through a for_loop whose carried sizes change from one iteration to the next in "
        "reverse mode (each iteration's values would need a buffer row of a different shape); give the carries "
        "fixed sizes (preserve_dimensions=true) or use forward mode (dyn::jvp, dyn::jacfwd)");
}

TEST_CASE("grad through nested control flow: a loop in a loop, a cond in a scan, a loop in a cond, a for loop "
          "of substeps in a while loop (hand-computed and central differences)") {
  // Two iterations of (two iterations of c -> c * c): x^16.
  auto nest = [](auto x) {
    return dyn::for_loop(0, 2, 1)([](auto, auto c) {
      return dyn::for_loop(0, 2, 1)([](auto, auto d) { return d * d; })(c);
    })(x);
  };
  CHECK(dyn::grad(nest)(1.05)() == doctest::Approx(16 * std::pow(1.05, 15)).epsilon(1e-12));
  CHECK(dyn::grad(dyn::grad(nest))(1.05)() == doctest::Approx(240 * std::pow(1.05, 14)).epsilon(1e-11));
  // A leaky relu chosen per step by cond inside a scan.
  auto leaky = [](auto w, auto xs) {
    auto [c, ys] = dyn::scan(
        [&](auto c, auto x) {
          auto h = c * w + x;
          auto r = dyn::cond(h > 0.0, [](auto v) { return v; }, [](auto v) { return 0.1 * v; })(h);
          return std::tuple{r, r * r};
        },
        0.5, xs);
    return dyn::sum(ys) + c;
  };
  const Array<double> xs({4}, {0.3, -1.2, 0.8, -0.1});
  CHECK(dyn::grad(leaky)(0.9, xs)() ==
        doctest::Approx(fd([&](double w) { return leaky(w, xs)(); }, 0.9)).epsilon(1e-8));
  // A for loop inside one branch of a cond.
  auto branch_loop = [](auto x) {
    return dyn::cond(x > 1.0, [](auto v) { return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return c * v; })(v); },
                     [](auto v) { return dyn::sin(v); })(x);
  };
  CHECK(dyn::grad(branch_loop)(1.2)() == doctest::Approx(4 * std::pow(1.2, 3)).epsilon(1e-12));
  CHECK(dyn::grad(branch_loop)(0.7)() == doctest::Approx(std::cos(0.7)).epsilon(1e-14));
  // A spring whose while loop runs 4 substeps per step.
  auto substeps = [](auto k) {
    auto [x, v, t] = dyn::while_loop([](auto, auto, auto t) { return t < 0.999; })([&](auto x, auto v, auto t) {
      auto [x2, v2] = dyn::for_loop(0, 4, 1)([&](auto, auto x, auto v) {
        return std::tuple{x + 0.025 * v, v - 0.025 * k * x};
      })(x, v);
      return std::tuple{x2, v2, t + 0.1};
    })(1.0 + 0.0 * k, 0.0 * k, 0.0 * k);
    return x + v * v;
  };
  CHECK(dyn::grad(substeps)(3.0)() == doctest::Approx(fd([&](double k) { return substeps(k)(); }, 3.0)).epsilon(1e-7));
  const auto cj = dyn::make_jaxpr(dyn::grad(substeps))(3.0);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(dyn::eval_jaxpr(cj, {dyn::AnyArray(Array<double>::scalar(3.0))}).at(0).get<double>()() ==
        doctest::Approx(dyn::grad(substeps)(3.0)()).epsilon(1e-14));
}

TEST_CASE("a while loop inside a scan or a cond branch: each iteration's count is its own, so the loop is "
          "recomputed in the backward pass (a checkpoint of itself); gradients against central differences") {
  const auto& f = transform_test::while_in_scan;
  const Array<double> xs({3}, {0.5, 0.2, 0.9});
  // Counts 3, 5 and 3 at w = 1.5, constant near it: the loss is smooth there.
  const double g = dyn::grad(f)(1.5, xs)();
  CHECK(g == doctest::Approx(fd([&](double w) { return f(Array<double>::scalar(w), xs)(); }, 1.5)).epsilon(1e-7));
  const auto cj = dyn::make_jaxpr(dyn::grad(f))(1.5, xs);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(str(cj).find("checkpoint[") != std::string::npos);
  auto in_branch = [](auto w, auto x) {
    return dyn::cond(x > 0.0, [&](auto v) {
      return dyn::while_loop([](auto u) { return u < 4.0; })([&](auto u) { return u * w + 0.1; })(v);
    }, [&](auto v) { return v * w; })(x);
  };
  const double gb = dyn::grad(in_branch)(1.5, 0.7)();
  CHECK(gb == doctest::Approx(fd([&](double w) { return in_branch(Array<double>::scalar(w), Array<double>::scalar(0.7))(); }, 1.5)).epsilon(1e-7));
}

TEST_CASE("vmap of grad through a while loop whose count differs per lane: the scans run the longest lane's count, "
          "each lane its own (against grad lane by lane)") {
  const Array<double> xs({4}, {1.3, 0.2, 12.0, 5.0});  // 4, 8, 0 and 2 iterations
  const auto [gx, gw] = dyn::vmap(dyn::grad(grow, dyn::argnums<0, 1>{}), {0, dyn::none})(xs, 1.7);
  for (std::int64_t i = 0; i < 4; ++i) {
    const auto [ex, ew] = dyn::grad(grow, dyn::argnums<0, 1>{})(xs(i), 1.7);
    CAPTURE(i);
    CHECK(gx(i) == doctest::Approx(ex()).epsilon(1e-14));
    CHECK(gw(i) == doctest::Approx(ew()).epsilon(1e-14));
  }
  const auto cj = dyn::make_jaxpr(dyn::vmap(dyn::grad(grow), {0, dyn::none}))(xs, 1.7);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const Array<double> got =
      dyn::eval_jaxpr(cj, {dyn::AnyArray(xs), dyn::AnyArray(Array<double>::scalar(1.7))}).at(0).get<double>();
  CHECK(dyn::allclose(got, gx, 1e-14));
}

TEST_CASE("grad through a while loop inside a switch_ branch: the count is a dynamic length inside the branch (the "
          "fuzzer's seed 87)") {
  auto f = [](auto i, auto x) {
    return dyn::switch_(
        i,
        [](auto v) { return dyn::while_loop([](auto c) { return c < 10.0; })([](auto c) { return c * 1.5; })(v); },
        [](auto v) { return v * v; })(x);
  };
  // From 1: 1.5^6 = 11.39 is the first value >= 10: d/dx = 1.5^6.
  CHECK(dyn::grad(f, dyn::argnums<1>{})(0, 1.0)() == doctest::Approx(std::pow(1.5, 6)).epsilon(1e-14));
  CHECK(dyn::grad(f, dyn::argnums<1>{})(1, 3.0)() == doctest::Approx(6.0).epsilon(1e-14));
  const auto cj = dyn::make_jaxpr(dyn::grad(f, dyn::argnums<1>{}))(0, 1.0);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  for (int i : {0, 1}) {
    CAPTURE(i);
    const double got = dyn::eval_jaxpr(cj, {dyn::AnyArray(Array<int>::scalar(i)), dyn::AnyArray(Array<double>::scalar(2.0))})
                           .at(0)
                           .get<double>()();
    CHECK(got == doctest::Approx(i == 0 ? std::pow(1.5, 4) : 4.0).epsilon(1e-14));
  }
}
