// dynstage benchmarks (issue 3, section 6): dyn::jit and eager against
// hand-written loops, the same loops with -ffast-math, and Eigen, all in one
// process and one run, so the ratios compare like with like.
//
// Built at -O2 (what a user would build dynstage code with); the baselines
// live in their own translation units with their own flags and are reached
// through the plain functions of baselines.hpp.
//
// Conventions, kept the same for every case:
//   - inputs are allocated and filled once, outside the timed loops (cached
//     per size across Google Benchmark's repeated invocations);
//   - dyn::jit and eager allocate their outputs on every call (that is part
//     of their cost); the baselines write into a preallocated output, except
//     the "*_alloc" variants, which allocate it per call with the same
//     allocator as the JIT's outputs (detail::Storage::make, uninitialised);
//   - every JIT kernel is compiled before its timed loop (the compile cases
//     time compilation on purpose);
//   - results go through benchmark::DoNotOptimize and ClobberMemory so no
//     call can be dropped (the baselines are out-of-line calls into other
//     translation units anyway: no LTO).
// Names are "case/variant/arg"; scripts/bench_report.py relies on that.
// Issue 4 adds */jit_symbolic (the same kernels compiled once for symbolic
// sizes) and poly100/* (100 sizes, one compile vs one compile per size).
// Control flow adds loop/* (a 10,000-iteration for_loop over 16 doubles,
// with the time per loop iteration as the counter "per_iter"). Issue 16 adds
// cumsum/* (a running sum of 1e7 doubles) and the hand loops of csr/*,
// hist/*, argmax/* and sort/*; their dynstage variants are in
// bench_issue16.cpp (self-registering, built once the primitives exist).
// Sizes: bench_sizes.hpp (numpy_baselines.py times NumPy on the same shapes).
//
// `bench_main --ir <case>` prints a kernel's jaxpr and optimised LLVM IR.
// `bench_main --first-kernel` times, in a fresh process, the first and the
// second compile of the ten-operation kernel and exits (scripts/bench.sh runs
// it several times: the first kernel of a process pays LLVM's one-off setup).
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_sizes.hpp"
#include "issue16_data.hpp"

namespace {

using Arr = dyn::Array<double>;

// ---------------------------------------------------------------------------
// The staged functions (generic lambdas: the same code runs eagerly on
// dyn::Array and is traced by dyn::jit).

auto fused_fn = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
auto add_fn = [](auto x, auto y) { return x + y; };
auto sumsq_fn = [](auto x) { return dyn::sum(x * x); };
auto softmax_fn = [](auto x) {
  auto m = dyn::expand_dims(dyn::max(x, {1}), 1);  // keepdims
  auto e = dyn::exp(x - m);
  return e / dyn::expand_dims(dyn::sum(e, {1}), 1);
};
auto matmul_fn = [](auto a, auto b) { return dyn::matmul(a, b); };
auto cumsum_fn = [](auto x) { return dyn::cumsum(x, 0); };
// Ten primitive applications: sin mul mul add sub exp max tanh mul div
// (checked against the traced jaxpr at start-up).
auto ten_ops_fn = [](auto x, auto y) {
  auto a = dyn::sin(x) * 2.0;
  auto b = a + x * y;
  auto c = dyn::exp(b - 1.0);
  auto d = dyn::tanh(dyn::maximum(c, y));
  return d / (y * y);
};
constexpr std::size_t kTenOps = 10;
// A loop over a small array: 10,000 times a = a * 0.5 + 1.0.
constexpr std::int64_t kLoopIters = 10000;
auto loop_fn = [](auto a) {
  return dyn::for_loop(0, kLoopIters, 1)([](auto, auto x) { return x * 0.5 + 1.0; })(a);
};

// One dyn::jit object per staged function: its cache persists across the
// benchmark's invocations, so timed loops only ever hit the cache.
const auto jit_fused = dyn::jit(fused_fn);
const auto jit_add = dyn::jit(add_fn);
const auto jit_sumsq = dyn::jit(sumsq_fn);
const auto jit_cumsum = dyn::jit(cumsum_fn);
const auto jit_softmax = dyn::jit(softmax_fn);
const auto jit_matmul = dyn::jit(matmul_fn);
const auto jit_loop = dyn::jit(loop_fn);
// The fused kernel with a symbolic n (issue 4): one kernel for every n, the
// trip count a run-time value.
const auto jit_fused_symbolic = dyn::jit(fused_fn, dyn::polymorphic_shapes{"n", "n"});
const auto jit_softmax_symbolic = dyn::jit(softmax_fn, dyn::polymorphic_shapes{"r, c"});
const auto jit_matmul_symbolic = dyn::jit(matmul_fn, dyn::polymorphic_shapes{"m, k", "k, n"});

// ---------------------------------------------------------------------------
// Inputs: uniform in [-4, 4], deterministic, allocated once per shape.

Arr random_array(std::vector<std::int64_t> shape, std::uint64_t seed) {
  Arr a(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  double* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = dist(rng);
  return a;
}

const Arr& input(std::vector<std::int64_t> shape, std::uint64_t seed) {
  static std::map<std::pair<std::vector<std::int64_t>, std::uint64_t>, Arr> cache;
  auto key = std::make_pair(shape, seed);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, random_array(shape, seed)).first;
  return it->second;
}

// A preallocated output buffer of at least n doubles (for the baselines).
double* out_buffer(std::int64_t n) {
  static std::vector<double> buf;
  if (static_cast<std::int64_t>(buf.size()) < n) buf.assign(static_cast<std::size_t>(n), 0.0);
  return buf.data();
}

void set_elements(benchmark::State& st, std::int64_t n) {
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["n"] = static_cast<double>(n);
}

// ---------------------------------------------------------------------------
// Fused elementwise: sin(x)*2 + x*y.

void BM_fused_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 1), &y = input({n}, 2);
  benchmark::DoNotOptimize(jit_fused(x, y).data());  // compile outside the loop
  for (auto _ : st) {
    Arr r = jit_fused(x, y);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

void BM_fused_jit_symbolic(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 1), &y = input({n}, 2);
  benchmark::DoNotOptimize(jit_fused_symbolic(x, y).data());  // compile outside the loop
  for (auto _ : st) {
    Arr r = jit_fused_symbolic(x, y);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

void BM_fused_eager(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 1), &y = input({n}, 2);
  for (auto _ : st) {
    Arr r = fused_fn(x, y);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

template <void (*Fn)(const double*, const double*, double*, std::int64_t)>
void BM_fused_baseline(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 1), &y = input({n}, 2);
  double* out = out_buffer(n);
  for (auto _ : st) {
    Fn(x.data(), y.data(), out, n);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

// A baseline with its output allocated per call like the JIT's (same
// allocator), to separate the allocation's cost (page faults, for outputs
// beyond glibc's mmap threshold) from the loop's.
template <void (*Fn)(const double*, const double*, double*, std::int64_t)>
void BM_fused_baseline_alloc(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 1), &y = input({n}, 2);
  for (auto _ : st) {
    auto s = dyn::detail::Storage::make(dyn::DType::f64, {n}, false);
    Fn(x.data(), y.data(), static_cast<double*>(s.data), n);
    benchmark::DoNotOptimize(s.data);
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

// ---------------------------------------------------------------------------
// Sum of squares.

void BM_sumsq_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 3);
  benchmark::DoNotOptimize(jit_sumsq(x).data());
  for (auto _ : st) {
    Arr r = jit_sumsq(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

void BM_sumsq_eager(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 3);
  for (auto _ : st) {
    Arr r = sumsq_fn(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

template <double (*Fn)(const double*, std::int64_t)>
void BM_sumsq_baseline(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 3);
  for (auto _ : st) {
    double s = Fn(x.data(), n);
    benchmark::DoNotOptimize(s);
  }
  set_elements(st, n);
}

// ---------------------------------------------------------------------------
// A running sum (issue 16): dyn::cumsum along the only axis, a sequential
// scan in every variant (the same left-to-right order, bit-identical results).

void BM_cumsum_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 14);
  benchmark::DoNotOptimize(jit_cumsum(x).data());
  for (auto _ : st) {
    Arr r = jit_cumsum(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

void BM_cumsum_eager(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 14);
  for (auto _ : st) {
    Arr r = cumsum_fn(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

// The hand-written loop into a preallocated output (as the other baselines).
void BM_cumsum_loops(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 14);
  double* out = out_buffer(n);
  for (auto _ : st) {
    bench::loops::cumsum(x.data(), out, n);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_elements(st, n);
}

// ---------------------------------------------------------------------------
// Issue 16: hand loops of the kernels whose dynstage forms need gather,
// scatter-add, argmax and sort (bench_issue16.cpp). Inputs: issue16_data.hpp.

void BM_csr_loops(benchmark::State& st) {
  const auto& m = bench::data::csr();
  double* y = out_buffer(m.rows);
  for (auto _ : st) {
    bench::loops::csr_matvec(m.row_ptr.data(), m.cols.data(), m.vals.data(), m.x.data(), y, m.rows);
    benchmark::DoNotOptimize(y);
    benchmark::ClobberMemory();
  }
  set_elements(st, m.nnz);  // per nonzero
}

void BM_hist_loops(benchmark::State& st) {
  const auto& bins = bench::data::hist_bins();
  std::vector<std::int64_t> counts(bench::sizes::hist_bins);
  for (auto _ : st) {
    bench::loops::histogram(bins.data(), bins.size(), counts.data(), bench::sizes::hist_bins);
    benchmark::DoNotOptimize(counts.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, bins.size());
}

void BM_argmax_loops(benchmark::State& st) {
  const auto& x = bench::data::argmax_matrix();
  std::vector<std::int32_t> out(x.shape(0));
  for (auto _ : st) {
    bench::loops::argmax_rows(x.data(), out.data(), x.shape(0), x.shape(1));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, x.size());
}

void BM_sort_loops(benchmark::State& st) {
  const auto& x = bench::data::sort_input();
  std::vector<float> out(x.size());
  for (auto _ : st) {
    bench::loops::sort_copy(x.data(), out.data(), x.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, x.size());
}

// ---------------------------------------------------------------------------
// Softmax over the rows of an n x n matrix.

void BM_softmax_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n, n}, 4);
  benchmark::DoNotOptimize(jit_softmax(x).data());
  for (auto _ : st) {
    Arr r = jit_softmax(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n * n);
}

void BM_softmax_jit_symbolic(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n, n}, 4);
  benchmark::DoNotOptimize(jit_softmax_symbolic(x).data());
  for (auto _ : st) {
    Arr r = jit_softmax_symbolic(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n * n);
}

void BM_softmax_eager(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n, n}, 4);
  for (auto _ : st) {
    Arr r = softmax_fn(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_elements(st, n * n);
}

template <void (*Fn)(const double*, double*, std::int64_t, std::int64_t)>
void BM_softmax_baseline(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n, n}, 4);
  double* out = out_buffer(n * n);
  for (auto _ : st) {
    Fn(x.data(), out, n, n);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_elements(st, n * n);
}

// ---------------------------------------------------------------------------
// Matmul n x n @ n x n (f64). Items = multiply-adds (n^3); GFLOP/s = 2 n^3 / t.

void set_flops(benchmark::State& st, std::int64_t n) {
  st.SetItemsProcessed(st.iterations() * n * n * n);
  st.counters["n"] = static_cast<double>(n);
  st.counters["GFLOPs"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n) * static_cast<double>(st.iterations()) * 1e-9,
                                             benchmark::Counter::kIsRate);
}

void BM_matmul_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &a = input({n, n}, 5), &b = input({n, n}, 6);
  benchmark::DoNotOptimize(jit_matmul(a, b).data());
  for (auto _ : st) {
    Arr r = jit_matmul(a, b);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_flops(st, n);
}

void BM_matmul_jit_symbolic(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &a = input({n, n}, 5), &b = input({n, n}, 6);
  benchmark::DoNotOptimize(jit_matmul_symbolic(a, b).data());
  for (auto _ : st) {
    Arr r = jit_matmul_symbolic(a, b);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  set_flops(st, n);
}

template <void (*Fn)(const double*, const double*, double*, std::int64_t)>
void BM_matmul_baseline(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &a = input({n, n}, 5), &b = input({n, n}, 6);
  double* out = out_buffer(n * n);
  for (auto _ : st) {
    Fn(a.data(), b.data(), out, n);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  set_flops(st, n);
}

// ---------------------------------------------------------------------------
// Dispatch: a cached call at n = 1 (time per call).

template <const auto& J>
void BM_dispatch(benchmark::State& st) {
  const Arr &x = input({1}, 7), &y = input({1}, 8);
  benchmark::DoNotOptimize(J(x, y).data());
  for (auto _ : st) {
    Arr r = J(x, y);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  st.counters["n"] = 1;
}

void BM_dispatch_jit_fused(benchmark::State& st) { BM_dispatch<jit_fused>(st); }
void BM_dispatch_jit_add(benchmark::State& st) { BM_dispatch<jit_add>(st); }

void BM_dispatch_eager_fused(benchmark::State& st) {
  const Arr &x = input({1}, 7), &y = input({1}, 8);
  for (auto _ : st) {
    Arr r = fused_fn(x, y);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  st.counters["n"] = 1;
}

// Plain C++: the hand loop at n = 1 through an out-of-line call, with a
// preallocated output ...
void BM_dispatch_cpp_call(benchmark::State& st) {
  const Arr &x = input({1}, 7), &y = input({1}, 8);
  double* out = out_buffer(1);
  for (auto _ : st) {
    bench::loops::fused(x.data(), y.data(), out, 1);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  st.counters["n"] = 1;
}

// ... and allocating its output as the JIT does.
void BM_dispatch_cpp_call_alloc(benchmark::State& st) {
  const Arr &x = input({1}, 7), &y = input({1}, 8);
  for (auto _ : st) {
    auto s = dyn::detail::Storage::make(dyn::DType::f64, {1}, false);
    bench::loops::fused(x.data(), y.data(), static_cast<double*>(s.data), 1);
    benchmark::DoNotOptimize(s.data);
    benchmark::ClobberMemory();
  }
  st.counters["n"] = 1;
}

// ---------------------------------------------------------------------------
// Compile latency of the ten-operation kernel (n = 1000 inputs).

// A fresh dyn::jit per iteration: trace + lower + optimise + codegen + the
// first call (whose run time, ~10 us at n = 1000, is noise here).
void BM_compile_jit_fresh(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 9), &y = input({n}, 10);
  benchmark::DoNotOptimize(dyn::jit(ten_ops_fn)(x, y).data());  // not the process's first kernel
  for (auto _ : st) {
    auto jf = dyn::jit(ten_ops_fn);
    Arr r = jf(x, y);
    benchmark::DoNotOptimize(r.data());
  }
  st.counters["ops"] = kTenOps;
}

// The same through clear_cache() on one jit object.
void BM_compile_clear_cache(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 9), &y = input({n}, 10);
  const auto jf = dyn::jit(ten_ops_fn);
  benchmark::DoNotOptimize(jf(x, y).data());
  for (auto _ : st) {
    jf.clear_cache();
    Arr r = jf(x, y);
    benchmark::DoNotOptimize(r.data());
  }
  st.counters["ops"] = kTenOps;
}

// Tracing alone (make_jaxpr), to split the above into trace and compile.
void BM_compile_trace_only(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr &x = input({n}, 9), &y = input({n}, 10);
  for (auto _ : st) {
    auto cj = dyn::make_jaxpr(ten_ops_fn)(x, y);
    benchmark::DoNotOptimize(&cj);
  }
  st.counters["ops"] = kTenOps;
}

// ---------------------------------------------------------------------------
// Control flow: a for_loop of kLoopIters iterations over n doubles. The
// counter "per_iter" is the time per loop iteration (time / kLoopIters).

void loop_counters(benchmark::State& st, std::int64_t n) {
  st.counters["n"] = static_cast<double>(n);
  st.counters["per_iter"] = benchmark::Counter(static_cast<double>(kLoopIters),
                                               benchmark::Counter::kIsIterationInvariantRate |
                                                   benchmark::Counter::kInvert);
}

void BM_loop_jit(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 13);
  benchmark::DoNotOptimize(jit_loop(x).data());  // compile outside the loop
  for (auto _ : st) {
    Arr r = jit_loop(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  loop_counters(st, n);
}

void BM_loop_eager(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 13);
  for (auto _ : st) {
    Arr r = loop_fn(x);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  loop_counters(st, n);
}

void BM_loop_baseline(benchmark::State& st) {
  const std::int64_t n = st.range(0);
  const Arr& x = input({n}, 13);
  double* out = out_buffer(n);
  for (auto _ : st) {
    bench::loops::affine_loop(x.data(), out, n, kLoopIters);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  loop_counters(st, n);
}

// ---------------------------------------------------------------------------
// Shape polymorphism (issue 4): the fused kernel called with 100 distinct
// sizes n = 1000, 1010, ..., 1990 through a fresh dyn::jit each iteration,
// polymorphic (one trace and compile, then 99 cache hits) or static (one
// trace and compile per size). The time is the whole sequence: compiles and
// 100 calls.

constexpr int kPolySizes = 100;
std::int64_t poly_size(int k) { return 1000 + 10 * k; }

template <bool Polymorphic>
void BM_poly_sizes(benchmark::State& st) {
  for (int k = 0; k < kPolySizes; ++k) (void)input({poly_size(k)}, 11), (void)input({poly_size(k)}, 12);
  std::size_t compiles = 0;
  for (auto _ : st) {
    auto run = [&](const auto& jf) {
      for (int k = 0; k < kPolySizes; ++k) {
        Arr r = jf(input({poly_size(k)}, 11), input({poly_size(k)}, 12));
        benchmark::DoNotOptimize(r.data());
      }
      compiles = jf.stats().compiles;
    };
    if constexpr (Polymorphic) run(dyn::jit(fused_fn, dyn::polymorphic_shapes{"n", "n"}));
    else run(dyn::jit(fused_fn));
  }
  st.counters["compiles"] = static_cast<double>(compiles);
  st.counters["sizes"] = kPolySizes;
}

// ---------------------------------------------------------------------------
// Registration. Sizes: bench_sizes.hpp (the arg of a name is its size).

void register_all() {
  using namespace bench;
  const std::vector<std::int64_t> fused_n(sizes::fused_n.begin(), sizes::fused_n.end());
  const std::vector<std::int64_t> sumsq_n(sizes::sumsq_n.begin(), sizes::sumsq_n.end());
  const std::vector<std::int64_t> softmax_n(sizes::softmax_n.begin(), sizes::softmax_n.end());
  const std::vector<std::int64_t> matmul_n(sizes::matmul_n.begin(), sizes::matmul_n.end());
  auto reg = [](const char* name, void (*fn)(benchmark::State&), const std::vector<std::int64_t>& args,
                benchmark::TimeUnit unit) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    for (auto a : args) b->Arg(a);
    b->Unit(unit);
  };
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  using benchmark::kNanosecond;

  reg("fused/jit", BM_fused_jit, fused_n, kMicrosecond);
  reg("fused/jit_symbolic", BM_fused_jit_symbolic, fused_n, kMicrosecond);
  reg("fused/eager", BM_fused_eager, fused_n, kMicrosecond);
  reg("fused/loops", BM_fused_baseline<loops::fused>, fused_n, kMicrosecond);
  reg("fused/loops_alloc", BM_fused_baseline_alloc<loops::fused>, fused_n, kMicrosecond);
  reg("fused/fastmath", BM_fused_baseline<fastmath::fused>, fused_n, kMicrosecond);
  reg("fused/fastmath_alloc", BM_fused_baseline_alloc<fastmath::fused>, fused_n, kMicrosecond);
  reg("fused/eigen", BM_fused_baseline<eigen::fused>, fused_n, kMicrosecond);

  reg("sumsq/jit", BM_sumsq_jit, sumsq_n, kMicrosecond);
  reg("sumsq/eager", BM_sumsq_eager, sumsq_n, kMicrosecond);
  reg("sumsq/loops", BM_sumsq_baseline<loops::sum_squares>, sumsq_n, kMicrosecond);
  reg("sumsq/fastmath", BM_sumsq_baseline<fastmath::sum_squares>, sumsq_n, kMicrosecond);
  reg("sumsq/eigen", BM_sumsq_baseline<eigen::sum_squares>, sumsq_n, kMicrosecond);

  reg("cumsum/jit", BM_cumsum_jit, {sizes::cumsum_n}, kMicrosecond);
  reg("cumsum/eager", BM_cumsum_eager, {sizes::cumsum_n}, kMicrosecond);
  reg("cumsum/loops", BM_cumsum_loops, {sizes::cumsum_n}, kMicrosecond);
  // The other issue-16 kernels' hand loops (the arg: rows, samples, n, n).
  reg("csr/loops", BM_csr_loops, {sizes::csr_rows}, kMicrosecond);
  reg("hist/loops", BM_hist_loops, {sizes::hist_samples}, kMicrosecond);
  reg("argmax/loops", BM_argmax_loops, {sizes::argmax_n}, kMicrosecond);
  reg("sort/loops", BM_sort_loops, {sizes::sort_n}, kMicrosecond);

  reg("softmax/jit", BM_softmax_jit, softmax_n, kMicrosecond);
  reg("softmax/jit_symbolic", BM_softmax_jit_symbolic, softmax_n, kMicrosecond);
  reg("softmax/eager", BM_softmax_eager, softmax_n, kMicrosecond);
  reg("softmax/loops", BM_softmax_baseline<loops::softmax_rows>, softmax_n, kMicrosecond);
  reg("softmax/fastmath", BM_softmax_baseline<fastmath::softmax_rows>, softmax_n, kMicrosecond);
  reg("softmax/eigen", BM_softmax_baseline<eigen::softmax_rows>, softmax_n, kMicrosecond);

  reg("matmul/jit", BM_matmul_jit, matmul_n, kMillisecond);
  reg("matmul/jit_symbolic", BM_matmul_jit_symbolic, matmul_n, kMillisecond);
  reg("matmul/eigen", BM_matmul_baseline<eigen::matmul>, matmul_n, kMillisecond);
  reg("matmul/loops", BM_matmul_baseline<loops::matmul>, matmul_n, kMillisecond);

  reg("dispatch/jit_fused", BM_dispatch_jit_fused, {1}, kNanosecond);
  reg("dispatch/jit_add", BM_dispatch_jit_add, {1}, kNanosecond);
  reg("dispatch/eager_fused", BM_dispatch_eager_fused, {1}, kNanosecond);
  reg("dispatch/cpp_call", BM_dispatch_cpp_call, {1}, kNanosecond);
  reg("dispatch/cpp_call_alloc", BM_dispatch_cpp_call_alloc, {1}, kNanosecond);

  reg("compile/jit_fresh", BM_compile_jit_fresh, {1000}, kMillisecond);
  reg("compile/clear_cache", BM_compile_clear_cache, {1000}, kMillisecond);
  reg("compile/trace_only", BM_compile_trace_only, {1000}, kMillisecond);

  reg("loop/jit", BM_loop_jit, {16}, kMicrosecond);
  reg("loop/eager", BM_loop_eager, {16}, kMicrosecond);
  reg("loop/loops", BM_loop_baseline, {16}, kMicrosecond);

  reg("poly100/polymorphic", BM_poly_sizes<true>, {kPolySizes}, kMillisecond);
  reg("poly100/static", BM_poly_sizes<false>, {kPolySizes}, kMillisecond);
}

// ---------------------------------------------------------------------------
// Start-up checks: every kernel computes what the baselines compute (so no
// benchmark times a wrong or empty kernel), and the ten-op kernel has ten
// equations. Discrepancies go into the JSON context; gross ones abort.

double max_rel_diff(const double* a, const double* b, std::int64_t n) {
  double m = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double d = std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i]));
    m = std::max(m, d);
  }
  return m;
}

bool check_all() {
  bool ok = true;
  auto note = [&](const char* what, double diff, double tol) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", diff);
    benchmark::AddCustomContext(std::string("check_") + what, buf);
    if (!(diff <= tol)) {
      std::fprintf(stderr, "bench_main: %s differs from the baseline by %g (tolerance %g)\n", what, diff, tol);
      ok = false;
    }
  };
  {
    const std::int64_t n = 100000;
    const Arr &x = input({n}, 1), &y = input({n}, 2);
    std::vector<double> ref(n);
    bench::loops::fused(x.data(), y.data(), ref.data(), n);
    note("fused_jit", max_rel_diff(jit_fused(x, y).data(), ref.data(), n), 1e-12);
    note("fused_jit_symbolic", max_rel_diff(jit_fused_symbolic(x, y).data(), ref.data(), n), 1e-12);
    note("fused_eager", max_rel_diff(fused_fn(x, y).data(), ref.data(), n), 1e-12);
  }
  {
    const Arr& x = input({100000}, 3);
    const double ref = bench::loops::sum_squares(x.data(), x.size());
    note("sumsq_jit", std::abs(jit_sumsq(x).data()[0] - ref) / ref, 1e-12);
  }
  {
    const std::int64_t n = 100000;
    const Arr& x = input({n}, 14);
    std::vector<double> ref(n);
    bench::loops::cumsum(x.data(), ref.data(), n);
    note("cumsum_jit", max_rel_diff(jit_cumsum(x).data(), ref.data(), n), 0.0);
    note("cumsum_eager", max_rel_diff(cumsum_fn(x).data(), ref.data(), n), 0.0);
  }
  {
    const std::int64_t n = 1000;
    const Arr& x = input({n, n}, 4);
    std::vector<double> ref(n * n);
    bench::loops::softmax_rows(x.data(), ref.data(), n, n);
    note("softmax_jit", max_rel_diff(jit_softmax(x).data(), ref.data(), n * n), 1e-12);
    note("softmax_jit_symbolic", max_rel_diff(jit_softmax_symbolic(x).data(), ref.data(), n * n), 1e-12);
  }
  for (std::int64_t n : {256, 512}) {
    const Arr &a = input({n, n}, 5), &b = input({n, n}, 6);
    std::vector<double> ref(n * n);
    bench::eigen::matmul(a.data(), b.data(), ref.data(), n);
    note(n == 256 ? "matmul256_jit" : "matmul512_jit", max_rel_diff(jit_matmul(a, b).data(), ref.data(), n * n),
         1e-9);
    note(n == 256 ? "matmul256_jit_symbolic" : "matmul512_jit_symbolic",
         max_rel_diff(jit_matmul_symbolic(a, b).data(), ref.data(), n * n), 1e-9);
  }
  {
    const Arr& x = input({16}, 13);
    std::vector<double> ref(16);
    bench::loops::affine_loop(x.data(), ref.data(), 16, kLoopIters);
    note("loop_jit", max_rel_diff(jit_loop(x).data(), ref.data(), 16), 0.0);
    note("loop_eager", max_rel_diff(loop_fn(x).data(), ref.data(), 16), 0.0);
  }
  {
    const Arr &x = input({1000}, 9), &y = input({1000}, 10);
    const std::size_t eqns = dyn::make_jaxpr(ten_ops_fn)(x, y).jaxpr->eqns.size();
    benchmark::AddCustomContext("ten_ops_eqns", std::to_string(eqns));
    if (eqns != kTenOps) {
      std::fprintf(stderr, "bench_main: the ten-op kernel has %zu equations\n", eqns);
      ok = false;
    }
  }
  return ok;
}

// `--first-kernel`: the first and second compiles of a fresh process.
int first_kernel() {
  const Arr &x = input({1000}, 9), &y = input({1000}, 10);
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  benchmark::DoNotOptimize(dyn::jit(ten_ops_fn)(x, y).data());
  auto t1 = clock::now();
  benchmark::DoNotOptimize(dyn::jit(ten_ops_fn)(x, y).data());
  auto t2 = clock::now();
  std::printf("{\"first_kernel_ms\": %.3f, \"second_kernel_ms\": %.3f}\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  return 0;
}

// `--ir <case>`: the jaxpr and optimised LLVM IR of a case's kernel at the
// benchmarked size, for looking into a number (vectorisation, libmvec calls).
int print_ir(const std::string& which) {
  auto show = [](const auto& jf, const auto&... args) {
    std::cout << jf.jaxpr(args...) << "\n" << jf.llvm_ir(args...);
    return 0;
  };
  if (which == "fused") return show(jit_fused, input({100000}, 1), input({100000}, 2));
  if (which == "fused_symbolic") return show(jit_fused_symbolic, input({100000}, 1), input({100000}, 2));
  if (which == "add") return show(jit_add, input({1}, 7), input({1}, 8));
  if (which == "sumsq") return show(jit_sumsq, input({100000}, 3));
  if (which == "softmax") return show(jit_softmax, input({1000, 1000}, 4));
  if (which == "matmul") return show(jit_matmul, input({512, 512}, 5), input({512, 512}, 6));
  if (which == "ten_ops") return show(dyn::jit(ten_ops_fn), input({1000}, 9), input({1000}, 10));
  if (which == "loop") return show(jit_loop, input({16}, 13));
  if (which == "cumsum") return show(jit_cumsum, input({100000}, 14));
  std::fprintf(stderr, "bench_main --ir: fused, fused_symbolic, add, sumsq, softmax, matmul, ten_ops, loop or cumsum\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--first-kernel") == 0) return first_kernel();
  if (argc > 2 && std::strcmp(argv[1], "--ir") == 0) return print_ir(argv[2]);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("dynstage_host_target", dyn::detail::host_target_id());
  if (!check_all()) return 2;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
