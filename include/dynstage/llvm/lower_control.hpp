// dynstage: lowering of the control-flow primitives (for_loop, while_loop,
// cond, scan) to native loops and branches. Part of the backend implementation
// (DYNSTAGE_IMPLEMENTATION); the operand and body layouts are the ones
// written above ForLoopParams in ir/params.hpp, the semantics control_impl's in
// trace/control_bind.hpp.
//
// Every body (a loop body, a while condition, a branch) becomes an internal
// function of the module with the kernel body's conventions (one pointer per
// input, one per result; lower.hpp's Lowering emits it with its own fusion
// plan), marked alwaysinline: the loop in the parent calls it once per
// iteration and the inliner folds it in. A result of a body is either
//   - CALLER-SIZED: its dimensions are static or inputs of the body that the
//     caller knows before the call (a loop's constants, or a carried size
//     the body returns unchanged) and, for loop state, the initial value's
//     dimensions too; the caller passes the buffer; or
//   - a CELL: its size is computed inside (a carried size that changes, a
//     size computed from the index); the body allocates it and writes
//     {pointer, shape} into a cell the caller passes (backend.hpp, "Results
//     the kernel allocates"), the convention of the kernel's own results.
//
// Loop state, per carried value (implicit sizes first, then the carried
// arrays): a pointer to the current buffer. Caller-sized values are double
// buffered: two buffers allocated once before the loop, the body reads one
// and writes the other, no allocation per iteration (the first iteration
// reads the operand itself). Cells: each iteration's new buffer replaces the
// previous one, which is freed right after the body returns; the loop owns
// the current one through an alloca (Emitter::live_slots), so every early
// exit frees it. After the loop the final buffer is the output's buffer; if
// the loop ran no iteration, the operand is first copied into a buffer of
// the loop (the output must not alias an operand that may be freed first).
// A body that returns a nonzero code (a fault, out of memory) stops the
// kernel: everything owned at that point is freed and the code returned.
//
// Aliasing. A body's parameters are `noalias` (emit_body) except a loop
// body's carried inputs and caller-sized results. Within one call every
// pair of buffers is distinct (the double buffers and the operand are three
// different buffers; a cell is a fresh allocation); but iteration k's result
// buffer is iteration k+1's input. When the body is inlined, its noalias
// parameters become scoped-alias metadata whose scopes are declared (by
// llvm.experimental.noalias.scope.decl) inside the loop, valid for one
// iteration only, and LLVM 19's GVN (MemoryDependenceAnalysis; MemorySSA's
// users likewise, upstream issue llvm/llvm-project#223170) still applies it
// between a load of iteration k+1 and a store of iteration k when it
// translates a load's address across the back edge. For
// dynamic_update_slice(carry, u, {i}), GVN forwarded iteration k's copy of
// the carry to iteration k+1 past the store of the update (to the same
// buffer, "noalias" per the metadata): only the last update survived.
// So a noalias parameter must not overlap the memory the body accesses
// through anything else in ANY iteration, not only in its own call, where
// one of the two accesses writes:
//   - a loop constant or a for_loop's index: never written while the loop
//     runs (the parent's store of the index carries no scope of the body);
//     keep noalias;
//   - a cell result: a slot of the parent's frame that the body only
//     writes; keep noalias;
//   - carried inputs and caller-sized results: the same buffers across
//     iterations; no noalias;
//   - a while condition and a cond branch: they read operands and write
//     only a flag or buffers of the enclosing function that none of their
//     own inputs ever is; keep noalias. (Buffers freed and allocated again
//     at the same address are always written first by their new owner, code
//     that carries none of the function's scopes, so GVN stops there.)
// What noalias gave a loop body, its loads of the state being independent of
// its stores of the new state, comes instead from a copy: a small carried
// input (kSnapshotMaxElems, lower_body.hpp) is first copied into a buffer of the
// body's own frame, which provably overlaps nothing else (basic alias
// analysis, no metadata). Inlined, SROA turns the copy into loads at the
// body's start, the body vectorises without run-time checks, and GVN
// forwards each iteration's stores to the next iteration's loads (a must-
// alias through the swapped pointers, which needs no noalias): the state
// stays in registers.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <string>
#include <vector>

#include "lower.hpp"
#include "lower_pointwise.hpp"

namespace dyn::detail::llvmjit {

// A body as an internal function of the module (alwaysinline). `carried`:
// for a loop body, which invars are loop state ("Aliasing" above).
inline llvm::Function* Lowering::emit_nested(const Jaxpr& body, const std::vector<bool>& cells,
                                             const std::vector<bool>& carried, std::vector<int>* pairs) {
  const Jaxpr j = canonicalize_dots(body);
  BufferOwnership own;
  if (pairs) own.pair = *pairs;
  const FusionPlan plan = plan_fusion(j, own);
  if (pairs) *pairs = plan.paired;
  Emitter sub(E.mod);
  Lowering low(j, plan, sub, cells, carried);
  low.nested_body_ = true;
  llvm::Function* f = low.emit_body(name_ + ".cf" + std::to_string(nested_++));
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  return f;
}

// A pointer to the value of an operand: its buffer, or a stack slot holding
// a literal.
inline llvm::Value* Lowering::operand_ptr(const Atom& a) {
  if (a.is_var()) {
    llvm::Value* p = buf_[static_cast<std::size_t>(a.var)];
    if (!p) internal_error("LLVM lowering: a control-flow operand has no buffer");
    return p;
  }
  llvm::Value* slot = E.entry_alloca(E.mem_type(a.lit.dtype), 1, 8);
  E.store(slot, a.lit.dtype, E.c64(0), E.constant(a.lit.dtype, a.lit.f, a.lit.i, a.lit.fi));
  return slot;
}

// An integer scalar operand as i64 (loop bounds, sizes).
inline llvm::Value* Lowering::scalar_i64(const Atom& a) {
  if (!a.is_var()) return E.c64(a.lit.as<std::int64_t>());
  if (llvm::Value* d = dimval_[static_cast<std::size_t>(a.var)]) return d;
  const DType d = type(a.var).dtype;
  return convert(d, DType::i64, E.load(operand_ptr(a), d, E.c64(0)));
}

// for_loop_trip_count (control.hpp): Python's len(range(lo, hi, st)), 0 for st == 0.
inline llvm::Value* Lowering::for_trip_count(llvm::Value* lo, llvm::Value* hi, llvm::Value* st) {
  llvm::Value* zero = E.c64(0);
  llvm::Value* up = b.CreateAnd(b.CreateICmpSGT(st, zero), b.CreateICmpSLT(lo, hi));
  llvm::Value* down = b.CreateAnd(b.CreateICmpSLT(st, zero), b.CreateICmpSGT(lo, hi));
  llvm::Value* span = b.CreateSelect(up, b.CreateSub(hi, lo), b.CreateSub(lo, hi));
  llvm::Value* div = b.CreateSelect(up, st, b.CreateSelect(down, b.CreateSub(zero, st), E.c64(1)));
  llvm::Value* n = b.CreateAdd(b.CreateUDiv(b.CreateSub(span, E.c64(1)), div), E.c64(1));
  return b.CreateSelect(b.CreateOr(up, down), n, zero);
}

inline llvm::Value* Lowering::call_nested(llvm::Function* f, const std::vector<llvm::Value*>& args) {
  llvm::Value* rc = b.CreateCall(f, args);
  E.exit_if_error(rc);
  return rc;
}

inline void Lowering::emit_control(std::size_t ei, FreeAfter& free_after) {
  switch (j_.eqns[ei].prim) {
    case Prim::for_loop:
      if (is_pointwise_loop(j_, j_.eqns[ei])) return emit_pointwise_loop(ei, free_after);
      return emit_loop(ei, free_after);
    case Prim::while_loop:
    case Prim::scan: return emit_loop(ei, free_after);
    case Prim::cond: return emit_cond(ei, free_after);
    case Prim::checkpoint: internal_error("LLVM lowering: a checkpoint equation is inlined before lowering");
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("LLVM lowering: emit_control on " + std::string(prim_name(j_.eqns[ei].prim)));
}

// for_loop, while_loop and scan. A scan is a counted loop whose state is
// the carry, whose body also reads row t of each xs (a pointer into the xs
// operand) and writes row t of each ys (a pointer into the ys buffer,
// allocated once before the loop: the kernel's result buffer itself when
// the ys are a result), so no row is ever copied.
inline void Lowering::emit_loop(std::size_t ei, FreeAfter& free_after) {
  const Eqn& e = j_.eqns[ei];
  const bool is_for = e.prim == Prim::for_loop;
  const bool is_scan = e.prim == Prim::scan;
  const Jaxpr* body;
  const Jaxpr* cond_j = nullptr;
  std::size_t nc, ni, first_state;  // body constants; implicit sizes; operand index of the first state value
  std::size_t cnc = 0;              // while: the condition's constants (operands [0, cnc))
  if (is_for) {
    const auto& p = std::get<ForLoopParams>(e.params);
    body = p.body_jaxpr.get();
    nc = static_cast<std::size_t>(p.body_nconsts);
    ni = static_cast<std::size_t>(p.nimplicit);
    first_state = nc;  // implicit at [nc, nc+ni), carried after the 4 bounds
  } else if (is_scan) {
    const auto& p = std::get<ScanParams>(e.params);
    body = p.jaxpr.get();
    nc = static_cast<std::size_t>(p.num_consts);
    ni = 0;
    first_state = nc;  // consts, carry, xs[, length]
  } else {
    const auto& p = std::get<WhileLoopParams>(e.params);
    body = p.body_jaxpr.get();
    cond_j = p.cond_jaxpr.get();
    cnc = static_cast<std::size_t>(p.cond_nconsts);
    nc = static_cast<std::size_t>(p.body_nconsts);
    ni = static_cast<std::size_t>(p.nimplicit);
    first_state = cnc + nc;
  }
  const std::size_t nstate = is_scan ? static_cast<std::size_t>(std::get<ScanParams>(e.params).num_carry) : e.outputs.size();
  const std::size_t nxs = is_scan ? body->invars.size() - nc - nstate : 0;
  // Operand index of state value s, and position of its body invar.
  auto state_operand = [&](std::size_t s) { return is_for && s >= ni ? first_state + s + 4 : first_state + s; };
  auto const_operand = [&](std::size_t q) { return is_for ? q : cnc + q; };  // body constant q

  // Which state values the body resizes (cells), and the size of the
  // others from values known before the loop. A fixed size must also be the
  // operand's: after zero iterations the operand is copied into the fixed
  // buffer. (A body may return a captured array of another size than the
  // initial value, `return x` with preserve_dimensions=false: then the size
  // depends on the trip count, and the state is a cell.)
  std::vector<bool> cell(nstate, false);
  std::vector<Dims> fixed_dims(nstate);
  for (std::size_t s = 0; s < nstate; ++s) {
    const Type& t = body->type_of(body->outvars[s]);
    const Type& init_t = j_.type_of(e.inputs[state_operand(s)]);
    for (std::size_t jd = 0; jd < t.shape.size(); ++jd) {
      const JDim& d = t.shape[jd];
      if (d.is_static()) {
        fixed_dims[s].push_back(E.c64(d.value));
        continue;
      }
      const auto it = std::find(body->invars.begin(), body->invars.end(), d.var);
      const auto pos = static_cast<std::size_t>(it - body->invars.begin());
      const Atom* size = nullptr;  // the caller's operand holding the size
      if (it != body->invars.end() && pos < nc) {
        size = &e.inputs[const_operand(pos)];  // a loop constant
      } else if (it != body->invars.end() && pos >= nc && pos < nc + ni) {
        const std::size_t s2 = pos - nc;  // an implicit size: fixed if the body returns it unchanged
        const Atom& o = body->outvars[s2];
        if (o.is_var() && o.var == d.var) size = &e.inputs[state_operand(s2)];
      }
      const JDim& od = init_t.shape.at(jd);
      const bool is_operands = size && (od.is_static() ? !size->is_var() && size->lit.i == od.value
                                                       : size->is_var() && size->var == od.var);
      if (!is_operands) {
        cell[s] = true;
        break;
      }
      fixed_dims[s].push_back(scalar_i64(*size));
    }
  }

  // The body's invars that are loop state: all but the constants and the
  // index (the order of `args` in `iteration` below).
  std::vector<bool> carried(body->invars.size(), true);
  for (std::size_t q = 0; q < nc; ++q) carried[q] = false;
  if (is_for) carried[nc + ni] = false;
  for (std::size_t q = nc + nstate; q < nc + nstate + nxs; ++q) carried[q] = false;  // scan's rows of xs
  // The states the body may update in place (buffers.hpp, pairs): arrays
  // of a fixed size, beyond the small ones a body copies into its own frame
  // anyway (kSnapshotMaxElems: those stay in registers). Confirmed by the
  // body's plan: its result s is its input s updated in place.
  std::vector<int> pairs(body->outvars.size(), -1);
  for (std::size_t s = ni; s < nstate; ++s) {
    const std::size_t q = is_for ? nc + s + 1 : nc + s;  // body invar of state s
    const Type& t = body->type_of(Atom::of_var(body->invars[q]));
    const SymNumel n = sym_numel(t);
    if (cell[s] || t.rank() == 0 || (n.is_static() && n.k <= kSnapshotMaxElems)) continue;
    pairs[s] = static_cast<int>(q);
  }
  llvm::Function* fbody = emit_nested(*body, cell, carried, &pairs);
  auto in_place = [&](std::size_t s) { return pairs[s] >= 0; };
  llvm::Function* fcond = cond_j ? emit_nested(*cond_j, {}) : nullptr;

  // The state.
  std::vector<llvm::Value*> init(nstate), cur(nstate), spare(nstate, nullptr), own(nstate, nullptr),
      bufA(nstate, nullptr), bufB(nstate, nullptr), cellp(nstate, nullptr);
  int last = static_cast<int>(ei);
  for (int o : e.outputs) last = std::max(last, plan_.last_read[static_cast<std::size_t>(o)]);
  for (std::size_t s = 0; s < nstate; ++s) {
    const Type& ot = type(e.outputs[s]);
    init[s] = operand_ptr(e.inputs[state_operand(s)]);
    cur[s] = E.entry_alloca(E.ptr);
    b.CreateStore(init[s], cur[s]);
    if (in_place(s)) {
      // One buffer for the whole loop, read and written by every iteration:
      // the operand's own when this loop is its last reader and it is the
      // function's to overwrite (plan reuse), else a copy made once here.
      const Atom& x = e.inputs[state_operand(s)];
      // A copy goes straight into the function's result when the state is
      // one (and that result is no other input's buffer: not paired), so
      // that it is not copied again at the end.
      if (x.is_var() && plan_.reuse[static_cast<std::size_t>(e.outputs[s])] == x.var) {
        bufA[s] = init[s];
      } else {
        const std::size_t nin = j_.constvars.size() + j_.invars.size();
        int slot = -1;
        for (std::size_t k = 0; k < j_.outvars.size() && slot < 0; ++k)
          if (j_.outvars[k].is_var() && j_.outvars[k].var == e.outputs[s] && !cells_[k] && plan_.paired[k] < 0)
            slot = static_cast<int>(k);
        if (slot >= 0) {
          bufA[s] = E.fn->getArg(static_cast<unsigned>(nin + static_cast<std::size_t>(slot)));
        } else {
          bufA[s] = E.temp(bytes_of(fixed_dims[s], ot.dtype));
          free_after[static_cast<std::size_t>(last)].push_back(bufA[s]);
        }
        copy(bufA[s], init[s], Type{ot.dtype, j_.type_of(x).shape, false});
      }
      b.CreateStore(bufA[s], cur[s]);
    } else if (cell[s]) {
      own[s] = E.entry_alloca(E.ptr);
      b.CreateStore(llvm::ConstantPointerNull::get(llvm::PointerType::get(E.ctx, 0)), own[s]);
      E.live_slots.push_back(own[s]);
      cellp[s] = E.entry_alloca(E.i64, 1 + ot.rank(), 8);
    } else {
      llvm::Value* bytes = bytes_of(fixed_dims[s], ot.dtype);
      bufA[s] = E.temp(bytes);
      bufB[s] = E.temp(bytes);
      spare[s] = E.entry_alloca(E.ptr);
      b.CreateStore(bufA[s], spare[s]);
      free_after[static_cast<std::size_t>(last)].push_back(bufA[s]);
      free_after[static_cast<std::size_t>(last)].push_back(bufB[s]);
    }
  }

  // The constants' pointers, once.
  std::vector<llvm::Value*> body_consts, cond_consts;
  for (std::size_t q = 0; q < nc; ++q) body_consts.push_back(operand_ptr(e.inputs[const_operand(q)]));
  for (std::size_t q = 0; q < cnc; ++q) cond_consts.push_back(operand_ptr(e.inputs[q]));

  // One iteration: call the body, then make its results the state. A
  // scan's body also reads `rows_in` (its x rows) and writes `rows_out`
  // (its y rows) after the state.
  llvm::Value* index_slot = is_for ? E.entry_alloca(E.i64, 1, 8) : nullptr;
  auto iteration = [&](const std::vector<llvm::Value*>& rows_in, const std::vector<llvm::Value*>& rows_out) {
    std::vector<llvm::Value*> args = body_consts;
    std::vector<llvm::Value*> cur_v(nstate), next(nstate);
    for (std::size_t s = 0; s < nstate; ++s) cur_v[s] = b.CreateLoad(E.ptr, cur[s]);
    for (std::size_t s = 0; s < nstate; ++s) {
      if (is_for && s == ni) args.push_back(index_slot);
      args.push_back(cur_v[s]);
    }
    if (is_for && nstate == ni) args.push_back(index_slot);
    args.insert(args.end(), rows_in.begin(), rows_in.end());
    for (std::size_t s = 0; s < nstate; ++s) {
      next[s] = in_place(s) ? cur_v[s] : cell[s] ? cellp[s] : b.CreateLoad(E.ptr, spare[s]);
      args.push_back(next[s]);
    }
    args.insert(args.end(), rows_out.begin(), rows_out.end());
    call_nested(fbody, args);
    for (std::size_t s = 0; s < nstate; ++s) {
      if (in_place(s)) continue;
      if (cell[s]) {
        llvm::Value* p = b.CreateLoad(E.ptr, cellp[s]);
        E.free_ptr(b.CreateLoad(E.ptr, own[s]));
        b.CreateStore(p, own[s]);
        b.CreateStore(p, cur[s]);
      } else {
        // Swap: the buffer just read is the next one written, except the
        // operand (first iteration), which is replaced by the second buffer.
        // (Pointers swap through phis, not a select per store, which would
        // keep SROA from leaving the buffers alone and the body from
        // vectorising.)
        b.CreateStore(next[s], cur[s]);
        b.CreateStore(b.CreateSelect(b.CreateICmpEQ(cur_v[s], init[s]), bufB[s], cur_v[s]), spare[s]);
      }
    }
  };

  if (is_for) {
    const std::size_t q = nc + ni;
    llvm::Value* lo = scalar_i64(e.inputs[q]);
    llvm::Value* st = scalar_i64(e.inputs[q + 2]);
    llvm::Value* n = for_trip_count(lo, scalar_i64(e.inputs[q + 1]), st);
    // A run-time trip count that is > 0 unsigned but negative as i64 (more
    // than 2^63 iterations) cannot finish anyway; E.loop guards n > 0.
    E.loop(n, [&](llvm::Value* t) {
      b.CreateStore(b.CreateAdd(lo, b.CreateMul(t, st)), index_slot);
      iteration({}, {});
    }, LoopHint::plain);
  } else if (is_scan) {
    emit_scan_loop(ei, free_after, last, [&](const std::vector<llvm::Value*>& in, const std::vector<llvm::Value*>& out) {
      iteration(in, out);
    });
  } else {
    llvm::Value* flag = E.entry_alloca(E.i8, 1, 8);
    llvm::BasicBlock* head = llvm::BasicBlock::Create(E.ctx, "while.cond", E.fn);
    llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(E.ctx, "while.body", E.fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(E.ctx, "while.end", E.fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    std::vector<llvm::Value*> args = cond_consts;
    for (std::size_t s = 0; s < nstate; ++s) args.push_back(b.CreateLoad(E.ptr, cur[s]));
    args.push_back(flag);
    call_nested(fcond, args);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(E.i8, flag), b.getInt8(0)), body_bb, exit);
    b.SetInsertPoint(body_bb);
    iteration({}, {});
    b.CreateBr(head);
    b.SetInsertPoint(exit);
  }

  // The final state becomes the outputs' buffers. The implicit sizes are
  // read first (the carried outputs' types refer to them).
  for (std::size_t s = 0; s < nstate; ++s) {
    const int v = e.outputs[s];
    const Type& ot = type(v);
    if (cell[s]) continue;
    if (in_place(s)) {
      buf_[static_cast<std::size_t>(v)] = bufA[s];
      read_dim(v);
      continue;
    }
    llvm::Value* fin = b.CreateLoad(E.ptr, cur[s]);
    llvm::Value* none = b.CreateICmpEQ(fin, init[s]);  // no iteration ran
    E.when(none, [&] { copy(bufA[s], init[s], Type{ot.dtype, j_.type_of(e.inputs[state_operand(s)]).shape, false}); });
    buf_[static_cast<std::size_t>(v)] = b.CreateSelect(none, bufA[s], fin);
    read_dim(v);
  }
  for (std::size_t s = 0; s < nstate; ++s) {
    if (!cell[s]) continue;
    const int v = e.outputs[s];
    const Type& ot = type(v);
    llvm::Value* none = b.CreateIsNull(b.CreateLoad(E.ptr, own[s]));
    E.when(none, [&] {
      // No iteration ran: a copy of the operand, at its size.
      const Type it{ot.dtype, j_.type_of(e.inputs[state_operand(s)]).shape, false};
      llvm::Value* p = E.heap_untracked(bytes_of(dims_of(it), ot.dtype));
      copy(p, init[s], it);
      b.CreateStore(p, own[s]);
    });
    llvm::Value* p = b.CreateLoad(E.ptr, own[s]);
    E.live_slots.erase(std::find(E.live_slots.begin(), E.live_slots.end(), own[s]));
    E.live_heap.push_back(p);
    free_after[static_cast<std::size_t>(last)].push_back(p);
    buf_[static_cast<std::size_t>(v)] = p;
  }
}

// A scan's loop: the ys' buffers, then `length` iterations, iteration t
// reading row r = t (r = length-1-t with reverse) of each xs and writing row
// r of each ys. Row r of a buffer is at r times its row's bytes.
inline void Lowering::emit_scan_loop(std::size_t ei, FreeAfter& free_after, int last,
                                     const std::function<void(const std::vector<llvm::Value*>&,
                                                              const std::vector<llvm::Value*>&)>& iteration) {
  const Eqn& e = j_.eqns[ei];
  const auto& p = std::get<ScanParams>(e.params);
  const Jaxpr& body = *p.jaxpr;
  const auto nc = static_cast<std::size_t>(p.num_consts), ncar = static_cast<std::size_t>(p.num_carry);
  const std::size_t nxs = body.invars.size() - nc - ncar;
  const std::size_t nin = j_.constvars.size() + j_.invars.size();
  std::vector<llvm::Value*> xs, x_row, ys, y_row;
  for (std::size_t q = 0; q < nxs; ++q) {
    const Atom& a = e.inputs[nc + ncar + q];
    xs.push_back(operand_ptr(a));
    x_row.push_back(bytes_of(dims_of(a.var), type(a.var).dtype, 1));
  }
  for (std::size_t k = ncar; k < e.outputs.size(); ++k) {
    const int v = e.outputs[k];
    const auto vs = static_cast<std::size_t>(v);
    const Dims dims = dims_of(v);
    llvm::Value* bytes = bytes_of(dims, type(v).dtype);
    llvm::Value* buf;
    if (const int slot = plan_.out_slot[vs]; slot >= 0) {  // a result of the kernel: written in place
      const auto ks = static_cast<std::size_t>(slot);
      buf = cells_[ks] ? (cell_buf_[ks] = E.heap(bytes)) : E.fn->getArg(static_cast<unsigned>(nin + ks));
    } else {
      buf = E.temp(bytes);
      free_after[static_cast<std::size_t>(last)].push_back(buf);
    }
    buf_[vs] = buf;
    ys.push_back(buf);
    y_row.push_back(bytes_of(dims, type(v).dtype, 1));
  }
  llvm::Value* n = p.length >= 0 ? E.c64(p.length) : scalar_i64(e.inputs.back());
  E.loop(n, [&](llvm::Value* t) {
    llvm::Value* r = p.reverse ? b.CreateSub(b.CreateSub(n, E.c64(1)), t) : t;
    std::vector<llvm::Value*> in, out;
    for (std::size_t q = 0; q < xs.size(); ++q) in.push_back(b.CreateInBoundsGEP(E.i8, xs[q], b.CreateMul(r, x_row[q])));
    for (std::size_t q = 0; q < ys.size(); ++q) out.push_back(b.CreateInBoundsGEP(E.i8, ys[q], b.CreateMul(r, y_row[q])));
    iteration(in, out);
  }, LoopHint::plain);
}

// cond: the predicate (a conditional branch) or the index (a `switch`, whose
// default is the last branch, as XLA's Conditional) picks one branch
// function; all write the same outputs (caller-sized buffers, or cells when
// a size is an output of the cond itself).
inline void Lowering::emit_cond(std::size_t ei, FreeAfter& free_after) {
  const Eqn& e = j_.eqns[ei];
  const auto& p = std::get<CondParams>(e.params);
  const std::size_t nout = e.outputs.size();
  int last = static_cast<int>(ei);
  for (int o : e.outputs) last = std::max(last, plan_.last_read[static_cast<std::size_t>(o)]);
  std::vector<bool> cell(nout, false);
  for (std::size_t k = 0; k < nout; ++k)
    for (const JDim& d : type(e.outputs[k]).shape)
      if (!d.is_static() && std::find(e.outputs.begin(), e.outputs.end(), d.var) != e.outputs.end()) cell[k] = true;
  std::vector<llvm::Function*> fb;
  for (const auto& br : p.branches) fb.push_back(emit_nested(*br, cell));

  std::vector<llvm::Value*> args;
  for (std::size_t q = 1; q < e.inputs.size(); ++q) args.push_back(operand_ptr(e.inputs[q]));
  std::vector<llvm::Value*> cellp(nout, nullptr);
  for (std::size_t k = 0; k < nout; ++k) {
    const int v = e.outputs[k];
    if (cell[k]) {
      cellp[k] = E.entry_alloca(E.i64, 1 + type(v).rank(), 8);
      args.push_back(cellp[k]);
      continue;
    }
    llvm::Value* buf = E.temp(bytes_of(dims_of(v), type(v).dtype));
    free_after[static_cast<std::size_t>(last)].push_back(buf);
    buf_[static_cast<std::size_t>(v)] = buf;
    args.push_back(buf);
  }
  const Atom& pa = e.inputs[0];
  std::vector<llvm::BasicBlock*> bb;
  if (p.indexed) {
    for (std::size_t k = 0; k < fb.size(); ++k)
      bb.push_back(llvm::BasicBlock::Create(E.ctx, "cond.case" + std::to_string(k), E.fn));
  } else {
    bb = {llvm::BasicBlock::Create(E.ctx, "cond.true", E.fn), llvm::BasicBlock::Create(E.ctx, "cond.false", E.fn)};
  }
  llvm::BasicBlock* join = llvm::BasicBlock::Create(E.ctx, "cond.end", E.fn);
  if (p.indexed) {
    llvm::Value* index = pa.is_var() ? E.load(operand_ptr(pa), DType::i32, E.c64(0)) : b.getInt32(static_cast<std::uint32_t>(pa.lit.i));
    llvm::SwitchInst* sw = b.CreateSwitch(index, bb.back(), static_cast<unsigned>(bb.size() - 1));
    for (std::size_t k = 0; k + 1 < bb.size(); ++k) sw->addCase(b.getInt32(static_cast<std::uint32_t>(k)), bb[k]);
  } else {
    llvm::Value* pred = pa.is_var() ? E.load(operand_ptr(pa), DType::bool_, E.c64(0)) : b.getInt1(pa.lit.i != 0);
    b.CreateCondBr(pred, bb[0], bb[1]);
  }
  for (std::size_t k = 0; k < bb.size(); ++k) {
    b.SetInsertPoint(bb[k]);
    call_nested(fb[k], args);
    b.CreateBr(join);
  }
  b.SetInsertPoint(join);
  for (std::size_t k = 0; k < nout; ++k) {
    if (!cell[k]) continue;
    llvm::Value* ptr = b.CreateLoad(E.ptr, cellp[k]);
    E.live_heap.push_back(ptr);
    free_after[static_cast<std::size_t>(last)].push_back(ptr);
    buf_[static_cast<std::size_t>(e.outputs[k])] = ptr;
  }
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
