// Differential tests of dyn::jit (issue 3), binary elementwise operations
// and comparisons for every dtype, with numpy broadcasting and weak C++
// literals, and mixed-dtype promotion: compiled (dyn::jit) vs interpreted
// (dyn::eval_jaxpr) vs eager (dyn::eager), see jit_diff.hpp and
// test_jit_diff.cpp. Rejected (op, dtype) pairs are checked for the dtype
// rule's message; weak float literals also against hand-computed values.
#include "jit_diff.hpp"

#include <array>

namespace {

using namespace jit_diff;

// ===========================================================================
// Operation families. Each apply_* is a template over the operand types only;
// the op code is a run-time value.

// --- Binary, result of the promoted dtype; the *L forms have a weak C++
// literal on one side (only when that keeps the promoted dtype).
enum : int {
  kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kAnd, kOr,
  kAddL, kRSubL, kMulL, kDivL, kRemL, kRRemL, kPowL, kRPowL, kMaxL, kRMinL, kAndL, kOrL,
  kNumBinary
};
const char* const kBinaryNames[] = {"a+b", "a-b", "a*b", "a/b", "a%b", "pow(a,b)", "maximum(a,b)", "minimum(a,b)",
                                    "a&b", "a|b", "a+2", "3-a", "a*3", "a/2", "a%3", "7%b", "pow(a,2)", "pow(2,b)",
                                    "maximum(a,0)", "minimum(2,a)", "a&6", "a|1"};
bool is_literal_op(int op) { return op >= kAddL; }

template <class A, class B>
auto apply_binary(int op, const A& a, const B& b) {
  using R = decltype(a + b);
  switch (op) {
    case kAdd: return R(a + b);
    case kSub: return R(a - b);
    case kMul: return R(a * b);
    case kDiv: return R(a / b);
    case kRem: return R(a % b);
    case kPow: return R(dyn::pow(a, b));
    case kMax: return R(dyn::maximum(a, b));
    case kMin: return R(dyn::minimum(a, b));
    default: break;
  }
  // Bit operations of floats do not compile (API.md section 13): a float
  // operand takes the unconstrained path below, and the test expects the
  // dtype rule's TypeError only from the primitives (test_rules.cpp).
  if constexpr (requires { a & b; }) {
    if (op == kAnd) return R(a & b);
    if (op == kOr) return R(a | b);
  }
  if constexpr (std::is_same_v<decltype(a + 2), R> && std::is_same_v<decltype(7 % b), R>) {
    switch (op) {
      case kAddL: return R(a + 2);
      case kRSubL: return R(3 - a);
      case kMulL: return R(a * 3);
      case kDivL: return R(a / 2);
      case kRemL: return R(a % 3);
      case kRRemL: return R(7 % b);
      case kPowL: return R(dyn::pow(a, 2));
      case kRPowL: return R(dyn::pow(2, b));
      case kMaxL: return R(dyn::maximum(a, 0));
      case kRMinL: return R(dyn::minimum(2, a));
      default: break;
    }
    if constexpr (requires { a & 6; }) {
      if (op == kAndL) return R(a & 6);
      if (op == kOrL) return R(a | 1);
    }
  }
  throw std::logic_error("bad binary op for these operand types");
}

const auto binary_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& p) { return apply_binary(op, p.first, p.second); });
};

// --- atan2: binary, computed in a float type.
const auto atan2_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& p) { return dyn::atan2(p.first, p.second); });
};

// --- Comparisons (bool results), also against weak literals.
enum : int { kEq, kNe, kLt, kLe, kGt, kGe, kGtL, kRGeL, kEqL, kNeL, kLtL, kNumCompare };
const char* const kCompareNames[] = {"a==b", "a!=b", "a<b", "a<=b", "a>b", "a>=b", "a>1", "1>=b", "a==1.0", "b!=0",
                                     "a<-0.5"};

template <class A, class B>
auto apply_compare(int op, const A& a, const B& b) {
  using R = decltype(a < b);
  switch (op) {
    case kEq: return R(a == b);
    case kNe: return R(a != b);
    case kLt: return R(a < b);
    case kLe: return R(a <= b);
    case kGt: return R(a > b);
    case kGe: return R(a >= b);
    case kGtL: return R(a > 1);
    case kRGeL: return R(1 >= b);
    case kEqL: return R(a == 1.0);
    case kNeL: return R(b != 0);
    case kLtL: return R(a < -0.5);
  }
  throw std::logic_error("bad compare op");
}

const auto compare_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& p) { return apply_compare(op, p.first, p.second); });
};

// ===========================================================================
// Elementwise families, every dtype.

// Accepted (op, dtype) pairs: arithmetic needs numbers (bool + bool is a
// TypeError, unlike numpy); & | need bools or integers.
bool binary_accepts(int op, DType d) {
  switch (op) {
    case kAnd: case kOr: case kAndL: case kOrL: return d == DType::bool_ || d == DType::i32 || d == DType::i64;
    default: return d != DType::bool_;
  }
}

// The message of a rejected (op, dtype) pair.
std::string binary_rejection(int op, DType d) {
  static const char* const prim[] = {"add", "sub", "mul", "div", "rem", "pow", "max", "min", "and", "or",
                                     "add", "sub", "mul", "div", "rem", "rem", "pow", "pow", "max", "min", "and", "or"};
  static_assert(std::size(prim) == kNumBinary);
  const bool bitwise = op == kAnd || op == kOr || op == kAndL || op == kOrL;
  const std::string p = prim[op];
  const bool ordered = p == "rem" || p == "max" || p == "min";  // not defined on complex values
  return dtype_rejection(prim[op], d, bitwise ? kIntegerOrBool : ordered ? kNumeric : kNumber);
}

// Operand data for op: integer divisors without zero; small pow exponents.
Gen rhs_gen(int op) {
  if (op == kDiv || op == kRem || op == kRRemL) return Gen::nonzero;
  if (op == kPow || op == kRPowL) return Gen::exponent;
  return Gen::general;
}
template <class T>
Gen lhs_gen(int op) {
  // Integer 0 ** negative raises: bases without zero.
  if (op == kPow && std::is_integral_v<T>) return Gen::nonzero;
  return Gen::general;
}

// The kernel's bound for op on float operands.
double binary_ulps(int op) { return op == kPow || op == kPowL || op == kRPowL ? kUlps : 0; }

template <class T>
void check_binary_family() {
  constexpr DType d = dyn::dtype_v<T>;
  for (int op = 0; op < kNumBinary; ++op) {
    if (is_literal_op(op) && is_bool_v<T>) continue;  // a bool array with an int literal promotes to i32
    // & | of floats do not compile (ops.hpp, detail::BitOperands); the primitives' TypeError: test_rules.cpp
    if ((op == kAnd || op == kOr || op == kAndL || op == kOrL) && std::is_floating_point_v<T>) continue;
    const std::string what = std::string(kBinaryNames[op]) + " on " + dt_name(d);
    const auto pairs = gen_pairs<T, T>(static_cast<std::uint64_t>(op) * 31 + 2, lhs_gen<T>(op), rhs_gen(op));
    const Three r = run3(binary_fn, op, only<SamePairs>(pairs));
    agree(r, what, {Tol{std::is_floating_point_v<T> ? binary_ulps(op) : 0}});
    expect_accepted(r, binary_accepts(op, d), what, binary_rejection(op, d));
  }
  {
    const std::string what = "atan2 on " + dt_name(d);
    const Three r = run3(atan2_fn, 0, only<SamePairs>(gen_pairs<T, T>(5, Gen::general, Gen::general)));
    agree(r, what, {Tol{kUlps}});
    expect_accepted(r, true, what);
  }
  for (int op = 0; op < kNumCompare; ++op) {
    const std::string what = std::string(kCompareNames[op]) + " on " + dt_name(d);
    // Few distinct values, so that equality happens.
    const auto pairs = gen_pairs<T, T>(static_cast<std::uint64_t>(op) + 40, Gen::mild, Gen::mild);
    const Three r = run3(compare_fn, op, only<SamePairs>(pairs));
    agree(r, what);
    expect_accepted(r, true, what);
  }
}

TEST_CASE_TEMPLATE("jit diff: binary operations and comparisons, every dtype, broadcasting, weak literals", T, bool,
                   i32, i64, float, double) {
  check_binary_family<T>();
}

// Decision (kept for now): arithmetic on two bools is a TypeError, not
// numpy's logical or / and; all three ways say so with the dtype rule.
TEST_CASE("jit diff: bool + bool and bool * bool raise TypeError with the dtype rule's message") {
  const Pairs<bool> pairs{{dyn::Array<bool>({3}, {true, false, true}), dyn::Array<bool>({3}, {true, true, false})},
                          {dyn::Array<bool>::scalar(true), dyn::Array<bool>({2}, {false, true})}};
  for (int op : {kAdd, kMul}) {
    const std::string what = std::string(kBinaryNames[op]) + " on bool";
    const Three r = run3(binary_fn, op, only<SamePairs>(pairs));
    agree(r, what);
    REQUIRE(r.error() == "TypeError");
    const std::string want = op == kAdd
                                 ? "add does not accept dtype bool; it requires a numeric dtype (integer, floating-point or complex)"
                                 : "mul does not accept dtype bool; it requires a numeric dtype (integer, floating-point or complex)";
    expect_accepted(r, false, what, want);
  }
}

// Weak float literals (a C++ double is a weak f64 and keeps its exact value):
// with a float operand the literal is rounded once to the operand's dtype and
// the operation happens in that dtype; with an integer or bool operand both
// are converted to f32 (JAX's f* lattice). Checked against hand-computed
// values, not only across the three ways: x + 1e-3 on f64 would have shown
// the old weak-f32 literal (1e-3 rounded to 0.0010000000474974513).
const auto float_literal_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& x) {
    return std::make_tuple(x * 0.1, 0.3 - x, x / 0.7, x + 1e-3, dyn::maximum(x, 0.1), dyn::where(x > 0, x, 0.1),
                           x > 0.1, x == 0.1);
  });
};
constexpr int kNumFloatLiteral = 8;

template <class T>
void check_float_literals() {
  using M = std::conditional_t<std::is_floating_point_v<T>, T, float>;
  const auto xs = gens<T>(kShapes, 70);
  const std::string what = "weak float literals on " + dt_name(dyn::dtype_v<T>);
  const Three r = run3(float_literal_fn, 0, only<Singles>(xs));
  agree(r, what);
  expect_ok(r, what);
  if (!r.ok()) return;
  REQUIRE(r.jit.out.size() == xs.size() * kNumFloatLiteral);
  const M l1 = static_cast<M>(0.1), l3 = static_cast<M>(0.3), l7 = static_cast<M>(0.7), lm = static_cast<M>(1e-3);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto& x = xs[i];
    std::array<dyn::Array<M>, 6> want;
    dyn::Array<bool> gt(x.shape()), eq(x.shape());
    for (auto& w : want) w = dyn::Array<M>(x.shape());
    for (i64 e = 0; e < x.size(); ++e) {
      const M v = static_cast<M>(x.data()[e]);
      want[0].mutable_data()[e] = v * l1;
      want[1].mutable_data()[e] = l3 - v;
      want[2].mutable_data()[e] = v / l7;
      want[3].mutable_data()[e] = v + lm;
      want[4].mutable_data()[e] = std::isnan(v) ? v : v > l1 ? v : l1;
      want[5].mutable_data()[e] = x.data()[e] > T(0) ? v : l1;
      gt.mutable_data()[e] = v > l1;
      eq.mutable_data()[e] = v == l1;
    }
    for (std::size_t k = 0; k < kNumFloatLiteral; ++k) {
      const AnyArray w = k < 6 ? AnyArray(want[k]) : k == 6 ? AnyArray(gt) : AnyArray(eq);
      const std::size_t at = i * kNumFloatLiteral + k;
      const std::string m = mismatch(r.jit.out[at], w, Tol{});
      CHECK_MESSAGE(m.empty(), what, ", operand #", i, ", result #", k, ": jit vs hand-computed: ", m);
      const std::string me = mismatch(r.eager.out[at], w, Tol{});
      CHECK_MESSAGE(me.empty(), what, ", operand #", i, ", result #", k, ": eager vs hand-computed: ", me);
    }
  }
  // With a float operand the literal is a literal of the operand's dtype (no
  // conversion of the operand); with an integer or bool operand the operand
  // is converted to f32.
  if constexpr (std::is_floating_point_v<T>) CHECK(r.jaxpr.find("convert_element_type") == std::string::npos);
  else CHECK(r.jaxpr.find("convert_element_type[new_dtype=float32") != std::string::npos);
}

TEST_CASE_TEMPLATE("jit diff: weak float literals, hand-computed, every dtype", T, bool, i32, i64, float, double) {
  check_float_literals<T>();
}

// Mixed dtypes: promotion happens before the primitives, the same way in the
// trace and eagerly. One lambda gives, for operand pair (a, b) and op k, the
// k-th arithmetic operation, the k-th comparison and atan2.
constexpr int kMixedArith[] = {kAdd, kSub, kMul, kDiv, kMax, kPow};
constexpr int kMixedCompare[] = {kLt, kEq, kGe, kNe, kLe, kGt};

template <class A, class B>
auto apply_mixed(int k, const A& a, const B& b) {
  using R = decltype(a + b);
  const auto arith = [&]() -> R {
    switch (kMixedArith[k]) {
      case kAdd: return a + b;
      case kSub: return a - b;
      case kMul: return a * b;
      case kDiv: return a / b;
      case kMax: return dyn::maximum(a, b);
      case kPow: return dyn::pow(a, b);
    }
    throw std::logic_error("bad mixed op");
  };
  return std::make_tuple(arith(), apply_compare(kMixedCompare[k], a, b), dyn::atan2(a, b));
}

const auto mixed_fn = [](int k, const auto& in) {
  return map_all(in, [k](const auto& p) { return apply_mixed(k, p.first, p.second); });
};

template <class A, class B>
void check_mixed_pair() {
  const std::string types = dt_name(dyn::dtype_v<A>) + " with " + dt_name(dyn::dtype_v<B>);
  using R = typename decltype(std::declval<dyn::Array<A>>() + std::declval<dyn::Array<B>>())::value_type;
  for (int k = 0; k < 6; ++k) {
    const int op = kMixedArith[k];
    // Integer divisors without zero; bases of powers without zero, small exponents.
    const auto pairs = gen_pairs<A, B>(static_cast<std::uint64_t>(k) + 60, op == kPow ? Gen::nonzero : Gen::general,
                                       op == kPow ? Gen::exponent : Gen::nonzero);
    const Three r = run3(mixed_fn, k, only<MixedPairs>(pairs));
    const std::string what = std::string(kBinaryNames[op]) + ", " + kCompareNames[kMixedCompare[k]] + ", atan2 on " + types;
    // Per operand pair: the arithmetic result, the comparison, atan2.
    agree(r, what, {Tol{std::is_floating_point_v<R> && op == kPow ? kUlps : 0}, Tol{0}, Tol{kUlps}});
    CHECK_MESSAGE(r.ok(), what, ": ", r.eager.message);
  }
}

TEST_CASE("jit diff: binary operations promote mixed dtypes") {
  check_mixed_pair<i32, i64>();
  check_mixed_pair<i32, float>();
  check_mixed_pair<i64, double>();
  check_mixed_pair<float, double>();
  check_mixed_pair<bool, i32>();
  check_mixed_pair<i64, float>();
  check_mixed_pair<bool, double>();
}

}  // namespace
