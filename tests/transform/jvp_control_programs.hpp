// Programs with control flow that tests/transform/test_jvp_control.cpp
// (eager, make_jaxpr) and test_jvp_jit.cpp (jit) differentiate: each is
// f(x, w) of two f64 arrays, generic so it runs eagerly on arrays (the
// finite differences) and traced.
#pragma once

#include <dynstage/core.hpp>

#include <cstdint>
#include <tuple>

namespace jvp_programs {

// cond: a captured argument (w) in one branch only, the operand in both.
inline auto cond_fn = [](auto x, auto w) {
  return dyn::cond(dyn::sum(x) > 0.0, [&](auto a) { return dyn::sin(a) * w; }, [](auto a) { return a * a * a; })(x);
};

// cond whose false branch returns a constant: its tangent is a zero that
// must be instantiated, as the true branch has one.
inline auto cond_const_fn = [](auto x, auto w) {
  return dyn::cond(dyn::sum(x) > 0.0, [&](auto a) { return a * w; }, [](auto) { return dyn::ones<double>({3}); })(x);
};

// switch_ with an index computed from the data (clamped into [0, 2]).
inline auto switch_fn = [](auto x, auto w) {
  auto k = dyn::astype<std::int32_t>(dyn::floor(dyn::sum(x)));
  return dyn::switch_(k, [&](auto a) { return a * w; }, [](auto a) { return dyn::sin(a); },
                      [&](auto a) { return dyn::exp(a) * w + a; })(x);
};

// for_loop: the carry starts as a constant (zero tangent) and gets one from
// the captured x and w in the body (the fixed point); the index is used.
inline auto for_fn = [](auto x, auto w) {
  return dyn::for_loop(0, 4, 1)([&](auto i, auto c) { return c * w + dyn::sin(x) * dyn::astype<double>(i); })(
      dyn::zeros<double>({3}));
};

// while_loop: a trip count that depends on the data; an integer carry
// next to the float one (no tangent), and the predicate on primals.
inline auto while_fn = [](auto x, auto w) {
  auto [c, k] = dyn::while_loop([](auto c, auto) { return dyn::sum(c) < 50.0; })(
      [&](auto c, auto k) { return std::tuple{c * w + x, k + 1}; })(x, std::int64_t{0});
  return c * dyn::astype<double>(k);
};

// scan with xs (the rows of x) and ys, a captured w, reversed.
inline auto scan_fn = [](auto x, auto w) {
  auto [c, ys] = dyn::scan([&](auto c, auto r) { return std::tuple{c * w + r, dyn::sin(c) * r}; },
                           dyn::zeros<double>({3}), x, {.reverse = true});
  return c + dyn::sum(ys, {0});
};

// A loop-carried array that grows (a dynamic dimension, a loop variable):
// doubled until longer than 20, the new half scaled by w. Only traced with a
// symbolic size (a static carried size cannot change).
inline auto grow_fn = [](auto x, auto w) {
  auto a = dyn::while_loop([](auto a) { return dyn::dim_value(a.shape(0)) <= 20; }, {.preserve_dimensions = false})(
      [&](auto a) { return dyn::concatenate({a, dyn::sin(a) * w}, 0); })(x);
  return dyn::sum(a * a);
};

// The same with a for_loop whose carried array grows each iteration.
inline auto grow_for_fn = [](auto x, auto w) {
  auto a = dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
      [&](auto, auto a) { return dyn::concatenate({a * w, dyn::cos(a)}, 0); })(x);
  return dyn::sum(a);
};

}  // namespace jvp_programs
