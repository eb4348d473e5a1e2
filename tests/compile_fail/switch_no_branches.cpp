// Must NOT compile: dyn::switch_ without branches (lax.switch raises
// `ValueError: Empty branch sequence`; here the branch count is static, so
// it is a compile-time error naming it). Checked by run.sh, which also builds
// this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL to prove that the offending
// line, and only it, is what fails.
#include <dynstage/core.hpp>

int main() {
  auto f = [](dyn::Tracer<double> x, dyn::Tracer<int> i) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    return dyn::switch_(i)(x);
#else
    return dyn::switch_(i, [](auto a) { return a; })(x);
#endif
  };
  (void)f;
}
