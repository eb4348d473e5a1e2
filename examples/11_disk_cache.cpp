// Lesson 11: the disk cache — compiled kernels outlive the process.
//
// dyn::jit stores every kernel it compiles in a directory, by default
// ${XDG_CACHE_HOME:-$HOME/.cache}/dynstage. The next process that jits the
// same function for the same signature (the same jaxpr, on the same CPU,
// with the same dynstage and LLVM) traces it, finds the kernel on disk and
// loads its machine code: no lowering, no LLVM optimisation, no code
// generation. jf.stats().disk_hits counts those loads.
//
//   DYNSTAGE_CACHE_DIR=/some/dir   where the kernels go ("off": no disk cache)
//   DYNSTAGE_CACHE_MAX_BYTES=N     its size bound (default 1 GiB; the least
//                                  recently used kernels are removed)
//   DYNSTAGE_LOG_COMPILES=1        logs each compile and each "disk hit"
//
// Run this program twice: the second run's first jit already hits the disk.
// (Here a second dyn::jit of the same function stands for the second
// process: it starts with an empty in-memory cache. So that the lesson
// starts from an empty cache and leaves nothing behind, it uses a directory
// of its own; a program normally sets nothing.)
#include <dynstage/dynstage.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dynstage_lesson_90_" + std::to_string(::getpid()));
  setenv("DYNSTAGE_CACHE_DIR", dir.c_str(), 1);  // read at the first compile

  // A layer norm over the rows, then a nonlinearity: a realistic small kernel.
  auto f = [](auto x) {
    auto mean = dyn::mean(x, {1}, dyn::keepdims);
    auto c = x - mean;
    auto var = dyn::mean(c * c, {1}, dyn::keepdims);
    return dyn::tanh(c / dyn::sqrt(var + 1e-5));
  };
  const dyn::Array<double> x = dyn::reshape(dyn::arange<double>(64 * 256), {64, 256}) * 0.01;

  auto timed = [&](const char* what) {
    auto jf = dyn::jit(f);  // a fresh in-memory cache, as in a new process
    std::cout << std::fixed << std::setprecision(2);
    const auto t0 = std::chrono::steady_clock::now();
    dyn::Array<double> r = jf(x);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const dyn::JitStats s = jf.stats();
    std::cout << what << ": first call " << ms << " ms; compiles " << s.compiles << ", disk hits " << s.disk_hits
              << ", trace " << s.trace_seconds * 1e3 << " ms, lowering " << s.lower_seconds * 1e3 << " ms, LLVM "
              << s.llvm_seconds * 1e3 << " ms\n";
    return std::pair{r, s};
  };
  const auto [r1, s1] = timed("first jit  (compiles, stores the kernel)");
  const auto [r2, s2] = timed("second jit (loads it from disk)         ");

  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().extension() == ".dkc";
  std::cout << "kernels in " << dir.string() << ": " << entries << "\n";
  std::cout << "same results: " << (dyn::array_equal(r1, r2) ? "yes" : "no") << "\n";

  const bool ok = s1.compiles == 1 && s1.disk_hits == 0 && s2.compiles == 0 && s2.disk_hits == 1 && entries == 1 &&
                  dyn::array_equal(r1, r2) && dyn::allclose(r1, dyn::eager(f)(x), 1e-12, 1e-12);
  fs::remove_all(dir);
  return ok ? 0 : 1;
}
