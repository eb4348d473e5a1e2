// Kernels on every core (API.md section 15, "Threads"; runtime/threads.hpp,
// llvm/parallel.hpp, llvm/lower_parallel.hpp):
//   - dyn::set_num_threads / dyn::num_threads, DYNSTAGE_NUM_THREADS, misuse;
//   - results are bitwise identical for 1, 2, 3 and 4 threads (reductions
//     split into tasks fixed by the size), and agree with eager;
//   - the parallel paths do run in tasks (the task counter test hook);
//   - a fault inside a task is the kernel's error, and the function stays usable;
//   - user threads calling kernels at once (also built under TSan, .ci/run).
// Worker threads never use doctest's assertion macros.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <math.h>  // signgam

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

// Restores the thread count a test changes.
struct ThreadCount {
  int saved = dyn::num_threads();
  ~ThreadCount() { dyn::set_num_threads(saved); }
};

template <class T>
Array<T> wavy(i64 n, double scale = 1.0) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<T>(scale * (static_cast<double>((k * 7919) % 1000) / 997.0 - 0.4));
  return Array<T>({n}, v);
}

template <class T>
bool bitwise_equal(const Array<T>& a, const Array<T>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

// The tasks the kernels run inside f ran (the test hook of runtime/threads.hpp).
template <class F>
i64 tasks_run(F&& f) {
  dyn::detail::count_tasks().store(true);
  dyn::detail::tasks_run().store(0);
  f();
  dyn::detail::count_tasks().store(false);
  return dyn::detail::tasks_run().load();
}

// f(args...) under 1, 2, 3 and 4 threads: all bitwise equal to the 1-thread result.
template <class JF, class... A>
auto same_for_every_thread_count(const JF& jf, const A&... args) {
  ThreadCount keep;
  dyn::set_num_threads(1);
  auto one = jf(args...);
  for (int n : {2, 3, 4}) {
    dyn::set_num_threads(n);
    auto r = jf(args...);
    CHECK(bitwise_equal(r, one));
  }
  return one;
}

}  // namespace

TEST_CASE("threads: set_num_threads and num_threads") {
  ThreadCount keep;
  CHECK(dyn::num_threads() >= 1);
  dyn::set_num_threads(3);
  CHECK(dyn::num_threads() == 3);
  dyn::set_num_threads(1);
  CHECK(dyn::num_threads() == 1);
  std::string msg;
  const int line = __LINE__ + 2;
  try {
    dyn::set_num_threads(0);
  } catch (const dyn::Error& e) {
    msg = e.what();
  }
  CHECK(msg == "dyn::set_num_threads(0): the number of threads must be at least 1 (at " + std::string(__FILE__) + ":" +
                   std::to_string(line) + ")");
  CHECK(dyn::num_threads() == 1);  // unchanged by the failed call
}

// Run with DYNSTAGE_NUM_THREADS=3 by the test suite (tests/meson.build,
// threads_env): the default then is 3. Without it, the default is every core.
TEST_CASE("threads: DYNSTAGE_NUM_THREADS sets the default") {
  const char* env = std::getenv("DYNSTAGE_NUM_THREADS");
  if (env && std::string(env) == "3") CHECK(dyn::detail::default_num_threads() == 3);
  else CHECK(dyn::detail::default_num_threads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST_CASE("threads: a fused elementwise kernel is split into tasks, same bits for every thread count") {
  const i64 n = 100003;  // not a multiple of the task size
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  const Array<double> x = wavy<double>(n, 3.0), y = wavy<double>(n, -2.0);
  auto jf = dyn::jit(f);
  Array<double> r;
  CHECK(tasks_run([&] { r = same_for_every_thread_count(jf, x, y); }) == 4 * 7);  // ceil(100003 / 16384) = 7, 4 runs
  CHECK(dyn::allclose(r, dyn::eager(f)(x, y), 1e-14, 1e-14));
  // Polymorphic: the task count is computed at run time; small sizes are one task.
  auto jp = dyn::jit(f, dyn::polymorphic_shapes{"(n,)", "(n,)"});
  CHECK(tasks_run([&] { r = same_for_every_thread_count(jp, x, y); }) == 4 * 7);
  CHECK(dyn::allclose(r, dyn::eager(f)(x, y), 1e-14, 1e-14));
  const Array<double> xs = wavy<double>(5), ys = wavy<double>(5, 2.0);
  CHECK(tasks_run([&] { r = jp(xs, ys); }) == 1);
  CHECK(dyn::allclose(r, dyn::eager(f)(xs, ys), 1e-14, 1e-14));
  // A run-time size of 0 (a dynamic dimension, from compress): no task.
  auto kept = dyn::jit([](auto m, auto x) {
    auto c = dyn::compress(m, x);
    return dyn::sin(c) * 2.0 + c * c;
  });
  // (The kernel's work over all of x is the same for both masks; over the
  // kept elements it is 7 tasks for all of them, none for none.)
  const Array<bool> none = dyn::eager([](auto v) { return v > 100.0; })(x);
  const Array<bool> every = dyn::eager([](auto v) { return v < 100.0; })(x);
  const i64 with_all = tasks_run([&] { r = kept(every, x); });
  CHECK(dyn::allclose(r, dyn::eager(f)(x, x), 1e-14, 1e-14));
  CHECK(tasks_run([&] { r = kept(none, x); }) == with_all - 7);
  CHECK(r.shape() == std::vector<i64>{0});
  // A static kernel below two tasks' worth is not split at all.
  CHECK(tasks_run([&] { r = jf(wavy<double>(1000), wavy<double>(1000)); }) == 0);
}

// Outputs of at least the stream threshold (llvm/stream.hpp: off by default,
// here set by the test hook) are computed in chunks and
// copied out with non-temporal stores, unless they are new results of the
// kernel (Lowering::stream_total). A loop's state streams: the body below (an
// elementwise root after a reduction, so not a strip-mined pointwise loop).
struct StreamBytes {  // the test hook, restored after
  explicit StreamBytes(i64 n) { dyn::detail::stream_bytes().store(n); }
  ~StreamBytes() { dyn::detail::stream_bytes().store(0); }
};

template <class Body>
auto in_a_loop(Body body) {
  return [body](auto a, auto b) { return dyn::for_loop(0, 3, 1)([&](auto, auto s) { return body(s, b); })(a); };
}

template <class Body, class T>
void streamed_matches_eager(Body body, const Array<T>& x, const Array<T>& y) {
  auto f = in_a_loop(body);
  auto jf = dyn::jit(f);
  CHECK(test_util::count_of(jf.llvm_ir(x, y), "!nontemporal") >= 1);
  CHECK(dyn::array_equal(same_for_every_thread_count(jf, x, y), dyn::eager(f)(x, y)));
}

TEST_CASE("threads: large elementwise outputs are written with non-temporal stores, the same bits") {
  StreamBytes hook(64 * 1024);
  using test_util::count_of;
  const i64 n = 200003;  // 1.6 MB of f64; not a multiple of a chunk (8 KiB): a partial last chunk
  const Array<double> x = wavy<double>(n, 3.0), y = wavy<double>(n, -2.0);
  auto step = [](auto s, auto b) { return s * 0.5 + b * dyn::max(s); };
  streamed_matches_eager(step, x, y);
  // Every element size: f32, bool (one byte) and c128 (sixteen).
  streamed_matches_eager([](auto s, auto b) { return s * 0.5f + b * dyn::max(s); }, wavy<float>(n, 3.0),
                         wavy<float>(n, -2.0));
  auto bits = [&](double sc) { return dyn::eager([](auto v) { return v > 0.0; })(wavy<double>(n, sc)); };
  streamed_matches_eager([](auto s, auto b) { return (s != b) != dyn::max(s); }, bits(3.0), bits(-2.0));
  auto cplx = [&](double sc) {
    return dyn::eager([](auto u, auto v) { return dyn::complex(u, v); })(wavy<double>(n, sc), wavy<double>(n, 1.0));
  };
  streamed_matches_eager([](auto s, auto b) { return s * b + dyn::max(dyn::real(s)); }, cplx(0.3), cplx(-0.2));
  // A symbolic size decides at run time: streamed at n, not at 5.
  auto jp = dyn::jit(in_a_loop(step), dyn::polymorphic_shapes{"(n,)", "(n,)"});
  CHECK(count_of(jp.llvm_ir(x, y), "!nontemporal") >= 1);
  CHECK(dyn::array_equal(same_for_every_thread_count(jp, x, y), dyn::eager(in_a_loop(step))(x, y)));
  const Array<double> xs = wavy<double>(5), ys = wavy<double>(5, 2.0);
  CHECK(dyn::array_equal(jp(xs, ys), dyn::eager(in_a_loop(step))(xs, ys)));
  // A new result of the kernel is not streamed; without the hook nothing is
  // (streaming is off by default: docs/backend.md, "Why it is off"), and no
  // chunk code is emitted for a symbolic size either.
  CHECK(count_of(dyn::jit([](auto a, auto b) { return a * 2.0 + a * b; }).llvm_ir(x, y), "!nontemporal") == 0);
  dyn::detail::stream_bytes().store(0);
  CHECK(count_of(dyn::jit(in_a_loop(step)).llvm_ir(x, y), "!nontemporal") == 0);
  CHECK(count_of(dyn::jit(in_a_loop(step), dyn::polymorphic_shapes{"(n,)", "(n,)"}).llvm_ir(x, y), "!nontemporal") == 0);
}

// Window writes (a concatenate's pieces, a dynamic_update_slice's update or
// its one pass over operand and update) stream row by row; a row starting
// inside a cache line (column 1) has its first bytes copied plainly. Exact
// copies: eager's bits.
TEST_CASE("threads: large window writes are streamed row by row, also from an unaligned column") {
  StreamBytes hook(64 * 1024);
  using test_util::count_of;
  const i64 rows = 301, cols = 1027;  // rows of 8216 bytes: more than a chunk, not whole lines
  const Array<double> u = dyn::reshape(wavy<double>(rows * cols, 3.0), {rows, cols});
  auto heat_like = [](auto a) {
    auto above = dyn::slice(a, {rows - 1, 0}, {rows, cols}), below = dyn::slice(a, {0, 0}, {1, cols});
    auto ext = dyn::concatenate({above, a, below}, 0);
    auto mid = dyn::slice(ext, {1, 1}, {rows + 1, cols - 1}) * 0.5 + dyn::slice(ext, {0, 1}, {rows, cols - 1});
    return dyn::dynamic_update_slice(a, mid, {0, 1});
  };
  auto jf = dyn::jit(heat_like);
  CHECK(count_of(jf.llvm_ir(u), "!nontemporal") >= 1);
  CHECK(dyn::array_equal(jf(u), dyn::eager(heat_like)(u)));
  // An update that reads the loop state itself is written in one pass into
  // the other state buffer (lower_windows.hpp, emit_update_pass): streamed
  // too, in tasks of whole rows, the same bits for every thread count.
  auto stencil_loop = [](auto a0) {
    return dyn::for_loop(0, 3, 1)([](auto, auto a) {
      auto mid = dyn::slice(a, {0, 1}, {rows, cols - 1}) * 0.5 + dyn::slice(a, {0, 0}, {rows, cols - 2});
      return dyn::dynamic_update_slice(a, mid, {0, 1});
    })(a0);
  };
  auto js = dyn::jit(stencil_loop);
  CHECK(count_of(js.llvm_ir(u), "!nontemporal") >= 1);
  CHECK(dyn::array_equal(same_for_every_thread_count(js, u), dyn::eager(stencil_loop)(u)));
  CHECK(tasks_run([&] { (void)js(u); }) >= 2 * 3);
  // A small update of a large carry, in place, is read again by the next
  // iteration: not streamed (what the root writes is the update).
  auto rows_loop = [](auto c) {
    return dyn::for_loop(0, 10, 1)([](auto i, auto x) {
      return dyn::dynamic_update_slice(x, dyn::dynamic_slice(x, {i, 0}, {1, cols}) * 0.5, {i, 0});
    })(c);
  };
  auto jr = dyn::jit(rows_loop);
  CHECK(count_of(jr.llvm_ir(u), "!nontemporal") == 0);
  CHECK(dyn::array_equal(jr(u), dyn::eager(rows_loop)(u)));
  auto pieces = [](auto a, auto b) { return dyn::sort(dyn::concatenate({a, b, a}, 1)); };
  const Array<float> a = dyn::reshape(wavy<float>(200 * 333), {200, 333});
  const Array<float> b = dyn::reshape(wavy<float>(200 * 45, -1.0), {200, 45});
  auto jp = dyn::jit(pieces);  // the concatenate is a temporary, sorted into the result
  CHECK(count_of(jp.llvm_ir(a, b), "!nontemporal") >= 1);
  CHECK(dyn::array_equal(jp(a, b), dyn::eager(pieces)(a, b)));
}

TEST_CASE("threads: scans with outer axes run one outer index a task, same bits for every thread count") {
  const Array<double> m = dyn::reshape(wavy<double>(300 * 1000, 3.0), {300, 1000});
  auto rows = [](auto x) { return dyn::cumsum(x * 2.0, 1); };
  auto jr = dyn::jit(rows);
  Array<double> r;
  // No transcendental function: 65536 / 1000 = 65 rows a task, ceil(300 / 65) = 5 tasks.
  CHECK(tasks_run([&] { r = same_for_every_thread_count(jr, m); }) == 4 * 5);
  CHECK(dyn::array_equal(r, dyn::eager(rows)(m)));  // each row in order: eager's bits
  // Two outer axes (the scan along the last of three; the inner loop over
  // the second outer axis in each task), and a scan along an inner axis.
  const Array<float> c = dyn::reshape(wavy<float>(40 * 50 * 100, 2.0), {40, 50, 100});
  auto last = [](auto x) { return dyn::cummax(x, 2); };
  auto middle = [](auto x) { return dyn::cumprod(x, 1, true); };
  CHECK(dyn::array_equal(same_for_every_thread_count(dyn::jit(last), c), dyn::eager(last)(c)));
  CHECK(dyn::array_equal(same_for_every_thread_count(dyn::jit(middle), c), dyn::eager(middle)(c)));
  // Along the outermost axis there is one scan: on the calling thread.
  auto first = [](auto x) { return dyn::cumsum(x, 0); };
  auto jf = dyn::jit(first);
  CHECK(tasks_run([&] { r = jf(m); }) == 0);
  CHECK(dyn::array_equal(r, dyn::eager(first)(m)));
}

TEST_CASE("threads: elementwise nests that need multi-indices split by rows") {
  auto f = [](auto x, auto y) { return dyn::transpose(x, {1, 0}) * 2.0 + y; };
  const Array<float> x = dyn::reshape(wavy<float>(300 * 500), {300, 500});
  const Array<float> y = dyn::reshape(wavy<float>(500 * 300, 2.0), {500, 300});
  auto jf = dyn::jit(f);
  Array<float> r;
  // No transcendental function: 65536 / 300 = 218 rows a task.
  CHECK(tasks_run([&] { r = same_for_every_thread_count(jf, x, y); }) == 4 * 3);
  CHECK(dyn::array_equal(r, dyn::eager(f)(x, y)));
}

TEST_CASE("threads: reductions to one value add per-task partials in task order") {
  const i64 n = 1000001;
  const Array<float> xf = wavy<float>(n);
  const Array<double> xd = wavy<double>(n);
  auto sumsq = [](auto x) { return dyn::sum(x * x); };
  Array<float> sf;
  // A cheap element: tasks of 65536 (parallel.hpp, kCheapTaskElems).
  CHECK(tasks_run([&] { sf = same_for_every_thread_count(dyn::jit(sumsq), xf); }) == 4 * 16);
  // (Against the exact sum of the f32 squares: eager's sequential f32 sum
  // is itself off by ~1e-4 here.)
  const Array<double> exact = dyn::eager(sumsq)(dyn::astype<double>(xf));
  CHECK(std::abs(static_cast<double>(sf.data()[0]) - exact.data()[0]) <= 1e-6 * exact.data()[0]);
  const Array<double> sd = same_for_every_thread_count(dyn::jit(sumsq), xd);
  CHECK(dyn::allclose(sd, dyn::eager(sumsq)(xd), 1e-12, 0));
  // The same kernel with a run-time size.
  auto jp = dyn::jit(sumsq, dyn::polymorphic_shapes{"(n,)"});
  CHECK(bitwise_equal(same_for_every_thread_count(jp, xd), sd));
  // Integers, max, min: exact, so equal to eager.
  const Array<std::int32_t> xi = dyn::astype<std::int32_t>(dyn::eager([](auto x) { return x * 1000.0; })(xd));
  auto ops = [](auto x) { return std::make_tuple(dyn::sum(x), dyn::max(x), dyn::min(x)); };
  auto jo = dyn::jit(ops);
  ThreadCount keep;
  for (int t : {1, 2}) {
    dyn::set_num_threads(t);
    const auto [s, mx, mn] = jo(xi);
    const auto [es, emx, emn] = dyn::eager(ops)(xi);
    CHECK(dyn::array_equal(s, es));
    CHECK(dyn::array_equal(mx, emx));
    CHECK(dyn::array_equal(mn, emn));
  }
  // Empty, with a run-time size (a dynamic dimension, from compress): the identity.
  auto of_kept = [](auto m, auto x) {
    auto c = dyn::compress(m, x);
    return std::make_tuple(dyn::sum(c * c), dyn::max(c));
  };
  auto jk = dyn::jit(of_kept);
  const Array<bool> none = dyn::eager([](auto v) { return v > 100.0; })(xd);
  const auto [s0, m0] = jk(none, xd);
  CHECK(s0.data()[0] == 0.0);
  CHECK(m0.data()[0] == -std::numeric_limits<double>::infinity());
  const Array<bool> some = dyn::eager([](auto v) { return v > 0.3; })(xd);
  const auto [s1, m1] = jk(some, xd);
  const auto [es1, em1] = dyn::eager(of_kept)(some, xd);
  CHECK(dyn::allclose(s1, es1, 1e-12, 0));
  CHECK(m1.data()[0] == em1.data()[0]);
}

TEST_CASE("threads: float products keep their order and stay on the calling thread") {
  auto prod = [](auto x) { return dyn::prod(x); };
  const Array<double> x = dyn::eager([](auto v) { return v * 1e-3 + 1.0; })(wavy<double>(100000));
  Array<double> r;
  CHECK(tasks_run([&] { r = dyn::jit(prod)(x); }) == 0);
  CHECK(bitwise_equal(r, dyn::eager(prod)(x)));
}

TEST_CASE("threads: reductions over the rows of a matrix, and row groups (softmax)") {
  const Array<double> m = dyn::reshape(wavy<double>(1000 * 300, 4.0), {1000, 300});
  auto rowsum = [](auto x) { return dyn::sum(dyn::exp(x), {1}); };
  Array<double> r;
  CHECK(tasks_run([&] { r = same_for_every_thread_count(dyn::jit(rowsum), m); }) == 4 * 19);  // 54 rows a task
  CHECK(dyn::allclose(r, dyn::eager(rowsum)(m), 1e-13, 0));
  auto softmax = [](auto x) {
    auto e = dyn::exp(x - dyn::max(x, {1}, dyn::keepdims));
    return e / dyn::sum(e, {1}, dyn::keepdims);
  };
  CHECK(tasks_run([&] { r = same_for_every_thread_count(dyn::jit(softmax), m); }) == 4 * 19);
  CHECK(dyn::allclose(r, dyn::eager(softmax)(m), 1e-13, 1e-15));
  auto jp = dyn::jit(softmax, dyn::polymorphic_shapes{"(m, n)"});
  CHECK(bitwise_equal(same_for_every_thread_count(jp, m), r));
  const Array<double> small = dyn::reshape(wavy<double>(12), {3, 4});
  CHECK(dyn::allclose(jp(small), dyn::eager(softmax)(small), 1e-13, 1e-15));
}

TEST_CASE("threads: the bodies of compiled loops run their big loops in tasks") {
  auto f = [](auto x) {  // (rev: not pointwise, one pass over the array per iteration)
    return dyn::for_loop(0, 3, 1)([](auto, auto a) { return dyn::cos(a) * 0.5 + a * dyn::rev(a, {0}); })(x);
  };
  const Array<double> x = wavy<double>(70000);
  Array<double> r;
  CHECK(tasks_run([&] { r = same_for_every_thread_count(dyn::jit(f), x); }) == 4 * 3 * 5);
  CHECK(dyn::allclose(r, dyn::eager(f)(x), 1e-14, 1e-14));
  // A pointwise loop (llvm/lower_pointwise.hpp) runs whole in tasks of
  // blocks: 274 blocks of 256 elements, 21 a task (16384 / (256 * 3)).
  auto g = [](auto x) {
    return dyn::for_loop(0, 3, 1)([](auto, auto a) { return dyn::cos(a) * 0.5 + a * a; })(x);
  };
  CHECK(tasks_run([&] { r = same_for_every_thread_count(dyn::jit(g), x); }) == 4 * 14);
  CHECK(dyn::allclose(r, dyn::eager(g)(x), 1e-14, 1e-14));
}

TEST_CASE("threads: a fault inside a task is the kernel's error; the function stays usable") {
  ThreadCount keep;
  dyn::set_num_threads(2);
  auto f = [](auto x, auto y) { return dyn::pow(x, y); };
  auto jf = dyn::jit(f);
  std::vector<i64> xv(50000, 2), yv(50000, 3);
  xv[40000] = 0;
  yv[40000] = -1;  // 0 ** -1 in the third task
  const Array<i64> x({50000}, xv), y({50000}, yv);
  CHECK(test_util::message_of<dyn::ArithmeticError>([&] { (void)jf(x, y); }) ==
        "pow: integer zero raised to a negative power");
  const Array<i64> ok = dyn::full<i64>({50000}, 3);
  CHECK(dyn::array_equal(jf(ok, ok), dyn::full<i64>({50000}, 27)));
}

TEST_CASE("threads: user threads calling kernels at once share the pool") {
  ThreadCount keep;
  dyn::set_num_threads(2);
  auto f = [](auto x) { return dyn::sum(dyn::sqrt(x * x + 1.0)); };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
  const Array<double> x = wavy<double>(200000);
  const Array<double> want = jf(x);
  std::atomic<int> bad{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 4; ++t)
    users.emplace_back([&] {
      for (int k = 0; k < 20; ++k)
        if (!bitwise_equal(jf(x), want)) bad.fetch_add(1);
    });
  for (auto& u : users) u.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("threads: compiled lgamma leaves glibc's signgam alone (no race between tasks)") {
  // glibc's lgamma sets the global signgam (-1 for lgamma(-2.5)); the JIT's
  // scalar lgamma is the reentrant lgamma_r (llvm/session.hpp).
  signgam = 12345;
  auto f = [](auto x) { return dyn::lgamma(x); };
  const Array<double> x({1}, std::vector<double>{-2.5});
  const Array<double> r = dyn::jit(f)(x);
  CHECK(signgam == 12345);
  CHECK(dyn::allclose(r, dyn::eager(f)(x), 1e-14, 0));
  const Array<float> xf({1}, std::vector<float>{-2.5f});
  const Array<float> rf = dyn::jit(f)(xf);
  CHECK(signgam == 12345);
  CHECK(dyn::allclose(rf, dyn::eager(f)(xf), 1e-6, 0));
}

TEST_CASE("threads: the GEMM's row blocks run in tasks, same bits for every thread count") {
  // 300 rows: several MC-row blocks on every ISA (MC = 16 * MR <= 128).
  const Array<double> a = dyn::reshape(wavy<double>(300 * 200), {300, 200});
  const Array<double> b = dyn::reshape(wavy<double>(200 * 170, -2.0), {200, 170});
  auto mm = [](auto x, auto y) { return dyn::matmul(x, y); };
  Array<double> r;
  CHECK(tasks_run([&] { r = same_for_every_thread_count(dyn::jit(mm), a, b); }) >= 4 * 3);
  CHECK(dyn::allclose(r, dyn::eager(mm)(a, b), 1e-12, 1e-12));
  const Array<float> af = dyn::astype<float>(a), bf = dyn::astype<float>(b);
  const Array<float> rf = same_for_every_thread_count(dyn::jit(mm), af, bf);
  CHECK(dyn::allclose(rf, dyn::eager(mm)(af, bf), 1e-4, 1e-4));
}
