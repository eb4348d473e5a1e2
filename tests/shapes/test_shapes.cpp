// Symbolic and dynamic dimensions through tracing: shape polymorphism
// (JAX's shape-polymorphism doc: every example, with its outputs and errors)
// and Catalyst's dynamic sizes (the Catalyst tracing note and the Catalyst
// dynamic-arrays doc: the loop-free programs, golden). The documents are
// listed in docs/architecture.md, "Sources".
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

using test_util::message_of;
using test_util::str;

namespace {

std::string shapes_str(const std::vector<dyn::Shape>& shapes) {
  std::string r;
  for (const auto& s : shapes) r += dyn::detail::shape_str(s);
  return r;
}

dyn::AnyArray i64(std::int64_t v) {
  return dyn::Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{v});
}

}  // namespace

// ---------------------------------------------------------------------------
// Catalyst dynamic sizes (the Catalyst tracing note, the Catalyst dynamic-arrays doc).

TEST_CASE("Catalyst tracing note: a size computed at trace time is materialised, and returned as an implicit result") {
  auto f = [](dyn::Tracer<std::int64_t> sz) { return dyn::ones<double>({sz + 1}); };
  auto cj = dyn::make_jaxpr(f)(std::int64_t{3});
  CHECK(str(cj) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:i64[] = add a 1:i64[]\n"
        "    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      b\n"
        "  in (b, c) }");
  CHECK(cj.jaxpr->out_explicit == std::vector<bool>{false, true});
  auto out = dyn::eval_jaxpr(cj, {i64(3)});
  REQUIRE(out.size() == 2);
  CHECK(str(out[0]) == "4");
  CHECK(str(out[1]) == "[1. 1. 1. 1.]");
}

TEST_CASE("Catalyst tracing note: a traced size sizes an array directly; equal sizes are one variable") {
  auto f = [](dyn::Tracer<std::int64_t> n) { return dyn::ones<double>({n}); };
  CHECK(str(dyn::make_jaxpr(f)(std::int64_t{5})) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      a\n"
        "  in (b,) }");
  // ones(n + 1) + ones(n + 1): both sizes are the expression n + 1, so they
  // are one variable and `add` type-checks.
  auto g = [](dyn::Tracer<std::int64_t> n) { return dyn::ones<double>({n + 1}) + dyn::ones<double>({n + 1}); };
  auto cj = dyn::make_jaxpr(g)(std::int64_t{2});
  CHECK(str(cj) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:i64[] = add a 1:i64[]\n"
        "    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      b\n"
        "    d:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      b\n"
        "    e:f64[b] = add c d\n"
        "  in (b, e) }");
  CHECK(str(dyn::eval_jaxpr(cj, {i64(2)})[1]) == "[2. 2. 2.]");
}

TEST_CASE("dynamic sizes: x.shape(i) is a Dim backed by the size variable; arange, zeros and full take it") {
  auto f = [](dyn::Tracer<std::int64_t> n) {
    auto a = dyn::arange<double>(n * 2);
    CHECK(str(a.shape(0)) == "2*_d0");
    return a + dyn::full<double>({a.shape(0)}, 0.5);
  };
  auto cj = dyn::make_jaxpr(f)(std::int64_t{4});
  CHECK(str(cj) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:i64[] = mul a 2:i64[]\n"
        "    c:f64[b] = iota[dimension=0 dtype=float64 shape=(None,)] b\n"
        "    d:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.5:f64[]\n"
        "      b\n"
        "    e:f64[b] = add c d\n"
        "  in (b, e) }");
  auto out = dyn::eval_jaxpr(cj, {i64(3)});
  CHECK(str(out[0]) == "6");
  CHECK(str(out[1]) == "[0.5 1.5 2.5 3.5 4.5 5.5]");
}

TEST_CASE("Catalyst dynamic-arrays doc: abstracted axes shared by two arguments are one implicit argument") {
  auto g = [](auto x, auto y) { return dyn::sum(x * y); };
  dyn::Array<double> a = dyn::ones<double>({3}), b = dyn::ones<double>({3});
  auto cj = dyn::make_jaxpr(g, dyn::polymorphic_shapes{"(n,)", "(n,)"})(a, b);
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let\n"
        "    d:f64[a] = mul b c\n"
        "    e:f64[] = reduce_sum[axes=(0,)] d\n"
        "  in (e,) }");
  CHECK(cj.jaxpr->in_explicit == std::vector<bool>{false, true, true});
  // Explicit arguments only: the implicit one is read off their shapes.
  auto five = dyn::ones<double>({5});
  CHECK(str(dyn::eval_jaxpr(cj, {five, five})[0]) == "5.");
  CHECK(str(dyn::eval_jaxpr(cj, {i64(5), five, five})[0]) == "5.");
}

TEST_CASE("dynamic sizes: misuse") {
  auto f = [](dyn::Tracer<double> x) { return dyn::zeros<double>({dyn::sum(dyn::astype<std::int64_t>(x))}); };
  // A data-dependent size is a fresh dimension variable.
  auto cj = dyn::make_jaxpr(f)(dyn::Array<double>({2}, {1.0, 2.0}));
  CHECK(str(cj) ==
        "{ lambda ; a:f64[2]. let\n"
        "    b:i64[2] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    c:i64[] = reduce_sum[axes=(0,)] b\n"
        "    d:f64[c] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f64[]\n"
        "      c\n"
        "  in (c, d) }");
  // (A float tracer as a size does not compile: ConcretizationTypeError.)
  CHECK(message_of<dyn::TypeError>([] { (void)dyn::zeros<double>({dyn::Dim(3)}); }) ==
        "zeros with dyn::Dim or traced sizes gives a dyn::Tracer and can only be called while tracing; use "
        "integer sizes for a concrete array");
  auto bad = dyn::make_jaxpr([](dyn::Tracer<std::int64_t> n) { return dyn::ones<double>({n}); })(std::int64_t{1});
  CHECK(message_of<dyn::ShapeError>([&] { dyn::eval_jaxpr(bad, {i64(-2)}); }) ==
        "broadcast_in_dim got the negative dimension -2 for a None in shape (None,)");
}

// ---------------------------------------------------------------------------
// Shape polymorphism (JAX's shape-polymorphism doc).

TEST_CASE("JAX's shape-polymorphism doc: concatenate along axis 1 gives (a, 2*b)") {
  auto f = [](auto x) { return dyn::concatenate({x, x}, 1); };
  dyn::Array<std::int32_t> x({3, 4});
  auto mj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"a, b"});
  CHECK(shapes_str(mj.out_shapes(x)) == "(a, 2*b)");
  auto cj = mj(x);
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:i64[] c:i32[a,b]. let\n"
        "    d:i64[] = mul b 2:i64[]\n"
        "    e:i32[a,d] = concatenate[dimension=1] c c\n"
        "  in (d, e) }");
  auto out = dyn::eval_jaxpr(cj, {dyn::Array<std::int32_t>({3, 4})});
  CHECK(out[1].shape() == std::vector<std::int64_t>{3, 8});
}

TEST_CASE("JAX's shape-polymorphism doc: symbolic_args_specs with a prefix 'a, ...'") {
  auto f = [](auto x, auto y) { return x + y; };
  dyn::Array<std::int32_t> x({3, 1}), y({3, 4});
  auto mj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"a, ...", "a, ..."});
  CHECK(str(mj(x, y)) ==
        "{ lambda ; a:i64[] b:i32[a,1] c:i32[a,4]. let\n"
        "    d:i32[a,4] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(None, 4)] b\n"
        "      a\n"
        "    e:i32[a,4] = add d c\n"
        "  in (e,) }");
  CHECK(shapes_str(mj.out_shapes(x, y)) == "(a, 4)");
}

TEST_CASE("JAX's shape-polymorphism doc: flattening reshape gives 4*b") {
  auto f = [](auto x) { return dyn::reshape(x, {x.shape(0) * x.shape(1)}); };
  dyn::Array<std::int32_t> x({3, 4});
  auto mj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, 4"});
  CHECK(shapes_str(mj.out_shapes(x)) == "(4*b,)");
  auto cj = mj(x);
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:i32[a,4]. let\n"
        "    c:i64[] = mul a 4:i64[]\n"
        "    d:i32[c] = reshape[dimensions=None new_sizes=(None,)] b c\n"
        "  in (c, d) }");
  CHECK(dyn::eval_jaxpr(cj, {dyn::Array<std::int32_t>({5, 4})})[1].shape() == std::vector<std::int64_t>{20});
  // -1 is inferred symbolically.
  auto g = [](auto x) { return dyn::reshape(x, {-1}); };
  CHECK(shapes_str(dyn::make_jaxpr(g, dyn::polymorphic_shapes{"b, 4"}).out_shapes(x)) == "(4*b,)");
}

TEST_CASE("JAX's shape-polymorphism doc: dimensions as values (jnp.array(x.shape[0]))") {
  dyn::Array<std::int32_t> x = dyn::arange<std::int32_t>(3);
  auto f = [](auto x) { return dyn::dim_value(x.shape(0)) + x; };
  auto cj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b"})(x);
  CHECK(str(dyn::eval_jaxpr(cj, {x})[0]) == "[3 4 5]");

  // Mixed with floats, arrays and functions: 5. + b, b - arange(5), x + b + sin(b).
  auto g = [](auto x) {
    return std::make_tuple(5.0f + dyn::dim_value(x.shape(0)), x.shape(0) - dyn::arange<std::int32_t>(5),
                           x + x.shape(0) + dyn::sin(dyn::astype<float>(dyn::dim_value(x.shape(0)))));
  };
  dyn::Array<std::int32_t> ones({3}, {1, 1, 1});
  auto out = dyn::eval_jaxpr(dyn::make_jaxpr(g, dyn::polymorphic_shapes{"b"})(ones), {ones});
  REQUIRE(out.size() == 3);
  CHECK(str(out[0]) == "8.");
  CHECK(str(out[1]) == "[ 3  2  1  0 -1]");
  CHECK(str(out[2]) == "[4.14112 4.14112 4.14112]");
  CHECK(out[2].dtype() == dyn::DType::f32);
}

TEST_CASE("JAX's shape-polymorphism doc: averaging divides by the symbolic size") {
  auto f = [](auto x) { return dyn::astype<float>(dyn::sum(x, {0})) / x.shape(0); };
  dyn::Array<std::int32_t> x = dyn::reshape(dyn::arange<std::int32_t>(12), {3, 4});
  auto cj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, c"})(x);
  auto out = dyn::eval_jaxpr(cj, {x});
  CHECK(str(out[0]) == "[4. 5. 6. 7.]");
  CHECK(out[0].dtype() == dyn::DType::f32);
  // One trace serves another size.
  dyn::Array<std::int32_t> x2 = dyn::reshape(dyn::arange<std::int32_t>(10), {5, 2});
  CHECK(str(dyn::eval_jaxpr(cj, {x2})[0]) == "[4. 5.]");
  // mean divides by the symbolic count too.
  auto m = dyn::make_jaxpr([](auto x) { return dyn::mean(x, {0}); }, dyn::polymorphic_shapes{"b, c"})(x);
  CHECK(str(dyn::eval_jaxpr(m, {x2})[0]) == "[4. 5.]");
}

TEST_CASE("JAX's shape-polymorphism doc: shape errors name the symbolic shapes") {
  dyn::Array<std::int32_t> v({3}), four({4}), m({3, 4});
  CHECK(message_of<dyn::ShapeError>([&] {
          dyn::make_jaxpr([](auto x, auto y) { return x + y; }, dyn::polymorphic_shapes{"v,", "..."})(v, four);
        }) == "add got incompatible shapes for broadcasting: (v,), (4,)");
  CHECK(message_of<dyn::ShapeError>([&] {
          dyn::make_jaxpr([](auto x) { return dyn::matmul(x, x); }, dyn::polymorphic_shapes{"v, 4"})(m);
        }) == "dot_general requires contracting dimensions to have the same shape, got (4,) and (v,)");
  // Fixed with (v, v).
  dyn::Array<std::int32_t> sq({3, 3});
  CHECK(shapes_str(dyn::make_jaxpr([](auto x) { return dyn::matmul(x, x); }, dyn::polymorphic_shapes{"v, v"})
                       .out_shapes(sq)) == "(v, v)");
}

TEST_CASE("JAX's shape-polymorphism doc: comparisons are decided or inconclusive; b + 15 and constraints decide them") {
  dyn::Array<std::int32_t> m({3, 4});
  std::string msg = message_of<dyn::InconclusiveDimensionOperation>([&] {
    dyn::make_jaxpr([](auto x) { return x.shape(0) + 1 >= x.shape(1) ? x : x; }, dyn::polymorphic_shapes{"a, b"})(m);
  });
  CHECK(msg.rfind("Symbolic dimension comparison 'a + 1' >= 'b' is inconclusive.\n", 0) == 0);

  dyn::Array<std::int32_t> v20({20});
  auto head = [](auto x) { return dyn::slice(x, {0}, {16}); };
  CHECK(message_of<dyn::InconclusiveDimensionOperation>([&] {
          dyn::make_jaxpr(head, dyn::polymorphic_shapes{"b"})(v20);
        }).rfind("Symbolic dimension comparison 'b' >= '16' is inconclusive.", 0) == 0);
  CHECK(shapes_str(dyn::make_jaxpr(head, dyn::polymorphic_shapes{"b + 15"}).out_shapes(v20)) == "(16,)");

  dyn::Array<std::int32_t> m2016({20, 16});
  auto corner = [](auto x) { return dyn::slice_in_dim(dyn::slice_in_dim(x, 0, x.shape(1), 1, 0), 0, 16, 1, 1); };
  auto cj = dyn::make_jaxpr(corner, dyn::polymorphic_shapes{"a, b"}, dyn::constraints{"a >= b", "b >= 16"})(m2016);
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:i64[] c:i32[a,b]. let\n"
        "    d:i32[b,b] = slice[\n"
        "      limit_indices=(None, None)\n"
        "      start_indices=(0, 0)\n"
        "      strides=None\n"
        "    ] c b b\n"
        "    e:i32[b,16] = slice[\n"
        "      limit_indices=(None, 16)\n"
        "      start_indices=(0, 0)\n"
        "      strides=None\n"
        "    ] d b\n"
        "  in (e,) }");
  auto x = dyn::reshape(dyn::arange<std::int32_t>(24 * 18), {24, 18});
  auto out = dyn::eval_jaxpr(cj, {x});
  CHECK(out[0].shape() == std::vector<std::int64_t>{18, 16});
  CHECK(out[0].get<std::int32_t>()(17, 15) == 17 * 18 + 15);
}

TEST_CASE("JAX's shape-polymorphism doc: slice_in_dim(x, 0, mod(b, 3)) needs the constraint b >= mod(b, 3)") {
  dyn::Array<std::int32_t> v = dyn::arange<std::int32_t>(20);
  auto f = [](auto x) { return dyn::slice_in_dim(x, 0, dyn::mod(x.shape(0), 3)); };
  CHECK(message_of<dyn::InconclusiveDimensionOperation>([&] {
          dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b"})(v);
        }).rfind("Symbolic dimension comparison 'b' >= 'mod(b, 3)' is inconclusive.", 0) == 0);
  auto cj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b"}, dyn::constraints{"b >= mod(b, 3)"})(v);
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:i32[a]. let\n"
        "    c:i64[] = rem a 3:i64[]\n"
        "    d:i32[c] = slice[limit_indices=(None,) start_indices=(0,) strides=None] b c\n"
        "  in (c, d) }");
  auto out = dyn::eval_jaxpr(cj, {v});
  CHECK(str(out[0]) == "2");
  CHECK(str(out[1]) == "[0 1]");
  // 3*b makes the modulo 0.
  CHECK(shapes_str(dyn::make_jaxpr(f, dyn::polymorphic_shapes{"3*b"}).out_shapes(dyn::Array<std::int32_t>({9}))) ==
        "(0,)");
}

TEST_CASE("JAX's shape-polymorphism doc: unsolvable specs are rejected when the function is traced") {
  dyn::Array<std::int32_t> x({9});
  CHECK(message_of<dyn::ShapeAssertionError>([&] {
          dyn::make_jaxpr([](auto x) { return x; }, dyn::polymorphic_shapes{"a*a"})(x);
        }) ==
        "Cannot solve for values of dimension variables {'a'}.\n"
        "We can only solve linear uni-variate constraints.\n"
        "Using the following polymorphic shapes specifications: args[0].shape = (a^2,).\n"
        "Unprocessed specifications: 'a^2' for dimension size args[0].shape[0].\n"
        "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
        "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.");
}

TEST_CASE("JAX's shape-polymorphism doc: shape assertion errors on (b, b, 2*d)") {
  auto f = [](auto x) { return x; };
  CHECK(message_of<dyn::ShapeAssertionError>([&] {
          dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, b, 2*d"})(dyn::Array<std::int32_t>({3, 3, 5}));
        }) ==
        "Input shapes do not match the polymorphic shapes specification.\n"
        "Division had remainder 1 when computing the value of 'd'.\n"
        "Using the following polymorphic shapes specifications:\n"
        "  args[0].shape = (b, b, 2*d).\n"
        "Obtained dimension variables: 'b' = 3 from specification 'b' for dimension args[0].shape[0] (= 3), .\n"
        "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html#shape-assertion-errors for more "
        "details.");
  // The implicit arguments: the variables, then the other dimension expressions.
  auto cj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, b, 2*d"})(dyn::Array<std::int32_t>({3, 3, 4}));
  CHECK(str(cj) == "{ lambda ; a:i64[] b:i64[] c:i64[] d:i32[a,a,c]. let  in (d,) }");
  CHECK(message_of<dyn::TypeError>([&] { dyn::eval_jaxpr(cj, {dyn::Array<std::int32_t>({3, 3, 4})}); }) ==
        "eval_jaxpr: implicit argument #1 (a dimension) is not the size of any explicit argument's dimension; pass "
        "all 4 inputs, implicit ones first");
}

TEST_CASE("shape polymorphism: specs, pytrees and misuse") {
  // A spec applies to every leaf of a pytree argument; variables are shared by name.
  auto f = [](auto p, auto y) { return std::get<0>(p) + std::get<1>(p) * y; };
  auto args = std::make_tuple(dyn::Array<double>({5}), dyn::Array<double>({5}));
  CHECK(str(dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(n,)", "(n,)"})(args, dyn::Array<double>({5}))) ==
        "{ lambda ; a:i64[] b:f64[a] c:f64[a] d:f64[a]. let\n"
        "    e:f64[a] = mul c d\n"
        "    f:f64[a] = add b e\n"
        "  in (f,) }");
  // A different size for a shared variable.
  CHECK(message_of<dyn::ShapeAssertionError>([&] {
          dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(n,)", "(n,)"})(args, dyn::Array<double>({4}));
        }).rfind("Input shapes do not match the polymorphic shapes specification.\nFound inconsistency", 0) == 0);
  // Spec syntax and rank errors.
  CHECK(message_of<dyn::ShapeError>([&] {
          dyn::make_jaxpr([](auto x) { return x; }, dyn::polymorphic_shapes{"(b, 4"})(dyn::Array<double>({5, 4}));
        }).rfind("syntax error in symbolic shape '(b, 4'", 0) == 0);
  CHECK(message_of<dyn::ShapeError>([&] {
          dyn::make_jaxpr([](auto x) { return x; }, dyn::polymorphic_shapes{"(b,)"})(dyn::Array<double>({5, 4}));
        }) == "syntax error in symbolic shape '(b,)' in dimension 1: the spec has 1 dimensions but the argument has "
              "rank 2.");
  CHECK(message_of<dyn::TypeError>([&] {
          dyn::make_jaxpr([](auto x) { return x; }, dyn::constraints{"a >= 2"})(dyn::Array<double>({5}));
        }) == "dyn::constraints given without dyn::polymorphic_shapes: constraints apply to the dimension variables "
              "of the shape specifications");
}

TEST_CASE("shape polymorphism: every primitive family traces with symbolic dims and evaluates at several sizes") {
  // One program touching elementwise, broadcasting, reductions, shape ops,
  // dot_general and creation, traced once and evaluated at three sizes
  // against the eager result at that size.
  auto f = [](auto x, auto y) {
    auto e = dyn::exp(x) * 0.5 + dyn::where(x > 0.0, x, -x);   // elementwise, select
    auto t = dyn::transpose(e);                                 // (4, b)
    auto r = dyn::sum(e, {1}) + dyn::max(t, {0});               // reductions -> (b,)
    auto c = dyn::concatenate({r, y}, 0);                       // (2b,)
    auto s = dyn::slice_in_dim(c, 1, c.shape(0) - 1);           // (2b - 2,)
    auto d = dyn::dot(dyn::transpose(x), x);                    // (4, 4)
    auto z = dyn::expand_dims(y, 0) + dyn::zeros_like(dyn::expand_dims(y, 0));  // (1, b)
    auto w = dyn::reshape(dyn::broadcast_to(y, {2, y.shape(0)}), {-1});          // (2b,)
    return std::make_tuple(s, d, dyn::squeeze(z), w + dyn::astype<double>(dyn::arange<std::int32_t>(w.shape(0))),
                           dyn::mean(x), dyn::dynamic_slice(x, {1, 0}, {1, 4}));
  };
  dyn::Array<double> x0({2, 4}), y0({2});
  auto cj = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, 4", "b"})(x0, y0);
  for (std::int64_t b : {2, 3, 7}) {
    CAPTURE(b);
    dyn::Array<double> x = dyn::reshape(dyn::sin(dyn::astype<double>(dyn::arange<std::int32_t>(b * 4))), {b, 4});
    dyn::Array<double> y = dyn::cos(dyn::astype<double>(dyn::arange<std::int32_t>(b)));
    auto want = f(x, y);
    auto got = dyn::eval_jaxpr(cj, {x, y});
    // Implicit results (the materialised sizes) come first.
    std::vector<dyn::AnyArray> explicit_got;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (cj.jaxpr->out_explicit.empty() || cj.jaxpr->out_explicit[i]) explicit_got.push_back(got[i]);
    REQUIRE(explicit_got.size() == 6);
    CHECK(dyn::allclose(explicit_got[0].get<double>(), std::get<0>(want)));
    CHECK(dyn::allclose(explicit_got[1].get<double>(), std::get<1>(want)));
    CHECK(dyn::allclose(explicit_got[2].get<double>(), std::get<2>(want)));
    CHECK(dyn::allclose(explicit_got[3].get<double>(), std::get<3>(want)));
    CHECK(dyn::allclose(explicit_got[4].get<double>(), std::get<4>(want)));
    CHECK(dyn::allclose(explicit_got[5].get<double>(), std::get<5>(want)));
  }
}

TEST_CASE("symbolic dimensions print in tracers and floor semantics hold for symbolic operands") {
  auto f = [](auto x) {
    CHECK(str(x) == "Tracer<f64[b,4]>");
    CHECK(dyn::floordiv(x.shape(0) * 2 + 3, -2) == -x.shape(0) - 2);
    CHECK(dyn::mod(x.shape(0) * 2 + 3, 2) == 1);
    CHECK(str(dyn::floordiv(x.shape(0), 2)) == "floordiv(b, 2)");
    return x;
  };
  dyn::make_jaxpr(f, dyn::polymorphic_shapes{"b, 4"})(dyn::Array<double>({3, 4}));
  // A floor division by a constant, materialised as lax's div when the
  // dividend is known non-negative.
  auto g = [](auto x) { return dyn::zeros<float>({dyn::floordiv(x.shape(0), 2)}); };
  auto cj = dyn::make_jaxpr(g, dyn::polymorphic_shapes{"b"})(dyn::Array<std::int32_t>({9}));
  CHECK(str(cj) ==
        "{ lambda ; a:i64[] b:i32[a]. let\n"
        "    c:i64[] = div a 2:i64[]\n"
        "    d:f32[c] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f32[]\n"
        "      c\n"
        "  in (c, d) }");
  CHECK(str(dyn::eval_jaxpr(cj, {dyn::Array<std::int32_t>({9})})[1]) == "[0. 0. 0. 0.]");
  // With a possibly negative dividend, floor semantics need a correction.
  auto h = [](auto x) { return dyn::zeros<float>({dyn::floordiv(x.shape(0) - 5, 2) + 3}); };
  auto hj = dyn::make_jaxpr(h, dyn::polymorphic_shapes{"b"})(dyn::Array<std::int32_t>({2}));
  // b = 2: floordiv(-3, 2) + 3 = -2 + 3 = 1 (truncation would give 2).
  CHECK(dyn::eval_jaxpr(hj, {dyn::Array<std::int32_t>({2})})[1].shape() == std::vector<std::int64_t>{1});
  CHECK(dyn::eval_jaxpr(hj, {dyn::Array<std::int32_t>({9})})[1].shape() == std::vector<std::int64_t>{5});
}

TEST_CASE("an i32 size computed from data is converted to an i64 dimension once") {
  auto g = [](dyn::Tracer<std::int32_t> x) { return dyn::zeros<double>({dyn::sum(x)}); };
  dyn::Array<std::int32_t> x({2}, {1, 2});
  auto cj = dyn::make_jaxpr(g)(x);
  CHECK(str(cj) ==
        "{ lambda ; a:i32[2]. let\n"
        "    b:i32[] = reduce_sum[axes=(0,)] a\n"
        "    c:i64[] = convert_element_type[new_dtype=int64 weak_type=False] b\n"
        "    d:f64[c] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f64[]\n"
        "      c\n"
        "  in (c, d) }");
  CHECK(str(dyn::eval_jaxpr(cj, {x})[1]) == "[0. 0. 0.]");
}

TEST_CASE("a C++ double literal keeps its exact value on f64 operands (it is a weak f64)") {
  auto f = [](auto x) { return x * 0.001; };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<double>({2}))) ==
        "{ lambda ; a:f64[2]. let b:f64[2] = mul a 0.001:f64[] in (b,) }");
  CHECK(f(dyn::Array<double>({1}, {1.0})).data()[0] == 0.001);
  // With an integer operand a weak float still gives f32, as in JAX.
  CHECK(f(dyn::Array<std::int32_t>({1}, {1})).dtype() == dyn::DType::f32);
}
