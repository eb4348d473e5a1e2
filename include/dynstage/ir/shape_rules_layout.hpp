// dynstage: the shape rules of rev, pad, dynamic_slice and
// dynamic_update_slice (included by shape_rules.hpp,
// inside namespace dyn::detail::rule_util, before abstract_eval; it uses
// that file's helpers). The checks and messages are lax's (_rev_shape_rule,
// _pad_shape_rule, _pad_dtype_rule).
#pragma once

#ifdef DYNSTAGE_IMPLEMENTATION

// slice_sizes may hold kDynamicDim: their values come from the integer
// scalar operands after the start indices.
inline std::vector<Aval> shape_rule(PrimTag<Prim::dynamic_slice>, const std::vector<Aval>& in, const DynamicSliceParams& dp) {
  const Prim p = Prim::dynamic_slice;
  if (in.empty()) fail<TypeError>("dynamic_slice takes an operand and one start index per operand axis, got 0 operands");
  const Aval& x = in[0];
  const auto n = static_cast<std::size_t>(x.rank());
  const auto ndyn = static_cast<std::size_t>(std::count(dp.slice_sizes.begin(), dp.slice_sizes.end(), kDynamicDim));
  if (in.size() != 1 + n + ndyn)
    fail<TypeError>("dynamic_slice takes an operand and one start index per operand axis (" + std::to_string(n) +
                    " for operand shape " + shape_str(x.shape) + ")" +
                    (ndyn ? " plus one integer scalar per None in slice_sizes " + ints_str(dp.slice_sizes) : "") +
                    ", got " + std::to_string(in.size()) + " operands");
  for (std::size_t i = 1; i <= n; ++i) check_index_operand(p, in[i], i);
  if (dp.slice_sizes.size() != n)
    fail<ShapeError>("dynamic_slice slice_sizes must have the same length as the operand rank, got slice_sizes " +
                     ints_str(dp.slice_sizes) + " for operand shape " + shape_str(x.shape));
  Shape out = resolve_dynamic_shape(p, "slice_sizes", dp.slice_sizes, in, 1 + n, true);
  for (std::size_t i = 0; i < n; ++i)
    if (!(out[i] >= Dim(0)) || !(x.shape[i] >= out[i]))
      fail<IndexError>("dynamic_slice slice_sizes must be non-negative and at most the operand shape, got "
                       "slice_sizes " + shape_str(out) + " for operand shape " + shape_str(x.shape));
  return {make_aval(x.dtype, std::move(out), x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::dynamic_update_slice>, const std::vector<Aval>& in, const NoParams&) {
  const Prim p = Prim::dynamic_update_slice;
  if (in.size() < 2)
    fail<TypeError>("dynamic_update_slice takes an operand, an update and one start index per operand axis, got " +
                    std::to_string(in.size()) + " operands");
  const Aval &x = in[0], &u = in[1];
  const auto n = static_cast<std::size_t>(x.rank());
  if (in.size() != 2 + n)
    fail<TypeError>("dynamic_update_slice takes an operand, an update and one start index per operand axis (" +
                    std::to_string(n) + " for operand shape " + shape_str(x.shape) + "), got " +
                    std::to_string(in.size()) + " operands");
  if (u.dtype != x.dtype)
    fail<TypeError>("dynamic_update_slice update dtype must match operand dtype, got update dtype " +
                    dtype_str(u.dtype) + " and operand dtype " + dtype_str(x.dtype));
  for (std::size_t i = 2; i < in.size(); ++i) check_index_operand(p, in[i], i);
  if (u.rank() != x.rank())
    fail<ShapeError>("dynamic_update_slice update must have the same rank as operand, got update shape " +
                     shape_str(u.shape) + " for operand shape " + shape_str(x.shape));
  for (std::size_t i = 0; i < n; ++i)
    if (!(u.shape[i] <= x.shape[i]))
      fail<ShapeError>("dynamic_update_slice update shape must be smaller than operand shape, got update shape " +
                       shape_str(u.shape) + " for operand shape " + shape_str(x.shape));
  return {make_aval(x.dtype, x.shape, x.weak)};
}

inline std::vector<Aval> shape_rule(PrimTag<Prim::rev>, const std::vector<Aval>& in, const RevParams& rp) {
  check_arity(Prim::rev, in, 1);
  check_axes(Prim::rev, "dimensions", rp.dimensions, in[0].shape);
  return {in[0]};
}

// "((1, 2, 0), (0, 0, 1))", as JAX prints a padding_config.
inline std::string padding_config_str(const std::vector<PadParams::Axis>& cfg) {
  std::string r = "(";
  for (std::size_t i = 0; i < cfg.size(); ++i)
    r += (i ? ", " : "") + ints_str({cfg[i].lo, cfg[i].hi, cfg[i].interior});
  return r + (cfg.size() == 1 ? ",)" : ")");
}

// max(n - 1, 0), the number of gaps between n elements. A symbolic size of
// a polymorphic shape is >= 1, so this is n - 1 (JAX's core.dilate_dim); but
// a Catalyst dynamic size (a trace's variable "_dK", docs/shapes.md) may be
// 0 at run time: then the max stays a max term, evaluated with the size
// (a `max` equation in the jaxpr), so that a run-time 0 gives no gaps.
inline Dim pad_gaps(const Dim& n) {
  if (n.is_static()) return Dim(std::max<std::int64_t>(n.value() - 1, 0));
  for (const auto& v : dim_vars(n))
    if (v.rfind("_d", 0) == 0) return from_operation(DimOp::max, n - Dim(1), Dim(0), scope_of(n));
  return max_dim(n - Dim(1), Dim(0));
}

// Output size lo + hi + n + max(n - 1, 0) * interior along each axis.
inline std::vector<Aval> shape_rule(PrimTag<Prim::pad>, const std::vector<Aval>& in, const PadParams& pp) {
  const Prim p = Prim::pad;
  check_arity(p, in, 2);
  const Aval &x = in[0], &v = in[1];
  if (v.rank() != 0) fail<TypeError>("pad padding_value must be a scalar, got " + aval_str(v));
  if (x.dtype != v.dtype)
    fail<TypeError>("pad operand and padding_value must be same dtype: got " + dtype_str(x.dtype) + " and " +
                    dtype_str(v.dtype));
  const auto& cfg = pp.padding_config;
  if (cfg.size() != x.shape.size())
    fail<ShapeError>("pad: length of padding_config must equal the number of axes of operand, got padding_config " +
                     padding_config_str(cfg) + " for operand shape " + shape_str(x.shape));
  Shape out;
  for (std::size_t i = 0; i < cfg.size(); ++i) {
    if (cfg[i].interior < 0)
      fail<ShapeError>("pad: interior padding in padding_config must be nonnegative, got padding_config " +
                       padding_config_str(cfg));
    const Dim& n = x.shape[i];
    Dim d = Dim(cfg[i].lo + cfg[i].hi) + n;
    if (cfg[i].interior > 0) d = d + Dim(cfg[i].interior) * pad_gaps(n);
    out.push_back(d);
  }
  for (const Dim& d : out)
    if (!(d >= Dim(0)))
      fail<ShapeError>("pad: dimension size after padding is not at least 0, got result shape " + shape_str(out) +
                       ", for padding_config " + padding_config_str(cfg) + " and operand shape " + shape_str(x.shape));
  return {make_aval(x.dtype, std::move(out), x.weak && v.weak)};
}

#endif  // DYNSTAGE_IMPLEMENTATION
