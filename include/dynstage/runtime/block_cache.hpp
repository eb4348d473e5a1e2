// dynstage: a cache of large freed blocks for the kernels' heap buffers.
// Part of the backend implementation (llvm/session.hpp includes it).
//
// A kernel allocates its large temporaries (a scan's residual rows, the
// buffers reverse mode keeps for the backward pass) with aligned_alloc and
// frees them before it returns. glibc hands blocks above its mmap threshold
// back to the operating system at free (and trims the heap's top), so the
// next call page-faults every page in again: measured on grad of a 100-step
// while-loop simulation (benchmarks/bench_issue20_sim.cpp), page faults and
// page clearing were two thirds of the kernel's time. The JIT resolves the
// kernels' aligned_alloc and free to the entries below (as it resolves
// lgamma to lgamma_r, llvm/session.hpp): free keeps a 64-byte-aligned block
// of kMinBytes or more for a later allocation that it fits (within an
// eighth), up to kMaxBytes in all; every other block goes to the C library.
// Cached blocks are ordinary malloc blocks, so a buffer that leaves a kernel
// (a result, released by std::free) needs nothing special, and the process's
// malloc settings are untouched. Objects exported ahead of time call the C
// library's aligned_alloc and free.
#pragma once

#include <cstddef>

namespace dyn::detail::block_cache {

// aligned_alloc(align, size) and free(p) as the kernels see them.
void* alloc_entry(std::size_t align, std::size_t size);
void free_entry(void* p);

}  // namespace dyn::detail::block_cache

#ifdef DYNSTAGE_IMPLEMENTATION

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

namespace dyn::detail::block_cache {

inline constexpr std::size_t kMinBytes = std::size_t{256} << 10;  // smaller blocks: malloc's free lists do well
inline constexpr std::size_t kMaxBytes = std::size_t{512} << 20;  // what the cache may hold

struct Cache {
  std::mutex m;
  std::multimap<std::size_t, void*> blocks;  // usable size -> block
  std::size_t bytes = 0;
};
// Never destroyed: kernels held by static caches may run during exit.
inline Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

void* alloc_entry(std::size_t align, std::size_t size) {
  if (size >= kMinBytes && align <= 64) {
    Cache& c = cache();
    std::lock_guard<std::mutex> g(c.m);
    const auto it = c.blocks.lower_bound(size);
    if (it != c.blocks.end() && it->first - size <= size / 8) {
      void* p = it->second;
      c.bytes -= it->first;
      c.blocks.erase(it);
      return p;
    }
  }
  return std::aligned_alloc(align, size);
}

void free_entry(void* p) {
  if (p == nullptr) return;
  const std::size_t n = malloc_usable_size(p);
  if (n >= kMinBytes && reinterpret_cast<std::uintptr_t>(p) % 64 == 0) {
    Cache& c = cache();
    std::lock_guard<std::mutex> g(c.m);
    if (c.bytes + n <= kMaxBytes) {
      c.blocks.emplace(n, p);
      c.bytes += n;
      return;
    }
  }
  std::free(p);
}

}  // namespace dyn::detail::block_cache

#endif  // DYNSTAGE_IMPLEMENTATION
