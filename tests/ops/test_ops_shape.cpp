// The user-level differential suite (issue 2), structural operations:
// creation functions and shape operations, for every dtype they accept
// (helpers and the three-way check in ops_test.hpp).
//
// As in test_ops_elementwise.cpp, the operations with their parameters are
// closures of a few types (factory lambdas capturing the parameters), so that
// check_all_ways is instantiated a few times per dtype, not once per call.
#include "ops_test.hpp"

#include <string>
#include <string_view>
#include <tuple>

namespace {

using namespace ops_test;

dyn::Shape to_dims(const Shp& s) { return dyn::Shape(s.begin(), s.end()); }

// The one-operand shape operations as one closure type: `fn` with integer
// parameters a, b, c.
const auto shape_op = [](std::string_view fn, Shp a, Shp b = {}, Shp c = {}) {
  return [fn, a, b, c](auto v) {
    using V = decltype(v);
    if (fn == "reshape") return V(dyn::reshape(v, to_dims(a)));
    if (fn == "transpose") return V(dyn::transpose(v, a));
    if (fn == "expand_dims") return V(dyn::expand_dims(v, a.at(0)));
    if (fn == "squeeze") return V(dyn::squeeze(v, a));
    if (fn == "broadcast_to") return V(dyn::broadcast_to(v, to_dims(a)));
    if (fn == "slice") return V(dyn::slice(v, a, b, c));
    if (fn == "dynamic_slice") return V(dyn::dynamic_slice(v, std::vector<dyn::Index>(a.begin(), a.end()), b));
    throw std::logic_error("shape_op: unknown function");
  };
};
const auto reshape_to = [](Shp sizes) { return shape_op("reshape", sizes); };
const auto transpose_by = [](Shp perm) { return shape_op("transpose", perm); };
const auto expand_at = [](i64 axis) { return shape_op("expand_dims", {axis}); };
const auto squeeze_at = [](Shp axes) { return shape_op("squeeze", axes); };
const auto broadcast_to_shape = [](Shp shape) { return shape_op("broadcast_to", shape); };
const auto slice_as = [](Shp starts, Shp limits, Shp strides) { return shape_op("slice", starts, limits, strides); };
const auto dynamic_slice_at = [](Shp starts, Shp sizes) { return shape_op("dynamic_slice", starts, sizes); };

// The two-operand ones: concatenate of p and q in the order of `which` ('p'
// or 'q') along axis a[0]; dynamic_update_slice(p, q, starts a).
const auto shape_op2 = [](std::string_view fn, std::string which, Shp a) {
  return [fn, which, a](auto p, auto q) {
    using V = decltype(p);
    if (fn == "concatenate") {
      std::vector<V> xs;
      for (char c : which) xs.push_back(c == 'p' ? p : q);
      return V(dyn::concatenate(xs, a.at(0)));
    }
    if (fn == "dynamic_update_slice") return V(dyn::dynamic_update_slice(p, q, std::vector<dyn::Index>(a.begin(), a.end())));
    throw std::logic_error("shape_op2: unknown function");
  };
};
const auto concatenate_as = [](std::string which, i64 axis) { return shape_op2("concatenate", which, {axis}); };
const auto dynamic_update_slice_at = [](Shp starts) { return shape_op2("dynamic_update_slice", "", starts); };

}  // namespace

// ===========================================================================
// Creation.

TEST_CASE_TEMPLATE("ops: zeros ones full arange", T, bool, i32, i64, float, double) {
  CHECK_ARR(T, dyn::zeros<T>({2, 3}), {2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_ARR(T, dyn::ones<T>({2}), {2}, {1, 1});
  CHECK_ARR(T, dyn::full<T>({2, 2}, cv<T>(7)), {2, 2}, {7, 7, 7, 7});
  CHECK_ARR(T, dyn::zeros<T>({0}), {0}, {});
  CHECK_ARR(T, dyn::ones<T>({}), {}, {1});
  if constexpr (std::is_same_v<T, bool>) {
    CHECK_THROWS_AS(dyn::arange<T>(3), dyn::TypeError);
  } else {
    CHECK_ARR(T, dyn::arange<T>(4), {4}, {0, 1, 2, 3});
    CHECK_ARR(T, dyn::arange<T>(0), {0}, {});
    CHECK_THROWS_AS(dyn::arange<T>(-1), dyn::ShapeError);
  }
  CHECK_THROWS_AS(dyn::zeros<T>({2, -1}), dyn::ShapeError);

  // With integer sizes they are concrete even inside a trace: a constant.
  const auto x = mk<T>({3}, {0, 1, 0});
  const auto f = [](auto v) {
    if constexpr (std::is_same_v<T, bool>) return v | dyn::ones<T>({3});
    else return v + dyn::ones<T>({3});
  };
  CHECK_ARR(T, check_all_ways(f, x), {3}, std::is_same_v<T, bool> ? Vals{1, 1, 1} : Vals{1, 2, 1});
  const auto cj = dyn::make_jaxpr(f)(x);
  CHECK(cj.consts.size() == 1);
  CHECK(cj.jaxpr->constvars.size() == 1);
}

TEST_CASE_TEMPLATE("ops: zeros_like ones_like full_like", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  const auto like = [](auto v) {
    return std::make_tuple(dyn::zeros_like(v), dyn::ones_like(v), dyn::full_like(v, 3), dyn::full_like(v, 2.7));
  };
  const auto r = check_all_ways(like, x);
  CHECK_ARR(T, std::get<0>(r), {2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK_ARR(T, std::get<1>(r), {2, 3}, {1, 1, 1, 1, 1, 1});
  CHECK_ARR(T, std::get<2>(r), {2, 3}, {3, 3, 3, 3, 3, 3});
  // Staged for a tracer, as jnp.zeros_like: one broadcast_in_dim, no constant.
  const auto cj = dyn::make_jaxpr([](auto v) { return dyn::zeros_like(v); })(x);
  CHECK(prims(cj) == std::vector<std::string>{"broadcast_in_dim"});
  CHECK(cj.consts.empty());
  CHECK(outvar_types(cj) == std::vector<std::string>{std::string(dyn::dtype_name(dyn::dtype_v<T>)) + "[2,3]"});
  // full_like converts the fill value to x's dtype: full_like(int, 2.7) == 2.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) CHECK_ARR(T, std::get<3>(r), {2, 3}, {2, 2, 2, 2, 2, 2});
  // On a concrete array they are concrete.
  static_assert(std::is_same_v<decltype(dyn::zeros_like(x)), dyn::Array<T>>);
}

// ===========================================================================
// Shape operations (every dtype: they only move elements).

TEST_CASE_TEMPLATE("ops: reshape", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  const Vals all = seq_at<T>({0, 1, 2, 3, 4, 5});
  CHECK_ARR(T, check_all_ways(reshape_to({3, 2}), x), {3, 2}, all);
  CHECK_ARR(T, check_all_ways(reshape_to({-1}), x), {6}, all);
  CHECK_ARR(T, check_all_ways(reshape_to({3, -1}), x), {3, 2}, all);
  CHECK_ARR(T, check_all_ways(reshape_to({1, -1, 2, 1}), x), {1, 3, 2, 1}, all);
  CHECK_ARR(T, check_all_ways(reshape_to({6}), x), {6}, all);
  CHECK_ARR(T, check_all_ways(reshape_to({}), seq<T>({1, 1})), {}, seq_at<T>({0}));
  CHECK_THROWS_AS(dyn::reshape(x, {4, -1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::reshape(x, {-1, -1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::reshape(x, {7}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::make_jaxpr(reshape_to({4, 2}))(x), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: transpose", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});
  CHECK_ARR(T, check_all_ways(transpose_by({}), x), {3, 2}, seq_at<T>({0, 3, 1, 4, 2, 5}));
  CHECK_ARR(T, check_all_ways(transpose_by({1, 0}), x), {3, 2}, seq_at<T>({0, 3, 1, 4, 2, 5}));
  CHECK_ARR(T, check_all_ways(transpose_by({0, 1}), x), {2, 3}, seq_at<T>({0, 1, 2, 3, 4, 5}));
  // (2,3,4) -> axes (2,0,1): out[k][i][j] = x[i][j][k] = 12i + 4j + k.
  const auto y = seq<T>({2, 3, 4});
  std::vector<i64> idx;
  for (i64 k = 0; k < 4; ++k)
    for (i64 i = 0; i < 2; ++i)
      for (i64 j = 0; j < 3; ++j) idx.push_back(12 * i + 4 * j + k);
  CHECK_ARR(T, check_all_ways(transpose_by({2, 0, 1}), y), {4, 2, 3}, seq_at<T>(idx));
  CHECK_ARR(T, check_all_ways(transpose_by({-1, 0, 1}), y), {4, 2, 3}, seq_at<T>(idx));
  CHECK_THROWS_AS(dyn::transpose(y, {0, 0, 1}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::transpose(y, {0, 1}), dyn::ShapeError);
  // Without a permutation: the axes reversed.
  CHECK_ARR(T, dyn::transpose(x), {3, 2}, seq_at<T>({0, 3, 1, 4, 2, 5}));
}

TEST_CASE_TEMPLATE("ops: expand_dims squeeze", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({3});
  const Vals v3 = seq_at<T>({0, 1, 2});
  CHECK_ARR(T, check_all_ways(expand_at(0), x), {1, 3}, v3);
  CHECK_ARR(T, check_all_ways(expand_at(1), x), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways(expand_at(-1), x), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways(expand_at(1), seq<T>({2, 3})), {2, 1, 3}, seq_at<T>({0, 1, 2, 3, 4, 5}));
  CHECK_THROWS_AS(dyn::expand_dims(x, 2), dyn::IndexError);

  const auto y = seq<T>({1, 3, 1});
  CHECK_ARR(T, check_all_ways(squeeze_at({}), y), {3}, v3);
  CHECK_ARR(T, check_all_ways(squeeze_at({0}), y), {3, 1}, v3);
  CHECK_ARR(T, check_all_ways(squeeze_at({-1}), y), {1, 3}, v3);
  CHECK_ARR(T, check_all_ways(squeeze_at({0, 2}), y), {3}, v3);
  CHECK_ARR(T, check_all_ways(squeeze_at({}), seq<T>({1, 1})), {}, seq_at<T>({0}));
  CHECK_THROWS_AS(dyn::squeeze(y, {1}), dyn::ShapeError);
  // Without an axis list: every size-1 axis.
  CHECK_ARR(T, dyn::squeeze(y), {3}, v3);
}

TEST_CASE_TEMPLATE("ops: broadcast_to", T, bool, i32, i64, float, double) {
  CHECK_ARR(T, check_all_ways(broadcast_to_shape({2, 3}), seq<T>({3})), {2, 3}, seq_at<T>({0, 1, 2, 0, 1, 2}));
  CHECK_ARR(T, check_all_ways(broadcast_to_shape({3, 2}), seq<T>({3, 1})), {3, 2}, seq_at<T>({0, 0, 1, 1, 2, 2}));
  CHECK_ARR(T, check_all_ways(broadcast_to_shape({2, 2}), dyn::Array<T>::scalar(val<T>(1))), {2, 2},
            seq_at<T>({1, 1, 1, 1}));
  CHECK_THROWS_AS(dyn::broadcast_to(seq<T>({3}), {2, 4}), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::broadcast_to(seq<T>({2, 3}), {3}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: concatenate", T, bool, i32, i64, float, double) {
  const auto a = seq<T>({2, 3});
  const auto b = mk<T>({1, 3}, {1, 1, 1});
  const auto c = mk<T>({2, 2}, {1, 0, 0, 1});
  const Vals av = seq_at<T>({0, 1, 2, 3, 4, 5});
  CHECK_ARR(T, check_all_ways(concatenate_as("pq", 0), a, b), {3, 3},
            {av[0], av[1], av[2], av[3], av[4], av[5], 1, 1, 1});
  CHECK_ARR(T, check_all_ways(concatenate_as("pq", 1), a, c), {2, 5},
            {av[0], av[1], av[2], 1, 0, av[3], av[4], av[5], 0, 1});
  CHECK_ARR(T, check_all_ways(concatenate_as("pqp", -1), a, c), {2, 8},
            {av[0], av[1], av[2], 1, 0, av[0], av[1], av[2], av[3], av[4], av[5], 0, 1, av[3], av[4], av[5]});
  // A single operand (q unused).
  CHECK_ARR(T, check_all_ways(concatenate_as("p", 0), a, c), {2, 3}, av);
  CHECK_THROWS_AS(dyn::concatenate({a, c}, 0), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::concatenate({a, seq<T>({6})}, 0), dyn::ShapeError);
  CHECK_THROWS_AS(dyn::concatenate({a, b}, 2), dyn::IndexError);
  // The initializer-list form, with the default axis 0.
  CHECK_ARR(T, dyn::concatenate({a, b}), {3, 3}, {av[0], av[1], av[2], av[3], av[4], av[5], 1, 1, 1});
}

TEST_CASE_TEMPLATE("ops: slice, with strides", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({4, 5});
  CHECK_ARR(T, check_all_ways(slice_as({0, 1}, {2, 3}, {}), x), {2, 2}, seq_at<T>({1, 2, 6, 7}));
  // Rows 1 and 3, columns 0, 2 and 4.
  CHECK_ARR(T, check_all_ways(slice_as({1, 0}, {4, 5}, {2, 2}), x), {2, 3}, seq_at<T>({5, 7, 9, 15, 17, 19}));
  CHECK_ARR(T, check_all_ways(slice_as({0, 4}, {4, 5}, {3, 1}), x), {2, 1}, seq_at<T>({4, 19}));
  CHECK_ARR(T, check_all_ways(slice_as({2, 2}, {2, 5}, {}), x), {0, 3}, {});
  CHECK_THROWS_AS(dyn::slice(x, {0, 0}, {5, 5}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::slice(x, {3, 0}, {2, 5}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::slice(x, {0}, {2}), dyn::ShapeError);
}

TEST_CASE_TEMPLATE("ops: dynamic_slice, clamping, traced starts", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({4, 5});
  CHECK_ARR(T, check_all_ways(dynamic_slice_at({1, 2}, {2, 2}), x), {2, 2}, seq_at<T>({7, 8, 12, 13}));
  // Starts are clamped into [0, dim - size], as in JAX: (3, 4) -> (2, 3), (-1, -7) -> (0, 0).
  CHECK_ARR(T, check_all_ways(dynamic_slice_at({3, 4}, {2, 2}), x), {2, 2}, seq_at<T>({13, 14, 18, 19}));
  CHECK_ARR(T, check_all_ways(dynamic_slice_at({-1, -7}, {2, 2}), x), {2, 2}, seq_at<T>({0, 1, 5, 6}));

  // Traced starts: C++ int arguments become i32[] invars.
  const auto f = [](auto v, auto i, auto j) { return dyn::dynamic_slice(v, {i, j}, {2, 3}); };
  CHECK_ARR(T, check_all_ways(f, x, 1, 2), {2, 3}, seq_at<T>({7, 8, 9, 12, 13, 14}));
  CHECK_ARR(T, check_all_ways(f, x, 5, 9), {2, 3}, seq_at<T>({12, 13, 14, 17, 18, 19}));
  CHECK_ARR(T, check_all_ways(f, x, -3, 0), {2, 3}, seq_at<T>({0, 1, 2, 5, 6, 7}));
  const auto cj = dyn::make_jaxpr(f)(x, 1, 2);
  CHECK(invar_types(cj) == std::vector<std::string>{std::string(dyn::dtype_name(dyn::dtype_v<T>)) + "[4,5]",
                                                    "i32[]", "i32[]"});
  CHECK(prims(cj) == std::vector<std::string>{"dynamic_slice"});
  // One staged program serves every start: interpret it with clamped ones.
  const auto r = dyn::eval_jaxpr(cj, {x, dyn::Array<i32>::scalar(3), dyn::Array<i32>::scalar(4)});
  CHECK_ARR(T, r.at(0).template get<T>(), {2, 3}, seq_at<T>({12, 13, 14, 17, 18, 19}));
  // i64 starts, and a mix of a traced start and a literal.
  CHECK_ARR(T, check_all_ways(f, x, i64{2}, i64{1}), {2, 3}, seq_at<T>({11, 12, 13, 16, 17, 18}));
  CHECK_ARR(T, check_all_ways([](auto v, auto i) { return dyn::dynamic_slice(v, {i, 0}, {1, 5}); }, x, i64{3}), {1, 5},
            seq_at<T>({15, 16, 17, 18, 19}));
  // A concrete index array as a start.
  CHECK_ARR(T, dyn::dynamic_slice(x, {dyn::Array<i64>::scalar(2), 0}, {1, 2}), {1, 2}, seq_at<T>({10, 11}));

  CHECK_THROWS_AS(dyn::dynamic_slice(x, {0, 0}, {5, 1}), dyn::IndexError);
  CHECK_THROWS_AS(dyn::dynamic_slice(x, {0}, {1, 1}), dyn::IndexError);
}

TEST_CASE_TEMPLATE("ops: dynamic_update_slice, clamping, traced starts", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({3, 4});
  const auto u = mk<T>({2, 2}, {1, 1, 1, 1});
  const Vals xv = seq_at<T>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto with_update = [&](i64 r0, i64 c0) {
    Vals w = xv;
    for (i64 r = 0; r < 2; ++r)
      for (i64 c = 0; c < 2; ++c) w[static_cast<std::size_t>((r0 + r) * 4 + c0 + c)] = 1;
    return w;
  };
  CHECK_ARR(T, check_all_ways(dynamic_update_slice_at({1, 1}), x, u), {3, 4}, with_update(1, 1));
  // Clamped: (2, 3) -> (1, 2); (-4, -1) -> (0, 0).
  CHECK_ARR(T, check_all_ways(dynamic_update_slice_at({2, 3}), x, u), {3, 4}, with_update(1, 2));
  CHECK_ARR(T, check_all_ways(dynamic_update_slice_at({-4, -1}), x, u), {3, 4}, with_update(0, 0));
  const auto f = [](auto v, auto w, auto i, auto j) { return dyn::dynamic_update_slice(v, w, {i, j}); };
  CHECK_ARR(T, check_all_ways(f, x, u, 0, 2), {3, 4}, with_update(0, 2));
  CHECK_ARR(T, check_all_ways(f, x, u, 7, 7), {3, 4}, with_update(1, 2));
  // The operand is not modified (value semantics).
  CHECK_ARR(T, x, {3, 4}, xv);
  CHECK_THROWS_AS(dyn::dynamic_update_slice(x, seq<T>({4, 1}), {0, 0}), dyn::ShapeError);
}
