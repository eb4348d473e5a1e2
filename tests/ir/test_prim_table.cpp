// The primitive table (prims.hpp, issue 15): every primitive has a printer
// entry, a shape rule and an eager kernel that agree with its table row.
// The LLVM lowering and the fuzzer's coverage of every primitive are
// checked in test_prim_table_jit.cpp.
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "prim_samples.hpp"
#include "../test_util.hpp"

namespace {

using namespace dyn;
using namespace dyn::detail;
using prim_samples::all_prims;
using prim_samples::eqn_of;
using prim_samples::Sample;
using prim_samples::sample_of;

std::vector<std::int64_t> static_dims(const Type& t) {
  std::vector<std::int64_t> r;
  for (const JDim& d : t.shape) r.push_back(d.value);
  return r;
}

Aval aval_of_type(const Type& t) {
  Aval a{t.dtype, {}, t.weak, std::nullopt};
  for (const JDim& d : t.shape) a.shape.push_back(Dim(d.value));
  return a;
}

}  // namespace

TEST_CASE("prim table: the rows are the enum, in order, and the kind lists partition them") {
  CHECK(static_cast<int>(std::size(kPrimTable)) == kNumPrims);
  for (int i = 0; i < kNumPrims; ++i) CHECK(static_cast<int>(kPrimTable[i].prim) == i);
  int elementwise = 0, all = 0;
#define DYN_COUNT_ELEMENTWISE(e, ...) ++elementwise;
#define DYN_COUNT_ALL(e, ...) ++all;
  DYN_ELEMENTWISE_PRIMITIVES(DYN_COUNT_ELEMENTWISE)
  DYN_PRIMITIVES(DYN_COUNT_ALL)
#undef DYN_COUNT_ELEMENTWISE
#undef DYN_COUNT_ALL
  CHECK(all == kNumPrims);
  CHECK(elementwise == std::count_if(std::begin(kPrimTable), std::end(kPrimTable),
                                     [](const PrimInfo& i) { return is_elementwise(i.kind); }));
  // The table's columns, spot-checked against what the rules always did.
  CHECK(prim_name(Prim::not_) == "not");
  CHECK(prim_info(Prim::log1p).vector_math);
  CHECK(std::string(prim_info(Prim::log1p).vector_math.name) == "log1p");
  CHECK(!prim_info(Prim::log1p).vector_math.intrinsic);
  CHECK(prim_info(Prim::exp).vector_math.intrinsic);
  CHECK(!prim_info(Prim::concatenate).fused);
  CHECK(!prim_info(Prim::dynamic_update_slice).fused);
  CHECK(prim_info(Prim::dynamic_slice).fused);
  CHECK(prim_info(Prim::iota).arity == 0);
  CHECK(prim_info(Prim::dynamic_slice).arity == kVariadic);
  CHECK(prim_info(Prim::floor).dtypes == DTypeSet::rounding);
  CHECK(prim_info(Prim::sqrt).dtypes == DTypeSet::inexact);  // f32 f64 c64 c128
  CHECK(prim_info(Prim::log1p).dtypes == DTypeSet::floating);
  CHECK(prim_info(Prim::lt).dtypes == DTypeSet::ordered);
  CHECK(prim_info(Prim::mul).dtypes == DTypeSet::number);
  CHECK(prim_info(Prim::real).dtypes == DTypeSet::complex);
  CHECK(prim_info(Prim::add).dim == DimArith::add);
  CHECK(prim_info(Prim::convert_element_type).dim == DimArith::same);
}

TEST_CASE("prim table: every primitive has a printer entry") {
  std::set<std::string_view> names;
  for (Prim p : all_prims()) {
    const std::string name(prim_name(p));
    INFO("primitive #" << static_cast<int>(p) << " " << name);
    CHECK(!name.empty());
    // JAX's names: lower case, digits, '_', and '-' (scatter-add).
    CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos);
    CHECK(names.insert(prim_name(p)).second);
    const Sample s = sample_of(p);
    const std::string text = format_jaxpr(*s.jaxpr.jaxpr, 80);
    INFO(text);
    const bool has_params = !std::holds_alternative<NoParams>(eqn_of(s, p).params);
    // `b:f64[2,3] = exp a`, or with params `c:i32[3,2] = reshape[dimensions=None new_sizes=(3, 2)] a`
    // (a long equation breaks after the name and its `[`); an effect has no
    // outputs: `    debug_callback[...] b`.
    const std::string lhs = eqn_of(s, p).outputs.empty() ? "    " : "= ";
    CHECK(text.find(lhs + name + (has_params ? "[" : " ")) != std::string::npos);
  }
}

TEST_CASE("prim table: every primitive has a shape rule that types its sample") {
  for (Prim p : all_prims()) {
    INFO("primitive " << prim_name(p));
    const Sample s = sample_of(p);
    const Jaxpr& j = *s.jaxpr.jaxpr;
    const Eqn& e = eqn_of(s, p);
    CHECK(params_match(p, e.params));
    const int arity = prim_info(p).arity;
    if (arity != kVariadic) CHECK(e.inputs.size() == static_cast<std::size_t>(arity));  // (no runtime dimensions)
    std::vector<Aval> in;
    for (const Atom& a : e.inputs) in.push_back(aval_of_type(j.type_of(a)));
    // (A control-flow rule may make up output dimensions: it needs a trace.)
    std::vector<Aval> out;
    make_jaxpr([&](auto x) {
      out = abstract_eval(p, in, e.params);
      return x;
    })(Array<double>::scalar(0));
    REQUIRE(out.size() == e.outputs.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const Type& t = j.types.at(static_cast<std::size_t>(e.outputs[k]));
      CHECK(out[k].dtype == t.dtype);
      CHECK(static_shape(out[k].shape) == static_dims(t));
    }
    // The dtype rule: an operand outside the row's dtypes is a TypeError
    // naming the primitive (elementwise and reductions, whose dtypes are
    // exactly the row's).
    const Kind k = prim_kind(p);
    if ((prim_info(p).dtypes == DTypeSet::floating || prim_info(p).dtypes == DTypeSet::rounding ||
         prim_info(p).dtypes == DTypeSet::inexact) &&
        (k == Kind::unary || k == Kind::binary)) {
      std::vector<Aval> ints = in;
      for (Aval& a : ints) a.dtype = DType::i32;
      const std::string m = test_util::message_of<TypeError>([&] { abstract_eval(p, ints, e.params); });
      CHECK(m == std::string(prim_name(p)) + " does not accept dtype i32; it requires a floating-point" +
                     (prim_info(p).dtypes == DTypeSet::inexact ? " or complex dtype" : " dtype"));
    }
  }
}

TEST_CASE("prim table: every primitive has an eager kernel that agrees with its shape rule") {
  for (Prim p : all_prims()) {
    INFO("primitive " << prim_name(p));
    const Sample s = sample_of(p);
    const Jaxpr& j = *s.jaxpr.jaxpr;
    const std::vector<AnyArray> out = eval_jaxpr(s.jaxpr, s.args);
    REQUIRE(out.size() == j.outvars.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const Type& t = j.type_of(j.outvars[k]);
      CHECK(out[k].dtype() == t.dtype);
      CHECK(out[k].shape() == static_dims(t));
    }
    // The kernel itself, on the equation's operands when they are the
    // sample's inputs (every sample but the traced control-flow ones).
    const Eqn& e = eqn_of(s, p);
    std::vector<Atom> invars;
    for (int v : j.invars) invars.push_back(Atom::of_var(v));
    if (e.inputs == invars) {
      const std::vector<AnyArray> direct = impl(p, s.args, e.params);
      REQUIRE(direct.size() == out.size());
      for (std::size_t k = 0; k < out.size(); ++k) CHECK(allclose(direct[k], out[k]));
    }
  }
}
