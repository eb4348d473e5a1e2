// dynstage: the shape rules of sort and top_k (included by shape_rules.hpp,
// inside namespace dyn::detail::rule_util, before abstract_eval; it uses
// that file's helpers).
#pragma once

#ifdef DYNSTAGE_IMPLEMENTATION

// sort (lax.sort): N >= 1 operands of one shape, any dtypes; 1 <= num_keys
// <= N; one output of each operand's type.
inline std::vector<Aval> shape_rule(PrimTag<Prim::sort>, const std::vector<Aval>& in, const SortParams& sp) {
  if (in.empty()) fail<TypeError>("sort takes at least one operand, got 0");
  if (sp.num_keys < 1 || static_cast<std::size_t>(sp.num_keys) > in.size())
    fail<TypeError>("sort: num_keys must be between 1 and the number of operands (" + std::to_string(in.size()) +
                    "), got num_keys=" + std::to_string(sp.num_keys));
  const Aval& x = in[0];
  for (std::size_t k = 1; k < in.size(); ++k)
    if (in[k].shape != x.shape) {
      std::string got;
      for (std::size_t i = 0; i < in.size(); ++i) got += (i ? ", " : "") + aval_str(in[i]);
      fail<ShapeError>("sort: all operands must have the same shape, got " + got);
    }
  if (sp.dimension < 0 || sp.dimension >= x.rank())
    fail<IndexError>("sort: dimension " + std::to_string(sp.dimension) + " is out of bounds for an array of shape " +
                     shape_str(x.shape));
  std::vector<Aval> out;
  for (const Aval& a : in) out.push_back(make_aval(a.dtype, a.shape, a.weak));
  return out;
}

// top_k (lax.top_k): the operand's shape with `axis` of size k; (values,
// i32 indices). k larger than the axis is an error when the shapes decide
// it; a symbolic or dynamic axis that may be shorter than k is checked by
// the kernel when it runs (kKernelTopKTooLarge).
inline std::vector<Aval> shape_rule(PrimTag<Prim::top_k>, const std::vector<Aval>& in, const TopKParams& tp) {
  check_arity(Prim::top_k, in, 1);
  const Aval& x = in[0];
  check_dtype(Prim::top_k, x.dtype, prim_info(Prim::top_k).dtypes);
  if (x.rank() == 0) fail<ShapeError>("top_k: the operand must have rank >= 1, got " + aval_str(x));
  if (tp.axis < 0 || tp.axis >= x.rank())
    fail<IndexError>("top_k: axis " + std::to_string(tp.axis) + " is out of bounds for an array of shape " +
                     shape_str(x.shape));
  if (tp.k < 0) fail<ShapeError>("top_k: k must be nonnegative, got k=" + std::to_string(tp.k));
  const Dim& n = x.shape[static_cast<std::size_t>(tp.axis)];
  bool fits = true;
  try {
    fits = n >= Dim(tp.k);
  } catch (const InconclusiveDimensionOperation&) {
    // decided at run time by the kernel
  }
  if (!fits)
    fail<ShapeError>("top_k: k=" + std::to_string(tp.k) + " is larger than the size " + n.to_string() + " of axis " +
                     std::to_string(tp.axis) + " of an array of shape " + shape_str(x.shape));
  Shape s = x.shape;
  s[static_cast<std::size_t>(tp.axis)] = Dim(tp.k);
  return {make_aval(x.dtype, s, x.weak), make_aval(DType::i32, s, false)};
}

#endif  // DYNSTAGE_IMPLEMENTATION
