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
  const int ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0) fail<ShapeError>("matmul: operands must have rank >= 1, got " + shape_str(a.shape()) +
                                           " and " + shape_str(b.shape()));
  // jnp.matmul's algorithm: batch dimensions present in both operands with
  // equal sizes become dot_general batch dimensions; one present in one
  // operand only (or of size 1 against a larger one, squeezed away) stays a
  // free dimension of that operand. Nothing is broadcast: a stack of
  // matrices times one matrix is one product over the stack, not a batch of
  // copies of the matrix. A transpose puts the dimensions in numpy's order
  // when dot_general's (batch, lhs free, rhs free) differs.
  const bool a_mat = ra > 1, b_mat = rb > 1;
  const Shape sa = a.shape(), sb = b.shape();
  const std::size_t na = a_mat ? sa.size() - 2 : 0, nb = b_mat ? sb.size() - 2 : 0, n = std::max(na, nb);
  std::vector<std::int64_t> a_squeeze, b_squeeze, idx_batch, idx_a, idx_b;
  DotGeneralParams p;
  for (std::size_t i = 0; i < n; ++i) {
    const bool has_a = i >= n - na, has_b = i >= n - nb;
    const auto k = static_cast<std::int64_t>(i);
    const auto nbatch = static_cast<std::int64_t>(idx_batch.size());
    if (!has_a) idx_b.push_back(k);
    else if (!has_b) idx_a.push_back(k);
    else {
      const Dim& da = sa[i - (n - na)];
      const Dim& db = sb[i - (n - nb)];
      if (da == Dim(1)) {
        idx_b.push_back(k);
        a_squeeze.push_back(nbatch + static_cast<std::int64_t>(idx_a.size() + a_squeeze.size()));
      } else if (db == Dim(1)) {
        idx_a.push_back(k);
        b_squeeze.push_back(nbatch + static_cast<std::int64_t>(idx_b.size() + b_squeeze.size()));
      } else if (da == db) {
        p.lhs_batch.push_back(nbatch + static_cast<std::int64_t>(idx_a.size()));
        p.rhs_batch.push_back(nbatch + static_cast<std::int64_t>(idx_b.size()));
        idx_batch.push_back(k);
      } else {
        fail<ShapeError>("matmul got incompatible batch shapes for broadcasting: " + shape_str(sa) + ", " + shape_str(sb));
      }
    }
  }
  const auto nn = static_cast<std::int64_t>(n);
  if (a_mat) idx_a.push_back(nn);
  if (b_mat) idx_b.push_back(nn + (a_mat ? 1 : 0));
  if (!a_squeeze.empty()) a = squeeze(a, a_squeeze);
  if (!b_squeeze.empty()) b = squeeze(b, b_squeeze);
  p.lhs_contracting = {a.rank() - 1};
  p.rhs_contracting = {b.rank() - 1 - (b_mat ? 1 : 0)};
  Value r = dot_general(a, b, p);
  // perm = argsort(idx_batch ++ idx_a ++ idx_b): output dimension d comes
  // from dot_general's dimension perm[d].
  std::vector<std::int64_t> order = idx_batch;
  order.insert(order.end(), idx_a.begin(), idx_a.end());
  order.insert(order.end(), idx_b.begin(), idx_b.end());
  std::vector<std::int64_t> perm(order.size());
  for (std::size_t j = 0; j < order.size(); ++j) perm[static_cast<std::size_t>(order[j])] = static_cast<std::int64_t>(j);
  bool identity = true;
  for (std::size_t j = 0; j < perm.size(); ++j) identity = identity && perm[j] == static_cast<std::int64_t>(j);
  return identity ? r : transpose(r, perm);
}
#endif

}  // namespace dyn::detail
