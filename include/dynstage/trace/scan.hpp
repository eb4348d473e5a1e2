// dynstage: dyn::scan (API.md §13), lax.scan: a loop over the leading axis
// of `xs` that threads a carry and stacks a result per step.
//
//   auto [carry, ys] = dyn::scan(f, init, xs, {.length = n, .reverse = false});
//   // f(carry, x) -> std::tuple{carry, y}
//
// Staged, it binds one `scan` equation, printed as JAX prints it (operands:
// the body's constants, the carry, the xs; the body `jaxpr` takes them in the
// same order, each x being one slice of its xs along axis 0, and returns the
// carry and y). The body is traced once through the bind algorithm of
// control_nested.hpp with every dimension shared (as for_loop's default):
// dynamic dimensions of the carry and of the xs are body constants, so the
// carry keeps its type (JAX's rule: a carry that changes type is an error)
// and a y's size is a caller-known expression, the same in every step. A
// dynamic length (a symbolic leading dimension of the xs, or `.length` given
// as a dyn::Dim or an integer tracer) is printed `length=None` and passed as
// a last i64[] operand, as broadcast_in_dim passes its dynamic sizes.
//
// Outside any trace, with concrete values, the loop just runs (f is called
// per step on zero-copy views of the rows of xs). xs may be any pytree of
// arrays of rank >= 1 with one leading dimension, or absent: `dyn::scan(f,
// init, {.length = n})` calls f(carry, std::tuple<>{}) (JAX passes None).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "control_nested.hpp"
#include "ops_shape.hpp"

namespace dyn {

// The number of steps of a scan: an integer, a dyn::Dim, an integer scalar
// tracer (a dynamic length, Catalyst style) or a rank-0 integer dyn::Array
// (what an integer argument is when a function runs eagerly).
class ScanLength {
public:
  template <class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
  ScanLength(I i) : d_(static_cast<std::int64_t>(i)) {}  // NOLINT: implicit by design
  ScanLength(Dim d) : d_(std::move(d)) {}                  // NOLINT
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  ScanLength(const Tracer<T>& t) : d_(detail::dim_of(t.value(), "length")) {}  // NOLINT
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  ScanLength(const Array<T>& a) : d_(detail::dim_of(detail::to_value(a), "length").value()) {}  // NOLINT
  const Dim& dim() const { return d_; }

private:
  Dim d_;
};

struct ScanOptions {
  // The number of steps; it must equal the xs' leading dimension when there
  // are xs, and is required when there are none.
  std::optional<ScanLength> length = std::nullopt;
  // Scan from the last row to the first (ys are still indexed as xs).
  bool reverse = false;
};

namespace detail {

// The number of steps from the xs' leading dimensions and `.length`
// (ShapeError when they disagree, TypeError for a scalar xs or no length).
Dim scan_length(const std::vector<Aval>& xs, const std::optional<Dim>& length);

// The bind algorithm for scan (out of line). `ncarry` is read after the body
// is traced: how many of its results are the carry (the rest are the ys).
std::vector<Value> bind_scan(const std::vector<Value>& init, const std::vector<Value>& xs, const Dim& length,
                             bool reverse, const NestedFn& body, const std::size_t& ncarry);

// Eager helpers: row t of x (a view sharing x's buffer), rows stacked into
// one array of shape (n, row shape...), and the carry check of one step.
AnyArray scan_row(const AnyArray& x, std::int64_t t);
AnyArray scan_stack(const std::vector<AnyArray>& rows, DType dtype, const std::vector<std::int64_t>& row_shape);
std::vector<AnyArray> check_scan_carry(std::vector<AnyArray> got, const std::vector<AnyArray>& expected);
[[noreturn]] void scan_y_shape_error(std::size_t k, const AnyArray& got, const std::vector<std::int64_t>& want);

template <class R>
constexpr bool is_scan_result_v = false;
template <class C, class Y>
constexpr bool is_scan_result_v<std::tuple<C, Y>> = true;
template <class C, class Y>
constexpr bool is_scan_result_v<std::pair<C, Y>> = true;

template <class R>
void check_scan_result() {
  static_assert(is_scan_result_v<std::remove_cvref_t<R>>,
                "dyn::scan: the body must return std::tuple{carry, y} (lax.scan's f returns (carry, y))");
}

}  // namespace detail

template <class F, class Init, class Xs>
auto scan(const F& f, const Init& init, const Xs& xs, ScanOptions opts = {},
          std::source_location loc = std::source_location::current()) {
  using namespace detail;
  OpSite site(loc);
  std::optional<Dim> length;
  if (opts.length) length = opts.length->dim();
  constexpr bool traced_inputs = has_tracer_leaf_v<Init> || has_tracer_leaf_v<Xs>;
  if constexpr (!stages<traced_inputs, const F&, const lifted_t<Init>&, const lifted_t<Xs>&>::value) {
    // Eager: the loop just runs.
    using R = std::invoke_result_t<const F&, const lifted_t<Init>&, const lifted_t<Xs>&>;
    check_scan_result<R>();
    using Y = concrete_t<std::tuple_element_t<1, std::remove_cvref_t<R>>>;
    if (length && length->is_symbolic() && current_trace())
      fail<TypeError>("dyn::scan(): a symbolic length (" + length->to_string() +
                      ") needs traced inputs; the carry and xs here are concrete");
    lifted_t<Init> carry = lift_scalars(init);
    const std::vector<AnyArray> expected = concrete_leaves(carry);
    const std::vector<AnyArray> xl = concrete_leaves(lift_scalars(xs));
    std::vector<Aval> xa;
    for (const AnyArray& x : xl) xa.push_back(aval_of(x));
    const std::int64_t n = scan_length(xa, length).value();
    auto x_at = [&](std::int64_t t) {
      std::vector<AnyArray> rows;
      for (const AnyArray& x : xl) {
        if (t >= 0) {
          rows.push_back(scan_row(x, t));
        } else {  // n == 0: zeros of a row's shape, to learn y's structure and shapes
          std::vector<std::int64_t> s(x.shape().begin() + 1, x.shape().end());
          rows.emplace_back(Storage::make(x.dtype(), std::move(s)));
        }
      }
      std::size_t k = 0;
      return lifted_like(xs, rows, k);
    };
    std::vector<std::vector<AnyArray>> ys;  // [leaf][step]
    std::vector<AnyArray> y0;               // the first step's y leaves (shapes)
    std::optional<TreeDef> ytree;
    for (std::int64_t s = 0; s < std::max<std::int64_t>(n, 1); ++s) {
      const std::int64_t t = n == 0 ? -1 : opts.reverse ? n - 1 - s : s;
      auto r = f(carry, x_at(t));
      std::vector<AnyArray> yl = concrete_leaves(std::get<1>(r));
      if (s == 0) {
        ytree = treedef_of(std::get<1>(r));
        y0 = yl;
        ys.resize(yl.size());
      }
      if (n == 0) break;
      std::vector<AnyArray> got = check_scan_carry(concrete_leaves(std::get<0>(r)), expected);
      std::size_t k = 0;
      carry = lifted_like(init, got, k);
      for (std::size_t q = 0; q < yl.size(); ++q) {
        if (yl[q].shape() != y0[q].shape() || yl[q].dtype() != y0[q].dtype()) scan_y_shape_error(q, yl[q], y0[q].shape());
        ys[q].push_back(yl[q]);
      }
    }
    std::vector<AnyArray> stacked;
    for (std::size_t q = 0; q < y0.size(); ++q) {
      if (opts.reverse) std::reverse(ys[q].begin(), ys[q].end());
      stacked.push_back(scan_stack(ys[q], y0[q].dtype(), y0[q].shape()));
    }
    std::size_t j = 0;
    auto make_leaf = [&]<class L>() -> L { return stacked.at(j++).template get<typename L::value_type>(); };
    return std::tuple<lifted_t<Init>, Y>{std::move(carry), unflatten<Y>(*ytree, make_leaf)};
  } else {
    if constexpr (!traced_inputs) require_trace_for_body("dyn::scan()");
    using R = std::invoke_result_t<const F&, traced_t<Init>&, traced_t<Xs>&>;
    check_scan_result<R>();
    using Y = traced_t<std::tuple_element_t<1, std::remove_cvref_t<R>>>;
    const std::vector<Value> init_v = leaves_of(init), xs_v = leaves_of(xs);
    std::vector<Aval> xa;
    for (const Value& x : xs_v) xa.push_back(x.aval());
    const Dim n = scan_length(xa, length);
    std::optional<TreeDef> ytree;
    std::size_t ncarry = 0;
    auto fn = [&](const std::vector<Value>& args) {
      std::size_t k = 0;
      auto c = traced_like(init, args, k);
      auto x = traced_like(xs, args, k);
      auto r = f(c, x);
      std::vector<Value> out = flatten_results(std::get<0>(r));
      ncarry = out.size();
      ytree = treedef_of(std::get<1>(r));
      for (Value& v : flatten_results(std::get<1>(r))) out.push_back(std::move(v));
      return out;
    };
    std::vector<Value> outs = bind_scan(init_v, xs_v, n, opts.reverse, fn, ncarry);
    std::size_t k = 0;
    auto carry = traced_like(init, outs, k);
    auto make_leaf = [&]<class L>() -> L { return from_value<L>(outs.at(k++)); };
    Y ys = unflatten<Y>(*ytree, make_leaf);
    return std::tuple<traced_t<Init>, Y>{std::move(carry), std::move(ys)};
  }
}

// No xs: f(carry, std::tuple<>{}) runs opts.length times.
template <class F, class Init>
auto scan(const F& f, const Init& init, ScanOptions opts, std::source_location loc = std::source_location::current()) {
  return scan(f, init, std::tuple<>{}, std::move(opts), loc);
}

}  // namespace dyn

#ifdef DYNSTAGE_IMPLEMENTATION
namespace dyn::detail {

Dim scan_length(const std::vector<Aval>& xs, const std::optional<Dim>& length) {
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (xs[k].rank() == 0)
      fail<TypeError>("dyn::scan(): xs leaf #" + std::to_string(k) + " has type " + aval_str(xs[k]) +
                      ", a scalar; scan runs over the leading axis of each xs, which must have rank >= 1");
  for (std::size_t k = 1; k < xs.size(); ++k)
    if (!(xs[k].shape[0] == xs[0].shape[0]))
      fail<ShapeError>("dyn::scan(): the xs have different leading dimensions: xs leaf #0 has shape " +
                       shape_str(xs[0].shape) + " but xs leaf #" + std::to_string(k) + " has shape " +
                       shape_str(xs[k].shape) + "; every xs is scanned along axis 0, so their leading dimensions "
                       "must be equal");
  if (xs.empty()) {
    if (!length)
      fail<TypeError>("dyn::scan(): no xs and no length; pass the number of steps, e.g. "
                      "dyn::scan(f, init, {.length = n})");
    if (length->is_static() && length->value() < 0)
      fail<ShapeError>("dyn::scan(): length=" + length->to_string() + " is negative");
    return *length;
  }
  if (length && !(*length == xs[0].shape[0]))
    fail<ShapeError>("dyn::scan(): length=" + length->to_string() + " but the xs have leading dimension " +
                     xs[0].shape[0].to_string() + " (xs leaf #0 has shape " + shape_str(xs[0].shape) +
                     "); pass the xs' leading dimension or leave length out");
  return xs[0].shape[0];
}

namespace control {
// The message for a carry that changes type (JAX's _check_carry_type: the
// rule, the types in and out, the fix).
inline std::string scan_carry_error(std::size_t k, const Aval& got, const Aval& want) {
  const std::string pos = "#" + std::to_string(k);
  return "dyn::scan(): the carry must keep its type (lax.scan: the carry output must have the same type as the "
         "carry input); carry input " + pos + " has type " + aval_str(want) + " but the body's carry output " +
         pos + " has type " + aval_str(got) + "; return a carry of the same dtype and shape";
}
}  // namespace control

std::vector<Value> bind_scan(const std::vector<Value>& init, const std::vector<Value>& xs, const Dim& length,
                             bool reverse, const NestedFn& body, const std::size_t& ncarry) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::scan");
  // Step 1: every dimension shared; x is a row of its xs.
  NestedInput in = deduce_input_type(caller, init, false);
  for (const Value& x : xs) {
    Aval a = x.aval();
    a.weak = false;
    a.dim_value.reset();
    a.shape.erase(a.shape.begin());
    in.slot.emplace_back(a.shape.size(), -1);
    in.avals.push_back(std::move(a));
  }
  // Steps 2 and 3: trace the body; the carry keeps its type, and every y's
  // size is known to the caller (the same in every step).
  NestedBody nb = trace_nested(in, false, body, [&](TraceState&, const std::vector<Value>& res) {
    if (ncarry != init.size())
      fail<TypeError>(carry_count_error("dyn::scan()", ncarry, init.size()) +
                      " (the carry is the first element of the tuple the body returns)");
    for (std::size_t k = 0; k < ncarry; ++k) {
      const Aval r = res[k].aval();
      const Aval& a = in.avals[k];
      if (r.dtype != a.dtype && promotes_to(a.dtype, r.dtype))
        fail<TypeError>(carry_dtype_error("dyn::scan()", k, r, a));
      if (r.dtype != a.dtype || !(r.shape == a.shape)) fail<TypeError>(scan_carry_error(k, r, a));
    }
    for (std::size_t k = ncarry; k < res.size(); ++k) {
      const Aval r = res[k].aval();
      for (const Dim& d : r.shape)
        if (!knows(caller, d))
          fail<TypeError>("dyn::scan(): y #" + std::to_string(k - ncarry) + " has type " + aval_str(r) +
                          ", whose size " + d.to_string() + " is computed inside the body, so it may differ "
                          "from step to step; the ys are stacked, so each y's size must be known before the scan "
                          "(from the shapes of the carry, the xs or captured values)");
    }
    return std::vector<Value>{};
  });
  to_no_const_form(*nb.jaxpr);
  ScanParams p{nb.jaxpr, length.is_static() ? length.value() : -1, reverse, static_cast<int>(nb.consts.size()),
               static_cast<int>(init.size())};
  std::vector<Value> operands = nb.consts;
  operands.insert(operands.end(), init.begin(), init.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  if (!length.is_static()) operands.push_back(caller.dim_operand(length));
  return bind(Prim::scan, operands, p);
}

// The operand layout of a scan equation (params.hpp, above ForLoopParams).
struct ScanLayout {
  std::size_t nconsts, ncarry, nxs;
  bool dynamic_length;
};

inline ScanLayout scan_layout(const ScanParams& p, std::size_t noperands) {
  const Jaxpr& b = *p.jaxpr;
  const auto nc = static_cast<std::size_t>(p.num_consts), ncar = static_cast<std::size_t>(p.num_carry);
  if (p.num_consts < 0 || p.num_carry < 0 || nc + ncar > b.invars.size() || b.outvars.size() < ncar ||
      noperands != b.invars.size() + (p.length < 0 ? 1 : 0))
    internal_error("scan: " + std::to_string(noperands) + " operands do not fit a body of " +
                   std::to_string(b.invars.size()) + " inputs with num_consts=" + std::to_string(p.num_consts) +
                   " num_carry=" + std::to_string(p.num_carry));
  return {nc, ncar, b.invars.size() - nc - ncar, p.length < 0};
}

std::vector<Aval> scan_abstract_eval(const std::vector<Aval>& in, const ScanParams& p) {
  const Jaxpr& b = *p.jaxpr;
  const ScanLayout l = scan_layout(p, in.size());
  std::optional<Dim> n;
  if (!l.dynamic_length) n = Dim(p.length);
  else if (in.back().dtype == DType::i64 && in.back().rank() == 0) n = in.back().dim_value;
  if (!n) fail<TypeError>("scan: length=None needs its dynamic length as a last i64[] operand, got " + aval_str(in.back()));
  std::vector<std::optional<Dim>> invar_dims(b.invars.size());
  for (std::size_t q = 0; q < l.nconsts; ++q) invar_dims[q] = in[q].dim_value;
  // The operands against the body's inputs (an xs against its row type).
  for (std::size_t q = 0; q < b.invars.size(); ++q) {
    const Type& ty = b.types[static_cast<std::size_t>(b.invars[q])];
    Aval a = in[q];
    const bool is_xs = q >= l.nconsts + l.ncarry;
    bool ok = !is_xs || a.rank() >= 1;
    if (ok && is_xs) {
      ok = a.shape[0] == *n;
      a.shape.erase(a.shape.begin());
    }
    ok = ok && a.dtype == ty.dtype && a.rank() == ty.rank();
    for (std::size_t j = 0; ok && j < ty.shape.size(); ++j)
      if (ty.shape[j].is_static()) ok = a.shape[j].is_static() && a.shape[j].value() == ty.shape[j].value;
    if (!ok)
      fail<TypeError>("scan: operand #" + std::to_string(q) + " has type " + aval_str(in[q]) + " but the body's input #" +
                      std::to_string(q) + " has type " + type_str(b, ty) +
                      (is_xs ? " (an xs operand is the input's type with a leading dimension of the length, " +
                                   n->to_string() + ")"
                             : ""));
  }
  auto out_type = [&](const Type& t, std::optional<Dim> lead) {
    Aval a{t.dtype, {}, false, std::nullopt};
    if (lead) a.shape.push_back(*lead);
    for (const JDim& d : t.shape) {
      if (d.is_static()) {
        a.shape.push_back(Dim(d.value));
        continue;
      }
      std::optional<Dim> v = control::eval_dim(b, d.var, invar_dims);
      if (!v) internal_error("scan: a result dimension is not computable from the body's constants");
      a.shape.push_back(*v);
    }
    return a;
  };
  std::vector<Aval> out;
  for (std::size_t c = 0; c < l.ncarry; ++c) out.push_back(out_type(b.types[static_cast<std::size_t>(b.invars[l.nconsts + c])], std::nullopt));
  for (std::size_t s = l.ncarry; s < b.outvars.size(); ++s) out.push_back(out_type(b.type_of(b.outvars[s]), n));
  return out;
}

AnyArray scan_row(const AnyArray& x, std::int64_t t) {
  Storage s = x.storage();
  const std::int64_t rows = x.shape().at(0);
  const std::int64_t per = rows == 0 ? 0 : x.size() / rows;
  s.shape.assign(x.shape().begin() + 1, x.shape().end());
  s.size = per;
  s.data = static_cast<char*>(s.data) + static_cast<std::size_t>(t * per) * dtype_size(x.dtype());
  return AnyArray(std::move(s));
}

AnyArray scan_stack(const std::vector<AnyArray>& rows, DType dtype, const std::vector<std::int64_t>& row_shape) {
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(rows.size())};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  Storage s = Storage::make(dtype, std::move(shape), false);
  char* p = static_cast<char*>(s.data);
  for (const AnyArray& r : rows) {
    const std::size_t bytes = static_cast<std::size_t>(r.size()) * dtype_size(dtype);
    if (bytes) std::memcpy(p, r.data(), bytes);
    p += bytes;
  }
  return AnyArray(std::move(s));
}

std::vector<AnyArray> check_scan_carry(std::vector<AnyArray> got, const std::vector<AnyArray>& expected) {
  if (got.size() != expected.size())
    fail<TypeError>(control::carry_count_error("dyn::scan()", got.size(), expected.size()) +
                    " (the carry is the first element of the tuple the body returns)");
  for (std::size_t k = 0; k < got.size(); ++k) {
    const Aval g = aval_of(got[k]), w = aval_of(expected[k]);
    if (g.dtype != w.dtype && promotes_to(w.dtype, g.dtype))
      fail<TypeError>(control::carry_dtype_error("dyn::scan()", k, g, w));
    if (g.dtype != w.dtype || got[k].shape() != expected[k].shape()) fail<TypeError>(control::scan_carry_error(k, g, w));
  }
  return got;
}

void scan_y_shape_error(std::size_t k, const AnyArray& got, const std::vector<std::int64_t>& want) {
  fail<TypeError>("dyn::scan(): y #" + std::to_string(k) + " has type " + aval_str(aval_of(got)) +
                  " in this step but shape " + shape_str(to_shape(want)) +
                  " in the first; the ys are stacked, so each y keeps its dtype and shape in every step");
}

std::vector<AnyArray> scan_impl(const std::vector<AnyArray>& in, const ScanParams& p) {
  const Jaxpr& b = *p.jaxpr;
  const ScanLayout l = scan_layout(p, in.size());
  const std::int64_t n = l.dynamic_length ? scalar_of(in.back()).as<std::int64_t>() : p.length;
  // The ys' row shapes, from the constants' values (known before any step,
  // so a zero-length scan has them too).
  std::vector<std::optional<Dim>> invar_dims(b.invars.size());
  for (std::size_t q = 0; q < l.nconsts; ++q)
    if (in[q].rank() == 0 && is_index_dtype(in[q].dtype())) invar_dims[q] = Dim(scalar_of(in[q]).as<std::int64_t>());
  std::vector<std::vector<std::int64_t>> yshape;
  std::vector<AnyArray> ys;
  for (std::size_t s = l.ncarry; s < b.outvars.size(); ++s) {
    const Type& t = b.type_of(b.outvars[s]);
    std::vector<std::int64_t> shape{n};
    for (const JDim& d : t.shape) {
      std::optional<Dim> v = d.is_static() ? std::optional<Dim>(Dim(d.value)) : control::eval_dim(b, d.var, invar_dims);
      if (!v || !v->is_static()) internal_error("scan: a y's size is not computable from the body's constants");
      shape.push_back(v->value());
    }
    yshape.emplace_back(shape.begin() + 1, shape.end());
    ys.emplace_back(Storage::make(t.dtype, std::move(shape), false));
  }
  std::vector<AnyArray> state(in.begin() + static_cast<std::ptrdiff_t>(l.nconsts),
                              in.begin() + static_cast<std::ptrdiff_t>(l.nconsts + l.ncarry));
  std::vector<AnyArray> args;
  for (std::int64_t s = 0; s < n; ++s) {
    const std::int64_t t = p.reverse ? n - 1 - s : s;
    args.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(l.nconsts));
    args.insert(args.end(), state.begin(), state.end());
    for (std::size_t q = 0; q < l.nxs; ++q) args.push_back(scan_row(in[l.nconsts + l.ncarry + q], t));
    std::vector<AnyArray> r = eval_jaxpr(b, {}, args);
    state.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(l.ncarry));
    for (std::size_t q = 0; q < ys.size(); ++q) {
      const AnyArray& y = r[l.ncarry + q];
      if (y.shape() != yshape[q]) internal_error("scan: a y's shape differs from its type's");
      const std::size_t bytes = static_cast<std::size_t>(y.size()) * dtype_size(y.dtype());
      if (bytes) std::memcpy(static_cast<char*>(ys[q].storage().data) + static_cast<std::size_t>(t) * bytes, y.data(), bytes);
    }
  }
  state.insert(state.end(), ys.begin(), ys.end());
  return state;
}

}  // namespace dyn::detail
#endif  // DYNSTAGE_IMPLEMENTATION
