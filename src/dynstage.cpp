// The one translation unit that compiles dynstage's non-template definitions
// (core rules, eager kernels, printer, symbolic dimensions) and the LLVM
// backend. Meson builds it once into the library behind dependency('dynstage');
// without Meson, compile it (or define DYNSTAGE_IMPLEMENTATION in one of your
// own files before including <dynstage/dynstage.hpp>) and link LLVM 19.
#define DYNSTAGE_IMPLEMENTATION
#include <dynstage/dynstage.hpp>
