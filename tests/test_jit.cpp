// dyn::jit: the kernel cache, the call path, concurrency, and errors.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <sstream>
#include <thread>
#include <vector>

namespace {

template <class T>
dyn::Array<T> iota_array(std::vector<std::int64_t> shape, T start = T(0), T step = T(1)) {
  dyn::Array<T> a(shape);
  T* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = static_cast<T>(start + step * static_cast<T>(i));
  return a;
}

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

TEST_CASE("jit: integer division by zero is an error, and the function stays usable") {
  auto jf = dyn::jit([](auto x, auto y) { return x / y; });
  auto x = dyn::array<std::int32_t>({7, -7, 9});
  CHECK_THROWS_WITH_AS(jf(x, dyn::array<std::int32_t>({2, 0, 3})), doctest::Contains("division by zero"),
                       dyn::ArithmeticError);
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

TEST_CASE("jit: 8 threads with mixed signatures compile each signature exactly once") {
  auto jf = dyn::jit([](auto x) { return dyn::exp(x) * 0.5 + x; });
  constexpr int kThreads = 8, kCalls = 200, kSizes = 4;
  std::vector<dyn::Array<double>> inputs;
  std::vector<dyn::Array<double>> expected;
  for (int s = 0; s < kSizes; ++s) {
    inputs.push_back(iota_array<double>({s + 1}, 0.25 * s, 0.125));
    expected.push_back(dyn::exp(inputs.back()) * 0.5 + inputs.back());
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        int s = (t + c) % kSizes;
        if (!dyn::allclose(jf(inputs[s]), expected[s], 1e-15, 1e-15)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  auto s = jf.stats();
  CHECK(s.compiles == kSizes);
  CHECK(s.traces == kSizes);
  CHECK(s.cache_hits == static_cast<std::size_t>(kThreads * kCalls - kSizes));
}

TEST_CASE("jit: explain_miss says which argument changed how") {
  using dyn::detail::LeafSig;
  dyn::detail::Signature a, b;
  a.arg_leaf_begin = b.arg_leaf_begin = {0, 1};
  a.leaves = {LeafSig{dyn::DType::f64, {3}}, LeafSig{dyn::DType::f64, {4}}};
  b.leaves = {LeafSig{dyn::DType::f64, {3}}, LeafSig{dyn::DType::f64, {5}}};
  dyn::detail::JitEntry prev;
  prev.sig = a;
  CHECK(dyn::detail::explain_miss(b, nullptr) == "first call");
  CHECK(dyn::detail::explain_miss(b, &prev) ==
        "argument leaf #1 (in non-static argument #1) changed shape from f64[4] to f64[5]");
  b.leaves[1] = LeafSig{dyn::DType::f32, {4}};
  CHECK(dyn::detail::explain_miss(b, &prev) ==
        "argument leaf #1 (in non-static argument #1) changed dtype from f64[4] to f32[4]");
}
