// dynstage: the numpy layer's layout operations (rev, flip, pad, stack,
// tile, repeat, tril, triu) and creation (eye, linspace). rev and pad bind
// their primitives (lax.rev, lax.pad); the others are composed of existing
// primitives the way jax.numpy composes them, so that their jaxprs read as
// JAX's. Non-template code over detail::Value, as numpy_shape.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numpy_shape.hpp"

namespace dyn::detail {

Value rev(const Value& x, const std::vector<std::int64_t>& axes);
Value pad(const Value& x, const std::vector<PadParams::Axis>& config, const Value& fill);
Value stack(std::vector<Value> xs, std::int64_t axis);
Value tile(const Value& x, const std::vector<std::int64_t>& reps);
Value repeat(const Value& x, std::int64_t repeats, std::int64_t axis);
Value tri_mask(const char* op, const Value& x, std::int64_t k);
Value tril(const Value& x, std::int64_t k);
Value triu(const Value& x, std::int64_t k);
Value eye(DType dt, const Dim& n, bool stage);
Value linspace(DType dt, double start, double stop, const Dim& num, bool stage);

#ifdef DYNSTAGE_IMPLEMENTATION
// lax.rev; negative axes count from the end (jnp.flip's canonicalisation).
Value rev(const Value& x, const std::vector<std::int64_t>& axes) {
  return bind1(Prim::rev, {x}, RevParams{normalize_axes("rev", axes, x.rank(), false)});
}

// lax.pad; the padding value is converted to x's dtype first (as jnp.pad
// converts constant_values).
Value pad(const Value& x, const std::vector<PadParams::Axis>& config, const Value& fill) {
  std::vector<Value> vs{x, convert(fill, x.dtype())};
  lift_all(vs);
  return bind1(Prim::pad, vs, PadParams{config});
}

// jnp.stack: expand_dims each at `axis`, then concatenate along it.
Value stack(std::vector<Value> xs, std::int64_t axis) {
  if (xs.empty()) fail<ShapeError>("stack: need at least one array to stack");
  for (const Value& v : xs)
    if (!(v.shape() == xs[0].shape())) {
      std::string shapes;
      for (const Value& w : xs) shapes += (shapes.empty() ? "" : ", ") + shape_str(w.shape());
      fail<ShapeError>("stack: all input arrays must have the same shape, got " + shapes);
    }
  const std::int64_t ax = normalize_axis("stack", axis, xs[0].rank() + 1);
  for (Value& v : xs) v = expand_dims(v, ax);
  if (xs.size() == 1) return xs[0];
  return concatenate(std::move(xs), ax);
}

// jnp.tile: reshape to (1, a0, 1, a1, ...), broadcast to (r0, a0, r1, a1,
// ...), reshape to (r0 * a0, r1 * a1, ...).
Value tile(const Value& x, const std::vector<std::int64_t>& reps_in) {
  for (const std::int64_t r : reps_in)
    if (r < 0) fail<ShapeError>("tile: negative repetition " + std::to_string(r));
  Shape a = x.shape();
  std::vector<std::int64_t> reps = reps_in;
  while (a.size() < reps.size()) a.insert(a.begin(), Dim(1));
  while (reps.size() < a.size()) reps.insert(reps.begin(), 1);
  Shape split, wide, out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    split.push_back(Dim(1));
    split.push_back(a[i]);
    wide.push_back(Dim(reps[i]));
    wide.push_back(a[i]);
    out.push_back(Dim(reps[i]) * a[i]);
  }
  return reshape(broadcast_to_shape(reshape(x, split), wide, "tile"), out);
}

// jnp.repeat with a scalar count: expand_dims after `axis`, tile along the
// new axis, reshape to the input shape with that axis `repeats` times longer.
Value repeat(const Value& x, std::int64_t repeats, std::int64_t axis) {
  if (repeats < 0) fail<ShapeError>("repeat: negative repeats " + std::to_string(repeats));
  const std::int64_t ax = normalize_axis("repeat", axis, x.rank());
  Shape out = x.shape();
  const Value e = expand_dims(x, ax + 1);
  std::vector<std::int64_t> reps(static_cast<std::size_t>(e.rank()), 1);
  reps[static_cast<std::size_t>(ax + 1)] = repeats;
  out[static_cast<std::size_t>(ax)] = out[static_cast<std::size_t>(ax)] * Dim(repeats);
  return reshape(tile(e, reps), out);
}

// lax's _tri, as jnp.tri builds it: (row + k >= column) over the last two
// axes of x, i32 iotas (the bool-to-bool convert_element_type JAX binds
// after it is left out: it changes nothing).
Value tri_mask(const char* op, const Value& x, std::int64_t k) {
  if (x.rank() < 2)
    fail<ShapeError>(std::string(op) + ": the argument must be at least 2-dimensional, got shape " +
                     shape_str(x.shape()));
  const Shape s = x.shape();
  const Shape nm(s.end() - 2, s.end());
  const Value kv = scalar_value(Scalar::of<std::int32_t>(static_cast<std::int32_t>(k)), false);
  const Value rows = binary(Prim::add, iota(DType::i32, nm, 0, x.is_tracer()), kv);
  return compare(Prim::ge, rows, iota(DType::i32, nm, 1, x.is_tracer()));
}

// jnp.tril: select(broadcast(tri(N, M, k)), m, zeros_like(m)); jnp.triu:
// select(broadcast(tri(N, M, k - 1)), zeros_like(m), m).
Value tril(const Value& x, std::int64_t k) {
  const Value zero = full(x.shape(), scalar_value(Scalar::of<std::int32_t>(0), true), x.dtype(), x.is_tracer());
  return where(broadcast_to_shape(tri_mask("tril", x, k), x.shape(), "tril", x.is_tracer()), x, zero);
}
Value triu(const Value& x, std::int64_t k) {
  const Value zero = full(x.shape(), scalar_value(Scalar::of<std::int32_t>(0), true), x.dtype(), x.is_tracer());
  return where(broadcast_to_shape(tri_mask("triu", x, k - 1), x.shape(), "triu", x.is_tracer()), zero, x);
}

// lax's _eye, as jnp.eye builds it: (row == column) over i32 iotas,
// converted to the dtype.
Value eye(DType dt, const Dim& n, bool stage) {
  if (n.is_static() && n.value() < 0) fail<ShapeError>("eye: negative size " + n.to_string());
  const Shape s{n, n};
  const Value rows = binary(Prim::add, iota(DType::i32, s, 0, stage),
                            scalar_value(Scalar::of<std::int32_t>(0), false));
  return convert(compare(Prim::eq, rows, iota(DType::i32, s, 1, stage)), dt);
}

// jnp.linspace (endpoint=True): for num > 1, step = iota(num - 1) / (num -
// 1); start * (1 - step) + stop * step, then stop appended; num == 1:
// [start]; num == 0: empty. A symbolic num: one formula for every size. Computed in f32 (f64 for an f64 or i64
// result), integers floored, as jnp computes it.
Value linspace(DType dt, double start, double stop, const Dim& num, bool stage) {
  if (num.is_static() && num.value() < 0)
    fail<ShapeError>("linspace: number of samples, " + num.to_string() + ", must be non-negative");
  const DType ct = dt == DType::f64 || dt == DType::i64 ? DType::f64 : DType::f32;
  auto lit = [&](double v) { return convert(scalar_value(Scalar::of<double>(v), false), ct); };
  auto blend = [&](const Value& step) {  // start * (1 - step) + stop * step
    return binary(Prim::add, binary(Prim::mul, lit(start), binary(Prim::sub, lit(1.0), step)),
                  binary(Prim::mul, lit(stop), step));
  };
  Value out;
  if (num.is_static() && num.value() <= 1) {
    out = full(Shape{num}, lit(start), ct, stage);
  } else if (num.is_static()) {
    const Dim div = num - Dim(1);
    out = blend(binary(Prim::div, iota(ct, Shape{div}, 0, stage), convert(dim_to_value(div), ct)));
    out = concatenate({out, full(Shape{Dim(1)}, lit(stop), ct, stage)}, 0);
  } else {
    // A symbolic num may be 1 (jnp needs a concrete num): step = i / max(num
    // - 1, 1) over iota(num) gives [start] then, and stop exactly at the end
    // otherwise (x / x is 1).
    const Value div = binary(Prim::max, convert(dim_to_value(num - Dim(1)), ct), lit(1.0));
    out = blend(binary(Prim::div, iota(ct, Shape{num}, 0, stage), div));
  }
  if (is_integer(dt)) out = unary(Prim::floor, out);
  return convert(out, dt);
}
#endif

}  // namespace dyn::detail
