// A precompiled header for programs that use dynstage: parsing
// <dynstage/dynstage.hpp> is the larger part of compiling a file that calls
// dyn::jit, and a PCH pays it once per build instead of once per file
// (examples/meson.build: `cpp_pch`; docs/benchmarks.md has the figures).
#include <dynstage/dynstage.hpp>
