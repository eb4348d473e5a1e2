// Must NOT compile: an ordering comparison of complex tracers (issue 24:
// "ordering comparisons, floor, % or bit operations on complex values:
// compile-time errors where the types show it"). The static_assert in
// detail::cmp names the rule. Checked by run.sh, which also builds this file
// with -DDYNSTAGE_COMPILE_FAIL_CONTROL (== is defined on complex values).
#include <dynstage/core.hpp>

#include <complex>

int main() {
  auto f = [](dyn::Tracer<std::complex<float>> x, dyn::Tracer<std::complex<float>> y) {
    auto e = x == y;
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    auto l = x < y;
    (void)l;
#endif
    return e;
  };
  (void)f;
}
