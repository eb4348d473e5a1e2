// dynstage: dyn::jit — trace once per abstract signature, compile with the
// LLVM backend, call the cached kernel.
//
// The abstract signature of a call is: for each non-static argument its
// pytree structure (vector lengths) and each leaf's dtype and shape; for each
// static argument its value. The first call with a signature traces the
// function, lowers and compiles the jaxpr and stores a cache entry; later
// calls with the same signature go straight to the kernel pointer.
//
// The hot path (a hit): walk the arguments once to hash the signature (no
// allocation), look the hash up under the function's mutex, compare the
// entry's stored signature leaf by leaf, collect data pointers into
// thread-local scratch space, allocate the outputs, call the kernel. No
// tracing, no hashing of array data, no allocation besides the outputs.
//
// Concurrency: a miss inserts an in-flight entry before compiling outside the
// lock, so concurrent first calls with one signature compile once (the others
// wait for it) and calls with other signatures proceed in parallel. A failed
// trace or compile removes its entry: the function stays usable and the
// error reaches every caller that waited for it.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#ifdef DYNSTAGE_IMPLEMENTATION
#include <filesystem>
#include <fstream>
#endif

#include "api.hpp"
#include "llvm/backend.hpp"
#include "print.hpp"

namespace dyn {

struct JitStats {
  std::size_t traces = 0;       // functions traced (cache misses that got as far as tracing)
  std::size_t compiles = 0;     // kernels compiled
  std::size_t cache_hits = 0;   // calls served by a cached kernel
  std::size_t cache_size = 0;   // kernels currently cached
  std::size_t evictions = 0;    // kernels evicted by cache_capacity
  double compile_seconds = 0;   // total time in trace + lower + compile
};

namespace detail {

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

// ---------------------------------------------------------------------------
// Signatures.

struct LeafSig {
  DType dtype;
  std::vector<std::int64_t> shape;
  friend bool operator==(const LeafSig&, const LeafSig&) = default;
};

inline std::string leaf_sig_str(const LeafSig& l) {
  std::string s = std::string(dtype_name(l.dtype)) + "[";
  for (std::size_t i = 0; i < l.shape.size(); ++i) s += (i ? "," : "") + std::to_string(l.shape[i]);
  return s + "]";
}

inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

// The values of the static arguments, type-erased, with their comparison.
struct StaticKey {
  std::shared_ptr<const void> values;  // a std::tuple of the static argument values
  const std::type_info* type = nullptr;
  bool (*equal)(const void*, const void*) = nullptr;
};

struct Signature {
  std::vector<std::size_t> arg_leaf_begin;  // first leaf of each argument (non-static ones)
  std::vector<LeafSig> leaves;
  std::vector<std::size_t> vector_sizes;
  StaticKey statics;
  std::uint64_t hash = 0;
};

// Walk the structure of an argument: leaves and vector lengths, in order.
template <class X, class OnLeaf, class OnVector>
void walk_structure(const X& x, OnLeaf& on_leaf, OnVector& on_vector) {
  using U = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<U>) {
    on_leaf(x);
  } else if constexpr (is_std_tuple<U>::value || is_std_pair<U>::value) {
    std::apply([&](const auto&... e) { (walk_structure(e, on_leaf, on_vector), ...); }, x);
  } else if constexpr (is_std_array<U>::value) {
    for (const auto& e : x) walk_structure(e, on_leaf, on_vector);
  } else if constexpr (is_std_vector<U>::value) {
    on_vector(x.size());
    for (const auto& e : x) walk_structure(e, on_leaf, on_vector);
  } else {
    hana::for_each(hana::keys(x), [&](auto key) { walk_structure(hana::at_key(x, key), on_leaf, on_vector); });
  }
}

template <class L>
DType leaf_dtype() {
  return dtype_v<elem_t<L>>;
}

template <class L>
const std::vector<std::int64_t>& leaf_shape(const L& leaf) {
  if constexpr (is_array_v<L>) {
    return leaf.shape();
  } else {
    static const std::vector<std::int64_t> scalar_shape;
    return scalar_shape;
  }
}

// An entry of the kernel cache.
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

template <class X>
struct contains_tracer_s {
  static constexpr bool value = is_tracer_v<X>;
};
template <class... E>
struct contains_tracer_s<std::tuple<E...>> {
  static constexpr bool value = (contains_tracer_s<std::remove_cvref_t<E>>::value || ...);
};
template <class A, class B>
struct contains_tracer_s<std::pair<A, B>> {
  static constexpr bool value = contains_tracer_s<A>::value || contains_tracer_s<B>::value;
};
template <class E, std::size_t N>
struct contains_tracer_s<std::array<E, N>> : contains_tracer_s<E> {};
template <class E, class A>
struct contains_tracer_s<std::vector<E, A>> : contains_tracer_s<E> {};
template <template <class...> class S, class... A>
  requires is_hana_struct_v<S<A...>>
struct contains_tracer_s<S<A...>> {
  static constexpr bool value = (contains_tracer_s<A>::value || ...);
};
// Whether an argument type holds tracers (a jitted function called inside
// another trace).
template <class X>
constexpr bool contains_tracer() {
  return contains_tracer_s<std::remove_cvref_t<X>>::value;
}

// Per-thread scratch space of the call path, reused across calls.
struct CallScratch {
  std::vector<const void*> args;
  std::vector<void*> results;
  std::vector<std::uint64_t> scalar_slots;  // C++ scalar arguments, in their dtype
  std::vector<std::int64_t> dim_slots;      // values of the implicit dimension arguments
  std::vector<std::vector<std::int64_t>> leaf_shapes;
  std::vector<std::int64_t> leaf_ints;      // integer scalar leaves, as int64
  std::vector<std::vector<std::int64_t>> out_dims;  // output shapes of a dynamic entry
  std::vector<std::int64_t> cells;                 // results the kernel allocates (JitEntry::cell_offset)
  std::vector<Storage> outputs;
  static CallScratch& get() {
    thread_local CallScratch s;
    return s;
  }
};

// Each thread remembers, per jitted function (a few slots, direct-mapped by
// cache id), the entry it used last. A call that matches it runs without the
// cache's mutex and without touching a reference count: the hot path of a
// loop calling one jitted function. The slot holds a reference, so a thread
// keeps at most one evicted entry per slot alive until its next call.
struct MruSlot {
  std::uint64_t cache_id = 0;
  std::uint64_t generation = 0;
  std::shared_ptr<JitEntry> entry;
};
inline MruSlot& mru_slot(std::uint64_t cache_id) {
  thread_local std::array<MruSlot, 8> slots;
  return slots[cache_id & 7];
}

// Why a signature missed the cache, compared with the most recently used
// entry (JAX's `explain`).
std::string explain_miss(const Signature& now, const JitEntry* prev);
#ifdef DYNSTAGE_IMPLEMENTATION
std::string explain_miss(const Signature& now, const JitEntry* prev) {
  if (!prev) return "first call";
  const Signature& old = prev->sig;
  if (old.statics.type != now.statics.type ||
      (old.statics.equal && !old.statics.equal(old.statics.values.get(), now.statics.values.get())))
    return "a static argument's value (or type) changed";
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
#endif

inline std::string signature_str(const Signature& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.leaves.size(); ++i) r += (i ? ", " : "") + leaf_sig_str(s.leaves[i]);
  return r + ")";
}

inline std::uint64_t next_cache_id() {
  static std::atomic<std::uint64_t> n{0};
  return n.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct JitCache;

// Fill a cache entry from its trace and compiled kernel: constants, output
// types (checking that dynamic result sizes are known before the call), then
// log and dump as the environment asks. Out of line: one copy per program.
void finish_entry(JitCache& c, JitEntry& e, Traced traced, const CompileResult& cr, const std::string& why,
                  const std::source_location& loc, std::chrono::steady_clock::time_point t0,
                  std::chrono::steady_clock::time_point t1, std::chrono::steady_clock::time_point t2);

// Per outvar of the traced jaxpr (implicit ones first): whether its size
// depends on values computed inside the function, so that only the kernel
// can allocate it (backend.hpp, "Results the kernel allocates").
std::vector<bool> kernel_sized_results(const Traced& t);

// After a successful call: the results the kernel allocated (cells) become
// the outputs' storage, freed with free().
void adopt_kernel_results(const JitEntry& e, CallScratch& sc);

// For a dynamic entry, from sc.leaf_shapes and sc.leaf_ints: solve the
// dimension variables (ShapeAssertionError if the shapes violate the spec),
// fill sc.dim_slots with the implicit dimension arguments and sc.out_dims
// with the output shapes.
void solve_call_dims(const JitEntry& e, CallScratch& sc);

// The cache of one jitted function (shared by its copies).
struct JitCache {
  const std::uint64_t id = next_cache_id();  // never reused, unlike the address
  // Bumped whenever an entry leaves `entries`: invalidates the threads' MRU slots.
  std::atomic<std::uint64_t> generation{0};
  std::mutex mu;
  std::unordered_multimap<std::uint64_t, std::shared_ptr<JitEntry>> entries;
  std::size_t capacity = 64;
  std::atomic<std::uint64_t> tick{0};
  std::atomic<std::size_t> traces{0}, compiles{0}, hits{0}, evictions{0};
  double compile_seconds = 0;  // under mu
  std::size_t dump_counter = 0;

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

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<bool> kernel_sized_results(const Traced& t) {
  const Jaxpr& j = *t.jaxpr.jaxpr;
  const std::size_t implicit =
      j.out_explicit.empty() ? 0 : static_cast<std::size_t>(std::count(j.out_explicit.begin(), j.out_explicit.end(), false));
  std::vector<std::string> known = t.poly ? t.poly->solver->variables() : std::vector<std::string>{};
  for (const auto& dl : t.dim_leaves) known.push_back(dl.var.to_string());
  std::vector<bool> r(j.outvars.size(), false);
  for (std::size_t k = implicit; k < j.outvars.size(); ++k)
    for (const Dim& d : t.out_shapes.at(k - implicit))
      if (!d.is_static())
        for (const std::string& v : dim_vars(d))
          if (std::find(known.begin(), known.end(), v) == known.end()) r[k] = true;
  return r;
}

void adopt_kernel_results(const JitEntry& e, CallScratch& sc) {
  // Own every buffer first, so that a shape check that throws frees them all.
  for (std::size_t i = 0; i < e.outs.size(); ++i) {
    if (e.cell_offset[i] < 0) continue;
    const std::int64_t* cell = &sc.cells[static_cast<std::size_t>(e.cell_offset[i])];
    void* p = nullptr;
    std::memcpy(&p, cell, sizeof p);
    Storage& s = sc.outputs[i];
    s.owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
    s.data = p;
    s.dtype = e.outs[i].dtype;
  }
  for (std::size_t i = 0; i < e.outs.size(); ++i) {
    if (e.cell_offset[i] < 0) continue;
    const std::int64_t* cell = &sc.cells[static_cast<std::size_t>(e.cell_offset[i])];
    Storage& s = sc.outputs[i];
    s.shape.assign(cell + 1, cell + 1 + e.outs[i].shape.size());
    s.size = checked_numel(s.shape, "jit result");
  }
}

// Whether variable `var` of `j` sizes an array: it appears as a dimension in
// a type of `j`, or is passed to a nested jaxpr whose parameter sizes one.
// (dynstage_fuzz found that `jit(f)(x, std::int64_t(-3))` threw "sizes arrays
// but is negative" for an i64 scalar argument used only as a value.)
inline bool var_sizes_arrays(const Jaxpr& j, int var) {
  for (const Type& t : j.types)
    for (const JDim& d : t.shape)
      if (d.var == var) return true;
  auto passes = [&](const Jaxpr& body, std::size_t invar) {
    return invar < body.invars.size() && var_sizes_arrays(body, body.invars[invar]);
  };
  for (const Eqn& q : j.eqns)
    for (std::size_t p = 0; p < q.inputs.size(); ++p) {
      if (q.inputs[p].var != var) continue;
      bool used = false;
      if (const auto* f = std::get_if<ForLoopParams>(&q.params)) {
        // operands: consts, implicit, lower, upper, step, index0, carried;
        // body: consts, implicit, index, carried. (A bound is not the index.)
        const std::size_t lead = static_cast<std::size_t>(f->body_nconsts + f->nimplicit);
        if (p < lead) used = passes(*f->body_jaxpr, p);
        else if (p >= lead + 4) used = passes(*f->body_jaxpr, p - 3);
      } else if (const auto* w = std::get_if<WhileLoopParams>(&q.params)) {
        // operands: cond consts, body consts, implicit, carried.
        const std::size_t cn = static_cast<std::size_t>(w->cond_nconsts), bn = static_cast<std::size_t>(w->body_nconsts);
        if (p < cn) used = passes(*w->cond_jaxpr, p);
        else if (p < cn + bn) used = passes(*w->body_jaxpr, p - cn);
        else used = passes(*w->cond_jaxpr, p - bn) || passes(*w->body_jaxpr, p - cn);
      } else if (const auto* c = std::get_if<CondParams>(&q.params)) {
        // operands: pred, then every branch's inputs.
        for (const auto& b : c->branches) used = used || (p > 0 && passes(*b, p - 1));
      }
      if (used) return true;
    }
  return false;
}

void solve_call_dims(const JitEntry& e, CallScratch& sc) {
  Bindings env;
  if (e.poly) env = e.poly->solver->solve_shapes(sc.leaf_shapes);
  for (std::size_t i = 0; i < e.dim_leaves.size(); ++i) {
    const std::int64_t v = sc.leaf_ints[e.dim_leaves[i].leaf];
    if (v < 0 && e.dim_leaf_sizes[i])
      fail<ShapeError>("jit: the integer argument leaf #" + std::to_string(e.dim_leaves[i].leaf) +
                       " sizes arrays but is negative (" + std::to_string(v) + ")");
    env[e.dim_leaf_names[i]] = v;
  }
  sc.dim_slots.clear();
  if (e.poly)
    for (const Dim& d : e.poly->dim_args) sc.dim_slots.push_back(evaluate(d, env));
  sc.out_dims.resize(e.out_shapes.size());
  for (std::size_t i = 0; i < e.out_shapes.size(); ++i) {
    sc.out_dims[i].clear();
    if (e.kernel_sized[i]) continue;  // the kernel reports it
    for (const Dim& d : e.out_shapes[i]) sc.out_dims[i].push_back(d.is_static() ? d.value() : evaluate(d, env));
  }
}

void finish_entry(JitCache& c, JitEntry& e, Traced traced, const CompileResult& cr, const std::string& why,
                  const std::source_location& loc, std::chrono::steady_clock::time_point t0,
                  std::chrono::steady_clock::time_point t1, std::chrono::steady_clock::time_point t2) {
  ClosedJaxpr& cj = traced.jaxpr;
  e.kernel = cr.kernel;
  e.fn = kernel_entry(*cr.kernel);
  for (const auto& k : cj.consts) e.const_ptrs.push_back(k.data());
  const Jaxpr& j = *cj.jaxpr;
  e.implicit_outs = j.out_explicit.empty()
                        ? 0
                        : static_cast<std::size_t>(std::count(j.out_explicit.begin(), j.out_explicit.end(), false));
  e.out_shapes.assign(e.implicit_outs, Shape{});
  e.out_shapes.insert(e.out_shapes.end(), traced.out_shapes.begin(), traced.out_shapes.end());
  e.poly = traced.poly;
  e.dim_leaves = traced.dim_leaves;
  for (const auto& dl : e.dim_leaves) e.dim_leaf_names.push_back(dl.var.to_string());
  {
    std::vector<int> explicit_invars;  // the argument leaves, in order
    for (std::size_t k = 0; k < j.invars.size(); ++k)
      if (j.in_explicit.empty() || j.in_explicit[k]) explicit_invars.push_back(j.invars[k]);
    for (const auto& dl : e.dim_leaves)
      e.dim_leaf_sizes.push_back(dl.leaf >= explicit_invars.size() ||  // (not expected: stay strict)
                                 var_sizes_arrays(j, explicit_invars[dl.leaf]));
  }
  e.dynamic = e.poly != nullptr;
  e.kernel_sized = kernel_sized_results(traced);
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Type& t = j.type_of(j.outvars[k]);
    LeafSig ls{t.dtype, {}};
    e.cell_offset.push_back(-1);
    if (e.kernel_sized[k]) {
      e.cell_offset.back() = static_cast<std::ptrdiff_t>(e.cell_words);
      e.cell_words += 1 + static_cast<std::size_t>(t.rank());
    }
    for (const Dim& d : e.out_shapes[k]) {
      if (d.is_static()) {
        ls.shape.push_back(d.value());
        continue;
      }
      e.dynamic = true;  // sizes known before the call are evaluated on the host, the others come from the kernel
      ls.shape.push_back(0);
    }
    e.out_sizes.push_back(e.dynamic ? 0 : checked_numel(ls.shape, "jit result"));
    e.outs.push_back(std::move(ls));
  }
  e.out_tree = std::move(traced.out_tree);
  e.jaxpr = std::move(cj);

  const JitEnv& env = JitEnv::get();
  const double trace_s = std::chrono::duration<double>(t1 - t0).count();
  const double total_s = std::chrono::duration<double>(t2 - t0).count();
  std::size_t dump_id = 0;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.compile_seconds += total_s;
    dump_id = c.dump_counter++;
  }
  const std::string where = format_location(loc);
  if (env.log_compiles)
    std::fprintf(stderr,
                 "dynstage: jit of the function at %s: compiled %s in %.2f ms (trace %.2f ms, compile %.2f ms); "
                 "cache miss: %s\n",
                 where.c_str(), signature_str(e.sig).c_str(), total_s * 1e3, trace_s * 1e3, (total_s - trace_s) * 1e3,
                 why.c_str());
  if (!env.dump_dir.empty()) {
    std::string base = where;
    for (char& ch : base)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    base += "_" + std::to_string(dump_id);
    std::error_code ec;
    std::filesystem::create_directories(env.dump_dir, ec);
    std::ofstream(std::filesystem::path(env.dump_dir) / (base + ".jaxpr")) << e.jaxpr << "\n";
    std::ofstream(std::filesystem::path(env.dump_dir) / (base + ".ll")) << cr.llvm_ir;
  }
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace detail

// ---------------------------------------------------------------------------

template <class F, class... Opts>
class Jit {
  template <std::size_t I, class A>
  using arg_t = std::conditional_t<detail::is_static_arg<Opts...>(I), const A&, detail::traced_t<A>>;

  template <class... Args>
  static auto result_type_of() {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::type_identity<std::invoke_result_t<const F&, arg_t<I, Args>...>>{};
    }(std::index_sequence_for<Args...>{});
  }
  template <class... Args>
  using result_t = typename decltype(result_type_of<Args...>())::type;

  template <class... Args>
  static constexpr bool any_traced_leaf() {
    bool r = false;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((r = r || (!detail::is_static_arg<Opts...>(I) && detail::contains_tracer<Args>())), ...);
    }(std::index_sequence_for<Args...>{});
    return r;
  }

public:
  Jit(F f, std::source_location loc, detail::Options opts)
      : f_(std::move(f)), loc_(loc), opts_(std::move(opts)), cache_(std::make_shared<detail::JitCache>()) {
    cache_->capacity = opts_.capacity;
  }

  // Call: concrete arguments run the cached kernel; if any argument is a
  // tracer (a jitted function used inside another trace) the function is
  // traced inline into the enclosing trace, as JAX inlines nested jit.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (any_traced_leaf<Args...>()) {
      return f_(args...);
    } else {
      using R = result_t<Args...>;
      detail::JitCache& c = *cache_;
      detail::MruSlot& slot = detail::mru_slot(c.id);
      const std::uint64_t gen = c.generation.load(std::memory_order_acquire);
      if (slot.cache_id == c.id && slot.generation == gen && matches(*slot.entry, args...)) {
        detail::JitEntry& e = *slot.entry;
        // LRU: only a change of most recent entry costs an atomic increment.
        if (e.last_used.load(std::memory_order_relaxed) != c.tick.load(std::memory_order_relaxed))
          e.last_used.store(c.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        c.hits.fetch_add(1, std::memory_order_relaxed);
        return run<R>(e, args...);
      }
      std::shared_ptr<detail::JitEntry> e = lookup_or_compile(args...);
      slot.cache_id = c.id;
      slot.generation = gen;
      slot.entry = e;
      return run<R>(*e, args...);
    }
  }

  // The jaxpr traced for these arguments' signature.
  template <class... Args>
  ClosedJaxpr jaxpr(const Args&... args) const {
    return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...).jaxpr;
  }

  // The optimised LLVM IR of the kernel for these arguments' signature.
  template <class... Args>
  std::string llvm_ir(const Args&... args) const {
    detail::Traced t = detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...);
    return detail::compile_kernel(*t.jaxpr.jaxpr, true, detail::kernel_sized_results(t)).llvm_ir;
  }

  JitStats stats() const {
    std::lock_guard<std::mutex> lock(cache_->mu);
    JitStats s;
    s.traces = cache_->traces;
    s.compiles = cache_->compiles;
    s.cache_hits = cache_->hits;
    s.cache_size = cache_->entries.size();
    s.evictions = cache_->evictions;
    s.compile_seconds = cache_->compile_seconds;
    return s;
  }

  void clear_cache() const {
    std::lock_guard<std::mutex> lock(cache_->mu);
    cache_->entries.clear();
    cache_->generation.fetch_add(1, std::memory_order_release);
  }

private:
  // -------------------------------------------------------------------------
  // Signature of a call.

  template <class... Args>
  std::uint64_t hash_args(const Args&... args) const {
    std::uint64_t h = sizeof...(Args);
    auto on_leaf = [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      h = detail::mix(h, static_cast<std::uint64_t>(detail::leaf_dtype<L>()) + 1);
      const auto& s = detail::leaf_shape(leaf);
      h = detail::mix(h, s.size());
      if (!opts_.polymorphic())  // else the dimensions are checked by solving
        for (auto d : s) h = detail::mix(h, static_cast<std::uint64_t>(d));
    };
    auto on_vector = [&](std::size_t n) { h = detail::mix(h, 0xabcdefULL ^ n); };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (detail::is_static_arg<Opts...>(I)) {
              h = detail::mix(h, std::hash<std::remove_cvref_t<Args>>{}(args));
            } else {
              h = detail::mix(h, 0x1234ULL + I);
              detail::walk_structure(args, on_leaf, on_vector);
            }
          }(),
          ...);
    }(std::index_sequence_for<Args...>{});
    return h;
  }

  template <class... Args>
  static auto statics_of(const Args&... args) {
    auto refs = std::forward_as_tuple(args...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple_cat([&] {
        if constexpr (detail::is_static_arg<Opts...>(I)) return std::tuple<std::remove_cvref_t<Args>>(std::get<I>(refs));
        else return std::tuple<>{};
      }()...);
    }(std::index_sequence_for<Args...>{});
  }

  template <class... Args>
  detail::Signature make_signature(std::uint64_t hash, const Args&... args) const {
    detail::Signature s;
    s.hash = hash;
    auto on_leaf = [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      s.leaves.push_back(detail::LeafSig{detail::leaf_dtype<L>(), detail::leaf_shape(leaf)});
    };
    auto on_vector = [&](std::size_t n) { s.vector_sizes.push_back(n); };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (!detail::is_static_arg<Opts...>(I)) {
              s.arg_leaf_begin.push_back(s.leaves.size());
              detail::walk_structure(args, on_leaf, on_vector);
            }
          }(),
          ...);
    }(std::index_sequence_for<Args...>{});
    using T = decltype(statics_of(args...));
    s.statics.values = std::make_shared<const T>(statics_of(args...));
    s.statics.type = &typeid(T);
    s.statics.equal = [](const void* a, const void* b) { return *static_cast<const T*>(a) == *static_cast<const T*>(b); };
    return s;
  }

  // Does entry `e` serve these arguments? Compares without allocating.
  template <class... Args>
  bool matches(const detail::JitEntry& e, const Args&... args) const {
    const detail::Signature& s = e.sig;
    using T = decltype(statics_of(args...));
    if (s.statics.type != &typeid(T)) return false;
    if constexpr (std::tuple_size_v<T> > 0) {
      if (!(*static_cast<const T*>(s.statics.values.get()) == statics_of(args...))) return false;
    }
    bool ok = true;
    std::size_t leaf = 0, vec = 0;
    auto on_leaf = [&](const auto& x) {
      using L = std::remove_cvref_t<decltype(x)>;
      if (!ok) return;
      if (leaf >= s.leaves.size()) { ok = false; return; }
      const detail::LeafSig& ls = s.leaves[leaf++];
      const auto& shape = detail::leaf_shape(x);
      ok = ls.dtype == detail::leaf_dtype<L>() && ls.shape.size() == shape.size();
      if (ok && !opts_.polymorphic())  // (an inline loop: shapes are short, a memcmp call costs more)
        for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = ls.shape[i] == shape[i];
    };
    auto on_vector = [&](std::size_t n) {
      if (!ok) return;
      ok = vec < s.vector_sizes.size() && s.vector_sizes[vec++] == n;
    };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((detail::is_static_arg<Opts...>(I) ? void() : detail::walk_structure(args, on_leaf, on_vector)), ...);
    }(std::index_sequence_for<Args...>{});
    return ok && leaf == s.leaves.size() && vec == s.vector_sizes.size();
  }

  // -------------------------------------------------------------------------
  // Cache.

  template <class... Args>
  std::shared_ptr<detail::JitEntry> lookup_or_compile(const Args&... args) const {
    detail::JitCache& c = *cache_;
    std::uint64_t h = hash_args(args...);
    std::shared_ptr<detail::JitEntry> e;
    bool owner = false;
    std::string why;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      auto [lo, hi] = c.entries.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (matches(*it->second, args...)) {
          e = it->second;
          break;
        }
      if (!e) {
        e = std::make_shared<detail::JitEntry>();
        e->sig = make_signature(h, args...);
        if (detail::JitEnv::get().log_compiles) why = detail::explain_miss(e->sig, c.most_recent());
        c.entries.emplace(h, e);
        owner = true;
      }
    }
    e->last_used.store(c.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!owner) {
      e->wait();
      c.hits.fetch_add(1, std::memory_order_relaxed);
      return e;
    }
    try {
      compile_entry(*e, why, args...);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(c.mu);
        auto [lo, hi] = c.entries.equal_range(h);
        for (auto it = lo; it != hi; ++it)
          if (it->second == e) {
            c.entries.erase(it);
            c.generation.fetch_add(1, std::memory_order_release);
            break;
          }
      }
      e->finish(std::current_exception());
      throw;
    }
    e->finish(nullptr);
    {
      std::lock_guard<std::mutex> lock(c.mu);
      c.evict_if_needed();
    }
    return e;
  }

  template <class... Args>
  void compile_entry(detail::JitEntry& e, const std::string& why, const Args&... args) const {
    detail::JitCache& c = *cache_;
    auto t0 = std::chrono::steady_clock::now();
    detail::Traced traced = detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...);
    c.traces.fetch_add(1, std::memory_order_relaxed);
    auto t1 = std::chrono::steady_clock::now();
    detail::CompileResult cr = detail::compile_kernel(*traced.jaxpr.jaxpr, !detail::JitEnv::get().dump_dir.empty(),
                                                      detail::kernel_sized_results(traced));
    auto t2 = std::chrono::steady_clock::now();
    c.compiles.fetch_add(1, std::memory_order_relaxed);

    detail::finish_entry(c, e, std::move(traced), cr, why, loc_, t0, t1, t2);
  }

  // -------------------------------------------------------------------------
  // Call path.

  // The shapes and integer values of the traced leaves (dynamic entries).
  template <class... Args>
  static void collect_leaves(detail::CallScratch& sc, const Args&... args) {
    sc.leaf_shapes.clear();
    sc.leaf_ints.clear();
    auto on_leaf = [&](const auto& x) {
      using L = std::remove_cvref_t<decltype(x)>;
      sc.leaf_shapes.push_back(detail::leaf_shape(x));
      std::int64_t v = 0;
      if constexpr (is_array_v<L>) {
        if constexpr (std::is_integral_v<typename L::value_type> && !std::is_same_v<typename L::value_type, bool>)
          if (x.size() == 1) v = static_cast<std::int64_t>(*x.data());
      } else if constexpr (std::is_integral_v<L>) {
        v = static_cast<std::int64_t>(x);
      }
      sc.leaf_ints.push_back(v);
    };
    auto on_vector = [](std::size_t) {};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((detail::is_static_arg<Opts...>(I) ? void() : detail::walk_structure(args, on_leaf, on_vector)), ...);
    }(std::index_sequence_for<Args...>{});
  }

  template <class R, class... Args>
  detail::concrete_t<R> run(const detail::JitEntry& e, const Args&... args) const {
    detail::CallScratch& sc = detail::CallScratch::get();
    sc.args.assign(e.const_ptrs.begin(), e.const_ptrs.end());
    sc.scalar_slots.resize(e.sig.leaves.size());
    if (e.dynamic) {
      collect_leaves(sc, args...);
      detail::solve_call_dims(e, sc);
      for (const std::int64_t& v : sc.dim_slots) sc.args.push_back(&v);
    }
    std::size_t leaf = 0;
    auto on_leaf = [&](const auto& x) {
      using L = std::remove_cvref_t<decltype(x)>;
      if constexpr (is_array_v<L>) {
        sc.args.push_back(x.data());
      } else {
        using E = detail::scalar_element_t<L>;
        std::uint64_t* slot = &sc.scalar_slots[leaf];
        E v = static_cast<E>(x);
        std::memcpy(slot, &v, sizeof(E));
        sc.args.push_back(slot);
      }
      ++leaf;
    };
    auto on_vector = [](std::size_t) {};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((detail::is_static_arg<Opts...>(I) ? void() : detail::walk_structure(args, on_leaf, on_vector)), ...);
    }(std::index_sequence_for<Args...>{});

    sc.outputs.clear();
    sc.results.clear();
    if (!e.dynamic) {
      for (std::size_t i = 0; i < e.outs.size(); ++i) {
        sc.outputs.push_back(detail::Storage::make_sized(e.outs[i].dtype, e.outs[i].shape, e.out_sizes[i]));
        sc.results.push_back(sc.outputs.back().data);
      }
    } else {
      sc.cells.resize(e.cell_words);
      for (std::size_t i = 0; i < e.outs.size(); ++i) {
        if (e.cell_offset[i] >= 0) {  // allocated by the kernel
          sc.outputs.emplace_back();
          sc.results.push_back(&sc.cells[static_cast<std::size_t>(e.cell_offset[i])]);
          continue;
        }
        sc.outputs.push_back(detail::Storage::make(e.outs[i].dtype, std::move(sc.out_dims[i]), false));
        sc.results.push_back(sc.outputs.back().data);
      }
    }
    detail::kernel_check(e.fn(sc.args.data(), sc.results.data()));
    if (e.cell_words) detail::adopt_kernel_results(e, sc);
    std::size_t k = e.implicit_outs;
    auto make_leaf = [&]<class L>() -> L { return L(std::move(sc.outputs[k++])); };
    return detail::unflatten<detail::concrete_t<R>>(e.out_tree, make_leaf);
  }

  F f_;
  std::source_location loc_;
  detail::Options opts_;
  std::shared_ptr<detail::JitCache> cache_;
};

// jit(f, options...): fixed arities (see make_jaxpr) so the call site is
// recorded for error messages and compile logs.
template <class F>
Jit<F> jit(F f, std::source_location loc = std::source_location::current()) {
  return Jit<F>(std::move(f), loc, detail::Options{});
}
template <class F, class O1>
Jit<F, O1> jit(F f, O1 o1, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1>(std::move(f), loc, detail::options_of(o1));
}
template <class F, class O1, class O2>
Jit<F, O1, O2> jit(F f, O1 o1, O2 o2, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1, O2>(std::move(f), loc, detail::options_of(o1, o2));
}
template <class F, class O1, class O2, class O3>
Jit<F, O1, O2, O3> jit(F f, O1 o1, O2 o2, O3 o3, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1, O2, O3>(std::move(f), loc, detail::options_of(o1, o2, o3));
}

}  // namespace dyn
