// dyn::jit of control flow (for_loop, while_loop, cond): the LLVM lowering
// (llvm/lower_control.hpp) against the interpreter (eval_jaxpr of make_jaxpr)
// and eager, at several sizes with one compile; results whose sizes are
// computed inside the kernel (backend.hpp, "Results the kernel allocates").
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"
#include "programs.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

using test_util::iota_array;

// A loop index as f64: a tracer under jit and make_jaxpr, an integer in eager.
template <class I>
auto as_f64(const I& i) {
  if constexpr (std::is_arithmetic_v<I>) return static_cast<double>(i);
  else return dyn::astype<double>(i);
}

// The explicit results of eval_jaxpr (the trailing `n` of its outputs).
std::vector<dyn::AnyArray> explicit_results(std::vector<dyn::AnyArray> all, std::size_t n) {
  return {all.end() - static_cast<std::ptrdiff_t>(n), all.end()};
}

// jit, the interpreter and eager agree exactly (these bodies use exactly
// rounded operations only, and sums of integers).
template <class T>
void check_same(const Array<T>& jit, const dyn::AnyArray& interp, const Array<T>& eager) {
  CHECK(jit.shape() == eager.shape());
  CHECK(dyn::array_equal(jit, eager));
  CHECK(dyn::array_equal(interp.get<T>(), eager));
}

}  // namespace

TEST_CASE("jit control: the Catalyst dynamic-arrays doc's g, preserve_dimensions true and false, one compile for every size") {
  auto g1 = control_programs::g_mix;
  auto g2 = control_programs::g_resize;
  const dyn::polymorphic_shapes spec{"(n,)", "(n,)"};
  auto j1 = dyn::jit(g1, spec);
  auto j2 = dyn::jit(g2, spec);
  auto e1 = dyn::eager(g1);
  auto e2 = dyn::eager(g2);
  for (i64 n : {3, 1, 2, 7, 100}) {  // (a symbolic dimension is >= 1)
    auto x = dyn::ones<double>({n});
    auto y = dyn::ones<double>({n});
    Array<double> r1 = j1(x, y);
    Array<double> r2 = j2(x, y);
    CHECK(r1.data()[0] == static_cast<double>(n));
    CHECK(r2.data()[0] == static_cast<double>(n + 10));
    if (n == 3) {
      CHECK(r1.data()[0] == 3.0);
      CHECK(r2.data()[0] == 13.0);
    }
    const auto jx1 = dyn::make_jaxpr(g1, spec)(x, y);
    const auto jx2 = dyn::make_jaxpr(g2, spec)(x, y);
    check_same(r1, explicit_results(dyn::eval_jaxpr(jx1, {x, y}), 1)[0], Array<double>(e1(x, y)));
    check_same(r2, explicit_results(dyn::eval_jaxpr(jx2, {x, y}), 1)[0], Array<double>(e2(x, y)));
    // Not trivially ones: y scaled by x^10.
    auto xs = iota_array<double>({n}, 1.0, 0.0);
    auto ys = iota_array<double>({n}, -2.0, 0.5);
    check_same(Array<double>(j1(xs, ys)), explicit_results(dyn::eval_jaxpr(jx1, {xs, ys}), 1)[0],
               Array<double>(e1(xs, ys)));
  }
  CHECK(j1.stats().compiles == 1);
  CHECK(j2.stats().compiles == 1);
}

TEST_CASE("jit control: the Catalyst dynamic-arrays doc's overview circuit at sz = 0, 1, 5") {
  auto circuit = control_programs::circuit;
  auto jc = dyn::jit(circuit);
  for (i64 sz : {0, 1, 5}) {
    Array<double> r = jc(sz);
    REQUIRE(r.shape() == std::vector<i64>{sz});
    for (i64 i = 0; i < sz; ++i) CHECK(r.data()[i] == 12.0);
    const auto jx = dyn::make_jaxpr(circuit)(sz);
    check_same(r, explicit_results(dyn::eval_jaxpr(jx, {Array<i64>::scalar(sz)}), 1)[0],
               Array<double>(circuit(sz)));
  }
  CHECK(jc.stats().compiles == 1);
}

TEST_CASE("jit control: a while loop that doubles an array until it is longer than 100 (result size from the kernel)") {
  auto w = [](auto x) {
    return dyn::while_loop([](auto a) { return dyn::dim_value(a.shape(0)) <= 100; }, {.preserve_dimensions = false})(
        [](auto a) { return dyn::concatenate({a, a + 1.0}, 0); })(x);
  };
  const dyn::polymorphic_shapes spec{"(n,)"};
  auto jw = dyn::jit(w, spec);
  for (i64 n : {1, 3, 7, 200}) {
    auto x = iota_array<double>({n}, 0.5);
    Array<double> r = jw(x);
    i64 expect = n;
    while (expect <= 100) expect *= 2;
    REQUIRE(r.shape() == std::vector<i64>{expect});
    const auto jx = dyn::make_jaxpr(w, spec)(x);
    check_same(r, explicit_results(dyn::eval_jaxpr(jx, {x}), 1)[0], Array<double>(w(x)));
  }
  CHECK(jw.stats().compiles == 1);
  Array<double> r = jw(iota_array<double>({3}));
  CHECK(r.shape() == std::vector<i64>{192});
  CHECK(r.data()[191] == 2.0 + 6.0);  // 2 + one per doubling (6 doublings)
}

TEST_CASE("jit control: nested for loops with a captured dynamic array and a traced inner bound") {
  auto f = [](auto x) {
    return dyn::for_loop(0, 3, 1)([&](auto i, auto acc) {
      return dyn::for_loop(0, i + 1, 1)(
          [&](auto j, auto a) { return a + x * as_f64(i * j); })(acc);
    })(x * 0.0);
  };
  const dyn::polymorphic_shapes spec{"(n,)"};
  auto jf = dyn::jit(f, spec);
  for (i64 n : {1, 4, 33}) {
    auto x = iota_array<double>({n}, 1.0);
    Array<double> r = jf(x);
    for (i64 k = 0; k < n; ++k) CHECK(r.data()[k] == 7.0 * x.data()[k]);  // sum over i<3, j<=i of i*j = 7
    const auto jx = dyn::make_jaxpr(f, spec)(x);
    check_same(r, explicit_results(dyn::eval_jaxpr(jx, {x}), 1)[0], Array<double>(f(x)));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit control: cond returns arange(n) or zeros(n * n) (the size is an implicit output)") {
  auto c = control_programs::arange_or_zeros;
  auto jc = dyn::jit(c);
  for (bool p : {true, false})
    for (i64 n : {0, 1, 4, 9}) {
      Array<double> r = jc(p, n);
      REQUIRE(r.shape() == std::vector<i64>{p ? n : n * n});
      const auto jx = dyn::make_jaxpr(c)(p, n);
      check_same(r, explicit_results(dyn::eval_jaxpr(jx, {Array<bool>::scalar(p), Array<i64>::scalar(n)}), 1)[0],
                 Array<double>(c(p, n)));
    }
  CHECK(jc.stats().compiles == 1);
  // Same-size branches: the result is allocated by the caller as usual.
  auto same = [](auto p, auto x) {
    return dyn::cond(p, [](auto a) { return a * 2.0; }, [](auto a) { return a - 1.0; })(x);
  };
  auto js = dyn::jit(same, dyn::polymorphic_shapes{"", "(n,)"});
  for (bool p : {true, false}) {
    auto x = iota_array<double>({5}, 1.0);
    check_same(Array<double>(js(p, x)),
               explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(same, dyn::polymorphic_shapes{"", "(n,)"})(p, x),
                                                {Array<bool>::scalar(p), x}),
                                1)[0],
               Array<double>(same(p, x)));
  }
}

TEST_CASE("jit control: the loop index sizes arrays") {
  // The carried size follows the index: ones(i + 1), allocated per iteration.
  auto f = [](auto m, auto x) {
    return dyn::for_loop(0, m, 1, {.preserve_dimensions = false})(
        [](auto i, auto) { return dyn::ones<double>({i + 1}); })(x);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"", "(n,)"});
  for (i64 m : {0, 1, 5}) {
    auto x = iota_array<double>({3}, 4.0);
    Array<double> r = jf(m, x);
    CHECK(r.shape() == std::vector<i64>{m == 0 ? 3 : m});
    const auto jx = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"", "(n,)"})(m, x);
    check_same(r, explicit_results(dyn::eval_jaxpr(jx, {Array<i64>::scalar(m), x}), 1)[0],
               Array<double>(f(m, x)));
  }
  CHECK(jf.stats().compiles == 1);
  // A temporary sized by the index, reduced into a carried scalar.
  auto g = [](auto m) {
    return dyn::for_loop(0, m, 1)([](auto i, auto acc) { return acc + dyn::sum(dyn::arange<double>(i)); })(0.0);
  };
  auto jg = dyn::jit(g);
  for (i64 m : {0, 1, 5, 40}) {
    Array<double> r = jg(m);
    double want = 0;
    for (i64 i = 0; i < m; ++i) want += static_cast<double>(i * (i - 1) / 2);
    CHECK(r.data()[0] == want);
    const auto jx = dyn::make_jaxpr(g)(m);
    check_same(r, explicit_results(dyn::eval_jaxpr(jx, {Array<i64>::scalar(m)}), 1)[0],
               Array<double>(g(m)));
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit control: 10,000 iterations over a small array") {
  auto f = [](auto a) {
    return dyn::for_loop(0, 10000, 1)([](auto, auto x) { return x * 0.5 + 1.0; })(a);
  };
  auto jf = dyn::jit(f);
  auto a = iota_array<double>({16}, -8.0, 1.5);
  Array<double> r = jf(a);
  check_same(r, dyn::eval_jaxpr(dyn::make_jaxpr(f)(a), {a})[0], Array<double>(f(a)));
  for (i64 k = 0; k < 16; ++k) CHECK(r.data()[k] == 2.0);  // the fixed point of x * 0.5 + 1
  // The same with a traced trip count, one compile.
  auto g = [](auto n, auto a) {
    return dyn::for_loop(0, n, 1)([](auto, auto x) { return x * 0.5 + 1.0; })(a);
  };
  auto jg = dyn::jit(g);
  for (i64 n : {0, 1, 2, 10000}) {
    Array<double> rg = jg(n, a);
    check_same(rg, dyn::eval_jaxpr(dyn::make_jaxpr(g)(n, a), {Array<i64>::scalar(n), a})[0],
               Array<double>(g(n, a)));
  }
  CHECK(jg.stats().compiles == 1);
}

TEST_CASE("jit control: a while loop with a traced trip count") {
  auto f = [](auto n, auto x) {
    return dyn::while_loop([&](auto k, auto) { return k < n; })(
        [](auto k, auto a) { return std::make_tuple(k + 1, a * 2.0); })(std::int64_t{0}, x);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"", "(n,)"});
  for (i64 n : {0, 1, 10}) {
    auto x = iota_array<double>({4}, 1.0);
    auto [k, a] = jf(n, x);
    CHECK(k.data()[0] == n);
    for (i64 i = 0; i < 4; ++i) CHECK(a.data()[i] == x.data()[i] * static_cast<double>(i64{1} << n));
    const auto jx = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"", "(n,)"})(n, x);
    const auto ref = explicit_results(dyn::eval_jaxpr(jx, {Array<i64>::scalar(n), x}), 2);
    auto [ek, ea] = f(n, x);
    check_same(Array<i64>(k), ref[0], Array<i64>(ek));
    check_same(Array<double>(a), ref[1], Array<double>(ea));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit control: trip counts with step < 0, step 0 and lower > upper (Python's range)") {
  auto f = [](auto lo, auto hi, auto st) {
    return dyn::for_loop(lo, hi, st)([](auto i, auto acc, auto count) {
      return std::make_tuple(acc + i, count + std::int64_t{1});
    })(std::int64_t{0}, std::int64_t{0});
  };
  auto jf = dyn::jit(f);
  struct Case {
    i64 lo, hi, st;
  };
  for (Case c : {Case{10, 0, -3}, Case{0, 10, 3}, Case{0, 10, 0}, Case{5, 2, 1}, Case{2, 5, -1}, Case{-7, 7, 7},
                 Case{3, 3, 1}, Case{7, -8, -5}, Case{0, 1, 1000}}) {
    i64 want_sum = 0, want_n = 0;
    if (c.st > 0)
      for (i64 i = c.lo; i < c.hi; i += c.st) want_sum += i, ++want_n;
    if (c.st < 0)
      for (i64 i = c.lo; i > c.hi; i += c.st) want_sum += i, ++want_n;
    auto [s, n] = jf(c.lo, c.hi, c.st);
    CHECK(s.data()[0] == want_sum);
    CHECK(n.data()[0] == want_n);
    CHECK(n.data()[0] == dyn::detail::for_loop_trip_count(c.lo, c.hi, c.st));
    const auto ref = dyn::eval_jaxpr(dyn::make_jaxpr(f)(c.lo, c.hi, c.st),
                                     {Array<i64>::scalar(c.lo), Array<i64>::scalar(c.hi), Array<i64>::scalar(c.st)});
    auto [es, en] = f(c.lo, c.hi, c.st);
    check_same(Array<i64>(s), ref[0], Array<i64>(es));
    check_same(Array<i64>(n), ref[1], Array<i64>(en));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit control: a fault inside a loop body is an error and the function stays usable") {
  auto f = [](auto d, auto x) {
    return dyn::for_loop(0, 4, 1, {.preserve_dimensions = false})(
        [&](auto, auto a) { return dyn::concatenate({a, dyn::pow(d, -a)}, 0); })(x);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"", "(n,)"});
  auto x = iota_array<i64>({3}, 1);
  CHECK_THROWS_AS(jf(i64{0}, x), dyn::ArithmeticError);
  Array<i64> r = jf(i64{1}, x);
  CHECK(r.shape() == std::vector<i64>{48});
  CHECK(dyn::array_equal(r, Array<i64>(f(i64{1}, x))));
}

TEST_CASE("jit control: out of memory inside a loop body ends the kernel and frees the loop's state") {
  // Iteration 0 grows the carried array (a buffer the loop owns); iteration 1
  // needs a 2^61-byte temporary, which cannot be allocated.
  auto f = [](auto big, auto x) {
    return dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})([&](auto i, auto a) {
      auto huge = dyn::concatenate({dyn::ones<double>({big * i}), dyn::ones<double>({big * i})}, 0);
      return dyn::concatenate({a, a}, 0) + dyn::sum(huge);
    })(x);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"", "(n,)"});
  auto x = iota_array<double>({3}, 1.0);
  for (int k = 0; k < 3; ++k) CHECK_THROWS_AS(jf(i64{1} << 57, x), dyn::Error);
  Array<double> r = jf(i64{0}, x);
  CHECK(r.shape() == std::vector<i64>{24});
  CHECK(dyn::array_equal(r, Array<double>(f(i64{0}, x))));
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit: a result sized by data computed inside the function (the kernel allocates it)") {
  auto f = [](auto x) { return dyn::arange<double>(dyn::sum(x)) * 2.0; };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
  for (i64 n : {1, 3, 10}) {
    auto x = iota_array<i64>({n});
    Array<double> r = jf(x);
    const i64 m = n * (n - 1) / 2;
    REQUIRE(r.shape() == std::vector<i64>{m});
    for (i64 k = 0; k < m; ++k) CHECK(r.data()[k] == 2.0 * static_cast<double>(k));
    const auto jx = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(n,)"})(x);
    CHECK(dyn::array_equal(r, explicit_results(dyn::eval_jaxpr(jx, {x}), 1)[0].get<double>()));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit control: infer_dimensions: one carried array grows, the other stays mixed with a captured array") {
  auto f = [](auto x) {
    return dyn::for_loop(0, 3, 1, {.infer_dimensions = true})([&](auto, auto a, auto b) {
      return std::make_tuple(dyn::concatenate({a, a * 2.0}, 0), b + x);
    })(x, x);
  };
  const dyn::polymorphic_shapes spec{"(n,)"};
  auto jf = dyn::jit(f, spec);
  for (i64 n : {1, 2, 5}) {
    auto x = iota_array<double>({n}, 1.0);
    auto [a, b] = jf(x);
    CHECK(a.shape() == std::vector<i64>{8 * n});
    CHECK(b.shape() == std::vector<i64>{n});
    const auto ref = explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(f, spec)(x), {x}), 2);
    auto [ea, eb] = f(x);
    check_same(Array<double>(a), ref[0], Array<double>(ea));
    check_same(Array<double>(b), ref[1], Array<double>(eb));
  }
  CHECK(jf.stats().compiles == 1);
}

// Found by dynstage_fuzz (tests/fuzz/): with noalias on the carried buffers
// of the inlined body (scoped metadata valid for one iteration), LLVM's GVN
// forwarded an iteration's copy of the carry to the next iteration past the
// store of the update into the same buffer (llvm/lower_control.hpp,
// "Aliasing").
TEST_CASE("jit control: a loop updating its carry in place keeps every iteration's update (fuzzer regression)") {
  auto g = [](auto x, auto u) {
    return dyn::for_loop(1, 3, 1)([&](auto i, auto p) { return dyn::dynamic_update_slice(p, u, {i}); })(x);
  };
  auto w = [](auto x, auto u) {
    auto r = dyn::while_loop([](auto k, auto) { return k < 3; })(
        [&](auto k, auto p) { return std::make_tuple(k + 1, dyn::dynamic_update_slice(p, u, {k})); })(i64{0}, x);
    return std::get<1>(r);
  };
  const Array<std::int32_t> x({8}, {1, 1, 1, 1, 1, 1, 1, 1});
  const Array<std::int32_t> u({2}, {0, 2});
  const Array<std::int32_t> rg = dyn::jit(g)(x, u);
  CHECK(dyn::array_equal(rg, Array<std::int32_t>({8}, {1, 0, 0, 2, 1, 1, 1, 1})));
  CHECK(dyn::array_equal(rg, Array<std::int32_t>(dyn::eager(g)(x, u))));
  const Array<std::int32_t> rw = dyn::jit(w)(x, u);
  CHECK(dyn::array_equal(rw, Array<std::int32_t>({8}, {0, 0, 0, 2, 1, 1, 1, 1})));
  CHECK(dyn::array_equal(rw, Array<std::int32_t>(dyn::eager(w)(x, u))));
}

// The aliasing rule of llvm/lower_control.hpp ("Aliasing"): a loop body's
// carried buffers are not noalias; its constants and its index are, and so
// are the buffers of while conditions and cond branches. The cases: carries that the body
// copies first (at most kSnapshotMaxElems elements) and larger ones; a loop
// constant that is the same buffer as the initial carry; a cond branch that
// receives the carry and returns it updated; a loop nested in a loop body.
TEST_CASE("jit control: carried buffers updated in place, small and large, through constants, branches and nested loops") {
  auto g = [](auto x, auto u) {  // x is both the initial carry and a constant of the body
    return dyn::for_loop(1, 5, 1)([&](auto i, auto p) { return dyn::dynamic_update_slice(p + x, u, {i}); })(x);
  };
  auto br = [](auto x, auto u) {  // the carry goes through a branch, which updates it
    return dyn::for_loop(0, 6, 1)([&](auto i, auto p) {
      return dyn::cond(i < 3, [&](auto q) { return dyn::dynamic_update_slice(q, u, {i}); },
                       [&](auto q) { return dyn::dynamic_update_slice(q, u + dyn::slice(q, {0}, {2}), {i * 2}); })(p);
    })(x);
  };
  auto nest = [](auto x, auto u) {  // an inner loop over the outer loop's carry
    return dyn::for_loop(0, 3, 1)([&](auto i, auto p) {
      return dyn::for_loop(0, 2, 1)([&](auto j, auto q) {
        return dyn::dynamic_update_slice(q, u + dyn::dynamic_slice(q, {i}, {2}), {i * 3 + j});
      })(p);
    })(x);
  };
  auto w = [](auto x, auto u) {  // the condition reads the carry the body updates
    auto r = dyn::while_loop([](auto, auto p) { return dyn::sum(p) < i64{20000}; })(
        [&](auto k, auto p) { return std::make_tuple(k + 1, dyn::dynamic_update_slice(p * 2, u, {k})); })(i64{0}, x);
    return std::get<1>(r);
  };
  auto jg = dyn::jit(g);
  auto jbr = dyn::jit(br);
  auto jnest = dyn::jit(nest);
  auto jw = dyn::jit(w);
  for (i64 n : {8, 32, 33, 100}) {  // 8 and 32 elements are copied by the body, 33 and 100 are not
    CAPTURE(n);
    std::vector<i64> xv(static_cast<std::size_t>(n));
    for (i64 k = 0; k < n; ++k) xv[static_cast<std::size_t>(k)] = k + 1;
    const Array<i64> x({n}, xv);
    const Array<i64> u({2}, {7, 9});
    CHECK(dyn::array_equal(Array<i64>(jg(x, u)), Array<i64>(dyn::eager(g)(x, u))));
    CHECK(dyn::array_equal(Array<i64>(jbr(x, u)), Array<i64>(dyn::eager(br)(x, u))));
    CHECK(dyn::array_equal(Array<i64>(jnest(x, u)), Array<i64>(dyn::eager(nest)(x, u))));
    CHECK(dyn::array_equal(Array<i64>(jw(x, u)), Array<i64>(dyn::eager(w)(x, u))));
  }
  // One case by hand: x = 1..8, then p + x and the update at i = 1..4.
  const Array<i64> x8({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(dyn::array_equal(Array<i64>(jg(x8, Array<i64>({2}, {0, 0}))), Array<i64>({8}, {5, 6, 6, 4, 0, 0, 35, 40})));
}

// The 16-double loop of benchmarks/bench_main.cpp ("loop/jit") keeps its
// state in vector registers across iterations (docs/backend.md, "Cost"):
// the loop's phis carry vectors, the body has no scalar code left.
TEST_CASE("jit control: a small carried array stays in vector registers across iterations") {
  auto f = [](auto a) { return dyn::for_loop(0, 10000, 1)([](auto, auto x) { return x * 0.5 + 1.0; })(a); };
  const auto x = iota_array<double>({16}, 1.0);
  auto jf = dyn::jit(f);
  const std::string ir = jf.llvm_ir(x);
  CHECK(ir.find("= phi <") != std::string::npos);
  CHECK(ir.find(" x double> [") != std::string::npos);
  CHECK(ir.find("fmul double") == std::string::npos);
  check_same(Array<double>(jf(x)), explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(f)(x), {x}), 1)[0],
             Array<double>(f(x)));
}

// Issue 14: under preserve_dimensions=false a carried size the body returns
// unchanged is a loop constant (no loop variable, no implicit result), so
// the loop's state is caller-sized; a size it computes is allocated by the
// body each iteration.
TEST_CASE("jit control: preserve_dimensions=false, one carried size kept and one computed") {
  auto f = [](auto x) {
    auto [a, b] = dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})([](auto i, auto a, auto b) {
      return std::make_tuple(a * 2.0 + as_f64(i), dyn::concatenate({b, b + 1.0}, 0));
    })(x, x);
    return std::make_tuple(a + x, b);  // a has x's size after the loop
  };
  const dyn::polymorphic_shapes spec{"(n,)"};
  auto jf = dyn::jit(f, spec);
  for (i64 n : {1, 2, 5, 40}) {
    auto x = iota_array<double>({n}, 1.0);
    auto [a, b] = jf(x);
    CHECK(a.shape() == std::vector<i64>{n});
    CHECK(b.shape() == std::vector<i64>{8 * n});
    const auto ref = explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(f, spec)(x), {x}), 2);
    auto [ea, eb] = f(x);
    check_same(Array<double>(a), ref[0], Array<double>(ea));
    check_same(Array<double>(b), ref[1], Array<double>(eb));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit control: a while loop whose carried size changes next to one whose size does not") {
  auto w = [](auto x, auto y) {
    auto [a, b] = dyn::while_loop([](auto a, auto) { return dyn::dim_value(a.shape(0)) <= 100; },
                                  {.preserve_dimensions = false})(
        [](auto a, auto b) { return std::make_tuple(dyn::concatenate({a, a + 1.0}, 0), b * 2.0 - 1.0); })(x, y);
    return std::make_tuple(a, b + y);
  };
  const dyn::polymorphic_shapes spec{"(n,)", "(m,)"};
  auto jw = dyn::jit(w, spec);
  for (i64 n : {1, 3, 101, 300})
    for (i64 m : {1, 4}) {
      auto x = iota_array<double>({n}, 0.5);
      auto y = iota_array<double>({m}, -1.0);
      auto [a, b] = jw(x, y);
      i64 want = n;
      while (want <= 100) want *= 2;
      CHECK(a.shape() == std::vector<i64>{want});
      CHECK(b.shape() == std::vector<i64>{m});
      const auto ref = explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(w, spec)(x, y), {x, y}), 2);
      auto [ea, eb] = w(x, y);
      check_same(Array<double>(a), ref[0], Array<double>(ea));
      check_same(Array<double>(b), ref[1], Array<double>(eb));
    }
  CHECK(jw.stats().compiles == 1);
}

// A size known before the loop that is not the initial value's (a captured
// array of another size returned by the body; a carried value given
// another's size) depends on the trip count: after zero iterations the
// result is the initial value, at its own size. llvm/lower_control.hpp made
// such a state caller-sized at the body's size and copied the (here much
// larger) initial value into it.
TEST_CASE("jit control: a result that takes a size known before the loop, other than its initial value's") {
  auto captured = [](auto k, auto x, auto y) {
    return dyn::for_loop(0, k, 1, {.preserve_dimensions = false})([&](auto, auto a) { return x * 2.0 + dyn::sum(a); })(y);
  };
  auto other = [](auto k, auto x, auto y) {
    auto [a, b] = dyn::for_loop(0, k, 1, {.preserve_dimensions = false})(
        [](auto, auto a, auto) { return std::make_tuple(a + 1.0, a * 3.0); })(x, y);
    return std::make_tuple(a, b);
  };
  const dyn::polymorphic_shapes spec{"", "(n,)", "(m,)"};
  auto jc = dyn::jit(captured, spec);
  auto jo = dyn::jit(other, spec);
  auto x = iota_array<double>({2}, 1.0);
  for (i64 m : {1, 100000})
    for (i64 k : {0, 1, 3}) {
      CAPTURE(m);
      CAPTURE(k);
      auto y = iota_array<double>({m}, 0.0, 0.5);
      Array<double> rc = jc(k, x, y);
      CHECK(rc.shape() == std::vector<i64>{k == 0 ? m : 2});
      check_same(rc,
                 explicit_results(dyn::eval_jaxpr(dyn::make_jaxpr(captured, spec)(k, x, y),
                                                  {Array<i64>::scalar(k), x, y}),
                                  1)[0],
                 Array<double>(captured(k, x, y)));
      auto [a, b] = jo(k, x, y);
      CHECK(b.shape() == std::vector<i64>{k == 0 ? m : 2});
      const auto ref = explicit_results(
          dyn::eval_jaxpr(dyn::make_jaxpr(other, spec)(k, x, y), {Array<i64>::scalar(k), x, y}), 2);
      auto [ea, eb] = other(k, x, y);
      check_same(Array<double>(a), ref[0], Array<double>(ea));
      check_same(Array<double>(b), ref[1], Array<double>(eb));
    }
  CHECK(jc.stats().compiles == 1);
  CHECK(jo.stats().compiles == 1);
}
