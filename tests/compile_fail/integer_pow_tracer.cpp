// Must NOT compile: integer_pow with a traced exponent. Its exponent is the
// primitive's parameter y, known when the program is traced (lax.integer_pow);
// the static_assert names the fix (dyn::pow). Checked by run.sh, which also
// builds this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL.
#include <dynstage/core.hpp>

int main() {
  auto f = [](dyn::Tracer<double> x, dyn::Tracer<std::int32_t> n) {
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    (void)dyn::integer_pow(x, n);
#endif
    (void)n;
    return dyn::integer_pow(x, 3);
  };
  (void)f;
}
