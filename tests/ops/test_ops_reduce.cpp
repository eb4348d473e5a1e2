// The user-level differential suite (issue 2): reductions and linear
// algebra, for every dtype they accept (helpers and the three-way check in
// ops_test.hpp). As in the other test_ops_*.cpp files, one function or
// closure type serves several checks, to keep check_all_ways instantiations
// few.
#include "ops_test.hpp"

#include <string_view>
#include <tuple>

namespace {

using namespace ops_test;

// One reduction over the given axes: "sum" "max" "min" "prod".
const auto reduce_over = [](std::string_view op, Shp axes) {
  return [op, axes](auto v) {
    using R = decltype(dyn::sum(v, axes));
    if (op == "sum") return R(dyn::sum(v, axes));
    if (op == "max") return R(dyn::max(v, axes));
    if (op == "min") return R(dyn::min(v, axes));
    if (op == "prod") return R(dyn::prod(v, axes));
    throw std::logic_error("reduce_over: unknown op");
  };
};

}  // namespace

// ===========================================================================
// Reductions.

TEST_CASE_TEMPLATE("ops: sum max min prod mean, with and without axes", T, i32, i64, float, double) {
  using R = inexact<T>;
  const auto x = mk<T>({2, 3}, {1, -2, 3, 4, 5, -6});
  // Every reduction of x in one function (one instantiation).
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::sum(v), dyn::sum(v, {0}), dyn::sum(v, {1}), dyn::sum(v, {-1}),
                               dyn::sum(v, {0, 1}), dyn::sum(v, {-2}),                                  // 0-5
                               dyn::max(v), dyn::max(v, {0}), dyn::max(v, {-1}),                        // 6-8
                               dyn::min(v), dyn::min(v, {0}), dyn::min(v, {1}),                         // 9-11
                               dyn::prod(v), dyn::prod(v, {0}), dyn::prod(v, {-1}),                     // 12-14
                               dyn::mean(v), dyn::mean(v, {0}), dyn::mean(v, {-1}));                    // 15-17
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {}, {5});
  CHECK_ARR(T, std::get<1>(r), {3}, {5, 3, -3});
  CHECK_ARR(T, std::get<2>(r), {2}, {2, 3});
  CHECK_ARR(T, std::get<3>(r), {2}, {2, 3});
  CHECK_ARR(T, std::get<4>(r), {}, {5});
  CHECK_ARR(T, std::get<5>(r), {3}, {5, 3, -3});

  CHECK_ARR(T, std::get<6>(r), {}, {5});
  CHECK_ARR(T, std::get<7>(r), {3}, {4, 5, 3});
  CHECK_ARR(T, std::get<8>(r), {2}, {3, 5});

  CHECK_ARR(T, std::get<9>(r), {}, {-6});
  CHECK_ARR(T, std::get<10>(r), {3}, {1, -2, -6});
  CHECK_ARR(T, std::get<11>(r), {2}, {-2, -6});

  CHECK_ARR(T, std::get<12>(r), {}, {720});
  CHECK_ARR(T, std::get<13>(r), {3}, {4, -10, -18});
  CHECK_ARR(T, std::get<14>(r), {2}, {-6, -120});

  // mean is computed in a float type (f32 for integers): sum / count.
  CHECK_ARR(R, std::get<15>(r), {}, {static_cast<double>(R(5) / R(6))});
  CHECK_ARR(R, std::get<16>(r), {3}, {2.5, 1.5, -1.5});
  CHECK_ARR(R, std::get<17>(r), {2}, {static_cast<double>(R(2) / R(3)), 1});

  // An explicitly empty axis list reduces nothing.
  CHECK_ARR(T, check_all_ways(reduce_over("sum", {}), x), {2, 3}, {1, -2, 3, 4, 5, -6});
  // A 3-D reduction over non-adjacent axes: x3[i][j][k] = 12i + 4j + k.
  const auto x3 = seq<T>({2, 3, 4});
  CHECK_ARR(T, check_all_ways(reduce_over("sum", {0, 2}), x3), {3}, {60, 92, 124});
  CHECK_ARR(T, check_all_ways(reduce_over("max", {-1, 0}), x3), {3}, {15, 19, 23});

  CHECK_THROWS_AS(dyn::sum(x, {2}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::sum(x, {0, -2}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::make_jaxpr(reduce_over("max", {-3}))(x), dyn::IndexError);
}

TEST_CASE("ops: reductions of bools: sum and prod are i64, max/min bool, mean f32") {
  const auto x = mk<bool>({2, 3}, {1, 0, 1, 1, 1, 0});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::sum(v), dyn::sum(v, {0}), dyn::sum(v, {1}), dyn::prod(v), dyn::prod(v, {0}),
                               dyn::max(v), dyn::max(v, {1}), dyn::min(v), dyn::min(v, {0}), dyn::mean(v),
                               dyn::mean(v, {0}));
      },
      x);
  CHECK_ARR(i64, std::get<0>(r), {}, {4});
  CHECK_ARR(i64, std::get<1>(r), {3}, {2, 1, 1});
  CHECK_ARR(i64, std::get<2>(r), {2}, {2, 2});
  CHECK_ARR(i64, std::get<3>(r), {}, {0});
  CHECK_ARR(i64, std::get<4>(r), {3}, {1, 0, 0});
  CHECK_ARR(bool, std::get<5>(r), {}, {1});
  CHECK_ARR(bool, std::get<6>(r), {2}, {1, 1});
  CHECK_ARR(bool, std::get<7>(r), {}, {0});
  CHECK_ARR(bool, std::get<8>(r), {3}, {1, 0, 0});
  CHECK_ARR(float, std::get<9>(r), {}, {static_cast<double>(4.0f / 6.0f)});
  CHECK_ARR(float, std::get<10>(r), {3}, {1, 0.5, 0.5});
}

TEST_CASE_TEMPLATE("ops: float reductions propagate NaN", T, float, double) {
  // One function for both checks below: NaN propagation (first four results)
  // and the identities of reductions over an empty axis (last four).
  const auto f = [](auto v) {
    return std::make_tuple(dyn::max(v, {1}), dyn::min(v, {1}), dyn::sum(v, {0}), dyn::max(v), dyn::sum(v, {0}),
                           dyn::prod(v, {0}), dyn::max(v, {0}), dyn::min(v, {0}));
  };
  const auto x = mk<T>({2, 2}, {1, kNaN, 2, 3});
  const auto r = check_all_ways(f, x);
  CHECK_ARR(T, std::get<0>(r), {2}, {kNaN, 3});
  CHECK_ARR(T, std::get<1>(r), {2}, {kNaN, 2});
  CHECK_ARR(T, std::get<2>(r), {2}, {3, kNaN});
  CHECK_ARR(T, std::get<3>(r), {}, {kNaN});
  // Reductions over an empty axis give the identity.
  const auto e = mk<T>({0, 2}, {});
  const auto z = check_all_ways(f, e);
  CHECK_ARR(T, std::get<4>(z), {2}, {0, 0});
  CHECK_ARR(T, std::get<5>(z), {2}, {1, 1});
  CHECK_ARR(T, std::get<6>(z), {2}, {-kInf, -kInf});
  CHECK_ARR(T, std::get<7>(z), {2}, {kInf, kInf});
}

// ===========================================================================
// Linear algebra.

TEST_CASE_TEMPLATE("ops: dot for ranks 1 and 2", T, i32, i64, float, double) {
  const auto A = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto B = mk<T>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto v = mk<T>({3}, {1, 2, -1});
  const auto w = mk<T>({2}, {2, -1});
  const auto d = [](auto a, auto b) { return dyn::dot(a, b); };
  CHECK_ARR(T, check_all_ways(d, v, mk<T>({3}, {4, 5, 6})), {}, {8});  // 4 + 10 - 6
  CHECK_ARR(T, check_all_ways(d, A, v), {2}, {2, 8});
  CHECK_ARR(T, check_all_ways(d, w, A), {3}, {-2, -1, 0});
  CHECK_ARR(T, check_all_ways(d, A, B), {2, 2}, {58, 64, 139, 154});
  CHECK_ARR(T, check_all_ways(d, B, A), {3, 3}, {39, 54, 69, 49, 68, 87, 59, 82, 105});
  const auto cj = dyn::make_jaxpr(d)(A, v);
  CHECK(prims(cj) == std::vector<std::string>{"dot_general"});
  CHECK_THROWS_AS(dyn::dot(A, A), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::make_jaxpr(d)(A, w), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: matmul, batched", T, i32, i64, float, double) {
  const auto A = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto B = mk<T>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto v = mk<T>({3}, {1, 2, -1});
  // X[0] = A, X[1] = [[1 0 0] [0 1 0]]; Y[0] = Y[1] = B.
  const auto X = mk<T>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const auto Y = mk<T>({2, 3, 2}, {7, 8, 9, 10, 11, 12, 7, 8, 9, 10, 11, 12});
  const auto m = [](auto a, auto b) { return dyn::matmul(a, b); };
  CHECK_ARR(T, check_all_ways(m, A, B), {2, 2}, {58, 64, 139, 154});
  CHECK_ARR(T, check_all_ways(m, A, v), {2}, {2, 8});
  CHECK_ARR(T, check_all_ways(m, X, Y), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  // Batch dimensions broadcast: (2,2,3) @ (3,2) and (3,) @ (2,3,2) and (2,2,3) @ (3,).
  CHECK_ARR(T, check_all_ways(m, X, B), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  CHECK_ARR(T, check_all_ways(m, v, Y), {2, 2}, {14, 16, 14, 16});
  CHECK_ARR(T, check_all_ways(m, X, v), {2, 2}, {2, 8, 1, 2});
  CHECK_ARR(T, check_all_ways(m, mk<T>({1, 2, 3}, {1, 2, 3, 4, 5, 6}), Y), {2, 2, 2},
            {58, 64, 139, 154, 58, 64, 139, 154});
  CHECK_THROWS_AS(dyn::matmul(A, A), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::matmul(X, mk<T>({3, 3, 2}, Vals(18, 1))), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::matmul(dyn::Array<T>::scalar(T(1)), A), dyn::ShapeError);
}

TEST_CASE("ops: a traced matmul keeps a closed-over operand as the constant it is") {
  const auto B = mk<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  const auto X = mk<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const auto f = [&](auto x) { return dyn::matmul(x, B); };
  CHECK_ARR(float, check_all_ways(f, X), {2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  const auto cj = dyn::make_jaxpr(f)(X);
  REQUIRE(cj.consts.size() == 1);
  CHECK(cj.consts[0].data() == B.data());  // the user's buffer, not a broadcast copy of it
  CHECK(prims(cj) == std::vector<std::string>{"dot_general"});  // no broadcast of B (jnp.matmul)
}

TEST_CASE("ops: dot and matmul promote mixed dtypes") {
  const auto A = mk<i32>({2, 2}, {1, 2, 3, 4});
  const auto B = mk<double>({2, 2}, {0.5, 0, 0, 0.25});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return dyn::dot(a, b); }, A, B), {2, 2}, {0.5, 0.5, 1.5, 1});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return dyn::matmul(a, b); }, A, B), {2, 2}, {0.5, 0.5, 1.5, 1});
  CHECK_ARR(i32, check_all_ways([](auto a) { return dyn::dot(a, dyn::Array<i32>::scalar(2)); }, A), {2, 2}, {2, 4, 6, 8});
}
