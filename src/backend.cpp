// The one translation unit that compiles dynstage's LLVM backend (see
// include/dynstage/llvm/backend_impl.hpp). Meson puts it in dynstage_dep's
// sources; without Meson, compile it (or define DYNSTAGE_IMPLEMENTATION in
// one of your own files) and link against LLVM 19.
#define DYNSTAGE_IMPLEMENTATION
#include <dynstage/llvm/backend_impl.hpp>
