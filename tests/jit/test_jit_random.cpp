// dyn::random under dyn::jit (issue 17 part 4): the same bits compiled as
// eager, for every function, since dyn::random is a composition of integer
// primitives (add, xor, shifts, or, iota, slice, concatenate, sort) and exact
// float operations (a u32 -> float conversion, a multiplication by a power of
// two). Only normal (sqrt(2) * erf_inv(u)) goes through log1p, whose compiled
// forms are within a few ulps of eager ones (docs/backend.md): compared with
// a tolerance. The values themselves: tests/ops/test_random.cpp.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using namespace test_util::element_types;

using test_util::vals;

// Everything in one function: one jit instantiation for the file.
auto all_random(const auto& k) {
  auto [k1, k2] = dyn::random::split(k);
  return std::tuple{k1,
                    k2,
                    dyn::random::split(k, 3),
                    dyn::random::random_bits(k, {7}),
                    dyn::random::uniform<float>(k1, {1001}, -2.0f, 3.0f),
                    dyn::random::uniform<double>(k2, {33}),
                    dyn::random::randint<i32>(k, {257}, -7, 1000),
                    dyn::random::bernoulli(k2, 0.25f, {65}),
                    dyn::random::permutation(k1, 100),
                    dyn::random::normal<float>(k, {513}),
                    dyn::random::normal<double>(k1, {31})};
}

template <class T>
void check_close(const Array<T>& got, const Array<T>& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  for (i64 i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(std::abs(static_cast<double>(got.data()[i]) - static_cast<double>(want.data()[i])) <= tol,
                  "element ", i, ": jit ", got.data()[i], ", eager ", want.data()[i]);
}

TEST_CASE("jit random: every dyn::random function gives eager's bits, for several keys with one kernel") {
  const auto jf = dyn::jit([](dyn::Tracer<u32> k) { return all_random(k); });
  const auto [k1, k2] = dyn::random::split(dyn::random::key(2));
  for (const Array<u32>& key : {dyn::random::key(0), dyn::random::key(42), k1, k2}) {
    const auto got = jf(key);
    const auto want = all_random(key);
    CHECK(vals(std::get<0>(got)) == vals(std::get<0>(want)));
    CHECK(vals(std::get<1>(got)) == vals(std::get<1>(want)));
    CHECK(vals(std::get<2>(got)) == vals(std::get<2>(want)));
    CHECK(vals(std::get<3>(got)) == vals(std::get<3>(want)));
    CHECK(vals(std::get<4>(got)) == vals(std::get<4>(want)));
    CHECK(vals(std::get<5>(got)) == vals(std::get<5>(want)));
    CHECK(vals(std::get<6>(got)) == vals(std::get<6>(want)));
    CHECK(vals(std::get<7>(got)) == vals(std::get<7>(want)));
    CHECK(vals(std::get<8>(got)) == vals(std::get<8>(want)));
    check_close(std::get<9>(got), std::get<9>(want), 1e-5);
    check_close(std::get<10>(got), std::get<10>(want), 1e-12);
  }
}

// The narrow randints, array-valued bounds and fold_in (issue 17): bounds
// passed as arguments, so they are tracers in the kernel.
auto more_random(const auto& k, const auto& lo, const auto& hi, const auto& p, const auto& d) {
  return std::tuple{dyn::random::randint<i8>(k, {37}, -100, 100),
                    dyn::random::randint<u8>(k, {5, 3}, 0, 255),
                    dyn::random::randint<i16>(k, {9}, -3000, 3000),
                    dyn::random::randint<u16>(k, {1}, 7, 9),
                    dyn::random::randint<i32>(k, {4, 3}, lo, hi),
                    dyn::random::uniform<float>(k, {2, 3}, dyn::astype<float>(lo), 10.0f),
                    dyn::random::bernoulli(k, p, {6, 4}),
                    dyn::random::fold_in(k, d),
                    dyn::random::fold_in(k, 12345)};
}

TEST_CASE("jit random: narrow randint, array-valued bounds and fold_in give eager's bits") {
  const auto jf = dyn::jit([](dyn::Tracer<u32> k, dyn::Tracer<i32> lo, dyn::Tracer<i32> hi, dyn::Tracer<float> p,
                              dyn::Tracer<u32> d) { return more_random(k, lo, hi, p, d); });
  const Array<i32> lo({3}, {0, -5, 100}), hi({4, 1}, {10, 1, 1000, -7});
  const Array<float> p({4}, {0.1f, 0.5f, 0.9f, 1.0f});
  for (const Array<u32>& key : {dyn::random::key(0), dyn::random::key(42)}) {
    const Array<u32> d({}, {77u});
    const auto got = jf(key, lo, hi, p, d);
    const auto want = more_random(key, lo, hi, p, d);
    CHECK(vals(std::get<0>(got)) == vals(std::get<0>(want)));
    CHECK(vals(std::get<1>(got)) == vals(std::get<1>(want)));
    CHECK(vals(std::get<2>(got)) == vals(std::get<2>(want)));
    CHECK(vals(std::get<3>(got)) == vals(std::get<3>(want)));
    CHECK(vals(std::get<4>(got)) == vals(std::get<4>(want)));
    CHECK(vals(std::get<5>(got)) == vals(std::get<5>(want)));
    CHECK(vals(std::get<6>(got)) == vals(std::get<6>(want)));
    CHECK(vals(std::get<7>(got)) == vals(std::get<7>(want)));
    CHECK(vals(std::get<8>(got)) == vals(std::get<8>(want)));
  }
}

TEST_CASE("jit random: a key made inside the jitted function (a constant) and a split chain in a loop-free body") {
  const auto jf = dyn::jit([](dyn::Tracer<float> x) {
    auto k = dyn::random::key(7);
    for (int i = 0; i < 3; ++i) k = dyn::random::split(k).first;
    return x + dyn::random::uniform<float>(k, {4});
  });
  auto k = dyn::random::key(7);
  for (int i = 0; i < 3; ++i) k = dyn::random::split(k).first;
  const Array<float> x({4}, {1, 2, 3, 4});
  CHECK(vals(jf(x)) == vals(x + dyn::random::uniform<float>(k, {4})));
}

}  // namespace
