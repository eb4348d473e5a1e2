// Lesson 14: fitting a model by gradient descent with dyn::grad.
//
// A small MLP, y = tanh(x w1 + b1) w2 + b2, learns y = sin(3x) on [-1, 1]
// from 256 samples. dyn::value_and_grad(loss, dyn::argnums<0, 1, 2, 3>{})
// gives the loss and its gradient with respect to the four parameters in one
// forward and one backward pass (reverse mode: the JVP of the loss,
// partially evaluated, then transposed; docs/transformations.md), and
// dyn::jit compiles that whole step into one kernel. The program that jit
// compiles is printed for a tiny model, then 2000 steps of plain gradient
// descent run, first eagerly for a few steps to compare.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <tuple>

#include "examples_common.hpp"

int main() {
  const std::int64_t n = 256, hidden = 32;
  auto k = dyn::random::split(dyn::random::key(0), 2);
  dyn::Array<double> w1 = dyn::random::normal<double>(k.at(0).get(), {1, hidden});
  dyn::Array<double> b1 = dyn::zeros<double>({hidden});
  dyn::Array<double> w2 = dyn::random::normal<double>(k.at(1).get(), {hidden, 1}) * (1.0 / std::sqrt(32.0));
  dyn::Array<double> b2 = dyn::zeros<double>({1});
  const dyn::Array<double> x = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, n), {n, 1});
  const dyn::Array<double> y = dyn::sin(x * 3.0);

  auto loss = [&](auto w1_, auto b1_, auto w2_, auto b2_) {
    auto pred = dyn::matmul(dyn::tanh(dyn::matmul(x, w1_) + b1_), w2_) + b2_;
    return dyn::mean(dyn::square(pred - y));
  };
  auto step = dyn::value_and_grad(loss, dyn::argnums<0, 1, 2, 3>{});
  auto jstep = dyn::jit(step);

  // The program jit compiles: forward pass, then backward pass (width 2).
  std::cout << dyn::make_jaxpr(step)(dyn::ones<double>({1, 2}), dyn::ones<double>({2}), dyn::ones<double>({2, 1}),
                                     dyn::ones<double>({1}))
            << "\n";

  const double lr = 0.1;
  auto update = [&](const auto& g) {
    w1 = w1 - lr * std::get<0>(g);
    b1 = b1 - lr * std::get<1>(g);
    w2 = w2 - lr * std::get<2>(g);
    b2 = b2 - lr * std::get<3>(g);
  };
  // A few eager steps and the same steps jitted give the same loss.
  const auto [l_eager, g_eager] = step(w1, b1, w2, b2);
  const auto [l_jit, g_jit] = jstep(w1, b1, w2, b2);
  std::printf("step 0: loss %.6f (eager) %.6f (jit)\n", l_eager(), l_jit());
  double first = l_jit(), last = first;
  const double ms = lesson::median_ms(1, [&] {
    for (int it = 1; it <= 2000; ++it) {
      const auto [l, g] = jstep(w1, b1, w2, b2);
      update(g);
      last = l();
      if (it % 500 == 0) std::printf("step %4d: loss %.6f\n", it, last);
    }
  });
  std::printf("2000 jitted steps in %.0f ms (one compile: %lld)\n", ms, static_cast<long long>(jstep.stats().compiles));
  const dyn::Array<double> fit = dyn::matmul(dyn::tanh(dyn::matmul(x, w1) + b1), w2) + b2;
  std::printf("max |fit - sin(3x)| = %.3f\n", dyn::max(dyn::abs(fit - y))());
  const bool same = std::abs(l_eager() - l_jit()) < 1e-12;
  return same && last < 0.1 * first ? 0 : 1;
}
