// Buffer assignment (llvm/buffers.hpp, docs/backend.md "Buffer assignment"):
// loops whose carry is updated by dynamic_update_slice or a scatter update
// it in place, and updates of a temporary nothing reads afterwards reuse
// its buffer. Results against eager; the copy counter (backend.hpp,
// detail::count_copies) proves that an iteration moves O(row) bytes, not
// O(array).
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.hpp"

namespace {

using dyn::Array;
using i64 = std::int64_t;

// Counts the bytes the kernels compiled and run inside `f` copy.
template <class F>
i64 bytes_copied(F&& f) {
  dyn::detail::count_copies().store(true);
  dyn::detail::copied_bytes().store(0);
  f();
  dyn::detail::count_copies().store(false);
  return dyn::detail::copied_bytes().load();
}

Array<double> matrix(i64 n, i64 m) {
  std::vector<double> v(static_cast<std::size_t>(n * m));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = 1.0 + static_cast<double>(k % 17) * 0.25;
  return Array<double>({n, m}, v);
}

template <class I>
auto as_f64(const I& i) {
  if constexpr (std::is_arithmetic_v<I>) return static_cast<double>(i);
  else return dyn::astype<double>(i);
}

constexpr i64 N = 64, M = 100;
constexpr i64 kArrayBytes = N * M * 8, kRowBytes = M * 8;

// Row i becomes 2 * row i + i: the update reads the carry itself.
auto row_update = [](auto a) {
  return dyn::for_loop(0, N, 1)([](auto i, auto c) {
    auto row = dyn::dynamic_slice(c, {i, i64{0}}, {1, M});
    return dyn::dynamic_update_slice(c, row * 2.0 + as_f64(i), {i, i64{0}});
  })(a);
};

}  // namespace

TEST_CASE("in place: a for_loop's row update of its carry equals eager and copies the array once, not once per iteration") {
  const Array<double> x = matrix(N, M);
  const Array<double> x0 = matrix(N, M);
  auto jf = dyn::jit(row_update);
  Array<double> r;
  const i64 bytes = bytes_copied([&] { r = jf(x); });
  CHECK(dyn::array_equal(r, Array<double>(dyn::eager(row_update)(x))));
  CHECK(dyn::array_equal(x, x0));  // the argument is not modified
  // The operand copied into the loop's buffer once, N row updates, the
  // result copied out: O(array + N * row). Per iteration copies would be
  // N * array = 64x more.
  CHECK(bytes > 0);
  CHECK(bytes <= 2 * kArrayBytes + N * kRowBytes);
}

TEST_CASE("in place: while_loop, scan and scatter-add bodies update their carry in place") {
  auto w = [](auto a) {
    auto r = dyn::while_loop([](auto k, auto) { return k < N; })([](auto k, auto c) {
      auto row = dyn::dynamic_slice(c, {k, i64{0}}, {1, M});
      return std::make_tuple(k + 1, dyn::dynamic_update_slice(c, dyn::sqrt(row) + 1.0, {k, i64{0}}));
    })(i64{0}, a);
    return std::get<1>(r);
  };
  auto sc = [](auto a, auto xs) {  // carry updated at row t by xs[t]; ys the row sums
    return dyn::scan(
        [](auto carry, auto x) {
          auto [c, t] = carry;
          auto c2 = dyn::dynamic_update_slice(c, dyn::reshape(x, {1, M}), {t, i64{0}});
          return std::tuple{std::tuple{c2, t + 1}, dyn::sum(x)};
        },
        std::tuple{a, i64{0}}, xs);
  };
  auto sa = [](auto a) {  // scatter-add of a row into row i
    return dyn::for_loop(0, N, 1)([](auto i, auto c) { return c.at(i).add(dyn::arange<double>(M) * as_f64(i)); })(a);
  };
  const Array<double> x = matrix(N, M);
  const Array<double> xs = matrix(N, M) * 3.0;
  auto jw = dyn::jit(w);
  auto jsc = dyn::jit(sc);
  auto jsa = dyn::jit(sa);
  Array<double> rw, rsa;
  std::tuple<std::tuple<Array<double>, Array<i64>>, Array<double>> rsc;
  CHECK(bytes_copied([&] { rw = jw(x); }) <= 2 * kArrayBytes + N * kRowBytes);
  CHECK(dyn::array_equal(rw, Array<double>(dyn::eager(w)(x))));
  CHECK(bytes_copied([&] { rsc = jsc(x, xs); }) <= 2 * kArrayBytes + N * kRowBytes + 64);  // (+ the i64 counter)
  auto esc = dyn::eager(sc)(x, xs);
  CHECK(dyn::array_equal(std::get<0>(std::get<0>(rsc)), Array<double>(std::get<0>(std::get<0>(esc)))));
  CHECK(dyn::allclose(std::get<1>(rsc), Array<double>(std::get<1>(esc))));
  CHECK(bytes_copied([&] { rsa = jsa(x); }) <= 2 * kArrayBytes + N * kRowBytes);
  CHECK(dyn::array_equal(rsa, Array<double>(dyn::eager(sa)(x))));
}

TEST_CASE("in place: nested loops hand the outer carry's buffer to the inner loop") {
  auto nest = [](auto a) {  // element (i, j) += i * j, one element per inner iteration
    return dyn::for_loop(0, N, 1)([](auto i, auto c) {
      return dyn::for_loop(0, 8, 1)([&](auto j, auto d) {
        auto e = dyn::dynamic_slice(d, {i, j}, {1, 1});
        return dyn::dynamic_update_slice(d, e + as_f64(i) * as_f64(j), {i, j});
      })(c);
    })(a);
  };
  const Array<double> x = matrix(N, M);
  auto jf = dyn::jit(nest);
  Array<double> r;
  const i64 bytes = bytes_copied([&] { r = jf(x); });
  CHECK(dyn::array_equal(r, Array<double>(dyn::eager(nest)(x))));
  // No copy per outer iteration (that would be N * array bytes).
  CHECK(bytes <= 2 * kArrayBytes + N * 8 * 8);
}

TEST_CASE("in place: a carry read after its update is copied, and the results are unchanged") {
  // State 1 is the previous value of state 0: the update must not clobber it.
  auto prev = [](auto a) {
    return dyn::for_loop(0, 5, 1)([](auto i, auto c, auto) {
      return std::make_tuple(dyn::dynamic_update_slice(c, dyn::zeros<double>({1, M}) + as_f64(i), {i, i64{0}}), c);
    })(a, a);
  };
  // The body reads the old carry after the update.
  auto after = [](auto a) {
    return dyn::for_loop(0, 5, 1)([](auto i, auto c) {
      auto u = dyn::dynamic_update_slice(c, dyn::zeros<double>({1, M}) + as_f64(i), {i, i64{0}});
      return u + c * 0.5;
    })(a);
  };
  // The argument is both the initial carry and a constant of the body.
  auto alias = [](auto a) {
    return dyn::for_loop(0, N, 1)([&](auto i, auto c) {
      return dyn::dynamic_update_slice(c, dyn::dynamic_slice(a, {(i + 1) % N, i64{0}}, {1, M}) * 2.0, {i, i64{0}});
    })(a);
  };
  const Array<double> x = matrix(N, M);
  const Array<double> x0 = matrix(N, M);
  auto rp = dyn::jit(prev)(x);
  auto ep = dyn::eager(prev)(x);
  CHECK(dyn::array_equal(std::get<0>(rp), Array<double>(std::get<0>(ep))));
  CHECK(dyn::array_equal(std::get<1>(rp), Array<double>(std::get<1>(ep))));
  CHECK(dyn::array_equal(Array<double>(dyn::jit(after)(x)), Array<double>(dyn::eager(after)(x))));
  CHECK(dyn::array_equal(Array<double>(dyn::jit(alias)(x)), Array<double>(dyn::eager(alias)(x))));
  CHECK(dyn::array_equal(x, x0));
}

TEST_CASE("in place: an update of a temporary nothing reads afterwards reuses its buffer") {
  auto f = [](auto x, auto u, auto i) {
    auto y = dyn::exp(x);  // a temporary (expensive, two consumers: a buffer)
    auto s = dyn::sum(y);
    auto z = dyn::dynamic_update_slice(y, u, {i});
    return s + z * 3.0;
  };
  auto g = [](auto x, auto u, auto i) {  // y is read after the update: no reuse
    auto y = dyn::exp(x);
    auto z = dyn::dynamic_update_slice(y, u, {i});
    return z + y;
  };
  auto h = [](auto x, auto u, auto i) {  // the update reads the operand: materialised first
    auto y = dyn::exp(x);
    auto z = dyn::dynamic_update_slice(y, dyn::dynamic_slice(y, {i + 1}, {2}) * u, {i});
    return z * 3.0;
  };
  std::vector<double> xv(200);
  for (std::size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<double>(k) * 0.01;
  const Array<double> x({200}, xv);
  const Array<double> u({2}, {5.0, 7.0});
  for (i64 i : {0, 3, 198}) {
    CHECK(dyn::allclose(Array<double>(dyn::jit(f)(x, u, i)), Array<double>(dyn::eager(f)(x, u, i))));
    CHECK(dyn::allclose(Array<double>(dyn::jit(g)(x, u, i)), Array<double>(dyn::eager(g)(x, u, i))));
    CHECK(dyn::allclose(Array<double>(dyn::jit(h)(x, u, i)), Array<double>(dyn::eager(h)(x, u, i))));
  }
  CHECK(dyn::jit(f).llvm_ir(x, u, i64{0}).find("in place of") != std::string::npos);
  CHECK(dyn::jit(g).llvm_ir(x, u, i64{0}).find("in place of") == std::string::npos);
  const std::string ih = dyn::jit(h).llvm_ir(x, u, i64{0});
  CHECK(ih.find("in place of") != std::string::npos);
  CHECK(ih.find("read by an in-place update") != std::string::npos);
}

// An update that reads its operand (anywhere but at the element it writes)
// and holds at least half of it is written in one pass into a buffer of its
// own (buffers.hpp; lower_windows.hpp, emit_update_pass): outside the window
// the operand, inside it the update, each element once. In place it would
// be computed into a temporary first and copied (4 accesses per element
// instead of 2). In a loop the state is then double buffered.
TEST_CASE("in place: a large update that reads its operand is one pass into a buffer of its own") {
  auto step = [](auto y) {
    const i64 r = N, c = M;
    auto lap = dyn::slice(y, {0, 0}, {r, c - 2}) + dyn::slice(y, {0, 2}, {r, c}) - 2.0 * dyn::slice(y, {0, 1}, {r, c - 1});
    return dyn::dynamic_update_slice(y, dyn::slice(y, {0, 1}, {r, c - 1}) + 0.25 * lap, {i64{0}, i64{1}});
  };
  auto once = [&](auto x) { return step(dyn::exp(x * 0.1)) * 2.0; };  // the operand: a temporary, owned
  const Array<double> x = matrix(N, M);
  const std::string ir = dyn::jit(once).llvm_ir(x);
  INFO(ir.substr(0, 600));
  CHECK(ir.find("dynamic_update_slice: buffer (dynamic_update_slice)\n") != std::string::npos);  // not in place
  CHECK(ir.find("read by an in-place update") == std::string::npos);
  // (exp: libmvec in the kernel, libm in eager: a few ulp)
  CHECK(dyn::allclose(dyn::jit(once)(x), dyn::eager(once)(x), 1e-13, 0.0));
  // A small update (one row) that reads its operand stays in place.
  auto row = [](auto x) {
    auto y = dyn::exp(x * 0.1);
    return dyn::dynamic_update_slice(y, dyn::slice(y, {1, 0}, {2, M}) * 2.0, {i64{0}, i64{0}}) * 2.0;
  };
  const std::string ir_row = dyn::jit(row).llvm_ir(x);
  CHECK(ir_row.find("in place of") != std::string::npos);
  CHECK(ir_row.find("read by an in-place update") != std::string::npos);
  CHECK(dyn::allclose(dyn::jit(row)(x), dyn::eager(row)(x), 1e-13, 0.0));
  // In a loop: one array written per iteration (the state double buffered),
  // nothing else copied but the result.
  auto loop = [&](auto x) { return dyn::for_loop(0, 5, 1)([&](auto, auto c) { return step(c); })(x); };
  auto jl = dyn::jit(loop);
  Array<double> r;
  const i64 bytes = bytes_copied([&] { r = jl(x); });
  CHECK(dyn::array_equal(r, Array<double>(dyn::eager(loop)(x))));
  CHECK(bytes >= 5 * kArrayBytes);
  CHECK(bytes <= 7 * kArrayBytes);
  // Three axes, a window inside on every axis, a start clamped into range,
  // rank 1 (one row), and a rank-1 window of a symbolic size.
  auto box = [](auto x, auto i) {
    auto y = dyn::exp(dyn::reshape(x, {4, 16, 100}) * 0.01);
    auto w = dyn::slice(y, {0, 1, 2}, {3, 15, 99}) * dyn::slice(y, {1, 0, 1}, {4, 14, 98});
    return dyn::dynamic_update_slice(y, w, {i, i64{1}, i64{2}});
  };
  for (i64 i : {i64{0}, i64{1}, i64{7}, i64{-3}}) {
    CAPTURE(i);
    CHECK(dyn::allclose(dyn::jit(box)(x, i), dyn::eager(box)(x, i), 1e-13, 0.0));
  }
  auto flat = [](auto v, auto i) {
    auto y = v * 3.0;
    return dyn::dynamic_update_slice(y, dyn::slice(y, {0}, {y.shape(0) - 1}) - dyn::slice(y, {1}, {y.shape(0)}), {i});
  };
  auto jflat = dyn::jit(flat, dyn::polymorphic_shapes{"(n,)", "()"});
  for (i64 n : {i64{2}, i64{9}, i64{1000}}) {
    const Array<double> v = dyn::reshape(matrix(1, n), {n});
    for (i64 i : {i64{0}, i64{1}, n}) {
      CHECK(dyn::array_equal(jflat(v, i), dyn::eager(flat)(v, i)));
      CHECK(dyn::array_equal(dyn::jit(flat)(v, i), dyn::eager(flat)(v, i)));  // static: one pass
    }
  }
  CHECK(jflat.stats().compiles == 1);
}

TEST_CASE("donate_argnums: a donated argument's buffer is updated in place and becomes the result") {
  auto jf = dyn::jit(row_update, dyn::donate_argnums<0>{});
  const Array<double> want = Array<double>(dyn::eager(row_update)(matrix(N, M)));
  {
    Array<double> x = matrix(N, M);  // nothing else holds its buffer
    const void* buf = x.data();
    Array<double> r;
    const i64 bytes = bytes_copied([&] { r = jf(x); });
    CHECK(dyn::array_equal(r, want));
    CHECK(r.data() == buf);               // the result is the donated buffer
    CHECK(bytes <= N * kRowBytes);        // no copy in, no copy out: the row updates only
  }
  {
    Array<double> x = matrix(N, M);
    const Array<double> y = x;  // shares x's buffer: jit copies it before overwriting
    const Array<double> r = jf(x);
    CHECK(dyn::array_equal(r, want));
    CHECK(dyn::array_equal(y, matrix(N, M)));
    CHECK(r.data() != y.data());
  }
  // The donated array also passed as another argument: copied first.
  auto g = [](auto a, auto b) {
    return dyn::for_loop(0, N, 1)([&](auto i, auto c) {
      auto row = dyn::dynamic_slice(b, {(i + 1) % N, i64{0}}, {1, M});
      return dyn::dynamic_update_slice(c, row + 1.0, {i, i64{0}});
    })(a);
  };
  auto jg = dyn::jit(g, dyn::donate_argnums<0>{});
  Array<double> x = matrix(N, M);
  const Array<double> r = jg(x, x);
  CHECK(dyn::array_equal(r, Array<double>(dyn::eager(g)(matrix(N, M), matrix(N, M)))));
  // Several calls of one compiled kernel, each with a fresh donated array.
  for (int k = 0; k < 3; ++k) CHECK(dyn::array_equal(Array<double>(jf(matrix(N, M))), want));
}

TEST_CASE("donate_argnums: an argument cannot be both static and donated") {
  auto f = [](auto x, int k) { return x * static_cast<double>(k); };
  CHECK_THROWS_WITH_AS(dyn::jit(f, dyn::static_argnums<1>{}, dyn::donate_argnums<1>{}),
                       doctest::Contains("dyn::donate_argnums: argument 1 is also in dyn::static_argnums"), dyn::TypeError);
}

TEST_CASE("donate_argnums: an index past the call's arguments is a TypeError at the call, not ignored") {
  // JAX: "jitted function has donate_argnums=(2,) but was called with only 1 positional argument"; ignoring
  // the index would leave the buffer the user meant to donate undonated without a word.
  auto f = [](auto x) { return x * 2.0; };
  auto jf = dyn::jit(f, dyn::donate_argnums<2>{});
  CHECK(test_util::message_of<dyn::TypeError>([&] { (void)jf(Array<double>({2}, {1, 2})); }) ==
        "dyn::donate_argnums: argument index 2 is donated, but the function is called with 1 arguments");
  CHECK(jf.stats().compiles == 0);
  auto jg = dyn::jit(f, dyn::donate_argnums<0>{});  // in range: fine
  CHECK(dyn::array_equal(Array<double>(jg(Array<double>({2}, {1, 2}))), Array<double>({2}, {2, 4})));
}
