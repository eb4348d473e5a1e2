// The bad-input catalogue (docs/errors.md): every misuse a user can make ends
// in a dyn::Error subclass with a message that names the operation, the
// shapes or dtypes and the user's source line, and leaves the jitted
// function usable with its cache intact. One TEST_CASE per category; every
// case checks the exception type, the exact message (or its key parts), the
// place, and then calls the SAME jitted function again with good arguments.
// Cases already covered elsewhere are listed in docs/errors.md, not repeated.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i32 = std::int32_t;
using i64 = std::int64_t;
using test_util::message_of;
using test_util::str;

// The complete message (place included) of the E that f throws.
template <class E, class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception of the expected type was thrown");
  return "";
}

// "test_errors.cpp:LINE": how messages name a place in this file (the
// directory part depends on how the file was compiled).
std::string here(int line) { return "test_errors.cpp:" + std::to_string(line); }

// The message names operation site `op_line` ("(at FILE:LINE)") and the jit
// or make_jaxpr call at `trace_line` ("...while tracing the function at
// FILE:LINE."); 0: that place is not named.
void check_places(const std::string& what, int op_line, int trace_line) {
  const auto at = what.rfind(" (at ");
  const auto tracing = what.find("\nThe error occurred while tracing the function at ");
  if (op_line > 0) {
    REQUIRE(at != std::string::npos);
    CHECK(what.find(here(op_line) + ")", at) != std::string::npos);
  } else {
    CHECK((at == std::string::npos || (tracing != std::string::npos && at > tracing)));
  }
  if (trace_line > 0) {
    REQUIRE(tracing != std::string::npos);
    CHECK(what.find(here(trace_line) + ".", tracing) != std::string::npos);
  } else {
    CHECK(tracing == std::string::npos);
  }
}

// A jitted function's counters.
template <class J>
void check_stats(const J& jf, std::size_t compiles, std::size_t cache_size) {
  const dyn::JitStats s = jf.stats();
  CHECK(s.compiles == compiles);
  CHECK(s.cache_size == cache_size);
}

}  // namespace

// ---------------------------------------------------------------------------
// 1. Call-time signatures: dtype, rank and size against polymorphic specs.

TEST_CASE("errors: wrong rank, size or dtype at call time (polymorphic specs)") {
  auto f = [](auto x) { return x * 2.0; };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(b, 3)"}); const int jit_line = __LINE__;
  const Array<double> good({2, 3}, {1, 2, 3, 4, 5, 6});

  // Before any compile: the spec is resolved against the shape while tracing.
  CHECK(message_of<dyn::ShapeError>([&] { (void)jf(dyn::array({1.0, 2.0, 3.0})); }) ==
        "syntax error in symbolic shape '(b, 3)' in dimension 1: the spec has more dimensions than the argument's "
        "rank 1.");
  check_places(what_of<dyn::ShapeError>([&] { (void)jf(dyn::array({1.0, 2.0, 3.0})); }), 0, jit_line);
  CHECK(message_of<dyn::ShapeError>([&] { (void)jf(Array<double>({2, 4})); }) ==
        "syntax error in symbolic shape '(b, 3)' in dimension 1: different size 3 for known dimension; like=(2, 4).");
  check_stats(jf, 0, 0);
  CHECK(str(jf(good)) == "[[ 2.  4.  6.]\n [ 8. 10. 12.]]");
  check_stats(jf, 1, 1);

  // After the compile: a different rank is a new signature (traced, fails
  // the same way); a wrong static size fails the call-time shape check.
  CHECK(message_of<dyn::ShapeError>([&] { (void)jf(dyn::array({1.0, 2.0, 3.0})); }) ==
        "syntax error in symbolic shape '(b, 3)' in dimension 1: the spec has more dimensions than the argument's "
        "rank 1.");
  const std::string m = message_of<dyn::ShapeAssertionError>([&] { (void)jf(Array<double>({2, 4})); });
  CHECK(m.starts_with("Input shapes do not match the polymorphic shapes specification.\n"));
  CHECK(m.find("args[0].shape = (b, 3).") != std::string::npos);
  check_stats(jf, 1, 1);
  CHECK(str(jf(Array<double>({1, 3}, {1, 2, 3}))) == "[[2. 4. 6.]]");
  check_stats(jf, 1, 1);

  // A new dtype is a new signature, not an error (JAX traces again).
  CHECK(str(jf(Array<float>({1, 3}, {1, 2, 3}))) == "[[2. 4. 6.]]");
  check_stats(jf, 2, 2);

  // Static jit: every concrete shape or dtype is its own signature.
  auto js = dyn::jit(f);
  CHECK(str(js(dyn::array({1.0, 2.0}))) == "[2. 4.]");
  CHECK(str(js(good)) == "[[ 2.  4.  6.]\n [ 8. 10. 12.]]");
  CHECK(str(js(dyn::array<i32>({1, 2}))) == "[2. 4.]");
  check_stats(js, 3, 3);
}

TEST_CASE("errors: shape assertion errors at call time; shared variables; size 0 for a dimension variable") {
  auto add = [](auto x, auto y) { return x + y; };
  auto jf = dyn::jit(add, dyn::polymorphic_shapes{"(b,)", "(b,)"});
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  const auto x4 = dyn::array({1.0, 2.0, 3.0, 4.0});
  // First call: nothing cached.
  const std::string m1 = message_of<dyn::ShapeAssertionError>([&] { (void)jf(x3, x4); });
  CHECK(m1.starts_with("Input shapes do not match the polymorphic shapes specification.\n"
                       "Found inconsistency between dimension size args[1].shape[0] (= 4) and the specification 'b' (= 3)."));
  check_stats(jf, 0, 0);
  CHECK(str(jf(x3, x3)) == "[2. 4. 6.]");
  // Later calls: the same message from the call-time check.
  CHECK(message_of<dyn::ShapeAssertionError>([&] { (void)jf(x3, x4); }) == m1);
  CHECK(str(jf(x4, x4)) == "[2. 4. 6. 8.]");
  check_stats(jf, 1, 1);

  // Dimension variables are >= 1 (JAX): a size-0 argument violates the spec.
  auto jm = dyn::jit([](auto x) { return dyn::max(x); }, dyn::polymorphic_shapes{"(n,)"});
  CHECK(str(jm(x3)) == "3.");
  CHECK(message_of<dyn::ShapeAssertionError>([&] { (void)jm(Array<double>({0})); }) ==
        "Input shapes do not match the polymorphic shapes specification.\n"
        "Expected value >= 1 for dimension variable 'n'.\n"
        "Using the following polymorphic shapes specifications:\n"
        "  args[0].shape = (n,).\n"
        "Obtained dimension variables: 'n' = 0 from specification 'n' for dimension args[0].shape[0] (= 0), .\n"
        "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html#shape-assertion-errors for more "
        "details.");
  CHECK(str(jm(x4)) == "4.");
  check_stats(jm, 1, 1);
}

TEST_CASE("errors: spec strings and constraints that do not parse, too many specs, violated constraints") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  auto id = [](auto x) { return x * 1.0; };
  {
    auto jf = dyn::jit(id, dyn::polymorphic_shapes{"(b, 4"}); const int line = __LINE__;
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(x3); }) ==
          "syntax error in symbolic shape '(b, 4' in dimension 2: expecting one of {RPAR} but found ENDMARKER. "
          "Parsed '(b, 4', remaining ''.");
    check_places(what_of<dyn::ShapeError>([&] { (void)jf(x3); }), 0, line);
    check_stats(jf, 0, 0);
  }
  {
    auto jf = dyn::jit(id, dyn::polymorphic_shapes{"(b,)"}, dyn::constraints{"b >>= 16"});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(x3); }) ==
          "syntax error in symbolic constraint 'b >' in dimension 0: expecting one of {STAR} but found ERRORTOKEN. "
          "Parsed 'b ', remaining '>'.");
  }
  {
    // A non-linear or multi-variable dimension cannot be solved from a shape.
    auto jf = dyn::jit(id, dyn::polymorphic_shapes{"(b + c,)"});
    CHECK(message_of<dyn::ShapeAssertionError>([&] { (void)jf(x3); }).starts_with(
        "Cannot solve for values of dimension variables {'b', 'c'}.\n"
        "We can only solve linear uni-variate constraints."));
  }
  {
    // One spec too many (core fix: it used to be ignored silently).
    auto jf = dyn::jit(id, dyn::polymorphic_shapes{"(b,)", "(c,)"}); const int line = __LINE__;
    CHECK(message_of<dyn::TypeError>([&] { (void)jf(x3); }) ==
          "dyn::polymorphic_shapes: 2 shape specifications for a function called with 1 arguments; give at most "
          "one per argument (\"...\" for one left as it comes)");
    check_places(what_of<dyn::TypeError>([&] { (void)jf(x3); }), 0, line);
    check_stats(jf, 0, 0);
  }
  {
    auto jf = dyn::jit(id, dyn::polymorphic_shapes{"(b,)"}, dyn::constraints{"b >= 16"});
    const std::string m = message_of<dyn::ShapeAssertionError>([&] { (void)jf(x3); });
    CHECK(m.starts_with("Input shapes do not match the symbolic shape constraint b >= 16.\n"
                        "Expected 'b - 16' to be greater or equal to 0, but found -13."));
    check_stats(jf, 0, 0);
    const Array<double> x16({16});
    CHECK(jf(x16).shape() == std::vector<i64>{16});
    CHECK(message_of<dyn::ShapeAssertionError>([&] { (void)jf(x3); }).starts_with(
        "Input shapes do not match the symbolic shape constraint b >= 16."));
    CHECK(jf(Array<double>({20})).shape() == std::vector<i64>{20});
    check_stats(jf, 1, 1);
  }
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jit(id, dyn::constraints{"a >= 1"}); }) ==
        "dyn::constraints given without dyn::polymorphic_shapes: constraints apply to the dimension variables of "
        "the shape specifications");
}

TEST_CASE("errors: inconclusive dimension comparisons name the comparison and the constraint that decides it") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  auto f = [](auto x) { return dyn::slice(x, {0}, {4}); }; const int op_line = __LINE__;
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(b,)"}); const int jit_line = __LINE__;
  const std::string w = what_of<dyn::InconclusiveDimensionOperation>([&] { (void)jf(x3); });
  CHECK(w.starts_with("Symbolic dimension comparison 'b' >= '4' is inconclusive.\n"));
  CHECK(w.find("dyn::constraints{\"b >= 4\"}") != std::string::npos);
  check_places(w, op_line, jit_line);
  check_stats(jf, 0, 0);
  // The constraint it suggests makes the same function work.
  auto jc = dyn::jit(f, dyn::polymorphic_shapes{"(b,)"}, dyn::constraints{"b >= 4"});
  CHECK(str(jc(dyn::array({1.0, 2.0, 3.0, 4.0, 5.0}))) == "[1. 2. 3. 4.]");
  // Two unrelated variables: a broadcasting error naming both shapes.
  auto add = dyn::jit([](auto x, auto y) { return x + y; }, dyn::polymorphic_shapes{"(b,)", "(c,)"});
  CHECK(message_of<dyn::ShapeError>([&] { (void)add(x3, x3); }) ==
        "add got incompatible shapes for broadcasting: (b,), (c,)");
  check_stats(add, 0, 0);
}

// ---------------------------------------------------------------------------
// 2. Shape misuse of operations: the message names the op and the shapes, the
// place of the op and of the jit call; the jitted function stays usable.

TEST_CASE("errors: out-of-range slices, bad axes and permutations, reshape, concatenate, broadcast_to, dot") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  const Array<double> m23({2, 3}, {1, 2, 3, 4, 5, 6});
  // Each case: one jitted function taking a static int that selects the bad
  // (1) or the good (0) variant of the call, so the same function is reused.
  struct Case {
    const char* name;
    std::string message;
  };

  SUBCASE("slice limit past the end") {
    auto f = [](auto x, int bad) { return dyn::slice(x, {0}, {bad ? 4 : 2}); }; const int op = __LINE__;
    auto jf = dyn::jit(f, dyn::static_argnums<1>{}); const int jl = __LINE__;
    const std::string w = what_of<dyn::IndexError>([&] { (void)jf(x3, 1); });
    CHECK(message_of<dyn::IndexError>([&] { (void)jf(x3, 1); }) ==
          "slice limit_indices must be less than or equal to operand shape, got limit_indices (4,) for operand "
          "shape (3,)");
    check_places(w, op, jl);
    CHECK(str(jf(x3, 0)) == "[1. 2.]");
    check_stats(jf, 1, 1);
    // Eager: the same message, with the op's place.
    CHECK(message_of<dyn::IndexError>([&] { (void)f(x3, 1); }) ==
          "slice limit_indices must be less than or equal to operand shape, got limit_indices (4,) for operand "
          "shape (3,)");
    check_places(what_of<dyn::IndexError>([&] { (void)f(x3, 1); }), op, 0);
  }
  SUBCASE("slice: negative start, zero or negative stride") {
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::slice(x3, {-1}, {2}); }) ==
          "slice start_indices must be greater than or equal to zero, got start_indices (-1,) for operand shape (3,)");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::slice(x3, {0}, {2}, {0}); }) ==
          "slice strides must be positive, got (0,)");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::slice(x3, {0}, {2}, {-1}); }) ==
          "slice strides must be positive, got (-1,)");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::slice(x3, {0}, {INT64_MAX}); }).starts_with(
        "slice limit_indices must be less than or equal to operand shape"));
  }
  SUBCASE("dynamic_slice: sizes larger than the operand; starts are clamped, never an error") {
    auto jf = dyn::jit([](auto x, auto i) { return dyn::dynamic_slice(x, {i}, {2}); });
    CHECK(str(jf(x3, i64{5})) == "[2. 3.]");   // clamped to 1, as lax.dynamic_slice
    CHECK(str(jf(x3, i64{-5})) == "[1. 2.]");  // clamped to 0
    CHECK(str(dyn::dynamic_slice(x3, {Array<i64>::scalar(5)}, {2})) == "[2. 3.]");
    auto ju = dyn::jit([](auto x, auto i) { return dyn::dynamic_update_slice(x, dyn::array({9.0, 9.0}), {i}); });
    CHECK(str(ju(x3, i64{5})) == "[1. 9. 9.]");
    CHECK(str(ju(x3, i64{-5})) == "[9. 9. 3.]");
    check_stats(jf, 1, 1);
    check_stats(ju, 1, 1);
    auto big = [](auto x, auto i) { return dyn::dynamic_slice(x, {i}, {4}); };
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::jit(big)(x3, i64{0}); }) ==
          "dynamic_slice slice_sizes must be non-negative and at most the operand shape, got slice_sizes (4,) for "
          "operand shape (3,)");
    CHECK(str(jf(x3, i64{1})) == "[2. 3.]");
  }
  SUBCASE("transpose: not a permutation, axis out of range") {
    auto f = [](auto x, int bad) { return dyn::transpose(x, {1, bad ? 1 : 0}); };
    auto jf = dyn::jit(f, dyn::static_argnums<1>{});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(m23, 1); }) ==
          "transpose permutation isn't a permutation of operand dimensions, got permutation (1, 1) for operand "
          "shape (2, 3)");
    CHECK(str(jf(m23, 0)) == "[[1. 4.]\n [2. 5.]\n [3. 6.]]");
    check_stats(jf, 1, 1);
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::transpose(m23, {0, 2}); }) ==
          "transpose: axis 2 is out of bounds for an array of rank 2");
  }
  SUBCASE("reshape: sizes that do not match, -1 twice, negative sizes, symbolic mismatch") {
    auto f = [](auto x, int bad) { return dyn::reshape(x, {bad ? 4 : 3, 2}); };
    auto jf = dyn::jit(f, dyn::static_argnums<1>{});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(m23, 1); }) ==
          "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4, 2) (size 8)");
    CHECK(jf(m23, 0).shape() == std::vector<i64>{3, 2});
    check_stats(jf, 1, 1);
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::reshape(m23, {-1, -1}); }) ==
          "reshape: can only specify one unknown dimension (-1), got (-1, -1)");
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::reshape(m23, {-2, -3}); }) ==
          "reshape: negative dimension in new shape (-2, -3)");
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::reshape(m23, {4, -1}); }) ==
          "reshape: cannot reshape array of shape (2, 3) (size 6) into shape (4, -1)");
    auto jp = dyn::jit([](auto x) { return dyn::reshape(x, {x.shape(0) + 1}); }, dyn::polymorphic_shapes{"(b,)"});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jp(x3); }) ==
          "reshape: cannot reshape array of shape (b,) (size b) into shape (b + 1,) (size b + 1)");
    CHECK(message_of<dyn::ArithmeticError>([&] { (void)dyn::reshape(x3, {i64{1} << 62, 4, 3}); }) ==
          "integer overflow in dimension arithmetic");
  }
  SUBCASE("concatenate: ranks, sizes off the axis, axis, no operands") {
    auto f = [](auto a, auto b) { return dyn::concatenate({a, b}, 0); };
    auto jf = dyn::jit(f);
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(x3, m23); }) ==
          "concatenate requires operands of the same rank, got shapes (3,), (2, 3)");
    CHECK(str(jf(x3, x3)) == "[1. 2. 3. 1. 2. 3.]");
    check_stats(jf, 1, 1);
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::concatenate({x3, x3}, 1); }) ==
          "concatenate: axis 1 is out of bounds for an array of rank 1");
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::concatenate(std::vector<Array<double>>{}, 0); }) ==
          "concatenate: needs at least one array");
  }
  SUBCASE("broadcast_to and elementwise broadcasting") {
    auto jf = dyn::jit([](auto x, int n) { return dyn::broadcast_to(x, {n}); }, dyn::static_argnums<1>{});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(x3, 4); }) ==
          "broadcast_to: cannot broadcast an array of shape (3,) to shape (4,)");
    CHECK(str(jf(x3, 3)) == "[1. 2. 3.]");
    check_stats(jf, 1, 1);
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::broadcast_to(x3, {2, 4}); }) ==
          "broadcast_to: cannot broadcast an array of shape (3,) to shape (2, 4)");
  }
  SUBCASE("dot / matmul contraction mismatch; reduction axes; expand_dims; squeeze") {
    auto jd = dyn::jit([](auto a, auto b) { return dyn::dot(a, b); });
    CHECK(message_of<dyn::ShapeError>([&] { (void)jd(m23, m23); }) ==
          "dot_general requires contracting dimensions to have the same shape, got (3,) and (2,)");
    CHECK(str(jd(m23, x3)) == "[14. 32.]");
    check_stats(jd, 1, 1);
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::matmul(x3, m23); }) ==
          "dot_general requires contracting dimensions to have the same shape, got (3,) and (2,)");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::sum(m23, {2}); }) ==
          "reduce_sum: axis 2 is out of bounds for an array of rank 2");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::sum(m23, {0, 0}); }) == "reduce_sum: repeated axis 0");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::expand_dims(x3, 3); }) ==
          "expand_dims: axis 3 is out of bounds for an array of rank 2");
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::squeeze(m23, {0}); }) ==
          "squeeze: cannot select an axis to squeeze out which has size not equal to one, got shape=(2, 3) and "
          "dimensions=(0,)");
    CHECK(message_of<dyn::IndexError>([&] { (void)dyn::squeeze(m23, {5}); }) ==
          "squeeze: axis 5 is out of bounds for an array of rank 2");
  }
  SUBCASE("element access and AnyArray::get") {
    CHECK(message_of<dyn::IndexError>([&] { (void)x3(5); }) == "dyn::Array: index 5 is out of bounds for axis 0 with size 3");
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::AnyArray(x3).get<float>(); }) ==
          "AnyArray::get<f32>(): the array has dtype f64");
    CHECK(message_of<dyn::ShapeError>([&] { (void)Array<double>({2, 2}, {1.0}); }) ==
          "dyn::Array: 1 values given for shape (2, 2) of 4 elements");
  }
}

// ---------------------------------------------------------------------------
// 3. Integer division and modulo: no error and never SIGFPE. By zero they give
// XLA's results (what lax.div and lax.rem give in JAX on CPU and GPU):
// x / 0 = -1 (all bits set), x % 0 = x; INT_MIN / -1 wraps (INT_MIN) and
// INT_MIN % -1 is 0. Integer 0 ** negative stays an ArithmeticError.

TEST_CASE_TEMPLATE("errors: integer division by zero in eager, eval_jaxpr and jit; INT_MIN / -1", T, i32, i64) {
  const T lo = std::numeric_limits<T>::min();
  const auto a = dyn::array<T>({lo, 7, -7});
  const auto b = dyn::array<T>({-1, 2, 2});
  const auto z = dyn::array<T>({-1, 0, 2});
  auto div = [](auto x, auto y) { return x / y; };
  auto rem = [](auto x, auto y) { return x % y; };
  const std::string lo_s = std::to_string(lo);
  // lax.div / lax.rem semantics: truncation toward zero, the sign of the dividend.
  const auto want_div = dyn::array<T>({lo, 3, -3});
  const auto want_rem = dyn::array<T>({0, 1, -1});
  const auto want_div0 = dyn::array<T>({lo, -1, -3});
  const auto want_rem0 = dyn::array<T>({0, 7, -1});

  CHECK(dyn::array_equal(div(a, z), want_div0));
  CHECK(dyn::array_equal(rem(a, z), want_rem0));
  CHECK(dyn::array_equal(a % 0, a));
  CHECK(dyn::array_equal(div(a, b), want_div));
  CHECK(dyn::array_equal(rem(a, b), want_rem));

  const auto jd = dyn::make_jaxpr(div)(a, b);
  const auto jr = dyn::make_jaxpr(rem)(a, b);
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jd, {a, z})[0].template get<T>(), want_div0));
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jr, {a, z})[0].template get<T>(), want_rem0));
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jd, {a, b})[0].template get<T>(), want_div));
  CHECK(dyn::array_equal(dyn::eval_jaxpr(jr, {a, b})[0].template get<T>(), want_rem));

  auto jdiv = dyn::jit(div);
  auto jrem = dyn::jit(rem);
  CHECK(dyn::array_equal(jdiv(a, z), want_div0));
  CHECK(dyn::array_equal(jrem(a, z), want_rem0));
  CHECK(dyn::array_equal(jdiv(a, b), want_div));
  CHECK(dyn::array_equal(jrem(a, b), want_rem));
  check_stats(jdiv, 1, 1);
  check_stats(jrem, 1, 1);
  // Scalars (rank-0 kernels) and a literal divisor.
  CHECK(str(jdiv(T(3), T(0))) == "-1");
  CHECK(str(jrem(T(3), T(0))) == "3");
  CHECK(str(jdiv(lo, T(-1))) == lo_s);
  CHECK(str(jrem(lo, T(-1))) == "0");
  auto jlit = dyn::jit([](auto x) { return x / 0; });
  CHECK(str(jlit(a)) == "[-1 -1 -1]");
  check_stats(jlit, 1, 1);
}

TEST_CASE("errors: a fault inside a loop or a branch of a jitted function") {
  // Integer 0 ** negative is the fault left (division by zero has a value).
  auto in_while = [](auto d, auto x) {
    return dyn::while_loop([](auto a) { return dyn::sum(a) < i64{100}; })([&](auto a) { return a + a * dyn::pow(d, -a); })(x);
  };
  auto jw = dyn::jit(in_while);
  const auto x = dyn::array<i64>({1, 2});
  CHECK(message_of<dyn::ArithmeticError>([&] { (void)jw(i64{0}, x); }) == "pow: integer zero raised to a negative power");
  CHECK(str(jw(i64{1}, x)) == "[ 64 128]");
  CHECK(str(jw(i64{1}, x)) == str(in_while(i64{1}, x)));
  check_stats(jw, 1, 1);
  auto in_cond = [](auto p, auto d, auto x) {
    return dyn::cond(p, [&](auto a) { return a % 3 + dyn::pow(d, -a); }, [&](auto a) { return a; })(x);
  };
  auto jc = dyn::jit(in_cond);
  CHECK(message_of<dyn::ArithmeticError>([&] { (void)jc(true, i64{0}, x); }) == "pow: integer zero raised to a negative power");
  CHECK(str(jc(false, i64{0}, x)) == "[1 2]");  // the branch not taken does not fault
  CHECK(str(jc(true, i64{1}, x)) == "[2 3]");
  check_stats(jc, 1, 1);
  // Integer zero to a negative power.
  auto jp = dyn::jit([](auto a, auto b) { return dyn::pow(a, b); });
  CHECK(message_of<dyn::ArithmeticError>([&] { (void)jp(dyn::array<i64>({2, 0}), dyn::array<i64>({-1, -1})); }) ==
        "pow: integer zero raised to a negative power");
  CHECK(str(jp(dyn::array<i64>({2, 1}), dyn::array<i64>({3, -1}))) == "[8 1]");
}

// ---------------------------------------------------------------------------
// 4. Empty arrays: every kind of op works on size-0 dimensions; reductions of
// an empty axis give the identity (lax semantics: max -> -inf or the lowest
// integer, min -> +inf or the largest, sum 0, prod 1, mean NaN).

TEST_CASE("errors: empty arrays through every kind of operation, eager and jit agree") {
  const Array<double> e0({0});
  const Array<double> e03({0, 3});
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  auto reductions = [](auto x) {
    return std::make_tuple(dyn::sum(x), dyn::prod(x), dyn::max(x), dyn::min(x), dyn::mean(x), dyn::max(x, {0}),
                           dyn::min(x, {0}), dyn::sum(x, {1}));
  };
  auto jr = dyn::jit(reductions);
  const auto want = "(0., 1., -inf, inf, nan, [-inf -inf -inf], [inf inf inf], [])";
  auto show = [](const auto& t) {
    return "(" + str(std::get<0>(t)) + ", " + str(std::get<1>(t)) + ", " + str(std::get<2>(t)) + ", " +
           str(std::get<3>(t)) + ", " + str(std::get<4>(t)) + ", " + str(std::get<5>(t)) + ", " +
           str(std::get<6>(t)) + ", " + str(std::get<7>(t)) + ")";
  };
  CHECK(show(reductions(e03)) == want);
  CHECK(show(jr(e03)) == want);
  CHECK(str(dyn::max(Array<i32>({0}))) == "-2147483648");
  CHECK(str(dyn::jit([](auto x) { return dyn::min(x); })(Array<i64>({0}))) == "9223372036854775807");

  auto shapes = [](auto e, auto x) {
    return std::make_tuple(dyn::exp(e) * 2.0, dyn::reshape(dyn::transpose(e, {1, 0}), {3, 0}),
                           dyn::concatenate({dyn::reshape(e, {0}), x}, 0), dyn::slice(x, {2}, {2}),
                           dyn::broadcast_to(dyn::reshape(e, {0, 1, 3}), {0, 4, 3}),
                           dyn::where(e > 0.0, e, -e), dyn::dot(dyn::transpose(e, {1, 0}), e));
  };
  auto js = dyn::jit(shapes);
  auto [a, b, c, d, f, g, h] = js(e03, x3);
  auto [a2, b2, c2, d2, f2, g2, h2] = shapes(e03, x3);
  CHECK(a.shape() == std::vector<i64>{0, 3});
  CHECK(b.shape() == std::vector<i64>{3, 0});
  CHECK(str(c) == "[1. 2. 3.]");
  CHECK(d.shape() == std::vector<i64>{0});
  CHECK(f.shape() == std::vector<i64>{0, 4, 3});
  CHECK(g.shape() == std::vector<i64>{0, 3});
  CHECK(str(h) == "[[0. 0. 0.]\n [0. 0. 0.]\n [0. 0. 0.]]");  // a sum over an empty contraction
  CHECK(dyn::array_equal(a, a2));
  CHECK(dyn::array_equal(b, b2));
  CHECK(dyn::array_equal(c, c2));
  CHECK(dyn::array_equal(h, h2));
  auto jds = dyn::jit([](auto x, auto i) { return dyn::dynamic_slice(x, {i, i}, {0, 2}); });
  CHECK(jds(e03, i64{1}).shape() == std::vector<i64>{0, 2});
  auto jl = dyn::jit([](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto v) { return v * 2.0; })(x); });
  CHECK(jl(e0).shape() == std::vector<i64>{0});
  // -1 cannot be inferred when the array is empty (numpy's rule).
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::reshape(e03, {-1, 0}); }) ==
        "reshape: cannot reshape array of shape (0, 3) (size 0) into shape (-1, 0)");
  // Sizes computed at run time may be 0 too.
  auto jn = dyn::jit([](dyn::Tracer<i64> n) { return dyn::max(dyn::arange<double>(n)); });
  CHECK(str(jn(i64{0})) == "-inf");
  CHECK(str(jn(i64{4})) == "3.");
  check_stats(jn, 1, 1);
}

// ---------------------------------------------------------------------------
// 5. Absurd sizes: an element count that overflows, or an allocation that
// fails, is a dyn::Error (never std::bad_alloc, never a crash), in eager and
// in jit, for static sizes, sizes solved at call time and sizes computed from
// data inside a kernel.

TEST_CASE("errors: absurd sizes in eager") {
  const int line = __LINE__ + 1;
  CHECK(message_of<dyn::ShapeError>([] { (void)dyn::zeros<double>({i64{1} << 40, i64{1} << 40}); }) ==
        "array: shape (1099511627776, 1099511627776) is too large to allocate");
  check_places(what_of<dyn::ShapeError>([] { (void)dyn::zeros<double>({i64{1} << 40, i64{1} << 40}); }), line + 2, 0);
  CHECK(message_of<dyn::ShapeError>([] { (void)dyn::ones<double>({INT64_MAX}); }) ==
        "array: shape (9223372036854775807,) is too large to allocate");
  CHECK(message_of<dyn::ShapeError>([] { (void)dyn::arange<double>(INT64_MAX); }) ==
        "array: shape (9223372036854775807,) is too large to allocate");
  CHECK(message_of<dyn::ShapeError>([] { (void)Array<double>({i64{1} << 40, i64{1} << 40}); }) ==
        "array: shape (1099511627776, 1099511627776) is too large to allocate");
  // Below the element limit but more memory than there is: the allocation fails.
  CHECK(message_of<dyn::MemoryError>([] { (void)dyn::zeros<double>({i64{1} << 45}); }) ==
        "broadcast_in_dim: out of memory: cannot allocate 281474976710656 bytes");
  // A huge temporary inside an eager loop body.
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  CHECK(message_of<dyn::ShapeError>([&] {
          (void)dyn::for_loop(0, 3, 1)([&](auto, auto a) { return a + dyn::sum(dyn::ones<double>({i64{1} << 50})); })(x3);
        }) == "array: shape (1125899906842624,) is too large to allocate");
}

TEST_CASE("errors: absurd sizes in jit: static, symbolic, dynamic and data-dependent") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  SUBCASE("static sizes") {
    auto f = [](auto x, int k) { return dyn::broadcast_to(x, {k == 0 ? i64{2} : k == 1 ? INT64_MAX : i64{1} << 45, 3}); };
    auto jf = dyn::jit(f, dyn::static_argnums<1>{});
    // An element count beyond int64: while tracing (core fix: a fused kernel
    // used to loop a wrapped-around number of times), nothing compiled.
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(x3, 1); }) ==
          "broadcast_in_dim: the result shape (9223372036854775807, 3) has more elements than an int64 can count");
    check_stats(jf, 0, 0);
    // Countable but not allocatable: compiled and cached; each call fails.
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(x3, 2); }) ==
          "jit result #0 (f64[35184372088832,3]): out of memory: cannot allocate 844424930131968 bytes");
    CHECK(str(jf(x3, 0)) == "[[1. 2. 3.]\n [1. 2. 3.]]");
    check_stats(jf, 2, 2);
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(x3, 2); }) ==
          "jit result #0 (f64[35184372088832,3]): out of memory: cannot allocate 844424930131968 bytes");
    check_stats(jf, 2, 2);
    // Fused, never materialised: the same size summed is a computation.
    auto js = dyn::jit([](auto x) { return dyn::sum(dyn::broadcast_to(x, {INT64_MAX, 3})); });
    CHECK(message_of<dyn::ShapeError>([&] { (void)js(x3); }) ==
          "broadcast_in_dim: the result shape (9223372036854775807, 3) has more elements than an int64 can count");
    check_stats(js, 0, 0);
  }
  SUBCASE("symbolic sizes solved at call time") {
    auto f = [](auto x) {
      const dyn::Dim n = x.shape(0);
      return dyn::broadcast_to(x, {n * n * n * n, n});
    };
    auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"});
    CHECK(jf(dyn::array({1.0, 2.0})).shape() == std::vector<i64>{16, 2});
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(Array<double>({40000})); }) ==
          "jit result: shape (2560000000000000000, 40000) is too large to allocate");
    CHECK(jf(x3).shape() == std::vector<i64>{81, 3});
    check_stats(jf, 1, 1);
  }
  SUBCASE("dynamic sizes (integer arguments)") {
    auto jf = dyn::jit([](dyn::Tracer<i64> n) { return dyn::ones<double>({n, n}); });
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(i64{1} << 32); }) ==
          "jit result: shape (4294967296, 4294967296) is too large to allocate");
    CHECK(message_of<dyn::ShapeError>([&] { (void)jf(i64{1} << 62); }) ==
          "jit result: shape (4611686018427387904, 4611686018427387904) is too large to allocate");
    CHECK(str(jf(i64{2})) == "[[1. 1.]\n [1. 1.]]");
    auto jg = dyn::jit([](dyn::Tracer<i64> n) { return dyn::ones<double>({n + 1}); });
    CHECK(message_of<dyn::ArithmeticError>([&] { (void)jg(INT64_MAX); }) == "integer overflow in dimension arithmetic");
    CHECK(str(jg(i64{1})) == "[1. 1.]");
    check_stats(jf, 1, 1);
    check_stats(jg, 1, 1);
  }
  SUBCASE("sizes computed from data inside the kernel (core fix: the byte count used to wrap around)") {
    auto f = [](auto x) { return dyn::arange<double>(dyn::sum(x)); };
    auto jf = dyn::jit(f);
    // (The kernel's byte count saturates where n * 8 overflows int64.)
    const std::string inside = " inside the function (a temporary, or a result whose size the function computes)";
    for (i64 n : {INT64_MAX - 5, i64{1} << 61, i64{1} << 62})
      CHECK(message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({n})); }) ==
            "jit: out of memory: cannot allocate 9223372036854775744 bytes or more (the size overflows int64)" + inside);
    CHECK(message_of<dyn::MemoryError>([&] { (void)jf(dyn::array<i64>({i64{1} << 50})); }) ==
          "jit: out of memory: cannot allocate 9007199254740992 bytes" + inside);
    CHECK(str(jf(dyn::array<i64>({3}))) == "[0. 1. 2.]");
    check_stats(jf, 1, 1);
    // A temporary of that size (concatenate materialises its operands).
    auto jg = dyn::jit([](auto x) {
      auto a = dyn::arange<double>(dyn::sum(x));
      return dyn::concatenate({a, a}, 0);
    });
    CHECK(message_of<dyn::MemoryError>([&] { (void)jg(dyn::array<i64>({i64{1} << 50})); }) ==
          "jit: out of memory: cannot allocate 18014398509481984 bytes" + inside);
    // 2 * size overflows int64: the kernel sees a negative size.
    CHECK(message_of<dyn::ShapeError>([&] { (void)jg(dyn::array<i64>({INT64_MAX / 2 + 8})); }) ==
          "jit: a size computed inside the function is negative (an array dimension from data, or integer "
          "arithmetic on sizes that overflowed)");
    CHECK(str(jg(dyn::array<i64>({2}))) == "[0. 1. 0. 1.]");
    // A loop whose carried array grows by a huge amount.
    auto grow = [](auto n, auto x) {
      return dyn::for_loop(0, 3, 1, {.preserve_dimensions = false})(
          [&](auto, auto a) { return dyn::concatenate({a, dyn::ones<double>({n})}, 0); })(x);
    };
    auto jl = dyn::jit(grow, dyn::polymorphic_shapes{"", "(m,)"});
    CHECK(message_of<dyn::MemoryError>([&] { (void)jl(INT64_MAX / 2, x3); }) ==
          "jit: out of memory: cannot allocate 9223372036854775744 bytes or more (the size overflows int64)" + inside);
    CHECK(str(jl(i64{1}, x3)) == "[1. 2. 3. 1. 1. 1.]");
    check_stats(jl, 1, 1);
  }
}

// ---------------------------------------------------------------------------
// 6. Negative sizes.

TEST_CASE("errors: negative sizes, static, at call time and computed in a kernel") {
  CHECK(message_of<dyn::ShapeError>([] { (void)dyn::zeros<double>({-1}); }) == "full: negative dimension in shape (-1,)");
  CHECK(message_of<dyn::ShapeError>([] { (void)dyn::full<double>({2, -3}, 1.0); }) ==
        "full: negative dimension in shape (2, -3)");
  CHECK(message_of<dyn::ShapeError>([] {
          double buf[3];
          (void)Array<double>::view(buf, {-3});
        }) == "dyn::Array::view: negative dimension in shape (-3,)");
  // A null pointer with elements (core fix: it used to fault only when read).
  CHECK(message_of<dyn::TypeError>([] { (void)Array<double>::view(static_cast<double*>(nullptr), {2, 3}); }) ==
        "dyn::Array::view: a null pointer for shape (2, 3) of 6 elements");
  CHECK(Array<double>::view(static_cast<double*>(nullptr), {0, 3}).size() == 0);
  auto jz = dyn::jit([](dyn::Tracer<i64> n) { return dyn::zeros<double>({n}); });
  CHECK(message_of<dyn::ShapeError>([&] { (void)jz(i64{-4}); }) ==
        "jit: the integer argument leaf #0 sizes arrays but is negative (-4)");
  CHECK(str(jz(i64{2})) == "[0. 0.]");
  check_stats(jz, 1, 1);
  auto ja = dyn::jit([](dyn::Tracer<i64> n) { return dyn::arange<double>(n - 10); });
  CHECK(message_of<dyn::ShapeError>([&] { (void)ja(i64{4}); }) == "jit result: negative dimension in shape (-6,)");
  CHECK(str(ja(i64{12})) == "[0. 1.]");
  check_stats(ja, 1, 1);
  // Computed inside the kernel (core fix: a negative temporary size used to
  // give an empty array, so sum() returned 0 where eager raises).
  const std::string negative =
      "jit: a size computed inside the function is negative (an array dimension from data, or integer arithmetic "
      "on sizes that overflowed)";
  auto jd = dyn::jit([](auto x) { return dyn::arange<double>(dyn::sum(x)); });
  CHECK(message_of<dyn::ShapeError>([&] { (void)jd(dyn::array<i64>({-5})); }) == negative);
  CHECK(str(jd(dyn::array<i64>({2}))) == "[0. 1.]");
  check_stats(jd, 1, 1);
  auto jt = dyn::jit([](auto x) { return dyn::sum(dyn::arange<double>(dyn::sum(x))); });
  CHECK(message_of<dyn::ShapeError>([&] { (void)jt(dyn::array<i64>({-5})); }) == negative);
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::arange<double>(dyn::sum(dyn::array<i64>({-5}))); }) ==
        "arange: negative size -5");
  CHECK(str(jt(dyn::array<i64>({4}))) == "6.");
  check_stats(jt, 1, 1);
  auto jn = dyn::jit([](dyn::Tracer<i64> n) { return dyn::sum(dyn::ones<double>({n - 10})); });
  CHECK(message_of<dyn::ShapeError>([&] { (void)jn(i64{4}); }) == negative);
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::sum(dyn::ones<double>({i64{4} - 10})); }) ==
        "full: negative dimension in shape (-6,)");
  CHECK(str(jn(i64{13})) == "3.");
  check_stats(jn, 1, 1);
  // eval_jaxpr of a jaxpr with a dynamic size.
  const auto cj = dyn::make_jaxpr([](dyn::Tracer<i64> n) { return dyn::ones<double>({n}); })(i64{2});
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::eval_jaxpr(cj, {Array<i64>::scalar(-3)}); }) ==
        "broadcast_in_dim got the negative dimension -3 for a None in shape (None,)");
}

// ---------------------------------------------------------------------------
// 7. NaN and Inf are values, not errors: results as JAX/XLA, eager == jit.

TEST_CASE("errors: NaN and Inf inputs are not errors; eager and jit agree") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const auto xn = dyn::array({1.0, nan, 3.0});
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  const auto xi = dyn::array({1.0, inf, -inf});
  auto f = [](auto x, auto y) {
    return std::make_tuple(dyn::max(x), dyn::min(x), dyn::maximum(x, y), dyn::minimum(y, x), x == x, x < 2.0,
                           dyn::where(x > 0.0, x, 0.0), dyn::sign(x), dyn::astype<i32>(x), dyn::astype<bool>(x));
  };
  auto show = [](const auto& t) {
    std::string s;
    std::apply([&](const auto&... e) { ((s += str(e) + "; "), ...); }, t);
    return s;
  };
  auto jf = dyn::jit(f);
  const std::string want_nan =
      "nan; nan; [ 1. nan  3.]; [ 1. nan  3.]; [ True False  True]; [ True False False]; [1. 0. 3.]; "
      "[ 1. nan  1.]; [1 0 3]; [True True True]; ";
  CHECK(show(f(xn, x3)) == want_nan);
  CHECK(show(jf(xn, x3)) == want_nan);
  const std::string want_inf =
      "inf; -inf; [ 1. inf  3.]; [  1.   2. -inf]; [True True True]; [ True False  True]; [ 1. inf  0.]; "
      "[ 1.  1. -1.]; [          1  2147483647 -2147483648]; [True True True]; ";
  CHECK(show(f(xi, x3)) == want_inf);
  CHECK(show(jf(xi, x3)) == want_inf);
  auto g = [](auto x) { return std::make_tuple(x - x, x * 0.0, dyn::sum(x), dyn::exp(x), x / 0.0, x % 0.0); };
  auto jg = dyn::jit(g);
  CHECK(show(g(xi)) == "[ 0. nan nan]; [ 0. nan nan]; nan; [2.7182818       inf 0.       ]; [ inf  inf -inf]; [nan nan nan]; ");
  CHECK(show(jg(xi)) == show(g(xi)));
  check_stats(jf, 1, 1);
  check_stats(jg, 1, 1);
}

// ---------------------------------------------------------------------------
// 8. Pytrees, loops and branches.

TEST_CASE("errors: pytree structure: a vector's length is part of the signature") {
  auto total = [](const std::vector<dyn::Tracer<double>>& v) {
    dyn::Tracer<double> s = v.at(0);
    for (std::size_t i = 1; i < v.size(); ++i) s = s + v[i];
    return s;
  };
  auto jf = dyn::jit(total);
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  std::vector<Array<double>> two{x3, x3}, three{x3, x3, x3};
  CHECK(str(jf(two)) == "[2. 4. 6.]");
  CHECK(str(jf(three)) == "[3. 6. 9.]");
  check_stats(jf, 2, 2);
  // The user's function itself fails on an empty vector (std::out_of_range
  // from the user's own code passes through unchanged); nothing is cached.
  CHECK_THROWS_AS(jf(std::vector<Array<double>>{}), std::out_of_range);
  check_stats(jf, 2, 2);
  CHECK(str(jf(two)) == "[2. 4. 6.]");
  // Leaves of one vector with different shapes: a broadcasting error.
  std::vector<Array<double>> mixed{x3, dyn::array({1.0, 2.0})};
  CHECK(message_of<dyn::ShapeError>([&] { (void)jf(mixed); }) ==
        "add got incompatible shapes for broadcasting: (3,), (2,)");
  check_stats(jf, 2, 2);
}

TEST_CASE("errors: loop and branch type mismatches under jit; the function stays usable") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  SUBCASE("for_loop body returns another dtype / count") {
    // The body returns f32: right for an f32 carry, wrong for an f64 one, so
    // the same jitted function fails and then works.
    auto to_f32 = [](auto x) {
      return dyn::for_loop(0, 3, 1)([](auto, auto a) { return dyn::astype<float>(a) * 2.0f; })(x);
    }; const int op = __LINE__ - 1;
    auto jd = dyn::jit(to_f32); const int jl = __LINE__;
    const std::string w = what_of<dyn::TypeError>([&] { (void)jd(x3); });
    CHECK(message_of<dyn::TypeError>([&] { (void)jd(x3); }) ==
          "dyn::for_loop(): body output #0 has type f32[3] but carry input #0 has type f64[3]; return the same "
          "dtype (e.g. astype<double>)");
    check_places(w, op, jl);
    check_stats(jd, 0, 0);
    CHECK(str(jd(dyn::array({1.0f, 2.0f, 3.0f}))) == "[ 8. 16. 24.]");
    check_stats(jd, 1, 1);
    auto count = [](auto x) { return dyn::for_loop(0, 3, 1)([](auto, auto a, auto) { return a; })(x, x); };
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jit(count)(x3); }) ==
          "dyn::for_loop(): the body returned 1 values but the loop carries 2; return the carried values in order "
          "(one bare, several as a std::tuple)");
  }
  SUBCASE("while_loop: condition not a bool scalar, body dtype") {
    // `a < 3.0` is a scalar bool for a scalar carry, bool[3] for a vector.
    auto f = [](auto x) {
      return dyn::while_loop([](auto a) { return a < 3.0; })([](auto a) { return a + 1.0; })(x);
    };
    auto jf = dyn::jit(f);
    CHECK(message_of<dyn::TypeError>([&] { (void)jf(x3); }) ==
          "dyn::while_loop(): the condition must return one scalar bool, got bool[3]; compare (e.g. "
          "dyn::dim_value(x.shape(0)) < 100)");
    CHECK(str(jf(0.5)) == "3.5");
    check_stats(jf, 1, 1);
    auto num_cond = [](auto x) {
      return dyn::while_loop([](auto a) { return dyn::sum(a); })([](auto a) { return a; })(x);
    };
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jit(num_cond)(x3); }) ==
          "dyn::while_loop(): the condition must return one scalar bool, got f64[]; compare (e.g. "
          "dyn::dim_value(x.shape(0)) < 100)");
    CHECK(message_of<dyn::TypeError>([&] { (void)num_cond(x3); }) ==
          "dyn::while_loop(): the condition must return one scalar bool, got f64[]");
    auto body_dtype = [](auto x) {
      return dyn::while_loop([](auto a) { return dyn::sum(a) < 3.0; })([](auto a) { return dyn::astype<float>(a) + 1.0f; })(x);
    };
    auto jb = dyn::jit(body_dtype);
    CHECK(message_of<dyn::TypeError>([&] { (void)jb(x3); }) ==
          "dyn::while_loop(): body output #0 has type f32[3] but carry input #0 has type f64[3]; return the same "
          "dtype (e.g. astype<double>)");
    CHECK(str(jb(dyn::array({0.5f, 0.25f}))) == "[2.5  2.25]");
    check_stats(jb, 1, 1);
  }
  SUBCASE("cond: branch structure, dtype, shape; predicate type") {
    auto structure = [](auto p, auto x) {
      return dyn::cond(p, [](auto a) { return std::make_tuple(a, a); }, [](auto a) { return a; })(x);
    };
    CHECK(message_of<dyn::TypeError>([&] { (void)dyn::jit(structure)(true, x3); }) ==
          "dyn::cond(): the true branch returns 2 values but the false branch 1; return the same structure");
    auto dtype = [](auto p, auto x) {
      return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return dyn::astype<float>(a); })(x);
    };
    auto jd = dyn::jit(dtype);
    CHECK(message_of<dyn::TypeError>([&] { (void)jd(true, x3); }) ==
          "dyn::cond(): branch output #0 has type f64[3] in the true branch but f32[3] in the false branch; return "
          "the same dtype (e.g. astype<double>)");
    CHECK(str(jd(false, dyn::array({1.5f}))) == "[1.5]");
    check_stats(jd, 1, 1);
    auto shape = [](auto p, auto x) {
      return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return dyn::concatenate({a, a}, 0); })(x);
    };
    CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::jit(shape)(true, x3); }).starts_with(
        "dyn::cond(): branch output #0 has type f64[3] in the true branch but f64[6] in the false branch"));
    auto ok = [](auto p, auto x) { return dyn::cond(p, [](auto a) { return a; }, [](auto a) { return -a; })(x); };
    auto jc = dyn::jit(ok);
    CHECK(message_of<dyn::TypeError>([&] { (void)jc(i64{1}, x3); }) ==
          "dyn::cond(): the predicate must be a scalar bool, got i64[]; compare it first (e.g. p != 0)");
    CHECK(str(jc(false, x3)) == "[-1. -2. -3.]");
    CHECK(str(jc(true, x3)) == "[1. 2. 3.]");
    check_stats(jc, 1, 1);
  }
  SUBCASE("for_loop bounds: a float bound; a step of 0") {
    auto f = [](auto x, auto n) { return dyn::for_loop(0, n, 1)([](auto, auto a) { return a * 2.0; })(x); };
    auto jf = dyn::jit(f);
    CHECK(message_of<dyn::TypeError>([&] { (void)jf(x3, 2.0); }) ==
          "dyn::for_loop(): the upper bound must be an integer scalar, got f64[]");
    CHECK(str(jf(x3, i64{2})) == "[ 4.  8. 12.]");
    check_stats(jf, 1, 1);
    // A static step of 0 is an error while tracing; a run-time step of 0 runs
    // no iteration (len(range(...)) with step 0 taken as 0, see control.hpp).
    CHECK(message_of<dyn::TypeError>([&] {
            (void)dyn::make_jaxpr([](auto x) { return dyn::for_loop(0, 4, 0)([](auto, auto a) { return a; })(x); })(x3);
          }) == "dyn::for_loop(): the step must not be 0");
    auto g = [](auto x, auto s) { return dyn::for_loop(0, 4, s)([](auto, auto a) { return a * 2.0; })(x); };
    CHECK(str(dyn::jit(g)(x3, i64{0})) == "[1. 2. 3.]");
    CHECK(str(g(x3, i64{0})) == "[1. 2. 3.]");
  }
}

TEST_CASE("errors: static arguments: the value keys the cache, a bad value fails only its own call") {
  auto f = [](auto x, int axis) { return dyn::sum(x, {axis}); }; const int op = __LINE__;
  auto jf = dyn::jit(f, dyn::static_argnums<1>{}); const int jl = __LINE__;
  const Array<double> m23({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(str(jf(m23, 0)) == "[5. 7. 9.]");
  const std::string w = what_of<dyn::IndexError>([&] { (void)jf(m23, 2); });
  CHECK(message_of<dyn::IndexError>([&] { (void)jf(m23, 2); }) ==
        "reduce_sum: axis 2 is out of bounds for an array of rank 2");
  check_places(w, op, jl);
  CHECK(str(jf(m23, 1)) == "[ 6. 15.]");
  CHECK(str(jf(m23, -1)) == "[ 6. 15.]");
  check_stats(jf, 3, 3);
  CHECK(jf.stats().cache_hits == 0);
  CHECK(str(jf(m23, 0)) == "[5. 7. 9.]");
  CHECK(jf.stats().cache_hits == 1);

  // A static index past the arguments of the call (core fix: it used to be
  // ignored, so the argument meant to be static was traced).
  auto scaled = [](auto x, auto... k) { return (x * ... * static_cast<double>(k)); };
  auto js = dyn::jit(scaled, dyn::static_argnums<1>{}); const int js_line = __LINE__;
  CHECK(message_of<dyn::TypeError>([&] { (void)js(m23); }) ==
        "dyn::static_argnums: argument index 1 is static, but the function is called with 1 arguments");
  check_places(what_of<dyn::TypeError>([&] { (void)js(m23); }), 0, js_line);
  check_stats(js, 0, 0);
  CHECK(str(js(m23, 2)) == "[[ 2.  4.  6.]\n [ 8. 10. 12.]]");
  check_stats(js, 1, 1);
}

TEST_CASE("errors: eval_jaxpr arguments") {
  const auto x3 = dyn::array({1.0, 2.0, 3.0});
  const auto cj = dyn::make_jaxpr([](auto x) { return x * 2.0; })(x3);
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::eval_jaxpr(cj, {}); }) ==
        "eval_jaxpr: 0 arguments given for a jaxpr with 1 inputs");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::eval_jaxpr(cj, {x3, x3}); }) ==
        "eval_jaxpr: 2 arguments given for a jaxpr with 1 inputs");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::eval_jaxpr(cj, {dyn::array({1.0f, 2.0f, 3.0f})}); }) ==
        "eval_jaxpr: argument #0 has type f32[3] but the jaxpr expects f64[3]");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::eval_jaxpr(cj, {dyn::array({1.0, 2.0})}); }) ==
        "eval_jaxpr: argument #0 has type f64[2] but the jaxpr expects f64[3]");
  CHECK(str(dyn::eval_jaxpr(cj, {x3})[0].get<double>()) == "[2. 4. 6.]");
}
