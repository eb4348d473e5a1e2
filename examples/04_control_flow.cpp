// Lesson 4: loops and conditionals, with sizes that change.
//
// dyn::for_loop, dyn::while_loop and dyn::cond trace their bodies ONCE into
// nested jaxprs (the bind algorithm of JAX and Catalyst): a loop of a
// million iterations is one loop in the compiled kernel, not a million
// unrolled operations. Carried arrays may change size from one iteration to
// the next (preserve_dimensions = false); the two branches of a cond may
// return arrays of different sizes.
#include <dynstage/dynstage.hpp>

#include <cstdint>
#include <iostream>

int main() {
  // Newton's method for sqrt(a), elementwise, 30 fixed iterations.
  auto newton = [](auto a) {
    return dyn::for_loop(0, 30, 1)([&](auto, auto x) { return 0.5 * (x + a / x); })(dyn::ones_like(a));
  };
  auto jn = dyn::jit(newton, dyn::polymorphic_shapes{"(n,)"});
  const dyn::Array<double> a({4}, {2, 9, 10, 1e6});
  std::cout << "sqrt by for_loop: " << jn(a) << "\n" << jn.jaxpr(a) << "\n\n";

  // A while loop whose carried array doubles in length until it is longer
  // than 100: the result's length is decided inside the kernel.
  auto grow = [](auto x) {
    return dyn::while_loop([](auto v) { return dyn::dim_value(v.shape(0)) <= 100; }, {.preserve_dimensions = false})(
        [](auto v) { return dyn::concatenate({v, v + 1.0}, 0); })(x);
  };
  auto jg = dyn::jit(grow, dyn::polymorphic_shapes{"(n,)"});
  for (std::int64_t n : {1, 3, 60}) {
    const dyn::Array<double> r = jg(dyn::zeros<double>({n}));
    std::cout << "while_loop from length " << n << ": length " << r.shape()[0] << ", last element " << r(r.size() - 1)
              << "\n";
  }
  std::cout << "one kernel for all: " << jg.stats().compiles << " compile\n\n";

  // cond: both branches are traced; the taken one runs. Here they return
  // different sizes (the whole array, or its first half).
  auto halve_if = [](auto p, auto x) {
    const dyn::Dim n = x.shape(0);
    return dyn::cond(
        p, [](auto v) { return v; }, [&](auto v) { return dyn::dynamic_slice(v, {0}, {dyn::floordiv(n, 2)}); })(x);
  };
  auto jh = dyn::jit(halve_if, dyn::polymorphic_shapes{"", "(n,)"});
  const dyn::Array<double> x = dyn::arange<double>(8);
  std::cout << "cond(true):  " << jh(true, x) << "\ncond(false): " << jh(false, x) << "\n";

  const bool ok = std::abs(jn(a)(1) - 3.0) < 1e-12 && jg(dyn::zeros<double>({3})).shape()[0] == 192 &&
                  jh(false, x).shape()[0] == 4 && jh(true, x).shape()[0] == 8 && jh.stats().compiles == 1;
  return ok ? 0 : 1;
}
