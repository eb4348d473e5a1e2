// Typed signatures of nested programs: the input/output types of the Catalyst
// tracing note and the Catalyst dynamic-arrays doc (docs/architecture.md,
// "Sources") with their DBIdx / InDBIdx / OutDBIdx references, their
// printing, check() and input_type_of / output_type_of (public:
// include/dynstage/ir/nested_types.hpp), the steps expand_args / initialize /
// collapse / expand_results (the test oracle signature_oracle.hpp),
// their errors, and the jaxpr-level conversions.
//
// Expected texts: API.md §5 fixes the list format
// `[(i64[], false), (f64[DBIdx(0)], true)]` (the Catalyst tracing note prints
// the same lists as `[(i64, True), (f64[DBIdx(0)], False)]`, with the
// explicitness flags swapped: dynstage follows JAX, where true marks an
// argument the user wrote); python_repr reproduces the tuple the Catalyst
// dynamic-arrays doc prints byte for byte.
#include <doctest/doctest.h>

#include <dynstage/ir/print.hpp>

#include "signature_oracle.hpp"

#include <sstream>
#include <string>
#include <vector>

using dyn::Atom;
using dyn::DimRef;
using dyn::DType;
using dyn::InputType;
using dyn::Jaxpr;
using dyn::JDim;
using dyn::OutputType;
using dyn::ResultDims;
using dyn::ArgDims;
using dyn::Scalar;
using dyn::SigDim;
using dyn::SigEntry;
using dyn::SigType;
using dyn::Type;
using dyn::ValueDesc;
using dyn::ValueId;

using dyn::check;
using dyn::collapse;
using dyn::expand_args;
using dyn::expand_results;
using dyn::initialize;
using dyn::input_type_of;
using dyn::jaxpr_type;
using dyn::output_type_of;
using dyn::python_repr;
using dyn::to_string;
using dyn::value_of;
using dyn::values_of;

namespace {

constexpr DType i64 = DType::i64;
constexpr DType f64 = DType::f64;

DimRef V(ValueId id) { return DimRef::of_value(id); }
ValueDesc val(ValueId id, DType d, std::vector<DimRef> shape = {}) { return ValueDesc{id, d, std::move(shape)}; }
ValueDesc literal_i64() { return ValueDesc{dyn::kNoValueId, i64, {}}; }

SigEntry E(DType d, std::vector<SigDim> shape, bool is_explicit) {
  return SigEntry{SigType{d, std::move(shape)}, is_explicit};
}
SigDim DB(std::int64_t i) { return SigDim::db_idx(i); }
SigDim In(std::int64_t i) { return SigDim::in_db_idx(i); }
SigDim Out(std::int64_t i) { return SigDim::out_db_idx(i); }

std::vector<ValueId> ids(const std::vector<ValueDesc>& vs) {
  std::vector<ValueId> r;
  for (const auto& v : vs) r.push_back(v.id);
  return r;
}

// Jaxpr helpers: ids of a jaxpr's values are its variable indices.
Type T(DType d, std::vector<JDim> shape = {}) { return Type{d, std::move(shape), false}; }
JDim S(std::int64_t v) { return JDim{v, -1}; }
JDim Var(int v) { return JDim::of_var(v); }
Atom lit(std::int64_t v) { return Atom::literal(Scalar::of(v)); }
Atom var(int v) { return Atom::of_var(v); }

std::string text(const Jaxpr& j) { return dyn::detail::format_jaxpr(j); }

// The jaxpr as JAX prints a body after its constants became leading
// arguments (body_nconsts in the Catalyst dynamic-arrays doc).
Jaxpr constvars_to_invars(Jaxpr j) {
  std::vector<bool> flags(j.constvars.size(), true);
  for (std::size_t i = 0; i < j.invars.size(); ++i) flags.push_back(j.in_explicit.empty() || j.in_explicit[i]);
  std::vector<int> invars = j.constvars;
  invars.insert(invars.end(), j.invars.begin(), j.invars.end());
  j.invars = std::move(invars);
  j.constvars.clear();
  j.in_explicit = std::move(flags);
  return j;
}

}  // namespace

// ---------------------------------------------------------------------------
// Printing.

TEST_CASE("signature: printing of input and output types (API.md, the Catalyst tracing note)") {
  // API.md §5, verbatim.
  InputType in{E(i64, {}, false), E(f64, {DB(0)}, true)};
  CHECK(to_string(in) == "[(i64[], false), (f64[DBIdx(0)], true)]");

  // The Catalyst tracing note's output type example (flags in JAX's convention).
  OutputType out{E(i64, {}, false), E(f64, {Out(0)}, true), E(f64, {In(1)}, true)};
  CHECK(to_string(out) == "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[InDBIdx(1)], true)]");

  CHECK(to_string(InputType{}) == "[]");
  CHECK(to_string(OutputType{}) == "[]");
  CHECK(to_string(SigType{f64, {3, DB(0), 4}}) == "f64[3,DBIdx(0),4]");
  CHECK(to_string(SigType{DType::bool_, {}}) == "bool[]");
  CHECK(to_string(SigType{DType::f32, {SigDim::outer(7)}}) == "f32[Outer(7)]");
  CHECK(to_string(SigEntry{SigType{i64, {}}, false}) == "(i64[], false)");
  CHECK(to_string(val(3, f64, {V(7), 3})) == "f64[%7,3]");

  std::ostringstream os;
  os << in << ' ' << out[1] << ' ' << SigDim::in_db_idx(2) << ' ' << val(0, i64);
  CHECK(os.str() == "[(i64[], false), (f64[DBIdx(0)], true)] (f64[OutDBIdx(0)], true) InDBIdx(2) i64[]");

  CHECK(in.num_implicit() == 1);
  CHECK(in.num_explicit() == 1);
  CHECK(out.num_implicit() == 1);
}

TEST_CASE("signature: python_repr is the Catalyst dynamic-arrays doc's tuple byte for byte") {
  // The Catalyst dynamic-arrays doc, "Input Type and Output Type": a program returning a 3D
  // tensor along with two of its three dynamic dimensions; the third is the
  // program's first input.
  OutputType t{E(i64, {}, false), E(i64, {}, false), E(f64, {Out(0), Out(1), In(0)}, true)};
  CHECK(python_repr(t) ==
        "((DShapedArray(shape=(), dtype=int), False),\n"
        " (DShapedArray(shape=(), dtype=int), False),\n"
        " (DShapedArray(shape=[OutDBIdx(0),OutDBIdx(1),InDBIdx(0)], dtype=float), True)\n"
        ")");
  CHECK(python_repr(OutputType{}) == "()");
  CHECK(python_repr(InputType{E(DType::bool_, {2}, true), E(DType::i32, {}, true), E(DType::f32, {DB(1)}, true)}) ==
        "((DShapedArray(shape=[2], dtype=bool), True),\n"
        " (DShapedArray(shape=(), dtype=int32), True),\n"
        " (DShapedArray(shape=[DBIdx(1)], dtype=float32), True)\n"
        ")");
}

// ---------------------------------------------------------------------------
// expand_args.

TEST_CASE("signature: expand_args shares dimensions (the Catalyst tracing note)") {
  // a:f64[d], b:f64[d] becomes d:i64[], a:f64[d], b:f64[d]
  const ValueDesc a = val(1, f64, {V(0)}), b = val(2, f64, {V(0)});
  auto ex = expand_args({a, b}, ArgDims::shared);
  CHECK(to_string(ex.type) == "[(i64[], false), (f64[DBIdx(0)], true), (f64[DBIdx(0)], true)]");
  CHECK(ex.values == std::vector<ValueDesc>{val(0, i64), a, b});

  SUBCASE("two dimensions, static ones kept") {
    auto e2 = expand_args({val(1, f64, {V(10), 3, V(11)}), val(2, f64, {V(11)})}, ArgDims::shared);
    CHECK(to_string(e2.type) ==
          "[(i64[], false), (i64[], false), (f64[DBIdx(0),3,DBIdx(1)], true), (f64[DBIdx(1)], true)]");
    CHECK(ids(e2.values) == std::vector<ValueId>{10, 11, 1, 2});
  }
  SUBCASE("a square array has one dimension value") {
    auto e2 = expand_args({val(1, f64, {V(0), V(0)})}, ArgDims::shared);
    CHECK(to_string(e2.type) == "[(i64[], false), (f64[DBIdx(0),DBIdx(0)], true)]");
  }
  SUBCASE("a dimension that is an earlier argument refers to it (JAX's _collect_implicit)") {
    auto e2 = expand_args({val(5, i64), val(6, f64, {V(5)})}, ArgDims::shared);
    CHECK(to_string(e2.type) == "[(i64[], true), (f64[DBIdx(0)], true)]");
    CHECK(ids(e2.values) == std::vector<ValueId>{5, 6});
    // With an implicit entry in front, the reference is shifted past it.
    auto e3 = expand_args({val(1, f64, {V(0)}), val(5, i64), val(6, f64, {V(5), V(0)})}, ArgDims::shared);
    CHECK(to_string(e3.type) ==
          "[(i64[], false), (f64[DBIdx(0)], true), (i64[], true), (f64[DBIdx(2),DBIdx(0)], true)]");
  }
  SUBCASE("a dimension that is a later argument is still implicit") {
    auto e2 = expand_args({val(6, f64, {V(5)}), val(5, i64)}, ArgDims::shared);
    CHECK(to_string(e2.type) == "[(i64[], false), (f64[DBIdx(0)], true), (i64[], true)]");
    CHECK(ids(e2.values) == std::vector<ValueId>{5, 6, 5});
  }
  SUBCASE("static shapes and literals need no implicit argument") {
    auto e2 = expand_args({literal_i64(), val(3, f64, {2, 3})}, ArgDims::shared);
    CHECK(to_string(e2.type) == "[(i64[], true), (f64[2,3], true)]");
    CHECK(e2.type.num_implicit() == 0);
    CHECK(to_string(expand_args({}, ArgDims::shared).type) == "[]");
  }
}

TEST_CASE("signature: expand_args with preserve_dimensions=false forgets sharing") {
  // a:f64[d], b:f64[d] becomes d1:i64[], d2:i64[], a:f64[d1], b:f64[d2]
  const ValueDesc a = val(1, f64, {V(0)}), b = val(2, f64, {V(0)});
  auto ex = expand_args({a, b}, ArgDims::unshared);
  CHECK(to_string(ex.type) == "[(i64[], false), (i64[], false), (f64[DBIdx(0)], true), (f64[DBIdx(1)], true)]");
  CHECK(ex.values == std::vector<ValueDesc>{val(0, i64), val(0, i64), a, b});

  auto sq = expand_args({val(1, f64, {V(0), 4, V(0)})}, ArgDims::unshared);
  CHECK(to_string(sq.type) == "[(i64[], false), (i64[], false), (f64[DBIdx(0),4,DBIdx(1)], true)]");

  // An argument that is itself a dimension is not looked at.
  auto e2 = expand_args({val(5, i64), val(6, f64, {V(5)})}, ArgDims::unshared);
  CHECK(to_string(e2.type) == "[(i64[], false), (i64[], true), (f64[DBIdx(0)], true)]");
}

TEST_CASE("signature: expand_args captures dimensions (the Catalyst dynamic-arrays doc, preserve_dimensions=true)") {
  // loop(y) with y:f64[a] (a = variable 0) and the loop index 0.
  auto ex = expand_args({literal_i64(), val(2, f64, {V(0)})}, ArgDims::captured);
  CHECK(to_string(ex.type) == "[(i64[], true), (f64[Outer(0)], true)]");
  CHECK(ex.type.num_implicit() == 0);
  CHECK(ex.values.size() == 2);
}

// ---------------------------------------------------------------------------
// initialize and collapse.

TEST_CASE("signature: initialize creates the body's arguments in order") {
  InputType t{E(i64, {}, false), E(f64, {DB(0)}, true), E(f64, {3, DB(0)}, true)};
  auto body = initialize(t, 100);
  CHECK(body == std::vector<ValueDesc>{val(100, i64), val(101, f64, {V(100)}), val(102, f64, {3, V(100)})});
  CHECK(collapse(t, body) == std::vector<ValueDesc>{body[1], body[2]});
  CHECK(collapse(t, std::vector<int>{7, 8, 9}) == std::vector<int>{8, 9});

  SUBCASE("callbacks see resolved types and choose the ids") {
    std::vector<std::string> seen;
    ValueId next = 40;
    auto b2 = initialize(t, [&](const ValueDesc& v) {
      seen.push_back(to_string(v));
      return next += 2;
    });
    CHECK(seen == std::vector<std::string>{"i64[]", "f64[%42]", "f64[3,%42]"});
    CHECK(ids(b2) == std::vector<ValueId>{42, 44, 46});
  }
  SUBCASE("outer dimensions are lifted once per occurrence") {
    InputType c{E(i64, {}, true), E(f64, {SigDim::outer(9)}, true), E(f64, {SigDim::outer(9), 2}, true)};
    std::vector<ValueId> lifted;
    ValueId next = 0;
    auto b2 = initialize(
        c, [&](const ValueDesc&) { return next++; },
        [&](ValueId outer) {
          lifted.push_back(outer);
          return ValueId{50};
        });
    CHECK(lifted == std::vector<ValueId>{9, 9});
    CHECK(b2 == std::vector<ValueDesc>{val(0, i64), val(1, f64, {V(50)}), val(2, f64, {V(50), 2})});
    // The id-sequence form keeps the outer id.
    CHECK(initialize(c, 0)[1] == val(1, f64, {V(9)}));
  }
  SUBCASE("output types: InDBIdx reuses the caller's inputs, OutDBIdx the new results") {
    OutputType o{E(i64, {}, false), E(f64, {Out(0), In(1)}, true)};
    auto outs = initialize(o, {literal_i64(), val(7, i64)}, 20);
    CHECK(outs == std::vector<ValueDesc>{val(20, i64), val(21, f64, {V(20), V(7)})});
    CHECK(collapse(o, outs) == std::vector<ValueDesc>{outs[1]});
  }
}

// ---------------------------------------------------------------------------
// expand_results.

TEST_CASE("signature: expand_results, the Catalyst tracing note's worked example") {
  // Arguments: v:i64[], d:i64[], a:f64[d], b:f64[d]
  // Results:   e:i64[], a:f64[e], b:f64[d]
  const ValueDesc v = val(0, i64), d = val(1, i64), a = val(2, f64, {V(1)}), b = val(3, f64, {V(1)});
  const ValueDesc a2 = val(5, f64, {V(4)});
  auto er = expand_results({}, {v, d, a, b}, {a2, b});
  CHECK(to_string(er.type) == "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[InDBIdx(1)], true)]");
  CHECK(er.values == std::vector<ValueDesc>{val(4, i64), a2, b});
  CHECK(collapse(er.type, er.values) == std::vector<ValueDesc>{a2, b});
}

TEST_CASE("signature: expand_results, the Catalyst dynamic-arrays doc's three-dimensional result") {
  // A program returning a 3D tensor with two of its three dynamic dimensions;
  // the third is the first input of the program.
  auto er = expand_results({}, {val(0, i64)}, {val(3, f64, {V(1), V(2), V(0)})});
  CHECK(to_string(er.type) ==
        "[(i64[], false), (i64[], false), (f64[OutDBIdx(0),OutDBIdx(1),InDBIdx(0)], true)]");
  CHECK(python_repr(er.type) ==
        "((DShapedArray(shape=(), dtype=int), False),\n"
        " (DShapedArray(shape=(), dtype=int), False),\n"
        " (DShapedArray(shape=[OutDBIdx(0),OutDBIdx(1),InDBIdx(0)], dtype=float), True)\n"
        ")");
}

TEST_CASE("signature: expand_results, implicit results of f(sz) = ones(sz + 1) (both Catalyst documents)") {
  // { lambda ; a:i64[]. let b:i64[] = add a 1; c:f64[b] = ... in (b, c) }
  auto er = expand_results({}, {val(0, i64)}, {val(2, f64, {V(1)})});
  CHECK(to_string(er.type) == "[(i64[], false), (f64[OutDBIdx(0)], true)]");
  CHECK(ids(er.values) == std::vector<ValueId>{1, 2});
  // ones(sz): the dimension is the input, no implicit result.
  auto same = expand_results({}, {val(0, i64)}, {val(2, f64, {V(0)})});
  CHECK(to_string(same.type) == "[(f64[InDBIdx(0)], true)]");
}

TEST_CASE("signature: expand_results, sharing in loop bodies (the Catalyst tracing note, loop expansion specifics)") {
  const ValueDesc b = val(9, f64, {V(8)});  // b = jnp.ones([sz+1]), a new dimension %8
  SUBCASE("return b, b: one shared dimension") {
    auto er = expand_results({}, {}, {b, b}, {ResultDims::carried});
    CHECK(to_string(er.type) == "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[OutDBIdx(0)], true)]");
  }
  SUBCASE("preserve_dimensions=false: every occurrence its own dimension") {
    auto er = expand_results({}, {}, {b, b}, {ResultDims::unshared});
    CHECK(to_string(er.type) ==
          "[(i64[], false), (i64[], false), (f64[OutDBIdx(0)], true), (f64[OutDBIdx(1)], true)]");
    CHECK(ids(er.values) == std::vector<ValueId>{8, 8, 9, 9});
  }
  SUBCASE("carried: an argument's dimension is returned, referred to as the input") {
    // body(n, a:f64[n]) returns a
    auto er = expand_results({}, {val(0, i64), val(1, f64, {V(0)})}, {val(1, f64, {V(0)})}, {ResultDims::carried});
    CHECK(to_string(er.type) == "[(i64[], false), (f64[InDBIdx(0)], true)]");
    CHECK(ids(er.values) == std::vector<ValueId>{0, 1});
    // fresh (JAX): inputs are known, nothing implicit.
    auto fr = expand_results({}, {val(0, i64), val(1, f64, {V(0)})}, {val(1, f64, {V(0)})});
    CHECK(to_string(fr.type) == "[(f64[InDBIdx(0)], true)]");
  }
  SUBCASE("carried: constants' dimensions are not returned") {
    // consts n, x:f64[n]; argument a:f64[n]; returns a * x
    auto er = expand_results({val(0, i64), val(1, f64, {V(0)})}, {val(2, i64), val(3, f64, {V(0)})},
                             {val(4, f64, {V(0)})}, {ResultDims::carried});
    CHECK(to_string(er.type) == "[(f64[InDBIdx(0)], true)]");
  }
  SUBCASE("unshared: returned arguments keep their own dimension results") {
    // body(n1, n2, a:f64[n1], b:f64[n2]) returns (a, b)
    std::vector<ValueDesc> in{val(0, i64), val(1, i64), val(2, f64, {V(0)}), val(3, f64, {V(1)})};
    auto er = expand_results({}, in, {in[2], in[3]}, {ResultDims::unshared});
    CHECK(to_string(er.type) ==
          "[(i64[], false), (i64[], false), (f64[InDBIdx(0)], true), (f64[InDBIdx(1)], true)]");
    CHECK(ids(er.values) == std::vector<ValueId>{0, 1, 2, 3});
  }
  SUBCASE("an explicit result serving as a dimension") {
    const ValueDesc n = val(5, i64), y = val(6, f64, {V(5)});
    CHECK(to_string(expand_results({}, {}, {n, y}).type) == "[(i64[], true), (f64[OutDBIdx(0)], true)]");
    // Returned after its use: an implicit result first, and OutDBIdx names
    // the FIRST entry holding it (Catalyst's dict would name entry #2).
    auto er = expand_results({}, {}, {y, n});
    CHECK(to_string(er.type) == "[(i64[], false), (f64[OutDBIdx(0)], true), (i64[], true)]");
  }
}

TEST_CASE("signature: expand_results, the for-loop index becomes OutDBIdx (the Catalyst tracing note)") {
  // @for_loop(0, 10, 1) def loop(i, a): return jnp.ones([i])
  // body inputs: i:i64[] (#0), a:f64[3] (#1); result b:f64[i]
  std::vector<ValueDesc> in{val(0, i64), val(1, f64, {3})};
  const ValueDesc b = val(2, f64, {V(0)});
  auto plain = expand_results({}, in, {b}, {ResultDims::carried});
  CHECK(to_string(plain.type) == "[(i64[], false), (f64[InDBIdx(0)], true)]");
  auto forced = expand_results({}, in, {b}, {ResultDims::carried, 0});
  CHECK(to_string(forced.type) == "[(i64[], false), (f64[OutDBIdx(0)], true)]");
  auto unshared = expand_results({}, in, {b, b}, {ResultDims::unshared, 0});
  CHECK(to_string(unshared.type) ==
        "[(i64[], false), (i64[], false), (f64[OutDBIdx(0)], true), (f64[OutDBIdx(1)], true)]");
}

// ---------------------------------------------------------------------------
// The bind algorithm end to end, on the jaxprs of the two Catalyst documents.

TEST_CASE("signature: the Catalyst dynamic-arrays doc's example 1, preserve_dimensions=true") {
  // { lambda ; a:i64[] b:f64[a] c:f64[a]. let
  //     d:f64[a] = for_loop[body_jaxpr={ lambda ; e:i64[] f:f64[e] g:i64[] h:f64[e]. let
  //           i:f64[e] = mul h f in (i,) } body_nconsts=2 nimplicit=0 ...] a b 0 10 1 0 c
  Jaxpr caller;
  const int a = caller.new_var(T(i64)), x = caller.new_var(T(f64, {Var(a)})), y = caller.new_var(T(f64, {Var(a)}));
  caller.invars = {a, x, y};

  // 1. expand_args(loop index, y): dimensions are captured.
  auto ex = expand_args(values_of(caller, std::vector<Atom>{lit(0), var(y)}), ArgDims::captured);
  CHECK(to_string(ex.type) == "[(i64[], true), (f64[Outer(0)], true)]");

  // 2. initialize the body: the outer dimension becomes a constant.
  Jaxpr body;
  auto args = initialize(body, ex.type);
  REQUIRE(args.captured.size() == 1);
  CHECK(args.captured[0].first == a);
  const int d = args.captured[0].second;
  // The body function captures x:f64[a]: the tracer layer lifts it with the
  // same dimension constant.
  const int e = body.new_var(T(f64, {Var(d)}));
  body.constvars.push_back(e);
  const int g = args.invars[1];
  const int h = body.new_var(T(f64, {Var(d)}));
  body.eqns.push_back(dyn::Eqn{dyn::detail::Prim::mul, {var(g), var(e)}, {h}, dyn::detail::NoParams{}});

  // 3. expand_results: consts (d, e), inputs (index, g); the loop index is
  //    input #2.
  auto er = expand_results(values_of(body, body.constvars), values_of(body, args.invars),
                           values_of(body, std::vector<int>{h}), {ResultDims::carried, 2});
  CHECK(to_string(er.type) == "[(f64[InDBIdx(0)], true)]");
  body.outvars = {var(h)};

  const Jaxpr closed = constvars_to_invars(body);
  CHECK(text(closed) == "{ lambda ; a:i64[] b:f64[a] c:i64[] d:f64[a]. let e:f64[a] = mul d b in (e,) }");
  CHECK(to_string(input_type_of(closed)) ==
        "[(i64[], true), (f64[DBIdx(0)], true), (i64[], true), (f64[DBIdx(0)], true)]");
  CHECK(output_type_of(closed) == er.type);

  // 4. initialize the results in the caller: operands a b 0 10 1 0 c; the
  //    result is d:f64[a].
  auto outs = initialize(caller, er.type, {var(a), var(x), lit(0), lit(10), lit(1), lit(0), var(y)});
  REQUIRE(outs.size() == 1);
  CHECK(caller.types[static_cast<std::size_t>(outs[0])] == T(f64, {Var(a)}));
}

TEST_CASE("signature: the Catalyst dynamic-arrays doc's example 2, preserve_dimensions=false") {
  // { lambda ; a:i64[] b:f64[a] c:f64[a]. let
  //     d:i64[] e:f64[d] = for_loop[body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let
  //           i:i64[] = add f 1; j:f64[i] = broadcast_in_dim[...] 1.0 i in (i, j) }
  //       body_nconsts=0 nimplicit=1 preserve_dimensions=False] a 0 10 1 0 c
  Jaxpr caller;
  const int a = caller.new_var(T(i64)), x = caller.new_var(T(f64, {Var(a)})), y = caller.new_var(T(f64, {Var(a)}));
  caller.invars = {a, x, y};

  auto ex = expand_args(values_of(caller, std::vector<Atom>{lit(0), var(y)}), ArgDims::unshared);
  CHECK(to_string(ex.type) == "[(i64[], false), (i64[], true), (f64[DBIdx(0)], true)]");
  CHECK(ids(ex.values) == std::vector<ValueId>{a, dyn::kNoValueId, y});  // operands a 0 c (bounds aside)

  Jaxpr body;
  auto args = initialize(body, ex.type);
  CHECK(args.captured.empty());
  CHECK(body.in_explicit == std::vector<bool>{false, true, true});
  const int f = args.invars[0];
  const int i = body.new_var(T(i64));
  body.eqns.push_back(dyn::Eqn{dyn::detail::Prim::add, {var(f), lit(1)}, {i}, dyn::detail::NoParams{}});
  const int j = body.new_var(T(f64, {Var(i)}));
  body.eqns.push_back(dyn::Eqn{dyn::detail::Prim::broadcast_in_dim,
                               {Atom::literal(Scalar::of(1.0)), var(i)},
                               {j},
                               dyn::detail::BroadcastInDimParams{{dyn::detail::kDynamicDim}, {}}});

  // The loop index is input #1 (after the one implicit argument).
  auto er = expand_results({}, values_of(body, args.invars), values_of(body, std::vector<int>{j}),
                           {ResultDims::unshared, 1});
  CHECK(to_string(er.type) == "[(i64[], false), (f64[OutDBIdx(0)], true)]");
  CHECK(ids(er.values) == std::vector<ValueId>{i, j});  // in (i, j)
  for (const auto& v : er.values) body.outvars.push_back(var(static_cast<int>(v.id)));
  body.out_explicit = {false, true};

  // The Catalyst dynamic-arrays doc's body_jaxpr, named from `a` as a jaxpr of its own and
  // with typed literals (API.md §6); the operand wraps as it does there.
  CHECK(text(body) ==
        "{ lambda ; a:i64[] b:i64[] c:f64[a]. let\n"
        "    d:i64[] = add a 1:i64[]\n"
        "    e:f64[d] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]\n"
        "      d\n"
        "  in (d, e) }");
  CHECK(input_type_of(body) == ex.type);
  CHECK(output_type_of(body) == er.type);

  // d:i64[] e:f64[d] = for_loop[...] a 0 10 1 0 c
  auto outs = initialize(caller, er.type, {var(a), lit(0), lit(10), lit(1), lit(0), var(y)});
  REQUIRE(outs.size() == 2);
  CHECK(caller.types[static_cast<std::size_t>(outs[0])] == T(i64));
  CHECK(caller.types[static_cast<std::size_t>(outs[1])] == T(f64, {Var(outs[0])}));
  CHECK(collapse(er.type, outs) == std::vector<int>{outs[1]});
}

TEST_CASE("signature: the Catalyst tracing note's for_loop, implicit dimension arguments") {
  // { lambda ; a:i64[]. let b:f64[a] = broadcast_in_dim[...] 1.0 a
  //     _:i64[] c:f64[a] = for_loop[body_jaxpr={ lambda ; d:i64[] e:i64[] f:i64[] g:f64[e]. let
  //           ... j:f64[e] = mul g i in (e, j) }] a a 0 10 1 0 b
  Jaxpr caller;
  const int a = caller.new_var(T(i64)), b = caller.new_var(T(f64, {Var(a)}));
  caller.invars = {a};

  auto ex = expand_args(values_of(caller, std::vector<Atom>{lit(0), var(b)}), ArgDims::shared);
  CHECK(to_string(ex.type) == "[(i64[], false), (i64[], true), (f64[DBIdx(0)], true)]");

  Jaxpr body;
  const int d = body.new_var(T(i64));  // the captured sz, a constant of the body
  body.constvars.push_back(d);
  auto args = initialize(body, ex.type);
  const int e = args.invars[0];
  const int jv = body.new_var(T(f64, {Var(e)}));
  auto er = expand_results(values_of(body, body.constvars), values_of(body, args.invars),
                           values_of(body, std::vector<int>{jv}), {ResultDims::carried, 2});
  CHECK(to_string(er.type) == "[(i64[], false), (f64[InDBIdx(1)], true)]");
  CHECK(ids(er.values) == std::vector<ValueId>{e, jv});  // in (e, j)

  const Jaxpr closed = constvars_to_invars(body);
  CHECK(text(closed).rfind("{ lambda ; a:i64[] b:i64[] c:i64[] d:f64[b]. let", 0) == 0);

  // _:i64[] c:f64[a]: the result's dimension is the caller's a, not the
  // (unused) implicit result.
  auto outs = initialize(caller, er.type, {var(a), var(a), lit(0), lit(10), lit(1), lit(0), var(b)});
  CHECK(caller.types[static_cast<std::size_t>(outs[0])] == T(i64));
  CHECK(caller.types[static_cast<std::size_t>(outs[1])] == T(f64, {Var(a)}));
}

// ---------------------------------------------------------------------------
// Jaxpr conversions and round trips.

TEST_CASE("signature: input_type_of and output_type_of a jaxpr") {
  // { lambda ; a:i64[] b:f64[a] c:f64[3,a]. let d:i64[] = add a 1; ... in (d, e:f64[d], c) }
  Jaxpr j;
  const int a = j.new_var(T(i64)), b = j.new_var(T(f64, {Var(a)})), c = j.new_var(T(f64, {S(3), Var(a)}));
  j.invars = {a, b, c};
  j.in_explicit = {false, true, true};
  const int d = j.new_var(T(i64)), e = j.new_var(T(f64, {Var(d)}));
  j.outvars = {var(d), var(e), var(c), lit(2)};
  j.out_explicit = {false, true, true, true};
  CHECK(to_string(input_type_of(j)) == "[(i64[], false), (f64[DBIdx(0)], true), (f64[3,DBIdx(0)], true)]");
  CHECK(to_string(output_type_of(j)) ==
        "[(i64[], false), (f64[OutDBIdx(0)], true), (f64[3,InDBIdx(0)], true), (i64[], true)]");

  SUBCASE("empty flags mean all explicit; constvars come first") {
    Jaxpr k;
    const int n = k.new_var(T(i64)), x = k.new_var(T(f64, {Var(n)})), z = k.new_var(T(f64, {Var(n), S(2)}));
    k.constvars = {n, x};
    k.invars = {z};
    k.outvars = {var(z)};
    CHECK(to_string(input_type_of(k)) == "[(i64[], true), (f64[DBIdx(0)], true), (f64[DBIdx(0),2], true)]");
    CHECK(to_string(output_type_of(k)) == "[(f64[InDBIdx(0),2], true)]");
  }
  SUBCASE("value_of and jaxpr_type") {
    CHECK(value_of(j, c) == val(c, f64, {3, V(a)}));
    CHECK(value_of(j, lit(4)) == literal_i64());
    CHECK(jaxpr_type(value_of(j, c)) == j.types[static_cast<std::size_t>(c)]);
  }
}

TEST_CASE("signature: round trips") {
  SUBCASE("jaxpr -> input type -> initialize -> the same input type") {
    Jaxpr j;
    const int n = j.new_var(T(i64)), m = j.new_var(T(i64));
    const int x = j.new_var(T(f64, {Var(n), Var(m)})), y = j.new_var(T(DType::f32, {Var(m), S(5)}));
    j.invars = {n, m, x, y};
    j.in_explicit = {false, false, true, true};
    const InputType t = input_type_of(j);
    Jaxpr k;
    auto args = initialize(k, t);
    CHECK(input_type_of(k) == t);
    CHECK(k.in_explicit == j.in_explicit);
    for (std::size_t i = 0; i < 4; ++i) CHECK(k.types[static_cast<std::size_t>(args.invars[i])] == j.types[static_cast<std::size_t>(j.invars[i])]);
    CHECK(text(k) == text(j));
  }
  SUBCASE("expand_args(collapse(initialize(t))) == t") {
    const std::vector<ValueDesc> args{val(1, f64, {V(0), V(7)}), val(2, i64), val(3, f64, {V(7), V(2)}),
                                      val(4, f64, {V(0)})};
    for (ArgDims how : {ArgDims::shared, ArgDims::unshared}) {
      CAPTURE(static_cast<int>(how));
      const InputType t = expand_args(args, how).type;
      auto body = initialize(t, 1000);
      CHECK(expand_args(collapse(t, body), how).type == t);
    }
  }
  SUBCASE("expand_results == output_type_of the body built from it") {
    Jaxpr body;
    const int v = body.new_var(T(i64)), dd = body.new_var(T(i64)), a = body.new_var(T(f64, {Var(dd)}));
    const int b = body.new_var(T(f64, {Var(dd)}));
    body.invars = {v, dd, a, b};
    const int e = body.new_var(T(i64)), a2 = body.new_var(T(f64, {Var(e)}));
    auto er = expand_results({}, values_of(body, body.invars), values_of(body, std::vector<int>{a2, b}));
    for (const auto& val_ : er.values) body.outvars.push_back(var(static_cast<int>(val_.id)));
    body.out_explicit = {false, true, true};
    CHECK(output_type_of(body) == er.type);
    CHECK(text(body) == "{ lambda ; a:i64[] b:i64[] c:f64[b] d:f64[b]. let  in (e, f, d) }");
  }
}

// ---------------------------------------------------------------------------
// Errors: type and exact message.

TEST_CASE("signature: malformed input types") {
  CHECK_THROWS_WITH_AS(check(InputType{E(f64, {DB(1)}, true), E(i64, {}, false)}),
                       "input type entry #0 (f64[DBIdx(1)], true): DBIdx(1) is out of range; a DBIdx must refer to "
                       "an earlier entry of the input type, and entry #0 has none",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(InputType{E(i64, {}, false), E(f64, {DB(5)}, true)}),
                       "input type entry #1 (f64[DBIdx(5)], true): DBIdx(5) is out of range; a DBIdx must refer to "
                       "an earlier entry of the input type (#0 to #0)",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(InputType{E(i64, {}, true), E(i64, {}, true), E(f64, {DB(-1)}, true)}),
                       "input type entry #2 (f64[DBIdx(-1)], true): DBIdx(-1) is out of range; a DBIdx must refer "
                       "to an earlier entry of the input type (#0 to #1)",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(InputType{E(f64, {3}, true), E(f64, {DB(0)}, true)}),
                       "input type entry #1 (f64[DBIdx(0)], true): DBIdx(0) refers to entry #0 of type f64[3], but a "
                       "dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(InputType{E(DType::i32, {}, true), E(f64, {DB(0)}, true)}),
                       "input type entry #1 (f64[DBIdx(0)], true): DBIdx(0) refers to entry #0 of type i32[], but a "
                       "dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(InputType{E(i64, {}, false), E(f64, {3}, true)}),
                       "input type entry #0 (i64[], false) is implicit, but no DBIdx refers to it; an implicit entry "
                       "exists only to hold a dimension of a later entry",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(InputType{E(f64, {}, false)}),
                       "input type entry #0 (f64[], false) is implicit, but an implicit entry must be an i64[] "
                       "dimension value",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(InputType{E(i64, {}, true), E(f64, {In(0)}, true)}),
                       "input type entry #1 (f64[InDBIdx(0)], true): InDBIdx(0) cannot appear in an input type; "
                       "input types refer to their own entries with DBIdx",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(InputType{E(f64, {-1}, true)}),
                       "input type entry #0 (f64[-1], true): negative dimension -1", dyn::ShapeError);
  CHECK_NOTHROW(check(InputType{}));
  CHECK_NOTHROW(check(InputType{E(i64, {}, false), E(f64, {DB(0), SigDim::outer(3)}, true)}));
  // initialize validates before creating anything.
  int created = 0;
  CHECK_THROWS_AS(initialize(InputType{E(f64, {DB(0)}, true)}, [&](const ValueDesc&) { return ValueId{created++}; }),
                  dyn::IndexError);
  CHECK(created == 0);
  CHECK_THROWS_WITH_AS(initialize(InputType{E(f64, {SigDim::outer(4)}, true)}, [](const ValueDesc&) { return ValueId{0}; }),
                       "initialize: input type entry #0 (f64[Outer(4)], true) has Outer(4), but no function to "
                       "capture the caller's dimensions was given",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(initialize(InputType{E(i64, {}, true)}, [](const ValueDesc&) { return dyn::kNoValueId; }),
                       "initialize: new_arg returned the id -1 for entry #0; ids are >= 0", dyn::IndexError);
}

TEST_CASE("signature: malformed output types") {
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {In(2)}, true)}, 2),
                       "output type entry #0 (f64[InDBIdx(2)], true): InDBIdx(2) is out of range; an InDBIdx must "
                       "refer to an input of the program (#0 to #1)",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {In(0)}, true)}, 0),
                       "output type entry #0 (f64[InDBIdx(0)], true): InDBIdx(0) is out of range; an InDBIdx must "
                       "refer to an input of the program, and it has none",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {Out(0)}, true), E(i64, {}, false)}, 0),
                       "output type entry #0 (f64[OutDBIdx(0)], true): OutDBIdx(0) is out of range; an OutDBIdx "
                       "must refer to an earlier entry of the output type, and entry #0 has none",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(i64, {}, false), E(f64, {Out(3)}, true)}, 0),
                       "output type entry #1 (f64[OutDBIdx(3)], true): OutDBIdx(3) is out of range; an OutDBIdx "
                       "must refer to an earlier entry of the output type (#0 to #0)",
                       dyn::IndexError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {3}, true), E(f64, {Out(0)}, true)}, 0),
                       "output type entry #1 (f64[OutDBIdx(0)], true): OutDBIdx(0) refers to entry #0 of type f64[3], "
                       "but a dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {DB(0)}, true)}, 1),
                       "output type entry #0 (f64[DBIdx(0)], true): DBIdx(0) cannot appear in an output type; output "
                       "types use InDBIdx and OutDBIdx",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {SigDim::outer(1)}, true)}, 1),
                       "output type entry #0 (f64[Outer(1)], true): Outer(1) cannot appear in an output type; output "
                       "types use InDBIdx and OutDBIdx",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(check(OutputType{E(f64, {2}, false)}, 0),
                       "output type entry #0 (f64[2], false) is implicit, but an implicit entry must be an i64[] "
                       "dimension value",
                       dyn::TypeError);
  // An implicit result nobody refers to is fine (the Catalyst tracing note's `_:i64[]`).
  CHECK_NOTHROW(check(OutputType{E(i64, {}, false), E(f64, {In(0)}, true)}, 1));

  const OutputType t{E(f64, {In(0)}, true)};
  CHECK_THROWS_WITH_AS(initialize(t, {val(3, f64, {3})}, 0),
                       "initialize: output type entry #0 (f64[InDBIdx(0)], true): InDBIdx(0) refers to input #0 of "
                       "type f64[3], but a dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(initialize(t, {literal_i64()}, 0),
                       "initialize: output type entry #0 (f64[InDBIdx(0)], true): InDBIdx(0) refers to input #0, a "
                       "value without identity (a literal)",
                       dyn::TypeError);
}

TEST_CASE("signature: errors of the expansion steps") {
  CHECK_THROWS_WITH_AS(expand_args({val(1, f64, {3}), val(2, f64, {V(1)})}, ArgDims::shared),
                       "expand_args: dimension 0 of argument #1 (f64[%1]) is the value of argument #0, of type f64[3]; "
                       "a dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(expand_args({val(1, f64, {2, -2})}, ArgDims::unshared),
                       "expand_args: dimension 1 of argument #0 (f64[2,-2]) is negative", dyn::ShapeError);
  CHECK_THROWS_WITH_AS(expand_results({}, {val(1, f64, {3})}, {val(2, f64, {V(1)})}),
                       "expand_results: dimension 0 of result #0 (f64[%1]) is the value of input #0, of type f64[3]; "
                       "a dimension must be an i64[] scalar",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(expand_results({}, {}, {val(2, f64, {V(3)}), val(3, DType::f32, {})}),
                       "expand_results: dimension 0 of result #0 (f64[%3]) is the value of result #1, of type f32[]; "
                       "a dimension must be an i64[] scalar",
                       dyn::TypeError);
  // A for-loop index that the results do not carry cannot become an OutDBIdx.
  CHECK_THROWS_WITH_AS(expand_results({}, {val(0, i64), val(1, f64, {3})}, {val(2, f64, {V(0)})},
                                      {ResultDims::fresh, 0}),
                       "expand_results: dimension 0 of result #0 (f64[%0]) is input #0, which force_out_db_idx turns "
                       "into an OutDBIdx, but no earlier result holds it; use ResultDims::carried or "
                       "ResultDims::unshared, which return it",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(expand_results({}, {val(0, i64)}, {}, {ResultDims::carried, 5}),
                       "expand_results: force_out_db_idx 5 is out of range for 1 inputs", dyn::IndexError);
  CHECK_THROWS_WITH_AS(collapse(InputType{E(i64, {}, true), E(i64, {}, true), E(i64, {}, true)}, std::vector<int>{1, 2}),
                       "collapse: the input type has 3 entries but 2 values were given", dyn::TypeError);
  CHECK_THROWS_WITH_AS(collapse(OutputType{}, std::vector<int>{1}),
                       "collapse: the output type has 0 entries but 1 values were given", dyn::TypeError);
  CHECK_THROWS_WITH_AS(DimRef::of_value(-3), "DimRef::of_value: value ids are non-negative, got -3", dyn::IndexError);
}

TEST_CASE("signature: errors of the jaxpr conversions") {
  Jaxpr j;
  const int x = j.new_var(T(f64, {Var(1)})), n = j.new_var(T(i64));
  j.invars = {x, n};
  CHECK_THROWS_WITH_AS(input_type_of(j),
                       "input_type_of: dimension 0 of input #0 refers to variable %1, which is not an earlier input "
                       "(constvar or invar) of the jaxpr",
                       dyn::TypeError);
  j.invars = {n};
  j.outvars = {var(x)};
  CHECK_NOTHROW(input_type_of(j));
  CHECK(to_string(output_type_of(j)) == "[(f64[InDBIdx(0)], true)]");
  const int m = j.new_var(T(i64)), y = j.new_var(T(f64, {Var(m)}));
  j.outvars = {var(y), var(m)};
  CHECK_THROWS_WITH_AS(output_type_of(j),
                       "output_type_of: dimension 0 of result #0 refers to variable %2, which is neither an input of "
                       "the jaxpr nor an earlier result; return it first, as an implicit result",
                       dyn::TypeError);
  j.in_explicit = {true, false};
  CHECK_THROWS_WITH_AS(input_type_of(j), "input_type_of: the jaxpr has 1 invars but 2 explicitness flags",
                       dyn::TypeError);
  CHECK_THROWS_WITH_AS(value_of(j, 9), "value_of: variable %9 is not in the jaxpr's table of 4 variables",
                       dyn::IndexError);
}
