// The user-level differential suite: dyn::sort (API.md §13; primitive sort,
// lax.sort of one operand) along every axis, every dtype, NaNs last and
// stable on equal keys (-0.0 and 0.0 keep their order, as in JAX), run three
// ways (eager, make_jaxpr, eval_jaxpr; ops_test.hpp) against hand-computed
// numbers.
#include "ops_test.hpp"

#include <tuple>

namespace {

using namespace ops_test;

}  // namespace

TEST_CASE_TEMPLATE("ops: sort along every axis, the last by default", T, i32, i64, float, double) {
  const auto x = mk<T>({2, 3}, {3, -7, 7, -1, 4, -1});
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::sort(v), dyn::sort(v, 0), dyn::sort(v, -2), dyn::sort(v, 1)); }, x);
  CHECK_ARR(T, std::get<0>(r), {2, 3}, {-7, 3, 7, -1, -1, 4});
  CHECK_ARR(T, std::get<1>(r), {2, 3}, {-1, -7, -1, 3, 4, 7});
  CHECK_ARR(T, std::get<2>(r), {2, 3}, {-1, -7, -1, 3, 4, 7});
  CHECK_ARR(T, std::get<3>(r), {2, 3}, {-7, 3, 7, -1, -1, 4});
  // The middle axis of a 3-D array (inner axes after it), reversed data.
  const auto y = check_all_ways([](auto v) { return dyn::sort(-v, 1); }, seq<T>({2, 3, 2}));
  CHECK_ARR(T, y, {2, 3, 2}, {-4, -5, -2, -3, -0.0, -1, -10, -11, -8, -9, -6, -7});  // -0.0: the float -x of 0
  // Empty and length-1 axes.
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::sort(v, 0); }, mk<T>({0, 3}, {})), {0, 3}, {});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::sort(v); }, mk<T>({3, 1}, {5, -1, 2})), {3, 1}, {5, -1, 2});
}

TEST_CASE_TEMPLATE("ops: sort of floats puts NaNs last and keeps -0.0 and 0.0 in their order", T, float, double) {
  const auto x = mk<T>({2, 5}, {kNaN, 1, -kInf, 0.0, -0.0,  //
                                -0.0, kNaN, kInf, 0.0, -2});
  const auto r = check_all_ways([](auto v) { return dyn::sort(v); }, x);
  CHECK_ARR(T, r, {2, 5}, {-kInf, 0.0, -0.0, 1, kNaN,  //
                           -2, -0.0, 0.0, kInf, kNaN});
}

TEST_CASE("ops: sort of bool: false first") {
  CHECK_ARR(bool, check_all_ways([](auto v) { return dyn::sort(v); }, mk<bool>({4}, {1, 0, 1, 0})), {4}, {0, 0, 1, 1});
}

TEST_CASE("ops: sort errors name the operation, the axis and the rank") {
  const auto x = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_CONTAINING(dyn::IndexError, "sort: axis 2 is out of bounds for an array of rank 2", dyn::sort(x, 2));
  CHECK_THROWS_CONTAINING(dyn::IndexError, "sort: axis -1 is out of bounds for an array of rank 0",
                          dyn::sort(dyn::Array<float>::scalar(1.0f)));
  CHECK_THROWS_CONTAINING(dyn::IndexError, "test_ops_sort.cpp", dyn::sort(x, -3));
}
