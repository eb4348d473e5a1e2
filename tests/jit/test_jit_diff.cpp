// Differential tests of dyn::jit (issue 3), one-operand elementwise
// operations, where and astype, for every dtype, on operands of many shapes
// (rank 0, size 0, size 1, broadcasting): compiled (dyn::jit) vs interpreted
// (dyn::eval_jaxpr of dyn::make_jaxpr) vs eager (dyn::eager), see
// jit_diff.hpp:
//   - eager and the interpreter exactly (they share the eager kernels);
//   - the kernel and the interpreter exactly (bits, signed zeros included;
//     any NaN matches any NaN) for integers, bools and exactly rounded float
//     operations, and within docs/backend.md's bound (kUlps) for libm/libmvec
//     functions;
//   - an operation a dtype does not accept throws the same dyn:: error type
//     in all three, and the table of accepted (op, dtype) pairs is checked.
// The other differential tests: test_jit_diff_binary.cpp (binary operations,
// comparisons, promotion), test_jit_diff_shape.cpp (creation and shape
// operations), test_jit_diff_reduce.cpp (reductions, dot), and
// test_jit_diff_misc.cpp (constants, pytrees, views, faults). They are
// separate translation units so that they build in parallel and none
// dominates the build (80-130 s each with g++ 12 -O2 -g, two jobs on two
// cores).
#include "jit_diff.hpp"

namespace {

using namespace jit_diff;

// ===========================================================================
// Operation families. Each apply_* is a template over the operand types only;
// the op code is a run-time value.

// --- Unary, result of the operand's dtype.
enum : int { kNeg, kNegOp, kAbs, kSign, kFloor, kCeil, kRound, kNot, kNumUnary };
const char* const kUnaryNames[] = {"neg", "-x", "abs", "sign", "floor", "ceil", "round", "!x"};

template <class X>
X apply_unary(int op, const X& x) {
  switch (op) {
    case kNeg: return dyn::neg(x);
    case kNegOp: return -x;
    case kAbs: return dyn::abs(x);
    case kSign: return dyn::sign(x);
    case kFloor: return dyn::floor(x);
    case kCeil: return dyn::ceil(x);
    case kRound: return dyn::round(x);
    case kNot: return !x;
  }
  throw std::logic_error("bad unary op");
}

const auto unary_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& x) { return apply_unary(op, x); });
};

// --- Unary, computed in a float type (f32 for integers and bools).
enum : int { kExp, kLog, kLog1p, kSqrt, kRsqrt, kSin, kCos, kTan, kTanh, kLogistic, kNumFloatUnary };
const char* const kFloatUnaryNames[] = {"exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "logistic"};
// Exactly rounded: identical bits; the others within kUlps.
bool float_unary_exact(int op) { return op == kSqrt || op == kRsqrt; }

template <class X>
auto apply_float_unary(int op, const X& x) {
  switch (op) {
    case kExp: return dyn::exp(x);
    case kLog: return dyn::log(x);
    case kLog1p: return dyn::log1p(x);
    case kSqrt: return dyn::sqrt(x);
    case kRsqrt: return dyn::rsqrt(x);
    case kSin: return dyn::sin(x);
    case kCos: return dyn::cos(x);
    case kTan: return dyn::tan(x);
    case kTanh: return dyn::tanh(x);
    case kLogistic: return dyn::logistic(x);
  }
  throw std::logic_error("bad float unary op");
}

const auto float_unary_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& x) { return apply_float_unary(op, x); });
};

// ===========================================================================
// Elementwise families, every dtype.

// Accepted (op, dtype) pairs: negation, abs and sign need numbers; ! needs a
// bool or an integer; floor, ceil and round are the identity on integers and
// bools.
bool unary_accepts(int op, DType d) {
  switch (op) {
    case kNeg: case kNegOp: case kAbs: case kSign: return d != DType::bool_;
    case kFloor: case kCeil: case kRound: return true;
    case kNot: return d == DType::bool_ || d == DType::i32 || d == DType::i64;
  }
  return false;
}

// The message of a rejected (op, dtype) pair.
std::string unary_rejection(int op, DType d) {
  switch (op) {
    case kNeg: case kNegOp: return dtype_rejection("neg", d, kNumber);
    case kAbs: return dtype_rejection("abs", d, kNumber);
    case kSign: return dtype_rejection("sign", d, kNumeric);
    case kNot: return dtype_rejection("not", d, kIntegerOrBool);
  }
  return "";
}

template <class T>
void check_unary_family() {
  const auto xs = gens<T>(kShapes, 1);
  for (int op = 0; op < kNumUnary; ++op) {
    const std::string what = std::string(kUnaryNames[op]) + " on " + dt_name(dyn::dtype_v<T>);
    const Three r = run3(unary_fn, op, only<Singles>(xs));
    agree(r, what);
    expect_accepted(r, unary_accepts(op, dyn::dtype_v<T>), what, unary_rejection(op, dyn::dtype_v<T>));
  }
  // Float-only functions accept every dtype.
  for (int op = 0; op < kNumFloatUnary; ++op) {
    const std::string what = std::string(kFloatUnaryNames[op]) + " on " + dt_name(dyn::dtype_v<T>);
    const Three r = run3(float_unary_fn, op, only<Singles>(xs));
    agree(r, what, {Tol{float_unary_exact(op) ? 0 : kUlps}});
    expect_accepted(r, true, what);
  }
}

TEST_CASE_TEMPLATE("jit diff: unary operations, every dtype and shape", T, bool, i32, i64, float, double) {
  check_unary_family<T>();
}

// ===========================================================================
// where (select_n).

enum : int { kWhere, kWhereCmp, kWhereLitFalse, kWhereLitTrue, kNumWhere };
const char* const kWhereNames[] = {"where(p,a,b)", "where(a<b,b,a)", "where(p,a,0)", "where(p,2,b)"};

template <class P, class A, class B>
auto apply_where(int op, const P& p, const A& a, const B& b) {
  using R = decltype(dyn::where(p, a, b));
  switch (op) {
    case kWhere: return R(dyn::where(p, a, b));
    case kWhereCmp: return R(dyn::where(a < b, b, a));
    default: break;
  }
  if constexpr (std::is_same_v<decltype(dyn::where(p, a, 0)), R> && std::is_same_v<decltype(dyn::where(p, 2, b)), R>) {
    if (op == kWhereLitFalse) return R(dyn::where(p, a, 0));
    if (op == kWhereLitTrue) return R(dyn::where(p, 2, b));
  }
  throw std::logic_error("bad where op");
}

const auto where_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& t) { return apply_where(op, std::get<0>(t), std::get<1>(t), std::get<2>(t)); });
};

template <class T>
void check_where() {
  // (pred, a, b) shapes: equal, rank 0 anywhere, (3,1) x (1,4) x (4,), empty.
  const std::vector<std::array<Shp, 3>> shapes = {{Shp{7}, Shp{7}, Shp{7}},         {Shp{}, Shp{5}, Shp{5}},
                                                  {Shp{5}, Shp{}, Shp{5}},          {Shp{5}, Shp{5}, Shp{}},
                                                  {Shp{}, Shp{}, Shp{}},            {Shp{3, 1}, Shp{1, 4}, Shp{4}},
                                                  {Shp{0, 2}, Shp{2}, Shp{0, 1}},   {Shp{67}, Shp{67}, Shp{67}},
                                                  {Shp{2, 1, 3}, Shp{1, 4, 1}, Shp{}}};
  Triples<T> triples;
  std::uint64_t seed = 80;
  for (const auto& s : shapes) {
    triples.emplace_back(gen<bool>(s[0], seed), gen<T>(s[1], seed + 1), gen<T>(s[2], seed + 2));
    seed += 3;
  }
  for (int op = 0; op < kNumWhere; ++op) {
    if (op >= kWhereLitFalse && is_bool_v<T>) continue;  // an int literal case promotes bool to i32
    const std::string what = std::string(kWhereNames[op]) + " on " + dt_name(dyn::dtype_v<T>);
    const Three r = run3(where_fn, op, only<AllTriples>(triples));
    agree(r, what);
    expect_accepted(r, true, what);
  }
}

TEST_CASE_TEMPLATE("jit diff: where, broadcasting pred and cases", T, bool, i32, i64, float, double) {
  check_where<T>();
}

// ===========================================================================
// astype between every pair of dtypes: one kernel per source dtype returns
// all five conversions.

const auto astype_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& x) {
    return std::make_tuple(dyn::astype<bool>(x), dyn::astype<i32>(x), dyn::astype<i64>(x), dyn::astype<float>(x),
                           dyn::astype<double>(x));
  });
};

template <class T>
void check_astype() {
  auto xs = gens<T>(kShapes, 90);
  // Values beyond the i32 and f32 ranges, halves, and fractions near zero.
  if constexpr (std::is_floating_point_v<T>) {
    const std::vector<double> edge = {3e9, -3e9, 2.5, -2.5, 0.49, -0.51, 1e20, -1e20, 2147483647.0, -2147483648.0,
                                      2147483648.0, -2147483904.0, 9.3e18, -9.3e18, 16777217.0, 0.1, 1e-45, -1e-310};
    std::vector<T> v;
    for (double e : edge) v.push_back(static_cast<T>(e));
    xs.push_back(dyn::Array<T>({static_cast<i64>(v.size())}, v));
  } else if constexpr (std::is_integral_v<T> && !is_bool_v<T>) {
    using L = std::numeric_limits<T>;
    xs.push_back(dyn::Array<T>({10}, {L::max(), L::min(), T(L::max() - 1), T(L::min() + 1), T(0), T(1), T(-1),
                                      T(16777217), T(-16777217), T(sizeof(T) == 8 ? (i64{1} << 53) + 1 : 2147483647)}));
  }
  const std::string what = "astype from " + dt_name(dyn::dtype_v<T>) + " to every dtype";
  const Three r = run3(astype_fn, 0, only<Singles>(xs));
  agree(r, what);
  expect_ok(r, what);
}

TEST_CASE_TEMPLATE("jit diff: astype between every pair of dtypes", T, bool, i32, i64, float, double) {
  check_astype<T>();
}

}  // namespace
