// dyn::segment_sum_offsets(data, offsets), as issue 16's CSR section asks
// for it: result[r] is the sum of data[offsets[r] : offsets[r + 1]] (m + 1
// offsets, m results), offsets clamped into [0, n], an empty or reversed
// range 0. Not jax.ops.segment_sum (a segment id per element: that is
// `zeros(m).at(ids).add(data)`): each case below also checks that the two
// forms agree bit for bit where they describe the same segments (each row is
// summed in order from 0 both ways). Eager, staged and interpreted
// (check_all_ways) against hand-computed numbers; the golden jaxpr; bad
// input; jvp, grad against finite differences; vmap against a loop.
#include "ops_test.hpp"

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using namespace ops_test;
using test_util::message_of;
using test_util::str;

// The per-element row ids of monotone offsets (CSR's row_of_nz).
std::vector<i32> row_ids(const std::vector<i32>& off) {
  std::vector<i32> ids;
  for (std::size_t r = 0; r + 1 < off.size(); ++r)
    for (i32 k = off[r]; k < off[r + 1]; ++k) ids.push_back(static_cast<i32>(r));
  return ids;
}

const auto seg = [](const auto& d, const auto& o) { return dyn::segment_sum_offsets(d, o); };

}  // namespace

TEST_CASE_TEMPLATE("segment_sum_offsets: row sums over offsets, empty rows 0", T, i32, i64, float, double) {
  // Rows [0, 2), [2, 2) (empty), [2, 5), [5, 6).
  const auto d = mk<T>({6}, {1, 2, 3, 4, 5, 6});
  const auto o = mk<i32>({5}, {0, 2, 2, 5, 6});
  CHECK_ARR(T, check_all_ways(seg, d, o), {4}, {3, 0, 12, 6});
  // i64 offsets, and offsets of another integer dtype (converted to i32).
  CHECK_ARR(T, check_all_ways(seg, d, mk<i64>({3}, {1, 4, 6})), {2}, {9, 11});
  CHECK_ARR(T, check_all_ways(seg, d, mk<std::int16_t>({3}, {0, 3, 6})), {2}, {6, 15});
  // One offset: no rows.
  CHECK_ARR(T, check_all_ways(seg, d, mk<i32>({1}, {4})), {0}, {});
}

TEST_CASE("segment_sum_offsets: offsets clamp into [0, n]; a reversed range is 0") {
  const auto d = mk<double>({5}, {1, 2, 4, 8, 16});
  // [-3, 2) -> [0, 2); [2, 99) -> [2, 5); [99, 1) reversed; [1, -1) reversed; [-1, 3) -> [0, 3)
  const auto o = mk<i64>({6}, {-3, 2, 99, 1, -1, 3});
  CHECK_ARR(double, check_all_ways(seg, d, o), {5}, {3, 28, 0, 0, 7});
  // Empty data: every row 0.
  CHECK_ARR(float, check_all_ways(seg, mk<float>({0}, {}), mk<i32>({3}, {0, 1, 2})), {2}, {0, 0});
}

TEST_CASE("segment_sum_offsets: complex data") {
  const dyn::Array<std::complex<double>> d({3}, {{1, 2}, {3, -1}, {0.5, 0.25}});
  const auto r = check_all_ways(seg, d, mk<i32>({3}, {0, 2, 3}));
  REQUIRE(r.size() == 2);
  CHECK(r.data()[0] == std::complex<double>(4, 1));
  CHECK(r.data()[1] == std::complex<double>(0.5, 0.25));
}

TEST_CASE_TEMPLATE("segment_sum_offsets: bit-identical to the scatter-add form of the same rows", T, i32, i64, float,
                   double) {
  // 40 rows of 0..7 elements of awkward values (floats: no two sums round
  // alike unless added in the same order).
  std::vector<i32> off{0};
  std::vector<T> vals;
  std::uint64_t s = 12345;
  for (int r = 0; r < 40; ++r) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const i32 len = static_cast<i32>((s >> 33) % 8);
    for (i32 k = 0; k < len; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
      if constexpr (std::is_floating_point_v<T>) vals.push_back(static_cast<T>((u - 0.5) * std::pow(10.0, (s >> 7) % 9)));
      else vals.push_back(static_cast<T>((s >> 20) % 2000000001ull) - static_cast<T>(1000000000));  // wraps in i32
    }
    off.push_back(off.back() + len);
  }
  const auto n = static_cast<i64>(vals.size());
  const dyn::Array<T> d({n}, vals);
  const dyn::Array<i32> o({41}, off);
  const std::vector<i32> ids_v = row_ids(off);
  const dyn::Array<i32> ids({n}, ids_v);
  const auto a = check_all_ways(seg, d, o);
  const auto b = dyn::zeros<T>({40}).at(ids).add(d);
  CHECK(identical(a, b));
}

TEST_CASE("segment_sum_offsets: golden jaxpr; the length m is offsets' length - 1") {
  dyn::Array<double> d({6});
  dyn::Array<i32> o({4});
  CHECK(str(dyn::make_jaxpr(seg)(d, o)) ==
        "{ lambda ; a:f64[6] b:i32[4]. let c:f64[3] = segment_sum_offsets a b in (c,) }");
  // The CSR product: the gather is an operand of the segment sum.
  const auto csr = [](const auto& row_ptr, const auto& cols, const auto& vals, const auto& x) {
    return dyn::segment_sum_offsets(vals * x.at(cols).get(), row_ptr);
  };
  dyn::Array<i32> cols({6});
  dyn::Array<double> x({5});
  const std::string t = str(dyn::make_jaxpr(csr)(o, cols, d, x));
  CHECK(t.find("segment_sum_offsets") != std::string::npos);
  CHECK(t.find("gather") != std::string::npos);
  // Symbolic lengths: m + 1 offsets give m rows, a dimension expression.
  CHECK(str(dyn::make_jaxpr(seg, dyn::polymorphic_shapes{"(n,)", "(k,)"})(d, o)) ==
        "{ lambda ; a:i64[] b:i64[] c:f64[a] d:i32[b]. let\n"
        "    e:i64[] = sub b 1:i64[]\n"
        "    f:f64[e] = segment_sum_offsets c d\n"
        "  in (e, f) }");
}

TEST_CASE("segment_sum_offsets: bad input names the operation, the shapes and the dtypes") {
  const auto d = mk<double>({4}, {1, 2, 3, 4});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::segment_sum_offsets(d, mk<float>({3}, {0, 1, 4})); }) ==
        "segment_sum_offsets: offsets must be integers, got offsets f32[3] for data f64[4]");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::segment_sum_offsets(mk<double>({2, 2}, {1, 2, 3, 4}), mk<i32>({3}, {0, 1, 4})); }) ==
        "segment_sum_offsets data must have rank 1, got data shape (2, 2) with offsets shape (3,)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::segment_sum_offsets(d, mk<i32>({1, 2}, {0, 4})); }) ==
        "segment_sum_offsets offsets must have rank 1 (m + 1 row boundaries), got offsets shape (1, 2) with data "
        "shape (4,)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::segment_sum_offsets(d, mk<i32>({0}, {})); }) ==
        "segment_sum_offsets offsets must have at least one entry (m + 1 row boundaries for m rows), got offsets "
        "shape (0,) with data shape (4,)");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::segment_sum_offsets(mk<bool>({2}, {1, 0}), mk<i32>({2}, {0, 2})); }) ==
        "segment_sum_offsets does not accept dtype bool; it requires a numeric dtype (integer, floating-point or "
        "complex)");
  // Traced: the same, and the user's line is in the full message.
  const auto traced = [&] {
    (void)dyn::make_jaxpr([](const auto& x, const auto& o) { return dyn::segment_sum_offsets(x, o); })(d, mk<float>({2}, {0, 1}));
  };
  CHECK(message_of<dyn::TypeError>(traced) == "segment_sum_offsets: offsets must be integers, got offsets f32[2] for data f64[4]");
  try {
    traced();
  } catch (const dyn::TypeError& e) {
    CHECK(std::string(e.what()).find("test_segment_sum.cpp") != std::string::npos);
  }
}

TEST_CASE("segment_sum_offsets: jvp is linear in data; grad matches finite differences") {
  const auto d = mk<double>({6}, {0.5, -1.25, 2, 3.5, -0.75, 1});
  // Overlapping, reversed, out-of-range and empty rows: the cotangent sums
  // over every row whose clamped range holds an element.
  const auto o = mk<i32>({6}, {0, 3, 1, 6, 4, 9});
  const auto w = mk<double>({5}, {1.5, -2, 0.25, 3, -0.5});
  const auto f = [](const auto& x, const auto& off, const auto& wt) {
    return dyn::sum(dyn::segment_sum_offsets(x * x, off) * wt);
  };
  const auto [y, t] = dyn::jvp([&](const auto& x) { return dyn::segment_sum_offsets(x, o); }, std::tuple{d},
                               std::tuple{mk<double>({6}, {1, 0, 0, 0, 0, 1})});
  CHECK_ARR(double, t, {5}, {1, 0, 1, 0, 1});
  (void)y;
  const dyn::Array<double> g = dyn::grad(f)(d, o, w);
  REQUIRE(g.size() == 6);
  for (i64 k = 0; k < 6; ++k) {
    std::vector<double> p(d.data(), d.data() + 6), m = p;
    const double h = 1e-6;
    p[static_cast<std::size_t>(k)] += h;
    m[static_cast<std::size_t>(k)] -= h;
    const double fd = (f(dyn::Array<double>({6}, p), o, w).data()[0] - f(dyn::Array<double>({6}, m), o, w).data()[0]) / (2 * h);
    CHECK(g.data()[k] == doctest::Approx(fd).epsilon(1e-7));
  }
  // Hand-computed: d/dx_k = 2 x_k * (sum of w over rows holding k).
  // rows: [0,3) w=1.5; [3,1) none; [1,6) w=0.25; [6,4) none; [4,6) w=-0.5 (9 clamps to 6)
  const std::vector<double> cover{1.5, 1.75, 1.75, 0.25, -0.25, -0.25};
  for (i64 k = 0; k < 6; ++k) CHECK(g.data()[k] == doctest::Approx(2 * d.data()[k] * cover[static_cast<std::size_t>(k)]));
}

TEST_CASE("segment_sum_offsets: vmap over data, offsets or both matches a loop") {
  const auto ds = mk<double>({3, 5}, {1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 0.5, 0.25, 0.125, 1, 2});
  const auto os = mk<i32>({3, 4}, {0, 2, 2, 5, 1, 4, 9, 3, 5, 0, -1, 5});
  const auto d0 = mk<double>({5}, {1, 2, 3, 4, 5});
  const auto o0 = mk<i32>({4}, {0, 1, 3, 5});
  auto row = [](const auto& a, i64 i) { return dyn::reshape(dyn::slice_in_dim(a, i, i + 1, 1, 0), {a.shape(1)}); };
  const auto both = dyn::vmap(seg)(ds, os);
  const auto data_only = dyn::vmap(seg, {0, dyn::none})(ds, o0);
  const auto offs_only = dyn::vmap(seg, {dyn::none, 0})(d0, os);
  REQUIRE(both.shape() == std::vector<i64>{3, 3});
  for (i64 i = 0; i < 3; ++i) {
    CHECK(identical(row(both, i), seg(row(ds, i), row(os, i))));
    CHECK(identical(row(data_only, i), seg(row(ds, i), o0)));
    CHECK(identical(row(offs_only, i), seg(d0, row(os, i))));
  }
  // Traced, with a batch axis other than 0.
  const auto t = dyn::make_jaxpr(dyn::vmap(seg, {1, 0}))(dyn::transpose(ds, {1, 0}), os);
  CHECK(dyn::to_string(t).find("segment_sum_offsets") != std::string::npos);
  CHECK(identical(dyn::eval_jaxpr(t, {dyn::AnyArray(dyn::transpose(ds, {1, 0})), dyn::AnyArray(os)}).at(0), both));
}

TEST_CASE("segment_sum_offsets: the primitive's rule (hand-built equations, check_jaxpr) names the op and the types") {
  using dyn::detail::Aval;
  using dyn::detail::Prim;
  const auto av = [](dyn::DType d, dyn::Shape s) {
    Aval a;
    a.dtype = d;
    a.shape = std::move(s);
    return a;
  };
  const auto ae = [](const std::vector<Aval>& in) {
    return dyn::detail::abstract_eval(Prim::segment_sum_offsets, in, dyn::detail::NoParams{});
  };
  using dyn::DType;
  using dyn::Dim;
  const auto r = ae({av(DType::c64, {Dim(7)}), av(DType::i64, {Dim(4)})});
  REQUIRE(r.size() == 1);
  CHECK(r[0].dtype == DType::c64);
  CHECK(r[0].shape == dyn::Shape{Dim(3)});
  CHECK(message_of<dyn::TypeError>([&] { (void)ae({av(DType::f64, {Dim(4)}), av(DType::f32, {Dim(3)})}); }) ==
        "segment_sum_offsets offsets must have an integer dtype, got offsets f32[3] for data f64[4]");
  CHECK(message_of<dyn::TypeError>([&] { (void)ae({av(DType::f64, {Dim(4)}), av(DType::i16, {Dim(3)})}); }) ==
        "segment_sum_offsets offsets must have dtype i32 or i64, got i16[3]; convert them (dyn::segment_sum_offsets "
        "does)");
  CHECK(message_of<dyn::TypeError>([&] { (void)ae({av(DType::f64, {Dim(4)})}); }) ==
        "segment_sum_offsets takes 2 operands, got 1");
  // The numpy layer converts other integer offsets first.
  CHECK(str(dyn::make_jaxpr(seg)(dyn::Array<float>({4}), dyn::Array<std::uint8_t>({3}))) ==
        "{ lambda ; a:f32[4] b:u8[3]. let\n"
        "    c:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
        "    d:f32[2] = segment_sum_offsets a c\n"
        "  in (d,) }");
}
