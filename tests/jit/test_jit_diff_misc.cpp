// Differential tests of dyn::jit (issue 3): closed-over array and scalar
// constants, C++ scalar arguments, pytree arguments and results, zero-copy
// views at any alignment, integer faults — compiled (dyn::jit) vs
// interpreted (dyn::eval_jaxpr) vs eager (jit_diff.hpp).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

TEST_CASE("jit diff: closed-over array and scalar constants") {
  const auto k = gen<double>({3, 4}, 200);
  const auto row = gen<float>({4}, 201);          // another dtype: promoted in the trace
  const auto s0 = dyn::Array<double>::scalar(-1.25);  // a rank-0 array constant
  const auto e = gen<double>({0, 4}, 202);        // an empty constant
  const auto ki = gen<i32>({3, 1}, 203, Gen::nonzero);
  const double c = 0.75;
  const int n = 3;
  const auto f = [&](int op, const auto& x) {
    switch (op) {
      case 0: return std::make_tuple(x * k + c, x - row, x * s0 + n, dyn::dynamic_update_slice(x, e, {1, 0}), x / ki);
      default:  // the same buffer twice, subexpressions of constants only (computed at trace time)
        return std::make_tuple(x + k * k, dyn::where(x > c, k, s0 * 2.0), dyn::sum(k, {0}) + x,
                               dyn::where(x > 0.0, x, k), dyn::exp(x) * row);
    }
  };
  const auto x = gen<double>({3, 4}, 204);
  const Three r0 = run3(f, 0, x);
  agree(r0, "closed-over constants, case 0", {Tol{0}, Tol{0}, Tol{0}, Tol{0}, Tol{0}});
  expect_ok(r0, "closed-over constants, case 0");
  const Three r1 = run3(f, 1, x);
  agree(r1, "closed-over constants, case 1", {Tol{0}, Tol{0}, Tol{0}, Tol{0}, Tol{kUlps + 1}});
  expect_ok(r1, "closed-over constants, case 1");
  // Array constants are constvars, one per distinct buffer (k, row, e, ki);
  // the C++ scalars c and n and the rank-0 array s0 are literals (as in JAX,
  // where every scalar constant is a core.Literal: JAX's constants doc).
  const auto cj = dyn::make_jaxpr(f, dyn::static_argnums<0>{})(0, x);
  CHECK(cj.consts.size() == 4);
  CHECK(cj.jaxpr->constvars.size() == 4);
  CHECK(r0.jaxpr.find(" -1.25:f64[]") != std::string::npos);
  // Case 1: k is used twice and is one constant; k * k and sum(k) are
  // computed at trace time into constants of their own, row is the fourth;
  // s0 * 2.0 is computed at trace time too, into the literal -2.5.
  CHECK(dyn::make_jaxpr(f, dyn::static_argnums<0>{})(1, x).consts.size() == 4);
  CHECK(r1.jaxpr.find(" -2.5:f64[]") != std::string::npos);
}

TEST_CASE("jit diff: C++ scalar arguments and results, rank-0 arrays") {
  const auto f = [](int op, const auto& x, const auto& s, const auto& t) {
    // s: a traced double (f64[]), t: a traced int (i32[]).
    if (op == 0) return std::make_tuple(x * s + t, s * t, dyn::astype<double>(t) + 1.5, -s);
    return std::make_tuple(x / s - t, dyn::pow(s, t), s + 0.0, dyn::sqrt(s));
  };
  for (int op : {0, 1}) {
    // Exact but for pow (op 1, second result).
    const std::vector<Tol> tols{Tol{0}, Tol{op == 1 ? kUlps : 0}, Tol{0}, Tol{0}};
    const Three r1 = run3(f, op, gen<float>({5}, 210), 2.5, 3);
    agree(r1, "scalar arguments, f32 array", tols);
    expect_ok(r1, "scalar arguments, f32 array");
    const Three r2 = run3(f, op, dyn::Array<double>::scalar(4.0), -0.5, -2);
    agree(r2, "scalar arguments, rank-0 array", tols);
    expect_ok(r2, "scalar arguments, rank-0 array");
  }
}

TEST_CASE("jit diff: pytree arguments and results (tuple, pair, vector, std::array, nested)") {
  const auto f = [](int op, const auto& t, const auto& vs) {
    const auto& [p, arr] = t;  // p: pair<f64, i32>, arr: array<f32, 2>
    auto acc = vs.at(0);
    for (std::size_t i = 1; i < vs.size(); ++i) acc = acc + vs[i];
    auto arr2 = arr;
    for (auto& a : arr2) a = a * 2.0f + arr[0];
    if (op == 0)
      return std::make_tuple(std::make_pair(p.first + p.second, arr2), std::vector{acc, vs.back()}, dyn::sum(p.second));
    return std::make_tuple(std::make_pair(p.first * 0.0, arr), std::vector{vs.front()}, dyn::max(p.second));
  };
  const auto t = std::make_tuple(std::make_pair(gen<double>({2, 3}, 220), gen<i32>({3}, 221)),
                                 std::array<dyn::Array<float>, 2>{gen<float>({4}, 222), gen<float>({4}, 223)});
  for (std::size_t n : {1, 3}) {
    std::vector<dyn::Array<i64>> vs;
    for (std::size_t i = 0; i < n; ++i) vs.push_back(gen<i64>({2, 2}, 230 + i));
    for (int op : {0, 1}) {
      const std::string what = "pytrees, vector of " + std::to_string(n) + ", op " + std::to_string(op);
      const Three r = run3(f, op, t, vs);
      agree(r, what);
      expect_ok(r, what);
    }
  }
  // A jitted function returns the nested structure with arrays.
  const auto jf = dyn::jit(f, dyn::static_argnums<0>{});
  const std::vector<dyn::Array<i64>> v1{gen<i64>({2, 2}, 240)};
  const auto r = jf(0, t, v1);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::get<0>(r))>,
                               std::tuple<dyn::Array<double>, std::array<dyn::Array<float>, 2>>>);
  CHECK(std::get<1>(r).size() == 2);
}

// dyn::Array is always contiguous (API.md section 2): transpose and slice
// make new arrays, and the only views are zero-copy borrows of user memory
// (Array::view). Kernels must not assume the 64-byte alignment of dyn::Array's
// own buffers for them.
TEST_CASE("jit diff: zero-copy views as arguments, at addresses of any alignment") {
  std::vector<double> buf(200);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = std::sin(static_cast<double>(i)) * 10;
  std::vector<float> fbuf(200);
  for (std::size_t i = 0; i < fbuf.size(); ++i) fbuf[i] = static_cast<float>(i % 17) - 8.0f;
  const auto f = [](int, const auto& x, const auto& y) {
    return std::make_tuple(x * 2.0 + y, dyn::sum(x, {1}), dyn::dot(x, dyn::transpose(y)), dyn::transpose(x));
  };
  for (std::size_t off : {0, 1, 3, 7}) {
    const auto x = dyn::Array<double>::view(buf.data() + off, {9, 11});
    const auto y = dyn::Array<float>::view(fbuf.data() + off, {9, 11});
    Tol dot_tol;
    dot_tol.abs = dyn::dot(dyn::abs(x), dyn::abs(dyn::transpose(dyn::astype<double>(y)))) * (2 * 11 * 2.3e-16);
    const std::string what = "views at offset " + std::to_string(off);
    const Three r = run3(f, 0, x, y);
    agree(r, what, {Tol{0}, Tol{0, false, dyn::abs(dyn::sum(dyn::abs(x), {1})) * (2 * 11 * 2.3e-16)}, dot_tol, Tol{0}});
    expect_ok(r, what);
  }
}

TEST_CASE("jit diff: integer faults and wrapping, the same in all three ways") {
  const auto f = [](int op, const auto& x, const auto& y) {
    switch (op) {
      case 0: return x / y;
      case 1: return x % y;
      case 2: return dyn::pow(x, y);
      default: return x / y + x % y;
    }
  };
  // 0 ** negative: ArithmeticError. Division and remainder by zero are no
  // error: XLA's results, x / 0 = -1 and x % 0 = x (docs/backend.md).
  const auto x32 = dyn::Array<i32>({4}, {7, -7, 0, 5});
  const auto z32 = dyn::Array<i32>({4}, {2, 0, -1, 1});
  const auto x64 = dyn::Array<i64>({3}, {1, 0, 2});
  for (int op : {0, 1}) {
    const Three r32 = run3(f, op, x32, z32);
    const Three r64 = run3(f, op, x64, dyn::Array<i64>({3}, {0, -2, 1}));
    REQUIRE(agree(r32, "i32 by zero, op " + std::to_string(op)));
    REQUIRE(agree(r64, "i64 by zero, op " + std::to_string(op)));
    CHECK(r32.jit.out.at(0).get<i32>()(1) == (op == 0 ? -1 : -7));  // -7 / 0, -7 % 0
    CHECK(r64.jit.out.at(0).get<i64>()(0) == (op == 0 ? -1 : 1));   // 1 / 0, 1 % 0
  }
  for (int op : {2}) {
    const Three r32 = run3(f, op, x32, z32);
    const Three r64 = run3(f, op, x64, dyn::Array<i64>({3}, {0, -2, 1}));
    agree(r32, "i32 fault, op " + std::to_string(op));
    agree(r64, "i64 fault, op " + std::to_string(op));
    CHECK(r32.error() == "ArithmeticError");  // 0 ** -1
    CHECK(r64.error() == "ArithmeticError");  // 0 ** -2
    // The kernel reports the eager kernels' message (the place appended to
    // it, " (at FILE:LINE)", differs).
    for (const Three* r : {&r32, &r64}) {
      const std::string want = r->eager.message.substr(0, r->eager.message.find(" (at "));
      CHECK(want == "pow: integer zero raised to a negative power");
      CHECK(r->jit.message.substr(0, r->jit.message.find(" (at ")).substr(0, want.size()) == want);
      CHECK(r->ref.message.substr(0, want.size()) == want);
    }
  }
  // INT_MIN / -1 and INT_MIN % -1 wrap (documented: no trap).
  for (int op : {0, 1, 3}) {
    const Three r = run3(f, op, dyn::Array<i32>({2}, {std::numeric_limits<i32>::min(), 5}), dyn::Array<i32>({2}, {-1, -1}));
    REQUIRE(agree(r, "INT_MIN / -1, op " + std::to_string(op)));
    const auto q = r.jit.out.at(0).get<i32>();
    CHECK(q(0) == (op == 1 ? 0 : std::numeric_limits<i32>::min()));
    const Three r64 = run3(f, op, dyn::Array<i64>({1}, {std::numeric_limits<i64>::min()}), dyn::Array<i64>({1}, {-1}));
    REQUIRE(agree(r64, "INT64_MIN / -1, op " + std::to_string(op)));
  }
}

// Found by dynstage_fuzz (tests/fuzz/, docs/reliability.md).
TEST_CASE("jit diff: integer scalar arguments and values that are not sizes (fuzzer regressions)") {
  // An i64[] argument gets a dimension variable in case it sizes an array;
  // a negative one that sizes nothing is an ordinary value (jit threw
  // "the integer argument leaf #1 sizes arrays but is negative").
  const auto f = [](int op, const auto& x, const auto& k) {
    switch (op) {
      case 0: return x + k;
      default: return x * 0 + std::numeric_limits<i64>::max() + k;  // wraps, as integer arithmetic does
    }
  };
  const auto x = dyn::Array<i64>({3}, {1, 2, 3});
  const auto neg = dyn::Array<i64>::scalar(-3);
  const Three r0 = run3(f, 0, x, neg);
  REQUIRE(agree(r0, "x + negative i64 scalar"));
  CHECK(dyn::array_equal(r0.jit.out.at(0).get<i64>(), dyn::Array<i64>({3}, {-2, -1, 0})));
  // Arithmetic on integer scalars whose values are static dimensions (x * 0
  // is the dimension 0) overflowed the dimension arithmetic while tracing
  // ("integer overflow in dimension arithmetic"); the values wrap instead.
  const auto y = dyn::Array<i64>::scalar(5);
  const Three r1 = run3(f, 1, y, dyn::Array<i64>::scalar(1));
  REQUIRE(agree(r1, "INT64_MAX + 1 on a traced scalar"));
  CHECK(r1.jit.out.at(0).get<i64>().data()[0] == std::numeric_limits<i64>::min());
  // A reduction over a static axis of size 0 when another axis is a runtime
  // dimension: the kernel left the output uninitialised (sum gave garbage,
  // mean inf instead of NaN).
  const auto h = [](int op, const auto& v) {
    const auto e = dyn::broadcast_to(v, dyn::Shape{dyn::Dim(0), dyn::Dim(v.shape(0))});
    return op == 0 ? dyn::sum(e, {0}) : op == 1 ? dyn::mean(e, {0}) : dyn::prod(e, {0});
  };
  const auto v3 = dyn::Array<double>({3}, {1.5, -2.0, 4.0});
  for (int op : {0, 1, 2}) {
    const auto jh = dyn::jit(h, dyn::static_argnums<0>{}, dyn::polymorphic_shapes{"...", "(n,)"});
    const dyn::Array<double> got = jh(op, v3);
    const dyn::Array<double> want = dyn::eager(h, dyn::static_argnums<0>{})(op, v3);
    INFO("reduction " << op << ": jit " << got << ", eager " << want);
    CHECK(mismatch(got, want, Tol{}).empty());
  }
  // A negative scalar that does size an array is still rejected, in all three.
  const auto g = [](int, const auto& n) { return dyn::arange<double>(n); };
  const Three r2 = run3(g, 0, dyn::Array<i64>::scalar(-2));
  CHECK(r2.jit.error == "ShapeError");
  CHECK(r2.jit.message.find("sizes arrays but is negative (-2)") != std::string::npos);
}

}  // namespace

namespace {

// Found by dynstage_fuzz: with `reassoc` on a float product's accumulator,
// LLVM folds pow(a, y) * pow(b, y) into pow(a * b, y), which is finite for
// negative a and b where each factor (and eager's product) is NaN.
TEST_CASE("jit diff: a float product of pow of negative bases is NaN, as in eager (fuzzer regression)") {
  const auto f = [](int, const auto& x) { return dyn::prod(dyn::pow(x, -1.5), {1, 2}); };
  const auto x = dyn::broadcast_to(dyn::Array<double>({2, 1, 1}, {-2.0, 3.0}), {2, 3, 4});
  const Three r = run3(f, 0, x);
  REQUIRE(r.ok());
  // (Not agree(): twelve factors of libmvec's pow, each within its ulp
  // bound, multiply to a product some ulp further from eager's.)
  for (const Outcome* o : {&r.jit, &r.ref, &r.eager}) {
    const dyn::Array<double> got = o->out.at(0).get<double>();
    CHECK(std::isnan(got.data()[0]));
    CHECK(got.data()[1] == doctest::Approx(std::pow(3.0, -18.0)).epsilon(1e-13));
  }
}

}  // namespace
