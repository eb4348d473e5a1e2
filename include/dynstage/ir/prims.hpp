// dynstage: the primitive table.
//
// Every fact about a primitive that is data is one row of DYN_PRIMITIVES
// (below): its names, kind, params struct, arity, dtype rule, fusibility,
// cost, dimension arithmetic and vector math function; prim_info(p) reads a
// row. What is code (shape rule, eager kernel, LLVM lowering, printer
// params) is found by primitive, one registration per primitive, and every
// `switch` over Prim has no `default:`: the build uses -Werror=switch, so a
// primitive someone forgot fails to compile in every stage.
// docs/architecture.md, "Adding a primitive", walks through an example.
//
// Params are typed per primitive and held in the Params variant; a primitive
// without parameters uses NoParams. Shape-valued parameters hold kDynamicDim
// for a dimension supplied at run time as an extra i64[] operand (printed
// `None`, as Catalyst's `shape=(None,)`).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../array/dtype.hpp"

namespace dyn {

struct Jaxpr;  // jaxpr.hpp; control-flow params hold their bodies

namespace detail {

inline constexpr std::int64_t kDynamicDim = INT64_MIN;

// The category of a primitive, which decides the rules it shares with
// others: the five elementwise kinds (one output element per index, from the
// operands' elements at that index), layout (`structural`: moves elements),
// reduction, cumulative (running reductions), sort, contraction and control flow. (No collective primitive exists
// yet; one would be a new Kind.)
enum class Kind : std::uint8_t {
  unary,       // elementwise, one operand, same shape out
  binary,      // elementwise, two operands of equal shape
  compare,     // elementwise binary producing bool
  select,      // elementwise, three operands, each of the result's shape or rank 0 (broadcast):
               // select_n(pred, case0, case1), clamp(lo, x, hi)
  convert,     // convert_element_type
  structural,  // layout: broadcast, reshape, transpose, slices, iota, concatenate, gather
  reduction,   // reduce_* over axes; argmax/argmin over one axis (an index out)
  cumulative,  // cumsum, cumprod, cummax, cummin: a running reduction along one axis, same shape out
  scatter,     // scatter, scatter-add, ...: the operand with updates combined in at indices read from data
  sort,        // sort: the operand's elements reordered along one axis, same shape out
  contraction, // dot_general
  control,     // for_loop, while_loop, cond, scan: nested jaxprs (trace/control.hpp, trace/scan.hpp)
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
// argmax, argmin (lax's): the index along the one axis in `axes` of the
// first maximum (minimum), a NaN counting as the maximum (minimum), as an
// integer of `index_dtype`.
struct ArgReduceParams {
  std::vector<std::int64_t> axes;
  DType index_dtype = DType::i32;
  friend bool operator==(const ArgReduceParams&, const ArgReduceParams&) = default;
};
// cumsum & co. (lax.cumsum): out[..., k, ...] combines the operand's elements
// 0..k (reverse: k..n-1) along `axis`, in that order.
struct CumulativeParams {
  std::int64_t axis = 0;
  bool reverse = false;
  friend bool operator==(const CumulativeParams&, const CumulativeParams&) = default;
};
// gather (lax.gather; XLA's Gather with the index vector as the last axis
// of the indices, as JAX always puts it). Operands: the array, the indices
// (integer, shape batch + [K]), then one i64 scalar per kDynamicDim slice
// size. Output: the batch axes, with the slice's non-collapsed axes at
// offset_dims. Component c of an index vector is the start along operand
// axis start_index_map[c], clamped so that the slice lies inside the operand
// (mode CLIP: dynstage's gathers clamp). ir/index_map.hpp states the map.
struct GatherParams {
  std::vector<std::int64_t> offset_dims;           // output axes of the slice's kept axes, ascending
  std::vector<std::int64_t> collapsed_slice_dims;  // operand axes of slice size 1 left out of the output
  std::vector<std::int64_t> start_index_map;       // index-vector component -> operand axis
  std::vector<std::int64_t> slice_sizes;           // per operand axis; kDynamicDim from operands 2..
  friend bool operator==(const GatherParams&, const GatherParams&) = default;
};
// scatter, scatter-add, ... (lax.scatter_*): the inverse of a gather with the
// same structure under XLA's other names. Operands: the array, the indices
// (batch + [K]), the updates (the shape the matching gather would return).
// An update whose window does not fit inside the operand is dropped (mode
// FILL_OR_DROP, JAX's default for updates); duplicates combine in order.
struct ScatterParams {
  std::vector<std::int64_t> update_window_dims;            // update axes inside a window, ascending
  std::vector<std::int64_t> inserted_window_dims;          // operand axes of window size 1 absent from updates
  std::vector<std::int64_t> scatter_dims_to_operand_dims;  // index-vector component -> operand axis
  friend bool operator==(const ScatterParams&, const ScatterParams&) = default;
};

// sort (lax.sort of one operand, as jnp.sort binds it): the elements along
// `dimension` in ascending order, NaNs last (all NaNs equal), -0.0 equal to
// 0.0; is_stable keeps equal elements in their order. num_keys is 1 (lax's
// multi-operand sort, which argsort and top_k need, is not built yet).
struct SortParams {
  std::int64_t dimension = 0;
  bool is_stable = true;
  int num_keys = 1;
  friend bool operator==(const SortParams&, const SortParams&) = default;
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

// Control flow (the Catalyst tracing note and dynamic-arrays doc; the bind
// algorithm is trace/control_nested.hpp).
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
//   cond       operands: pred (or index), then the branch inputs: consts (of
//              all branches, deduplicated; every branch takes all of them), args
//              branch invars: the branch inputs
//              branch outvars = equation outputs: implicit (nimplicit_outputs
//              dimension values), explicit results
//              Two forms (CondParams::indexed): Catalyst's, a bool[] pred and
//              two branches, branches[0] running when pred is true; and JAX's
//              (lax.switch), an i32[] index and N >= 1 branches, branches[i]
//              running for index i, and an index out of [0, N) running
//              branches[N-1] (XLA's Conditional; dyn::switch_ clamps the
//              index before, so that never happens in a traced program).
//   scan       operands: consts, carry, xs (JAX's order), then, when the
//              length is dynamic (length = -1, printed None), the length
//              as an i64[] (as a dynamic size of broadcast_in_dim follows
//              its data operands)
//              body (`jaxpr`) invars: consts, carry, x (one slice of each xs
//              along axis 0)
//              body outvars: carry, y
//              equation outputs: carry, ys (each y stacked along a new axis
//              0 of size length)
//              runs body for slice t = 0, 1, ..., length-1 (reverse: from
//              length-1 down to 0), writing y into row t of ys. The carry
//              keeps its type (no implicit loop variables, as lax.scan).
// With preserve_dimensions a loop has no implicit operands (nimplicit=0):
// carried dimensions are body constants and cannot change. Without, each
// dynamic dimension of the carried values that the body changes is its own
// implicit loop variable; one the body leaves unchanged stays a body
// constant, the caller's dimension (docs/control_flow.md, "Sizes the body
// does not change").
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
  std::vector<std::shared_ptr<const Jaxpr>> branches;  // (then, else), or one per index value
  int nimplicit_outputs = 0;
  // false: Catalyst's cond (dyn::cond), a bool[] predicate, printed
  // `branch_jaxprs=(...) nimplicit_outputs=k`; true: JAX's cond as lax.switch
  // binds it (dyn::switch_), an i32[] index, printed `branches=(...)` as JAX
  // prints it (and `nimplicit_outputs=k` after it when k > 0: JAX's branches
  // have no dynamic result sizes).
  bool indexed = false;
  friend bool operator==(const CondParams&, const CondParams&) = default;
};

// lax.scan's params as JAX prints them (`_split_transpose=False`,
// `linear=(False, ...)` and `unroll=1` are printed, not stored: dynstage has
// no transposition and lowers one body per iteration). `jaxpr` is JAX's
// name for the body; `length` is -1 when it is dynamic (then the last
// operand, printed `length=None`).
struct ScanParams {
  std::shared_ptr<const Jaxpr> jaxpr;
  std::int64_t length = 0;
  bool reverse = false;
  int num_consts = 0;
  int num_carry = 0;
  friend bool operator==(const ScanParams&, const ScanParams&) = default;
};

using Params = std::variant<NoParams, ConvertParams, RoundParams, BroadcastInDimParams, ReshapeParams,
                            TransposeParams, SqueezeParams, ConcatenateParams, SliceParams, DynamicSliceParams,
                            IotaParams, GatherParams, ScatterParams, ReduceParams, ArgReduceParams, CumulativeParams, SortParams,
                            DotGeneralParams, ForLoopParams, WhileLoopParams, CondParams, ScanParams>;

// ---------------------------------------------------------------------------
// The columns of the primitive table (one row per primitive, below).

// dtypes: the dtype rule, what the operands may be (for iota: its `dtype`
// parameter). `floating` and `rounding` accept the same dtypes; they differ
// in the jnp-level function (numpy.hpp): a `floating` one computes bool and
// integer operands in f32 (jnp.exp(int32) is float32), a `rounding` one
// returns them unchanged (jnp.floor(int32) is the operand).
enum class DTypeSet : std::uint8_t {
  any,              // bool, i32, i64, f32, f64
  numeric,          // i32, i64, f32, f64
  floating,         // f32, f64
  rounding,         // f32, f64 (see above)
  integer_or_bool,  // bool, i32, i64 (bitwise on integers, logical on bool)
};

constexpr bool dtype_in(DType d, DTypeSet s) {
  switch (s) {
    case DTypeSet::any: return true;
    case DTypeSet::numeric: return !is_bool(d);
    case DTypeSet::floating:
    case DTypeSet::rounding: return is_float(d);
    case DTypeSet::integer_or_bool: return !is_float(d);
  }
  return false;
}

// What one element costs when a fused consumer recomputes it (the LLVM
// backend's recomputation guard, llvm/fusion.hpp rule 3).
enum class Cost : std::uint8_t {
  simple,          // a few instructions; every non-elementwise primitive
  costly,          // a division or a square root
  transcendental,  // a libm / libmvec call or the like
};

// Dimension arithmetic: how an integer scalar result whose operands are
// dimensions is itself a dimension (`n + 1` for a dimension n is the
// dimension n + 1, as in the Catalyst tracing note). `div` and `rem` truncate toward zero
// where Dim's floordiv and mod round down: they agree on non-negative
// operands only, which each user of this column checks or avoids.
enum class DimArith : std::uint8_t { none, add, sub, mul, neg, max, min, same, div, rem };

// Vector math: the primitive's float function is the libm function `name`
// (f64; f32 is `name` + "f"), and glibc's libmvec has vector variants of it
// that the LLVM backend maps the scalar calls to (llvm/session.hpp). The
// backend emits it as the intrinsic llvm.<name> when `intrinsic` is set, else
// as a call of libm's function.
struct VectorMath {
  const char* name = nullptr;  // nullptr: none
  bool intrinsic = false;
  constexpr explicit operator bool() const { return name != nullptr; }
};

// Spellings of the table's last column.
namespace prim_table {
inline constexpr VectorMath none{};
constexpr VectorMath libm(const char* name) { return VectorMath{name, false}; }
constexpr VectorMath intrinsic(const char* name) { return VectorMath{name, true}; }
}  // namespace prim_table

// The number of data operands of a primitive whose row says -1: any. Shape
// parameters' kDynamicDim entries add i64[] operands after the data ones.
inline constexpr int kVariadic = -1;

// ---------------------------------------------------------------------------
// The table. One row per primitive, in one list per Kind; DYN_PRIMITIVES is
// all of them, in this order (the enum's). The columns:
//
//   enum    Prim's enumerator
//   name    the jaxpr name
//   kind    its Kind (the list it is in, checked below)
//   params  its params struct (NoParams: none)
//   arity   data operands (-1: any number, kVariadic)
//   dtypes  DTypeSet: the dtypes its operands may have
//   fused   the LLVM backend computes it inline at its consumer's index
//           (llvm/fusion.hpp rule 1) instead of giving it a buffer and loop
//   cost    Cost of one element, for fusion's recomputation guard
//   dim     DimArith: its dimension arithmetic
//   vmath   VectorMath: none, libm("name") or intrinsic("name")
//
// What is code is found by primitive, one registration per primitive:
//   shape rule   shape_rule(PrimTag<Prim::x>, ...)  shape_rules.hpp
//   eager        impl_rule(PrimTag<Prim::x>, ...)   eager/kernels.hpp; a unary,
//                binary or compare primitive needs only its scalar function,
//                scalar(PrimTag<Prim::x>, ...)
//   index map    layout primitives: a case of index_map, index_map.hpp
//   LLVM         a case of Lowering::fused (fused primitives) or emit_root
//                (the others), llvm/lower_expr.hpp, llvm/lower_roots.hpp
//   printer      the params struct's overload in print.hpp (param_kvs)
// A missing one fails to compile. docs/architecture.md, "Adding a primitive",
// walks through an example.

// clang-format off
//  enum                  name                    kind         params                arity dtypes           fused  cost            dim    vmath
#define DYN_UNARY_PRIMITIVES(X) \
  X(neg,                  "neg",                  unary,       NoParams,                1, numeric,         true,  simple,         neg,   none)              \
  X(abs,                  "abs",                  unary,       NoParams,                1, numeric,         true,  simple,         none,  none)              \
  X(sign,                 "sign",                 unary,       NoParams,                1, numeric,         true,  simple,         none,  none)              \
  X(floor,                "floor",                unary,       NoParams,                1, rounding,        true,  simple,         none,  none)              \
  X(ceil,                 "ceil",                 unary,       NoParams,                1, rounding,        true,  simple,         none,  none)              \
  X(round,                "round",                unary,       RoundParams,             1, rounding,        true,  simple,         none,  none)              \
  X(exp,                  "exp",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  intrinsic("exp"))  \
  X(log,                  "log",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  intrinsic("log"))  \
  X(log1p,                "log1p",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("log1p"))     \
  X(sqrt,                 "sqrt",                 unary,       NoParams,                1, floating,        true,  costly,         none,  none)              \
  X(rsqrt,                "rsqrt",                unary,       NoParams,                1, floating,        true,  costly,         none,  none)              \
  X(sin,                  "sin",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  intrinsic("sin"))  \
  X(cos,                  "cos",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  intrinsic("cos"))  \
  X(tan,                  "tan",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("tan"))       \
  X(tanh,                 "tanh",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("tanh"))      \
  X(logistic,             "logistic",             unary,       NoParams,                1, floating,        true,  transcendental, none,  none)              \
  X(not_,                 "not",                  unary,       NoParams,                1, integer_or_bool, true,  simple,         none,  none)
#define DYN_BINARY_PRIMITIVES(X) \
  X(add,                  "add",                  binary,      NoParams,                2, numeric,         true,  simple,         add,   none)              \
  X(sub,                  "sub",                  binary,      NoParams,                2, numeric,         true,  simple,         sub,   none)              \
  X(mul,                  "mul",                  binary,      NoParams,                2, numeric,         true,  simple,         mul,   none)              \
  X(div,                  "div",                  binary,      NoParams,                2, numeric,         true,  costly,         div,   none)              \
  X(rem,                  "rem",                  binary,      NoParams,                2, numeric,         true,  costly,         rem,   none)              \
  X(pow,                  "pow",                  binary,      NoParams,                2, numeric,         true,  transcendental, none,  intrinsic("pow"))  \
  X(max,                  "max",                  binary,      NoParams,                2, numeric,         true,  simple,         max,   none)              \
  X(min,                  "min",                  binary,      NoParams,                2, numeric,         true,  simple,         min,   none)              \
  X(atan2,                "atan2",                binary,      NoParams,                2, floating,        true,  transcendental, none,  libm("atan2"))     \
  X(and_,                 "and",                  binary,      NoParams,                2, integer_or_bool, true,  simple,         none,  none)              \
  X(or_,                  "or",                   binary,      NoParams,                2, integer_or_bool, true,  simple,         none,  none)
#define DYN_COMPARE_PRIMITIVES(X) \
  X(eq,                   "eq",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(ne,                   "ne",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(lt,                   "lt",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(le,                   "le",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(gt,                   "gt",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(ge,                   "ge",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)
#define DYN_SELECT_PRIMITIVES(X) \
  X(select_n,             "select_n",             select,      NoParams,                3, any,             true,  simple,         none,  none)              \
  X(clamp,                "clamp",                select,      NoParams,                3, any,             true,  simple,         none,  none)
#define DYN_CONVERT_PRIMITIVES(X) \
  X(convert_element_type, "convert_element_type", convert,     ConvertParams,           1, any,             true,  simple,         same,  none)
#define DYN_STRUCTURAL_PRIMITIVES(X) \
  X(broadcast_in_dim,     "broadcast_in_dim",     structural,  BroadcastInDimParams,    1, any,             true,  simple,         none,  none)              \
  X(reshape,              "reshape",              structural,  ReshapeParams,           1, any,             true,  simple,         none,  none)              \
  X(transpose,            "transpose",            structural,  TransposeParams,         1, any,             true,  simple,         none,  none)              \
  X(squeeze,              "squeeze",              structural,  SqueezeParams,           1, any,             true,  simple,         none,  none)              \
  X(concatenate,          "concatenate",          structural,  ConcatenateParams,      -1, any,             false, simple,         none,  none)              \
  X(slice,                "slice",                structural,  SliceParams,             1, any,             true,  simple,         none,  none)              \
  X(dynamic_slice,        "dynamic_slice",        structural,  DynamicSliceParams,     -1, any,             true,  simple,         none,  none)              \
  X(dynamic_update_slice, "dynamic_update_slice", structural,  NoParams,               -1, any,             false, simple,         none,  none)              \
  X(iota,                 "iota",                 structural,  IotaParams,              0, numeric,         true,  simple,         none,  none)              \
  X(gather,               "gather",               structural,  GatherParams,           -1, any,             true,  simple,         none,  none)
#define DYN_SCATTER_PRIMITIVES(X) \
  X(scatter,              "scatter",              scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_add,          "scatter-add",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_mul,          "scatter-mul",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_min,          "scatter-min",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_max,          "scatter-max",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)
#define DYN_REDUCTION_PRIMITIVES(X) \
  X(reduce_sum,           "reduce_sum",           reduction,   ReduceParams,            1, numeric,         false, simple,         none,  none)              \
  X(reduce_max,           "reduce_max",           reduction,   ReduceParams,            1, any,             false, simple,         none,  none)              \
  X(reduce_min,           "reduce_min",           reduction,   ReduceParams,            1, any,             false, simple,         none,  none)              \
  X(reduce_prod,          "reduce_prod",          reduction,   ReduceParams,            1, numeric,         false, simple,         none,  none)              \
  X(reduce_or,            "reduce_or",            reduction,   ReduceParams,            1, integer_or_bool, false, simple,         none,  none)              \
  X(reduce_and,           "reduce_and",           reduction,   ReduceParams,            1, integer_or_bool, false, simple,         none,  none)              \
  X(argmax,               "argmax",               reduction,   ArgReduceParams,         1, any,             false, simple,         none,  none)              \
  X(argmin,               "argmin",               reduction,   ArgReduceParams,         1, any,             false, simple,         none,  none)
#define DYN_CUMULATIVE_PRIMITIVES(X) \
  X(cumsum,               "cumsum",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cumprod,              "cumprod",              cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cummax,               "cummax",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cummin,               "cummin",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)
#define DYN_SORT_PRIMITIVES(X) \
  X(sort,                 "sort",                 sort,        SortParams,              1, any,             false, simple,         none,  none)
#define DYN_CONTRACTION_PRIMITIVES(X) \
  X(dot_general,          "dot_general",          contraction, DotGeneralParams,        2, numeric,         false, simple,         none,  none)
#define DYN_CONTROL_PRIMITIVES(X) \
  X(for_loop,             "for_loop",             control,     ForLoopParams,          -1, any,             false, simple,         none,  none)              \
  X(while_loop,           "while_loop",           control,     WhileLoopParams,        -1, any,             false, simple,         none,  none)              \
  X(cond,                 "cond",                 control,     CondParams,             -1, any,             false, simple,         none,  none)              \
  X(scan,                 "scan",                 control,     ScanParams,             -1, any,             false, simple,         none,  none)
// clang-format on

#define DYN_ELEMENTWISE_PRIMITIVES(X)                                                                     \
  DYN_UNARY_PRIMITIVES(X) DYN_BINARY_PRIMITIVES(X) DYN_COMPARE_PRIMITIVES(X) DYN_SELECT_PRIMITIVES(X) \
  DYN_CONVERT_PRIMITIVES(X)
#define DYN_PRIMITIVES(X)                                                                                  \
  DYN_ELEMENTWISE_PRIMITIVES(X) DYN_STRUCTURAL_PRIMITIVES(X) DYN_SCATTER_PRIMITIVES(X)                \
  DYN_REDUCTION_PRIMITIVES(X) DYN_CUMULATIVE_PRIMITIVES(X) DYN_SORT_PRIMITIVES(X) DYN_CONTRACTION_PRIMITIVES(X)        \
  DYN_CONTROL_PRIMITIVES(X)

// `case Prim::x:` for every row of a list: a `switch` over Prim names whole
// categories this way, so it stays exhaustive (-Werror=switch) without a
// `default:` and without naming each elementwise primitive, e.g.
//   switch (p) {
//     DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL) return ...;
//     case Prim::concatenate: ...
//   }
#define DYN_CASE_LABEL(e, ...) case ::dyn::detail::Prim::e:

enum class Prim : std::uint8_t {
#define DYN_X(e, ...) e,
  DYN_PRIMITIVES(DYN_X)
#undef DYN_X
};

inline constexpr int kNumPrims = 0
#define DYN_X(e, ...) +1
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
    ;

// One row of the table, as data.
struct PrimInfo {
  Prim prim;
  std::string_view name;
  Kind kind;
  int arity;
  DTypeSet dtypes;
  bool fused;
  Cost cost;
  DimArith dim;
  VectorMath vector_math;
};

inline constexpr PrimInfo kPrimTable[] = {
#define DYN_X(e, n, k, pp, ar, dt, fu, co, di, vm) \
  PrimInfo{Prim::e, n, Kind::k, ar, DTypeSet::dt, fu, Cost::co, DimArith::di, prim_table::vm},
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
};

constexpr const PrimInfo& prim_info(Prim p) { return kPrimTable[static_cast<std::size_t>(p)]; }
constexpr std::string_view prim_name(Prim p) { return prim_info(p).name; }
constexpr Kind prim_kind(Prim p) { return prim_info(p).kind; }

constexpr bool is_elementwise(Kind k) {
  return k == Kind::unary || k == Kind::binary || k == Kind::compare || k == Kind::select || k == Kind::convert;
}

// The rows agree with what the rules built on them assume; a new row that
// does not fails here, naming the rule.
namespace prim_table {
#define DYN_X(e, n, k, ...) static_assert(Kind::k == Kind::KIND, "prims.hpp: " #e " is listed with the wrong Kind");
#define KIND unary
DYN_UNARY_PRIMITIVES(DYN_X)
#undef KIND
#define KIND binary
DYN_BINARY_PRIMITIVES(DYN_X)
#undef KIND
#define KIND compare
DYN_COMPARE_PRIMITIVES(DYN_X)
#undef KIND
#define KIND select
DYN_SELECT_PRIMITIVES(DYN_X)
#undef KIND
#define KIND convert
DYN_CONVERT_PRIMITIVES(DYN_X)
#undef KIND
#define KIND structural
DYN_STRUCTURAL_PRIMITIVES(DYN_X)
#undef KIND
#define KIND scatter
DYN_SCATTER_PRIMITIVES(DYN_X)
#undef KIND
#define KIND reduction
DYN_REDUCTION_PRIMITIVES(DYN_X)
#undef KIND
#define KIND cumulative
DYN_CUMULATIVE_PRIMITIVES(DYN_X)
#undef KIND
#define KIND sort
DYN_SORT_PRIMITIVES(DYN_X)
#undef KIND
#define KIND contraction
DYN_CONTRACTION_PRIMITIVES(DYN_X)
#undef KIND
#define KIND control
DYN_CONTROL_PRIMITIVES(DYN_X)
#undef KIND
#undef DYN_X

constexpr int expected_arity(Kind k) {
  switch (k) {
    case Kind::unary:
    case Kind::convert: return 1;
    case Kind::binary:
    case Kind::compare: return 2;
    case Kind::select: return 3;
    case Kind::structural:
    case Kind::scatter:
    case Kind::reduction:
    case Kind::cumulative:
    case Kind::sort:
    case Kind::contraction:
    case Kind::control: return -2;  // the row's own
  }
  return -2;
}

// The first row that breaks a rule, or nullptr.
constexpr const char* check_rows() {
  for (std::size_t i = 0; i < std::size(kPrimTable); ++i) {
    const PrimInfo& r = kPrimTable[i];
    if (static_cast<std::size_t>(r.prim) != i) return "rows out of enum order";
    const int a = expected_arity(r.kind);
    if (a != -2 && r.arity != a) return "an elementwise row has the wrong arity for its kind";
    if (r.arity < kVariadic) return "arity must be >= 0 or -1 (any)";
    // The LLVM lowering computes elementwise values only inline (Lowering::fused).
    if (is_elementwise(r.kind) && !r.fused) return "an elementwise primitive must be fused";
    // Their own loop nests: emit_scatter, emit_reduction, emit_cumulative, emit_sort, emit_dot, lower_control.hpp.
    if ((r.kind == Kind::scatter || r.kind == Kind::reduction || r.kind == Kind::cumulative || r.kind == Kind::sort ||
         r.kind == Kind::contraction ||
         r.kind == Kind::control) && r.fused)
      return "scatters, reductions, cumulative ops, sort, contractions and control flow are never fused";
    if (r.cost != Cost::simple && !is_elementwise(r.kind)) return "only elementwise rows have a cost";
    if (r.vector_math && (r.cost != Cost::transcendental || (r.kind != Kind::unary && r.kind != Kind::binary)))
      return "a vector math row is a unary or binary transcendental";
    if (r.dim != DimArith::none && !is_elementwise(r.kind)) return "only elementwise rows have dimension arithmetic";
    for (std::size_t j = 0; j < i; ++j)
      if (kPrimTable[j].name == r.name) return "two rows have the same name";
  }
  return nullptr;
}
static_assert(check_rows() == nullptr, "prims.hpp: a row of DYN_PRIMITIVES breaks a rule; see check_rows()");
}  // namespace prim_table

// Stages find a primitive's code by overloading one function on PrimTag<P>
// (the overload is the registration); visit_prim calls f(PrimTag<p>{}) for
// the run-time primitive p, as visit_dtype does for dtypes.
template <Prim P>
struct PrimTag {
  static constexpr Prim value = P;
};

template <class F>
decltype(auto) visit_prim(Prim p, F&& f) {
  switch (p) {
#define DYN_X(e, ...) \
  case Prim::e: return f(PrimTag<Prim::e>{});
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
  }
  internal_error("visit_prim: bad primitive tag " + std::to_string(static_cast<int>(p)));
}

// The params type a primitive carries (for checks when building equations).
template <Prim P> struct params_of;
#define DYN_X(e, n, k, pp, ...) \
  template <> struct params_of<Prim::e> { using type = pp; };
DYN_PRIMITIVES(DYN_X)
#undef DYN_X
template <Prim P>
using params_of_t = typename params_of<P>::type;

// Whether `params` holds the params type of `p` (out of line: bind's check;
// inline, its std::holds_alternative instances cost every user file).
bool params_match(Prim p, const Params& params);
#ifdef DYNSTAGE_IMPLEMENTATION
bool params_match(Prim p, const Params& params) {
  switch (p) {
#define DYN_X(e, n, k, pp, ...) \
  case Prim::e: return std::holds_alternative<pp>(params);
    DYN_PRIMITIVES(DYN_X)
#undef DYN_X
  }
  return false;
}
#endif

}  // namespace detail
}  // namespace dyn
