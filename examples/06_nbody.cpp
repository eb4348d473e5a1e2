// Lesson 6: n-body gravity, all pairs, leapfrog.
//
// The accelerations are written as NumPy would: the (n, n, 3) array of
// pairwise differences by broadcasting, the softened inverse cubes, a
// weighted sum over the second body. Eagerly each of those is an n*n array
// in memory; compiled, the (n, n) intermediates fuse into the reduction and
// never exist. The time steps are a for_loop carrying positions and velocities.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <tuple>

#include "examples_common.hpp"

namespace {

constexpr double kEps2 = 1e-2;  // softening: the force of a point mass at distance sqrt(r^2 + eps^2)

// a_i = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^(3/2)
auto accelerations(const auto& pos, const auto& mass) {
  auto d = dyn::expand_dims(pos, 0) - dyn::expand_dims(pos, 1);  // d[i, j] = x_j - x_i
  auto r2 = dyn::sum(d * d, {2}) + kEps2;
  auto w = dyn::rsqrt(r2) / r2 * dyn::expand_dims(mass, 0);
  return dyn::sum(d * dyn::expand_dims(w, 2), {1});
}

// Kinetic plus (softened) potential energy; the i == j terms are removed.
auto energy(const auto& pos, const auto& vel, const auto& mass) {
  auto d = dyn::expand_dims(pos, 0) - dyn::expand_dims(pos, 1);
  auto mm = dyn::expand_dims(mass, 0) * dyn::expand_dims(mass, 1);
  auto pairs = dyn::sum(mm * dyn::rsqrt(dyn::sum(d * d, {2}) + kEps2)) - dyn::sum(mass * mass) / std::sqrt(kEps2);
  return 0.5 * dyn::sum(mass * dyn::sum(vel * vel, {1})) - 0.5 * pairs;
}

}  // namespace

int main() {
  auto simulate = [](auto pos0, auto vel0, auto mass, auto steps) {
    const double dt = 1e-3;
    return dyn::for_loop(0, steps, 1)([&](auto, auto pos, auto vel) {
      auto v_half = vel + 0.5 * dt * accelerations(pos, mass);  // kick, drift, kick
      auto p = pos + dt * v_half;
      return std::tuple{p, v_half + 0.5 * dt * accelerations(p, mass)};
    })(pos0, vel0);
  };

  const std::int64_t n = 512, steps = 10;
  auto [k1, k2] = dyn::random::split(dyn::random::key(42));
  const dyn::Array<double> pos = dyn::random::normal<double>(k1, {n, 3});
  const dyn::Array<double> vel = 0.1 * dyn::random::normal<double>(k2, {n, 3});
  const dyn::Array<double> mass = dyn::full<double>({n}, 1.0 / static_cast<double>(n));

  auto jsim = dyn::jit(simulate, dyn::polymorphic_shapes{"(n, 3)", "(n, 3)", "(n,)", ""});
  std::tuple<dyn::Array<double>, dyn::Array<double>> re, rj;
  const double eager_ms = lesson::median_ms(3, [&] { re = dyn::eager(simulate)(pos, vel, mass, steps); });
  const double jit_ms = lesson::median_ms(5, [&] { rj = jsim(pos, vel, mass, steps); });

  const double e0 = dyn::eager([](auto p, auto v, auto m) { return energy(p, v, m); })(pos, vel, mass)();
  const auto& [p1, v1] = rj;
  const double e1 = dyn::eager([](auto p, auto v, auto m) { return energy(p, v, m); })(p1, v1, mass)();
  std::printf("%lld bodies, %lld leapfrog steps: energy %.9f -> %.9f (relative drift %.1e)\n",
              static_cast<long long>(n), static_cast<long long>(steps), e0, e1, std::abs(e1 - e0) / std::abs(e0));
  std::printf("eager %.1f ms, jit %.2f ms: %.0fx\n", eager_ms, jit_ms, eager_ms / jit_ms);
  const bool ok = dyn::allclose(std::get<0>(re), p1, 1e-10) && dyn::allclose(std::get<1>(re), v1, 1e-10) &&
                  std::abs(e1 - e0) < 1e-4 * std::abs(e0);
  return ok ? 0 : 1;
}
