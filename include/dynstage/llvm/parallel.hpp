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
#include <string>
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

// Emit `body` into a new internal function of the current module,
//     i32 <current>.<name>(ptr ctx, params...)        (slot < 0)
//     i32 <current>.<name>(ptr ctxs, params...)       (slot >= 0: ctx = ctxs[slot])
// with the current function's values it uses loaded from a context struct
// that the current function fills here; returns the function and the
// struct (an alloca of the current function). The region's code is written
// into a scratch function first (the values it uses are known only once its
// code exists), then moved into `<name>.body`, which takes them as
// parameters: a buffer that is noalias where it comes from (an argument
// that is, a fresh allocation) is noalias there too, so once the body is
// inlined (the inliner keeps noalias as scope metadata) its loops need no
// run-time overlap checks; so is a pointer parameter, which must be a buffer
// of the function's own. The Emitter's state is the new function's while
// `body` runs. `no_vectorise`: the functions get noimplicitfloat, which
// keeps LLVM's vectorisers out of them.
inline std::pair<llvm::Function*, llvm::Value*> outline(Emitter& E, const std::string& name, int slot,
                                                        const std::vector<llvm::Type*>& params,
                                                        const std::function<void(const std::vector<llvm::Value*>&)>& body,
                                                        bool no_vectorise = false) {
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

  llvm::Function* scratch =
      llvm::Function::Create(llvm::FunctionType::get(E.i32, params, false), llvm::Function::InternalLinkage, "", E.mod);
  E.begin_function(scratch);
  std::vector<llvm::Value*> args;
  for (llvm::Argument& a : scratch->args()) args.push_back(&a);
  body(args);
  while (!E.live_heap.empty()) E.release(E.live_heap.back());
  b.CreateRet(b.CreateLoad(E.i32, E.err));

  E.fn = outer;
  E.entry = outer_entry;
  E.err = outer_err;
  E.live_heap = std::move(outer_heap);
  E.live_slots = std::move(outer_slots);
  E.stack_bytes = outer_stack;

  // The outer function's values the body uses, in order of first use.
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

  std::vector<llvm::Type*> fields, bparams(params.begin(), params.end());
  for (llvm::Value* v : live) fields.push_back(v->getType());
  bparams.insert(bparams.end(), fields.begin(), fields.end());
  llvm::Function* body_fn = llvm::Function::Create(llvm::FunctionType::get(E.i32, bparams, false),
                                                   llvm::Function::InternalLinkage, outer->getName() + "." + name + ".body", E.mod);
  body_fn->addFnAttr(llvm::Attribute::AlwaysInline);
  if (no_vectorise) body_fn->addFnAttr(llvm::Attribute::NoImplicitFloat);
  body_fn->splice(body_fn->begin(), scratch);
  for (unsigned i = 0; i < params.size(); ++i) {
    scratch->getArg(i)->replaceAllUsesWith(body_fn->getArg(i));
    // A pointer parameter is a buffer of the callee's own (a packing panel).
    if (params[i]->isPointerTy()) body_fn->addParamAttr(i, llvm::Attribute::NoAlias);
  }
  scratch->eraseFromParent();
  for (std::size_t k = 0; k < live.size(); ++k) {
    const auto ai = static_cast<unsigned>(params.size() + k);
    llvm::Value* v = live[k];
    v->replaceUsesWithIf(body_fn->getArg(ai), [body_fn](llvm::Use& u) {
      auto* i = llvm::dyn_cast<llvm::Instruction>(u.getUser());
      return i && i->getFunction() == body_fn;
    });
    bool fresh = llvm::isa<llvm::AllocaInst>(v);
    if (auto* arg = llvm::dyn_cast<llvm::Argument>(v)) fresh = arg->hasNoAliasAttr();
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(v))
      fresh = call->getCalledFunction() && (call->getCalledFunction()->getName() == "aligned_alloc" ||
                                            call->getCalledFunction()->getName() == kTempAllocRoutine);
    if (fresh && v->getType()->isPointerTy()) body_fn->addParamAttr(ai, llvm::Attribute::NoAlias);
  }

  // The function: loads the live values from its context and calls body.
  llvm::StructType* st = llvm::StructType::get(E.ctx, fields);
  std::vector<llvm::Type*> fparams{E.ptr};
  fparams.insert(fparams.end(), params.begin(), params.end());
  llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(E.i32, fparams, false),
                                             llvm::Function::InternalLinkage, outer->getName() + "." + name, E.mod);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  if (no_vectorise) f->addFnAttr(llvm::Attribute::NoImplicitFloat);
  {
    llvm::IRBuilder<> eb(llvm::BasicBlock::Create(E.ctx, "entry", f));
    llvm::Value* own = slot < 0 ? static_cast<llvm::Value*>(f->getArg(0))
                                : eb.CreateLoad(E.ptr, eb.CreateConstInBoundsGEP1_64(E.ptr, f->getArg(0), static_cast<std::uint64_t>(slot)));
    std::vector<llvm::Value*> call_args;
    for (unsigned i = 0; i < params.size(); ++i) call_args.push_back(f->getArg(i + 1));
    for (std::size_t k = 0; k < live.size(); ++k)
      call_args.push_back(eb.CreateLoad(fields[k], eb.CreateStructGEP(st, own, static_cast<unsigned>(k))));
    eb.CreateRet(eb.CreateCall(body_fn, call_args));
  }
  b.SetInsertPoint(resume);
  llvm::Value* ctx = E.entry_alloca(st);
  for (std::size_t k = 0; k < live.size(); ++k) b.CreateStore(live[k], b.CreateStructGEP(st, ctx, static_cast<unsigned>(k)));
  return {f, ctx};
}

// Emit tasks(lo, hi), the code of tasks [lo, hi), as a task function
// i32 tasks(ptr ctx, i64 lo, i64 hi) (outline) and a call that runs tasks
// [0, ntasks) on the thread pool, then continue after the region (a fault
// in a task exits the kernel with its code; check_faults = false: code that
// cannot fault, in a function with no fault exit, such as the GEMM
// routines).
inline void parallel_region(Emitter& E, llvm::Value* ntasks,
                            const std::function<void(llvm::Value* lo, llvm::Value* hi)>& tasks,
                            bool check_faults = true) {
  const auto [f, ctx] = outline(E, "tasks", -1, {E.i64, E.i64},
                                [&](const std::vector<llvm::Value*>& args) { tasks(args[0], args[1]); });
  auto* rty = llvm::FunctionType::get(E.i32, {E.ptr, E.ptr, E.i64}, false);
  llvm::Value* code = E.b.CreateCall(E.mod.getOrInsertFunction(kParallelForRoutine, rty), {f, ctx, ntasks});
  if (check_faults) E.exit_if_error(code);
}

// Ceil(n / per): the number of tasks of `per` units that cover n.
inline llvm::Value* task_count(Emitter& E, llvm::Value* n, llvm::Value* per) {
  return E.b.CreateUDiv(E.b.CreateSub(E.b.CreateAdd(n, per), E.c64(1)), per);
}
inline llvm::Value* task_count(Emitter& E, llvm::Value* n, std::int64_t per) { return task_count(E, n, E.c64(per)); }

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
