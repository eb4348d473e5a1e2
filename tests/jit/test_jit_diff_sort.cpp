// Differential tests of dyn::jit: sort (lax.sort of one operand; the kernel
// calls the runtime routine that the eager kernel uses, std::stable_sort over
// each line, llvm/lower_sort.hpp) on every axis, every dtype, with NaNs,
// ties and signed zeros; with a fused producer; with runtime (polymorphic)
// and dynamic (traced) sizes. Compiled (dyn::jit) vs interpreted
// (dyn::eval_jaxpr) vs eager, see jit_diff.hpp: EXACTLY.
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

const auto sort_fn = [](int axis, const auto& in) {
  return map_all(in, [axis](const auto& x) { return dyn::sort(x, axis); });
};

template <class T>
void check_sort() {
  const std::vector<Shp> shapes = {{5},       {0},      {3, 4},   {1, 5},   {2, 0, 3},
                                   {2, 3, 4}, {1, 5, 1}, {37, 9}, {3, 300}, {2, 3, 2, 5}};
  std::uint64_t seed = 800;
  for (const Shp& s : shapes)
    for (Gen g : {Gen::general, Gen::mild}) {  // mild: many ties and signed zeros
      const auto x = gen<T>(s, seed++, g);
      const i64 rank = static_cast<i64>(s.size());
      for (i64 a = -1; a < rank; ++a) {
        std::ostringstream what;
        what << "sort of " << dt_name(dyn::dtype_v<T>) << dyn::detail::shape_str(dyn::detail::to_shape(s))
             << " along axis " << a;
        const Three r = run3(sort_fn, static_cast<int>(a), only<Singles>(Arrs<T>{x}));
        agree(r, what.str());
        expect_ok(r, what.str());
      }
    }
}

}  // namespace

TEST_CASE_TEMPLATE("jit diff: sort on every axis, every dtype, NaNs last, stable, exactly", T, bool, i32, i64, float,
                   double) {
  check_sort<T>();
}

TEST_CASE("jit diff: an elementwise producer of sort is computed into its output, then sorted in place") {
  const auto g = [](int axis, const auto& x) { return dyn::sort(dyn::abs(x) * 3.0 - 1.0, axis) + 1.0; };
  const auto x = gen<double>({33, 40}, 7, Gen::mild);
  const auto jg = dyn::jit(g, dyn::static_argnums<0>{});
  const std::string ir0 = jg.llvm_ir(0, x);
  CHECK(ir0.find("= abs: fused") != std::string::npos);
  CHECK(ir0.find("= sort: buffer") != std::string::npos);
  CHECK(ir0.find("dynstage_sort_f64") != std::string::npos);
  for (int axis : {0, 1, -1}) {
    const Three r = run3(g, axis, x);
    agree(r, "sort of a fused producer along axis " + std::to_string(axis));
    expect_ok(r, "fused producer");
  }
}

TEST_CASE("jit diff: sort with polymorphic shapes and traced sizes: one kernel for every size") {
  const auto f = [](const auto& x) { return std::make_tuple(dyn::sort(x, 0), dyn::sort(x * -1.0)); };
  check_polymorphic_2d(f, 900, Gen::mild);

  const auto body = [](auto n) { return dyn::sort((dyn::arange<i64>(n) * 7) % 11); };
  const auto jd = dyn::jit([&](dyn::Tracer<i64> n) { return body(n); });
  for (i64 n : {0, 1, 2, 9, 1000}) {
    const auto got = leaves(jd(n));
    const auto want = leaves(body(n));
    CHECK_MESSAGE(mismatch(got[0], want[0], Tol{}).empty(), "n=", n, ": ", mismatch(got[0], want[0], Tol{}));
  }
  CHECK(jd.stats().compiles == 1);
}

// argsort, sort_key_val (lax.sort of two operands: dynstage_sort_multi) and
// top_k (dynstage_top_k_<dtype>): jit against eager, exactly.

const auto argsort_fn = [](int axis, const auto& in) {
  return map_all(in, [axis](const auto& x) { return dyn::argsort(x, axis); });
};

template <class T>
void check_argsort() {
  const std::vector<Shp> shapes = {{5}, {0}, {3, 4}, {1, 5}, {2, 0, 3}, {2, 3, 4}, {37, 9}, {3, 300}};
  std::uint64_t seed = 1800;
  for (const Shp& s : shapes)
    for (Gen g : {Gen::general, Gen::mild}) {
      const auto x = gen<T>(s, seed++, g);
      for (i64 a = -1; a < static_cast<i64>(s.size()); ++a) {
        const std::string what = "argsort of " + dt_name(dyn::dtype_v<T>) +
                                 dyn::detail::shape_str(dyn::detail::to_shape(s)) + " along axis " + std::to_string(a);
        const Three r = run3(argsort_fn, static_cast<int>(a), only<Singles>(Arrs<T>{x}));
        agree(r, what);
        expect_ok(r, what);
      }
    }
}

TEST_CASE_TEMPLATE("jit diff: argsort on every axis, every dtype, stable, NaNs last, exactly", T, bool, i32, i64, float,
                   double) {
  check_argsort<T>();
}

TEST_CASE("jit diff: sort_key_val and top_k, with fused producers; one kernel for every size") {
  const auto f = [](const auto& x) {
    auto [k, v] = dyn::sort_key_val(dyn::abs(x), x * 2.0, 0);
    auto [tv, ti] = dyn::top_k(x, 1);
    return std::make_tuple(k, v, tv, ti, dyn::argsort(-x));
  };
  check_polymorphic_2d(f, 1900, Gen::mild);
  const auto x = gen<double>({33, 40}, 7, Gen::mild);
  const std::string ir = dyn::jit(f).llvm_ir(x);
  CHECK(ir.find("dynstage_sort_multi") != std::string::npos);
  CHECK(ir.find("dynstage_top_k_f64") != std::string::npos);
  CHECK(ir.find("= abs: fused") != std::string::npos);  // computed in sort's copy nest
  for (int seed = 0; seed < 4; ++seed) {
    const auto y = gen<float>({7, 64}, 1950 + static_cast<std::uint64_t>(seed), seed % 2 ? Gen::mild : Gen::general);
    const auto g = [](const auto& v) { return dyn::top_k(v, 5); };
    const auto got = leaves(dyn::jit(g)(y));
    const auto want = leaves(g(y));
    for (std::size_t k = 0; k < 2; ++k) CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), mismatch(got[k], want[k], Tol{}));
  }
}

TEST_CASE("jit: top_k over a symbolic axis shorter than k is a ShapeError when it runs; the function stays usable") {
  const auto f = [](const auto& x) { return dyn::top_k(x, 3); };
  const auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
  CHECK_THROWS_WITH_AS(jf(gen<double>({2}, 1, Gen::general)),
                       doctest::Contains("top_k: k is larger than the size of the axis it selects from"),
                       dyn::ShapeError);
  const auto x = gen<double>({10}, 2, Gen::general);
  const auto got = leaves(jf(x));
  const auto want = leaves(f(x));
  CHECK(mismatch(got[0], want[0], Tol{}).empty());
  CHECK(mismatch(got[1], want[1], Tol{}).empty());
  CHECK(jf.stats().compiles == 1);
}
