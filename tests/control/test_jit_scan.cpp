// dyn::jit of scan (llvm/lower_control.hpp: a counted loop whose body reads
// row t of each xs and writes row t of each ys in place) against the
// interpreter (eval_jaxpr of make_jaxpr) and eager: a running sum, reverse,
// pytree carries and xs with a captured constant, no xs with a length, a
// symbolic leading dimension (polymorphic_shapes) and a Catalyst dynamic one
// (one compile for every length, zero included), ys used inside the kernel
// and returned as its result; errors leave the jitted function usable.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;
using test_util::iota_array;
using test_util::message_of;

// jit, the interpreter and eager agree exactly: every body here adds and
// multiplies in the same order in all three (one step after another).
template <class T>
void check_same(const Array<T>& jit, const dyn::AnyArray& interp, const Array<T>& eager) {
  CHECK(jit.shape() == eager.shape());
  CHECK(dyn::array_equal(jit, eager));
  CHECK(dyn::array_equal(interp.get<T>(), eager));
}

}  // namespace

TEST_SUITE("control") {

TEST_CASE("jit scan: a running sum, forward and reversed, against eager and the interpreter") {
  for (bool rev : {false, true}) {
    auto f = [rev](auto xs) {
      return dyn::scan(
          [](auto c, auto x) {
            auto s = c * 0.5f + x;
            return std::tuple{s, s * 2.0f};
          },
          1.0f, xs, {.reverse = rev});
    };
    auto jf = dyn::jit(f);
    for (i64 n : {1, 4, 37}) {
      auto xs = iota_array<float>({n}, -3.0f, 0.25f);
      auto [c, ys] = jf(xs);
      auto [ec, eys] = f(xs);
      auto r = dyn::eval_jaxpr(dyn::make_jaxpr(f)(xs), {xs});
      check_same(c, r.at(0), ec);
      check_same(ys, r.at(1), eys);
    }
  }
}

TEST_CASE("jit scan: the ys are written in place into the kernel's result, no copy") {
  // Each step stores its y into row t of the result buffer itself; a ys
  // buffer copied into the result afterwards would be a memcpy.
  auto f = [](auto xs) {
    return dyn::scan(
        [](auto c, auto x) {
          auto s = c * 0.5f + x;
          return std::tuple{s, s * 2.0f};
        },
        1.0f, xs);
  };
  const std::string ir = dyn::jit(f).llvm_ir(Array<float>({1000}));
  CHECK(ir.find("memcpy") == std::string::npos);
  CHECK(ir.find("define") != std::string::npos);
}

TEST_CASE("jit scan: pytree carry and xs, rows of a matrix, a captured constant") {
  auto f = [](auto m, auto v, auto w) {
    return dyn::scan(
        [&](auto c, auto x) {
          auto [s, k] = c;
          auto [row, e] = x;
          auto s2 = s + row * w;
          return std::tuple{std::tuple{s2, k + 1}, std::tuple{dyn::sum(row * row) + e, s2 - row}};
        },
        std::tuple{dyn::zeros<double>({3}), std::int64_t{0}}, std::tuple{m, v}, {.reverse = true});
  };
  auto jf = dyn::jit(f);
  auto w = dyn::array({1.0, -2.0, 0.5});
  for (i64 n : {1, 6}) {
    auto m = iota_array<double>({n, 3}, 1.0, 0.5);
    auto v = iota_array<double>({n}, -1.0, 2.0);
    auto [c, ys] = jf(m, v, w);
    auto [ec, eys] = f(m, v, w);
    auto r = dyn::eval_jaxpr(dyn::make_jaxpr(f)(m, v, w), {m, v, w});
    check_same(std::get<0>(c), r.at(0), std::get<0>(ec));
    check_same(std::get<1>(c), r.at(1), std::get<1>(ec));
    check_same(std::get<0>(ys), r.at(2), std::get<0>(eys));
    check_same(std::get<1>(ys), r.at(3), std::get<1>(eys));
    CHECK(std::get<1>(c).data()[0] == n);
  }
}

TEST_CASE("jit scan: no xs, a length; and the ys used inside the kernel") {
  auto f = [](auto x0) {
    return dyn::scan([](auto c, auto) { return std::tuple{c * 1.5 + 1.0, c}; }, x0, {.length = 6});
  };
  auto jf = dyn::jit(f);
  auto x0 = dyn::array({1.0, -2.0});
  auto [c, ys] = jf(x0);
  auto [ec, eys] = f(x0);
  auto r = dyn::eval_jaxpr(dyn::make_jaxpr(f)(x0), {x0});
  check_same(c, r.at(0), ec);
  check_same(ys, r.at(1), eys);
  CHECK(ys.shape() == std::vector<i64>{6, 2});
  // The ys feed more work (a temporary of the kernel, not its result).
  auto g = [&](auto x) {
    auto [cc, yy] = f(x);
    return dyn::sum(yy, {0}) + cc;
  };
  auto jg = dyn::jit(g);
  check_same(Array<double>(jg(x0)), dyn::eval_jaxpr(dyn::make_jaxpr(g)(x0), {x0}).at(0), Array<double>(g(x0)));
}

TEST_CASE("jit scan: a symbolic leading dimension, one compile for every length") {
  auto f = [](auto xs, auto c0) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c + x, dyn::sum(c * x)}; }, c0, xs);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n, k)", "(k,)"});
  for (i64 n : {1, 2, 9})
    for (i64 k : {1, 4}) {
      auto xs = iota_array<double>({n, k}, 0.5, 0.25);
      auto c0 = iota_array<double>({k}, -1.0, 1.0);
      auto [c, ys] = jf(xs, c0);
      auto [ec, eys] = f(xs, c0);
      auto r = dyn::eval_jaxpr(dyn::make_jaxpr(f)(xs, c0), {xs, c0});
      check_same(c, r.at(0), ec);
      check_same(ys, r.at(1), eys);
    }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit scan: a Catalyst dynamic length (an i64 argument), zero steps included") {
  auto f = [](auto n, auto m) {
    auto xs = dyn::arange<double>(n);
    auto y = dyn::arange<double>(m);
    return dyn::scan([&](auto c, auto x) { return std::tuple{c + y * x, dyn::concatenate({c, y}, 0)}; }, y * 0.5,
                     xs, {.reverse = true});
  };
  auto g = [](auto n, auto x0) {
    return dyn::scan([](auto c, auto) { return std::tuple{c * 2.0, c}; }, x0, {.length = n});
  };
  auto jf = dyn::jit(f);
  auto jg = dyn::jit(g);
  for (i64 n : {0, 1, 5})
    for (i64 m : {0, 3}) {
      auto [c, ys] = jf(n, m);
      auto [ec, eys] = dyn::eager(f)(n, m);
      // The ys' row size 2 * m is computed in the function: an implicit result first.
      auto r = dyn::eval_jaxpr(dyn::make_jaxpr(f)(n, m), {Array<i64>::scalar(n), Array<i64>::scalar(m)});
      REQUIRE(r.size() == 3);
      CHECK(r.at(0).get<i64>().data()[0] == 2 * m);
      check_same(c, r.at(1), ec);
      check_same(ys, r.at(2), eys);
      CHECK(ys.shape() == std::vector<i64>{n, 2 * m});
    }
  CHECK(jf.stats().compiles == 1);
  for (i64 n : {0, 3, 10}) {
    auto [c, ys] = jg(n, 1.0);
    auto [ec, eys] = dyn::eager(g)(n, 1.0);
    CHECK(dyn::array_equal(c, ec));
    CHECK(dyn::array_equal(ys, eys));
    CHECK(ys.shape() == std::vector<i64>{n});
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit scan: bad input is an error and the jitted function stays usable") {
  auto f = [](auto a, auto b) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c + std::get<0>(x), std::get<1>(x)}; }, 0.0,
                     std::tuple{a, b});
  };
  auto jf = dyn::jit(f);
  CHECK(message_of<dyn::ShapeError>([&] { (void)jf(Array<double>({3}), Array<double>({4})); }) ==
        "dyn::scan(): the xs have different leading dimensions: xs leaf #0 has shape (3,) but xs leaf #1 has shape "
        "(4,); every xs is scanned along axis 0, so their leading dimensions must be equal");
  auto a = dyn::array({1.0, 2.0, 3.0});
  auto [c, ys] = jf(a, a);
  CHECK(c.data()[0] == 6.0);
  CHECK(dyn::array_equal(ys, a));
  auto grow = [](auto x0, auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{dyn::concatenate({c, c}, 0), x}; }, x0, xs);
  };
  auto jg = dyn::jit(grow);
  CHECK(message_of<dyn::TypeError>([&] { (void)jg(Array<double>({2}), Array<double>({3})); }).find(
            "dyn::scan(): the carry must keep its type") == 0);
  auto [c2, ys2] = jf(a, a);
  CHECK(c2.data()[0] == 6.0);
}

}  // TEST_SUITE
