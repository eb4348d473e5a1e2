// Shared by the lessons: the median wall time of a few calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace lesson {

// Median wall time of `reps` calls of `call()`, in milliseconds.
template <class F>
double median_ms(int reps, F&& call) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace lesson
