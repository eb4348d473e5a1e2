// Control flow through the bind algorithm (the Catalyst tracing note and the
// Catalyst dynamic-arrays doc, listed in docs/architecture.md, "Sources"):
// golden jaxprs with the structure of those documents' jaxprs, the numbers
// they produce through eval_jaxpr and eager, the error cases, and the
// dynamic-shape programs of the control-flow issue. (dyn::jit runs the same
// programs in test_jit_control.cpp; programs several files run are in
// programs.hpp.)
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"
#include "programs.hpp"

using test_util::message_of;
using test_util::str;

namespace {

dyn::AnyArray i64(std::int64_t v) { return dyn::AnyArray(dyn::Array<std::int64_t>::scalar(v)); }

template <class T>
T scalar_at(const dyn::AnyArray& a) {
  return a.get<T>().data()[0];
}

using control_programs::arange_or_zeros;
using control_programs::circuit;
using control_programs::doubling;
using control_programs::g_mix;
using control_programs::g_resize;

}  // namespace

TEST_SUITE("control") {

TEST_CASE("Catalyst dynamic-arrays doc: the overview circuit captures a0 and its dimension") {
  auto j = dyn::make_jaxpr(circuit)(std::int64_t{3});
  CHECK(str(j) == control_programs::circuit_jaxpr);
  for (std::int64_t sz : {0, 1, 5}) {
    auto r = dyn::eval_jaxpr(j, {i64(sz)});
    auto e = dyn::eager(circuit)(sz);
    REQUIRE(r.size() == 1);
    CHECK(r[0].shape() == std::vector<std::int64_t>{sz});
    CHECK(dyn::array_equal(r[0].get<double>(), e));
    if (sz > 0) CHECK(e.data()[0] == 12.0);
  }
}

TEST_CASE("Catalyst dynamic-arrays doc, example 1: preserve_dimensions=true mixes the carry with a constant, gives 3.0") {
  auto j = dyn::make_jaxpr(g_mix, dyn::polymorphic_shapes{"(n,)", "(n,)"})(dyn::ones<double>({3}),
                                                                         dyn::ones<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let\n"
        "    d:f64[a] = for_loop[\n"
        "      body_jaxpr={ lambda ; e:i64[] f:f64[e] g:i64[] h:f64[e]. let\n"
        "          i:f64[e] = mul h f\n"
        "        in (i,) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=True\n"
        "    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] c\n"
        "    j:f64[] = reduce_sum[axes=(0,)] d\n"
        "  in (j,) }");
  // The carried size is the constant e: InDBIdx(0) in the output type.
  const dyn::Jaxpr& body = *std::get<dyn::detail::ForLoopParams>(j.jaxpr->eqns.at(0).params).body_jaxpr;
  CHECK(str(dyn::output_type_of(body)) == "[(f64[InDBIdx(0)], true)]");
  auto r = dyn::eval_jaxpr(j, {dyn::ones<double>({3}), dyn::ones<double>({3})});
  CHECK(scalar_at<double>(r.at(0)) == 3.0);
  CHECK(dyn::eager(g_mix)(dyn::ones<double>({3}), dyn::ones<double>({3})).data()[0] == 3.0);
}

TEST_CASE("Catalyst dynamic-arrays doc, example 2: preserve_dimensions=false resizes the carry, gives 13.0") {
  auto j = dyn::make_jaxpr(g_resize, dyn::polymorphic_shapes{"(n,)", "(n,)"})(dyn::ones<double>({3}),
                                                                            dyn::ones<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let\n"
        "    d:i64[] e:f64[d] = for_loop[\n"
        "      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let\n"
        "          i:i64[] = add f 1:i64[]\n"
        "          j:f64[i] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "            i\n"
        "        in (i, j) }\n"
        "      body_nconsts=0\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a 0:i64[] 10:i64[] 1:i64[] 0:i64[] c\n"
        "    k:f64[] = reduce_sum[axes=(0,)] e\n"
        "  in (k,) }");
  // The body's types as the Catalyst documents write them: the carried size
  // is DBIdx(0) on the way in and OutDBIdx(0) on the way out.
  const dyn::Jaxpr& body = *std::get<dyn::detail::ForLoopParams>(j.jaxpr->eqns.at(0).params).body_jaxpr;
  CHECK(str(dyn::input_type_of(body)) == "[(i64[], false), (i64[], true), (f64[DBIdx(0)], true)]");
  CHECK(str(dyn::output_type_of(body)) == "[(i64[], false), (f64[OutDBIdx(0)], true)]");
  auto r = dyn::eval_jaxpr(j, {dyn::ones<double>({3}), dyn::ones<double>({3})});
  CHECK(scalar_at<double>(r.at(0)) == 13.0);
  CHECK(dyn::eager(g_resize)(dyn::ones<double>({3}), dyn::ones<double>({3})).data()[0] == 13.0);
  // Zero iterations return the initial value, whatever the body would do.
  auto none = [](auto y) {
    return dyn::for_loop(5, 5, 1, {.preserve_dimensions = false})(
        [&](auto, auto a) { return dyn::ones<double>({a.shape(0) + 1}); })(y);
  };
  auto jn = dyn::make_jaxpr(none, dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({3}));
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jn, {dyn::arange<double>(4)}).back().get<double>(), dyn::arange<double>(4)));
}

TEST_CASE("Catalyst tracing note: the circuit's body captures sz once, as a size and as a value") {
  auto c0 = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    auto a2 = dyn::for_loop(0, 10, 1)([&](auto, auto a) { return a * sz; })(a0);
    return a0 + a2;
  };
  auto j = dyn::make_jaxpr(c0)(std::int64_t{3});
  CHECK(str(j) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      a\n"
        "    c:f64[a] = for_loop[\n"
        "      body_jaxpr={ lambda ; d:i64[] e:i64[] f:f64[d]. let\n"
        "          g:f64[] = convert_element_type[new_dtype=float64 weak_type=False] d\n"
        "          h:f64[d] = mul f g\n"
        "        in (h,) }\n"
        "      body_nconsts=1\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=True\n"
        "    ] a 0:i64[] 10:i64[] 1:i64[] 0:i64[] b\n"
        "    i:f64[a] = add b c\n"
        "  in (i,) }");
  auto r = dyn::eval_jaxpr(j, {i64(2)});
  CHECK(dyn::array_equal(r.at(0).get<double>(), dyn::eager(c0)(std::int64_t{2})));
  CHECK(r.at(0).get<double>().data()[1] == 1.0 + 1024.0);
}

TEST_CASE("Catalyst tracing note: preserve_dimensions=true keeps the sharing pattern of the carried values") {
  auto ok = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    return dyn::for_loop(0, 10, 1)([&](auto, auto a, auto a_) { return std::make_tuple(a_, a + a_); })(a0, a0);
  };
  CHECK_NOTHROW(dyn::make_jaxpr(ok)(std::int64_t{3}));
  auto both_new = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    return dyn::for_loop(0, 10, 1)([&](auto, auto, auto) {
      auto b = dyn::ones<double>({sz + 1});
      return std::make_tuple(b, b);
    })(a0, a0);
  };
  // The body's results are sz + 1 where the carry is sz: not allowed either.
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(both_new)(std::int64_t{3}); }) ==
        "dyn::for_loop(): with preserve_dimensions=true the carried values keep their dimensions; body output "
        "#0 has type f64[_d0 + 1] but carry input #0 has type f64[_d0] (dimension 0: _d0 + 1 vs _d0); keep the "
        "size, or pass {.preserve_dimensions = false} so that each carried dimension is a loop variable (or "
        "{.infer_dimensions = true})");
  auto a_b = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    return dyn::for_loop(0, 10, 1)([&](auto, auto a, auto) {
      auto b = dyn::ones<double>({sz + 1});
      return std::make_tuple(a, b);  // the Catalyst tracing note: "ERROR: dimensions are not the same any more"
    })(a0, a0);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(a_b)(std::int64_t{3}); }) ==
        "dyn::for_loop(): with preserve_dimensions=true the carried values keep their dimensions; body output "
        "#1 has type f64[_d0 + 1] but carry input #1 has type f64[_d0] (dimension 0: _d0 + 1 vs _d0); keep the "
        "size, or pass {.preserve_dimensions = false} so that each carried dimension is a loop variable (or "
        "{.infer_dimensions = true})");
}

TEST_CASE("Catalyst tracing note: under preserve_dimensions=false a carried value never matches a captured one") {
  auto mix = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    return dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})([&](auto, auto a) { return a + a0; })(a0);
  };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(mix)(std::int64_t{3}); }) ==
        "add got incompatible shapes for broadcasting: (_d1,), (_d0,). With preserve_dimensions=false each carried "
        "dimension is a loop variable of its own (_d1) and never equals a captured value's dimension; pass "
        "{.preserve_dimensions = true} if the carried sizes do not change, or {.infer_dimensions = true} to make "
        "loop variables of only the sizes that change");
  // Unshared carried values do not match each other either.
  auto two = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    return dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})(
        [&](auto, auto a, auto b) { return std::make_tuple(a + b, b); })(a0, a0);
  };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(two)(std::int64_t{3}); }).starts_with(
      "add got incompatible shapes for broadcasting: (_d1,), (_d2,). With preserve_dimensions=false"));
}

TEST_CASE("carry type errors name the position, both types and the fix") {
  auto dtype = [](auto x) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto a) { return dyn::astype<float>(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(dtype)(dyn::ones<double>({2})); }) ==
        "dyn::for_loop(): body output #0 has type f32[2] but carry input #0 has type f64[2]; return the same "
        "dtype (e.g. astype<double>)");
  auto rank = [](auto x) {
    return dyn::while_loop([](auto a) { return dyn::sum(a) < 10.0; })([](auto a) { return dyn::sum(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(rank)(dyn::ones<double>({2})); }) ==
        "dyn::while_loop(): body output #0 has type f64[] but carry input #0 has type f64[2]; a carried value "
        "keeps its rank (reshape it back)");
  auto count = [](auto x) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto a, auto) { return a; })(x, x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(count)(dyn::ones<double>({2})); }) ==
        "dyn::for_loop(): the body returned 1 values but the loop carries 2; return the carried values in order "
        "(one bare, several as a std::tuple)");
  auto static_change = [](auto x) {
    return dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
        [&](auto, auto a) { return dyn::concatenate({a, a}, 0); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(static_change)(dyn::ones<double>({2})); }) ==
        "dyn::for_loop(): a static carried dimension cannot change; body output #0 has type f64[4] but carry "
        "input #0 has type f64[2] (dimension 0: 4 vs 2); start from a value whose size is dynamic (a dyn::Dim) "
        "and pass {.preserve_dimensions = false}");
  // Eager checks dtypes too (the state's C++ types are fixed).
  CHECK(message_of<dyn::TypeError>([&] { dyn::eager(dtype)(dyn::ones<double>({2})); }) ==
        "dyn::for_loop(): body output #0 has type f32[2] but carry input #0 has type f64[2]; return the same "
        "dtype (e.g. astype<double>)");
}

TEST_CASE("while_loop and cond predicates must be scalar bools") {
  auto bad_cond = [](auto x) {
    return dyn::while_loop([](auto a) { return a; })([](auto a) { return a + 1.0; })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(bad_cond)(dyn::ones<double>({2})); }) ==
        "dyn::while_loop(): the condition must return one scalar bool, got f64[2]; compare (e.g. "
        "dyn::dim_value(x.shape(0)) < 100)");
  auto int_pred = [](auto p, auto x) {
    return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return -a; })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(int_pred)(std::int64_t{1}, 1.0); }) ==
        "dyn::cond(): the predicate must be a scalar bool, got i64[]; compare it first (e.g. p != 0)");
  auto vec_pred = [](auto p, auto x) {
    return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return -a; })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] {
          dyn::make_jaxpr(vec_pred)(dyn::Array<bool>({2}, {true, false}), 1.0);
        }) == "dyn::cond(): the predicate must be a scalar bool, got bool[2]; compare it first (e.g. p != 0)");
}

TEST_CASE("a loop or cond on concrete operands whose body stages (a dyn::Dim size) outside a trace: a TypeError") {
  // dyn::Dim sizes stage slice (API.md section 8): with concrete arrays and no trace, the combinator cannot
  // stage the body; it says why and how to write it, instead of a bare UnexpectedTracerError.
  auto f = [](auto u0) {
    const dyn::Dim n = u0.shape(0);
    return dyn::for_loop(0, 3, 1)(
        [&](auto, auto u) { return dyn::dynamic_update_slice(u, dyn::slice(u, {1}, {n - 1}) * 2.0, {1}); })(u0);
  };
  const std::string why =
      ": the operands are concrete, but the body returns a dyn::Tracer and no function is being traced: an operation "
      "in the body stages because it was given a dyn::Dim or traced size (e.g. `dyn::Dim n = x.shape(0)` used in "
      "slice, reshape or zeros) or it uses a tracer that escaped a finished trace; give concrete arrays integer sizes: `auto n = x.shape(0)` is an integer for an "
      "array and a dyn::Dim for a tracer";
  CHECK(message_of<dyn::TypeError>([&] { (void)f(dyn::arange<double>(6)); }) == "dyn::for_loop()" + why);
  auto g = [](auto x) {
    const dyn::Dim n = x.shape(0);
    return dyn::cond(true, [&](auto a) { return dyn::slice(a, {0}, {n}); }, [](auto a) { return a; })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { (void)g(dyn::arange<double>(4)); }) == "dyn::cond()" + why);
  // The same lambdas trace (the body's sizes are then the tracer's).
  CHECK(str(dyn::make_jaxpr(f)(dyn::arange<double>(6))).find("for_loop[") != std::string::npos);
  // Written with `auto n`, the loop runs eagerly.
  auto h = [](auto u0) {
    return dyn::for_loop(0, 3, 1)([](auto, auto u) {
      auto n = u.shape(0);
      return dyn::dynamic_update_slice(u, dyn::slice(u, {1}, {n - 1}) * 2.0, {1});
    })(u0);
  };
  CHECK(str(h(dyn::arange<double>(4))) == "[ 0.  8. 16.  3.]");
}

TEST_CASE("cond branches must agree on count, dtype, rank and static sizes") {
  auto dtype = [](auto p, auto x) {
    return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return dyn::astype<float>(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(dtype)(true, dyn::ones<double>({2})); }) ==
        "dyn::cond(): branch output #0 has type f64[2] in the true branch but f32[2] in the false branch; return "
        "the same dtype (e.g. astype<double>)");
  auto rank = [](auto p, auto x) {
    return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return dyn::sum(a); })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(rank)(true, dyn::ones<double>({2})); }) ==
        "dyn::cond(): branch output #0 has type f64[2] in the true branch but f64[] in the false branch; the "
        "branches must return the same rank");
  auto static_dyn = [](auto p, auto n) {
    return dyn::cond(p, [&]() { return dyn::arange<double>(n); }, [&]() { return dyn::arange<double>(3); })();
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(static_dyn)(true, std::int64_t{3}); }) ==
        "dyn::cond(): branch output #0 has type f64[_d0] in the true branch but f64[3] in the false branch "
        "(dimension 0 is static in one branch and dynamic in the other); make both static or both dynamic");
  auto static_static = [](auto p) {
    return dyn::cond(p, []() { return dyn::zeros<double>({2}); }, []() { return dyn::zeros<double>({3}); })();
  };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(static_static)(true); }) ==
        "dyn::cond(): branch output #0 has type f64[2] in the true branch but f64[3] in the false branch; static "
        "sizes must be equal");
}

TEST_CASE("while loop doubling an array until its size exceeds 100") {
  auto j = dyn::make_jaxpr(doubling, dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f64[a]. let\n"
        "    c:i64[] d:f64[c] = while_loop[\n"
        "      body_jaxpr={ lambda ; e:i64[] f:f64[e]. let\n"
        "          g:i64[] = mul e 2:i64[]\n"
        "          h:f64[g] = concatenate[dimension=0] f f\n"
        "        in (g, h) }\n"
        "      body_nconsts=0\n"
        "      cond_jaxpr={ lambda ; i:i64[] j:f64[i]. let\n"
        "          k:bool[] = le i 100:i64[]\n"
        "        in (k,) }\n"
        "      cond_nconsts=0\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a b\n"
        "  in (c, d) }");
  for (std::int64_t n : {1, 3, 7, 101, 200}) {
    auto x = dyn::arange<double>(n);
    auto e = dyn::eager(doubling)(x);
    auto r = dyn::eval_jaxpr(j, {x});
    REQUIRE(r.size() == 2);  // the implicit size, then the array
    std::int64_t want = n;
    while (want <= 100) want *= 2;
    CHECK(scalar_at<std::int64_t>(r[0]) == want);
    CHECK(e.shape() == std::vector<std::int64_t>{want});
    CHECK(dyn::array_equal(r[1].get<double>(), e));
  }
}

TEST_CASE("nested for loops with a captured dynamic array") {
  auto f = [](auto x, auto n) {
    return dyn::for_loop(0, n, 1)([&](auto i, auto acc) {
      return dyn::for_loop(0, i, 1)([&](auto jj, auto a) { return a + x * jj; })(acc);
    })(dyn::zeros_like(x));
  };
  auto j = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(m,)"})(dyn::ones<double>({4}), std::int64_t{3});
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f64[a] c:i64[]. let\n"
        "    d:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f64[]\n"
        "      a\n"
        "    e:f64[a] = for_loop[\n"
        "      body_jaxpr={ lambda ; f:i64[] g:f64[f] h:i64[] i:f64[f]. let\n"
        "          j:f64[f] = for_loop[\n"
        "            body_jaxpr={ lambda ; k:i64[] l:f64[k] m:i64[] n:f64[k]. let\n"
        "                o:f64[] = convert_element_type[\n"
        "                  new_dtype=float64\n"
        "                  weak_type=False\n"
        "                ] m\n"
        "                p:f64[k] = mul l o\n"
        "                q:f64[k] = add n p\n"
        "              in (q,) }\n"
        "            body_nconsts=2\n"
        "            nimplicit=0\n"
        "            preserve_dimensions=True\n"
        "          ] f g 0:i64[] h 1:i64[] 0:i64[] i\n"
        "        in (j,) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=True\n"
        "    ] a b 0:i64[] c 1:i64[] 0:i64[] d\n"
        "  in (e,) }");
  for (std::int64_t n : {0, 1, 4}) {
    auto x = dyn::arange<double>(5);
    auto e = dyn::eager(f)(x, n);
    // sum over i < n of sum over j < i of j = sum_i i(i-1)/2
    double k = 0;
    for (std::int64_t i = 0; i < n; ++i) k += static_cast<double>(i * (i - 1) / 2);
    CHECK(dyn::array_equal(e, x * k));
    CHECK(dyn::array_equal(dyn::eval_jaxpr(j, {x, i64(n)}).at(0).get<double>(), e));
  }
}

TEST_CASE("cond returns arange(n) or zeros(n*n): the size is an implicit output") {
  auto f = arange_or_zeros;
  auto j = dyn::make_jaxpr(f)(true, std::int64_t{4});
  CHECK(str(j) == control_programs::arange_or_zeros_jaxpr);
  for (bool p : {true, false})
    for (std::int64_t n : {0, 3}) {
      auto r = dyn::eval_jaxpr(j, {dyn::AnyArray(dyn::Array<bool>::scalar(p)), i64(n)});
      auto e = dyn::eager(f)(dyn::Array<bool>::scalar(p), n);
      CHECK(scalar_at<std::int64_t>(r.at(0)) == (p ? n : n * n));
      CHECK(dyn::array_equal(r.at(1).get<double>(), e));
    }
}

TEST_CASE("cond: a size that is the same caller-known expression in both branches stays symbolic") {
  auto f = [](auto p, auto x) {
    auto y = dyn::cond(p, [](auto a) { return dyn::slice_in_dim(a, 1, a.shape(0)); },
                       [](auto a) { return dyn::slice_in_dim(a, 0, a.shape(0) - 1) * 2.0; })(x);
    return y + dyn::slice_in_dim(x, 0, x.shape(0) - 1);  // the caller's a - 1 is the result's size
  };
  auto j = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"()", "(a,)"})(true, dyn::ones<double>({4}));
  const std::string s = str(j);
  CHECK(s.find("nimplicit_outputs=0") != std::string::npos);
  for (bool p : {true, false}) {
    auto x = dyn::arange<double>(6);
    CHECK(dyn::array_equal(dyn::eval_jaxpr(j, {dyn::AnyArray(dyn::Array<bool>::scalar(p)), x}).back().get<double>(),
                           dyn::eager(f)(dyn::Array<bool>::scalar(p), x)));
  }
}

TEST_CASE("a loop whose index sizes an array") {
  // The index as a size inside the body: the carried value keeps its type.
  auto triangle = [](auto n) {
    return dyn::for_loop(0, n, 1)([](auto i, auto acc) { return acc + dyn::sum(dyn::arange<double>(i)); })(0.0);
  };
  auto j = dyn::make_jaxpr(triangle)(std::int64_t{5});
  for (std::int64_t n : {0, 1, 5, 9}) {
    const double want = static_cast<double>(n * (n - 1) * (n - 2) / 6);
    CHECK(dyn::eager(triangle)(n).data()[0] == want);
    CHECK(scalar_at<double>(dyn::eval_jaxpr(j, {i64(n)}).at(0)) == want);
  }
  // The index sizes the carried value: its dimension is an implicit output
  // (OutDBIdx), never the index input.
  auto grow = [](auto x, auto n) {
    return dyn::for_loop(0, n, 1, {.preserve_dimensions = false})(
        [](auto i, auto) { return dyn::ones<double>({i + 1}); })(x);
  };
  auto jg = dyn::make_jaxpr(grow, dyn::polymorphic_shapes{"(m,)"})(dyn::ones<double>({2}), std::int64_t{3});
  CHECK(str(jg) ==
        "{ lambda ; a:i64[] b:f64[a] c:i64[]. let\n"
        "    d:i64[] e:f64[d] = for_loop[\n"
        "      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let\n"
        "          i:i64[] = add g 1:i64[]\n"
        "          j:f64[i] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "            i\n"
        "        in (i, j) }\n"
        "      body_nconsts=0\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a 0:i64[] c 1:i64[] 0:i64[] b\n"
        "  in (d, e) }");
  for (std::int64_t n : {0, 1, 4}) {
    auto x = dyn::arange<double>(2);
    auto r = dyn::eval_jaxpr(jg, {x, i64(n)});
    auto e = dyn::eager(grow)(x, n);
    CHECK(dyn::array_equal(r.at(1).get<double>(), e));
    CHECK(e.shape() == std::vector<std::int64_t>{n == 0 ? 2 : n});
  }
}

TEST_CASE("several carried values, pytrees and mixed concrete inputs") {
  // Fibonacci with a tuple carry: integers exact.
  auto fib = [](auto n) {
    auto [a, b] = dyn::for_loop(0, n, 1)([](auto, auto x, auto y) { return std::make_tuple(y, x + y); })(
        std::int64_t{0}, std::int64_t{1});
    (void)b;
    return a;
  };
  auto j = dyn::make_jaxpr(fib)(std::int64_t{10});
  CHECK(scalar_at<std::int64_t>(dyn::eval_jaxpr(j, {i64(10)}).at(0)) == 55);
  CHECK(dyn::eager(fib)(std::int64_t{10}).data()[0] == 55);
  // A pair carried as one value; a concrete array initial value is lifted.
  auto pairs = [](auto x) {
    auto r = dyn::for_loop(0, 3, 1)([&](auto i, auto p) {
      return std::make_tuple(std::get<0>(p) + x, std::get<1>(p) * 2.0 + dyn::astype<double>(i));
    })(std::make_tuple(dyn::zeros<double>({2}), 1.0));
    return std::get<0>(r) * std::get<1>(r);
  };
  auto jp = dyn::make_jaxpr(pairs)(dyn::ones<double>({2}));
  auto x = dyn::arange<double>(2);
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jp, {x}).at(0).get<double>(), dyn::eager(pairs)(x)));
  // Bounds may be traced; a negative step counts down (Python's range).
  auto down = [](auto hi) {
    return dyn::for_loop(hi, 0, -2)([](auto i, auto s) { return s + i; })(std::int64_t{0});
  };
  auto jd = dyn::make_jaxpr(down)(std::int64_t{7});
  for (std::int64_t hi : {7, 8, 0, -3}) {
    std::int64_t want = 0;
    for (std::int64_t i = hi; i > 0; i -= 2) want += i;
    CHECK(scalar_at<std::int64_t>(dyn::eval_jaxpr(jd, {i64(hi)}).at(0)) == want);
    CHECK(dyn::eager(down)(hi).data()[0] == want);
  }
  // A dynamic step of 0 runs no iterations; a static one is an error.
  auto by = [](auto st) { return dyn::for_loop(0, 10, st)([](auto i, auto s) { return s + i; })(std::int64_t{0}); };
  CHECK(scalar_at<std::int64_t>(dyn::eval_jaxpr(dyn::make_jaxpr(by)(std::int64_t{1}), {i64(0)}).at(0)) == 0);
  auto zero = [](auto x) { return dyn::for_loop(0, 10, 0)([](auto, auto s) { return s; })(x); };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(zero)(1.0); }) == "dyn::for_loop(): the step must not be 0");
}

TEST_CASE("concrete loops run at once; inside a trace they are staged only when they touch a tracer") {
  // Outside a trace: the loop just runs.
  auto r = dyn::for_loop(0, 4, 1)([](auto i, auto a) { return a + dyn::astype<double>(i); })(dyn::zeros<double>({2}));
  CHECK(dyn::array_equal(r, dyn::full<double>({2}, 6.0)));
  // A C++ bool predicate picks the branch at trace time.
  auto pick = [](auto x) { return dyn::cond(true, [](auto a) { return a + 1.0; }, [](auto a) { return a; })(x); };
  CHECK(str(dyn::make_jaxpr(pick)(1.0)).find("cond") == std::string::npos);
  // A body that captures a tracer is staged even with concrete inputs.
  auto captured = [](auto x) { return dyn::for_loop(0, 3, 1)([&](auto, auto a) { return a + x; })(0.0); };
  auto jc = dyn::make_jaxpr(captured)(2.0);
  CHECK(str(jc).find("for_loop") != std::string::npos);
  CHECK(scalar_at<double>(dyn::eval_jaxpr(jc, {dyn::AnyArray(dyn::Array<double>::scalar(2.0))}).at(0)) == 6.0);
}

// Code that eager does not run raises nothing there; tracing runs every
// body once, as JAX does, so an error found at trace time (a C++ index out
// of range) is raised by make_jaxpr whatever the predicate or trip count
// (dynstage_fuzz seeds 16956, 25501, 27044; fuzz_run.cpp counts it as a
// consistent error).
TEST_CASE("an index out of range in a branch not taken or a loop of zero trips: eager does not run it, tracing raises") {
  const dyn::Array<double> x({2, 3}, {1, 2, 3, 4, 5, 6});
  const dyn::Array<bool> yes = dyn::Array<bool>::scalar(true);
  auto branch = [&](auto x) {
    return dyn::cond(yes, [](auto a) { return a.at(dyn::all(), std::int64_t{0}).get(); },
                     [](auto a) { return a.at(dyn::all(), std::int64_t{-6}).get(); })(x);
  };
  auto zero_trips = [](auto x) {
    return dyn::while_loop([](auto a) { return dyn::sum(a) < 0.0; })(
        [](auto a) { return a + a.at(dyn::all(), std::int64_t{4}).get().at(0).get(); })(x);
  };
  CHECK(dyn::array_equal(branch(x), dyn::Array<double>({2}, {1, 4})));
  CHECK(dyn::array_equal(zero_trips(x), x));
  CHECK(message_of<dyn::IndexError>([&] { dyn::make_jaxpr(branch)(x); }).starts_with(
      "at().get: index -6 is out of bounds for axis 1 with size 3"));
  CHECK(message_of<dyn::IndexError>([&] { dyn::make_jaxpr(zero_trips)(x); }).starts_with(
      "at().get: index 4 is out of bounds for axis 1 with size 3"));
}

TEST_CASE("combinators nest: a cond inside a for loop, a while loop capturing a traced threshold") {
  // Collatz steps of every start value below n, summed: integer exact.
  auto collatz = [](auto n) {
    return dyn::for_loop(1, n, 1)([](auto start, auto total) {
      auto [x, steps] = dyn::while_loop([](auto x, auto) { return x != std::int64_t{1}; })([](auto x, auto k) {
        auto next = dyn::cond(x % std::int64_t{2} == std::int64_t{0}, [](auto v) { return v / std::int64_t{2}; },
                              [](auto v) { return v * std::int64_t{3} + std::int64_t{1}; })(x);
        return std::make_tuple(next, k + std::int64_t{1});
      })(start, std::int64_t{0});
      (void)x;
      return total + steps;
    })(std::int64_t{0});
  };
  auto j = dyn::make_jaxpr(collatz)(std::int64_t{10});
  const std::string s = str(j);
  CHECK(s.find("for_loop") != std::string::npos);
  CHECK(s.find("while_loop") != std::string::npos);
  CHECK(s.find("cond[") != std::string::npos);
  for (std::int64_t n : {1, 2, 10, 30}) {
    std::int64_t want = 0;
    for (std::int64_t s0 = 1; s0 < n; ++s0)
      for (std::int64_t x = s0; x != 1; x = x % 2 == 0 ? x / 2 : 3 * x + 1) ++want;
    CHECK(scalar_at<std::int64_t>(dyn::eval_jaxpr(j, {i64(n)}).at(0)) == want);
    CHECK(dyn::eager(collatz)(n).data()[0] == want);
  }
  // The condition captures a traced threshold: a constant of cond_jaxpr.
  auto ju = dyn::make_jaxpr(control_programs::until)(dyn::ones<double>({2}), 1.0);
  CHECK(str(ju) == control_programs::until_jaxpr);
  auto r = dyn::eval_jaxpr(ju, {dyn::ones<double>({2}), dyn::AnyArray(dyn::Array<double>::scalar(100.0))});
  CHECK(dyn::array_equal(r.at(0).get<double>(), dyn::full<double>({2}, 64.0)));
}

TEST_CASE("infer_dimensions: only the carried sizes that change become loop variables") {
  // a mixes with the captured x (its size is shared), b grows (a loop variable).
  auto f = [](auto x, auto y) {
    auto [a, b] = dyn::for_loop(0, 3, 1, {.infer_dimensions = true})([&](auto, auto a, auto b) {
      return std::make_tuple(a * x, dyn::concatenate({b, b}, 0));
    })(x, y);
    return std::make_tuple(a, b);
  };
  auto j = dyn::make_jaxpr(f, dyn::polymorphic_shapes{"(n,)", "(n,)"})(dyn::ones<double>({3}), dyn::ones<double>({3}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:f64[a] c:f64[a]. let\n"
        "    d:i64[] e:f64[a] f:f64[d] = for_loop[\n"
        "      body_jaxpr={ lambda ; g:i64[] h:f64[g] i:i64[] j:i64[] k:f64[g] l:f64[i]. let\n"
        "          m:i64[] = mul i 2:i64[]\n"
        "          n:f64[g] = mul k h\n"
        "          o:f64[m] = concatenate[dimension=0] l l\n"
        "        in (m, n, o) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a b a 0:i64[] 3:i64[] 1:i64[] 0:i64[] b c\n"
        "  in (d, e, f) }");
  auto x = dyn::arange<double>(3);
  auto e = dyn::eager(f)(x, x);
  auto r = dyn::eval_jaxpr(j, {x, x});
  CHECK(dyn::array_equal(r.at(1).get<double>(), std::get<0>(e)));
  CHECK(dyn::array_equal(r.at(2).get<double>(), std::get<1>(e)));
  CHECK(std::get<1>(e).shape() == std::vector<std::int64_t>{24});
  // Neither option alone can trace it.
  auto shared = [](auto x, auto y) {
    return dyn::for_loop(0, 3, 1)([&](auto, auto a, auto b) {
      return std::make_tuple(a * x, dyn::concatenate({b, b}, 0));
    })(x, y);
  };
  CHECK_THROWS_AS(dyn::make_jaxpr(shared, dyn::polymorphic_shapes{"(n,)", "(n,)"})(x, x), dyn::TypeError);
}

// Issue 14 (the Catalyst tracing note, "Adding dynamic dimensions"; the
// Catalyst dynamic-arrays doc, output types with InDBIdx): under preserve_dimensions=false the body sees every
// carried dimension as a loop variable, but a result whose size the body
// never changes keeps the caller's dimension (InDBIdx); only the sizes the
// body computes are implicit results (OutDBIdx).
TEST_CASE("preserve_dimensions=false: a size the body returns unchanged keeps the caller's dimension") {
  auto keep_and_grow = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    auto [a2, b2] = dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
        [](auto, auto a, auto) { return std::make_tuple(a, dyn::ones<double>({a.shape(0) * 2})); })(a0, a0);
    return std::make_tuple(a0 + a2, b2);  // a0 + a2 was "incompatible shapes for broadcasting: (_d0,), (_d5,)"
  };
  auto j = dyn::make_jaxpr(keep_and_grow)(std::int64_t{3});
  CHECK(str(j) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      a\n"
        "    c:i64[] d:f64[a] e:f64[c] = for_loop[\n"
        "      body_jaxpr={ lambda ; f:i64[] g:i64[] h:i64[] i:f64[f] j:f64[g]. let\n"
        "          k:i64[] = mul f 2:i64[]\n"
        "          l:f64[k] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "            k\n"
        "        in (k, i, l) }\n"
        "      body_nconsts=1\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a a 0:i64[] 3:i64[] 1:i64[] 0:i64[] b b\n"
        "    m:f64[a] = add b d\n"
        "  in (c, m, e) }");
  // The first result's size is the constant f (the caller's a), the
  // second's the implicit result k; the second carried value keeps its loop
  // variable g.
  const dyn::Jaxpr& body = *std::get<dyn::detail::ForLoopParams>(j.jaxpr->eqns.at(1).params).body_jaxpr;
  CHECK(str(dyn::input_type_of(body)) ==
        "[(i64[], true), (i64[], false), (i64[], true), (f64[DBIdx(0)], true), (f64[DBIdx(1)], true)]");
  CHECK(str(dyn::output_type_of(body)) == "[(i64[], false), (f64[InDBIdx(0)], true), (f64[OutDBIdx(0)], true)]");
  for (std::int64_t sz : {0, 1, 4}) {
    auto r = dyn::eval_jaxpr(j, {i64(sz)});
    auto [e0, e1] = dyn::eager(keep_and_grow)(sz);
    REQUIRE(r.size() == 3);  // the implicit size, then the two results
    CHECK(scalar_at<std::int64_t>(r[0]) == 2 * sz);
    CHECK(e0.shape() == std::vector<std::int64_t>{sz});
    CHECK(e1.shape() == std::vector<std::int64_t>{2 * sz});
    CHECK(dyn::array_equal(r[1].get<double>(), e0));
    CHECK(dyn::array_equal(r[2].get<double>(), e1));
    CHECK(dyn::array_equal(e0, dyn::full<double>({sz}, 2.0)));
  }
}

TEST_CASE("Catalyst tracing note: the loop over (a, b, b_) under preserve_dimensions=false: shared sizes are shared after it") {
  // The Catalyst tracing note: "`b + b_` is not possible" inside the body, since b and b_
  // are loop variables of their own. The body returns them unchanged, so
  // after the loop they have b0's size again, and a2 has a0's.
  auto r000 = [](auto sz) {
    auto a0 = dyn::ones<double>({sz});
    auto b0 = dyn::ones<double>({sz + 1});
    auto [a2, b2, b2_] = dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})(
        [](auto, auto a, auto b, auto b_) { return std::make_tuple(a, b, b_ * 2.0); })(a0, b0, b0);
    return std::make_tuple(a2 + a0, b2 + b2_);
  };
  auto j = dyn::make_jaxpr(r000)(std::int64_t{3});
  CHECK(str(j) ==
        "{ lambda ; a:i64[]. let\n"
        "    b:i64[] = add a 1:i64[]\n"
        "    c:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      a\n"
        "    d:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      b\n"
        "    e:f64[a] f:f64[b] g:f64[b] = for_loop[\n"
        "      body_jaxpr={ lambda ; h:i64[] i:i64[] j:i64[] k:f64[h] l:f64[i] m:f64[i]. let\n"
        "          n:f64[i] = mul m 2.0:f64[]\n"
        "        in (k, l, n) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=False\n"
        "    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] c d d\n"
        "    o:f64[a] = add e c\n"
        "    p:f64[b] = add f g\n"
        "  in (b, o, p) }");
  const dyn::Jaxpr& body = *std::get<dyn::detail::ForLoopParams>(j.jaxpr->eqns.at(3).params).body_jaxpr;
  CHECK(str(dyn::output_type_of(body)) == "[(f64[InDBIdx(0)], true), (f64[InDBIdx(1)], true), (f64[InDBIdx(1)], true)]");
  for (std::int64_t sz : {0, 2}) {
    auto r = dyn::eval_jaxpr(j, {i64(sz)});
    auto [o, p] = dyn::eager(r000)(sz);
    CHECK(dyn::array_equal(r.at(1).get<double>(), o));
    CHECK(dyn::array_equal(r.at(2).get<double>(), p));
    CHECK(dyn::array_equal(p, dyn::full<double>({sz + 1}, 1025.0)));
  }
  // Inside the body the two are still different loop variables.
  auto inside = [](auto sz) {
    auto b0 = dyn::ones<double>({sz + 1});
    return dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})(
        [](auto, auto b, auto b_) { return std::make_tuple(b + b_, b_); })(b0, b0);
  };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::make_jaxpr(inside)(std::int64_t{3}); })
            .starts_with("add got incompatible shapes for broadcasting: (_d1,), (_d2,). With preserve_dimensions=false"));
}

TEST_CASE("preserve_dimensions=false: a captured array returned by the body") {
  // Of the initial value's size: every iteration keeps it, so the result has
  // the caller's dimension and mixes with y after the loop.
  auto same = [](auto k, auto x, auto y) {
    return dyn::for_loop(0, k, 1, {.preserve_dimensions = false})([&](auto, auto) { return x * 2.0; })(y) + y;
  };
  auto j = dyn::make_jaxpr(same, dyn::polymorphic_shapes{"", "(a,)", "(a,)"})(std::int64_t{3}, dyn::ones<double>({2}),
                                                                             dyn::ones<double>({2}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:i64[] c:f64[a] d:f64[a]. let\n"
        "    e:f64[a] = for_loop[\n"
        "      body_jaxpr={ lambda ; f:i64[] g:f64[f] h:i64[] i:f64[f]. let\n"
        "          j:f64[f] = mul g 2.0:f64[]\n"
        "        in (j,) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=False\n"
        "    ] a c 0:i64[] b 1:i64[] 0:i64[] d\n"
        "    k:f64[a] = add e d\n"
        "  in (k,) }");
  // Of another size: y's size after zero iterations, x's after more. It
  // depends on the trip count, so it is an implicit result (OutDBIdx).
  auto other = [](auto k, auto x, auto y) {
    return dyn::for_loop(0, k, 1, {.preserve_dimensions = false})([&](auto, auto) { return x * 2.0; })(y);
  };
  auto jo = dyn::make_jaxpr(other, dyn::polymorphic_shapes{"", "(a,)", "(b,)"})(
      std::int64_t{3}, dyn::ones<double>({2}), dyn::ones<double>({5}));
  CHECK(str(jo) ==
        "{ lambda ; a:i64[] b:i64[] c:i64[] d:f64[a] e:f64[b]. let\n"
        "    f:i64[] g:f64[f] = for_loop[\n"
        "      body_jaxpr={ lambda ; h:i64[] i:f64[h] j:i64[] k:i64[] l:f64[j]. let\n"
        "          m:f64[h] = mul i 2.0:f64[]\n"
        "        in (h, m) }\n"
        "      body_nconsts=2\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] a d b 0:i64[] c 1:i64[] 0:i64[] e\n"
        "  in (f, g) }");
  const auto x = dyn::arange<double>(2), y = dyn::arange<double>(5), y2 = dyn::arange<double>(2) + 7.0;
  for (std::int64_t k : {0, 3}) {
    auto r = dyn::eval_jaxpr(j, {i64(k), x, y2});
    CHECK(dyn::array_equal(r.at(0).get<double>(), dyn::eager(same)(k, x, y2)));
    CHECK(dyn::array_equal(r.at(0).get<double>(), k == 0 ? y2 + y2 : x * 2.0 + y2));
    auto ro = dyn::eval_jaxpr(jo, {i64(k), x, y});
    CHECK(scalar_at<std::int64_t>(ro.at(0)) == (k == 0 ? 5 : 2));
    CHECK(dyn::array_equal(ro.at(1).get<double>(), dyn::eager(other)(k, x, y)));
    CHECK(dyn::array_equal(ro.at(1).get<double>(), k == 0 ? y : x * 2.0));
  }
}

TEST_CASE("preserve_dimensions=false: a while loop whose carried size changes next to one whose size does not") {
  auto w = [](auto x, auto y) {
    auto [a, b] = dyn::while_loop([](auto a, auto) { return dyn::dim_value(a.shape(0)) <= 100; },
                                  {.preserve_dimensions = false})(
        [](auto a, auto b) { return std::make_tuple(dyn::concatenate({a, a}, 0), b * 2.0); })(x, y);
    return std::make_tuple(a, b + y);  // b keeps y's size
  };
  auto j = dyn::make_jaxpr(w, dyn::polymorphic_shapes{"(a,)", "(b,)"})(dyn::ones<double>({3}), dyn::ones<double>({2}));
  CHECK(str(j) ==
        "{ lambda ; a:i64[] b:i64[] c:f64[a] d:f64[b]. let\n"
        "    e:i64[] f:f64[e] g:f64[b] = while_loop[\n"
        "      body_jaxpr={ lambda ; h:i64[] i:i64[] j:f64[i] k:f64[h]. let\n"
        "          l:i64[] = mul i 2:i64[]\n"
        "          m:f64[l] = concatenate[dimension=0] j j\n"
        "          n:f64[h] = mul k 2.0:f64[]\n"
        "        in (l, m, n) }\n"
        "      body_nconsts=1\n"
        "      cond_jaxpr={ lambda ; o:i64[] p:i64[] q:f64[p] r:f64[o]. let\n"
        "          s:bool[] = le p 100:i64[]\n"
        "        in (s,) }\n"
        "      cond_nconsts=1\n"
        "      nimplicit=1\n"
        "      preserve_dimensions=False\n"
        "    ] b b a c d\n"
        "    t:f64[b] = add g d\n"
        "  in (e, f, t) }");
  const dyn::Jaxpr& body = *std::get<dyn::detail::WhileLoopParams>(j.jaxpr->eqns.at(0).params).body_jaxpr;
  CHECK(str(dyn::output_type_of(body)) == "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[InDBIdx(0)], true)]");
  for (std::int64_t n : {1, 3, 101}) {
    auto x = dyn::arange<double>(n), y = dyn::arange<double>(4);
    auto r = dyn::eval_jaxpr(j, {x, y});
    auto [ea, eb] = dyn::eager(w)(x, y);
    std::int64_t want = n, doublings = 0;
    while (want <= 100) want *= 2, ++doublings;
    CHECK(scalar_at<std::int64_t>(r.at(0)) == want);
    CHECK(dyn::array_equal(r.at(1).get<double>(), ea));
    CHECK(dyn::array_equal(r.at(2).get<double>(), eb));
    CHECK(dyn::array_equal(eb, y * static_cast<double>((std::int64_t{1} << doublings) + 1)));
  }
}

TEST_CASE("preserve_dimensions=false: which loop variables are invariant (swaps, sizes computed from invariant ones)") {
  // A swap of two values of the same size keeps both sizes; of two sizes,
  // the sizes alternate, so both stay loop variables.
  auto swap = [](auto x, auto y) {
    auto [a, b] = dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
        [](auto, auto a, auto b) { return std::make_tuple(b, a); })(x, y);
    return std::make_tuple(a, b);
  };
  auto js = dyn::make_jaxpr(swap, dyn::polymorphic_shapes{"(n,)", "(n,)"})(dyn::ones<double>({3}),
                                                                          dyn::ones<double>({3}));
  CHECK(str(js).find("    d:f64[a] e:f64[a] = for_loop[\n") != std::string::npos);
  auto jd = dyn::make_jaxpr(swap, dyn::polymorphic_shapes{"(n,)", "(m,)"})(dyn::ones<double>({3}),
                                                                          dyn::ones<double>({2}));
  CHECK(str(jd).find("    e:i64[] f:i64[] g:f64[e] h:f64[f] = for_loop[\n") != std::string::npos);
  for (std::int64_t m : {2, 5}) {
    auto x = dyn::arange<double>(3), y = dyn::arange<double>(m) + 10.0;
    auto r = dyn::eval_jaxpr(jd, {x, y});
    auto [ea, eb] = dyn::eager(swap)(x, y);
    CHECK(dyn::array_equal(r.at(2).get<double>(), y));  // three swaps
    CHECK(dyn::array_equal(r.at(2).get<double>(), ea));
    CHECK(dyn::array_equal(r.at(3).get<double>(), eb));
  }
  // Initial sizes n and 2 * n, and a body returning (a + 1, concatenate(a, a)):
  // the second size is 2 * n in every iteration too.
  auto twice = [](auto x) {
    auto [a, b] = dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
        [](auto, auto a, auto) { return std::make_tuple(a + 1.0, dyn::concatenate({a, a}, 0)); })(
        x, dyn::concatenate({x, x}, 0));
    return b + dyn::concatenate({a, a}, 0);
  };
  auto jt = dyn::make_jaxpr(twice, dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({3}));
  CHECK(str(jt).find("    e:f64[a] f:f64[c] = for_loop[\n") != std::string::npos);
  CHECK(str(jt).find("nimplicit=0") != std::string::npos);
  auto x = dyn::arange<double>(3);
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jt, {x}).back().get<double>(), dyn::eager(twice)(x)));
}

TEST_CASE("a carry whose init value is an integer while the body returns a float: change the init value") {
  // JAX's _check_carry_type: the rule, the difference by position, the fix.
  // Converting the body's result back (astype<std::int32_t>) would truncate.
  auto f = [](auto n) {
    return dyn::for_loop(0, n, 1)([](auto i, auto acc) { return acc + dyn::astype<double>(i); })(0);
  };
  const std::string want =
      "dyn::for_loop(): a carried value keeps the dtype of its init value, but they differ: carry input #0 has "
      "type i32[] but body output #0 has type f64[], so the dtypes do not match; change the init value to f64 "
      "(e.g. 0.0)";
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(f)(std::int64_t{3}); }) == want);
  CHECK(message_of<dyn::TypeError>([&] { dyn::eager(f)(std::int64_t{3}); }) == want);
  auto fixed = [](auto n) {
    return dyn::for_loop(0, n, 1)([](auto i, auto acc) { return acc + dyn::astype<double>(i); })(0.0);
  };
  CHECK(dyn::eager(fixed)(std::int64_t{4}).data()[0] == 6.0);
  // An array init, and a weak float meeting an integer carry (f32, as in JAX).
  auto arr = [](auto x) {
    return dyn::while_loop([](auto a) { return dyn::sum(a) < 10.0f; })([](auto a) { return a + 0.5; })(x);
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::make_jaxpr(arr)(dyn::zeros<std::int32_t>({3})); }) ==
        "dyn::while_loop(): a carried value keeps the dtype of its init value, but they differ: carry input #0 has "
        "type i32[3] but body output #0 has type f32[3], so the dtypes do not match; change the init value to f32 "
        "(e.g. dyn::astype<float>(init))");
}

}  // TEST_SUITE
