// Lesson 15: batching with dyn::vmap.
//
// Write a function for one example; dyn::vmap runs it over a batch without
// a loop: every primitive has a batching rule that adds a batch axis to the
// program (docs/transformations.md, "Batching"). in_axes says which
// arguments carry the batch (dyn::none: shared by every lane), and vmap
// composes with grad (per-example gradients) and with jit. A while_loop
// whose condition differs per lane runs until every lane is done.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

int main() {
  // One example: a 3-vector x, shared weights w.
  auto loss = [](auto w, auto x) { return dyn::square(dyn::sum(dyn::tanh(x * w)) - 1.0); };
  const dyn::Array<double> w({3}, {0.5, -1.0, 2.0});
  const dyn::Array<double> xs({4, 3}, {1.0, 2.0, 3.0, -1.0, 0.5, 0.25, 0.0, 1.0, 0.0, 2.0, 2.0, 2.0});

  // Per-example losses and gradients: vmap over x (axis 0), w shared.
  auto losses = dyn::vmap(loss, {dyn::none, 0});
  auto per_example_grads = dyn::jit(dyn::vmap(dyn::grad(loss), {dyn::none, 0}));
  std::cout << "losses    " << losses(w, xs) << "\n";
  const dyn::Array<double> g = per_example_grads(w, xs);
  std::cout << "gradients\n" << g << "\n";
  std::cout << dyn::make_jaxpr(dyn::vmap(loss, {dyn::none, 0}))(w, xs) << "\n";

  // The same, one example at a time, for comparison.
  bool same = true;
  for (std::int64_t b = 0; b < 4; ++b) {
    const dyn::Array<double> gb = dyn::grad(loss)(w, xs.at(b).get());
    for (std::int64_t i = 0; i < 3; ++i) same = same && std::abs(gb(i) - g(b, i)) < 1e-14;
  }
  std::printf("vmap(grad) equals grad per example: %s\n", same ? "yes" : "NO");

  // A loop per lane: halve each value until it is below 1 (lanes need 0 to 4 trips).
  auto halvings = [](auto v) {
    auto [r, n] = dyn::while_loop([](auto s, auto) { return s >= 1.0; })(
        [](auto s, auto k) { return std::tuple{s * 0.5, k + 1}; })(v, std::int64_t{0});
    return n;
  };
  const dyn::Array<double> vs({4}, {0.5, 3.0, 12.0, 1.0});
  const auto trips = dyn::jit(dyn::vmap(halvings))(vs);
  std::cout << "halvings  " << trips << "\n";
  const bool trips_ok = trips(0) == 0 && trips(1) == 2 && trips(2) == 4 && trips(3) == 1;
  return same && trips_ok ? 0 : 1;
}
