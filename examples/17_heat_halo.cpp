// Lesson 17: the heat equation on several processes, with halo exchange.
//
// Lesson 5's plate, split by rows over the ranks of an MPI job:
//   mpirun -np 2 ./17_heat_halo        (or -np 4, or alone: one rank)
// dyn::distributed::init starts MPI; a 1-D dyn::Mesh names the ranks' axis
// "x"; dyn::shard_map runs the step on each rank's block of rows. A step
// needs one row above and one below the block: dyn::ppermute sends each
// rank's last row down and its first row up (the halo), every rank at once.
// Under dyn::jit the whole time loop is one kernel per rank; each ppermute
// in it is a call into MPI between the kernel's loop nests. At the end the
// blocks are gathered (all_gather) and compared with one process's answer.
// (At this size a step is ~0.1 ms of work against two exchanges, so two
// ranks are no faster than one; benchmarks/bench_distributed_heat.cpp times
// a 4096 x 4096 plate, docs/benchmarks.md.)
#include <dynstage/dynstage.hpp>

#include <cstdio>
#include <vector>

#include "examples_common.hpp"

namespace {

constexpr double kAlpha = 0.2;  // explicit Euler is stable below 0.25

// One process's plate: the hot square in the middle, borders held at 0.
dyn::Array<double> initial(std::int64_t n) {
  const std::int64_t border = n / 2 - n / 16;
  return dyn::pad(dyn::full<double>({n / 8, n / 8}, 100.0), {{border, border, 0}, {border, border, 0}}, 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  dyn::distributed::init(argc, argv);
  const int rank = dyn::distributed::rank(), ranks = dyn::distributed::size();
  const std::int64_t n = 256, steps = 100, b = n / ranks;  // (n divisible by 1, 2, 4, 8)
  dyn::Mesh mesh({"x"}, {ranks});

  // Rank r sends its last row to r + 1 and its first row to r - 1.
  std::vector<std::pair<std::int64_t, std::int64_t>> down, up;
  for (std::int64_t r = 0; r + 1 < ranks; ++r) {
    down.push_back({r, r + 1});
    up.push_back({r + 1, r});
  }
  // keep: 1 on rows that evolve, 0 on the plate's first and last rows.
  auto simulate = [&](auto u0, auto keep) {
    return dyn::for_loop(0, steps, 1)([&](auto, auto u) {
      auto rows = u.shape(0), cols = u.shape(1);
      auto above = dyn::ppermute(dyn::slice(u, {rows - 1, 0}, {rows, cols}), "x", down);  // zeros on rank 0
      auto below = dyn::ppermute(dyn::slice(u, {0, 0}, {1, cols}), "x", up);            // zeros on the last rank
      auto ext = dyn::concatenate({above, u, below}, 0);                                // rows + 2 rows
      auto centre = dyn::slice(ext, {1, 1}, {rows + 1, cols - 1});
      auto lap = dyn::slice(ext, {0, 1}, {rows, cols - 1}) + dyn::slice(ext, {2, 1}, {rows + 2, cols - 1}) +
                 dyn::slice(ext, {1, 0}, {rows + 1, cols - 2}) + dyn::slice(ext, {1, 2}, {rows + 1, cols}) -
                 4.0 * centre;
      return dyn::dynamic_update_slice(u, (centre + kAlpha * lap) * keep, {0, 1});
    })(u0);
  };
  auto step_all = dyn::jit(dyn::shard_map(simulate, mesh, {dyn::P("x"), dyn::P("x")}, dyn::P("x")));

  // This rank's rows of the plate and of the mask.
  const dyn::Array<double> whole = initial(n);
  const dyn::Array<double> mine = dyn::slice(whole, {rank * b, 0}, {(rank + 1) * b, n});
  dyn::Array<double> keep({b, 1});
  for (std::int64_t i = 0; i < b; ++i) keep.mutable_data()[i] = (rank * b + i == 0 || rank * b + i == n - 1) ? 0.0 : 1.0;

  dyn::Array<double> u;
  const double ms = lesson::median_ms(3, [&] { u = step_all(mine, keep); });
  auto gather = dyn::shard_map([](auto x) { return dyn::all_gather(x, "x", 0, true); }, mesh, {dyn::P("x")}, dyn::P());
  const dyn::Array<double> all = gather(u);

  // One process, the same steps on the whole plate.
  dyn::Array<double> keep1({n, 1});
  for (std::int64_t i = 0; i < n; ++i) keep1.mutable_data()[i] = (i == 0 || i == n - 1) ? 0.0 : 1.0;
  bool same = true;
  if (rank == 0) {
    const dyn::Array<double> ref = dyn::eager([&](auto u0, auto k) {
      // The single-process step: no neighbours (zeros above and below).
      return dyn::for_loop(0, steps, 1)([&](auto, auto v) {
        auto rows = v.shape(0), cols = v.shape(1);
        auto zero = dyn::zeros<double>({1, cols});
        auto ext = dyn::concatenate({zero, v, zero}, 0);
        auto centre = dyn::slice(ext, {1, 1}, {rows + 1, cols - 1});
        auto lap = dyn::slice(ext, {0, 1}, {rows, cols - 1}) + dyn::slice(ext, {2, 1}, {rows + 2, cols - 1}) +
                   dyn::slice(ext, {1, 0}, {rows + 1, cols - 2}) + dyn::slice(ext, {1, 2}, {rows + 1, cols}) -
                   4.0 * centre;
        return dyn::dynamic_update_slice(v, (centre + kAlpha * lap) * k, {0, 1});
      })(u0);
    })(whole, keep1);
    same = dyn::allclose(all, ref, 1e-12);
    std::printf("%d rank(s), %lld x %lld plate, %lld steps: centre %.4f, total heat %.1f; %.2f ms per run\n", ranks,
                static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(steps), all(n / 2, n / 2),
                dyn::sum(all)(), ms);
    std::printf("distributed equals one process: %s\n", same ? "yes" : "NO");
  }
  dyn::distributed::finalize();
  return same ? 0 : 1;
}
