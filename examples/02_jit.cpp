// Lesson 2: compile once, call many times.
//
// dyn::jit traces the lambda once per abstract signature (dtypes and shapes
// of the arguments), compiles the jaxpr with LLVM into one fused loop, and
// caches the kernel: later calls with the same signature go straight to it.
// With dyn::polymorphic_shapes, one kernel serves every size.
//
// This file is built with <dynstage/dynstage.hpp> precompiled
// (examples/meson.build, `cpp_pch`), the cheap way to compile many files that
// call dyn::jit.
#include <dynstage/dynstage.hpp>

#include <iostream>

int main() {
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  auto jf = dyn::jit(f);

  dyn::Array<double> x({4}, {0.0, 0.5, 1.0, 1.5}), y({4}, {1, 2, 3, 4});
  dyn::Array<double> r = jf(x, y);  // traces, compiles, runs
  r = jf(x, y);                     // the cached kernel
  std::cout << "jit:   " << r << "\n";
  std::cout << "eager: " << dyn::eager(f)(x, y) << "\n";

  dyn::JitStats s = jf.stats();
  std::cout << "traces " << s.traces << ", compiles " << s.compiles << ", cache hits " << s.cache_hits << "\n";

  // One kernel for every n: the size is an implicit argument of the kernel.
  auto jp = dyn::jit(f, dyn::polymorphic_shapes{"(n,)", "(n,)"});
  std::cout << jp.jaxpr(x, y) << "\n";
  for (std::int64_t n : {3, 1000, 7}) {
    dyn::Array<double> a = dyn::arange<double>(n), b = dyn::ones<double>({n});
    if (!dyn::allclose(jp(a, b), dyn::eager(f)(a, b), 1e-14)) return 1;
  }
  std::cout << "polymorphic: " << jp.stats().compiles << " compile for 3 sizes\n";
  return dyn::allclose(r, dyn::eager(f)(x, y), 1e-14) && s.compiles == 1 && jp.stats().compiles == 1 ? 0 : 1;
}
