// dynstage core: arrays, tracing, make_jaxpr, eval_jaxpr and eager execution.
// No LLVM: including this costs no LLVM headers (API.md §1).
//
// The core's big non-template definitions are compiled once per program, in
// the one translation unit that defines DYNSTAGE_IMPLEMENTATION before
// including this header (src/core.cpp, behind dependency('dynstage-core')).
// Programs that use dyn::jit include <dynstage/dynstage.hpp> instead, whose
// implementation TU (src/dynstage.cpp) contains the core's definitions too.
#pragma once

#include "errors.hpp"
#include "dtype.hpp"
#include "dim.hpp"
// The symbolic layers (dim.hpp's comment), up to the top one: the
// implementation TU gets every definition of the engine from here.
#include "symbolic.hpp"
#include "symbolic_arith.hpp"
#include "symbolic_decision.hpp"
#include "symbolic_spec.hpp"
#include "symbolic_solve.hpp"
#include "buffer.hpp"
#include "array.hpp"
#include "prims.hpp"
#include "jaxpr.hpp"
#include "nested_types.hpp"
#include "rules.hpp"
#include "shape_rules.hpp"
#include "kernel_util.hpp"
#include "eager.hpp"
#include "trace.hpp"
#include "trace_dims.hpp"
#include "numpy.hpp"
#include "numpy_shape.hpp"
#include "tracer.hpp"
#include "ops.hpp"
#include "ops_shape.hpp"
#include "pytree.hpp"
#include "interpret.hpp"
#include "pretty.hpp"
#include "print.hpp"
#include "check.hpp"
#include "check_control.hpp"
#include "api.hpp"
#include "control.hpp"
#include "control_nested.hpp"
#include "control_bind.hpp"
