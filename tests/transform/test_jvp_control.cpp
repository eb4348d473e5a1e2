// dyn::jvp through control flow (issue 20: cond, switch_, for_loop,
// while_loop, scan, loop-carried dynamic sizes) and the product and chooser
// rules of reduce_prod, cumprod, cummax/cummin and the scatters, against
// central finite differences of the eager function in f64 (h = 1e-5,
// |jvp - fd| <= 1e-6 (1 + |fd|)); under make_jaxpr the differentiated
// program passes check_jaxpr and eval_jaxpr gives eager jvp's numbers.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"
#include "jvp_control_programs.hpp"

using dyn::AnyArray;
using dyn::Array;
using test_util::str;
using namespace jvp_programs;

namespace {

constexpr double kStep = 1e-5, kTol = 1e-6;

void check_close(const Array<double>& got, const Array<double>& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got.data()[i] - want.data()[i]) <= tol * (1 + std::abs(want.data()[i])));
  }
}

// jvp of f at (x, w) along (tx, tw): the primal against f, the tangent
// against central differences; then the same program under make_jaxpr:
// check_jaxpr, and eval_jaxpr's numbers against eager jvp's.
template <class F>
void check_jvp(const F& f, const Array<double>& x, const Array<double>& w, const Array<double>& tx,
               const Array<double>& tw) {
  const auto [y, t] = dyn::jvp(f, std::tuple{x, w}, std::tuple{tx, tw});
  const Array<double> y0 = f(x, w);
  check_close(y, y0, 1e-14);
  const Array<double> fp = f(x + kStep * tx, w + kStep * tw), fm = f(x - kStep * tx, w - kStep * tw);
  check_close(t, (fp - fm) / (2 * kStep), kTol);
  auto g = [&](auto a, auto b, auto ta, auto tb) { return dyn::jvp(f, std::tuple{a, b}, std::tuple{ta, tb}); };
  const auto cj = dyn::make_jaxpr(g)(x, w, tx, tw);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::vector<AnyArray> r = dyn::eval_jaxpr(cj, {AnyArray(x), AnyArray(w), AnyArray(tx), AnyArray(tw)});
  REQUIRE(r.size() == 2);
  check_close(r[0].get<double>(), y, 1e-14);
  check_close(r[1].get<double>(), t, 1e-13);
}

const Array<double> kW = Array<double>::scalar(0.7), kTw = Array<double>::scalar(-1.3);

}  // namespace

TEST_CASE("jvp control: cond, both branches (a captured argument in one), against finite differences") {
  const Array<double> tx({3}, {1.0, -0.5, 2.0});
  check_jvp(cond_fn, Array<double>({3}, {0.3, 1.2, -0.4}), kW, tx, kTw);   // true branch: sin(a) * w
  check_jvp(cond_fn, Array<double>({3}, {-0.3, 0.2, -0.4}), kW, tx, kTw);  // false branch: a^3
  // A branch with a zero tangent (a constant result) next to one with a tangent.
  check_jvp(cond_const_fn, Array<double>({3}, {0.3, 1.2, -0.4}), kW, tx, kTw);
  const auto [y, t] = dyn::jvp(cond_const_fn, std::tuple{Array<double>({3}, {-1.0, 0.0, 0.0}), kW}, std::tuple{tx, kTw});
  CHECK(str(y) == "[1. 1. 1.]");
  CHECK(str(t) == "[0. 0. 0.]");
}

TEST_CASE("jvp control: switch_ with a data-dependent index, every branch, against finite differences") {
  const Array<double> tx({3}, {1.0, -0.5, 2.0});
  check_jvp(switch_fn, Array<double>({3}, {0.1, 0.2, 0.3}), kW, tx, kTw);  // index 0
  check_jvp(switch_fn, Array<double>({3}, {0.5, 0.5, 0.6}), kW, tx, kTw);  // index 1
  check_jvp(switch_fn, Array<double>({3}, {1.0, 1.0, 1.0}), kW, tx, kTw);  // index 3, clamped to 2
}

TEST_CASE("jvp control: for_loop whose carry gets a tangent in the body (fixed point), against finite differences") {
  check_jvp(for_fn, Array<double>({3}, {0.3, 1.2, -0.4}), kW, Array<double>({3}, {1.0, -0.5, 2.0}), kTw);
  // Only w has a tangent: the carry's comes from c * w alone.
  check_jvp(for_fn, Array<double>({3}, {0.3, 1.2, -0.4}), kW, dyn::zeros<double>({3}), kTw);
}

TEST_CASE("jvp control: while_loop with a data-dependent trip count, against finite differences") {
  const Array<double> tx({3}, {1.0, -0.5, 2.0});
  // 1.5 w: trip counts 3 and 5 for these starts (away from the boundary, so
  // the differences see one branch of the piecewise function).
  check_jvp(while_fn, Array<double>({3}, {2.0, 3.0, 4.0}), Array<double>::scalar(1.5), tx, kTw);
  check_jvp(while_fn, Array<double>({3}, {0.5, 0.7, 0.9}), Array<double>::scalar(1.5), tx, kTw);
  const auto [y1, t1] = dyn::jvp(while_fn, std::tuple{Array<double>({3}, {2.0, 3.0, 4.0}), Array<double>::scalar(1.5)},
                                 std::tuple{tx, kTw});
  const auto [y2, t2] = dyn::jvp(while_fn, std::tuple{Array<double>({3}, {0.5, 0.7, 0.9}), Array<double>::scalar(1.5)},
                                 std::tuple{tx, kTw});
  CHECK(y1.data()[0] / y2.data()[0] != doctest::Approx(1.0));  // different trip counts, checked above
}

TEST_CASE("jvp control: scan with xs and ys (reversed), against finite differences") {
  const Array<double> x = dyn::reshape(dyn::linspace<double>(-1.0, 1.5, 12), {4, 3});
  const Array<double> tx = dyn::reshape(dyn::linspace<double>(1.0, -2.0, 12), {4, 3});
  check_jvp(scan_fn, x, kW, tx, kTw);
  check_jvp(scan_fn, x, kW, tx, Array<double>::scalar(0.0));
}

TEST_CASE("jvp control: a loop-carried array that grows (dynamic dimension), under make_jaxpr with a symbolic size") {
  auto run = [](const auto& f) {
    auto g = [&](auto a, auto b, auto ta, auto tb) { return dyn::jvp(f, std::tuple{a, b}, std::tuple{ta, tb}); };
    const dyn::polymorphic_shapes spec{"(n,)", "", "(n,)", ""};
    for (std::int64_t n : {1, 3, 5}) {
      CAPTURE(n);
      const Array<double> x = dyn::linspace<double>(-0.5, 1.0, n), tx = dyn::linspace<double>(1.0, -1.0, n);
      const auto cj = dyn::make_jaxpr(g, spec)(x, kW, tx, kTw);
      CHECK_NOTHROW(dyn::check_jaxpr(cj));
      const std::vector<AnyArray> r = dyn::eval_jaxpr(cj, {AnyArray(x), AnyArray(kW), AnyArray(tx), AnyArray(kTw)});
      const Array<double> y = r.at(r.size() - 2).get<double>(), t = r.back().get<double>();
      check_close(y, f(x, kW), 1e-13);
      const Array<double> fp = f(x + kStep * tx, kW + kStep * kTw), fm = f(x - kStep * tx, kW - kStep * kTw);
      check_close(t, (fp - fm) / (2 * kStep), kTol);
    }
  };
  run(grow_fn);
  run(grow_for_fn);
}

TEST_CASE("jvp control: the printed jaxpr of a for_loop's JVP (golden): tangents carried after the primals") {
  auto f = [](auto x) { return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return c * x; })(1.0); };
  auto g = [&](auto x, auto t) { return dyn::jvp(f, std::tuple{x}, std::tuple{t}); };
  const auto cj = dyn::make_jaxpr(g)(2.0, 1.0);
  // The carry c starts as the constant 1.0 (a zero tangent, instantiated as
  // 0.0) and gets a tangent from x in the body: both are carried.
  CHECK(str(cj) ==
        "{ lambda ; a:f64[] b:f64[]. let\n"
        "    c:f64[] d:f64[] = for_loop[\n"
        "      body_jaxpr={ lambda ; e:f64[] f:f64[] g:i64[] h:f64[] i:f64[]. let\n"
        "          j:f64[] = mul h e\n"
        "          k:f64[] = mul i e\n"
        "          l:f64[] = mul f h\n"
        "          m:f64[] = add k l\n"
        "        in (j, m) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=True\n"
        "    ] a b 0:i64[] 3:i64[] 1:i64[] 0:i64[] 1.0:f64[] 0.0:f64[]\n"
        "  in (c, d) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  // x^3 at 2: 8, and 3 x^2 = 12.
  const auto r = dyn::eval_jaxpr(cj, {AnyArray(Array<double>::scalar(2.0)), AnyArray(Array<double>::scalar(1.0))});
  CHECK(r[0].get<double>()() == 8.0);
  CHECK(r[1].get<double>()() == 12.0);
}

TEST_CASE("jvp rules: products with zeros (reduce_prod, cumprod), against finite differences and by hand") {
  // One zero: the derivative is the product of the others; two zeros: 0.
  auto f = [](auto x, auto) { return std::tuple{dyn::prod(x, {1}), dyn::cumprod(x, 1), dyn::cumprod(x, 1, true)}; };
  const Array<double> x({3, 4}, {1.5, 0.0, 2.0, -0.5, 0.0, 3.0, 0.0, 2.0, 0.7, 1.1, -1.3, 0.9});
  const Array<double> tx = dyn::reshape(dyn::linspace<double>(1.0, -2.0, 12), {3, 4});
  const auto [ys, ts] = dyn::jvp(f, std::tuple{x, kW}, std::tuple{tx, kTw});
  const auto h = kStep;
  const auto fp = f(x + h * tx, kW), fm = f(x - h * tx, kW);
  check_close(std::get<0>(ts), (std::get<0>(fp) - std::get<0>(fm)) / (2 * h), kTol);
  check_close(std::get<1>(ts), (std::get<1>(fp) - std::get<1>(fm)) / (2 * h), kTol);
  check_close(std::get<2>(ts), (std::get<2>(fp) - std::get<2>(fm)) / (2 * h), kTol);
  // Row 0: d(1.5 * 0 * 2 * -0.5) = t1 * (1.5 * 2 * -0.5) = t1 * -1.5; row 1 has two zeros.
  CHECK(std::get<0>(ts)(0) == doctest::Approx(tx(0, 1) * -1.5).epsilon(1e-15));
  CHECK(std::get<0>(ts)(1) == 0.0);
}

TEST_CASE("jvp rules: cummax and cummin take the running extremum's tangent; against finite differences") {
  auto f = [](auto x, auto) {
    return std::tuple{dyn::cummax(x, 1), dyn::cummin(x, 1), dyn::cummax(x, 0, true), dyn::cummin(x, 0, true)};
  };
  const Array<double> x({3, 4}, {0.5, -1.0, 2.0, 1.5, 3.0, 0.2, 0.1, 4.0, -2.0, -1.5, -3.0, 0.0});
  const Array<double> tx = dyn::reshape(dyn::linspace<double>(1.0, -2.0, 12), {3, 4});
  const auto [ys, ts] = dyn::jvp(f, std::tuple{x, kW}, std::tuple{tx, kTw});
  const auto fp = f(x + kStep * tx, kW), fm = f(x - kStep * tx, kW);
  check_close(std::get<0>(ts), (std::get<0>(fp) - std::get<0>(fm)) / (2 * kStep), kTol);
  check_close(std::get<1>(ts), (std::get<1>(fp) - std::get<1>(fm)) / (2 * kStep), kTol);
  check_close(std::get<2>(ts), (std::get<2>(fp) - std::get<2>(fm)) / (2 * kStep), kTol);
  check_close(std::get<3>(ts), (std::get<3>(fp) - std::get<3>(fm)) / (2 * kStep), kTol);
  // Row 0 of cummax: 0.5 0.5 2 2 takes the tangents of elements 0 0 2 2.
  CHECK(std::get<0>(ts)(0, 1) == tx(0, 0));
  CHECK(std::get<0>(ts)(0, 3) == tx(0, 2));
}

TEST_CASE("jvp rules: scatter-mul with zero and duplicate updates, scatter-min/max; against finite differences") {
  // Indices 1, 1 (a duplicate), 3 and 5 (dropped); updates with a zero.
  const Array<std::int32_t> idx({4}, {1, 1, 3, 5});
  auto f = [&](auto x, auto u) {
    return std::tuple{x.at(idx).mul(u), x.at(idx).max(u), x.at(idx).min(u)};
  };
  const Array<double> x({4}, {1.5, -0.7, 2.0, 0.3}), u({4}, {0.0, 1.3, -2.0, 4.0});
  const Array<double> tx({4}, {1.0, -0.5, 2.0, 0.25}), tu({4}, {0.5, -1.0, 0.75, 3.0});
  const auto [ys, ts] = dyn::jvp(f, std::tuple{x, u}, std::tuple{tx, tu});
  const auto fp = f(x + kStep * tx, u + kStep * tu), fm = f(x - kStep * tx, u - kStep * tu);
  check_close(std::get<0>(ts), (std::get<0>(fp) - std::get<0>(fm)) / (2 * kStep), kTol);
  check_close(std::get<1>(ts), (std::get<1>(fp) - std::get<1>(fm)) / (2 * kStep), kTol);
  check_close(std::get<2>(ts), (std::get<2>(fp) - std::get<2>(fm)) / (2 * kStep), kTol);
  // x[1] * 0 * 1.3: d = x1 * (t_u0 * 1.3) (the zero update's tangent times the other).
  CHECK(std::get<0>(ts)(1) == doctest::Approx(-0.7 * 0.5 * 1.3).epsilon(1e-15));
  // A tie (x[3] = u[2] after max): the mean of the two tangents, as JAX's chooser rule.
  const Array<double> xt({4}, {1.5, -0.7, 2.0, -2.0});
  const auto [yt, tt] = dyn::jvp(f, std::tuple{xt, u}, std::tuple{tx, tu});
  CHECK(std::get<1>(tt)(3) == doctest::Approx((0.25 + 0.75) / 2).epsilon(1e-15));
}

TEST_CASE("jvp control: a scan of symbolic length and a cond whose branches return different sizes (implicit output)") {
  // Traced with x of shape (n, 3): the scan's length is the operand n
  // (length=None), the cond's result size an implicit output.
  auto scan_n = [](auto xs) {
    auto [c, ys] = dyn::scan([](auto c, auto r) { return std::tuple{c * r + 1.0, dyn::sin(c)}; }, dyn::ones<double>({3}), xs);
    return dyn::sum(ys) + dyn::sum(c);
  };
  auto cond_sizes = [](auto xs) {
    auto y = dyn::cond(dyn::sum(xs) > 0.0, [](auto a) { return dyn::concatenate({a, a * a}, 0); },
                       [](auto a) { return dyn::sin(a); })(xs);
    return dyn::sum(y * y);
  };
  auto run = [](const auto& f, const Array<double>& x, const Array<double>& tx) {
    auto g = [&](auto a, auto b) { return dyn::jvp(f, std::tuple{a}, std::tuple{b}); };
    const auto cj = dyn::make_jaxpr(g, dyn::polymorphic_shapes{"(n, 3)", "(n, 3)"})(x, tx);
    CHECK_NOTHROW(dyn::check_jaxpr(cj));
    const std::vector<AnyArray> r = dyn::eval_jaxpr(cj, {AnyArray(x), AnyArray(tx)});
    const Array<double> fp = f(x + kStep * tx), fm = f(x - kStep * tx);
    check_close(r.at(r.size() - 2).get<double>(), f(x), 1e-13);
    check_close(r.back().get<double>(), (fp - fm) / (2 * kStep), kTol);
    return str(cj);
  };
  const Array<double> x = dyn::reshape(dyn::linspace<double>(-1.0, 1.5, 12), {4, 3});
  const Array<double> tx = dyn::reshape(dyn::linspace<double>(1.0, -2.0, 12), {4, 3});
  CHECK(run(scan_n, x, tx).find("length=None") != std::string::npos);
  CHECK(run(cond_sizes, x, tx).find("nimplicit_outputs=1") != std::string::npos);  // true branch: 2n rows
  CHECK(run(cond_sizes, x * -1.0, tx).find("nimplicit_outputs=1") != std::string::npos);  // false branch: n rows
}
