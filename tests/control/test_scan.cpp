// dyn::scan (API.md §13, lax.scan): the jaxpr JAX prints for lax.scan
// (`scan[_split_transpose=False jaxpr={...} length=... linear=(...)
// num_carry=... num_consts=... reverse=... unroll=1]`, operands consts,
// carry, xs), reverse, pytree carries and xs, no xs with a length, dynamic
// leading dimensions (`length=None` and the length as a last operand),
// eager against eval_jaxpr, check_jaxpr, and the errors. dyn::jit runs the
// same programs in test_jit_scan.cpp.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

using test_util::iota_array;
using test_util::message_of;
using test_util::str;

namespace {

using dyn::Array;
using i64 = std::int64_t;

// JAX's documentation example: a running sum, as a carry and as the ys.
const auto cumsum = [](auto xs) {
  return dyn::scan(
      [](auto c, auto x) {
        auto s = c + x;
        return std::tuple{s, s};
      },
      0.0f, xs);
};

// Array equality of an eager result and an interpreter result.
template <class T>
bool same(const Array<T>& a, const dyn::AnyArray& b) {
  return dyn::array_equal(a, b.get<T>());
}

}  // namespace

TEST_SUITE("control") {

TEST_CASE("scan: a running sum prints as JAX prints lax.scan") {
  auto j = dyn::make_jaxpr(cumsum)(Array<float>({4}));
  CHECK(str(j) ==
        "{ lambda ; a:f32[4]. let\n"
        "    b:f32[] c:f32[4] = scan[\n"
        "      _split_transpose=False\n"
        "      jaxpr={ lambda ; d:f32[] e:f32[]. let f:f32[] = add d e in (f, f) }\n"
        "      length=4\n"
        "      linear=(False, False)\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] 0.0:f32[] a\n"
        "  in (b, c) }");
  dyn::check_jaxpr(j);
  auto xs = dyn::array({1.0f, 2.0f, 3.0f, 4.0f});
  auto [c, ys] = cumsum(xs);
  CHECK(c.data()[0] == 10.0f);
  CHECK(dyn::array_equal(ys, dyn::array({1.0f, 3.0f, 6.0f, 10.0f})));
  auto r = dyn::eval_jaxpr(j, {xs});
  CHECK(same(c, r.at(0)));
  CHECK(same(ys, r.at(1)));
}

TEST_CASE("scan: reverse runs from the last row, and ys keep the rows of xs") {
  auto f = [](auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c * 2.0 + x, c}; }, 0.0, xs, {.reverse = true});
  };
  auto j = dyn::make_jaxpr(f)(Array<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[] c:f64[3] = scan[\n"
        "      _split_transpose=False\n"
        "      jaxpr={ lambda ; d:f64[] e:f64[]. let\n"
        "          f:f64[] = mul d 2.0:f64[]\n"
        "          g:f64[] = add f e\n"
        "        in (g, d) }\n"
        "      length=3\n"
        "      linear=(False, False)\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=True\n"
        "      unroll=1\n"
        "    ] 0.0:f64[] a\n"
        "  in (b, c) }");
  dyn::check_jaxpr(j);
  auto xs = dyn::array({1.0, 2.0, 3.0});
  auto [c, ys] = f(xs);
  // Steps x=3, 2, 1: carries 0 -> 3 -> 8 -> 17; ys[t] is the carry before row t.
  CHECK(c.data()[0] == 17.0);
  CHECK(dyn::array_equal(ys, dyn::array({8.0, 3.0, 0.0})));
  auto r = dyn::eval_jaxpr(j, {xs});
  CHECK(same(c, r.at(0)));
  CHECK(same(ys, r.at(1)));
}

TEST_CASE("scan: pytree carry and xs, captured constants, no xs with a length") {
  // carry (sum, count), xs (a matrix's rows, a vector), ys a pair; w captured.
  auto f = [](auto m, auto v, auto w) {
    return dyn::scan(
        [&](auto c, auto x) {
          auto [s, k] = c;
          auto [row, e] = x;
          auto s2 = s + row * w;
          return std::tuple{std::tuple{s2, k + 1}, std::tuple{dyn::sum(row) + e, s2}};
        },
        std::tuple{dyn::zeros<double>({3}), std::int64_t{0}}, std::tuple{m, v});
  };
  auto m = iota_array<double>({4, 3}, 1.0, 0.5);
  auto v = iota_array<double>({4}, -1.0, 2.0);
  auto w = dyn::array({1.0, -2.0, 0.5});
  auto j = dyn::make_jaxpr(f)(m, v, w);
  dyn::check_jaxpr(j);
  const std::string s = str(j);
  CHECK(s.find("num_carry=2") != std::string::npos);
  CHECK(s.find("num_consts=1") != std::string::npos);
  CHECK(s.find("linear=(False, False, False, False, False)") != std::string::npos);
  auto [c, ys] = f(m, v, w);
  auto [sum, count] = c;
  auto [ya, yb] = ys;
  CHECK(count.data()[0] == 4);
  CHECK(ya.shape() == std::vector<i64>{4});
  CHECK(yb.shape() == std::vector<i64>{4, 3});
  auto r = dyn::eval_jaxpr(j, {m, v, w});
  CHECK(same(sum, r.at(0)));
  CHECK(same(count, r.at(1)));
  CHECK(same(ya, r.at(2)));
  CHECK(same(yb, r.at(3)));
  // Row 1 of yb is the sum after two rows.
  for (int q = 0; q < 3; ++q)
    CHECK(yb.data()[3 + q] == (m.data()[q] + m.data()[3 + q]) * w.data()[q]);

  // No xs: f(carry, std::tuple<>{}) runs `length` times.
  auto g = [](auto x0) {
    return dyn::scan([](auto c, auto) { return std::tuple{c * 2.0, c}; }, x0, {.length = 5});
  };
  auto jg = dyn::make_jaxpr(g)(1.0);
  CHECK(str(jg) ==
        "{ lambda ; a:f64[]. let\n"
        "    b:f64[] c:f64[5] = scan[\n"
        "      _split_transpose=False\n"
        "      jaxpr={ lambda ; d:f64[]. let e:f64[] = mul d 2.0:f64[] in (e, d) }\n"
        "      length=5\n"
        "      linear=(False,)\n"
        "      num_carry=1\n"
        "      num_consts=0\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] a\n"
        "  in (b, c) }");
  dyn::check_jaxpr(jg);
  auto [gc, gys] = g(Array<double>::scalar(1.0));
  CHECK(gc.data()[0] == 32.0);
  CHECK(dyn::array_equal(gys, dyn::array({1.0, 2.0, 4.0, 8.0, 16.0})));
  auto gr = dyn::eval_jaxpr(jg, {Array<double>::scalar(1.0)});
  CHECK(same(gys, gr.at(1)));
  // Zero steps: the init carry, and ys with a leading 0.
  auto [zc, zys] = dyn::scan([](auto c, auto x) { return std::tuple{c + x, x * 2.0}; }, 1.5,
                             Array<double>({0, 2}));
  CHECK(zc.data()[0] == 1.5);
  CHECK(zys.shape() == std::vector<i64>{0, 2});
}

TEST_CASE("scan: a dynamic leading dimension is length=None and a last operand") {
  // xs of a traced size n; the carry of a traced size m, mixed with a
  // captured array of the same size.
  auto f = [](auto n, auto m) {
    auto xs = dyn::arange<double>(n);
    auto y = dyn::arange<double>(m);
    return dyn::scan([&](auto c, auto x) { return std::tuple{c + y * x, dyn::sum(c) + x}; }, y * 0.5, xs);
  };
  auto j = dyn::make_jaxpr(f)(std::int64_t{4}, std::int64_t{3});
  // The constants are the carry's size b and the captured y; the carry
  // operand is y * 0.5, the xs operand e, and the length a comes last.
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:i64[]. let\n"
        "    c:f64[b] = iota[dimension=0 dtype=float64 shape=(None,)] b\n"
        "    d:f64[b] = mul c 0.5:f64[]\n"
        "    e:f64[a] = iota[dimension=0 dtype=float64 shape=(None,)] a\n"
        "    f:f64[b] g:f64[a] = scan[\n"
        "      _split_transpose=False\n"
        "      jaxpr={ lambda ; h:i64[] i:f64[h] j:f64[h] k:f64[]. let\n"
        "          l:f64[h] = mul i k\n"
        "          m:f64[h] = add j l\n"
        "          n:f64[] = reduce_sum[axes=(0,)] j\n"
        "          o:f64[] = add n k\n"
        "        in (m, o) }\n"
        "      length=None\n"
        "      linear=(False, False, False, False)\n"
        "      num_carry=1\n"
        "      num_consts=2\n"
        "      reverse=False\n"
        "      unroll=1\n"
        "    ] b c d e a\n"
        "  in (f, g) }");
  dyn::check_jaxpr(j);
  for (i64 n : {0, 1, 5})
    for (i64 m : {0, 3}) {
      auto [c, ys] = dyn::eager(f)(n, m);
      auto r = dyn::eval_jaxpr(j, {Array<i64>::scalar(n), Array<i64>::scalar(m)});
      CHECK(same(c, r.at(0)));
      CHECK(same(ys, r.at(1)));
      CHECK(ys.shape() == std::vector<i64>{n});
      CHECK(c.shape() == std::vector<i64>{m});
    }
  // A traced length with no xs.
  auto g = [](auto n, auto x0) {
    return dyn::scan([](auto c, auto) { return std::tuple{c + 1.0, c * c}; }, x0, {.length = n});
  };
  auto jg = dyn::make_jaxpr(g)(std::int64_t{3}, 0.5);
  dyn::check_jaxpr(jg);
  CHECK(str(jg).find("length=None") != std::string::npos);
  CHECK(str(jg).find("] b a\n") != std::string::npos);
  auto rg = dyn::eval_jaxpr(jg, {Array<i64>::scalar(3), Array<double>::scalar(0.5)});
  CHECK(dyn::array_equal(rg.at(1).get<double>(), dyn::array({0.25, 2.25, 6.25})));
  CHECK(rg.at(0).get<double>().data()[0] == 3.5);
}

TEST_CASE("scan: errors name scan, the types and the user's line") {
  // xs of different leading dimensions.
  auto two = [](auto a, auto b) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c + std::get<0>(x), std::get<1>(x)}; }, 0.0,
                     std::tuple{a, b});
  };
  const std::string lead =
      "dyn::scan(): the xs have different leading dimensions: xs leaf #0 has shape (3,) but xs leaf #1 has shape "
      "(4, 2); every xs is scanned along axis 0, so their leading dimensions must be equal";
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(two)(Array<double>({3}), Array<double>({4, 2})); }) == lead);
  CHECK(message_of<dyn::ShapeError>([&] { (void)two(Array<double>({3}), Array<double>({4, 2})); }) == lead);
  // A length that disagrees with the xs.
  auto len = [](auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c + x, x}; }, 0.0, xs, {.length = 5});
  };
  const std::string lm =
      "dyn::scan(): length=5 but the xs have leading dimension 3 (xs leaf #0 has shape (3,)); pass the xs' leading "
      "dimension or leave length out";
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(len)(Array<double>({3})); }) == lm);
  CHECK(message_of<dyn::ShapeError>([&] { (void)len(Array<double>({3})); }) == lm);
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::scan([](auto c, auto) { return std::tuple{c, c}; }, 1.0, std::tuple<>{});
        }) == "dyn::scan(): no xs and no length; pass the number of steps, e.g. dyn::scan(f, init, {.length = n})");
  // A carry that changes shape: TypeError naming scan, both types and the line.
  auto grow = [](auto x0, auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{dyn::concatenate({c, c}, 0), x}; }, x0, xs);
  };
  const std::string gm =
      "dyn::scan(): the carry must keep its type (lax.scan: the carry output must have the same type as the carry "
      "input); carry input #0 has type f64[2] but the body's carry output #0 has type f64[4]; return a carry of "
      "the same dtype and shape";
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(grow)(Array<double>({2}), Array<double>({3})); }) == gm);
  CHECK(message_of<dyn::TypeError>([&] { (void)grow(Array<double>({2}), Array<double>({3})); }) == gm);
  const int line = __LINE__ + 2;
  auto at_line = [](auto x0, auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{dyn::astype<float>(c), x}; }, x0, xs);
  };
  try {
    dyn::make_jaxpr(at_line)(Array<double>({2}), Array<double>({3}));
    FAIL("no error");
  } catch (const dyn::TypeError& e) {
    const std::string m = e.what();
    CHECK(m.find("dyn::scan(): the carry must keep its type") == 0);
    CHECK(m.find("carry input #0 has type f64[2] but the body's carry output #0 has type f32[2]") != std::string::npos);
    CHECK(m.find("test_scan.cpp:" + std::to_string(line)) != std::string::npos);
  }
  // Promoting the carry: the init value is what to change (as for_loop).
  auto promote = [](auto xs) {
    return dyn::scan([](auto c, auto x) { return std::tuple{c + x, x}; }, 0, xs);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(promote)(Array<double>({3})); }) ==
        "dyn::scan(): a carried value keeps the dtype of its init value, but they differ: carry input #0 has type "
        "i32[] but body output #0 has type f64[], so the dtypes do not match; change the init value to f64 (e.g. "
        "0.0)");
  // A y whose size is computed inside the body (from the carried integer):
  // it could change from step to step, so it cannot be stacked.
  auto sized = [](auto k0) {
    return dyn::scan([](auto k, auto) { return std::tuple{k + 1, dyn::ones<double>({k})}; }, k0, {.length = 3});
  };
  const std::string sm = message_of<dyn::TypeError>([&] { dyn::make_jaxpr(sized)(std::int64_t{1}); });
  CHECK(sm.find("dyn::scan(): y #0 has type f64[") == 0);
  CHECK(sm.find("is computed inside the body, so it may differ from step to step; the ys are stacked") !=
        std::string::npos);
  CHECK(message_of<dyn::TypeError>([&] { (void)sized(Array<i64>::scalar(1)); }) ==
        "dyn::scan(): y #0 has type f64[2] in this step but shape (1,) in the first; the ys are stacked, so each y "
        "keeps its dtype and shape in every step");
  // A scalar xs.
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(len)(Array<double>::scalar(1.0)); }) ==
        "dyn::scan(): xs leaf #0 has type f64[], a scalar; scan runs over the leading axis of each xs, which must "
        "have rank >= 1");
}

TEST_CASE("scan: check_jaxpr rejects a body whose carry changes type") {
  auto j = dyn::make_jaxpr(cumsum)(Array<float>({4}));
  auto bad = std::make_shared<dyn::Jaxpr>(*j.jaxpr);
  auto* p = &std::get<dyn::detail::ScanParams>(bad->eqns[0].params);
  auto body = std::make_shared<dyn::Jaxpr>(*p->jaxpr);
  body->types[static_cast<std::size_t>(body->invars[0])].dtype = dyn::DType::f64;  // carry in f64, out f32
  p->jaxpr = body;
  const std::string m = message_of<dyn::TypeError>([&] { dyn::check_jaxpr(dyn::ClosedJaxpr{bad, {}}); });
  CHECK(m.find("scan") != std::string::npos);
  // The operand (f32 init) no longer fits the body's carry input (f64).
  CHECK(m.find("f64[]") != std::string::npos);
  // Carry output of another type than the carry input.
  auto bad2 = std::make_shared<dyn::Jaxpr>(*j.jaxpr);
  auto* p2 = &std::get<dyn::detail::ScanParams>(bad2->eqns[0].params);
  auto body2 = std::make_shared<dyn::Jaxpr>(*p2->jaxpr);
  body2->eqns.clear();
  body2->outvars = {dyn::Atom::of_var(body2->invars[1]), dyn::Atom::of_var(body2->invars[1])};
  body2->types[static_cast<std::size_t>(body2->invars[1])].dtype = dyn::DType::f64;
  p2->jaxpr = body2;
  bad2->types[static_cast<std::size_t>(bad2->invars[0])].dtype = dyn::DType::f64;
  const std::string m2 = message_of<dyn::TypeError>([&] { dyn::check_jaxpr(dyn::ClosedJaxpr{bad2, {}}); });
  CHECK(m2.find("scan: carry output #0 has type f64[] but carry input #0") != std::string::npos);
  // A length that is not the xs' leading dimension.
  auto bad3 = std::make_shared<dyn::Jaxpr>(*j.jaxpr);
  std::get<dyn::detail::ScanParams>(bad3->eqns[0].params).length = 5;
  const std::string m3 = message_of<dyn::TypeError>([&] { dyn::check_jaxpr(dyn::ClosedJaxpr{bad3, {}}); });
  CHECK(m3.find("its leading dimension must be the length, 5") != std::string::npos);
}

}  // TEST_SUITE
