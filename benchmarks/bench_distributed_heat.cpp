// Issue 22's benchmark: the halo-exchange heat equation (examples/17) on an
// n x n f64 plate split by rows over the ranks, one thread per rank:
//   DYNSTAGE_NUM_THREADS=1 mpirun -np 1 bench_distributed_heat 4096 20
//   DYNSTAGE_NUM_THREADS=1 mpirun -np 2 bench_distributed_heat 4096 20
// (scripts/bench_distributed.sh runs both and prints the ratio). Each run is
// one jitted kernel per rank: `steps` steps of two ppermutes (the halo rows)
// and the stencil; the time is the median of 5 runs after a warm-up (the
// compile), between two barriers (a psum), as rank 0 sees it.
#include <dynstage/dynstage.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  dyn::distributed::init(argc, argv);
  const int rank = dyn::distributed::rank(), ranks = dyn::distributed::size();
  const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096, steps = argc > 2 ? std::atoll(argv[2]) : 20;
  // (A third argument overrides the rows per rank: `-np 1 ... 4096 20 2048`
  // times one rank's share of a 2-rank run alone, without communication.)
  const std::int64_t b = argc > 3 ? std::atoll(argv[3]) : n / ranks;
  dyn::Mesh mesh({"x"}, {ranks});
  std::vector<std::pair<std::int64_t, std::int64_t>> down, up;
  for (std::int64_t r = 0; r + 1 < ranks; ++r) {
    down.push_back({r, r + 1});
    up.push_back({r + 1, r});
  }
  auto simulate = [&](auto u0, auto keep) {
    return dyn::for_loop(0, steps, 1)([&](auto, auto u) {
      auto rows = u.shape(0), cols = u.shape(1);
      auto above = dyn::ppermute(dyn::slice(u, {rows - 1, 0}, {rows, cols}), "x", down);
      auto below = dyn::ppermute(dyn::slice(u, {0, 0}, {1, cols}), "x", up);
      auto ext = dyn::concatenate({above, u, below}, 0);
      auto centre = dyn::slice(ext, {1, 1}, {rows + 1, cols - 1});
      auto lap = dyn::slice(ext, {0, 1}, {rows, cols - 1}) + dyn::slice(ext, {2, 1}, {rows + 2, cols - 1}) +
                 dyn::slice(ext, {1, 0}, {rows + 1, cols - 2}) + dyn::slice(ext, {1, 2}, {rows + 1, cols}) -
                 4.0 * centre;
      return dyn::dynamic_update_slice(u, (centre + 0.2 * lap) * keep, {0, 1});
    })(u0);
  };
  auto run = dyn::jit(dyn::shard_map(simulate, mesh, {dyn::P("x"), dyn::P("x")}, dyn::P("x")));
  auto barrier = dyn::shard_map([](auto x) { return dyn::psum(x, "x"); }, mesh, {dyn::P()}, dyn::P());
  const dyn::Array<double> tick = dyn::Array<double>::scalar(1.0);

  dyn::Array<double> u0({b, n}), keep({b, 1});
  for (std::int64_t i = 0; i < b; ++i) {
    const std::int64_t g = rank * b + i;
    keep.mutable_data()[i] = (g == 0 || g == n - 1) ? 0.0 : 1.0;
    for (std::int64_t j = 0; j < n; ++j)
      u0.mutable_data()[i * n + j] = (g > n / 2 - n / 16 && g < n / 2 + n / 16 && j > n / 2 - n / 16 && j < n / 2 + n / 16) ? 100.0 : 0.0;
  }
  dyn::Array<double> u = run(u0, keep);  // compile + warm-up
  std::vector<double> ms;
  for (int k = 0; k < 5; ++k) {
    (void)barrier(tick);
    const auto t0 = std::chrono::steady_clock::now();
    u = run(u0, keep);
    (void)barrier(tick);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  if (rank == 0)
    std::printf("ranks=%d n=%lld steps=%lld median_ms=%.2f ms_per_step=%.3f\n", ranks, static_cast<long long>(n),
                static_cast<long long>(steps), ms[2], ms[2] / static_cast<double>(steps));
  dyn::distributed::finalize();
  return 0;
}
