// dynstage: array memory — reference-counted buffers and the allocator that
// recycles them (array.hpp's Storage holds one).
//
// Array memory: a buffer with an intrusive reference count. An owned buffer
// starts with a BufferHeader, followed by the elements; the header's
// `release` returns the block to where it came from (a free list, the large
// block pool, the heap) when the last reference goes. Buffer is the owning
// reference: the one thing copies of an array share.
//
// (Not std::shared_ptr<void>: its control block costs a virtual dispose and
// a virtual destroy per buffer on top of allocate_shared's machinery. Under
// callgrind an allocate/release pair took 106 instructions through it, 77
// with the header; a whole cached jit call at n = 1 takes ~520.)
//
// Recycled memory. A jitted function allocates its outputs on every call,
// so allocation is on the call path of a cached call.
//  - Large blocks (>= 1 MiB) come from the block pool (below), shared with
//    the kernels' temporaries, which hands them out again for
//    the same size: without this, each call with a large output maps fresh
//    pages from the OS and pays a page fault per 4 KiB (measured: 80 MB
//    outputs took longer to fault in than to compute).
//  - Small blocks (<= 1 KiB with the header) and shape vectors are kept per
//    thread, a few of each size: handing one out is a pointer pop, where
//    malloc/free pairs were a third of a cached call at n = 1.
// Both live in the implementation part below (one copy per program).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "../errors.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include <algorithm>
#include <limits>
#include <mutex>  // the block pool
#endif

namespace dyn::detail {

struct BufferHeader {
  std::atomic<std::int32_t> refs;
  std::uint32_t size_class;                 // of a small block (the free lists below)
  void (*release)(BufferHeader*) noexcept;  // frees the block, header included
};
static_assert(sizeof(BufferHeader) == 16, "the elements follow the header at malloc's alignment");

class Buffer {
public:
  Buffer() = default;
  explicit Buffer(BufferHeader* h) noexcept : h_(h) {}  // adopts a reference
  Buffer(const Buffer& o) noexcept : h_(o.h_) {
    if (h_) h_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Buffer(Buffer&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  Buffer& operator=(const Buffer& o) noexcept {
    Buffer(o).swap(*this);
    return *this;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer(std::move(o)).swap(*this);
    return *this;
  }
  ~Buffer() {
    if (h_) drop(h_);
  }
  void swap(Buffer& o) noexcept { std::swap(h_, o.h_); }
  long use_count() const noexcept { return h_ ? h_->refs.load(std::memory_order_relaxed) : 0; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

private:
  static void drop(BufferHeader* h) noexcept {
    // The last reference frees without a read-modify-write: nobody else can
    // add one (libstdc++'s shared_ptr does the same).
    if (h->refs.load(std::memory_order_acquire) == 1 || h->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
      h->release(h);
  }
  BufferHeader* h_ = nullptr;
};


struct BufferAllocation {
  Buffer owner;
  void* data;  // the first element: 16-byte aligned as malloc's, 64 for blocks of 1 MiB or more
};
// An uninitialised buffer of `bytes` bytes. Throws dyn::MemoryError (not
// std::bad_alloc) when the allocation fails: "OP: out of memory: cannot
// allocate N bytes", OP the allocation_site() (below).
BufferAllocation allocate_buffer(std::size_t bytes);
// Owns memory from std::malloc (results the kernel allocates): the last
// reference std::free's it. Frees `p` and throws dyn::MemoryError if it cannot.
Buffer adopt_malloced(void* p);

// What this thread is allocating for, named by the out-of-memory error:
// the primitive whose eager kernel runs (eager/kernels.hpp's impl sets it),
// or null ("array": an Array constructed directly). A jitted call names its
// results itself (jit/call.hpp). Constant-initialised: no TLS guard.
inline const char*& allocation_site() {
  thread_local const char* site = nullptr;
  return site;
}
// RAII: allocation_site() = `what` while it lives.
class AllocationSite {
public:
  explicit AllocationSite(const char* what) : prev_(allocation_site()) { allocation_site() = what; }
  ~AllocationSite() { allocation_site() = prev_; }
  AllocationSite(const AllocationSite&) = delete;
  AllocationSite& operator=(const AllocationSite&) = delete;

private:
  const char* prev_;
};
// The out-of-memory error of an allocation of `bytes` for allocation_site().
[[noreturn]] void allocation_failed(std::size_t bytes);

// Test hook of the block pool (defined with it below, tests/jit/test_block_pool.cpp):
// blocks handed out, and how many of them came fresh from the heap rather
// than from the pool. Counted, never timed.
struct BlockPoolCounts {
  std::int64_t taken = 0, fresh = 0;
};
BlockPoolCounts block_pool_counts();
// Arrays of at least this many bytes take their block from the pool.
inline constexpr std::size_t kLargeArrayBytes = std::size_t{1} << 20;

// `dst` = `src`, reusing a recycled vector when `dst` has no room.
void assign_shape(std::vector<std::int64_t>& dst, const std::vector<std::int64_t>& src);
// Keeps `v`'s heap block for assign_shape (Storage's destructor).
void recycle_shape(std::vector<std::int64_t>& v) noexcept;
#ifdef DYNSTAGE_IMPLEMENTATION

// The block pool: large blocks kept process-wide for the next request of
// the same size, by any thread. One pool serves both users of large blocks:
//  - array memory (allocate_buffer): a block of an array of >= 1 MiB
//    (kLargeArrayBytes) goes back to the pool when its last reference goes,
//    so a jitted function's large outputs reuse last call's pages;
//  - kernel temporaries (llvm/session.hpp's dynstage_temp_alloc/free: buffers
//    between fused groups, the GEMM's packing buffers): asked for and given
//    back within one call, so the next call of the same kernel finds them.
// Without it each call mapped such blocks afresh (glibc hands a large free
// block at the top of the heap back to the OS) and paid a page fault per
// 4 KiB: measured, 80 MB outputs took longer to fault in than to compute,
// and a quarter of jit(grad(mlp loss))'s time (docs/benchmarks.md, issues 20
// and 25). A freed block of >= 64 KiB is kept; the pool holds at most 512 MiB
// in 64 blocks, and past that the oldest blocks are freed. Sizes are rounded
// up to 64 bytes; every block is 64-byte aligned (a cache line, a full
// AVX-512 vector: kernels stream through large buffers). One shared pool
// also lets a temporary reuse a freed output's block of the same size.
class BlockPool {
public:
  static constexpr std::size_t kMinBytes = std::size_t{64} << 10;
  static constexpr std::size_t kMaxBlocks = 64;
  static constexpr std::size_t kMaxHeldBytes = std::size_t{512} << 20;

  static BlockPool& get();
  // A 64-byte aligned block of at least `bytes` bytes (null when the heap
  // has none: the callers report it).
  void* take(std::size_t bytes);
  // Gives back a block from take(bytes) (same `bytes`); null is ignored.
  void give(void* p, std::size_t bytes);
  BlockPoolCounts counts() const {
    return {taken_.load(std::memory_order_relaxed), fresh_.load(std::memory_order_relaxed)};
  }

private:
  BlockPool() = default;
  static std::size_t rounded(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64; }
  std::mutex mu_;
  std::vector<std::pair<void*, std::size_t>> blocks_;  // oldest first
  std::size_t held_ = 0;
  std::atomic<std::int64_t> taken_{0}, fresh_{0};
};
BlockPoolCounts block_pool_counts() { return BlockPool::get().counts(); }

BlockPool& BlockPool::get() {
  static BlockPool* pool = new BlockPool();  // never destroyed: outlives every array, kernels may run in static destructors
  return *pool;
}

void* BlockPool::take(std::size_t bytes) {
  const std::size_t want = rounded(bytes);
  taken_.fetch_add(1, std::memory_order_relaxed);
  if (want >= kMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = blocks_.size(); i-- > 0;)  // the most recently freed first
      if (blocks_[i].second == want) {
        void* p = blocks_[i].first;
        held_ -= want;
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
        return p;
      }
  }
  fresh_.fetch_add(1, std::memory_order_relaxed);
  return std::aligned_alloc(64, want);
}

void BlockPool::give(void* p, std::size_t bytes) {
  const std::size_t have = rounded(bytes);
  if (!p) return;
  if (have < kMinBytes || have > kMaxHeldBytes) return std::free(p);
  std::vector<void*> drop;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.emplace_back(p, have);
    held_ += have;
    while (held_ > kMaxHeldBytes || blocks_.size() > kMaxBlocks) {
      drop.push_back(blocks_.front().first);
      held_ -= blocks_.front().second;
      blocks_.erase(blocks_.begin());
    }
  }
  for (void* q : drop) std::free(q);
}

// Small blocks and shape vectors: this thread's free lists. A block freed on
// another thread than the one that allocated it joins that other thread's
// lists (blocks are plain operator new memory, interchangeable).
// ThreadCache is trivially destructible and zero-initialised, so the call
// path reaches it without a TLS guard; a ThreadCacheReaper, armed when the
// first block or vector is kept, empties it at thread exit and sets `gone`,
// so whatever is freed later on this thread (other thread_local destructors,
// static arrays at program exit) goes straight back to the heap.
struct ThreadCache {
  static constexpr std::size_t kGranule = 64;     // size classes: 64, 128, ..., 1024 bytes
  static constexpr std::size_t kClasses = 16;
  static constexpr std::uint32_t kPerClass = 16;  // so at most ~140 KiB held per thread
  static constexpr std::size_t kShapes = 16;
  using ShapeVec = std::vector<std::int64_t>;

  void* blocks[kClasses];  // singly linked through each block's first word
  std::uint32_t nblocks[kClasses];
  alignas(ShapeVec) unsigned char shapes[kShapes][sizeof(ShapeVec)];  // [0, nshapes) hold a vector
  std::size_t nshapes;
  bool armed, gone;

  ShapeVec& shape(std::size_t i) { return *std::launder(reinterpret_cast<ShapeVec*>(shapes[i])); }
  void arm();
};
thread_local ThreadCache thread_cache;

struct ThreadCacheReaper {
  bool armed = false;
  ~ThreadCacheReaper() {
    ThreadCache& tc = thread_cache;
    tc.gone = true;
    for (void*& head : tc.blocks)
      while (head) {
        void* next = *static_cast<void**>(head);
        ::operator delete(head);
        head = next;
      }
    while (tc.nshapes) std::destroy_at(&tc.shape(--tc.nshapes));
  }
};
thread_local ThreadCacheReaper thread_cache_reaper;

void ThreadCache::arm() {
  armed = true;
  thread_cache_reaper.armed = true;  // (constructs it, which registers its destructor)
}

// Small blocks: size class k holds (k + 1) * 64 bytes, the header included.
void release_small(BufferHeader* h) noexcept {
  const std::uint32_t k = h->size_class;
  ThreadCache& tc = thread_cache;
  if (!tc.gone) {
    if (!tc.armed) tc.arm();
    if (tc.nblocks[k] < ThreadCache::kPerClass) {
      *reinterpret_cast<void**>(h) = tc.blocks[k];
      tc.blocks[k] = h;
      ++tc.nblocks[k];
      return;
    }
  }
  ::operator delete(static_cast<void*>(h));
}

void release_heap(BufferHeader* h) noexcept { ::operator delete(static_cast<void*>(h)); }

// A large block: the header, the block's size, then (at 64 bytes) the elements.
constexpr std::size_t kLargeOffset = 64;
void release_large(BufferHeader* h) noexcept {
  std::size_t total = 0;
  std::memcpy(&total, reinterpret_cast<const char*>(h) + sizeof(BufferHeader), sizeof total);
  BlockPool::get().give(h, total);
}

[[noreturn]] void allocation_failed(std::size_t bytes) {
  const char* site = allocation_site();
  fail<MemoryError>(std::string(site ? site : "array") + ": out of memory: cannot allocate " + std::to_string(bytes) +
                    " bytes");
}

BufferAllocation allocate_buffer(std::size_t bytes) {
  constexpr std::size_t kHeader = sizeof(BufferHeader);
  BufferHeader* h = nullptr;
  std::size_t offset = kHeader;
  if (bytes <= ThreadCache::kClasses * ThreadCache::kGranule - kHeader) {
    const std::size_t k = (bytes + kHeader - 1) / ThreadCache::kGranule;
    ThreadCache& tc = thread_cache;
    void* p = tc.gone ? nullptr : tc.blocks[k];
    if (p) {
      tc.blocks[k] = *static_cast<void**>(p);
      --tc.nblocks[k];
    } else {
      p = ::operator new((k + 1) * ThreadCache::kGranule, std::nothrow);
      if (!p) allocation_failed(bytes);
    }
    h = static_cast<BufferHeader*>(p);
    h->size_class = static_cast<std::uint32_t>(k);
    h->release = release_small;
  } else if (bytes < kLargeArrayBytes) {
    void* p = ::operator new(kHeader + bytes, std::nothrow);
    if (!p) allocation_failed(bytes);
    h = static_cast<BufferHeader*>(p);
    h->release = release_heap;
  } else {
    if (bytes > std::numeric_limits<std::size_t>::max() - kLargeOffset) allocation_failed(bytes);
    const std::size_t total = kLargeOffset + bytes;
    void* p = BlockPool::get().take(total);
    if (!p) allocation_failed(bytes);
    h = static_cast<BufferHeader*>(p);
    std::memcpy(static_cast<char*>(p) + kHeader, &total, sizeof total);
    h->release = release_large;
    offset = kLargeOffset;
  }
  new (&h->refs) std::atomic<std::int32_t>(1);
  return BufferAllocation{Buffer(h), reinterpret_cast<char*>(h) + offset};
}

Buffer adopt_malloced(void* p) {
  struct Block {
    BufferHeader h;
    void* p;
  };
  auto* b = static_cast<Block*>(::operator new(sizeof(Block), std::nothrow));
  if (!b) {
    std::free(p);
    allocation_failed(sizeof(Block));
  }
  new (&b->h.refs) std::atomic<std::int32_t>(1);
  b->h.release = [](BufferHeader* h) noexcept {
    auto* blk = reinterpret_cast<Block*>(h);
    std::free(blk->p);
    ::operator delete(static_cast<void*>(blk));
  };
  b->p = p;
  return Buffer(&b->h);
}

// assign_shape's rare cases, out of line so that the common one (a
// recycled vector of the same rank) needs no registers saved.
[[gnu::noinline]] void fit_shape(std::vector<std::int64_t>& dst, std::size_t n) {
  if (dst.capacity() < n) dst.reserve(std::max<std::size_t>(n, 4));  // (room for the ranks it may be recycled for)
  dst.resize(n);
}

void assign_shape(std::vector<std::int64_t>& dst, const std::vector<std::int64_t>& src) {
  const std::size_t n = src.size();
  if (dst.capacity() < n) {
    ThreadCache& tc = thread_cache;
    if (tc.nshapes != 0 && tc.shape(tc.nshapes - 1).capacity() >= n) {
      ThreadCache::ShapeVec& v = tc.shape(--tc.nshapes);
      dst.swap(v);
      std::destroy_at(&v);
    }
  }
  // (Recycled vectors keep their size: at the same rank, just a copy.)
  if (dst.size() != n) fit_shape(dst, n);
  if (n) std::memcpy(dst.data(), src.data(), n * sizeof(std::int64_t));
}

void recycle_shape(std::vector<std::int64_t>& v) noexcept {
  ThreadCache& tc = thread_cache;
  if (tc.gone || tc.nshapes == ThreadCache::kShapes) return;
  if (!tc.armed) tc.arm();
  new (tc.shapes[tc.nshapes++]) ThreadCache::ShapeVec(std::move(v));  // (size kept: see assign_shape)
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
