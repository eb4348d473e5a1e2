// The consumer of tests/subproject: through dependency('dynstage') alone it
// stages, runs eagerly and JIT-compiles one lambda, so the include path, Boost,
// LLVM 19 and dynstage's backend library all reach a parent project.
// Exit status 0 means both results were right.
#include <dynstage/dynstage.hpp>

#include <iostream>

int main() {
  auto f = [](auto x) { return x * 2.0 + 1.0; };
  auto a = dyn::array({1.0, 2.0, 3.0});
  auto expected = dyn::array({3.0, 5.0, 7.0});
  std::cout << dyn::make_jaxpr(f)(a) << '\n';
  auto eager = f(a);
  auto jitted = dyn::jit(f)(a);
  std::cout << "eager: " << eager << "\njit:   " << jitted << '\n';
  return dyn::allclose(eager, expected) && dyn::allclose(jitted, expected) ? 0 : 1;
}
