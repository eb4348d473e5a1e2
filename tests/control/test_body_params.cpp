// Issue 25, item 5 ("Body parameters"): a loop or branch body that
// reassigns a parameter with a traced value (a captured tracer).
//
// With concrete initial values (`dyn::zeros<double>({3})`, concrete by API.md
// section 8) such a body cannot compile: the combinator must instantiate the
// body with concrete dyn::Arrays to learn from its result type whether it
// stages, and in C++ that parameter type is fixed before the body runs. That
// case is tests/compile_fail/body_param_reassign.cpp (a static_assert naming
// the two ways out). These tests are the ways out, for for_loop, while_loop,
// scan, cond and switch_: the initial values are made traced (`zeros_like(x)`,
// `ones_like(x)`, which is what "lifting first" means), and the program gives
// the values eager gives.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <tuple>

#include "../test_util.hpp"

namespace {

using dyn::Array;

// for_loop: acc starts as concrete zeros; the body reassigns `a`.
auto for_reassign = [](auto x) {
  auto acc = dyn::zeros_like(x);
  return dyn::for_loop(0, 4, 1)([&](auto, auto a) {
    a = a + x;
    return a;
  })(acc);
};

// while_loop: the counter and the carry start concrete.
auto while_reassign = [](auto x) {
  auto acc = dyn::zeros_like(x);
  auto r = dyn::while_loop([](auto k, auto) { return k < 4; })([&](auto k, auto a) {
    a = a * 2.0 + x;
    k = k + 1;
    return std::tuple{k, a};
  })(std::int64_t{0}, acc);
  return std::get<1>(r);
};

// scan: a concrete carry and concrete xs, the body reassigns the carry.
auto scan_reassign = [](auto x) {
  auto xs = dyn::ones<double>({4, 3});
  auto [c, ys] = dyn::scan(
      [&](auto c, auto row) {
        c = c + row * x;
        return std::tuple{c, c};
      },
      dyn::zeros_like(x), xs);
  return c + dyn::sum(ys, {0});
};

// cond with a traced predicate and a concrete operand.
auto cond_reassign = [](auto x) {
  auto v = dyn::ones_like(x);
  return dyn::cond(
      dyn::sum(x) > 0.0,
      [&](auto a) {
        a = a + x;
        return a;
      },
      [&](auto a) {
        a = a - x;
        return a;
      })(v);
};

// switch_ with a concrete index and a concrete operand: the branches capture x.
auto switch_reassign = [](auto x) {
  auto v = dyn::ones_like(x);
  return dyn::switch_(
      std::int64_t{1},
      [&](auto a) {
        a = a + x;
        return a;
      },
      [&](auto a) {
        a = a * x;
        return a;
      })(v);
};

template <class F>
void check_against_eager(const F& f) {
  const Array<double> x = test_util::iota_array<double>({3}, 1.0);
  const auto e = dyn::eager(f)(x);
  auto j = dyn::make_jaxpr(f)(x);
  auto r = dyn::eval_jaxpr(j, {x});
  REQUIRE(r.size() == 1);
  CHECK(dyn::array_equal(r[0].template get<double>(), e));
}

}  // namespace

TEST_SUITE("control") {

TEST_CASE("issue 25: a for_loop body may reassign a parameter that starts concrete with a traced value") {
  check_against_eager(for_reassign);
}

TEST_CASE("issue 25: a while_loop body may reassign a parameter that starts concrete with a traced value") {
  check_against_eager(while_reassign);
}

TEST_CASE("issue 25: a scan body may reassign a carry that starts concrete with a traced value") {
  check_against_eager(scan_reassign);
}

TEST_CASE("issue 25: a cond branch may reassign an operand that is concrete with a traced value") {
  check_against_eager(cond_reassign);
}

TEST_CASE("issue 25: a switch_ branch may reassign an operand that is concrete with a traced value") {
  check_against_eager(switch_reassign);
}

}  // TEST_SUITE
