// dyn::jit: the kernel cache, the call path and errors (concurrency: test_concurrency.cpp).
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <vector>

#include "../test_util.hpp"

namespace {

using test_util::iota_array;

}  // namespace

TEST_CASE("jit: fused elementwise equals eager and eval_jaxpr") {
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  auto jf = dyn::jit(f);
  auto x = iota_array<double>({1000}, -3.0, 0.01);
  auto y = iota_array<double>({1000}, 1.0, 0.5);
  dyn::Array<double> expect = f(x, y);
  dyn::Array<double> got = jf(x, y);
  CHECK(dyn::allclose(got, expect, 4e-16, 4e-16));
  auto ref = dyn::eval_jaxpr(jf.jaxpr(x, y), {x, y})[0].get<double>();
  CHECK(dyn::array_equal(ref, expect));
}

TEST_CASE("jit: one compile per signature; shapes, dtypes and static values key the cache") {
  auto f = [](auto x, int k) { return x * static_cast<double>(k); };
  auto jf = dyn::jit(f, dyn::static_argnums<1>{});
  auto a3 = iota_array<double>({3});
  auto a4 = iota_array<double>({4});
  auto f3 = iota_array<float>({3});

  (void)jf(a3, 2);
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().cache_hits == 0);
  auto r = jf(a3, 2);  // hit
  CHECK(dyn::array_equal(r, dyn::array({0.0, 2.0, 4.0})));
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().cache_hits == 1);

  (void)jf(a4, 2);  // new shape
  CHECK(jf.stats().compiles == 2);
  (void)jf(f3, 2);  // new dtype
  CHECK(jf.stats().compiles == 3);
  auto r5 = jf(a3, 5);  // new static value: recompiles
  CHECK(jf.stats().compiles == 4);
  CHECK(dyn::array_equal(r5, dyn::array({0.0, 5.0, 10.0})));
  (void)jf(a3, 5);  // same static value: reuses
  CHECK(jf.stats().compiles == 4);
  CHECK(jf.stats().cache_hits == 2);
  CHECK(jf.stats().traces == 4);
  CHECK(jf.stats().cache_size == 4);

  jf.clear_cache();
  CHECK(jf.stats().cache_size == 0);
  (void)jf(a3, 2);
  CHECK(jf.stats().compiles == 5);
}

TEST_CASE("jit: an argument of another pytree type is another signature, even with the same leaves") {
  // The leaves of (x, y) and (tuple(x), y) agree; the argument types do not.
  auto jf = dyn::jit([](const auto& a, auto b) {
    if constexpr (requires { std::get<0>(a); }) return std::get<0>(a) * b;
    else return a + b;
  });
  dyn::Array<double> x({2}, {1, 2}), y({2}, {3, 4});
  CHECK(dyn::array_equal(jf(x, y), dyn::Array<double>({2}, {4, 6})));
  CHECK(dyn::array_equal(jf(std::make_tuple(x), y), dyn::Array<double>({2}, {3, 8})));
  CHECK(dyn::array_equal(jf(x, y), dyn::Array<double>({2}, {4, 6})));
  CHECK(jf.stats().compiles == 2);
  CHECK(jf.stats().cache_hits == 1);
}

TEST_CASE("jit: copies of a jitted function share its cache") {
  auto jf = dyn::jit([](auto x) { return x + 1; });
  auto copy = jf;
  (void)jf(iota_array<std::int32_t>({2}));
  (void)copy(iota_array<std::int32_t>({2}));
  CHECK(jf.stats().compiles == 1);
  CHECK(copy.stats().cache_hits == 1);
}

TEST_CASE("jit: LRU eviction with cache_capacity") {
  auto jf = dyn::jit([](auto x) { return x * 2.0; }, dyn::cache_capacity{2});
  auto a1 = iota_array<double>({1}), a2 = iota_array<double>({2}), a3 = iota_array<double>({3});
  (void)jf(a1);
  (void)jf(a2);
  (void)jf(a1);  // a1 is now the most recently used
  (void)jf(a3);  // evicts a2
  auto s = jf.stats();
  CHECK(s.cache_size == 2);
  CHECK(s.evictions == 1);
  CHECK(s.compiles == 3);
  (void)jf(a1);  // still cached
  CHECK(jf.stats().compiles == 3);
  (void)jf(a2);  // was evicted: compiles again
  CHECK(jf.stats().compiles == 4);
  CHECK(jf.stats().evictions == 2);
}

TEST_CASE("jit: constants are passed by pointer and kept alive by the cache entry") {
  std::vector<double> table{1.0, 2.0, 3.0};
  auto k = dyn::array(table);
  auto jf = dyn::jit([k](auto x) { return x * k + 0.5; });
  auto x = iota_array<double>({3}, 1.0);
  CHECK(dyn::array_equal(jf(x), dyn::array({1.5, 4.5, 9.5})));
  CHECK(jf.jaxpr(x).consts.size() == 1);
  // The IR receives the constant as an argument: its values are not inlined.
  std::string ir = jf.llvm_ir(x);
  CHECK(ir.find("define") != std::string::npos);
  CHECK(ir.find("3.000000e+00") == std::string::npos);
}

TEST_CASE("jit: pytrees, scalars and several results") {
  auto f = [](std::pair<dyn::Tracer<double>, dyn::Tracer<double>> p, auto s) {
    return std::make_tuple(p.first + p.second * s, dyn::sum(p.first), std::vector{p.second, p.first});
  };
  auto jf = dyn::jit(f);
  auto a = iota_array<double>({3}, 1.0), b = iota_array<double>({3}, 10.0);
  auto [u, total, both] = jf(std::make_pair(a, b), 2.0);
  CHECK(dyn::array_equal(u, dyn::array({21.0, 24.0, 27.0})));
  CHECK(total.rank() == 0);
  CHECK(total(/*rank 0*/) == 6.0);
  REQUIRE(both.size() == 2);
  CHECK(dyn::array_equal(both[0], b));
  CHECK(dyn::array_equal(both[1], a));
  auto [u2, t2, b2] = jf(std::make_pair(a, b), 3.0);  // scalars are traced: same kernel
  CHECK(dyn::array_equal(u2, dyn::array({31.0, 35.0, 39.0})));
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit: a jitted function called inside another trace is inlined") {
  auto inner = dyn::jit([](auto x) { return x * 3.0; });
  auto outer = [&](auto x) { return inner(x) + 1.0; };
  std::ostringstream os;
  os << dyn::make_jaxpr(outer)(dyn::Array<double>({2}));
  CHECK(os.str() ==
        "{ lambda ; a:f64[2]. let\n"
        "    b:f64[2] = mul a 3.0:f64[]\n"
        "    c:f64[2] = add b 1.0:f64[]\n"
        "  in (c,) }");
  CHECK(inner.stats().compiles == 0);
}

TEST_CASE("jit: a jitted function run on concrete arrays while another is traced") {
  // The inner call compiles and runs inside the outer trace, on the same
  // thread's call path: the outer call's arguments (a vector, flattened into
  // that thread's scratch space) must survive it.
  auto table = dyn::jit([](auto v) { return v[0] * 2.0 + v[1]; });
  const std::vector<dyn::Array<double>> parts{dyn::array({1.0, 2.0}), dyn::array({10.0, 20.0})};
  auto outer = dyn::jit([&](auto xs) { return xs[0] * table(parts) + xs[1]; });  // table(parts) = [12, 24]
  CHECK(dyn::array_equal(outer(std::vector{dyn::array({1.0, 2.0}), dyn::array({3.0, 4.0})}), dyn::array({15.0, 52.0})));
  CHECK(dyn::array_equal(outer(std::vector{dyn::array({0.5, 0.0}), dyn::array({1.0, 1.0})}), dyn::array({7.0, 1.0})));
  CHECK(outer.stats().compiles == 1);
  CHECK(outer.stats().cache_hits == 1);
  CHECK(table.stats().compiles == 1);
}

TEST_CASE("jit: integer division by zero gives -1 (XLA's result), as eager") {
  auto jf = dyn::jit([](auto x, auto y) { return x / y; });
  auto x = dyn::array<std::int32_t>({7, -7, 9});
  CHECK(dyn::array_equal(jf(x, dyn::array<std::int32_t>({2, 0, 3})), dyn::array<std::int32_t>({3, -1, 3})));
  CHECK(dyn::array_equal(jf(x, dyn::array<std::int32_t>({2, 2, 3})), dyn::array<std::int32_t>({3, -3, 3})));
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit: a failed trace leaves the function usable and its cache intact") {
  auto jf = dyn::jit([](auto x, auto y) { return x + y; });
  auto a = iota_array<double>({3});
  (void)jf(a, a);
  CHECK_THROWS_WITH_AS(jf(a, iota_array<double>({4})),
                       doctest::Contains("add got incompatible shapes for broadcasting: (3,), (4,)"),
                       dyn::ShapeError);
  CHECK(jf.stats().cache_size == 1);
  CHECK(dyn::array_equal(jf(a, a), dyn::array({0.0, 2.0, 4.0})));
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().cache_hits == 1);
}

// Concurrency (8 threads, mixed signatures, clear_cache races) and the soak: tests/jit/test_concurrency.cpp.

TEST_CASE("jit: explain_miss says which argument changed how") {
  using dyn::detail::LeafSig;
  dyn::detail::Signature a, b;
  a.arg_leaf_begin = b.arg_leaf_begin = {0, 1};
  a.leaves = {LeafSig{dyn::DType::f64, {3}}, LeafSig{dyn::DType::f64, {4}}};
  b.leaves = {LeafSig{dyn::DType::f64, {3}}, LeafSig{dyn::DType::f64, {5}}};
  CHECK(dyn::detail::explain_miss(b, nullptr) == "first call");
  CHECK(dyn::detail::explain_miss(b, &a) ==
        "argument leaf #1 (in non-static argument #1) changed shape from f64[4] to f64[5]");
  b.leaves[1] = LeafSig{dyn::DType::f32, {4}};
  CHECK(dyn::detail::explain_miss(b, &a) ==
        "argument leaf #1 (in non-static argument #1) changed dtype from f64[4] to f32[4]");
}

// ---------------------------------------------------------------------------
// Symbolic and dynamic dimensions: one kernel per symbolic signature.

namespace {

template <class T>
std::string str(const T& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

TEST_CASE("jit: polymorphic_shapes: 100 sizes, one trace, one compile, correct results") {
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"n", "n"});
  for (std::int64_t n = 1; n <= 100; ++n) {
    CAPTURE(n);
    auto x = iota_array<double>({n}, -3.0, 0.07);
    auto y = iota_array<double>({n}, 1.0, 0.5);
    dyn::Array<double> got = jf(x, y);
    REQUIRE(got.shape() == std::vector<std::int64_t>{n});
    CHECK(dyn::allclose(got, f(x, y), 1e-15, 1e-15));
  }
  const auto s = jf.stats();
  CHECK(s.traces == 1);
  CHECK(s.compiles == 1);
  CHECK(s.cache_hits == 99);
  CHECK(s.cache_size == 1);
}

TEST_CASE("jit: polymorphic_shapes: reductions, row groups, matmul and shape ops at many sizes, one compile") {
  auto f = [](auto x, auto w) {
    auto e = dyn::exp(x - dyn::expand_dims(dyn::max(x, {1}), 1));
    auto sm = e / dyn::expand_dims(dyn::sum(e, {1}), 1);           // softmax rows: (b, c)
    auto h = dyn::matmul(sm, w);                                     // (b, 5)
    auto t = dyn::concatenate({dyn::transpose(h, {1, 0}), dyn::transpose(h, {1, 0})}, 1);  // (5, 2*b)
    return std::make_tuple(sm, h, dyn::reshape(t, {-1}), dyn::mean(x));
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"b, c", "c, 5"});
  int calls = 0;
  for (std::int64_t b : {1, 2, 7, 40})
    for (std::int64_t c : {1, 3, 16, 100}) {
      CAPTURE(b);
      CAPTURE(c);
      auto x = dyn::reshape(dyn::sin(iota_array<double>({b * c}, 0.0, 0.3)) * 4.0, {b, c});
      auto w = dyn::reshape(dyn::cos(iota_array<double>({c * 5}, 0.0, 0.2)), {c, 5});
      auto got = jf(x, w);
      auto want = f(x, w);
      CHECK(dyn::allclose(std::get<0>(got), std::get<0>(want), 1e-13, 1e-15));
      CHECK(dyn::allclose(std::get<1>(got), std::get<1>(want), 1e-12, 1e-13));
      CHECK(dyn::allclose(std::get<2>(got), std::get<2>(want), 1e-12, 1e-13));
      CHECK(dyn::allclose(std::get<3>(got), std::get<3>(want), 1e-13, 1e-15));
      ++calls;
    }
  CHECK(calls == 16);
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit: the examples of JAX's shape-polymorphism doc through jit") {
  SUBCASE("concatenate along axis 1 gives (a, 2*b)") {
    auto jf = dyn::jit([](auto x) { return dyn::concatenate({x, x}, 1); }, dyn::polymorphic_shapes{"a, b"});
    auto x = iota_array<std::int32_t>({3, 4});
    dyn::Array<std::int32_t> r = jf(x);
    CHECK(r.shape() == std::vector<std::int64_t>{3, 8});
    CHECK(dyn::array_equal(r, dyn::concatenate({x, x}, 1)));
    auto x2 = iota_array<std::int32_t>({2, 5}, 7);
    CHECK(jf(x2).shape() == std::vector<std::int64_t>{2, 10});
    CHECK(dyn::array_equal(jf(x2), dyn::concatenate({x2, x2}, 1)));
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("flattening reshape gives 4*b") {
    auto jf = dyn::jit([](auto x) { return dyn::reshape(x, {x.shape(0) * x.shape(1)}); },
                       dyn::polymorphic_shapes{"b, 4"});
    CHECK(str(jf(iota_array<std::int32_t>({3, 4}))) == "[ 0  1  2  3  4  5  6  7  8  9 10 11]");
    CHECK(jf(iota_array<std::int32_t>({5, 4})).shape() == std::vector<std::int64_t>{20});
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("averaging divides by the symbolic size") {
    auto jf = dyn::jit([](auto x) { return dyn::astype<float>(dyn::sum(x, {0})) / x.shape(0); },
                       dyn::polymorphic_shapes{"b, c"});
    CHECK(str(jf(dyn::reshape(dyn::arange<std::int32_t>(12), {3, 4}))) == "[4. 5. 6. 7.]");
    CHECK(str(jf(dyn::reshape(dyn::arange<std::int32_t>(10), {5, 2}))) == "[4. 5.]");
    auto jm = dyn::jit([](auto x) { return dyn::mean(x, {0}); }, dyn::polymorphic_shapes{"b, c"});
    CHECK(str(jm(dyn::reshape(dyn::arange<std::int32_t>(10), {5, 2}))) == "[4. 5.]");
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("dimensions as values") {
    auto jf = dyn::jit([](auto x) { return dyn::dim_value(x.shape(0)) + x; }, dyn::polymorphic_shapes{"b"});
    CHECK(str(jf(dyn::arange<std::int32_t>(3))) == "[3 4 5]");
    CHECK(str(jf(dyn::arange<std::int32_t>(5))) == "[5 6 7 8 9]");
    CHECK(jf.stats().compiles == 1);
  }
}

TEST_CASE("jit: a shape assertion error at call time, with JAX's wording; the function stays usable") {
  auto f = [](auto x) { return dyn::sum(x, {2}); };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"b, b, 2*d"});
  auto ok = iota_array<std::int32_t>({3, 3, 4});
  CHECK(dyn::array_equal(jf(ok), f(ok)));
  CHECK_THROWS_WITH_AS(jf(iota_array<std::int32_t>({3, 3, 5})),
                       doctest::Contains("Input shapes do not match the polymorphic shapes specification.\n"
                                         "Division had remainder 1 when computing the value of 'd'."),
                       dyn::ShapeAssertionError);
  CHECK_THROWS_AS(jf(iota_array<std::int32_t>({3, 2, 4})), dyn::ShapeAssertionError);
  auto ok2 = iota_array<std::int32_t>({5, 5, 6});
  CHECK(dyn::array_equal(jf(ok2), f(ok2)));
  CHECK(dyn::array_equal(jf(ok), f(ok)));
  CHECK(jf.stats().compiles == 1);
  CHECK(jf.stats().cache_size == 1);

  // The first call fails (while tracing): nothing is cached, later calls work.
  auto jg = dyn::jit(f, dyn::polymorphic_shapes{"b, b, 2*d"});
  CHECK_THROWS_WITH_AS(jg(iota_array<std::int32_t>({3, 3, 5})),
                       doctest::Contains("Division had remainder 1 when computing the value of 'd'."),
                       dyn::ShapeAssertionError);
  CHECK(jg.stats().cache_size == 0);
  CHECK(dyn::array_equal(jg(ok), f(ok)));
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit: Catalyst dynamic sizes: ones(n + 1), one compile for every n") {
  auto jf = dyn::jit([](dyn::Tracer<std::int64_t> n) { return dyn::ones<double>({n + 1}); });
  dyn::Array<double> r = jf(std::int64_t{4});
  CHECK(str(r) == "[1. 1. 1. 1. 1.]");
  for (std::int64_t n = 0; n < 50; ++n) {
    dyn::Array<double> o = jf(n);
    REQUIRE(o.shape() == std::vector<std::int64_t>{n + 1});
    bool all_ones = true;
    for (std::int64_t i = 0; i <= n; ++i) all_ones = all_ones && o.data()[i] == 1.0;
    CHECK(all_ones);
  }
  CHECK(jf.stats().compiles == 1);
  CHECK_THROWS_AS(jf(std::int64_t{-3}), dyn::ShapeError);
  CHECK(str(jf(std::int64_t{2})) == "[1. 1. 1.]");
  CHECK(jf.stats().compiles == 1);

  // Sizes and values mixed: arange(n) * x[0] + n, and a reduction over a runtime size.
  auto jg = dyn::jit([](dyn::Tracer<std::int64_t> n, auto x) {
    auto a = dyn::astype<double>(dyn::arange<std::int64_t>(n * 2)) * x;
    return std::make_tuple(a, dyn::sum(a));
  });
  for (std::int64_t n : {0, 1, 3, 1000}) {
    auto [a, s] = jg(n, 0.5);
    REQUIRE(a.shape() == std::vector<std::int64_t>{2 * n});
    CHECK(s.data()[0] == 0.5 * static_cast<double>((2 * n) * (2 * n - 1) / 2));
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit: a float sum over size-1 axes folds into the identity, as eager (+0.0 from -0.0)") {
  auto f = [](auto x) { return dyn::sum(x, {0}); };
  dyn::Array<double> x({1, 2}, {-0.0, 1.0});
  auto got = dyn::jit(f)(x);
  auto want = f(x);
  CHECK_FALSE(std::signbit(want.data()[0]));
  CHECK_FALSE(std::signbit(got.data()[0]));
  CHECK(got.data()[1] == 1.0);
}
