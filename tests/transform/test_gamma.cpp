// digamma and trigamma (issue 20): lgamma's derivative is digamma
// (lax.digamma, jax.scipy.special.digamma), digamma's is trigamma
// (polygamma(1, x)). Values against references computed with mpmath at 30
// digits, the poles as lax.digamma (NaN), the printed JVP (golden text), and
// grad(lgamma), grad(grad(lgamma)) against central differences.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

using dyn::Array;
using test_util::str;

namespace {

struct Ref {
  double x, digamma, trigamma;
};
// mpmath.digamma(x), mpmath.psi(1, x) at 30 digits, rounded.
const Ref kRefs[] = {
    {1.0, -0.57721566490153286061, 1.6449340668482264365},
    {0.5, -1.9635100260214234794, 4.9348022005446793094},
    {10.0, 2.2517525890667211076, 0.10516633568168574612},
    {-0.5, 0.036489973978576520559, 8.9348022005446793094},
    {100.0, 4.6001618527380874002, 0.010050166663333571395},
    {-2.5, 1.1031566406452431872, 9.5392466449891237539},
    {0.001, -1000.5755719318103005, 1000001.642533195869},
    {30.3, 3.3945553040790910563, 0.033553899239427950005},
    {7.25, 1.9104535268837360284, 0.14787923315893216965},
    {-3.7, -0.84507685887041671807, 14.842421864124267711},
    {1e-8, -100000000.57721564845, 10000000000000001.645},
    {1e6, 13.815510057964190771, 1.0000005000001666667e-6},
};

// |got - want| within `rel` of max(|want|, 1): relative, absolute near the root of digamma.
bool near(double got, double want, double rel) { return std::abs(got - want) <= rel * std::max(std::abs(want), 1.0); }

}  // namespace

TEST_CASE("digamma, trigamma: values against mpmath (f64 within 4e-15, f32 within 2e-6), eager") {
  std::vector<double> xs;
  for (const Ref& r : kRefs) xs.push_back(r.x);
  const auto n = static_cast<std::int64_t>(xs.size());
  const Array<double> x({n}, xs);
  const Array<double> d = dyn::digamma(x), t = dyn::trigamma(x);
  const Array<float> xf = dyn::astype<float>(x);
  const Array<float> df = dyn::digamma(xf), tf = dyn::trigamma(xf);
  for (std::int64_t i = 0; i < n; ++i) {
    const Ref& r = kRefs[i];
    CAPTURE(r.x);
    CHECK(near(d(i), r.digamma, 4e-15));
    CHECK(near(t(i), r.trigamma, 4e-15));
    // f32: the reference at the float nearest x (x is exact in f32 for most
    // rows; the rest move by the float's rounding, within the tolerance).
    if (r.x == static_cast<double>(static_cast<float>(r.x))) {
      CHECK(near(df(i), r.digamma, 2e-6));
      CHECK(near(tf(i), r.trigamma, 2e-6));
    }
  }
}

TEST_CASE("digamma, trigamma: poles and special values (lax.digamma: NaN at 0, -1, -2, ...; trigamma +inf)") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Array<double> x({7}, {0.0, -0.0, -1.0, -7.0, inf, -inf, nan});
  const Array<double> d = dyn::digamma(x), t = dyn::trigamma(x);
  CHECK(std::isnan(d(0)));
  CHECK(std::isnan(d(1)));
  CHECK(std::isnan(d(2)));
  CHECK(std::isnan(d(3)));
  CHECK(d(4) == inf);
  CHECK(std::isnan(d(5)));
  CHECK(std::isnan(d(6)));
  CHECK(t(0) == inf);
  CHECK(t(1) == inf);
  CHECK(t(2) == inf);
  CHECK(t(3) == inf);
  CHECK(t(4) == 0.0);
  CHECK(std::isnan(t(6)));
  // An integer operand computes in f32, as jnp's float functions (and lax.digamma's dtype rule: floats only).
  const auto di = dyn::digamma(Array<std::int32_t>({2}, {1, 10}));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(di)>, Array<float>>);
  CHECK(near(di(0), -0.57721566490153286061, 2e-6));
}

TEST_CASE("digamma: printed as lax's primitive; jvp(lgamma) is digamma(x) * t (golden text)") {
  const auto j = dyn::make_jaxpr([](auto x) { return dyn::digamma(x); })(Array<double>({3}));
  CHECK(str(j) == "{ lambda ; a:f64[3]. let b:f64[3] = digamma a in (b,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(j));
  auto g = [](auto x, auto t) { return dyn::jvp([](auto v) { return dyn::lgamma(v); }, std::tuple{x}, std::tuple{t}); };
  const auto cj = dyn::make_jaxpr(g)(1.0, 1.0);
  CHECK(str(cj) ==
        "{ lambda ; a:f64[] b:f64[]. let\n"
        "    c:f64[] = lgamma a\n"
        "    d:f64[] = digamma a\n"
        "    e:f64[] = mul b d\n"
        "  in (c, e) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  // digamma's JVP: trigamma (JAX writes polygamma(1, x)).
  auto h = [](auto x, auto t) { return dyn::jvp([](auto v) { return dyn::digamma(v); }, std::tuple{x}, std::tuple{t}); };
  CHECK(str(dyn::make_jaxpr(h)(1.0, 1.0)) ==
        "{ lambda ; a:f64[] b:f64[]. let\n"
        "    c:f64[] = digamma a\n"
        "    d:f64[] = trigamma a\n"
        "    e:f64[] = mul b d\n"
        "  in (c, e) }");
}

TEST_CASE("grad(lgamma) is digamma and grad(grad(lgamma)) is trigamma: against central differences (h = 1e-5)") {
  const Array<double> x({5}, {0.3, 1.7, 2.5, 4.5, -2.3});
  auto f = [](auto v) { return dyn::sum(dyn::lgamma(v)); };
  const Array<double> g = dyn::grad(f)(x);
  CHECK(str(g) == str(dyn::digamma(x)));
  const double h = 1e-5;
  for (std::int64_t i = 0; i < x.size(); ++i) {
    CAPTURE(x(i));
    const double fd = (std::lgamma(x(i) + h) - std::lgamma(x(i) - h)) / (2 * h);
    CHECK(std::abs(g(i) - fd) <= 1e-8 * (1 + std::abs(fd)));
    // The second derivative, by grad of grad on a scalar.
    auto lg = [](auto v) { return dyn::lgamma(v); };
    const double g2 = dyn::grad(dyn::grad(lg))(x(i))();
    auto one = [](auto fn, double v) { return fn(Array<double>({1}, {v}))(0); };
    auto digamma = [](const Array<double>& v) { return dyn::digamma(v); };
    auto trigamma = [](const Array<double>& v) { return dyn::trigamma(v); };
    const double fd2 = (one(digamma, x(i) + h) - one(digamma, x(i) - h)) / (2 * h);
    CHECK(std::abs(g2 - fd2) <= 1e-7 * (1 + std::abs(fd2)));
    CHECK(g2 == doctest::Approx(one(trigamma, x(i))).epsilon(1e-15));
  }
  // mpmath's psi(1, 2.5), through grad(grad(lgamma)).
  CHECK(near(dyn::grad(dyn::grad([](auto v) { return dyn::lgamma(v); }))(2.5)(), 0.49035775610023486497, 4e-15));
  // vmap of grad: the per-lane derivative.
  const Array<double> vg = dyn::vmap(dyn::grad([](auto v) { return dyn::lgamma(v); }))(x);
  CHECK(str(vg) == str(g));
}

TEST_CASE("trigamma's derivative, polygamma(2, x): against -2 zeta(3) and the recurrence and reflection "
          "(within 1e-10), and central differences of trigamma") {
  // psi''(1) = -2 zeta(3); psi''(1/2) = -14 zeta(3); psi''(x + 1) = psi''(x) + 2 / x^3 gives the others.
  const double z3 = 1.2020569031595942854;
  struct Case {
    double x, want;
  };
  const Case cases[] = {{1.0, -2 * z3},
                        {0.5, -14 * z3},
                        {-0.5, -14 * z3 + 16},
                        {-1.5, -0.2362040516417272},
                        {-2.5, -0.10820405164172719},
                        {10.0, -0.011049834970802141}};
  auto dt = [](auto v) { return dyn::sum(dyn::trigamma(v)); };
  for (const Case& c : cases) {
    CAPTURE(c.x);
    const double g = dyn::grad(dt)(c.x)();
    CHECK(std::fabs(g - c.want) <= 1e-10 * std::max(1.0, std::fabs(c.want)));
    const double h = 1e-5;
    const double fd = (dyn::trigamma(Array<double>::scalar(c.x + h))() - dyn::trigamma(Array<double>::scalar(c.x - h))()) / (2 * h);
    CHECK(g == doctest::Approx(fd).epsilon(1e-6));
  }
  // hessian of digamma at a point: trigamma's derivative again.
  CHECK(dyn::grad(dyn::grad([](auto v) { return dyn::digamma(v); }))(1.0)() == doctest::Approx(-2 * z3).epsilon(1e-10));
}
