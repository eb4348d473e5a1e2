// Helpers shared by the test files: printing to a string, the message of an
// expected exception without the place it names, counting arrays, and the
// distance of two floats in ulps.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <dynstage/array/array.hpp>

namespace test_util {

// The element types by their jaxpr names, for tests that spell many of
// them (`using namespace test_util::element_types;`).
namespace element_types {
using i8 = std::int8_t;
using i16 = std::int16_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
}  // namespace element_types


template <class T>
std::string str(const T& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// The message of the exception of type E that f throws ("" if none), without
// the trailing "(at FILE:LINE)" and the place lines (trace site, jit site).
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    std::string m = e.what();
    auto cut = m.find("\nThe error occurred while ");  // tracing, or running a kernel
    if (cut != std::string::npos) m = m.substr(0, cut);
    cut = m.rfind(" (at ");
    if (cut != std::string::npos) m = m.substr(0, cut);
    return m;
  }
  return "";
}

// start, start + step, ... in row-major order.
// An array's elements in row-major order, to compare with ==.
template <class T>
std::vector<T> vals(const dyn::Array<T>& a) {
  return std::vector<T>(a.data(), a.data() + a.size());
}

template <class T>
dyn::Array<T> iota_array(std::vector<std::int64_t> shape, T start = T(0), T step = T(1)) {
  dyn::Array<T> a(shape);
  T* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = static_cast<T>(start + step * static_cast<T>(i));
  return a;
}

// Distance in units in the last place: 0 for equal values (+0 and -0
// included) and for two NaNs; huge for a NaN against a number.
template <class T>
double ulp_distance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : 1e300;
  if (a == b) return 0;
  using I = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  // Map the sign-magnitude bit patterns onto a line where adjacent floats are
  // adjacent integers (-0 and +0 both map to 0).
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  const __int128 d = static_cast<__int128>(ia) - static_cast<__int128>(ib);
  return static_cast<double>(d < 0 ? -d : d);
}

// The number of occurrences of `what` in `s` (counting overlapping ones).
inline std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// An LLVM module's text without the fusion-plan comment lines at its head
// (the plan has one line per equation: not code).
inline std::string code_of(const std::string& ir) {
  std::string out;
  for (std::size_t a = 0, nl; a < ir.size(); a = nl + 1) {
    nl = ir.find('\n', a);
    if (nl == std::string::npos) nl = ir.size();
    if (ir[a] != ';') out += ir.substr(a, nl - a + 1);
  }
  return out;
}

// Resident set size of this process, in bytes (/proc/self/statm, field 2).
inline std::int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

// An integer from the environment, or `fallback` when unset or empty.
inline std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

}  // namespace test_util
