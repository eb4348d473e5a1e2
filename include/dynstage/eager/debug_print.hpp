// dynstage: printing for dyn::debug_print, shared by eager execution (the
// debug_callback primitive's eager kernel) and compiled kernels (the entry
// point dynstage_debug_print, which llvm/session.hpp defines in the JIT).
//
// A line is the format with each field replaced by its value, then '\n',
// written to the print sink (stdout, flushed; tests set
// detail::debug_print_sink() to capture it). A value prints as:
//   - `{}` of a scalar (rank 0): Python's str of it, as jax.debug.print
//     shows it: floats shortest round-trip ("2.0", "0.1", "1e-05", "nan",
//     "inf"), integers in decimal, bools "True"/"False";
//   - `{}` of an array: NumPy's str (`[1. 2. 3.]`, `[[1 2]\n [3 4]]`,
//     `[ True False]`), dyn::Array's operator<<;
//   - `{:spec}`: the spec applied by {fmt} to a scalar, or to each element
//     of an array, laid out NumPy's way (brackets per axis, elements
//     right-aligned to a common width, a newline between rows); a bool is
//     formatted as the string "True"/"False" (so `{:>5}` pads it).
// Formatting uses {fmt} (Debian's libfmt-dev) in header-only mode, in the
// implementation TU only: user files never include it.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "../array/array.hpp"
#include "../ir/debug_format.hpp"
#include "../ir/print.hpp"  // py_complex_repr

namespace dyn::detail {

// Where printed lines go (each with its '\n'): `fn(ctx, line)`, or stdout,
// flushed after each line, while `fn` is null (the default). A test hook:
// set it to capture output, reset it to {} after. Not synchronised: set it
// while no kernel runs. (A function pointer, not std::function: user files
// do not parse <functional>.)
struct DebugPrintSink {
  void (*fn)(void* ctx, const std::string& line) = nullptr;
  void* ctx = nullptr;
};
DebugPrintSink& debug_print_sink();

// One value to print: row-major data of `shape`.
struct DebugValue {
  DType dtype;
  const void* data;
  std::vector<std::int64_t> shape;
};

// The line for `fmt` and `values` (without '\n'); the format is checked.
std::string debug_format(const std::string& fmt, const std::vector<DebugValue>& values);
// Format and write one line to the sink.
void debug_print_line(const std::string& fmt, const std::vector<DebugValue>& values);
// The exception a print raised in a compiled kernel (the sink threw, or
// memory ran out while formatting), on this thread: dynstage_debug_print
// stores it and returns 1, the kernel stops with kKernelPrintFailed, and the
// call rethrows it (llvm/backend_impl.hpp's throw_kernel_error). No
// exception crosses the kernel's frames.
std::exception_ptr& debug_print_pending_error();

}  // namespace dyn::detail

// The entry point compiled kernels call (llvm/lower_roots.hpp's emit_debug_print):
// `fmt` NUL-terminated, n values, value k of dtype dtypes[k] (DType's
// enumerator), rank ranks[k], its dimensions at dims[offset_k ..] (the
// ranks' running sum) and its data at data[k]. Returns 0, or 1 after
// storing the exception the print raised in debug_print_pending_error().
extern "C" int dynstage_debug_print(const char* fmt, std::int64_t n, const void* const* data,
                                    const std::int32_t* dtypes, const std::int64_t* ranks,
                                    const std::int64_t* dims);

#ifdef DYNSTAGE_IMPLEMENTATION
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY
#endif
#include <fmt/format.h>

#include <cstdio>
#include <sstream>

namespace dyn::detail {

DebugPrintSink& debug_print_sink() {
  static DebugPrintSink sink;
  return sink;
}

std::exception_ptr& debug_print_pending_error() {
  thread_local std::exception_ptr e;
  return e;
}

namespace debug_print_detail {

// Python's str of a scalar.
template <class T>
std::string scalar_str(T v) {
  if constexpr (is_complex_v<T>) {
    return py_complex_repr(static_cast<double>(v.real()), static_cast<double>(v.imag()));  // Python's str
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return fmt::format("{}", v);
  } else {
    std::string s = fmt::format("{}", v);  // shortest round-trip, as Python's repr
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
  }
}

template <class T>
std::string with_spec(T v, const std::string& spec) {
  const std::string f = "{:" + spec + "}";
  try {
    if constexpr (is_complex_v<T>) {
      // the spec applies to each part, as Python's complex.__format__
      const std::string re = fmt::format(fmt::runtime(f), v.real());
      std::string im = fmt::format(fmt::runtime("{:+" + spec + "}"), v.imag());
      return re + im + "j";
    } else if constexpr (std::is_same_v<T, bool>) return fmt::format(fmt::runtime(f), std::string(v ? "True" : "False"));
    else if constexpr (sizeof(T) == 1 && std::is_integral_v<T>) return fmt::format(fmt::runtime(f), static_cast<int>(v));
    else return fmt::format(fmt::runtime(f), v);
  } catch (const fmt::format_error& e) {
    fail<TypeError>("debug_print: the format spec '" + spec + "' does not apply to a value of dtype " +
                    std::string(dtype_name(dtype_v<T>)) + " (" + e.what() + ")");
  }
}

// NumPy's layout of formatted items: brackets per axis, right-aligned to a
// common width, rows on lines of their own.
inline std::string layout(const std::vector<std::string>& items, const std::vector<std::int64_t>& shape) {
  std::size_t width = 0;
  for (const auto& s : items) width = std::max(width, s.size());
  std::string os;
  std::size_t pos = 0;
  auto rec = [&](auto& self, std::size_t axis, int indent) -> void {
    os += '[';
    const std::int64_t len = shape[axis];
    for (std::int64_t i = 0; i < len; ++i) {
      if (axis + 1 == shape.size()) {
        if (i) os += ' ';
        const std::string& s = items[pos++];
        os += std::string(width - s.size(), ' ') + s;
      } else {
        if (i) os += std::string(shape.size() - axis - 1, '\n') + std::string(static_cast<std::size_t>(indent + 1), ' ');
        self(self, axis + 1, indent + 1);
      }
    }
    os += ']';
  };
  rec(rec, 0, 0);
  return os;
}

inline std::string value_str(const DebugValue& v, const std::string& spec) {
  return visit_dtype(v.dtype, [&](auto t) -> std::string {
    using T = decltype(t);
    const T* p = static_cast<const T*>(v.data);
    if (v.shape.empty()) return spec.empty() ? scalar_str(p[0]) : with_spec(p[0], spec);
    if (spec.empty()) {  // NumPy's str, as dyn::Array prints
      std::ostringstream os;
      print_array(os, v.dtype, v.data, v.shape);
      return os.str();
    }
    std::int64_t n = 1;
    for (auto d : v.shape) n *= d;
    std::vector<std::string> items;
    items.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) items.push_back(with_spec(p[i], spec));
    return layout(items, v.shape);
  });
}

}  // namespace debug_print_detail

void check_debug_specs(const std::string& fmt, const std::vector<DType>& dtypes) {
  std::size_t count = 0;
  for (const FormatPiece& p : parse_debug_format(fmt, count)) {
    if (p.index < 0 || p.spec.empty() || static_cast<std::size_t>(p.index) >= dtypes.size()) continue;
    visit_dtype(dtypes[static_cast<std::size_t>(p.index)], [&](auto t) { debug_print_detail::with_spec(t, p.spec); });
  }
}

std::string debug_format(const std::string& fmt, const std::vector<DebugValue>& values) {
  std::size_t count = 0;
  const std::vector<FormatPiece> pieces = parse_debug_format(fmt, count);
  check_debug_format(fmt, values.size());
  std::string r;
  for (const FormatPiece& p : pieces) {
    r += p.text;
    if (p.index >= 0) r += debug_print_detail::value_str(values[static_cast<std::size_t>(p.index)], p.spec);
  }
  return r;
}

void debug_print_line(const std::string& fmt, const std::vector<DebugValue>& values) {
  std::string line = debug_format(fmt, values) + "\n";
  if (const DebugPrintSink& sink = debug_print_sink(); sink.fn) {
    sink.fn(sink.ctx, line);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace dyn::detail

extern "C" int dynstage_debug_print(const char* fmt, std::int64_t n, const void* const* data,
                                    const std::int32_t* dtypes, const std::int64_t* ranks,
                                    const std::int64_t* dims) {
  using namespace dyn::detail;
  // No exception may cross the kernel's frames. The format was checked at
  // trace time; what is left (an allocation, the user's sink) stops the
  // kernel, and the call rethrows it.
  try {
    std::vector<DebugValue> values;
    values.reserve(static_cast<std::size_t>(n));
    std::int64_t off = 0;
    for (std::int64_t k = 0; k < n; ++k) {
      DebugValue v{static_cast<dyn::DType>(dtypes[k]), data[k], {}};
      for (std::int64_t a = 0; a < ranks[k]; ++a) v.shape.push_back(dims[off++]);
      values.push_back(std::move(v));
    }
    debug_print_line(fmt, values);
  } catch (...) {
    debug_print_pending_error() = std::current_exception();
    return 1;
  }
  return 0;
}
#endif  // DYNSTAGE_IMPLEMENTATION
