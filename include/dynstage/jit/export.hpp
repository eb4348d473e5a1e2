// dynstage: dyn::export_aot — compile a function ahead of time into an
// object file and a C header (API section 15, docs/backend.md "Ahead-of-time
// export").
//
//   dyn::export_aot(f, "rowsum", "out/dir", dyn::arg<double>("(n, 3)"));
//
// writes out/dir/rowsum.o and out/dir/rowsum.h. The header declares a C
// function that a program links and calls without LLVM and without dynstage:
//
//   int32_t rowsum(const double* arg0, int64_t n, double* out);
//
// Each argument of the call is one of
//   dyn::arg<T>(spec[, name])  an input of dtype T whose shape is `spec`, in
//                              JAX's polymorphic-shape grammar ("(n, 3)",
//                              "()", "(2*b, m)"; every dimension written out:
//                              no "_" or "..."). Its dimension variables
//                              become size parameters of the C function.
//   a number, bool or enum     a static argument, passed to f as it is and
//                              baked into the object;
//   dyn::constraints{...}      constraints on the dimension variables, as
//                              for jit (they become preconditions of the C
//                              function, checked at each call).
// Anything else is a TypeError naming export_aot and the argument.
//
// Include it after <dynstage/dynstage.hpp>: it is the one public header the
// umbrella does not include (only a program that exports compiles it). It
// declares; the implementation (LLVM) is llvm/aot.hpp, compiled in the
// DYNSTAGE_IMPLEMENTATION translation unit like the rest of the backend.
#pragma once

#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit.hpp"

namespace dyn {

// An abstract argument of an exported function: dtype T, shape `spec`
// (JAX's grammar), and the C parameter's name (default "arg<position>").
template <class T>
struct arg {
  static_assert(is_element_v<T>, "dyn::arg<T>: T must be an element type (bool, an integer or a float type)");
  std::string spec = "()";
  std::string name;
  arg(std::string s = "()", std::string n = "") : spec(std::move(s)), name(std::move(n)) {}  // NOLINT
};

namespace detail {

template <class X> struct is_aot_arg : std::false_type {};
template <class T> struct is_aot_arg<arg<T>> : std::true_type {};

// One argument of export_aot, type-erased.
struct AotArg {
  enum class Kind : std::uint8_t { abstract, literal, constraints, unsupported };
  Kind kind = Kind::abstract;
  DType dtype = DType::f64;
  std::string spec, name;  // abstract: the shape spec and the C name
  std::string text;        // literal: its value; unsupported: its type
  std::vector<std::string> constraints;
};

// Calls the function with argument tracers for the abstract arguments (leaf
// k with the symbolic shape shapes[k]) and the literals as they are; returns
// its flattened results and sets `out_tree`.
using AotCallFn = std::vector<Value> (*)(const void* closure, TraceScope& scope, const std::vector<ArgSpec>* shapes,
                                         std::vector<DimLeaf>& dim_leaves, TreeDef& out_tree);

// The function's name as the call spells it, with the place of the call
// (errors name it): a string converts implicitly, capturing the caller's line.
struct AotName {
  std::string name;
  std::source_location loc;
  AotName(const char* n, std::source_location l = std::source_location::current()) : name(n), loc(l) {}  // NOLINT
  AotName(std::string n, std::source_location l = std::source_location::current()) : name(std::move(n)), loc(l) {}  // NOLINT
};

// Traces, lowers and writes name.o and name.h (llvm/aot.hpp).
void export_aot_impl(const AotName& name, const std::string& dir, const std::vector<AotArg>& args, AotCallFn call,
                     const void* closure);

// What the function receives for export argument A: a tracer for dyn::arg,
// the value for a literal, nothing (AotSkip) for constraints.
struct AotSkip {};
template <class T>
Tracer<T> aot_leaf(const arg<T>&, TraceScope& scope, const std::vector<ArgSpec>* shapes, std::size_t& next,
                   std::vector<DimLeaf>& dim_leaves) {
  return trace_argument(Array<T>(), scope, shapes, next, dim_leaves);
}
template <class A>
auto aot_traced(const A& a, TraceScope& scope, const std::vector<ArgSpec>* shapes, std::size_t& next,
                std::vector<DimLeaf>& dim_leaves) {
  if constexpr (is_aot_arg<A>::value) return aot_leaf(a, scope, shapes, next, dim_leaves);
  else if constexpr (std::is_same_v<A, constraints>) return AotSkip{};
  else return a;
}

template <class A>
AotArg aot_describe(const A& a) {
  AotArg r;
  if constexpr (is_aot_arg<A>::value) {
    r.kind = AotArg::Kind::abstract;
    r.dtype = [&]<class T>(const arg<T>&) { return dtype_v<T>; }(a);
    r.spec = a.spec;
    r.name = a.name;
  } else if constexpr (std::is_same_v<A, constraints>) {
    r.kind = AotArg::Kind::constraints;
    r.constraints = a.list;
  } else if constexpr (std::is_arithmetic_v<A> || std::is_enum_v<A>) {
    r.kind = AotArg::Kind::literal;
    r.text = static_value_str(a);
  } else {
    r.kind = AotArg::Kind::unsupported;
    r.text = typeid(A).name();
  }
  return r;
}

// The elements of tuple t that are not AotSkip, as a tuple of references.
template <class Tuple, std::size_t... I>
auto aot_without_skips(Tuple& t, std::index_sequence<I...>) {
  return std::tuple_cat([&]() {
    if constexpr (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>, AotSkip>) return std::tuple<>{};
    else return std::forward_as_tuple(std::get<I>(t));
  }()...);
}

}  // namespace detail

// Compile f for the abstract arguments `args` and write `dir`/`name`.o and
// `dir`/`name`.h (the directory is created if missing). Throws TypeError for
// arguments the exported function cannot express, dyn::Error when the files
// cannot be written, and what tracing throws.
template <class F, class... A>
void export_aot(const F& f, detail::AotName name, const std::string& dir, const A&... args) {
  using Closure = std::tuple<const F&, const A&...>;
  const Closure closure{f, args...};
  const std::vector<detail::AotArg> described{detail::aot_describe(args)...};
  detail::AotCallFn call = [](const void* c, detail::TraceScope& scope, const std::vector<detail::ArgSpec>* shapes,
                              std::vector<detail::DimLeaf>& dim_leaves, detail::TreeDef& out_tree) {
    return std::apply(
        [&](const F& fn, const A&... a) -> std::vector<detail::Value> {
          std::size_t next = 0;
          if constexpr (((std::is_arithmetic_v<A> || std::is_enum_v<A> || detail::is_aot_arg<A>::value ||
                          std::is_same_v<A, constraints>) &&
                         ...)) {
            // Braced initialisation evaluates left to right: invars in argument order.
            std::tuple<decltype(detail::aot_traced(a, scope, shapes, next, dim_leaves))...> traced{
                detail::aot_traced(a, scope, shapes, next, dim_leaves)...};
            auto call_args = detail::aot_without_skips(traced, std::index_sequence_for<A...>{});
            if constexpr (std::is_void_v<decltype(std::apply(fn, call_args))>) {
              std::apply(fn, call_args);
              out_tree = detail::treedef_of(std::tuple<>{});
              return {};
            } else {
              auto out = std::apply(fn, call_args);
              out_tree = detail::treedef_of(out);
              return detail::flatten_results(out);
            }
          } else {
            return {};  // (not reached: export_aot_impl rejects the unsupported argument first)
          }
        },
        *static_cast<const Closure*>(c));
  };
  detail::export_aot_impl(name, dir, described, call, &closure);
}

}  // namespace dyn
