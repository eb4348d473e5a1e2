// The user-level suite of the layout and creation functions of API.md §13:
// rev flip pad stack tile repeat tril triu eye linspace, and outer and
// dot_general, run three ways (eager, make_jaxpr, eval_jaxpr; ops_test.hpp)
// against hand-computed numbers; golden jaxpr text of the functions composed
// of primitives, as jax.numpy composes them; their errors.
#include "ops_test.hpp"

#include <tuple>

namespace {

using namespace ops_test;

std::string str(const dyn::ClosedJaxpr& j) { return dyn::to_string(j); }

}  // namespace

TEST_CASE_TEMPLATE("ops: rev and flip reverse the chosen axes", T, bool, i32, i64, float, double) {
  const auto x = seq<T>({2, 3});  // 0 1 2 / 3 4 5
  const auto r = check_all_ways(
      [](auto v) { return std::make_tuple(dyn::rev(v, {0}), dyn::flip(v, 1), dyn::rev(v, {0, -1}), dyn::rev(v, {})); }, x);
  CHECK_ARR(T, std::get<0>(r), {2, 3}, seq_at<T>({3, 4, 5, 0, 1, 2}));
  CHECK_ARR(T, std::get<1>(r), {2, 3}, seq_at<T>({2, 1, 0, 5, 4, 3}));
  CHECK_ARR(T, std::get<2>(r), {2, 3}, seq_at<T>({5, 4, 3, 2, 1, 0}));
  CHECK_ARR(T, std::get<3>(r), {2, 3}, seq_at<T>({0, 1, 2, 3, 4, 5}));
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::flip(v, 0); }, mk<T>({0}, {})), {0}, {});
}

TEST_CASE_TEMPLATE("ops: pad with low, high and interior padding, negative low/high crop (lax.pad)", T, i32, i64,
                   float, double) {
  const auto x = mk<T>({3}, {1, 2, 3});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::pad(v, {{1, 2, 0}}, 9), dyn::pad(v, {{0, 0, 1}}, 0), dyn::pad(v, {{-1, 1, 1}}, 7),
                               dyn::pad(v, {{-2, -1, 0}}, 7), dyn::pad(v, {{-3, 0, 0}}, 7), dyn::pad(v, {{-4, 1, 1}}, 7));
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {6}, {9, 1, 2, 3, 9, 9});
  CHECK_ARR(T, std::get<1>(r), {5}, {1, 0, 2, 0, 3});
  CHECK_ARR(T, std::get<2>(r), {5}, {7, 2, 7, 3, 7});
  CHECK_ARR(T, std::get<3>(r), {0}, {});
  CHECK_ARR(T, std::get<4>(r), {0}, {});
  CHECK_ARR(T, std::get<5>(r), {2}, {3, 7});
  // Two axes; an empty operand is all padding.
  const auto m = check_all_ways([](auto v) { return dyn::pad(v, {{1, 0, 0}, {0, 1, 1}}, -1); }, mk<T>({2, 2}, {1, 2, 3, 4}));
  CHECK_ARR(T, m, {3, 4}, {-1, -1, -1, -1, 1, -1, 2, -1, 3, -1, 4, -1});
  CHECK_ARR(T, check_all_ways([](auto v) { return dyn::pad(v, {{1, 1, 3}}, 5); }, mk<T>({0}, {})), {2}, {5, 5});
}

TEST_CASE("ops: pad with interior padding of a dynamic size keeps max(n - 1, 0): a run-time 0 adds no gaps") {
  const auto f = [](auto n) { return dyn::pad(dyn::arange<i32>(n), {{1, 2, 2}}, 9); };
  const auto cj = dyn::make_jaxpr(f)(dyn::Array<i64>::scalar(4));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const std::string text = str(cj);
  CAPTURE(text);
  CHECK(text.find("max") != std::string::npos);  // the size is computed with a max, not as 3n + 1
  for (i64 n : {0, 1, 3}) {
    const auto got = dyn::eval_jaxpr(cj, {dyn::AnyArray(dyn::Array<i64>::scalar(n))});
    const auto& r = got.back().get<i32>();
    CHECK(r.shape() == std::vector<i64>{n == 0 ? 3 : 3 * n + 1});
    const auto e = f(dyn::Array<i64>::scalar(n));  // eager: a static size
    CHECK(r.shape() == e.shape());
    CHECK(std::vector<i32>(r.data(), r.data() + r.size()) == std::vector<i32>(e.data(), e.data() + e.size()));
  }
  // A polymorphic size is >= 1 (JAX's shape polymorphism): the size stays 3n + 1, no max.
  const auto cp = dyn::make_jaxpr([](auto x) { return dyn::pad(x, {{1, 2, 2}}, 9); }, dyn::polymorphic_shapes{"(n,)"})(
      dyn::Array<i32>({4}));
  CHECK(str(cp).find("max") == std::string::npos);
}

TEST_CASE("ops: pad errors name lax.pad's conditions and the shapes") {
  const auto x = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "pad: length of padding_config must equal the number of axes of operand, got padding_config "
                          "((1, 1, 0),) for operand shape (2, 3)",
                          dyn::pad(x, {{1, 1, 0}}, 0.0f));
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "pad: interior padding in padding_config must be nonnegative, got padding_config ((0, 0, -1), "
                          "(0, 0, 0))",
                          dyn::pad(x, {{0, 0, -1}, {0, 0, 0}}, 0.0f));
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "pad: dimension size after padding is not at least 0, got result shape (2, -1), for "
                          "padding_config ((0, 0, 0), (-2, -2, 0)) and operand shape (2, 3)",
                          dyn::pad(x, {{0, 0, 0}, {-2, -2, 0}}, 0.0f));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "test_ops_layout.cpp", dyn::pad(x, {{0, 0, 0}, {-2, -2, 0}}, 0.0f));
  CHECK_THROWS_CONTAINING(dyn::IndexError, "rev: axis 2 is out of bounds for an array of rank 2", dyn::rev(x, {2}));
  CHECK_THROWS_CONTAINING(dyn::IndexError, "rev: repeated axis -1", dyn::rev(x, {1, -1}));
}

TEST_CASE_TEMPLATE("ops: stack, tile and repeat (jnp's)", T, i32, float) {
  const auto a = mk<T>({2}, {1, 2});
  const auto b = mk<T>({2}, {3, 4});
  const auto r = check_all_ways(
      [](auto u, auto v) {
        return std::make_tuple(dyn::stack({u, v}), dyn::stack({u, v}, 1), dyn::stack({u, v}, -1), dyn::tile(u, {3}),
                               dyn::tile(u, {2, 2}), dyn::repeat(u, 3, 0), dyn::repeat(dyn::stack({u, v}), 2, 1),
                               dyn::repeat(dyn::stack({u, v}), 2, 0), dyn::repeat(u, 0, 0));
      },
      a, b);
  CHECK_ARR(T, std::get<0>(r), {2, 2}, {1, 2, 3, 4});
  CHECK_ARR(T, std::get<1>(r), {2, 2}, {1, 3, 2, 4});
  CHECK_ARR(T, std::get<2>(r), {2, 2}, {1, 3, 2, 4});
  CHECK_ARR(T, std::get<3>(r), {6}, {1, 2, 1, 2, 1, 2});
  CHECK_ARR(T, std::get<4>(r), {2, 4}, {1, 2, 1, 2, 1, 2, 1, 2});
  CHECK_ARR(T, std::get<5>(r), {6}, {1, 1, 1, 2, 2, 2});
  CHECK_ARR(T, std::get<6>(r), {2, 4}, {1, 1, 2, 2, 3, 3, 4, 4});
  CHECK_ARR(T, std::get<7>(r), {4, 2}, {1, 2, 1, 2, 3, 4, 3, 4});
  CHECK_ARR(T, std::get<8>(r), {0}, {});
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "stack: all input arrays must have the same shape, got (2,), (3,)",
                          dyn::stack({a, mk<T>({3}, {1, 2, 3})}));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "tile: negative repetition -1", dyn::tile(a, {-1}));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "repeat: negative repeats -2", dyn::repeat(a, -2, 0));
}

TEST_CASE_TEMPLATE("ops: tril and triu keep the elements on and below (above) diagonal k", T, i32, float, double) {
  const auto x = mk<T>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto r = check_all_ways(
      [](auto v) {
        return std::make_tuple(dyn::tril(v), dyn::triu(v), dyn::tril(v, 1), dyn::triu(v, -1), dyn::tril(v, -1));
      },
      x);
  CHECK_ARR(T, std::get<0>(r), {3, 3}, {1, 0, 0, 4, 5, 0, 7, 8, 9});
  CHECK_ARR(T, std::get<1>(r), {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK_ARR(T, std::get<2>(r), {3, 3}, {1, 2, 0, 4, 5, 6, 7, 8, 9});
  CHECK_ARR(T, std::get<3>(r), {3, 3}, {1, 2, 3, 4, 5, 6, 0, 8, 9});
  CHECK_ARR(T, std::get<4>(r), {3, 3}, {0, 0, 0, 4, 0, 0, 7, 8, 0});
  // Batched (the last two axes), non-square.
  const auto b = check_all_ways([](auto v) { return dyn::triu(v); }, mk<T>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  CHECK_ARR(T, b, {2, 2, 3}, {1, 2, 3, 0, 5, 6, 1, 2, 3, 0, 5, 6});
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "tril: the argument must be at least 2-dimensional, got shape (3,)",
                          dyn::tril(mk<T>({3}, {1, 2, 3})));
}

TEST_CASE("ops: eye and linspace (jnp's values)") {
  CHECK_ARR(float, dyn::eye<float>(3), {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK_ARR(bool, dyn::eye<bool>(2), {2, 2}, {1, 0, 0, 1});
  CHECK_ARR(i32, dyn::eye<i32>(0), {0, 0}, {});
  CHECK_ARR(double, dyn::linspace<double>(0.0, 1.0, 5), {5}, {0, 0.25, 0.5, 0.75, 1});
  CHECK_ARR(float, dyn::linspace<float>(1.0, -1.0, 5), {5}, {1, 0.5, 0, -0.5, -1});
  CHECK_ARR(double, dyn::linspace<double>(3.0, 4.0, 1), {1}, {3});
  CHECK_ARR(double, dyn::linspace<double>(3.0, 4.0, 0), {0}, {});
  CHECK_ARR(i32, dyn::linspace<i32>(0.0, 10.0, 4), {4}, {0, 3, 6, 10});  // 3.33.. and 6.66.. floored
  CHECK_ARR(i64, dyn::linspace<i64>(-1.0, 1.0, 4), {4}, {-1, -1, 0, 1});  // -0.33.. floors to -1
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "linspace: number of samples, -1, must be non-negative",
                          dyn::linspace<float>(0.0, 1.0, -1));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "test_ops_layout.cpp", dyn::linspace<float>(0.0, 1.0, -3));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "eye: negative size -2", dyn::eye<float>(-2));
}

TEST_CASE("ops: outer and dot_general with contracting and batch axes") {
  const auto a = mk<double>({2}, {1, 2});
  const auto b = mk<double>({3}, {1, 10, 100});
  CHECK_ARR(double, check_all_ways([](auto u, auto v) { return dyn::outer(u, v); }, a, b), {2, 3},
            {1, 10, 100, 2, 20, 200});
  CHECK_ARR(double, check_all_ways([](auto u, auto v) { return dyn::outer(u, v); }, mk<double>({2, 1}, {1, 2}), b),
            {2, 3}, {1, 10, 100, 2, 20, 200});
  // Batched matrix products written as dot_general: (2, 2, 3) x (2, 3, 1).
  const auto x = mk<i32>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  const auto y = mk<i32>({2, 3, 1}, {1, 1, 1, 7, 8, 9});
  CHECK_ARR(i32, check_all_ways([](auto u, auto v) { return dyn::dot_general(u, v, {{2}, {1}}, {{0}, {0}}); }, x, y),
            {2, 2, 1}, {6, 15, 7, 8});
  // Batch axis not leading in the rhs; contraction over the first axis.
  const auto yt = mk<i32>({3, 2}, {1, 7, 1, 8, 1, 9});  // y's batch axis last
  CHECK_ARR(i32, check_all_ways([](auto u, auto v) { return dyn::dot_general(u, v, {{2}, {0}}, {{0}, {1}}); }, x, yt),
            {2, 2}, {6, 15, 7, 8});
  CHECK_ARR(i32, check_all_ways([](auto u) { return dyn::dot_general(u, u, {{0, 1, 2}, {0, 1, 2}}); }, x), {},
            {1 + 4 + 9 + 16 + 25 + 36 + 1 + 1});
}

TEST_CASE("golden: the composed layout functions read as jax.numpy's") {
  // jnp.stack([x, x], 1): expand_dims (broadcast_in_dim) of each, concatenate.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::stack({x, x}, 1); })(dyn::Array<float>({2}))) ==
        "{ lambda ; a:f32[2]. let\n"
        "    b:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] a\n"
        "    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] a\n"
        "    d:f32[2,2] = concatenate[dimension=1] b c\n"
        "  in (d,) }");
  // jnp.tile(x, (2, 1)): reshape to (1, 2, 1, 3), broadcast, reshape.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::tile(x, {2, 1}); })(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[1,2,1,3] = reshape[dimensions=None new_sizes=(1, 2, 1, 3)] a\n"
        "    c:f32[2,2,1,3] = broadcast_in_dim[\n"
        "      broadcast_dimensions=(0, 1, 2, 3)\n"
        "      shape=(2, 2, 1, 3)\n"
        "    ] b\n"
        "    d:f32[4,3] = reshape[dimensions=None new_sizes=(4, 3)] c\n"
        "  in (d,) }");
  // jnp.repeat(x, 2, axis=0): expand_dims after the axis, tile, reshape.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::repeat(x, 2, 0); })(dyn::Array<float>({3}))) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(3, 1)] a\n"
        "    c:f32[1,3,1,1] = reshape[dimensions=None new_sizes=(1, 3, 1, 1)] b\n"
        "    d:f32[1,3,2,1] = broadcast_in_dim[\n"
        "      broadcast_dimensions=(0, 1, 2, 3)\n"
        "      shape=(1, 3, 2, 1)\n"
        "    ] c\n"
        "    e:f32[3,2] = reshape[dimensions=None new_sizes=(3, 2)] d\n"
        "    f:f32[6] = reshape[dimensions=None new_sizes=(6,)] e\n"
        "  in (f,) }");
  // jnp.tril(x): lax's _tri mask (row + k >= column over i32 iotas), select_n.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::tril(x, 1); })(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:i32[2,3] = iota[dimension=0 dtype=int32 shape=(2, 3)] \n"
        "    c:i32[2,3] = add b 1:i32[]\n"
        "    d:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3)] \n"
        "    e:bool[2,3] = ge c d\n"
        "    f:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 0.0:f32[]\n"
        "    g:f32[2,3] = select_n e f a\n"
        "  in (g,) }");
  // jnp.triu(x): the mask of diagonal k - 1, the cases the other way round.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::triu(x); })(dyn::Array<float>({2, 2}))) ==
        "{ lambda ; a:f32[2,2]. let\n"
        "    b:i32[2,2] = iota[dimension=0 dtype=int32 shape=(2, 2)] \n"
        "    c:i32[2,2] = add b -1:i32[]\n"
        "    d:i32[2,2] = iota[dimension=1 dtype=int32 shape=(2, 2)] \n"
        "    e:bool[2,2] = ge c d\n"
        "    f:f32[2,2] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 2)] 0.0:f32[]\n"
        "    g:f32[2,2] = select_n e a f\n"
        "  in (g,) }");
  // jnp.eye(n) with a symbolic n: lax's _eye over i32 iotas.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::eye<float>(x.shape(0)); }, dyn::polymorphic_shapes{"(n,)"})(
            dyn::Array<float>({3}))) ==
        "{ lambda ; a:i64[] b:f32[a]. let\n"
        "    c:i32[a,a] = iota[dimension=0 dtype=int32 shape=(None, None)] a a\n"
        "    d:i32[a,a] = add c 0:i32[]\n"
        "    e:i32[a,a] = iota[dimension=1 dtype=int32 shape=(None, None)] a a\n"
        "    f:bool[a,a] = eq d e\n"
        "    g:f32[a,a] = convert_element_type[new_dtype=float32 weak_type=False] f\n"
        "  in (g,) }");
  // jnp.linspace(0, 1, 3): iota / (num - 1), start * (1 - step) + stop * step, stop appended.
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::linspace<float>(0.0, 1.0, x.shape(0)); })(dyn::Array<float>({3}))) ==
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[2] = iota[dimension=0 dtype=float32 shape=(2,)] \n"
        "    c:f32[2] = div b 2.0:f32[]\n"
        "    d:f32[2] = sub 1.0:f32[] c\n"
        "    e:f32[2] = mul 0.0:f32[] d\n"
        "    f:f32[2] = mul 1.0:f32[] c\n"
        "    g:f32[2] = add e f\n"
        "    h:f32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,)] 1.0:f32[]\n"
        "    i:f32[3] = concatenate[dimension=0] g h\n"
        "  in (i,) }");
  // jnp.outer(a, b): ravel(a)[:, None] * ravel(b)[None, :] (each then
  // broadcast to the result's shape, as every dynstage binary operation).
  CHECK(str(dyn::make_jaxpr([](auto u, auto v) { return dyn::outer(u, v); })(dyn::Array<float>({2}),
                                                                            dyn::Array<float>({3}))) ==
        "{ lambda ; a:f32[2] b:f32[3]. let\n"
        "    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] a\n"
        "    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] c\n"
        "    e:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] b\n"
        "    f:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] e\n"
        "    g:f32[2,3] = mul d f\n"
        "  in (g,) }");
}

TEST_CASE_TEMPLATE("ops: einsum against hand-computed products, sums and transposes", T, i32, float, double) {
  const auto a = mk<T>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto b = mk<T>({3, 2}, {1, 0, 0, 1, 1, 1});
  const auto v = mk<T>({3}, {1, -1, 2});
  const auto r = check_all_ways(
      [](auto x, auto y, auto w) {
        return std::make_tuple(dyn::einsum("ij,jk->ik", x, y), dyn::einsum("ij,jk", x, y), dyn::einsum("ij->ji", x),
                               dyn::einsum("ij->", x), dyn::einsum("ij->j", x), dyn::einsum("ij,j->i", x, w),
                               dyn::einsum("i,i", w, w), dyn::einsum("i,j->ij", w, w),
                               dyn::einsum("ij,jk,k->i", x, y, dyn::einsum("ij->i", x)), dyn::einsum("ji", x),
                               dyn::einsum("ij,kj->ik", x, x), dyn::einsum("ij,jk -> ki", x, y));
      },
      a, b, v);
  CHECK_ARR(T, std::get<0>(r), {2, 2}, {4, 5, 10, 11});
  CHECK_ARR(T, std::get<1>(r), {2, 2}, {4, 5, 10, 11});  // implicit output: i, k
  CHECK_ARR(T, std::get<2>(r), {3, 2}, {1, 4, 2, 5, 3, 6});
  CHECK_ARR(T, std::get<3>(r), {}, {21});
  CHECK_ARR(T, std::get<4>(r), {3}, {5, 7, 9});
  CHECK_ARR(T, std::get<5>(r), {2}, {5, 11});
  CHECK_ARR(T, std::get<6>(r), {}, {6});
  CHECK_ARR(T, std::get<7>(r), {3, 3}, {1, -1, 2, -1, 1, -2, 2, -2, 4});
  // (x @ y) @ [6, 15], the rows of x summed: y and the vector contract first (the cheapest pair).
  CHECK_ARR(T, std::get<8>(r), {2}, {99, 225});
  CHECK_ARR(T, std::get<9>(r), {3, 2}, {1, 4, 2, 5, 3, 6});  // implicit output sorted: i, j -> "ij" of "ji"
  CHECK_ARR(T, std::get<10>(r), {2, 2}, {14, 32, 32, 77});
  CHECK_ARR(T, std::get<11>(r), {2, 2}, {4, 10, 5, 11});
}

TEST_CASE("ops: einsum contracts the cheapest pair first, with dot_general batch axes, then transposes") {
  // b batch, j contracted: one dot_general, no transpose ("bij,bjk->bik").
  CHECK(str(dyn::make_jaxpr([](auto x, auto y) { return dyn::einsum("bij,bjk->bik", x, y); })(
            dyn::Array<float>({2, 3, 4}), dyn::Array<float>({2, 4, 5}))) ==
        "{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let\n"
        "    c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b\n"
        "  in (c,) }");
  // Three operands: (10x20)(20x30)(30x2): the pair (b, c) costs 20*30*2*3 multiply-adds, fewer than (a, b)'s
  // 10*20*30; then a with the result; the output order ki needs a transpose; 'z' appears in c only and is
  // summed first.
  CHECK(str(dyn::make_jaxpr([](auto x, auto y, auto z) { return dyn::einsum("ij,jk,klz->li", x, y, z); })(
            dyn::Array<float>({10, 20}), dyn::Array<float>({20, 30}), dyn::Array<float>({30, 2, 3}))) ==
        "{ lambda ; a:f32[10,20] b:f32[20,30] c:f32[30,2,3]. let\n"
        "    d:f32[30,2] = reduce_sum[axes=(2,)] c\n"
        "    e:f32[20,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b d\n"
        "    f:f32[10,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a e\n"
        "    g:f32[2,10] = transpose[permutation=(1, 0)] f\n"
        "  in (g,) }");
  // Mixed dtypes promote as jnp: i32 and f32 give f32.
  const auto m = dyn::einsum("i,i", mk<i32>({2}, {1, 2}), mk<float>({2}, {0.5, 0.25}));
  CHECK_ARR(float, m, {}, {1});
}

TEST_CASE_TEMPLATE("ops: einsum with a repeated subscript (diagonal, trace) and with '...' (broadcast axes)", T, i32,
                   float, double) {
  const auto m = mk<T>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const auto c = mk<T>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});  // c[i][i'][j]
  const auto a = mk<T>({2, 2, 3}, {1, 0, 2, 0, 1, 1, 2, 1, 0, 1, 1, 1});       // two 2x3 matrices
  const auto b = mk<T>({3, 2}, {1, 2, 3, 4, 5, 6});
  const auto r = check_all_ways(
      [](auto x, auto y, auto z, auto w) {
        return std::make_tuple(dyn::einsum("ii->i", x), dyn::einsum("ii->", x), dyn::einsum("ii", x),
                               dyn::einsum("iij->j", y), dyn::einsum("...ij,...jk->...ik", z, w),
                               dyn::einsum("...i->...", z), dyn::einsum("...ij,jk", z, w), dyn::einsum("i...->...", z),
                               dyn::einsum("ij,jj->ij", w, dyn::einsum("ij,jk->ik", dyn::einsum("ij->ji", w), w)),
                               dyn::einsum("...,...", x, x), dyn::einsum("iji->j", dyn::einsum("ijk->ikj", y)));
      },
      m, c, a, b);
  CHECK_ARR(T, std::get<0>(r), {3}, {1, 5, 9});
  CHECK_ARR(T, std::get<1>(r), {}, {15});
  CHECK_ARR(T, std::get<2>(r), {}, {15});  // implicit output: 'i' appears twice, so the trace
  // c[0][0][j] + c[1][1][j] = (1, 2, 3) + (10, 11, 12)
  CHECK_ARR(T, std::get<3>(r), {3}, {11, 13, 15});
  // [[1,0,2],[0,1,1]] @ b = [[11,14],[8,10]]; [[2,1,0],[1,1,1]] @ b = [[5,8],[9,12]]
  CHECK_ARR(T, std::get<4>(r), {2, 2, 2}, {11, 14, 8, 10, 5, 8, 9, 12});
  CHECK_ARR(T, std::get<5>(r), {2, 2}, {3, 2, 3, 3});
  CHECK_ARR(T, std::get<6>(r), {2, 2, 2}, {11, 14, 8, 10, 5, 8, 9, 12});  // implicit: '...' first, then i, k
  CHECK_ARR(T, std::get<7>(r), {2, 3}, {3, 1, 2, 1, 2, 2});
  // w^T w = [[35, 44], [44, 56]]: its diagonal (35, 56) scales w's columns.
  CHECK_ARR(T, std::get<8>(r), {3, 2}, {35, 112, 105, 224, 175, 336});
  CHECK_ARR(T, std::get<9>(r), {3, 3}, {1, 4, 9, 16, 25, 36, 49, 64, 81});  // only '...': elementwise
  CHECK_ARR(T, std::get<10>(r), {3}, {11, 13, 15});  // "iji" of the transposed c: the same diagonal sum
  // '...' broadcasting: a size-1 batch axis against 2.
  const auto one = mk<T>({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  const auto rb = check_all_ways([](auto z, auto w) { return dyn::einsum("...ij,...jk->...ik", z, w); }, a, one);
  CHECK_ARR(T, rb, {2, 2, 2}, {11, 14, 8, 10, 5, 8, 9, 12});
}

TEST_CASE("ops: einsum's diagonal is jnp's sum_repeats: an iota equality mask, select_n, reduce_sum") {
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::einsum("ii->i", x); })(dyn::Array<float>({3, 3}))) ==
        "{ lambda ; a:f32[3,3]. let\n"
        "    b:u32[3,3] = iota[dimension=0 dtype=uint32 shape=(3, 3)] \n"
        "    c:u32[3,3] = iota[dimension=1 dtype=uint32 shape=(3, 3)] \n"
        "    d:bool[3,3] = eq b c\n"
        "    e:f32[3,3] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 3)] 0.0:f32[]\n"
        "    f:f32[3,3] = select_n d e a\n"
        "    g:f32[3] = reduce_sum[axes=(0,)] f\n"
        "  in (g,) }");
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::einsum("ii->", x); })(dyn::Array<float>({3, 3}))) ==
        "{ lambda ; a:f32[3,3]. let\n"
        "    b:u32[3,3] = iota[dimension=0 dtype=uint32 shape=(3, 3)] \n"
        "    c:u32[3,3] = iota[dimension=1 dtype=uint32 shape=(3, 3)] \n"
        "    d:bool[3,3] = eq b c\n"
        "    e:f32[3,3] = broadcast_in_dim[broadcast_dimensions=() shape=(3, 3)] 0.0:f32[]\n"
        "    f:f32[3,3] = select_n d e a\n"
        "    g:f32[] = reduce_sum[axes=(0, 1)] f\n"
        "  in (g,) }");
  // '...': fresh letters, then the same dot_general as named batch axes.
  CHECK(str(dyn::make_jaxpr([](auto x, auto y) { return dyn::einsum("...ij,...jk->...ik", x, y); })(
            dyn::Array<float>({2, 3, 4}), dyn::Array<float>({2, 4, 5}))) ==
        "{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let\n"
        "    c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b\n"
        "  in (c,) }");
  CHECK(str(dyn::make_jaxpr([](auto x) { return dyn::einsum("...i->...", x); })(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let b:f32[2] = reduce_sum[axes=(1,)] a in (b,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(dyn::make_jaxpr([](auto x) { return dyn::einsum("iij->j", x); })(
      dyn::Array<double>({4, 4, 2}))));
}

TEST_CASE("ops: einsum errors name einsum, the subscripts, the operand shapes and the user's line") {
  const auto a = mk<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto b = mk<float>({3, 4}, Vals(12, 1));
  const std::string pre = "einsum('ij,jk->iz') with operand shapes (2, 3), (3, 4): ";
  CHECK_THROWS_CONTAINING(dyn::ShapeError, pre + "output subscript 'z' does not appear in any operand",
                          dyn::einsum("ij,jk->iz", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "einsum('ijk,jk->ik') with operand shapes (2, 3), (3, 4): operand 0 has rank 2 but "
                          "subscripts 'ijk' name 3 axes",
                          dyn::einsum("ijk,jk->ik", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "einsum('ij,ik->ik') with operand shapes (2, 3), (3, 4): subscript 'i' has size 2 and 3",
                          dyn::einsum("ij,ik->ik", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "invalid subscript '1': subscripts are letters a-z and A-Z",
                          dyn::einsum("ij,j1->ik", a, b));
  // A repeated subscript needs equal sizes (a diagonal); '...' one per operand and enough axes.
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "einsum('ii,ik->ik') with operand shapes (2, 3), (3, 4): subscript 'i' has size 2 and 3",
                          dyn::einsum("ii,ik->ik", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError,
                          "einsum('...ijk,jk') with operand shapes (2, 3), (3, 4): operand 0 has rank 2 but subscripts "
                          "'...ijk' name 3 axes besides '...'",
                          dyn::einsum("...ijk,jk", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "'.' is allowed only as one '...' per operand or output",
                          dyn::einsum("..j,jk", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "subscript 'A' has size 2 and 3", dyn::einsum("...,...", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "2 operand subscripts for 1 operands", dyn::einsum("ij,jk", a));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "output subscript 'i' repeats", dyn::einsum("ij,jk->ii", a, b));
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "test_ops_layout.cpp", dyn::einsum("ij,jk->iz", a, b));
  // Traced: the same error, at the line of the einsum inside the traced function.
  CHECK_THROWS_CONTAINING(dyn::ShapeError, "test_ops_layout.cpp",
                          dyn::make_jaxpr([](auto x, auto y) { return dyn::einsum("ij,ik", x, y); })(a, b));
}
