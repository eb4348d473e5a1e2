// dynstage: the threads compiled kernels run on (API section 15, "Threads").
//
// Kernels split their large loops into tasks (llvm/parallel.hpp) and hand
// them to oneTBB's shared thread pool through one C-ABI entry point,
// parallel_for_entry below, which the backend defines in the JIT as the
// routine kParallelForRoutine. Why oneTBB and not an OpenMP runtime: calls
// from several user threads at once share one pool of num_threads() workers
// (an OpenMP runtime gives each calling thread a team of its own, so two
// user threads running kernels would oversubscribe the machine), and
// task_arena limits the concurrency per call without a global setting; the
// measurements are in docs/backend.md, "Threads". The definitions, and
// oneTBB's headers, are in threads_impl.hpp (the implementation TU only).
//
// The number of threads never changes a result: how a kernel is split into
// tasks depends only on the problem size (a reduction adds per-task partial
// results in task order), and which thread runs a task does not matter.
#pragma once

#include <atomic>
#include <cstdint>
#include <source_location>

namespace dyn {

// The number of threads kernels use from now on (n >= 1; 1: the calling
// thread only; more than the machine has cores runs one per core). The
// default is DYNSTAGE_NUM_THREADS if set, else every core. Throws dyn::Error
// for n < 1.
void set_num_threads(int n, const std::source_location& loc = std::source_location::current());
// The number of threads kernels use.
int num_threads();

namespace detail {

// A task body of a compiled kernel: runs tasks [lo, hi) with the kernel's
// context; returns 0 or the kernel's fault bits.
using TaskFn = std::int32_t (*)(void* ctx, std::int64_t lo, std::int64_t hi);

// Run tasks [0, ntasks) of `body`, on up to num_threads() threads (the
// calling thread included); returns the OR of the bodies' return codes.
std::int32_t parallel_for_entry(TaskFn body, void* ctx, std::int64_t ntasks);

inline constexpr const char* kParallelForRoutine = "dynstage_parallel_for";  // the kernels' call

// The default thread count: DYNSTAGE_NUM_THREADS if it is a number >= 1,
// else every core.
int default_num_threads();

// Test hook: while count_tasks() is on, tasks_run() counts the tasks
// parallel_for_entry runs (tests check which loops are split, and how).
inline std::atomic<bool>& count_tasks() {
  static std::atomic<bool> on{false};
  return on;
}
inline std::atomic<std::int64_t>& tasks_run() {
  static std::atomic<std::int64_t> n{0};
  return n;
}

}  // namespace detail
}  // namespace dyn
