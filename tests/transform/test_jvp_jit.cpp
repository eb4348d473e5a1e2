// dyn::jvp under dyn::jit: the differentiated program compiles into one
// kernel and gives eager jvp's numbers (issue 20).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

TEST_CASE("jvp under jit: one compiled kernel, the numbers of eager jvp, every size (polymorphic)") {
  using dyn::Array;
  auto f = [](auto x, auto w) { return dyn::sum(dyn::tanh(dyn::matmul(x, w)) * 0.5, {1}); };
  auto df = [&](auto x, auto w, auto tx) { return dyn::jvp([&](auto a) { return f(a, w); }, std::tuple{x}, std::tuple{tx}); };
  auto jdf = dyn::jit(df, dyn::polymorphic_shapes{"(b, 3)", "(3, 4)", "(b, 3)"});
  const Array<double> w = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, 12), {3, 4});
  for (std::int64_t b : {1, 5}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(-2.0, 2.0, 3 * b), {b, 3});
    const Array<double> tx = dyn::reshape(dyn::linspace<double>(1.0, 0.0, 3 * b), {b, 3});
    const auto [yj, tj] = jdf(x, w, tx);
    const auto [ye, te] = df(x, w, tx);
    CHECK(dyn::allclose(yj, ye, 1e-13));
    CHECK(dyn::allclose(tj, te, 1e-13));
    // And against a finite difference.
    const double h = 1e-6;
    const Array<double> fd = (f(x + h * tx, w) - f(x - h * tx, w)) / (2 * h);
    CHECK(dyn::allclose(tj, fd, 1e-7));
  }
  CHECK(jdf.stats().compiles == 1);
}

// Through control flow (the programs of test_jvp_control.cpp): jit(jvp) is
// eager jvp, and a loop-carried array that grows compiles once for every size.
#include "jvp_control_programs.hpp"

namespace {
template <class F>
void check_jit_jvp(const F& f, const dyn::Array<double>& x, const dyn::Array<double>& w, const dyn::Array<double>& tx,
                   const dyn::Array<double>& tw) {
  auto g = [&](auto a, auto b, auto ta, auto tb) { return dyn::jvp(f, std::tuple{a, b}, std::tuple{ta, tb}); };
  auto jg = dyn::jit(g);
  const auto [yj, tj] = jg(x, w, tx, tw);
  const auto [ye, te] = g(x, w, tx, tw);
  CHECK(dyn::allclose(yj, ye, 1e-13));
  CHECK(dyn::allclose(tj, te, 1e-13));
}
}  // namespace

TEST_CASE("jvp under jit through control flow: cond, switch_, for_loop, while_loop, scan equal eager jvp") {
  using dyn::Array;
  using namespace jvp_programs;
  const Array<double> w = Array<double>::scalar(0.7), tw = Array<double>::scalar(-1.3);
  const Array<double> tx({3}, {1.0, -0.5, 2.0});
  for (const Array<double>& x : {Array<double>({3}, {0.3, 1.2, -0.4}), Array<double>({3}, {-0.3, 0.2, -0.4})}) {
    check_jit_jvp(cond_fn, x, w, tx, tw);
    check_jit_jvp(cond_const_fn, x, w, tx, tw);
    check_jit_jvp(switch_fn, x, w, tx, tw);
    check_jit_jvp(for_fn, x, w, tx, tw);
  }
  check_jit_jvp(switch_fn, Array<double>({3}, {1.0, 1.0, 1.0}), w, tx, tw);
  check_jit_jvp(while_fn, Array<double>({3}, {2.0, 3.0, 4.0}), Array<double>::scalar(1.5), tx, tw);
  const Array<double> xs = dyn::reshape(dyn::linspace<double>(-1.0, 1.5, 12), {4, 3});
  check_jit_jvp(scan_fn, xs, w, dyn::reshape(dyn::linspace<double>(1.0, -2.0, 12), {4, 3}), tw);
}

TEST_CASE("jvp under jit: a loop-carried array that grows (dynamic dimension), one compile for every size") {
  using dyn::Array;
  using namespace jvp_programs;
  const Array<double> w = Array<double>::scalar(0.7), tw = Array<double>::scalar(-1.3);
  auto run = [&](const auto& f) {
    auto g = [&](auto a, auto b, auto ta, auto tb) { return dyn::jvp(f, std::tuple{a, b}, std::tuple{ta, tb}); };
    const dyn::polymorphic_shapes spec{"(n,)", "", "(n,)", ""};
    auto jg = dyn::jit(g, spec);
    for (std::int64_t n : {1, 3, 5}) {
      const Array<double> x = dyn::linspace<double>(-0.5, 1.0, n), tx = dyn::linspace<double>(1.0, -1.0, n);
      const auto [yj, tj] = jg(x, w, tx, tw);
      const auto cj = dyn::make_jaxpr(g, spec)(x, w, tx, tw);
      const auto r = dyn::eval_jaxpr(cj, {dyn::AnyArray(x), dyn::AnyArray(w), dyn::AnyArray(tx), dyn::AnyArray(tw)});
      CHECK(dyn::allclose(yj, r.at(r.size() - 2).template get<double>(), 1e-13));
      CHECK(dyn::allclose(tj, r.back().template get<double>(), 1e-13));
      const double h = 1e-6;
      const Array<double> fd = (f(x + h * tx, w + h * tw) - f(x - h * tx, w - h * tw)) / (2 * h);
      CHECK(dyn::allclose(tj, fd, 1e-6));
    }
    CHECK(jg.stats().compiles == 1);
  };
  run(grow_fn);
  run(grow_for_fn);
}

// digamma and trigamma have no libm or SLEEF function: the compiled kernel
// evaluates eager's formula op for op (llvm/lower_expr.hpp), its log, sin
// and cos those of the log, sin, cos primitives (libmvec's, within an ulp or
// two of glibc's): the two agree within a few ulps, NaN and inf included.
TEST_CASE("digamma, trigamma under jit: eager's numbers (f64 within 1e-14, f32 within 1e-5), poles; jit(grad(lgamma))") {
  using dyn::Array;
  std::vector<double> v;
  for (int i = 0; i < 400; ++i) v.push_back(-20.0 + 0.1 * i + 0.0123);
  for (double s : {0.0, -1.0, -3.0, 1.0, 2.0, 1e-8, 1e6, 0.5, -0.5, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
    v.push_back(s);
  const auto n = static_cast<std::int64_t>(v.size());
  const Array<double> x({n}, v);
  auto f = [](auto a) { return std::tuple{dyn::digamma(a), dyn::trigamma(a)}; };
  const auto [dj, tj] = dyn::jit(f)(x);
  const auto [de, te] = f(x);
  auto same = [](const auto& got, const auto& want, double rel) {
    for (std::int64_t i = 0; i < want.size(); ++i) {
      const double g = got.data()[i], w = want.data()[i];
      CAPTURE(i);
      CAPTURE(w);
      if (std::isnan(w) || std::isinf(w)) CHECK((g == w || (std::isnan(g) && std::isnan(w))));
      else CHECK(std::abs(g - w) <= rel * std::max(1.0, std::abs(w)));
    }
  };
  same(dj, de, 1e-14);
  same(tj, te, 1e-14);
  const Array<float> xf = dyn::astype<float>(x);
  const auto [djf, tjf] = dyn::jit(f)(xf);
  const auto [def, tef] = f(xf);
  same(djf, def, 1e-5);
  same(tjf, tef, 1e-5);
  // grad(lgamma) compiled: digamma's kernel.
  auto g = dyn::grad([](auto a) { return dyn::sum(dyn::lgamma(a)); });
  const Array<double> p({4}, {0.3, 1.7, 4.5, -2.3});
  CHECK(dyn::allclose(dyn::jit(g)(p), g(p), 1e-14));
  auto gg = dyn::grad(dyn::grad([](auto a) { return dyn::lgamma(a); }));
  CHECK(dyn::jit(gg)(2.5)() == doctest::Approx(0.49035775610023486497).epsilon(1e-14));
}
