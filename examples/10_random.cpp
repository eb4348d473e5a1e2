// Lesson 10: random numbers: counter based, the same bits eager and jit.
//
// dyn::random is JAX's threefry2x32: a key is two u32 words, split() makes
// independent keys, and every draw is a pure function of (key, shape), so a
// compiled kernel draws exactly the numbers the eager code draws, on any
// number of threads. Estimating pi by throwing darts:
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <numbers>

int main() {
  const dyn::Array<std::uint32_t> key = dyn::random::key(2026);
  auto [kx, ky] = dyn::random::split(key);
  std::cout << "key " << key << " splits into " << kx << " and " << ky << "\n";
  std::cout << "uniform: " << dyn::random::uniform<double>(kx, {4}) << "\n";
  std::cout << "normal:  " << dyn::random::normal<float>(ky, {4}) << "\n";
  std::cout << "randint: " << dyn::random::randint<std::int32_t>(key, {8}, 0, 6) << "\n\n";

  auto darts = [](auto k) {
    auto [k1, k2] = dyn::random::split(k);
    auto x = dyn::random::uniform<double>(k1, {2'000'000});
    auto y = dyn::random::uniform<double>(k2, {2'000'000});
    return 4.0 * dyn::mean(dyn::astype<double>(x * x + y * y <= 1.0));
  };
  const double pi_eager = dyn::eager(darts)(key)();
  const double pi_jit = dyn::jit(darts)(key)();
  std::printf("pi ~ %.6f from 2e6 darts (error %.1e); eager and jit agree bitwise: %s\n", pi_jit,
              std::abs(pi_jit - std::numbers::pi), pi_eager == pi_jit ? "yes" : "NO");
  return pi_eager == pi_jit && std::abs(pi_jit - std::numbers::pi) < 5e-3 ? 0 : 1;
}
