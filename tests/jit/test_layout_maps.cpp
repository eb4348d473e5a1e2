// Issue 25, item 2 ("Layout changes as index maps"): reshape, transpose,
// broadcast_in_dim, slice and rev, and chains of them, are read through
// their composed index maps by every consumer that can (elementwise nests,
// reductions, cumulative ops, several consumers at once, and a product that
// reads a transposed operand where it is stored or a reshape or contiguous
// slice of a buffer); a copy happens only where a dense layout is needed
// (a kernel output, a product operand in no form the product reads, a
// loop's state), once. The copies are counted by the planner's test hook
// (detail::layout_copies, llvm/fusion.hpp), never timed; the values equal
// eager's (bit for bit without products, within the products' rounding
// with them), for static and symbolic sizes (one kernel serving two sizes).
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

Array<double> wavy(std::vector<i64> shape, double phase) {
  Array<double> a(shape);
  double* p = a.mutable_data();
  for (i64 i = 0; i < a.size(); ++i) p[i] = std::sin(0.37 * static_cast<double>(i) + phase);
  return a;
}

// The layout copies of a traced function's kernel (the planner's test
// hook), with the reasons ("output", "dot_general operand", ...).
std::vector<std::string> copies_at(const dyn::ClosedJaxpr& cj) {
  const dyn::Jaxpr j = dyn::detail::canonicalize_dots(*cj.jaxpr);
  const dyn::detail::FusionPlan plan = dyn::detail::plan_fusion(j);
  std::vector<std::string> r;
  for (const auto& c : dyn::detail::layout_copies(j, plan)) r.push_back(c.why);
  return r;
}
template <class F, class... A>
std::vector<std::string> copies(const F& f, const A&... args) {
  return copies_at(dyn::make_jaxpr(f)(args...));
}
template <class F, class... A>
std::vector<std::string> copies_poly(const F& f, const dyn::polymorphic_shapes& ps, const A&... args) {
  return copies_at(dyn::make_jaxpr(f, ps)(args...));
}
using Why = std::vector<std::string>;

// jit(f) equals eager(f): exactly without products, else within rtol.
template <class F, class... A>
void same_as_eager(const F& f, double rtol, const A&... args) {
  const auto got = dyn::jit(f)(args...);
  const auto want = dyn::eager(f)(args...);
  if (rtol == 0) CHECK(dyn::array_equal(got, want));
  else CHECK(dyn::allclose(got, want, rtol, 1e-12));
}

// The fusion plan of a traced function's kernel (plan_str: one line per
// equation, "#v = prim: fused" or "buffer (why)").
template <class F, class... A>
std::string plan_of(const F& f, const A&... args) {
  const dyn::Jaxpr j = dyn::detail::canonicalize_dots(*dyn::make_jaxpr(f)(args...).jaxpr);
  return dyn::detail::plan_str(j, dyn::detail::plan_fusion(j));
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("layout maps: each layout change feeding an elementwise op is read through, no copy") {
  const auto x = wavy({6, 20}, 0.1), y = wavy({20, 6}, 0.2), z = wavy({4, 30}, 0.3), v = wavy({20}, 0.4);
  auto reshape = [](auto x, auto z) { return dyn::reshape(x, {4, 30}) * z + 1.0; };
  auto transpose = [](auto x, auto y) { return dyn::transpose(x, {1, 0}) - y; };
  auto broadcast = [](auto x, auto v) { return x * dyn::broadcast_to(v, {6, 20}); };
  auto slice = [](auto x, auto y) { return dyn::slice(x, {1, 2}, {5, 18}) + dyn::transpose(dyn::slice(y, {2, 1}, {18, 5}, {1, 1}), {1, 0}); };
  auto rev = [](auto x) { return dyn::exp(dyn::rev(x, {0, 1})) * x; };
  CHECK(copies(reshape, x, z) == Why{});
  CHECK(copies(transpose, x, y) == Why{});
  CHECK(copies(broadcast, x, v) == Why{});
  CHECK(copies(slice, x, y) == Why{});
  CHECK(copies(rev, x) == Why{});
  same_as_eager(reshape, 0, x, z);
  same_as_eager(transpose, 0, x, y);
  same_as_eager(broadcast, 0, x, v);
  same_as_eager(slice, 0, x, y);
  same_as_eager(rev, 1e-15, x);  // (exp: the kernel's vector exp, within an ulp)
}

TEST_CASE("layout maps: a chain (transpose of reshape of slice of rev, a broadcast) is one composed map") {
  const auto x = wavy({8, 30}, 0.5), w = wavy({5, 6}, 0.6), u = wavy({6}, 0.7);
  auto chain = [](auto x, auto w, auto u) {
    auto s = dyn::slice(dyn::rev(x, {1}), {2, 0}, {7, 30}, {1, 5});  // (5, 6)
    auto t = dyn::transpose(dyn::reshape(s, {6, 5}), {1, 0});      // (5, 6)
    return t * w + dyn::broadcast_to(dyn::reshape(u, {1, 6}), {5, 6});
  };
  CHECK(copies(chain, x, w, u) == Why{});
  same_as_eager(chain, 0, x, w, u);
}

TEST_CASE("layout maps: reductions and cumulative ops read through the map") {
  const auto x = wavy({12, 10}, 0.8), y = wavy({10, 12}, 0.9);
  // The example: sum(transpose(reshape(x)) * y).
  auto sum_t = [](auto x, auto y) { return dyn::sum(dyn::transpose(dyn::reshape(x, {12, 10}), {1, 0}) * y); };
  auto rows = [](auto x) { return dyn::max(dyn::rev(dyn::slice(x, {0, 1}, {12, 9}), {1}), {1}); };
  auto cum = [](auto x) { return dyn::cumsum(dyn::transpose(x, {1, 0}), 1); };
  CHECK(copies(sum_t, x, y) == Why{});
  CHECK(copies(rows, x) == Why{});
  CHECK(copies(cum, x) == Why{});
  same_as_eager(sum_t, 1e-14, x, y);  // (the reduction's order: within rounding)
  same_as_eager(rows, 0, x);
  same_as_eager(cum, 1e-14, x);
}

TEST_CASE("layout maps: several consumers each read through the map, no copy") {
  const auto x = wavy({9, 7}, 1.0);
  auto f = [](auto x) {
    auto t = dyn::transpose(dyn::rev(x, {0}), {1, 0});  // read by three nests
    return std::tuple{dyn::sum(t, {1}), t * 2.0 + 1.0, dyn::max(t)};
  };
  CHECK(copies(f, x) == Why{});
  const auto [a, b, c] = dyn::jit(f)(x);
  const auto [ea, eb, ec] = dyn::eager(f)(x);
  CHECK(dyn::allclose(a, ea, 1e-14, 1e-14));
  CHECK(dyn::array_equal(b, eb));
  CHECK(dyn::array_equal(c, ec));
}

TEST_CASE("layout maps: an output needs a dense layout: one copy, also when other consumers read it") {
  const auto x = wavy({9, 7}, 1.1);
  auto out = [](auto x) { return dyn::transpose(dyn::reshape(x, {7, 9}), {1, 0}); };
  auto shared = [](auto x) {
    auto t = dyn::broadcast_to(dyn::slice(x, {0, 0}, {1, 7}), {4, 7});
    return std::tuple{t, dyn::sum(t)};
  };
  CHECK(copies(out, x) == Why{"output"});
  CHECK(copies(shared, x) == Why{"output"});
  same_as_eager(out, 0, x);
  const auto [t, s] = dyn::jit(shared)(x);
  const auto [et, es] = dyn::eager(shared)(x);
  CHECK(dyn::array_equal(t, et));
  CHECK(dyn::allclose(s, es, 1e-14, 1e-14));
}

TEST_CASE("layout maps: a product reads a transposed operand where it is stored, no copy") {
  // Large enough for the GEMM routine (both operand forms packed in place),
  // matrix-vector products (A^T x: an axpy per row of A) and small i-k-j.
  const auto A = wavy({70, 60}, 0.1), B = wavy({70, 50}, 0.2), W = wavy({50, 60}, 0.3), x = wavy({70}, 0.4),
             V = wavy({60, 70}, 0.45);
  auto tn = [](auto A, auto B) { return dyn::matmul(dyn::transpose(A, {1, 0}), B); };      // A^T B
  auto nt = [](auto A, auto W) { return dyn::matmul(A, dyn::transpose(W, {1, 0})); };      // A W^T
  auto tt = [](auto B, auto V) { return dyn::matmul(dyn::transpose(B, {1, 0}), dyn::transpose(V, {1, 0})); };  // B^T V^T
  auto gemv_t = [](auto A, auto x) { return dyn::matmul(dyn::transpose(A, {1, 0}), x); };  // A^T x
  auto twice = [](auto A, auto B) {  // ((A^T)^T)^T B: the maps compose
    return dyn::matmul(dyn::transpose(dyn::transpose(dyn::transpose(A, {1, 0}), {1, 0}), {1, 0}), B);
  };
  CHECK(copies(tn, A, B) == Why{});
  CHECK(copies(nt, A, W) == Why{});
  CHECK(copies(tt, B, V) == Why{});
  CHECK(copies(gemv_t, A, x) == Why{});
  CHECK(copies(twice, A, B) == Why{});
  same_as_eager(tn, 1e-12, A, B);
  same_as_eager(nt, 1e-12, A, W);
  same_as_eager(tt, 1e-12, B, V);
  same_as_eager(gemv_t, 1e-12, A, x);
  same_as_eager(twice, 1e-12, A, B);
  {  // At run time: A^T x takes no temporary (before, A^T was copied into one per call).
    const auto jf = dyn::jit(gemv_t);
    const auto want = dyn::eager(gemv_t)(A, x);
    CHECK(dyn::allclose(jf(A, x), want, 1e-12, 1e-12));
    const auto c0 = dyn::detail::block_pool_counts();
    for (int call = 0; call < 3; ++call) CHECK(dyn::allclose(jf(A, x), want, 1e-12, 1e-12));
    CHECK(dyn::detail::block_pool_counts().taken == c0.taken);
  }
  SUBCASE("small products (i-k-j): A^T read in place; a transposed rhs is packed once in the nest") {
    const auto a = wavy({5, 4}, 0.5), b = wavy({5, 3}, 0.6), c = wavy({4, 3}, 0.7), u = wavy({5}, 0.8);
    auto small_tn = [](auto a, auto b) { return dyn::matmul(dyn::transpose(a, {1, 0}), b); };
    auto small_gemv_t = [](auto a, auto u) { return dyn::matmul(dyn::transpose(a, {1, 0}), u); };
    auto small_nt = [](auto b, auto c) { return dyn::matmul(b, dyn::transpose(c, {1, 0})); };
    CHECK(copies(small_tn, a, b) == Why{});
    CHECK(copies(small_gemv_t, a, u) == Why{});
    CHECK(copies(small_nt, b, c) == Why{"dot_general packing"});
    same_as_eager(small_tn, 1e-14, a, b);
    same_as_eager(small_gemv_t, 1e-14, a, u);
    same_as_eager(small_nt, 1e-14, b, c);
  }
}

TEST_CASE("layout maps: a product reads a reshape or a contiguous slice of a buffer in place") {
  const auto X = wavy({90, 40}, 0.8), W = wavy({40, 50}, 0.9), T = wavy({6, 10, 40}, 1.0);
  auto rows = [](auto X, auto W) { return dyn::matmul(dyn::slice(X, {30, 0}, {80, 40}), W); };
  auto block = [](auto T, auto W) { return dyn::matmul(dyn::reshape(dyn::slice(T, {2, 0, 0}, {5, 10, 40}), {30, 40}), W); };
  auto one_row = [](auto T, auto W) { return dyn::matmul(dyn::slice(T, {3, 4, 0}, {4, 5, 40}), W); };
  auto wslice = [](auto X, auto W) { return dyn::matmul(X, dyn::slice(W, {0, 10}, {40, 20})); };  // columns: strided
  CHECK(copies(rows, X, W) == Why{});
  CHECK(copies(block, T, W) == Why{});
  CHECK(copies(one_row, T, W) == Why{});
  // (Large enough for the blocked GEMM, whose packing reads the strided
  // columns through the slice's map: issue 25, item 1, fusion_gemm.hpp.)
  CHECK(copies(wslice, X, W) == Why{});
  same_as_eager(rows, 1e-12, X, W);
  same_as_eager(block, 1e-12, T, W);
  same_as_eager(one_row, 1e-12, T, W);
  same_as_eager(wslice, 1e-12, X, W);
}

TEST_CASE("layout maps: where the product needs a dense operand, the composed map is copied once") {
  const auto A = wavy({40, 30}, 1.2), B = wavy({40, 20}, 1.3), v = wavy({30}, 1.4), x = wavy({40}, 1.5);
  // rev, a broadcast and a non-contiguous slice have no stored form the
  // product reads: one copy each, of the whole chain, however long.
  auto rev = [](auto A, auto B) { return dyn::matmul(dyn::transpose(dyn::rev(A, {0}), {1, 0}), B); };
  auto bcast = [](auto v, auto B) { return dyn::matmul(dyn::broadcast_to(v, {20, 30}), dyn::slice(B, {0, 0}, {30, 20})); };
  auto chain = [](auto A, auto B) {
    auto a = dyn::transpose(dyn::reshape(dyn::slice(A, {0, 0}, {40, 30}, {2, 1}), {30, 20}), {1, 0});  // (20, 30)
    return dyn::matmul(a, dyn::slice(B, {0, 0}, {30, 20}));
  };
  // One dense operand read by two products: copied once.
  auto shared = [](auto A, auto B, auto x) {
    auto a = dyn::rev(A, {1});
    return std::tuple{dyn::matmul(dyn::transpose(a, {1, 0}), B), dyn::matmul(dyn::transpose(a, {1, 0}), x)};
  };
  CHECK(copies(rev, A, B) == Why{"dot_general operand"});
  CHECK(copies(bcast, v, B) == Why{"dot_general operand"});
  CHECK(copies(chain, A, B) == Why{"dot_general operand"});
  CHECK(copies(shared, A, B, x) == Why{"dot_general operand"});
  same_as_eager(rev, 1e-12, A, B);
  same_as_eager(bcast, 1e-12, v, B);
  same_as_eager(chain, 1e-12, A, B);
  const auto [p, q] = dyn::jit(shared)(A, B, x);
  const auto [ep, eq] = dyn::eager(shared)(A, B, x);
  CHECK(dyn::allclose(p, ep, 1e-12, 1e-12));
  CHECK(dyn::allclose(q, eq, 1e-12, 1e-12));
}

TEST_CASE("layout maps: a loop's initial state is a dense buffer: one copy") {
  const auto x = wavy({5, 8}, 1.5);
  auto f = [](auto x) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return c * 0.5 + 1.0; })(dyn::transpose(x, {1, 0}));
  };
  CHECK(copies(f, x) == Why{"control operand"});
  same_as_eager(f, 0, x);
}

// A concatenate along an axis before the last whose pieces are buffers
// (arguments, loop state, collective results) stays fused (fusion.hpp,
// rows_of_buffers): each reader picks the piece per row and reads it in
// place (lower_remap.hpp, concatenated). Along the last axis, or with a
// computed piece, it keeps its nest and buffer.
TEST_CASE("layout maps: a concatenate of buffers along an outer axis is read in place, no buffer") {
  const i64 r = 37, c = 53;
  const auto u = wavy({r, c}, 0.1), top = wavy({1, c}, 0.7), bottom = wavy({2, c}, 1.3);
  // The halo stencil of examples/17: five shifted slices of [top; u; bottom].
  auto halo = [](auto u, auto top, auto bottom) {
    auto r = u.shape(0), c = u.shape(1);
    auto ext = dyn::concatenate({top, u, bottom}, 0);
    auto at = [&](i64 dr, i64 dc) { return dyn::slice(ext, {dr, dc}, {dr + r, dc + c - 2}); };
    return at(1, 1) + 0.25 * (at(0, 1) + at(2, 1) + at(1, 0) + at(1, 2) - 4.0 * at(1, 1)) + at(3, 1);
  };
  const std::string plan = plan_of(halo, u, top, bottom);
  INFO(plan);
  CHECK(has(plan, "concatenate: fused"));
  CHECK(copies(halo, u, top, bottom) == Why{});
  same_as_eager(halo, 0, u, top, bottom);
  // Three axes, along the middle one, read through a transpose (strided) and
  // reduced; pieces of 1, 4 and 2 rows; f32, bool, complex and integer pieces.
  const auto a = wavy({3, 1, 5}, 0.2), b = wavy({3, 4, 5}, 0.4), d = wavy({3, 2, 5}, 0.6);
  auto mid = [](auto a, auto b, auto d) {
    auto t = dyn::transpose(dyn::concatenate({a, b, d, a}, 1), {2, 0, 1});  // [5, 3, 8]
    return dyn::sum(t * 2.0, {2}) + dyn::reshape(dyn::slice(t, {0, 0, 3}, {5, 3, 4}), {5, 3});
  };
  CHECK(has(plan_of(mid, a, b, d), "concatenate: fused"));
  same_as_eager(mid, 0, a, b, d);
  auto as = [](auto x, auto t) { return dyn::eager([](auto v) { return dyn::astype<decltype(t)>(v * 10.0); })(x); };
  auto stack = [](auto a, auto b, auto d) { return dyn::concatenate({b, a, d}, 1) + dyn::concatenate({d, b, a}, 1); };
  same_as_eager(stack, 0, as(a, float{}), as(b, float{}), as(d, float{}));
  same_as_eager(stack, 0, as(a, std::int32_t{}), as(b, std::int32_t{}), as(d, std::int32_t{}));
  auto bits = [](auto a, auto b, auto d) { return dyn::concatenate({b > 0.0, a > 0.5, d < 0.0}, 1) != dyn::concatenate({d > 0.0, b < 0.2, a > 0.0}, 1); };
  same_as_eager(bits, 0, a, b, d);
  auto cplx = [](auto a, auto b, auto d) {
    auto z = [](auto x) { return dyn::complex(x, x * 0.5); };
    return dyn::concatenate({z(b), z(a), z(d)}, 1) * dyn::concatenate({z(d), z(a), z(b)}, 1);
  };
  same_as_eager(cplx, 0, a, b, d);
  // Along the last axis the piece changes within a row: a buffer. So with
  // a computed piece (it would be computed for every element).
  auto last = [](auto u, auto) { return dyn::concatenate({u, u}, 1) * 2.0; };
  CHECK(has(plan_of(last, u, top), "concatenate: buffer (concatenate)"));
  same_as_eager(last, 0, u, top);
  auto computed = [](auto u, auto top) { return dyn::concatenate({top * 2.0, u}, 0) + 1.0; };
  CHECK(has(plan_of(computed, u, top), "concatenate: buffer (concatenate)"));
  same_as_eager(computed, 0, u, top);
}

TEST_CASE("layout maps: a fused concatenate with symbolic sizes: one kernel for every piece size") {
  auto f = [](auto a, auto b) {
    auto cat = dyn::concatenate({a, b, a}, 0);
    return dyn::slice(cat, {1, 0}, {cat.shape(0), cat.shape(1)}) * 3.0 - dyn::slice(cat, {0, 0}, {cat.shape(0) - 1, cat.shape(1)});
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n, m)", "(k, m)"});
  for (auto [n, k, m] : {std::tuple<i64, i64, i64>{3, 4, 7}, {1, 5, 9}, {6, 1, 2}, {1, 1, 1}, {40, 3, 33}}) {
    CAPTURE(n);
    CAPTURE(k);
    const auto a = wavy({n, m}, 0.5), b = wavy({k, m}, 0.9);
    CHECK(dyn::array_equal(jf(a, b), dyn::eager(f)(a, b)));
  }
  CHECK(jf.stats().compiles == 1);
  // Stacked index rows read by a gather: an outer-axis concatenate as a
  // gather's indices is read through its pieces too.
  auto g = [](auto x, auto i, auto j) { return x.at(dyn::concatenate({i, j}, 0)).get() * 2.0; };
  const auto x = wavy({9, 4}, 0.3);
  const Array<std::int64_t> i({2, 1}, {3, -1}), j({3, 1}, {0, 8, 4});
  CHECK(has(plan_of(g, x, i, j), "concatenate: fused"));
  CHECK(dyn::array_equal(dyn::jit(g)(x, i, j), dyn::eager(g)(x, i, j)));
}

TEST_CASE("layout maps: symbolic sizes, one kernel for two sizes, the same copies") {
  auto ew = [](auto x, auto y) { return dyn::sum(dyn::transpose(dyn::rev(x, {0}), {1, 0}) * y, {0}); };
  auto mm = [](auto x, auto y) { return dyn::matmul(dyn::transpose(x, {1, 0}), dyn::transpose(y, {1, 0})); };
  const dyn::polymorphic_shapes ps{"(m, n)", "(n, m)"};
  CHECK(copies_poly(ew, ps, wavy({3, 4}, 0), wavy({4, 3}, 0)) == Why{});
  // x^T y^T reads both where they are stored; with unknown sizes the i-k-j
  // nest (small sizes at run time) may pack y^T: counted.
  CHECK(copies_poly(mm, ps, wavy({3, 4}, 0), wavy({4, 3}, 0)) == Why{"dot_general packing"});
  auto jew = dyn::jit(ew, ps);
  auto jmm = dyn::jit(mm, ps);
  for (auto [m, n] : {std::pair<i64, i64>{3, 5}, {70, 90}}) {
    CAPTURE(m);
    const auto x = wavy({m, n}, 0.3), y = wavy({n, m}, 0.6);
    CHECK(dyn::allclose(jew(x, y), dyn::eager(ew)(x, y), 1e-13, 1e-13));
    CHECK(dyn::allclose(jmm(x, y), dyn::eager(mm)(x, y), 1e-12, 1e-12));
  }
  CHECK(jew.stats().compiles == 1);
  CHECK(jmm.stats().compiles == 1);
}

TEST_CASE("layout maps: products, edge cases (batches, integers, free axes reordered, empty and symbolic slices, loop bodies)") {
  SUBCASE("a batch: the transpose of each matrix of a stack is read in place") {
    const auto T = wavy({4, 10, 6}, 0.1), U = wavy({4, 10, 5}, 0.2);
    auto f = [](auto T, auto U) { return dyn::matmul(dyn::transpose(T, {0, 2, 1}), U); };
    CHECK(copies(f, T, U) == Why{});
    same_as_eager(f, 1e-13, T, U);
  }
  SUBCASE("integers: A^T read in place by the i-k-j nest, exact") {
    Array<i64> a({6, 4}), b({6, 3});
    for (i64 i = 0; i < a.size(); ++i) a.mutable_data()[i] = (i * 7) % 11 - 5;
    for (i64 i = 0; i < b.size(); ++i) b.mutable_data()[i] = (i * 5) % 13 - 6;
    auto f = [](auto a, auto b) { return dyn::matmul(dyn::transpose(a, {1, 0}), b); };
    CHECK(copies(f, a, b) == Why{});
    same_as_eager(f, 0, a, b);
  }
  SUBCASE("a transpose that reorders the free axes is the one copy") {
    const auto T = wavy({2, 3, 4}, 0.3), W = wavy({2, 5}, 0.4);
    auto f = [](auto T, auto W) { return dyn::matmul(dyn::transpose(T, {2, 1, 0}), W); };  // (4, 3, 2) @ (2, 5)
    CHECK(copies(f, T, W) == Why{"dot_general operand"});
    same_as_eager(f, 1e-13, T, W);
  }
  SUBCASE("an empty row block") {
    const auto X = wavy({5, 4}, 0.5), W = wavy({4, 3}, 0.6);
    auto f = [](auto X, auto W) { return dyn::matmul(dyn::slice(X, {2, 0}, {2, 4}), W); };
    CHECK(copies(f, X, W) == Why{});
    same_as_eager(f, 0, X, W);
  }
  SUBCASE("symbolic sizes: a block of rows of (m, k) is read from its offset (k at run time)") {
    auto f = [](auto X, auto W) { return dyn::matmul(dyn::slice_in_dim(X, 1, 3), W); };
    const dyn::polymorphic_shapes ps{"(m, k)", "(k, n)"};
    const dyn::constraints cs{"m >= 3"};
    CHECK(copies_at(dyn::make_jaxpr(f, ps, cs)(wavy({4, 5}, 0), wavy({5, 6}, 0))) == Why{});
    auto jf = dyn::jit(f, ps, cs);
    for (auto [m, k] : {std::pair<i64, i64>{3, 2}, {40, 70}}) {
      CAPTURE(m);
      const auto X = wavy({m, k}, 0.7), W = wavy({k, 50}, 0.8);
      CHECK(dyn::allclose(jf(X, W), dyn::eager(f)(X, W), 1e-12, 1e-12));
    }
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("symbolic sizes: (alpha A + 1)^T x, the matrix fused into the axpy nest, no temporary") {
    auto f = [](auto A, auto x) { return dyn::matmul(dyn::transpose(1.5 * A + 1.0, {1, 0}), x); };
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(k, m)", "(k,)"});
    for (auto [k, m] : {std::pair<i64, i64>{1, 1}, {7, 300}, {257, 129}}) {
      CAPTURE(k);
      const auto A = wavy({k, m}, 0.2), x = wavy({k}, 0.3);
      const auto want = dyn::eager(f)(A, x);
      CHECK(dyn::allclose(jf(A, x), want, 1e-12, 1e-12));
      const auto c0 = dyn::detail::block_pool_counts();
      CHECK(dyn::allclose(jf(A, x), want, 1e-12, 1e-12));
      CHECK(dyn::detail::block_pool_counts().taken == c0.taken);
    }
    CHECK(jf.stats().compiles == 1);
  }
  SUBCASE("a loop body's product reads its transposed operand in place too") {
    const auto A = wavy({6, 6}, 0.9), c0 = wavy({6}, 1.0);
    auto f = [](auto A, auto c0) {
      return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return dyn::matmul(dyn::transpose(A, {1, 0}), c) * 0.5; })(c0);
    };
    same_as_eager(f, 1e-13, A, c0);
  }
}

}  // TEST_SUITE
