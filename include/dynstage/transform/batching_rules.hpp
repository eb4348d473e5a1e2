// dynstage: batching rules (dyn::vmap), one per primitive.
//
// batch_rule(prim, values, dims, params) gives the primitive's outputs on
// operands that carry an extra batch axis, and where that axis is in each
// output. dims[k] is operand k's batch axis, or std::nullopt when the
// operand is not batched (the same for every lane: a constant, a literal, a
// closed-over array). The rules are written with bind, like the JVP rules
// (transform/jvp_rules.hpp), so they compute at once on concrete values and
// record the batched program under a trace (Autodidax's vmap_rules; the
// formulas are JAX's, jax/_src/lax/lax.py, slicing.py, and
// jax/_src/interpreters/batching.py).
//
// Most rules move the batch axes to the front (axis 0), broadcast the
// operands that are not batched to the batch size where the primitive needs
// equal shapes, and shift the axis parameters by one. Rank-0 operands of
// elementwise primitives are left rank 0 when unbatched (the primitives
// broadcast them); a batched rank-0 operand becomes [B] and is broadcast to
// [B] + the result's shape. gather and scatter get the lane number as a new
// leading index component (JAX's iota trick), so each lane indexes its own
// operand; a dynamic_slice or dynamic_update_slice whose start indices are
// batched becomes that gather or scatter. No rule loops over the lanes.
//
// A primitive on `batch_missing` below has no rule yet: batching it is a
// dyn::TypeError naming it and why; tests/transform/test_vmap.cpp walks the
// primitive table so that a new primitive needs a rule or a place there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../ir/params.hpp"
#include "../ir/prims.hpp"
#include "../trace/numpy.hpp"
#include "../trace/numpy_index.hpp"
#include "../trace/numpy_shape.hpp"
#include "../trace/trace.hpp"

namespace dyn::detail {

// A value's batch axis, or std::nullopt: not batched.
using BDim = std::optional<std::int64_t>;

struct BatchOut {
  std::vector<Value> values;
  std::vector<BDim> dims;  // one per value
};

// Primitives with no batching rule yet (batching one of them is a
// TypeError), and why. An equation none of whose operands is batched never
// needs a rule (it is bound as it is), so iota is not here.
inline const char* batch_missing(Prim p) {
  switch (p) {
    default: return nullptr;  // every primitive has a rule today
  }
}

// Out of line (DYNSTAGE_IMPLEMENTATION): the rules reach most of the trace layer.
BatchOut batch_rule(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params);
// The control-flow primitives' rules (transform/batching_control.hpp).
BatchOut batch_control(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params);
// The batching interpreter (transform/vmap.hpp): the outputs of `j` and their
// batch axes, for constants `consts` (not batched), arguments `args` with
// batch axes `dims`. An equation none of whose operands is batched is bound
// as it is. The control-flow rules walk their bodies with it.
BatchOut batch_eval(const Jaxpr& j, const std::vector<Value>& consts, const std::vector<Value>& args,
                    const std::vector<BDim>& dims);

// The lanes whose results the batch_eval under way keeps: a bool[size]
// (batched at 0) while a cond with a per-lane predicate runs a branch on
// every lane, or a while loop's body runs on lanes that have finished (JAX's
// rules, which then discard those lanes' results); none otherwise. A value
// fault in a discarded lane is one no lane alone raises, so batch_eval gives
// an integer pow a base of 1 there (0 ** negative is an ArithmeticError; a
// branch not taken does not fault, docs/errors.md; dynstage_fuzz seed 49564).
// Scoped (RAII); nested scopes AND their masks.
class ActiveLanes {
public:
  explicit ActiveLanes(const Value& mask);
  // No mask: dyn::vmap's own batch_eval (another vmap's lanes are not its).
  explicit ActiveLanes(std::nullopt_t);
  ~ActiveLanes();
  ActiveLanes(const ActiveLanes&) = delete;
  ActiveLanes& operator=(const ActiveLanes&) = delete;
  static const std::optional<Value>& current();

private:
  std::optional<Value> saved_;
};

namespace batch_detail {

// The size of the batch axis of the batched operands (the first one's:
// vmap checked that they agree).
Dim batch_size(const std::vector<Value>& x, const std::vector<BDim>& dims);
// `v` with its axis `from` moved to `to` (a transpose; none when equal).
Value moveaxis(const Value& v, std::int64_t from, std::int64_t to);
// `v` with its batch axis first; an unbatched `v` broadcast to [size] + its shape.
Value to_front(const Value& v, const BDim& d, const Dim& size);
// The shape of `v` without its batch axis.
Shape unbatched_shape(const Value& v, const BDim& d);
// broadcast_in_dim of `v` to `shape`, v's axes at `dims`; symbolic sizes become operands.
Value broadcast_dims(const Value& v, const Shape& shape, const std::vector<std::int64_t>& dims, bool stage = false);
// A shape parameter [size] + rest, the size's operand (when dynamic)
// appended to `dyn_ops`.
std::vector<std::int64_t> with_batch(const Dim& size, const std::vector<std::int64_t>& rest,
                                     std::vector<Value>& dyn_ops);
// Axes shifted by one (the batch axis in front).
std::vector<std::int64_t> shifted(const std::vector<std::int64_t>& axes, std::int64_t by = 1);

}  // namespace batch_detail

#ifdef DYNSTAGE_IMPLEMENTATION

namespace {
std::optional<Value>& active_lanes() {
  thread_local std::optional<Value> m;
  return m;
}
}  // namespace

ActiveLanes::ActiveLanes(const Value& mask) : saved_(active_lanes()) {
  active_lanes() = saved_ ? bind1(Prim::and_, {*saved_, mask}) : mask;
}
ActiveLanes::ActiveLanes(std::nullopt_t) : saved_(active_lanes()) { active_lanes().reset(); }
ActiveLanes::~ActiveLanes() { active_lanes() = saved_; }
const std::optional<Value>& ActiveLanes::current() { return active_lanes(); }

namespace batch_detail {

Dim batch_size(const std::vector<Value>& x, const std::vector<BDim>& dims) {
  for (std::size_t k = 0; k < x.size(); ++k)
    if (dims[k]) return x[k].shape().at(static_cast<std::size_t>(*dims[k]));
  internal_error("vmap: a batching rule called with no batched operand");
}

Value moveaxis(const Value& v, std::int64_t from, std::int64_t to) {
  if (from == to) return v;
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < v.rank(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return bind1(Prim::transpose, {v}, TransposeParams{perm});
}

inline bool symbolic(const Shape& s) {
  for (const Dim& d : s)
    if (!d.is_static()) return true;
  return false;
}

Value broadcast_dims(const Value& v, const Shape& shape, const std::vector<std::int64_t>& dims, bool stage) {
  if (v.shape() == shape) return v;
  BroadcastInDimParams p;
  std::vector<Value> ops{v};
  p.shape = shape_param("vmap", shape, ops);
  p.broadcast_dimensions = dims;
  return bind1(Prim::broadcast_in_dim, ops, p, stage || symbolic(shape) || v.is_tracer());
}

Value to_front(const Value& v, const BDim& d, const Dim& size) {
  if (d) return moveaxis(v, *d, 0);
  Shape s{size};
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < v.rank(); ++i) {
    s.push_back(v.shape()[static_cast<std::size_t>(i)]);
    dims.push_back(i + 1);
  }
  return broadcast_dims(v, s, dims);
}

Shape unbatched_shape(const Value& v, const BDim& d) {
  Shape s = v.shape();
  if (d) s.erase(s.begin() + *d);
  return s;
}

std::vector<std::int64_t> with_batch(const Dim& size, const std::vector<std::int64_t>& rest,
                                     std::vector<Value>& dyn_ops) {
  std::vector<std::int64_t> r = shape_param("vmap", Shape{size}, dyn_ops);
  r.insert(r.end(), rest.begin(), rest.end());
  return r;
}

std::vector<std::int64_t> shifted(const std::vector<std::int64_t>& axes, std::int64_t by) {
  std::vector<std::int64_t> r;
  for (std::int64_t a : axes) r.push_back(a + by);
  return r;
}

// Operands from `first` on are sizes (kDynamicDim entries of a shape
// parameter): a batched one would make the result ragged.
inline void check_sizes_unbatched(Prim p, const std::vector<BDim>& dims, std::size_t first) {
  for (std::size_t k = first; k < dims.size(); ++k)
    if (dims[k])
      fail<ShapeError>("vmap: operand #" + std::to_string(k) + " of " + std::string(prim_name(p)) +
                       " is a size that differs between the batch's lanes; the lanes of a vmapped array have one "
                       "shape (compute the size outside vmap, or pad to the largest)");
}

inline std::size_t count_dynamic(const std::vector<std::int64_t>& v) {
  std::size_t n = 0;
  for (std::int64_t d : v) n += d == kDynamicDim;
  return n;
}

// Elementwise: batch axes to the front, unbatched operands broadcast unless
// rank 0 (the primitive broadcasts those; not select_n's cases nor clamp's
// operand, found by the fuzzer: docs/reliability.md), a batched rank-0 operand
// broadcast to [size] + the result's shape.
BatchOut elementwise(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  if (x.size() == 1) return {{bind1(p, x, params)}, {dims[0]}};  // unary, convert: the axis stays
  const Dim size = batch_size(x, dims);
  Shape out;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const Shape s = unbatched_shape(x[k], dims[k]);
    if (s.size() > out.size()) out = s;
  }
  Shape full{size};
  full.insert(full.end(), out.begin(), out.end());
  std::vector<Value> in;
  for (std::size_t k = 0; k < x.size(); ++k) {
    // select_n's cases and clamp's operand have the result's shape (only the
    // predicate and the bounds may be rank 0): broadcast even when rank 0.
    const bool full_shape = (p == Prim::select_n && k > 0) || (p == Prim::clamp && k == 1);
    if (!dims[k] && x[k].rank() == 0 && !full_shape) {
      in.push_back(x[k]);
      continue;
    }
    Value v = to_front(x[k], dims[k], size);
    if (v.rank() == 1 && !out.empty()) v = broadcast_dims(v, full, {0});
    in.push_back(v);
  }
  return {{bind1(p, in, params)}, {0}};
}

// An i64 (or `dt`) scalar holding `d` (a literal, or the dimension's operand).
Value dim_scalar(const Dim& d, DType dt) {
  Value v;
  if (d.is_static()) v = scalar_value(Scalar::of<std::int64_t>(d.value()), false);
  else v = current_trace()->dim_operand(d);
  return v.dtype() == dt ? v : bind1(Prim::convert_element_type, {v}, ConvertParams{dt, false});
}

// Indices [size, ..., K] (batch axis first) with the lane number as a new first component:
// [size, ..., 1 + K] (JAX's _batch_dynamic_slice_indices / the iota that
// gather's and scatter's batching rules concatenate).
Value with_lane(const Value& idx) {
  Shape s = idx.shape();
  s.back() = Dim(1);
  const Value lane = iota(idx.dtype(), s, 0, symbolic(s) || idx.is_tracer());
  return concatenate({lane, idx}, idx.rank() - 1);
}

// Scalar start indices (batched or not) as one index array [size, 1 + n]:
// the lane, then the starts.
Value lane_starts(const std::vector<Value>& starts, const std::vector<BDim>& dims, const Dim& size, DType dt) {
  std::vector<Value> cols;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    Value s = to_front(starts[k], dims[k], size);
    if (s.dtype() != dt) s = bind1(Prim::convert_element_type, {s}, ConvertParams{dt, false});
    cols.push_back(broadcast_dims(s, Shape{size, Dim(1)}, {0}));
  }
  const Value lane = iota(dt, Shape{size, Dim(1)}, 0, symbolic(Shape{size}) || (!cols.empty() && cols[0].is_tracer()));
  cols.insert(cols.begin(), lane);
  return concatenate(cols, 1);
}

BatchOut structural(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  const Dim size = batch_size(x, dims);
  switch (p) {
    case Prim::broadcast_in_dim: {
      check_sizes_unbatched(p, dims, 1);
      const auto& bp = std::get<BroadcastInDimParams>(params);
      std::vector<Value> ops{to_front(x[0], dims[0], size)};
      BroadcastInDimParams q{with_batch(size, bp.shape, ops), {0}};
      for (std::int64_t d : bp.broadcast_dimensions) q.broadcast_dimensions.push_back(d + 1);
      ops.insert(ops.end(), x.begin() + 1, x.end());
      return {{bind1(p, ops, q)}, {0}};
    }
    case Prim::reshape: {
      check_sizes_unbatched(p, dims, 1);
      std::vector<Value> ops{to_front(x[0], dims[0], size)};
      ReshapeParams q{with_batch(size, std::get<ReshapeParams>(params).new_sizes, ops)};
      ops.insert(ops.end(), x.begin() + 1, x.end());
      return {{bind1(p, ops, q)}, {0}};
    }
    case Prim::transpose: {
      TransposeParams q{{0}};
      for (std::int64_t a : std::get<TransposeParams>(params).permutation) q.permutation.push_back(a + 1);
      return {{bind1(p, {to_front(x[0], dims[0], size)}, q)}, {0}};
    }
    case Prim::squeeze:
      return {{bind1(p, {to_front(x[0], dims[0], size)}, SqueezeParams{shifted(std::get<SqueezeParams>(params).dimensions)})},
              {0}};
    case Prim::rev:
      return {{bind1(p, {to_front(x[0], dims[0], size)}, RevParams{shifted(std::get<RevParams>(params).dimensions)})},
              {0}};
    case Prim::concatenate: {
      std::vector<Value> ops;
      for (std::size_t k = 0; k < x.size(); ++k) ops.push_back(to_front(x[k], dims[k], size));
      return {{bind1(p, ops, ConcatenateParams{std::get<ConcatenateParams>(params).dimension + 1})}, {0}};
    }
    case Prim::slice: {
      check_sizes_unbatched(p, dims, 1);
      const auto& sp = std::get<SliceParams>(params);
      SliceParams q;
      q.start_indices = sp.start_indices;
      q.start_indices.insert(q.start_indices.begin(), 0);
      // Operands: the starts' sizes, then the limits': the batch size goes between.
      const std::size_t nstart = count_dynamic(sp.start_indices);
      std::vector<Value> ops{to_front(x[0], dims[0], size)};
      ops.insert(ops.end(), x.begin() + 1, x.begin() + 1 + static_cast<std::ptrdiff_t>(nstart));
      q.limit_indices = with_batch(size, sp.limit_indices, ops);
      ops.insert(ops.end(), x.begin() + 1 + static_cast<std::ptrdiff_t>(nstart), x.end());
      if (!sp.strides.empty()) {
        q.strides = sp.strides;
        q.strides.insert(q.strides.begin(), 1);
      }
      return {{bind1(p, ops, q)}, {0}};
    }
    case Prim::dynamic_slice: {
      const auto& dp = std::get<DynamicSliceParams>(params);
      const std::size_t r = static_cast<std::size_t>(x[0].rank() - (dims[0] ? 1 : 0));
      check_sizes_unbatched(p, dims, 1 + r);
      const auto first_size = x.begin() + 1 + static_cast<std::ptrdiff_t>(r);
      bool starts_batched = false;
      for (std::size_t k = 1; k <= r; ++k) starts_batched = starts_batched || dims[k].has_value();
      const Value op = to_front(x[0], dims[0], size);
      if (!starts_batched) {  // one more start (0) and size (the batch) in front
        const DType dt = r ? x[1].dtype() : DType::i32;
        std::vector<Value> ops{op, dim_scalar(Dim(0), dt)};
        ops.insert(ops.end(), x.begin() + 1, first_size);
        DynamicSliceParams q{with_batch(size, dp.slice_sizes, ops)};
        ops.insert(ops.end(), first_size, x.end());
        return {{bind1(p, ops, q)}, {0}};
      }
      // Per-lane starts: a gather of one slice per lane (clamped alike).
      std::vector<Value> starts(x.begin() + 1, first_size);
      std::vector<BDim> sdims(dims.begin() + 1, dims.begin() + 1 + static_cast<std::ptrdiff_t>(r));
      GatherParams g;
      for (std::size_t k = 0; k <= r; ++k) g.start_index_map.push_back(static_cast<std::int64_t>(k));
      for (std::size_t k = 1; k <= r; ++k) g.offset_dims.push_back(static_cast<std::int64_t>(k));
      g.collapsed_slice_dims = {0};
      g.slice_sizes = dp.slice_sizes;
      g.slice_sizes.insert(g.slice_sizes.begin(), 1);
      std::vector<Value> ops{op, lane_starts(starts, sdims, size, x[1].dtype())};
      ops.insert(ops.end(), first_size, x.end());
      return {{bind1(Prim::gather, ops, g)}, {0}};
    }
    case Prim::dynamic_update_slice: {
      const std::size_t r = x.size() - 2;
      bool starts_batched = false;
      for (std::size_t k = 2; k < x.size(); ++k) starts_batched = starts_batched || dims[k].has_value();
      const Value op = to_front(x[0], dims[0], size);
      const Value upd = to_front(x[1], dims[1], size);
      if (!starts_batched) {
        std::vector<Value> ops{op, upd, dim_scalar(Dim(0), r ? x[2].dtype() : DType::i32)};
        ops.insert(ops.end(), x.begin() + 2, x.end());
        return {{bind1(p, ops, NoParams{})}, {0}};
      }
      // Per-lane starts: a scatter of each lane's update into its row, the
      // starts clamped first as dynamic_update_slice clamps them (scatter
      // would drop an update that does not fit instead).
      const DType dt = x[2].dtype();
      std::vector<Value> starts;
      for (std::size_t k = 0; k < r; ++k) {
        const Shape xs = unbatched_shape(x[0], dims[0]), us = unbatched_shape(x[1], dims[1]);
        const Value hi = bind1(Prim::sub, {dim_scalar(xs[k], dt), dim_scalar(us[k], dt)});
        starts.push_back(bind1(Prim::clamp, {dim_scalar(Dim(0), dt), x[2 + k], hi}));
      }
      ScatterParams sc;
      for (std::size_t k = 1; k <= r; ++k) sc.update_window_dims.push_back(static_cast<std::int64_t>(k));
      sc.inserted_window_dims = {0};
      for (std::size_t k = 0; k <= r; ++k) sc.scatter_dims_to_operand_dims.push_back(static_cast<std::int64_t>(k));
      std::vector<BDim> sdims(dims.begin() + 2, dims.end());
      return {{bind1(Prim::scatter, {op, lane_starts(starts, sdims, size, dt), upd}, sc)}, {0}};
    }
    case Prim::pad: {
      PadParams q = std::get<PadParams>(params);
      q.padding_config.insert(q.padding_config.begin(), PadParams::Axis{0, 0, 0});
      const Value op = to_front(x[0], dims[0], size);
      if (!dims[1]) return {{bind1(p, {op, x[1]}, q)}, {0}};
      // A padding value per lane (JAX's _pad_batch_rule): pad with anything,
      // then choose each lane's value where a padded mask is false.
      const Value padded = bind1(p, {op, x[1].dtype() == DType::bool_ ? scalar_value(Scalar::of<bool>(false), false)
                                                                  : dim_scalar(Dim(0), x[1].dtype())}, q);
      const Value ones = broadcast_dims(scalar_value(Scalar::of<bool>(true), false), op.shape(), {}, op.is_tracer());
      const Value mask = bind1(p, {ones, scalar_value(Scalar::of<bool>(false), false)}, q);
      const Value fill = broadcast_dims(x[1], padded.shape(), {0});
      return {{bind1(Prim::select_n, {mask, fill, padded})}, {0}};
    }
    case Prim::gather: {
      check_sizes_unbatched(p, dims, 2);
      GatherParams g = std::get<GatherParams>(params);
      g.offset_dims = shifted(g.offset_dims);
      std::vector<Value> ops;
      if (!dims[0]) {  // the indices' batch axis is one more batch axis of the output
        ops = {x[0], to_front(x[1], dims[1], size)};
      } else {         // each lane gathers from its own operand: the lane is an index component
        ops = {to_front(x[0], dims[0], size), with_lane(to_front(x[1], dims[1], size))};
        g.collapsed_slice_dims = shifted(g.collapsed_slice_dims);
        g.collapsed_slice_dims.insert(g.collapsed_slice_dims.begin(), 0);
        g.start_index_map = shifted(g.start_index_map);
        g.start_index_map.insert(g.start_index_map.begin(), 0);
        g.slice_sizes.insert(g.slice_sizes.begin(), 1);
      }
      ops.insert(ops.end(), x.begin() + 2, x.end());
      return {{bind1(p, ops, g)}, {0}};
    }
    case Prim::iota:  // its operands are sizes: batched, the lanes would differ in shape
      check_sizes_unbatched(p, dims, 0);
      break;
    default: break;
  }
  internal_error("vmap: no structural rule for " + std::string(prim_name(p)));
}

// scatter & co. (JAX's _scatter_batching_rule): everything batched in
// front, the lane a new first index component and inserted window axis.
BatchOut scatter_rule(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  const Dim size = batch_size(x, dims);
  ScatterParams s = std::get<ScatterParams>(params);
  s.update_window_dims = shifted(s.update_window_dims);
  s.inserted_window_dims = shifted(s.inserted_window_dims);
  s.inserted_window_dims.insert(s.inserted_window_dims.begin(), 0);
  s.scatter_dims_to_operand_dims = shifted(s.scatter_dims_to_operand_dims);
  s.scatter_dims_to_operand_dims.insert(s.scatter_dims_to_operand_dims.begin(), 0);
  const Value op = to_front(x[0], dims[0], size);
  const Value idx = with_lane(to_front(x[1], dims[1], size));
  return {{bind1(p, {op, idx, to_front(x[2], dims[2], size)}, s)}, {0}};
}

// dot_general (JAX's _dot_general_batch_rule): both batched, the batch
// axis is one more batch dimension; one batched, it is a free axis of that
// side, which the output places after the batch axes (lhs) or after the
// lhs's free axes (rhs).
BatchOut dot_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  DotGeneralParams d = std::get<DotGeneralParams>(params);
  const Dim size = batch_size(x, dims);
  const std::int64_t nbatch = static_cast<std::int64_t>(d.lhs_batch.size());
  if (dims[0] && dims[1]) {
    d.lhs_batch = shifted(d.lhs_batch);
    d.lhs_batch.insert(d.lhs_batch.begin(), 0);
    d.rhs_batch = shifted(d.rhs_batch);
    d.rhs_batch.insert(d.rhs_batch.begin(), 0);
    d.lhs_contracting = shifted(d.lhs_contracting);
    d.rhs_contracting = shifted(d.rhs_contracting);
    return {{bind1(Prim::dot_general, {to_front(x[0], dims[0], size), to_front(x[1], dims[1], size)}, d)}, {0}};
  }
  if (dims[0]) {
    d.lhs_batch = shifted(d.lhs_batch);
    d.lhs_contracting = shifted(d.lhs_contracting);
    return {{bind1(Prim::dot_general, {to_front(x[0], dims[0], size), x[1]}, d)}, {nbatch}};
  }
  const std::int64_t lhs_free =
      x[0].rank() - nbatch - static_cast<std::int64_t>(d.lhs_contracting.size());
  d.rhs_batch = shifted(d.rhs_batch);
  d.rhs_contracting = shifted(d.rhs_contracting);
  return {{bind1(Prim::dot_general, {x[0], to_front(x[1], dims[1], size)}, d)}, {nbatch + lhs_free}};
}

}  // namespace batch_detail

BatchOut batch_rule(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  using namespace batch_detail;
  if (const char* why = batch_missing(p))
    fail<TypeError>("vmap: cannot batch " + std::string(prim_name(p)) + ": " + why);
  switch (prim_info(p).kind) {
    case Kind::unary:
    case Kind::binary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert: return elementwise(p, x, dims, params);
    case Kind::structural: return structural(p, x, dims, params);
    case Kind::scatter: return scatter_rule(p, x, dims, params);
    case Kind::reduction: {
      if (p == Prim::segment_sum_offsets) {  // data and/or offsets batched: one flat call (numpy_index.hpp)
        const Dim size = batch_size(x, dims);
        return {{segment_sum_offsets_batched(to_front(x[0], dims[0], size), to_front(x[1], dims[1], size))}, {0}};
      }
      const Value op = to_front(x[0], dims[0], batch_size(x, dims));
      if (p == Prim::argmax || p == Prim::argmin) {
        ArgReduceParams a = std::get<ArgReduceParams>(params);
        a.axes = shifted(a.axes);
        return {{bind1(p, {op}, a)}, {0}};
      }
      return {{bind1(p, {op}, ReduceParams{shifted(std::get<ReduceParams>(params).axes)})}, {0}};
    }
    case Kind::cumulative: {
      CumulativeParams c = std::get<CumulativeParams>(params);
      ++c.axis;
      return {{bind1(p, {to_front(x[0], dims[0], batch_size(x, dims))}, c)}, {0}};
    }
    case Kind::sort: {
      const Dim size = batch_size(x, dims);
      std::vector<Value> ops;
      for (std::size_t k = 0; k < x.size(); ++k) ops.push_back(to_front(x[k], dims[k], size));
      Params q = params;
      if (p == Prim::top_k) ++std::get<TopKParams>(q).axis;
      else ++std::get<SortParams>(q).dimension;
      const std::vector<Value> outs = bind(p, ops, q);
      return {outs, std::vector<BDim>(outs.size(), BDim{0})};
    }
    case Kind::fft:  // acts on the trailing axes: the batch axis goes in front (JAX's _fft_batching_rule)
      return {{bind1(p, {to_front(x[0], dims[0], batch_size(x, dims))}, params)}, {0}};
    case Kind::contraction: return dot_rule(x, dims, params);
    case Kind::effect: return {bind(p, x, params), {}};  // debug_callback prints the batched operands
    case Kind::collective: {
      // The batch axis is one more axis of every rank's block: moved to the
      // front, the collective's axes shift by one (psum pmax pmin ppermute
      // act elementwise on the block; axis_index has no operand).
      if (x.empty()) return {bind(p, x, params, true), {std::nullopt}};
      CollectiveParams c = std::get<CollectiveParams>(params);
      const Value op = to_front(x[0], dims[0], batch_size(x, dims));
      if (p == Prim::all_gather || p == Prim::all_to_all) ++c.dimension;
      if (p == Prim::all_to_all) ++c.concat_axis;
      return {{bind1(p, {op}, c, true)}, {0}};
    }
    case Kind::control: return batch_control(p, x, dims, params);
  }
  internal_error("vmap: no batching rule for " + std::string(prim_name(p)));
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
