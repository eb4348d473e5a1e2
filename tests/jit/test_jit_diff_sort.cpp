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
