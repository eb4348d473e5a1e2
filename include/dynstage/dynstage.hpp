// dynstage: everything, the LLVM backend (dyn::jit) included.
//
// dynstage's big non-template definitions (rules, eager kernels, printer,
// symbolic engine, and the LLVM backend) are compiled once per program: Meson
// users get them from dependency('dynstage') (src/dynstage.cpp); without
// Meson, exactly one translation unit defines DYNSTAGE_IMPLEMENTATION before
// including this header.
#pragma once

#include "core.hpp"
#include "jit/jit.hpp"
#include "jit/export.hpp"
#include "runtime/threads.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include "jit/cache.hpp"
#include "jit/call.hpp"
#include "llvm/backend_impl.hpp"
// dyn::export_aot: its definitions. (Users include <dynstage/jit/export.hpp>
// for the declarations: it is the one public header outside this umbrella.)
#include "jit/export.hpp"
#include "llvm/aot.hpp"
#endif
