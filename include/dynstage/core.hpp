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
// Dimensions: Dim and the symbolic engine, layer by layer (shape/dim.hpp's
// comment), up to the top one: the implementation TU gets every definition
// of the engine from here.
#include "shape/dim.hpp"
#include "shape/symbolic.hpp"
#include "shape/symbolic_arith.hpp"
#include "shape/symbolic_decision.hpp"
#include "shape/symbolic_spec.hpp"
#include "shape/symbolic_solve.hpp"
// Values: element types and concrete arrays.
#include "array/dtype.hpp"
#include "array/buffer.hpp"
#include "array/array.hpp"
// The program: primitives, jaxprs, their rules, printing and checking.
#include "ir/prims.hpp"
#include "ir/jaxpr.hpp"
#include "ir/index_map.hpp"
#include "ir/nested_types.hpp"
#include "ir/rules.hpp"
#include "ir/debug_format.hpp"
#include "ir/shape_rules.hpp"
#include "ir/pretty.hpp"
#include "ir/print.hpp"
#include "ir/check.hpp"
#include "ir/check_control.hpp"
// Tracing: from C++ functions to jaxprs.
#include "trace/trace.hpp"
#include "trace/trace_dims.hpp"
#include "trace/tracer.hpp"
#include "trace/numpy.hpp"
#include "trace/numpy_shape.hpp"
#include "trace/numpy_index.hpp"
#include "trace/numpy_layout.hpp"
#include "trace/numpy_math.hpp"
#include "trace/ops.hpp"
#include "trace/ops_shape.hpp"
#include "trace/ops_index.hpp"
#include "trace/ops_sort.hpp"
#include "trace/ops_layout.hpp"
#include "trace/ops_math.hpp"
#include "trace/debug.hpp"
#include "trace/collectives.hpp"
#include "trace/einsum.hpp"
#include "trace/fft.hpp"
#include "trace/pytree.hpp"
#include "trace/api.hpp"
#include "trace/control.hpp"
#include "trace/control_nested.hpp"
#include "trace/control_bind.hpp"
#include "trace/scan.hpp"
#include "trace/random.hpp"
// Running: the eager kernels and the interpreter; the ranks (MPI: its header
// in the implementation TU only).
#include "runtime/distributed.hpp"
#include "runtime/collective_impl.hpp"
#include "eager/debug_print.hpp"
#include "eager/kernel_util.hpp"
#include "eager/kernels_arg.hpp"
#include "eager/kernels_cumulative.hpp"
#include "eager/kernels_fft.hpp"
#include "eager/kernels_index.hpp"
#include "eager/kernels_layout.hpp"
#include "eager/kernels_math.hpp"
#include "eager/kernels_sort.hpp"
#include "eager/kernels.hpp"
#include "eager/interpret.hpp"
#include "transform/jvp_rules.hpp"
#include "transform/jvp_complex.hpp"
#include "transform/jvp.hpp"
#include "transform/jvp_control.hpp"
#include "transform/vjp.hpp"
#include "transform/scan_reverse.hpp"
#include "transform/control_reverse.hpp"
#include "transform/vmap.hpp"
#include "transform/shard_map_eager.hpp"
