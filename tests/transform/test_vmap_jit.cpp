// dyn::vmap under dyn::jit: the batched program compiles into one kernel and
// gives eager vmap's numbers, for every batch size (issue 20).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <tuple>

#include "../test_util.hpp"

TEST_CASE("vmap under jit: one compiled kernel, the numbers of eager vmap, every batch size (polymorphic)") {
  using dyn::Array;
  // Per lane: a matrix-vector product, a nonlinearity, a reduction and a sort.
  auto f = [](auto x, auto w) {
    auto h = dyn::tanh(dyn::matmul(w, x));
    return std::tuple{dyn::sum(h), dyn::sort(h, 0)};
  };
  auto bf = dyn::vmap(f, {1, dyn::none});
  auto jbf = dyn::jit(bf, dyn::polymorphic_shapes{"(3, b)", "(4, 3)"});
  const Array<double> w = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, 12), {4, 3});
  for (std::int64_t b : {1, 5}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(-2.0, 2.0, 3 * b), {3, b});
    const auto [sj, hj] = jbf(x, w);
    const auto [se, he] = bf(x, w);
    REQUIRE(hj.shape() == std::vector<std::int64_t>{b, 4});
    CHECK(dyn::allclose(sj, se, 1e-13));
    CHECK(dyn::allclose(hj, he, 1e-13));
  }
  CHECK(jbf.stats().compiles == 1);
}
