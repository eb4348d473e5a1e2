// Must NOT compile: a dyn::scan body that returns the carry alone instead of
// std::tuple{carry, y} (lax.scan's f returns a pair; here the structure is
// static, so it is a compile-time error naming it). Checked by run.sh, which
// also builds this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL to prove that
// the offending line, and only it, is what fails.
#include <dynstage/core.hpp>

#include <tuple>

int main() {
  auto f = [](dyn::Array<double> xs) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    return dyn::scan([](auto c, auto x) { return c + x; }, 0.0, xs);
#else
    return dyn::scan([](auto c, auto x) { return std::tuple{c + x, x}; }, 0.0, xs);
#endif
  };
  (void)f;
}
