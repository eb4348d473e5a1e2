// Lesson 18: data-parallel training: each rank a shard of the batch, psum
// of the gradients.
//
// Lesson 14's MLP fits y = sin(3x), now with the 256 samples split over the
// ranks of an MPI job (`mpirun -np 2 ./18_data_parallel_mlp`, or alone).
// Every rank holds the same parameters and its own samples; a step computes
// the gradient of the loss on its shard (dyn::value_and_grad), then
// dyn::psum adds the ranks' gradients (and losses) so that every rank
// applies the same update: the full batch's gradient descent, with each
// rank doing 1/N of the work. The whole step is one jitted kernel per rank,
// the psums calls into MPI inside it. At the end rank 0 compares with the
// same training done by one process on the whole batch.
#include <dynstage/dynstage.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "examples_common.hpp"

int main(int argc, char** argv) {
  dyn::distributed::init(argc, argv);
  const int rank = dyn::distributed::rank(), ranks = dyn::distributed::size();
  const std::int64_t n = 256, hidden = 32, shard = n / ranks;  // (n divisible by 1, 2, 4, 8)
  dyn::Mesh mesh({"x"}, {ranks});

  auto k = dyn::random::split(dyn::random::key(0), 2);  // the same key on every rank: the same start
  const dyn::Array<double> w1_0 = dyn::random::normal<double>(k.at(0).get(), {1, hidden});
  const dyn::Array<double> w2_0 = dyn::random::normal<double>(k.at(1).get(), {hidden, 1}) * (1.0 / std::sqrt(32.0));
  const dyn::Array<double> x_all = dyn::reshape(dyn::linspace<double>(-1.0, 1.0, n), {n, 1});
  const dyn::Array<double> y_all = dyn::sin(x_all * 3.0);
  // This rank's samples: rows [rank * shard, (rank + 1) * shard).
  const dyn::Array<double> x = dyn::slice(x_all, {rank * shard, 0}, {(rank + 1) * shard, 1});
  const dyn::Array<double> y = dyn::slice(y_all, {rank * shard, 0}, {(rank + 1) * shard, 1});

  const double lr = 0.1;
  auto loss = [](auto w1, auto b1, auto w2, auto b2, auto xs, auto ys) {
    auto pred = dyn::matmul(dyn::tanh(dyn::matmul(xs, w1) + b1), w2) + b2;
    return dyn::mean(dyn::square(pred - ys));
  };
  // One step on one rank's shard: local gradients, their mean over the ranks.
  auto step = [&](auto w1, auto b1, auto w2, auto b2, auto xs, auto ys) {
    auto [l, g] = dyn::value_and_grad(loss, dyn::argnums<0, 1, 2, 3>{})(w1, b1, w2, b2, xs, ys);
    const double inv = 1.0 / dyn::distributed::size();
    return std::tuple{dyn::psum(l, "x") * inv,
                      w1 - lr * inv * dyn::psum(std::get<0>(g), "x"), b1 - lr * inv * dyn::psum(std::get<1>(g), "x"),
                      w2 - lr * inv * dyn::psum(std::get<2>(g), "x"), b2 - lr * inv * dyn::psum(std::get<3>(g), "x")};
  };
  auto par_step = dyn::jit(dyn::shard_map(step, mesh, {dyn::P(), dyn::P(), dyn::P(), dyn::P(), dyn::P("x"), dyn::P("x")},
                                          {dyn::P(), dyn::P(), dyn::P(), dyn::P(), dyn::P()}));

  dyn::Array<double> w1 = w1_0, b1 = dyn::zeros<double>({hidden}), w2 = w2_0, b2 = dyn::zeros<double>({1});
  double first = 0, last = 0;
  const int steps = 1000;
  const double ms = lesson::median_ms(1, [&] {
    for (int it = 0; it < steps; ++it) {
      auto [l, a, b, c, d] = par_step(w1, b1, w2, b2, x, y);
      w1 = a, b1 = b, w2 = c, b2 = d;
      if (it == 0) first = l();
      last = l();
      if (rank == 0 && (it + 1) % 250 == 0) std::printf("step %4d: loss %.6f\n", it + 1, last);
    }
  });

  bool same = true;
  if (rank == 0) {
    // One process, the whole batch.
    auto full_step = dyn::jit([&](auto w1_, auto b1_, auto w2_, auto b2_) {
      auto [l, g] = dyn::value_and_grad(loss, dyn::argnums<0, 1, 2, 3>{})(w1_, b1_, w2_, b2_, x_all, y_all);
      return std::tuple{l, w1_ - lr * std::get<0>(g), b1_ - lr * std::get<1>(g), w2_ - lr * std::get<2>(g),
                        b2_ - lr * std::get<3>(g)};
    });
    dyn::Array<double> v1 = w1_0, c1 = dyn::zeros<double>({hidden}), v2 = w2_0, c2 = dyn::zeros<double>({1});
    for (int it = 0; it < steps; ++it) {
      auto [l, a, b, c, d] = full_step(v1, c1, v2, c2);
      v1 = a, c1 = b, v2 = c, c2 = d;
    }
    // (Not bitwise: the ranks' sums of gradients are added in another order
    // than one sum over the whole batch, and 1000 steps carry the rounding on.)
    const double diff = std::max({dyn::max(dyn::abs(w1 - v1))(), dyn::max(dyn::abs(w2 - v2))(),
                                  dyn::max(dyn::abs(b1 - c1))(), dyn::max(dyn::abs(b2 - c2))()});
    same = diff < 1e-8;
    std::printf("%d rank(s), %lld samples each: loss %.6f -> %.6f in %.0f ms\n", ranks, static_cast<long long>(shard),
                first, last, ms);
    std::printf("the parameters equal one process's full-batch training: %s (max difference %.1e)\n",
                same ? "yes" : "NO", diff);
  }
  dyn::distributed::finalize();
  return same && last < 0.1 * first ? 0 : 1;
}
