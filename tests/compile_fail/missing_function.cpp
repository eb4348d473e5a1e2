// A traced function whose body calls a function that does not exist: the
// user's error must be the only one (no second, confusing pytree
// static_assert about the void that g++ deduces for the broken body).
#include <dynstage/dynstage.hpp>

int main() {
  dyn::Array<double> x({3});
  auto f = [](auto a) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    return dyn::sinh_of(a) + 1.0;
#else
    return dyn::sin(a) + 1.0;
#endif
  };
  (void)dyn::make_jaxpr(f)(x);
  (void)dyn::eager(f)(x);
  (void)dyn::jit(f)(x);
  return 0;
}
