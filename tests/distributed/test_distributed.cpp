// dyn::distributed, dyn::Mesh, dyn::P, dyn::shard_map and the collectives
// (API.md section 16, issue 22). One program for every world size: meson
// runs it alone (one rank: every collective over an axis of size 1), under
// `mpirun -np 2` and under `mpirun -np 4 --oversubscribe` (tests/meson.build).
// Every rank runs every test case; each compares what the ranks compute
// with what one process computes from the whole array, bitwise (the
// reductions add the blocks in rank order, which the reference repeats).
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using test_util::message_of;

int R() { return dyn::distributed::rank(); }
int N() { return dyn::distributed::size(); }

// The global array: n blocks of shape (b, 3), values that round when added.
Array<double> global(std::int64_t rows) {
  Array<double> a({rows, 3});
  double* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) p[i] = 0.1 * static_cast<double>(i) + 1.0 / static_cast<double>(i + 3);
  return a;
}
// Rows [r*b, (r+1)*b) of g.
Array<double> block(const Array<double>& g, std::int64_t r, std::int64_t b) {
  Array<double> a({b, g.shape()[1]});
  std::memcpy(a.mutable_data(), g.data() + r * b * g.shape()[1], static_cast<std::size_t>(a.size()) * sizeof(double));
  return a;
}
bool bitwise_equal(const Array<double>& a, const Array<double>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("distributed: rank and size; a 1-D mesh over every rank") {
  CHECK(dyn::distributed::initialized());
  CHECK(R() >= 0);
  CHECK(R() < N());
  dyn::Mesh mesh({"x"}, {N()});
  CHECK(mesh.size() == N());
  CHECK(mesh.axis_size("x") == N());
  CHECK(mesh.axis_names() == std::vector<std::string>{"x"});
  CHECK(dyn::P("x", nullptr).str() == "P('x', None)");
  CHECK(dyn::P().str() == "P()");
}

TEST_CASE("distributed: psum, pmax, pmin equal the single-process reductions bitwise") {
  dyn::Mesh mesh({"x"}, {N()});
  const std::int64_t b = 2;
  const Array<double> g = global(b * N());
  const Array<double> mine = block(g, R(), b);
  // One process: the blocks added in rank order.
  Array<double> want = block(g, 0, b), wmax = want, wmin = want;
  for (int r = 1; r < N(); ++r) {
    const Array<double> x = block(g, r, b);
    for (std::int64_t i = 0; i < x.size(); ++i) {
      want.mutable_data()[i] = want.data()[i] + x.data()[i];
      wmax.mutable_data()[i] = std::max(wmax.data()[i], x.data()[i]);
      wmin.mutable_data()[i] = std::min(wmin.data()[i], x.data()[i]);
    }
  }
  auto f = dyn::shard_map([](auto x) { return dyn::psum(x, "x"); }, mesh, {dyn::P("x")}, dyn::P());
  CHECK(bitwise_equal(f(mine), want));
  auto fmax = dyn::shard_map([](auto x) { return dyn::pmax(x, "x"); }, mesh, {dyn::P("x")}, dyn::P());
  auto fmin = dyn::shard_map([](auto x) { return dyn::pmin(x, "x"); }, mesh, {dyn::P("x")}, dyn::P());
  CHECK(bitwise_equal(fmax(mine), wmax));
  CHECK(bitwise_equal(fmin(mine), wmin));
  // A NaN on the last rank wins on every rank (lax.max/min).
  Array<double> withnan = mine;
  if (R() == N() - 1) withnan.mutable_data()[1] = std::nan("");
  CHECK(std::isnan(fmax(withnan)(0, 1)));
  CHECK(std::isnan(fmin(withnan)(0, 1)));
  CHECK(fmax(withnan)(0, 0) == wmax(0, 0));
  // Integers too.
  auto fi = dyn::shard_map([](auto x) { return dyn::psum(x, "x"); }, mesh, {dyn::P()}, dyn::P());
  const Array<std::int32_t> one({2}, {1, R()});
  const Array<std::int32_t> s = fi(one);
  CHECK(s(0) == N());
  CHECK(s(1) == N() * (N() - 1) / 2);
}

TEST_CASE("distributed: all_gather (stacked and tiled) rebuilds the global array") {
  dyn::Mesh mesh({"x"}, {N()});
  const std::int64_t b = 3;
  const Array<double> g = global(b * N());
  const Array<double> mine = block(g, R(), b);
  auto tiled = dyn::shard_map([](auto x) { return dyn::all_gather(x, "x", 0, true); }, mesh, {dyn::P("x")}, dyn::P());
  CHECK(bitwise_equal(tiled(mine), g));
  auto stacked = dyn::shard_map([](auto x) { return dyn::all_gather(x, "x"); }, mesh, {dyn::P("x")}, dyn::P());
  const Array<double> s = stacked(mine);
  CHECK(s.shape() == std::vector<std::int64_t>{N(), b, 3});
  CHECK(std::memcmp(s.data(), g.data(), static_cast<std::size_t>(g.size()) * sizeof(double)) == 0);
  // Along axis 1: block r in columns [3r, 3r + 3).
  auto cols = dyn::shard_map([](auto x) { return dyn::all_gather(x, "x", 1, true); }, mesh, {dyn::P("x")}, dyn::P());
  const Array<double> c = cols(mine);
  CHECK(c.shape() == std::vector<std::int64_t>{b, 3 * N()});
  for (int r = 0; r < N(); ++r) CHECK(c(1, 3 * r + 2) == g(r * b + 1, 2));
}

TEST_CASE("distributed: ppermute shifts blocks around a ring; a rank nobody sends to gets zeros") {
  dyn::Mesh mesh({"x"}, {N()});
  const Array<double> g = global(2 * N());
  const Array<double> mine = block(g, R(), 2);
  std::vector<std::pair<std::int64_t, std::int64_t>> ring, open;
  for (int r = 0; r < N(); ++r) ring.push_back({r, (r + 1) % N()});
  for (int r = 0; r + 1 < N(); ++r) open.push_back({r, r + 1});
  auto shift = dyn::shard_map([&](auto x) { return dyn::ppermute(x, "x", ring); }, mesh, {dyn::P("x")}, dyn::P("x"));
  CHECK(bitwise_equal(shift(mine), block(g, (R() + N() - 1) % N(), 2)));
  if (N() > 1) {
    auto chain = dyn::shard_map([&](auto x) { return dyn::ppermute(x, "x", open); }, mesh, {dyn::P("x")}, dyn::P("x"));
    const Array<double> got = chain(mine);
    CHECK(bitwise_equal(got, R() == 0 ? dyn::zeros<double>({2, 3}) : block(g, R() - 1, 2)));
  }
}

TEST_CASE("distributed: axis_index is the rank's index; all_to_all transposes the blocks") {
  dyn::Mesh mesh({"x"}, {N()});
  auto idx = dyn::shard_map([](auto x) { return dyn::axis_index("x", x); }, mesh, {dyn::P()}, dyn::P("x"));
  CHECK(idx(Array<double>::scalar(0))() == R());
  // API.md section 16's form, axis_index("x"), in an eager shard_map too
  // (it traces f once and runs the jaxpr: transform/shard_map_eager.hpp)
  auto shifted = dyn::shard_map([](auto x) { return std::tuple{x + dyn::astype<double>(dyn::axis_index("x")), dyn::axis_index("x")}; },
                                mesh, {dyn::P("x")}, {dyn::P("x"), dyn::P("x")});
  const auto [sx, si] = shifted(Array<double>({2}, {1.0, 2.0}));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(si)>, Array<std::int32_t>>);
  CHECK(sx(0) == 1.0 + R());
  CHECK(sx(1) == 2.0 + R());
  CHECK(si() == R());
  // Block r is rows r of an (n, n) matrix M (M[i][j] = 10 i + j): tiled
  // all_to_all splitting the columns and concatenating the rows gives rank
  // r column r, i.e. row r of M's transpose.
  Array<double> row({1, N()});
  for (int j = 0; j < N(); ++j) row.mutable_data()[j] = 10.0 * R() + j;
  auto a2a = dyn::shard_map([](auto x) { return dyn::all_to_all(x, "x", 1, 0, true); }, mesh, {dyn::P("x")}, dyn::P("x"));
  const Array<double> col = a2a(row);
  REQUIRE(col.shape() == std::vector<std::int64_t>{N(), 1});
  for (int i = 0; i < N(); ++i) CHECK(col(i, 0) == 10.0 * i + R());
}

TEST_CASE("distributed: a 2-D mesh: collectives over one axis or both") {
  if (N() != 4) return;
  dyn::Mesh mesh({"x", "y"}, {2, 2});
  const int x = R() / 2, y = R() % 2;
  const Array<std::int32_t> v = Array<std::int32_t>::scalar(1 << R());
  auto over_y = dyn::shard_map([](auto a) { return dyn::psum(a, "y"); }, mesh, {dyn::P()}, dyn::P());
  auto over_x = dyn::shard_map([](auto a) { return dyn::psum(a, "x"); }, mesh, {dyn::P()}, dyn::P());
  auto both = dyn::shard_map([](auto a) { return dyn::psum(a, {"x", "y"}); }, mesh, {dyn::P()}, dyn::P());
  CHECK(over_y(v)() == (3 << (2 * x)));  // ranks 2x and 2x+1
  CHECK(over_x(v)() == (5 << y));        // ranks y and 2+y
  CHECK(both(v)() == 15);
  auto ix = dyn::shard_map([](auto a) { return dyn::axis_index("x", a); }, mesh, {dyn::P()}, dyn::P());
  auto iy = dyn::shard_map([](auto a) { return dyn::axis_index("y", a); }, mesh, {dyn::P()}, dyn::P());
  auto ixy = dyn::shard_map([](auto a) { return dyn::axis_index({"x", "y"}, a); }, mesh, {dyn::P()}, dyn::P());
  CHECK(ix(v)() == x);
  CHECK(iy(v)() == y);
  CHECK(ixy(v)() == R());
}

TEST_CASE("distributed: the jaxpr has the collectives with their axis names, as JAX prints them") {
  dyn::Mesh mesh({"x"}, {N()});
  auto f = dyn::shard_map(
      [](auto x) {
        auto s = dyn::psum(x * 2.0, "x");
        auto g = dyn::all_gather(s, "x", 0, true);
        auto p = dyn::ppermute(g, "x", {{0, 0}});
        return p + dyn::astype<double>(dyn::axis_index("x", x));
      },
      mesh, {dyn::P("x")}, dyn::P());
  const std::string n = std::to_string(N());
  const std::string text = test_util::str(dyn::make_jaxpr(f)(Array<double>({2}, {1.0, 2.0})));
  CHECK(text.find("psum[axes=('x',) axis_index_groups=None] b") != std::string::npos);
  CHECK(text.find("all_gather[\n      all_gather_dimension=0\n      axis_index_groups=None\n      axis_name=('x',)\n      axis_size=" + n +
                  "\n      tiled=True\n    ] c") != std::string::npos);
  CHECK(text.find("ppermute[axis_name=x perm=((0, 0),)] d") != std::string::npos);
  CHECK(text.find("axis_index[axis_name=x] ") != std::string::npos);
  INFO(text);
  // eval_jaxpr of the traced program communicates as the eager call does.
  const auto jx = dyn::make_jaxpr(f)(Array<double>({2}, {1.0, 2.0}));
  const Array<double> a({2}, {1.0 + R(), 2.0});
  CHECK(bitwise_equal(dyn::eval_jaxpr(jx, {dyn::AnyArray(a)}).at(0).get<double>(), f(a)));
}

TEST_CASE("distributed: grad and vmap pass through the collectives") {
  dyn::Mesh mesh({"x"}, {N()});
  // Each rank's output is its own value: the gradient of the sum over ranks
  // of sum(psum(x*x)) is 2 n x on every rank.
  auto loss = dyn::shard_map([](auto x) { return dyn::sum(dyn::psum(x * x, "x")); }, mesh, {dyn::P("x")}, dyn::P());
  const Array<double> x({3}, {1.0, -2.0, 0.5 + R()});
  const Array<double> gx = dyn::grad(loss)(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(gx(i) == 2.0 * N() * x(i));
  // all_gather's transpose is a reduce-scatter: d/dx_r sum_ranks(sum(w * all_gather(x))) = n w[r].
  auto gl = dyn::shard_map(
      [](auto v) {
        auto w = dyn::astype<double>(dyn::arange<std::int32_t>(3 * dyn::distributed::size())) + 1.0;
        return dyn::sum(w * dyn::all_gather(v, "x", 0, true));
      },
      mesh, {dyn::P("x")}, dyn::P());
  const Array<double> gg = dyn::grad(gl)(x);
  for (std::int64_t i = 0; i < 3; ++i) CHECK(gg(i) == static_cast<double>(N()) * (3.0 * R() + i + 1.0));
  // ppermute's transpose is the inverse permutation.
  std::vector<std::pair<std::int64_t, std::int64_t>> ring;
  for (int r = 0; r < N(); ++r) ring.push_back({r, (r + 1) % N()});
  auto pl = dyn::shard_map([&](auto v) { return dyn::sum(dyn::ppermute(v, "x", ring) * v); }, mesh, {dyn::P("x")},
                           dyn::P());
  // sum_r <x_{r-1}, x_r>: d/dx_r = x_{r-1} + x_{r+1}.
  const Array<double> gp = dyn::grad(pl)(x);
  const double prev = 0.5 + (R() + N() - 1) % N(), next = 0.5 + (R() + 1) % N();
  CHECK(gp(0) == 2.0);
  CHECK(gp(1) == -4.0);
  CHECK(gp(2) == prev + next);
  // vmap: a batch of blocks, each psum'd.
  auto batched = dyn::shard_map(dyn::vmap([](auto v) { return dyn::psum(v, "x"); }), mesh, {dyn::P(nullptr, "x")},
                                dyn::P());
  const Array<double> xs({2, 3}, {1.0 * R(), 2.0, 3.0, 4.0, 5.0, 6.0 * R()});
  const Array<double> s = batched(xs);
  CHECK(s(0, 0) == N() * (N() - 1) / 2.0);
  CHECK(s(1, 2) == 6.0 * N() * (N() - 1) / 2.0);
  CHECK(s(0, 1) == 2.0 * N());
}

TEST_CASE("distributed: misuse is a typed error on every rank, and no rank blocks") {
  dyn::Mesh mesh({"x"}, {N()});
  const Array<double> x({2}, {1.0, 2.0});
  // Outside shard_map.
  CHECK(message_of<dyn::NameError>([&] { (void)dyn::psum(x, "x"); }).find(
            "psum: unbound axis name 'x': a collective is only defined inside dyn::shard_map") == 0);
  // A name the mesh does not have.
  auto bad = dyn::shard_map([](auto v) { return dyn::psum(v, "y"); }, mesh, {dyn::P("x")}, dyn::P());
  CHECK(message_of<dyn::NameError>([&] { (void)bad(x); }).find("psum: unbound axis name 'y': the mesh's axes are ('x',)") ==
        0);
  CHECK(message_of<dyn::NameError>([&] {
          (void)dyn::shard_map([](auto v) { return v; }, mesh, {dyn::P("z")}, dyn::P());
        }).find("shard_map: in_specs P('z') names axis 'z', which the mesh does not have") == 0);
  // A mesh that is not the world.
  CHECK(message_of<dyn::ShapeError>([&] { dyn::Mesh m({"x"}, {N() + 1}); }).find("dyn::Mesh: the mesh ('x',) of shape (") ==
        0);
  // Blocks of different shapes: rank 0 passes 3 elements, the others 2.
  auto f = dyn::shard_map([](auto v) { return dyn::psum(v, "x"); }, mesh, {dyn::P("x")}, dyn::P());
  const Array<double> uneven = R() == 0 ? Array<double>({3}, {1.0, 2.0, 3.0}) : Array<double>({2}, {1.0, 2.0});
  if (N() > 1) {
    const std::string m = message_of<dyn::ShapeError>([&] { (void)f(uneven); });
    CHECK(m.find("psum over 'x': the ranks' blocks differ (index 0: f64[3], index 1: f64[2]") == 0);
  }
  // Afterwards the ranks still agree: the next collective runs.
  CHECK(f(x)(1) == 2.0 * N());
  // A permutation out of range, or with a repeated destination.
  auto oob = dyn::shard_map([&](auto v) { return dyn::ppermute(v, "x", {{0, N()}}); }, mesh, {dyn::P("x")}, dyn::P());
  CHECK(message_of<dyn::IndexError>([&] { (void)oob(x); }).find("ppermute: the pair (0, " + std::to_string(N()) + ")") == 0);
}
