// Issue 25, item 1 ("Operands fused into contractions"), the matrix-vector
// form: an elementwise producer of a matrix-vector product's matrix
// (`alpha * A`, an astype, a sum of two matrices: whatever reads its
// buffers at the matrix's own linear index) is evaluated where the product
// reads it (fusion.hpp, canonicalize.hpp's dot_fuses_lhs),
// not materialised as a temporary first. Results equal eager's within the
// dot products' rounding; the missing temporary is counted through the
// block pool's test hook (no timing).
#include <dynstage/core.hpp>
#include <dynstage/llvm/backend.hpp>
#include <dynstage/llvm/fusion.hpp>
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <utility>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::detail::block_pool_counts;

template <class T>
Array<T> wavy(std::vector<std::int64_t> shape, double phase) {
  Array<T> a(shape);
  T* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = static_cast<T>(std::sin(0.37 * static_cast<double>(i) + phase));
  return a;
}

// The number of materialised values (buffers) the planner gives `f` traced at `args`.
template <class F, class... A>
int materialised(const F& f, const A&... args) {
  auto cj = dyn::make_jaxpr(f)(args...);
  const dyn::Jaxpr j = dyn::detail::canonicalize_dots(*cj.jaxpr);
  const dyn::detail::FusionPlan plan = dyn::detail::plan_fusion(j);
  int n = 0;
  for (std::size_t v = 0; v < plan.materialised.size(); ++v) n += plan.materialised[v] ? 1 : 0;
  return n;
}

// f jitted against eager, then three more calls that take no block from the pool.
template <class F, class... A>
void check_fused(const F& f, double rtol, const A&... args) {
  const auto jf = dyn::jit(f);
  const auto want = dyn::eager(f)(args...);
  CHECK(dyn::allclose(jf(args...), want, rtol, 1e-12));
  const auto c0 = block_pool_counts();
  for (int call = 0; call < 3; ++call) CHECK(dyn::allclose(jf(args...), want, rtol, 1e-12));
  CHECK(block_pool_counts().taken == c0.taken);  // no temporary of the matrix's size (720 KB), nor any other
}

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("issue 25: matmul(alpha * A, x) reads A once: the scaling is fused into the matrix-vector product") {
  const auto A = wavy<double>({300, 300}, 0.1);
  const auto x = wavy<double>({300}, 0.5);
  auto scaled = [](auto A, auto x) { return dyn::matmul(1.5 * A, x); };
  auto plain = [](auto A, auto x) { return dyn::matmul(A, x); };
  // The same buffers as the plain product: no temporary for 1.5 * A.
  CHECK(materialised(scaled, A, x) == materialised(plain, A, x));
  check_fused(scaled, 1e-12, A, x);
}

TEST_CASE("issue 25: fused matrix operands of a matrix-vector product: astype, sums, a transpose, a batch") {
  const auto A = wavy<double>({300, 300}, 0.1), B = wavy<double>({300, 300}, 0.2);
  const auto Af = wavy<float>({300, 300}, 0.3);
  const auto x = wavy<double>({300}, 0.5);
  SUBCASE("astype") { check_fused([](auto A, auto x) { return dyn::matmul(dyn::astype<double>(A), x); }, 1e-12, Af, x); }
  SUBCASE("alpha A + beta B") {
    check_fused([](auto A, auto B, auto x) { return dyn::matmul(2.0 * A + 0.5 * B, x); }, 1e-12, A, B, x);
  }
  SUBCASE("a transpose of the whole matrix is folded into the product (issue 25, item 2): still fused") {
    // (A * 3)^T x reads A * 3 stored (K, M): the matrix-vector nest runs as
    // an axpy per stored row and evaluates A * 3 where it reads it.
    auto f = [](auto A, auto x) { return dyn::matmul(dyn::transpose(A * 3.0, {1, 0}), x); };
    CHECK(materialised(f, A, x) == materialised([](auto A, auto x) { return dyn::matmul(A, x); }, A, x));
    check_fused(f, 1e-12, A, x);
  }
  SUBCASE("a transpose inside the expression is materialised first: fused, the product would read A with a stride") {
    auto f = [](auto A, auto x) { return dyn::matmul(dyn::transpose(A, {1, 0}) * 3.0, x); };
    CHECK(materialised(f, A, x) == materialised([](auto A, auto x) { return dyn::matmul(A, x); }, A, x) + 1);
    CHECK(dyn::allclose(dyn::jit(f)(A, x), dyn::eager(f)(A, x), 1e-12, 1e-12));
  }
  SUBCASE("gesummv: alpha A x + beta B x") {
    check_fused([](auto A, auto B, auto x) { return dyn::matmul(1.5 * A, x) + dyn::matmul(1.2 * B, x); }, 1e-12,
                A, B, x);
  }
  SUBCASE("a batch of matrix-vector products (einsum)") {
    const auto T = wavy<double>({4, 60, 70}, 0.7);
    const auto v = wavy<double>({4, 70}, 0.9);
    check_fused([](auto T, auto v) { return dyn::einsum("bij,bj->bi", T - 1.0, v); }, 1e-12, T, v);
  }
  SUBCASE("runtime sizes (symbolic: >= 1): one kernel for every (m, k), still no temporary") {
    auto f = [](auto A, auto x) { return dyn::matmul(1.5 * A + 1.0, x); };
    const auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(m, k)", "(k,)"});
    for (auto [m, k] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {7, 300}, {300, 7}, {257, 129}}) {
      CAPTURE(m);
      CAPTURE(k);
      const auto Am = wavy<double>({m, k}, 0.4);
      const auto xk = wavy<double>({k}, 0.8);
      const auto want = dyn::eager(f)(Am, xk);
      CHECK(dyn::allclose(jf(Am, xk), want, 1e-12, 1e-12));
      const auto c0 = block_pool_counts();
      CHECK(dyn::allclose(jf(Am, xk), want, 1e-12, 1e-12));
      CHECK(block_pool_counts().taken == c0.taken);
    }
  }
  SUBCASE("empty static sizes: k = 0 gives zeros, m = 0 nothing") {
    auto f = [](auto A, auto x) { return dyn::matmul(1.5 * A, x); };
    for (auto [m, k] : {std::pair<std::int64_t, std::int64_t>{5, 0}, {0, 5}}) {
      const auto Am = wavy<double>({m, k}, 0.4);
      const auto xk = wavy<double>({k}, 0.8);
      CHECK(dyn::array_equal(dyn::jit(f)(Am, xk), dyn::eager(f)(Am, xk)));
    }
  }
  SUBCASE("a matrix operand that is also a result stays one buffer, read by the product") {
    auto f = [](auto A, auto x) {
      auto S = A * 2.0;
      return std::tuple{S, dyn::matmul(S, x)};
    };
    const auto jf = dyn::jit(f);
    const auto [s1, y1] = jf(A, x);
    const auto [s2, y2] = dyn::eager(f)(A, x);
    CHECK(dyn::array_equal(s1, s2));
    CHECK(dyn::allclose(y1, y2, 1e-12, 1e-12));
  }
}

}  // TEST_SUITE
