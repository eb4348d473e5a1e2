// dynstage: parallel regions of a kernel.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION).
//
// A parallel region is a loop over independent tasks, emitted like any other
// code but into a function of its own,
//     i32 <kernel>.tasks<k>(ptr ctx, i64 lo, i64 hi)   // runs tasks [lo, hi)
// which the kernel hands to the thread pool through the runtime routine
// kParallelForRoutine (runtime/threads.hpp). The region's code is written by
// the same lowering as everything else, with the Emitter switched to the new
// function; the values of the kernel it uses (buffers, sizes, scalars
// computed before the region) are found afterwards, stored by the kernel
// into a context struct and loaded from it at the task function's entry.
// This is what LLVM's CodeExtractor does for OpenMP, without having to
// delimit a region of blocks after the fact.
//
// A region owns its fault bits (an `err` of its own, returned, OR-ed by the
// runtime and by the kernel into its own) and its temporaries: allocas go to
// the task function's entry, so each task has its own; heap temporaries are
// freed before it returns. What a region must not do: write anything of the
// kernel's but disjoint parts of buffers, one task each (the callers split
// by output elements, rows, or per-task partial results).
//
// Tasks are fixed by the problem size, never by the number of threads, so
// results do not depend on the thread count (the reductions' per-task
// partials are combined in task order after the region).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "../runtime/threads_impl.hpp"
#include "emit.hpp"

namespace dyn::detail::llvmjit {

// Elements per task of an elementwise loop or a reduction: kTaskElems
// (Dr.Jit's block size) where an element calls a transcendental function
// (~1-5 ns an element), kCheapTaskElems where it is a few arithmetic
// operations (~0.2 ns): a task is then ~10-50 us of work against a few us of
// waking a worker, and 1e6 elements still give every core work. A static
// loop of fewer than two tasks' worth is not outlined at all.
inline constexpr std::int64_t kTaskElems = 16384;
inline constexpr std::int64_t kCheapTaskElems = 4 * kTaskElems;

// Emit tasks(lo, hi), the code of tasks [lo, hi), as a task function and a
// call that runs tasks [0, ntasks) on the thread pool, then continue after
// the region (a fault in a task exits the kernel with its code;
// check_faults = false: code that cannot fault, in a function with no fault
// exit, such as the GEMM routines).
inline void parallel_region(Emitter& E, llvm::Value* ntasks,
                            const std::function<void(llvm::Value* lo, llvm::Value* hi)>& tasks,
                            bool check_faults = true) {
  llvm::IRBuilder<>& b = E.b;
  llvm::Function* outer = E.fn;
  llvm::BasicBlock* resume = b.GetInsertBlock();
  llvm::BasicBlock* outer_entry = E.entry;
  llvm::Value* outer_err = E.err;
  std::vector<llvm::Value*> outer_heap = std::move(E.live_heap), outer_slots = std::move(E.live_slots);
  const std::int64_t outer_stack = E.stack_bytes;
  E.live_heap.clear();
  E.live_slots.clear();
  E.stack_bytes = 0;

  // The region is emitted into a scratch function first: the parameters of
  // the real one (below) are known only once the region's code exists.
  auto* scratch_ty = llvm::FunctionType::get(E.i32, {E.i64, E.i64}, false);
  llvm::Function* scratch = llvm::Function::Create(scratch_ty, llvm::Function::InternalLinkage, "", E.mod);
  E.begin_function(scratch);
  tasks(scratch->getArg(0), scratch->getArg(1));
  while (!E.live_heap.empty()) E.release(E.live_heap.back());
  b.CreateRet(b.CreateLoad(E.i32, E.err));

  E.fn = outer;
  E.entry = outer_entry;
  E.err = outer_err;
  E.live_heap = std::move(outer_heap);
  E.live_slots = std::move(outer_slots);
  E.stack_bytes = outer_stack;

  // The kernel's values the region uses, in order of first use.
  std::vector<llvm::Value*> live;
  std::map<llvm::Value*, std::size_t> seen;
  for (llvm::BasicBlock& bb : *scratch)
    for (llvm::Instruction& inst : bb)
      for (llvm::Use& u : inst.operands()) {
        llvm::Value* v = u.get();
        const bool foreign = (llvm::isa<llvm::Instruction>(v) && llvm::cast<llvm::Instruction>(v)->getFunction() != scratch) ||
                             (llvm::isa<llvm::Argument>(v) && llvm::cast<llvm::Argument>(v)->getParent() != scratch);
        if (foreign && seen.emplace(v, live.size()).second) live.push_back(v);
      }

  // body(i64 lo, i64 hi, the live values...): the region's code, with the
  // kernel's values as parameters. A buffer that is noalias in the kernel
  // (an argument that is, a fresh allocation) is noalias here too, so the
  // loops vectorise without run-time overlap checks once body is inlined
  // into the task function (the inliner keeps noalias as scope metadata).
  std::vector<llvm::Type*> params{E.i64, E.i64};
  for (llvm::Value* v : live) params.push_back(v->getType());
  llvm::Function* body = llvm::Function::Create(llvm::FunctionType::get(E.i32, params, false),
                                                llvm::Function::InternalLinkage, outer->getName() + ".region", E.mod);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  body->splice(body->begin(), scratch);
  scratch->getArg(0)->replaceAllUsesWith(body->getArg(0));
  scratch->getArg(1)->replaceAllUsesWith(body->getArg(1));
  scratch->eraseFromParent();
  for (std::size_t k = 0; k < live.size(); ++k) {
    llvm::Argument* a = body->getArg(static_cast<unsigned>(2 + k));
    llvm::Value* v = live[k];
    live[k]->replaceUsesWithIf(a, [body](llvm::Use& u) {
      auto* i = llvm::dyn_cast<llvm::Instruction>(u.getUser());
      return i && i->getFunction() == body;
    });
    bool fresh = llvm::isa<llvm::AllocaInst>(v);
    if (auto* arg = llvm::dyn_cast<llvm::Argument>(v)) fresh = arg->hasNoAliasAttr();
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(v))
      fresh = call->getCalledFunction() && (call->getCalledFunction()->getName() == "aligned_alloc" ||
                                            call->getCalledFunction()->getName() == kTempAllocRoutine);
    if (fresh && v->getType()->isPointerTy()) a->addAttr(llvm::Attribute::NoAlias);
  }

  // The task function: i32 tasks(ptr ctx, i64 lo, i64 hi) loads the live
  // values from the context struct the kernel filled and calls body.
  std::vector<llvm::Type*> fields(params.begin() + 2, params.end());
  llvm::StructType* st = llvm::StructType::get(E.ctx, fields);
  auto* fty = llvm::FunctionType::get(E.i32, {E.ptr, E.i64, E.i64}, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, outer->getName() + ".tasks", E.mod);
  {
    llvm::IRBuilder<> tb(llvm::BasicBlock::Create(E.ctx, "entry", f));
    std::vector<llvm::Value*> args{f->getArg(1), f->getArg(2)};
    for (std::size_t k = 0; k < live.size(); ++k)
      args.push_back(tb.CreateLoad(fields[k], tb.CreateStructGEP(st, f->getArg(0), static_cast<unsigned>(k))));
    tb.CreateRet(tb.CreateCall(body, args));
  }

  b.SetInsertPoint(resume);
  llvm::Value* ctx = E.entry_alloca(st);
  for (std::size_t k = 0; k < live.size(); ++k)
    b.CreateStore(live[k], b.CreateStructGEP(st, ctx, static_cast<unsigned>(k)));
  auto* rty = llvm::FunctionType::get(E.i32, {E.ptr, E.ptr, E.i64}, false);
  llvm::Value* code = b.CreateCall(E.mod.getOrInsertFunction(kParallelForRoutine, rty), {f, ctx, ntasks});
  if (check_faults) E.exit_if_error(code);
}

// Ceil(n / per): the number of tasks of `per` units that cover n.
inline llvm::Value* task_count(Emitter& E, llvm::Value* n, llvm::Value* per) {
  return E.b.CreateUDiv(E.b.CreateSub(E.b.CreateAdd(n, per), E.c64(1)), per);
}
inline llvm::Value* task_count(Emitter& E, llvm::Value* n, std::int64_t per) { return task_count(E, n, E.c64(per)); }

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
