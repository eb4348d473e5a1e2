// dynstage: the IR-building toolbox shared by the lowering rules — element
// types, counted loops, element loads/stores, kernel temporaries and the
// error flag. Part of the backend implementation (DYNSTAGE_IMPLEMENTATION).
//
// Kernel body shape: one function whose top level is straight-line code (a
// sequence of loop nests). Every temporary is allocated right before the nest
// that defines it and freed right after the last nest that reads it; an
// allocation failure branches to a block that frees the temporaries live at
// that point and returns kKernelOutOfMemory (Emitter::exit_with; with
// control flow, also what the loops own, live_slots, and the same exit after
// a body function returns a nonzero code). Run-time faults (integer
// division by zero) OR a bit into an i32 flag instead of branching, so loops
// stay vectorisable; the flag is the kernel's return value.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>

#include "../array/dtype.hpp"
#include "backend.hpp"
#include "session.hpp"  // the temporaries' pool routines

namespace dyn::detail::llvmjit {

// Temporaries up to kStackTempBytes live on the stack, up to
// kStackBudgetBytes per kernel in total; the rest on the heap.
inline constexpr std::int64_t kStackTempBytes = 4096;
inline constexpr std::int64_t kStackBudgetBytes = 64 * 1024;
// Reductions of at least this many elements interleave 8 accumulators, not 4
// (fewer would leave FMA/add latency exposed; more would leave a long scalar
// remainder on short runs such as the rows of a row group).
inline constexpr std::int64_t kLongReduction = 8192;

// What to tell LLVM about a loop (loop metadata).
enum class LoopHint {
  normal,     // vectorise as it sees fit, no interleaving (the global default)
  reduction,  // a register accumulator: interleave 4 vectors to hide the add latency
  long_reduction,  // the same over a long run (>= kLongReduction): 8 vectors, two FMA ports' worth
  plain,      // neither vectorise nor unroll (packing loops, tile loops)
};

struct Emitter {
  llvm::LLVMContext& ctx;
  llvm::Module& mod;
  llvm::IRBuilder<> b;
  llvm::Function* fn = nullptr;
  llvm::BasicBlock* entry = nullptr;  // allocas only
  llvm::Value* err = nullptr;         // alloca i32: fault bits
  llvm::Type *i1, *i8, *i32, *i64, *f32, *f64, *ptr;

  std::vector<llvm::Value*> live_heap;  // heap temporaries allocated and not yet freed
  std::vector<std::pair<llvm::Value*, llvm::Value*>> pooled;  // pool_temp's blocks and their sizes
  // Allocas holding a heap pointer (or null) owned by the code being emitted:
  // the state of a loop whose carried sizes change (lower_control.hpp). An
  // early exit frees what they hold at that moment.
  std::vector<llvm::Value*> live_slots;
  std::int64_t stack_bytes = 0;   // stack temporaries so far

  Emitter(llvm::Module& m)
      : ctx(m.getContext()), mod(m), b(m.getContext()), i1(b.getInt1Ty()), i8(b.getInt8Ty()), i32(b.getInt32Ty()),
        i64(b.getInt64Ty()), f32(b.getFloatTy()), f64(b.getDoubleTy()), ptr(b.getPtrTy()) {}

  // Start emitting function f: its entry block (allocas only) with the
  // fault bits `err` = 0, then the block the code goes into.
  void begin_function(llvm::Function* f) {
    fn = f;
    entry = llvm::BasicBlock::Create(ctx, "entry", f);
    llvm::BasicBlock* start = llvm::BasicBlock::Create(ctx, "start", f);
    b.SetInsertPoint(entry);
    err = b.CreateAlloca(i32, nullptr, "err");
    b.CreateStore(b.getInt32(0), err);
    b.CreateBr(start);
    b.SetInsertPoint(start);
  }

  // --- types and constants ----------------------------------------------
  // In registers bool is i1; in memory it is one byte holding 0 or 1.
  // Signed and unsigned integers of a width share LLVM's integer type; the
  // operations that differ (compare, div, rem, max, min, conversions, shift
  // right) choose by the dtype (lower_expr.hpp).
  llvm::Type* reg_type(DType d) {
    switch (d) {
      case DType::bool_: return i1;
      case DType::i8:
      case DType::u8: return i8;
      case DType::i16:
      case DType::u16: return b.getInt16Ty();
      case DType::i32:
      case DType::u32: return i32;
      case DType::i64:
      case DType::u64: return i64;
      case DType::f32: return f32;
      case DType::f64: return f64;
      // A complex value is the struct {re, im} of its parts (std::complex's
      // layout in memory); loads and stores go part by part, so after SROA
      // a loop over complex elements is two real values per element, which
      // the vectoriser turns into a vector of real parts and one of
      // imaginary parts (an interleaved group).
      case DType::c64: return llvm::StructType::get(ctx, {f32, f32});
      case DType::c128: return llvm::StructType::get(ctx, {f64, f64});
    }
    return nullptr;
  }
  llvm::Type* mem_type(DType d) { return d == DType::bool_ ? i8 : reg_type(d); }
  llvm::Value* c64(std::int64_t v) { return b.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* constant(DType d, double f, std::int64_t i, double fi = 0.0) {
    switch (d) {
      case DType::bool_: return b.getInt1(i != 0);
      case DType::i8:
      case DType::u8: return b.getInt8(static_cast<std::uint8_t>(i));
      case DType::i16:
      case DType::u16: return b.getInt16(static_cast<std::uint16_t>(i));
      case DType::i32:
      case DType::u32: return b.getInt32(static_cast<std::uint32_t>(i));
      case DType::i64:
      case DType::u64: return b.getInt64(static_cast<std::uint64_t>(i));
      case DType::f32: return llvm::ConstantFP::get(f32, static_cast<float>(f));
      case DType::f64: return llvm::ConstantFP::get(f64, f);
      case DType::c64:
        return llvm::ConstantStruct::get(llvm::cast<llvm::StructType>(reg_type(d)),
                                         {llvm::ConstantFP::get(f32, static_cast<float>(f)),
                                          llvm::ConstantFP::get(f32, static_cast<float>(fi))});
      case DType::c128:
        return llvm::ConstantStruct::get(llvm::cast<llvm::StructType>(reg_type(d)),
                                         {llvm::ConstantFP::get(f64, f), llvm::ConstantFP::get(f64, fi)});
    }
    return nullptr;
  }
  // A complex value's parts, and the complex value of two parts.
  llvm::Value* re(llvm::Value* z) { return b.CreateExtractValue(z, {0}); }
  llvm::Value* im(llvm::Value* z) { return b.CreateExtractValue(z, {1}); }
  llvm::Value* make_complex(DType d, llvm::Value* r, llvm::Value* i) {
    llvm::Value* z = llvm::PoisonValue::get(reg_type(d));
    z = b.CreateInsertValue(z, r, {0});
    return b.CreateInsertValue(z, i, {1});
  }
  // The number `v` (exact for the small integers used as identities and
  // bounds) in dtype d.
  llvm::Value* number(DType d, double v) { return constant(d, v, static_cast<std::int64_t>(v)); }

  // --- sizes known at compile time or at run time ------------------------
  // A size, trip count or index is an i64 llvm::Value throughout: a
  // ConstantInt when static (IRBuilder folds arithmetic on constants, so a
  // static kernel is built from the same constants as before), else the
  // run-time value of a dimension variable or an expression of them.
  static std::optional<std::int64_t> konst(llvm::Value* v) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(v)) return c->getSExtValue();
    return std::nullopt;
  }
  static bool is_k(llvm::Value* v, std::int64_t k) {
    const auto c = konst(v);
    return c && *c == k;
  }
  llvm::Value* mul(llvm::Value* x, llvm::Value* y) {
    if (is_k(x, 1)) return y;
    if (is_k(y, 1)) return x;
    return b.CreateMul(x, y, "", true, true);
  }
  // smin/smax, folded when both are constants (IRBuilder's ConstantFolder
  // does not fold intrinsics).
  llvm::Value* smin(llvm::Value* x, llvm::Value* y) {
    if (konst(x) && konst(y)) return c64(std::min(*konst(x), *konst(y)));
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
  }
  llvm::Value* smax(llvm::Value* x, llvm::Value* y) {
    if (konst(x) && konst(y)) return c64(std::max(*konst(x), *konst(y)));
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
  }
  llvm::Value* add(llvm::Value* x, llvm::Value* y) {
    if (is_k(x, 0)) return y;
    if (is_k(y, 0)) return x;
    return b.CreateAdd(x, y, "", true, true);
  }

  // --- memory ------------------------------------------------------------
  llvm::Value* elem_ptr(llvm::Value* base, DType d, llvm::Value* index) {
    return b.CreateInBoundsGEP(mem_type(d), base, index);
  }
  llvm::Value* load(llvm::Value* base, DType d, llvm::Value* index) {
    if (is_complex(d)) {
      llvm::Value* p = elem_ptr(base, d, index);
      llvm::Type* part = reg_type(real_dtype(d));
      return make_complex(d, b.CreateLoad(part, b.CreateStructGEP(mem_type(d), p, 0)),
                          b.CreateLoad(part, b.CreateStructGEP(mem_type(d), p, 1)));
    }
    llvm::Value* v = b.CreateLoad(mem_type(d), elem_ptr(base, d, index));
    return d == DType::bool_ ? b.CreateICmpNE(v, b.getInt8(0)) : v;
  }
  void store(llvm::Value* base, DType d, llvm::Value* index, llvm::Value* v) {
    if (is_complex(d)) {
      llvm::Value* p = elem_ptr(base, d, index);
      b.CreateStore(re(v), b.CreateStructGEP(mem_type(d), p, 0));
      b.CreateStore(im(v), b.CreateStructGEP(mem_type(d), p, 1));
      return;
    }
    if (d == DType::bool_) v = b.CreateZExt(v, i8);
    b.CreateStore(v, elem_ptr(base, d, index));
  }

  // An alloca in the entry block (so mem2reg/SROA can promote it).
  llvm::AllocaInst* entry_alloca(llvm::Type* t, std::int64_t count = 1, unsigned align = 0) {
    llvm::IRBuilder<> eb(entry, entry->begin());
    auto* a = eb.CreateAlloca(t, count == 1 ? nullptr : c64(count));
    if (align) a->setAlignment(llvm::Align(align));
    return a;
  }

  // A temporary buffer of `bytes` bytes: on the stack when small, else
  // aligned_alloc(64, ...) with the out-of-memory exit.
  llvm::Value* temp(std::int64_t bytes) {
    if (bytes <= kStackTempBytes && stack_bytes + bytes <= kStackBudgetBytes) {
      stack_bytes += (bytes + 63) / 64 * 64;
      return entry_alloca(i8, std::max<std::int64_t>(bytes, 1), 64);
    }
    return pool_temp(c64((bytes + 63) / 64 * 64));
  }
  // The same for a size known only at run time (a constant size takes the
  // static path): always on the heap, at least 64 bytes, rounded up to a
  // multiple of 64 as aligned_alloc requires.
  llvm::Value* temp(llvm::Value* bytes) {
    if (auto k = konst(bytes)) return temp(*k);
    llvm::Value* n = smax(bytes, c64(1));
    llvm::Value* rounded = b.CreateAnd(b.CreateAdd(n, c64(63)), c64(~std::int64_t{63}));
    return pool_temp(rounded);
  }
  // A heap buffer of `bytes` (run-time) bytes that the caller tracks itself
  // (not in live_heap): a loop's resizable state, a result handed out.
  llvm::Value* heap_untracked(llvm::Value* bytes) {
    llvm::Value* p = heap(bytes);
    live_heap.pop_back();
    return p;
  }
  // Always on the heap (tracked in live_heap), whatever the size: a buffer
  // whose ownership leaves the function (a result the kernel allocates).
  llvm::Value* heap(llvm::Value* bytes) {
    llvm::Value* n = smax(bytes, c64(1));
    return heap_temp(b.CreateAnd(b.CreateAdd(n, c64(63)), c64(~std::int64_t{63})));
  }
  llvm::Value* heap_temp(llvm::Value* rounded) {
    auto fty = llvm::FunctionType::get(ptr, {i64, i64}, false);
    llvm::FunctionCallee alloc = mod.getOrInsertFunction("aligned_alloc", fty);
    return checked_alloc(b.CreateCall(alloc, {c64(64), rounded}));
  }
  // A temporary from the pool of session.hpp (kTempAllocRoutine): freed by
  // free_ptr with its size, kept for the kernel's next call.
  llvm::Value* pool_temp(llvm::Value* rounded) {
    llvm::Function* alloc = mod.getFunction(kTempAllocRoutine);
    if (!alloc) {
      alloc = llvm::Function::Create(llvm::FunctionType::get(ptr, {i64}, false), llvm::Function::ExternalLinkage,
                                     kTempAllocRoutine, mod);
      alloc->addRetAttr(llvm::Attribute::NoAlias);  // a fresh block, as aligned_alloc's
      alloc->addFnAttr(llvm::Attribute::NoUnwind);
    }
    llvm::Value* p = checked_alloc(b.CreateCall(alloc, {rounded}));
    pooled.emplace_back(p, rounded);
    return p;
  }
  llvm::Value* checked_alloc(llvm::Value* p) {
    exit_when(b.CreateIsNull(p), kKernelOutOfMemory, "alloc");
    live_heap.push_back(p);
    return p;
  }
  // At the current point (a block of its own): free every heap buffer the
  // function owns here and return `code`.
  void exit_with(llvm::Value* code) {
    for (llvm::Value* t : live_heap) free_ptr(t);
    for (llvm::Value* s : live_slots) free_ptr(b.CreateLoad(ptr, s));
    b.CreateRet(code);
  }
  // if (cond) { free what is owned; return code } (cond unlikely).
  void exit_when(llvm::Value* cond, std::int32_t code, const char* what) {
    llvm::Function* f = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(ctx, std::string(what) + ".failed", f);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx, std::string(what) + ".ok", f);
    b.CreateCondBr(cond, bad, ok, weights(1, 1000));
    b.SetInsertPoint(bad);
    exit_with(b.getInt32(code));
    b.SetInsertPoint(ok);
  }
  // if (code != 0) { free what is owned; return code | err }
  void exit_if_error(llvm::Value* code) {
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(ctx, "fault", fn);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx, "fault.no", fn);
    b.CreateCondBr(b.CreateICmpNE(code, b.getInt32(0)), bad, ok, weights(1, 1000));
    b.SetInsertPoint(bad);
    exit_with(b.CreateOr(code, b.CreateLoad(i32, err)));
    b.SetInsertPoint(ok);
  }
  void free_ptr(llvm::Value* p) {
    for (const auto& [q, bytes] : pooled)
      if (q == p) {
        auto pty = llvm::FunctionType::get(b.getVoidTy(), {ptr, i64}, false);
        b.CreateCall(mod.getOrInsertFunction(kTempFreeRoutine, pty), {p, bytes});
        return;
      }
    auto fty = llvm::FunctionType::get(b.getVoidTy(), {ptr}, false);
    b.CreateCall(mod.getOrInsertFunction("free", fty), {p});
  }
  // Free a temporary obtained from temp() (no-op for stack ones).
  void release(llvm::Value* p) {
    for (auto it = live_heap.begin(); it != live_heap.end(); ++it)
      if (*it == p) {
        free_ptr(p);
        live_heap.erase(it);
        return;
      }
  }

  llvm::MDNode* weights(std::uint32_t taken, std::uint32_t not_taken) {
    return llvm::MDBuilder(ctx).createBranchWeights(taken, not_taken);
  }

  // --- faults ------------------------------------------------------------
  // err |= cond ? bit : 0  (branch-free, so the loop stays vectorisable)
  void raise_if(llvm::Value* cond, std::int32_t bit) {
    llvm::Value* cur = b.CreateLoad(i32, err);
    b.CreateStore(b.CreateOr(cur, b.CreateSelect(cond, b.getInt32(static_cast<std::uint32_t>(bit)), b.getInt32(0))),
                  err);
  }

  // --- loops -------------------------------------------------------------
  // for (i = 0; i < n; ++i) body(i) — bottom-tested, n static. n == 1 emits
  // the body once with i = 0; n <= 0 emits nothing.
  void loop(std::int64_t n, const std::function<void(llvm::Value*)>& body, LoopHint hint = LoopHint::normal) {
    if (n <= 0) return;
    if (n == 1) {
      body(c64(0));
      return;
    }
    loop_dyn(c64(n), body, hint);
  }
  // The same with a run-time trip count (must be >= 1).
  void loop_dyn(llvm::Value* n, const std::function<void(llvm::Value*)>& body, LoopHint hint = LoopHint::normal) {
    llvm::BasicBlock* pre = b.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx, "loop", fn);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "loop.end", fn);
    b.CreateBr(head);
    b.SetInsertPoint(head);
    llvm::PHINode* i = b.CreatePHI(i64, 2, "i");
    i->addIncoming(c64(0), pre);
    body(i);
    llvm::Value* next = b.CreateAdd(i, c64(1), "i.next", true, true);
    i->addIncoming(next, b.GetInsertBlock());
    llvm::BranchInst* br = b.CreateCondBr(b.CreateICmpEQ(next, n), exit, head);
    if (hint != LoopHint::normal) {
      std::vector<llvm::Metadata*> ops{nullptr};
      if (hint == LoopHint::plain) {
        ops.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                                              llvm::ConstantAsMetadata::get(b.getFalse())}));
        ops.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")}));
      } else {
        ops.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.interleave.count"),
                                              llvm::ConstantAsMetadata::get(
                                                  b.getInt32(hint == LoopHint::long_reduction ? 8 : 4))}));
      }
      llvm::MDNode* md = llvm::MDNode::getDistinct(ctx, ops);
      md->replaceOperandWith(0, md);
      br->setMetadata(llvm::LLVMContext::MD_loop, md);
    }
    b.SetInsertPoint(exit);
  }
  // for (i = 0; i < n; ++i) with n static (the loop above) or known only at
  // run time, then guarded: a run-time size may be 0 (or, for a computed
  // trip count, negative), and the loop is bottom-tested.
  void loop(llvm::Value* n, const std::function<void(llvm::Value*)>& body, LoopHint hint = LoopHint::normal) {
    if (auto k = konst(n)) return loop(*k, body, hint);
    when(b.CreateICmpSGT(n, c64(0)), [&] { loop_dyn(n, body, hint); });
  }
  // for (i = start; i < end; i += step), start and step static, step > 0.
  void loop_step(std::int64_t start, llvm::Value* end, std::int64_t step,
                 const std::function<void(llvm::Value*)>& body, LoopHint hint = LoopHint::normal) {
    if (auto k = konst(end)) return loop_step(start, *k, step, body, hint);
    llvm::Value* span = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateSub(end, c64(start)), c64(0));
    llvm::Value* trips = b.CreateUDiv(b.CreateAdd(span, c64(step - 1)), c64(step));
    loop(trips, [&](llvm::Value* k) { body(b.CreateAdd(c64(start), b.CreateMul(k, c64(step), "", true, true), "", true, true)); }, hint);
  }
  // for (i = start; i < end; i += step), all static, step > 0.
  void loop_step(std::int64_t start, std::int64_t end, std::int64_t step,
                 const std::function<void(llvm::Value*)>& body, LoopHint hint = LoopHint::normal) {
    const std::int64_t trips = end > start ? (end - start + step - 1) / step : 0;
    loop(trips, [&](llvm::Value* k) { body(b.CreateAdd(c64(start), b.CreateMul(k, c64(step), "", true, true), "", true, true)); }, hint);
  }

  // if (cond) then()
  void when(llvm::Value* cond, const std::function<void()>& then) {
    llvm::BasicBlock* t = llvm::BasicBlock::Create(ctx, "then", fn);
    llvm::BasicBlock* e = llvm::BasicBlock::Create(ctx, "endif", fn);
    b.CreateCondBr(cond, t, e);
    b.SetInsertPoint(t);
    then();
    b.CreateBr(e);
    b.SetInsertPoint(e);
  }
  // Whether x and y are the same value: one instruction, or loads of the
  // same address computed the same way (the fused emitter reads an operand
  // once per use; GVN merges such loads later).
  static bool same_value(llvm::Value* x, llvm::Value* y, int depth = 4) {
    if (x == y) return true;
    if (depth == 0 || x->getType() != y->getType()) return false;
    auto* ix = llvm::dyn_cast<llvm::Instruction>(x);
    auto* iy = llvm::dyn_cast<llvm::Instruction>(y);
    if (!ix || !iy || ix->getOpcode() != iy->getOpcode() || ix->getNumOperands() != iy->getNumOperands() ||
        ix->mayWriteToMemory() || ix->getParent() != iy->getParent() || llvm::isa<llvm::PHINode>(ix) ||
        llvm::isa<llvm::CallBase>(ix) || !ix->isSameOperationAs(iy))
      return false;
    // Two loads of one address with no store between them (same block, the
    // emitter's straight-line element code).
    if (llvm::isa<llvm::LoadInst>(ix)) {
      if (iy->comesBefore(ix)) std::swap(ix, iy);
      for (auto it = std::next(ix->getIterator()); &*it != iy; ++it)
        if (it->mayWriteToMemory()) return false;
    }
    for (unsigned k = 0; k < ix->getNumOperands(); ++k)
      if (!same_value(ix->getOperand(k), iy->getOperand(k), depth - 1)) return false;
    return true;
  }

  // The index a that s wraps, when s is JAX's wrap of negative indices,
  // select(a < 0, a + n, a), possibly sign-extended (as s's type), else null.
  llvm::Value* unwrapped(llvm::Value* s) {
    using namespace llvm::PatternMatch;
    llvm::Value *v = s, *a = nullptr, *t = nullptr, *f = nullptr, *t0 = nullptr, *t1 = nullptr;
    if (llvm::Value* inner = nullptr; match(v, m_SExt(m_Value(inner)))) v = inner;
    if (!match(v, m_Select(m_SpecificICmp(llvm::ICmpInst::ICMP_SLT, m_Value(a), m_Zero()), m_Value(t), m_Value(f))) ||
        !match(t, m_Add(m_Value(t0), m_Value(t1))) || !same_value(f, a) ||
        !(same_value(t0, a) || same_value(t1, a)))
      return nullptr;
    return b.CreateSExtOrTrunc(a, s->getType());
  }

  // An index computed as JAX's wrap of negative indices, select(a < 0, a +
  // n, a) (`x.at(i)` with a signed i; sign-extended or not), used where it
  // must lie in [0, hi] (a gather clamps it there, a scatter drops the
  // update otherwise). Valid data has 0 <= a <= hi, where neither the wrap
  // nor the clamp or drop changes anything, so one unsigned compare of a
  // branches (weighted: likely) past them: in a scalar loop (a scatter's
  // updates, a CSR row) that is one fused compare-and-branch instead of
  // about eight instructions per index. slow(s) gives the index and a flag
  // (in range) for the other case; the result is their phis, with a and
  // true on the fast path, or nullopt when s is not such a wrap.
  std::optional<std::pair<llvm::Value*, llvm::Value*>> likely_in_range(
      llvm::Value* s, llvm::Value* hi, const std::function<std::pair<llvm::Value*, llvm::Value*>(llvm::Value*)>& slow) {
    llvm::Value* raw = unwrapped(s);
    if (!raw) return std::nullopt;
    llvm::BasicBlock* from = b.GetInsertBlock();
    llvm::BasicBlock* other = llvm::BasicBlock::Create(ctx, "index.wrap", fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, "index.ok", fn);
    b.CreateCondBr(b.CreateICmpULE(raw, hi), join, other, weights(1000, 1));
    b.SetInsertPoint(other);
    const auto [index, flag] = slow(s);
    llvm::BasicBlock* other_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    llvm::PHINode* pi = b.CreatePHI(s->getType(), 2, "index");
    pi->addIncoming(raw, from);
    pi->addIncoming(index, other_end);
    llvm::PHINode* pf = b.CreatePHI(b.getInt1Ty(), 2, "index.fits");
    pf->addIncoming(b.getTrue(), from);
    pf->addIncoming(flag, other_end);
    return std::make_pair(static_cast<llvm::Value*>(pi), static_cast<llvm::Value*>(pf));
  }

  // if (cond) yes() else no(), folded when cond is a constant.
  void either(llvm::Value* cond, const std::function<void()>& yes, const std::function<void()>& no) {
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(cond)) return c->isZero() ? no() : yes();
    llvm::BasicBlock* t = llvm::BasicBlock::Create(ctx, "then", fn);
    llvm::BasicBlock* f = llvm::BasicBlock::Create(ctx, "else", fn);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx, "endif", fn);
    b.CreateCondBr(cond, t, f);
    b.SetInsertPoint(t);
    yes();
    b.CreateBr(join);
    b.SetInsertPoint(f);
    no();
    b.CreateBr(join);
    b.SetInsertPoint(join);
  }

  // Only this instruction may be reassociated (a reduction's accumulator).
  static llvm::Value* reassoc(llvm::Value* v) {
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) {
      if (llvm::isa<llvm::FPMathOperator>(inst)) inst->setHasAllowReassoc(true);
    }
    return v;
  }
  // Allow fusing into an FMA (dot products only).
  static llvm::Value* contract(llvm::Value* v) {
    if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) {
      if (llvm::isa<llvm::FPMathOperator>(inst)) inst->setHasAllowContract(true);
    }
    return v;
  }
};

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
