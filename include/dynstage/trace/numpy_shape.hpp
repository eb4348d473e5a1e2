// dynstage: the numpy layer's shape operations (reshape with -1, transpose,
// expand_dims, squeeze, concatenate, slices), creation (full, iota) and
// linear algebra (dot and matmul in terms of dot_general; matmul
// broadcasts its batch dimensions with the shape operations). Non-template
// code over detail::Value, as numpy.hpp, whose promotion, broadcasting and
// axis normalisation it uses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "numpy.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Shape operations.

Value reshape(const Value& x, const Shape& sizes);
#ifdef DYNSTAGE_IMPLEMENTATION
Value reshape(const Value& x, const Shape& sizes) {
  Shape in = x.shape();
  Dim total = 1;
  for (const Dim& d : in) total *= d;
  int infer = -1;
  Dim known = 1;
  Shape out = sizes;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Dim& d = sizes[i];
    if (d == Dim(-1)) {
      if (infer >= 0) fail<ShapeError>("reshape: can only specify one unknown dimension (-1), got " + shape_str(sizes));
      infer = static_cast<int>(i);
    } else {
      if (d.is_static() && d.value() < 0)
        fail<ShapeError>("reshape: negative dimension in new shape " + shape_str(sizes));
      known *= d;
    }
  }
  if (infer >= 0) {
    if (known == Dim(0) || mod(total, known) != Dim(0))
      fail<ShapeError>("reshape: cannot reshape array of shape " + shape_str(in) + " (size " + total.to_string() +
                       ") into shape " + shape_str(sizes));
    out[static_cast<std::size_t>(infer)] = floordiv(total, known);
  }
  if (out == in) return x;
  std::vector<Value> operands{x};
  ReshapeParams p;
  p.new_sizes = shape_param("reshape", out, operands);
  return bind1(Prim::reshape, operands, p);
}
#endif

Value transpose(const Value& x, std::vector<std::int64_t> perm);
#ifdef DYNSTAGE_IMPLEMENTATION
Value transpose(const Value& x, std::vector<std::int64_t> perm) {
  int r = x.rank();
  if (perm.empty())
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  for (auto& a : perm) a = normalize_axis("transpose", a, r);
  return bind1(Prim::transpose, {x}, TransposeParams{perm});
}
#endif

Value expand_dims(const Value& x, std::int64_t axis);
#ifdef DYNSTAGE_IMPLEMENTATION
Value expand_dims(const Value& x, std::int64_t axis) {
  int r = x.rank();
  std::int64_t ax = normalize_axis("expand_dims", axis, r + 1);
  Shape in = x.shape();
  BroadcastInDimParams p;
  Shape out;
  for (int i = 0, k = 0; i <= r; ++i) {
    if (i == ax) {
      out.emplace_back(1);
      continue;
    }
    out.push_back(in[static_cast<std::size_t>(k)]);
    p.broadcast_dimensions.push_back(i);
    ++k;
  }
  std::vector<Value> operands{x};
  p.shape = shape_param("expand_dims", out, operands);
  return bind1(Prim::broadcast_in_dim, operands, p);
}
#endif

Value squeeze(const Value& x, const std::vector<std::int64_t>& axes);
#ifdef DYNSTAGE_IMPLEMENTATION
Value squeeze(const Value& x, const std::vector<std::int64_t>& axes) {
  Shape in = x.shape();
  std::vector<std::int64_t> ax;
  if (axes.empty()) {
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i] == Dim(1)) ax.push_back(static_cast<std::int64_t>(i));
  } else {
    ax = normalize_axes("squeeze", axes, x.rank(), false);
  }
  if (ax.empty()) return x;
  return bind1(Prim::squeeze, {x}, SqueezeParams{ax});
}
#endif

Value concatenate(std::vector<Value> xs, std::int64_t axis);
#ifdef DYNSTAGE_IMPLEMENTATION
Value concatenate(std::vector<Value> xs, std::int64_t axis) {
  if (xs.empty()) fail<ShapeError>("concatenate: needs at least one array");
  lift_all(xs);
  TypeInfo t = result_type(xs);
  promote_to(xs, t);
  for (const auto& v : xs)
    if (v.rank() == 0) fail<ShapeError>("concatenate: zero-dimensional arrays cannot be concatenated");
  std::int64_t ax = normalize_axis("concatenate", axis, xs[0].rank());
  if (xs.size() == 1) return xs[0];
  return bind1(Prim::concatenate, xs, ConcatenateParams{ax});
}
#endif

// Symbolic start and limit indices become operands (kDynamicDim).
Value slice(const Value& x, const Shape& starts, const Shape& limits, const std::vector<std::int64_t>& strides);
#ifdef DYNSTAGE_IMPLEMENTATION
Value slice(const Value& x, const Shape& starts, const Shape& limits, const std::vector<std::int64_t>& strides) {
  std::vector<Value> operands{x};
  SliceParams p;
  for (const auto& [bounds, param] : {std::pair{&starts, &p.start_indices}, std::pair{&limits, &p.limit_indices}})
    for (const Dim& d : *bounds) {
      if (d.is_static()) {
        param->push_back(d.value());
        continue;
      }
      TraceState* t = current_trace();
      if (!t) fail<TypeError>("slice: the symbolic index " + d.to_string() + " can only be used while tracing");
      operands.push_back(t->dim_operand(d));
      param->push_back(kDynamicDim);
    }
  p.strides = strides;
  bool unit = std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 1; });
  if (unit) p.strides.clear();
  return bind1(Prim::slice, operands, p);
}
#endif

// lax.slice_in_dim: x[start:limit:stride] along `axis`.
Value slice_in_dim(const Value& x, const Dim& start, const Dim& limit, std::int64_t stride, std::int64_t axis);
#ifdef DYNSTAGE_IMPLEMENTATION
Value slice_in_dim(const Value& x, const Dim& start, const Dim& limit, std::int64_t stride, std::int64_t axis) {
  const std::int64_t ax = normalize_axis("slice_in_dim", axis, x.rank());
  Shape starts(static_cast<std::size_t>(x.rank()), Dim(0)), limits = x.shape();
  std::vector<std::int64_t> strides(static_cast<std::size_t>(x.rank()), 1);
  starts[static_cast<std::size_t>(ax)] = start;
  limits[static_cast<std::size_t>(ax)] = limit;
  strides[static_cast<std::size_t>(ax)] = stride;
  return slice(x, starts, limits, strides);
}
#endif

// Start indices of dynamic slices: scalar integers (promoted to a common
// integer type, as JAX does, then to i32 or i64: index_dtype_for).
std::vector<Value> index_operands(std::string_view op, std::vector<Value> starts);
#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<Value> index_operands(std::string_view op, std::vector<Value> starts) {
  lift_all(starts);
  for (const auto& s : starts) {
    if (s.rank() != 0 || !is_integer(s.dtype()) )
      fail<TypeError>(std::string(op) + ": start indices must be scalar integers, got " + aval_str(s.aval()));
  }
  if (!starts.empty()) {
    TypeInfo t = result_type(starts);
    if (t.weak) t = TypeInfo{DType::i32, false};
    promote_to(starts, TypeInfo{index_dtype_for(t.dtype), false});
  }
  return starts;
}
#endif

// Symbolic or traced slice sizes become operands after the start indices
// (kDynamicDim, printed None, as JAX's dynamic shapes do).
Value dynamic_slice(const Value& x, std::vector<Value> starts, const Shape& sizes);
#ifdef DYNSTAGE_IMPLEMENTATION
Value dynamic_slice(const Value& x, std::vector<Value> starts, const Shape& sizes) {
  if (static_cast<int>(starts.size()) != x.rank())
    fail<IndexError>("dynamic_slice: " + std::to_string(starts.size()) + " start indices for an array of rank " +
                     std::to_string(x.rank()));
  std::vector<Value> ops{x};
  for (auto& s : index_operands("dynamic_slice", std::move(starts))) ops.push_back(std::move(s));
  lift_all(ops);
  DynamicSliceParams p;
  p.slice_sizes = shape_param("dynamic_slice", sizes, ops);
  return bind1(Prim::dynamic_slice, ops, p);
}
#endif

Value dynamic_update_slice(const Value& x, const Value& update, std::vector<Value> starts);
#ifdef DYNSTAGE_IMPLEMENTATION
Value dynamic_update_slice(const Value& x, const Value& update, std::vector<Value> starts) {
  if (static_cast<int>(starts.size()) != x.rank())
    fail<IndexError>("dynamic_update_slice: " + std::to_string(starts.size()) +
                     " start indices for an array of rank " + std::to_string(x.rank()));
  std::vector<Value> xu{x, update};
  lift_all(xu);
  TypeInfo t = TypeInfo{x.dtype(), false};
  xu[1] = convert(xu[1], t.dtype);
  std::vector<Value> ops{xu[0], xu[1]};
  for (auto& s : index_operands("dynamic_update_slice", std::move(starts))) ops.push_back(std::move(s));
  lift_all(ops);
  return bind1(Prim::dynamic_update_slice, ops, NoParams{});
}
#endif

// ---------------------------------------------------------------------------
// Creation.

Value full(const Shape& shape, const Value& fill, DType dt, bool stage = false);
#ifdef DYNSTAGE_IMPLEMENTATION
Value full(const Shape& shape, const Value& fill, DType dt, bool stage) {
  Value v = convert(fill, dt);
  BroadcastInDimParams p;
  std::vector<Value> operands{v};
  p.shape = shape_param("full", shape, operands);
  return bind1(Prim::broadcast_in_dim, operands, p, stage);
}
#endif

// lax.broadcasted_iota: the index along `dimension` of `shape` (arange is
// the rank-1 case, and names itself in errors).
Value iota(DType dt, const Shape& shape, std::int64_t dimension, bool stage = false);  // out of line (Params)
#ifdef DYNSTAGE_IMPLEMENTATION
Value iota(DType dt, const Shape& shape, std::int64_t dimension, bool stage) {
  const char* op = shape.size() == 1 ? "arange" : "iota";
  for (const Dim& n : shape)
    if (n.is_static() && n.value() < 0)
      fail<ShapeError>(std::string(op) + ": negative size " + (shape.size() == 1 ? n.to_string() : shape_str(shape)));
  const std::int64_t dim = normalize_axis(op, dimension, static_cast<int>(shape.size()));
  std::vector<Value> operands;
  IotaParams p{dt, shape_param(op, shape, operands), dim};
  return bind1(Prim::iota, operands, p, stage);
}
#endif

// ---------------------------------------------------------------------------
// Linear algebra: numpy dot and matmul in terms of dot_general.

Value dot_general(const Value& a, const Value& b, DotGeneralParams p);
#ifdef DYNSTAGE_IMPLEMENTATION
Value dot_general(const Value& a, const Value& b, DotGeneralParams p) {
  std::vector<Value> vs{a, b};
  lift_all(vs);
  TypeInfo t = result_type(vs);
  promote_to(vs, TypeInfo{t.dtype, false});
  return bind1(Prim::dot_general, vs, p);
}
#endif

Value dot(const Value& a, const Value& b);
#ifdef DYNSTAGE_IMPLEMENTATION
Value dot(const Value& a, const Value& b) {
  int ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0) return binary(Prim::mul, a, b);
  DotGeneralParams p;
  p.lhs_contracting = {ra - 1};
  p.rhs_contracting = {rb == 1 ? 0 : rb - 2};
  return dot_general(a, b, p);
}
#endif

Value matmul(Value a, Value b);
#ifdef DYNSTAGE_IMPLEMENTATION
Value matmul(Value a, Value b) {
  int ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0) fail<ShapeError>("matmul: operands must have rank >= 1, got " + shape_str(a.shape()) +
                                           " and " + shape_str(b.shape()));
  if (ra <= 2 && rb <= 2) return dot(a, b);
  // A concrete operand of a traced matmul becomes a constvar first, so that its
  // batch broadcast is staged rather than folded into a bigger constant.
  std::vector<Value> ab{std::move(a), std::move(b)};
  lift_all(ab);
  a = std::move(ab[0]);
  b = std::move(ab[1]);
  // Batched: broadcast the batch dimensions, then contract with batch dims.
  Shape sa = a.shape(), sb = b.shape();
  bool a_vec = ra == 1, b_vec = rb == 1;
  if (a_vec) { a = expand_dims(a, 0); sa = a.shape(); ra = 2; }
  if (b_vec) { b = expand_dims(b, 1); sb = b.shape(); rb = 2; }
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  std::size_t nb = std::max(ba.size(), bb.size());
  Shape batch(nb, Dim(1));
  auto merge = [&](const Shape& s) {
    std::size_t off = nb - s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == batch[off + i] || s[i] == Dim(1)) continue;
      if (batch[off + i] == Dim(1)) { batch[off + i] = s[i]; continue; }
      fail<ShapeError>("matmul got incompatible batch shapes for broadcasting: " + shape_str(sa) + ", " + shape_str(sb));
    }
  };
  merge(ba);
  merge(bb);
  Shape fa = batch, fb = batch;
  fa.push_back(sa[sa.size() - 2]); fa.push_back(sa.back());
  fb.push_back(sb[sb.size() - 2]); fb.push_back(sb.back());
  a = broadcast_to_shape(a, fa, "matmul");
  b = broadcast_to_shape(b, fb, "matmul");
  DotGeneralParams p;
  auto n = static_cast<std::int64_t>(nb);
  p.lhs_contracting = {n + 1};
  p.rhs_contracting = {n};
  for (std::int64_t i = 0; i < n; ++i) { p.lhs_batch.push_back(i); p.rhs_batch.push_back(i); }
  Value r = dot_general(a, b, p);
  if (b_vec) r = squeeze(r, {-1});
  if (a_vec) r = squeeze(r, {-2 + (b_vec ? 1 : 0)});
  return r;
}
#endif

}  // namespace dyn::detail
