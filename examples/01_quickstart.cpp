// Lesson 1: what dynstage is for, in ten seconds.
//
// One generic C++ lambda is
//   - traced into a typed program (a jaxpr, JAX's IR, printed in JAX's text),
//   - run eagerly on dyn::Array (every operation makes a new array: the
//     reference, and the baseline), and
//   - compiled by dyn::jit into one fused, vectorised, multithreaded LLVM
//     kernel, cached by the arguments' dtypes and shapes.
// This program prints the jaxpr, times both ways on a realistic size and
// prints the speed-up and what compiling cost.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "examples_common.hpp"


int main() {
  // A damped radial wave, summed: seven elementwise operations and a reduction.
  auto f = [](auto x, auto y) {
    auto r = dyn::sqrt(x * x + y * y);
    return dyn::sum(dyn::exp(-r) * dyn::cos(4.0 * r));
  };

  std::cout << "dynstage quickstart: one C++ lambda, traced, run eagerly, and compiled by LLVM.\n\n";
  dyn::Array<double> small_x({3}, {0.0, 0.5, 1.0}), small_y({3}, {1.0, 2.0, 3.0});
  std::cout << "The program dyn::make_jaxpr(f) traced (JAX's jaxpr text):\n"
            << dyn::make_jaxpr(f)(small_x, small_y) << "\n\n";

  const std::int64_t n = 4'000'000;
  const dyn::Array<double> x = dyn::linspace<double>(-3.0, 3.0, n);
  const dyn::Array<double> y = dyn::linspace<double>(2.0, -1.0, n);

  double eager_sum = 0.0;
  const double eager_ms = lesson::median_ms(5, [&] { eager_sum = dyn::eager(f)(x, y)(); });

  auto jf = dyn::jit(f);
  double jit_sum = 0.0;
  const double first_ms = lesson::median_ms(1, [&] { jit_sum = jf(x, y)(); });  // traces and compiles
  const double jit_ms = lesson::median_ms(11, [&] { jit_sum = jf(x, y)(); });   // the cached kernel
  const dyn::JitStats s = jf.stats();

  const double rel = std::abs(jit_sum - eager_sum) / std::abs(eager_sum);
  std::printf("f on two arrays of %lld doubles (%d threads):\n", static_cast<long long>(n), dyn::num_threads());
  std::printf("  eager, one pass per operation    %8.2f ms   sum = %.12g\n", eager_ms, eager_sum);
  std::printf("  dyn::jit, first call             %8.2f ms   (%zu trace, %zu compile: %.1f ms)\n", first_ms,
              s.traces, s.compiles, 1e3 * s.compile_seconds);
  std::printf("  dyn::jit, later calls            %8.2f ms   sum = %.12g\n", jit_ms, jit_sum);
  std::printf("  speed-up of jit over eager       %8.1fx\n", eager_ms / jit_ms);
  std::printf("  |jit - eager| / |eager|          %8.1e\n\n", rel);

  std::cout << "Next: the numbered lessons in examples/ (02 jit and the cache, 03 shapes, 04 control flow,\n"
               "05 heat equation, 06 n-body, 07 Mandelbrot, 08 softmax and an MLP, 09 indexing, 10 random\n"
               "numbers, ...), docs/architecture.md for how it works, docs/benchmarks.md for the speed.\n";
  return rel < 1e-9 && s.compiles == 1 ? 0 : 1;
}
