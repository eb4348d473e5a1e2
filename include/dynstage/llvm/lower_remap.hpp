// dynstage: the operand element a layout primitive's output element reads.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). Each layout primitive computes nothing: its operand
// is read at the index its map (ir/index_map.hpp) gives (remapped), a pad's
// where the map lands inside the operand (padded), a fused concatenate's in
// the piece holding the index (concatenated); the starts of those maps
// (start_of) and the index vectors of gathers and scatters
// (index_vector_component).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

inline llvm::Value* Lowering::index_vector_component(const Eqn& e, const AxisMap& m, Ix& ix) {
  // A fused concatenate of index pieces (fusion.hpp, index_vector_pieces):
  // component c is component c - offset of the piece that holds it.
  Atom idx = e.inputs[1];
  std::int64_t c = m.value;
  while (idx.is_var() && !buf_[static_cast<std::size_t>(idx.var)] && !plan_.materialised[static_cast<std::size_t>(idx.var)] &&
         def_eqn(idx.var).prim == Prim::concatenate &&
         std::get<ConcatenateParams>(def_eqn(idx.var).params).dimension + 1 == type(idx.var).rank()) {
    const Eqn& cat = def_eqn(idx.var);
    std::size_t k = 0;
    for (; k + 1 < cat.inputs.size(); ++k) {
      const std::int64_t n = type(cat.inputs[k].var).shape.back().value;
      if (c < n) break;
      c -= n;
    }
    idx = cat.inputs[k];
  }
  // (A scatter's updates may be a literal: rank 0.)
  const Atom& upd = e.inputs.at(e.prim == Prim::gather ? 0 : 2);
  const IndexMap iv = e.prim == Prim::gather ? index_map(j_, e, 1)
                                              : index_vector_map(std::get<ScatterParams>(e.params).update_window_dims,
                                                                 upd.is_var() ? type(upd.var).rank() : 0);
  Ix& r = new_ix(dims_of(idx.var));
  for (const AxisMap& a : iv.axes)
    r.multi.push_back(a.out_axis >= 0 ? axis(ix, static_cast<std::size_t>(a.out_axis)) : E.c64(c));
  return b.CreateSExt(operand(idx, r), E.i64);
}

inline llvm::Value* Lowering::start_of(const Eqn& e, const AxisMap& m, std::size_t axis, llvm::Value* limit, Ix* ix) {
  switch (m.start) {
    case AxisMap::Start::constant: return E.c64(m.value);
    case AxisMap::Start::dim_operand: return dim_operand(e.inputs[static_cast<std::size_t>(m.input)]);
    case AxisMap::Start::clamped: {
      llvm::Value* s = b.CreateSExt(operand(e.inputs[static_cast<std::size_t>(m.input)], scalar_ix()), E.i64);
      s = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, s, E.c64(0));
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, s, limit);
    }
    case AxisMap::Start::gathered: {
      // An empty operand axis has nothing to read: stop the kernel (eager
      // raises the same IndexError). Static limits are checked here.
      if (const auto k = Emitter::konst(limit); k && *k < 0) {
        E.exit_with(b.getInt32(kKernelGatherEmpty));
        b.SetInsertPoint(llvm::BasicBlock::Create(E.ctx, "gather.dead", b.GetInsertBlock()->getParent()));
      } else if (!Emitter::konst(limit)) {
        E.exit_when(b.CreateICmpSLT(limit, E.c64(0)), kKernelGatherEmpty, "gather.empty");
      }
      auto clamp = [&](llvm::Value* s) {
        s = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, s, E.c64(0));
        return std::make_pair(b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, s, limit), b.getTrue());
      };
      note_gather_operand(e.inputs[0]);
      llvm::Value* s = index_vector_component(e, m, *ix);
      // Branching on the likely case pays in a scalar nest only: a branch in
      // a vectorised elementwise nest became a slower masked form (7%).
      if (scalar_nest_)
        if (const auto fast = E.likely_in_range(s, limit, clamp)) return fast->first;
      return clamp(s).first;
    }
    case AxisMap::Start::scattered: return index_vector_component(e, m, *ix);
    case AxisMap::Start::last: return b.CreateSub(dims_of(e.inputs[0].var)[axis], E.c64(1));
    case AxisMap::Start::concat_offset: {
      llvm::Value* off = E.c64(0);
      for (std::size_t k = 0; k < static_cast<std::size_t>(m.input); ++k) off = E.add(off, dims_of(e.inputs[k].var)[axis]);
      return off;
    }
  }
  internal_error("LLVM lowering: an axis map with an unknown start");
}

inline llvm::Value* Lowering::remapped(const Eqn& e, Ix& ix) {
  const IndexMap m = index_map(j_, e);
  if (m.form == IndexMap::Form::iota)
    return convert(DType::i64, type(e.outputs[0]).dtype, axis(ix, static_cast<std::size_t>(m.dimension)));
  if (m.form == IndexMap::Form::window) internal_error("LLVM lowering: a window write reached the fused emitter");
  const Atom& x = e.inputs[0];
  if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
  const auto key = std::make_pair(static_cast<int>(&e - j_.eqns.data()), ix.id);
  auto it = remaps_.find(key);
  if (it == remaps_.end()) {
    const Dims xd = dims_of(x.var);
    Ix& r = new_ix(xd);
    if (m.form == IndexMap::Form::linear) {  // row-major order is unchanged
      r.lin = lin(ix);
    } else if (m.form == IndexMap::Form::pad) {
      return padded(e, ix, r);
    } else {
      const Dims od = dims_of(e.outputs[0]);
      for (std::size_t i = 0; i < xd.size(); ++i) {
        const AxisMap& a = m.axes[i];
        if (a.out_axis < 0) {  // a constant, or a collapsed gathered axis (slice size 1)
          r.multi.push_back(start_of(e, a, i, b.CreateSub(xd[i], E.c64(1)), &ix));
          continue;
        }
        const auto oa = static_cast<std::size_t>(a.out_axis);
        llvm::Value* o = axis(ix, oa);
        // (A negative stride, rev's -1, wraps as unsigned: no nuw there.)
        const bool nuw = a.stride > 0;
        if (a.stride != 1) o = b.CreateMul(o, E.c64(a.stride), "", nuw, true);
        llvm::Value* start = start_of(e, a, i, b.CreateSub(xd[i], od[oa]), &ix);
        r.multi.push_back(Emitter::is_k(start, 0) ? o : b.CreateAdd(start, o, "", nuw, true));
      }
    }
    it = remaps_.emplace(key, &r).first;
  }
  return operand(x, *it->second);
}

// pad (form pad): the operand at ((o - lo) / (interior + 1)) per axis where
// that is an integer inside the operand on every axis (pad_source), else the
// padding value. The operand is read at the index clamped into range and
// the select picks: a fused operand has no branch to hide behind. An operand
// empty at run time (size 0 along some axis) is read at index 0 on every
// axis, its element 0, which every buffer has room for (buffers are at
// least 64 bytes: Emitter::temp, allocate_buffer); a statically empty one
// is not read at all.
inline llvm::Value* Lowering::padded(const Eqn& e, Ix& ix, Ix& r) {
  const IndexMap m = index_map(j_, e);
  const Atom& x = e.inputs[0];
  const Dims xd = dims_of(x.var);
  llvm::Value* nonempty = nullptr;  // null: every size is a constant > 0
  for (llvm::Value* d : xd) {
    if (Emitter::is_k(d, 0)) return operand(e.inputs[1], ix);
    if (!Emitter::konst(d)) {
      llvm::Value* p = b.CreateICmpSGT(d, E.c64(0));
      nonempty = nonempty ? b.CreateAnd(nonempty, p) : p;
    }
  }
  llvm::Value* inside = b.getTrue();
  for (std::size_t i = 0; i < xd.size(); ++i) {
    const AxisMap& a = m.axes[i];
    llvm::Value* t = axis(ix, static_cast<std::size_t>(a.out_axis));
    if (a.value != 0) t = b.CreateSub(t, E.c64(a.value), "", false, true);
    llvm::Value* q = t;
    if (a.stride != 1) {  // t >= 0 where it counts: the remainder is checked with it
      q = b.CreateSDiv(t, E.c64(a.stride));
      inside = b.CreateAnd(inside, b.CreateICmpEQ(b.CreateSRem(t, E.c64(a.stride)), E.c64(0)));
    }
    inside = b.CreateAnd(inside, b.CreateAnd(b.CreateICmpSGE(q, E.c64(0)), b.CreateICmpSLT(q, xd[i])));
    q = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, q, b.CreateSub(xd[i], E.c64(1)));
    q = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, q, E.c64(0));
    r.multi.push_back(nonempty ? b.CreateSelect(nonempty, q, E.c64(0)) : q);
  }
  return b.CreateSelect(inside, operand(x, r), operand(e.inputs[1], ix));
}

// A fused concatenate along axis a before the last (fusion.hpp,
// rows_of_buffers): the element at ix is piece p's at ix[a] - offset_p, p the
// first piece whose range [offset_p, offset_p + size_p) holds ix[a]. Every
// piece has a buffer: p chooses the buffer, its offset and its size by
// selects on ix[a], and one load reads the element. Within a run of the last
// axis the choice is loop-invariant, so LLVM hoists it and the load stays
// contiguous: the loop vectorises as over one buffer. (A one-row buffer of a
// row group holds the elements from its row's linear index on: its base is
// moved back by that much, so it is addressed as a whole buffer.)
inline llvm::Value* Lowering::concatenated(const Eqn& e, Ix& ix) {
  const auto a = static_cast<std::size_t>(std::get<ConcatenateParams>(e.params).dimension);
  const DType d = type(e.outputs[0]).dtype;
  llvm::Value* i = axis(ix, a);
  llvm::Value *base = nullptr, *off = nullptr, *size = nullptr;
  Dims pd;
  std::vector<std::tuple<llvm::Value*, llvm::Value*, llvm::Value*>> pieces;  // (base, offset, size)
  llvm::Value* first = nullptr;
  for (std::size_t k = 0; k < e.inputs.size(); ++k) {
    const auto v = static_cast<std::size_t>(e.inputs[k].var);
    if (!buf_[v]) internal_error("LLVM lowering: a fused concatenate's piece has no buffer");
    pd = dims_of(e.inputs[k].var);
    llvm::Value* p = buf_[v];
    if (llvm::Value* row = rowoff_[v])
      p = b.CreateGEP(E.i8, p, b.CreateMul(row, E.c64(-static_cast<std::int64_t>(dtype_size(d)))));
    if (!first) first = p;
    // The piece's offset along a: its box's start (the window form of the map).
    if (!Emitter::is_k(pd[a], 0)) pieces.emplace_back(p, window_starts(e, k)[a], pd[a]);
  }
  // Every piece statically empty: so is the concatenate, and its readers'
  // loops never run; the load below reads a buffer that exists.
  if (pieces.empty()) pieces.emplace_back(first, E.c64(0), E.c64(0));
  // Last piece first: the outermost select is the first piece that holds i.
  for (std::size_t q = pieces.size(); q-- > 0;) {
    const auto& [p, o, n] = pieces[q];
    if (!base) {
      base = p, off = o, size = n;
      continue;
    }
    llvm::Value* here = b.CreateICmpSLT(i, E.add(o, n));
    base = b.CreateSelect(here, p, base);
    off = b.CreateSelect(here, o, off);
    size = b.CreateSelect(here, n, size);
  }
  pd[a] = size;
  Ix& r = new_ix(pd);
  for (std::size_t k = 0; k < pd.size(); ++k) r.multi.push_back(k == a ? b.CreateSub(i, off, "", true, true) : axis(ix, k));
  return E.load(base, d, lin(r));
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
