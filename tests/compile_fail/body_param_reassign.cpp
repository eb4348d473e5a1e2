// Must NOT compile (issue 25, item 5): inside a traced function, a for_loop
// whose initial value is a concrete array, with a body that reassigns its
// parameter with a traced value. The combinator instantiates the body with a
// concrete dyn::Array to learn from the result type whether it stages, so the
// parameter is a dyn::Array and `a = a + x` assigns a tracer to it: the
// static_assert in dyn::Array::operator=(const Tracer&) names the two ways out
// (a fresh name, or a traced initial value), which
// tests/control/test_body_params.cpp runs.
#include <dynstage/core.hpp>

int main() {
  auto f = [](auto x) {
    auto acc = dyn::zeros<double>({3});
    return dyn::for_loop(0, 4, 1)([&](auto, auto a) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
      a = a + x;
      return a;
#else
      auto b = a + x;
      return b;
#endif
    })(acc);
  };
  (void)dyn::make_jaxpr(f)(dyn::ones<double>({3}));
}
