// dynstage: dyn::vmap, batching as an interpreter of jaxprs (issue 20,
// API.md section 14).
//
// dyn::vmap(f, in_axes, out_axes) returns a function that, called on
// arguments carrying a batch axis (in_axes: one entry per argument, an axis
// or dyn::none), traces f once on the arguments' types without that axis (a
// nested scope, as dyn::jvp: inside jit or make_jaxpr it shares the caller's
// dimensions), then walks the jaxpr with batch_eval: the same loop as
// eval_jaxpr, each equation with a batched operand replaced by its
// primitive's batching rule (transform/batching_rules.hpp). The rules bind,
// so on arrays the walk computes at once, and under a trace it records the
// batched program: that is how make_jaxpr prints it and jit compiles it.
#pragma once

#include <cstdint>
#include <initializer_list>
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
#include "batching_control.hpp"
#include "batching_rules.hpp"
#include "jvp.hpp"  // trace_for_transform's helpers: traced_result_t, rebuild

namespace dyn {

// dyn::none in in_axes: the argument is not batched (JAX's None).
struct none_t {
  explicit constexpr none_t(int) {}
};
inline constexpr none_t none{0};

// One entry of in_axes: an axis (negative counts from the end, as in JAX) or dyn::none.
struct BatchAxis {
  std::optional<std::int64_t> axis;
  constexpr BatchAxis(int a) : axis(a) {}
  constexpr BatchAxis(std::int64_t a) : axis(a) {}
  constexpr BatchAxis(none_t) {}
};

// in_axes: one BatchAxis per argument ({0, dyn::none}), or one for all (0).
// out_axes is the same spec for the results (OutAxes).
struct InAxes {
  std::vector<BatchAxis> axes;
  bool one_for_all = false;
  InAxes(int a) : axes{BatchAxis(a)}, one_for_all(true) {}
  InAxes(std::int64_t a) : axes{BatchAxis(a)}, one_for_all(true) {}
  InAxes(none_t n) : axes{BatchAxis(n)}, one_for_all(true) {}
  InAxes(std::initializer_list<BatchAxis> l) : axes(l) {}
};
// out_axes: one BatchAxis per result ({0, dyn::none, 1}; the results are the
// elements of a tuple, pair, std::array or vector result, else the one
// result), or one for all (0). dyn::none: the result is returned without a
// batch axis, which it must not have (JAX's out_axes=None).
using OutAxes = InAxes;

namespace detail {

#ifdef DYNSTAGE_IMPLEMENTATION
BatchOut batch_eval(const Jaxpr& j, const std::vector<Value>& consts, const std::vector<Value>& args,
                    const std::vector<BDim>& dims) {
  std::vector<Value> env(j.types.size());
  std::vector<BDim> denv(j.types.size());
  for (std::size_t i = 0; i < consts.size(); ++i) env.at(static_cast<std::size_t>(j.constvars.at(i))) = consts[i];
  for (std::size_t i = 0; i < args.size(); ++i) {
    env.at(static_cast<std::size_t>(j.invars.at(i))) = args[i];
    denv.at(static_cast<std::size_t>(j.invars.at(i))) = dims.at(i);
  }
  auto read = [&](const Atom& a) { return a.is_var() ? env[static_cast<std::size_t>(a.var)] : scalar_value(a.lit, a.weak); };
  auto dread = [&](const Atom& a) { return a.is_var() ? denv[static_cast<std::size_t>(a.var)] : std::nullopt; };
  for (const Eqn& e : j.eqns) {
    std::vector<Value> in;
    std::vector<BDim> din;
    bool any = false;
    for (const Atom& a : e.inputs) {
      in.push_back(read(a));
      din.push_back(dread(a));
      any = any || din.back().has_value();
    }
    if (e.prim == Prim::pow && is_integer(in[0].dtype()) && ActiveLanes::current()) {
      // A lane whose result is discarded computes 1 ** y: no fault (ActiveLanes).
      // Unbatched operands stay unbatched (a size may be computed from them):
      // base 1 unless some lane is active.
      const Value& m = *ActiveLanes::current();
      const Value base = any ? batch_detail::to_front(in[0], din[0], m.shape()[0]) : in[0];
      const Value one = full(base.shape(), scalar_value(Scalar::of<std::int64_t>(1), true), base.dtype(),
                             current_trace() != nullptr);
      const Value active = any ? m : bind1(Prim::reduce_or, {m}, ReduceParams{{0}});
      std::vector<std::int64_t> at;  // where `active`'s axis goes in base's shape
      if (any) at.push_back(0);
      const Value keep =
          base.rank() == active.rank() ? active : batch_detail::broadcast_dims(active, base.shape(), at, true);
      in[0] = bind1(Prim::select_n, {keep, one, base});
      if (any) din[0] = 0;
    }
    BatchOut r;
    if (any) {
      r = batch_rule(e.prim, in, din, e.params);
    } else {
      r.values = bind(e.prim, in, e.params);
      r.dims.assign(r.values.size(), std::nullopt);
    }
    for (std::size_t k = 0; k < e.outputs.size(); ++k) {
      env[static_cast<std::size_t>(e.outputs[k])] = r.values.at(k);
      denv[static_cast<std::size_t>(e.outputs[k])] = r.dims.at(k);
    }
  }
  BatchOut out;
  for (const Atom& a : j.outvars) {
    out.values.push_back(read(a));
    out.dims.push_back(dread(a));
  }
  return out;
}
#endif

// The batch axes of the leaves `xs` of f's arguments (leaf_count[k] leaves
// for argument k), normalised, and the batch size; errors name the argument.
struct VmapInputs {
  std::vector<BDim> dims;  // per leaf
  Dim size;
  std::vector<Aval> avals;  // per leaf, the batch axis removed
};
VmapInputs vmap_inputs(const InAxes& in_axes, const std::vector<Value>& xs, const std::vector<std::size_t>& leaf_count);
// The result `v` (batch axis `d`) with its batch axis at `out_axis`; an
// unbatched result is broadcast to the batch size. out_axis dyn::none: `v`
// as it is, a ShapeError if it is batched. `index`: the result's, for errors.
Value vmap_output(const Value& v, const BDim& d, const BatchAxis& out_axis, const Dim& size, std::size_t index);
// The number of leaves of each result (see OutAxes), checked against out_axes.
void check_out_axes(const OutAxes& out_axes, const std::vector<std::size_t>& result_leaves);

#ifdef DYNSTAGE_IMPLEMENTATION
VmapInputs vmap_inputs(const InAxes& in_axes, const std::vector<Value>& xs, const std::vector<std::size_t>& leaf_count) {
  const std::size_t nargs = leaf_count.size();
  if (!in_axes.one_for_all && in_axes.axes.size() != nargs)
    fail<TypeError>("dyn::vmap: in_axes has " + std::to_string(in_axes.axes.size()) +
                    " entries but the function is called with " + std::to_string(nargs) +
                    " arguments; give one axis (or dyn::none) per argument");
  VmapInputs r;
  std::optional<std::size_t> first;  // the leaf that set the batch size, and its argument
  std::size_t first_arg = 0;
  std::size_t leaf = 0;
  for (std::size_t k = 0; k < nargs; ++k) {
    const BatchAxis& ax = in_axes.one_for_all ? in_axes.axes[0] : in_axes.axes[k];
    for (std::size_t i = 0; i < leaf_count[k]; ++i, ++leaf) {
      const Value& x = xs.at(leaf);
      Aval a = x.aval();
      if (!ax.axis) {
        r.dims.push_back(std::nullopt);
        r.avals.push_back(a);
        continue;
      }
      const std::int64_t rank = x.rank();
      const std::int64_t d = *ax.axis < 0 ? *ax.axis + rank : *ax.axis;
      if (d < 0 || d >= rank)
        fail<ShapeError>("dyn::vmap: in_axes entry " + std::to_string(*ax.axis) + " of argument #" + std::to_string(k) +
                         " is out of range for its value of type " + aval_str(a) + " (rank " + std::to_string(rank) +
                         "); an axis is in [" + std::to_string(-rank) + ", " + std::to_string(rank) + ")");
      const Dim n = a.shape[static_cast<std::size_t>(d)];
      if (!first) {
        first = leaf;
        first_arg = k;
        r.size = n;
      } else if (!(n == r.size)) {
        fail<ShapeError>("dyn::vmap: argument #" + std::to_string(first_arg) + " of type " +
                         aval_str(xs[*first].aval()) + " has batch size " + r.size.to_string() +
                         " but argument #" + std::to_string(k) + " of type " + aval_str(a) + " has batch size " +
                         n.to_string() + " along axis " + std::to_string(d) +
                         "; the batched arguments have one batch size");
      }
      a.shape.erase(a.shape.begin() + d);
      a.dim_value.reset();
      r.dims.push_back(d);
      r.avals.push_back(a);
    }
  }
  if (!first)
    fail<TypeError>("dyn::vmap: no argument is batched (every in_axes entry is dyn::none); batch at least one");
  return r;
}

Value vmap_output(const Value& v, const BDim& d, const BatchAxis& axis, const Dim& size, std::size_t index) {
  if (!axis.axis) {
    if (!d) return v;
    Aval lane = v.aval();
    lane.shape.erase(lane.shape.begin() + *d);
    lane.dim_value.reset();
    fail<ShapeError>("dyn::vmap: result #" + std::to_string(index) + " (of type " + aval_str(lane) +
                     " per lane) depends on a batched argument, but its out_axes entry is dyn::none; give it an out "
                     "axis, or compute it from unbatched arguments only (JAX: vmap has mapped output but out_axes "
                     "is None)");
  }
  const std::int64_t out_axis = *axis.axis;
  const std::int64_t rank = v.rank() + (d ? 0 : 1);
  const std::int64_t to = out_axis < 0 ? out_axis + rank : out_axis;
  if (to < 0 || to >= rank)
    fail<ShapeError>("dyn::vmap: out_axes " + std::to_string(out_axis) + " is out of range for result #" +
                     std::to_string(index) + ", of rank " + std::to_string(rank) + " with its batch axis");
  const Value front = batch_detail::to_front(v, d, size);
  return batch_detail::moveaxis(front, 0, to);
}

void check_out_axes(const OutAxes& out_axes, const std::vector<std::size_t>& result_leaves) {
  if (!out_axes.one_for_all && out_axes.axes.size() != result_leaves.size())
    fail<TypeError>("dyn::vmap: out_axes has " + std::to_string(out_axes.axes.size()) +
                    " entries but the function returns " + std::to_string(result_leaves.size()) +
                    " results; give one axis (or dyn::none) per result");
}
#endif

// The leaves of each result of `out`: the elements of a tuple, pair,
// std::array or vector (each a pytree), else `out` as one result.
template <class R>
std::vector<std::size_t> result_leaves(const R& out) {
  std::vector<std::size_t> r;
  if constexpr (is_std_tuple<R>::value || is_std_pair<R>::value) {
    std::apply([&](const auto&... e) { (r.push_back(treedef_of(e).num_leaves), ...); }, out);
  } else if constexpr (is_std_array<R>::value || is_std_vector<R>::value) {
    for (const auto& e : out) r.push_back(treedef_of(e).num_leaves);
  } else {
    r.push_back(treedef_of(out).num_leaves);
  }
  return r;
}

template <class F, class... A>
TracedFn trace_on_avals(const F& f, const std::vector<Aval>& avals, const std::tuple<A...>& args,
                        std::vector<std::size_t>& out_leaves) {
  TracedFn r;
  TraceScope scope;
  std::vector<Value> targs;
  for (const Aval& a : avals) targs.push_back(scope.new_arg(a));
  std::size_t k = 0;
  auto typed = std::apply([&](const auto&... p) { return std::tuple<traced_t<A>...>{traced_like(p, targs, k)...}; },
                          args);
  const traced_result_t<F, A...> out = std::apply(f, typed);
  r.out_tree = treedef_of(out);
  out_leaves = result_leaves(out);
  r.jaxpr = scope.finish(flatten_results(out), /*implicit_results=*/false);
  r.consts = scope.const_sources();
  return r;
}

template <class F>
struct Vmapped {
  F f;
  InAxes in_axes;
  OutAxes out_axes;

  template <class... A>
  auto operator()(const A&... args) const {
    const std::vector<Value> xs = leaves_of(args...);
    const std::vector<std::size_t> counts{leaves_of(args).size()...};
    const VmapInputs in = vmap_inputs(in_axes, xs, counts);
    std::vector<std::size_t> out_leaves;
    const TracedFn traced = trace_on_avals(f, in.avals, std::tuple<A...>(args...), out_leaves);
    check_out_axes(out_axes, out_leaves);
    const ActiveLanes every_lane(std::nullopt);
    const BatchOut o = batch_eval(*traced.jaxpr, traced.consts, xs, in.dims);
    std::vector<Value> outs;
    std::size_t leaf = 0;
    for (std::size_t k = 0; k < out_leaves.size(); ++k)
      for (std::size_t i = 0; i < out_leaves[k]; ++i, ++leaf)
        outs.push_back(vmap_output(o.values.at(leaf), o.dims.at(leaf),
                                   out_axes.one_for_all ? out_axes.axes[0] : out_axes.axes[k], in.size, k));
    using R = traced_result_t<F, A...>;
    if constexpr ((false || ... || has_tracer_leaf_v<A>)) {
      return rebuild<traced_t<R>>(traced.out_tree, outs);
    } else {
      for (const Value& v : outs)
        if (v.is_tracer())
          fail<TypeError>("dyn::vmap: the function uses a tracer of an enclosing trace while its arguments are "
                          "concrete arrays; pass that value as an argument");
      return rebuild<concrete_t<R>>(traced.out_tree, outs);
    }
  }
};

}  // namespace detail

// vmap(f, in_axes, out_axes): jax.vmap. The returned function takes f's
// arguments with a batch axis: in_axes gives, per argument ({0, dyn::none},
// one entry per argument, applying to every leaf of a pytree argument) or
// for all (0), the axis that is batched or dyn::none for an argument every
// lane shares; negative axes count from the end. out_axes, per result
// ({0, dyn::none, 1}: the elements of a tuple result) or for all (0), puts
// the result's batch axis there (an unbatched result is broadcast), or with
// dyn::none returns a result that does not depend on the batch without a
// batch axis (a batched one is a dyn::ShapeError, as JAX). On arrays it
// computes at once; on tracers (inside jit, make_jaxpr) it records the
// batched program. Errors: dyn::TypeError for in_axes of the wrong length
// or none batched, or out_axes of the wrong length; dyn::ShapeError for an
// axis out of range, batch sizes that differ, or a batched result with
// out_axes dyn::none (docs/transformations.md).
template <class F>
detail::Vmapped<F> vmap(F f, InAxes in_axes = 0, OutAxes out_axes = 0) {
  return detail::Vmapped<F>{std::move(f), std::move(in_axes), std::move(out_axes)};
}

}  // namespace dyn
