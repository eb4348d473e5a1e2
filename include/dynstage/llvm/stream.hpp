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
// elementwise output, a concatenate, an update) is at least the host's
// last-level cache (stream_threshold_bytes); otherwise the same loop writes
// the output directly. Once a range is written a fence orders its
// non-temporal stores before whatever the thread does next (they are weakly
// ordered on x86), so the thread that joins the tasks sees them.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>

#include "emit.hpp"

namespace dyn::detail::llvmjit {

inline constexpr std::int64_t kStreamChunkBytes = 8192;
inline constexpr std::int64_t kStreamLineBytes = 64;

// The size of the last-level cache as Linux describes it
// (/sys/devices/system/cpu/cpu0/cache/index*/, the highest level), in bytes;
// 0 if it does not say. (glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) reads
// cpuid, which a hypervisor may fill with the whole host's: 320 MiB on this
// machine's 32 MiB VM.)
inline std::int64_t last_level_cache_bytes() {
  std::int64_t best_level = 0, bytes = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level(dir + "level"), size(dir + "size");
    std::int64_t l = 0, n = 0;
    char unit = 0;
    if (!(level >> l) || !(size >> n)) continue;
    size >> unit;
    if (unit == 'K') n <<= 10;
    else if (unit == 'M') n <<= 20;
    if (l >= best_level) best_level = l, bytes = n;
  }
  return bytes;
}

// Outputs of at least this many bytes are streamed: the last-level cache
// (32 MiB when Linux does not say), within [4 MiB, 256 MiB], unless the test
// hook stream_bytes() (backend.hpp) says otherwise.
inline std::int64_t stream_threshold_bytes() {
  if (const std::int64_t hook = stream_bytes().load(std::memory_order_relaxed); hook > 0) return hook;
  static const std::int64_t bytes = [] {
    const std::int64_t llc = last_level_cache_bytes();
    return std::clamp<std::int64_t>(llc > 0 ? llc : 32L << 20, 4L << 20, 256L << 20);
  }();
  return bytes;
}

// out[k] = value(k) for k in [begin, begin + count), a part of the `total`
// elements of dtype d that the root writes; streamed as above when total is
// large enough (else the plain loop; a `total` of 0: never streamed).
inline void emit_streamed_range(Emitter& E, llvm::Value* out, DType d, llvm::Value* total, llvm::Value* begin,
                                llvm::Value* count, const std::function<llvm::Value*(llvm::Value*)>& value) {
  auto& b = E.b;
  const auto es = static_cast<std::int64_t>(dtype_size(d));
  const std::int64_t threshold = stream_threshold_bytes();
  if (auto k = Emitter::konst(total); k && *k * es < threshold) {
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
  E.when(stream, [&] { b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent); });
  b.CreateLifetimeEnd(chunk, b.getInt64(kStreamChunkBytes));
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
