// dynstage: lowering of the canonical dot_general, C[b] = A[b] (MxK) x B[b] (KxN),
// all three row-major and contiguous; A may be stored transposed (KxM, "tn":
// x^T y, contracting both operands' first axis) and B transposed (NxK, "nt":
// x y^T, contracting both last axes), the forms of a product's gradient
// (canonicalize.hpp keeps the operand as it is stored instead of
// materialising a transpose). Part of the backend implementation.
//
// Three loop nests, chosen from the static shape:
//  - N == 1 (matrix-vector, dot product): one fused multiply-add reduction
//    per row, reassociable so it vectorises over k.
//  - integers, or small float products: i-k-j (C row += A[i,k] * B row),
//    which LLVM vectorises over j. Integers wrap, as eager.
//  - float products of at least kBlockedFlops multiply-adds: the blocked
//    GEMM routine (lower_gemm.hpp), with fused operands packed and
//    elementwise consumers applied in its epilogue (lower_gemm_fusion.hpp).
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <functional>
#include <vector>

#include "emit.hpp"
#include "lower_gemm.hpp"
#include "lower_gemm_fusion.hpp"

namespace dyn::detail::llvmjit {

// --- N == 1 and i-k-j ------------------------------------------------------

// The lhs element (row bi of the flattened (batch, row), at k): `arow` is
// bi * K, the row's start in a row-major (B,M,K) lhs.
using LhsElement = std::function<llvm::Value*(llvm::Value* bi, llvm::Value* arow, llvm::Value* k)>;

// cur + x * y of complex values, the product inlined ((ac - bd) + (ad + bc)i,
// eager's order: emit_complex_matmul and the fused-lhs matvec agree).
inline llvm::Value* complex_mul_add(Emitter& E, DType d, llvm::Value* cur, llvm::Value* x, llvm::Value* y) {
  auto& b = E.b;
  llvm::Value *a = E.re(x), *bb = E.im(x), *c = E.re(y), *dd = E.im(y);
  llvm::Value* re = b.CreateFAdd(E.re(cur), b.CreateFSub(b.CreateFMul(a, c), b.CreateFMul(bb, dd)));
  llvm::Value* im = b.CreateFAdd(E.im(cur), b.CreateFAdd(b.CreateFMul(a, dd), b.CreateFMul(bb, c)));
  return E.make_complex(d, re, im);
}

inline void emit_matvec_of(Emitter& E, DType d, const DotShape& s, const LhsElement& lhs, llvm::Value* Bm,
                           llvm::Value* C) {
  auto& b = E.b;
  const bool fl = is_float(d), cx = is_complex(d);
  llvm::Type* t = E.reg_type(d);
  llvm::AllocaInst* acc = E.entry_alloca(t);
  // (M >= 1 inside the loop: B * M > 0 there.)
  llvm::Value* mdiv = Emitter::is_k(s.M, 0) ? E.c64(1) : s.M;
  E.loop(E.mul(s.B, s.M), [&](llvm::Value* bi) {  // (batch, row) flattened
    llvm::Value* batch = b.CreateUDiv(bi, mdiv);
    llvm::Value* arow = b.CreateMul(bi, s.K, "", true, true);
    llvm::Value* bcol = b.CreateMul(batch, s.K, "", true, true);
    b.CreateStore(cx ? E.constant(d, 0, 0, 0) : E.number(d, 0), acc);
    E.loop(s.K, [&](llvm::Value* k) {
      llvm::Value* x = lhs(bi, arow, k);
      llvm::Value* y = E.load(Bm, d, b.CreateAdd(bcol, k, "", true, true));
      llvm::Value* cur = b.CreateLoad(t, acc);
      // (a complex lhs fused into the matvec: the complex product, in k order)
      llvm::Value* r = cx ? complex_mul_add(E, d, cur, x, y)
                       : fl ? Emitter::reassoc(Emitter::contract(b.CreateFAdd(cur, Emitter::contract(b.CreateFMul(x, y)))))
                            : b.CreateAdd(cur, b.CreateMul(x, y));
      b.CreateStore(r, acc);
    }, LoopHint::reduction);
    E.store(C, d, bi, b.CreateLoad(t, acc));
  });
}

// A stored transposed, (B,K,M) (issue 25, item 2: a transposed matrix is
// read where it is stored, not copied first): C[b] = sum over k of row k of
// A[b] times x[b,k], an axpy per k that streams through A in storage order
// and vectorises over i; every C element is still summed in k order.
// `lhs` gives the lhs element at its linear index in the stored (B,K,M).
using LhsAt = std::function<llvm::Value*(llvm::Value* linear)>;
inline void emit_matvec_t_of(Emitter& E, DType d, const DotShape& s, const LhsAt& lhs, llvm::Value* Bm, llvm::Value* C) {
  auto& b = E.b;
  const bool fl = is_float(d), cx = is_complex(d);
  E.loop(s.B, [&](llvm::Value* bt) {
    llvm::Value* crow = b.CreateMul(bt, s.M, "", true, true);
    E.loop(s.M, [&](llvm::Value* i) { E.store(C, d, b.CreateAdd(crow, i, "", true, true), E.number(d, 0)); });
    E.loop(s.K, [&](llvm::Value* k) {
      llvm::Value* bk = b.CreateAdd(b.CreateMul(bt, s.K, "", true, true), k, "", true, true);
      llvm::Value* y = E.load(Bm, d, bk);
      llvm::Value* arow = b.CreateMul(bk, s.M, "", true, true);
      E.loop(s.M, [&](llvm::Value* i) {
        llvm::Value* ci = b.CreateAdd(crow, i, "", true, true);
        llvm::Value* x = lhs(b.CreateAdd(arow, i, "", true, true));
        llvm::Value* c = E.load(C, d, ci);
        // (a complex lhs fused into the nest, seed 24056: the complex product)
        E.store(C, d, ci, cx   ? complex_mul_add(E, d, c, x, y)
                          : fl ? Emitter::contract(b.CreateFAdd(c, Emitter::contract(b.CreateFMul(x, y))))
                               : b.CreateAdd(c, b.CreateMul(x, y)));
      });
    });
  });
}

inline void emit_matvec(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, llvm::Value* C) {
  if (s.ta) return emit_matvec_t_of(E, d, s, [&](llvm::Value* i) { return E.load(A, d, i); }, Bm, C);
  emit_matvec_of(E, d, s, [&](llvm::Value*, llvm::Value* arow, llvm::Value* k) {
    return E.load(A, d, E.b.CreateAdd(arow, k, "", true, true));
  }, Bm, C);
}

inline void emit_ikj(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, llvm::Value* C) {
  auto& b = E.b;
  const bool fl = is_float(d);
  E.loop(s.B, [&](llvm::Value* bt) {
    E.loop(s.M, [&](llvm::Value* i) {
      llvm::Value* row = b.CreateAdd(b.CreateMul(bt, s.M, "", true, true), i, "", true, true);
      llvm::Value* crow = b.CreateMul(row, s.N, "", true, true);
      llvm::Value* arow = b.CreateMul(row, s.K, "", true, true);
      E.loop(s.N, [&](llvm::Value* j) { E.store(C, d, b.CreateAdd(crow, j, "", true, true), E.number(d, 0)); });
      E.loop(s.K, [&](llvm::Value* k) {
        // (A stored (B,K,M): read where it is, A[bt,k,i].)
        auto at_t = [&] {
          llvm::Value* bk = b.CreateAdd(b.CreateMul(bt, s.K, "", true, true), k, "", true, true);
          return b.CreateAdd(b.CreateMul(bk, s.M, "", true, true), i, "", true, true);
        };
        llvm::Value* a = E.load(A, d, s.ta ? at_t() : b.CreateAdd(arow, k, "", true, true));
        llvm::Value* brow = b.CreateMul(b.CreateAdd(b.CreateMul(bt, s.K, "", true, true), k, "", true, true),
                                        s.N, "", true, true);
        E.loop(s.N, [&](llvm::Value* j) {
          llvm::Value* ci = b.CreateAdd(crow, j, "", true, true);
          llvm::Value* y = E.load(Bm, d, b.CreateAdd(brow, j, "", true, true));
          llvm::Value* c = E.load(C, d, ci);
          llvm::Value* r = fl ? Emitter::contract(b.CreateFAdd(c, Emitter::contract(b.CreateFMul(a, y))))
                              : b.CreateAdd(c, b.CreateMul(a, y));
          E.store(C, d, ci, r);
        });
      });
    });
  });
}

// The nests other than the GEMM routine read A where it is stored (either
// form) and B as (B,K,N): a B stored transposed is copied into that layout
// first for the i-k-j nest, whose inner loop runs along B's rows (the
// matrix-vector nest needs no copy: with N == 1 both layouts are the same
// memory). They run small products, so the copy is cheap, and it is exact:
// the same bits as the plain product. dot_copies_rhs (canonicalize.hpp)
// tells the planner's test hook (layout_copies, fusion.hpp) about it.
inline void with_plain_operands(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, bool matvec,
                                const std::function<void(llvm::Value*, llvm::Value*)>& body) {
  auto& b = E.b;
  const bool tb = s.tb && !matvec;
  if (!tb) return body(A, Bm);
  // src (B, cols, rows) -> a temporary (B, rows, cols).
  auto untranspose = [&](llvm::Value* src, llvm::Value* rows, llvm::Value* cols) {
    llvm::Value* n = E.mul(E.mul(s.B, rows), cols);
    llvm::Value* dst = E.temp(E.mul(n, E.c64(static_cast<std::int64_t>(dtype_size(d)))));
    E.loop(s.B, [&](llvm::Value* bt) {
      E.loop(rows, [&](llvm::Value* r) {
        llvm::Value* drow = b.CreateMul(b.CreateAdd(b.CreateMul(bt, rows, "", true, true), r, "", true, true), cols, "", true, true);
        llvm::Value* sb = b.CreateMul(bt, cols, "", true, true);
        E.loop(cols, [&](llvm::Value* c) {
          llvm::Value* si = b.CreateAdd(b.CreateMul(b.CreateAdd(sb, c, "", true, true), rows, "", true, true), r, "", true, true);
          E.store(dst, d, b.CreateAdd(drow, c, "", true, true), E.load(src, d, si));
        });
      });
    });
    return dst;
  };
  llvm::Value* Bc = untranspose(Bm, s.K, s.N);
  body(A, Bc);
  E.release(Bc);
}

// The loop nest is chosen from the shape: statically when B, M, N, K are
// static (as before), else by run-time tests on the sizes, each folded away
// when the sizes it reads are static (a runtime-N product with a static
// N-independent choice emits one nest only).
// Complex products: a plain loop nest, C[b,i,j] = sum over k in order of
// A[b,i,k] B[b,k,j] with the inlined complex product (eager's matmul_ikj on
// complex values), reading a transposed operand where it is stored.
inline void emit_complex_matmul(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm,
                                llvm::Value* C) {
  auto& b = E.b;
  llvm::AllocaInst* acc = E.entry_alloca(E.reg_type(d));
  auto idx = [&](llvm::Value* x, llvm::Value* y, llvm::Value* cols) {
    return b.CreateAdd(b.CreateMul(x, cols, "", true, true), y, "", true, true);
  };
  E.loop(s.B, [&](llvm::Value* bi) {
    llvm::Value* aoff = b.CreateMul(bi, E.mul(s.M, s.K), "", true, true);
    llvm::Value* boff = b.CreateMul(bi, E.mul(s.K, s.N), "", true, true);
    llvm::Value* coff = b.CreateMul(bi, E.mul(s.M, s.N), "", true, true);
    E.loop(s.M, [&](llvm::Value* i) {
      E.loop(s.N, [&](llvm::Value* jj) {
        b.CreateStore(E.constant(d, 0, 0, 0), acc);
        E.loop(s.K, [&](llvm::Value* k) {
          llvm::Value* x = E.load(A, d, b.CreateAdd(aoff, s.ta ? idx(k, i, s.M) : idx(i, k, s.K), "", true, true));
          llvm::Value* y = E.load(Bm, d, b.CreateAdd(boff, s.tb ? idx(jj, k, s.K) : idx(k, jj, s.N), "", true, true));
          b.CreateStore(complex_mul_add(E, d, b.CreateLoad(E.reg_type(d), acc), x, y), acc);
        });
        E.store(C, d, b.CreateAdd(coff, idx(i, jj, s.N), "", true, true), b.CreateLoad(E.reg_type(d), acc));
      });
    });
  });
}

inline void emit_matmul(Emitter& E, DType d, const DotShape& s, llvm::Value* A, llvm::Value* Bm, llvm::Value* C) {
  auto& b = E.b;
  if (is_complex(d)) return emit_complex_matmul(E, d, s, A, Bm, C);
  auto k = [](llvm::Value* v) { return Emitter::konst(v); };
  auto matvec = [&] {
    with_plain_operands(E, d, s, A, Bm, true, [&](llvm::Value* a, llvm::Value* bm) { emit_matvec(E, d, s, a, bm, C); });
  };
  auto ikj = [&] {
    with_plain_operands(E, d, s, A, Bm, false, [&](llvm::Value* a, llvm::Value* bm) { emit_ikj(E, d, s, a, bm, C); });
  };
  if (k(s.B) && k(s.M) && k(s.N) && k(s.K)) {
    const std::int64_t B = *k(s.B), M = *k(s.M), N = *k(s.N), K = *k(s.K);
    if (B == 0 || M == 0 || N == 0) return;
    if (K == 0) {
      E.loop(B * M * N, [&](llvm::Value* i) { E.store(C, d, i, E.number(d, 0)); });
      return;
    }
    if (N == 1) return matvec();
    if (is_float(d) && M * N * K >= kBlockedFlops && N >= 8 && M >= 4) return emit_blocked(E, d, s, A, Bm, C);
    return ikj();
  }
  // Runtime sizes: matvec and i-k-j are correct for any sizes >= 0 (their
  // loops are guarded; K == 0 writes zeros), the blocked kernel runs only
  // when M*N*K >= kBlockedFlops (so every size >= 1).
  auto blocked_or_ikj = [&] {
    if (!is_float(d)) return ikj();
    llvm::Value* flops = E.mul(E.mul(s.M, s.N), s.K);
    llvm::Value* big = b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(flops, E.c64(kBlockedFlops)), b.CreateICmpSGE(s.N, E.c64(8))),
                                   b.CreateICmpSGE(s.M, E.c64(4)));
    E.either(big, [&] { emit_blocked(E, d, s, A, Bm, C); }, ikj);
  };
  E.either(b.CreateICmpEQ(s.N, E.c64(1)), matvec, blocked_or_ikj);
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
