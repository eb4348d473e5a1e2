// Reverse mode (issue 20, API.md section 14): dyn::vjp, grad,
// value_and_grad, jacfwd, jacrev, hessian, on linearize + transpose. The
// transpose rules are checked over the whole primitive table by the
// dot-product test <u, J v> == <J^T u, v> (J v from the linear program run
// forwards, J^T u from it run backwards) and J^T u against central finite
// differences of the eager interpreter; the user-facing functions against
// hand-computed derivatives, in eager code, printed by make_jaxpr, and
// nested (grad of grad).
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../ir/prim_samples.hpp"
#include "../test_util.hpp"
#include "differences.hpp"

using dyn::AnyArray;
using dyn::Array;
using namespace dyn;
using namespace dyn::detail;
using test_util::message_of;
using test_util::str;
using namespace transform_test;

namespace {

double dot(const AnyArray& a, const AnyArray& b) {
  REQUIRE(a.shape() == b.shape());
  return visit_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    double s = 0;
    for (std::int64_t i = 0; i < a.size(); ++i) {
      const T x = static_cast<const T*>(a.data())[i], y = static_cast<const T*>(b.data())[i];
      // Complex: Re(x y), the real bilinear pairing under which JAX's
      // transpose (no conjugation) is the adjoint.
      if constexpr (dyn::is_complex_v<T>) s += static_cast<double>((x * y).real());
      else s += static_cast<double>(x) * static_cast<double>(y);
    }
    return s;
  });
}

Value cval(const AnyArray& a) { return Value{a, nullptr, false}; }

}  // namespace

TEST_CASE("vjp rules: every primitive, <u, J v> == <J^T u, v> and J^T u against central differences (f64: 1e-6)") {
  int checked = 0, missing = 0, no_cotangent = 0;
  for (Prim p : prim_samples::all_prims()) {
    CAPTURE(std::string(prim_name(p)));
    prim_samples::Sample s = prim_samples::sample_of(p);
    off_kinks(p, s.args);
    TracedFn t;
    t.jaxpr = std::make_shared<Jaxpr>(*s.jaxpr.jaxpr);
    for (const AnyArray& c : s.jaxpr.consts) t.consts.push_back(cval(c));
    std::vector<Value> xs;
    std::vector<char> wrt;
    bool any = false;
    for (const AnyArray& a : s.args) {
      xs.push_back(cval(a));
      wrt.push_back(differentiable_dtype(a.dtype()));  // real and complex floats
      any = any || differentiable_dtype(a.dtype());
    }
    bool float_out = false;
    for (const Atom& o : t.jaxpr->outvars) float_out = float_out || differentiable_dtype(t.jaxpr->type_of(o).dtype);
    if (!any || !float_out) {
      if (any) {  // a float input, no float output: no cotangent flows back
        const Linearized l = linearize(t, xs, wrt);
        std::vector<Tangent> cts(l.primals_out.size());
        for (const Tangent& c : linear_transpose(l, cts)) CHECK(!c.has_value());
      }
      ++no_cotangent;
      continue;
    }
    if (const char* why = jvp_missing(p)) {
      CHECK(message_of<dyn::TypeError>([&] { (void)linearize(t, xs, wrt); }) ==
            "jvp: cannot differentiate through " + std::string(prim_name(p)) + ": " + why);
      ++missing;
      continue;
    }
    const Linearized l = linearize(t, xs, wrt);
    std::vector<Tangent> v;
    std::vector<AnyArray> dirs;
    for (std::size_t k = 0; k < s.args.size(); ++k) {
      dirs.push_back(wrt[k] ? direction(s.args[k], static_cast<int>(k)) : s.args[k]);
      v.emplace_back(wrt[k] ? Tangent(cval(dirs.back())) : std::nullopt);
    }
    std::vector<Tangent> u;
    std::vector<AnyArray> us;
    for (std::size_t o = 0; o < l.primals_out.size(); ++o) {
      const AnyArray& y = l.primals_out[o].array;
      us.push_back(differentiable_dtype(y.dtype()) ? direction(y, 10 + static_cast<int>(o)) : y);
      u.emplace_back(differentiable_dtype(y.dtype()) ? Tangent(cval(us.back())) : std::nullopt);
    }
    const std::vector<Tangent> jv = linear_apply(l, v);
    const std::vector<Tangent> jtu = linear_transpose(l, u);
    double lhs = 0, rhs = 0;
    for (std::size_t o = 0; o < jv.size(); ++o)
      if (jv[o] && u[o]) lhs += dot(us[o], jvp_detail::fit(*jv[o], l.primals_out[o].shape()).array);
    for (std::size_t k = 0; k < jtu.size(); ++k)
      if (jtu[k]) {
        REQUIRE(jtu[k]->shape() == xs[k].shape());
        REQUIRE(jtu[k]->dtype() == xs[k].dtype());
        rhs += dot(jtu[k]->array, dirs[k]);
      }
    bool f32 = false;
    for (const AnyArray& a : s.args) f32 = f32 || a.dtype() == DType::f32;
    const double h = f32 ? 1e-2 : 1e-5, tol = f32 ? 1e-3 : 1e-6;
    CHECK(std::abs(lhs - rhs) <= tol * (1 + std::abs(lhs)));
    if (p == Prim::stop_gradient) {  // zero by definition, whatever the differences say
      CHECK(rhs == 0.0);
      ++checked;
      continue;
    }
    // <u, (f(x + h v) - f(x - h v)) / 2h> against <J^T u, v>.
    std::vector<AnyArray> plus, minus;
    for (std::size_t k = 0; k < s.args.size(); ++k) {
      plus.push_back(wrt[k] ? shifted(s.args[k], dirs[k], h) : s.args[k]);
      minus.push_back(wrt[k] ? shifted(s.args[k], dirs[k], -h) : s.args[k]);
    }
    const std::vector<AnyArray> fp = dyn::eval_jaxpr(s.jaxpr, plus), fm = dyn::eval_jaxpr(s.jaxpr, minus);
    double fd = 0;
    for (std::size_t o = 0; o < fp.size(); ++o)
      if (u[o]) fd += (dot(us[o], fp[o]) - dot(us[o], fm[o])) / (2 * h);
    CHECK(std::abs(fd - rhs) <= tol * (1 + std::abs(fd)));
    ++checked;
  }
  CHECK(checked + missing + no_cotangent == static_cast<int>(prim_samples::all_prims().size()));
  CHECK(missing == 2);  // pmax, pmin (no derivative in JAX either; every other differentiable primitive, the
                        // complex ones included, has a rule)
}

TEST_CASE("grad: d/dx of a scalar function (hand-computed), eager; argnums; value_and_grad") {
  auto f = [](auto x) { return dyn::sum(dyn::sin(x) * x); };
  const Array<double> x({3}, {0.0, 0.5, 2.0});
  const Array<double> g = dyn::grad(f)(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(g(i) == doctest::Approx(std::cos(x(i)) * x(i) + std::sin(x(i))).epsilon(1e-14));
  // A C++ scalar argument: its gradient is a rank-0 array.
  const Array<double> d = dyn::grad([](auto s) { return s * s * s; })(2.0);
  CHECK(d() == doctest::Approx(12.0));
  // Several arguments: argnums picks them, in order; an integer argument rides along.
  auto h = [](auto a, auto n, auto b) { return dyn::sum(a * b) * dyn::astype<double>(n); };
  const Array<double> a({2}, {1.0, 2.0}), b({2}, {3.0, 5.0});
  const auto [ga, gb] = dyn::grad(h, dyn::argnums<0, 2>{})(a, 2, b);
  CHECK(str(ga) == "[ 6. 10.]");
  CHECK(str(gb) == "[2. 4.]");
  const auto [val, gv] = dyn::value_and_grad(f)(x);
  CHECK(val() == doctest::Approx(0.5 * std::sin(0.5) + 2.0 * std::sin(2.0)));
  CHECK(str(gv) == str(g));
}

TEST_CASE("grad: through reductions, broadcasting, indexing, matmul: an MLP loss against central differences") {
  const Array<double> w1({3, 4}, {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 1.0, -1.1, 1.2});
  const Array<double> xb({2, 3}, {1.0, 2.0, -1.0, 0.5, -0.5, 2.0});
  const Array<double> w2({4}, {0.3, -0.1, 0.2, 0.5});
  auto loss = [&](auto w) {
    auto hid = dyn::tanh(dyn::matmul(xb, w) + 0.1);
    auto out = dyn::matmul(hid, w2);
    return dyn::mean(dyn::square(out - 1.0)) + 0.01 * dyn::sum(w * w) + dyn::max(w);
  };
  const Array<double> g = dyn::grad(loss)(w1);
  for (std::int64_t i = 0; i < w1.size(); ++i) {
    Array<double> wp = w1, wm = w1;  // copy on write
    wp.mutable_data()[i] += 1e-6;
    wm.mutable_data()[i] -= 1e-6;
    const double fd = (loss(wp)() - loss(wm)()) / 2e-6;
    CAPTURE(i);
    CHECK(g.data()[i] == doctest::Approx(fd).epsilon(1e-6));
  }
}

TEST_CASE("vjp: the primal result and a backward function of the result's structure") {
  auto f = [](auto x, auto y) { return std::tuple{x * y, dyn::sum(x) + y.at(0).get()}; };
  const Array<double> x({2}, {1.0, 2.0}), y({2}, {3.0, 4.0});
  auto [out, f_vjp] = dyn::vjp(f, x, y);
  CHECK(str(std::get<0>(out)) == "[3. 8.]");
  CHECK(std::get<1>(out)() == doctest::Approx(6.0));
  const auto [cx, cy] = f_vjp(std::tuple{Array<double>({2}, {1.0, 10.0}), 2.0});
  // d<c0, x y> = c0 y dx + c0 x dy; d(c1 (sum x + y0)) = c1 (1, 1) dx + c1 (1, 0) dy
  CHECK(str(cx) == "[ 5. 42.]");
  CHECK(str(cy) == "[ 3. 20.]");
  CHECK(message_of<dyn::TypeError>([&] { (void)f_vjp(std::tuple{Array<float>({2}, {1, 1}), 1.0}); }) ==
        "dyn::vjp: cotangent #0 has type f32[2] but result #0 has type f64[2]; a cotangent has its result's dtype "
        "and shape");
  CHECK(message_of<dyn::TypeError>([&] { (void)f_vjp(Array<double>({2}, {1, 1})); }) ==
        "dyn::vjp: the cotangent has 1 leaves but the function's result 2; give a cotangent of the result's "
        "structure");
}

TEST_CASE("grad: make_jaxpr prints the backward program (golden text); symbolic shapes flow through") {
  auto f = [](auto x) { return dyn::sin(x) * 2.0; };
  const auto cj = dyn::make_jaxpr(dyn::grad(f))(1.0);
  // d/da (2 sin a) = 2 cos a: the forward pass keeps cos a (the residual),
  // the backward pass multiplies the cotangent 1.0 through.
  CHECK(str(cj) ==
        "{ lambda ; a:f64[]. let b:f64[] = cos a; c:f64[] = mul 2.0:f64[] b in (c,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  auto g = [](auto x) { return dyn::sum(dyn::exp(x) * x); };
  const auto cs = dyn::make_jaxpr(dyn::grad(g), dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({4}));
  CHECK(str(cs).starts_with("{ lambda ; a:i64[] b:f64[a]. let"));
  CHECK_NOTHROW(dyn::check_jaxpr(cs));
  const Array<double> x({3}, {0.0, 1.0, -1.0});
  const auto got = dyn::eval_jaxpr(cs, {AnyArray(x)}).back().get<double>();
  for (std::int64_t i = 0; i < 3; ++i) CHECK(got(i) == doctest::Approx(std::exp(x(i)) * (1 + x(i))).epsilon(1e-14));
}

TEST_CASE("grad: grad(grad(f)) and hessian; jacfwd and jacrev agree with hand-computed Jacobians") {
  auto cube = [](auto x) { return x * x * x; };
  CHECK(dyn::grad(dyn::grad(cube))(2.0)() == doctest::Approx(12.0));
  CHECK(dyn::grad(dyn::grad(dyn::grad(cube)))(2.0)() == doctest::Approx(6.0));
  auto f = [](auto x) { return dyn::sin(x) * x.at(0).get(); };  // f_i = sin(x_i) x_0
  const Array<double> x({3}, {0.5, 1.0, 2.0});
  const Array<double> jf = dyn::jacfwd(f)(x), jr = dyn::jacrev(f)(x);
  REQUIRE(jf.shape() == std::vector<std::int64_t>{3, 3});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 3; ++j) {
      const double e = (i == j ? std::cos(x(i)) * x(0) : 0.0) + (j == 0 ? std::sin(x(i)) : 0.0);
      CHECK(jf(i, j) == doctest::Approx(e).epsilon(1e-14));
      CHECK(jr(i, j) == doctest::Approx(e).epsilon(1e-14));
    }
  auto q = [](auto x) { return dyn::sum(x * x * x) + x.at(0).get() * x.at(1).get(); };  // H = diag(6x) + [[0,1],[1,0]]
  const Array<double> y({2}, {1.0, -2.0});
  const Array<double> hq = dyn::hessian(q)(y);
  CHECK(str(hq) == "[[  6.   1.]\n [  1. -12.]]");
}

TEST_CASE("grad: bad input is a TypeError naming the argument or the result") {
  const Array<double> x({3}, {1.0, 2.0, 3.0});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::grad([](auto v) { return v * 2.0; })(x); }) ==
        "dyn::grad: the function must return one floating-point scalar, got (f64[3]); use dyn::vjp or dyn::jacrev "
        "for other results");
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::grad([](auto v, auto n) { return dyn::sum(v) * dyn::astype<double>(n); },
                          dyn::argnums<1>{})(x, Array<int>::scalar(2));
        }) == "dyn::grad: argument 1 has type i32[]; only floating-point arguments can be differentiated (convert "
              "it, or leave it out of argnums)");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jacfwd([](auto v) { return v; })(dyn::ones<int>({2})); }) ==
        "dyn::jacfwd: argument 0 has type i32[2]; only floating-point arguments can be differentiated (convert it, "
        "or leave it out of argnums)");
}

TEST_CASE("grad: gathers clamp, scatters drop, and with duplicate indices only the surviving write gets a cotangent") {
  const Array<double> x({3}, {1.0, 2.0, 3.0});
  const Array<int> far({2}, {0, 7});  // 7 is clamped to 2 by the gather
  CHECK(str(dyn::grad([&](auto v) { return dyn::sum(v.at(far).get()); })(x)) == "[1. 0. 1.]");
  // Duplicates: zeros(3).at([0, 0, 2]).set(v) keeps v1 at 0 (the last write) and v2 at 2.
  const Array<int> dup({3}, {0, 0, 2});
  const Array<double> w({3}, {1.0, 2.0, 3.0});
  auto set = [&](auto v) { return dyn::sum(dyn::zeros<double>({3}).at(dup).set(v) * w); };
  CHECK(set(Array<double>({3}, {10.0, 20.0, 30.0}))() == doctest::Approx(20.0 + 90.0));
  CHECK(str(dyn::grad(set)(x)) == "[0. 1. 3.]");
  // The operand's cotangent is zero where it was overwritten.
  CHECK(str(dyn::grad([&](auto v) { return dyn::sum(v.at(dup).set(x) * w); })(x)) == "[0. 2. 0.]");
  // scatter-add: every duplicate gets the cotangent; an update out of bounds is dropped and gets none.
  const Array<int> out({3}, {0, 0, 5});
  CHECK(str(dyn::grad([&](auto v) { return dyn::sum(dyn::zeros<double>({3}).at(out).add(v) * w); })(x)) ==
        "[1. 1. 0.]");
}

TEST_CASE("stop_gradient: the identity, a constant to every derivative; printed as JAX prints it") {
  const Array<double> x({2}, {1.0, 3.0});
  auto f = [](auto v) { return dyn::sum(v * dyn::stop_gradient(v)); };  // d/dv = stop_gradient(v)
  CHECK(f(x)() == doctest::Approx(10.0));
  CHECK(str(dyn::grad(f)(x)) == "[1. 3.]");
  auto [y, t] = dyn::jvp(f, std::tuple{x}, std::tuple{Array<double>({2}, {1.0, 1.0})});
  CHECK(t() == doctest::Approx(4.0));
  CHECK(str(dyn::make_jaxpr([](auto v) { return dyn::stop_gradient(v); })(x)) ==
        "{ lambda ; a:f64[2]. let b:f64[2] = stop_gradient a in (b,) }");
  // Integers have nothing to stop: no equation.
  CHECK(str(dyn::make_jaxpr([](auto v) { return dyn::stop_gradient(v); })(Array<int>({2}, {1, 2}))) ==
        "{ lambda ; a:i32[2]. let  in (a,) }");
}

TEST_CASE("grad with symbolic shapes: slices with symbolic bounds transpose into a dynamic_update_slice; pads and "
          "concatenations of any length") {
  // f(x) = sum(x[1:] * x[:-1]) + sum(pad(x, 2 before, -1 after, 1 between) * 0.5) + sum(concat(x, 3x)):
  // df/dx_i = x_{i-1} + x_{i+1} (where they exist) + 0.5 (but the last element, cut by the pad) + 4.
  auto f = [](auto x) {
    const auto n = x.shape(0);
    auto prod = dyn::sum(dyn::slice_in_dim(x, 1, n) * dyn::slice_in_dim(x, 0, n - 1));
    auto padded = dyn::sum(dyn::pad(x, {{2, -1, 1}}, 7.0) * 0.5);
    return prod + padded + dyn::sum(dyn::concatenate({x, x * 3.0}));
  };
  const auto cj = dyn::make_jaxpr(dyn::grad(f), dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({4}));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(str(cj).find("dynamic_update_slice") != std::string::npos);
  for (std::int64_t n : {2, 5}) {
    Array<double> x({n});
    for (std::int64_t i = 0; i < n; ++i) x.mutable_data()[i] = 0.5 + static_cast<double>(i * i);
    const Array<double> g = dyn::eval_jaxpr(cj, {AnyArray(x)}).back().get<double>();
    const Array<double> ge = dyn::grad(f)(x);
    for (std::int64_t i = 0; i < n; ++i) {
      const double want = (i > 0 ? x(i - 1) : 0.0) + (i + 1 < n ? x(i + 1) : 0.0) + (i + 1 < n ? 0.5 : 0.0) + 4.0;
      CAPTURE(n);
      CAPTURE(i);
      CHECK(g(i) == doctest::Approx(want).epsilon(1e-14));
      CHECK(ge(i) == doctest::Approx(want).epsilon(1e-14));
    }
  }
}

TEST_CASE("vmap of grad: per-example gradients equal grad of each example; grad of vmap sums them") {
  auto loss = [](auto w, auto x) { return dyn::sum(dyn::tanh(x * w)); };  // one example x: f64[3]
  const Array<double> w({3}, {0.5, -1.0, 2.0});
  const Array<double> xs({2, 3}, {1.0, 2.0, 3.0, -1.0, 0.5, 0.25});
  const Array<double> per = dyn::vmap(dyn::grad(loss), {dyn::none, 0})(w, xs);
  REQUIRE(per.shape() == std::vector<std::int64_t>{2, 3});
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t i = 0; i < 3; ++i) {
      const double t = std::tanh(xs(b, i) * w(i));
      CHECK(per(b, i) == doctest::Approx((1 - t * t) * xs(b, i)).epsilon(1e-14));
    }
  // grad of the batch's total: the per-example gradients summed.
  auto total = [&](auto w_) { return dyn::sum(dyn::vmap(loss, {dyn::none, 0})(w_, xs)); };
  CHECK(dyn::allclose(dyn::grad(total)(w), dyn::sum(per, {0}), 1e-14));
}

TEST_CASE("API.md section 14 as written: every line compiles and computes what it says") {
  auto f = [](auto x) { return dyn::sum(dyn::sin(x) * x); };
  auto f3 = [](auto a, auto n, auto b) { return dyn::sum(a * b) * dyn::astype<double>(n); };
  auto f2 = [](auto x, auto w) { return dyn::sum(x * w); };
  const Array<double> x({3}, {0.5, 1.0, 2.0}), tx({3}, {1.0, 0.0, 0.0}), w({3}, {1.0, 2.0, 3.0});
  auto df   = dyn::grad(f);                      // d f / d arg 0; f returns a scalar
  auto df02 = dyn::grad(f3, dyn::argnums<0, 2>{});// tuple of gradients
  auto vg   = dyn::value_and_grad(f);            // std::tuple{value, grad}
  auto [y, f_vjp] = dyn::vjp(f, x);              // f_vjp(ct) -> tuple of cotangents
  auto [y2, t]    = dyn::jvp(f, std::tuple{x}, std::tuple{tx});
  auto J = dyn::jacfwd(f)(x); auto Jr = dyn::jacrev(f)(x); auto H = dyn::hessian(f)(x);
  auto bf   = dyn::vmap(f2, {0, dyn::none}, 0);  // in_axes per argument, out_axes
  auto cf   = dyn::checkpoint(f);                // recompute in the backward pass
  const auto sg = dyn::stop_gradient(x);
  std::ostringstream os;
  os << dyn::make_jaxpr(dyn::grad(f))(x);        // the transformed program, JAX-style
  // What each computes: f'(x) = cos(x) x + sin(x).
  const Array<double> d = df(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(d(i) == doctest::Approx(std::cos(x(i)) * x(i) + std::sin(x(i))).epsilon(1e-14));
  const auto [g0, g2] = df02(x, 2, w);
  CHECK(str(g0) == "[2. 4. 6.]");
  CHECK(str(g2) == "[1. 2. 4.]");
  CHECK(str(std::get<1>(vg(x))) == str(d));
  CHECK(y() == doctest::Approx(f(x)()));
  CHECK(str(std::get<0>(f_vjp(1.0))) == str(d));
  CHECK(t() == doctest::Approx(d(0)));
  CHECK(str(J) == str(d));
  CHECK(str(Jr) == str(d));
  CHECK(H.shape() == std::vector<std::int64_t>{3, 3});
  CHECK(H(0, 0) == doctest::Approx(2 * std::cos(0.5) - 0.5 * std::sin(0.5)).epsilon(1e-13));
  CHECK(H(0, 1) == 0.0);
  const Array<double> xs({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(str(bf(xs, w)) == "[14. 32.]");
  CHECK(str(dyn::grad(cf)(x)) == str(d));
  CHECK(str(sg) == str(x));
  CHECK(os.str().starts_with("{ lambda ; a:f64[3]. let"));
}
