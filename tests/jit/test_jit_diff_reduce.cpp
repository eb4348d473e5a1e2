// Differential tests of dyn::jit (issue 3): reductions (sum prod max min
// mean) over all axes and every subset of axes, dot and matmul, for every
// dtype: compiled (dyn::jit) vs interpreted (dyn::eval_jaxpr) vs eager
// (dyn::eager), see jit_diff.hpp. Float sums, products and dot products are
// compared within docs/backend.md's reassociation bounds, float max/min
// reductions up to the sign of zero; everything else exactly.
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

// ===========================================================================
// Reductions: sum prod max min mean, in one kernel, over all axes (no axis
// argument), over every subset of axes (a bitmask; the empty subset reduces
// nothing), and with negative axes.

constexpr int kAllAxes = -1;
constexpr int kNegativeAxes = 1 << 10;  // flag: spell the mask's axes as negative numbers

std::vector<i64> mask_axes(int code, int rank) {
  std::vector<i64> axes;
  for (int a = rank - 1; a >= 0; --a)  // descending: order must not matter
    if (code & (1 << a)) axes.push_back((code & kNegativeAxes) ? a - rank : a);
  return axes;
}

template <class X>
auto apply_reduce(int code, const X& x) {
  if (code == kAllAxes)
    return std::make_tuple(dyn::sum(x), dyn::prod(x), dyn::max(x), dyn::min(x), dyn::mean(x));
  const std::vector<i64> axes = mask_axes(code, x.rank());
  return std::make_tuple(dyn::sum(x, axes), dyn::prod(x, axes), dyn::max(x, axes), dyn::min(x, axes),
                         dyn::mean(x, axes));
}

const auto reduce_fn = [](int code, const auto& in) {
  return map_all(in, [code](const auto& x) { return apply_reduce(code, x); });
};

// Tolerances of the five results: sums reassociate (|error| <= 2 n eps
// sum|x| for two summation orders), products too (<= 2n+2 ulp with no
// overflow), max/min may turn -0 into +0, mean = sum / count.
template <class T>
std::vector<Tol> reduce_tols(int code, const dyn::Array<T>& x) {
  const std::vector<i64> axes = code == kAllAxes ? mask_axes((1 << x.rank()) - 1, x.rank()) : mask_axes(code, x.rank());
  i64 n = 1;
  for (i64 a : axes) n *= x.shape(static_cast<int>(a));
  // The bound of a float sum of x in its computation type M.
  const auto sum_bound = [&]<class M>() {
    const auto ax = dyn::abs(dyn::astype<M>(x));
    const auto abs_sum = dyn::astype<double>(dyn::sum(ax, axes));
    return abs_sum * (2.0 * static_cast<double>(n) * std::numeric_limits<M>::epsilon());
  };
  // mean is a float sum (in f32 for integers and bools), then a division.
  using M = std::conditional_t<std::is_floating_point_v<T>, T, float>;
  const Tol mean{1, false, sum_bound.template operator()<M>() / static_cast<double>(n == 0 ? 1 : n)};
  if constexpr (!std::is_floating_point_v<T>) {
    return {Tol{}, Tol{}, Tol{}, Tol{}, mean};
  } else {
    return {Tol{0, false, sum_bound.template operator()<T>()}, Tol{2.0 * static_cast<double>(n) + 2},
            Tol{0, true, {}}, Tol{0, true, {}}, mean};
  }
}

template <class T>
void check_reductions() {
  const std::vector<Shp> shapes = {{}, {5}, {0}, {3, 4}, {1, 5}, {2, 0, 3}, {2, 3, 4}, {1, 5, 1}, {37, 9}};
  std::uint64_t seed = 130;
  for (const Shp& s : shapes) {
    const auto x = gen<T>(s, seed++, Gen::reduce);
    const int rank = static_cast<int>(s.size());
    std::vector<int> codes{kAllAxes};
    for (int m = 0; m < (1 << rank); ++m) codes.push_back(m);
    if (rank >= 2) codes.push_back(kNegativeAxes | 1 | (1 << (rank - 1)));
    for (int code : codes) {
      std::ostringstream what;
      what << "sum/prod/max/min/mean of " << dt_name(dyn::dtype_v<T>) << dyn::detail::shape_str(dyn::detail::to_shape(s))
           << " over axes ";
      if (code == kAllAxes) what << "(none given: all)";
      else for (i64 a : mask_axes(code, rank)) what << a << " ";
      const Three r = run3(reduce_fn, code, only<Singles>(Arrs<T>{x}));
      agree(r, what.str(), reduce_tols(code, x));
      expect_ok(r, what.str());
    }
  }
}

TEST_CASE_TEMPLATE("jit diff: reductions over all axes and every subset", T, bool, i32, i64, float, double) {
  check_reductions<T>();
}

// Regression: a float sum over no axes, or over size-1 axes only, folds each
// element into the identity as eager does (0.0 + -0.0 == +0.0); the kernel
// used to copy the element and return -0.0.
TEST_CASE("jit diff: a sum of -0.0 over no axes or size-1 axes is +0.0, as in eager") {
  const auto f = [](int code, const auto& x) {
    return code == 0 ? dyn::sum(x, std::vector<i64>{}) : dyn::sum(x, {0});
  };
  const auto x = dyn::Array<double>({1, 3}, {-0.0, 1.0, -0.0});
  for (int code : {0, 1}) {
    const Three r = run3(f, code, x);
    REQUIRE(agree(r, "sum of -0.0, code " + std::to_string(code)));
    const auto got = r.jit.out.at(0).get<double>();
    CHECK_FALSE(std::signbit(got.data()[0]));
    CHECK_FALSE(std::signbit(got.data()[got.size() - 1]));
  }
  // Rank 0, float32, and the other reductions leave the element as it is.
  const auto g = [](int, const auto& s) { return std::make_tuple(dyn::sum(s), dyn::prod(s), dyn::max(s), dyn::min(s)); };
  const Three r = run3(g, 0, dyn::Array<float>::scalar(-0.0f));
  REQUIRE(agree(r, "reductions of a rank-0 -0.0f"));
  CHECK_FALSE(std::signbit(r.jit.out.at(0).get<float>()()));
  CHECK(std::signbit(r.jit.out.at(2).get<float>()()));
  CHECK(std::signbit(r.jit.out.at(3).get<float>()()));
}

// ===========================================================================
// dot and matmul, ranks 1 and 2 (and a product big enough for the packed
// GotoBLAS path). Floats: FMA and one rounding fewer per term, so
// |error| <= 2 K eps sum_k |a_ik b_kj|.

using DotPairs = std::tuple<Pairs<bool>, Pairs<i32>, Pairs<i64>, Pairs<float>, Pairs<double>, Pairs<i32, double>,
                            Pairs<float, i64>>;

const auto dot_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& p) { return op == 0 ? dyn::dot(p.first, p.second) : dyn::matmul(p.first, p.second); });
};

template <class A, class B>
void check_dot_pair() {
  using R = decltype(dyn::dot(std::declval<dyn::Array<A>>(), std::declval<dyn::Array<B>>()));
  using RT = typename R::value_type;
  const std::vector<std::pair<Shp, Shp>> shapes = {
      {{3}, {3}},       {{2, 3}, {3}},     {{3}, {3, 4}},   {{2, 3}, {3, 4}}, {{0}, {0}},      {{2, 0}, {0, 3}},
      {{0, 3}, {3, 2}}, {{1, 1}, {1, 1}},  {{67}, {67}},    {{5, 67}, {67}},  {{40, 50}, {50, 33}}, {{33, 64}, {64, 48}}};
  std::uint64_t seed = 150;
  for (const auto& [sa, sb] : shapes) {
    const auto a = gen<A>(sa, seed++, Gen::mild);
    const auto b = gen<B>(sb, seed++, Gen::mild);
    for (int op : {0, 1}) {
      const std::string what = std::string(op ? "matmul " : "dot ") + dt_name(dyn::dtype_v<A>) +
                               dyn::detail::shape_str(dyn::detail::to_shape(sa)) + " " + dt_name(dyn::dtype_v<B>) +
                               dyn::detail::shape_str(dyn::detail::to_shape(sb));
      Tol tol;
      if constexpr (std::is_floating_point_v<RT>) {
        const double k = static_cast<double>(sa.back());
        tol.abs = dyn::astype<double>(dyn::dot(dyn::abs(dyn::astype<RT>(a)), dyn::abs(dyn::astype<RT>(b)))) *
                  (2 * k * std::numeric_limits<RT>::epsilon());
      }
      const Three r = run3(dot_fn, op, only<DotPairs>(Pairs<A, B>{{a, b}}));
      agree(r, what, {tol});
      // dot_general needs numbers: bool . bool is rejected (a bool with a
      // number is promoted first).
      constexpr bool both_bool = std::is_same_v<A, bool> && std::is_same_v<B, bool>;
      expect_accepted(r, !both_bool, what, dtype_rejection("dot_general", DType::bool_, kNumber));
    }
  }
}

TEST_CASE("jit diff: dot and matmul for ranks 1 and 2, every dtype") {
  check_dot_pair<bool, bool>();
  check_dot_pair<i32, i32>();
  check_dot_pair<i64, i64>();
  check_dot_pair<float, float>();
  check_dot_pair<double, double>();
  check_dot_pair<i32, double>();
  check_dot_pair<float, i64>();
}

TEST_CASE("jit: var with ddof, static and runtime counts, against eager and hand-computed values") {
  const auto f = [](const auto& x) {
    return std::make_tuple(dyn::var(x, {1}, dyn::ddof(1)), dyn::var(x, dyn::ddof(1)), dyn::var(x, {0}, dyn::ddof(2)));
  };
  // x = [[1, 2, 3], [4, 5, 6]]: rows 2 / 2, all 17.5 / 5, columns 4.5 / 0 (NaN).
  const auto x = dyn::Array<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto [r, a, c] = dyn::jit(f)(x);
  CHECK(r(0) == 1.0);
  CHECK(r(1) == 1.0);
  CHECK(a() == 3.5);
  CHECK(std::isnan(c(0)));
  // A runtime count (w) stages N - ddof and the NaN where it is not positive.
  const auto g = dyn::jit(f, dyn::polymorphic_shapes{"(n, w)"});
  for (i64 w : {1, 2, 7, 100}) {
    const auto y = gen<double>({3, w}, 1300 + static_cast<std::uint64_t>(w), Gen::general);
    const auto got = g(y);
    const auto want = dyn::eager(f)(y);
    const auto same = [](const auto& p, const auto& q) {
      REQUIRE(p.shape() == q.shape());
      for (i64 k = 0; k < p.size(); ++k) CHECK(ulp_distance(p.data()[k], q.data()[k]) <= 64);  // NaN == NaN
    };
    same(std::get<0>(got), std::get<0>(want));
    same(std::get<1>(got), std::get<1>(want));
    same(std::get<2>(got), std::get<2>(want));
    if (w == 1) CHECK(std::isnan(std::get<0>(got)(0)));
  }
  CHECK(g.stats().compiles == 1);
}

}  // namespace
