// dynstage: entry points that run a user's function — make_jaxpr and eager —
// and the options they share with jit.
//
// make_jaxpr(f, options...) and jit(f, options...) record where the user
// asked for the trace (a defaulted std::source_location): errors raised while
// tracing name that place.
#pragma once

#include <cstddef>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "interpret.hpp"
#include "pytree.hpp"

namespace dyn {

// ---------------------------------------------------------------------------
// Options.

// Arguments I... are passed to the function unchanged, never traced; for jit
// they are part of the cache key.
template <std::size_t... I>
struct static_argnums {};

namespace detail {

template <class X> struct is_static_argnums : std::false_type {};
template <std::size_t... I> struct is_static_argnums<static_argnums<I...>> : std::true_type {
  static constexpr bool contains(std::size_t k) { return ((k == I) || ...); }
};

// Whether argument k is static under options Opts.
template <class... Opts>
constexpr bool is_static_arg([[maybe_unused]] std::size_t k) {
  bool r = false;
  ((r = r || [&] {
      if constexpr (is_static_argnums<Opts>::value) return is_static_argnums<Opts>::contains(k);
      else return false;
    }()),
   ...);
  return r;
}

// Replace the leaves of a non-static argument with fresh argument tracers of
// `scope`, in order.
template <class Arg>
traced_t<Arg> trace_argument(const Arg& arg, TraceScope& scope) {
  std::vector<Aval> avals;
  for_each_leaf(arg, [&](const auto& leaf) { avals.push_back(leaf_aval(leaf)); });
  std::size_t k = 0;
  auto make_leaf = [&]<class L>() -> L {
    Value v = scope.new_arg(avals[k++]);
    return L(v.tracer);
  };
  return unflatten<traced_t<Arg>>(treedef_of(arg), make_leaf);
}

// The flattened results of a traced function as bind operands.
template <class R>
std::vector<Value> flatten_results(const R& out) {
  std::vector<Value> r;
  for_each_leaf(out, [&](const auto& leaf) {
    // A C++ scalar result is a literal of its exact C++ type (a `double` is
    // f64[], not a weak f32), matching concrete_t and the eager result.
    if constexpr (is_scalar_v<decltype(leaf)>) r.push_back(Value{leaf_array(leaf), nullptr, false});
    else r.push_back(leaf_value(leaf));
  });
  return r;
}

// Results of an eager call as concrete arrays (scalars become rank-0 arrays,
// pairs tuples).
template <class R>
concrete_t<R> to_concrete(const R& out) {
  std::vector<AnyArray> leaves;
  for_each_leaf(out, [&](const auto& leaf) { leaves.push_back(leaf_array(leaf)); });
  std::size_t k = 0;
  auto make_leaf = [&]<class L>() -> L { return leaves[k++].template get<typename L::value_type>(); };
  return unflatten<concrete_t<R>>(treedef_of(out), make_leaf);
}

// Trace f on arguments: static ones pass through, the others become argument
// tracers. Returns the closed jaxpr and the traced result (for its structure).
template <class... Opts, class F, class... Args>
auto trace_to_jaxpr(const F& f, const std::source_location& loc, const Args&... args) {
  TraceSite site(loc);
  TraceScope scope;
  auto traced_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&]<std::size_t K>(const auto& arg) -> decltype(auto) {
      if constexpr (is_static_arg<Opts...>(K)) return arg;
      else return trace_argument(arg, scope);
    };
    // Braced initialisation evaluates left to right: invars in argument order.
    return std::tuple<std::conditional_t<is_static_arg<Opts...>(I), const Args&, traced_t<Args>>...>{
        one.template operator()<I>(args)...};
  }(std::index_sequence_for<Args...>{});
  auto out = std::apply(f, traced_args);
  std::vector<Value> outs = flatten_results(out);
  std::shared_ptr<Jaxpr> jaxpr = scope.finish(outs);
  ClosedJaxpr cj{jaxpr, {}};
  for (const Value& src : scope.const_sources()) {
    if (src.is_tracer())
      fail<TypeError>("UnexpectedTracerError: the function uses a tracer of an enclosing trace; nested "
                      "make_jaxpr/jit cannot capture outer tracers (pass them as arguments)");
    cj.consts.push_back(src.array);
  }
  return std::make_pair(std::move(cj), treedef_of(out));
}

}  // namespace detail

// ---------------------------------------------------------------------------
// make_jaxpr(f, options...)(args...) -> ClosedJaxpr

template <class F, class... Opts>
class MakeJaxpr {
public:
  MakeJaxpr(F f, std::source_location loc) : f_(std::move(f)), loc_(loc) {}

  template <class... Args>
  ClosedJaxpr operator()(const Args&... args) const {
    return detail::trace_to_jaxpr<Opts...>(f_, loc_, args...).first;
  }

private:
  F f_;
  std::source_location loc_;
};

// Fixed arities rather than a pack, so that a defaulted source_location can
// follow the options (errors name where the user asked for the trace). Each
// option type appears at most once; there are four kinds.
template <class F>
auto make_jaxpr(F f, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F>(std::move(f), loc);
}
template <class F, class O1>
auto make_jaxpr(F f, O1, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1>(std::move(f), loc);
}
template <class F, class O1, class O2>
auto make_jaxpr(F f, O1, O2, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2>(std::move(f), loc);
}
template <class F, class O1, class O2, class O3>
auto make_jaxpr(F f, O1, O2, O3, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2, O3>(std::move(f), loc);
}

// ---------------------------------------------------------------------------
// eager(f)(args...): run f on concrete arrays, with the pytree conventions of
// jit (C++ scalars in results become rank-0 arrays, pairs become tuples).

template <class F, class... Opts>
class Eager {
public:
  explicit Eager(F f) : f_(std::move(f)) {}

  // Non-static C++ scalar arguments are passed as rank-0 arrays of their
  // exact type, as jit and make_jaxpr trace them.
  template <class... Args>
  auto operator()(const Args&... args) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto pass = [&]<std::size_t K>(const auto& arg) -> decltype(auto) {
        if constexpr (detail::is_static_arg<Opts...>(K)) return arg;
        else return detail::lift_scalars(arg);
      };
      return detail::to_concrete(f_(pass.template operator()<I>(args)...));
    }(std::index_sequence_for<Args...>{});
  }

private:
  F f_;
};

template <class F, class... Opts>
Eager<F, Opts...> eager(F f, Opts...) {
  return Eager<F, Opts...>(std::move(f));
}

}  // namespace dyn
