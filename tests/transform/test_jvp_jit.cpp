// dyn::jvp under dyn::jit: the differentiated program compiles into one
// kernel and gives eager jvp's numbers (issue 20).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <tuple>

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
