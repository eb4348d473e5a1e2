// dyn::jit of segment_sum_offsets (llvm/lower_scatter.hpp, emit_segment_sum):
// one loop over the rows, each row's clamped range summed in order from 0, so
// the compiled kernel is bit-identical to eager (and to the scatter-add form
// of the same rows) for every dtype; the data producer (CSR's gather
// x[cols] * vals) is computed inline, without a temporary; one kernel serves
// every length under polymorphic shapes; grad and vmap compile.
#include <doctest/doctest.h>

#include <dynstage/dynstage.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using i32 = std::int32_t;
using i64 = std::int64_t;

std::uint64_t step(std::uint64_t& s) { return s = s * 6364136223846793005ull + 1442695040888963407ull; }

// m rows of 0..maxlen elements: row_ptr (m + 1, from 0, non-decreasing).
std::vector<i32> row_ptr(i64 m, int maxlen, std::uint64_t seed) {
  std::vector<i32> off{0};
  for (i64 r = 0; r < m; ++r) off.push_back(off.back() + static_cast<i32>((step(seed) >> 33) % static_cast<std::uint64_t>(maxlen + 1)));
  return off;
}

template <class T>
dyn::Array<T> values(i64 n, std::uint64_t seed) {
  std::vector<T> v;
  for (i64 k = 0; k < n; ++k) {
    const double u = static_cast<double>(step(seed) >> 11) / 9007199254740992.0 - 0.5;
    if constexpr (dyn::is_complex_v<T>) v.push_back(T(u * 1e3, static_cast<double>(step(seed) >> 11) / 9007199254740992.0));
    else if constexpr (std::is_floating_point_v<T>) v.push_back(static_cast<T>(u * std::pow(10.0, (step(seed) >> 7) % 9)));
    else v.push_back(static_cast<T>(static_cast<i64>((step(seed) >> 20) % 2000000001ull) - 1000000000));
  }
  return dyn::Array<T>({n}, v);
}

template <class T>
bool same_bits(const dyn::Array<T>& a, const dyn::Array<T>& b) {
  if (a.shape() != b.shape()) return false;
  for (i64 k = 0; k < a.size(); ++k) {
    if constexpr (dyn::is_complex_v<T>) {
      if (test_util::ulp_distance(a.data()[k].real(), b.data()[k].real()) != 0 ||
          test_util::ulp_distance(a.data()[k].imag(), b.data()[k].imag()) != 0)
        return false;
    } else if constexpr (std::is_floating_point_v<T>) {
      if (test_util::ulp_distance(a.data()[k], b.data()[k]) != 0) return false;
    } else if (a.data()[k] != b.data()[k]) {
      return false;
    }
  }
  return true;
}

const auto seg = [](const auto& d, const auto& o) { return dyn::segment_sum_offsets(d, o); };

}  // namespace

TEST_CASE_TEMPLATE("jit: segment_sum_offsets is bit-identical to eager and to the scatter-add form", T, i32, i64, float,
                   double, std::complex<double>) {
  const auto jf = dyn::jit(seg);
  for (i64 m : {0, 1, 7, 300}) {
    const std::vector<i32> off = row_ptr(m, 9, 100 + static_cast<std::uint64_t>(m));
    const dyn::Array<T> d = values<T>(off.back(), 200 + static_cast<std::uint64_t>(m));
    const dyn::Array<i32> o({m + 1}, off);
    const auto got = jf(d, o);
    CHECK(same_bits(got, dyn::Array<T>(seg(d, o))));
    std::vector<i32> ids;
    for (i64 r = 0; r < m; ++r)
      for (i32 k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1]; ++k) ids.push_back(static_cast<i32>(r));
    const dyn::Array<i32> id({off.back()}, ids);
    const auto scat = dyn::jit([](const auto& d2, const auto& i2, const auto& o2) {
      return dyn::zeros<dyn::detail::elem_t<std::remove_cvref_t<decltype(d2)>>>({o2.shape(0) - 1}).at(i2).add(d2);
    })(d, id, o);
    CHECK(same_bits(got, scat));
  }
}

TEST_CASE("jit: segment_sum_offsets clamps offsets, sums reversed ranges to 0, takes i64 offsets") {
  const dyn::Array<double> d({5}, {1, 2, 4, 8, 16});
  const dyn::Array<i64> o({6}, {-3, 2, 99, 1, -1, 3});
  const auto r = dyn::jit(seg)(d, o);
  REQUIRE(r.size() == 5);
  const std::vector<double> want{3, 28, 0, 0, 7};
  for (i64 k = 0; k < 5; ++k) CHECK(r.data()[k] == want[static_cast<std::size_t>(k)]);
  // No data: zeros.
  const auto z = dyn::jit(seg)(dyn::Array<float>({0}), dyn::Array<i32>({3}, {0, 4, 1}));
  REQUIRE(z.size() == 2);
  CHECK(z.data()[0] == 0.0f);
  CHECK(z.data()[1] == 0.0f);
}

TEST_CASE("jit: the CSR product by segment_sum_offsets fuses the gather: no temporary, the hand loop's bits") {
  const auto csr = [](const auto& rp, const auto& cols, const auto& vals, const auto& x) {
    return dyn::segment_sum_offsets(vals * x.at(cols).get(), rp);
  };
  const i64 rows = 500;
  const std::vector<i32> off = row_ptr(rows, 12, 7);
  const i64 nnz = off.back();
  std::uint64_t s = 11;
  std::vector<i32> cv;
  for (i64 k = 0; k < nnz; ++k) cv.push_back(static_cast<i32>((step(s) >> 33) % static_cast<std::uint64_t>(rows)));
  const dyn::Array<i32> rp({rows + 1}, off), cols({nnz}, cv);
  const auto vals = values<double>(nnz, 12);
  const auto x = values<double>(rows, 13);
  const auto jf = dyn::jit(csr);
  // One nest over the rows reads vals and x through cols: nothing allocated
  // but the result (the kernel mallocs only cells; static sizes: none).
  const std::string ir = jf.llvm_ir(rp, cols, vals, x);
  CHECK(ir.find("malloc") == std::string::npos);
  const auto y = jf(rp, cols, vals, x);
  REQUIRE(y.size() == rows);
  for (i64 r = 0; r < rows; ++r) {
    double acc = 0;
    for (i32 k = off[static_cast<std::size_t>(r)]; k < off[static_cast<std::size_t>(r) + 1]; ++k) acc += vals.data()[k] * x.data()[cv[static_cast<std::size_t>(k)]];
    CHECK(test_util::ulp_distance(y.data()[r], acc) == 0);
  }
}

TEST_CASE("jit: one kernel serves every length of a polymorphic segment sum") {
  const auto jf = dyn::jit(seg, dyn::polymorphic_shapes{"(n,)", "(k,)"});
  for (i64 m : {3, 40, 1, 0, 17}) {
    const std::vector<i32> off = row_ptr(m, 6, 300 + static_cast<std::uint64_t>(m));
    const auto d = values<float>(off.back() + 2, 400 + static_cast<std::uint64_t>(m));  // two trailing elements no row reads
    const dyn::Array<i32> o({m + 1}, off);
    const auto got = jf(d, o);
    CHECK(got.shape() == std::vector<i64>{m});
    CHECK(same_bits(got, dyn::Array<float>(seg(d, o))));
  }
  CHECK(jf.stats().compiles == 1);
}

TEST_CASE("jit: grad and vmap of segment_sum_offsets compile and agree with eager") {
  const dyn::Array<double> d({6}, {0.5, -1.25, 2, 3.5, -0.75, 1});
  const dyn::Array<i32> o({6}, {0, 3, 1, 6, 4, 9});
  const dyn::Array<double> w({5}, {1.5, -2, 0.25, 3, -0.5});
  const auto f = [](const auto& x, const auto& off, const auto& wt) {
    return dyn::sum(dyn::segment_sum_offsets(x * x, off) * wt);
  };
  const auto gj = dyn::jit(dyn::grad(f))(d, o, w);
  const auto ge = dyn::grad(f)(d, o, w);
  REQUIRE(gj.size() == 6);
  for (i64 k = 0; k < 6; ++k) CHECK(gj.data()[k] == doctest::Approx(ge.data()[k]).epsilon(1e-14));
  const dyn::Array<double> ds({2, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50});
  const dyn::Array<i32> os({2, 4}, {0, 2, 2, 5, 1, 4, 9, 3});
  const auto vj = dyn::jit(dyn::vmap(seg))(ds, os);
  const auto ve = dyn::vmap(seg)(ds, os);
  CHECK(same_bits(vj, ve));
}

TEST_CASE("jit: a float offsets array is a TypeError naming the op, and the function stays usable") {
  const auto jf = dyn::jit([](const auto& d, const auto& o) { return dyn::segment_sum_offsets(d, o); });
  CHECK(test_util::message_of<dyn::TypeError>([&] { (void)jf(dyn::Array<double>({3}), dyn::Array<float>({2})); }) ==
        "segment_sum_offsets: offsets must be integers, got offsets f32[2] for data f64[3]");
  const auto r = jf(dyn::Array<double>({3}, {1, 2, 3}), dyn::Array<i32>({2}, {0, 3}));
  CHECK(r.data()[0] == 6.0);
}

TEST_CASE("jit: a long segment sum runs whole rows a task on every core, the same bits for every thread count") {
  const int saved = dyn::num_threads();
  // 40,000 rows of up to 8 elements: well over two tasks' worth of work.
  const i64 m = 40000;
  const std::vector<i32> off = row_ptr(m, 8, 21);
  const auto d = values<double>(off.back(), 22);
  const dyn::Array<i32> o({m + 1}, off);
  const auto jf = dyn::jit(seg);
  dyn::set_num_threads(1);
  const auto one = jf(d, o);
  CHECK(same_bits(one, dyn::Array<double>(seg(d, o))));
  for (int t : {2, 3, 4}) {
    dyn::set_num_threads(t);
    dyn::detail::count_tasks().store(true);
    dyn::detail::tasks_run().store(0);
    const auto r = jf(d, o);
    dyn::detail::count_tasks().store(false);
    CHECK(dyn::detail::tasks_run().load() > 1);
    CHECK(same_bits(r, one));
  }
  dyn::set_num_threads(saved);
}
