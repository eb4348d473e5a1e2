// Lesson 5: a stencil: the heat equation on a square plate.
//
// u_t = alpha * (u_xx + u_yy), explicit Euler on an n x n grid, the border
// held at 0. One step is five shifted views of the grid (dyn::slice), a few
// multiply-adds and a dynamic_update_slice that writes the interior back:
// eagerly that is ten passes over memory and ten new arrays per step; under
// dyn::jit the whole for_loop is one kernel whose step is one fused loop
// nest, updating the carried grid in place.
#include <dynstage/dynstage.hpp>

#include <cstdio>
#include <iostream>

#include "examples_common.hpp"

namespace {

constexpr double kAlpha = 0.2;  // dt * kappa / h^2; explicit Euler is stable below 0.25

}  // namespace

int main() {
  auto simulate = [](auto u0, auto steps) {
    return dyn::for_loop(0, steps, 1)([](auto, auto u) {
      auto n = u.shape(0);  // an integer for an Array, a dyn::Dim for a Tracer
      auto centre = dyn::slice(u, {1, 1}, {n - 1, n - 1});
      auto lap = dyn::slice(u, {0, 1}, {n - 2, n - 1}) + dyn::slice(u, {2, 1}, {n, n - 1}) +
                 dyn::slice(u, {1, 0}, {n - 1, n - 2}) + dyn::slice(u, {1, 2}, {n - 1, n}) - 4.0 * centre;
      return dyn::dynamic_update_slice(u, centre + kAlpha * lap, {1, 1});
    })(u0);
  };

  // A hot square in the middle of a cold plate.
  const std::int64_t n = 256, steps = 200;
  const std::int64_t border = n / 2 - 16;
  const dyn::Array<double> u0 = dyn::pad(dyn::full<double>({32, 32}, 100.0), {{border, border, 0}, {border, border, 0}}, 0.0);

  auto jsim = dyn::jit(simulate, dyn::polymorphic_shapes{"(n, n)", ""},
                       dyn::constraints{"n >= 3"});  // so that the slices [1, n - 1) are provably in range
  dyn::Array<double> ue, uj;
  const double eager_ms = lesson::median_ms(3, [&] { ue = dyn::eager(simulate)(u0, steps); });
  const double jit_ms = lesson::median_ms(5, [&] { uj = jsim(u0, steps); });

  // A coarse picture of the temperature after the last step.
  const char* shades = " .:-=+*#%@";
  for (std::int64_t i = 0; i < n; i += n / 16) {
    for (std::int64_t j = 0; j < n; j += n / 32) {
      const double t = uj(i + n / 32, j + n / 64);
      std::putchar(shades[std::min<int>(9, static_cast<int>(t / 4.0))]);
    }
    std::putchar('\n');
  }
  std::printf("%lld x %lld grid, %lld steps: centre %.4f, total heat %.1f (initially %.1f; heat leaves only through the border)\n",
              static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(steps), uj(n / 2, n / 2),
              dyn::sum(uj)(), dyn::sum(u0)());
  std::printf("eager %.1f ms, jit %.2f ms: %.0fx\n", eager_ms, jit_ms, eager_ms / jit_ms);
  return dyn::allclose(ue, uj, 1e-12) && jsim.stats().compiles == 1 ? 0 : 1;
}
