// Differential tests of dyn::jit: argmax argmin (an index per row: the
// compiled nest carries value and index together, llvm/lower_argreduce.hpp)
// and any all (reduce_or, reduce_and in the shared reduction nest) on every
// axis, every dtype, ties, NaNs, keepdims; with a fused producer; with
// runtime (polymorphic) and dynamic (traced) sizes. Compiled (dyn::jit) vs
// interpreted (dyn::eval_jaxpr) vs eager, see jit_diff.hpp: EXACTLY (indices
// and booleans).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

// The static op code: axis (possibly negative), and 1 for keepdims.
int arg_code(i64 axis, bool keep) { return static_cast<int>((axis + 8) * 2 + (keep ? 1 : 0)); }

template <class X>
auto apply_arg(int code, const X& x) {
  const i64 axis = code / 2 - 8;
  if (code & 1)
    return std::make_tuple(dyn::argmax(x, axis, dyn::keepdims), dyn::argmin(x, axis, dyn::keepdims),
                           dyn::any(x, {axis}, dyn::keepdims), dyn::all(x, {axis}, dyn::keepdims));
  return std::make_tuple(dyn::argmax(x, axis), dyn::argmin(x, axis), dyn::any(x, {axis}), dyn::all(x, {axis}));
}

template <class T>
std::vector<T> values(const AnyArray& a) {
  const auto x = a.get<T>();
  return std::vector<T>(x.data(), x.data() + x.size());
}

const auto arg_fn = [](int code, const auto& in) {
  return map_all(in, [code](const auto& x) { return apply_arg(code, x); });
};

template <class T>
void check_arg_reductions() {
  // Gen::mild: few distinct values (ties), and for floats NaN, +-inf, +-0.
  const std::vector<Shp> shapes = {{5},       {3, 4},    {1, 5},   {2, 0, 3}, {2, 3, 4},
                                   {1, 5, 1}, {37, 9},   {3, 300}, {2, 3, 2, 5}};
  std::uint64_t seed = 600;
  for (const Shp& s : shapes) {
    const auto x = gen<T>(s, seed++, Gen::mild);
    const i64 rank = static_cast<i64>(s.size());
    for (i64 a = -1; a < rank; ++a)
      for (bool keep : {false, true}) {
        std::ostringstream what;
        what << "argmax argmin any all of " << dt_name(dyn::dtype_v<T>)
             << dyn::detail::shape_str(dyn::detail::to_shape(s)) << " along axis " << a << (keep ? ", keepdims" : "");
        const Three r = run3(arg_fn, arg_code(a, keep), only<Singles>(Arrs<T>{x}));
        agree(r, what.str());
        const i64 n = s[static_cast<std::size_t>(a < 0 ? a + rank : a)];
        if (n > 0) {
          expect_ok(r, what.str());
        } else {  // jnp's error for an empty axis, the same three ways
          CHECK_MESSAGE(r.error() == "ShapeError", what.str(), ": expected a ShapeError, got [", r.error(), "]");
        }
      }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("jit diff: argmax argmin any all on every axis, keepdims, ties and NaNs, exactly", T, bool, i32,
                   i64, float, double) {
  check_arg_reductions<T>();
}

TEST_CASE("jit diff: argmax and argmin of floats: the first NaN wins, ties keep the first index") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const dyn::Array<double> x({4, 5}, {1, 3, 3, 2, 0,            //
                                      -0.0, 0.0, -inf, -inf, 5,  //
                                      nan, 9, nan, -1, 9,        //
                                      2, 2, 2, 2, nan});
  const auto f = [](int axis, const auto& v) { return std::make_tuple(dyn::argmax(v, axis), dyn::argmin(v, axis)); };
  for (int axis : {0, 1}) {
    const Three r = run3(f, axis, x);
    agree(r, "argmax/argmin with NaNs along axis " + std::to_string(axis));
    expect_ok(r, "NaNs");
  }
  const auto got = leaves(dyn::jit(f, dyn::static_argnums<0>{})(1, x));
  CHECK(values<std::int32_t>(got[0]) == std::vector<std::int32_t>{1, 4, 0, 4});
  CHECK(values<std::int32_t>(got[1]) == std::vector<std::int32_t>{4, 2, 0, 4});
}

TEST_CASE("jit diff: an elementwise producer is fused into the argmax nest") {
  const auto g = [](int axis, const auto& x) { return dyn::argmax(dyn::abs(x) * 3.0 - 1.0, axis); };
  const auto x = gen<double>({33, 40}, 7, Gen::mild);
  const auto jg = dyn::jit(g, dyn::static_argnums<0>{});
  const std::string ir0 = jg.llvm_ir(0, x);
  CHECK(ir0.find("= abs: fused") != std::string::npos);
  CHECK(ir0.find("= mul: fused") != std::string::npos);
  CHECK(ir0.find("= argmax: buffer (output)") != std::string::npos);
  CHECK(ir0.find("aligned_alloc") == std::string::npos);
  CHECK(ir0.find("dynstage_temp_alloc") == std::string::npos);
  for (int axis : {0, 1, -1}) {
    const Three r = run3(g, axis, x);
    agree(r, "argmax of a fused producer along axis " + std::to_string(axis));
    expect_ok(r, "fused producer");
  }
}

// (A dimension variable is >= 1, as in JAX's shape polymorphism.)
TEST_CASE("jit diff: argmax argmin any all with polymorphic shapes: one kernel for every size") {
  const auto f = [](const auto& x) {
    return std::make_tuple(dyn::argmax(x, 0), dyn::argmin(x, 1), dyn::argmax(x, -1, dyn::keepdims),
                           dyn::any(x > 0.5), dyn::all(x > -1.0, {1}));
  };
  check_polymorphic_2d(f, 700, Gen::mild);
}

TEST_CASE("jit diff: argmax of an array whose length is a traced size; a runtime-empty axis gives 0 (lax's)") {
  const auto body = [](auto x) {
    return std::make_tuple(dyn::argmax(x % 7, 0), dyn::argmin(dyn::astype<double>(x) * -0.5, 0), dyn::any(x > 3));
  };
  const auto jf = dyn::jit([&](dyn::Tracer<i64> n) { return body(dyn::arange<i64>(n)); });
  for (i64 n : {1, 2, 9, 1000}) {
    const auto got = leaves(jf(n));
    const auto want = leaves(body(dyn::arange<i64>(n)));
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "output #", k, " for n=", n, ": ",
                    mismatch(got[k], want[k], Tol{}));
  }
  // Size 0 at run time: no maximum to find; the kernel gives index 0 (eager,
  // where the size is a static 0, raises jnp's error instead).
  const auto empty = leaves(jf(i64{0}));
  CHECK(values<std::int32_t>(empty[0]) == std::vector<std::int32_t>{0});
  CHECK(values<bool>(empty[2]) == std::vector<bool>{false});
  CHECK_THROWS_AS(body(dyn::arange<i64>(0)), dyn::ShapeError);
  CHECK(jf.stats().compiles == 1);
}

// Along the last axis the kernel scans lanes (llvm/lower_argreduce.hpp:
// blocks of 16 elements in 32-byte vectors, a merge, and the last block
// overlapping the one before): the first occurrence must win across lanes,
// blocks, the merge and the overlap.
TEST_CASE_TEMPLATE("jit diff: argmax and argmin along the last axis: first occurrence across lanes and the tail", T,
                   float, double, std::int32_t, std::int64_t) {
  const i64 n = 70;  // four blocks of 16 and an overlapping fifth
  std::vector<T> v(static_cast<std::size_t>(4 * n), T(1));
  auto row = [&](i64 r) { return v.begin() + r * n; };
  // Row 0: the maximum 5 at 40 (a later chunk, lane 0) and at 3 (chunk 0, lane 3): 3 wins.
  row(0)[40] = row(0)[3] = T(5);
  // Row 1: the maximum only in the tail (67), the minimum at 64 and 69 (tail) and 65.
  row(1)[67] = T(9), row(1)[64] = row(1)[69] = row(1)[65] = T(-4);
  // Row 2: equal everywhere: index 0 both ways.
  // Row 3: the maximum at 33 and 1 in different lanes of different chunks; the minimum at 31 then 0.
  row(3)[33] = row(3)[1] = T(7), row(3)[31] = row(3)[0] = T(-7);
  const dyn::Array<T> x({4, n}, v);
  const auto f = [](const auto& a) { return std::make_tuple(dyn::argmax(a, 1), dyn::argmin(a, 1)); };
  const auto got = leaves(dyn::jit(f)(x));
  CHECK(values<std::int32_t>(got[0]) == std::vector<std::int32_t>{3, 67, 0, 1});
  CHECK(values<std::int32_t>(got[1]) == std::vector<std::int32_t>{0, 64, 0, 0});
  if constexpr (std::is_floating_point_v<T>) {  // NaNs at 50 and 45: the first NaN wins both ways
    std::vector<T> w = v;
    w[50] = w[45] = std::numeric_limits<T>::quiet_NaN();
    const auto g = leaves(dyn::jit(f)(dyn::Array<T>({4, n}, w)));
    CHECK(values<std::int32_t>(g[0]) == std::vector<std::int32_t>{45, 67, 0, 1});
    CHECK(values<std::int32_t>(g[1]) == std::vector<std::int32_t>{45, 64, 0, 0});
  }
}

// After the whole blocks of a row, the kernel looks at the block that ends
// at the row's end (llvm/lower_argreduce.hpp): it overlaps positions already
// seen, which must never win again (ties keep the first index, a NaN seen
// before stays the answer). Rows of every length around the block (16
// elements), static and symbolic, planted and random (few distinct values:
// ties; NaNs and infinities for floats), exactly eager's.
TEST_CASE_TEMPLATE("jit diff: argmax and argmin: the last block overlaps the previous one", T, float, double,
                   std::int32_t, std::int64_t) {
  const i64 B = 16;  // kArgBlockElems
  const auto f = [](const auto& a) { return std::make_tuple(dyn::argmax(a, 1), dyn::argmin(a, 1)); };
  auto jp = dyn::jit(f, dyn::polymorphic_shapes{"(r, n)"});
  for (i64 n : {i64{1}, i64{5}, B - 1, B, B + 1, B + 5, 2 * B - 1, 2 * B, 2 * B + 3, 4 * B - 1, i64{100}}) {
    CAPTURE(n);
    // Planted rows (n > B + 3): the extremum in the overlap and again,
    // equal, after it; a larger one after it, twice; a NaN in the overlap
    // and another after it; the extremum at 0 and again at the end.
    std::vector<T> v(static_cast<std::size_t>(6 * n), T(1));
    auto at = [&](i64 r, i64 k) -> T& { return v[static_cast<std::size_t>(r * n + k)]; };
    if (n > B + 3) {
      const i64 o = n - B + 1;  // in the last block (for most n in the block before it too)
      at(0, o) = T(5), at(0, n - 1) = T(5), at(0, o + 1) = T(-5), at(0, n - 2) = T(-5);
      at(1, o) = T(5), at(1, B + 1) = T(6), at(1, n - 1) = T(6), at(1, 2) = T(-5), at(1, B + 2) = T(-6);
      at(3, 0) = T(9), at(3, n - 1) = T(9), at(3, 1) = T(-9), at(3, n - 2) = T(-9);
      if constexpr (std::is_floating_point_v<T>) {
        at(2, o) = at(2, n - 1) = std::numeric_limits<T>::quiet_NaN();
        at(4, n - 1) = std::numeric_limits<T>::quiet_NaN();
      }
    }
    const dyn::Array<T> planted({6, n}, v);
    const auto x = gen<T>({7, n}, 900 + static_cast<std::uint64_t>(n), Gen::mild);
    for (const auto* a : {&planted, &x}) {
      const auto want = leaves(dyn::eager(f)(*a));
      const auto got = leaves(dyn::jit(f)(*a));
      const auto poly = leaves(jp(*a));
      for (std::size_t k = 0; k < 2; ++k) {
        CHECK(values<std::int32_t>(got[k]) == values<std::int32_t>(want[k]));
        CHECK(values<std::int32_t>(poly[k]) == values<std::int32_t>(want[k]));
      }
    }
    if (n > B + 3) {
      const auto got = leaves(dyn::jit(f)(planted));
      const auto mx = values<std::int32_t>(got[0]), mn = values<std::int32_t>(got[1]);
      const auto o = static_cast<std::int32_t>(n - B + 1), last = static_cast<std::int32_t>(n - 1);
      CHECK(mx[0] == o);
      CHECK(mn[0] == o + 1);
      CHECK(mx[1] == B + 1);
      CHECK(mn[1] == B + 2);
      CHECK(mx[3] == 0);
      CHECK(mn[3] == 1);
      if constexpr (std::is_floating_point_v<T>) {
        CHECK(mx[2] == o);
        CHECK(mn[2] == o);
        CHECK(mx[4] == last);
        CHECK(mn[4] == last);
      }
    }
  }
  CHECK(jp.stats().compiles == 1);
}
