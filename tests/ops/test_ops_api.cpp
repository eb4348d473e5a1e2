// The user-level differential suite (issue 2), the API around the
// operations: promotion and weak types, broadcasting, pytrees, static
// arguments, and the value semantics of dyn::Array (helpers and the
// three-way check in ops_test.hpp).
//
// Golden jaxpr texts live in ir/test_golden.cpp; here jaxprs are only inspected
// structurally (output types, invars, primitive names).
#include "ops_test.hpp"

#include <boost/hana.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

// A layer whose leaves are arrays or tracers (pytree.hpp: Hana structs must be
// templates over their leaf types so they can be rebuilt with tracers).
namespace ops_test {
template <class A>
struct Layer {
  BOOST_HANA_DEFINE_STRUCT(Layer, (A, w), (A, b));
};
}  // namespace ops_test

using namespace ops_test;

// ===========================================================================
// Promotion and weak types.

TEST_CASE("promotion: static C++ result types, arrays and tracers") {
  using dyn::Array;
  using dyn::Tracer;
  using std::declval;
  using std::is_same_v;
  // x_i32 + 1.5 is f32; x_f32 + 1 stays f32; x_bool + 1 is i32.
  static_assert(is_same_v<decltype(declval<Array<i32>>() + 1.5), Array<float>>);
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() + 1.5), Tracer<float>>);
  static_assert(is_same_v<decltype(1.5 + declval<Tracer<i32>>()), Tracer<float>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() + 1), Array<float>>);
  static_assert(is_same_v<decltype(declval<Tracer<float>>() + 1), Tracer<float>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() + 1.5), Array<float>>);
  static_assert(is_same_v<decltype(declval<Array<double>>() + 1.5f), Array<double>>);
  static_assert(is_same_v<decltype(declval<Array<bool>>() + 1), Array<i32>>);
  static_assert(is_same_v<decltype(declval<Tracer<bool>>() + 1), Tracer<i32>>);
  static_assert(is_same_v<decltype(declval<Array<i32>>() + i64{1}), Array<i32>>);  // C++ ints are weak, any width
  static_assert(is_same_v<decltype(declval<Array<i64>>() * 2), Array<i64>>);
  // Strong operands: the wider wins.
  static_assert(is_same_v<decltype(declval<Array<i32>>() + declval<Array<i64>>()), Array<i64>>);
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() + declval<Tracer<i64>>()), Tracer<i64>>);
  static_assert(is_same_v<decltype(declval<Array<float>>() * declval<Array<double>>()), Array<double>>);
  static_assert(is_same_v<decltype(declval<Tracer<float>>() * declval<Tracer<double>>()), Tracer<double>>);
  static_assert(is_same_v<decltype(declval<Array<i64>>() + declval<Array<float>>()), Array<float>>);
  static_assert(is_same_v<decltype(declval<Array<bool>>() + declval<Array<i32>>()), Array<i32>>);
  // A tracer with a concrete array is a tracer.
  static_assert(is_same_v<decltype(declval<Array<double>>() + declval<Tracer<float>>()), Tracer<double>>);
  // Reductions and float-only functions.
  static_assert(is_same_v<decltype(dyn::sum(declval<Array<bool>>())), Array<i64>>);
  static_assert(is_same_v<decltype(dyn::sum(declval<Tracer<bool>>())), Tracer<i64>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Array<i32>>())), Array<float>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Tracer<i64>>())), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::mean(declval<Tracer<double>>())), Tracer<double>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Array<i32>>())), Array<float>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Tracer<i32>>())), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::sin(declval<Tracer<double>>())), Tracer<double>>);
  static_assert(is_same_v<decltype(dyn::atan2(declval<Tracer<i32>>(), 1)), Tracer<float>>);
  // Comparisons give bool; where promotes its cases.
  static_assert(is_same_v<decltype(declval<Tracer<i32>>() < 1.5), Tracer<bool>>);
  static_assert(is_same_v<decltype(dyn::where(declval<Tracer<bool>>(), declval<Array<i32>>(), 1.5)), Tracer<float>>);
  static_assert(is_same_v<decltype(dyn::astype<double>(declval<Tracer<bool>>())), Tracer<double>>);
  CHECK(true);
}

TEST_CASE("promotion: runtime dtypes agree with the static types, eager and staged") {
  const auto xi = mk<i32>({2}, {1, 2});
  const auto xl = mk<i64>({2}, {10, 20});
  const auto xf = mk<float>({2}, {1.5, 2.5});
  const auto xd = mk<double>({2}, {0.25, 0.5});
  const auto xb = mk<bool>({2}, {1, 0});

  CHECK_ARR(float, check_all_ways([](auto a) { return a + 1.5; }, xi), {2}, {2.5, 3.5});
  CHECK(prims(dyn::make_jaxpr([](auto a) { return a + 1.5; })(xi)) ==
        std::vector<std::string>{"convert_element_type", "add"});
  CHECK_ARR(float, check_all_ways([](auto a) { return a + 1; }, xf), {2}, {2.5, 3.5});
  {
    const auto cj = dyn::make_jaxpr([](auto a) { return a + 1; })(xf);
    CHECK(prims(cj) == std::vector<std::string>{"add"});
    CHECK(cj.jaxpr->eqns.at(0).inputs.at(1).lit.dtype == dyn::DType::f32);
  }
  CHECK_ARR(i32, check_all_ways([](auto a) { return a + 1; }, xb), {2}, {2, 1});
  CHECK_ARR(i64, check_all_ways([](auto a, auto b) { return a + b; }, xi, xl), {2}, {11, 22});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a * b; }, xf, xd), {2}, {0.375, 1.25});
  CHECK_ARR(i64, check_all_ways([](auto a) { return dyn::sum(a); }, xb), {}, {1});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::mean(a); }, xi), {}, {1.5});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::mean(a); }, xl), {}, {15});
  CHECK_ARR(float, check_all_ways([](auto a) { return dyn::sin(a); }, xi), {2},
            {static_cast<double>(std::sin(1.0f)), static_cast<double>(std::sin(2.0f))});
  CHECK_ARR(float, check_all_ways([](auto a, auto b) { return a + b; }, xl, xf), {2}, {11.5, 22.5});
  CHECK_ARR(float, check_all_ways([](auto p, auto a) { return dyn::where(p, a, 0.5); }, xb, xi), {2}, {1, 0.5});
  // Two weak-typed steps stay weak: (x_f32 * 2) + 0.5 is f32 all the way.
  CHECK_ARR(float, check_all_ways([](auto a) { return a * 2 + 0.5; }, xf), {2}, {3.5, 5.5});
  CHECK(outvar_types(dyn::make_jaxpr([](auto a) { return a * 2 + 0.5; })(xf)) == std::vector<std::string>{"f32[2]"});
  // Arithmetic on concrete rank-0 arrays: still strong.
  CHECK_ARR(double, dyn::Array<double>::scalar(1) + dyn::Array<float>::scalar(2), {}, {3});
}

// ===========================================================================
// Broadcasting.

TEST_CASE("broadcasting: numpy rules, eager and staged") {
  const auto col = mk<double>({3, 1}, {1, 2, 3});
  const auto row = mk<double>({1, 4}, {10, 20, 30, 40});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a + b; }, col, row), {3, 4},
            {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  // Rank promotion: (4,) + (3,4).
  const auto v = mk<double>({4}, {1, 2, 3, 4});
  const auto m = mk<double>({3, 4}, {0, 0, 0, 0, 10, 10, 10, 10, 20, 20, 20, 20});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a + b; }, v, m), {3, 4},
            {1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  CHECK(prims(dyn::make_jaxpr([](auto a, auto b) { return a + b; })(v, m)) ==
        std::vector<std::string>{"broadcast_in_dim", "add"});
  // Scalar (rank-0) arrays broadcast without broadcast_in_dim.
  const auto s = dyn::Array<double>::scalar(2);
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a * b; }, s, v), {4}, {2, 4, 6, 8});
  CHECK(prims(dyn::make_jaxpr([](auto a, auto b) { return a * b; })(s, v)) == std::vector<std::string>{"mul"});
  CHECK_ARR(double, check_all_ways([](auto a, auto b) { return a - b; }, s, s), {}, {0});
  // Mixed dtypes and shapes: (3,1) i32 against (4,) f32.
  CHECK_ARR(float, check_all_ways([](auto a, auto b) { return a * b; }, mk<i32>({3, 1}, {1, 2, 3}), mk<float>({2}, {0.5, 1})),
            {3, 2}, {0.5, 1, 1, 2, 1.5, 3});
  // Comparisons and where broadcast too.
  CHECK_ARR(bool, check_all_ways([](auto a, auto b) { return a < b; }, col, mk<double>({2}, {1.5, 2.5})), {3, 2},
            {1, 1, 0, 1, 0, 0});
}

TEST_CASE("broadcasting: incompatible shapes throw ShapeError naming the primitive and the shapes") {
  const auto a = mk<double>({3}, {1, 2, 3});
  const auto b = mk<double>({4}, {1, 2, 3, 4});
  const std::string msg = "add got incompatible shapes for broadcasting: (3,), (4,)";
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, a + b);
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, dyn::eager([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, msg, dyn::make_jaxpr([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "The error occurred while tracing the function at",
                          dyn::make_jaxpr([](auto x, auto y) { return x + y; })(a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "mul got incompatible shapes for broadcasting: (2, 3), (3, 2)",
                          mk<float>({2, 3}, Vals(6, 1)) * mk<float>({3, 2}, Vals(6, 1)));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "lt got incompatible shapes for broadcasting: (3,), (4,)", a < b);
}

// ===========================================================================
// Pytrees.

TEST_CASE("pytrees: std::tuple and std::pair arguments and results") {
  const auto a = mk<double>({2}, {1, 2});
  const auto b = mk<float>({3}, {1, 2, 3});
  const auto f = [](auto t) {
    const auto& [x, y] = t;
    return std::make_tuple(x * 2, y + 1, dyn::sum(x));
  };
  const auto r = check_all_ways(f, std::make_tuple(a, b));
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<double>, dyn::Array<float>, dyn::Array<double>>>);
  CHECK_ARR(double, std::get<0>(r), {2}, {2, 4});
  CHECK_ARR(float, std::get<1>(r), {3}, {2, 3, 4});
  CHECK_ARR(double, std::get<2>(r), {}, {3});
  CHECK(invar_types(dyn::make_jaxpr(f)(std::make_tuple(a, b))) == std::vector<std::string>{"f64[2]", "f32[3]"});

  // A pair argument is a pair inside the function; a pair result comes back as a tuple.
  const auto g = [](auto p) { return std::make_pair(p.second, p.first - 1); };
  const auto q = check_all_ways(g, std::make_pair(a, b));
  static_assert(std::is_same_v<decltype(q), const std::tuple<dyn::Array<float>, dyn::Array<double>>>);
  CHECK_ARR(float, std::get<0>(q), {3}, {1, 2, 3});
  CHECK_ARR(double, std::get<1>(q), {2}, {0, 1});
  const auto cj = dyn::make_jaxpr(g)(std::make_pair(a, b));
  CHECK(invar_types(cj) == std::vector<std::string>{"f64[2]", "f32[3]"});
  CHECK(outvar_types(cj) == std::vector<std::string>{"f32[3]", "f64[2]"});
  // The first output is the second input itself.
  CHECK(cj.jaxpr->outvars.at(0).var == cj.jaxpr->invars.at(1));
}

TEST_CASE("pytrees: std::array and std::vector (its length is part of the structure)") {
  const std::array<dyn::Array<i32>, 3> arr{mk<i32>({2}, {1, 2}), mk<i32>({2}, {3, 4}), mk<i32>({2}, {5, 6})};
  const auto f = [](auto xs) {
    auto ys = xs;
    for (auto& y : ys) y = y * xs[0];
    return ys;
  };
  const auto r = check_all_ways(f, arr);
  static_assert(std::is_same_v<decltype(r), const std::array<dyn::Array<i32>, 3>>);
  CHECK_ARR(i32, r[0], {2}, {1, 4});
  CHECK_ARR(i32, r[1], {2}, {3, 8});
  CHECK_ARR(i32, r[2], {2}, {5, 12});

  const auto total = [](const auto& xs) {
    auto acc = xs.at(0);
    for (std::size_t i = 1; i < xs.size(); ++i) acc = acc + xs[i];
    return std::make_tuple(acc, xs);
  };
  std::vector<dyn::Array<double>> v2{mk<double>({2}, {1, 2}), mk<double>({2}, {10, 20})};
  std::vector<dyn::Array<double>> v3{mk<double>({2}, {1, 2}), mk<double>({2}, {10, 20}), mk<double>({2}, {100, 200})};
  const auto r2 = check_all_ways(total, v2);
  const auto r3 = check_all_ways(total, v3);
  CHECK_ARR(double, std::get<0>(r2), {2}, {11, 22});
  CHECK_ARR(double, std::get<0>(r3), {2}, {111, 222});
  REQUIRE(std::get<1>(r3).size() == 3);
  CHECK_ARR(double, std::get<1>(r3)[2], {2}, {100, 200});
  const auto c2 = dyn::make_jaxpr(total)(v2);
  const auto c3 = dyn::make_jaxpr(total)(v3);
  CHECK(c2.jaxpr->invars.size() == 2);
  CHECK(c3.jaxpr->invars.size() == 3);
  CHECK(c3.jaxpr->outvars.size() == 4);
  CHECK(prims(c3) == std::vector<std::string>{"add", "add"});
  // Vectors of different element shapes keep their order.
  std::vector<dyn::Array<double>> mixed{mk<double>({1}, {1}), mk<double>({2}, {1, 2}), mk<double>({3}, {1, 2, 3})};
  CHECK(invar_types(dyn::make_jaxpr([](auto xs) { return xs; })(mixed)) ==
        std::vector<std::string>{"f64[1]", "f64[2]", "f64[3]"});
}

TEST_CASE("pytrees: nested structures flatten depth first, left to right") {
  using P = std::pair<dyn::Array<float>, dyn::Array<i32>>;
  const auto arg = std::make_tuple(mk<double>({1}, {1}), std::vector<P>{P{mk<float>({2}, {1, 2}), mk<i32>({3}, {1, 2, 3})},
                                                                         P{mk<float>({4}, {1, 2, 3, 4}), mk<i32>({5}, Vals(5, 7))}},
                                   std::array<dyn::Array<i64>, 2>{mk<i64>({6}, Vals(6, 1)), mk<i64>({7}, Vals(7, 2))});
  const auto f = [](auto t) {
    auto [d, ps, arr] = t;
    return std::make_tuple(ps[1].second + 7, std::make_pair(d, ps[0].first * 2), dyn::sum(arr[1]));
  };
  const auto cj = dyn::make_jaxpr(f)(arg);
  CHECK(invar_types(cj) ==
        std::vector<std::string>{"f64[1]", "f32[2]", "i32[3]", "f32[4]", "i32[5]", "i64[6]", "i64[7]"});
  const auto r = check_all_ways(f, arg);
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<i32>, std::tuple<dyn::Array<double>, dyn::Array<float>>,
                                                             dyn::Array<i64>>>);
  CHECK_ARR(i32, std::get<0>(r), {5}, {14, 14, 14, 14, 14});
  CHECK_ARR(double, std::get<0>(std::get<1>(r)), {1}, {1});
  CHECK_ARR(float, std::get<1>(std::get<1>(r)), {2}, {2, 4});
  CHECK_ARR(i64, std::get<2>(r), {}, {14});
}

TEST_CASE("pytrees: a Boost.Hana struct templated on its leaves") {
  using L = ops_test::Layer<dyn::Array<double>>;
  const L layer{mk<double>({3, 2}, {1, 0, 0, 1, 1, 1}), mk<double>({2}, {0.5, -0.5})};
  const auto x = mk<double>({3}, {1, 2, 3});
  const auto apply = [](auto l, auto v) { return dyn::dot(v, l.w) + l.b; };
  CHECK_ARR(double, check_all_ways(apply, layer, x), {2}, {4.5, 4.5});
  const auto cj = dyn::make_jaxpr(apply)(layer, x);
  // Members in declaration order (w, b), then the next argument.
  CHECK(invar_types(cj) == std::vector<std::string>{"f64[3,2]", "f64[2]", "f64[3]"});

  // A struct as the result: rebuilt with arrays.
  const auto scale = [](auto l) {
    decltype(l) r;
    r.w = l.w * 2;
    r.b = l.b - 1;
    return r;
  };
  const auto s = check_all_ways(scale, layer);
  static_assert(std::is_same_v<decltype(s), const L>);
  CHECK_ARR(double, s.w, {3, 2}, {2, 0, 0, 2, 2, 2});
  CHECK_ARR(double, s.b, {2}, {-0.5, -1.5});
  CHECK(outvar_types(dyn::make_jaxpr(scale)(layer)) == std::vector<std::string>{"f64[3,2]", "f64[2]"});

  // Structs inside containers.
  const std::vector<L> net{layer, L{mk<double>({2, 2}, {1, 1, 0, 1}), mk<double>({2}, {0, 1})}};
  const auto mlp = [](const auto& layers, auto v) {
    auto h = dyn::dot(v, layers[0].w) + layers[0].b;
    return dyn::dot(h, layers[1].w) + layers[1].b;
  };
  CHECK_ARR(double, check_all_ways(mlp, net, x), {2}, {4.5, 10});
  CHECK(dyn::make_jaxpr(mlp)(net, x).jaxpr->invars.size() == 5);
}

TEST_CASE("pytrees: C++ scalar arguments are traced as rank-0 arrays of their exact type") {
  const auto f = [](auto a, auto s) { return a * s; };
  const auto xd = mk<double>({3}, {1, 2, 3});
  CHECK(invar_types(dyn::make_jaxpr(f)(xd, 2.0)) == std::vector<std::string>{"f64[3]", "f64[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n + 1; })(3)) == std::vector<std::string>{"i32[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n + 1; })(i64{3})) == std::vector<std::string>{"i64[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return n; })(2.5f)) == std::vector<std::string>{"f32[]"});
  CHECK(invar_types(dyn::make_jaxpr([](auto n) { return !n; })(true)) == std::vector<std::string>{"bool[]"});
  static_assert(std::is_same_v<dyn::detail::traced_t<double>, dyn::Tracer<double>>);
  static_assert(std::is_same_v<dyn::detail::traced_t<int>, dyn::Tracer<i32>>);

  CHECK_ARR(double, check_all_ways(f, xd, 2.0), {3}, {2, 4, 6});
  CHECK_ARR(i32, check_all_ways([](auto n) { return n + 1; }, 3), {}, {4});
  CHECK_ARR(double, check_all_ways([](auto p, auto q) { return p - q; }, 1.0, 0.25), {}, {0.75});
  // Mixing a scalar argument with an array of another dtype: eager and staged
  // must agree on the result type (the staged double is f64[]).
  const auto xf = mk<float>({2}, {1, 2});
  CHECK_ARR(double, check_all_ways(f, xf, 0.5), {2}, {0.5, 1});
  CHECK_ARR(i64, check_all_ways([](auto a, auto n) { return a + n; }, mk<i64>({2}, {1, 2}), 1), {2}, {2, 3});
}

TEST_CASE("pytrees: C++ scalars and concrete arrays in results are lifted") {
  const auto x = mk<double>({2}, {1, 2});
  const auto f = [](auto a) { return std::make_tuple(a + 1, 2.5, 7, dyn::ones<float>({2})); };
  const auto r = check_all_ways(f, x);
  static_assert(std::is_same_v<decltype(r), const std::tuple<dyn::Array<double>, dyn::Array<double>, dyn::Array<i32>,
                                                             dyn::Array<float>>>);
  CHECK_ARR(double, std::get<1>(r), {}, {2.5});
  CHECK_ARR(i32, std::get<2>(r), {}, {7});
  CHECK_ARR(float, std::get<3>(r), {2}, {1, 1});
  CHECK(outvar_types(dyn::make_jaxpr(f)(x)) == std::vector<std::string>{"f64[2]", "f64[]", "i32[]", "f32[2]"});
}

// ===========================================================================
// Static arguments.

TEST_CASE("static_argnums: a static bool chooses the branch (JAX's tracing doc)") {
  // def f(x, neg): return -x if neg else x
  const auto f = [](auto x, bool neg) { return neg ? -x : x; };
  const auto x = mk<i32>({3}, {1, -2, 3});
  const auto neg = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(x, true);
  const auto pos = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(x, false);
  CHECK(neg.jaxpr->invars.size() == 1);
  CHECK(pos.jaxpr->invars.size() == 1);
  CHECK(prims(neg) == std::vector<std::string>{"neg"});
  CHECK(prims(pos).empty());
  CHECK(pos.jaxpr->outvars.at(0).var == pos.jaxpr->invars.at(0));
  CHECK_ARR(i32, dyn::eval_jaxpr(neg, {x}).at(0).get<i32>(), {3}, {-1, 2, -3});
  CHECK_ARR(i32, dyn::eval_jaxpr(pos, {x}).at(0).get<i32>(), {3}, {1, -2, 3});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(x, true), {3}, {-1, 2, -3});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(x, false), {3}, {1, -2, 3});

  // JAX's tracing doc calls f(1, True): here a C++ int argument, traced as i32[].
  const auto one = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(1, true);
  CHECK(invar_types(one) == std::vector<std::string>{"i32[]"});
  CHECK(prims(one) == std::vector<std::string>{"neg"});
  CHECK_ARR(i32, dyn::eval_jaxpr(one, {dyn::Array<i32>::scalar(1)}).at(0).get<i32>(), {}, {-1});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(1, true), {}, {-1});
  CHECK_ARR(i32, dyn::eager(f, dyn::static_argnums<1>{})(1, false), {}, {1});

  // A static argument in first position, used as a Python-level number.
  const auto g = [](int k, auto v) { return v * k + dyn::sum(v); };
  const auto cj = dyn::make_jaxpr(g, dyn::static_argnums<0>{})(3, x);
  CHECK(invar_types(cj) == std::vector<std::string>{"i32[3]"});
  CHECK_ARR(i32, dyn::eval_jaxpr(cj, {x}).at(0).get<i32>(), {3}, {5, -4, 11});
  CHECK_ARR(i32, dyn::eager(g, dyn::static_argnums<0>{})(3, x), {3}, {5, -4, 11});
}

// ===========================================================================
// dyn::Array.

TEST_CASE("Array: construction, shape, element access") {
  const dyn::Array<double> z({3, 4});
  CHECK(z.shape() == Shp{3, 4});
  CHECK(z.shape(0) == 3);
  CHECK(z.shape(-1) == 4);
  CHECK(z.rank() == 2);
  CHECK(z.size() == 12);
  CHECK(z.dtype() == dyn::DType::f64);
  CHECK(z(2, 3) == 0.0);
  const dyn::Array<i32> m({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(m(0, 0) == 1);
  CHECK(m(1, 2) == 6);
  CHECK(m(1, 0) == 4);
  CHECK_THROWS_AS(m(2, 0), dyn::IndexError);
  CHECK_THROWS_AS(m(0, 3), dyn::IndexError);
  CHECK_THROWS_AS(m(-1, 0), dyn::IndexError);
  CHECK_THROWS_AS(m(0), dyn::IndexError);
  CHECK_THROWS_AS(m(0, 0, 0), dyn::IndexError);
  CHECK_THROWS_AS(m.shape(2), dyn::IndexError);
  CHECK_THROWS_AS(dyn::Array<i32>({2, 2}, {1, 2, 3}), dyn::ShapeError);
  const auto b = dyn::array({1.0, 2.0, 3.0});
  CHECK(b.shape() == Shp{3});
  CHECK(b(1) == 2.0);
  const auto s = dyn::Array<double>::scalar(2.5);
  CHECK(s.rank() == 0);
  CHECK(s.size() == 1);
  CHECK(s() == 2.5);
  // AnyArray round trip, checked dtype.
  const dyn::AnyArray any = m;
  CHECK(any.dtype() == dyn::DType::i32);
  CHECK(any.shape() == Shp{2, 3});
  CHECK(any.get<i32>().data() == m.data());
  CHECK_THROWS_AS(any.get<float>(), dyn::TypeError);
}

TEST_CASE("Array: copy-on-write") {
  dyn::Array<double> a({3}, {1, 2, 3});
  dyn::Array<double> b = a;
  CHECK(b.data() == a.data());  // copies share the buffer
  b.mutable_data()[0] = 9;      // a shared buffer is copied first
  CHECK(b.data() != a.data());
  CHECK(a(0) == 1.0);
  CHECK(b(0) == 9.0);
  // An exclusively held buffer is written in place.
  const double* p = b.data();
  b.mutable_data()[1] = 8;
  CHECK(b.data() == p);
  CHECK_ARR(double, b, {3}, {9, 8, 3});
  CHECK_ARR(double, a, {3}, {1, 2, 3});
  // Through AnyArray too.
  dyn::AnyArray any = a;
  dyn::Array<double> c = any.get<double>();
  c.mutable_data()[2] = 7;
  CHECK(a(2) == 3.0);
  // An array captured as a constant by a jaxpr never changes under it.
  dyn::Array<double> k({2}, {1, 2});
  const auto cj = dyn::make_jaxpr([&](auto v) { return v + k; })(mk<double>({2}, {0, 0}));
  REQUIRE(cj.consts.size() == 1);
  k.mutable_data()[0] = 100;
  CHECK_ARR(double, cj.consts[0].get<double>(), {2}, {1, 2});
  CHECK_ARR(double, dyn::eval_jaxpr(cj, {mk<double>({2}, {0, 0})}).at(0).get<double>(), {2}, {1, 2});
  // Operations never modify their operands.
  dyn::Array<double> x({2}, {1, 2});
  const double* xp = x.data();
  const auto y = x + 1;
  CHECK(x.data() == xp);
  CHECK_ARR(double, x, {2}, {1, 2});
  CHECK_ARR(double, y, {2}, {2, 3});
}

TEST_CASE("Array: buffers of every size class: alignment, zeroing after reuse, sharing, release") {
  // Sizes across the per-thread size classes (up to 1 KiB with the header),
  // the heap, and the large blocks (>= 1 MiB, pooled, 64-byte aligned).
  for (const std::int64_t n : {0, 1, 6, 7, 8, 120, 126, 127, 1000, 10000, 140000, 300000}) {
    CAPTURE(n);
    for (int round = 0; round < 3; ++round) {  // later rounds get recycled blocks
      dyn::Array<double> a({n});
      const auto addr = reinterpret_cast<std::uintptr_t>(a.data());
      CHECK(addr % 16 == 0);
      if (n * 8 >= (1 << 20)) CHECK(addr % 64 == 0);
      // Zeros, even in a block whose last user wrote 7s.
      CHECK(std::all_of(a.begin(), a.end(), [](double v) { return v == 0.0; }));
      double* p = a.mutable_data();
      CHECK(p == a.data());  // held once: written in place
      std::fill(p, p + n, 7.0);
      dyn::Array<double> b = a;  // shares the buffer ...
      CHECK(b.data() == a.data());
      if (n > 0) {
        b.mutable_data()[0] = 1.0;  // ... until one of them writes
        CHECK(b.data() != a.data());
        CHECK(a(0) == 7.0);
        CHECK(b(0) == 1.0);
        if (n > 1) CHECK(b(n - 1) == 7.0);
      }
    }
  }
  // An empty view over a null pointer is a valid array.
  const auto v = dyn::Array<float>::view(static_cast<float*>(nullptr), {0, 3});
  const dyn::AnyArray any = v;
  CHECK(any.valid());
  CHECK(any.size() == 0);
  CHECK_FALSE(dyn::AnyArray().valid());
}

TEST_CASE("Array: zero-copy view over user memory") {
  std::vector<double> buf{1, 2, 3, 4, 5, 6};
  auto v = dyn::Array<double>::view(buf.data(), {2, 3});
  CHECK(v.data() == buf.data());
  CHECK(v.shape() == Shp{2, 3});
  CHECK(v(1, 1) == 5.0);
  buf[4] = 50;  // the view sees the user's memory
  CHECK(v(1, 1) == 50.0);
  // Copies of a view share the same memory.
  const auto w = v;
  CHECK(w.data() == buf.data());
  // Eager operations read it without copying it first, and do not write to it.
  CHECK_ARR(double, v * 2, {2, 3}, {2, 4, 6, 8, 100, 12});
  CHECK_ARR(double, check_all_ways([](auto a) { return dyn::sum(a, {1}); }, v), {2}, {6, 60});
  CHECK(buf == std::vector<double>{1, 2, 3, 4, 50, 6});
  // A const view.
  const std::vector<i32> cbuf{7, 8};
  const auto cv_ = dyn::Array<i32>::view(cbuf.data(), {2});
  CHECK(cv_.data() == cbuf.data());
  CHECK_ARR(i32, cv_ + 1, {2}, {8, 9});
}

TEST_CASE("Array: printing, numpy style") {
  auto str = [](const auto& a) {
    std::ostringstream os;
    os << a;
    return os.str();
  };
  CHECK(str(dyn::array({1.0, 2.0, 3.0})) == "[1. 2. 3.]");
  CHECK(str(dyn::Array<float>({3}, {1, 2, 3})) == "[1. 2. 3.]");
  CHECK(str(dyn::Array<i32>({2, 3}, {1, 2, 3, 4, 5, 6})) == "[[1 2 3]\n [4 5 6]]");
  CHECK(str(dyn::Array<i64>({3}, {-1, 10, 3})) == "[-1 10  3]");
  CHECK(str(mk<bool>({3}, {1, 0, 1})) == "[ True False  True]");
  CHECK(str(mk<bool>({2, 2}, {1, 1, 0, 1})) == "[[ True  True]\n [False  True]]");
  CHECK(str(dyn::Array<double>::scalar(2.5)) == "2.5");
  CHECK(str(dyn::Array<i32>::scalar(-4)) == "-4");
  CHECK(str(dyn::Array<double>({2, 2}, {1, 2, 3, 4})) == "[[1. 2.]\n [3. 4.]]");
  CHECK(str(dyn::Array<i32>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})) == "[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]");
  CHECK(str(mk<double>({3}, {kNaN, kInf, -kInf})) == "[ nan  inf -inf]");
  CHECK(str(mk<double>({2}, {0.5, -0.25})) == "[ 0.5  -0.25]");
  CHECK(str(dyn::Array<double>({0}, std::vector<double>{})) == "[]");
  // numpy aligns the decimal points: print(np.array([1.5, 2., 3.])) is "[1.5 2.  3. ]".
  CHECK(str(dyn::array({1.5, 2.0, 3.0})) == "[1.5 2.  3. ]");
  CHECK(str(dyn::Array<double>({2, 2}, {1, 2.5, 3, 4})) == "[[1.  2.5]\n [3.  4. ]]");
  // Through AnyArray.
  CHECK(str(dyn::AnyArray(dyn::Array<i32>({2}, {1, 2}))) == "[1 2]");
}

TEST_CASE("Array: allclose and array_equal") {
  const auto a = dyn::array({1.0, 2.0, 3.0});
  const auto b = dyn::array({1.0, 2.0 + 1e-9, 3.0});
  CHECK(dyn::array_equal(a, a));
  CHECK_FALSE(dyn::array_equal(a, b));
  CHECK(dyn::allclose(a, b));
  CHECK_FALSE(dyn::allclose(a, b, 1e-12, 0));
  CHECK(dyn::allclose(a, b, 0, 1e-8));
  CHECK_FALSE(dyn::allclose(a, dyn::array({1.0, 2.0})));
  CHECK_FALSE(dyn::array_equal(a, dyn::Array<double>({3, 1}, {1, 2, 3})));
  // Across element types: compares values.
  CHECK(dyn::array_equal(dyn::Array<i32>({2}, {1, 2}), dyn::Array<double>({2}, {1, 2})));
  // NaN: never array_equal; allclose only with equal_nan.
  const auto n = dyn::array({kNaN, 1.0});
  CHECK_FALSE(dyn::array_equal(n, n));
  CHECK_FALSE(dyn::allclose(n, n));
  CHECK(dyn::allclose(n, n, 1e-7, 0, true));
  CHECK(dyn::allclose(dyn::array({kInf}), dyn::array({kInf})));
  // AnyArray versions also compare dtypes.
  CHECK(dyn::array_equal(dyn::AnyArray(a), dyn::AnyArray(a)));
  CHECK_FALSE(dyn::array_equal(dyn::AnyArray(dyn::Array<i32>({1}, {1})), dyn::AnyArray(dyn::Array<i64>({1}, {1}))));
}
