// dynstage: the collectives' shape rules (psum pmax pmin all_gather ppermute
// all_to_all axis_index; runtime/distributed.hpp, trace/collectives.hpp).
// Included by shape_rules.hpp inside its namespace (dyn::detail::rule_util),
// like shape_rules_layout.hpp: not a header of its own.
#pragma once

#ifdef DYNSTAGE_IMPLEMENTATION

// The collectives (runtime/distributed.hpp): the operand's block in, this
// rank's result out. params.form must be the primitive's (an internal check:
// the user-facing functions build them).
inline void check_form(Prim p, const CollectiveParams& c, CollectiveForm want) {
  if (c.form != want) internal_error(prim_str(p) + ": collective params of another form");
  if (c.axes.empty()) fail<NameError>(prim_str(p) + ": no axis name");
  if (c.axis_size < 1) internal_error(prim_str(p) + ": axis_size < 1");
}
// A collective's result is a new value: its operand's type without the
// operand's dimension value (Aval::dim_value of an i64 scalar that sizes an
// array): psum(n) over k ranks is k n, ppermute gives another rank's n, and
// all_gather's i64[1] is no scalar. Kept, that value made bind remember the
// result as the dimension's value, and vmap of arange(n) after psum(n) read
// the psum (all_gather: "iota dimension operand #0 must be an integer
// scalar, got i64[1]"; found by dynstage_fuzz, seed 2128 of issue 23).
inline Aval new_value(Aval a) {
  a.dim_value.reset();
  return a;
}
inline std::vector<Aval> collective_reduce_rule(Prim p, const std::vector<Aval>& in, const CollectiveParams& c) {
  check_arity(p, in, 1);
  check_form(p, c, CollectiveForm::reduce);
  check_dtype(p, in[0].dtype, prim_info(p).dtypes);
  return {new_value(in[0])};
}
inline std::vector<Aval> shape_rule(PrimTag<Prim::psum>, const std::vector<Aval>& in, const CollectiveParams& c) {
  return collective_reduce_rule(Prim::psum, in, c);
}
inline std::vector<Aval> shape_rule(PrimTag<Prim::pmax>, const std::vector<Aval>& in, const CollectiveParams& c) {
  return collective_reduce_rule(Prim::pmax, in, c);
}
inline std::vector<Aval> shape_rule(PrimTag<Prim::pmin>, const std::vector<Aval>& in, const CollectiveParams& c) {
  return collective_reduce_rule(Prim::pmin, in, c);
}
// all_gather: the group's blocks stacked on a new axis `dimension` (tiled:
// concatenated along axis `dimension`).
inline std::vector<Aval> shape_rule(PrimTag<Prim::all_gather>, const std::vector<Aval>& in, const CollectiveParams& c) {
  check_arity(Prim::all_gather, in, 1);
  check_form(Prim::all_gather, c, CollectiveForm::gather);
  const auto r = static_cast<std::int64_t>(in[0].shape.size());
  const std::int64_t hi = c.tiled ? r : r + 1;
  if (c.dimension < 0 || c.dimension >= hi)
    fail<IndexError>("all_gather: axis " + std::to_string(c.dimension) + " is out of bounds for " +
                     (c.tiled ? "an operand of rank " : "the result of rank ") + std::to_string(hi - (c.tiled ? 0 : 0)));
  Aval out = new_value(in[0]);
  const auto d = static_cast<std::size_t>(c.dimension);
  if (c.tiled) out.shape[d] = out.shape[d] * Dim(c.axis_size);
  else out.shape.insert(out.shape.begin() + static_cast<std::ptrdiff_t>(d), Dim(c.axis_size));
  return {out};
}
// ppermute: the same type; the permutation's indices are in [0, axis_size)
// and no source or destination appears twice (lax.ppermute's check).
inline std::vector<Aval> shape_rule(PrimTag<Prim::ppermute>, const std::vector<Aval>& in, const CollectiveParams& c) {
  check_arity(Prim::ppermute, in, 1);
  check_form(Prim::ppermute, c, CollectiveForm::permute);
  std::vector<std::int64_t> src, dst;
  for (const auto& [s, t] : c.perm) {
    if (s < 0 || s >= c.axis_size || t < 0 || t >= c.axis_size)
      fail<IndexError>("ppermute: the pair (" + std::to_string(s) + ", " + std::to_string(t) +
                       ") is out of range for an axis of size " + std::to_string(c.axis_size));
    if (std::find(src.begin(), src.end(), s) != src.end() || std::find(dst.begin(), dst.end(), t) != dst.end())
      fail<TypeError>("ppermute: sources and destinations must be unique, got the pair (" + std::to_string(s) +
                      ", " + std::to_string(t) + ") after another with the same source or destination");
    src.push_back(s);
    dst.push_back(t);
  }
  return {new_value(in[0])};
}
// all_to_all: axis `dimension` (split_axis) cut into axis_size chunks, chunk
// k sent to group index k; the chunks received concatenated along
// concat_axis (tiled) or stacked on a new axis there, the split axis (of
// length axis_size) dropped (untiled: lax.all_to_all's tiled=False).
inline std::vector<Aval> shape_rule(PrimTag<Prim::all_to_all>, const std::vector<Aval>& in, const CollectiveParams& c) {
  check_arity(Prim::all_to_all, in, 1);
  check_form(Prim::all_to_all, c, CollectiveForm::to_all);
  const auto r = static_cast<std::int64_t>(in[0].shape.size());
  if (c.dimension < 0 || c.dimension >= r)
    fail<IndexError>("all_to_all: split_axis " + std::to_string(c.dimension) + " is out of bounds for an operand of rank " +
                     std::to_string(r));
  if (c.concat_axis < 0 || c.concat_axis >= r)
    fail<IndexError>("all_to_all: concat_axis " + std::to_string(c.concat_axis) +
                     " is out of bounds for an operand of rank " + std::to_string(r));
  const Dim& sd = in[0].shape[static_cast<std::size_t>(c.dimension)];
  if (!sd.is_static())
    fail<ShapeError>("all_to_all: the split axis must have a static size, got " + shape_str(in[0].shape));
  if (c.tiled ? sd.value() % c.axis_size != 0 : sd.value() != c.axis_size)
    fail<ShapeError>("all_to_all: the split axis " + std::to_string(c.dimension) + " of " + shape_str(in[0].shape) +
                     (c.tiled ? " is not divisible by" : " must equal") + " the axis size " +
                     std::to_string(c.axis_size));
  Aval out = new_value(in[0]);
  const auto s = static_cast<std::size_t>(c.dimension), k = static_cast<std::size_t>(c.concat_axis);
  out.shape[s] = Dim(sd.value() / c.axis_size);
  if (c.tiled) out.shape[k] = out.shape[k] * Dim(c.axis_size);
  else {
    out.shape.erase(out.shape.begin() + static_cast<std::ptrdiff_t>(s));
    out.shape.insert(out.shape.begin() + static_cast<std::ptrdiff_t>(k), Dim(c.axis_size));
  }
  return {out};
}
// axis_index: no operands; this rank's i32 index along the named axes.
inline std::vector<Aval> shape_rule(PrimTag<Prim::axis_index>, const std::vector<Aval>& in, const CollectiveParams& c) {
  check_arity(Prim::axis_index, in, 0);
  check_form(Prim::axis_index, c, CollectiveForm::index);
  return {make_aval(DType::i32, {}, false)};
}

#endif  // DYNSTAGE_IMPLEMENTATION
