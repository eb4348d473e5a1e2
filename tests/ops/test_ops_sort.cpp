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

// argsort (jnp.argsort, stable), sort_key_val (lax.sort_key_val) and top_k
// (lax.top_k): lax.sort of several operands and the top_k primitive.

TEST_CASE_TEMPLATE("ops: argsort is stable, along every axis, NaNs last", T, i32, i64, float, double) {
  // Ties keep their order: the two 1s at positions 1 and 3.
  CHECK_ARR(i32, check_all_ways([](auto v) { return dyn::argsort(v); }, mk<T>({4}, {3, 1, 2, 1})), {4}, {1, 3, 2, 0});
  const auto x = mk<T>({2, 3}, {3, -7, 7, -1, 4, -1});
  const auto r = check_all_ways([](auto v) { return std::make_tuple(dyn::argsort(v), dyn::argsort(v, 0)); }, x);
  CHECK_ARR(i32, std::get<0>(r), {2, 3}, {1, 0, 2, 0, 2, 1});
  CHECK_ARR(i32, std::get<1>(r), {2, 3}, {1, 0, 1, 0, 1, 0});
  CHECK_ARR(i32, check_all_ways([](auto v) { return dyn::argsort(v, 0); }, mk<T>({0, 3}, {})), {0, 3}, {});
}

TEST_CASE_TEMPLATE("ops: argsort of floats: NaNs last, -0.0 and 0.0 equal (their order kept)", T, float, double) {
  const auto x = mk<T>({6}, {kNaN, 1, -kInf, 0.0, -0.0, kNaN});
  CHECK_ARR(i32, check_all_ways([](auto v) { return dyn::argsort(v); }, x), {6}, {2, 3, 4, 1, 0, 5});
}

TEST_CASE("ops: argsort of bool: false first, stable") {
  CHECK_ARR(i32, check_all_ways([](auto v) { return dyn::argsort(v); }, mk<bool>({4}, {1, 0, 1, 0})), {4}, {1, 3, 0, 2});
}

TEST_CASE("ops: sort_key_val sorts values by their keys") {
  const auto r = check_all_ways([](auto k, auto v) { return dyn::sort_key_val(k, v); }, mk<double>({3}, {3, 1, 2}),
                                mk<i32>({3}, {10, 20, 30}));
  CHECK_ARR(double, std::get<0>(r), {3}, {1, 2, 3});
  CHECK_ARR(i32, std::get<1>(r), {3}, {20, 30, 10});
  // Along axis 0, equal keys keep their values' order.
  const auto c = check_all_ways([](auto k, auto v) { return dyn::sort_key_val(k, v, 0); },
                                mk<i64>({3, 2}, {2, 0, 1, 0, 2, 0}), mk<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  CHECK_ARR(i64, std::get<0>(c), {3, 2}, {1, 0, 2, 0, 2, 0});
  CHECK_ARR(float, std::get<1>(c), {3, 2}, {3, 2, 1, 4, 5, 6});
}

TEST_CASE_TEMPLATE("ops: top_k: the k largest along the last axis, descending, lower index first on ties", T, i32, i64,
                   float, double) {
  // jax.lax.top_k's documented example: x = [9, 3, 6, 4, 10], k = 3.
  const auto r = check_all_ways([](auto v) { return dyn::top_k(v, 3); }, mk<T>({5}, {9, 3, 6, 4, 10}));
  CHECK_ARR(T, std::get<0>(r), {3}, {10, 9, 6});
  CHECK_ARR(i32, std::get<1>(r), {3}, {4, 0, 2});
  // Rows; ties (the 5s) lower index first; k = 0 and k = the whole axis.
  const auto x = mk<T>({2, 4}, {5, 1, 5, 7, -2, 0, -2, -3});
  const auto t = check_all_ways([](auto v) { return std::tuple_cat(dyn::top_k(v, 2), dyn::top_k(v, 0), dyn::top_k(v, 4)); },
                                x);
  CHECK_ARR(T, std::get<0>(t), {2, 2}, {7, 5, 0, -2});
  CHECK_ARR(i32, std::get<1>(t), {2, 2}, {3, 0, 1, 0});
  CHECK_ARR(T, std::get<2>(t), {2, 0}, {});
  CHECK_ARR(T, std::get<4>(t), {2, 4}, {7, 5, 5, 1, 0, -2, -2, -3});
  CHECK_ARR(i32, std::get<5>(t), {2, 4}, {3, 0, 2, 1, 1, 0, 2, 3});
}

TEST_CASE_TEMPLATE("ops: top_k of floats: NaNs largest", T, float, double) {
  const auto r = check_all_ways([](auto v) { return dyn::top_k(v, 4); }, mk<T>({5}, {1, kNaN, 3, -kInf, 3}));
  CHECK_ARR(T, std::get<0>(r), {4}, {kNaN, 3, 3, 1});
  CHECK_ARR(i32, std::get<1>(r), {4}, {1, 2, 4, 0});
}

TEST_CASE("ops: argsort, sort_key_val and top_k errors name the operation, the shapes and the user's line") {
  const auto x = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_CONTAINING(dyn::IndexError, "argsort: axis 2 is out of bounds for an array of rank 2", dyn::argsort(x, 2));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "sort: all operands must have the same shape, got f32[2,3], f64[3]",
                          dyn::sort_key_val(x, mk<double>({3}, {1, 2, 3})));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "top_k: k=4 is larger than the size 3 of axis 1 of an array of shape (2, 3)",
                          dyn::top_k(x, 4));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "top_k: k must be nonnegative, got k=-1", dyn::top_k(x, -1));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "top_k: the operand must have rank >= 1, got shape ()",
                          dyn::top_k(dyn::Array<float>::scalar(1.0f), 1));
  CHECK_THROWS_CONTAINING(dyn::TypeError, "top_k does not accept dtype bool",
                          dyn::top_k(mk<bool>({2}, {1, 0}), 1));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "test_ops_sort.cpp", dyn::top_k(x, 4));
  // Traced: the same errors at trace time.
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "top_k: k=4 is larger than the size 3",
                          dyn::make_jaxpr([](auto v) { return std::get<0>(dyn::top_k(v, 4)); })(x));
}
