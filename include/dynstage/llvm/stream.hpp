// dynstage: streaming stores, for outputs too large to stay in the cache.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION).
//
// A store to a line that is not in the cache first reads the line
// (write-allocate): a stencil step that reads a 128 MB plate and writes one
// moves 384 MB, not 256, and memory bandwidth is what bounds it.
// Non-temporal stores write whole lines without reading them, but LLVM
// vectorises a loop whose scalar store is `!nontemporal` only into scalar
// `movntsd`s (an unaligned vector store cannot be non-temporal). So a
// streamed range is computed in chunks of kStreamChunkBytes into a
// 64-byte-aligned buffer on the stack (the same vectorised loop as before,
// writing to L1) and copied out: the bytes up to the destination's first
// cache-line boundary and after its last one with memcpy, the whole lines in
// between with aligned 64-byte non-temporal stores. Chunks are placed by the
// range alone, never by addresses, so the values (which elements the vector
// loop or its scalar remainder computes) do not depend on where a buffer
// landed or on streaming. A range streams when what its root writes (an
// elementwise output, a concatenate, an update) is at least
// stream_threshold_bytes (by default nothing streams: below); otherwise the
// same loop writes the output directly. Once a range is written a fence orders its
// non-temporal stores before whatever the thread does next (they are weakly
// ordered on x86), so the thread that joins the tasks sees them.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <functional>
#include <limits>

#include "emit.hpp"

namespace dyn::detail::llvmjit {

inline constexpr std::int64_t kStreamChunkBytes = 8192;
inline constexpr std::int64_t kStreamLineBytes = 64;

// Outputs of at least this many bytes are streamed: by default none. On
// this host (an AMD EPYC, Zen 4, in a VM) the chunked copy-out measured
// slower than plain stores wherever it applied (docs/backend.md, "Streaming
// stores": the heat step 25.5 against 21.5 ms, a loop state of 128 MiB 13.0
// against 11.9 ms per iteration), while non-temporal stores issued from the
// computing loop itself were 1.4x faster than plain ones: the burst of
// 128 line stores per 8 KiB chunk, with no load in flight, is the cost.
// Until a copy-out that interleaves with the computation exists, streaming
// runs only when the test hook stream_bytes() (backend.hpp) sets a threshold.
inline constexpr std::int64_t kStreamNever = std::numeric_limits<std::int64_t>::max();
inline std::int64_t stream_threshold_bytes() {
  const std::int64_t hook = stream_bytes().load(std::memory_order_relaxed);
  return hook > 0 ? hook : kStreamNever;
}

// out[k] = value(k) for k in [begin, begin + count), a part of the `total`
// elements of dtype d that the root writes; streamed as above when total is
// large enough (else the plain loop; a `total` of 0: never streamed).
// `fence`: false when the caller streams the next range right after this one
// and fences there.
inline void emit_streamed_range(Emitter& E, llvm::Value* out, DType d, llvm::Value* total, llvm::Value* begin,
                                llvm::Value* count, const std::function<llvm::Value*(llvm::Value*)>& value,
                                bool fence = true) {
  auto& b = E.b;
  const auto es = static_cast<std::int64_t>(dtype_size(d));
  const std::int64_t threshold = stream_threshold_bytes();
  if (auto k = Emitter::konst(total); threshold == kStreamNever || (k && *k * es < threshold)) {
    E.loop(count, [&](llvm::Value* i) {
      llvm::Value* at = b.CreateAdd(begin, i, "", true, true);
      E.store(out, d, at, value(at));
    });
    return;
  }
  const std::int64_t chunk_elems = kStreamChunkBytes / es;
  llvm::Value* stream = b.CreateICmpSGE(b.CreateMul(total, E.c64(es)), E.c64(threshold));
  // Lifetime markers let LLVM's stack colouring give every streamed range of
  // a function the same 8 KiB.
  llvm::Value* chunk = E.entry_alloca(E.i8, kStreamChunkBytes, kStreamLineBytes);
  b.CreateLifetimeStart(chunk, b.getInt64(kStreamChunkBytes));
  llvm::Value* chunks = b.CreateUDiv(b.CreateAdd(count, E.c64(chunk_elems - 1)), E.c64(chunk_elems));
  E.loop(chunks, [&](llvm::Value* c) {
    llvm::Value* c0 = b.CreateAdd(begin, b.CreateMul(c, E.c64(chunk_elems), "", true, true), "", true, true);
    llvm::Value* m = E.smin(E.c64(chunk_elems), b.CreateSub(count, b.CreateMul(c, E.c64(chunk_elems))));
    llvm::Value* to = b.CreateInBoundsGEP(E.i8, out, b.CreateMul(c0, E.c64(es), "", true, true));
    llvm::Value* dst = b.CreateSelect(stream, chunk, to);
    E.loop(m, [&](llvm::Value* i) { E.store(dst, d, i, value(b.CreateAdd(c0, i, "", true, true))); });
    E.when(stream, [&] {
      // The bytes up to the destination's first line boundary, the whole
      // lines, then the rest.
      llvm::Value* bytes = b.CreateMul(m, E.c64(es), "", true, true);
      llvm::Value* gap = b.CreateAnd(b.CreateSub(E.c64(0), b.CreatePtrToInt(to, E.i64)), E.c64(kStreamLineBytes - 1));
      llvm::Value* head = E.smin(gap, bytes);
      b.CreateMemCpy(to, llvm::MaybeAlign(), chunk, llvm::MaybeAlign(kStreamLineBytes), head);
      llvm::Value* lines = b.CreateLShr(b.CreateSub(bytes, head), E.c64(6));
      auto* line = llvm::FixedVectorType::get(E.i64, kStreamLineBytes / 8);
      E.loop(
          lines,
          [&](llvm::Value* q) {
            llvm::Value* off = b.CreateAdd(head, b.CreateMul(q, E.c64(kStreamLineBytes), "", true, true), "", true, true);
            llvm::Value* v = b.CreateAlignedLoad(line, b.CreateInBoundsGEP(E.i8, chunk, off), llvm::Align(1));
            llvm::StoreInst* s =
                b.CreateAlignedStore(v, b.CreateInBoundsGEP(E.i8, to, off), llvm::Align(kStreamLineBytes));
            s->setMetadata(llvm::LLVMContext::MD_nontemporal,
                           llvm::MDNode::get(E.ctx, {llvm::ConstantAsMetadata::get(b.getInt32(1))}));
          },
          LoopHint::plain);
      llvm::Value* done = b.CreateAdd(head, b.CreateShl(lines, E.c64(6)), "", true, true);
      b.CreateMemCpy(b.CreateInBoundsGEP(E.i8, to, done), llvm::MaybeAlign(), b.CreateInBoundsGEP(E.i8, chunk, done),
                     llvm::MaybeAlign(), b.CreateSub(bytes, done));
    });
  });
  if (fence) E.when(stream, [&] { b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent); });
  b.CreateLifetimeEnd(chunk, b.getInt64(kStreamChunkBytes));
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
