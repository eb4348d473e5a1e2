// dynstage benchmark of issue 17's bit-twiddling kernel: hash/* (jit, eager
// and the hand loop), MurmurHash3's 32-bit finaliser fmix32 of 1e7 u32
//   h ^= h >> 16; h *= 0x85ebca6b; h ^= h >> 13; h *= 0xc2b2ae35; h ^= h >> 16
// Shifts, xors and wrapping multiplies of an unsigned dtype: dyn::jit fuses
// the eleven elementwise primitives into one vectorised pass; NumPy
// (numpy_baselines.py, hash/numpy) runs them one array pass each. Conventions
// as bench_issue16.cpp: inputs made once, the kernel compiled before timing,
// dyn::jit and eager allocate their outputs per call (the hand loop writes
// into a preallocated one), and each benchmark first checks its result
// against the hand loop's (bit-identical) or is skipped with an error.
#include <benchmark/benchmark.h>

#include <dynstage/dynstage.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "baselines.hpp"
#include "bench_sizes.hpp"

namespace {

using u32 = std::uint32_t;

auto hash_fn = [](auto x) {
  auto h = x ^ (x >> 16);
  h = h * 0x85ebca6bu;
  h = h ^ (h >> 13);
  h = h * 0xc2b2ae35u;
  return h ^ (h >> 16);
};

const auto jit_hash = dyn::jit(hash_fn);

const dyn::Array<u32>& hash_input() {
  static const dyn::Array<u32> x = [] {
    dyn::Array<u32> a({bench::sizes::hash_n});
    std::mt19937 g(17);
    u32* p = a.mutable_data();
    for (std::int64_t i = 0; i < a.size(); ++i) p[i] = static_cast<u32>(g());
    return a;
  }();
  return x;
}

const std::vector<u32>& hash_ref() {
  static const std::vector<u32> r = [] {
    const auto& x = hash_input();
    std::vector<u32> out(static_cast<std::size_t>(x.size()));
    bench::loops::hash_u32(x.data(), out.data(), x.size());
    return out;
  }();
  return r;
}

bool matches(benchmark::State& st, const char* what, const dyn::Array<u32>& got) {
  const auto& ref = hash_ref();
  if (got.size() == static_cast<std::int64_t>(ref.size())) {
    std::size_t i = 0;
    while (i < ref.size() && got.data()[i] == ref[i]) ++i;
    if (i == ref.size()) return true;
    st.SkipWithError((std::string(what) + ": element " + std::to_string(i) + " differs from the hand loop's").c_str());
    return false;
  }
  st.SkipWithError((std::string(what) + ": wrong size").c_str());
  return false;
}

void items(benchmark::State& st, std::int64_t n) {
  st.SetItemsProcessed(st.iterations() * n);
  st.counters["n"] = static_cast<double>(n);
}

void BM_hash_jit(benchmark::State& st) {
  const auto& x = hash_input();
  if (!matches(st, "hash/jit", jit_hash(x))) return;
  for (auto _ : st) {
    auto h = jit_hash(x);
    benchmark::DoNotOptimize(h.data());
    benchmark::ClobberMemory();
  }
  items(st, x.size());
}

void BM_hash_eager(benchmark::State& st) {
  const auto& x = hash_input();
  if (!matches(st, "hash/eager", hash_fn(x))) return;
  for (auto _ : st) {
    auto h = hash_fn(x);
    benchmark::DoNotOptimize(h.data());
    benchmark::ClobberMemory();
  }
  items(st, x.size());
}

void BM_hash_loops(benchmark::State& st) {
  const auto& x = hash_input();
  std::vector<u32> out(static_cast<std::size_t>(x.size()));
  for (auto _ : st) {
    bench::loops::hash_u32(x.data(), out.data(), x.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  items(st, x.size());
}

using bench::sizes::hash_n;
BENCHMARK(BM_hash_jit)->Name("hash/jit")->Arg(hash_n)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hash_eager)->Name("hash/eager")->Arg(hash_n)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_hash_loops)->Name("hash/loops")->Arg(hash_n)->Unit(benchmark::kMicrosecond);

}  // namespace
