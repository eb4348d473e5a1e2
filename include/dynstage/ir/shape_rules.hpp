// dynstage: abstract evaluation, the shape and dtype rule of every primitive.
//
// abstract_eval is the one place that validates operands, for tracing and
// eager execution alike: arity, dtypes, ranks, shapes and parameters. The
// rules are lax's: elementwise primitives require equal dtypes and equal
// shapes (rank-0 operands broadcast against the other, so `add a 1.0:f32[]`
// is valid); promotion and numpy broadcasting happen in the layer above.
//
// Which error type:
//   TypeError   wrong number of operands, unsupported or mismatched dtypes,
//               parameters of the wrong kind;
//   ShapeError  operand shapes that do not fit together, or parameters that
//               do not fit the operand's rank or shape (reshape sizes,
//               permutations, broadcast dimensions, parameter lengths);
//   IndexError  axes out of range or repeated, slice bounds and sizes out of
//               range.
// Messages follow JAX's wording and name the primitive and the shapes.
//
// The rules compute on Dims (==, +, *, and orderings that are decided or
// throw InconclusiveDimensionOperation), so they serve static, symbolic and
// dynamic shapes alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "debug_format.hpp"
#include "index_map.hpp"
#include "rules.hpp"

namespace dyn::detail::rule_util {

// The dtype classes of the table's dtypes column (prims.hpp), under the names
// the rules and their tests have always used.
using detail::DTypeSet;
using detail::dtype_in;

}  // namespace dyn::detail::rule_util

// The rule definitions are compiled once per program, in the one translation
// unit that defines DYNSTAGE_IMPLEMENTATION (src/core.cpp, src/dynstage.cpp);
// rules.hpp declares abstract_eval for everyone else.
#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail {

// The rules' vocabulary, in its own namespace so that its short names cannot
// collide with other dyn::detail code.
namespace rule_util {

// ---------------------------------------------------------------------------
// Message helpers.

inline std::string prim_str(Prim p) { return std::string(prim_name(p)); }
inline std::string dtype_str(DType d) { return std::string(dtype_name(d)); }

// Python tuple syntax, "(0, 1)", "(0,)", "()"; kDynamicDim prints as None.
inline std::string ints_str(const std::vector<std::int64_t>& v) {
  std::string r = "(";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += ", ";
    r += v[i] == kDynamicDim ? std::string("None") : std::to_string(v[i]);
  }
  if (v.size() == 1) r += ",";
  return r + ")";
}

// "(2, 3), (2, 4)": the shapes of in[first..].
inline std::string shapes_str(const std::vector<Aval>& in, std::size_t first = 0) {
  std::string r;
  for (std::size_t i = first; i < in.size(); ++i) {
    if (i > first) r += ", ";
    r += shape_str(in[i].shape);
  }
  return r;
}

inline Aval make_aval(DType d, Shape s, bool weak) {
  Aval a;
  a.dtype = d;
  a.shape = std::move(s);
  a.weak = weak;
  return a;
}

// ---------------------------------------------------------------------------
// Sizes. Dim arithmetic is canonical (b*a == a*b), so equal sizes compare
// equal whether static or symbolic.

inline Dim numel(const Shape& s) {
  Dim n = 1;
  for (const auto& d : s) n = n * d;
  return n;
}

// ---------------------------------------------------------------------------
// Operand and parameter checks shared by several rules.


inline const char* dtype_set_str(DTypeSet s) {
  switch (s) {
    case DTypeSet::any: return "any dtype";
    case DTypeSet::ordered: return "an ordered dtype (complex numbers have no order)";
    case DTypeSet::numeric: return "a numeric dtype (integer or floating-point)";
    case DTypeSet::number: return "a numeric dtype (integer, floating-point or complex)";
    case DTypeSet::floating:
    case DTypeSet::rounding: return "a floating-point dtype";
    case DTypeSet::inexact: return "a floating-point or complex dtype";
    case DTypeSet::complex: return "a complex dtype";
    case DTypeSet::integer_or_bool: return "a boolean or integer dtype";
    case DTypeSet::integer: return "an integer dtype";
  }
  return "?";
}

inline void check_dtype(Prim p, DType d, DTypeSet s) {
  if (!dtype_in(d, s))
    fail<TypeError>(prim_str(p) + " does not accept dtype " + dtype_str(d) + "; it requires " + dtype_set_str(s));
}

inline void check_arity(Prim p, const std::vector<Aval>& in, std::size_t n) {
  if (in.size() != n)
    fail<TypeError>(prim_str(p) + " takes " + std::to_string(n) + (n == 1 ? " operand" : " operands") + ", got " +
                    std::to_string(in.size()));
}

inline void check_same_dtypes(Prim p, const std::vector<Aval>& in) {
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype) {
      std::string got;
      for (std::size_t j = 0; j < in.size(); ++j) got += (j ? ", " : "") + dtype_str(in[j].dtype);
      fail<TypeError>(prim_str(p) + " requires arguments to have the same dtypes, got " + got);
    }
}

template <class P>
const P& params_as(Prim p, const Params& params) {
  const P* r = std::get_if<P>(&params);
  if (!r) fail<TypeError>(prim_str(p) + " got parameters of the wrong kind");
  return *r;
}

// Axes parameter: each in [0, rank) and no repeats.
inline void check_axes(Prim p, const char* what, const std::vector<std::int64_t>& axes, const Shape& shape) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  for (auto a : axes)
    if (a < 0 || a >= rank)
      fail<IndexError>(prim_str(p) + " " + what + " " + ints_str(axes) + " out of range for operand shape " +
                       shape_str(shape));
  for (std::size_t i = 0; i < axes.size(); ++i)
    for (std::size_t j = i + 1; j < axes.size(); ++j)
      if (axes[i] == axes[j])
        fail<IndexError>("duplicate value in '" + std::string(what) + "' of " + prim_str(p) + ": " + ints_str(axes));
}

inline void check_index_operand(Prim p, const Aval& a, std::size_t operand) {
  if (a.rank() != 0 || !is_integer(a.dtype))
    fail<TypeError>(prim_str(p) + " start indices must be integer scalars, got " + aval_str(a) + " for operand #" +
                    std::to_string(operand));
  if (!is_index_dtype(a.dtype))
    fail<TypeError>(prim_str(p) + " start indices must be i32 or i64 scalars, got " + aval_str(a) + " for operand #" +
                    std::to_string(operand) + "; convert them (the numpy-level dyn:: functions do)");
}

// A shape parameter whose kDynamicDim entries take their values, in order,
// from the integer scalar operands in[first], in[first + 1], ...
inline Shape resolve_dynamic_shape(Prim p, const char* what, const std::vector<std::int64_t>& sizes,
                                   const std::vector<Aval>& in, std::size_t first, bool allow_negative = false) {
  const auto ndyn = static_cast<std::size_t>(std::count(sizes.begin(), sizes.end(), kDynamicDim));
  if (in.size() != first + ndyn)
    fail<TypeError>(prim_str(p) + " takes " + std::to_string(first) + (first == 1 ? " operand" : " operands") +
                    " plus one integer scalar per None in " + what + " " + ints_str(sizes) + ", got " +
                    std::to_string(in.size()) + " operands");
  Shape out;
  out.reserve(sizes.size());
  std::size_t k = first;
  for (auto s : sizes) {
    if (s != kDynamicDim) {
      if (s < 0 && !allow_negative)
        fail<ShapeError>(prim_str(p) + " " + what + " must be non-negative, got " + ints_str(sizes));
      out.emplace_back(s);
      continue;
    }
    const Aval& d = in[k];
    if (d.rank() != 0 || !is_integer(d.dtype))
      fail<TypeError>(prim_str(p) + " dimension operand #" + std::to_string(k) + " must be an integer scalar, got " +
                      aval_str(d));
    if (!is_index_dtype(d.dtype))
      fail<TypeError>(prim_str(p) + " dimension operand #" + std::to_string(k) + " must be an i32 or i64 scalar, got " +
                      aval_str(d));
    if (!d.dim_value)
      internal_error(prim_str(p) + ": dimension operand #" + std::to_string(k) + " carries no dimension value");
    if (!allow_negative && d.dim_value->is_static() && d.dim_value->value() < 0)
      fail<ShapeError>(prim_str(p) + " got the negative dimension " + d.dim_value->to_string() +
                       " for a None in " + what + " " + ints_str(sizes));
    out.push_back(*d.dim_value);
    ++k;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Rules. Each is registered as the shape_rule of its primitive(s): the
// elementwise, reduction and control primitives share theirs (the
// registrations at the end), the others have one each.

// The result dtype of an elementwise primitive whose operands have dtype d:
// d, except for the complex ones (lax's dtype rules): abs, real and imag of
// a complex value are real (c64 -> f32), conj and complex give a complex
// dtype (f32 -> c64).
inline DType elementwise_out_dtype(Prim p, DType d) {
  if (p == Prim::abs || p == Prim::real || p == Prim::imag) return real_dtype(d);
  if (p == Prim::conj || p == Prim::complex) return complex_dtype(d);
  return d;
}

inline std::vector<Aval> unary_rule(Prim p, const std::vector<Aval>& in, DTypeSet s) {
  check_arity(p, in, 1);
  check_dtype(p, in[0].dtype, s);
  return {make_aval(elementwise_out_dtype(p, in[0].dtype), in[0].shape, in[0].weak)};
}

// Binary elementwise and comparisons: equal dtypes, equal shapes or a rank-0
// operand. Comparison results are strong bools, as in JAX.
inline std::vector<Aval> binary_rule(Prim p, const std::vector<Aval>& in, DTypeSet s, bool compare) {
  check_arity(p, in, 2);
  check_same_dtypes(p, in);
  check_dtype(p, in[0].dtype, s);
  const Aval &a = in[0], &b = in[1];
  Shape out;
  if (a.rank() == 0) out = b.shape;
  else if (b.rank() == 0) out = a.shape;
  else if (a.shape == b.shape) out = a.shape;
  else fail<ShapeError>(prim_str(p) + " got incompatible shapes for broadcasting: " + shapes_str(in));
  if (compare) return {make_aval(DType::bool_, std::move(out), false)};
  return {make_aval(elementwise_out_dtype(p, a.dtype), std::move(out), a.weak && b.weak)};
}

// select_n(pred, case0, case1): case0 where pred is false.
inline std::vector<Aval> shape_rule(PrimTag<Prim::select_n>, const std::vector<Aval>& in, const NoParams&) {
  if (in.size() != 3)
    fail<TypeError>("select_n takes a predicate and 2 cases, got " + std::to_string(in.size()) + " operands");
  const Aval &pred = in[0], &c0 = in[1], &c1 = in[2];
  if (pred.dtype != DType::bool_)
    fail<TypeError>("select_n requires a bool predicate, got dtype " + dtype_str(pred.dtype));
  if (c0.dtype != c1.dtype)
    fail<TypeError>("select_n cases must have the same dtypes, got " + dtype_str(c0.dtype) + ", " +
                    dtype_str(c1.dtype));
  if (c0.shape != c1.shape)
    fail<ShapeError>("select_n cases must have the same shapes, got " + shapes_str(in, 1));
  if (pred.rank() != 0 && pred.shape != c0.shape)
    fail<ShapeError>("select_n predicate must be scalar or have the same shape as cases, got predicate shape " +
                     shape_str(pred.shape) + " but case shape " + shape_str(c0.shape));
  return {make_aval(c0.dtype, c0.shape, c0.weak && c1.weak)};
}

// clamp(lo, x, hi) = min(max(x, lo), hi), lax.clamp's rule: equal dtypes
// (any dtype), lo and hi each rank 0 or x's shape; the result has x's shape.
// (JAX raises TypeError for the shapes; here a shape mismatch is a
// ShapeError, as for every rule.)
inline std::vector<Aval> shape_rule(PrimTag<Prim::clamp>, const std::vector<Aval>& in, const NoParams&) {
  check_arity(Prim::clamp, in, 3);
  check_same_dtypes(Prim::clamp, in);
  const Aval &lo = in[0], &x = in[1], &hi = in[2];
  for (const auto& [bound, name] : {std::pair{&lo, "min"}, std::pair{&hi, "max"}})
    if (bound->rank() != 0 && bound->shape != x.shape)
      fail<ShapeError>(std::string("clamp requires ") + name + ".shape == operand.shape or " + name +
                       ".shape == (), got " + name + ".shape=" + shape_str(bound->shape) + " and operand.shape=" +
                       shape_str(x.shape));
  return {make_aval(x.dtype, x.shape, lo.weak && x.weak && hi.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::convert_element_type>, const std::vector<Aval>& in, const ConvertParams& cp) {
  check_arity(Prim::convert_element_type, in, 1);
  return {make_aval(cp.new_dtype, in[0].shape, cp.weak_type)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::broadcast_in_dim>, const std::vector<Aval>& in, const BroadcastInDimParams& bp) {
  const Prim p = Prim::broadcast_in_dim;
  Shape out = resolve_dynamic_shape(p, "shape", bp.shape, in, 1);
  const Aval& x = in[0];
  const auto& bd = bp.broadcast_dimensions;
  if (static_cast<int>(bd.size()) != x.rank())
    fail<ShapeError>("broadcast_in_dim broadcast_dimensions must have length equal to operand ndim; got "
                     "broadcast_dimensions " + ints_str(bd) + " for operand shape " + shape_str(x.shape));
  const auto out_rank = static_cast<std::int64_t>(out.size());
  for (auto d : bd)
    if (d < 0 || d >= out_rank)
      fail<IndexError>("broadcast_in_dim broadcast_dimensions must be in range for the target shape; got "
                       "broadcast_dimensions " + ints_str(bd) + " for target shape " + shape_str(out));
  for (std::size_t i = 1; i < bd.size(); ++i)
    if (bd[i] <= bd[i - 1])
      fail<ShapeError>("broadcast_in_dim broadcast_dimensions must be strictly increasing; got broadcast_dimensions " +
                       ints_str(bd));
  for (std::size_t i = 0; i < bd.size(); ++i) {
    const Dim& d = x.shape[i];
    if (!(d == Dim(1) || d == out[static_cast<std::size_t>(bd[i])]))
      fail<ShapeError>("broadcast_in_dim operand dimension sizes must either be 1, or be equal to their "
                       "corresponding dimensions in the target broadcast shape; got operand of shape " +
                       shape_str(x.shape) + ", target broadcast shape " + shape_str(out) +
                       ", broadcast_dimensions " + ints_str(bd));
  }
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::reshape>, const std::vector<Aval>& in, const ReshapeParams& rp) {
  Shape out = resolve_dynamic_shape(Prim::reshape, "new_sizes", rp.new_sizes, in, 1);
  const Aval& x = in[0];
  if (const Dim a = numel(x.shape), b = numel(out); a != b)
    fail<ShapeError>("reshape: cannot reshape array of shape " + shape_str(x.shape) + " (size " + a.to_string() +
                     ") into shape " + shape_str(out) + " (size " + b.to_string() + ")");
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::transpose>, const std::vector<Aval>& in, const TransposeParams& tp) {
  check_arity(Prim::transpose, in, 1);
  const Aval& x = in[0];
  const auto& perm = tp.permutation;
  bool ok = static_cast<int>(perm.size()) == x.rank();
  std::vector<bool> seen(perm.size(), false);
  for (std::size_t i = 0; ok && i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= x.rank() || seen[static_cast<std::size_t>(perm[i])]) ok = false;
    else seen[static_cast<std::size_t>(perm[i])] = true;
  }
  if (!ok)
    fail<ShapeError>("transpose permutation isn't a permutation of operand dimensions, got permutation " +
                     ints_str(perm) + " for operand shape " + shape_str(x.shape));
  Shape out;
  for (auto a : perm) out.push_back(x.shape[static_cast<std::size_t>(a)]);
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::squeeze>, const std::vector<Aval>& in, const SqueezeParams& sp) {
  const Prim p = Prim::squeeze;
  check_arity(p, in, 1);
  const Aval& x = in[0];
  check_axes(p, "dimensions", sp.dimensions, x.shape);
  for (auto a : sp.dimensions)
    if (!(x.shape[static_cast<std::size_t>(a)] == Dim(1)))
      fail<ShapeError>("squeeze: cannot select an axis to squeeze out which has size not equal to one, got shape=" +
                       shape_str(x.shape) + " and dimensions=" + ints_str(sp.dimensions));
  Shape out;
  for (std::size_t i = 0; i < x.shape.size(); ++i)
    if (std::find(sp.dimensions.begin(), sp.dimensions.end(), static_cast<std::int64_t>(i)) == sp.dimensions.end())
      out.push_back(x.shape[i]);
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::concatenate>, const std::vector<Aval>& in, const ConcatenateParams& cp) {
  const Prim p = Prim::concatenate;
  if (in.empty()) fail<TypeError>("concatenate takes at least one operand, got 0");
  check_same_dtypes(p, in);
  const int rank = in[0].rank();
  for (const auto& a : in)
    if (a.rank() != rank)
      fail<ShapeError>("concatenate requires operands of the same rank, got shapes " + shapes_str(in));
  const std::int64_t d = cp.dimension;
  if (d < 0 || d >= rank)
    fail<IndexError>("concatenate dimension out of bounds: dimension " + std::to_string(d) + " for shapes " +
                     shapes_str(in));
  Shape out = in[0].shape;
  bool weak = in[0].weak;
  for (std::size_t k = 1; k < in.size(); ++k) {
    for (int i = 0; i < rank; ++i)
      if (i != d && !(in[k].shape[static_cast<std::size_t>(i)] == out[static_cast<std::size_t>(i)]))
        fail<ShapeError>("concatenate requires operands to have the same shape except along dimension " +
                         std::to_string(d) + ", got shapes " + shapes_str(in));
    out[static_cast<std::size_t>(d)] = out[static_cast<std::size_t>(d)] + in[k].shape[static_cast<std::size_t>(d)];
    weak = weak && in[k].weak;
  }
  return {make_aval(in[0].dtype, std::move(out), weak)};
}

// start_indices and limit_indices may hold kDynamicDim: their values come,
// in that order, from the integer scalar operands after the operand.
inline std::vector<Aval> shape_rule(PrimTag<Prim::slice>, const std::vector<Aval>& in, const SliceParams& sp) {
  if (in.empty()) fail<TypeError>("slice takes 1 operand, got 0");
  const Aval& x = in[0];
  const auto n = static_cast<std::size_t>(x.rank());
  auto check_len = [&](const char* what, const std::vector<std::int64_t>& v) {
    if (v.size() != n)
      fail<ShapeError>(std::string("slice ") + what + " must have length equal to the number of dimensions of the "
                       "operand, got " + what + " " + ints_str(v) + " for operand shape " + shape_str(x.shape));
  };
  check_len("start_indices", sp.start_indices);
  check_len("limit_indices", sp.limit_indices);
  if (!sp.strides.empty()) check_len("strides", sp.strides);
  std::vector<std::int64_t> both = sp.start_indices;
  both.insert(both.end(), sp.limit_indices.begin(), sp.limit_indices.end());
  const Shape bounds = resolve_dynamic_shape(Prim::slice, "start_indices + limit_indices", both, in, 1, true);
  Shape out;
  for (std::size_t i = 0; i < n; ++i) {
    const Dim &start = bounds[i], &limit = bounds[n + i];
    const std::int64_t stride = sp.strides.empty() ? 1 : sp.strides[i];
    if (!(start >= Dim(0)))
      fail<IndexError>("slice start_indices must be greater than or equal to zero, got start_indices " +
                       shape_str(Shape(bounds.begin(), bounds.begin() + static_cast<std::ptrdiff_t>(n))) +
                       " for operand shape " + shape_str(x.shape));
    if (!(x.shape[i] >= limit))
      fail<IndexError>("slice limit_indices must be less than or equal to operand shape, got limit_indices " +
                       shape_str(Shape(bounds.begin() + static_cast<std::ptrdiff_t>(n), bounds.end())) +
                       " for operand shape " + shape_str(x.shape));
    if (!(limit >= start))
      fail<IndexError>("slice limit_indices must be greater than or equal to start_indices, got start_indices " +
                       shape_str(Shape(bounds.begin(), bounds.begin() + static_cast<std::ptrdiff_t>(n))) +
                       " and limit_indices " +
                       shape_str(Shape(bounds.begin() + static_cast<std::ptrdiff_t>(n), bounds.end())));
    if (stride < 1) fail<IndexError>("slice strides must be positive, got " + ints_str(sp.strides));
    out.push_back(stride == 1 ? limit - start : floordiv(limit - start + (stride - 1), Dim(stride)));
  }
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::iota>, const std::vector<Aval>& in, const IotaParams& ip) {
  const Prim p = Prim::iota;
  check_dtype(p, ip.dtype, prim_info(p).dtypes);
  Shape out = resolve_dynamic_shape(p, "shape", ip.shape, in, 0);
  if (ip.dimension < 0 || ip.dimension >= static_cast<std::int64_t>(out.size()))
    fail<IndexError>("iota dimension must be between 0 and len(shape), got dimension=" +
                     std::to_string(ip.dimension) + " for shape " + shape_str(out));
  return {make_aval(ip.dtype, std::move(out), false)};
}

inline std::vector<Aval> reduce_rule(Prim p, const std::vector<Aval>& in, const ReduceParams& rp, DTypeSet s) {
  check_arity(p, in, 1);
  const Aval& x = in[0];
  check_dtype(p, x.dtype, s);
  check_axes(p, "axes", rp.axes, x.shape);
  Shape out;
  for (std::size_t i = 0; i < x.shape.size(); ++i)
    if (std::find(rp.axes.begin(), rp.axes.end(), static_cast<std::int64_t>(i)) == rp.axes.end())
      out.push_back(x.shape[i]);
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

// argmax, argmin (lax's): one axis reduced, the index out as index_dtype
// (never weak: an index is not a Python scalar). Any operand dtype.
inline std::vector<Aval> arg_reduce_rule(Prim p, const std::vector<Aval>& in, const ArgReduceParams& ap) {
  check_arity(p, in, 1);
  const Aval& x = in[0];
  check_dtype(p, x.dtype, prim_info(p).dtypes);
  if (ap.axes.size() != 1)
    fail<ShapeError>(prim_str(p) + " reduces exactly one axis, got axes=" + ints_str(ap.axes));
  check_axes(p, "axes", ap.axes, x.shape);
  if (ap.index_dtype != DType::i32 && ap.index_dtype != DType::i64)
    fail<TypeError>(prim_str(p) + " index_dtype must be i32 or i64, got " + dtype_str(ap.index_dtype));
  Shape out = x.shape;
  out.erase(out.begin() + ap.axes[0]);
  return {make_aval(ap.index_dtype, std::move(out), false)};
}

// cumsum & co. (lax's cumulative reductions): one operand, its type out.
inline std::vector<Aval> cumulative_rule(Prim p, const std::vector<Aval>& in, const CumulativeParams& cp, DTypeSet s) {
  check_arity(p, in, 1);
  const Aval& x = in[0];
  check_dtype(p, x.dtype, s);
  if (cp.axis < 0 || cp.axis >= x.rank())
    fail<IndexError>(prim_str(p) + ": axis " + std::to_string(cp.axis) + " is out of bounds for an array of shape " +
                     shape_str(x.shape));
  return {make_aval(x.dtype, x.shape, x.weak)};
}

inline Shape dims_at(const Shape& s, const std::vector<std::int64_t>& axes) {
  Shape r;
  for (auto a : axes) r.push_back(s[static_cast<std::size_t>(a)]);
  return r;
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::dot_general>, const std::vector<Aval>& in, const DotGeneralParams& dp) {
  const Prim p = Prim::dot_general;
  check_arity(p, in, 2);
  const Aval &l = in[0], &r = in[1];
  if (l.dtype != r.dtype)
    fail<TypeError>("dot_general requires operands of the same dtype, got " + dtype_str(l.dtype) + ", " +
                    dtype_str(r.dtype));
  check_dtype(p, l.dtype, prim_info(p).dtypes);
  if (dp.lhs_batch.size() != dp.rhs_batch.size())
    fail<ShapeError>("dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch " +
                     ints_str(dp.lhs_batch) + " and rhs_batch " + ints_str(dp.rhs_batch));
  if (dp.lhs_contracting.size() != dp.rhs_contracting.size())
    fail<ShapeError>("dot_general requires equal numbers of lhs_contracting and rhs_contracting dimensions, got "
                     "lhs_contracting " + ints_str(dp.lhs_contracting) + " and rhs_contracting " +
                     ints_str(dp.rhs_contracting));
  auto check_side = [&](const char* side, const Aval& a, const std::vector<std::int64_t>& batch,
                        const std::vector<std::int64_t>& contracting) {
    std::vector<std::int64_t> all = batch;
    all.insert(all.end(), contracting.begin(), contracting.end());
    const std::string got = std::string(side) + "_batch of " + ints_str(batch) + " and " + side +
                            "_contracting of " + ints_str(contracting);
    for (auto d : all)
      if (d < 0 || d >= a.rank())
        fail<IndexError>(std::string("dot_general requires ") + side + " dimension numbers to be nonnegative and "
                         "less than the number of axes of the " + side + " value, got " + got + " for " + side +
                         " of rank " + std::to_string(a.rank()));
    std::sort(all.begin(), all.end());
    if (std::adjacent_find(all.begin(), all.end()) != all.end())
      fail<IndexError>(std::string("dot_general requires ") + side + " dimension numbers to be distinct, got " + got);
  };
  check_side("lhs", l, dp.lhs_batch, dp.lhs_contracting);
  check_side("rhs", r, dp.rhs_batch, dp.rhs_contracting);
  const Shape lb = dims_at(l.shape, dp.lhs_batch), rb = dims_at(r.shape, dp.rhs_batch);
  if (lb != rb)
    fail<ShapeError>("dot_general requires lhs batch dimensions and rhs batch dimensions to have the same shape, got " +
                     shape_str(lb) + " and " + shape_str(rb));
  const Shape lc = dims_at(l.shape, dp.lhs_contracting), rc = dims_at(r.shape, dp.rhs_contracting);
  if (lc != rc)
    fail<ShapeError>("dot_general requires contracting dimensions to have the same shape, got " + shape_str(lc) +
                     " and " + shape_str(rc));
  Shape out = lb;
  for (auto a : dot_free_axes(l.rank(), dp.lhs_batch, dp.lhs_contracting)) out.push_back(l.shape[static_cast<std::size_t>(a)]);
  for (auto a : dot_free_axes(r.rank(), dp.rhs_batch, dp.rhs_contracting)) out.push_back(r.shape[static_cast<std::size_t>(a)]);
  return {make_aval(l.dtype, std::move(out), l.weak && r.weak)};
}

// ---------------------------------------------------------------------------
// The shared registrations. shape_rule(PrimTag<P>, operands, params) is the
// rule of primitive P, with its typed params: the overloads above for the
// primitives with a rule of their own, these templates for the kinds whose
// primitives share one (the dtypes come from the primitive's row,
// prims.hpp). A primitive with neither fails to compile (the unconstrained
// template, last).

template <Prim P>
  requires(prim_kind(P) == Kind::unary)
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>& in, const params_of_t<P>&) {
  return unary_rule(P, in, prim_info(P).dtypes);
}
template <Prim P>
  requires(prim_kind(P) == Kind::binary || prim_kind(P) == Kind::compare)
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>& in, const params_of_t<P>&) {
  return binary_rule(P, in, prim_info(P).dtypes, prim_kind(P) == Kind::compare);
}
template <Prim P>
  requires(prim_kind(P) == Kind::reduction)
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>& in, const params_of_t<P>& rp) {
  return reduce_rule(P, in, rp, prim_info(P).dtypes);
}
template <Prim P>
  requires(prim_kind(P) == Kind::cumulative)
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>& in, const params_of_t<P>& cp) {
  return cumulative_rule(P, in, cp, prim_info(P).dtypes);
}
// Output types from the bodies' types (trace/control_bind.hpp).
template <Prim P>
  requires(prim_kind(P) == Kind::control)
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>& in, const params_of_t<P>& p) {
  return control_abstract_eval(P, in, p);
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::argmax>, const std::vector<Aval>& in, const ArgReduceParams& ap) {
  return arg_reduce_rule(Prim::argmax, in, ap);
}
inline std::vector<Aval> shape_rule(PrimTag<Prim::argmin>, const std::vector<Aval>& in, const ArgReduceParams& ap) {
  return arg_reduce_rule(Prim::argmin, in, ap);
}
inline std::vector<Aval> shape_rule(PrimTag<Prim::round>, const std::vector<Aval>& in, const RoundParams& rp) {
  if (rp.rounding_method != 0 && rp.rounding_method != 1)
    fail<TypeError>("round rounding_method must be 0 (away from zero) or 1 (to nearest even), got " +
                    std::to_string(rp.rounding_method));
  return unary_rule(Prim::round, in, prim_info(Prim::round).dtypes);
}
// is_finite: a float operand, a bool result (lax.is_finite).
inline std::vector<Aval> shape_rule(PrimTag<Prim::is_finite>, const std::vector<Aval>& in, const NoParams&) {
  check_arity(Prim::is_finite, in, 1);
  check_dtype(Prim::is_finite, in[0].dtype, prim_info(Prim::is_finite).dtypes);
  return {make_aval(DType::bool_, in[0].shape, false)};
}
// integer_pow[y]: any numeric dtype; a negative exponent of an integer is
// refused, as JAX's dtype rule does.
inline std::vector<Aval> shape_rule(PrimTag<Prim::integer_pow>, const std::vector<Aval>& in,
                                    const IntegerPowParams& ip) {
  std::vector<Aval> out = unary_rule(Prim::integer_pow, in, prim_info(Prim::integer_pow).dtypes);
  if (ip.y < 0 && !is_inexact(in[0].dtype))
    fail<TypeError>("integer_pow: integers cannot be raised to negative powers, got integer_pow(x, " +
                    std::to_string(ip.y) + ") with x of dtype " + std::string(dtype_name(in[0].dtype)) +
                    "; convert x to a float dtype first");
  return out;
}
// debug_callback (dyn::debug_print): any number of operands of any dtype and
// shape, exactly as many as the format's fields; no outputs.
inline std::vector<Aval> shape_rule(PrimTag<Prim::debug_callback>, const std::vector<Aval>& in,
                                    const DebugCallbackParams& p) {
  check_debug_format(p.fmt, in.size());
  std::vector<DType> dtypes;
  for (const Aval& a : in) dtypes.push_back(a.dtype);
  check_debug_specs(p.fmt, dtypes);
  return {};
}
// gather and the scatters, sort and top_k, rev and pad, the collectives: their own files, in this namespace.
#include "shape_rules_index.hpp"
#include "shape_rules_sort.hpp"
#include "shape_rules_fft.hpp"
#include "shape_rules_layout.hpp"
#include "shape_rules_collective.hpp"

template <Prim P>
std::vector<Aval> shape_rule(PrimTag<P>, const std::vector<Aval>&, const params_of_t<P>&) {
  static_assert(P != P, "no shape rule for this primitive: define shape_rule(PrimTag<Prim::...>, ...) in "
                        "shape_rules.hpp (or give it a Kind whose rule it shares)");
  return {};
}

}  // namespace rule_util

std::vector<Aval> abstract_eval(Prim prim, const std::vector<Aval>& in, const Params& params) {
  return visit_prim(prim, [&]<Prim P>(PrimTag<P> tag) {
    return rule_util::shape_rule(tag, in, rule_util::params_as<params_of_t<P>>(P, params));
  });
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
