// Sizes anywhere (API.md §8, docs/shapes.md "Sizes: integers, Dims and
// traced scalars, anywhere"): every operation that takes sizes, starts,
// limits or shapes accepts each entry as an integer, a dyn::Dim or an integer
// scalar tracer, mixed in one brace list, on arrays and on tracers. Each case
// runs eagerly, under make_jaxpr (golden text) and under jit (equal to eager),
// several with symbolic shapes and constraints.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;
using test_util::iota_array;
using test_util::message_of;
using test_util::str;

// jit(f)(args...) equals eager(f)(args...) exactly (one result).
template <class F, class... A>
void check_jit_eager(const F& f, const A&... args) {
  auto e = dyn::eager(f)(args...);
  auto j = dyn::jit(f)(args...);
  CHECK(j.shape() == e.shape());
  CHECK(dyn::array_equal(j, e));
}

const Array<double> x34 = iota_array<double>({3, 4});

}  // namespace

// ---------------------------------------------------------------------------
// The contract program of ../shared/contract/signatures.cpp, checked.

TEST_CASE("sizes: the contract's function, eager, traced and jitted") {
  auto sizes = [](auto a, auto n) {
    auto d = a.shape(1);                                    // a Dim while tracing
    auto b = dyn::broadcast_to(dyn::sum(a, {0}), {n, d});   // traced scalar + Dim
    auto r = dyn::reshape(a, {d, -1});                      // Dim + -1
    auto s = dyn::slice(a, {0, 0}, {a.shape(0), d});        // Dim limits
    auto t = dyn::dynamic_slice(a, {n - 3, i64{0}}, {i64{1}, d});  // traced start, Dim size
    auto z = dyn::zeros<double>({n, d});
    auto o = dyn::ones<double>({d + 1});
    auto f = dyn::full<double>({n, i64{2}}, 1.5);
    auto i = dyn::arange<double>(d);
    return std::make_tuple(b, r, s, t, z, o, f, i);
  };
  CHECK(str(dyn::make_jaxpr(sizes)(x34, i64{3})) ==
        "{ lambda ; a:f64[3,4] b:i64[]. let\n"
        "    c:f64[4] = reduce_sum[axes=(0,)] a\n"
        "    d:f64[b,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(None, 4)] c b\n"
        "    e:f64[4,3] = reshape[dimensions=None new_sizes=(4, 3)] a\n"
        "    f:f64[3,4] = slice[limit_indices=(3, 4) start_indices=(0, 0) strides=None] a\n"
        "    g:i64[] = sub b 3:i64[]\n"
        "    h:f64[1,4] = dynamic_slice[slice_sizes=(1, 4)] a g 0:i64[]\n"
        "    i:f64[b,4] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 4)] 0.0:f64[]\n"
        "      b\n"
        "    j:f64[5] = broadcast_in_dim[broadcast_dimensions=() shape=(5,)] 1.0:f64[]\n"
        "    k:f64[b,2] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 2)] 1.5:f64[]\n"
        "      b\n"
        "    l:f64[4] = iota[dimension=0 dtype=float64 shape=(4,)] \n"
        "  in (d, e, f, h, i, j, k, l) }");
  auto e = dyn::eager(sizes)(x34, i64{3});
  auto j = dyn::jit(sizes)(x34, i64{3});
  CHECK(dyn::array_equal(std::get<0>(e), dyn::broadcast_to(dyn::sum(x34, {0}), {3, 4})));
  CHECK(dyn::array_equal(std::get<1>(e), dyn::reshape(x34, {4, 3})));
  CHECK(dyn::array_equal(std::get<3>(e), Array<double>({1, 4}, {0, 1, 2, 3})));
  CHECK(dyn::array_equal(std::get<6>(e), dyn::full<double>({3, 2}, 1.5)));
  CHECK(dyn::array_equal(std::get<7>(e), dyn::array({0.0, 1.0, 2.0, 3.0})));
  std::apply([&](const auto&... jr) {
    std::apply([&](const auto&... er) {
      const bool equal[] = {dyn::array_equal(jr, er)...};
      for (bool b : equal) CHECK(b);
    }, e);
  }, j);
  // One kernel serves every n (a dynamic dimension).
  auto js = dyn::jit(sizes);
  for (i64 n : {3, 5, 7}) {
    auto r = js(x34, n);
    CHECK(std::get<0>(r).shape() == std::vector<i64>{n, 4});
    CHECK(dyn::array_equal(std::get<3>(r), std::get<3>(dyn::eager(sizes)(x34, n))));
  }
  CHECK(js.stats().compiles == 1);
}

// ---------------------------------------------------------------------------
// reshape

TEST_CASE("sizes: reshape with integers, Dims, traced scalars and a mix") {
  SUBCASE("integers: a concrete array stays concrete") {
    static_assert(std::is_same_v<decltype(dyn::reshape(x34, {2, 6})), Array<double>>);
    CHECK(dyn::array_equal(dyn::reshape(x34, {2, -1}), iota_array<double>({2, 6})));
    auto f = [](auto a) { return dyn::reshape(a, {2, 6}); };
    CHECK(str(dyn::make_jaxpr(f)(x34)) ==
          "{ lambda ; a:f64[3,4]. let\n"
          "    b:f64[2,6] = reshape[dimensions=None new_sizes=(2, 6)] a\n"
          "  in (b,) }");
    check_jit_eager(f, x34);
  }
  SUBCASE("Dims: symbolic sizes are operands") {
    auto f = [](auto a) { return dyn::reshape(a, {a.shape(1), -1}); };
    CHECK(str(dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(a, b)"})(x34)) ==
          "{ lambda ; a:i64[] b:i64[] c:f64[a,b]. let\n"
          "    d:f64[b,a] = reshape[dimensions=None new_sizes=(None, None)] c b a\n"
          "  in (d,) }");
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(a, b)"});
    for (auto x : {x34, iota_array<double>({5, 2})})
      CHECK(dyn::array_equal(jf(x), dyn::reshape(x, {x.shape(1), -1})));
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("traced scalars: the size is a dynamic dimension") {
    auto f = [](auto n) { return dyn::reshape(dyn::arange<double>(n * 4), {n, -1}); };
    CHECK(str(dyn::make_jaxpr(f)(i64{3})) ==
          "{ lambda ; a:i64[]. let\n"
          "    b:i64[] = mul a 4:i64[]\n"
          "    c:f64[b] = iota[dimension=0 dtype=float64 shape=(None,)] b\n"
          "    d:f64[a,4] = reshape[dimensions=None new_sizes=(None, 4)] c a\n"
          "  in (d,) }");
    CHECK(dyn::array_equal(dyn::eager(f)(i64{3}), iota_array<double>({3, 4})));
    check_jit_eager(f, i64{3});
    check_jit_eager(f, i64{5});
  }
  SUBCASE("mixed: an integer, a traced scalar and a Dim in one list") {
    auto f = [](auto a, auto n) {
      auto v = dyn::ones<double>({n, a.shape(1)});
      return dyn::reshape(v, {i64{2}, n, a.shape(1) - 2});
    };
    CHECK(str(dyn::make_jaxpr(f)(x34, i64{3})) ==
          "{ lambda ; a:f64[3,4] b:i64[]. let\n"
          "    c:f64[b,4] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 4)] 1.0:f64[]\n"
          "      b\n"
          "    d:f64[2,b,2] = reshape[dimensions=None new_sizes=(2, None, 2)] c b\n"
          "  in (d,) }");
    CHECK(dyn::eager(f)(x34, i64{3}).shape() == std::vector<i64>{2, 3, 2});
    check_jit_eager(f, x34, i64{3});
  }
  SUBCASE("a concrete array with a Dim size is staged (a constant of the trace)") {
    auto f = [](auto a) { return dyn::reshape(dyn::array({1.0, 2.0, 3.0, 4.0}), {a.shape(0), 2}); };
    CHECK(str(dyn::make_jaxpr(f)(dyn::array({0.0, 0.0}))) ==
          "{ lambda a:f64[4]; b:f64[2]. let\n"
          "    c:f64[2,2] = reshape[dimensions=None new_sizes=(2, 2)] a\n"
          "  in (c,) }");
    check_jit_eager(f, dyn::array({0.0, 0.0}));
  }
  SUBCASE("element counts that cannot be shown equal") {
    auto f = [](auto a, auto n) { return dyn::reshape(a, {n, 4}); };
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::make_jaxpr(f)(x34, i64{3}); }) ==
          "reshape: cannot reshape array of shape (3, 4) (size 12) into shape (_d0, 4) (size 4*_d0)");
  }
}

// ---------------------------------------------------------------------------
// broadcast_to

TEST_CASE("sizes: broadcast_to with integers, Dims, traced scalars and a mix") {
  SUBCASE("integers") {
    auto f = [](auto a) { return dyn::broadcast_to(dyn::sum(a, {0}), {2, 4}); };
    CHECK(str(dyn::make_jaxpr(f)(x34)) ==
          "{ lambda ; a:f64[3,4]. let\n"
          "    b:f64[4] = reduce_sum[axes=(0,)] a\n"
          "    c:f64[2,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 4)] b\n"
          "  in (c,) }");
    check_jit_eager(f, x34);
  }
  SUBCASE("Dims, with symbolic shapes") {
    auto f = [](auto a) { return dyn::broadcast_to(dyn::sum(a, {0}), {a.shape(0) + 1, a.shape(1)}); };
    CHECK(str(dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(a, b)"})(x34)) ==
          "{ lambda ; a:i64[] b:i64[] c:f64[a,b]. let\n"
          "    d:i64[] = add a 1:i64[]\n"
          "    e:f64[b] = reduce_sum[axes=(0,)] c\n"
          "    f:f64[d,b] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(None, None)] e\n"
          "      d b\n"
          "  in (d, f) }");
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(a, b)"});
    for (auto x : {x34, iota_array<double>({1, 7})}) CHECK(dyn::array_equal(jf(x), dyn::eager(f)(x)));
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("a traced scalar and a Dim") {
    auto f = [](auto a, auto n) { return dyn::broadcast_to(dyn::sum(a, {0}), {n, a.shape(1)}); };
    CHECK(str(dyn::make_jaxpr(f)(x34, i64{3})) ==
          "{ lambda ; a:f64[3,4] b:i64[]. let\n"
          "    c:f64[4] = reduce_sum[axes=(0,)] a\n"
          "    d:f64[b,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(None, 4)] c b\n"
          "  in (d,) }");
    CHECK(dyn::eager(f)(x34, i64{2}).shape() == std::vector<i64>{2, 4});
    check_jit_eager(f, x34, i64{2});
    check_jit_eager(f, x34, i64{6});
  }
  SUBCASE("a concrete array broadcast to a Dim size is staged, not folded") {
    auto f = [](auto a) { return dyn::broadcast_to(dyn::array({1.0, 2.0, 3.0, 4.0}), {a.shape(0), 4}) + a; };
    CHECK(str(dyn::make_jaxpr(f)(x34)) ==
          "{ lambda a:f64[4]; b:f64[3,4]. let\n"
          "    c:f64[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4)] a\n"
          "    d:f64[3,4] = add c b\n"
          "  in (d,) }");
    check_jit_eager(f, x34);
  }
}

// ---------------------------------------------------------------------------
// slice

TEST_CASE("sizes: slice with integers, Dims, traced scalars and a mix") {
  SUBCASE("integers and strides") {
    auto f = [](auto a) { return dyn::slice(a, {0, 1}, {3, 4}, {2, 2}); };
    CHECK(str(dyn::make_jaxpr(f)(x34)) ==
          "{ lambda ; a:f64[3,4]. let\n"
          "    b:f64[2,2] = slice[limit_indices=(3, 4) start_indices=(0, 1) strides=(2, 2)] a\n"
          "  in (b,) }");
    CHECK(dyn::array_equal(dyn::eager(f)(x34), Array<double>({2, 2}, {1, 3, 9, 11})));
    check_jit_eager(f, x34);
  }
  SUBCASE("Dim limits with symbolic shapes; a bound that needs the constraints") {
    auto f = [](auto a) { return dyn::slice(a, {1, 0}, {a.shape(0), a.shape(1) - 1}); };
    const dyn::polymorphic_shapes spec{"(a, b)"};
    CHECK(str(dyn::make_jaxpr(f, spec)(x34)) ==
          "{ lambda ; a:i64[] b:i64[] c:f64[a,b]. let\n"
          "    d:i64[] = sub a 1:i64[]\n"
          "    e:i64[] = sub b 1:i64[]\n"
          "    f:f64[d,e] = slice[\n"
          "      limit_indices=(None, None)\n"
          "      start_indices=(1, 0)\n"
          "      strides=None\n"
          "    ] c a e\n"
          "  in (d, e, f) }");
    auto jf = dyn::jit(f, spec);
    for (auto x : {x34, iota_array<double>({6, 2})}) CHECK(dyn::array_equal(jf(x), dyn::eager(f)(x)));
    CHECK(jf.stats().compiles == 1);
    auto g = [](auto a) { return dyn::slice(a, {0, 0}, {a.shape(0), 16}); };
    const std::string inconclusive = message_of<dyn::InconclusiveDimensionOperation>(
        [&] { (void)dyn::make_jaxpr(g, spec)(iota_array<double>({3, 20})); });
    CHECK(inconclusive.rfind("Symbolic dimension comparison 'b' >= '16' is inconclusive.", 0) == 0);
    auto jg = dyn::jit(g, spec, dyn::constraints{"b >= 16"});
    const auto x = iota_array<double>({3, 20});
    CHECK(dyn::array_equal(jg(x), dyn::slice(x, {0, 0}, {3, 16})));
  }
  SUBCASE("traced starts and limits") {
    auto f = [](auto n) { return dyn::slice(dyn::arange<double>(n * 2), {n}, {n * 2}); };
    CHECK(str(dyn::make_jaxpr(f)(i64{3})) ==
          "{ lambda ; a:i64[]. let\n"
          "    b:i64[] = mul a 2:i64[]\n"
          "    c:f64[b] = iota[dimension=0 dtype=float64 shape=(None,)] b\n"
          "    d:f64[a] = slice[limit_indices=(None,) start_indices=(None,) strides=None] c\n"
          "      a b\n"
          "  in (d,) }");
    CHECK(dyn::array_equal(dyn::eager(f)(i64{3}), dyn::array({3.0, 4.0, 5.0})));
    check_jit_eager(f, i64{3});
    check_jit_eager(f, i64{8});
  }
  SUBCASE("mixed: integer starts, a Dim and a traced limit") {
    auto f = [](auto a, auto n) {
      auto v = dyn::ones<double>({a.shape(0), n * 2});
      return dyn::slice(v, {0, 1}, {a.shape(0), n + 1});
    };
    CHECK(dyn::eager(f)(x34, i64{3}).shape() == std::vector<i64>{3, 3});
    check_jit_eager(f, x34, i64{3});
  }
  SUBCASE("strides must be static") {
    auto f = [](auto a, auto n) { return dyn::slice(a, {0, 0}, {a.shape(0), a.shape(1)}, {i64{1}, n}); };
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr(f)(x34, i64{2}); }) ==
          "slice: strides must be known while tracing (lax.slice takes static strides), got the symbolic or "
          "traced stride _d0 in (1, _d0)");
  }
}

// ---------------------------------------------------------------------------
// dynamic_slice and dynamic_update_slice

TEST_CASE("sizes: dynamic_slice with integers, Dims, traced scalars and a mix") {
  SUBCASE("a traced start and a Dim size") {
    auto f = [](auto a, auto n) { return dyn::dynamic_slice(a, {n - 3, i64{0}}, {i64{1}, a.shape(1)}); };
    CHECK(str(dyn::make_jaxpr(f)(x34, i64{4})) ==
          "{ lambda ; a:f64[3,4] b:i64[]. let\n"
          "    c:i64[] = sub b 3:i64[]\n"
          "    d:f64[1,4] = dynamic_slice[slice_sizes=(1, 4)] a c 0:i64[]\n"
          "  in (d,) }");
    CHECK(dyn::array_equal(dyn::eager(f)(x34, i64{4}), Array<double>({1, 4}, {4, 5, 6, 7})));
    check_jit_eager(f, x34, i64{4});
  }
  SUBCASE("a traced size: a dynamic dimension, after the start indices") {
    auto f = [](auto n, auto i) { return dyn::dynamic_slice(dyn::arange<double>(n * 2), {i}, {n}); };
    CHECK(str(dyn::make_jaxpr(f)(i64{3}, i64{1})) ==
          "{ lambda ; a:i64[] b:i64[]. let\n"
          "    c:i64[] = mul a 2:i64[]\n"
          "    d:f64[c] = iota[dimension=0 dtype=float64 shape=(None,)] c\n"
          "    e:f64[a] = dynamic_slice[slice_sizes=(None,)] d b a\n"
          "  in (e,) }");
    CHECK(dyn::array_equal(dyn::eager(f)(i64{3}, i64{1}), dyn::array({1.0, 2.0, 3.0})));
    CHECK(dyn::array_equal(dyn::eager(f)(i64{3}, i64{9}), dyn::array({3.0, 4.0, 5.0})));  // clamped
    auto jf = dyn::jit(f);
    for (i64 n : {1, 3, 6})
      for (i64 i : {-2, 0, 2, 100}) CHECK(dyn::array_equal(jf(n, i), dyn::eager(f)(n, i)));
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("a traced size not shown to fit the operand is refused") {
    auto f = [](auto a, auto n) { return dyn::dynamic_slice(dyn::sum(a, {0}), {0}, {n}); };
    CHECK(message_of<dyn::InconclusiveDimensionOperation>([&] { (void)dyn::make_jaxpr(f)(x34, i64{2}); })
              .rfind("Symbolic dimension comparison '4' >= '_d0' is inconclusive.", 0) == 0);
  }
  SUBCASE("Dim sizes with symbolic shapes and a constraint") {
    auto f = [](auto a) { return dyn::dynamic_slice(a, {1, 1}, {a.shape(0) - 1, 2}); };
    const dyn::polymorphic_shapes spec{"(a, b)"};
    CHECK(message_of<dyn::InconclusiveDimensionOperation>([&] { (void)dyn::make_jaxpr(f, spec)(x34); })
              .rfind("Symbolic dimension comparison 'b' >= '2' is inconclusive.", 0) == 0);
    auto jf = dyn::jit(f, spec, dyn::constraints{"b >= 2"});
    CHECK(str(jf.jaxpr(x34)) ==
          "{ lambda ; a:i64[] b:i64[] c:f64[a,b]. let\n"
          "    d:i64[] = sub a 1:i64[]\n"
          "    e:f64[d,2] = dynamic_slice[slice_sizes=(None, 2)] c 1:i32[] 1:i32[] d\n"
          "  in (d, e) }");
    for (auto x : {x34, iota_array<double>({5, 3})}) CHECK(dyn::array_equal(jf(x), dyn::eager(f)(x)));
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("a Dim start and a dynamic_update_slice at a Dim start") {
    auto f = [](auto a) {
      auto row = dyn::dynamic_slice(a, {a.shape(0) - 1, 0}, {1, a.shape(1)});
      return dyn::dynamic_update_slice(a, row * 10.0, {a.shape(0) - 2, 0});
    };
    const dyn::polymorphic_shapes spec{"(a, b)"};
    auto jf = dyn::jit(f, spec, dyn::constraints{"a >= 2"});
    for (auto x : {x34, iota_array<double>({2, 5})}) CHECK(dyn::array_equal(jf(x), dyn::eager(f)(x)));
    CHECK(dyn::array_equal(dyn::eager(f)(x34),
                           Array<double>({3, 4}, {0, 1, 2, 3, 80, 90, 100, 110, 8, 9, 10, 11})));
  }
}

// ---------------------------------------------------------------------------
// Creation: full, zeros, ones, iota, arange

TEST_CASE("sizes: creation with integers, Dims, traced scalars and a mix") {
  SUBCASE("integers give concrete arrays, also inside a trace (constants)") {
    static_assert(std::is_same_v<decltype(dyn::zeros<float>({2, 3})), Array<float>>);
    static_assert(std::is_same_v<decltype(dyn::iota<int>({2, 3}, 1)), Array<int>>);
    CHECK(dyn::array_equal(dyn::iota<int>({2, 3}, 1), Array<int>({2, 3}, {0, 1, 2, 0, 1, 2})));
    CHECK(dyn::array_equal(dyn::iota<int>({2, 3}, -2), Array<int>({2, 3}, {0, 0, 0, 1, 1, 1})));
    CHECK(dyn::array_equal(dyn::arange<float>(3), dyn::array({0.0f, 1.0f, 2.0f})));
  }
  SUBCASE("traced, Dim and mixed sizes") {
    auto f = [](auto a, auto n) {
      return std::make_tuple(dyn::zeros<double>({n, a.shape(1)}), dyn::ones<double>({a.shape(1) + 1}),
                             dyn::full<float>({n, i64{2}}, 1.5f), dyn::iota<i64>({n, a.shape(1)}, 1),
                             dyn::arange<float>(n));
    };
    CHECK(str(dyn::make_jaxpr(f)(x34, i64{3})) ==
          "{ lambda ; a:f64[3,4] b:i64[]. let\n"
          "    c:f64[b,4] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 4)] 0.0:f64[]\n"
          "      b\n"
          "    d:f64[5] = broadcast_in_dim[broadcast_dimensions=() shape=(5,)] 1.0:f64[]\n"
          "    e:f32[b,2] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 2)] 1.5:f32[]\n"
          "      b\n"
          "    f:i64[b,4] = iota[dimension=1 dtype=int64 shape=(None, 4)] b\n"
          "    g:f32[b] = iota[dimension=0 dtype=float32 shape=(None,)] b\n"
          "  in (c, d, e, f, g) }");
    auto e = dyn::eager(f)(x34, i64{2});
    CHECK(dyn::array_equal(std::get<3>(e), Array<i64>({2, 4}, {0, 1, 2, 3, 0, 1, 2, 3})));
    auto j = dyn::jit(f)(x34, i64{2});
    CHECK(dyn::array_equal(std::get<0>(j), std::get<0>(e)));
    CHECK(dyn::array_equal(std::get<1>(j), std::get<1>(e)));
    CHECK(dyn::array_equal(std::get<2>(j), std::get<2>(e)));
    CHECK(dyn::array_equal(std::get<3>(j), std::get<3>(e)));
    CHECK(dyn::array_equal(std::get<4>(j), std::get<4>(e)));
  }
  SUBCASE("a Shape variable keeps the operand's kind; a symbolic one for an Array operand is refused") {
    auto f = [](auto a) {
      const dyn::Shape s = a.shape();  // static: an Array stays an Array
      static_assert(std::is_same_v<decltype(dyn::reshape(x34, s)), Array<double>>);
      return dyn::reshape(x34, s) + a;
    };
    CHECK(dyn::array_equal(dyn::jit(f)(x34), x34 + x34));
    auto g = [](auto a) { return dyn::reshape(x34, dyn::Shape{a.shape(0), 4}) + a; };
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr(g, dyn::polymorphic_shapes{"(a, 4)"})(x34); }) ==
          "reshape: the operand is a concrete dyn::Array but the shape (a, 4) is symbolic, so the result would be "
          "traced; write the sizes in braces (e.g. {x.shape(0), 4}) to get a dyn::Tracer, or pass the array as an "
          "argument of the traced function");
  }
  SUBCASE("a Dim or traced size outside a trace is a TypeError") {
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::zeros<double>(dyn::Sizes(dyn::Shape{dyn::Dim(3)})); }) ==
          "zeros with dyn::Dim or traced sizes gives a dyn::Tracer and can only be called while tracing; use "
          "integer sizes for a concrete array");
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::reshape(x34, dyn::Sizes(dyn::Shape{4, 3})); }) ==
          "reshape with dyn::Dim or traced sizes gives a dyn::Tracer and can only be called while tracing; use "
          "integer sizes for a concrete array");
  }
}
