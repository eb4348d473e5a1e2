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
// The hot path (a hit): flatten the arguments (onto the stack when their
// structure has no vectors, else into this thread's scratch space), compare
// them with the entry this thread used last for this function (no lock, no
// reference count, no hashing), collect data pointers, allocate the outputs,
// call the kernel. No tracing, no hashing of array data, no allocation
// besides the outputs.
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
#include <span>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

#include "../trace/api.hpp"
#include "../llvm/backend.hpp"

namespace dyn {

struct JitStats {
  std::size_t traces = 0;       // functions traced (cache misses that got as far as tracing)
  std::size_t compiles = 0;     // kernels compiled
  std::size_t disk_hits = 0;    // kernels loaded from the disk cache instead (DYNSTAGE_CACHE_DIR)
  std::size_t cache_hits = 0;   // calls served by a cached kernel
  std::size_t cache_size = 0;   // kernels currently cached
  std::size_t evictions = 0;    // kernels evicted by cache_capacity
  double compile_seconds = 0;   // total time in trace + lower + compile (or disk load); of which:
  double trace_seconds = 0;     //   running the function on tracers
  double lower_seconds = 0;     //   jaxpr -> LLVM IR (fusion plan, lowering)
  double llvm_seconds = 0;      //   LLVM: optimisation and code generation
};

namespace detail {

// ---------------------------------------------------------------------------
// Signatures (what a cache entry was compiled for).

struct LeafSig {
  DType dtype;
  std::vector<std::int64_t> shape;
  friend bool operator==(const LeafSig&, const LeafSig&) = default;
};

// The values of the static arguments, type-erased, with their comparison
// and the explanation of a difference (for DYNSTAGE_LOG_COMPILES).
struct StaticKey {
  std::shared_ptr<const void> values;  // a std::tuple of the static argument values
  bool (*equal)(const void*, const void*) = nullptr;
  // "static argument #1 changed from 2 to 3" for two different stored tuples.
  std::string (*explain)(const void* old_values, const void* new_values) = nullptr;
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
  // dimensions (jit/cache.hpp, matches).
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
  const void* data = nullptr;          // an array's first element; null for a C++ scalar
  const std::int64_t* dims = nullptr;  // an array's shape, `rank` dimensions
  std::uint32_t rank = 0;              // (0 for a C++ scalar)
  DType dtype = DType::f64;
  std::uint64_t bits = 0;              // a C++ scalar's value, converted to `dtype`
  const Storage* storage = nullptr;    // an array's storage (donation: who else holds the buffer)
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
  std::string (*explain)(const void* old_stored, const void* new_stored) = nullptr;
};

// A static argument's value as text, for a cache miss's explanation: what
// operator<< prints when the type has one, else its type's name. (Out of
// line: the printer behind `print`.)
std::string static_value_str(void (*print)(std::ostream&, const void*), const void* value, const char* type_name);

template <class A>
std::string static_value_str(const A& v) {
  if constexpr (std::is_same_v<A, bool>) return v ? "true" : "false";
  else if constexpr (requires(std::ostream& os) { os << v; })
    return static_value_str([](std::ostream& os, const void* p) { os << *static_cast<const A*>(p); }, &v, nullptr);
  else return static_value_str(nullptr, nullptr, typeid(A).name());
}

// "static argument #K changed from X to Y" for the first static argument
// (K its position among the function's arguments) that differs.
template <std::size_t... Pos, class... A>
std::string explain_static_change(const std::tuple<A...>& old_values, const std::tuple<A...>& new_values) {
  std::string r;
  constexpr std::size_t pos[] = {Pos...};
  [&]<std::size_t... K>(std::index_sequence<K...>) {
    ((r.empty() && !(std::get<K>(old_values) == std::get<K>(new_values))
          ? void(r = "static argument #" + std::to_string(pos[K]) + " changed from " +
                     static_value_str(std::get<K>(old_values)) + " to " + static_value_str(std::get<K>(new_values)))
          : void()),
     ...);
  }(std::index_sequence_for<A...>{});
  return r.empty() ? "a static argument's value changed" : r;
}

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
  std::atomic<std::uint64_t>* hits = nullptr;  // this thread's hit count for the cache (call.hpp)
};

// A call's flattened arguments, by reference: its non-static leaves, the
// lengths of the vectors in its pytrees, and each non-static argument's
// first leaf. For arguments without vectors (the common case) all three are
// known at compile time up to the leaves' contents, and live on the caller's
// stack.
struct CallArgs {
  std::span<const LeafRef> leaves;
  std::span<const std::size_t> vector_sizes;
  std::span<const std::size_t> arg_leaf_begin;
};

// Per-thread scratch space of the call path, reused across calls (no
// allocation once warm). The template flattens arguments with vectors into
// the first three fields; the rest belongs to the call path.
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
  std::vector<Storage> donated;                      // the donated buffers of the current call
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
  const TreeDef* out_tree;  // structure of the explicit results
  Storage* outputs;         // the explicit results, in this thread's scratch space, to be moved out
};

// The call: find the cache entry for the arguments (or trace with `trace`
// and compile one) and run its kernel. Throws what tracing, compiling or the
// kernel throws.
CallResult jit_call(JitCache& c, const Options& opts, const std::source_location& loc, const CallKey& key,
                    const CallArgs& args, TraceFn trace, const void* closure);

// Where compile-log lines (DYNSTAGE_LOG_COMPILES) go: a hook that, when set,
// receives every line instead of stderr and turns logging on (for tests).
using JitLogHook = void (*)(const std::string& line);
std::atomic<JitLogHook>& jit_log_hook();

// jf.jaxpr(args...) and jf.llvm_ir(args...): trace (and compile) outside the
// cache, logged like a cache miss when DYNSTAGE_LOG_COMPILES is set.
ClosedJaxpr jit_inspect_jaxpr(const std::source_location& loc, TraceFn trace, const void* closure);
std::string jit_inspect_llvm_ir(const std::source_location& loc, TraceFn trace, const void* closure);

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

// The number of leaves of a pytree type without vectors (known at compile
// time), or kVariableLeaves.
inline constexpr std::size_t kVariableLeaves = ~std::size_t{0};
constexpr std::size_t add_leaf_counts(std::initializer_list<std::size_t> counts) {
  std::size_t n = 0;
  for (std::size_t k : counts) {
    if (k == kVariableLeaves) return kVariableLeaves;
    n += k;
  }
  return n;
}
template <class X>
struct fixed_leaves_s {
  static constexpr std::size_t value = is_leaf_v<X> ? 1 : kVariableLeaves;  // (vectors, Hana structs)
};
template <class... E>
struct fixed_leaves_s<std::tuple<E...>> {
  static constexpr std::size_t value = add_leaf_counts({0, fixed_leaves_s<std::remove_cvref_t<E>>::value...});
};
template <class A, class B>
struct fixed_leaves_s<std::pair<A, B>> {
  static constexpr std::size_t value = add_leaf_counts({fixed_leaves_s<A>::value, fixed_leaves_s<B>::value});
};
template <class E, std::size_t N>
struct fixed_leaves_s<std::array<E, N>> {
  static constexpr std::size_t e = fixed_leaves_s<E>::value;
  static constexpr std::size_t value = e == kVariableLeaves ? e : N * e;
};

// The indices I of the arguments that are static under options Opts, as a
// std::index_sequence (Acc: those found so far).
template <class... Opts, std::size_t... Acc>
constexpr auto filter_static(std::index_sequence<Acc...> acc, std::index_sequence<>) {
  return acc;
}
template <class... Opts, std::size_t... Acc, std::size_t I, std::size_t... Rest>
constexpr auto filter_static(std::index_sequence<Acc...>, std::index_sequence<I, Rest...>) {
  if constexpr (is_static_arg<Opts...>(I))
    return filter_static<Opts...>(std::index_sequence<Acc..., I>{}, std::index_sequence<Rest...>{});
  else
    return filter_static<Opts...>(std::index_sequence<Acc...>{}, std::index_sequence<Rest...>{});
}

// The CallKey of a call with argument types Args and static arguments
// `statics`, at positions Pos... of the function's arguments.
template <class Pos, class... Args, class... A>
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
    r.explain = [](const void* a, const void* b) {
      return []<std::size_t... P>(std::index_sequence<P...>, const Stored& x, const Stored& y) {
        return explain_static_change<P...>(x, y);
      }(Pos{}, *static_cast<const Stored*>(a), *static_cast<const Stored*>(b));
    };
  }
  return r;
}

}  // namespace detail

// ---------------------------------------------------------------------------

template <class F, class... Opts>
class Jit {
  template <std::size_t I, class A>
  using arg_t = typename detail::arg_type<detail::is_static_arg<Opts...>(I), A>::type;

  template <class... Args>
  static auto result_type_of() {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::type_identity<std::invoke_result_t<const F&, arg_t<I, Args>...>>{};
    }(std::index_sequence_for<Args...>{});
  }
  // (void, a function without results, is the empty tuple.)
  template <class... Args>
  using result_t = std::conditional_t<std::is_void_v<typename decltype(result_type_of<Args...>())::type>,
                                      std::tuple<>, typename decltype(result_type_of<Args...>())::type>;

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
      const auto statics = static_args(args...);
      auto trace = [&] { return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...); };
      constexpr detail::TraceFn trace_fn = Jit::trace_fn<decltype(trace)>();
      auto call = [&](const detail::CallArgs& a) {
        if constexpr (std::tuple_size_v<decltype(statics)> == 0) {
          static constexpr detail::CallKey key{&typeid(std::tuple<Args...>)};
          return detail::jit_call(*cache_, opts_, loc_, key, a, trace_fn, &trace);
        } else {
          return detail::jit_call(*cache_, opts_, loc_, detail::call_key<StaticPositions<Args...>, Args...>(statics),
                                  a, trace_fn, &trace);
        }
      };
      static constexpr auto kLeaves = leaf_begins<Args...>();
      detail::CallResult r;
      if constexpr (kLeaves.second != detail::kVariableLeaves) {
        // No vectors: the leaves on the stack, the structure a constant.
        std::array<detail::LeafRef, kLeaves.second == 0 ? 1 : kLeaves.second> leaves;
        detail::LeafRef* out = leaves.data();
        walk_args([] {}, [&](const auto& x) { write_leaf(*out++, x); }, [](std::size_t) {}, args...);
        r = call({{leaves.data(), kLeaves.second}, {}, kLeaves.first});
      } else {
        detail::CallScratch& sc = detail::call_scratch();
        sc.leaves.clear();
        sc.vector_sizes.clear();
        sc.arg_leaf_begin.clear();
        walk_args([&] { sc.arg_leaf_begin.push_back(sc.leaves.size()); },
                  [&](const auto& x) { write_leaf(sc.leaves.emplace_back(), x); },
                  [&](std::size_t n) { sc.vector_sizes.push_back(n); }, args...);
        r = call({sc.leaves, sc.vector_sizes, sc.arg_leaf_begin});
      }
      detail::Storage* next = r.outputs;
      auto make_leaf = [&]<class L>() -> L { return L(std::move(*next++)); };
      return detail::unflatten<detail::concrete_t<R>>(*r.out_tree, make_leaf);
    }
  }

  // The jaxpr traced for these arguments' signature.
  template <class... Args>
  ClosedJaxpr jaxpr(const Args&... args) const {
    auto trace = [&] { return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...); };
    return detail::jit_inspect_jaxpr(loc_, trace_fn<decltype(trace)>(), &trace);
  }

  // The optimised LLVM IR of the kernel for these arguments' signature.
  template <class... Args>
  std::string llvm_ir(const Args&... args) const {
    auto trace = [&] { return detail::trace_to_jaxpr<Opts...>(f_, loc_, opts_, args...); };
    return detail::jit_inspect_llvm_ir(loc_, trace_fn<decltype(trace)>(), &trace);
  }

  JitStats stats() const { return detail::jit_stats(*cache_); }
  void clear_cache() const { detail::jit_clear_cache(*cache_); }

private:
  // The TraceFn that runs a trace lambda of type Trace.
  template <class Trace>
  static constexpr detail::TraceFn trace_fn() {
    return [](const void* t) { return (*static_cast<const Trace*>(t))(); };
  }

  // Walk the non-static arguments: on_arg() before each, then its leaves
  // and vector lengths in order.
  template <class OnArg, class OnLeaf, class OnVector, class... Args>
  static void walk_args(OnArg on_arg, OnLeaf on_leaf, OnVector on_vector, const Args&... args) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (
          [&] {
            if constexpr (!detail::is_static_arg<Opts...>(I)) {
              on_arg();
              detail::walk_structure(args, on_leaf, on_vector);
            }
          }(),
          ...);
    }(std::index_sequence_for<Args...>{});
  }

  // Fill a default-constructed LeafRef.
  template <class L>
  static void write_leaf(detail::LeafRef& r, const L& x) {
    if constexpr (is_array_v<L>) {
      r.data = x.data();
      r.dims = x.shape().data();
      r.rank = static_cast<std::uint32_t>(x.shape().size());
      r.dtype = dtype_v<typename L::value_type>;
      r.storage = &x.storage();
    } else {
      using E = detail::scalar_element_t<L>;
      const E v = static_cast<E>(x);
      std::memcpy(&r.bits, &v, sizeof v);
      r.dtype = dtype_v<E>;
    }
  }

  // Each non-static argument's first leaf, and the number of leaves
  // (kVariableLeaves if an argument holds a vector).
  template <class... Args>
  static constexpr auto leaf_begins() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      constexpr std::size_t nargs = (std::size_t{0} + ... + (detail::is_static_arg<Opts...>(I) ? 0 : 1));
      std::array<std::size_t, nargs> begin{};
      std::size_t n = 0, k = 0;
      (
          [&] {
            if constexpr (!detail::is_static_arg<Opts...>(I)) {
              begin[k++] = n;
              n = detail::add_leaf_counts({n, detail::fixed_leaves_s<Args>::value});
            }
          }(),
          ...);
      return std::pair{begin, n};
    }(std::index_sequence_for<Args...>{});
  }

  // The positions of the static arguments, as a std::index_sequence.
  template <class... Args>
  using StaticPositions =
      decltype(detail::filter_static<Opts...>(std::index_sequence<>{}, std::index_sequence_for<Args...>{}));

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

// jit(f, options...): fixed arities rather than a pack, so that a defaulted
// source_location can follow the options (errors and compile logs name the
// call site). Any subset of the options, in any order, each kind at most once.
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
template <class F, class O1, class O2, class O3, class O4>
Jit<F, O1, O2, O3, O4> jit(F f, O1 o1, O2 o2, O3 o3, O4 o4, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1, O2, O3, O4>(std::move(f), loc, detail::options_of(o1, o2, o3, o4));
}
template <class F, class O1, class O2, class O3, class O4, class O5>
Jit<F, O1, O2, O3, O4, O5> jit(F f, O1 o1, O2 o2, O3 o3, O4 o4, O5 o5, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1, O2, O3, O4, O5>(std::move(f), loc, detail::options_of(o1, o2, o3, o4, o5));
}
template <class F, class O1, class O2, class O3, class O4, class O5, class O6>
Jit<F, O1, O2, O3, O4, O5, O6> jit(F f, O1 o1, O2 o2, O3 o3, O4 o4, O5 o5, O6 o6, std::source_location loc = std::source_location::current()) {
  return Jit<F, O1, O2, O3, O4, O5, O6>(std::move(f), loc, detail::options_of(o1, o2, o3, o4, o5, o6));
}

}  // namespace dyn
