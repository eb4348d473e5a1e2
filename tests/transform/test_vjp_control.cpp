// Reverse mode through control flow (issue 20): scan, by partial
// evaluation of its JVP (a known scan that also returns the residuals per
// iteration, a linear scan kept) and the transpose of the linear scan (a
// scan in the other direction). Gradients against central differences and
// hand-computed values; the printed program; jit against eager.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"
#include "differences.hpp"

using dyn::Array;
using test_util::message_of;
using test_util::str;

namespace {

const auto& scan_fn = transform_test::scan_loss;

double fd(const std::function<double(double)>& g, double x) { return (g(x + 1e-6) - g(x - 1e-6)) / 2e-6; }

}  // namespace

TEST_CASE("grad through scan: the carry, the ys, a closed-over scalar, against central differences (1e-8)") {
  const Array<double> xs({5}, {0.3, -0.7, 1.1, 0.2, 0.9});
  const double w = 0.8;
  const auto [gw, gx] = dyn::grad(scan_fn, dyn::argnums<0, 1>{})(w, xs);
  CHECK(gw() == doctest::Approx(fd([&](double v) { return scan_fn(v, xs)(); }, w)).epsilon(1e-8));
  for (std::int64_t i = 0; i < 5; ++i) {
    auto at_i = [&](double v) {
      Array<double> x = xs;
      x.mutable_data()[i] = v;
      return scan_fn(w, x)();
    };
    CAPTURE(i);
    CHECK(gx(i) == doctest::Approx(fd(at_i, xs(i))).epsilon(1e-8));
  }
}

TEST_CASE("grad through scan: a reversed scan of a running product (hand-computed), a carry that is a vector") {
  // ys_t = prod_{s >= t} x_s (reverse running product); f = sum(ys).
  auto f = [](auto xs) {
    auto [c, ys] = dyn::scan(
        [](auto c, auto x) {
          auto p = c * x;
          return std::tuple{p, p};
        },
        1.0, xs, {.reverse = true});
    return dyn::sum(ys);
  };
  const Array<double> xs({3}, {2.0, 3.0, 5.0});
  // f = x2 + x1 x2 + x0 x1 x2: df/dx0 = x1 x2 = 15, df/dx1 = x2 + x0 x2 = 15, df/dx2 = 1 + x1 + x0 x1 = 10.
  CHECK(str(dyn::grad(f)(xs)) == "[15. 15. 10.]");
  // A vector carry: v_{t+1} = tanh(A v_t + x_t), f = sum(v_T).
  const Array<double> a({2, 2}, {0.5, -0.3, 0.2, 0.8});
  auto rnn = [&](auto v0, auto xs2) {
    auto [v, ys] = dyn::scan(
        [&](auto v, auto x) {
          auto n = dyn::tanh(dyn::matmul(a, v) + x);
          return std::tuple{n, dyn::sum(n)};
        },
        v0, xs2);
    return dyn::sum(v) + dyn::sum(ys) * 0.5;
  };
  const Array<double> v0({2}, {0.1, -0.2});
  const Array<double> x2({4, 2}, {0.3, 0.1, -0.2, 0.4, 0.5, -0.6, 0.0, 0.2});
  const Array<double> g = dyn::grad(rnn)(v0, x2);
  for (std::int64_t i = 0; i < 2; ++i) {
    auto at_i = [&](double val) {
      Array<double> v = v0;
      v.mutable_data()[i] = val;
      return rnn(v, x2)();
    };
    CHECK(g(i) == doctest::Approx(fd(at_i, v0(i))).epsilon(1e-8));
  }
}

TEST_CASE("grad through scan: make_jaxpr prints a forward scan saving residuals and a reversed scan; "
          "check_jaxpr passes; a symbolic length flows through") {
  const auto cj = dyn::make_jaxpr(dyn::grad(scan_fn))(0.8, Array<double>({5}, {0.3, -0.7, 1.1, 0.2, 0.9}));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::string s = str(cj);
  CHECK(s.find("reverse=False") != std::string::npos);
  CHECK(s.find("reverse=True") != std::string::npos);
  const auto cs = dyn::make_jaxpr(dyn::grad(scan_fn, dyn::argnums<1>{}), dyn::polymorphic_shapes{"()", "(n,)"})(
      0.8, dyn::ones<double>({3}));
  CHECK_NOTHROW(dyn::check_jaxpr(cs));
  for (std::int64_t n : {1, 4}) {
    Array<double> xs({n});
    for (std::int64_t i = 0; i < n; ++i) xs.mutable_data()[i] = 0.1 * static_cast<double>(i) - 0.2;
    const Array<double> got = dyn::eval_jaxpr(cs, {dyn::AnyArray(Array<double>::scalar(0.8)), dyn::AnyArray(xs)})
                                  .back()
                                  .get<double>();
    const Array<double> want = dyn::grad(scan_fn, dyn::argnums<1>{})(0.8, xs);
    CAPTURE(n);
    CHECK(dyn::allclose(got, want, 1e-14));
  }
}
