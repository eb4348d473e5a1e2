// The collectives in compiled kernels (issue 22): dyn::jit of a shard_map'ed
// function compiles the same kernel on every rank for its block; each
// collective equation is a call of the runtime entry point
// dynstage_collective (llvm/lower_sort.hpp) between the kernel's loop nests.
// Results equal the eager calls bitwise; a collective's error (the ranks'
// blocks differ) is the eager one, on every rank.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using test_util::message_of;

int R() { return dyn::distributed::rank(); }
int N() { return dyn::distributed::size(); }

template <class T>
bool same_bits(const Array<T>& a, const Array<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0;
}

Array<double> local(std::int64_t rows, std::int64_t cols) {
  Array<double> a({rows, cols});
  for (std::int64_t i = 0; i < a.size(); ++i) a.mutable_data()[i] = 0.1 * (i + 1) + 1.0 / (R() + i + 3);
  return a;
}

}  // namespace

TEST_CASE("distributed jit: every collective compiled equals its eager call bitwise") {
  dyn::Mesh mesh({"x"}, {N()});
  std::vector<std::pair<std::int64_t, std::int64_t>> ring;
  for (int r = 0; r < N(); ++r) ring.push_back({r, (r + 1) % N()});
  auto f = [&](auto x) {
    auto s = dyn::psum(x * 2.0 + 1.0, "x");          // an elementwise producer, materialised for the call
    auto m = dyn::pmax(x, "x") - dyn::pmin(x, "x");
    auto g = dyn::all_gather(s + m, "x", 1, true);   // (r, N c)
    auto p = dyn::ppermute(g, "x", ring);
    auto i = dyn::astype<double>(dyn::axis_index("x", x));
    return p + i;  // (no exp, no sum: libmvec and reassociated sums would round differently, docs/backend.md)
  };
  auto g = dyn::shard_map(f, mesh, {dyn::P("x")}, dyn::P("x"));
  const Array<double> x = local(3, 4);
  const Array<double> eager = g(x);
  const Array<double> jitted = dyn::jit(g)(x);
  CHECK(same_bits(jitted, eager));
  // all_to_all: (N, 2) rows of this rank -> column blocks.
  auto a2a = dyn::shard_map([](auto v) { return dyn::all_to_all(v * 1.0, "x", 0, 1, true); }, mesh, {dyn::P("x")},
                            dyn::P("x"));
  const Array<double> y = local(N(), 2);
  CHECK(same_bits(dyn::jit(a2a)(y), a2a(y)));
}

TEST_CASE("distributed jit: a halo exchange step with ppermute, against eager and one process") {
  dyn::Mesh mesh({"x"}, {N()});
  std::vector<std::pair<std::int64_t, std::int64_t>> down, up;
  for (int r = 0; r + 1 < N(); ++r) {
    down.push_back({r, r + 1});
    up.push_back({r + 1, r});
  }
  // One Jacobi step of u on rows [r b, (r+1) b) of an (N b, c) grid, zero outside.
  auto step = [&](auto u) {
    auto b = u.shape(0);
    auto c = u.shape(1);
    auto from_above = dyn::ppermute(dyn::slice(u, {b - 1, 0}, {b, c}), "x", down);  // the upper neighbour's last row
    auto from_below = dyn::ppermute(dyn::slice(u, {0, 0}, {1, c}), "x", up);        // the lower neighbour's first row
    auto ext = dyn::concatenate({from_above, u, from_below}, 0);
    auto p = dyn::pad(ext, {{0, 0, 0}, {1, 1, 0}}, 0.0);
    auto rows = b + 2, cols = c + 2;
    return 0.25 * (dyn::slice(p, {0, 1}, {rows - 2, cols - 1}) + dyn::slice(p, {2, 1}, {rows, cols - 1}) +
                   dyn::slice(p, {1, 0}, {rows - 1, cols - 2}) + dyn::slice(p, {1, 2}, {rows - 1, cols}));
  };
  auto g = dyn::shard_map(step, mesh, {dyn::P("x")}, dyn::P("x"));
  const Array<double> u = local(4, 5);
  CHECK(same_bits(dyn::jit(g)(u), g(u)));
}

TEST_CASE("distributed jit: blocks that differ between ranks are the eager ShapeError, on every rank") {
  if (N() == 1) return;
  dyn::Mesh mesh({"x"}, {N()});
  auto f = dyn::jit(dyn::shard_map([](auto v) { return dyn::psum(v * 2.0, "x"); }, mesh, {dyn::P("x")}, dyn::P()));
  const Array<double> x = R() == 0 ? Array<double>({3}, {1.0, 2.0, 3.0}) : Array<double>({2}, {1.0, 2.0});
  const std::string m = message_of<dyn::ShapeError>([&] { (void)f(x); });
  CHECK(m.find("psum over 'x': the ranks' blocks differ (index 0: f64[3], index 1: f64[2]") == 0);
  // The next call agrees again.
  const Array<double> ok({2}, {1.0, 2.0});
  CHECK(f(ok)(1) == 4.0 * N());
}

TEST_CASE("distributed jit: uneven blocks, one polymorphic kernel; only the reduced value meets the other ranks") {
  dyn::Mesh mesh({"x"}, {N()});
  // Rank r holds r + 2 rows: the block shapes differ, the psum'd scalar does not.
  auto f = dyn::shard_map([](auto x) { return dyn::psum(dyn::sum(x * x), "x"); }, mesh, {dyn::P("x")}, dyn::P());
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(b, 3)"});
  const Array<double> x = dyn::full<double>({R() + 2, 3}, 0.5);
  double want = 0;  // one process: 0.25 per element, blocks added in rank order
  for (int r = 0; r < N(); ++r) want += 0.25 * 3 * (r + 2);
  CHECK(jf(x)() == want);
  CHECK(jf(dyn::full<double>({R() + 3, 3}, 0.5))() == want + 0.75 * N());
  CHECK(jf.stats().compiles == 1);  // one kernel for every block height
}
