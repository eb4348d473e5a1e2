// dynstage: dyn::debug_print (API section 15; jax.debug.print), printing
// inside traced code: eagerly it prints at once; in a trace it records a
// debug_callback equation, an effect (no outputs) that is kept even though
// no result uses it, stays in program order against other prints, and
// prints each time it runs: once per iteration in a loop body, only in the
// branch taken in a cond. docs/debugging.md.
#pragma once

#include <string>
#include <vector>

#include "ops.hpp"

namespace dyn {
namespace detail {

// The format and the source line of the call (a parameter pack cannot be
// followed by a defaulted source_location, so the format carries it).
struct DebugFormat {
  std::string fmt;
  Loc loc;
  DebugFormat(const char* f, Loc l = Loc::current()) : fmt(f), loc(l) {}         // NOLINT: implicit by design
  DebugFormat(std::string f, Loc l = Loc::current()) : fmt(std::move(f)), loc(l) {}  // NOLINT
  DebugFormat(std::string_view f, Loc l = Loc::current()) : fmt(f), loc(l) {}     // NOLINT
};

// Binds debug_callback (staged whenever a trace is active, even on concrete
// operands: a print inside a jitted function prints at every call).
void debug_print(const std::string& fmt, const std::vector<Value>& values);

#ifdef DYNSTAGE_IMPLEMENTATION
void debug_print(const std::string& fmt, const std::vector<Value>& values) {
  bind(Prim::debug_callback, values, DebugCallbackParams{fmt}, /*stage=*/true);
}
#endif

// A C++ scalar prints as its own type (a float 0.1f as 0.1), not as the
// weak literal an arithmetic operation would make of it.
template <class X>
Value debug_value(const X& x) {
  using U = std::remove_cvref_t<X>;
  if constexpr (is_scalar_v<U>) return Value{AnyArray(Array<scalar_element_t<U>>::scalar(x)), nullptr, false};
  else return to_value(x);
}

}  // namespace detail

// debug_print(fmt, xs...) (jax.debug.print with positional arguments):
// prints `fmt` with its fields ({}, {:.3f}, {:>5}, {1}: {fmt}'s syntax)
// replaced by the values (tracers, arrays, C++ scalars, dimensions), then a
// newline, to stdout. A field count that does not match the values is a
// dyn::TypeError when traced (eagerly: when called).
template <Operand... Xs>
void debug_print(detail::DebugFormat fmt, const Xs&... xs) {
  detail::OpSite site(fmt.loc);
  detail::debug_print(fmt.fmt, std::vector<detail::Value>{detail::debug_value(xs)...});
}

}  // namespace dyn
