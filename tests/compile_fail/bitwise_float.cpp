// Must NOT compile: a bit operation of a floating-point array (API.md section
// 13: "compile-time errors where the type system can see them"). The
// operators & | ^ ~ << >> and population_count, clz are constrained on
// detail::NotFloatingPoint, which the diagnostics name. Checked by run.sh,
// which also builds this file with -DDYNSTAGE_COMPILE_FAIL_CONTROL.
#include <dynstage/core.hpp>

int main() {
  auto f = [](dyn::Tracer<float> x, dyn::Tracer<std::uint32_t> k) {
    auto y = k << 3;
#ifndef DYNSTAGE_COMPILE_FAIL_CONTROL
    auto z = x >> 1;
    (void)z;
#endif
    (void)x;
    return y;
  };
  (void)f;
}
