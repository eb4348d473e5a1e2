// Lesson 8: softmax and a small multilayer perceptron.
//
// A two-layer MLP's forward pass with a numerically stable softmax, written
// with NumPy's operations: matmul, broadcasting bias, maximum, and reductions
// that keep their axis (dyn::keepdims). The weights are closed-over
// constants of the traced function: the kernel gets them as pointers.
#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

#include "examples_common.hpp"

namespace {

auto softmax(const auto& logits) {
  auto e = dyn::exp(logits - dyn::max(logits, {1}, dyn::keepdims));
  return e / dyn::sum(e, {1}, dyn::keepdims);
}

}  // namespace

int main() {
  const std::int64_t d_in = 64, d_hidden = 256, d_out = 10, batch = 1024;
  auto k = dyn::random::split(dyn::random::key(0), 3);
  auto key = [&](std::int64_t i) { return k.at(i).get(); };
  const dyn::Array<float> w1 = dyn::random::normal<float>(key(0), {d_in, d_hidden}) * (1.0f / std::sqrt(64.0f));
  const dyn::Array<float> b1 = dyn::zeros<float>({d_hidden});
  const dyn::Array<float> w2 = dyn::random::normal<float>(key(1), {d_hidden, d_out}) * (1.0f / 16.0f);
  const dyn::Array<float> b2 = dyn::full<float>({d_out}, 0.1f);
  const dyn::Array<float> x = dyn::random::uniform<float>(key(2), {batch, d_in}, -1.0f, 1.0f);

  auto mlp = [&](auto in) {
    auto h = dyn::maximum(dyn::matmul(in, w1) + b1, 0.0f);  // relu
    return softmax(dyn::matmul(h, w2) + b2);
  };
  auto jmlp = dyn::jit(mlp, dyn::polymorphic_shapes{"(batch, 64)"});
  std::cout << dyn::make_jaxpr(mlp)(dyn::zeros<float>({2, d_in})) << "\n";

  dyn::Array<float> pe, pj;
  const double eager_ms = lesson::median_ms(3, [&] { pe = dyn::eager(mlp)(x); });
  const double jit_ms = lesson::median_ms(7, [&] { pj = jmlp(x); });
  const dyn::Array<float> row_sums = dyn::sum(pj, {1});
  std::printf("batch %lld: p[0] = [%.4f %.4f %.4f ...], rows sum to 1 within %.1e\n", static_cast<long long>(batch),
              pj(0, 0), pj(0, 1), pj(0, 2), dyn::max(dyn::abs(row_sums - 1.0f))());
  std::printf("eager %.2f ms, jit %.2f ms: %.1fx\n", eager_ms, jit_ms, eager_ms / jit_ms);
  return dyn::allclose(pe, pj, 1e-5) && dyn::max(dyn::abs(row_sums - 1.0f))() < 1e-5f ? 0 : 1;
}
