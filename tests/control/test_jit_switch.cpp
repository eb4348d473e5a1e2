// dyn::jit of switch_ and clamp (llvm/lower_control.hpp: an LLVM `switch`
// over the clamped index; llvm/lower_expr.hpp: clamp fused into its
// consumer) against the interpreter and eager: every index in and out of
// range with one compile, branches of different result sizes, NaN bounds;
// the errors leave the jitted function usable.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;
using i32 = std::int32_t;
using test_util::iota_array;
using test_util::message_of;

// Bitwise equal, NaNs included.
template <class T>
bool same_bits(const Array<T>& a, const Array<T>& b) {
  if (a.shape() != b.shape()) return false;
  for (i64 k = 0; k < a.size(); ++k) {
    const T x = a.data()[k], y = b.data()[k];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && (x != y || std::signbit(x) != std::signbit(y))))
        return false;
    } else if (x != y) {
      return false;
    }
  }
  return true;
}

}  // namespace

TEST_SUITE("control") {

TEST_CASE("jit switch_: every index, in and out of range, one compile") {
  auto f = [](auto i, auto x, auto y) {
    return dyn::switch_(i, [&](auto a) { return a + y; }, [](auto a) { return a * 2.0; },
                        [&](auto a) { return dyn::sum(a) - y; }, [](auto a) { return -a; })(x);
  };
  auto jf = dyn::jit(f);
  auto x = iota_array<double>({6}, -2.0, 0.75);
  auto y = iota_array<double>({6}, 1.0, 0.5);
  for (i32 i : {-100, -1, 0, 1, 2, 3, 4, 1000}) {
    Array<double> r = jf(i, x, y);
    CHECK(same_bits(r, f(Array<i32>::scalar(i), x, y)));
    auto all = dyn::eval_jaxpr(dyn::make_jaxpr(f)(i, x, y), {Array<i32>::scalar(i), x, y});
    CHECK(same_bits(r, all.at(0).get<double>()));
  }
  CHECK(jf.stats().compiles == 1);
  // An i64 index: converted (wrapping) and clamped in the kernel as in eager.
  for (i64 i : {i64{-7}, i64{2}, (i64{1} << 32) + 3, i64{1} << 40}) {
    Array<double> r = jf(i, x, y);
    CHECK(same_bits(r, f(Array<i64>::scalar(i), x, y)));
  }
  CHECK(jf.stats().compiles == 2);
}

TEST_CASE("jit switch_: branches of different result sizes, allocated by the kernel") {
  auto f = [](auto i, auto n) {
    return dyn::switch_(i, [&]() { return dyn::arange<double>(n); }, [&]() { return dyn::zeros<double>({n * n}); },
                        [&]() { return dyn::ones<double>({n + 1}); })();
  };
  auto jf = dyn::jit(f);
  for (i32 i : {-3, 0, 1, 2, 5})
    for (i64 n : {0, 1, 4}) {
      Array<double> r = jf(i, n);
      CHECK(r.shape() == std::vector<i64>{i <= 0 ? n : i == 1 ? n * n : n + 1});
      CHECK(same_bits(r, Array<double>(f(Array<i32>::scalar(i), n))));
    }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit switch_: a switch_ inside a loop body, the index carried") {
  auto f = [](auto x) {
    return dyn::for_loop(0, 5, 1)([](auto k, auto a) {
      return dyn::switch_(k, [](auto v) { return v + 1.0; }, [](auto v) { return v * 3.0; },
                          [](auto v) { return v - 0.5; })(a);
    })(x);
  };
  auto jf = dyn::jit(f);
  auto x = iota_array<double>({4}, 1.0);
  CHECK(same_bits(Array<double>(jf(x)), Array<double>(f(x))));
}

TEST_CASE("jit clamp and clip: fused, NaN in any operand, lo > hi, every dtype") {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  auto f = [](auto lo, auto x, auto hi) { return std::make_tuple(dyn::clamp(lo, x, hi), dyn::clip(x * 2.0, lo, 1.5)); };
  auto jf = dyn::jit(f);
  auto x = Array<double>({7}, {nan, -3.0, -0.0, 0.25, 1.0, 4.0, 0.5});
  auto lo = Array<double>({7}, {0.0, 0.0, 0.0, nan, 2.0, -1.0, 0.0});
  auto hi = Array<double>({7}, {1.0, 1.0, 1.0, 1.0, 1.0, nan, 0.0});
  auto [a, b] = jf(lo, x, hi);
  auto [ea, eb] = f(lo, x, hi);
  CHECK(same_bits(a, ea));
  CHECK(same_bits(b, eb));
  CHECK(std::isnan(a(0)));
  CHECK(std::isnan(a(3)));
  CHECK(a(4) == 1.0);  // lo > hi: hi
  CHECK(std::isnan(a(5)));
  // Integers and bool, rank-0 bounds.
  auto g = [](auto x, auto y) { return std::make_tuple(dyn::clamp(-2, x, 3), dyn::clamp(false, y, true)); };
  auto jg = dyn::jit(g);
  auto xi = Array<i64>({5}, {-9, -2, 0, 3, 9});
  auto yb = Array<bool>({2}, {true, false});
  auto [c, d] = jg(xi, yb);
  auto [ec, ed] = g(xi, yb);
  CHECK(same_bits(c, ec));
  CHECK(same_bits(d, ed));
  // Fused: no buffer of its own between the add and the mul.
  auto h = [](auto x) { return dyn::clamp(0.0f, x + 1.0f, 2.0f) * 3.0f; };
  auto jh = dyn::jit(h);
  auto xf = iota_array<float>({100}, -3.0f, 0.0625f);
  CHECK(same_bits(Array<float>(jh(xf)), Array<float>(h(xf))));
  const std::string ir = jh.llvm_ir(xf);
  CHECK(ir.find("= clamp: fused") != std::string::npos);
}

TEST_CASE("jit switch_: a bad index or branch mismatch raises at trace time; the function stays usable") {
  auto f = [](auto i, auto x) {
    return dyn::switch_(i, [](auto a) { return a; }, [](auto a) { return dyn::sum(a) + a; })(x);
  };
  auto jf = dyn::jit(f);
  auto x = iota_array<double>({3}, 1.0);
  CHECK(message_of<dyn::TypeError>([&] { jf(1.5, x); }) ==
        "dyn::switch_(): the index must be an integer scalar, got f64[]; convert it first (e.g. "
        "dyn::astype<int>(x))");
  CHECK(jf.stats().cache_size == 0);
  CHECK(same_bits(Array<double>(jf(1, x)), Array<double>(f(Array<i32>::scalar(1), x))));
  auto g = [](auto i, auto x) {
    return dyn::switch_(i, [](auto a) { return a; }, [](auto a) { return dyn::sum(a); })(x);
  };
  auto jg = dyn::jit(g);
  CHECK(message_of<dyn::TypeError>([&] { jg(0, x); }) ==
        "dyn::switch_(): branch output #0 has type f64[3] in branch 0 but f64[] in branch 1; the branches must "
        "return the same rank");
  CHECK(jg.stats().cache_size == 0);
  CHECK(same_bits(Array<double>(jg(0, Array<double>::scalar(2.0))), Array<double>::scalar(2.0)));
}

}  // TEST_SUITE
