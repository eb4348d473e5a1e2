// Lesson 7: the Mandelbrot set, an iteration with a per-pixel exit.
//
// z <- z^2 + c for every pixel c of a grid, counting the iterations while
// |z| <= 2. Points that escaped are frozen with dyn::where, so every pixel
// does the same work and the loop body is one fused, vectorised pass.
#include <dynstage/dynstage.hpp>

#include <cstdint>
#include <cstdio>
#include <tuple>

#include "examples_common.hpp"

int main() {
  auto mandelbrot = [](auto cr, auto ci, auto iterations) {
    auto zero = dyn::zeros_like(cr);
    auto [zr, zi, count] = dyn::for_loop(0, iterations, 1)([&](auto, auto x, auto y, auto k) {
      auto x2 = x * x, y2 = y * y;
      auto inside = x2 + y2 <= 4.0;
      return std::tuple{dyn::where(inside, x2 - y2 + cr, x), dyn::where(inside, 2.0 * x * y + ci, y),
                        k + dyn::astype<std::int32_t>(inside)};
    })(zero, zero, dyn::zeros<std::int32_t>({cr.shape(0), cr.shape(1)}));
    return count;
  };
  // The plane [-2.2, 0.8] x [-1.2, 1.2] sampled on h x w points.
  auto grid = [](std::int64_t h, std::int64_t w) {
    auto re = dyn::broadcast_to(dyn::reshape(dyn::linspace<double>(-2.2, 0.8, w), {1, w}), {h, w});
    auto im = dyn::broadcast_to(dyn::reshape(dyn::linspace<double>(-1.2, 1.2, h), {h, 1}), {h, w});
    return std::pair{re, im};
  };
  auto jm = dyn::jit(mandelbrot, dyn::polymorphic_shapes{"(h, w)", "(h, w)", ""});

  const auto [sr, si] = grid(24, 64);
  const dyn::Array<std::int32_t> small = jm(sr, si, 64);
  const char* shades = " .:-=+*#%@";
  for (std::int64_t i = 0; i < 24; ++i) {
    for (std::int64_t j = 0; j < 64; ++j) std::putchar(small(i, j) == 64 ? '@' : shades[small(i, j) * 9 / 64]);
    std::putchar('\n');
  }

  const auto [cr, ci] = grid(400, 400);
  dyn::Array<std::int32_t> ce, cj;
  const double eager_ms = lesson::median_ms(3, [&] { ce = dyn::eager(mandelbrot)(cr, ci, 64); });
  const double jit_ms = lesson::median_ms(5, [&] { cj = jm(cr, ci, 64); });
  std::printf("400 x 400 pixels, 64 iterations: %lld inside; eager %.1f ms, jit %.2f ms: %.0fx (%zu compile)\n",
              static_cast<long long>(dyn::sum(cj == 64)()), eager_ms, jit_ms, eager_ms / jit_ms,
              jm.stats().compiles);
  return dyn::array_equal(ce, cj) && jm.stats().compiles == 1 ? 0 : 1;
}
