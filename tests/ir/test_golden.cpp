// Golden jaxpr text: what make_jaxpr prints for each primitive family, and
// the worked examples of JAX's constants doc ("Handling of closed-over
// constants") and JAX's tracing doc ("Tracing"); docs/architecture.md,
// "Sources", lists them.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "../test_util.hpp"

using test_util::str;

TEST_CASE("JAX's tracing doc: dot(x + 1, y + 1)") {
  auto f = [](auto x, auto y) { return dyn::dot(x + 1, y + 1); };
  dyn::Array<float> x({3, 4}), y({4});
  CHECK(str(dyn::make_jaxpr(f)(x, y)) ==
        "{ lambda ; a:f32[3,4] b:f32[4]. let\n"
        "    c:f32[3,4] = add a 1.0:f32[]\n"
        "    d:f32[4] = add b 1.0:f32[]\n"
        "    e:f32[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] c d\n"
        "  in (e,) }");
  dyn::Array<double> xd({3, 4}), yd({4});
  CHECK(str(dyn::make_jaxpr(f)(xd, yd)) ==
        "{ lambda ; a:f64[3,4] b:f64[4]. let\n"
        "    c:f64[3,4] = add a 1.0:f64[]\n"
        "    d:f64[4] = add b 1.0:f64[]\n"
        "    e:f64[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] c d\n"
        "  in (e,) }");
}

TEST_CASE("JAX's tracing doc: tracers print their type") {
  std::string seen_x, seen_y, seen_r;
  auto f = [&](auto x, auto y) {
    seen_x = str(x);
    seen_y = str(y);
    auto r = dyn::dot(x + 1, y + 1);
    seen_r = str(r);
    return r;
  };
  (void)dyn::make_jaxpr(f)(dyn::Array<double>({3, 4}), dyn::Array<double>({4}));
  CHECK(seen_x == "Tracer<f64[3,4]>");
  CHECK(seen_y == "Tracer<f64[4]>");
  CHECK(seen_r == "Tracer<f64[3]>");
}

TEST_CASE("JAX's tracing doc: a static argument picks the branch at trace time") {
  auto f = [](auto x, bool neg) { return neg ? -x : x; };
  auto neg = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(1, true);
  CHECK(str(neg) ==
        "{ lambda ; a:i32[]. let b:i32[] = neg a in (b,) }");
  auto pos = dyn::make_jaxpr(f, dyn::static_argnums<1>{})(1, false);
  CHECK(str(pos) == "{ lambda ; a:i32[]. let  in (a,) }");
}

TEST_CASE("JAX's constants doc: array constants are constvars, uniquified by identity; scalars are literals") {
  auto a = dyn::ones<float>({16});
  // a is used twice but is one constvar; 2.0 and 142.0 are literals; the
  // product a * 2.0 of two concrete operands is computed at trace time (its
  // C++ type is dyn::Array) and becomes a constant of its own; full_like of a
  // tracer is staged, like jnp.full.
  auto f = [&](auto x) { return x + a + dyn::full<float>({16}, 42.0f) + a * 2.0 + x * a + dyn::full_like(x, 142.0f); };
  auto j = dyn::make_jaxpr(f)(dyn::Array<float>({16}));
  CHECK(str(j) ==
        "{ lambda a:f32[16] b:f32[16] c:f32[16]; d:f32[16]. let\n"
        "    e:f32[16] = add d a\n"
        "    f:f32[16] = add e b\n"
        "    g:f32[16] = add f c\n"
        "    h:f32[16] = mul d a\n"
        "    i:f32[16] = add g h\n"
        "    j:f32[16] = broadcast_in_dim[broadcast_dimensions=() shape=(16,)] 142.0:f32[]\n"
        "    k:f32[16] = add i j\n"
        "  in (k,) }");
  REQUIRE(j.consts.size() == 3);
  CHECK(j.consts[0].data() == a.data());  // the user's buffer itself, not a copy
  CHECK(j.consts[2].get<float>()(0) == 2.0f);
  auto r = dyn::eval_jaxpr(j, {dyn::Array<float>({16}, std::vector<float>(16, 3.0f))});
  CHECK(r[0].get<float>()(0) == 3.0f + 1.0f + 42.0f + 2.0f + 3.0f + 142.0f);
}

TEST_CASE("golden: unary elementwise and conversion") {
  auto f = [](auto x) { return dyn::exp(dyn::sin(x)) + dyn::astype<double>(dyn::round(x)); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2}))) ==
        "{ lambda ; a:f32[2]. let\n"
        "    b:f32[2] = sin a\n"
        "    c:f32[2] = exp b\n"
        "    d:f64[2] = convert_element_type[new_dtype=float64 weak_type=False] c\n"
        "    e:f32[2] = round[rounding_method=1] a\n"
        "    f:f64[2] = convert_element_type[new_dtype=float64 weak_type=False] e\n"
        "    g:f64[2] = add d f\n"
        "  in (g,) }");
}

TEST_CASE("golden: weak-typed promotion of an integer array by a float literal") {
  auto f = [](auto x) { return x + 1.5; };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<std::int32_t>({3}))) ==
        "{ lambda ; a:i32[3]. let\n"
        "    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    c:f32[3] = add b 1.5:f32[]\n"
        "  in (c,) }");
}

TEST_CASE("golden: broadcasting inserts broadcast_in_dim") {
  auto f = [](auto x, auto y) { return x * y; };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<double>({3, 1}), dyn::Array<double>({4}))) ==
        "{ lambda ; a:f64[3,1] b:f64[4]. let\n"
        "    c:f64[3,4] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(3, 4)] a\n"
        "    d:f64[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4)] b\n"
        "    e:f64[3,4] = mul c d\n"
        "  in (e,) }");
}

TEST_CASE("golden: comparisons, logic and where") {
  auto f = [](auto x, auto y) { return dyn::where((x > 0.0) & !(y == x), x, y); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<double>({3}), dyn::Array<double>({3}))) ==
        "{ lambda ; a:f64[3] b:f64[3]. let\n"
        "    c:bool[3] = gt a 0.0:f64[]\n"
        "    d:bool[3] = eq b a\n"
        "    e:bool[3] = not d\n"
        "    f:bool[3] = and c e\n"
        "    g:f64[3] = select_n f b a\n"
        "  in (g,) }");
}

TEST_CASE("golden: reductions and mean") {
  auto f = [](auto x) { return std::make_tuple(dyn::sum(x, {1}), dyn::max(x), dyn::mean(x, {-2})); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
        "    c:f32[] = reduce_max[axes=(0, 1)] a\n"
        "    d:f32[3] = reduce_sum[axes=(0,)] a\n"
        "    e:f32[3] = div d 2.0:f32[]\n"
        "  in (b, c, e) }");
  auto g = [](auto b) { return dyn::sum(b); };
  CHECK(str(dyn::make_jaxpr(g)(dyn::Array<bool>({4}))) ==
        "{ lambda ; a:bool[4]. let\n"
        "    b:i64[4] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    c:i64[] = reduce_sum[axes=(0,)] b\n"
        "  in (c,) }");
}

TEST_CASE("golden: keepdims is the reduction, then one broadcast_in_dim (jnp's lax.expand_dims)") {
  // jnp.sum(x, axis=1, keepdims=True), jnp.max(x, keepdims=True), jnp.mean(x, axis=0, keepdims=True)
  auto f = [](auto x) {
    return std::make_tuple(dyn::sum(x, {1}, dyn::keepdims), dyn::max(x, dyn::keepdims), dyn::mean(x, {0}, dyn::keepdims));
  };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
        "    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] b\n"
        "    d:f32[] = reduce_max[axes=(0, 1)] a\n"
        "    e:f32[1,1] = broadcast_in_dim[broadcast_dimensions=() shape=(1, 1)] d\n"
        "    f:f32[3] = reduce_sum[axes=(0,)] a\n"
        "    g:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] f\n"
        "    h:f32[1,3] = div g 2.0:f32[]\n"
        "  in (c, e, h) }");
  // Booleans: converted, summed, then the axis kept.
  auto g = [](auto b) { return dyn::sum(b, {0}, dyn::keepdims); };
  CHECK(str(dyn::make_jaxpr(g)(dyn::Array<bool>({4, 2}))) ==
        "{ lambda ; a:bool[4,2]. let\n"
        "    b:i64[4,2] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    c:i64[2] = reduce_sum[axes=(0,)] b\n"
        "    d:i64[1,2] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 2)] c\n"
        "  in (d,) }");
  // A symbolic dimension is a dimension operand of the broadcast (None in
  // its shape), as every shape parameter here (docs/shapes.md).
  auto h = [](auto x) { return dyn::min(x, {1}, dyn::keepdims); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n, 3)"})(dyn::Array<double>({4, 3}))) ==
        "{ lambda ; a:i64[] b:f64[a,3]. let\n"
        "    c:f64[a] = reduce_min[axes=(1,)] b\n"
        "    d:f64[a,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(None, 1)] c a\n"
        "  in (d,) }");
}

TEST_CASE("golden: cumulative reductions print lax's axis and reverse") {
  auto f = [](auto x) {
    return std::make_tuple(dyn::cumsum(x, 1), dyn::cumprod(x, 0, true), dyn::cummax(x, -1), dyn::cummin(x, -2, true));
  };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2,3] = cumsum[axis=1 reverse=False] a\n"
        "    c:f32[2,3] = cumprod[axis=0 reverse=True] a\n"
        "    d:f32[2,3] = cummax[axis=1 reverse=False] a\n"
        "    e:f32[2,3] = cummin[axis=0 reverse=True] a\n"
        "  in (b, c, d, e) }");
  // jnp.cumsum of bool: converted to the integer sum type first.
  auto g = [](auto b) { return dyn::cumsum(b, 0); };
  CHECK(str(dyn::make_jaxpr(g)(dyn::Array<bool>({4}))) ==
        "{ lambda ; a:bool[4]. let\n"
        "    b:i64[4] = convert_element_type[new_dtype=int64 weak_type=False] a\n"
        "    c:i64[4] = cumsum[axis=0 reverse=False] b\n"
        "  in (c,) }");
  // Symbolic dimensions pass through the type.
  auto h = [](auto x) { return dyn::cumsum(x * 2.0, 0); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n, 3)"})(dyn::Array<double>({4, 3}))) ==
        "{ lambda ; a:i64[] b:f64[a,3]. let\n"
        "    c:f64[a,3] = mul b 2.0:f64[]\n"
        "    d:f64[a,3] = cumsum[axis=0 reverse=False] c\n"
        "  in (d,) }");
}

TEST_CASE("golden: argmax and argmin print JAX's axes and index_dtype; keepdims expands after them") {
  // jnp.argmax(x, axis=1), jnp.argmin(x, axis=0, keepdims=True)
  auto f = [](auto x) { return std::make_tuple(dyn::argmax(x, 1), dyn::argmin(x, -2, dyn::keepdims)); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:i32[2] = argmax[axes=(1,) index_dtype=int32] a\n"
        "    c:i32[3] = argmin[axes=(0,) index_dtype=int32] a\n"
        "    d:i32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] c\n"
        "  in (b, d) }");
  auto h = [](auto x) { return dyn::argmax(x, 0); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n, 3)"})(dyn::Array<std::int64_t>({4, 3}))) ==
        "{ lambda ; a:i64[] b:i64[a,3]. let\n"
        "    c:i32[3] = argmax[axes=(0,) index_dtype=int32] b\n"
        "  in (c,) }");
}

TEST_CASE("golden: any and all are reduce_or and reduce_and of bools (jnp casts other dtypes first)") {
  auto f = [](auto b, auto x) { return std::make_tuple(dyn::any(b), dyn::all(x, {1}), dyn::any(b, {0}, dyn::keepdims)); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<bool>({2, 3}), dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:bool[2,3] b:f32[2,3]. let\n"
        "    c:bool[] = reduce_or[axes=(0, 1)] a\n"
        "    d:bool[2,3] = convert_element_type[new_dtype=bool weak_type=False] b\n"
        "    e:bool[2] = reduce_and[axes=(1,)] d\n"
        "    f:bool[3] = reduce_or[axes=(0,)] a\n"
        "    g:bool[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] f\n"
        "  in (c, e, g) }");
}

TEST_CASE("golden: var is jnp.var's composition: mean with kept axes, sub, square, sum, div") {
  auto f = [](auto x) { return dyn::var(x, {1}); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
        "    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] b\n"
        "    d:f32[2,1] = div c 3.0:f32[]\n"
        "    e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] d\n"
        "    f:f32[2,3] = sub a e\n"
        "    g:f32[2,3] = square f\n"
        "    h:f32[2] = reduce_sum[axes=(1,)] g\n"
        "    i:f32[2] = div h 3.0:f32[]\n"
        "  in (i,) }");
  // ddof=1 (jnp.var(x, axis=1, ddof=1)): JAX folds its Python constants,
  // count - ddof, into the divisor; with a symbolic count it stages the
  // subtraction and jnp.var's where(normalizer > 0, r, nan).
  auto g = [](auto x) { return dyn::var(x, {1}, dyn::ddof(1)); };
  CHECK(str(dyn::make_jaxpr(g)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2] = reduce_sum[axes=(1,)] a\n"
        "    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] b\n"
        "    d:f32[2,1] = div c 3.0:f32[]\n"
        "    e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] d\n"
        "    f:f32[2,3] = sub a e\n"
        "    g:f32[2,3] = square f\n"
        "    h:f32[2] = reduce_sum[axes=(1,)] g\n"
        "    i:f32[2] = div h 2.0:f32[]\n"
        "  in (i,) }");
  const std::string sym = str(dyn::make_jaxpr(g, dyn::polymorphic_shapes{"(2, w)"})(dyn::Array<float>({2, 3})));
  CHECK(sym ==
        "{ lambda ; a:i64[] b:f32[2,a]. let\n"
        "    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    d:f32[] = sub c 1.0:f32[]\n"
        "    e:bool[] = gt d 0.0:f32[]\n"
        "    f:f32[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,)] nan:f32[]\n"
        "    g:f32[2] = reduce_sum[axes=(1,)] b\n"
        "    h:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] g\n"
        "    i:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
        "    j:f32[2,1] = div h i\n"
        "    k:f32[2,a] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, None)] j\n"
        "      a\n"
        "    l:f32[2,a] = sub b k\n"
        "    m:f32[2,a] = square l\n"
        "    n:f32[2] = reduce_sum[axes=(1,)] m\n"
        "    o:f32[2] = div n d\n"
        "    p:f32[2] = select_n e f o\n"
        "  in (p,) }");
}

TEST_CASE("golden: sort prints lax.sort's dimension, is_stable and num_keys") {
  // jnp.sort(x) (axis -1), jnp.sort(x, axis=0): stable, one key.
  auto f = [](auto x) { return std::make_tuple(dyn::sort(x), dyn::sort(x, 0)); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a\n"
        "    c:f32[2,3] = sort[dimension=0 is_stable=True num_keys=1] a\n"
        "  in (b, c) }");
  auto h = [](auto x) { return dyn::sort(x * 2, 0); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n,)"})(dyn::Array<std::int32_t>({4}))) ==
        "{ lambda ; a:i64[] b:i32[a]. let\n"
        "    c:i32[a] = mul b 2:i32[]\n"
        "    d:i32[a] = sort[dimension=0 is_stable=True num_keys=1] c\n"
        "  in (d,) }");
}

TEST_CASE("golden: argsort and sort_key_val are lax.sort of two operands; top_k prints k and axis") {
  // jnp.argsort(x): lax.sort of (x, iota) with num_keys=1, the second output.
  auto f = [](auto x) { return dyn::argsort(x); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3)] \n"  // JAX's trailing space: no operands
        "    c:f32[2,3] d:i32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a b\n"
        "  in (d,) }");
  auto g = [](auto k, auto v) { return dyn::sort_key_val(k, v, 0); };
  CHECK(str(dyn::make_jaxpr(g)(dyn::Array<std::int32_t>({4}), dyn::Array<double>({4}))) ==
        "{ lambda ; a:i32[4] b:f64[4]. let\n"
        "    c:i32[4] d:f64[4] = sort[dimension=0 is_stable=True num_keys=1] a b\n"
        "  in (c, d) }");
  // lax.top_k(x, 2): over the last axis (JAX prints its axis too).
  auto h = [](auto x) { return dyn::top_k(x, 2); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n, m)"})(dyn::Array<double>({3, 5}))) ==
        "{ lambda ; a:i64[] b:i64[] c:f64[a,b]. let\n"
        "    d:f64[a,2] e:i32[a,2] = top_k[axis=1 k=2] c\n"
        "  in (d, e) }");
}

TEST_CASE("golden: rev and pad print lax.rev's dimensions and lax.pad's padding_config; flip binds rev") {
  // lax.rev(x, (0, 1)), jnp.flip(x, 1), lax.pad(x, 0.0, ((1, 2, 0), (-1, 0, 1))).
  auto f = [](auto x) {
    return std::make_tuple(dyn::rev(x, {0, 1}), dyn::flip(x, -1), dyn::pad(x, {{1, 2, 0}, {-1, 0, 1}}, 0.0));
  };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}))) ==
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[2,3] = rev[dimensions=(0, 1)] a\n"
        "    c:f32[2,3] = rev[dimensions=(1,)] a\n"
        "    d:f32[5,4] = pad[padding_config=((1, 2, 0), (-1, 0, 1))] a 0.0:f32[]\n"
        "  in (b, c, d) }");
  // Symbolic sizes: the padded size is lo + hi + n + interior * (n - 1) = 3n
  // (n >= 1), a size variable computed in the jaxpr and returned with it.
  auto h = [](auto x) { return dyn::pad(dyn::flip(x, 0), {{1, 1, 2}}, 7); };
  CHECK(str(dyn::make_jaxpr(h, dyn::polymorphic_shapes{"(n,)"})(dyn::Array<std::int32_t>({4}))) ==
        "{ lambda ; a:i64[] b:i32[a]. let\n"
        "    c:i64[] = mul a 3:i64[]\n"
        "    d:i32[a] = rev[dimensions=(0,)] b\n"
        "    e:i32[c] = pad[padding_config=((1, 1, 2),)] d 7:i32[]\n"
        "  in (c, e) }");
}

TEST_CASE("golden: shape operations") {
  auto f = [](auto x) {
    auto r = dyn::reshape(x, {3, -1});                      // (3, 2)
    auto t = dyn::transpose(r);                              // (2, 3)
    auto e = dyn::expand_dims(t, 0);                         // (1, 2, 3)
    auto s = dyn::squeeze(e, {0});                           // (2, 3)
    auto c = dyn::concatenate({s, s}, 1);                    // (2, 6)
    return dyn::slice(c, {0, 1}, {2, 6}, {1, 2});            // (2, 3)
  };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<std::int64_t>({6}))) ==
        "{ lambda ; a:i64[6]. let\n"
        "    b:i64[3,2] = reshape[dimensions=None new_sizes=(3, 2)] a\n"
        "    c:i64[2,3] = transpose[permutation=(1, 0)] b\n"
        "    d:i64[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(1, 2, 3)] c\n"
        "    e:i64[2,3] = squeeze[dimensions=(0,)] d\n"
        "    f:i64[2,6] = concatenate[dimension=1] e e\n"
        "    g:i64[2,3] = slice[limit_indices=(2, 6) start_indices=(0, 1) strides=(1, 2)] f\n"
        "  in (g,) }");
}

TEST_CASE("golden: dynamic slices with traced and static starts") {
  auto f = [](auto x, auto i) {
    auto s = dyn::dynamic_slice(x, {i, 1}, {2, 2});
    return dyn::dynamic_update_slice(x, s * 2, {0, i});
  };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<double>({4, 4}), std::int32_t{1})) ==
        "{ lambda ; a:f64[4,4] b:i32[]. let\n"
        "    c:f64[2,2] = dynamic_slice[slice_sizes=(2, 2)] a b 1:i32[]\n"
        "    d:f64[2,2] = mul c 2.0:f64[]\n"
        "    e:f64[4,4] = dynamic_update_slice a d 0:i32[] b\n"
        "  in (e,) }");
}

TEST_CASE("golden: matmul and dot_general with batch dimensions") {
  auto f = [](auto a, auto b) { return dyn::matmul(a, b); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({5, 2, 3}), dyn::Array<float>({5, 3, 4}))) ==
        "{ lambda ; a:f32[5,2,3] b:f32[5,3,4]. let\n"
        "    c:f32[5,2,4] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b\n"
        "  in (c,) }");
}

TEST_CASE("golden: matmul follows jnp.matmul: no broadcast, squeezed unit batch dimensions, a transpose to numpy's order") {
  auto f = [](auto a, auto b) { return dyn::matmul(a, b); };
  // A stack of matrices times one matrix: the stack stays a free dimension of
  // the left operand (jnp.matmul), the right operand is not broadcast.
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({8, 6, 6, 3}), dyn::Array<float>({3, 4}))) ==
        "{ lambda ; a:f32[8,6,6,3] b:f32[3,4]. let\n"
        "    c:f32[8,6,6,4] = dot_general[dimension_numbers=(([3], [0]), ([], []))] a b\n"
        "  in (c,) }");
  // (2,1,3,4) @ (5,4,6): the unit batch dimension of a is squeezed, 5 becomes a
  // free dimension of b, and dot_general's (2,3,5,6) is transposed to (2,5,3,6).
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({2, 1, 3, 4}), dyn::Array<float>({5, 4, 6}))) ==
        "{ lambda ; a:f32[2,1,3,4] b:f32[5,4,6]. let\n"
        "    c:f32[2,3,4] = squeeze[dimensions=(1,)] a\n"
        "    d:f32[2,3,5,6] = dot_general[dimension_numbers=(([2], [1]), ([], []))] c b\n"
        "    e:f32[2,5,3,6] = transpose[permutation=(0, 2, 1, 3)] d\n"
        "  in (e,) }");
  // A vector on the left of a stack: contracted with the stack's rows.
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<float>({3}), dyn::Array<float>({2, 3, 4}))) ==
        "{ lambda ; a:f32[3] b:f32[2,3,4]. let\n"
        "    c:f32[2,4] = dot_general[dimension_numbers=(([0], [1]), ([], []))] a b\n"
        "  in (c,) }");
}

TEST_CASE("golden: creation inside a trace") {
  // Creation with integer sizes is concrete (a constant); *_like of a tracer is staged.
  auto f = [](auto x) { return x + dyn::arange<double>(3) + dyn::ones_like(x); };
  auto j = dyn::make_jaxpr(f)(dyn::Array<double>({3}));
  CHECK(str(j) ==
        "{ lambda a:f64[3]; b:f64[3]. let\n"
        "    c:f64[3] = add b a\n"
        "    d:f64[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0:f64[]\n"
        "    e:f64[3] = add c d\n"
        "  in (e,) }");
  CHECK(dyn::array_equal(j.consts[0].get<double>(), dyn::array({0.0, 1.0, 2.0})));
}

TEST_CASE("golden: pytree arguments and results keep their order") {
  auto f = [](std::pair<dyn::Tracer<double>, dyn::Tracer<double>> p, std::vector<dyn::Tracer<double>> v) {
    return std::make_tuple(p.second - p.first, v[1] * v[0]);
  };
  dyn::Array<double> x({2});
  auto j = dyn::make_jaxpr(f)(std::make_pair(x, x), std::vector<dyn::Array<double>>{x, x});
  CHECK(str(j) ==
        "{ lambda ; a:f64[2] b:f64[2] c:f64[2] d:f64[2]. let\n"
        "    e:f64[2] = sub b a\n"
        "    f:f64[2] = mul d c\n"
        "  in (e, f) }");
}

TEST_CASE("golden: outputs may be inputs, literals and constants") {
  auto k = dyn::array({1.0, 2.0});
  auto f = [&](auto x) { return std::make_tuple(x, 3.0, k); };
  CHECK(str(dyn::make_jaxpr(f)(dyn::Array<double>({2}))) ==
        "{ lambda a:f64[2]; b:f64[2]. let  in (b, 3.0:f64[], a) }");
}

// ---------------------------------------------------------------------------
// Errors raised while tracing name the rule, the shapes and the place.

TEST_CASE("errors: incompatible shapes name the primitive, both shapes and the trace site") {
  auto f = [](auto x, auto y) { return x + y; };
  const int line = __LINE__ + 1;
  auto mj = dyn::make_jaxpr(f);
  try {
    (void)mj(dyn::Array<float>({3}), dyn::Array<float>({4}));
    FAIL("expected dyn::ShapeError");
  } catch (const dyn::ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("add got incompatible shapes for broadcasting: (3,), (4,)") != std::string::npos);
    CHECK(m.find("The error occurred while tracing the function at ") != std::string::npos);
    CHECK(m.find("test_golden.cpp:" + std::to_string(line)) != std::string::npos);
  }
}

TEST_CASE("errors: named operations report the user's line") {
  auto f = [](auto x) {
    return dyn::reshape(x, {4});  // the line reported
  };
  const int line = __LINE__ - 2;
  try {
    (void)dyn::make_jaxpr(f)(dyn::Array<float>({2, 3}));
    FAIL("expected dyn::ShapeError");
  } catch (const dyn::ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("reshape") != std::string::npos);
    CHECK(m.find("(2, 3)") != std::string::npos);
    CHECK(m.find("(at ") != std::string::npos);
    CHECK(m.find("test_golden.cpp:" + std::to_string(line) + ")") != std::string::npos);
  }
  // Eagerly, the same mistake names the same line.
  try {
    (void)f(dyn::Array<float>({2, 3}));
    FAIL("expected dyn::ShapeError");
  } catch (const dyn::ShapeError& e) {
    CHECK(std::string(e.what()).find("test_golden.cpp:" + std::to_string(line) + ")") != std::string::npos);
  }
}

TEST_CASE("errors: dot_general contracting dimensions") {
  auto f = [](auto x, auto y) { return dyn::dot(x, y); };
  CHECK_THROWS_WITH_AS(dyn::make_jaxpr(f)(dyn::Array<double>({3, 4}), dyn::Array<double>({5})),
                       doctest::Contains("dot_general requires contracting dimensions to have the same shape, "
                                         "got (4,) and (5,)"),
                       dyn::ShapeError);
}

TEST_CASE("errors: an escaped tracer is reported, not a crash") {
  dyn::Tracer<double> leaked;
  auto f = [&](auto x) {
    leaked = x;
    return x;
  };
  (void)dyn::make_jaxpr(f)(dyn::Array<double>({2}));
  auto g = [&](auto x) { return x + leaked; };
  CHECK_THROWS_WITH_AS(dyn::make_jaxpr(g)(dyn::Array<double>({2})), doctest::Contains("UnexpectedTracerError"),
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS((void)(leaked * 2.0), doctest::Contains("UnexpectedTracerError"), dyn::TypeError);
}

TEST_CASE("errors: a failed trace leaves no trace active") {
  auto bad = [](auto x) { return dyn::reshape(x, {5}); };
  CHECK_THROWS_AS(dyn::make_jaxpr(bad)(dyn::Array<double>({2})), dyn::ShapeError);
  CHECK(dyn::detail::current_trace() == nullptr);
  CHECK(dyn::detail::error_context().trace_sites.empty());
  CHECK(dyn::detail::error_context().op_sites.empty());
  auto ok = [](auto x) { return x * 2.0; };
  CHECK(str(dyn::make_jaxpr(ok)(dyn::Array<double>({2}))) ==
        "{ lambda ; a:f64[2]. let b:f64[2] = mul a 2.0:f64[] in (b,) }");
}
