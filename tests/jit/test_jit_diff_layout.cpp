// Differential tests of dyn::jit: rev and pad (layout primitives fused into
// their consumers through their index maps, ir/index_map.hpp), and the
// layout, creation and linear-algebra functions composed of primitives
// (flip stack tile repeat tril triu eye linspace outer dot_general): compiled
// vs interpreted vs eager (jit_diff.hpp), on every dtype, empty operands,
// cropping pads, and polymorphic and traced sizes (one kernel for every size).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

const std::vector<Shp> kLayoutShapes = {{5}, {0}, {1}, {3, 4}, {1, 5}, {2, 0, 3}, {2, 3, 4}, {37, 9}};

// The pad configurations tried on every axis: plain, interior, cropping
// (negative lo/hi), cropping into interior padding, and all of it.
const std::vector<dyn::PadAxis> kPads = {{0, 0, 0}, {1, 2, 0}, {0, 0, 2}, {-1, 0, 0}, {2, -2, 1}, {-1, -1, 3}};

template <class T>
void check_rev_pad() {
  std::uint64_t seed = 1700;
  for (const Shp& s : kLayoutShapes) {
    const auto x = gen<T>(s, seed++, Gen::general);
    const int rank = static_cast<int>(s.size());
    for (int a = 0; a < rank; ++a) {
      const auto f = [](int axis, const auto& v) { return dyn::flip(v, axis); };
      const Three r = run3(f, a, x);
      agree(r, "flip of " + dyn::detail::shape_str(dyn::detail::to_shape(s)) + " along " + std::to_string(a));
      expect_ok(r, "flip");
    }
    {
      const auto f = [](int, const auto& v) {
        std::vector<std::int64_t> all;
        for (int i = 0; i < v.rank(); ++i) all.push_back(i);
        return dyn::rev(v, all);
      };
      const Three r = run3(f, 0, x);
      agree(r, "rev of every axis");
      expect_ok(r, "rev");
    }
    for (int k = 0; k < static_cast<int>(kPads.size()); ++k) {
      const auto f = [](int c, const auto& v) {
        std::vector<dyn::PadAxis> cfg;
        for (int i = 0; i < v.rank(); ++i) cfg.push_back(kPads[static_cast<std::size_t>((c + i) % 6)]);
        return dyn::pad(v, cfg, T(3));
      };
      const Three r = run3(f, k, x);
      const std::string what = "pad " + std::to_string(k) + " of " + dyn::detail::shape_str(dyn::detail::to_shape(s));
      agree(r, what);
      // A crop of an axis shorter than the crop is a ShapeError on all three paths.
      if (!r.eager.error.empty()) CHECK_MESSAGE(r.eager.error == "ShapeError", what, ": ", r.eager.message);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("jit diff: rev, flip and pad on every dtype and shape, cropping and interior padding", T, bool,
                   i32, i64, float, double) {
  check_rev_pad<T>();
}

TEST_CASE("jit diff: rev and pad fuse into their consumer; the padding value is a traced scalar") {
  const auto f = [](int, const auto& x, const auto& v) {
    return dyn::exp(dyn::pad(dyn::flip(x * 2.0, 1), {{1, 1, 1}, {-1, 2, 0}}, v)) + 1.0;
  };
  const auto x = gen<double>({6, 7}, 3, Gen::general);
  const auto v = gen<double>({}, 4, Gen::general);
  const auto jf = dyn::jit(f, dyn::static_argnums<0>{});
  const std::string ir = jf.llvm_ir(0, x, v);
  CHECK(ir.find("= rev: fused") != std::string::npos);
  CHECK(ir.find("= pad: fused") != std::string::npos);
  const Three r = run3(f, 0, x, v);
  agree(r, "fused rev and pad", {Tol{4}});  // exp: the vector exp's ulps (docs/backend.md)
  expect_ok(r, "fused rev and pad");
}

TEST_CASE("jit diff: stack, tile, repeat, tril, triu, outer, dot_general against eager") {
  const auto x = gen<double>({4, 5}, 11, Gen::general);
  const auto y = gen<double>({4, 5}, 12, Gen::general);
  const auto b3 = gen<float>({3, 4, 5}, 13, Gen::general);
  const auto f = [](int, const auto& a, const auto& b, const auto& p) {
    return std::make_tuple(dyn::stack({a, b}, 0), dyn::stack({a, b, a}, -1), dyn::tile(a, {2, 3}),
                           dyn::tile(a, {2, 1, 1}), dyn::repeat(a, 3, 0), dyn::repeat(a, 2, -1), dyn::tril(a),
                           dyn::triu(a, 1), dyn::tril(p, -1), dyn::triu(p, 2), dyn::outer(a, b));
  };
  const Three r = run3(f, 0, x, y, b3);
  agree(r, "composed layout ops");
  expect_ok(r, "composed layout ops");
  // dot_general with batch and contracting axes anywhere (integers: exact in every order; the
  // backend canonicalises to C[b] = A[b] B[b] with transposes, llvm/lower_dot.hpp).
  const auto p = gen<i32>({3, 4, 5}, 14, Gen::general);
  const auto q = gen<i32>({5, 3, 2}, 15, Gen::general);
  const auto g = [](int, const auto& u, const auto& v) {
    return std::make_tuple(dyn::dot_general(u, v, {{2}, {0}}, {{0}, {1}}), dyn::dot_general(u, u, {{0}, {0}}),
                           dyn::dot_general(u, u, {{1, 2}, {1, 2}}, {{0}, {0}}),
                           dyn::dot_general(v, u, {{0}, {2}}, {{1}, {0}}), dyn::einsum("bij,jbk->bik", u, v),
                           dyn::einsum("bij,bkj->bik", u, u), dyn::matmul(u, dyn::transpose(u, {0, 2, 1})));
  };
  const Three rd = run3(g, 0, p, q);
  agree(rd, "dot_general with batch axes");
  expect_ok(rd, "dot_general with batch axes");
}

TEST_CASE("jit diff: einsum diagonals, traces and '...' broadcast axes against eager") {
  // Integers: exact in every summation order.
  const auto m = gen<i32>({4, 4}, 21, Gen::general);
  const auto c = gen<i32>({3, 3, 5}, 22, Gen::general);
  const auto a = gen<i32>({2, 3, 4}, 23, Gen::general);
  const auto b = gen<i32>({1, 4, 2}, 24, Gen::general);
  const auto f = [](int, const auto& x, const auto& y, const auto& z, const auto& w) {
    return std::make_tuple(dyn::einsum("ii->i", x), dyn::einsum("ii->", x), dyn::einsum("iij->j", y),
                           dyn::einsum("...ij,...jk->...ik", z, w), dyn::einsum("...i->...", z),
                           dyn::einsum("iji->j", dyn::transpose(y, {0, 2, 1})), dyn::einsum("ij,jj->ij", x, x) + 1);
  };
  const Three r = run3(f, 0, m, c, a, b);
  agree(r, "einsum diagonals and ellipses");
  expect_ok(r, "einsum diagonals and ellipses");
  const auto d = leaves(dyn::jit([](const auto& x) { return dyn::einsum("ii->i", x); })(m));
  for (i64 i = 0; i < 4; ++i) CHECK(d[0].get<i32>()(i) == m(i, i));
}

TEST_CASE("jit diff: eye and linspace staged with a symbolic size; one kernel for every size") {
  // (The Dim overloads stage, so the reference is the concrete overload at the same size.)
  const auto f = [](const auto& x) {
    const dyn::Dim n = x.shape(0);
    return std::make_tuple(dyn::eye<float>(n), dyn::linspace<double>(-1.0, 2.0, n), dyn::linspace<i32>(0.0, 10.0, n));
  };
  const auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
  for (i64 n : {1, 2, 5, 33}) {
    const auto x = gen<double>({n}, 70 + static_cast<std::uint64_t>(n), Gen::mild);
    const auto got = leaves(jf(x));
    const auto want = leaves(std::make_tuple(dyn::eye<float>(n), dyn::linspace<double>(-1.0, 2.0, n),
                                             dyn::linspace<i32>(0.0, 10.0, n)));
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "output #", k, " n=", n, ": ",
                    mismatch(got[k], want[k], Tol{}));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit diff: rev, flip, pad, tril, triu, stack with polymorphic shapes: one kernel for every size") {
  const auto f = [](const auto& x) {
    return std::make_tuple(dyn::rev(x, {0, 1}), dyn::flip(x, 1) * 2.0, dyn::pad(x, {{2, -1, 1}, {1, 3, 0}}, -5.0),
                           dyn::tril(x), dyn::triu(x, -1), dyn::stack({x, x * 3.0}, 1), dyn::tile(x, {2, 1}),
                           dyn::repeat(x, 2, 0));
  };
  check_polymorphic_2d(f, 1900, Gen::general);
}

TEST_CASE("jit diff: pad and rev of traced-size arrays, empty ones included: one kernel for every size") {
  const auto body = [](auto n) {
    const auto a = dyn::arange<i64>(n) * 3 + 1;
    return std::make_tuple(dyn::pad(a, {{2, 1, 0}}, i64(-7)), dyn::flip(a, 0), dyn::pad(dyn::flip(a, 0), {{-1, 0, 0}}, i64(9)));
  };
  const auto jd = dyn::jit([&](dyn::Tracer<i64> n) { return body(n); });
  for (i64 n : {1, 2, 9, 1000, 0}) {
    if (n == 0) {  // the crop of one element needs n >= 1 (a ShapeError in eager, a kernel error in jit)
      CHECK_THROWS_AS(body(n), dyn::ShapeError);
      continue;
    }
    const auto got = leaves(jd(n));
    const auto want = leaves(body(n));
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "n=", n, " output #", k, ": ", mismatch(got[k], want[k], Tol{}));
  }
  CHECK(jd.stats().compiles == 1);
  // An empty traced-size operand is all padding: a materialised one (sort's buffer) is read at
  // its element 0 and the padding value selected.
  // Two axes, the empty one first: every axis is read at index 0 then (not 0 and the other's index).
  const auto body0 = [](auto n) {
    const auto s = dyn::sort(dyn::arange<double>(n * 100) * -1.0);
    return std::make_tuple(dyn::pad(dyn::sort(dyn::arange<double>(n) * -1.0), {{2, 1, 0}}, 5.0),
                           dyn::pad(dyn::reshape(s, {n, 100}), {{1, 1, 0}, {0, -1, 1}}, 2.0));
  };
  const auto j0 = dyn::jit([&](dyn::Tracer<i64> n) { return body0(n); });
  for (i64 n : {0, 3, 0}) {
    const auto got = leaves(j0(n));
    const auto want = leaves(body0(n));
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "n=", n, " output #", k, ": ", mismatch(got[k], want[k], Tol{}));
  }
  // Interior padding of a traced size: lo + hi + n + interior * max(n - 1, 0), which a run-time 0
  // makes lo + hi (lax.pad; the max is kept for a dynamic size, which may be 0).
  const auto bodyi = [](auto n) { return dyn::pad(dyn::arange<i32>(n) - 4, {{1, 2, 2}}, 0); };
  const auto ji = dyn::jit([&](dyn::Tracer<i64> n) { return bodyi(n); });
  for (i64 n : {1, 0, 2, 7, 0}) {
    const auto got = leaves(ji(n));
    const auto want = leaves(bodyi(n));
    CHECK(got[0].shape() == std::vector<i64>{n == 0 ? 3 : 3 * n + 1});
    CHECK_MESSAGE(mismatch(got[0], want[0], Tol{}).empty(), "n=", n, ": ", mismatch(got[0], want[0], Tol{}));
  }
  CHECK(ji.stats().compiles == 1);
  CHECK(leaves(ji(i64{0}))[0].get<i32>().shape() == std::vector<i64>{3});
  // Two axes, negative lo, the dynamic one 0 and the other not; and a static 0 under jit.
  const auto body2 = [](auto n) { return dyn::pad(dyn::reshape(dyn::arange<double>(n * 3), {n, 3}), {{-1, 2, 3}, {0, 0, 1}}, 7.0); };
  const auto j2 = dyn::jit([&](dyn::Tracer<i64> n) { return body2(n); });
  for (i64 n : {0, 1, 4}) {
    const auto got = leaves(j2(n));
    const auto want = leaves(body2(n));
    CHECK(got[0].shape() == std::vector<i64>{n == 0 ? 1 : 4 * n - 2, 5});
    CHECK_MESSAGE(mismatch(got[0], want[0], Tol{}).empty(), "n=", n, ": ", mismatch(got[0], want[0], Tol{}));
  }
  const auto js = dyn::jit([](const auto& x) { return dyn::pad(x, {{1, 1, 3}}, 5.0f); });
  const auto rs = js(dyn::Array<float>({0}, {}));
  CHECK(rs.shape() == std::vector<i64>{2});
  CHECK(rs(0) == 5.0f);
  CHECK(rs(1) == 5.0f);
}
