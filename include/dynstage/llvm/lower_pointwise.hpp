// dynstage: pointwise loops, strip-mined. Part of the backend implementation
// (DYNSTAGE_IMPLEMENTATION) except the plan-level test, which needs no LLVM.
//
// A for_loop whose body is POINTWISE computes element k of every carried
// array from element k of the carries and of the array constants only: every
// equation of the body is elementwise (unary, binary, compare, select,
// convert, or a broadcast of a rank-0 value), every array in it has the
// loop's shape S, and the other values are rank 0 (the index, scalar
// constants, literals). A Mandelbrot iteration, a fixed number of Newton
// steps per element, a time-stepped ODE per particle are such loops.
//
// Lowered as any loop, each iteration is a pass over arrays of S: 100
// iterations over 1e6 complex points stream 100 times through 40 MB. Here
// the loop is strip-mined instead: the elements are cut into blocks of
// kPointwiseBlock, and for each block the whole loop runs on block-sized
// copies of the carries and constants (a few KB, in L1), then the block of
// each result is copied out. Iterations are the inner loop, elements the
// outer one, as a hand-written per-element loop would be, but each
// iteration over a block is still a vector loop. The body is lowered once,
// retyped to the block's static shape (kPointwiseBlock,); the last block is
// partial: its lanes past the end compute on stale values of the previous
// block (or zeros), never read, never written out. The trip count and the
// index are the loop's, so every block sees the same iterations; blocks are
// independent, so they run on the kernel's threads (parallel_tasks). When
// the body does not read the index, a block stops at the first iteration
// that leaves its state unchanged bit for bit: every later one would too.
//
// Results are those of the loop lowered as a whole (the same operations on
// the same values, element by element). Static and symbolic shapes take this
// path (the number of blocks is computed at run time); a loop with implicit
// size carries, effects or anything not elementwise in its body is lowered
// as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "../ir/jaxpr.hpp"

namespace dyn::detail {

// Elements per block: the carries' two buffers and the array constants of a
// Mandelbrot (c128 z and c, i32 counts) take 14 KB at 256.
inline constexpr std::int64_t kPointwiseBlock = 256;

// Whether `e` is a pointwise for_loop (see above): every array of the loop
// and of its body has the loop's shape S, static or symbolic (a body's
// dimension is one of its constants, whose operand must be S's dimension).
// Static loops of fewer than two blocks gain nothing and are not.
inline bool is_pointwise_loop(const Jaxpr& j, const Eqn& e) {
  const auto* p = std::get_if<ForLoopParams>(&e.params);
  if (!p || p->nimplicit != 0 || e.outputs.empty()) return false;
  const std::vector<JDim>& s = j.types.at(static_cast<std::size_t>(e.outputs[0])).shape;
  if (s.empty()) return false;
  std::int64_t n = 1;
  bool all_static = true;
  for (const JDim& d : s) {
    all_static = all_static && d.is_static();
    if (d.is_static()) n *= d.value;
  }
  if (all_static && n < 2 * kPointwiseBlock) return false;
  for (int o : e.outputs)
    if (j.types.at(static_cast<std::size_t>(o)).shape != s) return false;
  const Jaxpr& body = *p->body_jaxpr;
  const auto nc = static_cast<std::size_t>(p->body_nconsts);
  // A body dimension as the loop's: a static size, or a body constant whose
  // operand is the loop's variable or literal.
  auto outer = [&](const JDim& d) -> std::optional<JDim> {
    if (d.is_static()) return d;
    for (std::size_t k = 0; k < nc; ++k)
      if (body.invars[k] == d.var) {
        const Atom& a = e.inputs[k];
        return a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.as<std::int64_t>(), -1};
      }
    return std::nullopt;
  };
  auto is_s = [&](const Type& t) {
    if (t.rank() != static_cast<int>(s.size())) return false;
    for (std::size_t k = 0; k < s.size(); ++k)
      if (outer(t.shape[k]) != std::optional<JDim>(s[k])) return false;
    return true;
  };
  for (const Type& t : body.types)
    if (t.rank() != 0 && !is_s(t)) return false;
  for (std::size_t k = nc + 1; k < body.invars.size(); ++k)  // the carries
    if (body.types.at(static_cast<std::size_t>(body.invars[k])).rank() == 0) return false;
  for (const Eqn& be : body.eqns) {
    switch (prim_kind(be.prim)) {
      case Kind::unary:
      case Kind::binary:
      case Kind::compare:
      case Kind::select:
      case Kind::convert: continue;
      case Kind::structural:  // a broadcast of a rank-0 value (then its dimension operands)
        if (be.prim == Prim::broadcast_in_dim &&
            (!be.inputs.at(0).is_var() || body.types.at(static_cast<std::size_t>(be.inputs[0].var)).rank() == 0))
          continue;
        return false;
      default: return false;
    }
  }
  return true;
}

// The body of a pointwise loop with every array of the loop's shape typed
// (kPointwiseBlock,) instead.
inline std::shared_ptr<Jaxpr> pointwise_block_body(const Jaxpr& body) {
  auto nb = std::make_shared<Jaxpr>(body);
  for (Type& t : nb->types)
    if (t.rank() != 0) t.shape = {JDim{kPointwiseBlock, -1}};
  for (Eqn& be : nb->eqns)
    if (auto* bp = std::get_if<BroadcastInDimParams>(&be.params)) {
      bp->shape = {kPointwiseBlock};
      bp->broadcast_dimensions.clear();
      be.inputs.resize(1);  // (a symbolic shape's dimension operands)
    }
  return nb;
}

}  // namespace dyn::detail

#ifdef DYNSTAGE_IMPLEMENTATION

#include "lower.hpp"
#include "parallel.hpp"

namespace dyn::detail::llvmjit {

inline void Lowering::emit_pointwise_loop(std::size_t ei, FreeAfter& free_after) {
  const Eqn& e = j_.eqns[ei];
  const auto& p = std::get<ForLoopParams>(e.params);
  const Jaxpr& body = *p.body_jaxpr;
  const auto nc = static_cast<std::size_t>(p.body_nconsts);
  const std::size_t nstate = e.outputs.size();
  const std::shared_ptr<Jaxpr> block_body = pointwise_block_body(body);
  // Carried buffers are read and written by every iteration (no noalias);
  // the block buffers are distinct, so nothing runs in place.
  std::vector<bool> carried(body.invars.size(), true);
  for (std::size_t q = 0; q <= nc; ++q) carried[q] = false;  // constants, index
  std::vector<int> pairs(body.outvars.size(), -1);
  llvm::Function* fbody = emit_nested(*block_body, std::vector<bool>(nstate, false), carried, &pairs);

  llvm::Value* n = numel(dims_of(e.outputs[0]));
  llvm::Value* nblocks = b.CreateUDiv(b.CreateAdd(n, E.c64(kPointwiseBlock - 1)), E.c64(kPointwiseBlock));

  // The results' buffers (as `allocate` in lower_body.hpp: in place of an
  // operand the plan gives them, or straight into the kernel's result).
  const std::size_t nin = j_.constvars.size() + j_.invars.size();
  int last = static_cast<int>(ei);
  for (int o : e.outputs) last = std::max(last, plan_.last_read[static_cast<std::size_t>(o)]);
  std::vector<llvm::Value*> out(nstate);
  for (std::size_t s = 0; s < nstate; ++s) {
    const int v = e.outputs[s];
    const auto vs = static_cast<std::size_t>(v);
    llvm::Value* bytes = bytes_of(dims_of(v), type(v).dtype);
    if (const int x = plan_.reuse[vs]; x >= 0) {
      out[s] = buf_[static_cast<std::size_t>(x)];  // each block reads its slice of x before writing it
    } else if (const int slot = plan_.out_slot[vs]; slot >= 0) {
      const auto ks = static_cast<std::size_t>(slot);
      out[s] = cells_[ks] ? (cell_buf_[ks] = E.heap(bytes)) : E.fn->getArg(static_cast<unsigned>(nin + ks));
    } else {
      out[s] = E.temp(bytes);
      free_after[static_cast<std::size_t>(last)].push_back(out[s]);
    }
    buf_[vs] = out[s];
  }

  // Operands: constants (arrays: block copies; rank 0: as they are), the
  // bounds, the initial carries.
  std::vector<llvm::Value*> consts(nc), inits(nstate);
  std::vector<bool> const_array(nc);
  for (std::size_t q = 0; q < nc; ++q) {
    consts[q] = operand_ptr(e.inputs[q]);
    const_array[q] = j_.type_of(e.inputs[q]).rank() != 0;
  }
  for (std::size_t s = 0; s < nstate; ++s) inits[s] = operand_ptr(e.inputs[nc + 4 + s]);
  llvm::Value* lo = scalar_i64(e.inputs[nc]);
  llvm::Value* st = scalar_i64(e.inputs[nc + 2]);
  llvm::Value* trips = for_trip_count(lo, scalar_i64(e.inputs[nc + 1]), st);

  // A body that does not read the index is a function of the state alone:
  // once an iteration leaves a block's state unchanged (bit for bit), the
  // rest would too, and the block stops (a Mandelbrot block whose points
  // have all escaped).
  const int index_var = body.invars.at(nc);
  bool index_free = true;
  for (const Eqn& be : body.eqns)
    for (const Atom& a : be.inputs) index_free = index_free && !(a.is_var() && a.var == index_var);
  for (const Atom& a : body.outvars) index_free = index_free && !(a.is_var() && a.var == index_var);
  llvm::FunctionCallee bcmp = E.mod.getOrInsertFunction(
      "bcmp", llvm::FunctionType::get(b.getInt32Ty(), {E.ptr, E.ptr, E.i64}, false));
  auto elem_bytes = [&](const Atom& a) { return static_cast<std::int64_t>(dtype_size(dtype_of(a))); };
  // One task: blocks [first, end). Its block buffers live in its own frame.
  auto run_blocks = [&](llvm::Value* first, llvm::Value* end) {
    std::vector<llvm::Value*> cblk(nc, nullptr), bufA(nstate), bufB(nstate);
    for (std::size_t q = 0; q < nc; ++q)
      if (const_array[q]) cblk[q] = E.entry_alloca(E.i8, kPointwiseBlock * elem_bytes(e.inputs[q]), 64);
    for (std::size_t s = 0; s < nstate; ++s) {
      const std::int64_t eb = static_cast<std::int64_t>(dtype_size(type(e.outputs[s]).dtype));
      bufA[s] = E.entry_alloca(E.i8, kPointwiseBlock * eb, 64);
      bufB[s] = E.entry_alloca(E.i8, kPointwiseBlock * eb, 64);
      // The lanes a partial block never fills: zeros, not uninitialised bits.
      b.CreateMemSet(bufA[s], b.getInt8(0), E.c64(kPointwiseBlock * eb), llvm::MaybeAlign(64));
      b.CreateMemSet(bufB[s], b.getInt8(0), E.c64(kPointwiseBlock * eb), llvm::MaybeAlign(64));
    }
    for (std::size_t q = 0; q < nc; ++q)
      if (cblk[q])
        b.CreateMemSet(cblk[q], b.getInt8(0), E.c64(kPointwiseBlock * elem_bytes(e.inputs[q])), llvm::MaybeAlign(64));
    llvm::Value* index_slot = E.entry_alloca(E.i64, 1, 8);
    llvm::Value* cur_slot = E.entry_alloca(E.ptr, static_cast<std::int64_t>(std::max<std::size_t>(nstate, 1)), 8);
    llvm::Value* next_slot = E.entry_alloca(E.ptr, static_cast<std::int64_t>(std::max<std::size_t>(nstate, 1)), 8);
    E.loop(b.CreateSub(end, first), [&](llvm::Value* k) {
      llvm::Value* start = b.CreateMul(b.CreateAdd(first, k), E.c64(kPointwiseBlock));
      llvm::Value* m = E.smin(E.c64(kPointwiseBlock), b.CreateSub(n, start));
      auto slice = [&](llvm::Value* base, std::int64_t eb) {
        return b.CreateInBoundsGEP(E.i8, base, b.CreateMul(start, E.c64(eb)));
      };
      for (std::size_t q = 0; q < nc; ++q)
        if (cblk[q]) {
          const std::int64_t eb = elem_bytes(e.inputs[q]);
          b.CreateMemCpy(cblk[q], llvm::MaybeAlign(64), slice(consts[q], eb), llvm::MaybeAlign(), b.CreateMul(m, E.c64(eb)));
        }
      for (std::size_t s = 0; s < nstate; ++s) {
        const std::int64_t eb = static_cast<std::int64_t>(dtype_size(type(e.outputs[s]).dtype));
        b.CreateMemCpy(bufA[s], llvm::MaybeAlign(64), slice(inits[s], eb), llvm::MaybeAlign(), b.CreateMul(m, E.c64(eb)));
        b.CreateStore(bufA[s], b.CreateConstInBoundsGEP1_64(E.ptr, cur_slot, static_cast<std::uint64_t>(s)));
        b.CreateStore(bufB[s], b.CreateConstInBoundsGEP1_64(E.ptr, next_slot, static_cast<std::uint64_t>(s)));
      }
      // for (t = 0; t < trips; ++t) { body; if (fixed point) break; }
      llvm::BasicBlock* pre = b.GetInsertBlock();
      llvm::BasicBlock* head = llvm::BasicBlock::Create(E.ctx, "pw.head", E.fn);
      llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(E.ctx, "pw.body", E.fn);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(E.ctx, "pw.done", E.fn);
      b.CreateBr(head);
      b.SetInsertPoint(head);
      llvm::PHINode* t = b.CreatePHI(E.i64, 2, "pw.t");
      t->addIncoming(E.c64(0), pre);
      b.CreateCondBr(b.CreateICmpSLT(t, trips), body_bb, done);
      b.SetInsertPoint(body_bb);
      {
        b.CreateStore(b.CreateAdd(lo, b.CreateMul(t, st)), index_slot);
        std::vector<llvm::Value*> args, cur(nstate), next(nstate);
        for (std::size_t q = 0; q < nc; ++q) args.push_back(cblk[q] ? cblk[q] : consts[q]);
        args.push_back(index_slot);
        for (std::size_t s = 0; s < nstate; ++s) {
          cur[s] = b.CreateLoad(E.ptr, b.CreateConstInBoundsGEP1_64(E.ptr, cur_slot, static_cast<std::uint64_t>(s)));
          next[s] = b.CreateLoad(E.ptr, b.CreateConstInBoundsGEP1_64(E.ptr, next_slot, static_cast<std::uint64_t>(s)));
          args.push_back(cur[s]);
        }
        args.insert(args.end(), next.begin(), next.end());
        call_nested(fbody, args);
        for (std::size_t s = 0; s < nstate; ++s) {  // swap
          b.CreateStore(next[s], b.CreateConstInBoundsGEP1_64(E.ptr, cur_slot, static_cast<std::uint64_t>(s)));
          b.CreateStore(cur[s], b.CreateConstInBoundsGEP1_64(E.ptr, next_slot, static_cast<std::uint64_t>(s)));
        }
        llvm::Value* t1 = b.CreateAdd(t, E.c64(1));
        if (index_free) {
          // The block's state did not change: neither will it in any later
          // iteration (the body is a function of the state alone).
          llvm::Value* same = b.getTrue();
          for (std::size_t s = 0; s < nstate; ++s) {
            const std::int64_t eb = static_cast<std::int64_t>(dtype_size(type(e.outputs[s]).dtype));
            llvm::Value* c = b.CreateCall(bcmp, {cur[s], next[s], b.CreateMul(m, E.c64(eb))});
            same = b.CreateAnd(same, b.CreateICmpEQ(c, b.getInt32(0)));
          }
          t->addIncoming(t1, b.GetInsertBlock());
          b.CreateCondBr(same, done, head);
        } else {
          t->addIncoming(t1, b.GetInsertBlock());
          b.CreateBr(head);
        }
      }
      b.SetInsertPoint(done);
      for (std::size_t s = 0; s < nstate; ++s) {
        const std::int64_t eb = static_cast<std::int64_t>(dtype_size(type(e.outputs[s]).dtype));
        llvm::Value* fin = b.CreateLoad(E.ptr, b.CreateConstInBoundsGEP1_64(E.ptr, cur_slot, static_cast<std::uint64_t>(s)));
        b.CreateMemCpy(slice(out[s], eb), llvm::MaybeAlign(), fin, llvm::MaybeAlign(64), b.CreateMul(m, E.c64(eb)));
      }
    }, LoopHint::plain);
  };
  // Tasks of whole blocks, about kTaskElems element-iterations each (one
  // block a task from 64 iterations on); a loop of a run-time trip count
  // takes four blocks a task.
  std::int64_t per = 4;
  if (auto k = Emitter::konst(trips)) per = std::max<std::int64_t>(1, kTaskElems / (kPointwiseBlock * std::max<std::int64_t>(*k, 1)));
  if (worth_parallel(nblocks, per))
    parallel_tasks(nblocks, E.c64(per), [&](llvm::Value*, llvm::Value* begin, llvm::Value* end) { run_blocks(begin, end); });
  else
    run_blocks(E.c64(0), nblocks);
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
