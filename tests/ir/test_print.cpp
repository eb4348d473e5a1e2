// Jaxpr printing: JAX's text format byte for byte.
//
// Expected texts come from three places:
//  * real JAX / Catalyst output (API.md section 6, JAX's tracing doc, the
//    Catalyst dynamic-arrays doc, the JAX documentation's jaxpr examples, a
//    JAX unit test; docs/architecture.md, "Sources"), reproduced
//    through the layout functions detail::pp::* where our IR cannot express
//    the equation yet (nested jaxprs, JAX-only params);
//  * layouts derived by hand from JAX's algorithm (jax/_src/pretty_printer.py
//    + core.py) for the boundary cases, with the column arithmetic written
//    next to each;
//  * Python's repr for float formatting.
#include <doctest/doctest.h>

#include <dynstage/ir/print.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using dyn::Atom;
using dyn::ClosedJaxpr;
using dyn::DType;
using dyn::Eqn;
using dyn::JDim;
using dyn::Jaxpr;
using dyn::Scalar;
using dyn::Type;
namespace detail = dyn::detail;
namespace pp = dyn::detail::pp;
using detail::Prim;

namespace {

JDim S(std::int64_t v) { return JDim{v, -1}; }
JDim V(int var) { return JDim::of_var(var); }

Type T(DType d, std::vector<JDim> shape = {}) {
  Type t;
  t.dtype = d;
  t.shape = std::move(shape);
  return t;
}

Atom var(int v) { return Atom::of_var(v); }
template <class X>
Atom lit(X x) {
  return Atom::literal(Scalar::of(x));
}

Eqn eqn(Prim p, std::vector<Atom> in, std::vector<int> out, detail::Params params = detail::NoParams{}) {
  return Eqn{p, std::move(in), std::move(out), std::move(params)};
}

std::string str(const Jaxpr& j) {
  ClosedJaxpr cj{std::make_shared<const Jaxpr>(j), {}};
  return dyn::to_string(cj);
}

// `[k=v ...]` of one params value, laid out alone.
std::string params_str(const detail::Params& p) {
  detail::PpContext ctx;
  return pp::format(pp::kv_pairs(detail::param_kvs(p, ctx)));
}

pp::Doc t(const char* s) { return pp::text(s); }
pp::Doc vs(std::vector<std::string> items) { return pp::vars(items); }
pp::Doc outs(std::vector<std::string> items) { return pp::vars(items, ","); }

}  // namespace

// ---------------------------------------------------------------------------
TEST_CASE("print: the API.md section 6 golden") {
  Jaxpr j;
  int a = j.new_var(T(DType::f64, {S(3), S(4)}));
  int b = j.new_var(T(DType::f64, {S(4)}));
  int c = j.new_var(T(DType::f64, {S(3), S(4)}));
  int d = j.new_var(T(DType::f64, {S(4)}));
  int e = j.new_var(T(DType::f64, {S(3)}));
  j.invars = {a, b};
  j.eqns.push_back(eqn(Prim::add, {var(a), lit(1.0)}, {c}));
  j.eqns.push_back(eqn(Prim::add, {var(b), lit(1.0)}, {d}));
  j.eqns.push_back(eqn(Prim::dot_general, {var(c), var(d)}, {e}, detail::DotGeneralParams{{1}, {0}, {}, {}}));
  j.outvars = {var(e)};
  const char* golden = R"x({ lambda ; a:f64[3,4] b:f64[4]. let
    c:f64[3,4] = add a 1.0:f64[]
    d:f64[4] = add b 1.0:f64[]
    e:f64[3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] c d
  in (e,) })x";
  CHECK(str(j) == golden);

  // operator<< on ClosedJaxpr and Jaxpr, and to_string, agree.
  ClosedJaxpr cj{std::make_shared<const Jaxpr>(j), {}};
  std::ostringstream os1, os2;
  os1 << cj;
  os2 << j;
  CHECK(os1.str() == golden);
  CHECK(os2.str() == golden);
  CHECK(dyn::to_string(j) == golden);
}

TEST_CASE("print: constvars stand before ';' and are named first") {
  // Variable indices deliberately differ from the printed order: names follow
  // first appearance, not the table.
  Jaxpr j;
  int x = j.new_var(T(DType::f32, {S(16)}));   // invar
  int k1 = j.new_var(T(DType::f32, {S(16)}));  // constvar
  int k2 = j.new_var(T(DType::f32, {S(16)}));  // constvar
  int y = j.new_var(T(DType::f32, {S(16)}));
  int z = j.new_var(T(DType::f32, {S(16)}));
  j.constvars = {k1, k2};
  j.invars = {x};
  j.eqns.push_back(eqn(Prim::mul, {var(x), var(k1)}, {y}));
  j.eqns.push_back(eqn(Prim::add, {var(y), var(k2)}, {z}));
  j.outvars = {var(z)};
  // JAX: text("lambda ") + constvars + text("; ") — no space before ';'
  // (the JAX docs print `{ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let`).
  CHECK(str(j) == R"x({ lambda a:f32[16] b:f32[16]; c:f32[16]. let
    d:f32[16] = mul c a
    e:f32[16] = add d b
  in (e,) })x");
}

TEST_CASE("print: a jaxpr that fits in 80 columns prints on one line") {
  Jaxpr j;
  int a = j.new_var(T(DType::f64, {S(3)}));
  int b = j.new_var(T(DType::f64, {S(3)}));
  j.invars = {a};
  j.eqns.push_back(eqn(Prim::neg, {var(a)}, {b}));
  j.outvars = {var(b)};
  CHECK(str(j) == "{ lambda ; a:f64[3]. let b:f64[3] = neg a in (b,) }");

  // Equations are separated by "; " when flat. The group that must fit is
  // everything but the closing " }" (core.pp_jaxpr_skeleton appends it
  // outside the group), so a one-line jaxpr may be up to 82 columns.
  auto two_eqns = [](std::int64_t n, Prim second) {
    Jaxpr k;
    int x = k.new_var(T(DType::f64, {S(n)}));
    int y = k.new_var(T(DType::f64, {S(n)}));
    int z = k.new_var(T(DType::f64, {S(n)}));
    k.invars = {x};
    k.eqns.push_back(eqn(Prim::neg, {var(x)}, {y}));
    k.eqns.push_back(eqn(second, {var(y)}, {z}));
    k.outvars = {var(z)};
    return str(k);
  };
  std::string s80 = two_eqns(3000, Prim::log1p);
  CHECK(s80 == "{ lambda ; a:f64[3000]. let b:f64[3000] = neg a; c:f64[3000] = log1p b in (c,) }");
  CHECK(s80.size() == 80);
  std::string s82 = two_eqns(30000, Prim::tanh);
  CHECK(s82 == "{ lambda ; a:f64[30000]. let b:f64[30000] = neg a; c:f64[30000] = tanh b in (c,) }");
  CHECK(s82.size() == 82);
  // 83 columns: the group is 81 wide and breaks.
  CHECK(two_eqns(30000, Prim::log1p) == R"x({ lambda ; a:f64[30000]. let
    b:f64[30000] = neg a
    c:f64[30000] = log1p b
  in (c,) })x");
}

TEST_CASE("print: outvars tuples, no equations, no inputs") {
  Jaxpr j;
  int a = j.new_var(T(DType::f64));
  int b = j.new_var(T(DType::i32, {S(2)}));
  j.invars = {a, b};
  j.outvars = {var(b), var(a)};
  // Two spaces between `let` and `in`: brk() + (no equations) + brk().
  CHECK(str(j) == "{ lambda ; a:f64[] b:i32[2]. let  in (b, a) }");

  j.outvars = {};
  CHECK(str(j) == "{ lambda ; a:f64[] b:i32[2]. let  in () }");

  j.outvars = {lit(2.5)};  // a literal output
  CHECK(str(j) == "{ lambda ; a:f64[] b:i32[2]. let  in (2.5:f64[],) }");

  Jaxpr empty;
  CHECK(str(empty) == "{ lambda ; . let  in () }");
}

TEST_CASE("print: literals of every dtype") {
  Jaxpr j;
  int a = j.new_var(T(DType::i32));
  int b = j.new_var(T(DType::i64));
  int c = j.new_var(T(DType::f32));
  int d = j.new_var(T(DType::bool_));
  int e = j.new_var(T(DType::i32));
  int f = j.new_var(T(DType::i64));
  int g = j.new_var(T(DType::f32));
  int h = j.new_var(T(DType::bool_));
  j.invars = {a, b, c, d};
  j.eqns.push_back(eqn(Prim::add, {var(a), lit(std::int32_t{2})}, {e}));
  j.eqns.push_back(eqn(Prim::sub, {lit(std::int64_t{-3}), var(b)}, {f}));
  j.eqns.push_back(eqn(Prim::mul, {var(c), lit(1.5f)}, {g}));
  j.eqns.push_back(eqn(Prim::and_, {var(d), lit(true)}, {h}));
  j.outvars = {var(e), var(f), var(g), var(h)};
  CHECK(str(j) == R"x({ lambda ; a:i32[] b:i64[] c:f32[] d:bool[]. let
    e:i32[] = add a 2:i32[]
    f:i64[] = sub -3:i64[] b
    g:f32[] = mul c 1.5:f32[]
    h:bool[] = and d True:bool[]
  in (e, f, g, h) })x");
}

TEST_CASE("print: literal values as Python prints them") {
  using detail::format_scalar;
  CHECK(format_scalar(Scalar::of(true)) == "True");
  CHECK(format_scalar(Scalar::of(false)) == "False");
  CHECK(format_scalar(Scalar::of(std::int32_t{0})) == "0");
  CHECK(format_scalar(Scalar::of(std::int32_t{-2147483647 - 1})) == "-2147483648");
  CHECK(format_scalar(Scalar::of(std::int64_t{9007199254740993})) == "9007199254740993");

  // f64: Python's float repr (shortest round-trip; scientific when the
  // exponent is < -4 or >= 16).
  double inf = std::numeric_limits<double>::infinity();
  CHECK(format_scalar(Scalar::of(1.0)) == "1.0");
  CHECK(format_scalar(Scalar::of(0.1)) == "0.1");
  CHECK(format_scalar(Scalar::of(-2.5)) == "-2.5");
  CHECK(format_scalar(Scalar::of(100.0)) == "100.0");
  CHECK(format_scalar(Scalar::of(1e-7)) == "1e-07");
  CHECK(format_scalar(Scalar::of(1e-5)) == "1e-05");
  CHECK(format_scalar(Scalar::of(1e-4)) == "0.0001");
  CHECK(format_scalar(Scalar::of(1.5e-4)) == "0.00015");
  CHECK(format_scalar(Scalar::of(1e15)) == "1000000000000000.0");
  CHECK(format_scalar(Scalar::of(1e16)) == "1e+16");
  CHECK(format_scalar(Scalar::of(1.5e300)) == "1.5e+300");
  CHECK(format_scalar(Scalar::of(123456789012345678.0)) == "1.2345678901234568e+17");
  CHECK(format_scalar(Scalar::of(5e-324)) == "5e-324");
  CHECK(format_scalar(Scalar::of(1.7976931348623157e308)) == "1.7976931348623157e+308");
  CHECK(format_scalar(Scalar::of(0.0)) == "0.0");
  CHECK(format_scalar(Scalar::of(-0.0)) == "-0.0");
  CHECK(format_scalar(Scalar::of(inf)) == "inf");
  CHECK(format_scalar(Scalar::of(-inf)) == "-inf");
  CHECK(format_scalar(Scalar::of(std::nan(""))) == "nan");
  CHECK(format_scalar(Scalar::of(-std::nan(""))) == "nan");

  // f32: JAX prints str(np.asarray(val).item()), and .item() widens a
  // float32 to a Python float, so every digit of the float32 value shows
  // (a real JAX jaxpr: `add h 9.999999974752427e-07:f32[]` for 1e-6).
  CHECK(format_scalar(Scalar::of(1.0f)) == "1.0");
  CHECK(format_scalar(Scalar::of(1.5f)) == "1.5");
  CHECK(format_scalar(Scalar::of(0.1f)) == "0.10000000149011612");
  CHECK(format_scalar(Scalar::of(1e-6f)) == "9.999999974752427e-07");
  CHECK(format_scalar(Scalar::of(1e-7f)) == "1.0000000116860974e-07");
  CHECK(format_scalar(Scalar::of(1e16f)) == "1.0000000272564224e+16");
  CHECK(format_scalar(Scalar::of(-2.5e-5f)) == "-2.499999936844688e-05");
  CHECK(format_scalar(Scalar::of(std::numeric_limits<float>::max())) == "3.4028234663852886e+38");
  CHECK(format_scalar(Scalar::of(-0.0f)) == "-0.0");
  CHECK(format_scalar(Scalar::of(std::numeric_limits<float>::infinity())) == "inf");
  CHECK(format_scalar(Scalar::of(-std::numeric_limits<float>::infinity())) == "-inf");
  CHECK(format_scalar(Scalar::of(std::numeric_limits<float>::quiet_NaN())) == "nan");
  // An f32 literal whose double was not rounded to float yet prints as the
  // float it denotes.
  Scalar s;
  s.dtype = DType::f32;
  s.f = 0.1;
  CHECK(format_scalar(s) == "0.10000000149011612");
}

TEST_CASE("print: variable names a..z, ba, bb, ...") {
  using detail::encode_digits_alphabetic;
  CHECK(encode_digits_alphabetic(0) == "a");
  CHECK(encode_digits_alphabetic(25) == "z");
  CHECK(encode_digits_alphabetic(26) == "ba");
  CHECK(encode_digits_alphabetic(27) == "bb");
  CHECK(encode_digits_alphabetic(51) == "bz");
  CHECK(encode_digits_alphabetic(52) == "ca");
  CHECK(encode_digits_alphabetic(675) == "zz");
  CHECK(encode_digits_alphabetic(676) == "baa");

  // 28 inputs and one equation. The input list wraps as JAX's pp_vars does:
  // every separator is its own group(brk()), which stays a space while the
  // column is <= 79, so a line overflows by one variable before breaking
  // (line 1 is 82 columns, line 2 83), and continuation lines are indented 4
  // (the jaxpr's nest(2) plus pp_vars' nest(2)).
  Jaxpr j;
  for (int i = 0; i < 28; ++i) j.invars.push_back(j.new_var(T(DType::f32)));
  int out = j.new_var(T(DType::f32));
  j.eqns.push_back(eqn(Prim::add, {var(0), var(27)}, {out}));
  j.outvars = {var(out)};
  CHECK(str(j) == R"x({ lambda ; a:f32[] b:f32[] c:f32[] d:f32[] e:f32[] f:f32[] g:f32[] h:f32[] i:f32[]
    j:f32[] k:f32[] l:f32[] m:f32[] n:f32[] o:f32[] p:f32[] q:f32[] r:f32[] s:f32[]
    t:f32[] u:f32[] v:f32[] w:f32[] x:f32[] y:f32[] z:f32[] ba:f32[] bb:f32[]. let
    bc:f32[] = add a bb
  in (bc,) })x");
}

TEST_CASE("print: naming order is JAX's even for ill-scoped variables") {
  // Names are handed out while printing: a binder before the dimensions in
  // its type, an equation's outputs before its operands. A well-formed jaxpr
  // never shows this, but the printer must not depend on well-formedness.
  Jaxpr j;
  int n = j.new_var(T(DType::i64));
  int x = j.new_var(T(DType::f64, {V(n)}));
  int unbound = j.new_var(T(DType::f64));
  int y = j.new_var(T(DType::f64));
  j.invars = {x};
  j.eqns.push_back(eqn(Prim::neg, {var(unbound)}, {y}));
  j.outvars = {var(y)};
  CHECK(str(j) == "{ lambda ; a:f64[b]. let c:f64[] = neg d in (c,) }");
}

TEST_CASE("print: dimension variables print as their names") {
  // Catalyst-style dynamic shapes: { lambda ; a:i64[] b:f64[a] c:f64[a]. let
  Jaxpr j;
  int n = j.new_var(T(DType::i64));
  int x = j.new_var(T(DType::f64, {V(n)}));
  int y = j.new_var(T(DType::f64, {V(n)}));
  int m = j.new_var(T(DType::i64));
  int z = j.new_var(T(DType::f64, {V(m), S(2)}));
  j.invars = {n, x, y};
  int s = j.new_var(T(DType::f64, {V(n)}));
  j.eqns.push_back(eqn(Prim::add, {var(x), var(y)}, {s}));
  j.eqns.push_back(eqn(Prim::add, {var(n), lit(std::int64_t{1})}, {m}));
  j.eqns.push_back(eqn(Prim::broadcast_in_dim, {lit(1.0), var(m)}, {z},
                       detail::BroadcastInDimParams{{detail::kDynamicDim, 2}, {}}));
  j.outvars = {var(s), var(m), var(z)};
  CHECK(str(j) == R"x({ lambda ; a:i64[] b:f64[a] c:f64[a]. let
    d:f64[a] = add b c
    e:i64[] = add a 1:i64[]
    f:f64[e,2] = broadcast_in_dim[broadcast_dimensions=() shape=(None, 2)] 1.0:f64[]
      e
  in (d, e, f) })x");
}

TEST_CASE("print: every parameter spelling") {
  CHECK(params_str(detail::NoParams{}) == "");
  CHECK(params_str(detail::ConvertParams{DType::f64, false}) == "[new_dtype=float64 weak_type=False]");
  CHECK(params_str(detail::ConvertParams{DType::i32, true}) == "[new_dtype=int32 weak_type=True]");
  CHECK(params_str(detail::ConvertParams{DType::bool_, false}) == "[new_dtype=bool weak_type=False]");
  CHECK(params_str(detail::RoundParams{1}) == "[rounding_method=1]");
  CHECK(params_str(detail::RoundParams{0}) == "[rounding_method=0]");
  CHECK(params_str(detail::BroadcastInDimParams{{3, 4}, {0, 1}}) == "[broadcast_dimensions=(0, 1) shape=(3, 4)]");
  CHECK(params_str(detail::BroadcastInDimParams{{3}, {}}) == "[broadcast_dimensions=() shape=(3,)]");
  CHECK(params_str(detail::BroadcastInDimParams{{detail::kDynamicDim}, {}}) ==
        "[broadcast_dimensions=() shape=(None,)]");
  CHECK(params_str(detail::BroadcastInDimParams{{2, 3}, {1}}) == "[broadcast_dimensions=(1,) shape=(2, 3)]");
  CHECK(params_str(detail::ReshapeParams{{2, 6}}) == "[dimensions=None new_sizes=(2, 6)]");
  CHECK(params_str(detail::ReshapeParams{{detail::kDynamicDim, 6}}) == "[dimensions=None new_sizes=(None, 6)]");
  CHECK(params_str(detail::ReshapeParams{{}}) == "[dimensions=None new_sizes=()]");
  CHECK(params_str(detail::TransposeParams{{1, 0}}) == "[permutation=(1, 0)]");
  CHECK(params_str(detail::SqueezeParams{{0}}) == "[dimensions=(0,)]");
  CHECK(params_str(detail::ConcatenateParams{0}) == "[dimension=0]");
  CHECK(params_str(detail::SliceParams{{1}, {3}, {}}) == "[limit_indices=(3,) start_indices=(1,) strides=None]");
  CHECK(params_str(detail::SliceParams{{1}, {3}, {2}}) == "[limit_indices=(3,) start_indices=(1,) strides=(2,)]");
  CHECK(params_str(detail::DynamicSliceParams{{2}}) == "[slice_sizes=(2,)]");
  CHECK(params_str(detail::IotaParams{DType::i32, {5}, 0}) == "[dimension=0 dtype=int32 shape=(5,)]");
  CHECK(params_str(detail::IotaParams{DType::f64, {2, 3}, 1}) == "[dimension=1 dtype=float64 shape=(2, 3)]");
  CHECK(params_str(detail::ReduceParams{{0}}) == "[axes=(0,)]");
  CHECK(params_str(detail::ReduceParams{{0, 1}}) == "[axes=(0, 1)]");
  CHECK(params_str(detail::DotGeneralParams{{1}, {0}, {}, {}}) == "[dimension_numbers=(([1], [0]), ([], []))]");
  CHECK(params_str(detail::DotGeneralParams{{2}, {1}, {0}, {0}}) == "[dimension_numbers=(([2], [1]), ([0], [0]))]");
  CHECK(params_str(detail::DotGeneralParams{{0, 1}, {1, 0}, {}, {}}) ==
        "[dimension_numbers=(([0, 1], [1, 0]), ([], []))]");
}

TEST_CASE("print: parameters inside equations") {
  Jaxpr j;
  int a = j.new_var(T(DType::f32, {S(2), S(3)}));
  int i = j.new_var(T(DType::i64));
  j.invars = {a, i};
  auto out = [&](Type ty) { return j.new_var(std::move(ty)); };
  int b = out(T(DType::f64, {S(2), S(3)}));
  int c = out(T(DType::f64, {S(2), S(3)}));
  int d = out(T(DType::f32, {S(3), S(2)}));
  int e = out(T(DType::f32, {S(6)}));
  int f = out(T(DType::i32, {S(5)}));
  int g = out(T(DType::f32, {S(3)}));
  int h = out(T(DType::f32, {S(1), S(3)}));
  int k = out(T(DType::f32, {S(3)}));
  int l = out(T(DType::f32, {S(4), S(3)}));
  int m = out(T(DType::f32, {S(2), S(1)}));
  int n = out(T(DType::f32, {S(1), S(3)}));
  int o = out(T(DType::f32, {S(2), S(2)}));
  j.eqns.push_back(eqn(Prim::convert_element_type, {var(a)}, {b}, detail::ConvertParams{DType::f64, false}));
  j.eqns.push_back(eqn(Prim::round, {var(b)}, {c}, detail::RoundParams{1}));
  j.eqns.push_back(eqn(Prim::transpose, {var(a)}, {d}, detail::TransposeParams{{1, 0}}));
  j.eqns.push_back(eqn(Prim::reshape, {var(a)}, {e}, detail::ReshapeParams{{6}}));
  j.eqns.push_back(eqn(Prim::iota, {}, {f}, detail::IotaParams{DType::i32, {5}, 0}));
  j.eqns.push_back(eqn(Prim::reduce_sum, {var(a)}, {g}, detail::ReduceParams{{0}}));
  j.eqns.push_back(eqn(Prim::broadcast_in_dim, {var(g)}, {h}, detail::BroadcastInDimParams{{1, 3}, {1}}));
  j.eqns.push_back(eqn(Prim::squeeze, {var(h)}, {k}, detail::SqueezeParams{{0}}));
  j.eqns.push_back(eqn(Prim::concatenate, {var(a), var(a)}, {l}, detail::ConcatenateParams{0}));
  j.eqns.push_back(eqn(Prim::slice, {var(a)}, {m}, detail::SliceParams{{0, 1}, {2, 2}, {}}));
  j.eqns.push_back(eqn(Prim::dynamic_slice, {var(a), var(i), lit(std::int64_t{0})}, {n},
                       detail::DynamicSliceParams{{1, 3}}));
  j.eqns.push_back(eqn(Prim::slice, {var(a)}, {o}, detail::SliceParams{{0, 0}, {2, 3}, {1, 2}}));
  j.outvars = {var(c), var(d), var(e), var(f), var(k), var(l), var(m), var(n), var(o)};
  // The iota line ends in a space: JAX prints text(" ") + (no operands).
  CHECK(str(j) == R"x({ lambda ; a:f32[2,3] b:i64[]. let
    c:f64[2,3] = convert_element_type[new_dtype=float64 weak_type=False] a
    d:f64[2,3] = round[rounding_method=1] c
    e:f32[3,2] = transpose[permutation=(1, 0)] a
    f:f32[6] = reshape[dimensions=None new_sizes=(6,)] a
    g:i32[5] = iota[dimension=0 dtype=int32 shape=(5,)] 
    h:f32[3] = reduce_sum[axes=(0,)] a
    i:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] h
    j:f32[3] = squeeze[dimensions=(0,)] i
    k:f32[4,3] = concatenate[dimension=0] a a
    l:f32[2,1] = slice[limit_indices=(2, 2) start_indices=(0, 1) strides=None] a
    m:f32[1,3] = dynamic_slice[slice_sizes=(1, 3)] a b 0:i64[]
    n:f32[2,2] = slice[limit_indices=(2, 3) start_indices=(0, 0) strides=(1, 2)] a
  in (d, e, f, g, j, k, l, m, n) })x");
}

TEST_CASE("print: long equations wrap as JAX's do") {
  SUBCASE("an operand wraps when the line is full (the Catalyst dynamic-arrays doc's broadcast_in_dim)") {
    // col 4 + "b:f64[a] = broadcast_in_dim" (27) = 31; "[...]" (39) fits
    // -> 70; " " -> 71; "1.0:f64[] a" (11) does not fit, so the operand
    // group breaks: "1.0:f64[]" ends at column 80 and the separator group
    // (1 column) no longer fits; `a` goes on a new line at 4 + 2.
    Jaxpr j;
    int a = j.new_var(T(DType::i64));
    int b = j.new_var(T(DType::f64, {V(a)}));
    j.invars = {a};
    j.eqns.push_back(
        eqn(Prim::broadcast_in_dim, {lit(1.0), var(a)}, {b}, detail::BroadcastInDimParams{{detail::kDynamicDim}, {}}));
    j.outvars = {var(b)};
    CHECK(str(j) == R"x({ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0:f64[]
      a
  in (b,) })x");
  }

  SUBCASE("dot_general's params break one per line when they do not fit") {
    // col 4 + "c:f64[128,256,1024] = dot_general" (33) = 37; the params
    // group "[dimension_numbers=(([2], [1]), ([0], [0]))]" is 44 wide:
    // 81 > 80, so it breaks: params at 4 + 2, "]" back at 4.
    Jaxpr j;
    int a = j.new_var(T(DType::f64, {S(128), S(256), S(512)}));
    int b = j.new_var(T(DType::f64, {S(128), S(512), S(1024)}));
    int c = j.new_var(T(DType::f64, {S(128), S(256), S(1024)}));
    j.invars = {a, b};
    j.eqns.push_back(eqn(Prim::dot_general, {var(a), var(b)}, {c}, detail::DotGeneralParams{{2}, {1}, {0}, {0}}));
    j.outvars = {var(c)};
    CHECK(str(j) == R"x({ lambda ; a:f64[128,256,512] b:f64[128,512,1024]. let
    c:f64[128,256,1024] = dot_general[
      dimension_numbers=(([2], [1]), ([0], [0]))
    ] a b
  in (c,) })x");
  }

  SUBCASE("slice with three params, as in a real JAX jaxpr") {
    // Same lines as JAX prints for x[..., :64] of an f32[2,32,4,128].
    Jaxpr j;
    int a = j.new_var(T(DType::f32, {S(2), S(32), S(4), S(128)}));
    int b = j.new_var(T(DType::f32, {S(2), S(32), S(4), S(64)}));
    j.invars = {a};
    j.eqns.push_back(eqn(Prim::slice, {var(a)}, {b}, detail::SliceParams{{0, 0, 0, 0}, {2, 32, 4, 64}, {}}));
    j.outvars = {var(b)};
    CHECK(str(j) == R"x({ lambda ; a:f32[2,32,4,128]. let
    b:f32[2,32,4,64] = slice[
      limit_indices=(2, 32, 4, 64)
      start_indices=(0, 0, 0, 0)
      strides=None
    ] a
  in (b,) })x");
  }

  SUBCASE("broken params followed by operands that wrap") {
    Jaxpr j;
    std::vector<Atom> ins;
    for (int i = 0; i < 21; ++i) {
      j.invars.push_back(j.new_var(T(DType::f64, {S(1)})));
      ins.push_back(var(j.invars.back()));
    }
    int out = j.new_var(T(DType::f64, {S(21)}));
    j.eqns.push_back(eqn(Prim::concatenate, ins, {out}, detail::ConcatenateParams{0}));
    j.outvars = {var(out)};
    // Inputs: "{ lambda ; " (11) + "a:f64[1]" (8), then 9 per variable: the
    // separator after the 7th (col 73) still fits, the 8th ends at col 82,
    // the next separator breaks; continuation lines start at col 4.
    // Equation: "    v:f64[21] = concatenate[dimension=0] " is 41 columns;
    // operands "a b ... u" are 41 wide: 82 > 80, so they fill: after the
    // 19th (col 78) the separator fits and `t` ends at col 80; the next
    // separator breaks and `u` goes to col 4 + 2.
    CHECK(str(j) == R"x({ lambda ; a:f64[1] b:f64[1] c:f64[1] d:f64[1] e:f64[1] f:f64[1] g:f64[1] h:f64[1]
    i:f64[1] j:f64[1] k:f64[1] l:f64[1] m:f64[1] n:f64[1] o:f64[1] p:f64[1] q:f64[1]
    r:f64[1] s:f64[1] t:f64[1] u:f64[1]. let
    v:f64[21] = concatenate[dimension=0] a b c d e f g h i j k l m n o p q r s t
      u
  in (v,) })x");
  }

  SUBCASE("a long output tuple wraps after a comma; an empty body leaves an indented blank line") {
    Jaxpr j;
    for (int i = 0; i < 30; ++i) {
      j.invars.push_back(j.new_var(T(DType::f32)));
      j.outvars.push_back(var(j.invars.back()));
    }
    // Outputs: "  in (" is 6 columns; the tuple is 92 wide, so it fills.
    // Each item is followed by "," and a separator group: after "y," the
    // column is 80 and the separator breaks, continuing at 2 + 2.
    // With no equations, brk() inside nest(2) gives a line of 4 spaces.
    CHECK(str(j) ==
          "{ lambda ; a:f32[] b:f32[] c:f32[] d:f32[] e:f32[] f:f32[] g:f32[] h:f32[] i:f32[]\n"
          "    j:f32[] k:f32[] l:f32[] m:f32[] n:f32[] o:f32[] p:f32[] q:f32[] r:f32[] s:f32[]\n"
          "    t:f32[] u:f32[] v:f32[] w:f32[] x:f32[] y:f32[] z:f32[] ba:f32[] bb:f32[] bc:f32[]\n"
          "    bd:f32[]. let\n"
          "    \n"
          "  in (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y,\n"
          "    z, ba, bb, bc, bd) }");
  }

  SUBCASE("a narrower width") {
    Jaxpr j;
    int a = j.new_var(T(DType::f64, {S(3)}));
    int b = j.new_var(T(DType::f64, {S(3)}));
    j.invars = {a};
    j.eqns.push_back(eqn(Prim::neg, {var(a)}, {b}));
    j.outvars = {var(b)};
    CHECK(detail::format_jaxpr(j, 30) == R"x({ lambda ; a:f64[3]. let
    b:f64[3] = neg a
  in (b,) })x");
  }
}

// ---------------------------------------------------------------------------
// The layout functions against texts printed by JAX and Catalyst, including
// equations our IR cannot express yet (nested jaxprs, JAX-only params).

TEST_CASE("layout: JAX's tracing doc's dot_general with two params") {
  pp::Doc d = pp::jaxpr(
      vs({}), vs({"a:f32[3,4]", "b:f32[4]"}),
      {pp::eqn(vs({"c:f32[3,4]"}), true, "add", pp::nil(), vs({"a", "1.0:f32[]"})),
       pp::eqn(vs({"d:f32[4]"}), true, "add", pp::nil(), vs({"b", "1.0:f32[]"})),
       pp::eqn(vs({"e:f32[3]"}), true, "dot_general",
               pp::kv_pairs({{"dimension_numbers", t("(([1], [0]), ([], []))")},
                             {"preferred_element_type", t("float32")}}),
               vs({"c", "d"}))},
      outs({"e"}), 1);
  CHECK(pp::format(d) == R"x({ lambda ; a:f32[3,4] b:f32[4]. let
    c:f32[3,4] = add a 1.0:f32[]
    d:f32[4] = add b 1.0:f32[]
    e:f32[3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] c d
  in (e,) })x");
}

TEST_CASE("layout: the Catalyst dynamic-arrays doc, for_loop with a nested jaxpr and a wrapped operand") {
  // Catalyst printed literals without types then; the layout is the point.
  pp::Doc body = pp::jaxpr(
      vs({}), vs({"f:i64[]", "g:i64[]", "h:f64[f]"}),
      {pp::eqn(vs({"i:i64[]"}), true, "add", pp::nil(), vs({"f", "1"})),
       pp::eqn(vs({"j:f64[i]"}), true, "broadcast_in_dim",
               pp::kv_pairs({{"broadcast_dimensions", t("()")}, {"shape", t("(None,)")}}), vs({"1.0", "i"}))},
      outs({"i", "j"}), 2);
  pp::Doc top = pp::jaxpr(
      vs({}), vs({"a:i64[]", "b:f64[a]", "c:f64[a]"}),
      {pp::eqn(vs({"d:i64[]", "e:f64[d]"}), true, "for_loop",
               pp::kv_pairs({{"apply_reverse_transform", t("False")},
                             {"body_jaxpr", body},
                             {"body_nconsts", t("0")},
                             {"nimplicit", t("1")},
                             {"preserve_dimensions", t("False")}}),
               vs({"a", "0", "10", "1", "0", "c"})),
       pp::eqn(vs({"k:f64[]"}), true, "reduce_sum", pp::kv_pairs({{"axes", t("(0,)")}}), vs({"e"}))},
      outs({"k"}), 1);
  CHECK(pp::format(top) == R"x({ lambda ; a:i64[] b:f64[a] c:f64[a]. let
    d:i64[] e:f64[d] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; f:i64[] g:i64[] h:f64[f]. let
          i:i64[] = add f 1
          j:f64[i] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0
            i
        in (i, j) }
      body_nconsts=0
      nimplicit=1
      preserve_dimensions=False
    ] a 0 10 1 0 c
    k:f64[] = reduce_sum[axes=(0,)] e
  in (k,) })x");
}

TEST_CASE("layout: the Catalyst dynamic-arrays doc, the first for_loop example") {
  pp::Doc body = pp::jaxpr(vs({}), vs({"d:i64[]", "e:f64[d]", "f:i64[]", "g:f64[d]"}),
                           {pp::eqn(vs({"h:f64[d]"}), true, "add", pp::nil(), vs({"g", "e"}))}, outs({"h"}), 1);
  pp::Doc top = pp::jaxpr(
      vs({}), vs({"a:i64[]"}),
      {pp::eqn(vs({"b:f64[a]"}), true, "broadcast_in_dim",
               pp::kv_pairs({{"broadcast_dimensions", t("()")}, {"shape", t("(None,)")}}), vs({"1.0", "a"})),
       pp::eqn(vs({"c:f64[a]"}), true, "for_loop",
               pp::kv_pairs({{"apply_reverse_transform", t("False")},
                             {"body_jaxpr", body},
                             {"body_nconsts", t("2")},
                             {"nimplicit", t("0")},
                             {"preserve_dimensions", t("True")}}),
               vs({"a", "b", "0", "10", "1", "0", "b"})),
       pp::eqn(vs({"i:f64[a]"}), true, "add", pp::nil(), vs({"b", "c"}))},
      outs({"i"}), 1);
  CHECK(pp::format(top) == R"x({ lambda ; a:i64[]. let
    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 a
    c:f64[a] = for_loop[
      apply_reverse_transform=False
      body_jaxpr={ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]. let
          h:f64[d] = add g e
        in (h,) }
      body_nconsts=2
      nimplicit=0
      preserve_dimensions=True
    ] a b 0 10 1 0 b
    i:f64[a] = add b c
  in (i,) })x");
}

TEST_CASE("layout: JAX docs, cond with a tuple of flat nested jaxprs") {
  auto branch = [](const char* x, const char* y, const char* prim, const char* c) {
    return pp::jaxpr(vs({}), vs({std::string(x) + ":f32[]"}),
                     {pp::eqn(vs({std::string(y) + ":f32[]"}), true, prim, pp::nil(), vs({x, c}))}, outs({y}), 1);
  };
  pp::Doc top = pp::jaxpr(
      vs({}), vs({"a:i32[]", "b:f32[]"}),
      {pp::eqn(vs({"c:i32[]"}), true, "convert_element_type",
               pp::kv_pairs({{"new_dtype", t("int32")}, {"weak_type", t("False")}}), vs({"a"})),
       pp::eqn(vs({"d:i32[]"}), true, "clamp", pp::nil(), vs({"0:i32[]", "c", "2:i32[]"})),
       pp::eqn(vs({"e:f32[]"}), true, "cond",
               pp::kv_pairs({{"branches", pp::jaxprs({branch("f", "g", "add", "1.0:f32[]"),
                                                      branch("h", "i", "sub", "2.0:f32[]"),
                                                      branch("j", "k", "add", "3.0:f32[]")})}}),
               vs({"d", "b"}))},
      outs({"e"}), 1);
  CHECK(pp::format(top) == R"x({ lambda ; a:i32[] b:f32[]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:i32[] = clamp 0:i32[] c 2:i32[]
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = add f 1.0:f32[] in (g,) }
        { lambda ; h:f32[]. let i:f32[] = sub h 2.0:f32[] in (i,) }
        { lambda ; j:f32[]. let k:f32[] = add j 3.0:f32[] in (k,) }
      )
    ] d b
  in (e,) })x");
}

TEST_CASE("layout: JAX docs, constvars and an empty nested jaxpr") {
  pp::Doc b1 = pp::jaxpr(
      vs({}), vs({"h:i32[1]", "i:f32[1]", "j:f32[]"}),
      {pp::eqn(vs({"k:f32[1]"}), true, "convert_element_type",
               pp::kv_pairs({{"new_dtype", t("float32")}, {"weak_type", t("True")}}), vs({"h"})),
       pp::eqn(vs({"l:f32[1]"}), true, "add", pp::nil(), vs({"k", "j"}))},
      outs({"l"}), 1);
  pp::Doc b2 = pp::jaxpr(vs({}), vs({"m:i32[1]", "n:f32[1]", "o:f32[]"}), {}, outs({"n"}), 1);
  pp::Doc top = pp::jaxpr(
      vs({"a:i32[1]"}), vs({"b:f32[]", "c:f32[1]", "d:f32[]"}),
      {pp::eqn(vs({"e:bool[]"}), true, "ge", pp::nil(), vs({"b", "0.0:f32[]"})),
       pp::eqn(vs({"f:i32[]"}), true, "convert_element_type",
               pp::kv_pairs({{"new_dtype", t("int32")}, {"weak_type", t("False")}}), vs({"e"})),
       pp::eqn(vs({"g:f32[1]"}), true, "cond", pp::kv_pairs({{"branches", pp::jaxprs({b1, b2})}}),
               vs({"f", "a", "c", "d"}))},
      outs({"g"}), 1);
  CHECK(pp::format(top) == R"x({ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let
    e:bool[] = ge b 0.0:f32[]
    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e
    g:f32[1] = cond[
      branches=(
        { lambda ; h:i32[1] i:f32[1] j:f32[]. let
            k:f32[1] = convert_element_type[new_dtype=float32 weak_type=True] h
            l:f32[1] = add k j
          in (l,) }
        { lambda ; m:i32[1] n:f32[1] o:f32[]. let  in (n,) }
      )
    ] f a c d
  in (g,) })x");
}

TEST_CASE("layout: JAX docs, while with two nested jaxprs and dropped outputs") {
  pp::Doc body = pp::jaxpr(vs({}), vs({"f:f32[16]", "g:f32[16]", "h:i32[]", "i:i32[]", "j:f32[16]"}),
                           {pp::eqn(vs({"k:i32[]"}), true, "add", pp::nil(), vs({"h", "1:i32[]"})),
                            pp::eqn(vs({"l:f32[16]"}), true, "mul", pp::nil(), vs({"f", "3.0:f32[]"})),
                            pp::eqn(vs({"m:f32[16]"}), true, "add", pp::nil(), vs({"j", "l"})),
                            pp::eqn(vs({"n:f32[16]"}), true, "add", pp::nil(), vs({"m", "g"}))},
                           outs({"k", "i", "n"}), 3);
  pp::Doc cond = pp::jaxpr(vs({}), vs({"o:i32[]", "p:i32[]", "q:f32[16]"}),
                           {pp::eqn(vs({"r:bool[]"}), true, "lt", pp::nil(), vs({"o", "p"}))}, outs({"r"}), 1);
  pp::Doc top = pp::jaxpr(
      vs({}), vs({"a:f32[16]", "b:i32[]"}),
      {pp::eqn(vs({"c:f32[16]"}), true, "broadcast_in_dim", pp::nil(), vs({"1.0:f32[]"})),
       pp::eqn(vs({"d:f32[16]"}), true, "add", pp::nil(), vs({"a", "c"})),
       pp::eqn(vs({"_:i32[]", "_:i32[]", "e:f32[16]"}), true, "while",
               pp::kv_pairs({{"body_jaxpr", body},
                             {"body_nconsts", t("2")},
                             {"cond_jaxpr", cond},
                             {"cond_nconsts", t("0")}}),
               vs({"c", "a", "0:i32[]", "b", "d"}))},
      outs({"e"}), 1);
  CHECK(pp::format(top) == R"x({ lambda ; a:f32[16] b:i32[]. let
    c:f32[16] = broadcast_in_dim 1.0:f32[]
    d:f32[16] = add a c
    _:i32[] _:i32[] e:f32[16] = while[
      body_jaxpr={ lambda ; f:f32[16] g:f32[16] h:i32[] i:i32[] j:f32[16]. let
          k:i32[] = add h 1:i32[]
          l:f32[16] = mul f 3.0:f32[]
          m:f32[16] = add j l
          n:f32[16] = add m g
        in (k, i, n) }
      body_nconsts=2
      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let
          r:bool[] = lt o p
        in (r,) }
      cond_nconsts=0
    ] c a 0:i32[] b d
  in (e,) })x");
}

TEST_CASE("layout: a JAX unit test, a flat nested jaxpr inside broken params") {
  // tests/custom_api_test.py: the call_jaxpr fits on its line and stays flat
  // although its enclosing params are broken.
  pp::Doc call = pp::jaxpr(vs({}), vs({"c:f32[1]"}),
                           {pp::eqn(vs({"d:f32[1]"}), true, "add", pp::nil(), vs({"c", "1.0:f32[]"}))}, outs({"d"}),
                           1);
  pp::Doc top = pp::jaxpr(vs({}), vs({"a:f32[1]"}),
                          {pp::eqn(vs({"b:f32[1]"}), true, "custom_jvp_call",
                                   pp::kv_pairs({{"name", t("f")},
                                                 {"call_jaxpr", call},
                                                 {"jvp", t("f_jvp")},
                                                 {"symbolic_zeros", t("False")}}),
                                   vs({"a"}))},
                          outs({"b"}), 1);
  CHECK(pp::format(top) == R"x({ lambda ; a:f32[1]. let
    b:f32[1] = custom_jvp_call[
      name=f
      call_jaxpr={ lambda ; c:f32[1]. let d:f32[1] = add c 1.0:f32[] in (d,) }
      jvp=f_jvp
      symbolic_zeros=False
    ] a
  in (b,) })x");
}

TEST_CASE("layout: the document printer") {
  using pp::brk;
  using pp::concat;
  using pp::format;
  using pp::group;
  using pp::nest;
  // A group is flat iff it fits in what is left of the line; text after the
  // group is not considered.
  pp::Doc g = group(concat({t("aaaa"), brk(), t("bbbb")}));
  CHECK(format(concat({t("xx"), g, t("zzzzzzzz")}), 11) == "xxaaaa bbbbzzzzzzzz");
  CHECK(format(concat({t("xxx"), g, t("z")}), 11) == "xxxaaaa\nbbbbz");
  // Breaks outside any group are newlines (the root is in break mode).
  CHECK(format(concat({t("a"), brk(), t("b")})) == "a\nb");
  // Nesting indents the lines a break starts.
  CHECK(format(nest(3, concat({t("a"), brk(), t("b")}))) == "a\n   b");
  // A break's text is only used when flat.
  CHECK(format(group(concat({t("a"), brk("; "), t("b")}))) == "a; b");
  CHECK(format(pp::nil()) == "");
  CHECK(format(pp::join(t(","), {t("a"), t("b"), t("c")})) == "a,b,c");
}

TEST_CASE("print: to_string of a ClosedJaxpr ignores the constants' values") {
  Jaxpr j;
  int k = j.new_var(T(DType::f64, {S(2)}));
  int x = j.new_var(T(DType::f64, {S(2)}));
  int y = j.new_var(T(DType::f64, {S(2)}));
  j.constvars = {k};
  j.invars = {x};
  j.eqns.push_back(eqn(Prim::add, {var(x), var(k)}, {y}));
  j.outvars = {var(y)};
  ClosedJaxpr cj{std::make_shared<const Jaxpr>(j), {dyn::AnyArray(dyn::Array<double>({2}, {1.0, 2.0}))}};
  CHECK(dyn::to_string(cj) == "{ lambda a:f64[2]; b:f64[2]. let c:f64[2] = add b a in (c,) }");
}
