// Issue 25, item 1 ("Operands fused into contractions"), the blocked GEMM:
// an elementwise producer of an operand of a product large enough for the
// blocked routine (`alpha * A`, an astype, `A + C`, a transpose or strided
// slice of one, either operand) is computed while the routine packs its
// panels, not materialised first; the elementwise consumer of the result
// (`relu(x @ W + b)`) runs in the routine's epilogue, block by block, not as
// a separate pass (llvm/fusion_gemm.hpp, llvm/lower_gemm_fusion.hpp).
// Values equal eager's within the products' rounding (docs/backend.md);
// what is fused is read from the planner's test hook
// (detail::gemm_fusions) and the buffers it gives, asserted exactly; the
// run-time copies from the copy counter (detail::copied_bytes). No timing.
#include <dynstage/core.hpp>
#include <dynstage/dynstage.hpp>
#include <dynstage/llvm/backend.hpp>
#include <dynstage/llvm/canonicalize.hpp>
#include <dynstage/llvm/fusion.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

template <class T = double>
Array<T> wavy(std::vector<i64> shape, double phase) {
  Array<T> a(shape);
  T* p = a.mutable_data();
  for (i64 i = 0; i < a.size(); ++i) p[i] = static_cast<T>(std::sin(0.37 * static_cast<double>(i) + phase));
  return a;
}

struct Plan {
  std::vector<std::string> fusions;  // gemm_fusions: "#v packed into A", "#v in the epilogue", ...
  std::vector<std::string> buffers;  // why each non-input value has a buffer
};
Plan plan_at(const dyn::ClosedJaxpr& cj) {
  const dyn::Jaxpr j = dyn::detail::canonicalize_dots(*cj.jaxpr);
  const dyn::detail::FusionPlan plan = dyn::detail::plan_fusion(j);
  Plan r;
  r.fusions = dyn::detail::gemm_fusions(j, plan);
  for (std::size_t v = 0; v < plan.materialised.size(); ++v)
    if (plan.materialised[v] && plan.def[v] >= 0) r.buffers.push_back(plan.why[v]);
  return r;
}
template <class F, class... A>
Plan plan_of(const F& f, const A&... args) {
  return plan_at(dyn::make_jaxpr(f)(args...));
}
// Just the reasons, without the variable numbers.
std::vector<std::string> kinds(const std::vector<std::string>& fusions) {
  std::vector<std::string> r;
  for (const std::string& s : fusions) r.push_back(s.substr(s.find(' ') + 1));
  return r;
}
using Strs = std::vector<std::string>;

template <class F, class... A>
i64 bytes_copied(const F& f) {
  dyn::detail::count_copies().store(true);
  dyn::detail::copied_bytes().store(0);
  f();
  dyn::detail::count_copies().store(false);
  return dyn::detail::copied_bytes().load();
}

struct ThreadCount {
  int saved = dyn::num_threads();
  ~ThreadCount() { dyn::set_num_threads(saved); }
};

// jit(f) within rtol of eager(f), and the same bits with 1 and 2 threads.
template <class F, class... A>
void check_values(const F& f, double rtol, const A&... args) {
  ThreadCount keep;
  const auto want = dyn::eager(f)(args...);
  dyn::set_num_threads(1);
  const auto one = dyn::jit(f)(args...);
  dyn::set_num_threads(2);
  const auto two = dyn::jit(f)(args...);
  CHECK(dyn::allclose(one, want, rtol, rtol));
  CHECK(dyn::array_equal(one, two));
}

}  // namespace

TEST_SUITE("jit") {

// Sizes with edges everywhere: M, N not multiples of the tiles, K over two
// KC blocks (f64: 128), M over two row blocks.
TEST_CASE("gemm fusion: matmul(alpha * A, B) packs the scaled A; no temporary") {
  const auto A = wavy({150, 300}, 0.1), B = wavy({300, 70}, 0.2);
  auto f = [](auto A, auto B) { return dyn::matmul(2.5 * A, B); };
  const Plan p = plan_of(f, A, B);
  CHECK(kinds(p.fusions) == Strs{"packed into A"});
  CHECK(p.buffers == Strs{"output"});
  check_values(f, 1e-12, A, B);
  // The plain product's bits: the packed values are alpha * A's.
  const auto scaled = dyn::eager([](auto A) { return 2.5 * A; })(A);
  CHECK(dyn::array_equal(dyn::jit(f)(A, B), dyn::jit([](auto A, auto B) { return dyn::matmul(A, B); })(scaled, B)));
}

TEST_CASE("gemm fusion: astype, sums, transposes and strided slices of either operand are packed") {
  const auto A = wavy({96, 200}, 0.3), C = wavy({96, 200}, 0.4), B = wavy({200, 80}, 0.5), Bt = wavy({80, 200}, 0.6);
  const auto Af = wavy<float>({96, 200}, 0.7);
  SUBCASE("astype<double>(A f32)") {
    auto f = [](auto A, auto B) { return dyn::matmul(dyn::astype<double>(A), B); };
    CHECK(kinds(plan_of(f, Af, B).fusions) == Strs{"packed into A"});
    CHECK(plan_of(f, Af, B).buffers == Strs{"output"});
    check_values(f, 1e-12, Af, B);
  }
  SUBCASE("A + C") {
    auto f = [](auto A, auto C, auto B) { return dyn::matmul(A + C, B); };
    CHECK(kinds(plan_of(f, A, C, B).fusions) == Strs{"packed into A"});
    CHECK(plan_of(f, A, C, B).buffers == Strs{"output"});
    check_values(f, 1e-12, A, C, B);
  }
  SUBCASE("a fused B: A @ (B * 0.5 - 1)") {
    auto f = [](auto A, auto B) { return dyn::matmul(A, B * 0.5 - 1.0); };
    CHECK(kinds(plan_of(f, A, B).fusions) == Strs{"packed into B"});
    CHECK(plan_of(f, A, B).buffers == Strs{"output"});
    check_values(f, 1e-12, A, B);
  }
  SUBCASE("both, one transposed: (A - C) @ transpose(2 * Bt)") {
    auto f = [](auto A, auto C, auto Bt) { return dyn::matmul(A - C, dyn::transpose(2.0 * Bt, {1, 0})); };
    CHECK(kinds(plan_of(f, A, C, Bt).fusions) == Strs{"packed into A", "packed into B"});
    CHECK(plan_of(f, A, C, Bt).buffers == Strs{"output"});
    check_values(f, 1e-12, A, C, Bt);
  }
  SUBCASE("transpose(alpha * A^T) and a strided column slice of B") {
    const auto At = wavy({200, 96}, 0.8), W = wavy({200, 170}, 0.9);
    auto f = [](auto At, auto W) {
      return dyn::matmul(dyn::transpose(At * 3.0, {1, 0}), dyn::slice(W, {0, 5}, {200, 165}, {1, 2}));
    };
    CHECK(kinds(plan_of(f, At, W).fusions) == Strs{"packed into A", "packed into B"});
    CHECK(plan_of(f, At, W).buffers == Strs{"output"});
    check_values(f, 1e-12, At, W);
  }
  SUBCASE("a batch whose B is one matrix broadcast over it: read through the broadcast, not copied per batch") {
    const auto xb = wavy({4, 40, 64}, 0.1), W = wavy({64, 50}, 0.2);
    auto f = [](auto xb, auto W) { return dyn::matmul(xb, dyn::broadcast_to(2.0 * W, {4, 64, 50})); };
    CHECK(kinds(plan_of(f, xb, W).fusions) == Strs{"packed into B"});
    CHECK(plan_of(f, xb, W).buffers == Strs{"output"});
    check_values(f, 1e-12, xb, W);
  }
  SUBCASE("an expensive operand is materialised once, as before") {
    auto f = [](auto A, auto B) { return dyn::matmul(dyn::exp(A), B); };
    CHECK(plan_of(f, A, B).fusions.empty());
    CHECK(plan_of(f, A, B).buffers == Strs{"dot_general operand", "output"});
    check_values(f, 1e-12, A, B);
  }
  SUBCASE("a small product keeps its operand buffers") {
    const auto a = wavy({10, 10}, 0.1), b = wavy({10, 10}, 0.2);
    auto f = [](auto A, auto B) { return dyn::matmul(2.0 * A, B); };
    CHECK(plan_of(f, a, b).fusions.empty());
    CHECK(plan_of(f, a, b).buffers == Strs{"dot_general operand", "output"});
    check_values(f, 1e-12, a, b);
  }
}

TEST_CASE("gemm fusion: relu(x @ W + b) runs in the GEMM's epilogue; no separate pass") {
  const auto x = wavy<float>({100, 160}, 0.1), W = wavy<float>({160, 90}, 0.2), bias = wavy<float>({90}, 0.3);
  auto f = [](auto x, auto W, auto b) {
    return dyn::maximum(dyn::matmul(x, W) + b, 0.0f);
  };
  const Plan p = plan_of(f, x, W, bias);
  CHECK(kinds(p.fusions) == Strs{"in the epilogue"});
  CHECK(p.buffers == Strs{"dot_general", "output"});
  // f32: the products' rounding (docs/backend.md).
  check_values(f, 1e-5, x, W, bias);
  SUBCASE("with a fused operand too: relu((s * x) @ W + b) * 2") {
    auto g = [](auto x, auto W, auto b) {
      return 2.0f * dyn::maximum(dyn::matmul(0.5f * x, W) + b, 0.0f);
    };
    CHECK(kinds(plan_of(g, x, W, bias).fusions) == Strs{"packed into A", "in the epilogue"});
    check_values(g, 1e-5, x, W, bias);
  }
  SUBCASE("a consumer that reads the product through a transpose is its own nest") {
    const auto Ws = wavy<float>({160, 100}, 0.4);
    auto g = [](auto x, auto W) { auto y = dyn::matmul(x, W); return y + dyn::transpose(y, {1, 0}); };
    CHECK(plan_of(g, x, Ws).fusions.empty());
    check_values(g, 1e-5, x, Ws);
  }
  SUBCASE("an epilogue root that is a temporary, and one beside the product as a result") {
    const auto Wsq = wavy<float>({160, 100}, 0.8);
    auto inplace = [](auto x, auto W) { auto y = dyn::tanh(dyn::matmul(x, W)); return y * dyn::transpose(y, {1, 0}); };
    CHECK(kinds(plan_of(inplace, x, Wsq).fusions) == Strs{"in the epilogue"});
    check_values(inplace, 1e-5, x, Wsq);
    auto both = [](auto x, auto W, auto b) { auto y = dyn::matmul(x, W); return std::tuple{y, dyn::maximum(y + b, 0.0f)}; };
    CHECK(kinds(plan_of(both, x, W, bias).fusions) == Strs{"in the epilogue"});
    ThreadCount keep;
    const auto [y1, r1] = dyn::jit(both)(x, W, bias);
    const auto [ye, re] = dyn::eager(both)(x, W, bias);
    CHECK(dyn::allclose(y1, ye, 1e-5, 1e-5));
    CHECK(dyn::allclose(r1, re, 1e-5, 1e-5));
  }
  SUBCASE("a batch: (B, M, N) with a bias per row of each matrix") {
    const auto xb = wavy<float>({3, 40, 64}, 0.5), Wb = wavy<float>({3, 64, 50}, 0.6), c = wavy<float>({3, 40, 1}, 0.7);
    auto g = [](auto x, auto W, auto c) { return dyn::tanh(dyn::matmul(x, W) - c); };
    CHECK(kinds(plan_of(g, xb, Wb, c).fusions) == Strs{"in the epilogue"});
    check_values(g, 1e-5, xb, Wb, c);
  }
}

TEST_CASE("gemm fusion: symbolic sizes, one kernel; packed when blocked, copied once otherwise") {
  auto f = [](auto A, auto B, auto b) {
    return dyn::maximum(dyn::matmul(2.0 * A, B) + b, 0.0);
  };
  const dyn::polymorphic_shapes ps{"(m, k)", "(k, n)", "(n,)"};
  CHECK(kinds(plan_at(dyn::make_jaxpr(f, ps)(wavy({4, 5}, 0), wavy({5, 6}, 0), wavy({6}, 0))).fusions) ==
        Strs{"packed into A", "in the epilogue"});
  auto jf = dyn::jit(f, ps);
  for (auto [m, k, n] : {std::tuple<i64, i64, i64>{130, 150, 60}, {5, 6, 7}, {64, 300, 33}}) {
    CAPTURE(m);
    const auto A = wavy({m, k}, 0.3), B = wavy({k, n}, 0.6), b = wavy({n}, 0.9);
    const auto want = dyn::eager(f)(A, B, b);
    Array<double> got;
    const i64 copied = bytes_copied([&] { got = jf(A, B, b); });
    CHECK(dyn::allclose(got, want, 1e-12, 1e-12));
    // Blocked sizes: nothing copied; the small product: 2 * A copied once.
    CHECK(copied == (m * n * k >= 32 * 32 * 32 ? 0 : m * k * 8));
  }
  CHECK(jf.stats().compiles == 1);
}

}  // TEST_SUITE
