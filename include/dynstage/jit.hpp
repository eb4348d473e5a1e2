// dynstage: dyn::jit — trace once per abstract signature, compile with the
// LLVM backend, call the cached kernel.
//
// The abstract signature of a call is: for each non-static argument its
// pytree structure (vector lengths) and each leaf's dtype and shape; for each
// static argument its value. The first call with a signature traces the
// function, lowers and compiles the jaxpr and stores a cache entry; later
// calls with the same signature go straight to the kernel pointer.
//
// Split for users' compile time: the template Jit<F> only flattens the
// arguments into type-erased leaves (LeafRef) and hands them, with a callback
// that traces F, to detail::jit_call. Everything that does not depend on F —
// the cache, signatures, the call path, logging — is compiled once per
// program, in the DYNSTAGE_IMPLEMENTATION translation unit.
//
// The hot path (a hit): flatten the arguments into this thread's scratch
// space, compare them with the entry this thread used last for this function
// (no lock, no reference count, no hashing), collect data pointers, allocate
// the outputs, call the kernel. No tracing, no hashing of array data, no
// allocation besides the outputs.
//
// Concurrency: a miss inserts an in-flight entry before compiling outside the
// lock, so concurrent first calls with one signature compile once (the others
// wait for it) and calls with other signatures proceed in parallel. A failed
// trace or compile removes its entry: the function stays usable and the
// error reaches every caller that waited for it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "api.hpp"
#include "llvm/backend.hpp"

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
// Signatures (what a cache entry was compiled for).

struct LeafSig {
  DType dtype;
  std::vector<std::int64_t> shape;
  friend bool operator==(const LeafSig&, const LeafSig&) = default;
};

// The values of the static arguments, type-erased, with their comparison.
struct StaticKey {
  std::shared_ptr<const void> values;  // a std::tuple of the static argument values
  bool (*equal)(const void*, const void*) = nullptr;
};

struct Signature {
  const std::type_info* arg_types = nullptr;  // std::tuple<Args...>: the arguments' pytree types
  std::vector<std::size_t> arg_leaf_begin;    // first leaf of each argument (non-static ones)
  std::vector<LeafSig> leaves;
  std::vector<std::size_t> vector_sizes;
  StaticKey statics;
  std::uint64_t hash = 0;
  // What a call must match, flat for a quick check: per leaf its dtype and
  // rank in one word, then (unless `polymorphic`: solving checks them) its
  // dimensions (jit_impl.hpp, matches).
  std::vector<std::int64_t> words;
  bool polymorphic = false;
};

// Why signature `now` missed the cache, compared with `prev`, the most
// recently used entry's (JAX's `explain`); "first call" without one.
std::string explain_miss(const Signature& now, const Signature* prev);

// ---------------------------------------------------------------------------
// A call, type-erased.

// One argument leaf of a call.
struct LeafRef {
  const void* data = nullptr;                        // an array's first element; null for a C++ scalar
  const std::vector<std::int64_t>* shape = nullptr;  // an array's shape; null for a C++ scalar (rank 0)
  std::uint64_t bits = 0;                            // a C++ scalar's value, converted to `dtype`
  DType dtype = DType::f64;
};

// What identifies a call besides its leaves: the argument types (pytree
// structure, static argument types) and the static arguments' values (a
// std::tuple<const A&...>, `statics`), with what the cache needs to compare,
// hash and keep them (as a std::tuple<A...>).
struct CallKey {
  const std::type_info* arg_types = nullptr;
  const void* statics = nullptr;
  bool (*equal_current)(const void* stored, const void* current) = nullptr;  // null: no static arguments
  std::uint64_t (*hash)(const void* current) = nullptr;
  std::shared_ptr<const void> (*copy)(const void* current) = nullptr;
  bool (*equal_stored)(const void* a, const void* b) = nullptr;
};

struct JitEntry;  // a compiled kernel of the cache, with its signature and output types

// Each thread remembers, per jitted function (a few slots, direct-mapped by
// cache id), the entry it used last. A call that matches it runs without the
// cache's mutex and without touching a reference count: the hot path of a
// loop calling one jitted function. The slot holds a reference, so a thread
// keeps at most one evicted entry per slot alive until its next call.
struct MruSlot {
  std::uint64_t cache_id = 0;
  std::uint64_t generation = 0;
  std::shared_ptr<JitEntry> entry;
  std::atomic<std::uint64_t>* hits = nullptr;  // this thread's hit count for the cache (jit_impl.hpp)
};

// Per-thread scratch space of the call path, reused across calls (no
// allocation once warm). The template fills the first four fields; the rest
// belongs to the call path.
struct CallScratch {
  std::vector<LeafRef> leaves;
  std::vector<std::size_t> vector_sizes;
  std::vector<std::size_t> arg_leaf_begin;
  std::vector<Storage> outputs;  // after jit_call: every output, implicit ones first

  std::vector<const void*> args;
  std::vector<void*> results;
  std::vector<std::int64_t> dim_slots;               // values of the implicit dimension arguments
  std::vector<std::vector<std::int64_t>> leaf_shapes;
  std::vector<std::int64_t> leaf_ints;               // integer scalar leaves, as int64
  std::vector<std::vector<std::int64_t>> out_dims;   // output shapes of a dynamic entry
  std::vector<std::int64_t> cells;                   // results the kernel allocates
  std::array<MruSlot, 8> mru;
};
CallScratch& call_scratch();  // this thread's

struct JitCache;  // the cache of one jitted function (shared by its copies): entries by signature
std::shared_ptr<JitCache> make_jit_cache(std::size_t capacity);
JitStats jit_stats(const JitCache& c);
void jit_clear_cache(JitCache& c);

// Traces the function for the call's arguments (a closure of Jit<F>::operator()).
using TraceFn = Traced (*)(const void* closure);

struct CallResult {
  const TreeDef* out_tree;    // structure of the explicit results
  std::size_t first_output;   // sc.outputs[first_output...] are the explicit results
};

// The call: find the cache entry for the arguments in sc (or trace with
// `trace` and compile one) and run its kernel; the outputs are left in
// sc.outputs. Throws what tracing, compiling or the kernel throws.
CallResult jit_call(JitCache& c, const Options& opts, const std::source_location& loc, const CallKey& key,
                    CallScratch& sc, TraceFn trace, const void* closure);

// The optimised LLVM IR of the kernel for a trace.
std::string jit_llvm_ir(const Traced& t);

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

// The CallKey of a call with argument types Args and static arguments `statics`.
template <class... Args, class... A>
CallKey call_key(const std::tuple<const A&...>& statics) {
  using Stored = std::tuple<A...>;
  using Current = std::tuple<const A&...>;
  CallKey r;
  r.arg_types = &typeid(std::tuple<Args...>);
  r.statics = &statics;
  if constexpr (sizeof...(A) > 0) {
    r.equal_current = [](const void* s, const void* c) {
      return *static_cast<const Stored*>(s) == *static_cast<const Current*>(c);
    };
    r.hash = [](const void* c) {
      std::uint64_t h = 0;
      std::apply([&](const A&... v) { ((h = h * 0x100000001b3ULL ^ std::hash<A>{}(v)), ...); },
                 *static_cast<const Current*>(c));
      return h;
    };
    r.copy = [](const void* c) -> std::shared_ptr<const void> {
      return std::make_shared<const Stored>(*static_cast<const Current*>(c));
    };
    r.equal_stored = [](const void* a, const void* b) {
      return *static_cast<const Stored*>(a) == *static_cast<const Stored*>(b);
    };
  }
  return r;
}

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
      : f_(std::move(f)), loc_(loc), opts_(std::move(opts)), cache_(detail::make_jit_cache(opts_.capacity)) {}

  // Call: concrete arguments run the cached kernel; if any argument is a
  // tracer (a jitted function used inside another trace) the function is
  // traced inline into the enclosing trace, as JAX inlines nested jit.
  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (any_traced_leaf<Args...>()) {
      return f_(args...);
    } else {
      using R = result_t<Args...>;
      detail::CallScratch& sc = detail::call_scratch();
      flatten(sc, args...);
      const auto statics = static_args(args...);
      auto trace = [&] { return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...); };
      using Trace = decltype(trace);
      const detail::CallResult r =
          detail::jit_call(*cache_, opts_, loc_, detail::call_key<Args...>(statics), sc,
                           [](const void* t) { return (*static_cast<const Trace*>(t))(); }, &trace);
      std::size_t k = r.first_output;
      auto make_leaf = [&]<class L>() -> L { return L(std::move(sc.outputs[k++])); };
      return detail::unflatten<detail::concrete_t<R>>(*r.out_tree, make_leaf);
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
    return detail::jit_llvm_ir(detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...));
  }

  JitStats stats() const { return detail::jit_stats(*cache_); }
  void clear_cache() const { detail::jit_clear_cache(*cache_); }

private:
  // The call's non-static leaves and vector lengths, into sc.
  template <class... Args>
  static void flatten(detail::CallScratch& sc, const Args&... args) {
    sc.leaves.clear();
    sc.vector_sizes.clear();
    sc.arg_leaf_begin.clear();
    auto on_leaf = [&](const auto& x) {
      using L = std::remove_cvref_t<decltype(x)>;
      detail::LeafRef& r = sc.leaves.emplace_back();
      if constexpr (is_array_v<L>) {
        r.data = x.data();
        r.shape = &x.shape();
        r.dtype = dtype_v<typename L::value_type>;
      } else {
        using E = detail::scalar_element_t<L>;
        const E v = static_cast<E>(x);
        std::memcpy(&r.bits, &v, sizeof v);
        r.dtype = dtype_v<E>;
      }
    };
    auto on_vector = [&](std::size_t n) { sc.vector_sizes.push_back(n); };
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (!detail::is_static_arg<Opts...>(I)) {
              sc.arg_leaf_begin.push_back(sc.leaves.size());
              detail::walk_structure(args, on_leaf, on_vector);
            }
          }(),
          ...);
    }(std::index_sequence_for<Args...>{});
  }

  // A tuple of references to the static arguments.
  template <class... Args>
  static auto static_args(const Args&... args) {
    auto refs = std::forward_as_tuple(args...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple_cat([&] {
        if constexpr (detail::is_static_arg<Opts...>(I)) return std::tuple<const Args&>(std::get<I>(refs));
        else return std::tuple<>{};
      }()...);
    }(std::index_sequence_for<Args...>{});
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
