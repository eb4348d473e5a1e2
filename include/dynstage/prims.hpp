// dynstage: the primitive table.
//
// DYN_PRIMITIVES is the single list of primitives. Each entry is
//   X(enum_name, "jaxpr name", Kind, ParamsType)
// and every rule table (shape/dtype rule, printer params, eager kernel, LLVM
// lowering) is a `switch` over Prim without `default:`, so a primitive that
// someone forgot is a compiler warning (-Wswitch) in every backend.
//
// Params are typed per primitive and held in the Params variant; a primitive
// without parameters uses NoParams. Shape-valued parameters hold kDynamicDim
// for a dimension supplied at run time as an extra i64[] operand (printed
// `None`, as Catalyst's `shape=(None,)`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "dtype.hpp"

namespace dyn {

struct Jaxpr;  // jaxpr.hpp; control-flow params hold their bodies

namespace detail {

inline constexpr std::int64_t kDynamicDim = INT64_MIN;

enum class Kind : std::uint8_t {
  unary,       // elementwise, one operand, same shape out
  binary,      // elementwise, two operands of equal shape
  compare,     // elementwise binary producing bool
  select,      // select_n(pred, case0, case1)
  convert,     // convert_element_type
  structural,  // broadcast, reshape, transpose, slices, iota, concatenate
  reduction,   // reduce_* over axes
  contraction, // dot_general
  control,     // for_loop, while_loop, cond: nested jaxprs (control.hpp)
};

struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};
struct ConvertParams {
  DType new_dtype;
  bool weak_type = false;
  friend bool operator==(const ConvertParams&, const ConvertParams&) = default;
};
struct RoundParams {
  int rounding_method = 1;  // 0: away from zero, 1: to nearest even (numpy's round)
  friend bool operator==(const RoundParams&, const RoundParams&) = default;
};
struct BroadcastInDimParams {
  std::vector<std::int64_t> shape;                 // kDynamicDim entries come from operands 1..
  std::vector<std::int64_t> broadcast_dimensions;  // operand axis i -> output axis
  friend bool operator==(const BroadcastInDimParams&, const BroadcastInDimParams&) = default;
};
struct ReshapeParams {
  std::vector<std::int64_t> new_sizes;  // kDynamicDim entries come from operands 1..
  friend bool operator==(const ReshapeParams&, const ReshapeParams&) = default;
};
struct TransposeParams {
  std::vector<std::int64_t> permutation;
  friend bool operator==(const TransposeParams&, const TransposeParams&) = default;
};
struct SqueezeParams {
  std::vector<std::int64_t> dimensions;
  friend bool operator==(const SqueezeParams&, const SqueezeParams&) = default;
};
struct ConcatenateParams {
  std::int64_t dimension = 0;
  friend bool operator==(const ConcatenateParams&, const ConcatenateParams&) = default;
};
struct SliceParams {
  std::vector<std::int64_t> start_indices;
  std::vector<std::int64_t> limit_indices;
  std::vector<std::int64_t> strides;  // empty: all ones (printed strides=None)
  friend bool operator==(const SliceParams&, const SliceParams&) = default;
};
struct DynamicSliceParams {
  std::vector<std::int64_t> slice_sizes;
  friend bool operator==(const DynamicSliceParams&, const DynamicSliceParams&) = default;
};
struct IotaParams {
  DType dtype = DType::i32;
  std::vector<std::int64_t> shape;  // kDynamicDim entries come from operands
  std::int64_t dimension = 0;
  friend bool operator==(const IotaParams&, const IotaParams&) = default;
};
struct ReduceParams {
  std::vector<std::int64_t> axes;
  friend bool operator==(const ReduceParams&, const ReduceParams&) = default;
};
// dot_general: the axes of an operand of rank `rank` that are neither batch
// nor contracting, in order (they make up the output after the batch axes).
inline std::vector<std::int64_t> dot_free_axes(int rank, const std::vector<std::int64_t>& batch,
                                               const std::vector<std::int64_t>& contracting) {
  std::vector<std::int64_t> r;
  for (std::int64_t i = 0; i < rank; ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end())
      r.push_back(i);
  return r;
}

struct DotGeneralParams {
  std::vector<std::int64_t> lhs_contracting, rhs_contracting;
  std::vector<std::int64_t> lhs_batch, rhs_batch;
  friend bool operator==(const DotGeneralParams&, const DotGeneralParams&) = default;
};

// Control flow (references 000 and 004; the bind algorithm is control.hpp).
// Bodies are in Catalyst's no-constant form: a body's constants are its
// leading invars, and the equation passes their values first. Operand and
// invar layouts ("implicit" are dimension values, `nimplicit` of them):
//
//   for_loop   operands: consts, implicit, lower, upper, step, index0, carried
//              body invars: consts, implicit, index, carried
//              body outvars = equation outputs: implicit, carried
//              runs body for index = lower, lower+step, ... while index <
//              upper (step > 0) or index > upper (step < 0); a step of 0
//              runs no iterations. index0 is lower (Catalyst passes it too).
//   while_loop operands: cond consts, body consts, implicit, carried
//              cond invars: cond consts, implicit, carried -> (bool[],)
//              body invars: body consts, implicit, carried
//              body outvars = equation outputs: implicit, carried
//   cond       operands: pred, then the branch inputs: consts (of all
//              branches, deduplicated; every branch takes all of them), args
//              branch invars: the branch inputs
//              branch outvars = equation outputs: implicit (nimplicit_outputs
//              dimension values), explicit results
//              branches[0] runs when pred is true, branches[1] otherwise.
// With preserve_dimensions a loop has no implicit operands (nimplicit=0):
// carried dimensions are body constants and cannot change. Without, each
// dynamic dimension of the carried values is its own implicit loop variable.
// Params compare by body identity (a body is immutable once traced).
struct ForLoopParams {
  std::shared_ptr<const Jaxpr> body_jaxpr;
  int body_nconsts = 0;
  int nimplicit = 0;
  bool preserve_dimensions = true;
  friend bool operator==(const ForLoopParams&, const ForLoopParams&) = default;
};
struct WhileLoopParams {
  std::shared_ptr<const Jaxpr> cond_jaxpr, body_jaxpr;
  int cond_nconsts = 0, body_nconsts = 0;
  int nimplicit = 0;
  bool preserve_dimensions = true;
  friend bool operator==(const WhileLoopParams&, const WhileLoopParams&) = default;
};
struct CondParams {
  std::vector<std::shared_ptr<const Jaxpr>> branches;  // (then, else), printed branch_jaxprs
  int nimplicit_outputs = 0;
  friend bool operator==(const CondParams&, const CondParams&) = default;
};

using Params = std::variant<NoParams, ConvertParams, RoundParams, BroadcastInDimParams, ReshapeParams,
                            TransposeParams, SqueezeParams, ConcatenateParams, SliceParams, DynamicSliceParams,
                            IotaParams, ReduceParams, DotGeneralParams, ForLoopParams, WhileLoopParams,
                            CondParams>;

// clang-format off
#define DYN_PRIMITIVES(X)                                             \
  /* unary elementwise */                                             \
  X(neg, "neg", unary, NoParams)                                      \
  X(abs, "abs", unary, NoParams)                                      \
  X(sign, "sign", unary, NoParams)                                    \
  X(floor, "floor", unary, NoParams)                                  \
  X(ceil, "ceil", unary, NoParams)                                    \
  X(round, "round", unary, RoundParams)                               \
  X(exp, "exp", unary, NoParams)                                      \
  X(log, "log", unary, NoParams)                                      \
  X(log1p, "log1p", unary, NoParams)                                  \
  X(sqrt, "sqrt", unary, NoParams)                                    \
  X(rsqrt, "rsqrt", unary, NoParams)                                  \
  X(sin, "sin", unary, NoParams)                                      \
  X(cos, "cos", unary, NoParams)                                      \
  X(tan, "tan", unary, NoParams)                                      \
  X(tanh, "tanh", unary, NoParams)                                    \
  X(logistic, "logistic", unary, NoParams)                            \
  X(not_, "not", unary, NoParams)                                     \
  /* binary elementwise */                                            \
  X(add, "add", binary, NoParams)                                     \
  X(sub, "sub", binary, NoParams)                                     \
  X(mul, "mul", binary, NoParams)                                     \
  X(div, "div", binary, NoParams)                                     \
  X(rem, "rem", binary, NoParams)                                     \
  X(pow, "pow", binary, NoParams)                                     \
  X(max, "max", binary, NoParams)                                     \
  X(min, "min", binary, NoParams)                                     \
  X(atan2, "atan2", binary, NoParams)                                 \
  X(and_, "and", binary, NoParams)                                    \
  X(or_, "or", binary, NoParams)                                      \
  /* comparisons */                                                   \
  X(eq, "eq", compare, NoParams)                                      \
  X(ne, "ne", compare, NoParams)                                      \
  X(lt, "lt", compare, NoParams)                                      \
  X(le, "le", compare, NoParams)                                      \
  X(gt, "gt", compare, NoParams)                                      \
  X(ge, "ge", compare, NoParams)                                      \
  /* selection and conversion */                                      \
  X(select_n, "select_n", select, NoParams)                           \
  X(convert_element_type, "convert_element_type", convert, ConvertParams) \
  /* structural */                                                    \
  X(broadcast_in_dim, "broadcast_in_dim", structural, BroadcastInDimParams) \
  X(reshape, "reshape", structural, ReshapeParams)                    \
  X(transpose, "transpose", structural, TransposeParams)              \
  X(squeeze, "squeeze", structural, SqueezeParams)                    \
  X(concatenate, "concatenate", structural, ConcatenateParams)        \
  X(slice, "slice", structural, SliceParams)                          \
  X(dynamic_slice, "dynamic_slice", structural, DynamicSliceParams)   \
  X(dynamic_update_slice, "dynamic_update_slice", structural, NoParams) \
  X(iota, "iota", structural, IotaParams)                             \
  /* reductions */                                                    \
  X(reduce_sum, "reduce_sum", reduction, ReduceParams)                \
  X(reduce_max, "reduce_max", reduction, ReduceParams)                \
  X(reduce_min, "reduce_min", reduction, ReduceParams)                \
  X(reduce_prod, "reduce_prod", reduction, ReduceParams)              \
  /* linear algebra */                                                \
  X(dot_general, "dot_general", contraction, DotGeneralParams)        \
  /* control flow */                                                  \
  X(for_loop, "for_loop", control, ForLoopParams)                     \
  X(while_loop, "while_loop", control, WhileLoopParams)               \
  X(cond, "cond", control, CondParams)
// clang-format on

enum class Prim : std::uint8_t {
#define DYN_X(e, n, k, p) e,
  DYN_PRIMITIVES(DYN_X)
#undef DYN_X
};

inline constexpr int kNumPrims = 0
#define DYN_X(e, n, k, p) +1
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
    ;

constexpr std::string_view prim_name(Prim p) {
  switch (p) {
#define DYN_X(e, n, k, pp) \
  case Prim::e: return n;
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
  }
  return "?";
}

constexpr Kind prim_kind(Prim p) {
  switch (p) {
#define DYN_X(e, n, k, pp) \
  case Prim::e: return Kind::k;
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
  }
  return Kind::unary;
}

// The params type a primitive carries (for checks when building equations).
template <Prim P> struct params_of;
#define DYN_X(e, n, k, pp) \
  template <> struct params_of<Prim::e> { using type = pp; };
DYN_PRIMITIVES(DYN_X)
#undef DYN_X

// Whether `params` holds the params type of `p` (out of line: bind's check;
// inline, its std::holds_alternative instances cost every user file).
bool params_match(Prim p, const Params& params);
#ifdef DYNSTAGE_IMPLEMENTATION
bool params_match(Prim p, const Params& params) {
  switch (p) {
#define DYN_X(e, n, k, pp) \
  case Prim::e: return std::holds_alternative<pp>(params);
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
  }
  return false;
}
#endif

}  // namespace detail
}  // namespace dyn
