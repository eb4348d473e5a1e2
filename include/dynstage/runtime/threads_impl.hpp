// dynstage: the thread pool's definitions (runtime/threads.hpp declares
// them). Part of the backend implementation (DYNSTAGE_IMPLEMENTATION), so
// oneTBB's headers reach only the implementation translation unit.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/info.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include "../errors.hpp"
#include "threads.hpp"

namespace dyn {
namespace detail {

// The thread count and the arena that enforces it. An arena is shared by all
// calling threads (they join its workers instead of bringing their own), and
// replaced when the count changes; a kernel running meanwhile keeps the arena
// it started in alive through its shared_ptr.
struct ThreadPool {
  std::mutex m;
  int n = 0;
  std::shared_ptr<tbb::task_arena> arena;

  static ThreadPool& get() {
    static ThreadPool* p = new ThreadPool();  // never destroyed: kernels may run during exit
    return *p;
  }
  ThreadPool() { set(default_num_threads()); }
  // More threads than cores run as many as there are cores (oneTBB's pool
  // has one worker per core, less the caller).
  void set(int count) {
    std::lock_guard<std::mutex> lock(m);
    if (count == n) return;  // the arena follows from the count
    n = count;
    const int slots = std::min(count, tbb::info::default_concurrency());
    arena = slots > 1 ? std::make_shared<tbb::task_arena>(slots) : nullptr;
  }
  std::shared_ptr<tbb::task_arena> current() {
    std::lock_guard<std::mutex> lock(m);
    return arena;
  }
};

int default_num_threads() {
  if (const char* s = std::getenv("DYNSTAGE_NUM_THREADS"); s && *s) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end && *end == '\0' && v >= 1 && v <= 4096) return static_cast<int>(v);
  }
  return tbb::info::default_concurrency();
}

std::int32_t parallel_for_entry(TaskFn body, void* ctx, std::int64_t ntasks) {
  if (count_tasks().load(std::memory_order_relaxed)) tasks_run().fetch_add(std::max<std::int64_t>(ntasks, 0));
  if (ntasks <= 0) return 0;
  std::shared_ptr<tbb::task_arena> arena = ntasks > 1 ? ThreadPool::get().current() : nullptr;
  if (!arena) return body(ctx, 0, ntasks);
  // Shared with the workers through atomics only: TSan does not see the
  // pool's own synchronisation (libtbb is not instrumented). The fork and
  // the join are release/acquire pairs on them, so that TSan also sees what
  // the hardware guarantees through TBB: everything the caller wrote before
  // the region happens before every task, and every task before what the
  // caller does after it (a kernel's memcpy, which TSan intercepts, may
  // write a buffer a task of an earlier call wrote, or the reverse).
  std::atomic<TaskFn> fn{nullptr};
  std::atomic<void*> context{nullptr};
  std::atomic<std::int32_t> code{0};
  context.store(ctx, std::memory_order_relaxed);
  fn.store(body, std::memory_order_release);
  arena->execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, ntasks, 1), [&](const tbb::blocked_range<std::int64_t>& r) {
      const TaskFn f = fn.load(std::memory_order_acquire);
      const std::int32_t c = f(context.load(std::memory_order_relaxed), r.begin(), r.end());
      code.fetch_or(c, std::memory_order_release);
    });
  });
  return code.load(std::memory_order_acquire);
}

}  // namespace detail

void set_num_threads(int n, const std::source_location& loc) {
  if (n < 1)
    throw Error("dyn::set_num_threads(" + std::to_string(n) + "): the number of threads must be at least 1 (at " +
                std::string(loc.file_name()) + ":" + std::to_string(loc.line()) + ")");
  detail::ThreadPool::get().set(n);
}

int num_threads() {
  detail::ThreadPool& p = detail::ThreadPool::get();
  std::lock_guard<std::mutex> lock(p.m);
  return p.n;
}

}  // namespace dyn

#endif  // DYNSTAGE_IMPLEMENTATION
