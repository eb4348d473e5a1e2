// The one translation unit that compiles dynstage core's non-template
// definitions (rules, eager kernels, printer, symbolic dimensions), for
// programs that do not use dyn::jit: no LLVM. Meson builds it once into the
// library behind dependency('dynstage-core'). A program links this or
// src/dynstage.cpp, never both (dynstage.cpp contains these definitions too).
#define DYNSTAGE_IMPLEMENTATION
#include <dynstage/core.hpp>
