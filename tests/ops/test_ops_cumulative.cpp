// The user-level differential suite: cumulative reductions (cumsum cumprod
// cummax cummin, API.md §13) on every axis, forwards and reversed, and
// keepdims on every reduction, run three ways (eager, make_jaxpr,
// eval_jaxpr; ops_test.hpp) against hand-computed numbers.
#include "ops_test.hpp"

#include <string>
#include <tuple>

namespace {

using namespace ops_test;

}  // namespace

TEST_CASE_TEMPLATE("ops: cumsum cumprod cummax cummin on every axis, forwards and reversed", T, i32, i64, float,
                   double) {
  const auto x = mk<T>({2, 3}, {1, -2, 3, 4, 5, -6});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::cumsum(v, 0), dyn::cumsum(v, 1), dyn::cumsum(v, -1, true),      // 0-2
                               dyn::cumprod(v, 1), dyn::cumprod(v, 0, true),                         // 3-4
                               dyn::cummax(v, 1), dyn::cummax(v, -2, true),                          // 5-6
                               dyn::cummin(v, 1), dyn::cummin(v, 1, true), dyn::cummin(v, 0));       // 7-9
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {2, 3}, {1, -2, 3, 5, 3, -3});
  CHECK_ARR(T, std::get<1>(r), {2, 3}, {1, -1, 2, 4, 9, 3});
  CHECK_ARR(T, std::get<2>(r), {2, 3}, {2, 1, 3, 3, -1, -6});
  CHECK_ARR(T, std::get<3>(r), {2, 3}, {1, -2, -6, 4, 20, -120});
  CHECK_ARR(T, std::get<4>(r), {2, 3}, {4, -10, -18, 4, 5, -6});
  CHECK_ARR(T, std::get<5>(r), {2, 3}, {1, 1, 3, 4, 5, 5});
  CHECK_ARR(T, std::get<6>(r), {2, 3}, {4, 5, 3, 4, 5, -6});
  CHECK_ARR(T, std::get<7>(r), {2, 3}, {1, -2, -2, 4, 4, -6});
  CHECK_ARR(T, std::get<8>(r), {2, 3}, {-2, -2, 3, -6, -6, -6});
  CHECK_ARR(T, std::get<9>(r), {2, 3}, {1, -2, 3, 1, -2, -6});

  // The middle axis of a 3-D array (inner axes after it): x3[i][j][k] = 12i + 4j + k.
  const auto y = check_all_ways([](auto v) { return dyn::cumsum(v, 1); }, seq<T>({2, 3, 4}));
  CHECK_ARR(T, y, {2, 3, 4}, {0, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21,
                              12, 13, 14, 15, 28, 30, 32, 34, 48, 51, 54, 57});
  // Empty arrays and an axis of length 1.
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::cumprod(v, 0); }, mk<T>({0, 3}, {})), {0, 3}, {});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::cummax(v, -1, true); }, mk<T>({3, 1}, {7, -1, 2})), {3, 1},
            {7, -1, 2});
}

TEST_CASE("ops: cumsum and cumprod of bool count in i64; cummax and cummin reject bool") {
  const auto b = mk<bool>({4}, {1, 0, 1, 1});
  const auto r = check_all_ways([](auto v) { return std::make_tuple(dyn::cumsum(v, 0), dyn::cumprod(v, 0, true)); }, b);
  CHECK_ARR(i64, std::get<0>(r), {4}, {1, 1, 2, 3});
  CHECK_ARR(i64, std::get<1>(r), {4}, {0, 0, 1, 1});
  CHECK_THROWS_WITH_AS(dyn::cummax(b, 0),
                       doctest::Contains("cummax does not accept dtype bool; it requires a numeric dtype (integer or "
                                         "floating-point)"),
                       dyn::TypeError);
  CHECK_THROWS_AS(dyn::make_jaxpr([](auto v) { return dyn::cummin(v, 0); })(b), dyn::TypeError);
}

TEST_CASE("ops: cumulative float semantics: NaN propagates, the first element is copied, no reassociation") {
  const auto x = mk<double>({5}, {1, kNaN, 3, -kInf, 0});
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::cummax(v, 0), dyn::cummin(v, 0), dyn::cumsum(v, 0, true)); }, x);
  CHECK_ARR(double, std::get<0>(r), {5}, {1, kNaN, kNaN, kNaN, kNaN});
  CHECK_ARR(double, std::get<1>(r), {5}, {1, kNaN, kNaN, kNaN, kNaN});
  CHECK_ARR(double, std::get<2>(r), {5}, {kNaN, kNaN, -kInf, -kInf, 0});
  // numpy's order: the first element as it is (-0.0 stays -0.0), then left
  // to right (1e16 + 1 - 1e16 is 0 in f64, not 1).
  const auto z = check_all_ways([](auto v) { return dyn::cumsum(v, 0); }, mk<double>({4}, {-0.0, 1e16, 1, -1e16}));
  CHECK_ARR(double, z, {4}, {-0.0, 1e16, 1e16, 0});
  CHECK(std::signbit(z.data()[0]));
}

TEST_CASE("ops: a cumulative op's axis out of range is an IndexError naming the op, the axis and the shape") {
  const auto x = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const int line = __LINE__ + 2;
  try {
    (void)dyn::cumsum(x, 2);
    FAIL("expected dyn::IndexError");
  } catch (const dyn::IndexError& e) {
    CHECK(std::string(e.what()) == "cumsum: axis 2 is out of bounds for an array of shape (2, 3); the axis must be in "
                                   "[-2, 2) (at " __FILE__ ":" + std::to_string(line) + ")");
  }
  CHECK_THROWS_WITH_AS(dyn::cummin(x, -3), doctest::Contains("cummin: axis -3 is out of bounds for an array of shape (2, 3)"),
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(dyn::make_jaxpr([](auto v) { return dyn::cumprod(v, 0); })(mk<float>({}, {1})),
                       doctest::Contains("cumprod: axis 0 is out of bounds for an array of shape ()"), dyn::IndexError);
}

TEST_CASE_TEMPLATE("ops: keepdims on sum max min prod mean", T, i32, float) {
  using R = inexact<T>;
  const auto x = mk<T>({2, 3}, {1, -2, 3, 4, 5, -6});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::sum(v, {1}, dyn::keepdims), dyn::max(v, dyn::keepdims),
                               dyn::min(v, {0}, dyn::keepdims), dyn::prod(v, {-1}, dyn::keepdims),
                               dyn::mean(v, {0}, dyn::keepdims), dyn::mean(v, dyn::keepdims),
                               dyn::sum(v, {0, 1}, dyn::keepdims));
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {2, 1}, {2, 3});
  CHECK_ARR(T, std::get<1>(r), {1, 1}, {5});
  CHECK_ARR(T, std::get<2>(r), {1, 3}, {1, -2, -6});
  CHECK_ARR(T, std::get<3>(r), {2, 1}, {-6, -120});
  CHECK_ARR(R, std::get<4>(r), {1, 3}, {2.5, 1.5, -1.5});
  CHECK_ARR(R, std::get<5>(r), {1, 1}, {static_cast<double>(R(5) / R(6))});
  CHECK_ARR(T, std::get<6>(r), {1, 1}, {5});
  // Booleans sum in i64, with their axes kept; a rank-0 operand stays rank 0.
  CHECK_ARR(i64, check_all_ways([](auto v) { return dyn::sum(v, {0}, dyn::keepdims); }, mk<bool>({3, 2}, {1, 0, 1, 1, 0, 1})),
            {1, 2}, {2, 2});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::sum(v, dyn::keepdims); }, mk<T>({}, {7})), {}, {7});
  CHECK_THROWS_AS(dyn::sum(x, {2}, dyn::keepdims), dyn::IndexError);
}
