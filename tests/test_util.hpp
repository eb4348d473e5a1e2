// Helpers shared by the test files: printing to a string, and the message of
// an expected exception without the place it names.
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace test_util {

template <class T>
std::string str(const T& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

// The message of the exception of type E that f throws ("" if none), without
// the trailing "(at FILE:LINE)" and trace-site lines.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    std::string m = e.what();
    auto cut = m.find("\nThe error occurred while tracing");
    if (cut != std::string::npos) m = m.substr(0, cut);
    cut = m.rfind(" (at ");
    if (cut != std::string::npos) m = m.substr(0, cut);
    return m;
  }
  return "";
}

}  // namespace test_util
