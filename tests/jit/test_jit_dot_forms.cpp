// The transposed forms of dot_general (llvm/canonicalize.hpp, llvm/lower_dot.hpp):
//   nn  x y      contracting ([1], [0])
//   nt  x y^T    contracting ([1], [1]): the rhs stays (N, K) as stored
//   tn  x^T y    contracting ([0], [0]): the lhs stays (K, M) as stored
//   tt  x^T y^T  contracting ([0], [1])
// Contract: the canonical rewrite keeps an operand stored as (batch,
// contracting, free) / (batch, free, contracting) without a transpose
// equation; every form agrees with eager at sizes on either side of the
// GEMM's blocks (MR, NR, KC = 128, MC, NC ~ 1024; the i-k-j and N == 1
// nests below the GEMM's threshold), for static and symbolic sizes; a
// transposed form gives the same bits as the plain product of the
// transposed operands (the GEMM packs the same panels), and the same bits
// for every thread count (API.md section 15).
#include <dynstage/dynstage.hpp>
#include <dynstage/llvm/canonicalize.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

template <class T>
Array<T> wavy(i64 rows, i64 cols, double phase) {
  std::vector<T> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<T>(std::sin(0.37 * static_cast<double>(k) + phase));
  return Array<T>({rows, cols}, v);
}

template <class T>
bool bitwise_equal(const Array<T>& a, const Array<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

// |got - want| <= tol * K * (1 + |want|) elementwise (K terms of magnitude <= 1).
template <class T>
bool near_k(const Array<T>& got, const Array<T>& want, i64 K, double tol) {
  if (got.shape() != want.shape()) return false;
  for (i64 i = 0; i < want.size(); ++i)
    if (!(std::abs(static_cast<double>(got.data()[i]) - static_cast<double>(want.data()[i])) <=
          tol * static_cast<double>(K) * (1 + std::abs(static_cast<double>(want.data()[i])))))
      return false;
  return true;
}

auto nn = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {0}}); };
auto nt = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {1}}); };
auto tn = [](auto a, auto b) { return dyn::dot_general(a, b, {{0}, {0}}); };
auto tt = [](auto a, auto b) { return dyn::dot_general(a, b, {{0}, {1}}); };
// The same products with the transposes written out (materialised, then the plain GEMM).
auto nt_plain = [](auto a, auto b) { return dyn::matmul(a, dyn::transpose(b, {1, 0})); };
auto tn_plain = [](auto a, auto b) { return dyn::matmul(dyn::transpose(a, {1, 0}), b); };
auto tt_plain = [](auto a, auto b) { return dyn::matmul(dyn::transpose(a, {1, 0}), dyn::transpose(b, {1, 0})); };

struct Size {
  i64 m, k, n;
};
// Awkward sizes: 1, 7, 33, 65, past MR/NR multiples, past KC = 128 (several
// depth blocks), past MC (several row blocks), past NC (two column panels,
// N = 1030 with few rows), N == 1 (matrix-vector) and tiny (i-k-j).
const std::vector<Size> kSizes = {{1, 1, 1},    {7, 7, 7},     {33, 65, 7},  {65, 33, 1},   {1, 65, 33},
                                  {33, 33, 33}, {65, 130, 67}, {67, 45, 83}, {200, 129, 17}, {5, 7, 1030},
                                  {7, 300, 9},  {130, 1, 70}};

template <class T, class F, class P>
void check_form(const char* name, const F& f, const P& plain, bool lhs_t, bool rhs_t, double tol) {
  const auto jf = dyn::jit(f);
  const auto jp = dyn::jit(plain);
  for (const Size& s : kSizes) {
    CAPTURE(name);
    CAPTURE(s.m);
    CAPTURE(s.k);
    CAPTURE(s.n);
    const Array<T> a = lhs_t ? wavy<T>(s.k, s.m, 0.3) : wavy<T>(s.m, s.k, 0.3);
    const Array<T> b = rhs_t ? wavy<T>(s.n, s.k, 1.7) : wavy<T>(s.k, s.n, 1.7);
    const Array<T> got = jf(a, b);
    CHECK(got.shape() == std::vector<i64>{s.m, s.n});
    CHECK(near_k(got, dyn::eager(f)(a, b), s.k, tol));
    // Same panels, same micro-kernel: the bits of the plain product of the
    // materialised transposes.
    CHECK(bitwise_equal(got, jp(a, b)));
  }
}

}  // namespace

TEST_CASE("dot forms: canonicalize_dots keeps a transposed operand as stored") {
  using namespace dyn;
  using namespace dyn::detail;
  auto prims_of = [](const Jaxpr& j) {
    std::string s;
    for (const Eqn& e : j.eqns) s += std::string(prim_name(e.prim)) + " ";
    return s;
  };
  auto dot_of = [](const Jaxpr& j) {
    for (const Eqn& e : j.eqns)
      if (e.prim == Prim::dot_general) return std::get<DotGeneralParams>(e.params);
    FAIL("no dot_general");
    return DotGeneralParams{};
  };
  const Array<double> x({4, 3}), y({4, 5}), w({5, 3});
  SUBCASE("nt: x w^T, the rhs read as (1, N, K)") {
    const Jaxpr j = canonicalize_dots(*dyn::make_jaxpr(nt)(x, w).jaxpr);
    CHECK(prims_of(j) == "reshape reshape dot_general ");  // the dot keeps its (M, N) output type
    CHECK(is_canonical_dot(dot_of(j)));
    CHECK(dot_of(j).lhs_contracting == std::vector<i64>{2});
    CHECK(dot_of(j).rhs_contracting == std::vector<i64>{2});
  }
  SUBCASE("tn: x^T y, the lhs read as (1, K, M)") {
    const Jaxpr j = canonicalize_dots(*dyn::make_jaxpr(tn)(x, y).jaxpr);
    CHECK(prims_of(j) == "reshape reshape dot_general ");  // the dot keeps its (M, N) output type
    CHECK(dot_of(j).lhs_contracting == std::vector<i64>{1});
    CHECK(dot_of(j).rhs_contracting == std::vector<i64>{1});
  }
  SUBCASE("batched tn: (b, k, m) x (b, k, n), no reshape either") {
    const Array<double> u({2, 4, 3}), v({2, 4, 5});
    auto f = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {1}}, {{0}, {0}}); };
    const Jaxpr j = canonicalize_dots(*dyn::make_jaxpr(f)(u, v).jaxpr);
    CHECK(prims_of(j) == "dot_general ");
    CHECK(dot_of(j).lhs_contracting == std::vector<i64>{1});
  }
  SUBCASE("an order neither plain nor transposed still gets its transpose") {
    const Array<double> u({3, 2, 4}), v({2, 4, 5});
    auto f = [](auto a, auto b) { return dyn::dot_general(a, b, {{2}, {1}}, {{1}, {0}}); };
    const Jaxpr j = canonicalize_dots(*dyn::make_jaxpr(f)(u, v).jaxpr);
    CHECK(prims_of(j) == "transpose dot_general ");
    CHECK(dot_of(j).lhs_contracting == std::vector<i64>{2});
  }
}

TEST_CASE("dot forms: nt, tn, tt against eager and against the plain product, f64 and f32") {
  check_form<double>("nt", nt, nt_plain, false, true, 4e-16);
  check_form<double>("tn", tn, tn_plain, true, false, 4e-16);
  check_form<double>("tt", tt, tt_plain, true, true, 4e-16);
  check_form<float>("nt f32", nt, nt_plain, false, true, 2.4e-7);
  check_form<float>("tn f32", tn, tn_plain, true, false, 2.4e-7);
}

TEST_CASE("dot forms: integers (i-k-j) are exact in every form") {
  auto ints = [](i64 r, i64 c, int seed) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(r * c));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<std::int32_t>((k * 7 + static_cast<std::size_t>(seed)) % 11) - 5;
    return Array<std::int32_t>({r, c}, v);
  };
  const Array<std::int32_t> a = ints(33, 40, 1), b = ints(50, 40, 2), c = ints(33, 50, 3);
  CHECK(dyn::array_equal(dyn::jit(nt)(a, b), dyn::eager(nt)(a, b)));
  CHECK(dyn::array_equal(dyn::jit(tn)(a, c), dyn::eager(tn)(a, c)));
  CHECK(dyn::array_equal(dyn::jit(tt)(a, ints(50, 33, 4)), dyn::eager(tt)(a, ints(50, 33, 4))));
}

TEST_CASE("dot forms: symbolic sizes, one kernel for every size") {
  const auto jnt = dyn::jit(nt, dyn::polymorphic_shapes{"(m, k)", "(n, k)"});
  const auto jtn = dyn::jit(tn, dyn::polymorphic_shapes{"(k, m)", "(k, n)"});
  const auto jtt = dyn::jit(tt, dyn::polymorphic_shapes{"(k, m)", "(n, k)"});
  for (const Size& s : kSizes) {
    CAPTURE(s.m);
    CAPTURE(s.k);
    CAPTURE(s.n);
    const Array<double> xa = wavy<double>(s.m, s.k, 0.2), xt = wavy<double>(s.k, s.m, 0.4);
    const Array<double> yn = wavy<double>(s.n, s.k, 0.6), yk = wavy<double>(s.k, s.n, 0.8);
    CHECK(near_k(jnt(xa, yn), dyn::eager(nt)(xa, yn), s.k, 4e-16));
    CHECK(near_k(jtn(xt, yk), dyn::eager(tn)(xt, yk), s.k, 4e-16));
    CHECK(near_k(jtt(xt, yn), dyn::eager(tt)(xt, yn), s.k, 4e-16));
  }
  // A symbolic batch: (b, k, m) x (b, n, k), both operands transposed.
  auto bt = [](auto a, auto b) { return dyn::dot_general(a, b, {{1}, {2}}, {{0}, {0}}); };
  const auto jbt = dyn::jit(bt, dyn::polymorphic_shapes{"(b, k, m)", "(b, n, k)"});
  for (i64 nb : {1, 3}) {
    std::vector<double> u(static_cast<std::size_t>(nb * 70 * 41)), v(static_cast<std::size_t>(nb * 35 * 70));
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::sin(0.3 * static_cast<double>(i));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::cos(0.7 * static_cast<double>(i));
    const Array<double> a({nb, 70, 41}, u), b({nb, 35, 70}, v);
    CHECK(near_k(jbt(a, b), dyn::eager(bt)(a, b), 70, 4e-16));
  }
}

TEST_CASE("dot forms: the same bits for every thread count") {
  const int saved = dyn::num_threads();
  // 300 output rows: several MC-row blocks (MC <= 128) split into tasks.
  const Array<double> x = wavy<double>(300, 200, 0.5), w = wavy<double>(170, 200, 0.9), h = wavy<double>(200, 300, 1.1),
                      y = wavy<double>(200, 170, 1.3);
  const auto jnt = dyn::jit(nt);
  const auto jtn = dyn::jit(tn);
  dyn::set_num_threads(1);
  const Array<double> rnt = jnt(x, w), rtn = jtn(h, y);
  for (int n : {2, 3, 4}) {
    dyn::set_num_threads(n);
    CHECK(bitwise_equal(jnt(x, w), rnt));
    CHECK(bitwise_equal(jtn(h, y), rtn));
  }
  dyn::set_num_threads(saved);
  CHECK(near_k(rnt, dyn::eager(nt)(x, w), 200, 4e-16));
  CHECK(near_k(rtn, dyn::eager(tn)(h, y), 200, 4e-16));
}
