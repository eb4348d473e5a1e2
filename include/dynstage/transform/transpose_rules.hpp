// dynstage: transposition rules, one per linear primitive (reverse mode).
//
// The linear part of a JVP program (transform/linearize.hpp) is made of
// primitives that are linear in their tangent operands: add, sub, neg, mul
// and div by a primal value, real, imag, conj, complex (their transposes:
// transform/jvp_complex.hpp), convert_element_type, select_n with a primal
// predicate, the layout primitives (broadcast_in_dim, reshape, transpose,
// slice, pad, concatenate, gather, scatter-add, ...), reduce_sum, cumsum and
// dot_general with one primal operand. Running that program backwards takes
// the transpose of each equation: given the cotangent of its output, the
// cotangents of its linear operands (Autodidax's transpose_rules, with JAX's
// formulas from jax/_src/lax/lax.py, slicing.py and friends). The rules bind,
// so they compute at once on concrete cotangents and record under a trace.
//
// An operand is either a primal value (known: a residual of the forward
// program or an index) or linear (undefined: only its dtype and shape are
// known, JAX's UndefinedPrimal). A cotangent is std::nullopt where it is a
// symbolic zero.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../ir/params.hpp"
#include "../ir/prims.hpp"
#include "../trace/numpy.hpp"
#include "../trace/numpy_index.hpp"
#include "../trace/numpy_layout.hpp"
#include "../trace/numpy_shape.hpp"
#include "../trace/trace.hpp"
#include "jvp_complex.hpp"
#include "jvp_rules.hpp"

namespace dyn::detail {

// An operand of a linear equation: its value when it is a primal (known),
// else only its type (JAX's UndefinedPrimal).
struct LinArg {
  std::optional<Value> value;
  DType dtype = DType::f64;
  Shape shape;
  bool linear() const { return !value.has_value(); }
};

// The cotangents of the operands of `p` (nullopt for a primal operand or a
// zero) given the cotangents of its outputs `ct` (at least one non-zero).
// Out of line (DYNSTAGE_IMPLEMENTATION).
std::vector<Tangent> transpose_rule(Prim p, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const Params& params);

#ifdef DYNSTAGE_IMPLEMENTATION

namespace transpose_detail {

using jvp_detail::lit;

inline bool staging() { return current_trace() != nullptr; }

inline Value zeros(const Shape& s, DType dt) { return broadcast_to_shape(lit(dt, 0), s, "vjp", staging()); }

// A dimension as an i64 scalar operand.
inline Value dim_operand_of(const Dim& d) {
  if (d.is_static()) return i64_literal(d.value());
  return current_trace()->dim_operand(d);
}

// The cotangent of an operand of shape `s` that the primitive broadcast
// (elementwise primitives broadcast rank-0 operands): summed over the
// broadcast axes.
inline Value unbroadcast(const Value& ct, const Shape& s) {
  if (ct.shape() == s) return ct;
  if (!s.empty()) internal_error("vjp: a cotangent of shape " + shape_str(ct.shape()) + " for an operand of shape " +
                                 shape_str(s));
  return reduce(Prim::reduce_sum, ct, {}, true);
}

[[noreturn]] inline void not_linear(Prim p) {
  internal_error("vjp: " + std::string(prim_name(p)) +
                 " is applied to a tangent but is not linear in it (a JVP rule must only build linear tangent "
                 "equations)");
}

inline std::vector<Tangent> binary(Prim p, const std::vector<LinArg>& in, const Value& ct) {
  std::vector<Tangent> r(2);
  switch (p) {
    case Prim::add:
    case Prim::sub:
      if (in[0].linear()) r[0] = unbroadcast(ct, in[0].shape);
      if (in[1].linear()) r[1] = unbroadcast(p == Prim::sub ? bind1(Prim::neg, {ct}) : ct, in[1].shape);
      return r;
    case Prim::mul:
      if (in[0].linear() && in[1].linear()) not_linear(p);
      if (in[0].linear()) r[0] = unbroadcast(bind1(Prim::mul, {ct, *in[1].value}), in[0].shape);
      if (in[1].linear()) r[1] = unbroadcast(bind1(Prim::mul, {*in[0].value, ct}), in[1].shape);
      return r;
    case Prim::div:
      if (in[1].linear()) not_linear(p);
      r[0] = unbroadcast(bind1(Prim::div, {ct, *in[1].value}), in[0].shape);
      return r;
    default: not_linear(p);
  }
}

// select_n(pred, case0, case1, ...) with a primal predicate: each linear
// case gets the cotangent where it was chosen, zero elsewhere.
inline std::vector<Tangent> select_n(const std::vector<LinArg>& in, const Value& ct) {
  if (in[0].linear()) not_linear(Prim::select_n);
  std::vector<Tangent> r(in.size());
  const Value zero = zeros(ct.shape(), ct.dtype());
  for (std::size_t k = 1; k < in.size(); ++k) {
    if (!in[k].linear()) continue;
    std::vector<Value> ops{*in[0].value};
    for (std::size_t i = 1; i < in.size(); ++i) ops.push_back(i == k ? ct : zero);
    r[k] = unbroadcast(bind1(Prim::select_n, ops), in[k].shape);
  }
  return r;
}

// broadcast_in_dim: the sum over the axes it created or stretched.
inline Value unbroadcast_in_dim(const Value& ct, const LinArg& x, const BroadcastInDimParams& p) {
  std::vector<std::int64_t> axes;
  const Shape out = ct.shape();
  for (std::int64_t a = 0; a < static_cast<std::int64_t>(out.size()); ++a) {
    const auto it = std::find(p.broadcast_dimensions.begin(), p.broadcast_dimensions.end(), a);
    if (it == p.broadcast_dimensions.end()) {
      axes.push_back(a);
      continue;
    }
    const Dim& d = x.shape[static_cast<std::size_t>(it - p.broadcast_dimensions.begin())];
    if (d == Dim(1) && !(out[static_cast<std::size_t>(a)] == Dim(1))) axes.push_back(a);
  }
  const Value summed = axes.empty() ? ct : reduce(Prim::reduce_sum, ct, axes, false);
  return reshape(summed, x.shape);
}

// slice: the cotangent placed back where the slice was taken, zeros
// elsewhere (JAX's _slice_transpose_rule: a pad; with symbolic bounds and
// unit strides, a dynamic_update_slice into zeros).
inline Value unslice(const Value& ct, const LinArg& x, const std::vector<LinArg>& in, const SliceParams& p) {
  const std::size_t rank = x.shape.size();
  std::size_t next = 1;  // kDynamicDim entries come from operands 1.., starts then limits
  Shape starts, limits;
  for (const auto& [param, out] : {std::pair{&p.start_indices, &starts}, std::pair{&p.limit_indices, &limits}})
    for (std::int64_t v : *param) out->push_back(v == kDynamicDim ? dim_of(*in.at(next++).value, "vjp") : Dim(v));
  bool all_static = true;
  for (std::size_t a = 0; a < rank; ++a)
    all_static = all_static && starts[a].is_static() && limits[a].is_static() && x.shape[a].is_static();
  if (all_static) {
    std::vector<PadParams::Axis> config;
    const Shape cs = ct.shape();
    for (std::size_t a = 0; a < rank; ++a) {
      const std::int64_t stride = p.strides.empty() ? 1 : p.strides[a];
      const std::int64_t n = cs[a].value();
      const std::int64_t real_limit = starts[a].value() + (n == 0 ? 0 : 1 + (n - 1) * stride);
      config.push_back({starts[a].value(), x.shape[a].value() - real_limit, n == 0 ? 0 : stride - 1});
    }
    return pad(ct, config, lit(ct.dtype(), 0));
  }
  for (std::int64_t s : p.strides)
    if (s != 1)
      fail<TypeError>("vjp: cannot transpose a strided slice with symbolic bounds yet (operand shape " +
                      shape_str(x.shape) + ")");
  std::vector<Value> st;
  for (const Dim& d : starts) st.push_back(dim_operand_of(d));
  return dynamic_update_slice(zeros(x.shape, x.dtype), ct, st);
}

// pad: JAX's _pad_transpose: unpad (negative padding), then take every
// (interior + 1)-th element; the padding value gets the rest of the sum.
inline std::vector<Tangent> unpad(const std::vector<LinArg>& in, const Value& ct, const PadParams& p) {
  std::vector<Tangent> r(2);
  std::optional<Value> tx;
  if (in[0].linear() || in[1].linear()) {
    std::vector<PadParams::Axis> neg;
    std::vector<std::int64_t> strides;
    for (const auto& a : p.padding_config) {
      neg.push_back({-a.lo, -a.hi, 0});
      strides.push_back(a.interior + 1);
    }
    const Value un = pad(ct, neg, lit(ct.dtype(), 0));
    tx = slice(un, Shape(neg.size(), Dim(0)), un.shape(), strides);
  }
  if (in[0].linear()) r[0] = tx;
  if (in[1].linear())
    r[1] = bind1(Prim::sub, {reduce(Prim::reduce_sum, ct, {}, true), reduce(Prim::reduce_sum, *tx, {}, true)});
  return r;
}

// The slice sizes of a gather, symbolic ones from its trailing operands.
inline Shape gather_sizes(const std::vector<LinArg>& in, const GatherParams& p) {
  Shape s;
  std::size_t next = 2;
  for (std::int64_t v : p.slice_sizes) s.push_back(v == kDynamicDim ? dim_of(*in.at(next++).value, "vjp") : Dim(v));
  return s;
}

// Index vectors clamped as gather clamps them (the window inside the
// operand), so that a scatter, which drops windows out of bounds instead,
// writes where the gather read.
inline Value clamp_starts(const Value& idx, const Shape& operand, const Shape& sizes,
                          const std::vector<std::int64_t>& start_map) {
  std::vector<Value> bounds;
  for (std::int64_t a : start_map) {
    const Dim hi = operand[static_cast<std::size_t>(a)] - sizes[static_cast<std::size_t>(a)];
    bounds.push_back(convert(dim_operand_of(hi), idx.dtype()));
  }
  // One component: a scalar bound (clamp broadcasts it); else one per component.
  if (bounds.size() != 1)
    for (Value& b : bounds) b = reshape(b, Shape{Dim(1)});
  const Value hi = bounds.size() == 1 ? bounds[0]
                                      : broadcast_to_shape(concatenate(bounds, 0), idx.shape(), "vjp", staging());
  return bind1(Prim::clamp, {lit(idx.dtype(), 0), idx, hi});
}

// Whether each update window of a scatter lies inside the operand (a
// scatter drops the others), as a mask of the updates' shape.
inline Value window_in_bounds(const Value& idx, const Shape& operand, const Shape& updates, const ScatterParams& p) {
  // The window size along each operand axis: 1 for inserted axes, else the
  // next window axis of the updates.
  Shape sizes;
  std::size_t w = 0;
  for (std::size_t a = 0; a < operand.size(); ++a) {
    const bool inserted = std::find(p.inserted_window_dims.begin(), p.inserted_window_dims.end(),
                                    static_cast<std::int64_t>(a)) != p.inserted_window_dims.end();
    sizes.push_back(inserted ? Dim(1) : updates[static_cast<std::size_t>(p.update_window_dims.at(w++))]);
  }
  const Value clamped = clamp_starts(idx, operand, sizes, p.scatter_dims_to_operand_dims);
  Value ok = reduce(Prim::reduce_and, bind1(Prim::eq, {clamped, idx}), {idx.rank() - 1}, false);
  // ok has the scatter's batch axes: those of the updates that are not window axes.
  Shape bshape;
  std::vector<std::int64_t> bdims;
  for (std::int64_t a = 0; a < static_cast<std::int64_t>(updates.size()); ++a)
    if (std::find(p.update_window_dims.begin(), p.update_window_dims.end(), a) == p.update_window_dims.end())
      bdims.push_back(a);
  std::vector<Value> ops{ok};
  BroadcastInDimParams bp{shape_param("vjp", updates, ops), bdims};
  if (ok.rank() == 0 && updates.empty()) return ok;
  return bind1(Prim::broadcast_in_dim, ops, bp, staging());
}

// The gather that reads, for each update of a scatter, the window it wrote.
inline Value gather_windows(const Value& ct, const Value& idx, const Shape& updates, const ScatterParams& p) {
  Shape sizes;
  std::size_t w = 0;
  for (std::size_t a = 0; a < ct.shape().size(); ++a) {
    const bool inserted = std::find(p.inserted_window_dims.begin(), p.inserted_window_dims.end(),
                                    static_cast<std::int64_t>(a)) != p.inserted_window_dims.end();
    sizes.push_back(inserted ? Dim(1) : updates[static_cast<std::size_t>(p.update_window_dims.at(w++))]);
  }
  std::vector<Value> ops{ct, idx};
  GatherParams gp{p.update_window_dims, p.inserted_window_dims, p.scatter_dims_to_operand_dims,
                  shape_param("vjp", sizes, ops)};
  const Value g = bind1(Prim::gather, ops, gp);
  // Windows the scatter dropped (out of bounds) had no effect: zero cotangent.
  return bind1(Prim::select_n, {window_in_bounds(idx, ct.shape(), updates, p), zeros(g.shape(), g.dtype()), g});
}

// Which elements of a scatter's updates survive: with duplicate indices the
// last write wins, and only it gets the cotangent (JAX's transpose refuses
// scatters whose indices are not known to be unique; this handles them).
// Each update element scatters its own number; those that read their own
// number back won.
inline Value surviving_updates(const Value& idx, const Shape& operand, const Shape& updates, const ScatterParams& p) {
  Dim n = 1;
  for (const Dim& d : updates) n = n * d;
  const Value ids = reshape(iota(DType::i64, Shape{n}, 0, staging()), updates);
  const Value none = broadcast_to_shape(i64_literal(-1), operand, "vjp", staging());
  const Value winner = bind1(Prim::scatter, {none, idx, ids}, p);
  return bind1(Prim::eq, {gather_windows(winner, idx, updates, p), ids});
}

// dot_general: JAX's _dot_general_transpose_lhs (the rhs case swaps the operands).
inline Value dot_transpose_lhs(const Value& g, const Shape& x_shape, const Value& y, const DotGeneralParams& d,
                               bool swap_ans) {
  const auto& xc = d.lhs_contracting;
  const auto& yc = d.rhs_contracting;
  const auto& xb = d.lhs_batch;
  const auto& yb = d.rhs_batch;
  const std::vector<std::int64_t> x_kept = dot_free_axes(static_cast<int>(x_shape.size()), xb, xc);
  const std::vector<std::int64_t> y_kept = dot_free_axes(y.rank(), yb, yc);
  const auto nb = static_cast<std::int64_t>(xb.size());
  std::vector<std::int64_t> ans_batch, ans_y;
  for (std::int64_t i = 0; i < nb; ++i) ans_batch.push_back(i);
  const std::int64_t y_start = swap_ans ? nb : nb + static_cast<std::int64_t>(x_kept.size());
  for (std::size_t i = 0; i < y_kept.size(); ++i) ans_y.push_back(y_start + static_cast<std::int64_t>(i));
  const DotGeneralParams dims{ans_y, y_kept, ans_batch, yb};
  // x's contracting axes in the order of y's.
  std::vector<std::size_t> order(yc.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return yc[a] < yc[b]; });
  std::vector<std::int64_t> pre = xb;
  pre.insert(pre.end(), x_kept.begin(), x_kept.end());
  for (std::size_t i : order) pre.push_back(xc[i]);
  std::vector<std::int64_t> out_axes(pre.size());  // argsort(pre)
  for (std::size_t i = 0; i < pre.size(); ++i) out_axes[static_cast<std::size_t>(pre[i])] = static_cast<std::int64_t>(i);
  // dot_general(g, y) has axes (batch, g's free, y's free). When the
  // transpose only swaps the two free groups, dot_general(y, g) gives the
  // result in order directly (no transpose: a matmul's gradient x^T g is
  // one GEMM, not a GEMM and a copy).
  const auto ng = static_cast<std::int64_t>(g.rank()) - nb - static_cast<std::int64_t>(ans_y.size());
  const auto ny = static_cast<std::int64_t>(y.rank()) - nb - static_cast<std::int64_t>(y_kept.size());
  bool identity = true, swapped = true;
  for (std::size_t i = 0; i < out_axes.size(); ++i) {
    const auto k = static_cast<std::int64_t>(i);
    identity = identity && out_axes[i] == k;
    swapped = swapped && out_axes[i] == (k < nb ? k : k < nb + ny ? k + ng : k - ny);
  }
  if (swapped && !identity) return bind1(Prim::dot_general, {y, g}, DotGeneralParams{y_kept, ans_y, yb, ans_batch});
  const Value r = bind1(Prim::dot_general, {g, y}, dims);
  return identity ? r : transpose(r, out_axes);
}

// fft's transpose (JAX's _fft_transpose_rule): the DFT matrix is
// symmetric, so FFT and IFFT are their own transposes. RFFT keeps n/2 + 1 of
// the n outputs: its transpose is N irfft(conj(g) / mask), where mask is 2
// for the bins whose mirror image RFFT left out and 1 for bin 0 and (n even)
// bin n/2. IRFFT's is conj(mask rfft(g) / N).
inline Value fft_half_mask(DType rd, std::int64_t n, double inner) {
  const std::int64_t m = n / 2 + 1, twice = m - 2 + n % 2;
  const bool odd = n % 2 != 0;
  std::vector<Value> parts{broadcast_to_shape(lit(rd, 1), Shape{Dim(1)}, "vjp", staging())};
  if (twice > 0) parts.push_back(broadcast_to_shape(lit(rd, inner), Shape{Dim(twice)}, "vjp", staging()));
  if (!odd && m > 1) parts.push_back(broadcast_to_shape(lit(rd, 1), Shape{Dim(1)}, "vjp", staging()));
  return parts.size() == 1 ? parts[0] : concatenate(parts, 0);
}

inline Value fft_transpose(const LinArg& x, const Value& g, const FftParams& fp) {
  if (fp.fft_type == FftType::fft || fp.fft_type == FftType::ifft) return bind1(Prim::fft, {g}, fp);
  // The lengths, static: the scale and the mask need them.
  const Shape& full = fp.fft_type == FftType::rfft ? x.shape : g.shape();
  std::vector<std::int64_t> lengths;
  std::int64_t N = 1;
  for (std::size_t k = 0; k < fp.fft_lengths.size(); ++k) {
    const Dim& d = full[full.size() - fp.fft_lengths.size() + k];
    if (!d.is_static())
      fail<TypeError>("vjp: cannot transpose fft (" + std::string(fp.fft_type == FftType::rfft ? "rfft" : "irfft") +
                      ") over a symbolic length " + d.to_string() + " yet");
    lengths.push_back(d.value());
    N *= d.value();
  }
  const std::int64_t n = lengths.back();
  if (fp.fft_type == FftType::rfft) {
    const DType cd = g.dtype(), rd = real_dtype(cd);
    const Value masked = binary(Prim::mul, bind1(Prim::conj, {g}, ConjParams{cd}), convert(fft_half_mask(rd, n, 0.5), cd));
    return binary(Prim::mul, bind1(Prim::fft, {masked}, FftParams{FftType::irfft, lengths}), lit(rd, static_cast<double>(N)));
  }
  const DType rd = g.dtype(), cd = complex_dtype(rd);
  const Value x_hat = bind1(Prim::fft, {g}, FftParams{FftType::rfft, lengths});
  const Value scaled = binary(Prim::mul, binary(Prim::mul, x_hat, convert(fft_half_mask(rd, n, 2.0), cd)),
                              lit(rd, 1.0 / static_cast<double>(N)));
  return bind1(Prim::conj, {scaled}, ConjParams{cd});
}

}  // namespace transpose_detail

std::vector<Tangent> transpose_rule(Prim p, const std::vector<LinArg>& in, const std::vector<Tangent>& ct,
                                    const Params& params) {
  using namespace transpose_detail;
  std::vector<Tangent> r(in.size());
  if (ct.empty() || !ct[0]) return r;  // single-output primitives; multi-output ones are not linear
  const Value& g = *ct[0];
  if (p == Prim::real || p == Prim::imag || p == Prim::conj || p == Prim::complex) {  // transform/jvp_complex.hpp
    std::vector<char> linear;
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    for (const LinArg& a : in) {
      linear.push_back(a.linear());
      dtypes.push_back(a.dtype);
      shapes.push_back(a.shape);
    }
    return *complex_transpose(p, linear, dtypes, shapes, g);
  }
  switch (prim_info(p).kind) {
    case Kind::unary:
      if (p != Prim::neg) not_linear(p);
      r[0] = bind1(Prim::neg, {g});
      return r;
    case Kind::binary: return binary(p, in, g);
    case Kind::select:
      if (p != Prim::select_n) not_linear(p);
      return select_n(in, g);
    case Kind::convert: r[0] = convert(g, in[0].dtype); return r;
    case Kind::structural:
      switch (p) {
        case Prim::broadcast_in_dim:
          r[0] = unbroadcast_in_dim(g, in[0], std::get<BroadcastInDimParams>(params));
          return r;
        case Prim::reshape:
        case Prim::squeeze: r[0] = reshape(g, in[0].shape); return r;
        case Prim::transpose: {
          const auto& perm = std::get<TransposeParams>(params).permutation;
          std::vector<std::int64_t> inv(perm.size());
          for (std::size_t i = 0; i < perm.size(); ++i) inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
          r[0] = transpose(g, inv);
          return r;
        }
        case Prim::rev: r[0] = rev(g, std::get<RevParams>(params).dimensions); return r;
        case Prim::concatenate: {
          const std::int64_t axis = std::get<ConcatenateParams>(params).dimension;
          Dim off = 0;
          for (std::size_t k = 0; k < in.size(); ++k) {
            const Dim n = in[k].shape[static_cast<std::size_t>(axis)];
            if (in[k].linear()) r[k] = slice_in_dim(g, off, off + n, 1, axis);
            off = off + n;
          }
          return r;
        }
        case Prim::slice:
          r[0] = unslice(g, in[0], in, std::get<SliceParams>(params));
          return r;
        case Prim::pad: return unpad(in, g, std::get<PadParams>(params));
        case Prim::dynamic_slice: {
          const std::vector<Value> starts = [&] {
            std::vector<Value> s;
            for (std::size_t k = 1; k <= in[0].shape.size(); ++k) s.push_back(*in[k].value);
            return s;
          }();
          r[0] = dynamic_update_slice(zeros(in[0].shape, in[0].dtype), g, starts);
          return r;
        }
        case Prim::dynamic_update_slice: {
          std::vector<Value> starts;
          for (std::size_t k = 2; k < in.size(); ++k) starts.push_back(*in[k].value);
          if (in[0].linear()) r[0] = dynamic_update_slice(g, zeros(in[1].shape, in[1].dtype), starts);
          if (in[1].linear()) r[1] = dynamic_slice(g, starts, in[1].shape);
          return r;
        }
        case Prim::gather: {
          // JAX's _gather_transpose_rule: scatter-add into zeros, at the clamped starts.
          const auto& gp = std::get<GatherParams>(params);
          const Value idx = clamp_starts(*in[1].value, in[0].shape, gather_sizes(in, gp), gp.start_index_map);
          r[0] = bind1(Prim::scatter_add, {zeros(in[0].shape, in[0].dtype), idx, g},
                       ScatterParams{gp.offset_dims, gp.collapsed_slice_dims, gp.start_index_map});
          return r;
        }
        case Prim::iota: return r;
        default: not_linear(p);
      }
    case Kind::scatter: {
      const auto& sp = std::get<ScatterParams>(params);
      if (p == Prim::scatter_mul) {  // linear in the operand: a scaling by the known updates, its own transpose
        if (in[2].linear()) not_linear(p);
        r[0] = bind1(Prim::scatter_mul, {g, *in[1].value, *in[2].value}, sp);
        return r;
      }
      if (p != Prim::scatter && p != Prim::scatter_add) not_linear(p);
      const Value& idx = *in[1].value;
      // scatter overwrites: the operand's cotangent is zero where an update landed.
      if (in[0].linear())
        r[0] = p == Prim::scatter_add ? g : bind1(Prim::scatter, {g, idx, zeros(in[2].shape, in[2].dtype)}, sp);
      if (in[2].linear()) {
        r[2] = gather_windows(g, idx, in[2].shape, sp);
        if (p == Prim::scatter) r[2] = bind1(Prim::select_n, {surviving_updates(idx, in[0].shape, in[2].shape, sp),
                                                              zeros(in[2].shape, in[2].dtype), *r[2]});
      }
      return r;
    }
    case Kind::reduction: {
      if (p == Prim::segment_sum_offsets) {  // linear in data; the offsets are known
        if (in[1].linear()) not_linear(p);
        r[0] = segment_sum_offsets_transpose(g, *in[1].value, in[0].shape.at(0), staging());
        return r;
      }
      if (p != Prim::reduce_sum) not_linear(p);
      // One broadcast_in_dim from the reduced shape (JAX's _reduce_sum_transpose_rule).
      const auto& axes = std::get<ReduceParams>(params).axes;
      std::vector<Value> ops{g};
      BroadcastInDimParams bp{shape_param("vjp", in[0].shape, ops), {}};
      for (std::int64_t a = 0; a < static_cast<std::int64_t>(in[0].shape.size()); ++a)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) bp.broadcast_dimensions.push_back(a);
      r[0] = in[0].shape.empty() ? g : bind1(Prim::broadcast_in_dim, ops, bp, staging());
      return r;
    }
    case Kind::cumulative: {
      if (p != Prim::cumsum) not_linear(p);
      const auto& cp = std::get<CumulativeParams>(params);
      r[0] = bind1(Prim::cumsum, {g}, CumulativeParams{cp.axis, !cp.reverse});
      return r;
    }
    case Kind::fft: r[0] = fft_transpose(in[0], g, std::get<FftParams>(params)); return r;
    case Kind::contraction: {
      const auto& d = std::get<DotGeneralParams>(params);
      if (in[0].linear() && in[1].linear()) not_linear(p);
      if (in[0].linear()) r[0] = dot_transpose_lhs(g, in[0].shape, *in[1].value, d, false);
      if (in[1].linear()) {
        const DotGeneralParams swapped{d.rhs_contracting, d.lhs_contracting, d.rhs_batch, d.lhs_batch};
        r[1] = dot_transpose_lhs(g, in[1].shape, *in[0].value, swapped, true);
      }
      return r;
    }
    case Kind::collective: {
      // Each rank's output is its own value (pmap's convention: the
      // function differentiated is the sum over ranks of each rank's
      // outputs), so psum transposes to psum, ppermute to the inverse
      // permutation, all_to_all to the all_to_all back, and all_gather to a
      // reduce-scatter (psum, then this rank's block).
      CollectiveParams c = std::get<CollectiveParams>(params);
      switch (p) {
        case Prim::psum: r[0] = bind1(Prim::psum, {g}, c, true); return r;
        case Prim::ppermute:
          for (auto& pr : c.perm) std::swap(pr.first, pr.second);
          r[0] = bind1(Prim::ppermute, {g}, c, true);
          return r;
        case Prim::all_to_all:
          std::swap(c.dimension, c.concat_axis);
          r[0] = bind1(Prim::all_to_all, {g}, c, true);
          return r;
        case Prim::all_gather: {
          const Value summed = bind1(Prim::psum, {g}, c.with_form(CollectiveForm::reduce), true);
          const Value idx = bind1(Prim::axis_index, {}, c.with_form(CollectiveForm::index), true);
          const auto d = static_cast<std::size_t>(c.dimension);
          const Dim block = c.tiled ? in[0].shape[d] : Dim(1);
          Shape sizes = g.shape();
          sizes[d] = block;
          std::vector<Value> starts(sizes.size(), lit(DType::i32, 0));
          starts[d] = block.is_static() ? bind1(Prim::mul, {idx, lit(DType::i32, static_cast<double>(block.value()))}) :
                                          bind1(Prim::mul, {idx, convert(dim_operand_of(block), DType::i32)});
          const Value mine = dynamic_slice(summed, starts, sizes);
          r[0] = c.tiled ? mine : reshape(mine, in[0].shape);
          return r;
        }
        default: break;
      }
      break;
    }
    case Kind::compare:
    case Kind::sort:
    case Kind::effect:
    case Kind::control: break;
  }
  not_linear(p);
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
