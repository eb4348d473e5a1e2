// dynstage: control flow — for_loop, while_loop and cond (API.md §7, §8),
// traced once through the bind algorithm of references 000 and 004.
//
// One mechanism serves the three combinators (reference 004, "The
// algorithm"), with the caller's scope C and a body scope B:
//
//   1. deduce_input_type (C): how the carried values' dimensions enter B.
//      Shared (preserve_dimensions, and cond): B's arguments have the
//      caller's symbolic dimensions, so B captures each dynamic one as a
//      constant the first time its type mentions it, and B may mix carried
//      values with captured arrays of the same size. Unshared
//      (preserve_dimensions=false): each dynamic dimension of each carried
//      value is a fresh dimension variable of its own, an implicit argument
//      (`nimplicit`), so sizes may change from one iteration to the next but
//      never equal a captured constant's.
//   2. trace_nested (B): new argument tracers, the user's function, then the
//      implicit results that the output type needs (below), then finish():
//      the body jaxpr, its constants (outer tracers and closed-over arrays,
//      `body_nconsts`) and, in Catalyst's no-constant form, the constants as
//      leading invars.
//   3. The output type (B): for a loop, result k must have carry k's dtype
//      and rank; its dimensions must equal the carry's (shared), or each
//      dynamic one is returned as an implicit result (unshared: OutDBIdx).
//      For cond, the branches must agree on count, dtype and rank, and a
//      dynamic dimension that is not the same caller-known dimension in both
//      branches becomes an implicit output (a fresh dimension of C).
//   4. bind (C): one equation whose output types come from the body's
//      (control_abstract_eval: InDBIdx dimensions are the operands', OutDBIdx
//      ones fresh dimension variables of C); the caller gets the explicit
//      outputs back (collapse).
//
// Under preserve_dimensions=false, a carried dimension that the body never
// changes is not a loop variable in the end: the body is traced again with
// it shared, so the result keeps the caller's dimension (InDBIdx) rather
// than a new implicit result (OutDBIdx). Beyond Catalyst,
// LoopOptions::infer_dimensions traces a shared body first to see which
// carried dimensions change, then traces again with only those as loop
// variables (the others shared). See trace_loop and docs/control_flow.md.
//
// Outside any trace, with concrete values, the combinators just run: the loop
// calls the body in C++, cond calls one branch. Inside a trace a combinator
// is staged when any input is a tracer or the function's result (for
// concrete arguments) has tracer leaves (it captures a tracer); otherwise it
// runs at trace time and its concrete result becomes a constant.
#pragma once

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "api.hpp"
#include "symbolic.hpp"

namespace dyn {

// Options of for_loop and while_loop.
struct LoopOptions {
  // true (Catalyst's default): carried values keep the dimension sharing of
  // their initial values; bodies may mix carried values with captured arrays
  // of the same size, and carried sizes cannot change. false: the body sees
  // every dynamic dimension of a carried value as a loop variable of its own,
  // so sizes may change per iteration, but no carried dimension equals a
  // captured one. A result whose size the body never changes keeps the
  // caller's dimension (found by a second trace of the body); only the sizes
  // that change are `nimplicit` results.
  bool preserve_dimensions = true;
  // Beyond Catalyst: decide per dimension. Only the carried dimensions that
  // the body changes become loop variables; the others stay shared, so a body
  // may resize one array and mix another with captured constants. Costs a
  // second trace of the body. Overrides preserve_dimensions.
  bool infer_dimensions = false;
};

namespace detail {

// A traced function of the nested scope: argument values in, result values out.
// A non-owning reference to the combinator's lambda, which must outlive it
// (name the lambda, then pass it): std::function would put <functional> into
// every user file, for three calls.
class NestedFn {
public:
  template <class F>
    requires(!std::is_same_v<F, NestedFn>)
  NestedFn(const F& f)  // NOLINT: implicit, as std::function's
      : obj_(&f), call_([](const void* o, const std::vector<Value>& args) -> std::vector<Value> {
          return (*static_cast<const F*>(o))(args);
        }) {}
  std::vector<Value> operator()(const std::vector<Value>& args) const { return call_(obj_, args); }

private:
  const void* obj_;
  std::vector<Value> (*call_)(const void*, const std::vector<Value>&);
};

// The number of iterations of for_loop(lower, upper, step): Python's
// len(range(lower, upper, step)), and 0 for a step of 0. The eager loop, the
// interpreter and the LLVM lowering all use this formula.
inline std::int64_t for_loop_trip_count(std::int64_t lower, std::int64_t upper, std::int64_t step) {
  if (step > 0 && lower < upper)
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(upper) - static_cast<std::uint64_t>(lower) - 1) /
                                         static_cast<std::uint64_t>(step) + 1);
  if (step < 0 && lower > upper)
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(lower) - static_cast<std::uint64_t>(upper) - 1) /
                                         (0 - static_cast<std::uint64_t>(step)) + 1);
  return 0;
}

// The bind algorithm for each combinator (out of line). Arguments are values
// of the current trace or concrete; results are the explicit outputs.
std::vector<Value> bind_for_loop(const Value& lower, const Value& upper, const Value& step,
                                 const std::vector<Value>& init, const NestedFn& body, const LoopOptions& opts);
std::vector<Value> bind_while_loop(const std::vector<Value>& init, const NestedFn& cond_fn, const NestedFn& body,
                                   const LoopOptions& opts);
std::vector<Value> bind_cond(const Value& pred, const std::vector<Value>& operands, const NestedFn& then_fn,
                             const NestedFn& else_fn);

// ---------------------------------------------------------------------------
// Templates: typed leaves in and out of the non-template core.

template <class X> struct has_tracer_leaf : std::bool_constant<is_tracer_v<X>> {};
template <class... X> struct has_tracer_leaf<std::tuple<X...>> : std::disjunction<has_tracer_leaf<X>...> {};
template <class A, class B> struct has_tracer_leaf<std::pair<A, B>>
    : std::disjunction<has_tracer_leaf<A>, has_tracer_leaf<B>> {};
template <class X, std::size_t N> struct has_tracer_leaf<std::array<X, N>> : has_tracer_leaf<X> {};
template <class X, class A> struct has_tracer_leaf<std::vector<X, A>> : has_tracer_leaf<X> {};
template <template <class...> class S, class... A> requires is_hana_struct_v<S<A...>>
struct has_tracer_leaf<S<A...>> : std::disjunction<has_tracer_leaf<A>...> {};
template <class X> inline constexpr bool has_tracer_leaf_v = has_tracer_leaf<std::remove_cvref_t<X>>::value;

// Whether a combinator is staged: its inputs are traced, or F called on the
// concrete inputs returns tracers (it captures one). F is instantiated with
// concrete arguments only when the inputs are concrete.
template <bool TracedInputs, class F, class... A>
struct stages : std::true_type {};
template <class F, class... A>
struct stages<false, F, A...> : std::bool_constant<has_tracer_leaf_v<std::invoke_result_t<F, A...>>> {};

// Leaves of a carried value or operand as bind operands; a C++ scalar is a
// rank-0 array of its exact type (a `double` carry is f64[], not weak).
template <class X>
void append_leaves(const X& x, std::vector<Value>& out) {
  for_each_leaf(x, [&](const auto& leaf) {
    if constexpr (is_scalar_v<decltype(leaf)>) out.push_back(Value{leaf_array(leaf), nullptr, false});
    else out.push_back(leaf_value(leaf));
  });
}

template <class... X>
std::vector<Value> leaves_of(const X&... x) {
  std::vector<Value> r;
  (append_leaves(x, r), ...);
  return r;
}

// Values as the traced structure of `proto`, consuming them from position k.
template <class X>
traced_t<X> traced_like(const X& proto, const std::vector<Value>& v, std::size_t& k) {
  auto make_leaf = [&]<class L>() -> L { return from_value<L>(v.at(k++)); };
  return unflatten<traced_t<X>>(treedef_of(proto), make_leaf);
}

// Concrete arrays as the lifted structure of `proto` (the eager state), with
// the dtype of each leaf checked against the prototype's.
template <class X>
lifted_t<X> lifted_like(const X& proto, const std::vector<AnyArray>& v, std::size_t& k) {
  auto make_leaf = [&]<class L>() -> L { return v.at(k++).template get<typename L::value_type>(); };
  return unflatten<lifted_t<X>>(treedef_of(proto), make_leaf);
}

// One carried value is passed and returned bare, several as a tuple.
template <class... X>
auto bare_or_tuple(std::tuple<X...>&& t) {
  if constexpr (sizeof...(X) == 1) return std::get<0>(std::move(t));
  else return std::move(t);
}

// The leaves of what an eager body or branch returned, checked against the
// carry's dtypes (the state's static types cannot change).
std::vector<AnyArray> check_eager_results(const char* what, std::vector<AnyArray> got,
                                          const std::vector<AnyArray>& expected);

template <class R>
std::vector<AnyArray> concrete_leaves(const R& r) {
  std::vector<AnyArray> out;
  for_each_leaf(r, [&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (is_tracer_v<L>) fail<TypeError>("a traced value where a concrete one is needed");
    else out.push_back(leaf_array(leaf));
  });
  return out;
}

template <class X>
Value bound_value(const X& x) {
  if constexpr (is_scalar_v<X>) return Value{leaf_array(static_cast<std::int64_t>(x)), nullptr, false};
  else return to_value(x);
}

template <class X>
std::int64_t concrete_int(const X& x) {
  if constexpr (is_scalar_v<X>) return static_cast<std::int64_t>(x);
  else return scalar_of(AnyArray(x)).template as<std::int64_t>();
}

template <class X>
bool concrete_bool(const X& x) {
  if constexpr (is_scalar_v<X>) return static_cast<bool>(x);
  else return scalar_of(AnyArray(x)).template as<bool>();
}

}  // namespace detail

// ---------------------------------------------------------------------------
// for_loop(lower, upper, step[, options])(body)(init...)

template <class Lo, class Hi, class St, class Body>
class ForLoopCall {
public:
  ForLoopCall(Lo lo, Hi hi, St st, LoopOptions o, Body body, std::source_location loc)
      : lo_(lo), hi_(hi), st_(st), opts_(o), body_(std::move(body)), loc_(loc) {}

  template <class... Init>
  auto operator()(const Init&... init) const {
    using namespace detail;
    OpSite site(loc_);
    constexpr bool traced_inputs =
        is_tracer_v<Lo> || is_tracer_v<Hi> || is_tracer_v<St> || (false || ... || has_tracer_leaf_v<Init>);
    if constexpr (!stages<traced_inputs, const Body&, const Array<std::int64_t>&, const lifted_t<Init>&...>::value) {
      // Eager: the loop just runs.
      auto state = std::tuple<lifted_t<Init>...>{lift_scalars(init)...};
      std::vector<AnyArray> expected = concrete_leaves(state);
      const std::int64_t lo = concrete_int(lo_), st = concrete_int(st_);
      const std::int64_t n = for_loop_trip_count(lo, concrete_int(hi_), st);
      for (std::int64_t t = 0; t < n; ++t) {
        const Array<std::int64_t> i = Array<std::int64_t>::scalar(lo + t * st);
        auto r = std::apply([&](const auto&... c) { return body_(i, c...); }, state);
        std::vector<AnyArray> got = check_eager_results("dyn::for_loop()", concrete_leaves(r), expected);
        std::size_t k = 0;
        state = std::tuple<lifted_t<Init>...>{lifted_like(init, got, k)...};
      }
      return bare_or_tuple(std::move(state));
    } else {
      auto fn = [&](const std::vector<Value>& args) {
        [[maybe_unused]] std::size_t k = 1;
        Tracer<std::int64_t> i(args.at(0).tracer);
        auto carried = std::tuple<traced_t<Init>...>{traced_like(init, args, k)...};
        return flatten_results(std::apply([&](const auto&... c) { return body_(i, c...); }, carried));
      };
      std::vector<Value> outs =
          bind_for_loop(bound_value(lo_), bound_value(hi_), bound_value(st_), leaves_of(init...), fn, opts_);
      std::size_t k = 0;
      return bare_or_tuple(std::tuple<traced_t<Init>...>{traced_like(init, outs, k)...});
    }
  }

private:
  Lo lo_;
  Hi hi_;
  St st_;
  LoopOptions opts_;
  Body body_;
  std::source_location loc_;
};

template <class Lo, class Hi, class St>
class ForLoop {
public:
  ForLoop(Lo lo, Hi hi, St st, LoopOptions o, std::source_location loc)
      : lo_(lo), hi_(hi), st_(st), opts_(o), loc_(loc) {}
  template <class Body>
  ForLoopCall<Lo, Hi, St, Body> operator()(Body body) const {
    return {lo_, hi_, st_, opts_, std::move(body), loc_};
  }

private:
  Lo lo_;
  Hi hi_;
  St st_;
  LoopOptions opts_;
  std::source_location loc_;
};

// body(i, carry...) -> carry. Bounds are integers, integer scalar tracers or
// rank-0 integer arrays; the body runs for i = lower, lower + step, ...
// before upper (Python's range; a step of 0 runs no iterations). The index
// is a Tracer<std::int64_t> when staged and a rank-0 Array<std::int64_t>
// when the loop runs eagerly (as a jitted function's integer argument is).
template <class Lo, class Hi, class St>
ForLoop<Lo, Hi, St> for_loop(Lo lower, Hi upper, St step, LoopOptions opts = {},
                             std::source_location loc = std::source_location::current()) {
  return ForLoop<Lo, Hi, St>(lower, upper, step, opts, loc);
}

// ---------------------------------------------------------------------------
// while_loop(cond_fn[, options])(body)(init...)

template <class CondFn, class Body>
class WhileLoopCall {
public:
  WhileLoopCall(CondFn c, LoopOptions o, Body b, std::source_location loc)
      : cond_(std::move(c)), opts_(o), body_(std::move(b)), loc_(loc) {}

  template <class... Init>
  auto operator()(const Init&... init) const {
    using namespace detail;
    OpSite site(loc_);
    constexpr bool traced_inputs = (false || ... || has_tracer_leaf_v<Init>);
    if constexpr (!stages<traced_inputs, const Body&, const lifted_t<Init>&...>::value &&
                  !stages<traced_inputs, const CondFn&, const lifted_t<Init>&...>::value) {
      auto state = std::tuple<lifted_t<Init>...>{lift_scalars(init)...};
      std::vector<AnyArray> expected = concrete_leaves(state);
      auto keep_going = [&] {
        auto c = std::apply(cond_, state);
        std::vector<AnyArray> leaves = concrete_leaves(c);
        if (leaves.size() != 1 || leaves[0].rank() != 0 || leaves[0].dtype() != DType::bool_)
          fail<TypeError>("dyn::while_loop(): the condition must return one scalar bool, got " +
                          (leaves.size() == 1 ? aval_str(aval_of(leaves[0])) : std::to_string(leaves.size()) +
                                                                                  " values"));
        return scalar_of(leaves[0]).template as<bool>();
      };
      while (keep_going()) {
        auto r = std::apply(body_, state);
        std::vector<AnyArray> got = check_eager_results("dyn::while_loop()", concrete_leaves(r), expected);
        std::size_t k = 0;
        state = std::tuple<lifted_t<Init>...>{lifted_like(init, got, k)...};
      }
      return bare_or_tuple(std::move(state));
    } else {
      auto typed = [&](const std::vector<Value>& args) {
        [[maybe_unused]] std::size_t k = 0;
        return std::tuple<traced_t<Init>...>{traced_like(init, args, k)...};
      };
      auto c = [&](const std::vector<Value>& args) { return flatten_results(std::apply(cond_, typed(args))); };
      auto b = [&](const std::vector<Value>& args) { return flatten_results(std::apply(body_, typed(args))); };
      std::vector<Value> outs = bind_while_loop(leaves_of(init...), c, b, opts_);
      std::size_t k = 0;
      return bare_or_tuple(std::tuple<traced_t<Init>...>{traced_like(init, outs, k)...});
    }
  }

private:
  CondFn cond_;
  LoopOptions opts_;
  Body body_;
  std::source_location loc_;
};

template <class CondFn>
class WhileLoop {
public:
  WhileLoop(CondFn c, LoopOptions o, std::source_location loc) : cond_(std::move(c)), opts_(o), loc_(loc) {}
  template <class Body>
  WhileLoopCall<CondFn, Body> operator()(Body body) const {
    return {cond_, opts_, std::move(body), loc_};
  }

private:
  CondFn cond_;
  LoopOptions opts_;
  std::source_location loc_;
};

// cond_fn(carry...) -> scalar bool; body(carry...) -> carry.
template <class CondFn>
WhileLoop<CondFn> while_loop(CondFn cond_fn, LoopOptions opts = {},
                             std::source_location loc = std::source_location::current()) {
  return WhileLoop<CondFn>(std::move(cond_fn), opts, loc);
}

// ---------------------------------------------------------------------------
// cond(pred, then_fn, else_fn)(operands...)

template <class Pred, class Then, class Else>
class Cond {
public:
  Cond(Pred p, Then t, Else e, std::source_location loc)
      : pred_(std::move(p)), then_(std::move(t)), else_(std::move(e)), loc_(loc) {}

  template <class... Ops>
  auto operator()(const Ops&... ops) const {
    using namespace detail;
    OpSite site(loc_);
    constexpr bool traced_inputs = is_tracer_v<Pred> || (false || ... || has_tracer_leaf_v<Ops>);
    constexpr bool traced = stages<traced_inputs, const Then&, const lifted_t<Ops>&...>::value ||
                            stages<traced_inputs, const Else&, const lifted_t<Ops>&...>::value;
    if constexpr (!traced) {
      // Concrete: run one branch. Both must give the same structure.
      using RT = std::invoke_result_t<const Then&, const lifted_t<Ops>&...>;
      using RE = std::invoke_result_t<const Else&, const lifted_t<Ops>&...>;
      static_assert(std::is_same_v<concrete_t<RT>, concrete_t<RE>>,
                    "dyn::cond: the branches must return the same structure and element types");
      if (concrete_bool(pred_)) return to_concrete(then_(lift_scalars(ops)...));
      return to_concrete(else_(lift_scalars(ops)...));
    } else if constexpr (std::is_same_v<Pred, bool>) {
      // A C++ bool picks the branch at trace time (API.md §8).
      using R = traced_t<std::invoke_result_t<const Then&, const traced_t<Ops>&...>>;
      std::vector<Value> args = leaves_of(ops...);
      [[maybe_unused]] std::size_t k = 0;
      auto typed = std::tuple<traced_t<Ops>...>{traced_like(ops, args, k)...};
      auto r = pred_ ? std::apply(then_, typed) : std::apply(else_, typed);
      std::vector<Value> leaves = flatten_results(r);
      std::size_t j = 0;
      auto make_leaf = [&]<class L>() -> L { return from_value<L>(leaves.at(j++)); };
      return unflatten<R>(treedef_of(r), make_leaf);
    } else {
      using R = traced_t<std::invoke_result_t<const Then&, const traced_t<Ops>&...>>;
      auto typed = [&](const std::vector<Value>& args) {
        [[maybe_unused]] std::size_t k = 0;
        return std::tuple<traced_t<Ops>...>{traced_like(ops, args, k)...};
      };
      std::optional<TreeDef> tree;
      auto t = [&](const std::vector<Value>& args) {
        auto r = std::apply(then_, typed(args));
        tree = treedef_of(r);
        return flatten_results(r);
      };
      auto e = [&](const std::vector<Value>& args) { return flatten_results(std::apply(else_, typed(args))); };
      std::vector<Value> outs = bind_cond(to_value(pred_), leaves_of(ops...), t, e);
      std::size_t j = 0;
      auto make_leaf = [&]<class L>() -> L { return from_value<L>(outs.at(j++)); };
      return unflatten<R>(*tree, make_leaf);
    }
  }

private:
  Pred pred_;
  Then then_;
  Else else_;
  std::source_location loc_;
};

// Both branches take the operands and return one value or a std::tuple; the
// predicate is a scalar bool (tracer or array) or a C++ bool, which picks the
// branch at trace time.
template <class Pred, class Then, class Else>
Cond<Pred, Then, Else> cond(Pred pred, Then then_fn, Else else_fn,
                            std::source_location loc = std::source_location::current()) {
  return Cond<Pred, Then, Else>(std::move(pred), std::move(then_fn), std::move(else_fn), loc);
}

}  // namespace dyn

// ===========================================================================
// The bind algorithm and the rules of the control-flow primitives, compiled
// once per program.
#ifdef DYNSTAGE_IMPLEMENTATION
#include <functional>
namespace dyn::detail {

namespace control {

// The messages for carried results that do not match the carry, shared by
// the traced check (loop_results) and the eager loop (check_eager_results).
inline std::string carry_count_error(const std::string& op, std::size_t got, std::size_t carried) {
  return op + ": the body returned " + std::to_string(got) + " values but the loop carries " +
         std::to_string(carried) + "; return the carried values in order (one bare, several as a std::tuple)";
}
// A body result of a wider dtype than the carry (JAX's promotion order, bool
// < i32 < i64 < f32 < f64) is the body promoting the carry, as `acc + 0.5`
// does to an init value of 0: the init value is what to change, not the
// body's result (astype back would truncate). A narrower one (astype<float>
// of an f64 carry) is the body's to undo. The first message follows JAX's
// _check_carry_type: the rule, the difference by position, the fix.
inline std::string carry_dtype_error(const std::string& op, std::size_t k, const Aval& got, const Aval& want) {
  const std::string pos = "#" + std::to_string(k);
  if (dtype_rank(got.dtype) > dtype_rank(want.dtype)) {
    const std::string to = std::string(dtype_name(got.dtype));
    std::string example = "dyn::astype<" + std::string(dtype_cpp_name(got.dtype)) + ">(init)";
    if (want.rank() == 0) {
      switch (got.dtype) {
        case DType::f64: example = "0.0"; break;
        case DType::f32: example = "0.0f"; break;
        case DType::i64: example = "std::int64_t{0}"; break;
        case DType::i32: example = "0"; break;
        case DType::bool_: break;
      }
    }
    return op + ": a carried value keeps the dtype of its init value, but they differ: carry input " + pos +
           " has type " + aval_str(want) + " but body output " + pos + " has type " + aval_str(got) +
           ", so the dtypes do not match; change the init value to " + to + " (e.g. " + example + ")";
  }
  return op + ": body output " + pos + " has type " + aval_str(got) + " but carry input " + pos + " has type " +
         aval_str(want) + "; return the same dtype (e.g. astype<" + std::string(dtype_cpp_name(want.dtype)) + ">)";
}

// Whether trace `t` (or an enclosing one) can compute dimension `d`: each of
// its variables is held by some i64[] value there.
inline bool knows(TraceState& t, const Dim& d) {
  if (d.is_static()) return true;
  for (const std::string& name : dim_vars(d)) {
    const Dim v = t.sym_scope().var(name);
    bool found = false;
    for (TraceState* s = &t; s && !found; s = s->parent) found = s->dims.count(v.expr()) > 0;
    if (!found) return false;
  }
  return true;
}

// Step 1, deduceInputType: how the explicit arguments enter the body.
struct NestedInput {
  std::vector<Aval> avals;                // the explicit arguments, as the body sees them
  std::vector<Dim> implicit;              // the body's dimension of each implicit argument
  std::vector<Value> implicit_operands;   // the caller's value of each
  std::vector<std::vector<int>> slot;     // [k][j]: implicit argument of dimension j of argument k, or -1
};

// `vary[k][j]` (or every dynamic dimension when `vary` is null and
// `unshared`) becomes an implicit argument: a fresh dimension variable of the
// body, the loop variable of that size. The others keep the caller's
// dimensions, which the body captures as constants when it uses them.
inline NestedInput deduce_input_type(TraceState& caller, const std::vector<Value>& args, bool unshared,
                                     const std::vector<std::vector<char>>* vary = nullptr) {
  NestedInput in;
  for (std::size_t k = 0; k < args.size(); ++k) {
    Aval a = args[k].aval();
    a.weak = false;
    a.dim_value.reset();  // a carried integer is a new value in the body
    in.slot.emplace_back(static_cast<std::size_t>(a.rank()), -1);
    for (std::size_t j = 0; j < a.shape.size(); ++j) {
      if (a.shape[j].is_static()) continue;
      const bool v = vary ? (*vary)[k][j] != 0 : unshared;
      if (!v) continue;
      in.slot[k][j] = static_cast<int>(in.implicit.size());
      in.implicit_operands.push_back(caller.dim_operand(a.shape[j]));
      a.shape[j] = caller.new_dim_var();
      in.implicit.push_back(a.shape[j]);
    }
    in.avals.push_back(std::move(a));
  }
  return in;
}

// Step 2, abstractEval: a traced body in its own scope.
struct NestedBody {
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;    // the values of its constants, in the caller (or further out)
  std::vector<Aval> results;    // its explicit results, as the body sees them
  std::size_t nimplicit = 0;    // implicit results before them
};

// Given the body's explicit results (inside its scope), the implicit results
// to return before them; it checks the results against the output rule.
using ImplicitFn = std::function<std::vector<Value>(TraceState& body, const std::vector<Value>& results)>;

inline NestedBody trace_nested(const NestedInput& in, bool with_index, const NestedFn& fn, const ImplicitFn& implicit) {
  TraceScope scope;
  TraceState& b = scope.state();
  for (const Dim& d : in.implicit) b.new_dim_arg(d);
  std::vector<Value> args;
  if (with_index) args.push_back(b.new_arg(Aval{DType::i64, {}, false, std::nullopt}));
  for (const Aval& a : in.avals) args.push_back(b.new_arg(a));
  std::vector<Value> res = fn(args);
  std::vector<Value> all = implicit(b, res);
  NestedBody nb;
  nb.nimplicit = all.size();
  for (const Value& r : res) nb.results.push_back(r.aval());
  all.insert(all.end(), res.begin(), res.end());
  nb.jaxpr = scope.finish(all, /*implicit_results=*/false);
  if (nb.nimplicit > 0) {
    nb.jaxpr->out_explicit.assign(nb.nimplicit, false);
    nb.jaxpr->out_explicit.resize(all.size(), true);
  }
  nb.consts = scope.const_sources();
  return nb;
}

// Catalyst's no-constant form: the constants become the leading invars.
inline void to_no_const_form(Jaxpr& j) {
  if (!j.in_explicit.empty()) j.in_explicit.insert(j.in_explicit.begin(), j.constvars.size(), true);
  j.invars.insert(j.invars.begin(), j.constvars.begin(), j.constvars.end());
  j.constvars.clear();
}

// Step 3 for loops: result k must have carry k's dtype and rank, and the
// carry's dimensions except where the dimension is a loop variable, whose
// new value is returned as an implicit result. With `changed`, a shared
// dimension that differs is recorded there instead of raising (the first
// traces of infer_dimensions).
inline std::vector<Value> loop_results(const char* what, const NestedInput& in, TraceState& b,
                                       const std::vector<Value>& res, bool preserve,
                                       std::vector<std::vector<char>>* changed = nullptr) {
  const std::string op = std::string(what) + "()";
  if (res.size() != in.avals.size()) fail<TypeError>(carry_count_error(op, res.size(), in.avals.size()));
  std::vector<Value> imp(in.implicit.size());
  for (std::size_t k = 0; k < res.size(); ++k) {
    const Aval r = res[k].aval();
    const Aval& a = in.avals[k];
    const std::string pos = "#" + std::to_string(k);
    if (r.dtype != a.dtype) fail<TypeError>(carry_dtype_error(op, k, r, a));
    if (r.rank() != a.rank())
      fail<TypeError>(op + ": body output " + pos + " has type " + aval_str(r) + " but carry input " + pos +
                      " has type " + aval_str(a) + "; a carried value keeps its rank (reshape it back)");
    for (std::size_t j = 0; j < r.shape.size(); ++j) {
      const int s = in.slot[k][j];
      if (s >= 0) {
        imp[static_cast<std::size_t>(s)] = b.dim_operand(r.shape[j]);
        continue;
      }
      if (r.shape[j] == a.shape[j]) continue;
      if (changed) {
        (*changed)[k][j] = 1;
        continue;
      }
      const std::string types = "body output " + pos + " has type " + aval_str(r) + " but carry input " + pos +
                                " has type " + aval_str(a) + " (dimension " + std::to_string(j) + ": " +
                                r.shape[j].to_string() + " vs " + a.shape[j].to_string() + ")";
      if (a.shape[j].is_static())
        fail<TypeError>(op + ": a static carried dimension cannot change; " + types +
                        "; start from a value whose size is dynamic (a dyn::Dim) and pass "
                        "{.preserve_dimensions = false}");
      if (preserve)
        fail<TypeError>(op + ": with preserve_dimensions=true the carried values keep their dimensions; " + types +
                        "; keep the size, or pass {.preserve_dimensions = false} so that each carried dimension "
                        "is a loop variable (or {.infer_dimensions = true})");
      fail<TypeError>(op + ": " + types + "; the dimension is shared with the body's constants, so it cannot "
                      "change; pass {.infer_dimensions = true}");
    }
  }
  return imp;
}

// A bound or predicate as an i64[] (or bool[]) scalar of the caller.
inline Value as_i64(const Value& v, const char* what, const char* name) {
  if (v.rank() != 0 || !is_integer(v.dtype()))
    fail<TypeError>(std::string(what) + "(): the " + name + " must be an integer scalar, got " + aval_str(v.aval()));
  if (v.dtype() == DType::i64) return v;
  return bind1(Prim::convert_element_type, {v}, ConvertParams{DType::i64, false});
}

inline TraceState& caller_trace(const char* what) {
  TraceState* c = current_trace();
  if (!c)
    fail<TypeError>(std::string("UnexpectedTracerError: ") + what +
                    "() got a tracer outside of any trace; a tracer must not escape the function being traced");
  c->sym_scope();  // the body's fresh dimensions and the caller's share one scope
  return *c;
}

// A shape error inside a body whose dimensions are loop variables usually
// means a carried value met a captured one (reference 000's last example):
// say so, and how to fix it.
inline void explain_loop_variables(const ShapeError& e, const NestedInput& in) {
  std::string m = e.what();
  std::string vars;
  for (const Dim& d : in.implicit)
    if (m.find(d.to_string()) != std::string::npos) vars += (vars.empty() ? "" : ", ") + d.to_string();
  if (vars.empty()) return;
  std::size_t at = m.find("\nThe error occurred while tracing");
  at = m.rfind(" (at ", at == std::string::npos ? m.size() : at);
  if (at == std::string::npos) at = m.size();
  m.insert(at, ". With preserve_dimensions=false each carried dimension is a loop variable of its own (" + vars +
                   ") and never equals a captured value's dimension; pass {.preserve_dimensions = true} if the "
                   "carried sizes do not change, or {.infer_dimensions = true} to make loop variables of only "
                   "the sizes that change");
  throw ShapeError(m);
}

// ---------------------------------------------------------------------------
// A symbolic evaluation of a body's integer scalar equations, given the
// dimensions its invars stand for (nullopt: unknown). Step 4's output types
// use it, so that an output dimension the body computes from the operands'
// dimensions (n * n) is that expression in the caller; so does the search
// for loop-invariant loop variables below.

inline std::optional<Dim> eval_dim(const Jaxpr& j, int var, const std::vector<std::optional<Dim>>& invar_dims,
                                   int depth = 0) {
  if (depth > 64) return std::nullopt;
  for (std::size_t p = 0; p < j.invars.size(); ++p)
    if (j.invars[p] == var) return invar_dims[p];
  for (auto e = j.eqns.rbegin(); e != j.eqns.rend(); ++e) {
    if (e->outputs.size() != 1 || e->outputs[0] != var) continue;
    auto arg = [&](std::size_t i) -> std::optional<Dim> {
      const Atom& a = e->inputs.at(i);
      if (!a.is_var()) return is_integer(a.lit.dtype) ? std::optional<Dim>(Dim(a.lit.i)) : std::nullopt;
      return eval_dim(j, a.var, invar_dims, depth + 1);
    };
    auto both = [&](auto&& f) -> std::optional<Dim> {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      return f(*a, *b);
    };
    auto nonneg = [](const Dim& d) {
      try {
        return d >= Dim(0);
      } catch (const InconclusiveDimensionOperation&) {
        return false;
      }
    };
    switch (prim_info(e->prim).dim) {
      case DimArith::add: return both([](const Dim& a, const Dim& b) { return a + b; });
      case DimArith::sub: return both([](const Dim& a, const Dim& b) { return a - b; });
      case DimArith::mul: return both([](const Dim& a, const Dim& b) { return a * b; });
      case DimArith::max: return both([](const Dim& a, const Dim& b) { return max_dim(a, b); });
      case DimArith::min: return both([](const Dim& a, const Dim& b) { return min_dim(a, b); });
      case DimArith::neg: {
        auto a = arg(0);
        return a ? std::optional<Dim>(-*a) : std::nullopt;
      }
      case DimArith::same:
        return is_integer(j.type_of(e->inputs[0]).dtype) ? arg(0) : std::nullopt;
      case DimArith::div:
      case DimArith::rem: {
        auto a = arg(0), b = arg(1);
        if (!a || !b || !nonneg(*a) || !nonneg(*b - Dim(1))) return std::nullopt;
        return prim_info(e->prim).dim == DimArith::div ? floordiv(*a, *b) : mod(*a, *b);
      }
      case DimArith::none: return std::nullopt;
    }
  }
  return std::nullopt;
}

// A loop body traced under `opts`: the input type and the body (and a while
// loop's condition).
//   - preserve_dimensions=true: one trace, every carried dimension shared.
//   - preserve_dimensions=false: first traced with every dynamic carried
//     dimension a loop variable (Catalyst); the loop variables the body
//     provably never changes (invariant_loop_variables) are then shared, and
//     the body traced again as below, so that those results keep the caller's
//     dimension (InDBIdx) instead of coming back as implicit results.
//   - infer_dimensions: first traced with every carried dimension shared.
// Then, while some shared dimension changes in the body's results, it becomes
// a loop variable and the body is traced again (at most one more trace per
// dimension).
struct LoopTrace {
  NestedInput in;
  NestedBody body;
  std::optional<NestedBody> cond;
};

// After a trace with every dynamic carried dimension a loop variable: which
// loop variables may change from one iteration to the next. The others
// always hold their initial value, the caller's dimension: by induction, the
// body returns for them, given the caller's values for its constants and
// their own initial values, exactly those initial values. This covers
//   - a dimension returned unchanged at its own place (`return a`),
//   - a captured value of the same size returned instead (`return x`, x
//     of a's initial size; of another size, the result's size depends on
//     the trip count, so it stays a loop variable),
//   - sizes computed from such dimensions only (two carried values of
//     initial sizes n and 2 * n, the body returning (a, concatenate(a, a))),
//   - and two values of equal initial size swapped.
// Found as the greatest fixpoint: every loop variable is assumed invariant,
// and one whose new value does not evaluate to its initial value under that
// assumption is dropped, until none is. Returns true if any is invariant;
// `vary` (carry k, dimension j) marks the others.
inline bool invariant_loop_variables(const LoopTrace& t, const std::vector<Value>& init,
                                     std::vector<std::vector<char>>& vary) {
  const std::size_t nv = t.in.implicit.size(), nc = t.body.consts.size();
  if (nv == 0) return false;
  std::vector<Dim> start(nv);  // each loop variable's initial value
  for (std::size_t k = 0; k < t.in.slot.size(); ++k)
    for (std::size_t j = 0; j < t.in.slot[k].size(); ++j)
      if (const int s = t.in.slot[k][j]; s >= 0) start[static_cast<std::size_t>(s)] = init[k].shape()[j];
  Jaxpr body = *t.body.jaxpr;  // invars: consts, loop variables, [index], carried; outvars: loop variables first
  to_no_const_form(body);
  std::vector<char> invariant(nv, 1);
  for (bool dropped = true; dropped;) {
    dropped = false;
    std::vector<std::optional<Dim>> invar_dims(body.invars.size());
    for (std::size_t p = 0; p < nc; ++p) invar_dims[p] = t.body.consts[p].aval().dim_value;
    for (std::size_t s = 0; s < nv; ++s)
      if (invariant[s]) invar_dims[nc + s] = start[s];
    for (std::size_t s = 0; s < nv; ++s) {
      if (!invariant[s]) continue;
      const Atom& o = body.outvars[s];
      const std::optional<Dim> next = o.is_var() ? eval_dim(body, o.var, invar_dims) : std::optional<Dim>(Dim(o.lit.i));
      if (!next || *next != start[s]) {
        invariant[s] = 0;
        dropped = true;
      }
    }
  }
  bool any = false;
  for (std::size_t k = 0; k < t.in.slot.size(); ++k)
    for (std::size_t j = 0; j < t.in.slot[k].size(); ++j)
      if (const int s = t.in.slot[k][j]; s >= 0) {
        vary[k][j] = !invariant[static_cast<std::size_t>(s)];
        any = any || invariant[static_cast<std::size_t>(s)];
      }
  return any;
}

inline LoopTrace trace_loop(const char* what, TraceState& caller, const std::vector<Value>& init,
                            const NestedFn* cond_fn, const NestedFn& body_fn, bool with_index,
                            const LoopOptions& opts) {
  auto cond_check = [&](TraceState&, const std::vector<Value>& res) {
    if (res.size() != 1 || res[0].rank() != 0 || res[0].dtype() != DType::bool_)
      fail<TypeError>(std::string(what) + "(): the condition must return one scalar bool, got " +
                      (res.size() == 1 ? aval_str(res[0].aval()) : std::to_string(res.size()) + " values") +
                      "; compare (e.g. dyn::dim_value(x.shape(0)) < 100)");
    return std::vector<Value>{};
  };
  auto trace_with = [&](NestedInput in, bool preserve, std::vector<std::vector<char>>* changed) {
    LoopTrace t{std::move(in), {}, std::nullopt};
    try {
      if (cond_fn) t.cond = trace_nested(t.in, false, *cond_fn, cond_check);
      t.body = trace_nested(t.in, with_index, body_fn, [&](TraceState& b, const std::vector<Value>& res) {
        return loop_results(what, t.in, b, res, preserve, changed);
      });
    } catch (const ShapeError& e) {
      explain_loop_variables(e, t.in);
      throw;
    }
    return t;
  };
  if (!opts.infer_dimensions && opts.preserve_dimensions)
    return trace_with(deduce_input_type(caller, init, false), true, nullptr);
  std::vector<std::vector<char>> vary;
  for (const Value& v : init) vary.emplace_back(static_cast<std::size_t>(v.rank()), 0);
  if (!opts.infer_dimensions) {
    LoopTrace t = trace_with(deduce_input_type(caller, init, true), false, nullptr);
    if (!invariant_loop_variables(t, init, vary)) return t;
  }
  for (;;) {
    std::vector<std::vector<char>> changed = vary;
    for (auto& c : changed) std::fill(c.begin(), c.end(), 0);
    LoopTrace t = trace_with(deduce_input_type(caller, init, false, &vary), false, &changed);
    bool more = false;
    for (std::size_t k = 0; k < vary.size(); ++k)
      for (std::size_t j = 0; j < vary[k].size(); ++j)
        if (changed[k][j] && !vary[k][j]) vary[k][j] = more = true;
    if (!more) return t;
    // A changed static dimension cannot become a loop variable: report it.
    for (std::size_t k = 0; k < vary.size(); ++k)
      for (std::size_t j = 0; j < vary[k].size(); ++j)
        if (vary[k][j] && init[k].shape()[j].is_static())
          return trace_with(deduce_input_type(caller, init, false, &vary), false, nullptr);
  }
}

// The output types of a loop: the carry's types, where a loop variable's
// dimension is the matching implicit output's (fresh) and a constant's the
// operand's. body invars: consts (operands `const_operand + p`), implicit,
// [index], carried.
inline std::vector<Aval> loop_out_avals(const char* what, const Jaxpr& body, std::size_t nconsts,
                                        std::size_t const_operand, std::size_t nimplicit, bool with_index,
                                        const std::vector<Aval>& in) {
  TraceState* t = current_trace();
  if (!t) internal_error(std::string(what) + ": output types outside of a trace");
  const std::size_t first_carried = nconsts + nimplicit + (with_index ? 1 : 0);
  if (body.invars.size() < first_carried || body.outvars.size() != nimplicit + body.invars.size() - first_carried)
    internal_error(std::string(what) + ": the body's invars and outvars do not match its params");
  std::vector<Aval> out;
  std::vector<std::optional<Dim>> invar_dims(body.invars.size());
  for (std::size_t p = 0; p < nconsts; ++p) invar_dims[p] = in.at(const_operand + p).dim_value;
  for (std::size_t s = 0; s < nimplicit; ++s) {
    Dim d = t->new_dim_var();
    invar_dims[nconsts + s] = d;
    out.push_back(Aval{DType::i64, {}, false, d});
  }
  for (std::size_t p = first_carried; p < body.invars.size(); ++p) {
    const Type& ty = body.types[static_cast<std::size_t>(body.invars[p])];
    Aval a{ty.dtype, {}, false, std::nullopt};
    for (const JDim& d : ty.shape) {
      if (d.is_static()) {
        a.shape.push_back(Dim(d.value));
        continue;
      }
      std::optional<Dim> v = eval_dim(body, d.var, invar_dims);
      if (!v) internal_error(std::string(what) + ": a carried dimension is neither a constant nor a loop variable");
      a.shape.push_back(*v);
    }
    out.push_back(std::move(a));
  }
  return out;
}

inline void check_operands(const char* what, const Jaxpr& body, const std::vector<Aval>& in,
                           const std::function<std::size_t(std::size_t)>& operand_of) {
  for (std::size_t p = 0; p < body.invars.size(); ++p) {
    const Type& ty = body.types[static_cast<std::size_t>(body.invars[p])];
    const std::size_t o = operand_of(p);
    if (o >= in.size()) internal_error(std::string(what) + ": fewer operands than the body's inputs");
    const Aval& a = in[o];
    bool ok = a.dtype == ty.dtype && a.rank() == ty.rank();
    for (std::size_t j = 0; ok && j < ty.shape.size(); ++j)
      if (ty.shape[j].is_static()) ok = a.shape[j].is_static() && a.shape[j].value() == ty.shape[j].value;
    if (!ok)
      fail<TypeError>(std::string(what) + ": operand #" + std::to_string(o) + " has type " + aval_str(a) +
                      " but the body's input #" + std::to_string(p) + " has type " + type_str(body, ty));
  }
}

}  // namespace control

// ---------------------------------------------------------------------------
// The combinators' bind.

std::vector<Value> bind_for_loop(const Value& lower_in, const Value& upper_in, const Value& step_in,
                                 const std::vector<Value>& init, const NestedFn& body, const LoopOptions& opts) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::for_loop");
  const Value lower = as_i64(lower_in, "dyn::for_loop", "lower bound");
  const Value upper = as_i64(upper_in, "dyn::for_loop", "upper bound");
  const Value step = as_i64(step_in, "dyn::for_loop", "step");
  if (!step.is_tracer() && scalar_of(step.array).as<std::int64_t>() == 0)
    fail<TypeError>("dyn::for_loop(): the step must not be 0");
  LoopTrace t = trace_loop("dyn::for_loop", caller, init, nullptr, body, true, opts);
  to_no_const_form(*t.body.jaxpr);
  const std::size_t nimplicit = t.in.implicit.size();
  ForLoopParams p{t.body.jaxpr, static_cast<int>(t.body.consts.size()), static_cast<int>(nimplicit),
                  opts.infer_dimensions ? nimplicit == 0 : opts.preserve_dimensions};
  std::vector<Value> operands = t.body.consts;
  operands.insert(operands.end(), t.in.implicit_operands.begin(), t.in.implicit_operands.end());
  for (const Value& v : {lower, upper, step, lower}) operands.push_back(v);
  operands.insert(operands.end(), init.begin(), init.end());
  std::vector<Value> outs = bind(Prim::for_loop, operands, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(nimplicit), outs.end()};
}

std::vector<Value> bind_while_loop(const std::vector<Value>& init, const NestedFn& cond_fn, const NestedFn& body,
                                   const LoopOptions& opts) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::while_loop");
  LoopTrace t = trace_loop("dyn::while_loop", caller, init, &cond_fn, body, false, opts);
  to_no_const_form(*t.cond->jaxpr);
  to_no_const_form(*t.body.jaxpr);
  const std::size_t nimplicit = t.in.implicit.size();
  WhileLoopParams p{t.cond->jaxpr,
                    t.body.jaxpr,
                    static_cast<int>(t.cond->consts.size()),
                    static_cast<int>(t.body.consts.size()),
                    static_cast<int>(nimplicit),
                    opts.infer_dimensions ? nimplicit == 0 : opts.preserve_dimensions};
  std::vector<Value> operands = t.cond->consts;
  operands.insert(operands.end(), t.body.consts.begin(), t.body.consts.end());
  operands.insert(operands.end(), t.in.implicit_operands.begin(), t.in.implicit_operands.end());
  operands.insert(operands.end(), init.begin(), init.end());
  std::vector<Value> outs = bind(Prim::while_loop, operands, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(nimplicit), outs.end()};
}

std::vector<Value> bind_cond(const Value& pred, const std::vector<Value>& operands, const NestedFn& then_fn,
                             const NestedFn& else_fn) {
  using namespace control;
  TraceState& caller = caller_trace("dyn::cond");
  if (pred.rank() != 0 || pred.dtype() != DType::bool_)
    fail<TypeError>("dyn::cond(): the predicate must be a scalar bool, got " + aval_str(pred.aval()) +
                    "; compare it first (e.g. p != 0)");
  const NestedInput in = deduce_input_type(caller, operands, false);
  // Every dynamic result dimension is returned provisionally; the ones that
  // are the same caller-known dimension in both branches are dropped below.
  struct Occurrence {
    std::size_t k, j;
    Dim d;
  };
  std::vector<Occurrence> occ[2];
  NestedBody br[2];
  const NestedFn* fns[2] = {&then_fn, &else_fn};
  for (int b = 0; b < 2; ++b)
    br[b] = trace_nested(in, false, *fns[b], [&](TraceState& s, const std::vector<Value>& res) {
      std::vector<Value> imp;
      for (std::size_t k = 0; k < res.size(); ++k) {
        const Aval a = res[k].aval();
        for (std::size_t j = 0; j < a.shape.size(); ++j)
          if (a.shape[j].is_symbolic()) {
            occ[b].push_back({k, j, a.shape[j]});
            imp.push_back(s.dim_operand(a.shape[j]));
          }
      }
      return imp;
    });
  // The branches must agree on everything but dynamic sizes.
  const auto& r0 = br[0].results;
  const auto& r1 = br[1].results;
  if (r0.size() != r1.size())
    fail<TypeError>("dyn::cond(): the true branch returns " + std::to_string(r0.size()) +
                    " values but the false branch " + std::to_string(r1.size()) + "; return the same structure");
  for (std::size_t k = 0; k < r0.size(); ++k) {
    const std::string types = "branch output #" + std::to_string(k) + " has type " + aval_str(r0[k]) +
                              " in the true branch but " + aval_str(r1[k]) + " in the false branch";
    if (r0[k].dtype != r1[k].dtype)
      fail<TypeError>("dyn::cond(): " + types + "; return the same dtype (e.g. astype<" +
                      std::string(dtype_cpp_name(r0[k].dtype)) + ">)");
    if (r0[k].rank() != r1[k].rank())
      fail<TypeError>("dyn::cond(): " + types + "; the branches must return the same rank");
    for (std::size_t j = 0; j < r0[k].shape.size(); ++j) {
      const Dim& a = r0[k].shape[j];
      const Dim& c = r1[k].shape[j];
      if (a.is_static() && c.is_static() && a.value() != c.value())
        fail<ShapeError>("dyn::cond(): " + types + "; static sizes must be equal");
      if (a.is_static() != c.is_static())
        fail<TypeError>("dyn::cond(): " + types + " (dimension " + std::to_string(j) +
                        " is static in one branch and dynamic in the other); make both static or both dynamic");
    }
  }
  // Implicit outputs: one per distinct pair of branch dimensions, except a
  // dimension that is the same in both branches and known to the caller.
  std::vector<std::size_t> keep;
  for (std::size_t q = 0; q < occ[0].size(); ++q) {
    const Dim& d0 = occ[0][q].d;
    const Dim& d1 = occ[1][q].d;
    if (d0 == d1 && knows(caller, d0)) continue;
    bool dup = false;
    for (std::size_t q2 : keep) dup = dup || (occ[0][q2].d == d0 && occ[1][q2].d == d1);
    if (!dup) keep.push_back(q);
  }
  for (NestedBody& nb : br) {
    Jaxpr& j = *nb.jaxpr;
    std::vector<Atom> outs;
    for (std::size_t q : keep) outs.push_back(j.outvars[q]);
    outs.insert(outs.end(), j.outvars.begin() + static_cast<std::ptrdiff_t>(nb.nimplicit), j.outvars.end());
    j.outvars = std::move(outs);
    nb.nimplicit = keep.size();
    j.out_explicit.clear();
    if (!keep.empty()) {
      j.out_explicit.assign(keep.size(), false);
      j.out_explicit.resize(j.outvars.size(), true);
    }
    TraceScope::order_jaxpr(j, nb.consts);  // drops what only the dropped outputs used
  }
  // Both branches take the union of their constants (deduplicated by the
  // caller's variable), each in the caller's order of first appearance.
  std::vector<int> union_vars;
  std::vector<Value> union_values;
  std::vector<std::vector<int>> caller_var(2);
  for (int b = 0; b < 2; ++b)
    for (const Value& v : br[b].consts) {
      const Atom a = caller.atom_for(v);
      if (!a.is_var()) internal_error("dyn::cond: a constant of a branch is a literal");
      caller_var[static_cast<std::size_t>(b)].push_back(a.var);
      if (std::find(union_vars.begin(), union_vars.end(), a.var) == union_vars.end()) {
        union_vars.push_back(a.var);
        union_values.push_back(v);
      }
    }
  for (int b = 0; b < 2; ++b) {
    Jaxpr& j = *br[b].jaxpr;
    std::map<int, int> local;  // caller var -> this branch's var
    for (std::size_t i = 0; i < j.constvars.size(); ++i)
      local[caller_var[static_cast<std::size_t>(b)][i]] = j.constvars[i];
    std::vector<int> constvars;
    for (int cv : union_vars) {
      auto it = local.find(cv);
      if (it == local.end()) {
        Type ty = caller.jaxpr.types[static_cast<std::size_t>(cv)];
        for (JDim& d : ty.shape)
          if (!d.is_static()) {
            auto dt = local.find(d.var);
            if (dt == local.end()) internal_error("dyn::cond: a constant's dimension is not a constant of the branch");
            d.var = dt->second;
          }
        it = local.emplace(cv, j.new_var(std::move(ty))).first;
      }
      constvars.push_back(it->second);
    }
    j.constvars = std::move(constvars);
    to_no_const_form(j);
  }
  CondParams p{{br[0].jaxpr, br[1].jaxpr}, static_cast<int>(keep.size())};
  std::vector<Value> ops{pred};
  ops.insert(ops.end(), union_values.begin(), union_values.end());
  ops.insert(ops.end(), operands.begin(), operands.end());
  std::vector<Value> outs = bind(Prim::cond, ops, p);
  return {outs.begin() + static_cast<std::ptrdiff_t>(keep.size()), outs.end()};
}

// ---------------------------------------------------------------------------
// The rules.

std::vector<Aval> control_abstract_eval(Prim prim, const std::vector<Aval>& in, const Params& params) {
  using namespace control;
  switch (prim) {
    case Prim::for_loop: {
      const auto& p = std::get<ForLoopParams>(params);
      const Jaxpr& body = *p.body_jaxpr;
      const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
      if (in.size() != body.invars.size() + 3)
        internal_error("for_loop: " + std::to_string(in.size()) + " operands for a body of " +
                       std::to_string(body.invars.size()) + " inputs");
      check_operands("for_loop", body, in, [&](std::size_t q) { return q < nc + ni ? q : q + 3; });
      for (std::size_t q = nc + ni; q < nc + ni + 4; ++q)
        if (in[q].rank() != 0 || in[q].dtype != DType::i64)
          internal_error("for_loop: a bound is not an i64 scalar");
      return loop_out_avals("for_loop", body, nc, 0, ni, true, in);
    }
    case Prim::while_loop: {
      const auto& p = std::get<WhileLoopParams>(params);
      const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
      const auto ni = static_cast<std::size_t>(p.nimplicit);
      const Jaxpr& body = *p.body_jaxpr;
      const Jaxpr& cj = *p.cond_jaxpr;
      if (in.size() != cnc + body.invars.size() || cj.invars.size() != cnc + body.invars.size() - bnc)
        internal_error("while_loop: the operands do not match the bodies' inputs");
      check_operands("while_loop", body, in, [&](std::size_t q) { return cnc + q; });
      check_operands("while_loop", cj, in,
                     [&](std::size_t q) { return q < cnc ? q : cnc + bnc + (q - cnc); });
      if (cj.outvars.size() != 1 || cj.type_of(cj.outvars[0]).dtype != DType::bool_ ||
          cj.type_of(cj.outvars[0]).rank() != 0)
        internal_error("while_loop: the condition does not return one bool scalar");
      return loop_out_avals("while_loop", body, bnc, cnc, ni, false, in);
    }
    case Prim::cond: {
      const auto& p = std::get<CondParams>(params);
      if (in.empty() || in[0].rank() != 0 || in[0].dtype != DType::bool_)
        fail<TypeError>("cond: the predicate must be a scalar bool, got " + (in.empty() ? "nothing" : aval_str(in[0])));
      if (p.branches.size() != 2) internal_error("cond: two branches expected");
      const Jaxpr& b0 = *p.branches[0];
      const Jaxpr& b1 = *p.branches[1];
      for (const Jaxpr* b : {&b0, &b1}) {
        if (b->invars.size() + 1 != in.size()) internal_error("cond: a branch does not take every operand");
        check_operands("cond", *b, in, [](std::size_t q) { return q + 1; });
      }
      if (b0.outvars.size() != b1.outvars.size()) internal_error("cond: the branches return different counts");
      TraceState* t = current_trace();
      if (!t) internal_error("cond: output types outside of a trace");
      const auto ni = static_cast<std::size_t>(p.nimplicit_outputs);
      std::vector<std::optional<Dim>> invar_dims;
      for (std::size_t q = 1; q < in.size(); ++q) invar_dims.push_back(in[q].dim_value);
      std::vector<Aval> out;
      for (std::size_t s = 0; s < ni; ++s) out.push_back(Aval{DType::i64, {}, false, t->new_dim_var()});
      for (std::size_t k = ni; k < b0.outvars.size(); ++k) {
        const Type& t0 = b0.type_of(b0.outvars[k]);
        const Type& t1 = b1.type_of(b1.outvars[k]);
        Aval a{t0.dtype, {}, false, std::nullopt};
        for (std::size_t j = 0; j < t0.shape.size(); ++j) {
          if (t0.shape[j].is_static()) {
            a.shape.push_back(Dim(t0.shape[j].value));
            continue;
          }
          std::optional<Dim> d;
          for (std::size_t s = 0; s < ni && !d; ++s)
            if (b0.outvars[s].var == t0.shape[j].var && b1.outvars[s].var == t1.shape[j].var) d = out[s].dim_value;
          if (!d) d = eval_dim(b0, t0.shape[j].var, invar_dims);
          if (!d) internal_error("cond: an output dimension is neither implicit nor computable from the operands");
          a.shape.push_back(*d);
        }
        out.push_back(std::move(a));
      }
      return out;
    }
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("control_abstract_eval: " + std::string(prim_name(prim)) + " is not a control-flow primitive");
}

std::vector<AnyArray> control_impl(Prim prim, const std::vector<AnyArray>& in, const Params& params) {
  auto i64 = [&](std::size_t q) { return scalar_of(in.at(q)).as<std::int64_t>(); };
  switch (prim) {
    case Prim::for_loop: {
      const auto& p = std::get<ForLoopParams>(params);
      const auto nc = static_cast<std::size_t>(p.body_nconsts), ni = static_cast<std::size_t>(p.nimplicit);
      const std::int64_t lower = i64(nc + ni), upper = i64(nc + ni + 1), step = i64(nc + ni + 2);
      std::vector<AnyArray> state(in.begin() + static_cast<std::ptrdiff_t>(nc), in.begin() + static_cast<std::ptrdiff_t>(nc + ni));
      state.insert(state.end(), in.begin() + static_cast<std::ptrdiff_t>(nc + ni + 4), in.end());
      const std::int64_t n = for_loop_trip_count(lower, upper, step);
      std::vector<AnyArray> args;
      for (std::int64_t t = 0; t < n; ++t) {
        args.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc));
        args.insert(args.end(), state.begin(), state.begin() + static_cast<std::ptrdiff_t>(ni));
        args.push_back(AnyArray(Array<std::int64_t>::scalar(lower + t * step)));
        args.insert(args.end(), state.begin() + static_cast<std::ptrdiff_t>(ni), state.end());
        state = eval_jaxpr(*p.body_jaxpr, {}, args);
      }
      return state;
    }
    case Prim::while_loop: {
      const auto& p = std::get<WhileLoopParams>(params);
      const auto cnc = static_cast<std::size_t>(p.cond_nconsts), bnc = static_cast<std::size_t>(p.body_nconsts);
      std::vector<AnyArray> state(in.begin() + static_cast<std::ptrdiff_t>(cnc + bnc), in.end());
      std::vector<AnyArray> args;
      for (;;) {
        args.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(cnc));
        args.insert(args.end(), state.begin(), state.end());
        if (!scalar_of(eval_jaxpr(*p.cond_jaxpr, {}, args).at(0)).as<bool>()) return state;
        args.assign(in.begin() + static_cast<std::ptrdiff_t>(cnc), in.begin() + static_cast<std::ptrdiff_t>(cnc + bnc));
        args.insert(args.end(), state.begin(), state.end());
        state = eval_jaxpr(*p.body_jaxpr, {}, args);
      }
    }
    case Prim::cond: {
      const auto& p = std::get<CondParams>(params);
      const bool pred = scalar_of(in.at(0)).as<bool>();
      return eval_jaxpr(*p.branches[pred ? 0 : 1], {}, std::vector<AnyArray>(in.begin() + 1, in.end()));
    }
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("control_impl: " + std::string(prim_name(prim)) + " is not a control-flow primitive");
}

std::vector<AnyArray> check_eager_results(const char* what, std::vector<AnyArray> got,
                                          const std::vector<AnyArray>& expected) {
  if (got.size() != expected.size()) fail<TypeError>(control::carry_count_error(what, got.size(), expected.size()));
  for (std::size_t k = 0; k < got.size(); ++k)
    if (got[k].dtype() != expected[k].dtype())
      fail<TypeError>(control::carry_dtype_error(what, k, aval_of(got[k]), aval_of(expected[k])));
  return got;
}

}  // namespace dyn::detail
#endif  // DYNSTAGE_IMPLEMENTATION
