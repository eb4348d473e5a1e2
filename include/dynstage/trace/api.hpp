// dynstage: entry points that run a user's function — make_jaxpr and eager —
// and the options they share with jit.
//
// make_jaxpr(f, options...) and jit(f, options...) record where the user
// asked for the trace (a defaulted std::source_location): errors raised while
// tracing name that place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../ir/check.hpp"
#include "../eager/interpret.hpp"
#include "pytree.hpp"
#include "../shape/symbolic.hpp"
#include "../shape/symbolic_spec.hpp"
#include "../shape/symbolic_solve.hpp"

namespace dyn {

// ---------------------------------------------------------------------------
// Options.

// Arguments I... are passed to the function unchanged, never traced; for jit
// they are part of the cache key.
template <std::size_t... I>
struct static_argnums {};

// jit only: the buffers of arguments I... are handed over to the compiled
// function (JAX's donate_argnums), which may overwrite them, update them in
// place and return a result in one of them instead of copying it. After the
// call a donated array must not be used again: its contents are unspecified
// (the result's, or whatever the function left there). If its buffer is
// shared (another dyn::Array or a traced constant holds it, or it is also
// passed as another argument) jit copies it first, so nothing else changes.
template <std::size_t... I>
struct donate_argnums {};

// One shape specification per argument, in JAX's grammar (API.md §5):
// "(b, 4)", "(batch, ...)", "(_, n)", "2*d", "b + 15", "..."; missing ones
// are "...". A spec applies to every leaf of a pytree argument. Dimension
// variables are shared across arguments by name.
struct polymorphic_shapes {
  std::vector<std::string> specs;
  polymorphic_shapes(std::initializer_list<std::string> s) : specs(s) {}  // NOLINT: braced use by design
  explicit polymorphic_shapes(std::vector<std::string> s) : specs(std::move(s)) {}
};

// Symbolic constraints on the dimension variables: "a >= b", "b <= 16",
// "a * b == c + d" (an equality is a rewrite rule, left to right).
struct constraints {
  std::vector<std::string> list;
  constraints(std::initializer_list<std::string> c) : list(c) {}  // NOLINT
  explicit constraints(std::vector<std::string> c) : list(std::move(c)) {}
};

// jit only: at most N cached kernels per jitted function; the least recently
// used is evicted (and its code freed) when a new one would exceed N.
struct cache_capacity {
  std::size_t n = 64;
};

namespace detail {

template <class X> struct is_static_argnums : std::false_type {};
template <std::size_t... I> struct is_static_argnums<static_argnums<I...>> : std::true_type {
  static constexpr bool contains(std::size_t k) { return ((k == I) || ...); }
  static constexpr std::size_t end = std::max({std::size_t{0}, (I + 1)...});
};

template <class X> struct is_donate_argnums : std::false_type {};
template <std::size_t... I> struct is_donate_argnums<donate_argnums<I...>> : std::true_type {
  static constexpr bool contains(std::size_t k) { return ((k == I) || ...); }
  static constexpr std::size_t end = std::max({std::size_t{0}, (I + 1)...});
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

// One past the largest static argument index under options Opts (0: none).
template <class... Opts>
constexpr std::size_t static_argnums_end() {
  std::size_t r = 0;
  ([&] {
    if constexpr (is_static_argnums<Opts>::value) r = std::max(r, is_static_argnums<Opts>::end);
  }(), ...);
  return r;
}

// One past the largest donated argument index under options Opts (0: none).
template <class... Opts>
constexpr std::size_t donate_argnums_end() {
  std::size_t r = 0;
  ([&] {
    if constexpr (is_donate_argnums<Opts>::value) r = std::max(r, is_donate_argnums<Opts>::end);
  }(), ...);
  return r;
}

// Whether argument k is donated under options Opts.
template <class... Opts>
constexpr bool is_donated_arg([[maybe_unused]] std::size_t k) {
  bool r = false;
  ((r = r || [&] {
      if constexpr (is_donate_argnums<Opts>::value) return is_donate_argnums<Opts>::contains(k);
      else return false;
    }()),
   ...);
  return r;
}

// The options' values, whatever their order.
struct Options {
  std::vector<std::string> specs;        // polymorphic_shapes
  std::vector<std::string> constraints;  // constraints
  std::size_t capacity = cache_capacity{}.n;
  std::vector<std::size_t> donated;      // donate_argnums, as positions among the non-static arguments
  bool polymorphic() const { return !specs.empty(); }
};

// The kinds of option (static_argnums<I...> counts as one kind).
template <class O>
inline constexpr int option_kind =
    is_static_argnums<O>::value ? 0
    : std::is_same_v<O, polymorphic_shapes> ? 1
    : std::is_same_v<O, constraints> ? 2
    : std::is_same_v<O, cache_capacity> ? 3
    : is_donate_argnums<O>::value ? 4
    : -1;

// Whether no kind of option is given twice.
template <class... O>
constexpr bool options_distinct() {
  int count[5] = {};
  ((option_kind<O> >= 0 ? ++count[option_kind<O>] : 0), ...);
  return count[0] <= 1 && count[1] <= 1 && count[2] <= 1 && count[3] <= 1 && count[4] <= 1;
}

template <class... O>
Options options_of(const O&... opts) {
  static_assert(((option_kind<O> >= 0) && ...),
                "dynstage: unknown option type; the options of dyn::jit and dyn::make_jaxpr are "
                "dyn::static_argnums<I...>, dyn::donate_argnums<I...> (jit only), dyn::polymorphic_shapes, "
                "dyn::constraints and dyn::cache_capacity");
  static_assert(options_distinct<O...>(), "dynstage: an option kind is given twice; give each at most once");
  Options r;
  // Donated arguments, numbered among the non-static ones (the call path's
  // leaves); an argument cannot be both.
  for (std::size_t k = 0, ordinal = 0; k < 64; ++k) {
    if (is_static_arg<O...>(k)) {
      if (is_donated_arg<O...>(k))
        fail<TypeError>("dyn::donate_argnums: argument " + std::to_string(k) +
                        " is also in dyn::static_argnums; a static argument is not a buffer and cannot be donated");
      continue;
    }
    if (is_donated_arg<O...>(k)) r.donated.push_back(ordinal);
    ++ordinal;
  }
  (
      [&] {
        if constexpr (std::is_same_v<O, polymorphic_shapes>) r.specs = opts.specs;
        else if constexpr (std::is_same_v<O, constraints>) r.constraints = opts.list;
        else if constexpr (std::is_same_v<O, cache_capacity>) r.capacity = opts.n == 0 ? 1 : opts.n;
      }(),
      ...);
  if (r.specs.empty() && !r.constraints.empty())
    fail<TypeError>("dyn::constraints given without dyn::polymorphic_shapes: constraints apply to the dimension "
                    "variables of the shape specifications");
  return r;
}

// One traced leaf of the arguments, for shape polymorphism: which argument,
// its position among that argument's leaves, and its concrete shape.
struct LeafDesc {
  std::size_t arg = 0, index = 0, count = 1;
  std::vector<std::int64_t> shape;
};

// The symbolic shapes of a trace's arguments (JAX's shape polymorphism).
struct Polymorphism {
  std::shared_ptr<SymbolicScope> scope;
  std::vector<ArgSpec> leaves;  // every traced leaf: name ("args[0]", "args[1][2]") and symbolic shape
  std::shared_ptr<const DimSolver> solver;
  // The implicit dimension arguments, in order: the variables (in order of
  // appearance), then the other symbolic dimensions of the argument shapes.
  std::vector<Dim> dim_args;
};

// Parses and resolves the specs against the leaves, checks that every
// variable can be solved (ShapeAssertionError otherwise) and that the leaves
// themselves satisfy the specs.
Polymorphism make_polymorphism(const Options& o, const std::vector<LeafDesc>& leaves);

#ifdef DYNSTAGE_IMPLEMENTATION
Polymorphism make_polymorphism(const Options& o, const std::vector<LeafDesc>& leaves) {
  Polymorphism p;
  p.scope = SymbolicScope::make(o.constraints);
  std::vector<std::vector<std::int64_t>> shapes;
  for (const LeafDesc& l : leaves) {
    const std::string text = l.arg < o.specs.size() ? o.specs[l.arg] : "...";
    ShapeSpec spec = parse_shape_spec(text, p.scope);
    std::string name = "args[" + std::to_string(l.arg) + "]";
    if (l.count > 1) name += "[" + std::to_string(l.index) + "]";
    p.leaves.push_back(ArgSpec{name, resolve_spec(spec, l.shape)});
    shapes.push_back(l.shape);
  }
  if (o.specs.size() > 0 && leaves.empty())
    fail<TypeError>("dyn::polymorphic_shapes given for a function without array arguments");
  p.solver = std::make_shared<const DimSolver>(p.leaves);
  p.solver->solve_shapes(shapes);
  // Variables in order of first appearance (within one dimension, sorted:
  // dim_vars, JAX's _get_vars).
  std::vector<std::string> vars;
  for (const ArgSpec& a : p.leaves)
    for (const Dim& d : a.shape)
      for (const std::string& v : dim_vars(d))
        if (std::find(vars.begin(), vars.end(), v) == vars.end()) vars.push_back(v);
  for (const std::string& v : vars) p.dim_args.push_back(p.scope->var(v));
  for (const ArgSpec& a : p.leaves)
    for (const Dim& d : a.shape)
      if (d.is_symbolic() && std::find(p.dim_args.begin(), p.dim_args.end(), d) == p.dim_args.end())
        p.dim_args.push_back(d);
  return p;
}
#endif

// leaf_descs' steps that do not depend on the arguments' types (out of
// line): append the leaf of argument `arg` whose abstract value is `a` (the
// argument's leaves start at r[first]); then set the argument's leaf count.
void add_leaf_desc(std::vector<LeafDesc>& r, std::size_t arg, std::size_t first, const Aval& a);
void finish_leaf_descs(std::vector<LeafDesc>& r, std::size_t first);

#ifdef DYNSTAGE_IMPLEMENTATION
void add_leaf_desc(std::vector<LeafDesc>& r, std::size_t arg, std::size_t first, const Aval& a) {
  LeafDesc d;
  d.arg = arg;
  d.index = r.size() - first;
  d.shape = static_shape(a.shape);
  r.push_back(std::move(d));
}

void finish_leaf_descs(std::vector<LeafDesc>& r, std::size_t first) {
  for (std::size_t k = first; k < r.size(); ++k) r[k].count = r.size() - first;
}
#endif

// The traced leaves of non-static arguments.
template <class... Opts, class... Args>
std::vector<LeafDesc> leaf_descs(const Args&... args) {
  std::vector<LeafDesc> r;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if constexpr (!is_static_arg<Opts...>(I)) {
            const std::size_t first = r.size();
            for_each_leaf(args, [&](const auto& leaf) { add_leaf_desc(r, I, first, leaf_aval(leaf)); });
            finish_leaf_descs(r, first);
          }
        }(),
        ...);
  }(std::index_sequence_for<Args...>{});
  return r;
}

// Replace the leaves of a non-static argument with fresh argument tracers of
// `scope`, in order. With `shapes`, leaf k (counting across arguments from
// `next`) takes the symbolic shape shapes[k].
// An integer scalar argument standing for a dimension variable (Catalyst's
// dynamic sizes): the variable and the argument's leaf index.
struct DimLeaf {
  Dim var;
  std::size_t leaf = 0;
};

// The argument tracer of leaf `index` of a call, whose abstract value is `a`
// (with shapes[index]'s symbolic shape when given). Out of line: the part of
// trace_argument that does not depend on the argument's type.
TracerRef arg_leaf_tracer(TraceScope& scope, Aval a, const std::vector<ArgSpec>* shapes, std::size_t index,
                          std::vector<DimLeaf>& dim_leaves);

#ifdef DYNSTAGE_IMPLEMENTATION
TracerRef arg_leaf_tracer(TraceScope& scope, Aval a, const std::vector<ArgSpec>* shapes, std::size_t index,
                          std::vector<DimLeaf>& dim_leaves) {
  if (shapes) a.shape = (*shapes)[index].shape;
  Value v = scope.new_arg(a);
  if (v.tracer->dim) dim_leaves.push_back(DimLeaf{*v.tracer->dim, index});
  return std::move(v.tracer);
}
#endif

template <class Arg>
traced_t<Arg> trace_argument(const Arg& arg, TraceScope& scope, const std::vector<ArgSpec>* shapes,
                             std::size_t& next, std::vector<DimLeaf>& dim_leaves) {
  if constexpr (is_leaf_v<std::remove_cvref_t<Arg>>) {
    // The common case, an array or a scalar: no tree to walk or rebuild.
    return traced_t<Arg>(arg_leaf_tracer(scope, leaf_aval(arg), shapes, next++, dim_leaves));
  } else {
    std::vector<Aval> avals;
    const std::size_t first = next;
    for_each_leaf(arg, [&](const auto& leaf) {
      avals.push_back(leaf_aval(leaf));
      ++next;
    });
    std::size_t k = 0;
    auto make_leaf = [&]<class L>() -> L {
      const std::size_t i = k++;
      return L(arg_leaf_tracer(scope, std::move(avals[i]), shapes, first + i, dim_leaves));
    };
    return unflatten<traced_t<Arg>>(treedef_of(arg), make_leaf);
  }
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

// What tracing a function gives: the closed jaxpr, the structure and
// symbolic shapes of its results, and the arguments' polymorphism (if any).
struct Traced {
  ClosedJaxpr jaxpr;
  TreeDef out_tree;
  std::vector<Shape> out_shapes;  // of the explicit results
  std::shared_ptr<const Polymorphism> poly;
  std::vector<DimLeaf> dim_leaves;
};

// What trace_to_jaxpr's out-of-line driver needs of the function and its
// arguments (the part that depends on their types, as callbacks).
struct TraceCallbacks {
  // The traced leaves of the non-static arguments (for polymorphic shapes).
  std::vector<LeafDesc> (*leaf_descs)(const void* closure);
  // Replace the non-static arguments' leaves by argument tracers of `scope`
  // (leaf k with the symbolic shape shapes[k] when given), call the function
  // and return its flattened results; `out_tree` gets their structure.
  std::vector<Value> (*call)(const void* closure, TraceScope& scope, const std::vector<ArgSpec>* shapes,
                             std::vector<DimLeaf>& dim_leaves, TreeDef& out_tree);
  const void* closure;
  std::size_t nargs;               // the call's arguments, static ones included
  std::size_t static_argnums_end;  // one past the largest static_argnums index (0: none)
  std::size_t donate_argnums_end;  // one past the largest donate_argnums index (0: none)
};

// Out of line: the trace around the call (its scope and site, the symbolic
// shapes of the arguments, the jaxpr and its constants).
Traced trace_with(const std::source_location& loc, const Options& opts, const TraceCallbacks& cb);

#ifdef DYNSTAGE_IMPLEMENTATION
Traced trace_with(const std::source_location& loc, const Options& opts, const TraceCallbacks& cb) {
  TraceSite site(loc);
  std::shared_ptr<const Polymorphism> poly;
  // JAX: "jitted function has static_argnums=(5,), but only accepts 2
  // positional arguments". Silently ignoring the index would trace (and
  // hash) the argument the user meant to be static.
  if (cb.static_argnums_end > cb.nargs)
    fail<TypeError>("dyn::static_argnums: argument index " + std::to_string(cb.static_argnums_end - 1) +
                    " is static, but the function is called with " + std::to_string(cb.nargs) + " arguments");
  if (cb.donate_argnums_end > cb.nargs)
    fail<TypeError>("dyn::donate_argnums: argument index " + std::to_string(cb.donate_argnums_end - 1) +
                    " is donated, but the function is called with " + std::to_string(cb.nargs) + " arguments");
  // Missing specs mean "...", but one too many is a mistake (a spec meant for
  // an argument that does not exist would otherwise be ignored silently).
  if (opts.specs.size() > cb.nargs)
    fail<TypeError>("dyn::polymorphic_shapes: " + std::to_string(opts.specs.size()) +
                    " shape specifications for a function called with " + std::to_string(cb.nargs) +
                    " arguments; give at most one per argument (\"...\" for one left as it comes)");
  if (opts.polymorphic()) poly = std::make_shared<const Polymorphism>(make_polymorphism(opts, cb.leaf_descs(cb.closure)));
  TraceScope scope(poly ? poly->scope : nullptr);
  if (poly)
    for (const Dim& d : poly->dim_args) scope.state().new_dim_arg(d);
  std::vector<DimLeaf> dim_leaves;
  TreeDef out_tree;
  std::vector<Value> outs = cb.call(cb.closure, scope, poly ? &poly->leaves : nullptr, dim_leaves, out_tree);
  std::shared_ptr<Jaxpr> jaxpr = scope.finish(outs);
  ClosedJaxpr cj{jaxpr, {}};
  for (const Value& src : scope.const_sources()) {
    if (src.is_tracer())
      fail<TypeError>("UnexpectedTracerError: the function uses a tracer of an enclosing trace; nested "
                      "make_jaxpr/jit cannot capture outer tracers (pass them as arguments)");
    cj.consts.push_back(src.array);
  }
  check_traced(cj, opts.constraints, poly ? poly->dim_args : std::vector<Dim>{});  // if DYNSTAGE_CHECK_JAXPR
  return Traced{std::move(cj), std::move(out_tree), scope.out_shapes(), std::move(poly), std::move(dim_leaves)};
}
#endif

// What the function receives for an argument of type A: the argument itself
// when static (any type with == and std::hash), else its traced pytree (only
// then is A required to be a pytree).
template <bool Static, class A>
struct arg_type {
  using type = traced_t<A>;
};
template <class A>
struct arg_type<true, A> {
  using type = const A&;
};

// Trace f on arguments: static ones pass through, the others become argument
// tracers (with polymorphic shapes: symbolic ones, after the implicit
// dimension arguments).
template <class... Opts, class F, class... Args>
Traced trace_to_jaxpr(const F& f, const std::source_location& loc, const Options& opts, const Args&... args) {
  using Closure = std::tuple<const F&, const Args&...>;
  const Closure closure{f, args...};
  TraceCallbacks cb;
  cb.closure = &closure;
  cb.nargs = sizeof...(Args);
  cb.static_argnums_end = static_argnums_end<Opts...>();
  cb.donate_argnums_end = donate_argnums_end<Opts...>();
  cb.leaf_descs = [](const void* c) {
    return std::apply([](const F&, const Args&... a) { return leaf_descs<Opts...>(a...); },
                      *static_cast<const Closure*>(c));
  };
  cb.call = [](const void* c, TraceScope& scope, const std::vector<ArgSpec>* shapes, std::vector<DimLeaf>& dim_leaves,
               TreeDef& out_tree) {
    return std::apply(
        [&](const F& fn, const Args&... a) {
          std::size_t next_leaf = 0;
          auto traced_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
            auto one = [&]<std::size_t K>(const auto& arg) -> decltype(auto) {
              if constexpr (is_static_arg<Opts...>(K)) return arg;
              else return trace_argument(arg, scope, shapes, next_leaf, dim_leaves);
            };
            // Braced initialisation evaluates left to right: invars in argument order.
            return std::tuple<typename arg_type<is_static_arg<Opts...>(I), Args>::type...>{
                one.template operator()<I>(a)...};
          }(std::index_sequence_for<Args...>{});
          if constexpr (std::is_void_v<decltype(std::apply(fn, traced_args))>) {
            // No results (JAX's None). Also what g++ deduces for a function
            // whose body did not compile: no second error on top of that one.
            std::apply(fn, traced_args);
            out_tree = treedef_of(std::tuple<>{});
            return std::vector<Value>{};
          } else {
            auto out = std::apply(fn, traced_args);
            out_tree = treedef_of(out);
            return flatten_results(out);
          }
        },
        *static_cast<const Closure*>(c));
  };
  return trace_with(loc, opts, cb);
}

}  // namespace detail

// ---------------------------------------------------------------------------
// make_jaxpr(f, options...)(args...) -> ClosedJaxpr

template <class F, class... Opts>
class MakeJaxpr {
public:
  MakeJaxpr(F f, std::source_location loc, detail::Options opts)
      : f_(std::move(f)), loc_(loc), opts_(std::move(opts)) {}

  template <class... Args>
  ClosedJaxpr operator()(const Args&... args) const {
    return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...).jaxpr;
  }

  // The symbolic shapes of the results for these arguments (JAX's
  // `out_avals`: `(a, 2*b)` for concatenating f32[a,b] with itself on axis 1).
  template <class... Args>
  std::vector<Shape> out_shapes(const Args&... args) const {
    return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...).out_shapes;
  }

private:
  F f_;
  std::source_location loc_;
  detail::Options opts_;
};

// Fixed arities rather than a pack, so that a defaulted source_location can
// follow the options (errors name where the user asked for the trace). Any
// subset of the options, in any order, each kind at most once.
template <class F>
MakeJaxpr<F> make_jaxpr(F f, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F>(std::move(f), loc, detail::Options{});
}
template <class F, class O1>
MakeJaxpr<F, O1> make_jaxpr(F f, O1 o1, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1>(std::move(f), loc, detail::options_of(o1));
}
template <class F, class O1, class O2>
MakeJaxpr<F, O1, O2> make_jaxpr(F f, O1 o1, O2 o2, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2>(std::move(f), loc, detail::options_of(o1, o2));
}
template <class F, class O1, class O2, class O3>
MakeJaxpr<F, O1, O2, O3> make_jaxpr(F f, O1 o1, O2 o2, O3 o3, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2, O3>(std::move(f), loc, detail::options_of(o1, o2, o3));
}
template <class F, class O1, class O2, class O3, class O4>
MakeJaxpr<F, O1, O2, O3, O4> make_jaxpr(F f, O1 o1, O2 o2, O3 o3, O4 o4, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2, O3, O4>(std::move(f), loc, detail::options_of(o1, o2, o3, o4));
}
template <class F, class O1, class O2, class O3, class O4, class O5>
MakeJaxpr<F, O1, O2, O3, O4, O5> make_jaxpr(F f, O1 o1, O2 o2, O3 o3, O4 o4, O5 o5, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2, O3, O4, O5>(std::move(f), loc, detail::options_of(o1, o2, o3, o4, o5));
}
template <class F, class O1, class O2, class O3, class O4, class O5, class O6>
MakeJaxpr<F, O1, O2, O3, O4, O5, O6> make_jaxpr(F f, O1 o1, O2 o2, O3 o3, O4 o4, O5 o5, O6 o6, std::source_location loc = std::source_location::current()) {
  return MakeJaxpr<F, O1, O2, O3, O4, O5, O6>(std::move(f), loc, detail::options_of(o1, o2, o3, o4, o5, o6));
}

// ---------------------------------------------------------------------------
// eager(f)(args...): run f on concrete arrays, with the pytree conventions of
// jit (C++ scalars in results become rank-0 arrays, pairs become tuples).

namespace detail {
// f(args...) as concrete results; a function without results (void) gives
// the empty tuple (see trace_to_jaxpr).
template <class F, class... A>
auto eager_results(const F& f, A&&... args) {
  if constexpr (std::is_void_v<std::invoke_result_t<const F&, A...>>) {
    f(std::forward<A>(args)...);
    return std::tuple<>{};
  } else {
    return to_concrete(f(std::forward<A>(args)...));
  }
}
}  // namespace detail

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
      return detail::eager_results(f_, pass.template operator()<I>(args)...);
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
