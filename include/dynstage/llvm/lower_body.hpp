// dynstage: the body function: parameters, buffers, roots in order, results.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). emit_body: the function's signature and
// attributes, its buffers and temporaries, the prologue, every root in
// order, the results and the exits.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

// ---------------------------------------------------------------------------
// The body function.

// A loop body copies a carried input of at most this many elements (static
// size) into a buffer of its own (emit_body): up to about this size LLVM
// unrolls the body's loops over it fully and SROA removes the copy; beyond,
// the copy would be paid per iteration, and the body's loops are vectorised
// with a run-time overlap check instead (one per call, amortised).
inline constexpr std::int64_t kSnapshotMaxElems = 32;

// Parameter k of the function (inputs first, then results) is loop state: a
// carried input of a loop body, or one of its caller-sized results.
inline bool Lowering::is_carried(std::size_t k, std::size_t nin) const {
  if (k >= nin) return loop_body_ && !cells_[k - nin];
  const std::size_t nconst = j_.constvars.size();
  return k >= nconst && carried_[k - nconst];
}

// Parameter k of the function (inputs first, then results) may be written
// by in-place updates, or is a result that shares an input's buffer: an
// owned input (a donated argument, a loop state run in place) or a paired
// result (buffers.hpp). Neither is noalias, an owned input is not readonly.
inline bool Lowering::writable(std::size_t k, std::size_t nin) const {
  if (k >= nin) return plan_.paired[k - nin] >= 0;
  const std::size_t nconst = j_.constvars.size();
  if (k < nconst) return false;
  const auto m = static_cast<int>(k - nconst);
  if (static_cast<std::size_t>(m) < owned_.size() && owned_[static_cast<std::size_t>(m)]) return true;
  return std::find(plan_.paired.begin(), plan_.paired.end(), m) != plan_.paired.end();
}

inline llvm::Function* Lowering::emit_body(const std::string& name) {
  name_ = name;
  const std::size_t nv = j_.types.size();
  buf_.assign(nv, nullptr);
  rowoff_.assign(nv, nullptr);
  dimval_.assign(nv, nullptr);
  needs_multi_.assign(nv, -1);
  calls_transcendental_.assign(nv, -1);
  std::vector<int> ins(j_.constvars);
  ins.insert(ins.end(), j_.invars.begin(), j_.invars.end());
  const std::size_t nin = ins.size(), nout = j_.outvars.size();
  std::vector<llvm::Type*> params(nin + nout, E.ptr);
  auto* fty = llvm::FunctionType::get(E.i32, params, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, E.mod);
  E.fn = f;
  // Buffers: noalias (results never overlap anything; arguments are only
  // read), dereferenceable for their size when it is static. Not noalias: a
  // loop body's carried inputs and caller-sized results (lower_control.hpp,
  // "Aliasing"), whose every pair aliases across iterations.
  for (std::size_t k = 0; k < nin + nout; ++k) {
    if (!is_carried(k, nin) && !writable(k, nin)) f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoAlias);
    f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoCapture);
    f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoUndef);
    const Type& t = k < nin ? type(ins[k]) : j_.type_of(j_.outvars[k - nin]);
    const SymNumel n = sym_numel(t);
    std::int64_t bytes = n.k * static_cast<std::int64_t>(dtype_size(t.dtype));
    if (k >= nin && cells_[k - nin]) {  // a cell: the data pointer and the dimensions
      f->addDereferenceableParamAttr(static_cast<unsigned>(k), static_cast<std::uint64_t>(8 * (1 + t.rank())));
      continue;
    }
    if (n.is_static() && bytes > 0)
      f->addDereferenceableParamAttr(static_cast<unsigned>(k), static_cast<std::uint64_t>(bytes));
    if (k < nin && !writable(k, nin)) f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::ReadOnly);
  }
  E.begin_function(f);

  for (std::size_t k = 0; k < nin; ++k) buf_[static_cast<std::size_t>(ins[k])] = f->getArg(static_cast<unsigned>(k));
  // A loop body's small carried inputs are first copied into buffers of its
  // own (lower_control.hpp, "Aliasing"): the body then reads memory that
  // provably overlaps none of its results, with no noalias needed, so it
  // vectorises without run-time checks and, once inlined, SROA turns the
  // copy into loads at the body's start that GVN forwards from the previous
  // iteration's stores (the state stays in registers).
  for (std::size_t k = 0; k < nin; ++k) {
    if (!is_carried(k, nin) || writable(k, nin)) continue;
    const Type& t = type(ins[k]);
    const SymNumel n = sym_numel(t);
    if (!n.is_static() || n.k <= 0 || n.k > kSnapshotMaxElems) continue;
    const std::int64_t bytes = n.k * static_cast<std::int64_t>(dtype_size(t.dtype));
    llvm::Value* own = E.entry_alloca(E.i8, bytes, 64);
    b.CreateMemCpy(own, llvm::MaybeAlign(64), f->getArg(static_cast<unsigned>(k)), llvm::MaybeAlign(), bytes);
    buf_[static_cast<std::size_t>(ins[k])] = own;
  }
  // Runtime dimensions that are arguments: read once, here.
  for (int v : ins) read_dim(v);

  // Temporaries to free after eqn i.
  FreeAfter free_after(j_.eqns.size() + 1);
  cell_buf_.assign(nout, nullptr);
  // The buffer of root i's output, alive until after eqn `until` at least.
  // A one-row buffer (row_axes > 0) holds the dimensions after the row axes;
  // with a runtime row length it is allocated on the heap, once per group.
  // (Every output of the equation: a sort has several.)
  auto allocate = [&](std::size_t i, int until, std::size_t row_axes) {
    for (const int v : j_.eqns[i].outputs) {
      const auto vs = static_cast<std::size_t>(v);
      if (const int x = plan_.reuse[vs]; x >= 0) {  // updated in place (buffers.hpp); x's buffer lives long enough
        buf_[vs] = buf_[static_cast<std::size_t>(x)];
        continue;
      }
      if (const int slot = plan_.out_slot[vs]; slot >= 0) {
        const auto ks = static_cast<std::size_t>(slot);
        if (cells_[ks])  // allocated here; handed to the caller at the end
          buf_[vs] = cell_buf_[ks] = E.heap(bytes_of(dims_of(v), type(v).dtype));
        else
          buf_[vs] = f->getArg(static_cast<unsigned>(nin + ks));
        continue;
      }
      const bool one_row = plan_.row_local[vs];
      buf_[vs] = E.temp(bytes_of(dims_of(v), type(v).dtype, one_row ? row_axes : 0));
      const int last = one_row ? until : std::max(plan_.last_read[vs], until);
      free_after[static_cast<std::size_t>(last)].push_back(buf_[vs]);
    }
  };
  // The prologue: dimensions computed from scalars, before any loop.
  for (int i : plan_.prologue) {
    allocate(static_cast<std::size_t>(i), i, 0);
    emit_root(static_cast<std::size_t>(i));
    read_dim(j_.eqns[static_cast<std::size_t>(i)].outputs[0]);
  }
  for (std::size_t i = 0; i < j_.eqns.size(); ++i) {
    if (!plan_.live[i] || plan_.in_prologue[i]) continue;
    if (prim_kind(j_.eqns[i].prim) == Kind::effect) {  // a print: here, on the calling thread, in order
      emit_debug_print(j_.eqns[i]);
      for (llvm::Value* p : free_after[i]) E.release(p);
      continue;
    }
    const int v = j_.eqns[i].outputs[0];
    const auto vs = static_cast<std::size_t>(v);
    if (!plan_.materialised[vs]) continue;
    if (prim_kind(j_.eqns[i].prim) == Kind::control) {
      emit_control(i, free_after);
      for (int o : j_.eqns[i].outputs) read_dim(o);  // sizes computed by the loop or branch
      for (llvm::Value* p : free_after[i]) E.release(p);
      continue;
    }
    if (const int gi = plan_.group_of[i]; gi >= 0) {
      // Rule 4: the whole group at once; temporaries read inside it are freed after it.
      const RowGroup& g = plan_.groups[static_cast<std::size_t>(gi)];
      const auto last = static_cast<std::size_t>(g.members.back());
      for (int m : g.members) allocate(static_cast<std::size_t>(m), static_cast<int>(last), g.row_dims.size());
      emit_group(g);
      for (std::size_t k = i; k <= last; ++k)
        for (llvm::Value* p : free_after[k]) E.release(p);
      i = last;
      continue;
    }
    if (!plan_.in_epilogue.empty() && plan_.in_epilogue[i] >= 0 &&
        epilogue_root(static_cast<std::size_t>(plan_.in_epilogue[i])) == static_cast<int>(i)) {
      // Computed by its product's GEMM epilogue (lower_gemm_fusion.hpp), its buffer allocated there.
      read_dim(v);
      for (llvm::Value* p : free_after[i]) E.release(p);
      continue;
    }
    allocate(i, static_cast<int>(i), 0);
    if (const int t = concatenate_twin(i); t >= 0) {  // both in one set of nests
      const auto ts = static_cast<std::size_t>(t);
      const int tv = j_.eqns[ts].outputs[0];
      allocate(ts, t, 0);
      const Window twin{&j_.eqns[ts], buf_[static_cast<std::size_t>(tv)]};
      emit_window_root(j_.eqns[i], buf_[vs], &twin);
      read_dim(v);
      read_dim(tv);
      for (std::size_t k = i; k <= ts; ++k)
        for (llvm::Value* p : free_after[k]) E.release(p);
      i = ts;
      continue;
    }
    if (const int r = epilogue_root(i); r >= 0) allocate(static_cast<std::size_t>(r), r, 0);
    emit_root(i);
    read_dim(v);  // a size computed from array data
    for (llvm::Value* p : free_after[i]) E.release(p);
  }
  // Results that are not written in place: arguments, duplicates, literals.
  for (std::size_t k = 0; k < nout; ++k) {
    const Atom& a = j_.outvars[k];
    llvm::Value* dst = f->getArg(static_cast<unsigned>(nin + k));
    if (cells_[k]) {
      if (!a.is_var()) internal_error("LLVM lowering: a literal result allocated by the kernel");
      if (cell_buf_[k]) continue;  // written in place
      cell_buf_[k] = E.heap(bytes_of(dims_of(a.var), type(a.var).dtype));
      copy(cell_buf_[k], buf_[static_cast<std::size_t>(a.var)], type(a.var));
      continue;
    }
    if (!a.is_var()) {
      E.store(dst, a.lit.dtype, E.c64(0), E.constant(a.lit.dtype, a.lit.f, a.lit.i, a.lit.fi));
      continue;
    }
    if (plan_.out_slot[static_cast<std::size_t>(a.var)] == static_cast<int>(k)) continue;
    if (buf_[static_cast<std::size_t>(a.var)] == dst) continue;  // a loop ran in place in this result
    // A result paired with an input (in-place loop state, a donated
    // argument) whose value was updated in that very buffer: nothing to copy.
    if (const int m = plan_.paired[k]; m >= 0 && buf_[static_cast<std::size_t>(a.var)] == f->getArg(static_cast<unsigned>(j_.constvars.size() + static_cast<std::size_t>(m))))
      continue;
    copy(dst, buf_[static_cast<std::size_t>(a.var)], type(a.var));
  }
  for (llvm::Value* p : free_after[j_.eqns.size()]) E.release(p);
  if (std::find(cells_.begin(), cells_.end(), true) != cells_.end()) {
    // Results allocated here: on a fault everything is freed and the cells
    // stay untouched; on success each cell gets its pointer and shape, and
    // the buffer belongs to the caller.
    for (auto it = E.live_heap.begin(); it != E.live_heap.end();)
      it = std::find(cell_buf_.begin(), cell_buf_.end(), *it) == cell_buf_.end() ? (E.free_ptr(*it), E.live_heap.erase(it))
                                                                                   : std::next(it);
    E.exit_if_error(b.CreateLoad(E.i32, E.err));
    for (std::size_t k = 0; k < nout; ++k) {
      if (!cells_[k]) continue;
      llvm::Value* cell = f->getArg(static_cast<unsigned>(nin + k));
      b.CreateStore(cell_buf_[k], cell);
      const Dims dims = dims_of(j_.type_of(j_.outvars[k]));
      for (std::size_t d = 0; d < dims.size(); ++d)
        b.CreateStore(dims[d], b.CreateConstInBoundsGEP1_64(E.i64, cell, 1 + d));
    }
    E.live_heap.clear();
    b.CreateRet(b.getInt32(0));
    return f;
  }
  while (!E.live_heap.empty()) E.release(E.live_heap.back());
  b.CreateRet(b.CreateLoad(E.i32, E.err));
  return f;
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
