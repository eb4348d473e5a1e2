// Issue 25, item 4 ("Temporaries"): the one block pool (array/buffer.hpp's
// BlockPool) serves both the kernels' heap temporaries (dynstage_temp_alloc /
// free, llvm/session.hpp) and large array results. Counted through the
// pool's test hook (detail::block_pool_counts(): blocks taken, and how many
// of them came fresh from the heap), never timed: once a kernel has run, its
// next calls with the same sizes take no fresh block. Results are checked
// against eager.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::detail::block_pool_counts;

// e is expensive and read by two nests (a row sum and a column max): a
// materialised temporary of 300 x 300 f64 = 720 KB, on the heap. The
// results are 300 doubles each: small, not from the pool.
auto two_readers = [](auto x) {
  auto e = dyn::exp(x * 0.001);
  return dyn::sum(e, {1}) + dyn::max(e, {0});
};

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("issue 25: a kernel's heap temporary comes from the block pool, fresh only on the first call") {
  const Array<double> x = test_util::iota_array<double>({300, 300});
  const auto f = dyn::jit(two_readers);
  const auto want = dyn::eager(two_readers)(x);
  const auto c0 = block_pool_counts();
  CHECK(dyn::allclose(f(x), want, 1e-12, 0.0));  // compiles, takes its temporary
  const auto c1 = block_pool_counts();
  CHECK(c1.taken > c0.taken);
  for (int call = 0; call < 3; ++call) CHECK(dyn::allclose(f(x), want, 1e-12, 0.0));
  const auto c2 = block_pool_counts();
  CHECK(c2.taken - c1.taken >= 3);  // one temporary (at least) per call ...
  CHECK(c2.fresh == c1.fresh);      // ... all of them reused
}

TEST_CASE("issue 25: a large result's block goes back to the block pool and is reused by the next call") {
  const Array<double> x = test_util::iota_array<double>({512, 512});  // 2 MiB: >= kLargeArrayBytes
  const auto f = dyn::jit([](auto x) { return x * 2.0 + 1.0; });
  const auto want = dyn::eager([](auto x) { return x * 2.0 + 1.0; })(x);
  CHECK(dyn::array_equal(f(x), want));  // compiles; its result is freed here
  const auto c1 = block_pool_counts();
  for (int call = 0; call < 3; ++call) CHECK(dyn::array_equal(f(x), want));
  const auto c2 = block_pool_counts();
  CHECK(c2.taken - c1.taken == 3);  // one result block per call ...
  CHECK(c2.fresh == c1.fresh);      // ... the previous call's
}

}  // TEST_SUITE
