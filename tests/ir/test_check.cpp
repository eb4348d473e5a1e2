// dyn::check_jaxpr, the IR verifier (issue 15, point 3; docs/jaxpr.md
// "Checking a jaxpr"): it accepts every kind of traced program, and each kind
// of defect, made by corrupting a traced jaxpr by hand, is a TypeError naming
// the equation and the difference.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../control/programs.hpp"
#include "../test_util.hpp"

using test_util::message_of;
using test_util::str;

namespace {

using dyn::detail::CondParams;
using dyn::detail::ForLoopParams;

// The check's message ("" when it passes).
std::string check_message(const dyn::ClosedJaxpr& cj) {
  return message_of<dyn::TypeError>([&] { dyn::check_jaxpr(cj); });
}

// A copy of cj's jaxpr to corrupt, and cj with it.
std::shared_ptr<dyn::Jaxpr> copy(const dyn::ClosedJaxpr& cj) { return std::make_shared<dyn::Jaxpr>(*cj.jaxpr); }
dyn::ClosedJaxpr with(const dyn::ClosedJaxpr& cj, std::shared_ptr<dyn::Jaxpr> j) { return {std::move(j), cj.consts}; }

dyn::Type& type_of_var(dyn::Jaxpr& j, int v) { return j.types.at(static_cast<std::size_t>(v)); }

// The body of equation k's for_loop, as a copy to corrupt, and the equation
// with it.
std::shared_ptr<dyn::Jaxpr> body_copy(const dyn::Jaxpr& j, std::size_t k) {
  return std::make_shared<dyn::Jaxpr>(*std::get<ForLoopParams>(j.eqns.at(k).params).body_jaxpr);
}
void set_body(dyn::Jaxpr& j, std::size_t k, std::shared_ptr<dyn::Jaxpr> b) {
  std::get<ForLoopParams>(j.eqns.at(k).params).body_jaxpr = std::move(b);
}

auto elementwise = [](auto x, auto y) { return dyn::sin(x) * 2.0f + y; };
// Control-flow programs shared with control/test_control.cpp, and the texts
// of their jaxprs (control/programs.hpp).
using control_programs::arange_or_zeros;
using control_programs::circuit;
using control_programs::doubling;

}  // namespace

TEST_SUITE("check") {

TEST_CASE("check_jaxpr accepts traced programs of every kind") {
  dyn::Array<float> x({3, 4}), v({4});
  // Elementwise with weak literals, structural ops, reductions, dot.
  CHECK(check_message(dyn::make_jaxpr(elementwise)(x, x)) == "");
  auto mixed = [](auto a, auto b) {
    auto t = dyn::transpose(dyn::reshape(a, {4, 3}), {1, 0});
    auto c = dyn::concatenate({t, t}, 0);
    auto s = dyn::slice(c, {1, 0}, {5, 4});
    auto d = dyn::dot(s, b);
    return std::make_tuple(dyn::where(d > 0.0f, d, -d), dyn::sum(s, {1}), dyn::astype<std::int32_t>(d),
                           dyn::arange<std::int64_t>(5), dyn::mean(dyn::squeeze(dyn::expand_dims(b, 0), {0})));
  };
  CHECK(check_message(dyn::make_jaxpr(mixed)(x, v)) == "");
  auto dyn_slices = [](auto a, auto i) {
    auto s = dyn::dynamic_slice(a, {i, i}, {2, 2});
    return dyn::dynamic_update_slice(a, s * 2.0f, {i, std::int64_t{0}});
  };
  CHECK(check_message(dyn::make_jaxpr(dyn_slices)(x, std::int64_t{1})) == "");
  // Captured constants: a closed-over array is a constvar of the ClosedJaxpr.
  dyn::Array<float> w = dyn::full<float>({4}, 3.0f);
  auto cj = dyn::make_jaxpr([&](auto a) { return a * w + w; })(x);
  REQUIRE(cj.consts.size() == 1);
  CHECK(check_message(cj) == "");
  // Symbolic shapes (the dimension variables are implicit inputs).
  auto sym = dyn::make_jaxpr([](auto a) { return dyn::concatenate({a, a}, 1) * 2.0f; },
                             dyn::polymorphic_shapes{"(a, b)"})(x);
  CHECK(check_message(sym) == "");
  CHECK(check_message(dyn::make_jaxpr([](auto a) { return dyn::reshape(a, {-1}); },
                                      dyn::polymorphic_shapes{"(b, 4)"})(x)) == "");
  // Dynamic shapes: sizes computed from an i64 argument, an implicit result.
  CHECK(check_message(dyn::make_jaxpr([](auto n) { return dyn::ones<double>({n + 1}) + dyn::ones<double>({n + 1}); })(
            std::int64_t{3})) == "");
  // Loops: shared dimensions, loop variables, while, cond with an implicit
  // output, and nesting.
  CHECK(check_message(dyn::make_jaxpr(circuit)(std::int64_t{3})) == "");
  auto grow = [](auto y) {
    return dyn::for_loop(0, 10, 1, {.preserve_dimensions = false})(
        [&](auto, auto a) { return dyn::ones<double>({a.shape(0) + 1}); })(y);
  };
  CHECK(check_message(dyn::make_jaxpr(grow, dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({3}))) == "");
  CHECK(check_message(dyn::make_jaxpr(doubling, dyn::polymorphic_shapes{"(n,)"})(dyn::ones<double>({3}))) == "");
  CHECK(check_message(dyn::make_jaxpr(arange_or_zeros)(true, std::int64_t{4})) == "");
  auto collatz = [](auto n) {
    return dyn::for_loop(1, n, 1)([](auto start, auto total) {
      auto [y, steps] = dyn::while_loop([](auto y, auto) { return y != std::int64_t{1}; })([](auto y, auto k) {
        auto next = dyn::cond(y % std::int64_t{2} == std::int64_t{0}, [](auto u) { return u / std::int64_t{2}; },
                              [](auto u) { return u * std::int64_t{3} + std::int64_t{1}; })(y);
        return std::make_tuple(next, k + std::int64_t{1});
      })(start, std::int64_t{0});
      (void)y;
      return total + steps;
    })(std::int64_t{0});
  };
  CHECK(check_message(dyn::make_jaxpr(collatz)(std::int64_t{10})) == "");
}

TEST_CASE("every trace of the tests is checked, and a failure there is an internal error") {
  // tests/main.cpp and tests/meson.build set DYNSTAGE_CHECK_JAXPR.
  CHECK(dyn::detail::check_traces_enabled());
  auto cj = dyn::make_jaxpr([](auto a) { return dyn::sin(a); })(dyn::Array<float>({3}));
  auto j = copy(cj);
  type_of_var(*j, j->eqns[0].outputs[0]).dtype = dyn::DType::f64;
  std::string m = message_of<dyn::InternalError>([&] { dyn::detail::check_traced(with(cj, j), {}, {}); });
  CHECK(m ==
        "dynstage internal error (please report): the traced jaxpr fails check_jaxpr (DYNSTAGE_CHECK_JAXPR is "
        "set): check_jaxpr: equation #0 `b:f64[3] = sin a`: output #0 has type f64[3] but the rule gives f32[3]\n"
        "The jaxpr:\n"
        "{ lambda ; a:f32[3]. let b:f64[3] = sin a in (b,) }");
}

TEST_CASE("an output's recomputed type differs: dtype, shape, weak type") {
  auto cj = dyn::make_jaxpr(elementwise)(dyn::Array<float>({3}), dyn::Array<float>({3}));
  REQUIRE(str(cj) ==
          "{ lambda ; a:f32[3] b:f32[3]. let\n"
          "    c:f32[3] = sin a\n"
          "    d:f32[3] = mul c 2.0:f32[]\n"
          "    e:f32[3] = add d b\n"
          "  in (e,) }");
  auto j = copy(cj);
  type_of_var(*j, j->eqns[1].outputs[0]).dtype = dyn::DType::f64;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #1 `d:f64[3] = mul c 2.0:f32[]`: output #0 has type f64[3] but the rule gives f32[3]");
  j = copy(cj);
  type_of_var(*j, j->eqns[0].outputs[0]).shape = {dyn::JDim{4, -1}};
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:f32[4] = sin a`: output #0 has type f32[4] but the rule gives f32[3]");
  j = copy(cj);
  type_of_var(*j, j->eqns[2].outputs[0]).weak = true;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #2 `e:f32[3] = add d b`: output #0 has type f32[3] (weak) but the rule gives f32[3] "
        "(strong)");
  // The rule itself rejects the operands: its message is quoted.
  j = copy(cj);
  type_of_var(*j, j->invars[1]).dtype = dyn::DType::f64;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #2 `e:f32[3] = add d b`: the rule of add rejects its operands (f32[3], f64[3]): add "
        "requires arguments to have the same dtypes, got f32, f64");
}

TEST_CASE("scoping: unbound variables, use before definition, double binding") {
  auto cj = dyn::make_jaxpr(elementwise)(dyn::Array<float>({3}), dyn::Array<float>({3}));
  const std::string hint =
      " (a variable is bound by an input, a constant or an earlier equation of the same jaxpr; a nested jaxpr "
      "cannot use its enclosing jaxpr's variables)";
  auto j = copy(cj);
  j->eqns[2].inputs[1] = dyn::Atom::of_var(j->new_var(dyn::Type{dyn::DType::f32, {dyn::JDim{3, -1}}, false}));
  CHECK(check_message(with(cj, j)) == "check_jaxpr: equation #2 `e:f32[3] = add d f`: operand #1 (f) is not bound here" + hint);
  j = copy(cj);
  std::swap(j->eqns[0], j->eqns[1]);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:f32[3] = mul d 2.0:f32[]`: operand #0 (d) is not bound here" + hint);
  j = copy(cj);
  j->eqns[1].outputs[0] = j->eqns[0].outputs[0];
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #1 `c:f32[3] = mul c 2.0:f32[]`: output #0 (c) is already bound; a variable is bound "
        "once (by an input, a constant or one equation's output)");
  j = copy(cj);
  j->invars[1] = j->invars[0];
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: the jaxpr: input #1 (a) is already bound; a variable is bound once (by an input, a constant or "
        "one equation's output)");
  j = copy(cj);
  j->outvars[0] = dyn::Atom::of_var(j->new_var(dyn::Type{dyn::DType::f32, {}, false}));
  CHECK(check_message(with(cj, j)) == "check_jaxpr: the jaxpr: output #0 (f) is not bound in this jaxpr" + hint);
  // A variable index outside the table is found before anything is named.
  j = copy(cj);
  j->eqns[0].inputs[0] = dyn::Atom::of_var(99);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 (sin): operand #0 is variable 99, outside the jaxpr's table of 5 variables");
}

TEST_CASE("dimensions refer to i64[] variables bound before them") {
  auto cj = dyn::make_jaxpr([](auto n) { return dyn::ones<double>({n}); })(std::int64_t{3});
  REQUIRE(str(cj) ==
          "{ lambda ; a:i64[]. let\n"
          "    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
          "      a\n"
          "  in (b,) }");
  auto j = copy(cj);
  type_of_var(*j, j->invars[0]).dtype = dyn::DType::i32;  // an i32 size operand is fine, an i32 dimension is not
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] a`: "
        "output #0 (b:f64[a]): dimension 0 refers to a, which has type i32[]; a dimension is an i64[] variable");
  j = copy(cj);
  const int b = j->eqns[0].outputs[0];
  type_of_var(*j, b).shape[0] = dyn::JDim::of_var(b);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `b:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] a`: "
        "output #0 (b:f64[b]): dimension 0 refers to b, which is not bound before it (a variable is bound by an "
        "input, a constant or an earlier equation of the same jaxpr; a nested jaxpr cannot use its enclosing "
        "jaxpr's variables)");
  // A different i64[] variable holds another size: the rule gives f64[a].
  j = copy(cj);
  const int m = j->new_var(dyn::Type{dyn::DType::i64, {}, false});
  j->invars.push_back(m);
  type_of_var(*j, b).shape[0] = dyn::JDim::of_var(m);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[] a`: "
        "output #0 has type f64[b] but the rule gives f64[a]");
  // A top-level output's size must be known to the caller: returned first.
  auto grown = dyn::make_jaxpr([](auto n) { return dyn::ones<double>({n + 1}); })(std::int64_t{3});
  REQUIRE(str(grown) ==
          "{ lambda ; a:i64[]. let\n"
          "    b:i64[] = add a 1:i64[]\n"
          "    c:f64[b] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
          "      b\n"
          "  in (b, c) }");
  CHECK(check_message(grown) == "");
  j = copy(grown);
  j->outvars.erase(j->outvars.begin());
  j->out_explicit.clear();
  CHECK(check_message(with(grown, j)) ==
        "check_jaxpr: the jaxpr: output #0 (c:f64[b]) has the dimension b, which is neither an input, a constant nor "
        "an earlier output; return it before (implicit outputs come first)");
}

TEST_CASE("constants, literals and params") {
  dyn::Array<float> w = dyn::full<float>({4}, 3.0f);
  auto cj = dyn::make_jaxpr([&](auto a) { return a * w; })(dyn::Array<float>({4}));
  REQUIRE(str(cj) == "{ lambda a:f32[4]; b:f32[4]. let c:f32[4] = mul b a in (c,) }");
  dyn::ClosedJaxpr bad = cj;
  bad.consts = {dyn::AnyArray(dyn::full<float>({5}, 1.0f))};
  CHECK(check_message(bad) == "check_jaxpr: the jaxpr: constvar #0 (a:f32[4]) is given a constant of type f32[5]");
  bad.consts = {};
  CHECK(check_message(bad) == "check_jaxpr: the jaxpr: the ClosedJaxpr has 0 constants for 1 constvars");

  auto lit = dyn::make_jaxpr([](auto a) { return a > 0; })(dyn::Array<std::int32_t>({2}));
  REQUIRE(str(lit) == "{ lambda ; a:i32[2]. let b:bool[2] = gt a 0:i32[] in (b,) }");
  auto j = copy(lit);
  j->eqns[0].inputs[1].lit.i = std::int64_t{1} << 40;
  CHECK(check_message(with(lit, j)) ==
        "check_jaxpr: equation #0 `b:bool[2] = gt a 1099511627776:i32[]`: operand #1 is the literal "
        "1099511627776:i32[], whose value is not of dtype i32");

  j = copy(lit);
  j->eqns[0].params = dyn::detail::ReduceParams{{0}};
  CHECK(check_message(with(lit, j)) == "check_jaxpr: equation #0 (gt): its params are not those of gt");
}

TEST_CASE("nested jaxprs: a body's equations, its inputs against the operands, the carry, no capture") {
  auto cj = dyn::make_jaxpr(circuit)(std::int64_t{3});
  REQUIRE(str(cj) == control_programs::circuit_jaxpr);
  // An equation of the body.
  auto j = copy(cj);
  auto body = body_copy(*j, 1);
  type_of_var(*body, body->eqns[0].outputs[0]).dtype = dyn::DType::f32;
  set_body(*j, 1, body);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `h:f32[d] = add g e` in the body_jaxpr of equation #1 (for_loop): output #0 has "
        "type f32[d] but the rule gives f64[d]");
  // The body's output must be the next iteration's carried input.
  j = copy(cj);
  body = body_copy(*j, 1);
  body->outvars[0] = dyn::Atom::of_var(body->invars[2]);
  set_body(*j, 1, body);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: the jaxpr in the body_jaxpr of equation #1 (for_loop): output #0 has type i64[] but the next "
        "iteration's input #3 (g:f64[d]) takes f64[d]");
  // The operands must have the body's input types, dimensions included: the
  // carried input g:f64[d] takes the size that operand #0 (the constant d) holds.
  j = copy(cj);
  const int other = j->new_var(dyn::Type{dyn::DType::f64, {dyn::JDim{3, -1}}, false});
  j->invars.insert(j->invars.begin(), other);
  j->eqns[1].inputs.back() = dyn::Atom::of_var(other);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #1 `d:f64[b] = for_loop[...] b c 0:i64[] 10:i64[] 1:i64[] 0:i64[] a`: operand #6 has "
        "type f64[3] but body_jaxpr input #3 (h:f64[e]) takes f64[b] here");
  // A body cannot use its enclosing jaxpr's variables: an index of the
  // body's own table that nothing in the body binds.
  j = copy(cj);
  body = body_copy(*j, 1);
  body->eqns[0].inputs[1] = dyn::Atom::of_var(body->new_var(dyn::Type{dyn::DType::f64, {dyn::JDim::of_var(0)}, false}));
  set_body(*j, 1, body);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `h:f64[d] = add g i` in the body_jaxpr of equation #1 (for_loop): operand #1 (i) "
        "is not bound here (a variable is bound by an input, a constant or an earlier equation of the same jaxpr; a "
        "nested jaxpr cannot use its enclosing jaxpr's variables)");
  // Layouts.
  j = copy(cj);
  std::get<ForLoopParams>(j->eqns[1].params).body_nconsts = 1;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #1 `c:f64[a] = for_loop[...] a b 0:i64[] 10:i64[] 1:i64[] 0:i64[] b`: 7 operands and "
        "a body_jaxpr of 4 inputs and 1 outputs do not fit body_nconsts=1 nimplicit=0 (the layouts are described "
        "in params.hpp, above ForLoopParams)");
  j = copy(cj);
  j->eqns[1].inputs[5] = dyn::Atom::literal(dyn::Scalar::of(0.0));
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #1 `c:f64[a] = for_loop[...] a b 0:i64[] 10:i64[] 1:i64[] 0.0:f64[] b`: operand #5 "
        "(the initial index) has type f64[] but is an i64[] (the layouts are described in params.hpp, above "
        "ForLoopParams)");
}

TEST_CASE("while_loop: the condition returns one bool[]; its inputs are the cond constants and the carry") {
  auto cj = dyn::make_jaxpr(control_programs::until)(dyn::ones<double>({2}), 1.0);
  REQUIRE(str(cj) == control_programs::until_jaxpr);
  auto j = copy(cj);
  auto& p = std::get<dyn::detail::WhileLoopParams>(j->eqns[0].params);
  auto c = std::make_shared<dyn::Jaxpr>(*p.cond_jaxpr);
  c->outvars[0] = dyn::Atom::of_var(c->eqns[0].outputs[0]);
  p.cond_jaxpr = c;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: the jaxpr in the cond_jaxpr of equation #0 (while_loop): it returns f64[]; a cond_jaxpr returns "
        "one bool[]");
  j = copy(cj);
  std::swap(j->eqns[0].inputs[0], j->eqns[0].inputs[1]);
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:f64[2] = while_loop[...] a b`: operand #0 has type f64[2] but cond_jaxpr input "
        "#0 (f:f64[]) takes f64[] here");
}

TEST_CASE("cond: branch outputs against the equation's, implicit outputs included") {
  auto cj = dyn::make_jaxpr(arange_or_zeros)(true, std::int64_t{4});
  REQUIRE(str(cj) == control_programs::arange_or_zeros_jaxpr);
  // The else branch returns its operand g as the size of its f64[h]: the
  // rule no longer sees an implicit output.
  auto j = copy(cj);
  auto* p = &std::get<CondParams>(j->eqns[0].params);
  auto b1 = std::make_shared<dyn::Jaxpr>(*p->branches[1]);
  b1->outvars[0] = dyn::Atom::of_var(b1->invars[0]);
  p->branches[1] = b1;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:i64[] d:f64[c] = cond[...] a b`: output #1 has type f64[c] but the rule gives "
        "f64[b]");
  // The else branch returns a scalar: the rule reads the then branch's types,
  // the check compares each branch with the equation.
  j = copy(cj);
  p = &std::get<CondParams>(j->eqns[0].params);
  b1 = std::make_shared<dyn::Jaxpr>(*p->branches[1]);
  b1->outvars[1] = dyn::Atom::literal(dyn::Scalar::of(0.0));
  p->branches[1] = b1;
  CHECK(check_message(with(cj, j)) ==
        "check_jaxpr: equation #0 `c:i64[] d:f64[c] = cond[...] a b`: branch_jaxprs[0] output #1 has type f64[e] but "
        "branch_jaxprs[1] output #1 has type f64[]; the branches return the same dtypes and ranks");
  // A size the caller knows (no implicit output): the rule reads the then
  // branch, the check compares each branch with the equation's types.
  auto same_size = [](auto p, auto x) { return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return a * 2.0; })(x); };
  auto sj = dyn::make_jaxpr(same_size, dyn::polymorphic_shapes{"()", "(n,)"})(true, dyn::ones<double>({3}));
  REQUIRE(str(sj) ==
          "{ lambda ; a:i64[] b:bool[] c:f64[a]. let\n"
          "    d:f64[a] = cond[\n"
          "      branch_jaxprs=(\n"
          "        { lambda ; e:i64[] f:f64[e]. let  in (f,) }\n"
          "        { lambda ; g:i64[] h:f64[g]. let i:f64[g] = mul h 2.0:f64[] in (i,) }\n"
          "      )\n"
          "      nimplicit_outputs=0\n"
          "    ] b a c\n"
          "  in (d,) }");
  CHECK(check_message(sj) == "");
  j = copy(sj);
  p = &std::get<CondParams>(j->eqns[0].params);
  b1 = std::make_shared<dyn::Jaxpr>(*p->branches[1]);
  const int z = b1->new_var(dyn::Type{dyn::DType::f64, {dyn::JDim{3, -1}}, false});
  b1->eqns.push_back(dyn::Eqn{dyn::detail::Prim::broadcast_in_dim, {dyn::Atom::literal(dyn::Scalar::of(0.0))}, {z},
                              dyn::detail::BroadcastInDimParams{{3}, {}}});
  b1->outvars[0] = dyn::Atom::of_var(z);
  p->branches[1] = b1;
  CHECK(check_message(with(sj, j)) ==
        "check_jaxpr: equation #0 `d:f64[a] = cond[...] b a c`: branch_jaxprs[1] output #0 has type f64[3] but the "
        "equation's output #0 (d:f64[a]) is f64[g] for it");
}

TEST_CASE("check_jaxpr alone knows no relation between dimension inputs; the trace's check does") {
  // "b + 15" is an implicit input of its own; slicing 16 needs b + 15 >= 16.
  auto head = [](auto x) { return dyn::slice(x, {0}, {16}); };
  auto cj = dyn::make_jaxpr(head, dyn::polymorphic_shapes{"b + 15"})(dyn::Array<std::int32_t>({20}));
  REQUIRE(str(cj) ==
          "{ lambda ; a:i64[] b:i64[] c:i32[b]. let\n"
          "    d:i32[16] = slice[limit_indices=(16,) start_indices=(0,) strides=None] c\n"
          "  in (d,) }");
  const std::string m = check_message(cj);
  CHECK(m.rfind("check_jaxpr: equation #0 `d:i32[16] = slice[limit_indices=(16,) start_indices=(0,) strides=None] "
                "c`: the rule of slice rejects its operands (i32[b]): Symbolic dimension comparison 'b' >= '16' is "
                "inconclusive.",
                0) == 0);
  auto s = dyn::detail::symbolic_shape("(b, b + 15)");
  CHECK_NOTHROW(dyn::detail::check_jaxpr(cj, {}, {s[0], s[1]}));
}

}  // TEST_SUITE
