// dynstage: batching rules of the control-flow primitives (dyn::vmap of
// for_loop, while_loop, cond/switch_ and scan), JAX's rules
// (jax/_src/lax/control_flow/loops.py, conditionals.py) in the form of
// dynstage's combinators.
//
// A loop is batched by binding the same loop again through its combinator's
// bind (bind_for_loop, bind_while_loop, bind_scan), with a body that is the
// original body walked by batch_eval: the combinator traces that body in a
// nested scope, exactly as it traces a user's body. Every carried value is
// batched (axis 0): simpler than JAX's fixed point over which carries
// become batched, and the same results. Specifically:
//   for_loop    the bounds must be the same in every lane (a TypeError
//               otherwise: batch them into a while_loop yourself);
//   while_loop  the predicate may differ per lane: the loop runs while any
//               lane's predicate holds, and a lane whose predicate is false
//               keeps its carry (a select of the old and new carry), as
//               JAX's _while_loop_batching_rule;
//   cond        an unbatched predicate keeps the cond (branches batched);
//               a batched one runs every branch and selects each lane's
//               results, as JAX turns cond into select;
//   scan        the carry is batched at 0, a batched xs at axis 1 (axis 0
//               is the scanned one), and the ys come out batched at 1; a
//               dynamic length that differs per lane runs the longest
//               lane's count, inactive lanes keeping their carries
//               (scan_ragged_rule: vmap of grad of a while loop).
// Loops whose carried sizes change (nimplicit > 0) and conds with dynamic
// result sizes are not batched (a TypeError saying so); the others are
// rebound with their carried dimensions shared. Code whose results some
// lanes discard (a branch under a per-lane predicate, a while body after a
// lane finished, a ragged scan past a lane's length) runs under ActiveLanes
// (batching_rules.hpp), so that those lanes do not fault.
// With no enclosing trace (eager vmap) the batched loop is staged in a
// scope of its own and run by the interpreter.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../eager/interpret.hpp"
#include "../trace/control.hpp"
#include "../trace/scan.hpp"
#include "batching_rules.hpp"

namespace dyn::detail {

#ifdef DYNSTAGE_IMPLEMENTATION

namespace batch_detail {

// fn(operands) recorded in the current trace; with none, staged into a
// jaxpr of its own and evaluated on the (concrete) operands.
template <class Fn>
std::vector<Value> staged_or_run(const std::vector<Value>& operands, const Fn& fn) {
  if (current_trace()) return fn(operands);
  const StagedBody b = stage_body(operands, fn);
  std::vector<AnyArray> consts;
  for (const Value& c : b.consts) consts.push_back(c.array);
  std::vector<AnyArray> in;
  for (const Value& v : operands) in.push_back(v.array);
  std::vector<Value> r;
  for (AnyArray& a : eval_jaxpr(ClosedJaxpr{b.jaxpr, consts}, in)) r.push_back(Value{std::move(a), nullptr, false});
  return r;
}

inline void unsupported(Prim p, const std::string& why) {
  fail<TypeError>("vmap: cannot batch " + std::string(prim_name(p)) + ": " + why);
}

// batch_eval of `j` on `in` (batch axes `d`), every result batched at 0.
inline std::vector<Value> all_front(const Jaxpr& j, const std::vector<Value>& in, const std::vector<BDim>& d,
                                    const Dim& size) {
  const BatchOut o = batch_eval(j, {}, in, d);
  std::vector<Value> r;
  for (std::size_t k = 0; k < o.values.size(); ++k) r.push_back(to_front(o.values[k], o.dims[k], size));
  return r;
}

// c ? a : b per lane, c of shape [size] (batched at 0), a and b [size, ...].
inline Value lane_select(const Value& c, const Value& a, const Value& b) {
  const Value cb = a.rank() == 1 ? c : broadcast_dims(c, a.shape(), {0}, true);
  return bind1(Prim::select_n, {cb, b, a});
}

BatchOut for_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const ForLoopParams& fp) {
  if (fp.nimplicit != 0) unsupported(Prim::for_loop, "its carried sizes change between iterations (nimplicit > 0)");
  const Dim size = batch_size(x, dims);
  const std::size_t nc = static_cast<std::size_t>(fp.body_nconsts);
  for (std::size_t k = nc; k < nc + 4; ++k)
    if (dims[k])
      unsupported(Prim::for_loop, "its bounds differ between the batch's lanes; write it as a while_loop over a "
                                  "batched counter");
  std::vector<Value> init;
  for (std::size_t k = nc + 4; k < x.size(); ++k) init.push_back(to_front(x[k], dims[k], size));
  const Value lower = x[nc], upper = x[nc + 1], step = x[nc + 2];
  const std::vector<Value> consts(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nc));
  const std::vector<BDim> cdims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(nc));
  std::vector<Value> operands = consts;
  for (const Value& v : {lower, upper, step}) operands.push_back(v);
  operands.insert(operands.end(), init.begin(), init.end());
  const auto run = [&](const std::vector<Value>& ops) {
    const std::vector<Value> cs(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(nc));
    auto body = [&](const std::vector<Value>& args) {  // index, carried
      std::vector<Value> in = cs;
      std::vector<BDim> d = cdims;
      for (std::size_t k = 0; k < args.size(); ++k) {
        in.push_back(args[k]);
        d.push_back(k == 0 ? BDim{} : BDim{0});
      }
      return all_front(*fp.body_jaxpr, in, d, size);
    };
    // nimplicit == 0: the body was traced (last) with every carried dimension
    // shared, and its results keep them; the batched body is that body, so
    // it is traced shared too. Loop variables (preserve_dimensions=false)
    // would make a carried value's dimension differ from another carry's or
    // a captured one's that the body mixes it with (fuzz seeds 54001, ...).
    LoopOptions opts;
    opts.preserve_dimensions = true;
    const std::vector<Value> carried(ops.begin() + static_cast<std::ptrdiff_t>(nc + 3), ops.end());
    return bind_for_loop(ops[nc], ops[nc + 1], ops[nc + 2], carried, body, opts);
  };
  const std::vector<Value> outs = staged_or_run(operands, run);
  return {outs, std::vector<BDim>(outs.size(), BDim{0})};
}

BatchOut while_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const WhileLoopParams& wp) {
  if (wp.nimplicit != 0) unsupported(Prim::while_loop, "its carried sizes change between iterations (nimplicit > 0)");
  const Dim size = batch_size(x, dims);
  const std::size_t ncc = static_cast<std::size_t>(wp.cond_nconsts), nbc = static_cast<std::size_t>(wp.body_nconsts);
  std::vector<Value> operands(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(ncc + nbc));
  const std::vector<BDim> kdims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(ncc + nbc));
  for (std::size_t k = ncc + nbc; k < x.size(); ++k) operands.push_back(to_front(x[k], dims[k], size));
  const auto run = [&](const std::vector<Value>& ops) {
    const std::vector<Value> ccs(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(ncc));
    const std::vector<Value> bcs(ops.begin() + static_cast<std::ptrdiff_t>(ncc),
                                 ops.begin() + static_cast<std::ptrdiff_t>(ncc + nbc));
    const std::vector<BDim> cd(kdims.begin(), kdims.begin() + static_cast<std::ptrdiff_t>(ncc));
    const std::vector<BDim> bd(kdims.begin() + static_cast<std::ptrdiff_t>(ncc), kdims.end());
    // Each lane's predicate: bool[size] (batched) or bool[] (the same for all).
    auto lane_pred = [&](const std::vector<Value>& carried) {
      std::vector<Value> in = ccs;
      std::vector<BDim> d = cd;
      for (const Value& c : carried) {
        in.push_back(c);
        d.push_back(0);
      }
      const BatchOut o = batch_eval(*wp.cond_jaxpr, {}, in, d);
      return std::pair{o.values.at(0), o.dims.at(0)};
    };
    auto cond = [&](const std::vector<Value>& carried) {
      const auto [p, d] = lane_pred(carried);
      if (!d) return std::vector<Value>{p};
      return std::vector<Value>{bind1(Prim::reduce_or, {p}, ReduceParams{{*d}})};  // any lane still running
    };
    auto body = [&](const std::vector<Value>& carried) {
      std::vector<Value> in = bcs;
      std::vector<BDim> d = bd;
      for (const Value& c : carried) {
        in.push_back(c);
        d.push_back(0);
      }
      const auto [p, pd] = lane_pred(carried);
      if (!pd) return all_front(*wp.body_jaxpr, in, d, size);  // every lane runs this iteration
      const Value running = to_front(p, pd, size);
      std::vector<Value> next;
      {
        const ActiveLanes active(running);  // a finished lane's iteration is discarded: no fault there
        next = all_front(*wp.body_jaxpr, in, d, size);
      }
      for (std::size_t k = 0; k < next.size(); ++k) next[k] = lane_select(running, next[k], carried[k]);
      return next;
    };
    LoopOptions opts;
    opts.preserve_dimensions = true;  // nimplicit == 0: as for_rule's
    const std::vector<Value> carried(ops.begin() + static_cast<std::ptrdiff_t>(ncc + nbc), ops.end());
    return bind_while_loop(carried, cond, body, opts);
  };
  const std::vector<Value> outs = staged_or_run(operands, run);
  return {outs, std::vector<BDim>(outs.size(), BDim{0})};
}

BatchOut cond_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const CondParams& cp) {
  if (cp.nimplicit_outputs != 0) unsupported(Prim::cond, "its results have dynamic sizes (nimplicit_outputs > 0)");
  const Dim size = batch_size(x, dims);
  const std::vector<Value> in(x.begin() + 1, x.end());
  const std::vector<BDim> d(dims.begin() + 1, dims.end());
  if (dims[0]) {
    // A predicate per lane: every branch runs; each lane takes its branch's
    // results (JAX's _cond_batching_rule with a batched index: select_n).
    // Branch b runs with the lanes that take it active (ActiveLanes): a fault
    // of a branch a lane does not take is not raised (seed 49564).
    const Value pred = to_front(x[0], dims[0], size);
    std::vector<Value> takes;  // bool[size]: the lanes that take branch b
    if (!cp.indexed) {
      takes = {pred, bind1(Prim::not_, {pred})};
    } else {
      const Value i = pred.dtype() == DType::i32 ? pred : bind1(Prim::convert_element_type, {pred}, ConvertParams{DType::i32, false});
      for (std::size_t b = 0; b < cp.branches.size(); ++b)
        takes.push_back(bind1(Prim::eq, {i, scalar_value(Scalar::of<std::int32_t>(static_cast<std::int32_t>(b)), false)}));
    }
    std::vector<std::vector<Value>> outs;
    for (std::size_t b = 0; b < cp.branches.size(); ++b) {
      const ActiveLanes active(takes[b]);
      outs.push_back(all_front(*cp.branches[b], in, d, size));
    }
    std::vector<Value> r = outs.back();  // branches[N-1] (bind_switch clamped the index)
    for (std::size_t b = outs.size() - 1; b-- > 0;)
      for (std::size_t k = 0; k < r.size(); ++k) r[k] = lane_select(takes[b], outs[b][k], r[k]);
    return {r, std::vector<BDim>(r.size(), BDim{0})};
  }
  // The unbatched operands are captured by the branches, as the loop rules
  // capture their constants, rather than passed: a branch argument is a new
  // value, so an i64[] operand that is a dimension (n of arange(n), the size
  // of another operand) would lose that dimension in the branch, and
  // broadcast_in_dim(.., shape=(n,)) would no longer match an operand of
  // size n (dynstage_fuzz seeds 82044, 38036).
  std::vector<Value> operands{x[0]};
  for (std::size_t k = 0; k < in.size(); ++k)
    if (d[k]) operands.push_back(in[k]);
  const auto run = [&](const std::vector<Value>& ops) {
    const std::vector<Value> args(ops.begin() + 1, ops.end());
    // A concrete captured operand is staged in the branch (a constvar, or a
    // scalar converted in place), never folded: a branch that is not taken
    // must not fault while it is traced (seed 51036: pow(0, -3) in a switch_
    // branch whose index is a constant 0).
    const auto captured = [](const Value& v) {
      TraceState* t = current_trace();
      if (v.is_tracer() || !t) return v;
      const Value l = t->lift(v);
      return l.is_tracer() ? l : bind1(Prim::convert_element_type, {v}, ConvertParams{v.dtype(), false}, true);
    };
    const auto full = [&](const std::vector<Value>& a) {  // the branch's operands: captured and passed
      std::vector<Value> r;
      std::size_t next = 0;
      for (std::size_t k = 0; k < in.size(); ++k) r.push_back(d[k] ? a.at(next++) : captured(in[k]));
      return r;
    };
    std::vector<std::function<std::vector<Value>(const std::vector<Value>&)>> fns;
    for (const auto& b : cp.branches)
      fns.emplace_back([&, b](const std::vector<Value>& a) { return all_front(*b, full(a), d, size); });
    std::vector<NestedFn> nfs(fns.begin(), fns.end());
    if (!cp.indexed) return bind_cond(ops[0], args, nfs[0], nfs[1]);
    return bind_switch(ops[0], args, nfs);
  };
  const std::vector<Value> outs = staged_or_run(operands, run);
  return {outs, std::vector<BDim>(outs.size(), BDim{0})};
}

// A scan whose dynamic length differs per lane (reverse mode's scans of a
// while loop's count, batched): it runs the longest lane's count of
// iterations, over the row index t as an extra xs; a lane is active while
// t < its length (in either direction: a reversed scan's lane starts once
// t is below its length), and an inactive lane keeps its carry and emits
// rows of zeros, so its buffers hold its own rows first, then zeros.
BatchOut scan_ragged_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const ScanParams& sp,
                          const Dim& size) {
  const std::size_t nc = static_cast<std::size_t>(sp.num_consts), ncar = static_cast<std::size_t>(sp.num_carry);
  std::vector<Value> operands(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nc));
  const std::vector<BDim> cdims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(nc));
  for (std::size_t k = nc; k < nc + ncar; ++k) operands.push_back(to_front(x[k], dims[k], size));
  std::vector<BDim> xdims;
  for (std::size_t k = nc + ncar; k + 1 < x.size(); ++k) {
    operands.push_back(dims[k] ? moveaxis(x[k], *dims[k], 1) : x[k]);
    xdims.push_back(dims[k] ? BDim{0} : BDim{});
  }
  operands.push_back(to_front(x.back(), dims.back(), size));
  std::size_t ncarry = ncar;
  const auto run = [&](const std::vector<Value>& ops) {
    const std::vector<Value> cs(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(nc));
    const std::vector<Value> init(ops.begin() + static_cast<std::ptrdiff_t>(nc),
                                  ops.begin() + static_cast<std::ptrdiff_t>(nc + ncar));
    std::vector<Value> xs(ops.begin() + static_cast<std::ptrdiff_t>(nc + ncar), ops.end() - 1);
    const Value lengths = ops.back();
    // The longest lane's length: the xs' rows when there are xs (a reversed
    // scan over the buffers a forward one made), else computed.
    const Dim n = !xs.empty() ? xs[0].shape()[0] : dim_of(bind1(Prim::reduce_max, {lengths}, ReduceParams{{0}}), "vmap");
    xs.push_back(iota(DType::i64, Shape{n}, 0, current_trace() != nullptr));
    auto body = [&](const std::vector<Value>& args) {  // carry, x, t
      std::vector<Value> in = cs;
      std::vector<BDim> d = cdims;
      for (std::size_t k = 0; k + 1 < args.size(); ++k) {
        in.push_back(args[k]);
        d.push_back(k < ncar ? BDim{0} : xdims[k - ncar]);
      }
      const Value active = bind1(Prim::lt, {args.back(), lengths});
      std::vector<Value> outs;
      {
        const ActiveLanes lanes(active);  // an inactive lane's iteration is discarded: no fault there
        outs = all_front(*sp.jaxpr, in, d, size);
      }
      for (std::size_t k = 0; k < outs.size(); ++k)
        outs[k] = lane_select(active, outs[k],
                               k < ncar ? args[k]
                                        : full(outs[k].shape(), scalar_value(Scalar::of<std::int64_t>(0), true),
                                               outs[k].dtype(), current_trace() != nullptr));
      return outs;
    };
    return bind_scan(init, xs, n, sp.reverse, body, ncarry);
  };
  const std::vector<Value> outs = staged_or_run(operands, run);
  std::vector<BDim> od(outs.size(), BDim{1});
  for (std::size_t k = 0; k < ncar; ++k) od[k] = 0;
  return {outs, od};
}

BatchOut scan_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const ScanParams& sp) {
  const Dim size = batch_size(x, dims);
  const std::size_t nc = static_cast<std::size_t>(sp.num_consts), ncar = static_cast<std::size_t>(sp.num_carry);
  const std::size_t nxs = x.size() - nc - ncar - (sp.length < 0 ? 1 : 0);
  if (sp.length < 0 && dims.back()) return scan_ragged_rule(x, dims, sp, size);
  std::vector<Value> operands(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(nc));
  const std::vector<BDim> cdims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(nc));
  for (std::size_t k = nc; k < nc + ncar; ++k) operands.push_back(to_front(x[k], dims[k], size));
  std::vector<BDim> xdims;  // a batched xs at axis 1, its rows batched at 0
  for (std::size_t k = nc + ncar; k < nc + ncar + nxs; ++k) {
    operands.push_back(dims[k] ? moveaxis(x[k], *dims[k], 1) : x[k]);
    xdims.push_back(dims[k] ? BDim{0} : BDim{});
  }
  const Dim length = sp.length < 0 ? x.back().aval().dim_value.value_or(Dim(0)) : Dim(sp.length);
  std::size_t ncarry = ncar;
  const auto run = [&](const std::vector<Value>& ops) {
    const std::vector<Value> cs(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(nc));
    const std::vector<Value> init(ops.begin() + static_cast<std::ptrdiff_t>(nc),
                                  ops.begin() + static_cast<std::ptrdiff_t>(nc + ncar));
    const std::vector<Value> xs(ops.begin() + static_cast<std::ptrdiff_t>(nc + ncar), ops.end());
    auto body = [&](const std::vector<Value>& args) {  // carry, x
      std::vector<Value> in = cs;
      std::vector<BDim> d = cdims;
      for (std::size_t k = 0; k < args.size(); ++k) {
        in.push_back(args[k]);
        d.push_back(k < ncar ? BDim{0} : xdims[k - ncar]);
      }
      return all_front(*sp.jaxpr, in, d, size);
    };
    Dim n = length;
    if (!xs.empty()) n = xs[0].shape()[0];
    return bind_scan(init, xs, n, sp.reverse, body, ncarry);
  };
  const std::vector<Value> outs = staged_or_run(operands, run);
  std::vector<BDim> od(outs.size(), BDim{1});
  for (std::size_t k = 0; k < ncar; ++k) od[k] = 0;
  return {outs, od};
}

// checkpoint: a checkpoint of the batched body, every result batched at 0
// (JAX's remat batching rule).
BatchOut checkpoint_rule(const std::vector<Value>& x, const std::vector<BDim>& dims, const CheckpointParams& cp) {
  const Dim size = batch_size(x, dims);
  const auto run = [&](const std::vector<Value>& ops) {
    return bind_checkpoint(ops, [&](const std::vector<Value>& a) { return all_front(*cp.jaxpr, a, dims, size); }, cp);
  };
  const std::vector<Value> outs = staged_or_run(x, run);
  return {outs, std::vector<BDim>(outs.size(), BDim{0})};
}

}  // namespace batch_detail

BatchOut batch_control(Prim p, const std::vector<Value>& x, const std::vector<BDim>& dims, const Params& params) {
  using namespace batch_detail;
  switch (p) {
    case Prim::for_loop: return for_rule(x, dims, std::get<ForLoopParams>(params));
    case Prim::while_loop: return while_rule(x, dims, std::get<WhileLoopParams>(params));
    case Prim::cond: return cond_rule(x, dims, std::get<CondParams>(params));
    case Prim::scan: return scan_rule(x, dims, std::get<ScanParams>(params));
    case Prim::checkpoint: return checkpoint_rule(x, dims, std::get<CheckpointParams>(params));
    default: internal_error("vmap: batch_control of " + std::string(prim_name(p)));
  }
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
