// Helpers of the derivative tests (test_jvp.cpp, test_vjp.cpp): fixed
// directions, shifted points for central differences, and sample operands
// moved off the kinks of max, min and clamp.
#pragma once

#include <dynstage/core.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

namespace transform_test {

using namespace dyn;
using namespace dyn::detail;

// A deterministic direction in [-1, 1] of x's type (a complex one moves
// both parts: (sin, cos) of the same angle).
inline AnyArray direction(const AnyArray& x, int salt) {
  return visit_dtype(x.dtype(), [&](auto z) -> AnyArray {
    using T = decltype(z);
    Array<T> a(x.shape());
    T* p = a.mutable_data();
    for (std::int64_t i = 0; i < a.size(); ++i) {
      const double angle = 1.7 * static_cast<double>(i + 1) + 0.9 * salt;
      if constexpr (dyn::is_complex_v<T>)
        p[i] = T(static_cast<typename T::value_type>(std::sin(angle)), static_cast<typename T::value_type>(std::cos(angle)));
      else p[i] = static_cast<T>(std::sin(angle));
    }
    return AnyArray(a);
  });
}

// x + h * v, elementwise, in x's dtype.
inline AnyArray shifted(const AnyArray& x, const AnyArray& v, double h) {
  return visit_dtype(x.dtype(), [&](auto z) -> AnyArray {
    using T = decltype(z);
    Array<T> a(x.shape());
    const T* xp = static_cast<const T*>(x.data());
    const T* vp = static_cast<const T*>(v.data());
    for (std::int64_t i = 0; i < a.size(); ++i) {
      if constexpr (dyn::is_complex_v<T>) a.mutable_data()[i] = xp[i] + static_cast<typename T::value_type>(h) * vp[i];
      else a.mutable_data()[i] = static_cast<T>(xp[i] + h * vp[i]);
    }
    return AnyArray(a);
  });
}

// Element i (of a complex array: its real part; at_im: its imaginary
// part, 0 for a real array).
inline double at(const AnyArray& a, std::int64_t i) {
  return visit_dtype(a.dtype(), [&](auto z) {
    const auto v = static_cast<const decltype(z)*>(a.data())[i];
    if constexpr (dyn::is_complex_v<decltype(z)>) return static_cast<double>(v.real());
    else return static_cast<double>(v);
  });
}
inline double at_im(const AnyArray& a, std::int64_t i) {
  return visit_dtype(a.dtype(), [&](auto z) {
    const auto v = static_cast<const decltype(z)*>(a.data())[i];
    if constexpr (dyn::is_complex_v<decltype(z)>) return static_cast<double>(v.imag());
    else return (void)v, 0.0;
  });
}

// Samples whose operands sit on a kink of the function (equal operands of
// max, min; x on clamp's bound) get operands off it.
inline void off_kinks(Prim p, std::vector<AnyArray>& args) {
  if (prim_info(p).kind == Kind::binary && args.size() == 2 && is_float(args[1].dtype()))
    args[1] = shifted(args[1], AnyArray(dyn::ones<double>(args[1].shape())), 0.37);
  if (p == Prim::clamp) {
    args[0] = AnyArray(Array<double>::scalar(0.35));
    Array<double> hi = args[2].get<double>();
    for (std::int64_t i = 0; i < hi.size(); ++i) hi.mutable_data()[i] += (i % 2 ? 0.3 : -0.3);
    args[2] = AnyArray(hi);
  }
}

// A scan for the reverse-mode tests (test_vjp_control.cpp, test_vjp_jit.cpp):
// c_{t+1} = c_t sin(x_t w) + x_t, y_t = c_t w; the loss is sum(ys) + c_final.
inline const auto scan_loss = [](auto w, auto xs) {
  auto [c, ys] = dyn::scan(
      [&](auto c, auto x) {
        auto next = c * dyn::sin(x * w) + x;
        return std::tuple{next, c * w};
      },
      1.0, xs);
  return dyn::sum(ys) + c;
};

// Loops for the reverse-mode tests (test_vjp_loops.cpp, test_vjp_jit.cpp).
// c -> c * c three times: x^8.
inline const auto pow8 = [](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto c) { return c * c; })(x); };

// c -> c w while c < 10, from c = x: x w^N with N the number of iterations.
inline const auto grow = [](auto x, auto w) {
  return dyn::while_loop([](auto c) { return c < 10.0; })([&](auto c) { return c * w; })(x);
};

// A damped spring stepped until t >= 1 (dt = 0.05: 20 steps); the loss is
// the final position's square plus the velocity.
inline const auto spring = [](auto k, auto x0) {
  auto [x, v, t] = dyn::while_loop([](auto, auto, auto t) { return t < 0.999; })([&](auto x, auto v, auto t) {
    auto a = -k * x - 0.3 * v;
    return std::tuple{x + 0.05 * v, v + 0.05 * a, t + 0.05};
  })(x0, 0.0 * x0 + 0.2, 0.0 * x0);
  return x * x + v;
};

// A while loop inside a scan (test_vjp_loops.cpp, test_vjp_jit.cpp): each
// step multiplies c + x by w until it reaches 4, a count per step; reverse
// mode recomputes the loop in the backward pass.
inline const auto while_in_scan = [](auto w, auto xs) {
  auto [c, ys] = dyn::scan(
      [&](auto c, auto x) {
        auto r = dyn::while_loop([](auto v) { return v < 4.0; })([&](auto v) { return v * w; })(c + x);
        return std::tuple{r * 0.1, r};
      },
      1.0, xs);
  return dyn::sum(ys) + c;
};

// sin(x) y for x > 0, x^3 otherwise: the branches keep different residuals.
inline const auto branchy = [](auto x, auto y) {
  return dyn::cond(x > 0.0, [&](auto v) { return dyn::sin(v) * y; }, [&](auto v) { return v * v * v; })(x);
};

}  // namespace transform_test
