// dynstage: shard_map called with concrete arrays (trace/collectives.hpp).
//
// Inside f, axis_index("x") is a Tracer (as lax.axis_index is a traced
// value), so an eager shard_map cannot just call f on its arrays. It traces
// f once on tracers of its arguments' types, as jvp and vmap do, and runs
// the jaxpr eagerly (eval_jaxpr): every operation, collectives included,
// computes at once on the blocks, and the results come back as arrays of
// f's result structure. The same lambda thus runs staged (under jit) and
// eagerly, with the collectives and axis_index in both.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "../eager/interpret.hpp"
#include "jvp.hpp"

namespace dyn::detail {

template <class F, class... A>
auto shard_map_eager(const F& f, const A&... args);

template <class F, class... A>
auto shard_map_call(const F& f, const A&... args) {
  // Staged (inside jit, make_jaxpr, grad, vmap): f records its collectives
  // in the enclosing trace.
  if constexpr ((false || ... || has_tracer_leaf_v<A>)) return f(args...);
  else return shard_map_eager(f, args...);
}

template <class F, class... A>
auto shard_map_eager(const F& f, const A&... args) {
  const std::vector<Value> xs = leaves_of(args...);
  const TracedFn traced = trace_for_transform(f, xs, std::tuple<A...>(args...));
  std::vector<AnyArray> consts, in;
  for (const Value& c : traced.consts) {
    if (c.is_tracer())
      fail<TypeError>("dyn::shard_map: the function uses a tracer of an enclosing trace while its arguments are "
                      "concrete arrays; pass that value as an argument");
    consts.push_back(c.array);
  }
  for (const Value& x : xs) in.push_back(x.array);
  std::vector<Value> outs;
  for (AnyArray& o : eval_jaxpr(*traced.jaxpr, consts, in)) outs.push_back(Value{std::move(o), nullptr, false});
  return rebuild<concrete_t<traced_result_t<F, A...>>>(traced.out_tree, outs);
}

}  // namespace dyn::detail
