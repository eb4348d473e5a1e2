// Indexing, gather and scatter as API.md section 12 states them:
// x.at(...).get() with C++ integers, integer scalars and arrays (numpy's
// advanced indexing, broadcasting index arrays against each other) and
// dyn::all(); x.at(...).set/add/mul/min/max; take, take_along_axis.
// Out-of-range indices clamp when read and drop the update when written;
// negative ones count from the end. Each case runs eagerly, staged and
// interpreted (check_all_ways) against hand-computed numbers; the goldens
// are JAX's jaxpr text for the same programs (jnp's x[idx] and
// x.at[idx].add(v) with mode CLIP / FILL_OR_DROP).
#include "ops_test.hpp"

#include <string>
#include <tuple>

#include "../test_util.hpp"

namespace {

using namespace ops_test;
using test_util::message_of;
using test_util::str;

// x3x4[i][j] = 4i + j.
template <class T>
dyn::Array<T> x34() {
  return seq<T>({3, 4});
}

}  // namespace

TEST_CASE_TEMPLATE("index: x.at(idx).get() with an integer array, negative and out-of-range indices", T, i32, i64,
                   float, double) {
  const auto idx = mk<i32>({4}, {2, 0, -1, 7});  // -1 counts from the end; 7 clamps to 2
  const auto r = check_all_ways([](auto x, auto i) { return x.at(i).get(); }, x34<T>(), idx);
  CHECK_ARR(T, r, {4, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11, 8, 9, 10, 11});
  // Along the second axis, with dyn::all() for the first (x[:, idx]).
  const auto c = check_all_ways([](auto x, auto i) { return x.at(dyn::all(), i).get(); }, x34<T>(), idx);
  CHECK_ARR(T, c, {3, 4}, {2, 0, 3, 3, 6, 4, 7, 7, 10, 8, 11, 11});
}

TEST_CASE("index: C++ integers and traced scalars, as x[i, j] and x[i]") {
  const auto x = x34<float>();
  CHECK_ARR(float, check_all_ways([](auto v) { return v.at(1, -1).get(); }, x), {}, {7});
  CHECK_ARR(float, check_all_ways([](auto v) { return v.at(2).get(); }, x), {4}, {8, 9, 10, 11});
  CHECK_ARR(float, check_all_ways([](auto v) { return v.at(dyn::all(), 1).get(); }, x), {3}, {1, 5, 9});
  const auto i = dyn::Array<i32>::scalar(-2), j = dyn::Array<i32>::scalar(9);
  CHECK_ARR(float, check_all_ways([](auto v, auto a, auto b) { return v.at(a, b).get(); }, x, i, j), {}, {7});
  CHECK_ARR(float, check_all_ways([](auto v, auto a) { return v.at(a).get(); }, x, i), {4}, {4, 5, 6, 7});
  // A static index out of range is an error (numpy's), not a clamp.
  CHECK(message_of<dyn::IndexError>([&] { (void)x.at(3).get(); }) ==
        "at().get: index 3 is out of bounds for axis 0 with size 3");
}

TEST_CASE("index: advanced indices broadcast together; numpy's rule places their axes") {
  const auto x = seq<float>({2, 3, 4});  // x[i][j][k] = 12i + 4j + k
  const auto rows = mk<i32>({2, 1}, {0, 1}), cols = mk<i32>({3}, {3, 0, 1});
  // Adjacent advanced axes 1, 2: their broadcast shape (2, 3) replaces them.
  const auto a = check_all_ways([](auto v, auto r, auto c) { return v.at(dyn::all(), r, c).get(); }, x, rows, cols);
  CHECK_ARR(float, a, {2, 2, 3}, {3, 0, 1, 7, 4, 5, 15, 12, 13, 19, 16, 17});
  // Axes 0 and 2 are not adjacent: the broadcast axes come first (x[r, :, c]).
  const auto b = check_all_ways([](auto v, auto r, auto c) { return v.at(r, dyn::all(), c).get(); }, x, rows, cols);
  CHECK_ARR(float, b, {2, 3, 3}, {3, 7, 11, 0, 4, 8, 1, 5, 9, 15, 19, 23, 12, 16, 20, 13, 17, 21});
  // An integer and an array count as advanced indices together (x[1, :, c]).
  const auto m = check_all_ways([](auto v, auto c) { return v.at(1, dyn::all(), c).get(); }, x, cols);
  CHECK_ARR(float, m, {3, 3}, {15, 19, 23, 12, 16, 20, 13, 17, 21});
}

TEST_CASE("index: golden jaxpr of x.at(idx).get(), as jnp prints x[idx]") {
  dyn::Array<float> x({5, 3});
  dyn::Array<i32> idx({4});
  CHECK(str(dyn::make_jaxpr([](auto v, auto i) { return v.at(i).get(); })(x, idx)) ==
        "{ lambda ; a:f32[5,3] b:i32[4]. let\n"
        "    c:bool[4] = lt b 0:i32[]\n"
        "    d:i32[4] = add b 5:i32[]\n"
        "    e:i32[4] = select_n c b d\n"
        "    f:i32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1)] e\n"
        "    g:f32[4,3] = gather[\n"
        "      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), "
        "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
        "      fill_value=None\n"
        "      indices_are_sorted=False\n"
        "      mode=GatherScatterMode.CLIP\n"
        "      slice_sizes=(1, 3)\n"
        "      unique_indices=False\n"
        "    ] a f\n"
        "  in (g,) }");
  // Static indices read no data: a slice and a squeeze.
  CHECK(str(dyn::make_jaxpr([](auto v) { return v.at(1, -1).get(); })(x)) ==
        "{ lambda ; a:f32[5,3]. let\n"
        "    b:f32[1,1] = slice[limit_indices=(2, 3) start_indices=(1, 2) strides=None] a\n"
        "    c:f32[] = squeeze[dimensions=(0, 1)] b\n"
        "  in (c,) }");
}

TEST_CASE("index: golden jaxpr of a histogram by at().add, as jnp prints counts.at[bins].add(1)") {
  dyn::Array<i32> counts({4}), bins({6});
  CHECK(str(dyn::make_jaxpr([](auto c, auto b) { return c.at(b).add(1); })(counts, bins)) ==
        "{ lambda ; a:i32[4] b:i32[6]. let\n"
        "    c:bool[6] = lt b 0:i32[]\n"
        "    d:i32[6] = add b 4:i32[]\n"
        "    e:i32[6] = select_n c b d\n"
        "    f:i32[6,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 1)] e\n"
        "    g:i32[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] 1:i32[]\n"
        "    h:i32[4] = scatter-add[\n"
        "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
        "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
        "      indices_are_sorted=False\n"
        "      mode=GatherScatterMode.FILL_OR_DROP\n"
        "      unique_indices=False\n"
        "      update_consts=()\n"
        "      update_jaxpr=None\n"
        "    ] a f g\n"
        "  in (h,) }");
}

TEST_CASE_TEMPLATE("index: set add mul min max; duplicates accumulate; out-of-range updates are dropped", T, i32, i64,
                   float, double) {
  const auto x = mk<T>({5}, {1, 2, 3, 4, 5});
  const auto idx = mk<i32>({5}, {1, 3, 1, -1, 5});  // 1 twice; -1 is 4; 5 is out of range: dropped
  const auto v = mk<T>({5}, {10, 20, 30, 40, 50});
  const auto r = check_all_ways(
      [](auto a, auto i, auto u) {
        return std::make_tuple(a.at(i).set(u), a.at(i).add(u), a.at(i).mul(u), a.at(i).min(u), a.at(i).max(u));
      },
      x, idx, v);
  CHECK_ARR(T, std::get<0>(r), {5}, {1, 30, 3, 20, 40});  // the last duplicate wins
  CHECK_ARR(T, std::get<1>(r), {5}, {1, 42, 3, 24, 45});
  CHECK_ARR(T, std::get<2>(r), {5}, {1, 600, 3, 80, 200});
  CHECK_ARR(T, std::get<3>(r), {5}, {1, 2, 3, 4, 5});
  CHECK_ARR(T, std::get<4>(r), {5}, {1, 30, 3, 20, 40});
}

TEST_CASE("index: a histogram by at().add, and updates that broadcast over rows") {
  const auto bins = mk<i32>({7}, {0, 2, 2, 9, -3, 1, 2});
  const auto h = check_all_ways([](auto b) { return dyn::zeros<i32>({4}).at(b).add(1); }, bins);
  CHECK_ARR(i32, h, {4}, {1, 2, 3, 0});
  // Rows 2 and 0 of a 3x2 matrix set from one row broadcast over both.
  const auto m = check_all_ways([](auto a, auto i, auto row) { return a.at(i).set(row); }, seq<float>({3, 2}),
                                mk<i32>({2}, {2, 0}), mk<float>({2}, {-1, -2}));
  CHECK_ARR(float, m, {3, 2}, {-1, -2, 2, 3, -1, -2});
  // A scalar update at a traced scalar index; a C++ value converts to x's dtype.
  const auto s = check_all_ways([](auto a, auto i) { return a.at(i, 1).add(0.5); }, seq<float>({3, 2}),
                                dyn::Array<i32>::scalar(1));
  CHECK_ARR(float, s, {3, 2}, {0, 1, 2, 3.5, 4, 5});
}

TEST_CASE("index: take and take_along_axis, as numpy's") {
  const auto x = x34<float>();
  const auto t = check_all_ways([](auto v, auto i) { return dyn::take(v, i, 1); }, x, mk<i32>({2}, {3, 0}));
  CHECK_ARR(float, t, {3, 2}, {3, 0, 7, 4, 11, 8});
  const auto f = check_all_ways([](auto v, auto i) { return dyn::take(v, i); }, x, mk<i32>({2, 2}, {11, 0, 5, -1}));
  CHECK_ARR(float, f, {2, 2}, {11, 0, 5, 11});
  // The index of each row's maximum picks it back out (argmax's use).
  const auto g = check_all_ways([](auto v, auto i) { return dyn::take_along_axis(v, i, 1); }, x,
                                mk<i32>({3, 1}, {3, 0, 2}));
  CHECK_ARR(float, g, {3, 1}, {3, 4, 10});
  const auto c = check_all_ways([](auto v, auto i) { return dyn::take_along_axis(v, i, 0); }, x,
                                mk<i32>({1, 4}, {2, 1, 0, 2}));
  CHECK_ARR(float, c, {1, 4}, {8, 5, 2, 11});
}

TEST_CASE("index: bad input names the operation, the shapes or dtypes") {
  const auto x = x34<float>();
  CHECK(message_of<dyn::TypeError>([&] { (void)x.at(mk<float>({2}, {0, 1})).get(); }) ==
        "at().get: indices must be integers, got f32[2] for axis 0 of an array of shape (3, 4)");
  CHECK(message_of<dyn::TypeError>([&] { (void)x.at(mk<bool>({3}, {1, 0, 1})).get(); }) ==
        "at().get: boolean index arrays are not supported, got bool[3] for axis 0; use dyn::compress(mask, x) or "
        "dyn::nonzero(mask)");
  CHECK(message_of<dyn::IndexError>([&] { (void)x.at(0, 1, 2).get(); }) ==
        "at().get: too many indices for an array of shape (3, 4): 3 were given, at most 2");
  CHECK(message_of<dyn::IndexError>([&] { (void)x.at(0, 1, 2).set(1.0f); }) ==
        "at().set: too many indices for an array of shape (3, 4): 3 were given, at most 2");
  CHECK(message_of<dyn::ShapeError>([&] { (void)x.at(mk<i32>({2}, {0, 1})).add(mk<float>({3}, {1, 2, 3})); }) ==
        "at().add: cannot broadcast an array of shape (3,) to shape (2, 4)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)x.at(mk<i32>({2}, {0, 1}), mk<i32>({3}, {0, 1, 2})).get(); }) ==
        "at().get got incompatible shapes for broadcasting: (2,), (3,)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::take_along_axis(x, mk<i32>({3}, {0, 1, 2}), 1); }) ==
        "take_along_axis: indices and array must have the same rank, got indices shape (3,) and array shape (3, 4)");
  // The place is the user's line.
  try {
    (void)x.at(mk<float>({1}, {0})).get();
    FAIL("no error");
  } catch (const dyn::TypeError& e) {
    CHECK(std::string(e.what()).find("test_index.cpp") != std::string::npos);
  }
  // Reading an empty axis has nothing to clamp to.
  CHECK(message_of<dyn::IndexError>([&] { (void)dyn::Array<float>({0, 2}).at(mk<i32>({1}, {0})).get(); }) ==
        "at().get: cannot index into axis 0 of size 0 of an array of shape (0, 2)");
}

TEST_CASE("index: symbolic sizes: one jaxpr for every length") {
  const auto cj = dyn::make_jaxpr([](auto v, auto i) { return v.at(i).get() * 2.0f; },
                                  dyn::polymorphic_shapes{"(n, 4)", "(k,)"})(x34<float>(), mk<i32>({2}, {0, 1}));
  const std::string s = str(cj);
  INFO(s);
  // The sizes are the implicit arguments a (n) and b (k); the wrap adds n.
  CHECK(s.find("f:i32[] = convert_element_type[new_dtype=int32 weak_type=True] a") != std::string::npos);
  CHECK(s.find("j:f32[b,4] = gather[") != std::string::npos);
  CHECK(s.find("slice_sizes=(1, 4)") != std::string::npos);
  const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(x34<float>()), dyn::AnyArray(mk<i32>({3}, {2, -3, 1}))});
  CHECK_ARR(float, got.at(0).get<float>(), {3, 4}, {16, 18, 20, 22, 0, 2, 4, 6, 8, 10, 12, 14});
}

TEST_CASE("index: nonzero and compress return a dynamic length computed from the data") {
  const auto mask = mk<bool>({6}, {0, 1, 1, 0, 0, 1});
  const auto nz_fn = [](auto m) { return dyn::nonzero(m); };
  CHECK_ARR(i64, dyn::eager(nz_fn)(mask), {3}, {1, 2, 5});
  // Any dtype: the nonzero elements.
  CHECK_ARR(i64, dyn::nonzero(mk<float>({4}, {0, -1.5, 0, 2})), {2}, {1, 3});
  CHECK_ARR(i64, dyn::nonzero(mk<i32>({3}, {0, 0, 0})), {0}, {});
  CHECK_ARR(float, dyn::compress(mask, seq<float>({6, 2})), {3, 2}, {2, 3, 4, 5, 10, 11});
  // The length is a dynamic dimension of the jaxpr: the i64[] sum of the
  // mask, which the result's type names and which the jaxpr returns first
  // (Catalyst's dynamic-shape convention; no size= parameter as in jnp).
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(nz_fn)(mask);
  const std::string s = str(cj);
  INFO(s);
  CHECK(s ==
        "{ lambda ; a:bool[6]. let\n"
        "    b:i64[6] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    c:i64[] = reduce_sum[axes=(0,)] b\n"
        "    d:i64[c] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0:i64[] c\n"
        "    e:i64[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] c\n"
        "    f:i64[6] = cumsum[axis=0 reverse=False] b\n"
        "    g:i64[6] = sub f 1:i64[]\n"
        "    h:i64[6] = select_n a e g\n"
        "    i:i64[6,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 1)] h\n"
        "    j:i64[6] = iota[dimension=0 dtype=int64 shape=(6,)] \n"
        "    k:i64[c] = scatter[\n"
        "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
        "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
        "      indices_are_sorted=False\n"
        "      mode=GatherScatterMode.FILL_OR_DROP\n"
        "      unique_indices=False\n"
        "      update_consts=()\n"
        "      update_jaxpr=None\n"
        "    ] d i j\n"
        "  in (c, k) }");
  const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(mask)});
  REQUIRE(got.size() == 2);
  CHECK(got[0].get<i64>()() == 3);
  CHECK_ARR(i64, got[1].get<i64>(), {3}, {1, 2, 5});
  // It composes: the sum of the values of x where x > 0.
  const auto pos = [](auto v) { return dyn::sum(dyn::compress(v > 0.0f, v)); };
  const auto x = mk<float>({5}, {1, -2, 3, -4, 5});
  CHECK_ARR(float, check_all_ways(pos, x), {}, {9});
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::compress(mask, seq<float>({5, 2})); }) ==
        "compress: the mask must be 1-D with the length of the array's axis 0, got mask bool[6] for an array of shape "
        "(5, 2)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::nonzero(seq<float>({2, 2})); }) ==
        "nonzero: the array has rank 2, got f32[2,2], but dyn::nonzero<1> returns 1 index array(s); call "
        "dyn::nonzero<2>(x) (one per axis)");
}

TEST_CASE("index: nonzero of an n-D array returns one index array per axis, of one dynamic length") {
  // jnp.nonzero(m) of m = [[0, 1, 1], [1, 0, 0]] is ([0, 0, 1], [1, 2, 0]):
  // row-major order.
  const auto m = mk<bool>({2, 3}, {0, 1, 1, 1, 0, 0});
  const auto nz2 = [](auto v) { return dyn::nonzero<2>(v); };
  const auto [r, c] = dyn::eager(nz2)(m);
  CHECK_ARR(i64, r, {3}, {0, 0, 1});
  CHECK_ARR(i64, c, {3}, {1, 2, 0});
  // Any dtype; three axes (x of shape (2, 2, 3), nonzero at flat 1, 6, 11).
  std::vector<double> v3(12, 0.0);
  v3[1] = -2.0;
  v3[6] = 0.5;
  v3[11] = 7.0;
  const auto [a, b, d] = dyn::nonzero<3>(mk<float>({2, 2, 3}, v3));
  CHECK_ARR(i64, a, {3}, {0, 1, 1});
  CHECK_ARR(i64, b, {3}, {0, 0, 1});
  CHECK_ARR(i64, d, {3}, {1, 0, 2});
  const auto [e0, e1] = dyn::nonzero<2>(mk<i32>({2, 0}, {}));
  CHECK(e0.shape() == std::vector<i64>{0});
  CHECK(e1.shape() == std::vector<i64>{0});
  // The tuple picks the elements back out: x[nonzero(x)] is x's nonzeros.
  const auto x = mk<float>({2, 3}, {0, 4, 5, 6, 0, 0});
  const auto picked = [](auto v) {
    const auto [i, j] = dyn::nonzero<2>(v);
    return v.at(i, j).get();
  };
  CHECK_ARR(float, dyn::eager(picked)(x), {3}, {4, 5, 6});
  // The jaxpr: the positions in the flattened mask (the 1-D composition),
  // then per axis (flat // stride) % size as jnp.nonzero unravels them;
  // both results have the one dynamic length c.
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(nz2)(m);
  const std::string s = str(cj);
  INFO(s);
  CHECK(s ==
        "{ lambda ; a:bool[2,3]. let\n"
        "    b:bool[6] = reshape[dimensions=None new_sizes=(6,)] a\n"
        "    c:i64[6] = convert_element_type[new_dtype=int64 weak_type=False] b\n"
        "    d:i64[] = reduce_sum[axes=(0,)] c\n"
        "    e:i64[d] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0:i64[] d\n"
        "    f:i64[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] d\n"
        "    g:i64[6] = cumsum[axis=0 reverse=False] c\n"
        "    h:i64[6] = sub g 1:i64[]\n"
        "    i:i64[6] = select_n b f h\n"
        "    j:i64[6,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 1)] i\n"
        "    k:i64[6] = iota[dimension=0 dtype=int64 shape=(6,)] \n"
        "    l:i64[d] = scatter[\n"
        "      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), "
        "scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n"
        "      indices_are_sorted=False\n"
        "      mode=GatherScatterMode.FILL_OR_DROP\n"
        "      unique_indices=False\n"
        "      update_consts=()\n"
        "      update_jaxpr=None\n"
        "    ] e j k\n"
        "    m:i64[d] = div l 3:i64[]\n"
        "    n:i64[d] = rem l 3:i64[]\n"
        "  in (d, m, n) }");
  const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(m)});
  REQUIRE(got.size() == 3);
  CHECK(got[0].get<i64>()() == 3);
  CHECK_ARR(i64, got[1].get<i64>(), {3}, {0, 0, 1});
  CHECK_ARR(i64, got[2].get<i64>(), {3}, {1, 2, 0});
  // A symbolic shape: the strides and sizes are the dimension variables.
  const auto sj = dyn::make_jaxpr(nz2, dyn::polymorphic_shapes{"(n, w)"})(m);
  const auto sg = dyn::eval_jaxpr(sj, {dyn::AnyArray(mk<bool>({3, 2}, {0, 1, 0, 0, 1, 1}))});
  REQUIRE(sg.size() == 3);
  CHECK_ARR(i64, sg[1].get<i64>(), {3}, {0, 2, 2});
  CHECK_ARR(i64, sg[2].get<i64>(), {3}, {1, 0, 1});
  // Bad input: the rank the call expects, and a 0-d array (jnp rejects it too).
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::nonzero<3>(m); }) ==
        "nonzero: the array has rank 2, got bool[2,3], but dyn::nonzero<3> returns 3 index array(s); call "
        "dyn::nonzero<2>(x) (one per axis)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::nonzero(dyn::Array<float>({}, {1.0f})); }) ==
        "nonzero: a 0-d array has no axis to index, got f32[]; reshape it to one axis first (dyn::reshape(x, {1}))");
  try {
    (void)dyn::nonzero<2>(dyn::Array<float>({4}));
    FAIL("no error");
  } catch (const dyn::ShapeError& err) {
    CHECK(std::string(err.what()).find("test_index.cpp") != std::string::npos);
  }
}
