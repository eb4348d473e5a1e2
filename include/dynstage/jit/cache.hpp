// dynstage: dyn::jit's kernel cache — signatures of calls, cache entries,
// matching a call against an entry without allocating, and the compile log
// (definitions of what jit.hpp declares in dyn::detail; call.hpp fills
// and runs the entries).
//
// Compiled in exactly one translation unit per program, the one that defines
// DYNSTAGE_IMPLEMENTATION (src/dynstage.cpp under Meson); everywhere else
// this header is empty. None of it depends on the user's function, so one
// copy serves every jitted function of the program.
#pragma once

#include "jit.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Environment switches, read once.

struct JitEnv {
  bool log_compiles = false;
  std::string dump_dir;
  static const JitEnv& get() {
    static const JitEnv env = [] {
      JitEnv e;
      if (const char* v = std::getenv("DYNSTAGE_LOG_COMPILES")) e.log_compiles = *v && std::string(v) != "0";
      if (const char* v = std::getenv("DYNSTAGE_DUMP")) e.dump_dir = v;
      return e;
    }();
    return env;
  }
};

std::atomic<JitLogHook>& jit_log_hook() {
  static std::atomic<JitLogHook> hook{nullptr};
  return hook;
}

// Whether compile-log lines are wanted, and where they go: the hook if set
// (tests), else stderr when DYNSTAGE_LOG_COMPILES is set.
bool jit_logging() { return JitEnv::get().log_compiles || jit_log_hook().load(std::memory_order_acquire); }

void jit_log(const std::string& line) {
  if (JitLogHook h = jit_log_hook().load(std::memory_order_acquire)) h(line);
  else if (JitEnv::get().log_compiles) std::fprintf(stderr, "%s\n", line.c_str());
}

// printf into a std::string (for log lines).
template <class... A>
std::string formatted(const char* fmt, A... a) {
  const int n = std::snprintf(nullptr, 0, fmt, a...);
  std::string r(static_cast<std::size_t>(n > 0 ? n : 0), '\0');
  std::snprintf(r.data(), r.size() + 1, fmt, a...);
  return r;
}

std::string leaf_sig_str(const LeafSig& l) {
  std::string s = std::string(dtype_name(l.dtype)) + "[";
  for (std::size_t i = 0; i < l.shape.size(); ++i) s += (i ? "," : "") + std::to_string(l.shape[i]);
  return s + "]";
}

std::string signature_str(const Signature& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.leaves.size(); ++i) r += (i ? ", " : "") + leaf_sig_str(s.leaves[i]);
  return r + ")";
}

std::string static_value_str(void (*print)(std::ostream&, const void*), const void* value, const char* type_name) {
  if (!print) return std::string("a value of type ") + type_name;
  std::ostringstream os;
  print(os, value);
  return os.str();
}

std::string explain_miss(const Signature& now, const Signature* prev) {
  if (!prev) return "first call";
  const Signature& old = *prev;
  if (old.arg_types != now.arg_types && !(old.arg_types && now.arg_types && *old.arg_types == *now.arg_types))
    return "the types of the arguments (pytree structure or static argument types) changed";
  if (old.statics.equal && !old.statics.equal(old.statics.values.get(), now.statics.values.get()))
    return old.statics.explain ? old.statics.explain(old.statics.values.get(), now.statics.values.get())
                               : "a static argument's value changed";
  if (old.vector_sizes != now.vector_sizes || old.arg_leaf_begin != now.arg_leaf_begin ||
      old.leaves.size() != now.leaves.size())
    return "the pytree structure of the arguments changed";
  for (std::size_t i = 0; i < now.leaves.size(); ++i) {
    if (old.leaves[i] == now.leaves[i]) continue;
    std::size_t arg = 0;
    while (arg + 1 < now.arg_leaf_begin.size() && now.arg_leaf_begin[arg + 1] <= i) ++arg;
    std::string what = old.leaves[i].dtype != now.leaves[i].dtype ? "dtype" : "shape";
    return "argument leaf #" + std::to_string(i) + " (in non-static argument #" + std::to_string(arg) + ") changed " +
           what + " from " + leaf_sig_str(old.leaves[i]) + " to " + leaf_sig_str(now.leaves[i]);
  }
  return "the signature differs only in its hash (collision)";
}

inline std::span<const std::int64_t> leaf_dims(const LeafRef& l) { return {l.dims, l.rank}; }

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// ---------------------------------------------------------------------------
// Cache entries.

// Kernel arguments and results a call passes on the stack (run_entry).
constexpr std::size_t kStackArgs = 16;

struct JitEntry {
  Signature sig;
  ClosedJaxpr jaxpr;                     // keeps the array constants alive
  std::shared_ptr<Kernel> kernel;        // freeing the entry frees the code
  KernelFn fn = nullptr;
  std::vector<const void*> const_ptrs;   // data pointers of the constants
  std::vector<LeafSig> outs;             // output types (static shapes; see `dynamic`)
  std::vector<std::int64_t> out_sizes;   // their element counts, checked once
  TreeDef out_tree;
  std::size_t implicit_outs = 0;         // leading outputs not returned to the caller

  // Symbolic and dynamic dimensions: the kernel takes the values of the
  // implicit dimension arguments, and the outputs' shapes are evaluated from
  // the dimension variables at each call (solved from the argument shapes,
  // or read from integer scalar arguments that size arrays).
  bool dynamic = false;
  std::shared_ptr<const Polymorphism> poly;
  std::vector<DimLeaf> dim_leaves;
  std::vector<std::string> dim_leaf_names;
  // Whether dim_leaves[i] really sizes an array (every i64[] scalar argument
  // gets a dimension variable while tracing, in case it is used as a size;
  // only those used must be non-negative at call time).
  std::vector<bool> dim_leaf_sizes;
  std::vector<Shape> out_shapes;         // every output, implicit ones first
  // Outputs whose size is computed inside the kernel (a loop that resizes
  // its state, a cond, a size computed from data): the kernel allocates them
  // and returns pointer and shape through a cell of `cell_words` int64s
  // (backend.hpp); cell_offset[k] is output k's cell, or -1.
  std::vector<bool> kernel_sized;
  std::vector<std::ptrdiff_t> cell_offset;
  std::size_t cell_words = 0;
  // dyn::donate_argnums: the leaves donated (array leaves of the donated
  // arguments), and per output the donated leaf whose buffer it is
  // (CompileResult::result_aliases), or -1.
  std::vector<std::size_t> donated_leaves;
  std::vector<int> alias_leaf;
  // Static shapes, at most kStackArgs results, no donation: the hit path's inlined case.
  bool plain = false;
  std::atomic<std::uint64_t> last_used{0};

  // In-flight state: set once by the compiling thread. `compiled` lets a
  // hit skip the mutex once the kernel exists.
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  std::exception_ptr error;
  std::atomic<bool> compiled{false};

  void wait() {
    if (compiled.load(std::memory_order_acquire)) return;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ready; });
    if (error) std::rethrow_exception(error);
  }
  void finish(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ready = true;
      if (!e) compiled.store(true, std::memory_order_release);
      error = std::move(e);
    }
    cv.notify_all();
  }
};

inline std::uint64_t next_cache_id() {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct JitCache {
  const std::uint64_t id = next_cache_id();  // never reused, unlike the address
  // Bumped whenever an entry leaves `entries`: invalidates the threads' MRU slots.
  std::atomic<std::uint64_t> generation{0};
  mutable std::mutex mu;
  std::unordered_multimap<std::uint64_t, std::shared_ptr<JitEntry>> entries;
  std::size_t capacity = 64;
  std::atomic<std::uint64_t> tick{0};
  std::atomic<std::size_t> traces{0}, compiles{0}, hits{0}, evictions{0}, disk_hits{0};
  double compile_seconds = 0, trace_seconds = 0, lower_seconds = 0, llvm_seconds = 0;  // under mu
  std::size_t dump_counter = 0;
  // Hits served from a thread's MRU slot are counted in a cell of that
  // thread's own, not with an atomic add on a line every caller writes (one
  // uncontended add measured 8-17 ns on this machine, a sixth of a cached
  // call, and contended it bounces the line between cores): cells by
  // thread, under mu, summed by stats(). Only the owning thread writes its
  // cell; a cell outlives its thread, and a later thread with the same
  // scratch address continues it.
  std::deque<std::pair<const CallScratch*, std::atomic<std::uint64_t>>> hit_cells;

  std::atomic<std::uint64_t>* hit_cell(const CallScratch* thread) {
    for (auto& [t, n] : hit_cells)
      if (t == thread) return &n;
    auto& cell = hit_cells.emplace_back(std::piecewise_construct, std::forward_as_tuple(thread), std::forward_as_tuple(0));
    return &cell.second;
  }

  // The least recently used finished entry; called with mu held.
  void evict_if_needed() {
    while (entries.size() > capacity) {
      auto victim = entries.end();
      for (auto it = entries.begin(); it != entries.end(); ++it) {
        {
          std::lock_guard<std::mutex> lock(it->second->mu);
          if (!it->second->ready) continue;
        }
        if (victim == entries.end() || it->second->last_used < victim->second->last_used) victim = it;
      }
      if (victim == entries.end()) return;  // everything is in flight
      entries.erase(victim);
      generation.fetch_add(1, std::memory_order_release);
      ++evictions;
    }
  }

  const JitEntry* most_recent() const {
    const JitEntry* best = nullptr;
    for (const auto& [h, e] : entries)
      if (!best || e->last_used > best->last_used) best = e.get();
    return best;
  }
};

std::shared_ptr<JitCache> make_jit_cache(std::size_t capacity) {
  auto c = std::make_shared<JitCache>();
  c->capacity = capacity;
  return c;
}

JitStats jit_stats(const JitCache& c) {
  std::lock_guard<std::mutex> lock(c.mu);
  JitStats s;
  s.traces = c.traces;
  s.compiles = c.compiles;
  s.disk_hits = c.disk_hits;
  s.cache_hits = c.hits;
  for (const auto& cell : c.hit_cells) s.cache_hits += cell.second.load(std::memory_order_relaxed);
  s.cache_size = c.entries.size();
  s.evictions = c.evictions;
  s.compile_seconds = c.compile_seconds;
  s.trace_seconds = c.trace_seconds;
  s.lower_seconds = c.lower_seconds;
  s.llvm_seconds = c.llvm_seconds;
  return s;
}

void jit_clear_cache(JitCache& c) {
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
  c.generation.fetch_add(1, std::memory_order_release);
}

CallScratch& call_scratch() {
  thread_local CallScratch s;
  return s;
}

// ---------------------------------------------------------------------------
// Signatures of calls.

std::uint64_t hash_call(const CallArgs& a, const CallKey& key, bool polymorphic) {
  std::uint64_t h = a.leaves.size();
  if (key.hash) h = mix(h, key.hash(key.statics));
  for (std::size_t n : a.vector_sizes) h = mix(h, 0xabcdefULL ^ n);
  for (const LeafRef& l : a.leaves) {
    const auto s = leaf_dims(l);
    h = mix(h, static_cast<std::uint64_t>(l.dtype) + 1);
    h = mix(h, s.size());
    if (!polymorphic)  // else the dimensions are checked by solving
      for (auto d : s) h = mix(h, static_cast<std::uint64_t>(d));
  }
  return h;
}

inline std::int64_t leaf_word(DType dtype, std::size_t rank) {
  return static_cast<std::int64_t>(dtype) | static_cast<std::int64_t>(rank) << 8;
}

Signature make_signature(std::uint64_t hash, const CallArgs& a, const CallKey& key, bool polymorphic) {
  Signature s;
  s.hash = hash;
  s.arg_types = key.arg_types;
  s.arg_leaf_begin.assign(a.arg_leaf_begin.begin(), a.arg_leaf_begin.end());
  s.vector_sizes.assign(a.vector_sizes.begin(), a.vector_sizes.end());
  s.polymorphic = polymorphic;
  for (const LeafRef& l : a.leaves) {
    const auto shape = leaf_dims(l);
    s.leaves.push_back(LeafSig{l.dtype, {shape.begin(), shape.end()}});
    s.words.push_back(leaf_word(l.dtype, shape.size()));
    if (!polymorphic) s.words.insert(s.words.end(), shape.begin(), shape.end());
  }
  if (key.copy) s.statics.values = key.copy(key.statics);
  s.statics.equal = key.equal_stored;
  s.statics.explain = key.explain;
  return s;
}

// Does entry `e` serve the call in sc? Compares without allocating. The
// argument types fix the pytree structure up to the vectors' lengths, which
// the leaves' count and vector_sizes then pin down. (On every cached call:
// one pass over Signature::words, which a mismatch of a leaf's rank stops
// before it could read past the leaf's dimensions.)
[[gnu::always_inline]] inline bool matches(const JitEntry& e, const CallArgs& a, const CallKey& key) {
  const Signature& s = e.sig;
  if (s.arg_types != key.arg_types && !(*s.arg_types == *key.arg_types)) return false;
  if (key.equal_current && !key.equal_current(s.statics.values.get(), key.statics)) return false;
  if (s.leaves.size() != a.leaves.size() || s.vector_sizes.size() != a.vector_sizes.size()) return false;
  if (!a.vector_sizes.empty() && !std::equal(a.vector_sizes.begin(), a.vector_sizes.end(), s.vector_sizes.begin()))
    return false;
  const std::int64_t* w = s.words.data();
  for (const LeafRef& l : a.leaves) {
    if (*w++ != leaf_word(l.dtype, l.rank)) return false;
    if (s.polymorphic) continue;
    for (std::uint32_t k = 0; k < l.rank; ++k)
      if (*w++ != l.dims[k]) return false;
  }
  return true;
}
}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
