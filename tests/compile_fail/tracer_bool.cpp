// Must NOT compile: branching on a traced value. A Tracer has no value while
// staging, so its bool conversion is a compile-time error whose message names
// TracerBoolConversionError (API.md section 4). Checked by run.sh, which also
// builds this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL to prove that the
// offending line, and only it, is what fails.
#include <dynstage/core.hpp>

int main() {
  auto f = [](dyn::Tracer<double> x) {
    auto y = x + 1.0;
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    if (x > 0.0) return y;
#endif
    return y;
  };
  (void)f;
}
