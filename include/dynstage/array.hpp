// dynstage: concrete host arrays.
//
// detail::Storage is the one untyped representation: a shared buffer, a data
// pointer into it, a dtype and a static shape. dyn::Array<T> is a typed
// handle on it and dyn::AnyArray the type-erased one; converting between them
// never copies. Value semantics: copies share the buffer, which is immutable
// while shared; mutable_data() copies first if anyone else holds it. So an
// array captured by a trace or a compiled kernel can never change under it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <ostream>
#include <string>
#include <vector>

#include "dim.hpp"
#include "dtype.hpp"
#include "errors.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include <limits>
#include <mutex>    // the large block pool
#include <sstream>  // the printer (out of line): users need not parse it
#endif

namespace dyn {

namespace detail {

// The error of checked_numel (out of line: user code only calls it).
[[noreturn]] void numel_error(const std::vector<std::int64_t>& shape, const char* what, bool negative);

inline std::int64_t checked_numel(const std::vector<std::int64_t>& shape, const char* what) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) numel_error(shape, what, true);
    if (d != 0 && n > (std::int64_t{1} << 48) / d) numel_error(shape, what, false);
    n *= d;
  }
  return n;
}

#ifdef DYNSTAGE_IMPLEMENTATION
void numel_error(const std::vector<std::int64_t>& shape, const char* what, bool negative) {
  if (negative) fail<ShapeError>(std::string(what) + ": negative dimension in shape " + shape_str(to_shape(shape)));
  fail<ShapeError>(std::string(what) + ": shape " + shape_str(to_shape(shape)) + " is too large to allocate");
}
#endif

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

// Recycled memory. A jitted function allocates its outputs on every call,
// so allocation is on the call path of a cached call.
//  - Large blocks (>= 1 MiB) are kept process-wide and handed out again for
//    the same size: without this, each call with a large output maps fresh
//    pages from the OS and pays a page fault per 4 KiB (measured: 80 MB
//    outputs took longer to fault in than to compute).
//  - Small blocks (<= 1 KiB with the header) and shape vectors are kept per
//    thread, a few of each size: handing one out is a pointer pop, where
//    malloc/free pairs were a third of a cached call at n = 1.
// Both live in the implementation part below (one copy per program).

struct BufferAllocation {
  Buffer owner;
  void* data;  // the first element: 16-byte aligned as malloc's, 64 for blocks of 1 MiB or more
};
// An uninitialised buffer of `bytes` bytes. Throws dyn::Error (not
// std::bad_alloc) when the allocation fails.
BufferAllocation allocate_buffer(std::size_t bytes);
// Owns memory from std::malloc (results the kernel allocates): the last
// reference std::free's it. Frees `p` and throws dyn::Error if it cannot.
Buffer adopt_malloced(void* p);

// `dst` = `src`, reusing a recycled vector when `dst` has no room.
void assign_shape(std::vector<std::int64_t>& dst, const std::vector<std::int64_t>& src);
// Keeps `v`'s heap block for assign_shape (Storage's destructor).
void recycle_shape(std::vector<std::int64_t>& v) noexcept;

struct Storage {
  Buffer owner;                    // keeps the buffer alive (empty for views)
  void* data = nullptr;            // first element
  DType dtype = DType::f64;
  std::vector<std::int64_t> shape;
  std::int64_t size = 0;           // number of elements
  bool borrowed = false;           // a view over user memory

  Storage() = default;
  Storage(const Storage&) = default;
  Storage(Storage&&) noexcept = default;
  Storage& operator=(const Storage&) = default;
  Storage& operator=(Storage&&) noexcept = default;
  ~Storage() {
    if (shape.capacity() != 0) recycle_shape(shape);
  }

  // Out of line (DYNSTAGE_IMPLEMENTATION): every Array constructor calls it,
  // and inline it would put the allocator into every user file's code.
  static Storage make(DType dt, std::vector<std::int64_t> shape, bool zero = true);

  // Uninitialised, for a shape whose element count `size` is already checked
  // (a cached kernel's outputs).
  static Storage make_sized(DType dt, std::vector<std::int64_t> shape, std::int64_t size) {
    Storage s;
    s.dtype = dt;
    s.size = size;
    s.shape = std::move(shape);
    BufferAllocation b = allocate_buffer(static_cast<std::size_t>(size) * dtype_size(dt));
    s.owner = std::move(b.owner);
    s.data = b.data;
    return s;
  }

  // The same, in place (the call path's reused output slots; out of line).
  void assign_sized(DType dt, const std::vector<std::int64_t>& shp, std::int64_t n);

  // Copy of the elements into a fresh buffer nobody else holds.
  Storage clone() const {
    Storage s = make(dtype, shape, false);
    if (size) std::memcpy(s.data, data, static_cast<std::size_t>(size) * dtype_size(dtype));
    return s;
  }

  // Copy-on-write: make the buffer exclusively ours.
  void make_unique() {
    if (!data) return;
    if (borrowed) return;  // a view writes through to the memory the user lent
    if (owner.use_count() > 1) *this = clone();
  }
};

#ifdef DYNSTAGE_IMPLEMENTATION
Storage Storage::make(DType dt, std::vector<std::int64_t> shape, bool zero) {
  const std::int64_t size = checked_numel(shape, "array");
  Storage s = make_sized(dt, std::move(shape), size);
  if (zero && size) std::memset(s.data, 0, static_cast<std::size_t>(size) * dtype_size(dt));
  return s;
}
#endif

[[noreturn]] void storage_dtype_error(DType want, DType got);
// Array(shape, values) given the wrong number of values (out of line: user
// code only calls it).
[[noreturn]] void values_count_error(std::size_t given, const std::vector<std::int64_t>& shape, std::int64_t size);

// numpy-style printing of `shape` elements of dtype `dt` at `data` (out of
// line: one copy per program).
void print_array(std::ostream& os, DType dt, const void* data, const std::vector<std::int64_t>& shape);

}  // namespace detail

class AnyArray;

template <class T>
class Array {
  static_assert(is_element_v<T>, "dyn::Array<T>: T must be bool, int32_t, int64_t, float or double");

public:
  using value_type = T;

  // Zeros of the given shape; Array() is a rank-0 zero.
  Array() : Array(std::vector<std::int64_t>{}) {}
  explicit Array(std::vector<std::int64_t> shape) : s_(detail::Storage::make(dtype_v<T>, std::move(shape))) {}
  Array(std::initializer_list<std::int64_t> shape) : Array(std::vector<std::int64_t>(shape)) {}
  // Shape and row-major values.
  Array(std::vector<std::int64_t> shape, const std::vector<T>& values)
      : s_(detail::Storage::make(dtype_v<T>, std::move(shape), false)) {
    if (static_cast<std::int64_t>(values.size()) != s_.size)
      detail::values_count_error(values.size(), s_.shape, s_.size);
    std::copy(values.begin(), values.end(), mutable_ptr());
  }
  Array(std::initializer_list<std::int64_t> shape, std::initializer_list<T> values)
      : Array(std::vector<std::int64_t>(shape), std::vector<T>(values)) {}

  static Array scalar(T v) {
    Array a(std::vector<std::int64_t>{});
    a.mutable_ptr()[0] = v;
    return a;
  }

  // Zero-copy borrow of user memory: the caller keeps `ptr` alive and unchanged
  // for as long as the view (or anything that captured it) is in use.
  static Array view(T* ptr, std::vector<std::int64_t> shape) {
    detail::Storage s;
    s.dtype = dtype_v<T>;
    s.size = detail::checked_numel(shape, "dyn::Array::view");
    // A null pointer would only fault later, far from the mistake.
    if (!ptr && s.size > 0)
      detail::fail<TypeError>("dyn::Array::view: a null pointer for shape " +
                              detail::shape_str(detail::to_shape(shape)) + " of " + std::to_string(s.size) +
                              " elements");
    s.shape = std::move(shape);
    s.data = ptr;
    s.borrowed = true;
    return Array(std::move(s));
  }
  static Array view(const T* ptr, std::vector<std::int64_t> shape) { return view(const_cast<T*>(ptr), std::move(shape)); }

  const std::vector<std::int64_t>& shape() const { return s_.shape; }
  std::int64_t shape(int i) const {
    if (i < 0) i += rank();
    if (i < 0 || i >= rank())
      detail::fail<IndexError>("shape(" + std::to_string(i) + ") out of range for rank " + std::to_string(rank()));
    return s_.shape[static_cast<std::size_t>(i)];
  }
  int rank() const { return static_cast<int>(s_.shape.size()); }
  std::int64_t size() const { return s_.size; }
  DType dtype() const { return dtype_v<T>; }
  const T* data() const { return static_cast<const T*>(s_.data); }
  T* mutable_data() {
    s_.make_unique();
    return mutable_ptr();
  }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }

  // Element access by index (row-major, bounds-checked).
  template <class... I>
  const T& operator()(I... idx) const {
    static_assert((std::is_integral_v<I> && ...), "dyn::Array::operator(): indices must be integers");
    const std::int64_t ix[] = {static_cast<std::int64_t>(idx)..., 0};
    return data()[flat_index(ix, sizeof...(I))];
  }

  // Internal: the untyped storage.
  const detail::Storage& storage() const { return s_; }
  explicit Array(const detail::Storage& s) : s_(s) {
    if (s_.dtype != dtype_v<T>) detail::storage_dtype_error(dtype_v<T>, s_.dtype);
  }
  explicit Array(detail::Storage&& s) : s_(std::move(s)) {
    if (s_.dtype != dtype_v<T>) detail::storage_dtype_error(dtype_v<T>, s_.dtype);
  }

private:
  T* mutable_ptr() { return static_cast<T*>(s_.data); }
  std::int64_t flat_index(const std::int64_t* ix, std::size_t n) const {
    if (static_cast<int>(n) != rank())
      detail::fail<IndexError>("dyn::Array: " + std::to_string(n) + " indices for an array of rank " +
                               std::to_string(rank()));
    std::int64_t flat = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (ix[k] < 0 || ix[k] >= s_.shape[k])
        detail::fail<IndexError>("dyn::Array: index " + std::to_string(ix[k]) + " is out of bounds for axis " +
                                 std::to_string(k) + " with size " + std::to_string(s_.shape[k]));
      flat = flat * s_.shape[k] + ix[k];
    }
    return flat;
  }
  detail::Storage s_;
};

// Type-erased array: the currency of eval_jaxpr and the kernel call path.
class AnyArray {
public:
  AnyArray() = default;
  template <class T>
  AnyArray(const Array<T>& a) : s_(a.storage()) {}  // NOLINT: implicit by design (API.md §3)
  explicit AnyArray(detail::Storage s) : s_(std::move(s)) {}

  DType dtype() const { return s_.dtype; }
  const std::vector<std::int64_t>& shape() const { return s_.shape; }
  int rank() const { return static_cast<int>(s_.shape.size()); }
  std::int64_t size() const { return s_.size; }
  const void* data() const { return s_.data; }
  bool valid() const { return s_.data != nullptr || s_.owner || s_.borrowed; }

  template <class T>
  Array<T> get() const {
    if (s_.dtype != dtype_v<T>)
      detail::fail<TypeError>("AnyArray::get<" + std::string(dtype_name(dtype_v<T>)) + ">(): the array has dtype " +
                              std::string(dtype_name(s_.dtype)));
    return Array<T>(s_);
  }

  const detail::Storage& storage() const { return s_; }
  detail::Storage& storage() { return s_; }

private:
  detail::Storage s_;
};

// 1-D helper: dyn::array({1.0, 2.0, 3.0}).
template <class T>
Array<T> array(std::initializer_list<T> values) {
  return Array<T>({static_cast<std::int64_t>(values.size())}, std::vector<T>(values));
}
template <class T>
Array<T> array(const std::vector<T>& values) {
  return Array<T>({static_cast<std::int64_t>(values.size())}, values);
}

// ---------------------------------------------------------------------------
// Printing, numpy style: [1. 2. 3.], [[1 2]\n [3 4]], True/False.

#ifdef DYNSTAGE_IMPLEMENTATION
namespace detail {

// Large blocks: a freed block of >= 1 MiB is kept (up to 8 blocks, 512 MiB
// in all) for the next request of the same size, by any thread.
class LargeBlockPool {
public:
  static constexpr std::size_t kMinBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxBlocks = 8;
  static constexpr std::size_t kMaxHeldBytes = std::size_t{512} << 20;

  static LargeBlockPool& get() {
    static LargeBlockPool* pool = new LargeBlockPool();  // never destroyed: outlives every array
    return *pool;
  }
  void* take(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (std::size_t i = 0; i < blocks_.size(); ++i)
        if (blocks_[i].second == bytes) {
          void* p = blocks_[i].first;
          held_ -= bytes;
          blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
          return p;
        }
    }
    // 64-byte aligned (a cache line, a full AVX-512 vector): kernels stream
    // through large outputs.
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void give(void* p, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (blocks_.size() < kMaxBlocks && held_ + bytes <= kMaxHeldBytes) {
        blocks_.emplace_back(p, bytes);
        held_ += bytes;
        return;
      }
    }
    std::free(p);
  }

private:
  std::mutex mu_;
  std::vector<std::pair<void*, std::size_t>> blocks_;
  std::size_t held_ = 0;
};

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
  LargeBlockPool::get().give(h, total);
}

[[noreturn]] void allocation_failed(std::size_t bytes) {
  fail<Error>("allocation of " + std::to_string(bytes) + " bytes failed");
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
  } else if (bytes < LargeBlockPool::kMinBytes) {
    void* p = ::operator new(kHeader + bytes, std::nothrow);
    if (!p) allocation_failed(bytes);
    h = static_cast<BufferHeader*>(p);
    h->release = release_heap;
  } else {
    if (bytes > std::numeric_limits<std::size_t>::max() - kLargeOffset) allocation_failed(bytes);
    const std::size_t total = kLargeOffset + bytes;
    void* p = LargeBlockPool::get().take(total);
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

void Storage::assign_sized(DType dt, const std::vector<std::int64_t>& shp, std::int64_t n) {
  dtype = dt;
  size = n;
  assign_shape(shape, shp);
  BufferAllocation b = allocate_buffer(static_cast<std::size_t>(n) * dtype_size(dt));
  owner = std::move(b.owner);
  data = b.data;
  borrowed = false;
}

void recycle_shape(std::vector<std::int64_t>& v) noexcept {
  ThreadCache& tc = thread_cache;
  if (tc.gone || tc.nshapes == ThreadCache::kShapes) return;
  if (!tc.armed) tc.arm();
  new (tc.shapes[tc.nshapes++]) ThreadCache::ShapeVec(std::move(v));  // (size kept: see assign_shape)
}

void values_count_error(std::size_t given, const std::vector<std::int64_t>& shape, std::int64_t size) {
  fail<ShapeError>("dyn::Array: " + std::to_string(given) + " values given for shape " + shape_str(to_shape(shape)) +
                   " of " + std::to_string(size) + " elements");
}

void storage_dtype_error(DType want, DType got) {
  fail<TypeError>(std::string("dyn::Array<") + std::string(dtype_name(want)) + ">: storage has dtype " +
                  std::string(dtype_name(got)));
}

template <class T>
std::string format_element(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os.precision(std::is_same_v<T, float> ? 7 : 8);
    os << v;
    std::string s = os.str();
    if (s.find_first_of(".e") == std::string::npos) s += ".";
    return s;
  }
}

template <class T>
void print_elements(std::ostream& os, const T* p, const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<std::string> items;
  items.reserve(static_cast<std::size_t>(n));
  std::size_t width = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    items.push_back(format_element(p[i]));
    width = std::max(width, items.back().size());
  }
  if constexpr (std::is_floating_point_v<T>) {
    // numpy aligns the decimal points: integer parts right-aligned, fractions
    // left-aligned ("[1.5 2.  3. ]"); nan and inf stay right-aligned.
    bool positional = true;
    std::size_t left = 0, right = 0;
    for (const auto& s : items) {
      if (s.find('e') != std::string::npos) positional = false;
      std::size_t dot = s.find('.');
      if (dot == std::string::npos) continue;
      left = std::max(left, dot);
      right = std::max(right, s.size() - dot - 1);
    }
    if (positional) {
      for (auto& s : items) {
        std::size_t dot = s.find('.');
        if (dot == std::string::npos) continue;
        s = std::string(left - dot, ' ') + s + std::string(right - (s.size() - dot - 1), ' ');
        width = std::max(width, s.size());
      }
    }
  }
  if (shape.empty()) {
    os << items[0];
    return;
  }
  // Recursive numpy layout with right-aligned, equal-width items.
  std::size_t pos = 0;
  auto rec = [&](auto& self, std::size_t axis, int indent) -> void {
    os << '[';
    std::int64_t len = shape[axis];
    for (std::int64_t i = 0; i < len; ++i) {
      if (axis + 1 == shape.size()) {
        if (i) os << ' ';
        const std::string& s = items[pos++];
        os << std::string(width - s.size(), ' ') << s;
      } else {
        if (i) {
          os << std::string(shape.size() - axis - 1, '\n') << std::string(static_cast<std::size_t>(indent + 1), ' ');
        }
        self(self, axis + 1, indent + 1);
      }
    }
    os << ']';
  };
  rec(rec, 0, 0);
}

void print_array(std::ostream& os, DType dt, const void* data, const std::vector<std::int64_t>& shape) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    print_elements(os, static_cast<const T*>(data), shape);
  });
}

}  // namespace detail
#endif  // DYNSTAGE_IMPLEMENTATION

template <class T>
std::ostream& operator<<(std::ostream& os, const Array<T>& a) {
  detail::print_array(os, dtype_v<T>, a.data(), a.shape());
  return os;
}

inline std::ostream& operator<<(std::ostream& os, const AnyArray& a) {
  detail::print_array(os, a.dtype(), a.data(), a.shape());
  return os;
}

// ---------------------------------------------------------------------------
// Comparison helpers for tests and users.

template <class T, class U>
bool array_equal(const Array<T>& a, const Array<U>& b) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (!(a.data()[i] == b.data()[i])) return false;
  return true;
}

// numpy.allclose: |a - b| <= atol + rtol * |b|, NaNs equal only with equal_nan.
template <class T, class U>
bool allclose(const Array<T>& a, const Array<U>& b, double rtol = 1e-7, double atol = 0.0, bool equal_nan = false) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    double x = static_cast<double>(a.data()[i]), y = static_cast<double>(b.data()[i]);
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue;  // also equal infinities
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) return false;
  }
  return true;
}

inline bool array_equal(const AnyArray& a, const AnyArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return array_equal(a.get<T>(), b.get<T>());
  });
}

inline bool allclose(const AnyArray& a, const AnyArray& b, double rtol = 1e-7, double atol = 0.0) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return allclose(a.get<T>(), b.get<T>(), rtol, atol);
  });
}

}  // namespace dyn
