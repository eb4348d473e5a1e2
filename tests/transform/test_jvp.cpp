// dyn::jvp (issue 20, API.md section 14): forward mode as a jaxpr
// interpreter. The rules are checked primitive by primitive against central
// finite differences of the eager interpreter (the whole primitive table:
// a primitive without a rule fails here unless it is on jvp_missing's list
// with its reason), and the user-facing dyn::jvp against hand-computed
// derivatives, in eager code, printed by make_jaxpr, and compiled by jit.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../ir/prim_samples.hpp"
#include "../test_util.hpp"
#include "differences.hpp"

using dyn::AnyArray;
using dyn::Array;
using namespace dyn;
using namespace dyn::detail;
using test_util::message_of;
using test_util::str;
using namespace transform_test;

TEST_CASE("jvp rules: every primitive's JVP against central finite differences of eval_jaxpr (f64: 1e-6)") {
  int checked = 0, missing = 0, no_tangent = 0;
  for (Prim p : prim_samples::all_prims()) {
    CAPTURE(std::string(prim_name(p)));
    prim_samples::Sample s = prim_samples::sample_of(p);
    off_kinks(p, s.args);
    const Jaxpr& j = *s.jaxpr.jaxpr;
    std::vector<Value> consts, args;
    for (const AnyArray& c : s.jaxpr.consts) consts.push_back(Value{c, nullptr, false});
    std::vector<Tangent> tangents;
    std::vector<AnyArray> dirs;
    bool any = false;
    for (std::size_t k = 0; k < s.args.size(); ++k) {
      args.push_back(Value{s.args[k], nullptr, false});
      if (differentiable_dtype(s.args[k].dtype())) {  // real and complex floats (complex: both parts move)
        dirs.push_back(direction(s.args[k], static_cast<int>(k)));
        tangents.emplace_back(Value{dirs.back(), nullptr, false});
        any = true;
      } else {
        dirs.push_back(s.args[k]);
        tangents.emplace_back(std::nullopt);
      }
    }
    bool float_out = false;
    for (const Atom& o : j.outvars)
      float_out = float_out || differentiable_dtype(j.types.at(static_cast<std::size_t>(o.var)).dtype);
    if (!any || !float_out) {  // nothing to differentiate: no tangent comes out
      const JvpOut r = jvp_eval(j, consts, args, tangents);
      for (const Tangent& t : r.tangents) CHECK(!t.has_value());
      ++no_tangent;
      continue;
    }
    if (const char* why = jvp_missing(p)) {
      CHECK(message_of<dyn::TypeError>([&] { (void)jvp_eval(j, consts, args, tangents); }) ==
            "jvp: cannot differentiate through " + std::string(prim_name(p)) + ": " + why);
      ++missing;
      continue;
    }
    const JvpOut r = jvp_eval(j, consts, args, tangents);
    if (p == Prim::stop_gradient) {  // zero by definition, whatever the differences say
      CHECK(!r.tangents.at(0).has_value());
      ++checked;
      continue;
    }
    // Central differences along the same direction.
    bool f32 = false;
    for (const AnyArray& a : s.args) f32 = f32 || a.dtype() == DType::f32;
    const double h = f32 ? 1e-2 : 1e-5, tol = f32 ? 1e-3 : 1e-6;
    std::vector<AnyArray> plus, minus;
    for (std::size_t k = 0; k < s.args.size(); ++k) {
      plus.push_back(differentiable_dtype(s.args[k].dtype()) ? shifted(s.args[k], dirs[k], h) : s.args[k]);
      minus.push_back(differentiable_dtype(s.args[k].dtype()) ? shifted(s.args[k], dirs[k], -h) : s.args[k]);
    }
    const std::vector<AnyArray> fp = dyn::eval_jaxpr(s.jaxpr, plus), fm = dyn::eval_jaxpr(s.jaxpr, minus);
    for (std::size_t o = 0; o < r.primals.size(); ++o) {
      if (!differentiable_dtype(r.primals[o].dtype())) continue;
      // A zero tangent (nullopt: floor, sign, ...) must meet a zero difference.
      const AnyArray t = r.tangents[o] ? r.tangents[o]->array : AnyArray(dyn::zeros<double>(fp[o].shape()));
      REQUIRE(t.shape() == fp[o].shape());
      for (std::int64_t i = 0; i < t.size(); ++i) {
        const double fd = (at(fp[o], i) - at(fm[o], i)) / (2 * h);
        const double fd_im = (at_im(fp[o], i) - at_im(fm[o], i)) / (2 * h);  // complex results: both parts
        CAPTURE(i);
        CHECK(std::abs(at(t, i) - fd) <= tol * (1 + std::abs(fd)));
        CHECK(std::abs(at_im(t, i) - fd_im) <= tol * (1 + std::abs(fd_im)));
      }
    }
    ++checked;
  }
  // The tally, so that a primitive moving between the groups is seen.
  CHECK(checked + missing + no_tangent == static_cast<int>(prim_samples::all_prims().size()));
  CHECK(missing == 2);  // pmax, pmin (no derivative in JAX either; every other differentiable primitive, the
                        // complex ones included, has a rule)
}

TEST_CASE("jvp: dyn::jvp(f, primals, tangents) gives f and its directional derivative (hand-computed), eager") {
  auto f = [](auto x) { return dyn::sin(x) * x; };
  const Array<double> x({3}, {0.0, 0.5, 2.0}), tx({3}, {1.0, -2.0, 0.5});
  auto [y, t] = dyn::jvp(f, std::tuple{x}, std::tuple{tx});
  for (std::int64_t i = 0; i < 3; ++i) {
    CHECK(y(i) == doctest::Approx(std::sin(x(i)) * x(i)).epsilon(1e-15));
    CHECK(t(i) == doctest::Approx((std::cos(x(i)) * x(i) + std::sin(x(i))) * tx(i)).epsilon(1e-14));
  }
  // Two arguments, a tuple of results, a reduction, a closed-over array, a C++ scalar argument.
  const Array<double> w({3}, {1.0, 2.0, 3.0});
  auto g = [&](auto a, auto b, auto c) { return std::tuple{a * b, dyn::sum(w * a / b) * c}; };
  const Array<double> a({3}, {1.0, 2.0, 4.0}), b({3}, {2.0, 1.0, 0.5});
  const Array<double> ta({3}, {1.0, 0.0, 0.0}), tb({3}, {0.0, 1.0, 0.0});
  auto [ys, ts] = dyn::jvp(g, std::tuple{a, b, 3.0}, std::tuple{ta, tb, 0.5});
  const auto& [p, s] = ys;
  const auto& [tp, tsum] = ts;
  CHECK(str(p) == "[2. 2. 2.]");
  CHECK(str(tp) == "[2. 2. 0.]");  // d(a b) = ta b + a tb
  // s = 3 * sum(w a / b) = 3 * (0.5 + 4 + 24) = 85.5; ds = 3 * (w0 ta0 / b0 - w1 a1 tb1 / b1^2) + 0.5 * 28.5
  CHECK(s() == doctest::Approx(85.5));
  CHECK(tsum() == doctest::Approx(3.0 * (0.5 - 4.0) + 0.5 * 28.5));
}

TEST_CASE("jvp: inside make_jaxpr it records the differentiated program (golden text)") {
  auto f = [](auto x) { return dyn::sin(x) * 2.0; };
  auto g = [&](auto x, auto t) { return dyn::jvp(f, std::tuple{x}, std::tuple{t}); };
  const auto cj = dyn::make_jaxpr(g)(1.0, 1.0);
  CHECK(str(cj) ==
        "{ lambda ; a:f64[] b:f64[]. let\n"
        "    c:f64[] = sin a\n"
        "    d:f64[] = mul c 2.0:f64[]\n"
        "    e:f64[] = cos a\n"
        "    f:f64[] = mul b e\n"
        "    g:f64[] = mul f 2.0:f64[]\n"
        "  in (d, g) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  // Symbolic shapes flow through: one program for every n.
  const auto cs = dyn::make_jaxpr(g, dyn::polymorphic_shapes{"(n,)", "(n,)"})(dyn::ones<double>({4}), dyn::ones<double>({4}));
  CHECK(str(cs).starts_with("{ lambda ; a:i64[] b:f64[a] c:f64[a]. let"));
  CHECK_NOTHROW(dyn::check_jaxpr(cs));
  const Array<double> x({2}, {0.5, 1.0}), t({2}, {1.0, 3.0});
  const auto got = dyn::eval_jaxpr(cs, {AnyArray(x), AnyArray(t)});
  CHECK(got.back().get<double>()(1) == doctest::Approx(2.0 * std::cos(1.0) * 3.0).epsilon(1e-15));
}

TEST_CASE("jvp: integer results have zero tangents; integer primals and mismatched tangents are TypeErrors") {
  auto f = [](auto x) { return std::tuple{x * x, dyn::argmax(x, 0)}; };
  const Array<double> x({3}, {1.0, 3.0, 2.0}), tx({3}, {1.0, 1.0, 1.0});
  auto [ys, ts] = dyn::jvp(f, std::tuple{x}, std::tuple{tx});
  CHECK(str(std::get<0>(ts)) == "[2. 6. 4.]");
  CHECK(str(std::get<1>(ts)) == "0");
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::jvp(f, std::tuple{x}, std::tuple{Array<float>({3}, {1, 1, 1})});
        }) == "dyn::jvp: tangent #0 has type f32[3] but primal #0 has type f64[3]; a tangent has its primal's "
              "dtype and shape");
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::jvp([](auto n) { return n * 2; }, std::tuple{Array<int>({2}, {1, 2})},
                         std::tuple{Array<int>({2}, {1, 1})});
        }) == "dyn::jvp: primal #0 has type i32[2]; only floating-point arguments have tangents (convert it, or "
              "close over it instead of passing it)");
}

TEST_CASE("jvp of clamp: the tangent of the operand the result is, also where lo > hi (the result is hi) and at "
          "ties of x with a bound (x's: clamp(lo, v, v) is v)") {
  // clamp(lo, x, hi) with tangents 1, 10, 100: the result's tangent names the operand chosen.
  auto tan_of = [](double lo, double x, double hi) {
    auto f = [](auto a, auto b, auto c) { return dyn::clamp(a, b, c); };
    auto [y, t] = dyn::jvp(f, std::tuple{Array<double>::scalar(lo), Array<double>::scalar(x), Array<double>::scalar(hi)},
                           std::tuple{Array<double>::scalar(1.0), Array<double>::scalar(10.0), Array<double>::scalar(100.0)});
    return t();
  };
  CHECK(tan_of(0.0, 0.5, 1.0) == 10.0);   // inside: x
  CHECK(tan_of(0.0, -2.0, 1.0) == 1.0);   // below: lo
  CHECK(tan_of(0.0, 3.0, 1.0) == 100.0);  // above: hi
  CHECK(tan_of(2.0, 0.5, 1.0) == 100.0);  // lo > hi: the result is hi, whatever x
  CHECK(tan_of(2.0, 3.0, 1.0) == 100.0);
  CHECK(tan_of(0.0, 1.0, 1.0) == 10.0);   // a tie with hi: x's
  CHECK(tan_of(0.0, 0.0, 1.0) == 10.0);   // a tie with lo: x's
  // clamp(c, v, v) is v: its derivative in v is 1 (the fuzzer's seed 402).
  CHECK(dyn::grad([](auto v) { return dyn::clamp(0.5, v, v); })(2.0)() == 1.0);
  CHECK(dyn::grad([](auto v) { return dyn::clamp(0.5, v, v); })(0.1)() == 1.0);
}
