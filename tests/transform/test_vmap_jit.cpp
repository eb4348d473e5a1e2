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

TEST_CASE("vmap with out_axes per result under jit: axis 1, dyn::none, -1; nested; the numbers of eager vmap") {
  using dyn::Array;
  auto f = [](auto x, auto w) { return std::tuple{dyn::tanh(x * w), w * 2.0, dyn::cumsum(x, 0)}; };
  auto bf = dyn::vmap(f, {0, dyn::none}, {1, dyn::none, -1});
  auto jbf = dyn::jit(bf, dyn::polymorphic_shapes{"(b, 3)", "(3,)"});
  const Array<double> w({3}, {0.5, -1.0, 2.0});
  for (std::int64_t b : {1, 4}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, 3 * b), {b, 3});
    const auto [tj, wj, cj] = jbf(x, w);
    const auto [te, we, ce] = bf(x, w);
    REQUIRE(tj.shape() == std::vector<std::int64_t>{3, b});
    REQUIRE(wj.shape() == std::vector<std::int64_t>{3});
    REQUIRE(cj.shape() == std::vector<std::int64_t>{3, b});
    CHECK(dyn::allclose(tj, te, 1e-13));
    CHECK(dyn::allclose(wj, we, 0.0));
    CHECK(dyn::allclose(cj, ce, 1e-13));
  }
  CHECK(jbf.stats().compiles == 1);
  // Nested, the outer batch axis last.
  auto outer = dyn::vmap(dyn::vmap([](auto a, auto c) { return a * c + 1.0; }, {0, dyn::none}), {dyn::none, 0}, -1);
  const Array<double> x({3}, {1, 2, 3}), y({2}, {10, 20});
  CHECK(dyn::allclose(dyn::jit(outer)(x, y), outer(x, y), 0.0));
  CHECK(test_util::str(outer(x, y)) == "[[11. 21.]\n [21. 41.]\n [31. 61.]]");
}
