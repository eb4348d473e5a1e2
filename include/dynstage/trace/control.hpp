// dynstage: control flow — for_loop, while_loop, cond (API.md §7, §8) and
// switch_ (§13),
// traced once through the bind algorithm of the Catalyst tracing note and
// the Catalyst dynamic-arrays doc.
//
// The combinators are templates that flatten their operands and either run
// the function (eagerly) or hand it to bind_for_loop, bind_while_loop or
// bind_cond: the bind algorithm, whose steps are control_nested.hpp and whose
// binds and primitive rules are control_bind.hpp (both compiled once per
// program).
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
#include "../shape/symbolic.hpp"

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
// switch_: the index must be an integer scalar (TypeError otherwise);
// bind_switch converts it to i32, clamps it into [0, N-1] and binds an
// indexed cond of N >= 2 branches.
void check_switch_index(const Aval& index);
std::vector<Value> bind_switch(const Value& index, const std::vector<Value>& operands,
                               const std::vector<NestedFn>& branches);
// fn traced once on tracers of the operands' types, in a scope nested in
// the current trace (a fresh one outside any): its jaxpr, whose constvars
// are the values it closes over, and those values.
struct StagedBody {
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;
};
StagedBody stage_body(const std::vector<Value>& operands, const NestedFn& fn);
// checkpoint (dyn::checkpoint, and the transformations' rules that rebuild
// one): `body` traced once on tracers of the operands' types, in a scope
// nested in the current trace; binds a checkpoint equation with params
// `opts` (its jaxpr replaced by the body's, in no-constant form: the values
// it closes over are passed first). Returns the body's results.
std::vector<Value> bind_checkpoint(const std::vector<Value>& operands, const NestedFn& body,
                                   const CheckpointParams& opts);
// scan's rules (trace/scan.hpp), which control_abstract_eval and control_impl call.
std::vector<Aval> scan_abstract_eval(const std::vector<Aval>& in, const ScanParams& p);
std::vector<AnyArray> scan_impl(const std::vector<AnyArray>& in, const ScanParams& p);

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

// A combinator whose operands are all concrete stages only because its body
// returns a tracer: an operation in the body was given a dyn::Dim or traced
// size, which stages it (API.md section 8). That needs an enclosing trace.
inline void require_trace_for_body(const char* what) {
  if (!current_trace())
    fail<TypeError>(std::string(what) +
                    ": the operands are concrete, but the body returns a dyn::Tracer and no function is being "
                    "traced: an operation in the body stages because it was given a dyn::Dim or traced size (e.g. "
                    "`dyn::Dim n = x.shape(0)` used in slice, reshape or zeros) or it uses a tracer that escaped a "
                    "finished trace; give concrete arrays integer sizes: `auto n = x.shape(0)` is an integer for an array and a dyn::Dim for a tracer");
}

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
      if constexpr (!traced_inputs) require_trace_for_body("dyn::for_loop()");
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
      if constexpr (!traced_inputs) require_trace_for_body("dyn::while_loop()");
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
    if constexpr (traced && !traced_inputs) require_trace_for_body("dyn::cond()");
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

// ---------------------------------------------------------------------------
// switch_(index, branch0, branch1, ...)(operands...)
//
// lax.switch: branch i runs for index i; the index (an integer C++ value,
// tracer or array) is converted to i32 and clamped into [0, N-1], so -1 runs
// branch 0 and N + 5 runs branch N-1. A traced index binds `convert_element_type`
// (unless it is i32 already), `clamp 0:i32[] i N-1:i32[]` and one indexed
// `cond[branches=(...)]`, as JAX prints lax.switch. Every branch takes the
// operands and returns the same structure, dtypes and ranks (TypeError naming
// the branches otherwise); sizes may differ, as in cond. As with cond, a C++
// integer index picks the branch at trace time, and a single branch is just
// called (as lax.switch does). switch_ is a class so that the branches can be
// a pack and the user's line still a defaulted argument (CTAD, guide below).

template <class Index, class... Branches>
class switch_ {
  static_assert(sizeof...(Branches) > 0,
                "dyn::switch_: no branches (lax.switch: Empty branch sequence); pass at least one branch");
  static constexpr std::size_t N = sizeof...(Branches);
  using B0 = std::tuple_element_t<0, std::tuple<Branches...>>;

public:
  switch_(Index index, Branches... branches, std::source_location loc = std::source_location::current())
      : index_(std::move(index)), branches_(std::move(branches)...), loc_(loc) {}

  template <class... Ops>
  auto operator()(const Ops&... ops) const {
    using namespace detail;
    OpSite site(loc_);
    constexpr bool traced_inputs = is_tracer_v<Index> || (false || ... || has_tracer_leaf_v<Ops>);
    constexpr bool traced = (false || ... || stages<traced_inputs, const Branches&, const lifted_t<Ops>&...>::value);
    if constexpr (traced && !traced_inputs) require_trace_for_body("dyn::switch_()");
    check_switch_index(leaf_aval(index_));
    if constexpr (!traced) {
      // Concrete: run one branch. All must give the same structure and types.
      using R = concrete_t<std::invoke_result_t<const B0&, const lifted_t<Ops>&...>>;
      static_assert((std::is_same_v<R, concrete_t<std::invoke_result_t<const Branches&, const lifted_t<Ops>&...>>> &&
                     ...),
                    "dyn::switch_: the branches must return the same structure and element types");
      return pick(concrete_index(), [&](const auto& br) -> R { return to_concrete(br(lift_scalars(ops)...)); });
    } else if constexpr (is_scalar_v<Index> || N == 1) {
      // A C++ index (or a single branch) picks the branch at trace time.
      using R = traced_t<std::invoke_result_t<const B0&, const traced_t<Ops>&...>>;
      static_assert((std::is_same_v<R, traced_t<std::invoke_result_t<const Branches&, const traced_t<Ops>&...>>> &&
                     ...),
                    "dyn::switch_: the branches must return the same structure and element types");
      std::vector<Value> args = leaves_of(ops...);
      [[maybe_unused]] std::size_t k = 0;
      auto typed = std::tuple<traced_t<Ops>...>{traced_like(ops, args, k)...};
      std::size_t b = 0;
      if constexpr (N > 1) b = concrete_index();
      return pick(b, [&](const auto& br) -> R { return std::apply(br, typed); });
    } else {
      using R = traced_t<std::invoke_result_t<const B0&, const traced_t<Ops>&...>>;
      auto typed = [&](const std::vector<Value>& args) {
        [[maybe_unused]] std::size_t k = 0;
        return std::tuple<traced_t<Ops>...>{traced_like(ops, args, k)...};
      };
      std::optional<TreeDef> tree;
      std::vector<Value> outs = bind_all(std::index_sequence_for<Branches...>{}, leaves_of(ops...), typed, tree);
      std::size_t j = 0;
      auto make_leaf = [&]<class L>() -> L { return from_value<L>(outs.at(j++)); };
      return unflatten<R>(*tree, make_leaf);
    }
  }

private:
  // The index of a concrete index (a C++ integer or an array) as lax.switch
  // computes it: converted to i32 (wrapping, as convert_element_type), then
  // clamped into [0, N-1].
  std::size_t concrete_index() const {
    const auto i = static_cast<std::int32_t>(detail::concrete_int(index_));
    return i <= 0 ? 0 : static_cast<std::size_t>(i) >= N ? N - 1 : static_cast<std::size_t>(i);
  }
  // f(branch b).
  template <std::size_t I = 0, class F>
  decltype(auto) pick(std::size_t b, F&& f) const {
    if constexpr (I + 1 == N) return f(std::get<I>(branches_));
    else return b == I ? f(std::get<I>(branches_)) : pick<I + 1>(b, f);
  }
  template <std::size_t... I, class Typed>
  std::vector<detail::Value> bind_all(std::index_sequence<I...>, const std::vector<detail::Value>& operands,
                                      const Typed& typed, std::optional<detail::TreeDef>& tree) const {
    using namespace detail;
    auto fns = std::make_tuple([&](const std::vector<Value>& args) {
      auto r = std::apply(std::get<I>(branches_), typed(args));
      if constexpr (I == 0) tree = treedef_of(r);
      return flatten_results(r);
    }...);
    return bind_switch(to_value(index_), operands, std::vector<NestedFn>{NestedFn(std::get<I>(fns))...});
  }

  Index index_;
  std::tuple<Branches...> branches_;
  std::source_location loc_;
};

template <class Index, class... Branches>
switch_(Index, Branches...) -> switch_<Index, Branches...>;

}  // namespace dyn
