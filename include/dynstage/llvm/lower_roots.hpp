// dynstage: materialisation points: the loop nest of every root.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). emit_root and the nests of the roots
// that are not one flat elementwise loop: row groups (fusion rule 4),
// reductions, window writes (concatenate, dynamic_update_slice), dot_general.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lower.hpp"
#include "stream.hpp"
#include "lower_parallel.hpp"

namespace dyn::detail::llvmjit {

// ---------------------------------------------------------------------------
// Materialisation points.

inline void Lowering::emit_root(std::size_t ei) {
  const Eqn& e = j_.eqns[ei];
  const int v = e.outputs[0];
  llvm::Value* out = buf_[static_cast<std::size_t>(v)];
  const Dims dims = dims_of(v);
  switch (prim_kind(e.prim)) {
    case Kind::reduction:
      if (e.prim == Prim::argmax || e.prim == Prim::argmin) return emit_arg_reduction(e, out);
      if (e.prim == Prim::segment_sum_offsets) return emit_segment_sum(e, out);  // lower_scatter.hpp
      emit_reduction(e, out);
      return;
    case Kind::cumulative: emit_cumulative(e, out); return;
    case Kind::scatter: emit_scatter(e, out); return;
    case Kind::sort: emit_sort(e); return;  // writes every output
    case Kind::fft: emit_fft(e, out); return;  // a call of dynstage_fft (lower_fft.hpp)
    case Kind::contraction: emit_dot(e, out); return;
    case Kind::control: internal_error("LLVM lowering: a control equation reached emit_root");
    case Kind::effect: internal_error("LLVM lowering: an effect reached emit_root (emit_debug_print)");
    case Kind::collective: emit_collective(e, out); return;  // a call on the calling thread
    case Kind::structural:
      // The layout primitives that are never fused write windows.
      if (!is_fusible(e.prim)) return emit_window_root(e, out);
      [[fallthrough]];
    case Kind::unary:
    case Kind::binary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert: {
      if (emit_parallel_elementwise(e, out)) return;
      const DType od = type(v).dtype;
      nest(dims, flat_root(e), [&](Ix& ix) { E.store(out, od, lin(ix), fused(e, ix)); });
      return;
    }
  }
}

// Whether a fusible root's nest can be one flat loop (no multi-index needed).
inline bool Lowering::flat_root(const Eqn& e) {
  if (!is_fusible(e.prim))
    internal_error("LLVM lowering: flat_root of " + std::string(prim_name(e.prim)) + ", which is not fused");
  if (is_layout(e.prim) && index_map(j_, e).form != IndexMap::Form::linear) return false;
  bool flat = true;
  for (std::size_t i = 0; i < num_data_inputs(e); ++i) flat = flat && !needs_multi(e.inputs[i]);
  return flat;
}

// What root output v's nest writes, `written` elements, as stream.hpp's
// emit_streamed_range counts it: 0 (never streamed) when v is a result of
// the kernel itself in a buffer of its own. There the measurements disagree
// (a new 80 MB f64 result, one call after another, 21 calls: `a * b + a`
// 15% faster on two threads, `a * 2` 15% slower on one), so results keep
// plain stores until that is understood; loop state, temporaries and reused
// buffers stream (the heat equation's step: 9%).
inline llvm::Value* Lowering::stream_total(int v, llvm::Value* written) {
  if (nested_body_ || plan_.reuse[static_cast<std::size_t>(v)] >= 0) return written;
  for (const Atom& a : j_.outvars)
    if (a.is_var() && a.var == v) return E.c64(0);
  return written;
}

// Fusion rule 4: one loop over the rows of the group's row axes; per row,
// each member's nest over that row, in order. One-row buffers start at
// row * (their row length) in the linear index space (rowoff_).
inline void Lowering::emit_group(const RowGroup& g) {
  if (emit_parallel_group(g)) return;
  const std::size_t t = g.row_dims.size();
  const Dims rows = dims_of(Type{DType::i64, g.row_dims, false});
  std::vector<llvm::Value*> multi(t);
  loops(rows, 0, t, multi, E.c64(0), [&](llvm::Value* l) { emit_group_row(g, Row{multi, l}); });
  for (int ei : g.members) rowoff_[static_cast<std::size_t>(j_.eqns[static_cast<std::size_t>(ei)].outputs[0])] = nullptr;
}

// One row of a row group: each member's nest over that row, in order.
inline void Lowering::emit_group_row(const RowGroup& g, const Row& row) {
  const std::size_t t = g.row_dims.size();
  for (int ei : g.members) {
    const int v = j_.eqns[static_cast<std::size_t>(ei)].outputs[0];
    if (plan_.row_local[static_cast<std::size_t>(v)])
      rowoff_[static_cast<std::size_t>(v)] = b.CreateMul(row.lin, numel(dims_of(v), t), "", true, true);
  }
  for (int ei : g.members) {
    const Eqn& e = j_.eqns[static_cast<std::size_t>(ei)];
    llvm::Value* out = buf_[static_cast<std::size_t>(e.outputs[0])];
    if (prim_kind(e.prim) == Kind::reduction) emit_reduction(e, out, &row);
    else emit_row_elementwise(e, out, row);
  }
}

// A fusible member's nest over one row: flat over the row's linear index
// when no multi-index is needed or the row has one axis, else nested loops.
inline void Lowering::emit_row_elementwise(const Eqn& e, llvm::Value* out, const Row& row) {
  const int v = e.outputs[0];
  const Dims dims = dims_of(v);
  const std::size_t t = row.multi.size();
  const std::size_t inner_rank = dims.size() - t;
  llvm::Value* n = numel(dims, t);
  const DType od = type(v).dtype;
  llvm::Value* base = b.CreateMul(row.lin, n, "", true, true);
  if (inner_rank <= 1 || flat_root(e)) {
    E.loop(n, [&](llvm::Value* i) {
      Ix& ix = body_ix(dims, {}, b.CreateAdd(base, i, "", true, true));
      ix.prefix = row.multi;
      ix.inner_lin = i;
      E.store(out, od, local(v, ix.lin), fused(e, ix));
    });
    return;
  }
  std::vector<llvm::Value*> multi = row.multi;
  multi.resize(dims.size());
  loops(dims, t, dims.size(), multi, row.lin, [&](llvm::Value* l) {
    Ix& ix = body_ix(dims, multi, l);
    E.store(out, od, local(v, l), fused(e, ix));
  });
}

// acc + v for a float sum whose order is free: a product v = a * b just
// computed for this sum (no other use) becomes llvm.fmuladd(a, b, acc), one
// rounding instead of two; reassoc lets the vectoriser keep partial sums.
inline llvm::Value* Lowering::accumulate_sum(llvm::Value* acc, llvm::Value* v) {
  auto* m = llvm::dyn_cast<llvm::BinaryOperator>(v);
  if (m && m->getOpcode() == llvm::Instruction::FMul && m->use_empty()) {
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {v->getType()}, {m->getOperand(0), m->getOperand(1), acc});
    for (auto it = memo_.begin(); it != memo_.end();) it = it->second == m ? memo_.erase(it) : std::next(it);
    m->eraseFromParent();
    Emitter::contract(r);
    return Emitter::reassoc(r);
  }
  return Emitter::reassoc(b.CreateFAdd(acc, v));
}

// Reductions iterate the operand in row-major order. The innermost run of
// reduced axes accumulates in a register (float sum/prod reassociable there
// only, so it vectorises); reduced axes further out combine into the output
// element, which then behaves like an elementwise update and vectorises over
// the kept inner axes.
inline void Lowering::emit_reduction(const Eqn& e, llvm::Value* out, const Row* row) {
  const Atom& x = e.inputs[0];
  const DType d = dtype_of(x);
  const bool fl = is_float(d);
  const Dims xd = x.is_var() ? dims_of(x.var) : Dims{};
  const auto& axes = std::get<ReduceParams>(e.params).axes;  // (argmax/argmin: emit_arg_reduction)
  auto reduced = [&](std::size_t a) {
    return std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) != axes.end();
  };
  const Prim p = e.prim;
  auto identity = [&]() -> llvm::Value* {
    switch (d) {
      case DType::bool_: return b.getInt1(p == Prim::reduce_min || p == Prim::reduce_prod || p == Prim::reduce_and);
      case DType::i8:
      case DType::i16:
      case DType::i32:
      case DType::i64:
      case DType::u8:
      case DType::u16:
      case DType::u32:
      case DType::u64: {
        const auto bits = static_cast<unsigned>(dtype_bits(d));
        const bool sg = is_signed_integer(d);
        llvm::Type* t = E.reg_type(d);
        if (p == Prim::reduce_max)
          return llvm::ConstantInt::get(t, sg ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits));
        if (p == Prim::reduce_min)
          return llvm::ConstantInt::get(t, sg ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits));
        if (p == Prim::reduce_and) return llvm::ConstantInt::get(t, llvm::APInt::getAllOnes(bits));
        return llvm::ConstantInt::get(t, p == Prim::reduce_prod ? 1 : 0);
      }
      case DType::f32:
      case DType::f64: {
        llvm::Type* t = E.reg_type(d);
        if (p == Prim::reduce_max) return llvm::ConstantFP::getInfinity(t, true);
        if (p == Prim::reduce_min) return llvm::ConstantFP::getInfinity(t, false);
        return llvm::ConstantFP::get(t, p == Prim::reduce_prod ? 1.0 : 0.0);
      }
      case DType::c64:
      case DType::c128: return E.constant(d, p == Prim::reduce_prod ? 1.0 : 0.0, 0, 0.0);  // sum, prod only
    }
    return nullptr;
  };
  auto combine = [&](llvm::Value* acc, llvm::Value* v, bool may_reassoc) -> llvm::Value* {
    if (d == DType::bool_) {
      const bool is_or = p == Prim::reduce_max || p == Prim::reduce_sum || p == Prim::reduce_or;
      return is_or ? b.CreateOr(acc, v) : b.CreateAnd(acc, v);
    }
    if (is_complex(d)) {
      // reduce_sum, reduce_prod (the dtype rules refuse the others): in
      // loop order, as eager; the product is complex_mul
      if (p == Prim::reduce_prod) return complex_mul(d, acc, v);
      return E.make_complex(d, b.CreateFAdd(E.re(acc), E.re(v)), b.CreateFAdd(E.im(acc), E.im(v)));
    }
    switch (p) {
      case Prim::reduce_sum: {
        if (!fl) return b.CreateAdd(acc, v);
        if (may_reassoc) return accumulate_sum(acc, v);
        return b.CreateFAdd(acc, v);
      }
      case Prim::reduce_prod:
        // Never reassociable: `reassoc` on the accumulator lets LLVM fold
        // pow(a, y) * pow(b, y) into pow(a * b, y), finite for negative a, b
        // where eager's product is NaN (found by dynstage_fuzz). Float
        // products are multiplied in loop order, and do not vectorise.
        return fl ? b.CreateFMul(acc, v) : b.CreateMul(acc, v);
      case Prim::reduce_max:
        return b.CreateBinaryIntrinsic(fl                        ? llvm::Intrinsic::maximum
                                       : is_unsigned_integer(d) ? llvm::Intrinsic::umax
                                                                : llvm::Intrinsic::smax,
                                       acc, v);
      case Prim::reduce_min:
        return b.CreateBinaryIntrinsic(fl                        ? llvm::Intrinsic::minimum
                                       : is_unsigned_integer(d) ? llvm::Intrinsic::umin
                                                                : llvm::Intrinsic::smin,
                                       acc, v);
      case Prim::reduce_or: return b.CreateOr(acc, v);  // integers: bitwise, as lax
      case Prim::reduce_and: return b.CreateAnd(acc, v);
      case Prim::argmax:
      case Prim::argmin:               // emit_arg_reduction
      case Prim::segment_sum_offsets: break;  // emit_segment_sum
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
    }
    internal_error("emit_reduction: " + std::string(prim_name(p)) + " is not a reduction");
  };

  const std::size_t r = xd.size();
  llvm::Value* xn = numel(xd);
  llvm::Value* on = numel(dims_of(e.outputs[0]));
  // Empty operand: the identity everywhere (never in a row group). With
  // runtime dimensions the nests below give the same for an empty operand.
  if (Emitter::is_k(xn, 0)) {
    E.loop(on, [&](llvm::Value* i) { E.store(out, d, i, identity()); });
    return;
  }
  // Axes [t, r): the innermost run of reduced (or size-1) axes.
  std::size_t t = r;
  while (t > 0 && (reduced(t - 1) || unit(xd[t - 1]))) --t;
  // (A runtime dimension counts as > 1: the output is then initialised to
  // the identity and combined into, which is right for any size. So does a
  // reduced axis of size 0: its loop never runs, and only that initialisation
  // writes the output. The empty-operand case above misses it when another
  // axis is a runtime dimension: dynstage_fuzz found sum(f64[0,n], {0}) giving
  // uninitialised memory.)
  bool outer_reduced = false;
  for (std::size_t a = 0; a < t; ++a) {
    const auto k = Emitter::konst(xd[a]);
    outer_reduced = outer_reduced || (reduced(a) && (!k || *k != 1));
  }
  llvm::Value* inner_n = numel(xd, t);
  // Output strides of the outer axes (0 where reduced).
  Dims ostride(t, E.c64(0));
  {
    llvm::Value* acc_ = E.c64(1);
    for (std::size_t a = r; a-- > 0;)
      if (!reduced(a)) {
        if (a < t) ostride[a] = acc_;
        acc_ = E.mul(acc_, xd[a]);
      }
  }
  if (outer_reduced) E.loop(on, [&](llvm::Value* i) { E.store(out, d, i, identity()); });
  const bool flat_inner = !needs_multi(x);
  llvm::Value* run = flat_inner ? inner_n : xd.empty() ? E.c64(1) : xd.back();  // the innermost loop's trip count
  // A run of runtime length interleaves 8 accumulators (runtime dimensions
  // stand for data sizes), 4 inside a row group (rows are usually short).
  const auto run_k = Emitter::konst(run);
  const LoopHint inner_hint = calls_transcendental(x) ? LoopHint::normal
                              : run_k ? (*run_k < kLongReduction ? LoopHint::reduction : LoopHint::long_reduction)
                              : row   ? LoopHint::reduction
                                      : LoopHint::long_reduction;
  llvm::AllocaInst* acc = nullptr;  // the accumulator: an alloca of the function the loop is in (below)

  std::vector<llvm::Value*> multi(r, nullptr);
  auto body = [&](llvm::Value* outer_lin, llvm::Value* olin) {
    // Inner reduction of inner_n elements starting at linear index outer_lin * inner_n.
    llvm::Value* base = b.CreateMul(outer_lin, inner_n, "", true, true);
    auto element = [&](Ix& ix) { return operand(x, ix); };
    llvm::Value* result;
    if (unit(inner_n)) {
      Ix& ix = body_ix(xd, {}, base);
      if (!multi.empty() && multi[0]) {
        ix.multi = multi;
        for (std::size_t a = t; a < r; ++a) ix.multi[a] = E.c64(0);
      }
      // Eager folds even a single element into the identity: a float sum
      // of -0.0 over only size-1 axes is 0.0 + -0.0 = +0.0.
      result = combine(outer_reduced ? E.load(out, d, olin) : identity(), element(ix), false);
      E.store(out, d, olin, result);
      return;
    }
    b.CreateStore(identity(), acc);
    auto accumulate = [&](Ix& ix) { b.CreateStore(combine(b.CreateLoad(E.reg_type(d), acc), element(ix), true), acc); };
    if (flat_inner)
      E.loop(inner_n, [&](llvm::Value* i) { accumulate(body_ix(xd, {}, b.CreateAdd(base, i, "", true, true))); }, inner_hint);
    else
      loops(xd, t, r, multi, outer_lin, [&](llvm::Value* l) { accumulate(body_ix(xd, multi, l)); }, inner_hint);
    result = b.CreateLoad(E.reg_type(d), acc);
    if (outer_reduced) result = combine(E.load(out, d, olin), result, false);
    E.store(out, d, olin, result);
  };
  // Outer axes [0, t): the operand's outer linear index, and the output's
  // linear index from the kept axes.
  auto outer = [&](llvm::Value* l) {
    llvm::Value* o = E.c64(0);
    for (std::size_t a = 0; a < t; ++a)
      if (!Emitter::is_k(ostride[a], 0)) o = b.CreateAdd(o, b.CreateMul(multi[a], ostride[a], "", true, true), "", true, true);
    body(l, o);
  };
  if (!x.is_var()) {  // reduction of a literal scalar (folded into the identity, as above)
    E.store(out, d, E.c64(0), combine(identity(), E.constant(x.lit.dtype, x.lit.f, x.lit.i, x.lit.fi), false));
    return;
  }
  // On every core (lower_parallel.hpp) when the work is large: float
  // products keep their loop order (never reassociated, above), so they stay
  // sequential. A run of one value: per-task partials combined in task
  // order; whole output rows a task when one outer axis is kept.
  const bool order_free = !(fl && p == Prim::reduce_prod);
  const std::int64_t per = task_elems({x});
  if (!row && order_free && !unit(inner_n) && worth_parallel(xn, per)) {
    if (t == 0 && flat_inner) {
      llvm::Value* ntasks = task_count(E, inner_n, per);
      llvm::Value* partial = E.temp(bytes_of(Dims{ntasks}, d));
      parallel_tasks(inner_n, E.c64(per), [&](llvm::Value* task, llvm::Value* begin, llvm::Value* end) {
        acc = E.entry_alloca(E.reg_type(d));
        b.CreateStore(identity(), acc);
        E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
          Ix& ix = body_ix(xd, {}, b.CreateAdd(begin, i, "", true, true));
          b.CreateStore(combine(b.CreateLoad(E.reg_type(d), acc), operand(x, ix), true), acc);
        }, inner_hint);
        E.store(partial, d, task, b.CreateLoad(E.reg_type(d), acc));
      });
      acc = E.entry_alloca(E.reg_type(d));
      b.CreateStore(identity(), acc);
      E.loop(ntasks, [&](llvm::Value* k) {
        b.CreateStore(combine(b.CreateLoad(E.reg_type(d), acc), E.load(partial, d, k), false), acc);
      }, LoopHint::plain);
      E.store(out, d, E.c64(0), b.CreateLoad(E.reg_type(d), acc));
      E.release(partial);
      return;
    }
    if (t == 1 && !outer_reduced) {
      parallel_tasks(xd[0], rows_per_task(inner_n, per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) {
        acc = E.entry_alloca(E.reg_type(d));
        E.loop(b.CreateSub(end, begin), [&](llvm::Value* i) {
          multi[0] = b.CreateAdd(begin, i, "", true, true);
          body(multi[0], multi[0]);
        });
      });
      return;
    }
  }
  acc = E.entry_alloca(E.reg_type(d));
  if (row) {
    // One row of a row group: the reduced axes are exactly the trailing ones
    // after the row axes (axes in [t, row axes) have size 1), so the
    // operand's outer linear index and the output's index are the row's.
    if (outer_reduced) internal_error("emit_reduction: a row group member reduces a row axis");
    for (std::size_t a = 0; a < t; ++a) multi[a] = row->multi[a];
    body(row->lin, local(e.outputs[0], row->lin));
    return;
  }
  loops(xd, 0, t, multi, E.c64(0), outer);
}

inline bool Lowering::through_reshapes_to_buffer(const Atom& a) {
  int v = a.var;
  while (!buf_[static_cast<std::size_t>(v)]) {
    if (plan_.materialised[static_cast<std::size_t>(v)] || plan_.def[static_cast<std::size_t>(v)] < 0) return false;
    const Eqn& d = def_eqn(v);
    if (!dot_reads_through(j_, d)) return false;
    v = d.inputs[0].var;
  }
  return true;
}

// The buffer a product reads for operand `a`, through reshapes and
// contiguous slices (canonicalize.hpp, dot_reads_through): a slice moves
// the start by its row-major offset.
inline llvm::Value* Lowering::buffer_through_reshapes(const Atom& a) {
  int v = a.var;
  std::vector<llvm::Value*> offsets;
  while (!buf_[static_cast<std::size_t>(v)]) {
    const Eqn& d = def_eqn(v);
    if (!dot_reads_through(j_, d)) internal_error("LLVM lowering: dot_general operand is not a buffer");
    v = d.inputs[0].var;
    if (d.prim != Prim::slice) continue;
    const auto& starts = std::get<SliceParams>(d.params).start_indices;
    const Dims xd = dims_of(v);
    llvm::Value* off = E.c64(0);
    llvm::Value* stride = E.c64(1);
    for (std::size_t i = xd.size(); i-- > 0;) {
      off = b.CreateAdd(off, E.mul(stride, E.c64(starts[i])), "", true, true);
      stride = E.mul(stride, xd[i]);
    }
    offsets.push_back(off);
  }
  llvm::Value* p = buf_[static_cast<std::size_t>(v)];
  const DType dt = type(v).dtype;
  // (Not inbounds: an empty slice may start past the end.)
  for (llvm::Value* off : offsets) p = b.CreateGEP(E.mem_type(dt), p, off);
  return p;
}

inline void Lowering::emit_dot(const Eqn& e, llvm::Value* out) {
  const auto& p = std::get<DotGeneralParams>(e.params);
  if (!is_canonical_dot(p)) internal_error("LLVM lowering: dot_general not canonicalised");
  const Dims ld = dims_of(e.inputs[0].var), rd = dims_of(e.inputs[1].var);
  const bool ta = dot_lhs_transposed(p), tb = dot_rhs_transposed(p);  // (B,K,M) / (B,N,K)
  DotShape s{ld[0], ld[ta ? 2 : 1], ld[ta ? 1 : 2], rd[tb ? 1 : 2], ta, tb};
  if (dot_fuses_lhs(j_, e) && !plan_.materialised[static_cast<std::size_t>(e.inputs[0].var)] &&
      !through_reshapes_to_buffer(e.inputs[0])) {
    // The lhs is a fused expression (fusion.hpp, dot_fuses_lhs): the matvec
    // nest evaluates it at each (row, k) it reads, with a fresh index.
    const DType d = type(e.outputs[0]).dtype;
    if (ta) {  // stored (B,K,M): an axpy per stored row, the element at its linear index
      emit_matvec_t_of(E, d, s, [&](llvm::Value* linear) { return operand(e.inputs[0], body_ix(ld, {}, linear)); },
                       buffer_through_reshapes(e.inputs[1]), out);
      return;
    }
    emit_matvec_of(E, d, s, [&](llvm::Value*, llvm::Value* arow, llvm::Value* k) {
      Ix& ix = body_ix(ld, {}, b.CreateAdd(arow, k, "", true, true));
      return operand(e.inputs[0], ix);
    }, buffer_through_reshapes(e.inputs[1]), out);
    return;
  }
  // Fused operands and an epilogue of the blocked GEMM (fusion_gemm.hpp).
  const std::size_t ei = static_cast<std::size_t>(&e - j_.eqns.data());
  const bool fa = !through_reshapes_to_buffer(e.inputs[0]), fb = !through_reshapes_to_buffer(e.inputs[1]);
  const int epi = epilogue_root(ei);
  if (fa || fb || epi >= 0) return emit_fused_dot(e, s, out, fa, fb, epi);
  emit_matmul(E, type(e.outputs[0]).dtype, s, buffer_through_reshapes(e.inputs[0]),
              buffer_through_reshapes(e.inputs[1]), out);
}

// A product with fused operands (fa, fb) and/or an epilogue root (epi >= 0):
// the blocked GEMM with the kernel's packing and epilogue functions
// (lower_gemm_fusion.hpp) when it runs; when it does not (runtime sizes
// too small at run time) the fused operands are materialised, the product
// runs as any other and the epilogue root's nest follows it.
inline void Lowering::emit_fused_dot(const Eqn& e, const DotShape& s, llvm::Value* out, bool fa, bool fb, int epi) {
  const DType d = type(e.outputs[0]).dtype;
  const Dims ld = dims_of(e.inputs[0].var), rd = dims_of(e.inputs[1].var);
  llvm::Value* null = llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(E.ptr));
  llvm::Value* A = fa ? null : buffer_through_reshapes(e.inputs[0]);
  llvm::Value* Bm = fb ? null : buffer_through_reshapes(e.inputs[1]);
  // The logical element (bt, row, col) of operand k, stored transposed or not.
  auto element = [&](std::size_t k, bool t) -> GemmElement {
    return [this, &e, &ld, &rd, k, t](llvm::Value* bt, llvm::Value* row, llvm::Value* col) {
      Ix& ix = body_ix(k == 0 ? ld : rd, t ? std::vector<llvm::Value*>{bt, col, row} : std::vector<llvm::Value*>{bt, row, col},
                       nullptr);
      return operand(e.inputs[k], ix);
    };
  };
  auto blocked = [&] {
    GemmEpilogue epilogue;
    if (epi >= 0)
      epilogue = [&](llvm::Value* bt, llvm::Value* ic, llvm::Value* mc, llvm::Value* jc, llvm::Value* nc) {
        const Eqn& r = j_.eqns[static_cast<std::size_t>(epi)];
        const int rv = r.outputs[0];
        llvm::Value* rout = buf_[static_cast<std::size_t>(rv)];
        const DType od = type(rv).dtype;
        const Dims od_dims = dims_of(rv);
        E.loop_dyn(mc, [&](llvm::Value* i) {
          llvm::Value* row = b.CreateAdd(ic, i, "", true, true);
          llvm::Value* rowlin = b.CreateMul(b.CreateAdd(b.CreateMul(bt, s.M, "", true, true), row, "", true, true), s.N, "", true, true);
          E.loop_dyn(nc, [&](llvm::Value* jj) {
            llvm::Value* col = b.CreateAdd(jc, jj, "", true, true);
            llvm::Value* at = b.CreateAdd(rowlin, col, "", true, true);
            std::vector<llvm::Value*> multi;  // known when the result's axes are (M, N) or (B, M, N)
            if (od_dims.size() == 2 && Emitter::is_k(s.B, 1) && od_dims[0] == s.M && od_dims[1] == s.N) multi = {row, col};
            else if (od_dims.size() == 3 && od_dims[0] == s.B && od_dims[1] == s.M && od_dims[2] == s.N) multi = {bt, row, col};
            Ix& ix = body_ix(od_dims, multi, at);
            E.store(rout, od, at, fused(r, ix));
          });
        }, LoopHint::plain);
      };
    llvm::Value* rec = gemm_fusion_record(E, d, s, fa ? element(0, s.ta) : GemmElement{}, fb ? element(1, s.tb) : GemmElement{},
                                          epilogue);
    emit_blocked(E, d, s, A, Bm, out, rec);
  };
  auto other = [&] {
    auto dense = [&](std::size_t k) {
      const Dims& dd = k == 0 ? ld : rd;
      llvm::Value* bytes = bytes_of(dd, d);
      llvm::Value* t = E.temp(bytes);
      count_copy(bytes);
      nest(dd, !needs_multi(e.inputs[k]), [&](Ix& ix) { E.store(t, d, lin(ix), operand(e.inputs[k], ix)); });
      return t;
    };
    llvm::Value* a = fa ? dense(0) : A;
    llvm::Value* bm = fb ? dense(1) : Bm;
    emit_matmul(E, d, s, a, bm, out);
    if (fb) E.release(bm);
    if (fa) E.release(a);
    if (epi >= 0) emit_root(static_cast<std::size_t>(epi));
  };
  E.either(gemm_blocked_cond(E, d, s), blocked, other);
}

inline void Lowering::copy(llvm::Value* dst, llvm::Value* src, const Type& t) {
  llvm::Value* bytes = bytes_of(dims_of(t), t.dtype);
  count_copy(bytes);
  const auto k = Emitter::konst(bytes);
  if (!k || *k > 0) b.CreateMemCpy(dst, llvm::MaybeAlign(), src, llvm::MaybeAlign(), bytes);
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
