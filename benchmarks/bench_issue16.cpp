// dynstage benchmarks of issue 16's kernels: csr/*, hist/*, argmax/* and
// sort/* (jit and eager). Their hand loops are registered by bench_main.cpp
// (csr/loops, ...) and the running sum (cumsum/*) lives there entirely, since
// dyn::cumsum exists. Inputs: issue16_data.hpp (shared with the hand loops,
// so both time the same data); sizes: bench_sizes.hpp. Conventions as in
// bench_main.cpp: inputs made once outside the timed loop, the kernel
// compiled before it, dyn::jit and eager allocate their outputs per call
// (the hand loops write into preallocated ones). Before timing, each
// benchmark compares its result with the hand loop's and stops with
// SkipWithError (the report then shows no row) if they differ.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_sizes.hpp"
#include "issue16_data.hpp"

namespace {

// ---------------------------------------------------------------------------
// The staged functions.

// CSR y = A x as a segment sum over row_ptr (dyn::segment_sum_offsets,
// NumPy's add.reduceat): one loop over the rows, each row's products
// vals[k] * x[cols[k]] computed inline and added in order from 0, as the
// hand loop does (bit-identical to it). It reads row_ptr (0.4 MB) instead
// of a row id per nonzero (4 MB): 12 MB per product, the hand loop's.
auto csr_seg_fn = [](auto row_ptr, auto cols, auto vals, auto x) {
  return dyn::segment_sum_offsets(vals * x.at(cols).get(), row_ptr);
};

// CSR y = A x in the scatter-add form (JAX's segment_sum: a segment id per
// element), kept for comparison: gather x at the column of every
// nonzero (fused into the product: no f64[nnz] temporary of gathered x),
// then a segment sum per row by scatter-add of the products into y. Each
// row's products are added in nonzero order, as the hand loop adds them.
// row_ptr (i32[rows + 1]) only gives the number of rows here: a Dim under
// jit, so the zeros are staged rather than a 1e5-element constant.
//
// The alternative, with row_ptr instead of row_of_nz: a running sum of the
// products, then differences at the row boundaries (two gathers):
//   c = concatenate({zeros<double>({1}), cumsum(vals * x.at(cols).get(), 0)}, 0);
//   y = c.at(row_ptr[1:]).get() - c.at(row_ptr[:-1]).get();   // slices of row_ptr
// It needs no scatter, but each y[r] is the difference of two running sums
// over up to 1e6 products, so it loses the low bits of small rows
// (cancellation); the scatter-add form is exact in the hand loop's order.
auto csr_fn = [](auto row_ptr, auto row_of_nz, auto cols, auto vals, auto x) {
  auto prod = vals * x.at(cols).get();
  return dyn::zeros<double>({row_ptr.shape(0) - 1}).at(row_of_nz).add(prod);
};

// counts[bins[i]] += 1 (duplicate indices accumulate, as in JAX's
// `.at[].add`). The zero counts are a small concrete constant (i64[1000]).
auto hist_fn = [](auto bins) {
  return dyn::zeros<std::int64_t>({bench::sizes::hist_bins}).at(bins).add(1);
};

// The first maximum of each row: i32[rows].
auto argmax_fn = [](auto x) { return dyn::argmax(x, 1); };

// Ascending, into a new array (the last, only axis).
auto sort_fn = [](auto x) { return dyn::sort(x); };

const auto jit_csr = dyn::jit(csr_seg_fn);
const auto jit_csr_scatter = dyn::jit(csr_fn);
const auto jit_hist = dyn::jit(hist_fn);
const auto jit_argmax = dyn::jit(argmax_fn);
const auto jit_sort = dyn::jit(sort_fn);

// ---------------------------------------------------------------------------
// Results against the hand loops (computed once per process).

const std::vector<double>& csr_ref() {
  static const std::vector<double> y = [] {
    const auto& m = bench::data::csr();
    std::vector<double> r(m.rows);
    bench::loops::csr_matvec(m.row_ptr.data(), m.cols.data(), m.vals.data(), m.x.data(), r.data(), m.rows);
    return r;
  }();
  return y;
}

const std::vector<std::int64_t>& hist_ref() {
  static const std::vector<std::int64_t> c = [] {
    const auto& b = bench::data::hist_bins();
    std::vector<std::int64_t> r(bench::sizes::hist_bins);
    bench::loops::histogram(b.data(), b.size(), r.data(), bench::sizes::hist_bins);
    return r;
  }();
  return c;
}

const std::vector<std::int32_t>& argmax_ref() {
  static const std::vector<std::int32_t> a = [] {
    const auto& x = bench::data::argmax_matrix();
    std::vector<std::int32_t> r(x.shape(0));
    bench::loops::argmax_rows(x.data(), r.data(), x.shape(0), x.shape(1));
    return r;
  }();
  return a;
}

const std::vector<float>& sort_ref() {
  static const std::vector<float> s = [] {
    const auto& x = bench::data::sort_input();
    std::vector<float> r(x.size());
    bench::loops::sort_copy(x.data(), r.data(), x.size());
    return r;
  }();
  return s;
}

// False (and the benchmark skipped) unless `got` matches `ref`: the same
// shape, and every element within `tol` relative (0: bit-identical).
template <class A, class T>
bool matches(benchmark::State& st, const char* what, const A& got, const std::vector<T>& ref, double tol) {
  std::string err;
  if (got.size() != static_cast<std::int64_t>(ref.size())) {
    err = std::string(what) + ": " + std::to_string(got.size()) + " elements, the hand loop has " +
          std::to_string(ref.size());
  } else {
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double a = static_cast<double>(got.data()[i]), b = static_cast<double>(ref[i]);
      if (!(std::abs(a - b) <= tol * std::max(1.0, std::abs(b)))) {
        err = std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(a) +
              ", the hand loop's " + std::to_string(b);
        break;
      }
    }
  }
  if (err.empty()) return true;
  st.SkipWithError(err.c_str());
  return false;
}

// ---------------------------------------------------------------------------
// Benchmarks. Items: nonzeros (csr), samples (hist), elements (argmax, sort).

void items(benchmark::State& st, std::int64_t n) {
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["n"] = static_cast<double>(n);
}

// Checks f() against the hand loop's result once (within tol), then times
// it; n items per call.
template <class F, class T>
void timed(benchmark::State& st, const char* what, F f, const std::vector<T>& ref, double tol, std::int64_t n) {
  if (!matches(st, what, f(), ref, tol)) return;
  for (auto _ : st) {
    auto r = f();
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  items(st, n);
}

// The segment sum adds each row in the hand loop's order: bit-identical (tolerance 0).
void BM_csr_jit(benchmark::State& st) {
  const auto& m = bench::data::csr();
  timed(st, "csr/jit", [&] { return jit_csr(m.row_ptr, m.cols, m.vals, m.x); }, csr_ref(), 0, m.nnz);
}

void BM_csr_jit_scatter(benchmark::State& st) {
  const auto& m = bench::data::csr();
  timed(st, "csr/jit_scatter_add", [&] { return jit_csr_scatter(m.row_ptr, m.row_of_nz, m.cols, m.vals, m.x); },
        csr_ref(), 1e-12, m.nnz);
}

void BM_csr_eager(benchmark::State& st) {
  const auto& m = bench::data::csr();
  timed(st, "csr/eager", [&] { return csr_seg_fn(m.row_ptr, m.cols, m.vals, m.x); }, csr_ref(), 1e-12, m.nnz);
}

void BM_hist_jit(benchmark::State& st) {
  const auto& b = bench::data::hist_bins();
  timed(st, "hist/jit", [&] { return jit_hist(b); }, hist_ref(), 0.0, b.size());
}

void BM_hist_eager(benchmark::State& st) {
  const auto& b = bench::data::hist_bins();
  timed(st, "hist/eager", [&] { return hist_fn(b); }, hist_ref(), 0.0, b.size());
}

void BM_argmax_jit(benchmark::State& st) {
  const auto& x = bench::data::argmax_matrix();
  timed(st, "argmax/jit", [&] { return jit_argmax(x); }, argmax_ref(), 0.0, x.size());
}

void BM_argmax_eager(benchmark::State& st) {
  const auto& x = bench::data::argmax_matrix();
  timed(st, "argmax/eager", [&] { return argmax_fn(x); }, argmax_ref(), 0.0, x.size());
}

void BM_sort_jit(benchmark::State& st) {
  const auto& x = bench::data::sort_input();
  timed(st, "sort/jit", [&] { return jit_sort(x); }, sort_ref(), 0.0, x.size());
}

void BM_sort_eager(benchmark::State& st) {
  const auto& x = bench::data::sort_input();
  timed(st, "sort/eager", [&] { return sort_fn(x); }, sort_ref(), 0.0, x.size());
}

// Names "case/variant/arg" with the args of bench_main's hand loops
// (bench_report.py pairs them by name).
using bench::sizes::argmax_n;
using bench::sizes::csr_rows;
using bench::sizes::hist_samples;
using bench::sizes::sort_n;
BENCHMARK(BM_csr_jit)->Name("csr/jit")->Arg(csr_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_csr_jit_scatter)->Name("csr/jit_scatter_add")->Arg(csr_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_csr_eager)->Name("csr/eager")->Arg(csr_rows)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hist_jit)->Name("hist/jit")->Arg(hist_samples)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hist_eager)->Name("hist/eager")->Arg(hist_samples)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_argmax_jit)->Name("argmax/jit")->Arg(argmax_n)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_argmax_eager)->Name("argmax/eager")->Arg(argmax_n)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_sort_jit)->Name("sort/jit")->Arg(sort_n)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_sort_eager)->Name("sort/eager")->Arg(sort_n)->Unit(benchmark::kMicrosecond);

}  // namespace
