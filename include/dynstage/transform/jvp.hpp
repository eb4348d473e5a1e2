// dynstage: dyn::jvp, forward-mode differentiation as an interpreter of
// jaxprs (issue 20, API.md section 14).
//
// dyn::jvp(f, std::tuple{x...}, std::tuple{tx...}) traces f once on tracers
// of the primals' types (a nested scope: in eager code a fresh trace, inside
// jit or make_jaxpr one nested in the caller's, sharing its dimensions), then
// walks the jaxpr with jvp_eval: the same loop as eval_jaxpr, each equation
// replaced by its primitive's JVP rule (transform/jvp_rules.hpp). The rules
// bind, so on concrete primals the walk computes at once, and under a trace
// it records the differentiated program in the caller's jaxpr: that is how
// `dyn::make_jaxpr` prints it and `dyn::jit` compiles it.
#pragma once

#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "../trace/api.hpp"
#include "../trace/control.hpp"
#include "../trace/pytree.hpp"
#include "../trace/trace.hpp"
#include "jvp_rules.hpp"

namespace dyn {

namespace detail {

// The JVP interpreter: the outputs of `j` and their tangents, for constants
// `consts` (no tangent), arguments `args` and their tangents `targs`
// (nullopt: zero). Equations none of whose operands has a tangent, or whose
// outputs are not floating point, are bound as they are.
JvpOut jvp_eval(const Jaxpr& j, const std::vector<Value>& consts, const std::vector<Value>& args,
                const std::vector<Tangent>& targs);

#ifdef DYNSTAGE_IMPLEMENTATION
JvpOut jvp_eval(const Jaxpr& j, const std::vector<Value>& consts, const std::vector<Value>& args,
                const std::vector<Tangent>& targs) {
  std::vector<Value> env(j.types.size());
  std::vector<Tangent> tenv(j.types.size());
  for (std::size_t i = 0; i < consts.size(); ++i) env.at(static_cast<std::size_t>(j.constvars.at(i))) = consts[i];
  for (std::size_t i = 0; i < args.size(); ++i) {
    env.at(static_cast<std::size_t>(j.invars.at(i))) = args[i];
    tenv.at(static_cast<std::size_t>(j.invars.at(i))) = targs.at(i);
  }
  auto read = [&](const Atom& a) { return a.is_var() ? env[static_cast<std::size_t>(a.var)] : scalar_value(a.lit, a.weak); };
  auto tread = [&](const Atom& a) { return a.is_var() ? tenv[static_cast<std::size_t>(a.var)] : std::nullopt; };
  for (const Eqn& e : j.eqns) {
    std::vector<Value> in;
    std::vector<Tangent> tin;
    bool any = false;
    for (const Atom& a : e.inputs) {
      in.push_back(read(a));
      tin.push_back(tread(a));
      any = any || tin.back().has_value();
    }
    bool float_out = false;  // a result that carries a tangent (real or complex float)
    for (int v : e.outputs) float_out = float_out || differentiable_dtype(j.types.at(static_cast<std::size_t>(v)).dtype);
    JvpOut r;
    if (any && float_out) {
      r = jvp_rule(e.prim, in, tin, e.params);
    } else {
      r.primals = bind(e.prim, in, e.params, current_trace() != nullptr);  // staged when tracing, as it was
      r.tangents.assign(r.primals.size(), std::nullopt);
    }
    for (std::size_t k = 0; k < e.outputs.size(); ++k) {
      env[static_cast<std::size_t>(e.outputs[k])] = r.primals.at(k);
      tenv[static_cast<std::size_t>(e.outputs[k])] = r.tangents.at(k);
    }
  }
  JvpOut out;
  for (const Atom& a : j.outvars) {
    out.primals.push_back(read(a));
    out.tangents.push_back(tread(a));
  }
  return out;
}
#endif

// A new argument of `scope` for invar v of the body `j`: its dimensions are
// earlier arguments' (a body's types name its dimension invars); `dim`
// records the dimension each i64[] argument stands for.
inline Value new_body_arg(TraceScope& scope, const Jaxpr& j, int v, std::vector<std::optional<Dim>>& dim) {
  const Type& ty = j.types.at(static_cast<std::size_t>(v));
  Aval a{ty.dtype, {}, false, std::nullopt};
  for (const JDim& d : ty.shape) {
    if (d.is_static()) {
      a.shape.push_back(Dim(d.value));
      continue;
    }
    const std::optional<Dim>& e = dim.at(static_cast<std::size_t>(d.var));
    if (!e) internal_error("a body input's dimension is not an earlier input");
    a.shape.push_back(*e);
  }
  Value x = scope.new_arg(a);
  if (x.tracer->dim) dim[static_cast<std::size_t>(v)] = *x.tracer->dim;
  return x;
}

// The tangent of argument k must have the primal's type, and only
// floating-point (real or complex) primals have tangents.
void check_tangent(const char* fn, std::size_t k, const Value& x, const Value& t);

#ifdef DYNSTAGE_IMPLEMENTATION
void check_tangent(const char* fn, std::size_t k, const Value& x, const Value& t) {
  const std::string pos = "#" + std::to_string(k);
  if (!differentiable_dtype(x.dtype()))
    fail<TypeError>(std::string(fn) + ": primal " + pos + " has type " + aval_str(x.aval()) +
                    "; only floating-point arguments have tangents (convert it, or close over it instead of "
                    "passing it)");
  if (t.dtype() != x.dtype() || !(t.shape() == x.shape()))
    fail<TypeError>(std::string(fn) + ": tangent " + pos + " has type " + aval_str(t.aval()) + " but primal " +
                    pos + " has type " + aval_str(x.aval()) + "; a tangent has its primal's dtype and shape");
}
#endif

// f traced on tracers of the types of `xs` (pytree leaves of `primals`), in
// a scope nested in the current trace if there is one: the jaxpr, the values
// of its constants in the caller, and the structure of f's result.
struct TracedFn {
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;
  TreeDef out_tree;
};

// What f returns on tracers of the primals P.
template <class F, class... P>
using traced_result_t =
    std::remove_cvref_t<decltype(std::apply(std::declval<const F&>(), std::declval<std::tuple<traced_t<P>...>&>()))>;

template <class F, class... P>
TracedFn trace_for_transform(const F& f, const std::vector<Value>& xs, const std::tuple<P...>& primals) {
  TracedFn r;
  TraceScope scope;
  std::vector<Value> args;
  for (const Value& x : xs) args.push_back(scope.new_arg(x.aval()));
  std::size_t k = 0;
  auto typed = std::apply([&](const auto&... p) { return std::tuple<traced_t<P>...>{traced_like(p, args, k)...}; },
                          primals);
  const traced_result_t<F, P...> out = std::apply(f, typed);
  r.out_tree = treedef_of(out);
  r.jaxpr = scope.finish(flatten_results(out), /*implicit_results=*/false);
  r.consts = scope.const_sources();
  return r;
}

// Values as the structure `tree` of type Out (arrays or tracers).
template <class Out>
Out rebuild(const TreeDef& tree, const std::vector<Value>& vs) {
  std::size_t j = 0;
  auto make_leaf = [&]<class L>() -> L { return from_value<L>(vs.at(j++)); };
  return unflatten<Out>(tree, make_leaf);
}

}  // namespace detail

// jvp(f, primals, tangents): jax.jvp. `primals` and `tangents` are tuples of
// f's arguments (pytrees of arrays, tracers or scalars) and of their
// tangents, of the same structure, dtypes and shapes. Returns
// std::tuple{f(primals...), the directional derivative of f at primals
// along tangents}, each of f's result structure; a result that is not
// floating point has a zero tangent. On arrays it computes at once; on
// tracers (inside jit, make_jaxpr) it records the differentiated program.
template <class F, class... P, class... T>
auto jvp(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents,
         std::source_location loc = std::source_location::current()) {
  using namespace detail;
  static_assert(sizeof...(P) == sizeof...(T), "dyn::jvp: give one tangent per primal argument");
  OpSite site(loc);
  const std::vector<Value> xs = std::apply([](const auto&... p) { return leaves_of(p...); }, primals);
  const std::vector<Value> ts = std::apply([](const auto&... t) { return leaves_of(t...); }, tangents);
  if (xs.size() != ts.size())
    fail<TypeError>("dyn::jvp: the tangents have " + std::to_string(ts.size()) + " leaves but the primals " +
                    std::to_string(xs.size()) + "; give tangents of the primals' structure");
  std::vector<Tangent> tt;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    check_tangent("dyn::jvp", k, xs[k], ts[k]);
    tt.emplace_back(ts[k]);
  }
  const TracedFn traced = trace_for_transform(f, xs, primals);
  using R = traced_result_t<F, P...>;
  JvpOut o = jvp_eval(*traced.jaxpr, traced.consts, xs, tt);
  std::vector<Value> touts;
  for (std::size_t k = 0; k < o.primals.size(); ++k)
    touts.push_back(o.tangents[k] ? jvp_detail::fit(*o.tangents[k], o.primals[k].shape())
                                  : jvp_detail::zeros_like(o.primals[k]));
  constexpr bool traced_inputs = (false || ... || has_tracer_leaf_v<P>) || (false || ... || has_tracer_leaf_v<T>);
  if constexpr (traced_inputs) {
    return std::tuple{rebuild<traced_t<R>>(traced.out_tree, o.primals), rebuild<traced_t<R>>(traced.out_tree, touts)};
  } else {
    for (const Value& v : o.primals)
      if (v.is_tracer())
        fail<TypeError>("dyn::jvp: the function uses a tracer of an enclosing trace while its arguments are "
                        "concrete arrays; pass that value as an argument");
    return std::tuple{rebuild<concrete_t<R>>(traced.out_tree, o.primals), rebuild<concrete_t<R>>(traced.out_tree, touts)};
  }
}

}  // namespace dyn
