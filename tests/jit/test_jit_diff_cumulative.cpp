// Differential tests of dyn::jit: cumulative reductions (cumsum cumprod
// cummax cummin) on every axis, forwards and reversed, for every dtype; with
// a fused producer; with runtime (polymorphic) and dynamic (traced) sizes.
// Compiled (dyn::jit) vs interpreted (dyn::eval_jaxpr) vs eager, see
// jit_diff.hpp: EXACTLY, floats included, since the kernel keeps eager's
// sequential order (llvm/lower_cumulative.hpp).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

// The static op code: axis (possibly negative) and reverse.
int cum_code(i64 axis, bool reverse) { return static_cast<int>((axis + 8) * 2 + (reverse ? 1 : 0)); }

template <class X>
auto apply_cum(int code, const X& x) {
  const i64 axis = code / 2 - 8;
  const bool rev = (code & 1) != 0;
  if constexpr (std::is_same_v<typename X::value_type, bool>)  // cummax/cummin take numbers only
    return std::make_tuple(dyn::cumsum(x, axis, rev), dyn::cumprod(x, axis, rev));
  else
    return std::make_tuple(dyn::cumsum(x, axis, rev), dyn::cumprod(x, axis, rev), dyn::cummax(x, axis, rev),
                           dyn::cummin(x, axis, rev));
}

const auto cum_fn = [](int code, const auto& in) {
  return map_all(in, [code](const auto& x) { return apply_cum(code, x); });
};

template <class T>
void check_cumulative() {
  const std::vector<Shp> shapes = {{5},       {0},       {3, 4},       {1, 5},   {2, 0, 3},
                                   {2, 3, 4}, {1, 5, 1}, {37, 9},      {3, 300}, {2, 3, 2, 5}};
  std::uint64_t seed = 400;
  for (const Shp& s : shapes) {
    const auto x = gen<T>(s, seed++, Gen::reduce);
    const i64 rank = static_cast<i64>(s.size());
    for (i64 a = -1; a < rank; ++a)
      for (bool rev : {false, true}) {
        std::ostringstream what;
        what << "cumulative ops of " << dt_name(dyn::dtype_v<T>) << dyn::detail::shape_str(dyn::detail::to_shape(s))
             << " along axis " << a << (rev ? ", reversed" : "");
        const Three r = run3(cum_fn, cum_code(a, rev), only<Singles>(Arrs<T>{x}));
        agree(r, what.str());
        expect_ok(r, what.str());
      }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("jit diff: cumsum cumprod cummax cummin on every axis, forwards and reversed, exactly", T, bool,
                   i32, i64, float, double) {
  check_cumulative<T>();
}

TEST_CASE("jit diff: cummax and cummin of bool are rejected the same way by jit, eval_jaxpr and eager") {
  const auto f = [](int op, const auto& x) { return op == 0 ? dyn::cummax(x, 0) : dyn::cummin(x, 0); };
  for (int op : {0, 1}) {
    const Three r = run3(f, op, dyn::Array<bool>({3}, {true, false, true}));
    agree(r, "cummax/cummin of bool");
    expect_accepted(r, false, "cummax/cummin of bool", dtype_rejection(op == 0 ? "cummax" : "cummin", DType::bool_, kNumeric));
  }
}

TEST_CASE("jit diff: an elementwise producer is fused into the cumulative nest, which vectorises off the last axis") {
  // Exactly rounded producers only, so jit == eager bit for bit; a transpose
  // (a remap that needs a multi-index) and a broadcast feed it too.
  const auto f = [](int axis, const auto& x, const auto& v) {
    return dyn::cumsum(dyn::transpose(x * 2.0 - v, {1, 0}) + 1.0, axis);
  };
  const auto x = gen<double>({33, 40}, 7, Gen::reduce);
  const auto v = gen<double>({40}, 8, Gen::reduce);
  for (int axis : {0, 1}) {
    const Three r = run3(f, axis, x, v);
    agree(r, "cumsum of a fused producer along axis " + std::to_string(axis));
    expect_ok(r, "fused producer");
  }
  const auto g = [](int axis, const auto& x) { return dyn::cummax(dyn::abs(x) * 3.0 - 1.0, axis); };
  const auto jg = dyn::jit(g, dyn::static_argnums<0>{});
  const std::string ir0 = jg.llvm_ir(0, x);
  // The producer has no buffer: the plan names it fused, the nest the only root.
  CHECK(ir0.find("= abs: fused") != std::string::npos);
  CHECK(ir0.find("= mul: fused") != std::string::npos);
  CHECK(ir0.find("= sub: fused") != std::string::npos);
  CHECK(ir0.find("= cummax: buffer (output)") != std::string::npos);
  CHECK(ir0.find("aligned_alloc") == std::string::npos);
  CHECK(ir0.find("dynstage_temp_alloc") == std::string::npos);
  // Along axis 0 the inner loop runs over contiguous rows: vector code.
  CHECK(ir0.find("x double>") != std::string::npos);
  for (int axis : {0, 1}) {
    const Three r = run3(g, axis, x);
    agree(r, "cummax of a fused producer along axis " + std::to_string(axis));
  }
}

// (A dimension variable is >= 1, as in JAX's shape polymorphism; size 0 is
// the traced-size case below.)
TEST_CASE("jit diff: cumulative ops with polymorphic shapes: one kernel for every size") {
  const auto f = [](const auto& x) {
    return std::make_tuple(dyn::cumsum(x, 0), dyn::cumprod(x * 0.5, 1, true), dyn::cummax(x, -1), dyn::cummin(x, 0, true));
  };
  check_polymorphic_2d(f, 500, Gen::reduce);
}

TEST_CASE("jit diff: cumsum of an array whose length is a traced size (Catalyst's dynamic dimension)") {
  const auto f = [](dyn::Tracer<i64> n) {
    auto x = dyn::astype<double>(dyn::arange<std::int32_t>(n)) * 0.25 - 3.0;
    return std::make_tuple(dyn::cumsum(x, 0), dyn::cummin(dyn::arange<i64>(n) % 5 - 2, 0, true));
  };
  const auto jf = dyn::jit(f);
  const auto ef = [](i64 n) {
    auto x = dyn::astype<double>(dyn::arange<std::int32_t>(n)) * 0.25 - 3.0;
    return std::make_tuple(dyn::cumsum(x, 0), dyn::cummin(dyn::arange<i64>(n) % 5 - 2, 0, true));
  };
  for (i64 n : {0, 1, 2, 9, 1000}) {
    const auto got = leaves(jf(n));
    const auto want = leaves(ef(n));
    for (std::size_t k = 0; k < got.size(); ++k)
      CHECK_MESSAGE(mismatch(got[k], want[k], Tol{}).empty(), "output #", k, " for n=", n, ": ",
                    mismatch(got[k], want[k], Tol{}));
  }
  CHECK(jf.stats().compiles == 1);
}
