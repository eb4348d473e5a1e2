// Soak (issue 23, item 3; docs/reliability.md "Soak and memory"):
//   - cached calls with MIXED signatures: several jitted functions, static
//     and symbolic shapes, five dtypes, static arguments, pytrees, results
//     the kernel sizes, a function whose LRU cache keeps evicting: every
//     result bitwise equal to the first call of its signature (which equals
//     eager), each signature compiled once, live kernels equal to the cached
//     entries, resident memory flat; 1e6 calls run once
//     (DYNSTAGE_MIXED_SOAK_CALLS=1000000), CI a small size;
//   - the disk cache under eviction pressure: a bound of a few entries, many
//     distinct kernels written (from several threads too) and read back: the
//     directory stays within the bound, every result is right, and an
//     evicted kernel recompiles to the same bits.
// Worker threads count mismatches; the main thread checks the counts.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"
#include "temp_cache.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DYNSTAGE_SOAK_SANITIZED 1  // the quarantine / shadow memory grow by design: no memory assertion
#else
#define DYNSTAGE_SOAK_SANITIZED 0
#endif

namespace {

using dyn::Array;
using i64 = std::int64_t;
using test_util::iota_array;

using test_util::env_int;
using test_util::rss_bytes;

template <class T>
bool bits_equal(const Array<T>& a, const Array<T>& b) {
  return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0);
}
template <class T>
bool close_to(const Array<T>& got, const Array<T>& want) {
  if (got.shape() != want.shape()) return false;
  if constexpr (std::is_floating_point_v<T>) return dyn::allclose(got, want, 1e-5, 1e-5);
  else return dyn::array_equal(got, want);
}

// The functions of the mixed soak.
auto affine = [](auto x) { return x * 3 + 1; };                        // any dtype, static shapes
auto scaled = [](auto x, int k) { return x * static_cast<double>(k) - 0.5; };  // a static argument
auto poly = [](auto x, auto y) { return x * y + dyn::sum(y); };        // polymorphic "n", f32 and f64
auto pair = [](auto t) {                                                // a pytree in and out
  auto [a, b] = t;
  return std::make_tuple(a + dyn::astype<double>(b), b * 2);
};
// The kernel sizes the result: arange(sum(x)) * 3.
auto from_data = [](auto x) { return dyn::arange<std::int32_t>(dyn::astype<std::int64_t>(dyn::sum(x))) * 3; };
Array<std::int32_t> from_data_want(const Array<std::int32_t>& x) {
  const std::int32_t s = x.data()[0] + x.data()[1];
  Array<std::int32_t> r({s});
  for (std::int32_t k = 0; k < s; ++k) r.mutable_data()[k] = 3 * k;
  return r;
}
auto doubling = [](auto x) {  // a while_loop that doubles its array: kernel-allocated
  return dyn::while_loop([](auto a) { return dyn::dim_value(a.shape(0)) <= 64; }, {.preserve_dimensions = false})(
      [](auto a) { return dyn::concatenate({a, a + 1.0}, 0); })(x);
};
auto mm = [](auto a, auto b) { return dyn::matmul(a, b) + 1.0; };
auto branch = [](auto x, auto p) { return dyn::cond(p > 0, [](auto v) { return v * 2.0; }, [](auto v) { return v - 2.0; })(x); };
auto evicting = [](auto x, int k) { return x + static_cast<double>(k); };  // cache_capacity{3}

// One signature of the soak: its call, and the check of its result against
// the first result (bitwise: the same kernel gives the same bits).
struct Case {
  std::function<bool(bool first)> run;  // first: record the reference (and compare with eager)
};

}  // namespace

TEST_CASE("soak: mixed signatures (functions, static and symbolic shapes, dtypes, pytrees): flat memory, live kernels") {
  // DYNSTAGE_MIXED_SOAK_CALLS=1000000 is the long run (docs/reliability.md);
  // under the sanitizers (calls 10x slower, no memory assertion) a shorter one.
  const i64 total = env_int("DYNSTAGE_MIXED_SOAK_CALLS", DYNSTAGE_SOAK_SANITIZED ? 40000 : 100000);
  const std::size_t base = dyn::detail::live_kernels();
  i64 calls = 0, wrong = 0, first_wrong = 0, live_wrong = 0, evicting_calls = 0;
  std::size_t max_live = 0, live_at_end = 0, cached_at_end = 0;
  std::int64_t rss0 = 0, rss1 = 0;
  std::size_t compiles = 0, signatures = 0, evictions = 0;
  std::vector<std::size_t> per_function_compiles;
  // In a thread of its own, as the eviction soak: its per-thread MRU slots
  // die with it, so every kernel must be freed once the functions are gone.
  std::thread([&] {
    auto j_affine = dyn::jit(affine);
    auto j_scaled = dyn::jit(scaled, dyn::static_argnums<1>{});
    auto j_poly = dyn::jit(poly, dyn::polymorphic_shapes{"n", "n"});
    auto j_pair = dyn::jit(pair);
    auto j_data = dyn::jit(from_data);
    auto j_doubling = dyn::jit(doubling, dyn::polymorphic_shapes{"(n,)"});
    auto j_mm = dyn::jit(mm);
    auto j_branch = dyn::jit(branch);
    auto j_evict = dyn::jit(evicting, dyn::static_argnums<1>{}, dyn::cache_capacity{3});

    std::vector<Case> cases;
    // A case of `jf(args...)`, compared with `ref(args...)` eagerly at the first call.
    auto add = [&](auto jf, auto ref, auto... args) {
      using R = decltype(jf(args...));
      auto want = std::make_shared<R>();
      cases.push_back({[=, &first_wrong](bool first) mutable {
        R r = jf(args...);
        if (first) {
          *want = r;
          R e = ref(args...);
          if constexpr (requires { std::get<0>(r); }) {
            first_wrong += !close_to(std::get<0>(r), std::get<0>(e)) || !close_to(std::get<1>(r), std::get<1>(e));
          } else {
            first_wrong += !close_to(r, e);
          }
          return true;
        }
        if constexpr (requires { std::get<0>(r); }) {
          return bits_equal(std::get<0>(r), std::get<0>(*want)) && bits_equal(std::get<1>(r), std::get<1>(*want));
        } else {
          return bits_equal(r, *want);
        }
      }});
    };
    // affine: five dtypes, several static shapes (10 signatures)
    add(j_affine, affine, iota_array<double>({8}, 0.5));
    add(j_affine, affine, iota_array<double>({3, 5}, -1.0, 0.25));
    add(j_affine, affine, iota_array<double>({257}, 0.0, 0.125));
    add(j_affine, affine, iota_array<float>({8}, 0.5f));
    add(j_affine, affine, iota_array<float>({2, 2, 2}, 1.0f));
    add(j_affine, affine, iota_array<std::int32_t>({8}, -3));
    add(j_affine, affine, iota_array<std::int32_t>({4, 4}, 5));
    add(j_affine, affine, iota_array<i64>({8}, 100));
    add(j_affine, affine, iota_array<std::uint8_t>({16}, 1));
    add(j_affine, affine, Array<double>::scalar(2.5));
    // scaled: three static values (3)
    for (int k : {1, 2, 7})
      add([j_scaled, k](const auto& x) { return j_scaled(x, k); }, [k](const auto& x) { return scaled(x, k); },
          iota_array<double>({6}, 1.0));
    // poly: one kernel per dtype for every n (2 signatures, 6 sizes)
    for (i64 n : {1, 2, 3, 17, 64, 100}) {
      add(j_poly, poly, iota_array<double>({n}, 0.5), iota_array<double>({n}, 1.0, 0.5));
      add(j_poly, poly, iota_array<float>({n}, 0.5f), iota_array<float>({n}, 1.0f, 0.5f));
    }
    // pair: a tuple of f64 and i32 (2 signatures)
    add(j_pair, pair, std::make_tuple(iota_array<double>({4}, 0.5), iota_array<std::int32_t>({4}, 1)));
    add(j_pair, pair, std::make_tuple(iota_array<double>({2, 3}), iota_array<std::int32_t>({2, 3}, -2)));
    // from_data: result sizes 0..90 from the data (1 signature)
    for (std::int32_t s : {0, 1, 5, 33, 90}) add(j_data, from_data_want, Array<std::int32_t>({2}, {s / 2, s - s / 2}));
    // doubling: kernel-allocated, polymorphic (1)
    for (i64 n : {1, 5, 40, 65}) add(j_doubling, doubling, iota_array<double>({n}));
    // mm: two static shapes, one large enough for the GEMM routine (2)
    add(j_mm, mm, iota_array<double>({3, 4}, 0.0, 0.5), iota_array<double>({4, 2}, 1.0, -0.25));
    add(j_mm, mm, iota_array<double>({64, 64}, 0.0, 0.001), iota_array<double>({64, 64}, 1.0, -0.002));
    // branch: both branches of one kernel (1)
    for (double p : {1.0, -1.0})
      add(j_branch, branch, iota_array<double>({5}), Array<double>::scalar(p));
    signatures = 10 + 3 + 2 + 2 + 1 + 1 + 2 + 1;

    const i64 warmup = std::min<i64>(total / 10, 20000);
    std::vector<bool> seen(cases.size(), false);
    auto x8 = iota_array<double>({8}, 0.25);
    for (i64 i = 0; i < total; ++i) {
      if (i == warmup) rss0 = rss_bytes();
      const std::size_t c = static_cast<std::size_t>((i * 7919) % static_cast<i64>(cases.size()));
      const bool first = !seen[c];
      seen[c] = true;
      wrong += !cases[c].run(first);
      ++calls;
      // Every 500th call: the evicting function; its static value changes
      // every 4th time (a compile, and an eviction once 3 are cached).
      if (i % 500 == 0) {
        const int k = static_cast<int>(i / 2000) % 40;
        const Array<double> r = j_evict(x8, k);
        wrong += !bits_equal(r, Array<double>(x8 + static_cast<double>(k)));
        ++evicting_calls;
      }
      if (i % 997 == 0) {
        // Live kernels are exactly the cached ones (plus, at most, the
        // evicting function's last kernel held by this thread's MRU slot).
        std::size_t cached = 0;
        for (std::size_t s : {j_affine.stats().cache_size, j_scaled.stats().cache_size, j_poly.stats().cache_size,
                              j_pair.stats().cache_size, j_data.stats().cache_size, j_doubling.stats().cache_size,
                              j_mm.stats().cache_size, j_branch.stats().cache_size, j_evict.stats().cache_size})
          cached += s;
        const std::size_t live = dyn::detail::live_kernels() - base;
        live_wrong += live < cached || live > cached + 1;
        max_live = std::max(max_live, live);
      }
    }
    rss1 = rss_bytes();
    for (const auto& s : {j_affine.stats(), j_scaled.stats(), j_poly.stats(), j_pair.stats(), j_data.stats(),
                          j_doubling.stats(), j_mm.stats(), j_branch.stats()}) {
      per_function_compiles.push_back(s.compiles);
      compiles += s.compiles;
      cached_at_end += s.cache_size;
    }
    cached_at_end += j_evict.stats().cache_size;
    evictions = j_evict.stats().evictions;
    live_at_end = dyn::detail::live_kernels() - base;
  }).join();
  std::printf("soak (mixed): %lld calls over %zu signatures of 8 functions (+%lld calls of an evicting function: "
              "%zu evictions); resident memory %.1f MiB after the warm-up, %.1f MiB at the end (%+.2f MiB); "
              "at most %zu live kernels\n",
              static_cast<long long>(calls), signatures, static_cast<long long>(evicting_calls), evictions,
              static_cast<double>(rss0) / 1048576.0, static_cast<double>(rss1) / 1048576.0,
              static_cast<double>(rss1 - rss0) / 1048576.0, max_live);
  CHECK(calls == total);
  CHECK(first_wrong == 0);
  CHECK(wrong == 0);
  CHECK(live_wrong == 0);
  CHECK(compiles == signatures);  // each signature once, in every run length
  CHECK(per_function_compiles == std::vector<std::size_t>{10, 3, 2, 2, 1, 1, 2, 1});
  CHECK(live_at_end == cached_at_end);
  CHECK(dyn::detail::live_kernels() == base);  // the functions and the thread are gone: every kernel freed
  if (total >= 40000) CHECK(evictions == static_cast<std::size_t>((total - 1) / 2000 + 1 - 3));
  if (!DYNSTAGE_SOAK_SANITIZED) CHECK(rss1 - rss0 < 8 * 1048576);
}

// ---------------------------------------------------------------------------
// The disk cache under eviction pressure.

namespace {

// k selects a kernel: each k is a distinct program (k is a literal in it)
// of the same structure, so the entries have about the same size.
auto disk_fn = [](auto x, int k) { return x * static_cast<double>(k + 2) + static_cast<double>(k); };
Array<double> disk_want(int k) { return Array<double>(disk_fn(iota_array<double>({16}, 0.5), k)); }

}  // namespace

TEST_CASE("soak: the disk cache under eviction pressure stays within its bound; evicted kernels recompile") {
  const auto x = iota_array<double>({16}, 0.5);
  // One entry's size, measured.
  std::uint64_t entry_bytes = 0;
  {
    test_util::TempCache probe("soak_probe");
    auto jf = dyn::jit(disk_fn, dyn::static_argnums<1>{});
    (void)jf(x, 5);  // (k = 0 adds a zero: a smaller kernel than the others)
    REQUIRE(probe.entries().size() == 1);
    entry_bytes = probe.bytes();
  }
  const int kernels = static_cast<int>(env_int("DYNSTAGE_DISK_SOAK_KERNELS", 40));
  // Room for about 4 entries.
  const std::uint64_t bound = entry_bytes * 9 / 2;
  test_util::TempCache cache("soak_disk", bound);
  std::vector<Array<double>> first(static_cast<std::size_t>(kernels));
  int wrong = 0, over = 0, temps = 0;
  std::size_t most = 0;
  {
    auto jf = dyn::jit(disk_fn, dyn::static_argnums<1>{});
    for (int k = 0; k < kernels; ++k) {
      first[static_cast<std::size_t>(k)] = jf(x, k);
      wrong += !dyn::allclose(first[static_cast<std::size_t>(k)], disk_want(k), 1e-15, 0);
      over += cache.bytes() > bound;
      most = std::max(most, cache.entries().size());
      for (const auto& p : cache.files()) temps += p.filename().string().rfind(".tmp-", 0) == 0;
    }
    CHECK(jf.stats().compiles == static_cast<std::size_t>(kernels));
    CHECK(jf.stats().disk_hits == 0);
  }
  std::printf("soak (disk): %d kernels of %llu bytes each through a bound of %llu bytes: at most %zu entries at once\n",
              kernels, static_cast<unsigned long long>(entry_bytes), static_cast<unsigned long long>(bound), most);
  CHECK(wrong == 0);
  CHECK(over == 0);
  CHECK(temps == 0);
  CHECK(most >= 3);
  CHECK(most <= 4);
  // Read back, newest first: the kernels still on disk load (disk hits),
  // the evicted ones compile again, and each gives the bits of its first run.
  const std::size_t present = cache.entries().size();
  {
    auto jf = dyn::jit(disk_fn, dyn::static_argnums<1>{});
    for (int k = kernels - 1; k >= 0; --k) {
      wrong += !bits_equal(Array<double>(jf(x, k)), first[static_cast<std::size_t>(k)]);
      over += cache.bytes() > bound;
    }
    CHECK(jf.stats().disk_hits == present);
    CHECK(jf.stats().compiles == static_cast<std::size_t>(kernels) - present);
  }
  CHECK(wrong == 0);
  CHECK(over == 0);
  // Three threads writing distinct kernels at once: the bound holds once they
  // are done, and every result is right.
  {
    std::vector<std::thread> threads;
    std::vector<int> bad(3, 0);
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([&, t] {
        auto jf = dyn::jit(disk_fn, dyn::static_argnums<1>{});
        for (int k = 1000 + t; k < 1000 + 3 * 12; k += 3)
          bad[static_cast<std::size_t>(t)] += !dyn::allclose(Array<double>(jf(x, k)), disk_want(k), 1e-15, 0);
      });
    for (auto& th : threads) th.join();
    CHECK(bad == std::vector<int>{0, 0, 0});
    // (A store evicts after its own rename: entries written at once may
    // overshoot for a moment; the last store's scan restores the bound.)
    auto jf = dyn::jit(disk_fn, dyn::static_argnums<1>{});
    CHECK(dyn::allclose(Array<double>(jf(x, 2000)), disk_want(2000), 1e-15, 0));
    CHECK(cache.bytes() <= bound);
    for (const auto& p : cache.files()) CHECK(p.extension() == ".dkc");
  }
}
