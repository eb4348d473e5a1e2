// dynstage core: arrays, tracing, make_jaxpr, eval_jaxpr and eager execution.
// No LLVM: including this costs no LLVM headers (API.md §1).
#pragma once

#include "errors.hpp"
#include "dtype.hpp"
#include "dim.hpp"
#include "array.hpp"
#include "prims.hpp"
#include "jaxpr.hpp"
#include "rules.hpp"
#include "shape_rules.hpp"
#include "eager.hpp"
#include "trace.hpp"
#include "numpy.hpp"
#include "tracer.hpp"
#include "ops.hpp"
#include "pytree.hpp"
#include "interpret.hpp"
#include "print.hpp"
#include "api.hpp"
