// Lesson 16: differentiating a simulation that runs until an event, with
// dyn::grad through dyn::while_loop.
//
// A ball is thrown at 45 degrees with air drag and stepped (dt = 0.01 s)
// while it is above the ground: how many steps run depends on the launch
// speed, so the loop is a while_loop, not a for_loop. The landing point
// (interpolated between the last two positions) is a smooth function of the
// speed, and dyn::grad differentiates it in reverse mode: the forward pass
// counts the steps (running only what the predicate needs), runs them again
// as a scan that keeps each step's values in buffers whose length is that
// count (a dynamic dimension), and the backward pass runs the steps in
// reverse (docs/transformations.md, "Reverse mode through control flow").
// JAX refuses reverse mode through while_loop.
//
// Newton's method on the speed then finds the throw that lands at 20 m, with
// one jitted kernel for every speed (the step count is a runtime value).
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <tuple>

int main() {
  const double angle = 0.25 * 3.141592653589793, drag = 0.05, g = 9.81, dt = 0.01, target = 20.0;
  auto landing = [&](auto speed) {
    auto vx0 = speed * std::cos(angle), vy0 = speed * std::sin(angle);
    auto zero = 0.0 * speed;
    // Carries: position, velocity, and the previous position.
    auto [x, y, vx, vy, px, py] =
        dyn::while_loop([](auto, auto y, auto, auto, auto, auto) { return y >= 0.0; })(
            [&](auto x, auto y, auto vx, auto vy, auto, auto) {
              auto v = dyn::sqrt(vx * vx + vy * vy);
              return std::tuple{x + dt * vx, y + dt * vy, vx - dt * drag * v * vx, vy - dt * (g + drag * v * vy), x, y};
            })(zero, zero, vx0, vy0, zero, zero);
    return px + (x - px) * py / (py - y);  // where the segment crosses y = 0
  };

  // The gradient program: a while loop that counts, a scan that keeps the
  // steps (length=None: the count), a reversed scan.
  std::cout << dyn::make_jaxpr(dyn::grad(landing))(15.0) << "\n";

  auto step = dyn::jit(dyn::value_and_grad(landing));
  const double h = 1e-6, s0 = 15.0;
  const auto [r0, d0] = step(s0);
  const double fd = (landing(s0 + h)() - landing(s0 - h)()) / (2 * h);
  std::printf("speed %.1f m/s lands at %.4f m; d landing / d speed = %.6f (central differences %.6f)\n", s0, r0(),
              d0(), fd);
  double s = s0;
  for (int it = 0; it < 6; ++it) {
    const auto [r, d] = step(s);
    std::printf("newton %d: speed %.6f m/s lands at %.6f m\n", it, s, r());
    s -= (r() - target) / d();
  }
  const double reached = landing(s)();
  std::printf("speed %.6f m/s lands at %.6f m (target %.1f); one kernel for every step count: %lld compile(s)\n", s,
              reached, target, static_cast<long long>(step.stats().compiles));
  const bool ok = std::abs(d0() - fd) < 1e-6 * std::abs(fd) && std::abs(reached - target) < 1e-9;
  return ok ? 0 : 1;
}
