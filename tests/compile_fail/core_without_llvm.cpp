// Must compile with only dynstage's include directory and Boost on the include
// path: <dynstage/core.hpp> (tracing, make_jaxpr, eager) needs no LLVM headers
// (API.md, top). Checked by run.sh in "pass" mode.
#if __has_include(<llvm/Config/llvm-config.h>)
#error "test setup error: LLVM headers are on the include path, so this test would prove nothing"
#endif

#include <dynstage/core.hpp>

int main() {
  auto f = [](auto x, auto y) { return x * y + 1.0; };
  dyn::Array<double> a({3}, {1.0, 2.0, 3.0});
  auto eager = f(a, a);
  auto jaxpr = dyn::make_jaxpr(f)(a, a);
  (void)eager;
  (void)jaxpr;
}
