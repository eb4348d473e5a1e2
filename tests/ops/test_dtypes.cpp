// Element types of the second wave (API.md section 11): i8 i16 u8 u16 u32
// u64 next to bool i32 i64 f32 f64. Promotion against JAX's documented
// table, names, eager arithmetic (wrapping, XLA's integer division),
// conversions, the jaxpr text and index operands of the new dtypes.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cstdint>
#include <cstring>
#include <tuple>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::DType;
using namespace test_util::element_types;

// ---------------------------------------------------------------------------
// Promotion: jnp.promote_types.

// The binary promotion table of JAX's documentation ("Type promotion
// semantics", docs.jax.dev/en/latest/type_promotion.html), written out here
// for our dtypes in JAX's byte-count notation (u1 = uint8, i8 = int64,
// f4 = float32, ...; i* and f* are the weak int and float). Rows and
// columns: b1 u1 u2 u4 u8 i1 i2 i4 i8 f4 f8 i* f*.
const char* const kJaxTable[] = {
    // b1  u1   u2   u4   u8   i1   i2   i4   i8   f4   f8   i*   f*
    "b1 u1 u2 u4 u8 i1 i2 i4 i8 f4 f8 i* f*",  // b1
    "u1 u1 u2 u4 u8 i2 i2 i4 i8 f4 f8 u1 f*",  // u1
    "u2 u2 u2 u4 u8 i4 i4 i4 i8 f4 f8 u2 f*",  // u2
    "u4 u4 u4 u4 u8 i8 i8 i8 i8 f4 f8 u4 f*",  // u4
    "u8 u8 u8 u8 u8 f* f* f* f* f4 f8 u8 f*",  // u8
    "i1 i2 i4 i8 f* i1 i2 i4 i8 f4 f8 i1 f*",  // i1
    "i2 i2 i4 i8 f* i2 i2 i4 i8 f4 f8 i2 f*",  // i2
    "i4 i4 i4 i8 f* i4 i4 i4 i8 f4 f8 i4 f*",  // i4
    "i8 i8 i8 i8 f* i8 i8 i8 i8 f4 f8 i8 f*",  // i8
    "f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 f4 f4",  // f4
    "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8",  // f8
    "i* u1 u2 u4 u8 i1 i2 i4 i8 f4 f8 i* f*",  // i*
    "f* f* f* f* f* f* f* f* f* f4 f8 f* f*",  // f*
};
const char* const kJaxNames[] = {"b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8", "i*", "f*"};
const DType kOurs[] = {DType::bool_, DType::u8,  DType::u16, DType::u32, DType::u64,
                       DType::i8,    DType::i16, DType::i32, DType::i64, DType::f32, DType::f64};

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> r;
  for (std::string w; is >> w;) r.push_back(w);
  return r;
}

// JAX's name of a strong dtype.
std::string jax_name(DType d) {
  for (std::size_t k = 0; k < std::size(kOurs); ++k)
    if (kOurs[k] == d) return kJaxNames[k];
  return "?";
}

TEST_CASE("dtypes: promotion of two strong dtypes is jnp.promote_types, JAX's documented table") {
  // The table's f* between two strong integers (u64 with a signed integer)
  // is what jnp.promote_types returns as float64 (np.dtype of the weak float),
  // and dynstage gives f64, strongly typed.
  for (std::size_t r = 0; r < std::size(kOurs); ++r) {
    const auto row = words(kJaxTable[r]);
    REQUIRE(row.size() == 13);
    for (std::size_t c = 0; c < std::size(kOurs); ++c) {
      std::string want = row[c];
      if (want == "f*") want = "f8";
      const dyn::TypeInfo got = dyn::promote_types({kOurs[r], false}, {kOurs[c], false});
      CHECK_MESSAGE(jax_name(got.dtype) == want, dyn::dtype_name(kOurs[r]), " + ", dyn::dtype_name(kOurs[c]),
                    ": got ", dyn::dtype_name(got.dtype), ", JAX's table says ", row[c]);
      CHECK_FALSE(got.weak);
    }
  }
  // The two examples of API.md section 11.
  static_assert(dyn::promote_types({DType::u8}, {DType::i8}).dtype == DType::i16);
  static_assert(dyn::promote_types({DType::u32}, {DType::i32}).dtype == DType::i64);
}

TEST_CASE("dtypes: a weak int literal adopts any integer dtype; a weak float gives the array's float or f32") {
  const dyn::TypeInfo wi{DType::i32, true}, wf{DType::f64, true};
  for (std::size_t r = 0; r < std::size(kOurs); ++r) {
    const auto row = words(kJaxTable[r]);
    const DType d = kOurs[r];
    // i* column: the integer itself (bool + int: dynstage's i32, the weak int materialised).
    const DType with_int = dyn::promote_types({d}, wi).dtype;
    if (d == DType::bool_) CHECK(with_int == DType::i32);
    else CHECK_MESSAGE(jax_name(with_int) == row[11], dyn::dtype_name(d), " + weak int");
    CHECK(dyn::promote_types(wi, {d}) == dyn::promote_types({d}, wi));
    // f* column: floats keep theirs; the rest give the default float f32.
    const DType with_float = dyn::promote_types({d}, wf).dtype;
    CHECK_MESSAGE(with_float == (dyn::is_float(d) ? d : DType::f32), dyn::dtype_name(d), " + weak float");
  }
}

TEST_CASE("dtypes: the static result types of operators follow the same promotion") {
  static_assert(std::is_same_v<decltype(Array<u8>() + Array<i8>()), Array<i16>>);
  static_assert(std::is_same_v<decltype(Array<u32>() * Array<i32>()), Array<i64>>);
  static_assert(std::is_same_v<decltype(Array<u64>() - Array<i64>()), Array<double>>);
  static_assert(std::is_same_v<decltype(Array<u16>() + Array<u64>()), Array<u64>>);
  static_assert(std::is_same_v<decltype(Array<u8>() + 1), Array<u8>>);
  static_assert(std::is_same_v<decltype(Array<i16>() * 2.5), Array<float>>);
  static_assert(std::is_same_v<decltype(Array<u8>() + Array<float>()), Array<float>>);
  static_assert(std::is_same_v<decltype(Array<u8>() < Array<i8>()), Array<bool>>);
  // sum / prod / cumsum of 8- and 16-bit integers count in 32 bits (jnp's promote_integers)
  static_assert(std::is_same_v<decltype(dyn::sum(Array<u8>())), Array<u32>>);
  static_assert(std::is_same_v<decltype(dyn::sum(Array<i16>())), Array<i32>>);
  static_assert(std::is_same_v<decltype(dyn::cumsum(Array<u16>({2}), 0)), Array<u32>>);
  static_assert(std::is_same_v<decltype(dyn::sum(Array<u64>())), Array<u64>>);
  static_assert(std::is_same_v<decltype(dyn::max(Array<u8>())), Array<u8>>);
  CHECK(true);
}

TEST_CASE("dtypes: names, sizes and C++ types") {
  struct Row {
    DType d;
    const char *name, *numpy, *cpp;
    std::size_t size;
  };
  const Row rows[] = {{DType::i8, "i8", "int8", "std::int8_t", 1},      {DType::i16, "i16", "int16", "std::int16_t", 2},
                      {DType::u8, "u8", "uint8", "std::uint8_t", 1},    {DType::u16, "u16", "uint16", "std::uint16_t", 2},
                      {DType::u32, "u32", "uint32", "std::uint32_t", 4}, {DType::u64, "u64", "uint64", "std::uint64_t", 8}};
  for (const Row& r : rows) {
    CHECK(dyn::dtype_name(r.d) == r.name);
    CHECK(dyn::dtype_numpy_name(r.d) == r.numpy);
    CHECK(dyn::dtype_cpp_name(r.d) == r.cpp);
    CHECK(dyn::dtype_size(r.d) == r.size);
    CHECK(dyn::is_integer(r.d));
    CHECK_FALSE(dyn::is_float(r.d));
    dyn::visit_dtype(r.d, [&](auto t) { CHECK(sizeof(t) == r.size); });
  }
  static_assert(dyn::dtype_v<u8> == DType::u8 && dyn::dtype_v<i16> == DType::i16 && dyn::dtype_v<u64> == DType::u64);
  static_assert(std::is_same_v<dyn::element_t<DType::u32>, u32>);
  static_assert(dyn::is_unsigned_integer(DType::u16) && !dyn::is_unsigned_integer(DType::i16));
  std::ostringstream os;
  os << Array<u8>({3}, {1, 2, 255}) << " " << Array<i8>({2}, {-128, 127});
  CHECK(os.str() == "[  1   2 255] [-128  127]");
}

// ---------------------------------------------------------------------------
// Eager arithmetic.

using test_util::vals;

TEST_CASE("dtypes: integer arithmetic wraps (two's complement) in every width") {
  CHECK(vals(Array<u8>({2}, {250, 3}) + Array<u8>({2}, {10, 255})) == std::vector<u8>{4, 2});
  CHECK(vals(Array<i8>({2}, {127, -128}) + Array<i8>({2}, {1, -1})) == std::vector<i8>{-128, 127});
  CHECK(vals(Array<u16>({1}, {65535}) * Array<u16>({1}, {65535})) == std::vector<u16>{1});  // no int overflow
  CHECK(vals(Array<i16>({1}, {-32768}) * Array<i16>({1}, {-1})) == std::vector<i16>{-32768});
  CHECK(vals(-Array<u32>({2}, {1, 0})) == std::vector<u32>{4294967295u, 0});
  CHECK(vals(Array<u64>({1}, {0}) - Array<u64>({1}, {1})) == std::vector<u64>{~u64{0}});
  CHECK(vals(dyn::abs(Array<u8>({2}, {200, 0}))) == std::vector<u8>{200, 0});
  CHECK(vals(dyn::sign(Array<u32>({3}, {0, 1, 4000000000u}))) == std::vector<u32>{0, 1, 1});
  CHECK(vals(dyn::abs(Array<i8>({2}, {-128, -5}))) == std::vector<i8>{-128, 5});
  CHECK(vals(dyn::pow(Array<u8>({3}, {3, 2, 255}), Array<u8>({3}, {5, 200, 255}))) == std::vector<u8>{243, 0, 255});
}

TEST_CASE("dtypes: an integer literal that does not fit the array's dtype is a TypeError (JAX's OverflowError)") {
  using test_util::message_of;
  const Array<u8> x({2}, {1, 2});
  const Array<i8> y({2}, {1, 2});
  const std::string u8_300 =
      "add: the integer literal 300 does not fit in the array's dtype u8 (range 0 to 255; JAX: OverflowError, "
      "Python int 300 too large to convert to uint8); convert the array to a wider dtype first, e.g. "
      "dyn::astype<std::int32_t>(x)";
  CHECK(message_of<dyn::TypeError>([&] { (void)(x + 300); }) == u8_300);
  CHECK(message_of<dyn::TypeError>([&] { (void)(y * -129); }) ==
        "mul: the integer literal -129 does not fit in the array's dtype i8 (range -128 to 127; JAX: OverflowError, "
        "Python int -129 too large to convert to int8); convert the array to a wider dtype first, e.g. "
        "dyn::astype<std::int32_t>(x)");
  CHECK(message_of<dyn::TypeError>([&] { (void)(x < -1); }).rfind("lt: the integer literal -1 does not fit", 0) == 0);
  CHECK(message_of<dyn::TypeError>([&] { (void)(Array<u16>({1}, {0}) - 65536); })
            .rfind("sub: the integer literal 65536 does not fit in the array's dtype u16 (range 0 to 65535", 0) == 0);
  CHECK(message_of<dyn::TypeError>([&] { (void)(Array<i32>({1}, {0}) + 3000000000LL); })
            .rfind("add: the integer literal 3000000000 does not fit in the array's dtype i32", 0) == 0);
  // Traced: the same error while tracing, naming the user's line.
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr([](auto a) { return a + 300; })(x); }) == u8_300);
  // where, clamp and clip check their literals the same way (jnp.where(m, x, 300) raises too).
  const Array<bool> m({2}, {true, false});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::where(m, x, 300); }) ==
        "where: the integer literal 300 does not fit in the array's dtype u8 (range 0 to 255; JAX: OverflowError, "
        "Python int 300 too large to convert to uint8); convert the array to a wider dtype first, e.g. "
        "dyn::astype<std::int32_t>(x)");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::clamp(0, x, 256); })
            .rfind("clamp: the integer literal 256 does not fit in the array's dtype u8 (range 0 to 255", 0) == 0);
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::clip(y, -200, 5); })
            .rfind("clip: the integer literal -200 does not fit in the array's dtype i8 (range -128 to 127", 0) == 0);
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr([](auto a) { return dyn::clip(a, 0, 300); })(x); })
            .rfind("clip: the integer literal 300 does not fit", 0) == 0);
  CHECK(vals(dyn::where(m, x, 255)) == std::vector<u8>{1, 255});
  CHECK(vals(dyn::clip(y, -128, 1)) == std::vector<i8>{1, 1});
  // In range: no error, and the edges are exact.
  CHECK(vals(x + 255) == std::vector<u8>{0, 1});
  CHECK(vals(y + -128) == std::vector<i8>{-127, -126});
  CHECK(vals(x * 0) == std::vector<u8>{0, 0});
  // Floats, weak-weak and 64-bit dtypes are unaffected.
  CHECK(vals(Array<float>({1}, {1.0f}) + 1e10f) == std::vector<float>{1e10f + 1.0f});
  CHECK(vals(Array<u64>({1}, {1}) + 5000000000LL) == std::vector<u64>{5000000001ull});
}

TEST_CASE("dtypes: unsigned compare, max, min, division and remainder are unsigned") {
  const Array<u32> a({3}, {4000000000u, 1, 7}), b({3}, {1, 4000000000u, 2});
  CHECK(vals(a > b) == std::vector<bool>{true, false, true});
  CHECK(vals(dyn::maximum(a, b)) == std::vector<u32>{4000000000u, 4000000000u, 7});
  CHECK(vals(dyn::minimum(a, b)) == std::vector<u32>{1, 1, 2});
  CHECK(vals(a / b) == std::vector<u32>{4000000000u, 0, 3});
  CHECK(vals(a % Array<u32>({3}, {3, 4000000001u, 4})) == std::vector<u32>{1, 1, 3});
  CHECK(vals(dyn::max(Array<u64>({2}, {~u64{0}, 1}))) == std::vector<u64>{~u64{0}});
  CHECK(vals(dyn::min(Array<u8>({2}, {255, 128}))) == std::vector<u8>{128});
}

// XLA's integer division, which JAX's div and rem have on CPU and GPU:
// x / 0 = -1 (all bits set), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
template <class T>
void check_xla_division() {
  constexpr T mn = std::numeric_limits<T>::min();
  const Array<T> x({3}, {T(7), mn, T(0)}), zero({3}, {T(0), T(0), T(0)});
  CHECK(vals(x / zero) == std::vector<T>(3, static_cast<T>(~u64{0})));
  CHECK(vals(x % zero) == vals(x));
  CHECK(vals(x / 0) == std::vector<T>(3, static_cast<T>(~u64{0})));
  CHECK(vals(x % 0) == vals(x));
  if constexpr (std::is_signed_v<T>) {
    const Array<T> m1({3}, {T(-1), T(-1), T(-1)});
    CHECK(vals(x / m1) == std::vector<T>{T(-7), mn, T(0)});
    CHECK(vals(x % m1) == std::vector<T>{T(0), T(0), T(0)});
    CHECK(vals(Array<T>({2}, {T(-7), T(7)}) / T(2)) == std::vector<T>{T(-3), T(3)});  // truncation
    CHECK(vals(Array<T>({2}, {T(-7), T(7)}) % T(2)) == std::vector<T>{T(-1), T(1)});
  }
}

TEST_CASE_TEMPLATE("dtypes: integer division by zero and INT_MIN / -1 give XLA's results", T, i8, i16, i32, i64, u8,
                   u16, u32, u64) {
  check_xla_division<T>();
}

TEST_CASE("dtypes: conversions saturate from floats and extend by the source's signedness") {
  const Array<float> f({6}, {-1.5f, 300.0f, std::numeric_limits<float>::quiet_NaN(), 2.9f, -0.5f,
                             std::numeric_limits<float>::infinity()});
  CHECK(vals(dyn::astype<u8>(f)) == std::vector<u8>{0, 255, 0, 2, 0, 255});
  CHECK(vals(dyn::astype<i8>(f)) == std::vector<i8>{-1, 127, 0, 2, 0, 127});
  CHECK(vals(dyn::astype<u64>(Array<double>({2}, {1e30, -1e30}))) == std::vector<u64>{~u64{0}, 0});
  CHECK(vals(dyn::astype<double>(Array<u64>({2}, {~u64{0}, 1}))) == std::vector<double>{18446744073709551616.0, 1.0});
  CHECK(vals(dyn::astype<double>(Array<u32>({1}, {4000000000u}))) == std::vector<double>{4000000000.0});
  CHECK(vals(dyn::astype<u16>(Array<i8>({2}, {-1, 5}))) == std::vector<u16>{65535, 5});
  CHECK(vals(dyn::astype<i64>(Array<u8>({1}, {200}))) == std::vector<i64>{200});
  CHECK(vals(dyn::astype<i8>(Array<u8>({1}, {200}))) == std::vector<i8>{-56});
  CHECK(vals(dyn::astype<bool>(Array<u16>({2}, {256, 0}))) == std::vector<bool>{true, false});
}

TEST_CASE("dtypes: sums of narrow integers count in 32 bits; of u32 and u64 they wrap in their dtype") {
  CHECK(vals(dyn::sum(Array<u8>({3}, {200, 100, 1}))) == std::vector<u32>{301});
  CHECK(vals(dyn::sum(Array<i8>({2}, {-128, -128}))) == std::vector<i32>{-256});
  CHECK(vals(dyn::cumsum(Array<u16>({2}, {65535, 1}), 0)) == std::vector<u32>{65535, 65536});
  CHECK(vals(dyn::sum(Array<u32>({2}, {4000000000u, 4000000000u}))) == std::vector<u32>{3705032704u});
  CHECK(vals(dyn::prod(Array<u8>({2}, {16, 32}))) == std::vector<u32>{512});
}

// ---------------------------------------------------------------------------
// The jaxpr text (JAX's format: u8[3], int16 in parameters, literals 1:u8[]).

TEST_CASE("dtypes: golden jaxprs of mixed, weak and unsigned arithmetic") {
  auto f = [](auto x, auto y) { return x + y; };
  CHECK(dyn::to_string(dyn::make_jaxpr(f)(Array<u8>({3}), Array<i8>({3}))) ==
        "{ lambda ; a:u8[3] b:i8[3]. let\n"
        "    c:i16[3] = convert_element_type[new_dtype=int16 weak_type=False] a\n"
        "    d:i16[3] = convert_element_type[new_dtype=int16 weak_type=False] b\n"
        "    e:i16[3] = add c d\n"
        "  in (e,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return x * 3 + 1; })(Array<u16>({2}))) ==
        "{ lambda ; a:u16[2]. let\n"
        "    b:u16[2] = mul a 3:u16[]\n"
        "    c:u16[2] = add b 1:u16[]\n"
        "  in (c,) }");
  // A u64 literal prints its unsigned value.
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return x * std::uint64_t{0xFFFFFFFFFFFFFFFFull}; })(
            Array<u64>({2}))) == "{ lambda ; a:u64[2]. let b:u64[2] = mul a 18446744073709551615:u64[] in (b,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::sum(x); })(Array<u8>({4}))) ==
        "{ lambda ; a:u8[4]. let\n"
        "    b:u32[4] = convert_element_type[new_dtype=uint32 weak_type=False] a\n"
        "    c:u32[] = reduce_sum[axes=(0,)] b\n"
        "  in (c,) }");
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto x) { return dyn::astype<std::uint32_t>(x) > 7u; })(
            Array<float>({2}))) ==
        "{ lambda ; a:f32[2]. let\n"
        "    b:u32[2] = convert_element_type[new_dtype=uint32 weak_type=False] a\n"
        "    c:bool[2] = gt b 7:u32[]\n"
        "  in (c,) }");
}

TEST_CASE("dtypes: programs of every new dtype are check_jaxpr-clean and eval_jaxpr agrees with eager") {
  auto f = [](auto x, auto y) {
    return std::make_tuple(x / y, x % y, dyn::maximum(x, y), x < y, dyn::astype<double>(x) * 0.5, dyn::sum(x * y),
                           dyn::cumsum(x, 0), dyn::sort(x), dyn::argmax(x, 0), -x);
  };
  auto run = [&](auto t) {
    using T = decltype(t);
    const Array<T> x({5}, {T(1), T(0), T(-3), T(100), std::numeric_limits<T>::max()});
    const Array<T> y({5}, {T(0), T(7), T(2), T(-1), T(3)});
    const dyn::ClosedJaxpr cj = dyn::make_jaxpr(f)(x, y);
    CHECK_NOTHROW(dyn::check_jaxpr(cj));
    const auto got = dyn::eval_jaxpr(cj, {x, y});
    const auto want = dyn::eager(f)(x, y);
    std::vector<dyn::AnyArray> w;
    std::apply([&](const auto&... a) { (w.push_back(dyn::AnyArray(a)), ...); }, want);
    REQUIRE(got.size() == w.size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      INFO(dyn::dtype_name(dyn::dtype_v<T>), " output #", k);
      CHECK(got[k].dtype() == w[k].dtype());
      CHECK(got[k].shape() == w[k].shape());
      CHECK(std::memcmp(got[k].data(), w[k].data(), static_cast<std::size_t>(w[k].size()) *
                                                         dyn::dtype_size(w[k].dtype())) == 0);
    }
  };
  run(i8{});
  run(i16{});
  run(u8{});
  run(u16{});
  run(u32{});
  run(u64{});
}

// ---------------------------------------------------------------------------
// Indices of any integer dtype: converted to i32 or i64 by the numpy layer
// (the primitives' index dtypes).

TEST_CASE("dtypes: index arrays and start indices of the new integer dtypes") {
  const Array<double> x({4}, {10, 11, 12, 13});
  CHECK(vals(x.at(Array<u8>({3}, {3, 0, 200})).get()) == std::vector<double>{13, 10, 13});  // clamped
  CHECK(vals(dyn::take(x, Array<i16>({2}, {-1, 1}), 0)) == std::vector<double>{13, 11});    // -1: from the end
  CHECK(vals(dyn::dynamic_slice(x, {dyn::Index(Array<u16>::scalar(1))}, {2})) == std::vector<double>{11, 12});
  CHECK(dyn::to_string(dyn::make_jaxpr([](auto v, auto i) { return v.at(i).get(); })(x, Array<u8>({2}))) ==
        "{ lambda ; a:f64[4] b:u8[2]. let\n"
        "    c:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
        "    d:bool[2] = lt c 0:i32[]\n"
        "    e:i32[2] = add c 4:i32[]\n"
        "    f:i32[2] = select_n d c e\n"
        "    g:i32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 1)] f\n"
        "    h:f64[2] = gather[\n"
        "      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), "
        "start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())\n"
        "      fill_value=None\n"
        "      indices_are_sorted=False\n"
        "      mode=GatherScatterMode.CLIP\n"
        "      slice_sizes=(1,)\n"
        "      unique_indices=False\n"
        "    ] a g\n"
        "  in (h,) }");
}

TEST_CASE("dtypes: sizes given as integer scalars of the new dtypes (their value as i64)") {
  CHECK(dyn::zeros<double>({Array<u8>::scalar(3)}).shape() == std::vector<i64>{3});
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr([](auto n) { return dyn::zeros<double>({n}); })(Array<u16>::scalar(4));
  INFO(dyn::to_string(cj));
  CHECK(dyn::to_string(cj).find("convert_element_type[new_dtype=int64 weak_type=False] a") != std::string::npos);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const auto out = dyn::eval_jaxpr(cj, {Array<u16>::scalar(5)});
  CHECK(out.back().shape() == std::vector<i64>{5});
}

TEST_CASE("dtypes: a u8 loop carry that the body widens to i16 names the fix") {
  auto f = [](auto x) {
    return dyn::for_loop(0, 3, 1)([](auto, auto c) { return c + dyn::Array<std::int8_t>::scalar(1); })(x);
  };
  CHECK_THROWS_WITH_AS(dyn::make_jaxpr(f)(Array<u8>::scalar(1)),
                       doctest::Contains("change the init value to i16 (e.g. dyn::astype<std::int16_t>(init))"),
                       dyn::TypeError);
}

}  // namespace
