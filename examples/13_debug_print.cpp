// Lesson 13: printing inside traced and jitted code with dyn::debug_print.
//
// std::cout inside a traced function runs once, at trace time, and prints a
// tracer. dyn::debug_print (jax.debug.print) becomes part of the program: a
// debug_callback equation that prints the run-time values each time it
// runs, once per loop iteration, in program order, in eager and jit alike.
// Formats are {fmt}'s: {}, {:.3f}, {:>5}. docs/debugging.md.
#include <dynstage/dynstage.hpp>

#include <iostream>

int main() {
  // Newton's iteration for sqrt(a), elementwise, printing every step.
  auto newton = [](auto a, auto steps) {
    std::cout << "(std::cout runs when the function is traced or run eagerly: a is " << a << ")\n";
    return dyn::for_loop(0, steps, 1)([a](auto i, auto x) {
      auto next = (x + a / x) * 0.5;
      dyn::debug_print("step {}: x={:.6f} max change={:.2e}", i, next, dyn::max(dyn::abs(next - x)));
      return next;
    })(a);
  };
  dyn::Array<double> a({3}, {2.0, 9.0, 10.0});

  auto jf = dyn::jit(newton);
  std::cout << "--- jit, 4 steps\n";
  dyn::Array<double> r = jf(a, 4);
  std::cout << "result " << r << "\n";
  std::cout << "--- jit again, 2 steps (the cached kernel prints too)\n";
  jf(a, 2);

  // The print is an equation of the program, with no outputs.
  std::cout << "--- the jaxpr\n" << jf.jaxpr(a, 4) << "\n";

  // Eagerly (arrays in, no trace) the same lines are printed at once.
  std::cout << "--- eager, 2 steps\n";
  dyn::eager(newton)(a, 2);
  std::cout << "traces " << jf.stats().traces << ", compiles " << jf.stats().compiles << "\n";
}
