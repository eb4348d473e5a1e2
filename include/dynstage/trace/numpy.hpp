// dynstage: the numpy-level layer, non-template code over detail::Value.
//
// User operations (operators and dyn:: free functions) are one-line templates
// that land here. This layer does what jax.numpy does above lax: dtype
// promotion with weak types, numpy broadcasting (inserting broadcast_in_dim),
// axis normalisation, and the choice of primitives; then it calls bind. The
// primitives below require equal dtypes and shapes (rank-0 operands excepted),
// exactly as lax does. The same code serves eager arrays and tracers: bind
// decides whether to run or to record.
//
// This header: conversions, promotion and broadcasting, the elementwise
// families, axes and reductions. Shape operations, creation and linear
// algebra are numpy_shape.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "trace.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Conversions and promotion.

// Convert to `dt`. Concrete scalars are converted on the spot (they stay
// literals); everything else goes through convert_element_type.
Value convert(const Value& v, DType dt, bool weak = false);
#ifdef DYNSTAGE_IMPLEMENTATION
Value convert(const Value& v, DType dt, bool weak) {
  if (v.dtype() == dt && v.weak == weak) return v;
  if (!v.is_tracer() && v.array.rank() == 0) {
    Scalar s = scalar_of(v.array);
    Scalar r;
    r.dtype = dt;
    visit_dtype(dt, [&](auto t) {
      using T = decltype(t);
      T x = visit_dtype(s.dtype, [&](auto u0) -> T {
        // a complex value goes to a complex T whole, to a real T as its
        // real part (convert_element_type's rule)
        if constexpr (is_complex_v<T>) return s.as<T>();
        using U = real_part_t<decltype(u0)>;
        // integer to integer from all 64 bits (a weak literal's value is
        // held whole, whatever its weak dtype): wraps to T's width
        if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && std::is_integral_v<T> &&
                      !std::is_same_v<T, bool>)
          return static_cast<T>(s.i);
        U val = s.as<U>();
        if constexpr (std::is_floating_point_v<U> && std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (std::isnan(val)) return T(0);
          if (val <= static_cast<U>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
          if (val >= static_cast<U>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
        }
        if constexpr (std::is_same_v<T, bool>) return val != U(0);
        else return static_cast<T>(val);
      });
      r = Scalar::of<T>(x);
    });
    return scalar_value(r, weak);
  }
  if (v.dtype() == dt) {
    Value r = v;
    r.weak = weak;
    return r;
  }
  return bind1(Prim::convert_element_type, {v}, ConvertParams{dt, weak});
}
#endif

// When any operand is traced, concrete non-scalar operands become constvars
// first, so that conversions and broadcasts of them are staged (JAX's
// constants doc: constants are never folded into the program).
void lift_all(std::vector<Value>& vs);
#ifdef DYNSTAGE_IMPLEMENTATION
void lift_all(std::vector<Value>& vs) {
  if (!any_tracer(vs)) return;
  TraceState* t = current_trace();
  if (!t) return;  // bind reports the escaped tracer
  for (auto& v : vs) v = t->lift(v);
}
#endif

inline TypeInfo result_type(const std::vector<Value>& vs) {
  TypeInfo r = vs.at(0).type_info();
  for (std::size_t i = 1; i < vs.size(); ++i) r = promote_types(r, vs[i].type_info());
  return r;
}

inline void promote_to(std::vector<Value>& vs, TypeInfo t) {
  for (auto& v : vs) v = convert(v, t.dtype, t.weak);
}

// numpy broadcasting of shapes; rank-0 operands never constrain.
Shape broadcast_shapes(std::string_view op, const std::vector<Value>& vs);
#ifdef DYNSTAGE_IMPLEMENTATION
Shape broadcast_shapes(std::string_view op, const std::vector<Value>& vs) {
  std::size_t rank = 0;
  for (const auto& v : vs) rank = std::max(rank, static_cast<std::size_t>(v.rank()));
  Shape out(rank, Dim(1));
  for (const auto& v : vs) {
    Shape s = v.shape();
    std::size_t off = rank - s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
      Dim& o = out[off + i];
      if (s[i] == o || s[i] == Dim(1)) continue;
      if (o == Dim(1)) {
        o = s[i];
        continue;
      }
      std::string shapes;
      for (std::size_t k = 0; k < vs.size(); ++k) shapes += (k ? ", " : "") + shape_str(vs[k].shape());
      fail<ShapeError>(std::string(op) + " got incompatible shapes for broadcasting: " + shapes);
    }
  }
  return out;
}
#endif

// A shape parameter: static sizes as they are; each symbolic dimension is
// kDynamicDim, its value appended to `operands` (JAX's dynamic shapes:
// `broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] a`).
std::vector<std::int64_t> shape_param(std::string_view op, const Shape& shape, std::vector<Value>& operands);
#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<std::int64_t> shape_param(std::string_view op, const Shape& shape, std::vector<Value>& operands) {
  std::vector<std::int64_t> r;
  r.reserve(shape.size());
  for (const Dim& d : shape) {
    if (d.is_static()) {
      if (d.value() < 0) fail<ShapeError>(std::string(op) + ": negative dimension in shape " + shape_str(shape));
      r.push_back(d.value());
      continue;
    }
    TraceState* t = current_trace();
    if (!t)
      fail<TypeError>(std::string(op) + ": the symbolic dimension " + d.to_string() + " in shape " +
                      shape_str(shape) + " can only be used while tracing");
    operands.push_back(t->dim_operand(d));
    r.push_back(kDynamicDim);
  }
  return r;
}
#endif

// Broadcast `v` to `shape` (numpy rules: trailing alignment, 1s stretch).
// `stage` records the broadcast even for a concrete `v` (a literal case of a
// traced where), so no broadcast constant is folded into the program.
Value broadcast_to_shape(const Value& v, const Shape& shape, std::string_view op = "broadcast_to",
                         bool stage = false);
#ifdef DYNSTAGE_IMPLEMENTATION
Value broadcast_to_shape(const Value& v, const Shape& shape, std::string_view op,
                         bool stage) {
  Shape s = v.shape();
  if (s == shape) return v;
  if (s.size() > shape.size())
    fail<ShapeError>(std::string(op) + ": cannot broadcast an array of shape " + shape_str(s) + " to shape " +
                     shape_str(shape));
  std::size_t off = shape.size() - s.size();
  BroadcastInDimParams p;
  std::vector<Value> operands{v};
  p.shape = shape_param(op, shape, operands);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!(s[i] == shape[off + i] || s[i] == Dim(1)))
      fail<ShapeError>(std::string(op) + ": cannot broadcast an array of shape " + shape_str(s) + " to shape " +
                       shape_str(shape));
    p.broadcast_dimensions.push_back(static_cast<std::int64_t>(off + i));
  }
  return bind1(Prim::broadcast_in_dim, operands, p, stage);
}
#endif

// Promote and broadcast operands of an elementwise primitive. Rank-0
// operands are left for the primitive's scalar broadcasting (`add a 1.0`).
// A weak integer literal (a C++ integer) that meets an integer array of a
// narrower dtype takes that dtype; a value it cannot hold would wrap
// silently, so it is a dyn::TypeError, as JAX raises OverflowError ("Python
// int 300 too large to convert to uint8") for `x + 300` with x uint8.
// 64-bit dtypes are not checked: every C++ integer is held in 64 bits, and
// a u64 literal above INT64_MAX is not told apart from a negative one.
void check_literals_fit(std::string_view op, const std::vector<Value>& vs, TypeInfo t);
#ifdef DYNSTAGE_IMPLEMENTATION
void check_literals_fit(std::string_view op, const std::vector<Value>& vs, TypeInfo t) {
  if (t.weak || !is_integer(t.dtype) || dtype_bits(t.dtype) >= 64) return;
  const int bits = dtype_bits(t.dtype);
  const std::int64_t lo = is_unsigned_integer(t.dtype) ? 0 : -(std::int64_t{1} << (bits - 1));
  const std::int64_t hi = is_unsigned_integer(t.dtype) ? (std::int64_t{1} << bits) - 1 : (std::int64_t{1} << (bits - 1)) - 1;
  for (const auto& v : vs) {
    if (!v.weak || v.is_tracer() || v.array.rank() != 0 || !is_integer(v.dtype())) continue;
    const Scalar s = scalar_of(v.array);
    if (s.i >= lo && s.i <= hi) continue;
    const std::string val = std::to_string(s.i);
    fail<TypeError>(std::string(op) + ": the integer literal " + val + " does not fit in the array's dtype " +
                    std::string(dtype_name(t.dtype)) + " (range " + std::to_string(lo) + " to " + std::to_string(hi) +
                    "; JAX: OverflowError, Python int " + val + " too large to convert to " +
                    std::string(dtype_numpy_name(t.dtype)) + "); convert the array to a wider dtype first, e.g. "
                    "dyn::astype<std::int32_t>(x)");
  }
}
#endif

void promote_and_broadcast(std::string_view op, std::vector<Value>& vs, TypeInfo t);
#ifdef DYNSTAGE_IMPLEMENTATION
void promote_and_broadcast(std::string_view op, std::vector<Value>& vs, TypeInfo t) {
  check_literals_fit(op, vs, t);
  lift_all(vs);
  Shape out = broadcast_shapes(op, vs);
  promote_to(vs, t);
  for (auto& v : vs)
    if (v.rank() != 0) v = broadcast_to_shape(v, out, op);
}
#endif

// ---------------------------------------------------------------------------
// Elementwise families.

// Float-only functions compute bool and integer operands in the default
// float (the table's `floating` dtype rule, prims.hpp).
// (`inexact` ones too: jnp.exp(int32) is float32, jnp.exp(complex64) complex64.)
inline bool is_float_only(Prim p) {
  return prim_info(p).dtypes == DTypeSet::floating || prim_info(p).dtypes == DTypeSet::inexact;
}

// The dtype an operand of a float-only op is computed in: ints and bools go
// to the default float f32 (jnp.sin(int32) is float32); floats and complex
// values stay (a complex operand of a real-only op then meets the
// primitive's dtype rule, a TypeError naming both).
inline TypeInfo inexact(TypeInfo t) { return is_inexact(t.dtype) ? t : TypeInfo{DType::f32, false}; }

Value unary(Prim p, const Value& x);
#ifdef DYNSTAGE_IMPLEMENTATION
Value unary(Prim p, const Value& x) {
  if (is_float_only(p)) return bind1(p, {convert(x, inexact(x.type_info()).dtype, x.weak)});
  if (prim_info(p).dtypes == DTypeSet::rounding && is_complex(x.dtype()))
    fail<TypeError>(std::string(prim_name(p)) + " does not accept dtype " + std::string(dtype_name(x.dtype())) +
                    ": complex numbers have no order (as in JAX)");
  if (prim_info(p).dtypes == DTypeSet::rounding && !is_float(x.dtype())) return x;  // jnp.floor(int32)
  if (p == Prim::round) return bind1(p, {x}, RoundParams{1});
  // jnp.square's promote_dtypes_numeric: a bool becomes i32 (to_numeric_dtype).
  if (p == Prim::square && is_bool(x.dtype())) return bind1(p, {convert(x, DType::i32, x.weak)});
  return bind1(p, {x});
}
#endif

Value binary(Prim p, Value a, Value b);
#ifdef DYNSTAGE_IMPLEMENTATION
Value binary(Prim p, Value a, Value b) {
  std::vector<Value> vs{std::move(a), std::move(b)};
  TypeInfo t = result_type(vs);
  if (is_float_only(p)) t = inexact(t);
  promote_and_broadcast(prim_name(p), vs, t);
  return bind1(p, vs);
}
#endif

// jnp.right_shift: the operands promoted, then shift_right_arithmetic for a
// signed (or bool: its dtype rule rejects it) and shift_right_logical for an
// unsigned dtype.
Value right_shift(Value a, Value b);
#ifdef DYNSTAGE_IMPLEMENTATION
Value right_shift(Value a, Value b) {
  std::vector<Value> vs{std::move(a), std::move(b)};
  const TypeInfo t = result_type(vs);
  const Prim p = is_unsigned_integer(t.dtype) ? Prim::shift_right_logical : Prim::shift_right_arithmetic;
  promote_and_broadcast(prim_name(p), vs, t);
  return bind1(p, vs);
}
#endif

Value compare(Prim p, Value a, Value b);  // out of line (bind1)
#ifdef DYNSTAGE_IMPLEMENTATION
Value compare(Prim p, Value a, Value b) {
  std::vector<Value> vs{std::move(a), std::move(b)};
  promote_and_broadcast(prim_name(p), vs, result_type(vs));
  return bind1(p, vs);
}
#endif

// where(pred, a, b) = select_n(pred, b, a): lax's case 0 is the false case.
Value where(Value pred, Value a, Value b);
#ifdef DYNSTAGE_IMPLEMENTATION
Value where(Value pred, Value a, Value b) {
  if (pred.dtype() != DType::bool_)
    fail<TypeError>("where: the predicate must have dtype bool, got " + std::string(dtype_name(pred.dtype())));
  check_literals_fit("where", {a, b}, result_type({a, b}));
  std::vector<Value> vs{std::move(pred), std::move(a), std::move(b)};
  lift_all(vs);
  const bool staged = any_tracer(vs);
  Shape out = broadcast_shapes("where", vs);
  std::vector<Value> cases{vs[1], vs[2]};
  TypeInfo t = result_type(cases);
  promote_to(cases, t);
  Value p = vs[0];
  // select_n needs its cases at the full shape unless everything is rank 0.
  if (!out.empty()) {
    for (auto& c : cases) c = broadcast_to_shape(c, out, "where", staged);
    if (p.rank() != 0) p = broadcast_to_shape(p, out, "where", staged);
  }
  return bind1(Prim::select_n, {p, cases[1], cases[0]});
}
#endif

// clamp(lo, x, hi) (lax.clamp): the three promoted to one dtype (a weak
// literal takes the others'), then the primitive, whose rule wants lo and hi
// of rank 0 or of x's shape. clip(x, lo, hi) (jnp.clip): the same after numpy
// broadcasting of all three (jnp.clip prints as max then min; one clamp
// computes the same values, NaN included).
Value clamp(Value lo, Value x, Value hi);
Value clip(Value x, Value lo, Value hi);
#ifdef DYNSTAGE_IMPLEMENTATION
Value clamp(Value lo, Value x, Value hi) {
  std::vector<Value> vs{std::move(lo), std::move(x), std::move(hi)};
  const TypeInfo t = result_type(vs);
  check_literals_fit("clamp", vs, t);
  lift_all(vs);
  promote_to(vs, t);
  return bind1(Prim::clamp, vs);
}
Value clip(Value x, Value lo, Value hi) {
  std::vector<Value> vs{std::move(lo), std::move(x), std::move(hi)};
  const TypeInfo t = result_type(vs);
  check_literals_fit("clip", vs, t);
  lift_all(vs);
  const Shape out = broadcast_shapes("clip", vs);
  promote_to(vs, t);
  for (std::size_t k = 0; k < 3; ++k)
    if (k == 1 || vs[k].rank() != 0) vs[k] = broadcast_to_shape(vs[k], out, "clip");
  return bind1(Prim::clamp, vs);
}
#endif

// ---------------------------------------------------------------------------
// Axes.

std::int64_t normalize_axis(std::string_view op, std::int64_t axis, int rank);
#ifdef DYNSTAGE_IMPLEMENTATION
std::int64_t normalize_axis(std::string_view op, std::int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    fail<IndexError>(std::string(op) + ": axis " + std::to_string(axis) + " is out of bounds for an array of rank " +
                     std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}
#endif

std::vector<std::int64_t> normalize_axes(std::string_view op, const std::vector<std::int64_t>& axes, int rank,
                                         bool all_if_empty);
#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<std::int64_t> normalize_axes(std::string_view op, const std::vector<std::int64_t>& axes, int rank,
                                         bool all_if_empty) {
  std::vector<std::int64_t> r;
  if (axes.empty() && all_if_empty) {
    for (int i = 0; i < rank; ++i) r.push_back(i);
    return r;
  }
  for (auto a : axes) {
    std::int64_t n = normalize_axis(op, a, rank);
    if (std::find(r.begin(), r.end(), n) != r.end())
      fail<IndexError>(std::string(op) + ": repeated axis " + std::to_string(a));
    r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}
#endif

// ---------------------------------------------------------------------------
// Reductions. Summing (or multiplying) booleans gives i64 (API.md §8), and
// 8- and 16-bit integers i32 or u32 (sum_dtype, dtype.hpp).
// keepdims (jnp's): the reduced axes stay, as size 1, through one
// broadcast_in_dim after the reduction (lax.expand_dims, as jnp prints it).

Value keep_reduced_axes(const Value& r, const Shape& in, const std::vector<std::int64_t>& axes);
#ifdef DYNSTAGE_IMPLEMENTATION
Value keep_reduced_axes(const Value& r, const Shape& in, const std::vector<std::int64_t>& axes) {
  if (in.empty()) return r;  // lax.broadcast_in_dim returns a rank-0 operand itself
  BroadcastInDimParams p;
  Shape out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end()) {
      out.emplace_back(1);
    } else {
      out.push_back(in[i]);
      p.broadcast_dimensions.push_back(static_cast<std::int64_t>(i));
    }
  }
  std::vector<Value> operands{r};
  p.shape = shape_param("keepdims", out, operands);
  return bind1(Prim::broadcast_in_dim, operands, p);
}
#endif

Value reduce(Prim p, const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty = true,
             bool keepdims = false);
#ifdef DYNSTAGE_IMPLEMENTATION
Value reduce(Prim p, const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty, bool keepdims) {
  ReduceParams params{normalize_axes(prim_name(p), axes, x.rank(), all_if_empty)};
  Value v = x;
  if ((p == Prim::reduce_sum || p == Prim::reduce_prod) && sum_dtype(v.dtype()) != v.dtype())
    v = convert(v, sum_dtype(v.dtype()));
  // jnp.any/jnp.all test x != 0 (convert_element_type to bool), not bits.
  if ((p == Prim::reduce_or || p == Prim::reduce_and) && v.dtype() != DType::bool_) v = convert(v, DType::bool_);
  Value r = bind1(p, {v}, params);
  return keepdims ? keep_reduced_axes(r, x.shape(), params.axes) : r;
}
#endif

// mean = sum / count, computed in a floating type (jnp.mean of ints is f32);
// with keepdims, jnp's order: the sum keeps its axes, then the division.
Value mean(const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty, bool keepdims = false);
#ifdef DYNSTAGE_IMPLEMENTATION
Value mean(const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty, bool keepdims) {
  std::vector<std::int64_t> ax = normalize_axes("mean", axes, x.rank(), all_if_empty);
  Value v = convert(x, inexact(x.type_info()).dtype);
  Value s = reduce(Prim::reduce_sum, v, ax, false, keepdims);
  Shape sh = x.shape();
  Dim count = 1;
  for (auto a : ax) count *= sh[static_cast<std::size_t>(a)];
  Value n = count.is_static()
                ? convert(scalar_value(Scalar::of<double>(static_cast<double>(count.value())), true), s.dtype(), false)
                : convert(current_trace()->dim_operand(count), s.dtype(), false);
  return bind1(Prim::div, {s, n});
}
#endif

// var = sum((x - mean(x, keepdims))^2) / (N - ddof), jnp.var's composition
// of existing primitives (no var primitive, as in JAX): the mean with its
// axes kept, sub, square, reduce_sum, div by the count N less ddof. A
// static N - ddof is a literal, as JAX folds its Python constants. Where
// N - ddof is not positive the result is NaN, jnp.var's
// where(normalizer > 0, r, nan) (numpy warns and gives inf or nan): with a
// runtime N it is staged (gt, select_n) when ddof > 0 only (else
// N - ddof > 0 whenever N > 0, and an empty axis gives 0 / 0 = NaN by
// itself); with a static N it is folded away when N - ddof > 0.
Value var(const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty, bool keepdims,
          std::int64_t ddof = 0);
#ifdef DYNSTAGE_IMPLEMENTATION
Value var(const Value& x, const std::vector<std::int64_t>& axes, bool all_if_empty, bool keepdims,
          std::int64_t ddof) {
  std::vector<std::int64_t> ax = normalize_axes("var", axes, x.rank(), all_if_empty);
  Value v = convert(x, inexact(x.type_info()).dtype);
  Value centered = binary(Prim::sub, v, mean(v, ax, false, true));
  Value sq = bind1(Prim::square, {centered});
  Value s = reduce(Prim::reduce_sum, sq, ax, false, keepdims);
  Dim count = 1;
  for (auto a : ax) count *= x.shape()[static_cast<std::size_t>(a)];
  const auto lit = [&](double d) { return convert(scalar_value(Scalar::of<double>(d), true), s.dtype(), false); };
  Value n = count.is_static() ? lit(static_cast<double>(count.value() - ddof))
                              : convert(current_trace()->dim_operand(count), s.dtype(), false);
  if (!count.is_static() && ddof != 0) n = bind1(Prim::sub, {n, lit(static_cast<double>(ddof))});
  Value r = bind1(Prim::div, {s, n});
  if (count.is_static() ? count.value() - ddof > 0 : ddof <= 0) return r;
  return where(compare(Prim::gt, n, lit(0.0)), r, lit(std::numeric_limits<double>::quiet_NaN()));
}
#endif

// argmax, argmin (lax's, index_dtype i32) along one axis (negative: from the
// end); keepdims expands the axis back as size 1. A static empty axis is an
// error, as in jnp (no first maximum); a runtime one gives 0, as lax.
Value arg_reduce(Prim p, const Value& x, std::int64_t axis, bool keepdims);
#ifdef DYNSTAGE_IMPLEMENTATION
Value arg_reduce(Prim p, const Value& x, std::int64_t axis, bool keepdims) {
  const std::int64_t a = normalize_axis(prim_name(p), axis, x.rank());
  const Dim n = x.shape()[static_cast<std::size_t>(a)];
  if (n.is_static() && n.value() == 0)
    fail<ShapeError>(std::string(prim_name(p)) + ": axis " + std::to_string(a) + " of an array of shape " +
                     shape_str(x.shape()) + " is empty; an empty axis has no " +
                     (p == Prim::argmax ? "maximum" : "minimum") + " (jnp." + std::string(prim_name(p)) +
                     " rejects it too): check the size first");
  Value r = bind1(p, {x}, ArgReduceParams{{a}, DType::i32});
  return keepdims ? keep_reduced_axes(r, x.shape(), {a}) : r;
}
#endif

// Cumulative reductions (jnp.cumsum, lax.cummax, ...) along one axis
// (negative: from the end). cumsum and cumprod of booleans count in i64, as
// sum does (jnp promotes bool to its default integer); cummax and cummin
// accept numbers only, as lax's.
Value cumulative(Prim p, const Value& x, std::int64_t axis, bool reverse);
#ifdef DYNSTAGE_IMPLEMENTATION
Value cumulative(Prim p, const Value& x, std::int64_t axis, bool reverse) {
  const int rank = x.rank();
  if (axis < -rank || axis >= rank)
    fail<IndexError>(std::string(prim_name(p)) + ": axis " + std::to_string(axis) +
                     " is out of bounds for an array of shape " + shape_str(x.shape()) + "; the axis must be in [" +
                     std::to_string(-rank) + ", " + std::to_string(rank) + ")");
  if ((p == Prim::cummax || p == Prim::cummin) && x.dtype() == DType::bool_)
    fail<TypeError>(std::string(prim_name(p)) + " does not accept dtype bool; it requires a numeric dtype (integer or "
                    "floating-point): convert first, e.g. dyn::" + std::string(prim_name(p)) +
                    "(dyn::astype<std::int32_t>(x), axis)");
  Value v = x;
  if ((p == Prim::cumsum || p == Prim::cumprod) && sum_dtype(v.dtype()) != v.dtype())
    v = convert(v, sum_dtype(v.dtype()));
  return bind1(p, {v}, CumulativeParams{axis < 0 ? axis + rank : axis, reverse});
}
#endif

}  // namespace dyn::detail
