// dyn::checkpoint (API.md section 14: "auto cf = dyn::checkpoint(f); //
// recompute in the backward pass"; issue 20: "residuals saved by the
// forward program, `checkpoint` to recompute instead"). JAX's contract:
// checkpoint(f) computes f and has f's derivatives; reverse mode saves none
// of f's intermediates and recomputes them from f's inputs in the backward
// pass. Checked here: values against f, the printed equation (JAX's
// `checkpoint[...]`), derivatives against f's and against central
// differences, what the backward pass reads (only the inputs), vmap, and
// the same through loops and nested differentiation.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "../test_util.hpp"

using dyn::Array;
using test_util::message_of;
using test_util::count_of;
using test_util::str;

namespace {

auto layer = [](auto x) { return dyn::tanh(dyn::sin(x) * x); };

// d/dx tanh(sin(x) x) = (1 - tanh^2(sin(x) x)) (cos(x) x + sin(x)).
double dlayer(double x) {
  const double t = std::tanh(std::sin(x) * x);
  return (1 - t * t) * (std::cos(x) * x + std::sin(x));
}

}  // namespace

TEST_CASE("checkpoint: computes what f computes, on arrays and scalars, with f's result structure") {
  const Array<double> x({3}, {0.3, -1.2, 2.0});
  const Array<double> y = dyn::checkpoint(layer)(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(y(i) == doctest::Approx(std::tanh(std::sin(x(i)) * x(i))).epsilon(1e-15));
  auto two = dyn::checkpoint([](auto a, auto b) { return std::tuple{a + b, a * b}; });
  auto [s, p] = two(Array<double>::scalar(2.0), Array<double>::scalar(5.0));
  CHECK(s() == 7.0);
  CHECK(p() == 10.0);
}

TEST_CASE("checkpoint: make_jaxpr prints one checkpoint equation as JAX does, and the program checks") {
  const std::string text = str(dyn::make_jaxpr(dyn::checkpoint(layer))(Array<double>({3}, {0.1, 0.2, 0.3})));
  CHECK(text ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = checkpoint[\n"
        "      differentiated=False\n"
        "      jaxpr={ lambda ; c:f64[3]. let\n"
        "          d:f64[3] = sin c\n"
        "          e:f64[3] = mul d c\n"
        "          f:f64[3] = tanh e\n"
        "        in (f,) }\n"
        "      policy=None\n"
        "      prevent_cse=True\n"
        "    ] a\n"
        "  in (b,) }");
}

TEST_CASE("checkpoint: a closed-over value becomes an operand") {
  const Array<double> w({2}, {2.0, -1.0});
  auto f = [&](auto x) { return dyn::checkpoint([&](auto y) { return y * w; })(x); };
  const std::string text = str(dyn::make_jaxpr(f)(Array<double>({2}, {1.0, 1.0})));
  CHECK(text ==
        "{ lambda a:f64[2]; b:f64[2]. let\n"
        "    c:f64[2] = checkpoint[\n"
        "      differentiated=False\n"
        "      jaxpr={ lambda ; d:f64[2] e:f64[2]. let f:f64[2] = mul e d in (f,) }\n"
        "      policy=None\n"
        "      prevent_cse=True\n"
        "    ] a b\n"
        "  in (c,) }");
  const Array<double> r = f(Array<double>({2}, {3.0, 4.0}));
  CHECK(r(0) == 6.0);
  CHECK(r(1) == -4.0);
}

TEST_CASE("grad of checkpoint: f's derivative (hand-computed), in eager code and printed") {
  auto loss = [](auto x) { return dyn::sum(dyn::checkpoint(layer)(x)); };
  const Array<double> x({3}, {0.3, -1.2, 2.0});
  const Array<double> g = dyn::grad(loss)(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(g(i) == doctest::Approx(dlayer(x(i))).epsilon(1e-13));
  // grad of f itself gives the same numbers.
  const Array<double> g0 = dyn::grad([](auto x) { return dyn::sum(layer(x)); })(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(g(i) == doctest::Approx(g0(i)).epsilon(1e-15));
}

TEST_CASE("grad of checkpoint: the backward pass recomputes f from its input instead of reading saved values") {
  auto loss = [](auto x) { return dyn::sum(dyn::checkpoint(layer)(x)); };
  auto plain = [](auto x) { return dyn::sum(layer(x)); };
  const Array<double> x({3}, {0.3, -1.2, 2.0});
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr(dyn::value_and_grad(loss))(x);
  const std::string text = str(cj);
  const std::string text0 = str(dyn::make_jaxpr(dyn::value_and_grad(plain))(x));
  // f's sin runs once forward (for the value) and once more in the backward
  // pass; without checkpoint, once.
  CHECK(count_of(text0, " sin ") == 1);
  CHECK(count_of(text, " sin ") == 2);
  // The backward pass is a checkpoint (differentiated=True) whose operands
  // are f's input and the cotangent: none of the forward pass's values.
  const dyn::Jaxpr& j = *cj.jaxpr;
  const dyn::Eqn* bwd = nullptr;
  for (const auto& e : j.eqns)
    if (e.prim == dyn::detail::Prim::checkpoint) bwd = &e;
  REQUIRE(bwd != nullptr);
  CHECK(std::get<dyn::detail::CheckpointParams>(bwd->params).differentiated);
  std::vector<int> defined_by_f;  // the forward pass's values: outputs of sin, mul, tanh
  for (const auto& e : j.eqns)
    if (e.prim == dyn::detail::Prim::sin || e.prim == dyn::detail::Prim::mul || e.prim == dyn::detail::Prim::tanh)
      defined_by_f.insert(defined_by_f.end(), e.outputs.begin(), e.outputs.end());
  for (const auto& a : bwd->inputs)
    if (a.is_var()) CHECK(std::find(defined_by_f.begin(), defined_by_f.end(), a.var) == defined_by_f.end());
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(text.find("differentiated=True") != std::string::npos);
}

TEST_CASE("checkpoint: jvp, grad of grad (the second derivative) and value_and_grad") {
  auto f = [](auto x) { return dyn::checkpoint(layer)(x); };
  const double x = 0.7;
  auto [y, t] = dyn::jvp(f, std::tuple{Array<double>::scalar(x)}, std::tuple{Array<double>::scalar(1.0)});
  CHECK(y() == doctest::Approx(std::tanh(std::sin(x) * x)).epsilon(1e-15));
  CHECK(t() == doctest::Approx(dlayer(x)).epsilon(1e-13));
  const double h = 1e-5;
  const double d2 = (dlayer(x + h) - dlayer(x - h)) / (2 * h);
  CHECK(dyn::grad(dyn::grad(f))(x)() == doctest::Approx(d2).epsilon(1e-8));
  auto [v, g] = dyn::value_and_grad(f)(x);
  CHECK(v() == doctest::Approx(std::tanh(std::sin(x) * x)).epsilon(1e-15));
  CHECK(g() == doctest::Approx(dlayer(x)).epsilon(1e-13));
}

TEST_CASE("checkpoint: reverse mode through a scan and a for_loop whose bodies are checkpointed") {
  // Each step c -> tanh(sin(c) c) + x: gradients with and without checkpoint agree.
  auto step = [](auto c, auto x) { return layer(c) + x; };
  auto with_scan = [&](bool ck) {
    return [=](auto x) {
      auto body = [&](auto c, auto) {
        auto n = ck ? dyn::checkpoint(step)(c, x) : step(c, x);
        return std::tuple{n, n};
      };
      auto [c, ys] = dyn::scan(body, x, dyn::zeros<double>({4}));
      return c + dyn::sum(ys);
    };
  };
  const double x = 0.4;
  CHECK(dyn::grad(with_scan(true))(x)() == doctest::Approx(dyn::grad(with_scan(false))(x)()).epsilon(1e-13));
  auto with_for = [&](bool ck) {
    return [=](auto x) {
      return dyn::for_loop(0, 3, 1)([&](auto, auto c) { return ck ? dyn::checkpoint(step)(c, x) : step(c, x); })(x);
    };
  };
  CHECK(dyn::grad(with_for(true))(x)() == doctest::Approx(dyn::grad(with_for(false))(x)()).epsilon(1e-13));
  // A checkpointed function containing a while loop.
  auto grow = [](auto x) {
    return dyn::checkpoint([](auto y) {
      return dyn::while_loop([](auto c) { return c < 10.0; })([&](auto c) { return c * y; })(y);
    })(x);
  };
  // From 1.5: 1.5, 2.25, 3.375, 5.0625, 7.59, 11.39: x^6, derivative 6 x^5.
  CHECK(dyn::grad(grow)(1.5)() == doctest::Approx(6 * std::pow(1.5, 5)).epsilon(1e-12));
}

TEST_CASE("checkpoint: vmap equals the stacked calls") {
  const Array<double> xs({2, 3}, {0.1, 0.2, 0.3, -0.4, 0.5, 1.6});
  const Array<double> ys = dyn::vmap(dyn::checkpoint(layer))(xs);
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t k = 0; k < 3; ++k)
      CHECK(ys(i, k) == doctest::Approx(std::tanh(std::sin(xs(i, k)) * xs(i, k))).epsilon(1e-15));
  // vmap of grad of checkpoint.
  auto g = dyn::vmap(dyn::grad([](auto x) { return dyn::checkpoint(layer)(x); }));
  const Array<double> gs = g(Array<double>({3}, {0.3, -1.2, 2.0}));
  CHECK(gs(1) == doctest::Approx(dlayer(-1.2)).epsilon(1e-13));
}

TEST_CASE("checkpoint: on arrays it calls f; a tracer f closes over makes its result traced") {
  int calls = 0;
  auto f = [&](auto y) {
    ++calls;
    return y * 2.0;
  };
  CHECK(dyn::checkpoint(f)(Array<double>::scalar(1.5))() == 3.0);
  CHECK(calls == 1);
  // Concrete argument, closed-over tracer: f runs on the array, its result is x's.
  auto g = [](auto x) { return dyn::checkpoint([&](auto y) { return y + x; })(Array<double>::scalar(1.0)); };
  CHECK(str(dyn::make_jaxpr(g)(Array<double>::scalar(2.0))) == "{ lambda ; a:f64[]. let b:f64[] = add 1.0:f64[] a in (b,) }");
}
