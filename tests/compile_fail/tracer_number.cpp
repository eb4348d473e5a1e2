// Must NOT compile: reading a C++ number out of a traced value. The conversion
// is a compile-time error whose message names ConcretizationTypeError
// (API.md section 4). Checked by run.sh, which also builds this file with
// -DDYNSTAGE_COMPILE_FAIL_CONTROL to prove that the offending line, and only
// it, is what fails.
#include <dynstage/core.hpp>

int main() {
  auto f = [](dyn::Tracer<double> x) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    double v = x;
    (void)v;
#endif
    return x + 1.0;
  };
  (void)f;
}
