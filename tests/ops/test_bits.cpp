// Bit operations (API.md section 13): & | ^ ~ << >>, population_count, clz
// on every integer dtype (and & | ^ ~ on bool), with XLA's results for shift
// amounts >= the bit width or negative; primitives and, or, xor, not,
// shift_left, shift_right_arithmetic, shift_right_logical, population_count,
// clz. Values by hand, the jaxpr text, and the dtype rules.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using dyn::detail::NoParams;
using dyn::detail::Prim;
using namespace test_util::element_types;

using test_util::vals;
template <class T>
std::vector<T> vals(const dyn::AnyArray& a) {
  return vals(a.get<T>());
}
// A primitive applied directly (no numpy layer): e.g. shift_right_arithmetic
// of an unsigned dtype, which `>>` never chooses.
dyn::AnyArray prim(Prim p, std::vector<dyn::AnyArray> in) { return dyn::detail::impl(p, in, NoParams{}).at(0); }

TEST_CASE("bits: shifts of u8, amounts in and out of range (XLA: 0, or the sign fill)") {
  const Array<u8> x({4}, {0x81, 0x0F, 0xFF, 0x00}), s({4}, {1, 7, 8, 255});
  CHECK(vals(x << s) == std::vector<u8>{0x02, 0x80, 0x00, 0x00});
  CHECK(vals(x >> s) == std::vector<u8>{0x40, 0x00, 0x00, 0x00});  // logical: unsigned
  // shift_right_arithmetic reads the bits as signed, also of an unsigned dtype.
  CHECK(vals<u8>(prim(Prim::shift_right_arithmetic, {x, s})) == std::vector<u8>{0xC0, 0x00, 0xFF, 0x00});
  CHECK(vals(x << 3) == std::vector<u8>{0x08, 0x78, 0xF8, 0x00});
  CHECK(vals(1 << Array<u8>({3}, {0, 7, 9})) == std::vector<u8>{1, 128, 0});
}

TEST_CASE("bits: shifts of i8 and i64: >> is arithmetic for signed dtypes; negative amounts are out of range") {
  const Array<i8> x({4}, {-128, -1, 64, 5}), s({4}, {1, 7, 8, -1});
  CHECK(vals(x >> s) == std::vector<i8>{-64, -1, 0, 0});
  CHECK(vals(x << s) == std::vector<i8>{0, -128, 0, 0});
  CHECK(vals<i8>(prim(Prim::shift_right_logical, {x, s})) == std::vector<i8>{64, 1, 0, 0});
  CHECK(vals(Array<i8>({2}, {-5, 5}) >> 100) == std::vector<i8>{-1, 0});  // the sign fill
  const Array<i64> y({3}, {-1, 1, 1});
  CHECK(vals(y >> Array<i64>({3}, {63, 63, 64})) == std::vector<i64>{-1, 0, 0});
  CHECK(vals(y << Array<i64>({3}, {63, 62, 64})) == std::vector<i64>{INT64_MIN, i64{1} << 62, 0});
  CHECK(vals(Array<u64>({2}, {1, 1}) << Array<u64>({2}, {63, 64})) == std::vector<u64>{u64{1} << 63, 0});
}

TEST_CASE("bits: & | ^ ~ on integers and bools") {
  CHECK(vals(Array<u16>({2}, {0xF0F0, 0x1234}) ^ Array<u16>({2}, {0xFFFF, 0x1234})) == std::vector<u16>{0x0F0F, 0});
  CHECK(vals(Array<u8>({2}, {0x0F, 0xAA}) ^ 0xFF) == std::vector<u8>{0xF0, 0x55});
  CHECK(vals(~Array<u8>({2}, {0x0F, 0})) == std::vector<u8>{0xF0, 0xFF});
  CHECK(vals(~Array<i32>({2}, {5, -1})) == std::vector<i32>{-6, 0});
  CHECK(vals(Array<i8>({2}, {-1, 12}) & Array<i8>({2}, {0x0F, 10})) == std::vector<i8>{0x0F, 8});
  CHECK(vals(Array<u64>({1}, {u64{1} << 40}) | u64{1}) == std::vector<u64>{(u64{1} << 40) | 1});
  const Array<bool> a({4}, {true, true, false, false}), b({4}, {true, false, true, false});
  CHECK(vals(a ^ b) == std::vector<bool>{false, true, true, false});
  CHECK(vals(~a) == std::vector<bool>{false, false, true, true});
}

TEST_CASE("bits: population_count and clz") {
  const Array<u32> x({4}, {0, 1, 0xFFFFFFFFu, 0x80000000u});
  CHECK(vals(dyn::population_count(x)) == std::vector<u32>{0, 1, 32, 1});
  CHECK(vals(dyn::clz(x)) == std::vector<u32>{32, 31, 0, 0});
  const Array<i8> y({4}, {-1, -128, 0, 3});
  CHECK(vals(dyn::population_count(y)) == std::vector<i8>{8, 1, 0, 2});
  CHECK(vals(dyn::clz(y)) == std::vector<i8>{0, 0, 8, 6});
  CHECK(vals(dyn::clz(Array<u64>({2}, {1, 0}))) == std::vector<u64>{63, 64});
  CHECK(vals(dyn::population_count(Array<i64>({1}, {-1}))) == std::vector<i64>{64});
}

TEST_CASE("bits: golden jaxprs, JAX's primitive names") {
  auto str = [](const dyn::ClosedJaxpr& c) { return dyn::to_string(c); };
  CHECK(str(dyn::make_jaxpr([](auto a, auto b) { return a >> b; })(Array<u32>({4}), Array<u32>({4}))) ==
        "{ lambda ; a:u32[4] b:u32[4]. let c:u32[4] = shift_right_logical a b in (c,) }");
  CHECK(str(dyn::make_jaxpr([](auto a, auto b) { return a >> b; })(Array<i32>({4}), Array<i32>({4}))) ==
        "{ lambda ; a:i32[4] b:i32[4]. let c:i32[4] = shift_right_arithmetic a b in (c,) }");
  CHECK(str(dyn::make_jaxpr([](auto a) { return (a << 3) ^ ~a; })(Array<u8>({2}))) ==
        "{ lambda ; a:u8[2]. let\n"
        "    b:u8[2] = shift_left a 3:u8[]\n"
        "    c:u8[2] = not a\n"
        "    d:u8[2] = xor b c\n"
        "  in (d,) }");
  CHECK(str(dyn::make_jaxpr([](auto a) { return dyn::population_count(a) + dyn::clz(a); })(Array<i64>({3}))) ==
        "{ lambda ; a:i64[3]. let\n"
        "    b:i64[3] = population_count a\n"
        "    c:i64[3] = clz a\n"
        "    d:i64[3] = add b c\n"
        "  in (d,) }");
  // Mixed dtypes promote first (jnp.right_shift): u8 >> i32 is an i32 shift.
  CHECK(str(dyn::make_jaxpr([](auto a, auto b) { return a >> b; })(Array<u8>({2}), Array<i32>({2}))) ==
        "{ lambda ; a:u8[2] b:i32[2]. let\n"
        "    c:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
        "    d:i32[2] = shift_right_arithmetic c b\n"
        "  in (d,) }");
  const dyn::ClosedJaxpr cj = dyn::make_jaxpr([](auto a, auto b) {
    return std::make_tuple(a << b, a >> b, a ^ b, ~a, dyn::population_count(a), dyn::clz(b));
  })(Array<u16>({3}), Array<u16>({3}));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  const Array<u16> a({3}, {0x8001, 3, 0xFFFF}), b({3}, {15, 16, 0});
  const auto out = dyn::eval_jaxpr(cj, {a, b});
  CHECK(vals<u16>(out.at(0)) == std::vector<u16>{0x8000, 0, 0xFFFF});
  CHECK(vals<u16>(out.at(1)) == std::vector<u16>{1, 0, 0xFFFF});
  CHECK(vals<u16>(out.at(5)) == std::vector<u16>{12, 11, 16});
}

// Compile-time errors where C++ knows the element type is a float.
template <class A, class B>
concept CanXor = requires(A a, B b) { a ^ b; };
template <class A, class B>
concept CanShl = requires(A a, B b) { a << b; };
template <class A, class B>
concept CanShr = requires(A a, B b) { a >> b; };
template <class A>
concept CanNot = requires(A a) { ~a; };
template <class A>
concept CanPopcount = requires(A a) { dyn::population_count(a); };
template <class A>
concept CanClz = requires(A a) { dyn::clz(a); };

TEST_CASE("bits: bit operations of floats do not compile; the primitives' dtype rules name op and dtype") {
  static_assert(!CanXor<Array<double>, Array<double>> && !CanXor<Array<i32>, float>);
  static_assert(!CanShl<Array<float>, int> && !CanShr<dyn::Tracer<double>, int> && !CanShr<Array<i32>, double>);
  static_assert(!CanNot<Array<float>> && !CanPopcount<dyn::Tracer<double>> && !CanClz<Array<float>>);
  static_assert(CanXor<Array<u8>, int> && CanShl<dyn::Tracer<u64>, dyn::Tracer<u64>> && CanNot<Array<bool>> &&
                CanClz<Array<i8>>);
  const Array<float> f({2}, {1, 2});
  const Array<bool> t({2}, {true, false});
  using test_util::message_of;
  CHECK(message_of<dyn::TypeError>([&] { prim(Prim::shift_left, {f, f}); }) ==
        "shift_left does not accept dtype f32; it requires an integer dtype");
  CHECK(message_of<dyn::TypeError>([&] { prim(Prim::xor_, {f, f}); }) ==
        "xor does not accept dtype f32; it requires a boolean or integer dtype");
  CHECK(message_of<dyn::TypeError>([&] { prim(Prim::population_count, {t}); }) ==
        "population_count does not accept dtype bool; it requires an integer dtype");
  // bool shifts: promoted bools stay bool, and the dtype rule rejects them at trace time.
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::make_jaxpr([](auto a) { return a >> a; })(t); })
            .starts_with("shift_right_arithmetic does not accept dtype bool; it requires an integer dtype"));
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::clz(t); })
            .starts_with("clz does not accept dtype bool; it requires an integer dtype"));
}

}  // namespace
