// dynstage: the error family.
//
// Every user mistake ends in a subclass of dyn::Error (a std::runtime_error)
// whose message states the rule, the offending shapes or dtypes, and where it
// happened. Internal invariant violations are dyn::InternalError, never an
// assert: a bug in dynstage must not look like a bug in the user's program.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

namespace dyn {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Incompatible shapes: names the primitive and both shapes.
class ShapeError : public Error {
public:
  using Error::Error;
};
// Wrong or unsupported dtypes, tracer misuse, bad arguments.
class TypeError : public Error {
public:
  using Error::Error;
};
// A symbolic dimension comparison that cannot be decided (JAX's name).
class InconclusiveDimensionOperation : public Error {
public:
  using Error::Error;
};
// Concrete input shapes that do not satisfy a polymorphic specification.
class ShapeAssertionError : public Error {
public:
  using Error::Error;
};
// Out-of-range axes, indices and slice bounds.
class IndexError : public Error {
public:
  using Error::Error;
};
// Run-time arithmetic faults that have no defined result (integer division
// by zero).
class ArithmeticError : public Error {
public:
  using Error::Error;
};
// An axis name that no enclosing shard_map's mesh has, or a collective
// (psum, all_gather, ...) called outside shard_map (JAX's NameError,
// "unbound axis name").
class NameError : public Error {
public:
  using Error::Error;
};
// An allocation that failed: the memory asked for is not there (Python's
// MemoryError; XLA's RESOURCE_EXHAUSTED). Names the operation that
// allocated and the bytes asked for; nothing is left half-done (the failed
// call frees what it allocated, a jitted function stays usable).
class MemoryError : public Error {
public:
  using Error::Error;
};
// A broken invariant inside dynstage itself: please report it.
class InternalError : public Error {
public:
  using Error::Error;
};

namespace detail {

// Where the user is: the entry point of the trace being recorded and the
// dyn:: operation being applied. Maintained as a thread-local stack by RAII
// guards so that errors raised deep inside shape rules can say where.
struct ErrorContext {
  std::vector<std::source_location> trace_sites;  // make_jaxpr/jit call sites
  std::vector<std::source_location> op_sites;     // dyn:: free-function calls
};

inline ErrorContext& error_context() {
  thread_local ErrorContext ctx;
  return ctx;
}

// "FILE:LINE".
std::string format_location(const std::source_location& loc);

// RAII: record that a dyn:: operation is being applied at `loc`.
class OpSite {
public:
  explicit OpSite(const std::source_location& loc) { error_context().op_sites.push_back(loc); }
  ~OpSite() { error_context().op_sites.pop_back(); }
  OpSite(const OpSite&) = delete;
  OpSite& operator=(const OpSite&) = delete;
};

// RAII: record that a function is being traced from `loc`.
class TraceSite {
public:
  explicit TraceSite(const std::source_location& loc) { error_context().trace_sites.push_back(loc); }
  ~TraceSite() { error_context().trace_sites.pop_back(); }
  TraceSite(const TraceSite&) = delete;
  TraceSite& operator=(const TraceSite&) = delete;
};

// The message with its place appended: "(at FILE:LINE)" for the operation
// and "The error occurred while tracing the function at FILE:LINE" for the
// enclosing trace.
// (Out of line, as internal_error: one definition per program, in the
// DYNSTAGE_IMPLEMENTATION translation unit, not one per fail<E> user.)
std::string with_context(std::string msg);

// Throw a user error of type E with the current context appended.
template <class E>
[[noreturn]] void fail(std::string msg) {
  throw E(with_context(std::move(msg)));
}

[[noreturn]] void internal_error(const std::string& msg);

#ifdef DYNSTAGE_IMPLEMENTATION
std::string format_location(const std::source_location& loc) {
  std::string file = loc.file_name();
  return file + ":" + std::to_string(loc.line());
}

std::string with_context(std::string msg) {
  const auto& ctx = error_context();
  if (!ctx.op_sites.empty()) msg += " (at " + format_location(ctx.op_sites.back()) + ")";
  if (!ctx.trace_sites.empty())
    msg += "\nThe error occurred while tracing the function at " +
           format_location(ctx.trace_sites.back()) + ".";
  return msg;
}

void internal_error(const std::string& msg) {
  throw InternalError("dynstage internal error (please report): " + msg);
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace detail
}  // namespace dyn
