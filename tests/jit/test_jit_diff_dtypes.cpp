// Differential tests of dyn::jit on the second-wave element types i8 i16 u8
// u16 u32 u64 (API.md section 11): arithmetic (wrapping, XLA's integer
// division with zero divisors and INT_MIN / -1), unsigned comparisons,
// max/min, conversions to and from every dtype, reductions, cumulative
// sums, sort and argmax, compiled vs interpreted vs eager (jit_diff.hpp).
#include "jit_diff.hpp"
#include "../test_util.hpp"

namespace {

using namespace jit_diff;
using namespace test_util::element_types;

using NewSingles = std::tuple<Arrs<i8>, Arrs<i16>, Arrs<u8>, Arrs<u16>, Arrs<u32>, Arrs<u64>>;
using NewPairs = std::tuple<Pairs<i8>, Pairs<i16>, Pairs<u8>, Pairs<u16>, Pairs<u32>, Pairs<u64>>;

enum : int { kAdd, kSub, kMul, kDiv, kRem, kPow, kMax, kMin, kLt, kGe, kEq, kDivL, kRemL, kSubL, kNumOps };
const char* const kNames[] = {"a+b", "a-b", "a*b", "a/b", "a%b", "pow(a,b)", "maximum", "minimum",
                              "a<b", "a>=b", "a==b", "a/0", "a%0", "5-a"};

template <class A>
auto apply(int op, const A& a, const A& b) {
  using R = decltype(a + b);
  switch (op) {
    case kAdd: return std::make_tuple(R(a + b), a < b);
    case kSub: return std::make_tuple(R(a - b), a < b);
    case kMul: return std::make_tuple(R(a * b), a < b);
    case kDiv: return std::make_tuple(R(a / b), a < b);
    case kRem: return std::make_tuple(R(a % b), a < b);
    case kPow: return std::make_tuple(R(dyn::pow(a, b)), a < b);
    case kMax: return std::make_tuple(R(dyn::maximum(a, b)), a > b);
    case kMin: return std::make_tuple(R(dyn::minimum(a, b)), a <= b);
    case kLt: return std::make_tuple(R(a), a < b);
    case kGe: return std::make_tuple(R(b), a >= b);
    case kEq: return std::make_tuple(R(a), a == b);
    case kDivL: return std::make_tuple(R(a / 0), a != b);
    case kRemL: return std::make_tuple(R(a % 0), a > b);
    case kSubL: return std::make_tuple(R(5 - a), a > 3);
  }
  throw std::logic_error("bad op");
}

const auto binary_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& p) { return apply(op, p.first, p.second); });
};

template <class T>
void check_binary() {
  for (int op = 0; op < kNumOps; ++op) {
    const std::string what = std::string(kNames[op]) + " on " + dt_name(dyn::dtype_v<T>);
    // Gen::general has zeros: division by zero is defined (XLA's results).
    const Gen gb = op == kPow ? Gen::exponent : Gen::general;
    const Three r = run3(binary_fn, op, only<NewPairs>(gen_pairs<T, T>(static_cast<std::uint64_t>(op) * 13 + 5,
                                                                         Gen::general, gb)));
    agree(r, what);
    expect_ok(r, what);
  }
}

TEST_CASE_TEMPLATE("jit diff dtypes: arithmetic, division by zero, comparisons, max/min", T, i8, i16, u8, u16, u32,
                   u64) {
  check_binary<T>();
}

// INT_MIN / -1 and INT_MIN % -1, x / 0 and x % 0, and unsigned values above
// the signed range, by hand.
const auto edge_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& p) {
    const auto& [a, b] = p;
    return std::make_tuple(a / b, a % b, a < b, dyn::maximum(a, b), dyn::astype<double>(a));
  });
};

template <class T>
void check_edges() {
  constexpr T mn = std::numeric_limits<T>::min(), mx = std::numeric_limits<T>::max();
  const dyn::Array<T> a({6}, {mn, mn, T(7), mx, T(mx - 1), T(0)});
  const dyn::Array<T> b({6}, {T(-1), T(0), T(0), T(2), mx, T(-1)});
  const Three r = run3(edge_fn, 0, only<NewPairs>(Pairs<T>{{a, b}}));
  const std::string what = "edges of " + dt_name(dyn::dtype_v<T>);
  agree(r, what);
  expect_ok(r, what);
  if (!r.ok()) return;
  // x / 0 is all bits set; x % 0 is x (XLA); INT_MIN / -1 = INT_MIN, % = 0.
  const auto q = r.jit.out.at(0).get<T>(), m = r.jit.out.at(1).get<T>();
  const T ones = static_cast<T>(~u64{0});
  CHECK(q(1) == ones);
  CHECK(q(2) == ones);
  CHECK(m(1) == mn);
  CHECK(m(2) == T(7));
  if constexpr (std::is_signed_v<T>) {
    CHECK(q(0) == mn);
    CHECK(m(0) == T(0));
  } else {
    CHECK(q(0) == T(0));  // 0 / max
    CHECK(q(3) == T(mx / 2));
    CHECK(r.jit.out.at(2).get<bool>()(4));  // max - 1 < max, unsigned
  }
}

TEST_CASE_TEMPLATE("jit diff dtypes: XLA's integer division at the edges, by hand", T, i8, i16, u8, u16, u32, u64) {
  check_edges<T>();
}

// Conversions from each new dtype to every dtype, and from f64 and i64 to it.
const auto convert_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& x) {
    using T = typename std::remove_cvref_t<decltype(x)>::value_type;
    const auto f = dyn::astype<double>(x) * 1.5;  // not integral: fptoi truncation
    return std::make_tuple(dyn::astype<bool>(x), dyn::astype<i8>(x), dyn::astype<i16>(x), dyn::astype<i32>(x),
                           dyn::astype<i64>(x), dyn::astype<u8>(x), dyn::astype<u16>(x), dyn::astype<u32>(x),
                           dyn::astype<u64>(x), dyn::astype<float>(x), dyn::astype<double>(x), dyn::astype<T>(f),
                           dyn::astype<T>(dyn::astype<float>(f) * 1e10f), dyn::astype<T>(dyn::astype<i64>(x) * 3));
  });
};

template <class T>
void check_convert() {
  const std::string what = "conversions of " + dt_name(dyn::dtype_v<T>);
  const Three r = run3(convert_fn, 0, only<NewSingles>(gens<T>(kShapes, 3)));
  agree(r, what);
  expect_ok(r, what);
}

TEST_CASE_TEMPLATE("jit diff dtypes: conversions to and from every dtype (saturating from floats)", T, i8, i16, u8,
                   u16, u32, u64) {
  check_convert<T>();
}

// Unary, reductions, cumulative, sort, argmax.
const auto misc_fn = [](int, const auto& in) {
  return map_all(in, [](const auto& x) {
    return std::make_tuple(-x, dyn::abs(x), dyn::sign(x), dyn::sum(x), dyn::prod(x), dyn::max(x), dyn::min(x),
                           dyn::cumsum(x, -1), dyn::cummax(x, -1), dyn::sort(x, -1), dyn::argmax(x, -1),
                           dyn::argmin(x, -1), dyn::sum(x, {0}), dyn::any(x));
  });
};

template <class T>
void check_misc() {
  const std::string what = "unary, reductions and sorting of " + dt_name(dyn::dtype_v<T>);
  const Three r = run3(misc_fn, 0, only<NewSingles>(gens<T>({{7}, {3, 5}, {67}, {2, 3, 4}, {1, 40}}, 9)));
  agree(r, what);
  expect_ok(r, what);
}

TEST_CASE_TEMPLATE("jit diff dtypes: unary, reductions, cumulative, sort, argmax", T, i8, i16, u8, u16, u32, u64) {
  check_misc<T>();
}

// Bit operations on every integer dtype: the amounts of Gen::general (in
// [-100, 100] and extremes) are mostly >= the width or negative, where XLA's
// results (0, or the sign fill) come from a guard in the kernel (LLVM's
// shifts by >= the width are poison) and from eager's own.
using IntPairs = std::tuple<Pairs<i8>, Pairs<i16>, Pairs<i32>, Pairs<i64>, Pairs<u8>, Pairs<u16>, Pairs<u32>,
                            Pairs<u64>>;
enum : int { kAnd, kOr, kXor, kShl, kShr, kNot, kPopcount, kClz, kShlL, kRShrL, kSmallShr, kNumBits };
const char* const kBitNames[] = {"a&b", "a|b", "a^b", "a<<b", "a>>b", "~a", "population_count(a)", "clz(a)",
                                 "a<<3", "-100>>b (200>>b: u8 u16 u32)", "a>>(b&7)"};

template <class A>
A apply_bits(int op, const A& a, const A& b) {
  switch (op) {
    case kAnd: return a & b;
    case kOr: return a | b;
    case kXor: return a ^ b;
    case kShl: return a << b;
    case kShr: return a >> b;
    case kNot: return ~a;
    case kPopcount: return dyn::population_count(a);
    case kClz: return dyn::clz(a);
    case kShlL: return a << 3;
    case kRShrL: {
      // A literal must fit the array's dtype (JAX's OverflowError, a TypeError here): an
      // unsigned array narrower than 64 bits meets 200 (kept in u8) instead of -100.
      using E = dyn::detail::elem_t<A>;
      if constexpr (std::is_unsigned_v<E> && sizeof(E) < 8) return 200 >> b;
      else return -100 >> b;
    }
    case kSmallShr: return a >> (b & 7);  // amounts in range
  }
  throw std::logic_error("bad bit op");
}

const auto bits_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& p) { return apply_bits(op, p.first, p.second); });
};

template <class T>
void check_bits() {
  for (int op = 0; op < kNumBits; ++op) {
    const std::string what = std::string(kBitNames[op]) + " on " + dt_name(dyn::dtype_v<T>);
    const Three r = run3(bits_fn, op, only<IntPairs>(gen_pairs<T, T>(static_cast<std::uint64_t>(op) * 7 + 1,
                                                                       Gen::general, Gen::general)));
    agree(r, what);
    expect_ok(r, what);
    INFO(what);
    if (op == kShr && r.ok()) {
      CHECK(r.jaxpr.find(std::is_unsigned_v<T> ? "shift_right_logical" : "shift_right_arithmetic") !=
            std::string::npos);
    }
  }
}

TEST_CASE_TEMPLATE("jit diff dtypes: bit operations, shift amounts in and out of range", T, i8, i16, i32, i64, u8,
                   u16, u32, u64) {
  check_bits<T>();
}

// The benchmark's bit-twiddling kernel (benchmarks/bench_issue17.cpp):
// MurmurHash3's fmix32, against values computed independently with Python's
// unbounded ints masked to 32 bits.
TEST_CASE("jit diff dtypes: MurmurHash3 fmix32 of u32, jit and eager, against independent values") {
  auto fmix32 = [](auto x) {
    auto h = x ^ (x >> 16);
    h = h * 0x85ebca6bu;
    h = h ^ (h >> 13);
    h = h * 0xc2b2ae35u;
    return h ^ (h >> 16);
  };
  const dyn::Array<u32> x({3}, {0x12345678u, 1u, 0xFFFFFFFFu});
  const std::vector<u32> want{0xe37cd1bcu, 0x514e28b7u, 0x81f16f39u};
  const auto jf = dyn::jit(fmix32);
  const auto got = jf(x), eager = fmix32(x);
  CHECK(std::vector<u32>(got.data(), got.data() + 3) == want);
  CHECK(std::vector<u32>(eager.data(), eager.data() + 3) == want);
}

}  // namespace

TEST_CASE("jit diff dtypes: unsigned to float after bit operations (an LLVM 19 SLP narrowing miscompile)") {
  // LLVM 19's SLP vectoriser narrowed uitofp(~zext(u16 x) as u64) to 32-bit
  // lanes: 2^32 - x - 1 instead of 2^64 - x - 1 (found by the fuzzer, seed
  // 1640). The lowering converts unsigned integers without uitofp.
  for (const std::int64_t n : {std::int64_t{16}, std::int64_t{1000}}) {
    std::vector<u16> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<u16>(i * 977u);
    const dyn::Array<u16> x({n}, v);
    const auto f64 = [](auto a) { return dyn::astype<double>(~dyn::astype<u64>(a)); };
    const auto f32 = [](auto a) { return dyn::astype<float>(~dyn::astype<u32>(dyn::astype<u8>(a))); };
    const auto top = [](auto a) { return dyn::astype<double>(dyn::astype<u64>(a) << 48) + dyn::astype<double>(a); };
    CHECK(dyn::array_equal(dyn::jit(f64)(x), f64(x)));
    CHECK(dyn::array_equal(dyn::jit(f32)(x), f32(x)));
    CHECK(dyn::array_equal(dyn::jit(top)(x), top(x)));
    CHECK(dyn::jit(f64)(x).data()[1] == 18446744073709551616.0 - 977.0 - 1.0);  // by hand: 2^64 - x - 1, rounded
  }
}
