// Must NOT compile: floor and % of a complex array (issue 24): the
// static_asserts of detail::un and detail::arith name the rule. Checked by
// run.sh, which also builds this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL.
#include <dynstage/core.hpp>

#include <complex>

int main() {
  auto f = [](dyn::Tracer<std::complex<double>> x) {
    auto r = dyn::real(x) + dyn::abs(x);
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    auto a = dyn::floor(x);
    auto b = x % 2.0;
    (void)a;
    (void)b;
#endif
    return r;
  };
  (void)f;
}
