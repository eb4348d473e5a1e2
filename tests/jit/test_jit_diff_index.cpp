// Differential tests of dyn::jit: gather (x.at(...).get(), take,
// take_along_axis) and the scatters (x.at(...).set/add/mul/min/max) for
// every dtype, with indices in and out of range, negative and duplicated;
// fused producers and consumers; polymorphic sizes (one kernel for every
// length). Compiled (dyn::jit) vs interpreted (dyn::eval_jaxpr) vs eager
// (jit_diff.hpp): EXACTLY, floats included: a gather moves elements and the
// scatter kernel combines the updates in eager's order
// (llvm/lower_scatter.hpp).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

// Indices in [-lo, hi): negative ones count from the end, those past the
// end clamp (gather) or are dropped (scatter).
dyn::Array<i32> indices(const Shp& shape, std::uint64_t seed, i32 lo, i32 hi) {
  dyn::Array<i32> a(shape);
  i32* p = a.mutable_data();
  std::uint64_t s = seed * 2654435761u + 1;
  for (i64 k = 0; k < a.size(); ++k) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[k] = static_cast<i32>(static_cast<i64>((s >> 33) % static_cast<std::uint64_t>(hi + lo)) - lo);
  }
  return a;
}

const auto gather_fn = [](int op, const auto& x, const auto& i, const auto& j) {
  switch (op) {
    case 0: return std::make_tuple(x.at(i).get(), x.at(dyn::all(), j).get());
    case 1: return std::make_tuple(x.at(i, j).get(), dyn::take(x, j, 1));
    default:  // fused: an elementwise producer of the operand and consumers
      return std::make_tuple((x + x).at(i).get() * x.at(i).get(),
                             dyn::take_along_axis(x, dyn::reshape(i.at(j).get(), {-1, 1}), 0));
  }
};

template <class T>
void check_gather() {
  std::uint64_t seed = 900;
  for (const Shp& xs : std::vector<Shp>{{5, 3}, {1, 7}, {37, 9}, {4, 130}}) {
    const auto x = gen<T>(xs, seed++);
    for (const Shp& is : std::vector<Shp>{{4}, {1}, {0}, {200}}) {
      const auto i = indices(is, seed++, static_cast<i32>(xs[0]) + 2, static_cast<i32>(xs[0]) + 3);
      const auto j = indices(is, seed++, static_cast<i32>(xs[1]) + 1, static_cast<i32>(xs[1]) + 2);
      for (int op : {0, 1, 2}) {
        if (op == 2 && (is[0] == 0 || std::is_same_v<T, bool>)) continue;  // x + x of bool; take_along_axis of ()
        std::ostringstream what;
        what << "gather op " << op << " of " << dt_name(dyn::dtype_v<T>) << dyn::detail::shape_str(dyn::detail::to_shape(xs))
             << " at i32" << dyn::detail::shape_str(dyn::detail::to_shape(is));
        const Three r = run3(gather_fn, op, x, i, j);
        agree(r, what.str());
        expect_ok(r, what.str());
      }
    }
  }
}

const auto scatter_fn = [](int op, const auto& x, const auto& i, const auto& u) {
  if (op == 0)
    return std::make_tuple(x.at(i).set(u), x.at(i).add(u), x.at(i).mul(u), x.at(i).min(u), x.at(i).max(u));
  // Along the second axis, the updates a fused expression broadcast over the
  // indexed columns.
  const auto col = dyn::expand_dims(u.at(dyn::all(), 0).get(), 1);
  return std::make_tuple(x.at(dyn::all(), i).set(col), x.at(dyn::all(), i).add(col), x.at(dyn::all(), i).mul(col),
                         x.at(dyn::all(), i).min(col), x.at(dyn::all(), i).max(col));
};

template <class T>
void check_scatter() {
  std::uint64_t seed = 950;
  for (const Shp& xs : std::vector<Shp>{{6, 3}, {1, 4}, {40, 9}}) {
    const auto x = gen<T>(xs, seed++);
    for (i64 n : {5, 1, 0, 300}) {
      // Many duplicates (n > rows) and indices out of range both ways.
      const auto i = indices({n}, seed++, static_cast<i32>(xs[0]) + 2, static_cast<i32>(xs[0]) + 3);
      const auto u = gen<T>({n, xs[1]}, seed++);
      std::ostringstream what;
      what << "scatters of " << dt_name(dyn::dtype_v<T>) << dyn::detail::shape_str(dyn::detail::to_shape(xs)) << " at "
           << n << " indices";
      const Three r = run3(scatter_fn, 0, x, i, u);
      agree(r, what.str());
      expect_ok(r, what.str());
      if (n > 0 && n <= xs[1] + 3) {
        const auto ic = indices({n}, seed++, static_cast<i32>(xs[1]) + 1, static_cast<i32>(xs[1]) + 2);
        const auto uc = gen<T>({xs[0], n}, seed++);
        const Three c = run3(scatter_fn, 1, x, ic, uc);
        agree(c, what.str() + ", along axis 1");
        expect_ok(c, what.str() + ", along axis 1");
      }
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("jit diff: gather, take and take_along_axis clamp out-of-range indices, exactly", T, bool, i32,
                   i64, float, double) {
  check_gather<T>();
}

TEST_CASE_TEMPLATE("jit diff: scatter, scatter-add/mul/min/max drop out-of-range updates, duplicates in order", T,
                   bool, i32, i64, float, double) {
  check_scatter<T>();
}

TEST_CASE("jit: a gather feeding elementwise work is fused: no temporary for the gathered rows") {
  const auto f = [](const auto& x, const auto& i) { return dyn::exp(x.at(i).get()) + 1.0f; };
  const auto x = gen<float>({50, 8}, 990);
  const auto i = indices({30}, 991, 50, 50);
  const std::string ir = dyn::jit(f).llvm_ir(x, i);
  // One loop nest over the output reads x through the indices: no buffer is
  // allocated for the gathered rows (the result is the only store target).
  CHECK(ir.find("malloc") == std::string::npos);
  const auto got = dyn::jit(f)(x, i);
  const auto want = dyn::eager(f)(x, i);
  for (i64 k = 0; k < want.size(); ++k) CHECK(test_util::ulp_distance(got.data()[k], want.data()[k]) <= 4);
}

TEST_CASE("jit: take_along_axis and multi-array indexing read their index pieces in place: no index temporary") {
  // The indices of both are one [B..., 1] array per indexed axis,
  // concatenated into [B..., K] (as jnp builds them): the concatenate stays
  // fused into the gather (the plan at the head of llvm_ir says so), and the
  // kernel allocates nothing but its result.
  const auto along = [](const auto& x, const auto& i) { return dyn::take_along_axis(x, i, 1) * 2.0f; };
  const auto x = gen<float>({300, 40}, 995);
  const auto i = indices({300, 20}, 996, 40, 40);
  const std::string ir = dyn::jit(along).llvm_ir(x, i);
  INFO(ir.substr(0, 2000));
  CHECK(ir.find("concatenate: fused") != std::string::npos);
  CHECK(ir.find("concatenate: buffer") == std::string::npos);
  CHECK(ir.find("malloc") == std::string::npos);
  // Exactly (x holds NaNs: ulp_distance counts NaN == NaN).
  const auto same = [](const auto& p, const auto& q) {
    REQUIRE(p.shape() == q.shape());
    for (i64 k = 0; k < p.size(); ++k) CHECK(test_util::ulp_distance(p.data()[k], q.data()[k]) == 0);
  };
  same(dyn::jit(along)(x, i), dyn::eager(along)(x, i));
  // x[i, j] with two index arrays, and a scatter-add through the same pieces.
  const auto pair = [](const auto& v, const auto& r, const auto& c) {
    return std::make_tuple(v.at(r, c).get() + 1.0f, v.at(r, c).add(2.0f));
  };
  const auto r = indices({5000}, 997, 300, 300);
  const auto c = indices({5000}, 998, 40, 40);
  const std::string pir = dyn::jit(pair).llvm_ir(x, r, c);
  CHECK(pir.find("concatenate: buffer") == std::string::npos);
  const auto [g, a] = dyn::jit(pair)(x, r, c);
  const auto [ge, ae] = dyn::eager(pair)(x, r, c);
  same(g, ge);
  same(a, ae);
}

TEST_CASE("jit: one kernel serves every length of a polymorphic gather and scatter") {
  const auto f = dyn::jit([](const auto& x, const auto& i) { return x.at(i).add(x.at(i).get() * 2.0); },
                          dyn::polymorphic_shapes{"(n, m)", "(k,)"});
  for (i64 n : {3, 17, 1}) {
    const auto x = gen<double>({n, 5}, 1000 + static_cast<std::uint64_t>(n));
    const auto i = indices({n + 2}, 1010 + static_cast<std::uint64_t>(n), static_cast<i32>(n), static_cast<i32>(n) + 1);
    const auto got = f(x, i);
    const auto want = dyn::eager([](const auto& a, const auto& b) { return a.at(b).add(a.at(b).get() * 2.0); })(x, i);
    REQUIRE(got.shape() == want.shape());
    for (i64 k = 0; k < want.size(); ++k) CHECK(test_util::ulp_distance(got.data()[k], want.data()[k]) == 0);  // NaN == NaN
  }
  CHECK(f.stats().compiles == 1);
}

TEST_CASE("jit: a gather from an empty axis is an IndexError, and the function stays usable") {
  // The rows kept by the mask have a length computed in the kernel; none kept
  // leaves nothing to read at row 1.
  const auto f = dyn::jit([](const auto& x, const auto& m, const auto& i) { return dyn::compress(m, x).at(i).get(); });
  const auto x = gen<float>({4, 2}, 1020);
  const dyn::Array<bool> none({4}, {false, false, false, false}), some({4}, {false, true, true, false});
  CHECK(test_util::message_of<dyn::IndexError>([&] { (void)f(x, none, dyn::Array<i32>({1}, {1})); }) ==
        "gather: cannot index into an operand axis of size 0 (the result is not empty)");
  // Eager knows the size when it indexes: the numpy layer says so.
  CHECK(test_util::message_of<dyn::IndexError>([&] { (void)dyn::compress(none, x).at(dyn::Array<i32>({1}, {1})).get(); }) ==
        "at().get: cannot index into axis 0 of size 0 of an array of shape (0, 2)");
  // Nothing to read: an empty result is fine.
  CHECK(f(x, none, dyn::Array<i32>({0})).shape() == std::vector<i64>{0, 2});
  // The function still works: rows 1 and 2 kept; index 3 clamps to 1, -2 wraps to 0.
  const auto r = f(x, some, dyn::Array<i32>({2}, {3, -2}));
  CHECK(r(0, 1) == x(2, 1));
  CHECK(r(1, 0) == x(1, 0));
}

TEST_CASE("jit: nonzero and compress allocate their dynamic-length results in the kernel") {
  const auto f = dyn::jit([](const auto& x) {
    const auto kept = dyn::compress(x > 0.0, x);
    return std::make_tuple(dyn::nonzero(x > 0.0), kept * 2.0, dyn::sum(kept));
  });
  for (i64 n : {0, 1, 9, 1000}) {
    const auto x = gen<double>({n}, 1100 + static_cast<std::uint64_t>(n));
    const auto [i, k, s] = f(x);
    const auto [ie, ke, se] = dyn::eager([](const auto& v) {
      const auto kept = dyn::compress(v > 0.0, v);
      return std::make_tuple(dyn::nonzero(v > 0.0), kept * 2.0, dyn::sum(kept));
    })(x);
    REQUIRE(i.shape() == ie.shape());
    CHECK(dyn::array_equal(i, ie));
    CHECK(dyn::array_equal(k, ke));
    CHECK(test_util::ulp_distance(s(), se()) <= 64);
  }
}

TEST_CASE("jit: nonzero of an n-D mask: one index array per axis, their one length computed by the kernel") {
  const auto f = [](const auto& x) {
    const auto [i, j, k] = dyn::nonzero<3>(x > 0.5);
    // The indices pick the elements back out, fused into the product.
    return std::make_tuple(i, j, k, x.at(i, j, k).get() * 2.0);
  };
  const auto g = dyn::jit(f, dyn::polymorphic_shapes{"(a, b, c)"});
  for (i64 n : {1, 2, 4, 9}) {  // (polymorphic dimensions are >= 1)
    const auto x = gen<double>({n, 3, n + 1}, 1150 + static_cast<std::uint64_t>(n));
    const auto got = g(x);
    const auto want = dyn::eager(f)(x);
    REQUIRE(std::get<0>(got).shape() == std::get<0>(want).shape());
    CHECK(dyn::array_equal(std::get<0>(got), std::get<0>(want)));
    CHECK(dyn::array_equal(std::get<1>(got), std::get<1>(want)));
    CHECK(dyn::array_equal(std::get<2>(got), std::get<2>(want)));
    CHECK(dyn::array_equal(std::get<3>(got), std::get<3>(want)));
    for (i64 e = 0; e < std::get<0>(got).size(); ++e)
      CHECK(x(std::get<0>(got)(e), std::get<1>(got)(e), std::get<2>(got)(e)) > 0.5);
  }
  CHECK(g.stats().compiles == 1);
  // Static shapes: the same numbers.
  const auto x = gen<double>({5, 2, 4}, 1160);
  const auto [i, j, k, v] = dyn::jit(f)(x);
  const auto [ie, je, ke, ve] = dyn::eager(f)(x);
  CHECK(dyn::array_equal(i, ie));
  CHECK(dyn::array_equal(j, je));
  CHECK(dyn::array_equal(k, ke));
  CHECK(dyn::array_equal(v, ve));
}

TEST_CASE("jit: a while loop whose carried array shrinks by compress each iteration") {
  // Keep the values above the mean until fewer than 4 remain: the carried
  // length changes every iteration (a dynamic dimension of the loop state).
  const auto f = [](const auto& x) {
    return dyn::while_loop([](const auto& v) { return dyn::dim_value(v.shape(0)) >= 4; },
                           {.preserve_dimensions = false})(
        [](const auto& v) { return dyn::compress(v > dyn::mean(v), v); })(x);
  };
  // The loop state starts with a dynamic length (compress): it may change.
  const auto g = [&](const auto& x) { return f(dyn::compress(x == x, x)); };
  const auto x = gen<double>({200}, 1200, Gen::general);
  const auto got = dyn::jit(g)(x);
  const auto want = dyn::eager(g)(x);
  REQUIRE(got.shape() == want.shape());
  CHECK(dyn::array_equal(got, want));
}

// A one-axis scatter of more than two blocks of 512 updates chooses, per
// block, between combining runs of equal indices in a register and writing
// each update back at once (llvm/lower_scatter.hpp). The choice must never
// show in the result: the indices below alternate between random stretches
// (few runs: the next block writes directly), long sorted runs (many: runs
// again, at the latest at a probe block) and runs that straddle a block
// boundary (a run still open when a direct block starts must be written
// before that block reads its element), with negative and out-of-range
// indices (the scatter and a fused gather test the likely in-range case
// first and wrap, clamp or drop only otherwise: Emitter::likely_in_range);
// f64 updates of mixed magnitudes make every order of additions
// give other bits.
namespace {

dyn::Array<i32> run_and_random_indices(i64 n, i64 bins, std::uint64_t seed) {
  constexpr i64 kBlock = 512;
  dyn::Array<i32> idx({n});
  i32* p = idx.mutable_data();
  for (i64 k = 0; k < n; ++k) {
    if ((k / kBlock) % 7 < 3) p[k] = static_cast<i32>(jit_diff::lcg(seed) % static_cast<std::uint64_t>(bins + 40)) - 20;
    else p[k] = static_cast<i32>((k / 13) % bins);  // sorted runs of 13
    if (k % kBlock == kBlock - 1 && k + 3 < n) {     // a run across the block boundary
      p[k + 1] = p[k + 2] = p[k + 3] = p[k];
      k += 3;
    }
  }
  return idx;
}

const auto long_scatters = [](int, const auto& x, const auto& i, const auto& u) {
  // The last: a gather fused into the updates (CSR's form), its indices
  // negative and past the end too (wrapped, then clamped).
  return std::make_tuple(x.at(i).add(u), x.at(i).mul(u * 1e-3 + 1.0), x.at(i).max(u), x.at(i).set(u),
                         dyn::zeros<i64>({700}).at(i).add(1), x.at(i).add(u * x.at(i * 2 - 300).get()));
};

}  // namespace

TEST_CASE("jit: long one-axis scatters give eager's bits whether a block combines runs or writes directly") {
  const i64 n = 41 * 512 + 77;  // past two probe periods (16 blocks), and a partial last block
  const auto idx = run_and_random_indices(n, 700, 77);
  const Three r = run3(long_scatters, 0, gen<double>({700}, 4343), idx, gen<double>({n}, 4242));
  CHECK(agree(r, "long scatters"));  // exact: Tol{} compares floats bit for bit here
  expect_ok(r, "long scatters");
  // One kernel for every length: the blocks are counted at run time.
  const auto f = dyn::jit([](const auto& x, const auto& i, const auto& u) { return long_scatters(0, x, i, u); },
                          dyn::polymorphic_shapes{"(b,)", "(k,)", "(k,)"});
  for (i64 len : {i64{5}, i64{1024}, i64{1025}, n, 3 * n + 1}) {
    const auto i = run_and_random_indices(len, 700, 90 + static_cast<std::uint64_t>(len));
    const auto x = gen<double>({700}, 4343);
    const auto u = gen<double>({len}, 4444 + static_cast<std::uint64_t>(len));
    const auto got = f(x, i, u);
    const auto want = dyn::eager([](const auto& a, const auto& b, const auto& c) { return long_scatters(0, a, b, c); })(x, i, u);
    INFO("length " << len);
    const auto bits = [](const auto& a, const auto& b) {  // NaN == NaN
      REQUIRE(a.shape() == b.shape());
      for (i64 k = 0; k < a.size(); ++k) CHECK(test_util::ulp_distance(a.data()[k], b.data()[k]) == 0);
    };
    bits(std::get<0>(got), std::get<0>(want));
    bits(std::get<1>(got), std::get<1>(want));
    bits(std::get<2>(got), std::get<2>(want));
    bits(std::get<3>(got), std::get<3>(want));
    CHECK(dyn::array_equal(std::get<4>(got), std::get<4>(want)));
    bits(std::get<5>(got), std::get<5>(want));
  }
  CHECK(f.stats().compiles == 1);
}
