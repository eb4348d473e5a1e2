// dynstage: reverse mode (dyn::vjp, grad, value_and_grad, jacrev) and
// Jacobians (jacfwd, hessian), API.md section 14, on transform/linearize.hpp.
//
// Every function here traces f once on tracers of its arguments' types,
// linearizes it (the forward pass runs now, eagerly or recorded in the
// caller's trace) and applies the transpose of the linear part (the
// backward pass) or the linear part itself (jacfwd). Like dyn::jvp they work
// on arrays (computing at once) and on tracers (recording: make_jaxpr prints
// the differentiated program, jit compiles it), and they compose:
// grad(grad(f)) differentiates the program grad(f) records.
#pragma once

#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../trace/numpy_layout.hpp"
#include "../trace/numpy_shape.hpp"
#include "jvp.hpp"
#include "linearize.hpp"

namespace dyn {

// The arguments grad and value_and_grad differentiate (jax.grad's argnums).
template <std::size_t... I>
struct argnums {};

namespace detail {

template <class... X>
inline constexpr bool any_tracer_leaf_v = (false || ... || has_tracer_leaf_v<X>);

// The type of a derivative with respect to (or a value of the structure of)
// X: tracers inside a trace, arrays in eager code.
template <bool Traced, class X>
using result_like_t = std::conditional_t<Traced, traced_t<X>, concrete_t<X>>;

// The leaves of each argument: where argument k's leaves start in the flat list.
template <class... A>
std::vector<std::size_t> leaf_offsets(const A&... a) {
  std::vector<std::size_t> r{0};
  ((r.push_back(r.back() + treedef_of(a).num_leaves)), ...);
  return r;
}

// Zeros where a cotangent is a symbolic zero, at each leaf's type.
inline std::vector<Value> instantiate_all(const std::vector<Tangent>& ts, const std::vector<Value>& like) {
  std::vector<Value> r;
  for (std::size_t k = 0; k < ts.size(); ++k)
    r.push_back(ts[k] ? jvp_detail::fit(*ts[k], like[k].shape()) : jvp_detail::zeros_like(like[k]));
  return r;
}

// Results computed from concrete arguments must be concrete: a tracer here
// comes from an enclosing trace the function closed over.
inline void check_concrete(const char* fn, const std::vector<Value>& vs) {
  for (const Value& v : vs)
    if (v.is_tracer())
      fail<TypeError>(std::string(fn) + ": the function uses a tracer of an enclosing trace while its arguments "
                      "are concrete arrays; pass that value as an argument");
}

// Cotangents given for f's results: their leaves, each of its result's
// dtype and shape (a C++ scalar is converted to a rank-0 result's dtype).
std::vector<Tangent> check_cotangents(const char* fn, const std::vector<Value>& cts, const std::vector<Value>& outs);

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<Tangent> check_cotangents(const char* fn, const std::vector<Value>& cts, const std::vector<Value>& outs) {
  if (cts.size() != outs.size())
    fail<TypeError>(std::string(fn) + ": the cotangent has " + std::to_string(cts.size()) +
                    " leaves but the function's result " + std::to_string(outs.size()) +
                    "; give a cotangent of the result's structure");
  std::vector<Tangent> r;
  for (std::size_t k = 0; k < cts.size(); ++k) {
    Value c = cts[k];
    if (!c.is_tracer() && c.rank() == 0 && outs[k].rank() == 0 && c.dtype() != outs[k].dtype() &&
        differentiable_dtype(outs[k].dtype()))
      c = convert(c, outs[k].dtype());
    if (c.dtype() != outs[k].dtype() || !(c.shape() == outs[k].shape()))
      fail<TypeError>(std::string(fn) + ": cotangent #" + std::to_string(k) + " has type " + aval_str(c.aval()) +
                      " but result #" + std::to_string(k) + " has type " + aval_str(outs[k].aval()) +
                      "; a cotangent has its result's dtype and shape");
    r.emplace_back(differentiable_dtype(c.dtype()) ? Tangent(c) : std::nullopt);
  }
  return r;
}
#endif

// Which leaves are differentiated: those of the arguments in `which`, each
// floating point, real or complex (else a TypeError naming the argument).
template <class... A>
std::vector<char> wrt_mask(const char* fn, const std::vector<std::size_t>& which, const std::vector<Value>& xs,
                           const std::vector<std::size_t>& offsets) {
  std::vector<char> m(xs.size(), 0);
  for (std::size_t a : which)
    for (std::size_t k = offsets[a]; k < offsets[a + 1]; ++k) {
      if (!differentiable_dtype(xs[k].dtype()))
        fail<TypeError>(std::string(fn) + ": argument " + std::to_string(a) + " has type " + aval_str(xs[k].aval()) +
                        "; only floating-point arguments can be differentiated (convert it, or leave it out of "
                        "argnums)");
      m[k] = 1;
    }
  return m;
}

// Argument k of a call, as result structure from `vs` (its leaves at
// offsets[k]...).
template <bool Traced, std::size_t K, class... A>
auto rebuild_arg(const std::tuple<const A&...>& args, const std::vector<Value>& vs,
                 const std::vector<std::size_t>& offsets) {
  using X = std::remove_cvref_t<std::tuple_element_t<K, std::tuple<A...>>>;
  std::vector<Value> mine(vs.begin() + static_cast<std::ptrdiff_t>(offsets[K]),
                          vs.begin() + static_cast<std::ptrdiff_t>(offsets[K + 1]));
  return rebuild<result_like_t<Traced, X>>(treedef_of(std::get<K>(args)), mine);
}

// The backward function dyn::vjp returns.
template <bool Traced, class R, class... P>
class VjpFn {
public:
  VjpFn(std::shared_ptr<const Linearized> lin, std::vector<Value> xs, std::vector<std::size_t> offsets,
        std::tuple<P...> protos)
      : lin_(std::move(lin)), xs_(std::move(xs)), offsets_(std::move(offsets)), protos_(std::move(protos)) {}

  // The cotangents of the primals (a tuple, one per argument, each of its
  // argument's structure) for a cotangent `ct` of f's result structure.
  template <class Ct>
  auto operator()(const Ct& ct) const {
    const std::vector<Tangent> cts = check_cotangents("dyn::vjp", leaves_of(ct), lin_->primals_out);
    const std::vector<Value> r = instantiate_all(linear_transpose(*lin_, cts), xs_);
    const auto args = std::apply([](const auto&... p) { return std::tuple<const P&...>(p...); }, protos_);
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple{rebuild_arg<Traced, K, P...>(args, r, offsets_)...};
    }(std::index_sequence_for<P...>{});
  }

private:
  std::shared_ptr<const Linearized> lin_;
  std::vector<Value> xs_;
  std::vector<std::size_t> offsets_;
  std::tuple<P...> protos_;  // the primals, for their structure
};

// f traced and linearized at args, differentiating the leaves of `which`.
template <class F, class... A>
std::shared_ptr<const Linearized> linearize_call(const char* fn, const F& f, const std::vector<std::size_t>& which,
                                                 const std::vector<Value>& xs, const std::tuple<const A&...>& args,
                                                 TreeDef* out_tree) {
  const std::vector<std::size_t> offsets = std::apply([](const auto&... a) { return leaf_offsets(a...); }, args);
  const std::vector<char> wrt = wrt_mask(fn, which, xs, offsets);
  const TracedFn traced = trace_for_transform(f, xs, args);
  if (out_tree) *out_tree = traced.out_tree;
  return std::make_shared<const Linearized>(linearize(traced, xs, wrt));
}

// grad's check of f's result: one real floating-point scalar (as
// jax.grad: a complex result needs JAX's holomorphic=True, which dynstage's
// grad has not; dyn::jvp and dyn::vjp differentiate complex results).
inline void check_scalar_result(const char* fn, const std::vector<Value>& outs) {
  if (outs.size() == 1 && outs[0].rank() == 0 && is_complex(outs[0].dtype()))
    fail<TypeError>(std::string(fn) + ": the function returns a complex scalar (" + aval_str(outs[0].aval()) +
                    "); grad differentiates real-valued functions (of real or complex arguments); for a complex "
                    "result use dyn::vjp (cotangent 1 gives JAX's grad(f, holomorphic=True)) or dyn::jvp");
  if (outs.size() != 1 || outs[0].rank() != 0 || !is_float(outs[0].dtype())) {
    std::string got;
    for (std::size_t k = 0; k < outs.size(); ++k) got += (k ? ", " : "") + aval_str(outs[k].aval());
    fail<TypeError>(std::string(fn) + ": the function must return one floating-point scalar, got (" + got +
                    "); use dyn::vjp or dyn::jacrev for other results");
  }
}

template <bool WithValue, class F, std::size_t... I>
class GradFn {
public:
  GradFn(F f, std::source_location loc) : f_(std::move(f)), loc_(loc) {}

  template <class... A>
  auto operator()(const A&... a) const {
    static_assert(((I < sizeof...(A)) && ...), "dyn::grad: an argnums index is not an argument of the call");
    constexpr bool traced = any_tracer_leaf_v<A...>;
    OpSite site(loc_);
    const char* fn = WithValue ? "dyn::value_and_grad" : "dyn::grad";
    const std::tuple<const A&...> args(a...);
    const std::vector<Value> xs = leaves_of(a...);
    const std::vector<std::size_t> offsets = leaf_offsets(a...);
    TreeDef out_tree;
    const auto lin = linearize_call(fn, f_, {I...}, xs, args, &out_tree);
    check_scalar_result(fn, lin->primals_out);
    if constexpr (!traced) check_concrete(fn, lin->primals_out);
    const Value one = jvp_detail::lit(lin->primals_out[0].dtype(), 1);
    const std::vector<Value> g = instantiate_all(linear_transpose(*lin, {one}), xs);
    auto grads = [&] {
      if constexpr (sizeof...(I) == 1) return rebuild_arg<traced, I...>(args, g, offsets);
      else return std::tuple{rebuild_arg<traced, I>(args, g, offsets)...};
    }();
    if constexpr (WithValue) {
      using R = traced_result_t<F, A...>;
      return std::tuple{rebuild<result_like_t<traced, R>>(out_tree, lin->primals_out), std::move(grads)};
    } else {
      return grads;
    }
  }

private:
  F f_;
  std::source_location loc_;
};

// jacfwd / jacrev of f with respect to its first argument, an array (or
// scalar), f returning one array: J of shape out.shape + x.shape.
template <bool Forward, class F>
class JacFn {
public:
  JacFn(F f, std::source_location loc) : f_(std::move(f)), loc_(loc) {}

  template <class X, class... A>
  auto operator()(const X& x, const A&... rest) const {
    constexpr bool traced = any_tracer_leaf_v<X, A...>;
    const char* fn = Forward ? "dyn::jacfwd" : "dyn::jacrev";
    OpSite site(loc_);
    const std::tuple<const X&, const A&...> args(x, rest...);
    const std::vector<Value> xs = leaves_of(x, rest...);
    if (treedef_of(x).num_leaves != 1)
      fail<TypeError>(std::string(fn) + ": the first argument must be one array (or scalar), not a structure");
    if (is_complex(xs[0].dtype()))
      fail<TypeError>(std::string(fn) + ": the argument has type " + aval_str(xs[0].aval()) +
                      "; Jacobians of functions of complex arguments are not built (JAX's holomorphic=True); use "
                      "dyn::jvp or dyn::vjp");
    TreeDef out_tree;
    const auto lin = linearize_call(fn, f_, {0}, xs, args, &out_tree);
    if (lin->primals_out.size() != 1 || !is_float(lin->primals_out[0].dtype()))
      fail<TypeError>(std::string(fn) + ": the function must return one floating-point array");
    if constexpr (!traced) check_concrete(fn, lin->primals_out);
    const Value& y = lin->primals_out[0];
    const Value& x0 = xs[0];
    const std::int64_t n = static_size(fn, Forward ? x0 : y);
    const DType dt = Forward ? x0.dtype() : y.dtype();
    const Shape basis_shape = Forward ? x0.shape() : y.shape();
    // Row k of the identity, shaped as the argument (forward) or result (reverse).
    const Value eye_n = eye(dt, Dim(n), current_trace() != nullptr);
    std::vector<Value> cols;
    for (std::int64_t k = 0; k < n; ++k) {
      const Value e = reshape(slice_in_dim(eye_n, Dim(k), Dim(k + 1), 1, 0), basis_shape);
      if constexpr (Forward) {
        std::vector<Tangent> ts(xs.size());
        ts[0] = e;
        cols.push_back(instantiate_all(linear_apply(*lin, ts), lin->primals_out)[0]);
      } else {
        cols.push_back(instantiate_all(linear_transpose(*lin, {e}), xs)[0]);
      }
    }
    // Forward: columns of out.shape stacked last; reverse: rows of x.shape stacked first.
    Shape js = y.shape();
    for (const Dim& d : x0.shape()) js.push_back(d);
    Value j = stack(cols, Forward ? y.rank() : 0);
    j = reshape(j, js);
    // The Jacobian has the result's dtype (forward: tangents of the result)
    // or the argument's (reverse: cotangents of the argument).
    using Y = traced_result_t<F, X, A...>;
    using J = std::conditional_t<Forward, result_like_t<traced, Y>, result_like_t<traced, X>>;
    return from_value<J>(j);
  }

private:
  static std::int64_t static_size(const char* fn, const Value& v) {
    std::int64_t n = 1;
    for (const Dim& d : v.shape()) {
      if (!d.is_static())
        fail<TypeError>(std::string(fn) + ": the shape " + shape_str(v.shape()) +
                        " is symbolic; a Jacobian is built one basis vector at a time and needs static sizes");
      n *= d.value();
    }
    return n;
  }
  F f_;
  std::source_location loc_;
};

}  // namespace detail

// vjp(f, primals...): jax.vjp. Returns std::tuple{f(primals...), f_vjp},
// where f_vjp(ct) takes a cotangent of f's result structure (each leaf of
// its result's dtype and shape) and returns a std::tuple of the primals'
// cotangents, one per argument, each of its argument's structure (an
// integer argument's is zero). On arrays it computes at once; on tracers
// (inside jit, make_jaxpr) it records the forward pass when called and the
// backward pass when f_vjp is called, in the same trace.
template <class F, class... P>
auto vjp(const F& f, const P&... primals) {
  using namespace detail;
  constexpr bool traced = any_tracer_leaf_v<P...>;
  const std::tuple<const P&...> args(primals...);
  const std::vector<Value> xs = leaves_of(primals...);
  const std::vector<std::size_t> offsets = leaf_offsets(primals...);
  // Arguments with a leaf that is not floating point (real or complex) are not differentiated
  // (their cotangents are zero).
  std::vector<std::size_t> float_args;
  for (std::size_t k = 0; k < sizeof...(P); ++k) {
    bool all = offsets[k] < offsets[k + 1];
    for (std::size_t i = offsets[k]; i < offsets[k + 1]; ++i) all = all && differentiable_dtype(xs[i].dtype());
    if (all) float_args.push_back(k);
  }
  TreeDef out_tree;
  auto lin = linearize_call("dyn::vjp", f, float_args, xs, args, &out_tree);
  if constexpr (!traced) check_concrete("dyn::vjp", lin->primals_out);
  using R = traced_result_t<F, P...>;
  auto y = rebuild<result_like_t<traced, R>>(out_tree, lin->primals_out);
  return std::tuple{std::move(y), VjpFn<traced, R, P...>(std::move(lin), xs, offsets, std::tuple<P...>(primals...))};
}

// grad(f): jax.grad; d f / d argument 0 (argnums<I...>: of those
// arguments, a std::tuple when several), f returning one floating-point
// scalar. Each gradient has its argument's structure and dtype.
template <class F, std::size_t... I>
auto grad(F f, argnums<I...>, std::source_location loc = std::source_location::current()) {
  static_assert(sizeof...(I) > 0, "dyn::grad: give at least one argument index in dyn::argnums<...>");
  return detail::GradFn<false, F, I...>(std::move(f), loc);
}
template <class F>
auto grad(F f, std::source_location loc = std::source_location::current()) {
  return detail::GradFn<false, F, 0>(std::move(f), loc);
}

// value_and_grad(f): std::tuple{f(args...), grad(f)(args...)}, one pass.
template <class F, std::size_t... I>
auto value_and_grad(F f, argnums<I...>, std::source_location loc = std::source_location::current()) {
  static_assert(sizeof...(I) > 0, "dyn::value_and_grad: give at least one argument index in dyn::argnums<...>");
  return detail::GradFn<true, F, I...>(std::move(f), loc);
}
template <class F>
auto value_and_grad(F f, std::source_location loc = std::source_location::current()) {
  return detail::GradFn<true, F, 0>(std::move(f), loc);
}

// checkpoint(f): jax.checkpoint. checkpoint(f)(args...) computes what
// f(args...) computes. On tracers (under grad, vjp, jit, make_jaxpr) it is
// recorded as one `checkpoint` equation around f's traced body, and
// reverse mode keeps none of f's intermediates as residuals: it recomputes
// them from f's inputs in the backward pass (JAX's default policy, nothing
// saveable). Memory for time: in a loop or a deep composition only the
// checkpointed functions' inputs are kept. Under jit the backend inlines
// the body, so a checkpoint costs nothing when no derivative is taken. On
// arrays (no tracer among the arguments) it calls f: there is nothing to
// record, as cond on a concrete predicate runs its branch.
template <class F>
auto checkpoint(F f, std::source_location loc = std::source_location::current()) {
  return [f = std::move(f), loc](const auto&... args) {
    using namespace detail;
    constexpr bool traced = any_tracer_leaf_v<std::remove_cvref_t<decltype(args)>...>;
    if constexpr (!traced) {
      return f(args...);
    } else {
      OpSite site(loc);
      const std::vector<Value> xs = leaves_of(args...);
      const std::tuple<const std::remove_cvref_t<decltype(args)>&...> protos(args...);
      using R = traced_result_t<F, std::remove_cvref_t<decltype(args)>...>;
      TreeDef out_tree;
      auto body = [&](const std::vector<Value>& in) {
        std::size_t k = 0;
        auto typed = std::apply(
            [&](const auto&... p) {
              return std::tuple<traced_t<std::remove_cvref_t<decltype(p)>>...>{traced_like(p, in, k)...};
            },
            protos);
        const R out = std::apply(f, typed);
        out_tree = treedef_of(out);
        return flatten_results(out);
      };
      return rebuild<traced_t<R>>(out_tree, bind_checkpoint(xs, body, CheckpointParams{}));
    }
  };
}

// jacfwd(f)(x, ...): the Jacobian of f's (one array) result with respect to
// x (one array or scalar), shape result.shape + x.shape, by one forward
// pass of the linearized f per element of x (static sizes).
template <class F>
auto jacfwd(F f, std::source_location loc = std::source_location::current()) {
  return detail::JacFn<true, F>(std::move(f), loc);
}
// jacrev(f)(x, ...): the same Jacobian by one backward pass per element of
// the result (the better choice when the result is smaller than x).
template <class F>
auto jacrev(F f, std::source_location loc = std::source_location::current()) {
  return detail::JacFn<false, F>(std::move(f), loc);
}
// hessian(f)(x, ...) = jacfwd(jacrev(f)): f returns a scalar; shape x.shape + x.shape.
template <class F>
auto hessian(F f, std::source_location loc = std::source_location::current()) {
  return jacfwd(jacrev(std::move(f), loc), loc);
}

}  // namespace dyn
