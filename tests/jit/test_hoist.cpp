// Loop-invariant code motion (issue 18, item 2: "Loop-invariant work out of
// loop bodies"; llvm/hoist.hpp): an equation of a for_loop, while_loop or
// scan body that reads only the body's constants runs once, before the
// loop. Checked on the rewritten jaxpr the backend lowers (where each
// equation is) and by values against eager, for zero, one and several
// iterations, symbolic sizes, nested loops, and the equations that must stay
// (integer division: it raises on a zero divisor even when the loop would
// not have run it).
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>
#include <dynstage/llvm/canonicalize.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::detail::Prim;
using i64 = std::int64_t;

// The backend's rewrite of f's jaxpr (inline_checkpoints, hoisting, dots).
template <class F, class... A>
dyn::Jaxpr rewritten(const F& f, const A&... args) {
  return dyn::detail::canonicalize_dots(*dyn::make_jaxpr(f)(args...).jaxpr);
}

int count(const std::vector<dyn::Eqn>& eqns, Prim p) {
  int n = 0;
  for (const auto& e : eqns) n += e.prim == p ? 1 : 0;
  return n;
}

const dyn::Jaxpr& body_of(const dyn::Jaxpr& j, Prim loop) {
  for (const auto& e : j.eqns) {
    if (e.prim != loop) continue;
    if (const auto* p = std::get_if<dyn::detail::ForLoopParams>(&e.params)) return *p->body_jaxpr;
    if (const auto* p = std::get_if<dyn::detail::WhileLoopParams>(&e.params)) return *p->body_jaxpr;
    if (const auto* p = std::get_if<dyn::detail::ScanParams>(&e.params)) return *p->jaxpr;
  }
  throw std::logic_error("no loop");
}

Array<double> wavy(i64 n) {
  Array<double> a({n});
  for (i64 i = 0; i < n; ++i) a.mutable_data()[i] = std::sin(0.3 * static_cast<double>(i) + 0.1);
  return a;
}

}  // namespace

TEST_CASE("hoisting: a for_loop body's sum(exp(w)) of a constant w runs once, before the loop; values as eager "
          "for 0, 1 and 7 iterations") {
  for (i64 trips : {i64{0}, i64{1}, i64{7}}) {
    auto f = [trips](auto w, auto c0) {
      return dyn::for_loop(0, trips, 1)([&](auto i, auto c) {
        return c * 0.5 + dyn::sum(dyn::exp(w)) + dyn::astype<double>(i);
      })(c0);
    };
    const Array<double> w = wavy(5), c0 = wavy(3);
    const dyn::Jaxpr j = rewritten(f, w, c0);
    const dyn::Jaxpr& b = body_of(j, Prim::for_loop);
    CHECK(count(b.eqns, Prim::reduce_sum) == 0);
    CHECK(count(b.eqns, Prim::exp) == 0);
    CHECK(count(j.eqns, Prim::reduce_sum) == 1);
    CHECK(count(b.eqns, Prim::mul) == 1);  // the carry's update stays
    CHECK(dyn::allclose(dyn::jit(f)(w, c0), dyn::eager(f)(w, c0), 1e-14));
  }
}

TEST_CASE("hoisting: while_loop and scan bodies, a product of constants; the carry-dependent work stays") {
  auto wl = [](auto m, auto c0) {
    return dyn::while_loop([](auto c) { return dyn::sum(c) < 50.0; })(
        [&](auto c) { return c + dyn::sum(dyn::matmul(m, dyn::transpose(m)), {0}); })(c0);
  };
  const Array<double> m = dyn::reshape(dyn::linspace<double>(0.1, 1.2, 12), {3, 4});
  const Array<double> c0({3}, {0.0, 1.0, 2.0});
  const dyn::Jaxpr j = rewritten(wl, m, c0);
  CHECK(count(body_of(j, Prim::while_loop).eqns, Prim::dot_general) == 0);
  CHECK(count(j.eqns, Prim::dot_general) == 1);
  CHECK(dyn::allclose(dyn::jit(wl)(m, c0), dyn::eager(wl)(m, c0), 1e-13));

  auto sc = [](auto w, auto xs) {
    auto [c, ys] = dyn::scan([&](auto c, auto x) {
      auto s = dyn::sort(w);  // invariant, and so are its max and min
      return std::tuple{c + x * dyn::max(s), c * dyn::min(s)};
    }, 0.0, xs);
    return c + dyn::sum(ys);
  };
  const Array<double> xs = wavy(6);
  const dyn::Jaxpr js = rewritten(sc, wavy(4), xs);
  CHECK(count(body_of(js, Prim::scan).eqns, Prim::sort) == 0);
  CHECK(dyn::jit(sc)(wavy(4), xs)() == doctest::Approx(dyn::eager(sc)(wavy(4), xs)()).epsilon(1e-14));
}

TEST_CASE("hoisting: symbolic sizes (one kernel for two lengths) and a loop nested in a loop body") {
  auto f = [](auto w, auto c0) {
    return dyn::for_loop(0, 4, 1)([&](auto, auto c) {
      auto inner = dyn::for_loop(0, 3, 1)([&](auto, auto d) { return d + dyn::max(dyn::sin(w)); })(c);
      return inner * 0.5;
    })(c0);
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)", "()"});
  for (i64 n : {i64{3}, i64{8}}) {
    const Array<double> w = wavy(n);
    CHECK(jf(w, 1.0)() == doctest::Approx(dyn::eager(f)(w, 1.0)()).epsilon(1e-14));
  }
  CHECK(jf.stats().compiles == 1);
  // The inner loop's invariant max(sin(w)) leaves it for the outer body
  // when that body is lowered (one loop level per lowering).
  const dyn::Jaxpr j = rewritten(f, wavy(3), Array<double>::scalar(1.0));
  const dyn::Jaxpr outer = dyn::detail::canonicalize_dots(body_of(j, Prim::for_loop));
  CHECK(count(body_of(outer, Prim::for_loop).eqns, Prim::reduce_max) == 0);
}

TEST_CASE("hoisting: integer division stays in the body (a zero divisor raises only if the loop runs)") {
  auto f = [](auto k, auto d, auto n) {
    return dyn::for_loop(i64{0}, n, i64{1})([&](auto, auto c) { return c + k / d; })(k * 0);
  };
  const Array<i64> k({2}, {7, 9}), d({2}, {0, 3});
  const dyn::Jaxpr j = rewritten(f, k, d, i64{0});
  CHECK(count(body_of(j, Prim::for_loop).eqns, Prim::div) == 1);
  // No iteration: no division, no error, under jit as eagerly.
  CHECK(dyn::array_equal(dyn::jit(f)(k, d, i64{0}), Array<i64>({2}, {0, 0})));
}

TEST_CASE("hoisting: a broadcast the body reads stays in it (no n x m constant); a hoisted reduction of it runs "
          "before the loop") {
  // keep: [n, 1], broadcast to the carry's [n, m] inside the body. Hoisted,
  // the broadcast would enter the body as an n x m buffer read every
  // iteration; fused in the body it reads n elements.
  auto f = [](auto keep, auto c0) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto c) {
      auto b = dyn::broadcast_to(keep, {4, 6});
      return c * b + dyn::sum(b);  // sum(b) is hoisted: the broadcast runs before the loop for it too
    })(c0);
  };
  const Array<double> keep({4, 1}, {1.0, 0.0, 0.5, 2.0});
  const Array<double> c0 = dyn::reshape(wavy(24), {4, 6});
  const dyn::Jaxpr j = rewritten(f, keep, c0);
  const dyn::Jaxpr& b = body_of(j, Prim::for_loop);
  CHECK(count(b.eqns, Prim::broadcast_in_dim) == 1);
  CHECK(count(b.eqns, Prim::reduce_sum) == 0);
  CHECK(count(j.eqns, Prim::broadcast_in_dim) == 1);
  CHECK(count(j.eqns, Prim::reduce_sum) == 1);
  for (const dyn::Atom& a : j.eqns.back().inputs)  // the loop's operands: no [4, 6] constant besides the carry
    if (a.is_var() && j.type_of(a).shape.size() == 2) CHECK(j.type_of(a).shape[1].value == (a.var == j.invars[1] ? 6 : 1));
  CHECK(dyn::array_equal(dyn::jit(f)(keep, c0), dyn::eager(f)(keep, c0)));
  // A broadcast that does not inflate (same size) is hoisted as before.
  auto g = [](auto w, auto c0) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return c + dyn::reshape(dyn::exp(w), {4, 6}); })(c0);
  };
  const dyn::Jaxpr jg = rewritten(g, wavy(24), c0);
  CHECK(count(body_of(jg, Prim::for_loop).eqns, Prim::exp) == 0);
  CHECK(count(body_of(jg, Prim::for_loop).eqns, Prim::reshape) == 0);
  CHECK(dyn::allclose(dyn::jit(g)(wavy(24), c0), dyn::eager(g)(wavy(24), c0), 1e-14));
}
