// The symbolic dimension engine (JAX's shape-polymorphism doc, JAX's shape_poly.py): canonical
// forms and JAX's printing, floor semantics, the decision procedure with and
// without constraints, spec parsing and resolution, call-time solving and
// every error's type and wording.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <dynstage/shape/dim.hpp>
#include <dynstage/shape/symbolic.hpp>
#include <dynstage/shape/symbolic_decision.hpp>
#include <dynstage/shape/symbolic_spec.hpp>
#include <dynstage/shape/symbolic_solve.hpp>

#include "../test_util.hpp"

using namespace dyn;
using test_util::message_of;
using namespace dyn::detail;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

struct Vars {
  std::shared_ptr<SymbolicScope> scope;
  Dim a, b, c, d;
  explicit Vars(const std::vector<std::string>& constraints = {})
      : scope(SymbolicScope::make(constraints)),
        a(scope->var("a")),
        b(scope->var("b")),
        c(scope->var("c")),
        d(scope->var("d")) {}
};

std::string str(const Dim& d) { return d.to_string(); }

const char* kHelp =
    "\nThis error arises for comparison operations with shapes that\n"
    "are non-constant, and the result of the operation cannot be represented as\n"
    "a boolean value for all values of the symbolic dimensions involved.\n";

}  // namespace

TEST_CASE("static dims are unchanged: a plain int64 with no expression") {
  static_assert(sizeof(Dim) == sizeof(std::int64_t) + sizeof(std::shared_ptr<const DimExpr>));
  Dim d = 3;
  CHECK(d.is_static());
  CHECK_FALSE(d.is_symbolic());
  CHECK(d.expr() == nullptr);
  CHECK(d.value() == 3);
  CHECK(d == Dim(3));
  CHECK(d != 4);
  CHECK(Dim().value() == 0);
  CHECK(d + 4 == 7);
  CHECK(10 - d == 7);
  CHECK(d * d == 9);
  CHECK(-d == -3);
  CHECK((d + 1).is_static());
  CHECK(d < 4);
  CHECK(4 > d);
  CHECK(d <= 3);
  CHECK(d >= 3);
  CHECK(str(d) == "3");
  CHECK(shape_str({3, 4}) == "(3, 4)");
  CHECK(max_dim(3, 5) == 5);
  CHECK(min_dim(3, 5) == 3);
  Dim e = 2;
  e += 3;
  e *= 2;
  e -= 1;
  CHECK(e == 9);
}

TEST_CASE("floor semantics, as Python") {
  CHECK(floordiv(3, -2) == -2);
  CHECK(mod(-3, 2) == 1);
  CHECK(floordiv(-3, 2) == -2);
  CHECK(mod(3, -2) == -1);
  CHECK(floordiv(7, 2) == 3);
  CHECK(mod(7, 2) == 1);
  CHECK(floordiv(-7, -2) == 3);
  CHECK(mod(-7, -2) == -1);
  CHECK_THROWS_WITH_AS(floordiv(3, 0), "dyn::floordiv(3, 0): division by zero", ArithmeticError);
  CHECK_THROWS_AS(mod(3, 0), ArithmeticError);
  CHECK_THROWS_AS(Dim(INT64_MAX) + 1, ArithmeticError);
  CHECK_THROWS_AS(floordiv(Dim(INT64_MIN), -1), ArithmeticError);

  Vars v;
  const Dim& b = v.b;
  // symbolic operands, exact polynomial division with an integer remainder
  CHECK(floordiv(2 * b + 1, 2) == b);
  CHECK(mod(2 * b + 1, 2) == 1);
  CHECK(floordiv(2 * b - 3, 2) == b - 2);
  CHECK(mod(2 * b - 3, 2) == 1);
  CHECK(floordiv(2 * b + 3, -2) == -b - 2);
  CHECK(mod(2 * b + 3, -2) == -1);
  CHECK(str(floordiv(2 * b + 3, -2)) == "- b - 2");
  // symbolic operands that fold to constants
  CHECK(floordiv(b + 3 - b, -2) == -2);
  CHECK(mod(b - 3 - b, 2) == 1);
  CHECK(floordiv(-4 * b, 2 * b) == -2);
  CHECK(mod(-4 * b, 2 * b) == 0);
  CHECK(floordiv(6 * b, 3 * b).is_static());
  CHECK(floordiv(0, b) == 0);
  CHECK(mod(0, b) == 0);
  // not exact: kept symbolic
  CHECK(str(floordiv(b, 2)) == "floordiv(b, 2)");
  CHECK(str(mod(b, 3)) == "mod(b, 3)");
  CHECK(str(floordiv(3, b)) == "floordiv(3, b)");
  CHECK(str(floordiv(-3 * b, 2 * b)) == "floordiv(- 3*b, 2*b)");
  CHECK(str(floordiv(b, -3)) == "floordiv(b, - 3)");
  CHECK_THROWS_WITH_AS(floordiv(b, 0), "Division by zero in dimension expression floordiv(b, 0)", ArithmeticError);
  // x == y * floordiv(x, y) + mod(x, y) for every valuation (the symbolic
  // forms are not rewritten into each other, as in JAX)
  for (Dim x : {b, 2 * b + 1, 3 * b - 7, b * v.c + 5, -b})
    for (Dim y : {Dim(2), Dim(-3), b, 1 - b}) {
      const Dim q = floordiv(x, y), r = mod(x, y);
      for (std::int64_t bv = 2; bv <= 6; ++bv)
        for (std::int64_t cv = 1; cv <= 3; ++cv) {
          const Bindings env{{"b", bv}, {"c", cv}};
          const std::int64_t xv = evaluate(x, env), yv = evaluate(y, env);
          CHECK(evaluate(q, env) == floordiv_int(xv, yv));
          CHECK(evaluate(r, env) == mod_int(xv, yv));
        }
    }
}

TEST_CASE("canonical forms") {
  Vars v;
  const Dim &a = v.a, &b = v.b, &c = v.c;
  CHECK(b + b == 2 * b);
  CHECK(a * b == b * a);
  CHECK(a + b == b + a);
  CHECK((a + 1) * 2 - 2 == 2 * a);
  CHECK((a + b) * (a - b) == a * a - b * b);
  CHECK(a - a == 0);
  CHECK((a - a).is_static());
  CHECK(b * 0 == 0);
  CHECK(b * 1 == b);
  CHECK(floordiv(4 * b, 2) == 2 * b);
  CHECK(mod(3 * b, 3) == 0);
  CHECK(floordiv(b * c, b) == c);
  CHECK(mod(b * c, b) == 0);
  CHECK(floordiv(a * a * b + a * b, a * b) == a + 1);
  CHECK(max_dim(a, a) == a);
  CHECK(min_dim(a, a) == a);
  CHECK(max_dim(b, 0) == b);
  CHECK(max_dim(0, b) == b);
  CHECK(max_dim(b, 1) == b);
  CHECK(min_dim(b, 0) == 0);
  CHECK(min_dim(b, b + 2) == b);
  CHECK(max_dim(b, b + 2) == b + 2);
  CHECK(str(max_dim(a, b)) == "max(a, b)");
  CHECK(str(min_dim(a, b)) == "min(a, b)");
  CHECK(str(max_dim(b, 2)) == "max(b, 2)");
  CHECK(str(min_dim(2, b)) == "min(2, b)");
  CHECK(max_dim(a, b) == max_dim(a, b));
  CHECK(max_dim(a, b) != max_dim(b, a));  // syntactic, as JAX
  CHECK(a != b);
  CHECK(a != 3);
  CHECK(b + 1 != b);
}

TEST_CASE("printing exactly as JAX") {
  Vars v;
  const Dim &a = v.a, &b = v.b, &c = v.c, &d = v.d;
  CHECK(str(2 * b) == "2*b");
  CHECK(str(a + 1) == "a + 1");
  CHECK(str(a - 1) == "a - 1");
  CHECK(str(1 - a) == "- a + 1");
  CHECK(str(-b) == "- b");
  CHECK(str(a + b) == "b + a");  // JAX's shape-polymorphism doc: a + b prints b + a
  CHECK(str(c + d) == "d + c");
  CHECK(str(b * c + b * d) == "b*d + b*c");
  CHECK(str(a * b) == "a*b");
  CHECK(str(a * a) == "a^2");
  CHECK(str(a * a * b) == "a^2*b");
  CHECK(str(2 * a + b) == "b + 2*a");
  CHECK(str(3 * b + 2) == "3*b + 2");
  CHECK(str(a * b + a + 4) == "a*b + a + 4");
  CHECK(str(floordiv(a, 4) + 1) == "floordiv(a, 4) + 1");
  CHECK(str(2 * mod(a + 1, 3)) == "2*mod(a + 1, 3)");
  CHECK(shape_str({a, 2 * b}) == "(a, 2*b)");
  CHECK(shape_str({a * a}) == "(a^2,)");
  std::ostringstream os;
  os << 4 * b;
  CHECK(os.str() == "4*b");
  // value() of a symbolic dimension
  CHECK_THROWS_WITH_AS((void)(2 * b).value(), "Symbolic dimension '2*b' used where a constant is required",
                       InconclusiveDimensionOperation);
}

TEST_CASE("decisions: every variable is >= 1") {
  Vars v;
  const Dim &a = v.a, &b = v.b, &c = v.c;
  CHECK(b >= 1);
  CHECK(b >= 0);
  CHECK(b > 0);
  CHECK_FALSE(b < 1);
  CHECK_FALSE(b <= 0);
  CHECK(0 < b);
  CHECK(2 * a + b >= 3);
  CHECK(a + 2 >= 3);
  CHECK(a * 2 >= 1);
  CHECK(a + b + c >= 3);
  CHECK(floordiv(a, 4) >= 0);
  CHECK(a * a >= 1);
  CHECK(a * b >= 1);
  CHECK(b + 1 > b);
  CHECK(b < b + 1);
  CHECK_FALSE(b - 1 < 0);
  CHECK(mod(b, 3) <= 2);
  CHECK(mod(b, 3) >= 0);
  CHECK(max_dim(a, b) >= a);
  CHECK(max_dim(a, b) >= b);
  CHECK(min_dim(a, b) <= b);
  CHECK(max_dim(a, b) >= 1);
  CHECK(-b < 0);
  CHECK(3 - 2 * b <= 1);

  for (auto cmp : std::vector<std::function<bool()>>{[&] { return b >= 2; },
                                                      [&] { return a >= b; },
                                                      [&] { return a - b >= 0; },
                                                      [&] { return b >= mod(b, 3); },
                                                      [&] { return b >= a + 1; }})
    CHECK_THROWS_AS((void)cmp(), InconclusiveDimensionOperation);

  CHECK(message_of<InconclusiveDimensionOperation>([&] { (void)(b >= 2); })
            .rfind("Symbolic dimension comparison 'b' >= '2' is inconclusive.", 0) == 0);
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(a < b); }),
                    "Symbolic dimension comparison 'a' < 'b' is inconclusive."));
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(a <= b); }),
                    "Symbolic dimension comparison 'a' <= 'b' is inconclusive."));
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(a > b); }),
                    "Symbolic dimension comparison 'a' > 'b' is inconclusive."));
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(b >= mod(b, 3)); }),
                    "Symbolic dimension comparison 'b' >= 'mod(b, 3)' is inconclusive."));
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(3 <= b); }),
                    "Symbolic dimension comparison '3' <= 'b' is inconclusive."));
}

TEST_CASE("the inconclusive message of JAX's shape-polymorphism doc, with the hints") {
  Vars v;
  const std::string m = message_of<InconclusiveDimensionOperation>([&] { (void)(v.a + 1 >= v.b); });
  CHECK(m == std::string("Symbolic dimension comparison 'a + 1' >= 'b' is inconclusive.") + kHelp +
                 "You can try:\n"
                 "  - dyn::max_dim(d1, d2) and dyn::min_dim(d1, d2) instead of std::max/std::min or of\n"
                 "    conditionals such as `d > 0 ? d : 0` (write dyn::max_dim(d, 0)): they delay the\n"
                 "    comparison until the dimensions are known;\n"
                 "  - symbolic constraints that decide the comparison, e.g. dyn::constraints{\"a + 1 >= b\"}.\n"
                 "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                 "#comparison-of-symbolic-dimensions-is-partially-supported for more details.");
  // With constraints the message shows them.
  Vars w({"a >= 16"});
  const std::string m2 = message_of<InconclusiveDimensionOperation>([&] { (void)(w.a >= w.b); });
  CHECK(starts_with(m2, "Symbolic dimension comparison 'a' >= 'b' is inconclusive.\n"
                        "Using symbolic scope with constraints:\n  a >= 16\nThis error arises"));
  // Division by a dimension that may be 0.
  CHECK(starts_with(message_of<InconclusiveDimensionOperation>([&] { (void)(floordiv(v.a, v.b - 1) >= 0); }),
                    "Possible division by 0 in division by b - 1\nThis error arises"));
}

TEST_CASE("decisions with constraints") {
  {
    Vars v({"a >= 16", "b >= 8"});
    CHECK(v.a + 2 * v.b >= 32);
    CHECK(v.a >= 16);
    CHECK(v.b > 7);
    CHECK_THROWS_AS((void)(v.a + 2 * v.b >= 33), InconclusiveDimensionOperation);
  }
  {
    Vars v({"a >= b + 8"});
    CHECK(v.a - v.b >= 8);
    CHECK(v.a >= v.b);
    CHECK(v.b < v.a);
    CHECK_THROWS_AS((void)(v.a - v.b >= 9), InconclusiveDimensionOperation);
  }
  {
    Vars v({"a >= b", "b >= 16"});  // the constraints example of JAX's shape-polymorphism doc
    CHECK(v.a >= v.b);
    CHECK(v.b >= 16);
    CHECK(v.a >= 16);
    CHECK(min_dim(v.a, v.b) == v.b);
  }
  {
    Vars v({"b <= 10"});
    CHECK(v.b <= 10);
    CHECK(v.b < 11);
    CHECK_FALSE(v.b >= 11);
    CHECK(min_dim(v.b, 10) == v.b);
  }
  {
    Vars v;
    CHECK_THROWS_AS((void)(v.b >= mod(v.b, 3)), InconclusiveDimensionOperation);
    Vars w({"b >= mod(b, 3)"});
    CHECK(w.b >= mod(w.b, 3));
    Vars x({"mod(b, 3) <= b"});
    CHECK(x.b >= mod(x.b, 3));
  }
}

TEST_CASE("equality constraints are rewrite rules") {
  Vars v({"a * b == c + d"});  // the equality-constraint example of JAX's shape-polymorphism doc
  CHECK(str(2 * v.b * v.a) == "2*d + 2*c");
  CHECK(str(v.a * v.b * v.b) == "b*d + b*c");
  CHECK(v.a * v.b == v.c + v.d);

  Vars w({"floordiv(a, b) == c"});
  CHECK(floordiv(w.a, w.b) == w.c);
  CHECK(str(floordiv(w.a, w.b) + 1) == "c + 1");

  Vars m({"mod(a, 4) == 0"});  // also 4*floordiv(a, 4) == a
  CHECK(mod(m.a, 4) == 0);
  CHECK(m.scope->explicit_constraints.size() == 2);
  CHECK(m.scope->explicit_constraints[0].debug_str == "4*floordiv(a, 4) == a");

  Vars k({"2*a == b"});
  CHECK(2 * k.a == k.b);
  CHECK(4 * k.a == 2 * k.b);
  CHECK(str(3 * k.a) == "3*a");  // 3 is not a multiple of 2: no rewrite
}

TEST_CASE("constraint errors") {
  CHECK_THROWS_WITH_AS(SymbolicScope::make({"a > b"}),
                       "Constraint parsing error: must contain one of '==' or '>=' or '<=': 'a > b'", ShapeError);
  CHECK_THROWS_WITH_AS(SymbolicScope::make({"a >= a + 1"}), "Unsatisfiable explicit constraint: a >= a + 1",
                       ShapeError);
  CHECK_THROWS_WITH_AS(SymbolicScope::make({"a + b == c"}),
                       "Invalid equality constraint: b + a == c. The left-hand-side must be of the form "
                       "`term * coefficient` (no addition or subtraction at the top level).",
                       ShapeError);
  CHECK_THROWS_WITH_AS(SymbolicScope::make({"2*a == c", "3*a == d"}),
                       "Found multiple equality constraints with the same left-hand-side: a", ShapeError);
  // The second left-hand side is rewritten by the first rule: c == d.
  CHECK(str(SymbolicScope::make({"a*b == c", "a*b == d"})->var("c")) == "d");
  CHECK_THROWS_AS(SymbolicScope::make({"a >= 10", "a <= 5"}), ShapeError);
  CHECK_THROWS_AS(SymbolicScope::make({"a, b >= c"}), ShapeError);
  CHECK_THROWS_AS(SymbolicScope::make({"a >= (b"}), ShapeError);
}

TEST_CASE("scopes") {
  auto s1 = SymbolicScope::make();
  auto s2 = SymbolicScope::make({"a >= 8"});
  Dim a1 = s1->var("a"), a2 = s2->var("a");
  CHECK(a1 == s1->var("a"));
  CHECK(a1 != a2);  // same name, different scopes
  CHECK(str(a1) == str(a2));
  CHECK(starts_with(message_of<TypeError>([&] { (void)(a1 + a2); }),
                    "Invalid mixing of symbolic scopes for linear combination.\nExpected scope\n"
                    "and found for 'a' scope with constraints:\n  a >= 8\n"));
  CHECK_THROWS_AS((void)(a1 * a2), TypeError);
  CHECK_THROWS_AS((void)(a1 >= a2), TypeError);
  CHECK(s1->variables() == std::vector<std::string>{"a"});
  CHECK_THROWS_WITH_AS(s1->var("mod"),
                       "Invalid dimension variable name 'mod': expected an identifier other than _, floordiv, mod, "
                       "max and min",
                       ShapeError);
  CHECK_THROWS_AS(s1->var("2x"), ShapeError);
  CHECK_THROWS_AS(s1->var(""), ShapeError);
  // dim_hash is consistent with ==
  CHECK(dim_hash(a1 + 1) == dim_hash(1 + s1->var("a")));
  CHECK(dim_hash(Dim(3)) == dim_hash(floordiv(7, 2)));
  // Dims keep their scope alive.
  Dim kept;
  {
    auto s3 = SymbolicScope::make({"n >= 4"});
    kept = s3->var("n") + 1;
  }
  CHECK(kept >= 5);
  CHECK(str(kept) == "n + 1");
}

TEST_CASE("parsing shape specs") {
  auto items = [](const char* spec) {
    std::vector<std::string> r;
    for (const auto& it : parse_shape_spec(spec).items)
      r.push_back(it.kind == SpecItem::Kind::one ? "_" : it.kind == SpecItem::Kind::rest ? "..." : str(it.dim));
    return r;
  };
  using V = std::vector<std::string>;
  CHECK(items("(b, 4)") == V{"b", "4"});
  CHECK(items("(batch, ...)") == V{"batch", "..."});
  CHECK(items("_") == V{"_"});
  CHECK(items("2*d") == V{"2*d"});
  CHECK(items("b + 15") == V{"b + 15"});
  CHECK(items("a, ...") == V{"a", "..."});
  CHECK(items("...") == V{"..."});
  CHECK(items("(b, b, 2*d)") == V{"b", "b", "2*d"});
  CHECK(items("a*a") == V{"a^2"});
  CHECK(items("a^2") == V{"a^2"});
  CHECK(items("b1+2*b2, 4*b2, b1*b1+16") == V{"2*b2 + b1", "4*b2", "b1^2 + 16"});
  CHECK(items("v,") == V{"v"});
  CHECK(items("") == V{});
  CHECK(items("()") == V{});
  CHECK(items("(_, n)") == V{"_", "n"});
  CHECK(items("-b + 3") == V{"- b + 3"});
  CHECK(items("b - -2") == V{"b + 2"});
  CHECK(items("floordiv(a, 2), mod(b, 3)") == V{"floordiv(a, 2)", "mod(b, 3)"});
  CHECK(items("max(a, b), min(a, 0), max(a, 1)") == V{"max(a, b)", "0", "a"});
  CHECK(items("floordiv(7, 2)") == V{"3"});
  CHECK(items("1_000") == V{"1000"});

  // Variables are shared by name within a scope.
  const auto s = parse_shape_spec("(b, b, 2*d)");
  CHECK(s.items[0].dim == s.items[1].dim);
  CHECK(s.items[2].dim == 2 * s.items[0].dim.expr()->scope->var("d"));
  auto scope = SymbolicScope::make();
  CHECK(parse_shape_spec("(n, 3)", scope).items[0].dim == parse_shape_spec("n + 1", scope).items[0].dim - 1);
  CHECK(symbolic_shape("a, 2*b") != symbolic_shape("a, 2*b"));  // two calls, two scopes
  const Shape sh = symbolic_shape("a, 2*b", scope);
  CHECK(sh == Shape{scope->var("a"), 2 * scope->var("b")});
}

TEST_CASE("spec syntax errors name the offending text") {
  CHECK_THROWS_WITH_AS(parse_shape_spec("(b, 4"),
                       "syntax error in symbolic shape '(b, 4' in dimension 2: expecting one of {RPAR} but found "
                       "ENDMARKER. Parsed '(b, 4', remaining ''.",
                       ShapeError);
  CHECK_THROWS_WITH_AS(parse_shape_spec("b $ 4"),
                       "syntax error in symbolic shape 'b $ 4' in dimension 0: expecting one of {STAR} but found "
                       "ERRORTOKEN. Parsed 'b ', remaining '$ 4'.",
                       ShapeError);
  CHECK_THROWS_WITH_AS(parse_shape_spec("1.5"),
                       "syntax error in symbolic shape '1.5' in dimension 0: expecting integer, found 1.5. "
                       "Parsed '', remaining '1.5'.",
                       ShapeError);
  CHECK_THROWS_WITH_AS(parse_shape_spec("..., b"),
                       "syntax error in symbolic shape '..., b' in dimension 1: expecting one of {ENDMARKER} but "
                       "found COMMA. Parsed '...', remaining ', b'.",
                       ShapeError);
  CHECK_THROWS_WITH_AS(parse_shape_spec("a, *b"),
                       "syntax error in symbolic shape 'a, *b' in dimension 1: expecting one of {NAME, MINUS, "
                       "NUMBER} but found STAR. Parsed 'a, ', remaining '*b'.",
                       ShapeError);
  CHECK_THROWS_AS(parse_shape_spec("mod(a)"), ShapeError);
  CHECK_THROWS_AS(parse_shape_spec("2*_"), ShapeError);
  CHECK_THROWS_AS(parse_shape_spec("a^b"), ShapeError);
  CHECK_THROWS_AS(parse_shape_spec("99999999999999999999"), ShapeError);
  CHECK_THROWS_WITH_AS(symbolic_shape("a, ..."),
                       "syntax error in symbolic shape 'a, ...' in dimension 1: spec contains ... or _ but no "
                       "'like' shape was given.",
                       ShapeError);
}

TEST_CASE("resolving _ and ... against an argument") {
  const auto spec = parse_shape_spec("(batch, ...)");
  const Dim batch = spec.items[0].dim;
  CHECK(resolve_spec(spec, std::vector<std::int64_t>{3, 4, 5}) == Shape{batch, 4, 5});
  CHECK(resolve_spec(spec, std::vector<std::int64_t>{3}) == Shape{batch});
  const auto r = resolve_spec(spec, std::size_t{3});
  REQUIRE(r.size() == 3);
  CHECK(r[0].kind == SpecItem::Kind::dim);
  CHECK(r[1].kind == SpecItem::Kind::one);
  CHECK(r[2].kind == SpecItem::Kind::one);

  const auto s2 = parse_shape_spec("(b, _)");
  CHECK(resolve_spec(s2, std::vector<std::int64_t>{3, 7}) == Shape{s2.items[0].dim, 7});
  CHECK(resolve_spec(parse_shape_spec("..."), std::vector<std::int64_t>{2, 3}) == Shape{2, 3});
  CHECK(resolve_spec(parse_shape_spec("..."), std::vector<std::int64_t>{}) == Shape{});

  CHECK_THROWS_WITH_AS(resolve_spec(parse_shape_spec("(b, 4)"), std::vector<std::int64_t>{3, 5}),
                       "syntax error in symbolic shape '(b, 4)' in dimension 1: different size 4 for known "
                       "dimension; like=(3, 5).",
                       ShapeError);
  CHECK_THROWS_WITH_AS(resolve_spec(parse_shape_spec("(b, 4)"), std::size_t{3}),
                       "syntax error in symbolic shape '(b, 4)' in dimension 2: the spec has 2 dimensions but the "
                       "argument has rank 3.",
                       ShapeError);
  CHECK_THROWS_WITH_AS(resolve_spec(parse_shape_spec("(b, _, _)"), std::size_t{2}),
                       "syntax error in symbolic shape '(b, _, _)' in dimension 2: cannot resolve placeholder '_' "
                       "because we parsed 2 already and the argument has rank 2.",
                       ShapeError);
  CHECK_THROWS_AS(resolve_spec(parse_shape_spec("(a, b, ...)"), std::size_t{1}), ShapeError);
}

TEST_CASE("evaluate with floor semantics") {
  Vars v;
  const Dim &a = v.a, &b = v.b;
  const Bindings env{{"a", 7}, {"b", 2}};
  CHECK(evaluate(2 * b + floordiv(a, 3), env) == 6);
  CHECK(evaluate(mod(a - 10, 3), env) == 0);
  CHECK(evaluate(floordiv(a - 10, 2), env) == -2);
  CHECK(evaluate(mod(a - 10, 2), env) == 1);
  CHECK(evaluate(a * a * b - 1, env) == 97);
  CHECK(evaluate(max_dim(a, b) + min_dim(a, b), env) == 9);
  CHECK(evaluate(Dim(5), {}) == 5);
  CHECK_THROWS_WITH_AS(evaluate(a + v.c, env),
                       "Encountered dimension variable 'c' that is not appearing in the shapes of the function "
                       "arguments.\nPlease see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.",
                       ShapeAssertionError);
  CHECK_THROWS_AS(evaluate(floordiv(a, b - 2), env), ArithmeticError);
  // A variable defined by an equality constraint.
  Vars w({"c == a + b"});
  CHECK(str(w.c) == "b + a");
  CHECK(evaluate(w.scope->explicit_constraints[0].diff, env) == 0);
}

TEST_CASE("solving dimension variables: linear univariate, iterated") {
  const auto spec = parse_shape_spec("b1+2*b2, 4*b2, b1*b1+16");
  Shape shape;
  for (const auto& it : spec.items) shape.push_back(it.dim);
  DimSolver solver({{"args[0]", shape}});
  CHECK(solver.variables() == std::vector<std::string>{"b2", "b1"});
  const Bindings env = solver.solve_shapes({{16, 24, 32}});
  CHECK(env == Bindings{{"b1", 4}, {"b2", 6}});

  CHECK(solve_dim_vars({{shape[0], 16, "args[0].shape[0]"},
                        {shape[1], 24, "args[0].shape[1]"},
                        {shape[2], 32, "args[0].shape[2]"}}) == env);

  CHECK_THROWS_WITH_AS(solver.solve_shapes({{16, 24, 33}}),
                       "Input shapes do not match the polymorphic shapes specification.\n"
                       "Found inconsistency between dimension size args[0].shape[2] (= 33) and the specification "
                       "'b1^2 + 16' (= 32).\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (2*b2 + b1, 4*b2, b1^2 + 16).\n"
                       "Obtained dimension variables: 'b2' = 6 from specification '4*b2' for dimension "
                       "args[0].shape[1] (= 24), 'b1' = 4 from specification '2*b2 + b1' for dimension "
                       "args[0].shape[0] (= 16), .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
  CHECK_THROWS_WITH_AS(solver.solve_shapes({{16, 25, 32}}),
                       "Input shapes do not match the polymorphic shapes specification.\n"
                       "Division had remainder 1 when computing the value of 'b2'.\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (2*b2 + b1, 4*b2, b1^2 + 16).\n"
                       "Obtained dimension variables: .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
}

TEST_CASE("shape assertion errors (JAX's shape-polymorphism doc)") {
  const Shape spec = symbolic_shape("b, b, 2*d");
  DimSolver solver({{"args[0]", spec}});
  CHECK(solver.solve_shapes({{3, 3, 4}}) == Bindings{{"b", 3}, {"d", 2}});
  CHECK_THROWS_WITH_AS(solver.solve_shapes({{3, 3, 5}}),
                       "Input shapes do not match the polymorphic shapes specification.\n"
                       "Division had remainder 1 when computing the value of 'd'.\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (b, b, 2*d).\n"
                       "Obtained dimension variables: 'b' = 3 from specification 'b' for dimension "
                       "args[0].shape[0] (= 3), .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
  CHECK_THROWS_WITH_AS(solver.solve_shapes({{0, 0, 4}}),
                       "Input shapes do not match the polymorphic shapes specification.\n"
                       "Expected value >= 1 for dimension variable 'b'.\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (b, b, 2*d).\n"
                       "Obtained dimension variables: 'b' = 0 from specification 'b' for dimension "
                       "args[0].shape[0] (= 0), .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { solver.solve_shapes({{3, 4, 6}}); }),
                    "Input shapes do not match the polymorphic shapes specification.\n"
                    "Found inconsistency between dimension size args[0].shape[1] (= 4) and the specification "
                    "'b' (= 3).\n"));
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { solver.solve_shapes({{3, 3, 0}}); }),
                    "Input shapes do not match the polymorphic shapes specification.\n"
                    "Expected value >= 1 for dimension variable 'd'.\n"));
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { solver.solve_shapes({{3, 3}}); }),
                    "Input shapes do not match the polymorphic shapes specification.\n"
                    "Expected rank 3 for args[0] but found shape (3, 3).\n"));
  // b + 15 constrains b >= 1, i.e. the size to >= 16.
  DimSolver s16({{"args[0]", symbolic_shape("b + 15")}});
  CHECK(s16.solve_shapes({{16}}) == Bindings{{"b", 1}});
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { s16.solve_shapes({{15}}); }),
                    "Input shapes do not match the polymorphic shapes specification.\n"
                    "Expected value >= 1 for dimension variable 'b'.\n"));
}

TEST_CASE("solving across arguments and with constraints") {
  auto scope = SymbolicScope::make({"a >= b"});
  DimSolver solver({{"args[0]", symbolic_shape("b, 4", scope)}, {"args[1]", symbolic_shape("a, b", scope)}});
  CHECK(solver.solve_shapes({{3, 4}, {5, 3}}) == Bindings{{"a", 5}, {"b", 3}});
  CHECK_THROWS_WITH_AS(solver.solve_shapes({{3, 5}, {5, 3}}),
                       "Input shapes do not match the polymorphic shapes specification.\n"
                       "Found inconsistency between dimension size args[0].shape[1] (= 5) and the specification "
                       "'4' (= 4).\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (b, 4),\n"
                       "  args[1].shape = (a, b).\n"
                       "Obtained dimension variables: .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
  CHECK_THROWS_WITH_AS(solver.solve_shapes({{3, 4}, {2, 3}}),
                       "Input shapes do not match the symbolic shape constraint a >= b.\n"
                       "Expected '- b + a' to be greater or equal to 0, but found -1.\n"
                       "Using the following polymorphic shapes specifications:\n"
                       "  args[0].shape = (b, 4),\n"
                       "  args[1].shape = (a, b).\n"
                       "Obtained dimension variables: 'b' = 3 from specification 'b' for dimension "
                       "args[0].shape[0] (= 3), 'a' = 2 from specification 'a' for dimension args[1].shape[0] "
                       "(= 2), .\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#shape-assertion-errors for more details.",
                       ShapeAssertionError);
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { solver.solve_shapes({{3, 4}, {5, 4}}); }),
                    "Input shapes do not match the polymorphic shapes specification.\n"
                    "Found inconsistency between dimension size args[1].shape[1] (= 4) and the specification "
                    "'b' (= 3).\n"));

  // An equality constraint checked at call time.
  auto eq = SymbolicScope::make({"floordiv(a, b) == c"});
  DimSolver se({{"args[0]", symbolic_shape("a, b, c", eq)}});
  CHECK(se.solve_shapes({{7, 2, 3}}) == Bindings{{"a", 7}, {"b", 2}, {"c", 3}});
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { se.solve_shapes({{7, 2, 4}}); }),
                    "Input shapes do not match the symbolic shape constraint floordiv(a, b) == c.\n"
                    "Expected 'floordiv(a, b) - c' to be equal to 0, but found -1.\n"));
}

TEST_CASE("unsolvable specifications are rejected when traced") {
  auto a = SymbolicScope::make()->var("a");
  CHECK_THROWS_WITH_AS(DimSolver({{"args[0]", Shape{a * a}}}),
                       "Cannot solve for values of dimension variables {'a'}.\n"
                       "We can only solve linear uni-variate constraints.\n"
                       "Using the following polymorphic shapes specifications: args[0].shape = (a^2,).\n"
                       "Unprocessed specifications: 'a^2' for dimension size args[0].shape[0].\n"
                       "Please see https://jax.readthedocs.io/en/latest/export/shape_poly.html"
                       "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.",
                       ShapeAssertionError);
  const Shape ab = symbolic_shape("a + b, floordiv(c, 2)");
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { DimSolver({{"args[0]", ab}}); }),
                    "Cannot solve for values of dimension variables {'a', 'b', 'c'}.\n"));
  // a is solvable once b is known from another argument
  auto s = SymbolicScope::make();
  DimSolver ok({{"args[0]", symbolic_shape("a + b", s)}, {"args[1]", symbolic_shape("b", s)}});
  CHECK(ok.solve_shapes({{10}, {3}}) == Bindings{{"a", 7}, {"b", 3}});
  // The equation form without argument specs pieces the specs together.
  CHECK(starts_with(message_of<ShapeAssertionError>([&] {
                      solve_dim_vars({{a * a, 4, "args[0].shape[1]"}});
                    }),
                    "Cannot solve for values of dimension variables {'a'}.\nWe can only solve linear uni-variate "
                    "constraints.\nUsing the following polymorphic shapes specifications: args[0].shape = (_, a^2).\n"));
  // A constraint on a variable that no argument determines.
  auto k = SymbolicScope::make({"k <= 10"});
  CHECK(starts_with(message_of<ShapeAssertionError>([&] { DimSolver({{"args[0]", Shape{k->var("a")}}}); }),
                    "Encountered dimension variable 'k' that is not appearing in the shapes of the function "
                    "arguments."));
}

TEST_CASE("dim_bounds") {
  Vars v({"b <= 10"});
  CHECK(dim_bounds(v.a) == std::pair<Bound, Bound>{1, kPosInf});
  CHECK(dim_bounds(v.b) == std::pair<Bound, Bound>{1, 10});
  CHECK(dim_bounds(mod(v.a, 5)) == std::pair<Bound, Bound>{0, 4});
  CHECK(dim_bounds(2 * v.b - 30) == std::pair<Bound, Bound>{-28, -10});
  CHECK(dim_bounds(Dim(3)) == std::pair<Bound, Bound>{3, 3});
}
