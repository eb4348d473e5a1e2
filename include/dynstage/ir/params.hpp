// dynstage: the parameters of primitives, one struct per primitive family.
//
// Params are typed per primitive and held in the Params variant; a primitive
// without parameters uses NoParams. Shape-valued parameters hold kDynamicDim
// for a dimension supplied at run time as an extra i64[] operand (printed
// `None`, as Catalyst's `shape=(None,)`). Which primitive uses which struct
// is a column of the primitive table (prims.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../array/dtype.hpp"

namespace dyn {

struct Jaxpr;  // jaxpr.hpp; control-flow params hold their bodies

namespace detail {

inline constexpr std::int64_t kDynamicDim = INT64_MIN;

struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};
struct ConvertParams {
  DType new_dtype;
  bool weak_type = false;
  friend bool operator==(const ConvertParams&, const ConvertParams&) = default;
};
// conj[input_dtype=complex64]: lax.conj's parameter, the operand's dtype
// (JAX keeps it for its transpose rule; a float operand gives the complex
// dtype of its width).
struct ConjParams {
  DType input_dtype = DType::c64;
  friend bool operator==(const ConjParams&, const ConjParams&) = default;
};
struct RoundParams {
  int rounding_method = 1;  // 0: away from zero, 1: to nearest even (numpy's round)
  friend bool operator==(const RoundParams&, const RoundParams&) = default;
};
// integer_pow[y=n]: x ** n for a C++ int n (lax.integer_pow), computed by
// repeated squaring (JAX's lowering, so eager and jit multiply alike).
struct IntegerPowParams {
  int y = 2;
  friend bool operator==(const IntegerPowParams&, const IntegerPowParams&) = default;
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
// rev (lax.rev): the operand with the order of the elements along each axis
// of `dimensions` reversed.
struct RevParams {
  std::vector<std::int64_t> dimensions;
  friend bool operator==(const RevParams&, const RevParams&) = default;
};
// pad (lax.pad): operands the array and a scalar of its dtype (the padding
// value). Per axis (lo, hi, interior): `interior` padding elements between
// neighbours, `lo` before and `hi` after; a negative lo/hi removes elements
// from that end instead. Output size lo + hi + n + max(n - 1, 0) * interior.
struct PadParams {
  struct Axis {
    std::int64_t lo = 0, hi = 0, interior = 0;
    friend bool operator==(const Axis&, const Axis&) = default;
  };
  std::vector<Axis> padding_config;
  friend bool operator==(const PadParams&, const PadParams&) = default;
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

// sort (lax.sort): N >= 1 operands of one shape (any dtypes) reordered
// along `dimension` by one permutation, the one that sorts the first
// num_keys operands lexicographically: ascending, NaNs last (all NaNs
// equal), -0.0 equal to 0.0, false < true; is_stable keeps equal keys in
// their order. One output per operand. jnp.sort binds one operand;
// jnp.argsort binds (x, iota) with num_keys=1 and keeps the second output.
struct SortParams {
  std::int64_t dimension = 0;
  bool is_stable = true;
  int num_keys = 1;
  friend bool operator==(const SortParams&, const SortParams&) = default;
};
// top_k (lax.top_k): the k largest elements along `axis` (the operand's
// last axis, as jax.lax.top_k binds it by default), in descending order,
// NaNs largest, equal elements lower index first; outputs (values, i32
// indices), the operand's shape with the axis of size k.
struct TopKParams {
  std::int64_t k = 0;
  std::int64_t axis = 0;
  friend bool operator==(const TopKParams&, const TopKParams&) = default;
};
// fft (lax.fft, XLA's Fft): a discrete Fourier transform over the operand's
// trailing len(fft_lengths) axes. fft_type is JAX's FftType: 0 FFT (complex
// -> complex, e^{-2 pi i jk/n}), 1 IFFT (complex -> complex, e^{+2 pi i
// jk/n} divided by the product of the lengths), 2 RFFT (real -> complex,
// the last axis n -> n/2 + 1), 3 IRFFT (complex -> real, the inverse of
// RFFT: the last axis n/2 + 1 -> n = fft_lengths[-1]). An fft_lengths entry
// kDynamicDim (printed None) is the operand's own size on that axis (a
// symbolic or dynamic size; IRFFT's last length is always static).
enum class FftType : std::int32_t { fft = 0, ifft = 1, rfft = 2, irfft = 3 };
struct FftParams {
  FftType fft_type = FftType::fft;
  std::vector<std::int64_t> fft_lengths;
  friend bool operator==(const FftParams&, const FftParams&) = default;
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

// checkpoint (dyn::checkpoint; JAX's remat primitive, printed as JAX prints
// it): runs `jaxpr` on its operands (a body in Catalyst's no-constant form:
// the equation passes the values it closes over first). Reverse mode saves
// none of the body's intermediates: the linear part is another checkpoint
// (differentiated=True) that recomputes them from the operands, and its
// transpose recomputes them again in the backward pass (JAX's policy=None,
// nothing saveable). `prevent_cse` is JAX's flag, printed, not acted on: the
// LLVM backend inlines the body and does no common-subexpression elimination
// across equations.
struct CheckpointParams {
  std::shared_ptr<const Jaxpr> jaxpr;
  bool prevent_cse = true;
  bool differentiated = false;
  friend bool operator==(const CheckpointParams&, const CheckpointParams&) = default;
};

// debug_callback (dyn::debug_print): the {fmt}-style format string its
// operands are printed with (eager/debug_print.hpp). JAX's debug_callback
// holds a Python callback instead; dynstage's one callback is printing.
struct DebugCallbackParams {
  std::string fmt;
  friend bool operator==(const DebugCallbackParams&, const DebugCallbackParams&) = default;
};

// The collectives (psum pmax pmin all_gather ppermute all_to_all axis_index;
// runtime/distributed.hpp, API.md section 16). One struct for the family;
// `form` says which of JAX's parameter lists it prints (print.hpp):
//   reduce:  psum[axes=('x',) axis_index_groups=None]   (pmax, pmin)
//   gather:  all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('x',) axis_size=2 tiled=False]
//   permute: ppermute[axis_name=x perm=((0, 1), (1, 0))]
//   to_all:  all_to_all[axis_index_groups=None axis_name=x concat_axis=0 split_axis=0 tiled=False]
//   index:   axis_index[axis_name=x]
// `mesh` (the id of the dyn::Mesh the names belong to, not printed) is what
// the eager kernel and the runtime find the ranks by; `axis_size` is the
// product of the named axes' sizes, recorded at bind time so that the shape
// rules need no mesh.
enum class CollectiveForm : std::uint8_t { reduce, gather, permute, to_all, index };
struct CollectiveParams {
  CollectiveForm form = CollectiveForm::reduce;
  std::vector<std::string> axes = {"x"};
  int mesh = 0;                  // mesh 0: the one-rank mesh ('x',) every process has
  std::int64_t axis_size = 1;
  std::int64_t dimension = 0;    // all_gather_dimension; all_to_all's split_axis
  std::int64_t concat_axis = 0;  // all_to_all
  bool tiled = false;            // all_gather, all_to_all
  std::vector<std::pair<std::int64_t, std::int64_t>> perm;  // ppermute: (source, destination) pairs
  friend bool operator==(const CollectiveParams&, const CollectiveParams&) = default;
  // The params of another collective over the same axes of the same mesh.
  CollectiveParams with_form(CollectiveForm f) const {
    CollectiveParams c;
    c.form = f;
    c.axes = axes;
    c.mesh = mesh;
    c.axis_size = axis_size;
    return c;
  }
};

using Params = std::variant<NoParams, ConvertParams, ConjParams, RoundParams, IntegerPowParams, BroadcastInDimParams, ReshapeParams,
                            TransposeParams, SqueezeParams, ConcatenateParams, SliceParams, DynamicSliceParams,
                            RevParams, PadParams, IotaParams, GatherParams, ScatterParams, ReduceParams, ArgReduceParams, CumulativeParams, SortParams, TopKParams, FftParams,
                            DotGeneralParams, ForLoopParams, WhileLoopParams, CondParams, ScanParams, CheckpointParams,
                            DebugCallbackParams, CollectiveParams>;
}  // namespace detail
}  // namespace dyn
