// The user-level differential suite: the reductions of API.md §13 beyond
// sum/max/min/prod/mean: argmax argmin (i32, first occurrence, a NaN is the
// extremum as in JAX and NumPy), any all (primitives reduce_or/reduce_and),
// var (jnp.var, composed of existing primitives), each with dyn::keepdims;
// run three ways (eager, make_jaxpr, eval_jaxpr; ops_test.hpp) against
// hand-computed numbers.
#include "ops_test.hpp"

#include <tuple>

namespace {

using namespace ops_test;

}  // namespace

TEST_CASE_TEMPLATE("ops: argmax and argmin along every axis, first occurrence, i32, keepdims", T, i32, i64, float,
                   double) {
  const auto x = mk<T>({2, 3}, {3, 7, 7, -1, -4, -1});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::argmax(v, 1), dyn::argmax(v, 0), dyn::argmax(v, -1),   // 0-2
                               dyn::argmin(v, 1), dyn::argmin(v, -2),                        // 3-4
                               dyn::argmax(v, 1, dyn::keepdims), dyn::argmin(v, 0, dyn::keepdims));  // 5-6
      },
      x);
  CHECK_ARR(i32, std::get<0>(r), {2}, {1, 0});  // the first of the two 7s; the first of the two -1s
  CHECK_ARR(i32, std::get<1>(r), {3}, {0, 0, 0});
  CHECK_ARR(i32, std::get<2>(r), {2}, {1, 0});
  CHECK_ARR(i32, std::get<3>(r), {2}, {0, 1});
  CHECK_ARR(i32, std::get<4>(r), {3}, {1, 1, 1});
  CHECK_ARR(i32, std::get<5>(r), {2, 1}, {1, 0});
  CHECK_ARR(i32, std::get<6>(r), {1, 3}, {1, 1, 1});

  // The middle axis of a 3-D array: x3[i][j][k] = 12i + 4j + k grows along it.
  const auto y = check_all_ways([](auto v) { return std::make_tuple(dyn::argmax(v, 1), dyn::argmin(v, 1)); },
                                seq<T>({2, 3, 4}));
  CHECK_ARR(i32, std::get<0>(y), {2, 4}, {2, 2, 2, 2, 2, 2, 2, 2});
  CHECK_ARR(i32, std::get<1>(y), {2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  // A rank-0 operand has no axis 0; a length-1 axis gives 0.
  CHECK_ARR(i32, check_all_ways([](auto v) { return dyn::argmin(v, 0); }, mk<T>({1}, {5})), {}, {0});
}

TEST_CASE_TEMPLATE("ops: argmax and argmin of floats: the first NaN wins, as in JAX and NumPy", T, float, double) {
  const auto x = mk<T>({3, 4}, {1, kNaN, 3, kNaN,   //
                                kNaN, -kInf, kInf, 0,  //
                                -0.0, 0.0, -kInf, -kInf});
  const auto r = check_all_ways([](auto v) { return std::make_tuple(dyn::argmax(v, 1), dyn::argmin(v, 1), dyn::argmax(v, 0)); }, x);
  CHECK_ARR(i32, std::get<0>(r), {3}, {1, 0, 0});  // -0.0 == 0.0: the first
  CHECK_ARR(i32, std::get<1>(r), {3}, {1, 0, 2});
  CHECK_ARR(i32, std::get<2>(r), {4}, {1, 0, 1, 0});
}

TEST_CASE("ops: argmax and argmin of bool: true is the larger") {
  const auto b = mk<bool>({2, 3}, {0, 1, 1, 1, 1, 0});
  const auto r = check_all_ways([](auto v) { return std::make_tuple(dyn::argmax(v, 1), dyn::argmin(v, 1)); }, b);
  CHECK_ARR(i32, std::get<0>(r), {2}, {1, 0});
  CHECK_ARR(i32, std::get<1>(r), {2}, {0, 2});
}

TEST_CASE("ops: argmax and argmin errors name the operation, the axis and the shape") {
  const auto x = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_CONTAINING(dyn::IndexError, "argmax: axis 2 is out of bounds for an array of rank 2", dyn::argmax(x, 2));
  CHECK_THROWS_CONTAINING(dyn::IndexError, "argmin: axis -3 is out of bounds for an array of rank 2",
                          dyn::argmin(x, -3));
  // jnp.argmax of an empty axis is an error (there is no first maximum).
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "argmax: axis 1 of an array of shape (2, 0) is empty; an empty axis has no maximum",
                          dyn::argmax(mk<float>({2, 0}, {}), 1));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "argmin: axis 0 of an array of shape (0,) is empty",
                          dyn::make_jaxpr([](auto v) { return dyn::argmin(v, 0); })(mk<i32>({0}, {})));
  // The user's line is appended.
  CHECK_THROWS_CONTAINING(dyn::IndexError, "test_ops_argreduce.cpp", dyn::argmax(x, 5));
}

TEST_CASE_TEMPLATE("ops: any and all over all axes, given axes, keepdims; non-bool operands test != 0", T, bool, i32,
                   float) {
  const auto x = mk<T>({2, 3}, {0, 2, 0, 0, 0, 0});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::any(v), dyn::all(v), dyn::any(v, {1}), dyn::all(v, {0}),       // 0-3
                               dyn::any(v, {0}, dyn::keepdims), dyn::all(v, dyn::keepdims),        // 4-5
                               dyn::all(v == v), dyn::any(v, {-1}));                                // 6-7
      },
      x);
  CHECK_ARR(bool, std::get<0>(r), {}, {1});
  CHECK_ARR(bool, std::get<1>(r), {}, {0});
  CHECK_ARR(bool, std::get<2>(r), {2}, {1, 0});
  CHECK_ARR(bool, std::get<3>(r), {3}, {0, 0, 0});
  CHECK_ARR(bool, std::get<4>(r), {1, 3}, {0, 1, 0});
  CHECK_ARR(bool, std::get<5>(r), {1, 1}, {0});
  CHECK_ARR(bool, std::get<6>(r), {}, {1});
  CHECK_ARR(bool, std::get<7>(r), {2}, {1, 0});
  // Empty: any is false, all is true (the identities).
  const auto e = check_all_ways([](auto v) { return std::make_tuple(dyn::any(v), dyn::all(v), dyn::all(v, {1})); },
                                mk<T>({2, 0}, {}));
  CHECK_ARR(bool, std::get<0>(e), {}, {0});
  CHECK_ARR(bool, std::get<1>(e), {}, {1});
  CHECK_ARR(bool, std::get<2>(e), {2}, {1, 1});
}

TEST_CASE("ops: any and all of floats: NaN is true (it is != 0), -0.0 is false") {
  const auto x = mk<double>({3}, {kNaN, -0.0, 1.0});
  const auto r = check_all_ways([](auto v) { return std::make_tuple(dyn::all(v), dyn::any(v, {0})); }, x);
  CHECK_ARR(bool, std::get<0>(r), {}, {0});
  CHECK_ARR(bool, std::get<1>(r), {}, {1});
  const auto n = check_all_ways([](auto v) { return dyn::all(v); }, mk<double>({2}, {kNaN, kInf}));
  CHECK_ARR(bool, n, {}, {1});
}

TEST_CASE("ops: dyn::all() without an argument is the whole-axis index tag, dyn::all(x) the reduction") {
  static_assert(std::is_same_v<decltype(dyn::all()), dyn::all_t>);
  static_assert(std::is_empty_v<dyn::all_t>);
  const auto b = mk<bool>({2}, {1, 1});
  static_assert(std::is_same_v<decltype(dyn::all(b)), dyn::Array<bool>>);
  CHECK_ARR(bool, dyn::all(b), {}, {1});
}

TEST_CASE_TEMPLATE("ops: var over all axes and given axes, keepdims; ints computed in f32", T, i32, float, double) {
  using R = inexact<T>;
  const auto x = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::var(v), dyn::var(v, {1}), dyn::var(v, {0}, dyn::keepdims), dyn::var(v, dyn::keepdims)); },
      x);
  CHECK_ARR(R, std::get<0>(r), {}, {static_cast<double>(R(17.5) / R(6))});
  CHECK_ARR(R, std::get<1>(r), {2}, {static_cast<double>(R(2) / R(3)), static_cast<double>(R(2) / R(3))});
  CHECK_ARR(R, std::get<2>(r), {1, 3}, {2.25, 2.25, 2.25});
  CHECK_ARR(R, std::get<3>(r), {1, 1}, {static_cast<double>(R(17.5) / R(6))});
  // One element: 0; a NaN propagates.
  CHECK_ARR(R, check_all_ways([](auto v) { return dyn::var(v); }, mk<T>({1}, {7})), {}, {0});
}

TEST_CASE_TEMPLATE("ops: var with ddof divides by N - ddof, as jnp.var; NaN where N - ddof <= 0", T, i32, float,
                   double) {
  using R = inexact<T>;
  // x = [[1, 2, 3], [4, 5, 6]]: squared deviations sum to 17.5 over all six,
  // 2 along each row, 4.5 down each column.
  const auto x = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::var(v, dyn::ddof(1)), dyn::var(v, {1}, dyn::ddof(1)),
                               dyn::var(v, {0}, dyn::ddof(1), dyn::keepdims), dyn::var(v, dyn::ddof(2), dyn::keepdims),
                               dyn::var(v, dyn::ddof(-1)), dyn::var(v, {1}, dyn::ddof(0)));
      },
      x);
  CHECK_ARR(R, std::get<0>(r), {}, {3.5});    // 17.5 / 5
  CHECK_ARR(R, std::get<1>(r), {2}, {1, 1});  // 2 / 2
  CHECK_ARR(R, std::get<2>(r), {1, 3}, {4.5, 4.5, 4.5});
  CHECK_ARR(R, std::get<3>(r), {1, 1}, {4.375});  // 17.5 / 4
  CHECK_ARR(R, std::get<4>(r), {}, {2.5});        // 17.5 / 7
  CHECK_ARR(R, std::get<5>(r), {2}, {static_cast<double>(R(2) / R(3)), static_cast<double>(R(2) / R(3))});
  // N - ddof <= 0: NaN (jnp.var), not inf or a negative variance.
  CHECK_ARR(R, check_all_ways([](auto v) { return dyn::var(v, dyn::ddof(1)); }, mk<T>({1}, {7})), {}, {kNaN});
  CHECK_ARR(R, check_all_ways([](auto v) { return dyn::var(v, {0}, dyn::ddof(3)); }, x), {3}, {kNaN, kNaN, kNaN});
}

TEST_CASE("ops: var of bool is computed in f32; a NaN propagates") {
  CHECK_ARR(float, check_all_ways([](auto v) { return dyn::var(v); }, mk<bool>({4}, {1, 0, 1, 1})), {}, {0.1875});
  const auto n = check_all_ways([](auto v) { return dyn::var(v, {0}); }, mk<double>({3}, {1, kNaN, 2}));
  CHECK_ARR(double, n, {}, {kNaN});
}
