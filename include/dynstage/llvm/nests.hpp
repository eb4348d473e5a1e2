// dynstage: element indices and loop nests of the lowering.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION).
//
// An index (Ix) carries a multi-index and/or a row-major linear index and
// derives the other lazily, so purely elementwise nests run as one flat loop
// over contiguous memory, which LLVM vectorises. Every loop nest of the
// lowering is built by `loops`: one loop per axis of a range of axes,
// carrying the multi-index and the row-major linear index. Values computed at
// an index are cached per (variable, index), and the operand index a layout
// primitive maps an index to is built once per (equation, index): a value
// used twice at the same index is computed once.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "emit.hpp"

namespace dyn::detail::llvmjit {

// The dimensions of an array as i64 values: constants for static
// dimensions, run-time values for the others (Emitter::konst tells them apart).
using Dims = std::vector<llvm::Value*>;

// An index into an array of shape `dims`: the multi-index and/or the
// row-major linear index, each derived from the other on demand.
struct Ix {
  Dims dims;
  std::vector<llvm::Value*> multi;  // empty until known (always empty for rank 0)
  llvm::Value* lin = nullptr;
  int id = 0;
  // In a row group's member nest (fusion rule 4): the row axes [0, t) are
  // the row loop's indices and the other axes follow from inner_lin, the
  // linear index within the row (no division by the row length).
  std::vector<llvm::Value*> prefix;
  llvm::Value* inner_lin = nullptr;
};

// The current row of a row group: its multi-index over the group's row axes
// and its row-major linear index.
struct Row {
  std::vector<llvm::Value*> multi;
  llvm::Value* lin = nullptr;
};

class Nests {
public:
  explicit Nests(Emitter& e) : E(e), b(e.b) {}

protected:
  Emitter& E;
  llvm::IRBuilder<>& b;
  std::deque<Ix> ixs_;                                 // the current loop body's indices
  std::map<std::pair<int, int>, llvm::Value*> memo_;  // (var, ix id) -> value
  std::map<std::pair<int, int>, Ix*> remaps_;          // (eqn, ix id) -> operand index
  Ix* scalar_ix_ = nullptr;
  int next_ix_ = 0;

  static bool unit(llvm::Value* d) { return Emitter::is_k(d, 1); }
  llvm::Value* numel(const Dims& dims, std::size_t from = 0) {
    llvm::Value* n = E.c64(1);
    for (std::size_t i = from; i < dims.size(); ++i) n = E.mul(n, dims[i]);
    return n;
  }
  Dims strides_of(const Dims& dims) {
    Dims s(dims.size());
    llvm::Value* acc = E.c64(1);
    for (std::size_t i = dims.size(); i-- > 0;) {
      s[i] = acc;
      acc = E.mul(acc, dims[i]);
    }
    return s;
  }
  // l * dim + i: one more axis of a row-major linear index.
  llvm::Value* lin_step(llvm::Value* l, llvm::Value* dim, llvm::Value* i) {
    return unit(dim) ? l : b.CreateAdd(b.CreateMul(l, dim, "", true, true), i, "", true, true);
  }

  // --- indices -----------------------------------------------------------
  // A new loop body: values and indices of the previous one are out of scope.
  void begin_body() {
    ixs_.clear();
    memo_.clear();
    remaps_.clear();
    scalar_ix_ = nullptr;
  }
  Ix& new_ix(Dims dims) {
    ixs_.push_back(Ix{std::move(dims), {}, nullptr, next_ix_++, {}, nullptr});
    return ixs_.back();
  }
  // The first index of a new body: multi-index and/or linear index as known.
  Ix& body_ix(const Dims& dims, std::vector<llvm::Value*> multi, llvm::Value* lin) {
    begin_body();
    Ix& ix = new_ix(dims);
    ix.multi = std::move(multi);
    ix.lin = lin;
    return ix;
  }
  Ix& scalar_ix() {
    if (!scalar_ix_) {
      scalar_ix_ = &new_ix({});
      scalar_ix_->lin = E.c64(0);
    }
    return *scalar_ix_;
  }
  llvm::Value* lin(Ix& ix) {
    if (ix.lin) return ix.lin;
    const auto st = strides_of(ix.dims);
    llvm::Value* acc = E.c64(0);
    for (std::size_t d = 0; d < ix.dims.size(); ++d)
      if (!unit(ix.dims[d])) acc = b.CreateAdd(acc, b.CreateMul(ix.multi[d], st[d], "", true, true), "", true, true);
    ix.lin = acc;
    return acc;
  }
  // (Runtime dimensions divide by run-time values here; loops that need
  // multi-indices mostly get them from nested loops instead, see nest().)
  llvm::Value* axis(Ix& ix, std::size_t d) {
    if (ix.multi.empty()) {
      const bool in_row = !ix.prefix.empty() && ix.inner_lin;
      const std::size_t t = in_row ? ix.prefix.size() : 0;
      const Dims inner(ix.dims.begin() + static_cast<std::ptrdiff_t>(t), ix.dims.end());
      const auto st = strides_of(inner);
      llvm::Value* l = in_row ? ix.inner_lin : ix.lin;
      if (in_row) ix.multi = ix.prefix;
      for (std::size_t k = 0; k < inner.size(); ++k) {
        if (unit(inner[k])) {
          ix.multi.push_back(E.c64(0));
          continue;
        }
        llvm::Value* q = unit(st[k]) ? l : b.CreateUDiv(l, st[k]);
        ix.multi.push_back(k == 0 ? q : b.CreateURem(q, inner[k]));
      }
    }
    return ix.multi[d];
  }

  // --- loop nests --------------------------------------------------------
  // THE loop-nest builder: one loop per axis in [from, to) of `dims`,
  // outermost first, setting multi[a] to axis a's index; `body` gets the
  // row-major linear index, starting from lin0 (lin0 * the axes' sizes plus
  // the position within them). The innermost loop gets `innermost` as its
  // hint. Runtime dimensions give loops with run-time trip counts (guarded:
  // a dimension may be 0).
  void loops(const Dims& dims, std::size_t from, std::size_t to, std::vector<llvm::Value*>& multi, llvm::Value* lin0,
             const std::function<void(llvm::Value*)>& body, LoopHint innermost = LoopHint::normal) {
    std::function<void(std::size_t, llvm::Value*)> level = [&](std::size_t a, llvm::Value* l) {
      if (a == to) return body(l);
      E.loop(dims[a], [&](llvm::Value* i) {
        multi[a] = i;
        level(a + 1, lin_step(l, dims[a], i));
      }, a + 1 == to ? innermost : LoopHint::normal);
    };
    level(from, lin0);
  }

  // A nest over all of `dims` whose body gets a fresh index. flat: one loop
  // over the linear index (the multi-index is derived if asked for).
  void nest(const Dims& dims, bool flat, const std::function<void(Ix&)>& body) {
    llvm::Value* n = numel(dims);
    if (Emitter::is_k(n, 0)) return;
    if (flat || dims.empty()) {
      E.loop(n, [&](llvm::Value* i) { body(body_ix(dims, {}, i)); });
      return;
    }
    std::vector<llvm::Value*> multi(dims.size());
    loops(dims, 0, dims.size(), multi, E.c64(0), [&](llvm::Value* l) { body(body_ix(dims, multi, l)); });
  }
};

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
