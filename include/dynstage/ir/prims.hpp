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
// The params structs are in params.hpp.
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
#include "params.hpp"

namespace dyn {

namespace detail {

// The category of a primitive, which decides the rules it shares with
// others: the five elementwise kinds (one output element per index, from the
// operands' elements at that index), layout (`structural`: moves elements),
// reduction, cumulative (running reductions), sort, contraction, control flow and effects (no
// outputs; run for what they do: debug_callback prints) and collectives (shard_map's communication
// between ranks, runtime/distributed.hpp).
enum class Kind : std::uint8_t {
  unary,       // elementwise, one operand, same shape out
  binary,      // elementwise, two operands of equal shape
  compare,     // elementwise binary producing bool
  select,      // elementwise, three operands, each of the result's shape or rank 0 (broadcast):
               // select_n(pred, case0, case1), clamp(lo, x, hi)
  convert,     // convert_element_type
  structural,  // layout: broadcast, reshape, transpose, slices, iota, concatenate, gather, rev, pad
  reduction,   // reduce_* over axes; argmax/argmin over one axis (an index out); segment_sum_offsets
               // (sums of the data's segments offsets[r]..offsets[r+1]: CSR rows)
  cumulative,  // cumsum, cumprod, cummax, cummin: a running reduction along one axis, same shape out
  scatter,     // scatter, scatter-add, ...: the operand with updates combined in at indices read from data
  sort,        // sort, top_k: operands reordered along one axis by one permutation (top_k: its first k); several outputs
  fft,         // fft: a discrete Fourier transform over trailing axes, computed by a library routine (runtime/fft.hpp)
  contraction, // dot_general
  control,     // for_loop, while_loop, cond, scan, checkpoint: nested jaxprs (trace/control.hpp, trace/scan.hpp)
  effect,      // debug_callback (dyn::debug_print): no outputs; never dropped or reordered against other effects
  collective,  // psum pmax pmin all_gather ppermute all_to_all axis_index: over the ranks of named mesh axes
};

// ---------------------------------------------------------------------------
// The columns of the primitive table (one row per primitive, below).

// dtypes: the dtype rule, what the operands may be (for iota: its `dtype`
// parameter). `floating` and `rounding` accept the same dtypes; they differ
// in the jnp-level function (numpy.hpp): a `floating` one computes bool and
// integer operands in f32 (jnp.exp(int32) is float32), a `rounding` one
// returns them unchanged (jnp.floor(int32) is the operand).
enum class DTypeSet : std::uint8_t {
  any,              // every dtype
  ordered,          // every dtype but the complex ones (ordering: lt, max, sort, ...)
  numeric,          // the integers and real floats (not bool, not complex)
  number,           // numeric and the complex dtypes (arithmetic: add, mul, reduce_sum, dot_general, ...)
  floating,         // f32, f64
  rounding,         // f32, f64 (see above)
  inexact,          // f32, f64, c64, c128 (exp, log, sqrt, sin, cos, tanh; conj)
  complex,          // c64, c128 (real, imag)
  integer_or_bool,  // bool and the integers (bitwise on integers, logical on bool)
  integer,          // the integers (shifts, population_count, clz: lax's _int)
};

constexpr bool dtype_in(DType d, DTypeSet s) {
  switch (s) {
    case DTypeSet::any: return true;
    case DTypeSet::ordered: return !is_complex(d);
    case DTypeSet::numeric: return is_integer(d) || is_float(d);
    case DTypeSet::number: return !is_bool(d);
    case DTypeSet::floating:
    case DTypeSet::rounding: return is_float(d);
    case DTypeSet::inexact: return is_inexact(d);
    case DTypeSet::complex: return is_complex(d);
    case DTypeSet::integer_or_bool: return is_integer(d) || is_bool(d);
    case DTypeSet::integer: return is_integer(d);
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
  X(neg,                  "neg",                  unary,       NoParams,                1, number,          true,  simple,         neg,   none)              \
  X(abs,                  "abs",                  unary,       NoParams,                1, number,          true,  simple,         none,  none)              \
  X(sign,                 "sign",                 unary,       NoParams,                1, numeric,         true,  simple,         none,  none)              \
  X(floor,                "floor",                unary,       NoParams,                1, rounding,        true,  simple,         none,  none)              \
  X(ceil,                 "ceil",                 unary,       NoParams,                1, rounding,        true,  simple,         none,  none)              \
  X(round,                "round",                unary,       RoundParams,             1, rounding,        true,  simple,         none,  none)              \
  X(exp,                  "exp",                  unary,       NoParams,                1, inexact,         true,  transcendental, none,  intrinsic("exp"))  \
  X(log,                  "log",                  unary,       NoParams,                1, inexact,         true,  transcendental, none,  intrinsic("log"))  \
  X(log1p,                "log1p",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("log1p"))     \
  X(sqrt,                 "sqrt",                 unary,       NoParams,                1, inexact,         true,  costly,         none,  none)              \
  X(rsqrt,                "rsqrt",                unary,       NoParams,                1, floating,        true,  costly,         none,  none)              \
  X(sin,                  "sin",                  unary,       NoParams,                1, inexact,         true,  transcendental, none,  intrinsic("sin"))  \
  X(cos,                  "cos",                  unary,       NoParams,                1, inexact,         true,  transcendental, none,  intrinsic("cos"))  \
  X(tan,                  "tan",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("tan"))       \
  X(tanh,                 "tanh",                 unary,       NoParams,                1, inexact,         true,  transcendental, none,  libm("tanh"))      \
  X(logistic,             "logistic",             unary,       NoParams,                1, floating,        true,  transcendental, none,  none)              \
  X(square,               "square",               unary,       NoParams,                1, number,          true,  simple,         none,  none)              \
  X(expm1,                "expm1",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("expm1"))     \
  X(exp2,                 "exp2",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("exp2"))      \
  X(cbrt,                 "cbrt",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("cbrt"))      \
  X(sinh,                 "sinh",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("sinh"))      \
  X(cosh,                 "cosh",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("cosh"))      \
  X(asin,                 "asin",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("asin"))      \
  X(acos,                 "acos",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("acos"))      \
  X(atan,                 "atan",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("atan"))      \
  X(asinh,                "asinh",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("asinh"))     \
  X(acosh,                "acosh",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("acosh"))     \
  X(atanh,                "atanh",                unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("atanh"))     \
  X(erf,                  "erf",                  unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("erf"))       \
  X(erfc,                 "erfc",                 unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("erfc"))      \
  X(lgamma,               "lgamma",               unary,       NoParams,                1, floating,        true,  transcendental, none,  libm("lgamma"))    \
  X(erf_inv,              "erf_inv",              unary,       NoParams,                1, floating,        true,  transcendental, none,  none)              \
  X(digamma,              "digamma",              unary,       NoParams,                1, floating,        true,  transcendental, none,  none)              \
  X(trigamma,             "trigamma",             unary,       NoParams,                1, floating,        true,  transcendental, none,  none)              \
  X(is_finite,            "is_finite",            unary,       NoParams,                1, floating,        true,  simple,         none,  none)              \
  X(stop_gradient,        "stop_gradient",        unary,       NoParams,                1, any,             true,  simple,         none,  none)              \
  X(integer_pow,          "integer_pow",          unary,       IntegerPowParams,        1, number,          true,  costly,         none,  none)              \
  X(not_,                 "not",                  unary,       NoParams,                1, integer_or_bool, true,  simple,         none,  none)              \
  X(population_count,     "population_count",     unary,       NoParams,                1, integer,         true,  simple,         none,  none)              \
  X(clz,                  "clz",                  unary,       NoParams,                1, integer,         true,  simple,         none,  none)              \
  X(real,                 "real",                 unary,       NoParams,                1, complex,         true,  simple,         none,  none)              \
  X(imag,                 "imag",                 unary,       NoParams,                1, complex,         true,  simple,         none,  none)              \
  X(conj,                 "conj",                 unary,       ConjParams,              1, inexact,         true,  simple,         none,  none)
#define DYN_BINARY_PRIMITIVES(X) \
  X(add,                  "add",                  binary,      NoParams,                2, number,          true,  simple,         add,   none)              \
  X(sub,                  "sub",                  binary,      NoParams,                2, number,          true,  simple,         sub,   none)              \
  X(mul,                  "mul",                  binary,      NoParams,                2, number,          true,  simple,         mul,   none)              \
  X(div,                  "div",                  binary,      NoParams,                2, number,          true,  costly,         div,   none)              \
  X(rem,                  "rem",                  binary,      NoParams,                2, numeric,         true,  costly,         rem,   none)              \
  X(pow,                  "pow",                  binary,      NoParams,                2, number,          true,  transcendental, none,  intrinsic("pow"))  \
  X(max,                  "max",                  binary,      NoParams,                2, numeric,         true,  simple,         max,   none)              \
  X(min,                  "min",                  binary,      NoParams,                2, numeric,         true,  simple,         min,   none)              \
  X(atan2,                "atan2",                binary,      NoParams,                2, floating,        true,  transcendental, none,  libm("atan2"))     \
  X(nextafter,            "nextafter",            binary,      NoParams,                2, floating,        true,  simple,         none,  none)              \
  X(and_,                 "and",                  binary,      NoParams,                2, integer_or_bool, true,  simple,         none,  none)              \
  X(or_,                  "or",                   binary,      NoParams,                2, integer_or_bool, true,  simple,         none,  none)              \
  X(xor_,                 "xor",                  binary,      NoParams,                2, integer_or_bool, true,  simple,         none,  none)              \
  X(shift_left,           "shift_left",           binary,      NoParams,                2, integer,         true,  simple,         none,  none)              \
  X(shift_right_arithmetic, "shift_right_arithmetic", binary,  NoParams,                2, integer,         true,  simple,         none,  none)              \
  X(shift_right_logical,  "shift_right_logical",  binary,      NoParams,                2, integer,         true,  simple,         none,  none)              \
  X(complex,              "complex",              binary,      NoParams,                2, floating,        true,  simple,         none,  none)
#define DYN_COMPARE_PRIMITIVES(X) \
  X(eq,                   "eq",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(ne,                   "ne",                   compare,     NoParams,                2, any,             true,  simple,         none,  none)              \
  X(lt,                   "lt",                   compare,     NoParams,                2, ordered,         true,  simple,         none,  none)              \
  X(le,                   "le",                   compare,     NoParams,                2, ordered,         true,  simple,         none,  none)              \
  X(gt,                   "gt",                   compare,     NoParams,                2, ordered,         true,  simple,         none,  none)              \
  X(ge,                   "ge",                   compare,     NoParams,                2, ordered,         true,  simple,         none,  none)
#define DYN_SELECT_PRIMITIVES(X) \
  X(select_n,             "select_n",             select,      NoParams,                3, any,             true,  simple,         none,  none)              \
  X(clamp,                "clamp",                select,      NoParams,                3, ordered,         true,  simple,         none,  none)
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
  X(rev,                  "rev",                  structural,  RevParams,               1, any,             true,  simple,         none,  none)              \
  X(pad,                  "pad",                  structural,  PadParams,               2, any,             true,  simple,         none,  none)              \
  X(gather,               "gather",               structural,  GatherParams,           -1, any,             true,  simple,         none,  none)
#define DYN_SCATTER_PRIMITIVES(X) \
  X(scatter,              "scatter",              scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_add,          "scatter-add",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_mul,          "scatter-mul",          scatter,     ScatterParams,           3, any,             false, simple,         none,  none)              \
  X(scatter_min,          "scatter-min",          scatter,     ScatterParams,           3, ordered,         false, simple,         none,  none)              \
  X(scatter_max,          "scatter-max",          scatter,     ScatterParams,           3, ordered,         false, simple,         none,  none)
#define DYN_REDUCTION_PRIMITIVES(X) \
  X(reduce_sum,           "reduce_sum",           reduction,   ReduceParams,            1, number,          false, simple,         none,  none)              \
  X(reduce_max,           "reduce_max",           reduction,   ReduceParams,            1, ordered,         false, simple,         none,  none)              \
  X(reduce_min,           "reduce_min",           reduction,   ReduceParams,            1, ordered,         false, simple,         none,  none)              \
  X(reduce_prod,          "reduce_prod",          reduction,   ReduceParams,            1, number,          false, simple,         none,  none)              \
  X(reduce_or,            "reduce_or",            reduction,   ReduceParams,            1, integer_or_bool, false, simple,         none,  none)              \
  X(reduce_and,           "reduce_and",           reduction,   ReduceParams,            1, integer_or_bool, false, simple,         none,  none)              \
  X(argmax,               "argmax",               reduction,   ArgReduceParams,         1, ordered,         false, simple,         none,  none)              \
  X(argmin,               "argmin",               reduction,   ArgReduceParams,         1, ordered,         false, simple,         none,  none)              \
  X(segment_sum_offsets,  "segment_sum_offsets",  reduction,   NoParams,                2, number,          false, simple,         none,  none)
#define DYN_CUMULATIVE_PRIMITIVES(X) \
  X(cumsum,               "cumsum",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cumprod,              "cumprod",              cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cummax,               "cummax",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)              \
  X(cummin,               "cummin",               cumulative,  CumulativeParams,        1, numeric,         false, simple,         none,  none)
#define DYN_SORT_PRIMITIVES(X) \
  X(sort,                 "sort",                 sort,        SortParams,             -1, any,             false, simple,         none,  none)              \
  X(top_k,                "top_k",                sort,        TopKParams,              1, numeric,         false, simple,         none,  none)
#define DYN_FFT_PRIMITIVES(X) \
  X(fft,                  "fft",                  fft,         FftParams,               1, inexact,         false, simple,         none,  none)
#define DYN_CONTRACTION_PRIMITIVES(X) \
  X(dot_general,          "dot_general",          contraction, DotGeneralParams,        2, number,          false, simple,         none,  none)
#define DYN_CONTROL_PRIMITIVES(X) \
  X(for_loop,             "for_loop",             control,     ForLoopParams,          -1, any,             false, simple,         none,  none)              \
  X(while_loop,           "while_loop",           control,     WhileLoopParams,        -1, any,             false, simple,         none,  none)              \
  X(cond,                 "cond",                 control,     CondParams,             -1, any,             false, simple,         none,  none)              \
  X(scan,                 "scan",                 control,     ScanParams,             -1, any,             false, simple,         none,  none)              \
  X(checkpoint,           "checkpoint",           control,     CheckpointParams,       -1, any,             false, simple,         none,  none)
#define DYN_EFFECT_PRIMITIVES(X) \
  X(debug_callback,       "debug_callback",       effect,      DebugCallbackParams,    -1, any,             false, simple,         none,  none)
#define DYN_COLLECTIVE_PRIMITIVES(X) \
  X(psum,                 "psum",                 collective,  CollectiveParams,        1, numeric,         false, simple,         none,  none)              \
  X(pmax,                 "pmax",                 collective,  CollectiveParams,        1, numeric,         false, simple,         none,  none)              \
  X(pmin,                 "pmin",                 collective,  CollectiveParams,        1, numeric,         false, simple,         none,  none)              \
  X(all_gather,           "all_gather",           collective,  CollectiveParams,        1, any,             false, simple,         none,  none)              \
  X(ppermute,             "ppermute",             collective,  CollectiveParams,        1, any,             false, simple,         none,  none)              \
  X(all_to_all,           "all_to_all",           collective,  CollectiveParams,        1, any,             false, simple,         none,  none)              \
  X(axis_index,           "axis_index",           collective,  CollectiveParams,        0, any,             false, simple,         none,  none)
// clang-format on

#define DYN_ELEMENTWISE_PRIMITIVES(X)                                                                     \
  DYN_UNARY_PRIMITIVES(X) DYN_BINARY_PRIMITIVES(X) DYN_COMPARE_PRIMITIVES(X) DYN_SELECT_PRIMITIVES(X) \
  DYN_CONVERT_PRIMITIVES(X)
#define DYN_PRIMITIVES(X)                                                                                  \
  DYN_ELEMENTWISE_PRIMITIVES(X) DYN_STRUCTURAL_PRIMITIVES(X) DYN_SCATTER_PRIMITIVES(X)                \
  DYN_REDUCTION_PRIMITIVES(X) DYN_CUMULATIVE_PRIMITIVES(X) DYN_SORT_PRIMITIVES(X) DYN_FFT_PRIMITIVES(X) DYN_CONTRACTION_PRIMITIVES(X) \
  DYN_CONTROL_PRIMITIVES(X) DYN_EFFECT_PRIMITIVES(X) DYN_COLLECTIVE_PRIMITIVES(X)

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
// The kinds whose equations may have several outputs, or none (effects); all
// others have exactly one.
constexpr bool has_several_outputs(Kind k) { return k == Kind::sort || k == Kind::control || k == Kind::effect; }

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
#define KIND fft
DYN_FFT_PRIMITIVES(DYN_X)
#undef KIND
#define KIND contraction
DYN_CONTRACTION_PRIMITIVES(DYN_X)
#undef KIND
#define KIND control
DYN_CONTROL_PRIMITIVES(DYN_X)
#undef KIND
#define KIND effect
DYN_EFFECT_PRIMITIVES(DYN_X)
#undef KIND
#define KIND collective
DYN_COLLECTIVE_PRIMITIVES(DYN_X)
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
    case Kind::fft:
    case Kind::contraction:
    case Kind::control:
    case Kind::effect:
    case Kind::collective: return -2;  // the row's own
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
         r.kind == Kind::fft || r.kind == Kind::contraction ||
         r.kind == Kind::control || r.kind == Kind::effect || r.kind == Kind::collective) && r.fused)
      return "scatters, reductions, cumulative ops, sort, fft, contractions, control flow and effects are never fused";
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
