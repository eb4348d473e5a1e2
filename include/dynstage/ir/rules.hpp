// dynstage: the per-primitive rule tables, declared.
//
// Two rules per primitive, each found by primitive through one registration
// per primitive (prims.hpp: visit_prim calls the overload for PrimTag<P>; a
// primitive without one fails to compile):
//   abstract_eval  (shape_rules.hpp, shape_rule): output types from input
//                  types and params; it is the one place that checks operand
//                  dtypes, ranks and shapes, for tracing and eager execution
//                  alike.
//   impl           (eager/kernels.hpp, impl_rule; an elementwise primitive's is its
//                  scalar function): the eager kernel, computing concrete
//                  outputs.
// The LLVM lowering (llvm/) is a `switch` over Prim with no `default:`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../array/array.hpp"
#include "../shape/dim.hpp"
#include "prims.hpp"

namespace dyn::detail {

// The abstract value of an operand: what a shape rule may look at.
struct Aval {
  DType dtype = DType::f64;
  Shape shape;
  bool weak = false;
  // For an i64[] operand that supplies a dynamic dimension (kDynamicDim in a
  // shape parameter): its value as a Dim, when known (always, in eager mode).
  std::optional<Dim> dim_value;
  int rank() const { return static_cast<int>(shape.size()); }
};

inline std::string aval_str(const Aval& a) {
  std::string s = std::string(dtype_name(a.dtype)) + "[";
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    if (i) s += ",";
    s += a.shape[i].to_string();
  }
  return s + "]";
}

inline Aval aval_of(const AnyArray& a, bool weak = false) {
  Aval r{a.dtype(), to_shape(a.shape()), weak, std::nullopt};
  if (a.rank() == 0 && is_index_dtype(a.dtype())) {
    std::int64_t v = a.dtype() == DType::i64 ? *static_cast<const std::int64_t*>(a.data())
                                             : *static_cast<const std::int32_t*>(a.data());
    r.dim_value = Dim(v);
  }
  return r;
}

// Output avals of `prim` applied to operands of types `in`. Throws
// ShapeError / TypeError / IndexError naming the primitive and the shapes.
std::vector<Aval> abstract_eval(Prim prim, const std::vector<Aval>& in, const Params& params);

// Both are defined once per program, under DYNSTAGE_IMPLEMENTATION
// (shape_rules.hpp, eager/kernels.hpp): they are large and every jit call reaches them.

// Eager kernel: the outputs of `prim` on concrete operands. The operands
// have already passed abstract_eval.
std::vector<AnyArray> impl(Prim prim, const std::vector<AnyArray>& in, const Params& params);

// The two rules of the control-flow primitives (Kind::control), defined with
// the bind algorithm in trace/control_bind.hpp: output types from the bodies' types (an
// implicit output dimension is a fresh dimension variable of the current
// trace), and the interpreter that runs the bodies.
std::vector<Aval> control_abstract_eval(Prim prim, const std::vector<Aval>& in, const Params& params);
std::vector<AnyArray> control_impl(Prim prim, const std::vector<AnyArray>& in, const Params& params);

}  // namespace dyn::detail
