// Control-flow programs that several test files run, each written once, with
// what make_jaxpr prints for them where more than one file asserts it:
//   control/test_control.cpp      golden jaxprs and numbers (eval_jaxpr, eager)
//   control/test_jit_control.cpp  the same programs through dyn::jit
//   ir/test_check.cpp             check_jaxpr accepts them, and rejects
//                                 copies of their jaxprs corrupted by hand
#pragma once

#include <dynstage/core.hpp>

namespace control_programs {

// The Catalyst dynamic-arrays doc's g: the loop body either mixes the
// carried value with the captured x (its first example,
// preserve_dimensions=true) or resizes it (its second, false).
inline constexpr auto g_mix = [](auto x, auto y) {
  auto loop = dyn::for_loop(0, 10, 1)([&](auto, auto a) { return a * x; });
  return dyn::sum(loop(y));
};
inline constexpr auto g_resize = [](auto x, auto y) {
  (void)x;
  auto loop = dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})(
      [&](auto, auto a) { return dyn::ones<double>({a.shape(0) + 1}); });
  return dyn::sum(loop(y));
};

// The Catalyst dynamic-arrays doc's overview circuit: the body adds the
// captured a0, so a0 and its dimension are constants of the body.
inline constexpr auto circuit = [](auto sz) {
  auto a0 = dyn::ones<double>({sz});
  auto loop = dyn::for_loop(0, 10, 1)([&](auto, auto a) { return a + a0; });
  auto a2 = loop(a0);
  return a0 + a2;
};
// make_jaxpr(circuit)(std::int64_t{3}).
inline constexpr const char* circuit_jaxpr =
    "{ lambda ; a:i64[]. let\n"
    "    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
    "      a\n"
    "    c:f64[a] = for_loop[\n"
    "      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let\n"
    "          h:f64[d] = add g e\n"
    "        in (h,) }\n"
    "      body_nconsts=2\n"
    "      nimplicit=0\n"
    "      preserve_dimensions=True\n"
    "    ] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b\n"
    "    i:f64[a] = add b c\n"
    "  in (i,) }";

// A while loop doubling an array until its size exceeds 100.
inline constexpr auto doubling = [](auto x) {
  return dyn::while_loop([](auto a) { return dyn::dim_value(a.shape(0)) <= 100; },
                         {.preserve_dimensions = false})([](auto a) { return dyn::concatenate({a, a}, 0); })(x);
};

// A while loop whose condition captures a traced threshold: a constant of
// cond_jaxpr (cond_nconsts=1).
inline constexpr auto until = [](auto x, auto limit) {
  return dyn::while_loop([&](auto a) { return dyn::sum(a) < limit; })([](auto a) { return a * 2.0; })(x);
};
// make_jaxpr(until)(dyn::ones<double>({2}), 1.0).
inline constexpr const char* until_jaxpr =
    "{ lambda ; a:f64[2] b:f64[]. let\n"
    "    c:f64[2] = while_loop[\n"
    "      body_jaxpr={ lambda ; d:f64[2]. let e:f64[2] = mul d 2.0:f64[] in (e,) }\n"
    "      body_nconsts=0\n"
    "      cond_jaxpr={ lambda ; f:f64[] g:f64[2]. let\n"
    "          h:f64[] = reduce_sum[axes=(0,)] g\n"
    "          i:bool[] = lt h f\n"
    "        in (i,) }\n"
    "      cond_nconsts=1\n"
    "      nimplicit=0\n"
    "      preserve_dimensions=True\n"
    "    ] b a\n"
    "  in (c,) }";

// cond returning arange(n) or zeros(n * n): the result's size differs
// between the branches, so it is an implicit output of the cond.
inline constexpr auto arange_or_zeros = [](auto p, auto n) {
  return dyn::cond(p, [&]() { return dyn::arange<double>(n); }, [&]() { return dyn::zeros<double>({n * n}); })();
};
// make_jaxpr(arange_or_zeros)(true, std::int64_t{4}).
inline constexpr const char* arange_or_zeros_jaxpr =
    "{ lambda ; a:bool[] b:i64[]. let\n"
    "    c:i64[] d:f64[c] = cond[\n"
    "      branch_jaxprs=(\n"
    "        { lambda ; e:i64[]. let\n"
    "            f:f64[e] = iota[dimension=0 dtype=float64 shape=(None,)] e\n"
    "          in (e, f) }\n"
    "        { lambda ; g:i64[]. let\n"
    "            h:i64[] = mul g g\n"
    "            i:f64[h] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 0.0:f64[]\n"
    "              h\n"
    "          in (h, i) }\n"
    "      )\n"
    "      nimplicit_outputs=1\n"
    "    ] a b\n"
    "  in (c, d) }";

}  // namespace control_programs
