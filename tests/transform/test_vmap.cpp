// dyn::vmap (issue 20, API.md section 14): batching as a jaxpr interpreter.
// The rules are checked primitive by primitive (the whole primitive table: a
// primitive without a rule fails here unless it is on batch_missing's list
// with its reason): batch_eval of each primitive's sample program on stacked
// arguments equals eval_jaxpr lane by lane, stacked, with the batch axis at
// 0, at 1 and unbatched arguments mixed in. The user-facing dyn::vmap is
// checked in eager code, printed by make_jaxpr (golden text), nested, and
// for its errors.
#include <doctest/doctest.h>

#include <dynstage/core.hpp>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../ir/prim_samples.hpp"
#include "../test_util.hpp"

using dyn::AnyArray;
using dyn::Array;
using namespace dyn;
using namespace dyn::detail;
using test_util::message_of;
using test_util::str;

namespace {

constexpr std::int64_t kLanes = 3;

// Lane b of a sample argument: its elements rotated by b (so indices, shift
// amounts and the like stay valid), a scalar moved by b / 8 (an integer by b).
AnyArray lane(const AnyArray& a, std::int64_t b) {
  return visit_dtype(a.dtype(), [&](auto z) -> AnyArray {
    using T = decltype(z);
    Array<T> r(a.shape());
    const T* p = static_cast<const T*>(a.data());
    const std::int64_t n = r.size();
    for (std::int64_t i = 0; i < n; ++i) {
      if (a.rank() > 0) {
        r.mutable_data()[i] = p[(i + b) % n];
      } else if constexpr (std::is_same_v<T, bool>) {
        r.mutable_data()[i] = (p[i] != (b % 2 == 1));
      } else if constexpr (std::is_floating_point_v<T>) {
        r.mutable_data()[i] = static_cast<T>(p[i] + 0.125 * static_cast<double>(b));
      } else if constexpr (dyn::is_complex_v<T>) {
        r.mutable_data()[i] = p[i] + T(static_cast<typename T::value_type>(0.125 * static_cast<double>(b)));
      } else {
        r.mutable_data()[i] = static_cast<T>(p[i] + b);
      }
    }
    return AnyArray(r);
  });
}

// The lanes stacked along a new axis `axis`.
AnyArray stack_at(const std::vector<AnyArray>& lanes, std::int64_t axis) {
  std::vector<Value> rows;
  for (const AnyArray& l : lanes) {
    Shape s = to_shape(l.shape());
    s.insert(s.begin(), Dim(1));
    rows.push_back(reshape(Value{l, nullptr, false}, s));
  }
  const Value st = rows.size() == 1 ? rows[0] : concatenate(rows, 0);
  return batch_detail::moveaxis(st, 0, axis).array;
}

double at(const AnyArray& a, std::int64_t i) {
  return visit_dtype(a.dtype(), [&](auto z) {
    const auto v = static_cast<const decltype(z)*>(a.data())[i];
    if constexpr (dyn::is_complex_v<decltype(z)>) return static_cast<double>(v.real());  // (real parts only)
    else return static_cast<double>(v);
  });
}

double at_imag(const AnyArray& a, std::int64_t i) {
  return visit_dtype(a.dtype(), [&](auto z) {
    if constexpr (dyn::is_complex_v<decltype(z)>)
      return static_cast<double>(static_cast<const decltype(z)*>(a.data())[i].imag());
    else return 0.0;
  });
}

// Equal dtypes, shapes and elements (NaNs equal; floats to 1e-12 relative;
// complex values part by part).
bool same(const AnyArray& a, const AnyArray& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  for (std::int64_t i = 0; i < a.size(); ++i)
    for (int part = 0; part < 2; ++part) {
      const double x = part ? at_imag(a, i) : at(a, i), y = part ? at_imag(b, i) : at(b, i);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (!(std::abs(x - y) <= 1e-12 * (1 + std::abs(y)))) return false;
    }
  return true;
}

// The batch axis of sample argument k of rank r under mode m: 0 everywhere;
// 1 (rank >= 1; rank 0: 0); none for even k and 0 for odd k (one argument:
// -1, counted from the end).
BDim axis_of(int mode, std::size_t k, std::size_t nargs, int rank) {
  switch (mode) {
    case 0: return 0;
    case 1: return rank >= 1 ? 1 : 0;
    default:
      if (nargs == 1) return rank;  // -1 normalised: the new last axis
      return k % 2 == 0 ? BDim{} : BDim{0};
  }
}

}  // namespace

TEST_CASE("vmap rules: every primitive batched equals the primitive lane by lane, stacked (axes 0, 1, none)") {
  int checked = 0, missing = 0, no_operands = 0;
  for (Prim p : prim_samples::all_prims()) {
    CAPTURE(std::string(prim_name(p)));
    const prim_samples::Sample s = prim_samples::sample_of(p);
    const Jaxpr& j = *s.jaxpr.jaxpr;
    std::vector<Value> consts;
    for (const AnyArray& c : s.jaxpr.consts) consts.push_back(Value{c, nullptr, false});
    if (s.args.empty()) {  // iota: nothing to batch
      CHECK(batch_eval(j, consts, {}, {}).dims == std::vector<BDim>(j.outvars.size(), std::nullopt));
      ++no_operands;
      continue;
    }
    bool all_modes = true;
    for (int mode = 0; mode < 3; ++mode) {
      CAPTURE(mode);
      std::vector<Value> args;
      std::vector<BDim> dims;
      std::vector<std::vector<AnyArray>> lane_args(kLanes);
      for (std::size_t k = 0; k < s.args.size(); ++k) {
        const BDim d = axis_of(mode, k, s.args.size(), s.args[k].rank());
        std::vector<AnyArray> ls;
        for (std::int64_t b = 0; b < kLanes; ++b) ls.push_back(d ? lane(s.args[k], b) : s.args[k]);
        for (std::int64_t b = 0; b < kLanes; ++b) lane_args[static_cast<std::size_t>(b)].push_back(ls[static_cast<std::size_t>(b)]);
        args.push_back(Value{d ? stack_at(ls, *d) : s.args[k], nullptr, false});
        dims.push_back(d);
      }
      if (const char* why = batch_missing(p)) {
        CHECK(message_of<dyn::TypeError>([&] { (void)batch_eval(j, consts, args, dims); }) ==
              "vmap: cannot batch " + std::string(prim_name(p)) + ": " + why);
        all_modes = false;
        break;
      }
      const BatchOut r = batch_eval(j, consts, args, dims);
      std::vector<std::vector<AnyArray>> want(j.outvars.size());
      for (std::int64_t b = 0; b < kLanes; ++b) {
        const std::vector<AnyArray> o = dyn::eval_jaxpr(s.jaxpr, lane_args[static_cast<std::size_t>(b)]);
        for (std::size_t i = 0; i < o.size(); ++i) want[i].push_back(o[i]);
      }
      REQUIRE(r.values.size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        const Value got = vmap_output(r.values[i], r.dims[i], 0, Dim(kLanes), i);
        CHECK(same(got.array, stack_at(want[i], 0)));
      }
    }
    if (all_modes) ++checked;
    else ++missing;
  }
  // The tally, so that a primitive moving between the groups is seen.
  CHECK(checked + missing + no_operands == static_cast<int>(prim_samples::all_prims().size()));
  CHECK(missing == 0);
  CHECK(no_operands == 2);  // iota, axis_index
}

TEST_CASE("vmap: dyn::vmap(f, {0, dyn::none}, 0) maps f over the batch axis, eager") {
  auto f = [](auto x, auto w) { return dyn::sum(x * w); };
  const Array<double> xs({2, 3}, {1, 2, 3, 4, 5, 6}), w({3}, {1, 10, 100});
  const auto y = dyn::vmap(f, {0, dyn::none})(xs, w);
  CHECK(str(y) == "[321. 654.]");
  // Axis 1 in, axis 1 out; a negative axis; a matrix product per lane.
  auto g = [](auto a, auto b) { return dyn::matmul(a, b); };
  const Array<double> as = dyn::reshape(dyn::linspace<double>(0.0, 11.0, 12), {2, 3, 2});  // lanes along axis 1
  const Array<double> b({2, 2}, {1, 2, 3, 4});
  const auto c = dyn::vmap(g, {1, dyn::none}, 1)(as, b);
  REQUIRE(c.shape() == std::vector<std::int64_t>{2, 3, 2});
  for (std::int64_t l = 0; l < 3; ++l) {
    const Array<double> al = dyn::squeeze(dyn::slice_in_dim(as, l, l + 1, 1, 1), {1});
    const Array<double> cl = dyn::squeeze(dyn::slice_in_dim(c, l, l + 1, 1, 1), {1});
    CHECK(dyn::allclose(cl, dyn::matmul(al, b), 0.0));
  }
  const auto yn = dyn::vmap(f, {-2, dyn::none})(xs, w);
  CHECK(str(yn) == "[321. 654.]");
  // A pytree argument: its entry applies to every leaf.
  auto h = [](auto pr) { return std::get<0>(pr) - std::get<1>(pr); };
  const auto hp = dyn::vmap(h, {1})(std::tuple{xs, dyn::ones<double>({2, 3})});
  CHECK(str(hp) == "[[0. 3.]\n [1. 4.]\n [2. 5.]]");
  // A result that does not depend on the batch is broadcast.
  const auto k = dyn::vmap([](auto x) { return std::tuple{x * 2.0, dyn::ones<double>({2})}; })(Array<double>({3}, {1, 2, 3}));
  CHECK(str(std::get<0>(k)) == "[2. 4. 6.]");
  CHECK(str(std::get<1>(k)) == "[[1. 1.]\n [1. 1.]\n [1. 1.]]");
}

TEST_CASE("vmap: nested vmap maps over two axes") {
  auto f = [](auto x, auto y) { return x * y + 1.0; };  // scalars
  auto outer = dyn::vmap(dyn::vmap(f, {0, dyn::none}), {dyn::none, 0});  // table[i][j] = x[j] * y[i] + 1
  const Array<double> x({3}, {1, 2, 3}), y({2}, {10, 20});
  const auto t = outer(x, y);
  CHECK(str(t) == "[[11. 21. 31.]\n [21. 41. 61.]]");
  // Both levels batched: a rowwise outer product.
  auto op = dyn::vmap(dyn::vmap([](auto a, auto b) { return a * b; }, {0, dyn::none}), {0, 0});
  const Array<double> a({2, 2}, {1, 2, 3, 4}), b({2, 3}, {1, 0, 1, 2, 2, 0});
  CHECK(str(op(a, b)) == "[[[1. 0. 1.]\n  [2. 0. 2.]]\n\n [[6. 6. 0.]\n  [8. 8. 0.]]]");
}

// Found by the differential fuzzer's vmap check (dynstage_fuzz seeds 251 and
// 364, docs/reliability.md): select_n's cases and clamp's operand have the
// result's shape, so an unbatched rank-0 one is broadcast to the batch like
// any other operand (the elementwise rule had left it rank 0).
TEST_CASE("vmap: where and clamp of a batched scalar with unbatched scalars (fuzzer regression)") {
  const Array<double> x({3}, {-2, 0.5, 7});
  const auto no = Array<bool>::scalar(false);
  const auto k = Array<double>::scalar(1.5), hi = Array<double>::scalar(4.0);
  CHECK(dyn::allclose(dyn::vmap([&](auto v) { return dyn::where(no, v, k); })(x), Array<double>({3}, {1.5, 1.5, 1.5}), 0.0));
  CHECK(dyn::allclose(dyn::vmap([&](auto v) { return dyn::where(no, k, v); })(x), x, 0.0));
  const Array<bool> pred({3}, {true, false, true});
  CHECK(dyn::allclose(dyn::vmap([&](auto b) { return dyn::where(b, k, hi); })(pred), Array<double>({3}, {1.5, 4, 1.5}), 0.0));
  const Array<double> lows({3}, {0, 2, 3});
  CHECK(dyn::allclose(dyn::vmap([&](auto lo) { return dyn::clamp(lo, k, hi); })(lows), Array<double>({3}, {1.5, 2, 3}), 0.0));
}

TEST_CASE("vmap: inside make_jaxpr it records the batched program (golden text)") {
  auto f = [](auto x, auto w) { return dyn::sin(x) * w; };
  auto bf = dyn::vmap(f, {1, dyn::none});
  const auto cj = dyn::make_jaxpr(bf)(dyn::ones<double>({3, 2}), dyn::ones<double>({3}));
  CHECK(str(cj) ==
        "{ lambda ; a:f64[3,2] b:f64[3]. let\n"
        "    c:f64[3,2] = sin a\n"
        "    d:f64[2,3] = transpose[permutation=(1, 0)] c\n"
        "    e:f64[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b\n"
        "    f:f64[2,3] = mul d e\n"
        "  in (f,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  // Symbolic batch size: one program for every batch.
  auto g = [](auto x) { return dyn::sum(x * 2.0); };
  const auto cs = dyn::make_jaxpr(dyn::vmap(g), dyn::polymorphic_shapes{"(b, 3)"})(dyn::ones<double>({2, 3}));
  CHECK(str(cs) ==
        "{ lambda ; a:i64[] b:f64[a,3]. let\n"
        "    c:f64[a,3] = mul b 2.0:f64[]\n"
        "    d:f64[a] = reduce_sum[axes=(1,)] c\n"
        "  in (d,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cs));
  const Array<double> x({4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(str(dyn::eval_jaxpr(cs, {AnyArray(x)}).back()) == "[12. 30. 48. 66.]");
}

TEST_CASE("vmap: errors name the argument, its type and the axes") {
  auto f = [](auto x, auto y) { return x + y; };
  const Array<double> a({2, 3}), b({3, 3}), c({3});
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::vmap(f, {0})(a, a); }) ==
        "dyn::vmap: in_axes has 1 entries but the function is called with 2 arguments; give one axis (or dyn::none) "
        "per argument");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap(f, {0, 2})(a, a); }) ==
        "dyn::vmap: in_axes entry 2 of argument #1 is out of range for its value of type f64[2,3] (rank 2); an axis "
        "is in [-2, 2)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap(f, {0, 0})(a, b); }) ==
        "dyn::vmap: argument #0 of type f64[2,3] has batch size 2 but argument #1 of type f64[3,3] has batch size 3 "
        "along axis 0; the batched arguments have one batch size");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::vmap(f, dyn::none)(c, c); }) ==
        "dyn::vmap: no argument is batched (every in_axes entry is dyn::none); batch at least one");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap([](auto x) { return x; }, 0, 2)(c); }) ==
        "dyn::vmap: out_axes 2 is out of range for result #0, of rank 1 with its batch axis");
  // A size that differs per lane would make the lanes' shapes differ.
  CHECK(message_of<dyn::ShapeError>([&] {
          (void)dyn::vmap([](auto n) { return dyn::arange<double>(n); })(Array<std::int64_t>({2}, {2, 3}));
        }) == "vmap: operand #0 of iota is a size that differs between the batch's lanes; the lanes of a vmapped "
              "array have one shape (compute the size outside vmap, or pad to the largest)");
  // A loop whose bounds differ per lane is not batched (a while_loop is).
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::vmap([](auto n) { return dyn::for_loop(0, n, 1)([](auto, auto v) { return v * 2.0; })(1.0); })(
              Array<std::int64_t>({2}, {1, 2}));
        }) == "vmap: cannot batch for_loop: its bounds differ between the batch's lanes; write it as a while_loop "
              "over a batched counter");
}

TEST_CASE("vmap: out_axes per result ({1, 0, -1}; dyn::none for a result that does not depend on the batch)") {
  // JAX's out_axes: an int for every result, or one entry per result (a
  // prefix of the result tuple); None returns a result without a batch axis.
  const Array<double> xs({3, 2}, {1, 2, 3, 4, 5, 6});  // 3 lanes of 2
  auto f = [](auto x) { return std::tuple{x * 2.0, dyn::sum(x), x + 1.0}; };
  const auto [a, b, c] = dyn::vmap(f, 0, {1, 0, -1})(xs);
  CHECK(str(a) == "[[ 2.  6. 10.]\n [ 4.  8. 12.]]");  // lanes along axis 1
  CHECK(str(b) == "[ 3.  7. 11.]");
  CHECK(str(c) == "[[2. 4. 6.]\n [3. 5. 7.]]");  // -1: the last axis of the rank-2 result
  // One out_axes for every result: as before (the int form of API.md), and
  // the same as one entry per result.
  const auto [a0, b0, c0] = dyn::vmap(f, 0, 0)(xs);
  const auto [a1, b1, c1] = dyn::vmap(f, 0, {0, 0, 0})(xs);
  CHECK(str(a0) == "[[ 2.  4.]\n [ 6.  8.]\n [10. 12.]]");
  CHECK(str(a1) == str(a0));
  CHECK(str(b1) == str(b0));
  CHECK(str(c1) == str(c0));
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap(f, 0, 1)(xs); }) ==
        "dyn::vmap: out_axes 1 is out of range for result #1, of rank 1 with its batch axis");
  // dyn::none: the result that only reads the shared w comes back without a batch axis.
  auto g = [](auto x, auto w) { return std::tuple{x * w, w * 2.0}; };
  const Array<double> w({2}, {10, 100});
  const auto [xw, w2] = dyn::vmap(g, {0, dyn::none}, {0, dyn::none})(xs, w);
  CHECK(str(xw) == "[[ 10. 200.]\n [ 30. 400.]\n [ 50. 600.]]");
  CHECK(str(w2) == "[ 20. 200.]");
  // dyn::none for all results, and for a single result.
  CHECK(str(dyn::vmap([](auto, auto v) { return v * 3.0; }, {0, dyn::none}, dyn::none)(xs, w)) == "[ 30. 300.]");
  CHECK(str(dyn::vmap([](auto, auto v) { return v * 3.0; }, {0, dyn::none}, {dyn::none})(xs, w)) == "[ 30. 300.]");
  // A pytree result: its entry applies to each of its leaves.
  auto p = [](auto x, auto v) { return std::tuple{std::tuple{x, x * v}, v}; };
  const auto [pr, v1] = dyn::vmap(p, {0, dyn::none}, {1, dyn::none})(xs, w);
  CHECK(str(std::get<1>(pr)) == "[[ 10.  30.  50.]\n [200. 400. 600.]]");
  CHECK(str(v1) == "[ 10. 100.]");
}

TEST_CASE("vmap: out_axes errors: a batched result with dyn::none (JAX: mapped output but out_axes is None), "
          "the wrong number of entries, an axis out of range") {
  const Array<double> xs({3, 2}, {1, 2, 3, 4, 5, 6});
  auto f = [](auto x) { return std::tuple{x, x * 2.0}; };
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap(f, 0, {0, dyn::none})(xs); }) ==
        "dyn::vmap: result #1 (of type f64[2] per lane) depends on a batched argument, but its out_axes entry is "
        "dyn::none; give it an out axis, or compute it from unbatched arguments only (JAX: vmap has mapped output "
        "but out_axes is None)");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap([](auto x) { return dyn::sum(x); }, 0, dyn::none)(xs); }) ==
        "dyn::vmap: result #0 (of type f64[] per lane) depends on a batched argument, but its out_axes entry is "
        "dyn::none; give it an out axis, or compute it from unbatched arguments only (JAX: vmap has mapped output "
        "but out_axes is None)");
  CHECK(message_of<dyn::TypeError>([&] { (void)dyn::vmap(f, 0, {0})(xs); }) ==
        "dyn::vmap: out_axes has 1 entries but the function returns 2 results; give one axis (or dyn::none) per "
        "result");
  CHECK(message_of<dyn::ShapeError>([&] { (void)dyn::vmap(f, 0, {0, -3})(xs); }) ==
        "dyn::vmap: out_axes -3 is out of range for result #1, of rank 2 with its batch axis");
}

TEST_CASE("vmap: nested vmap with out_axes; under make_jaxpr (golden text)") {
  auto f = [](auto x, auto y) { return x * y + 1.0; };  // scalars
  const Array<double> x({3}, {1, 2, 3}), y({2}, {10, 20});
  // The outer batch axis (y's) last: t[j][i] = x[j] * y[i] + 1, shape [3, 2].
  auto outer = dyn::vmap(dyn::vmap(f, {0, dyn::none}), {dyn::none, 0}, 1);
  CHECK(str(outer(x, y)) == "[[11. 21.]\n [21. 41.]\n [31. 61.]]");
  // The inner vmap's dyn::none result depends on the outer batch only (y):
  // unbatched inside, batched by the outer vmap.
  auto g = [](auto a, auto b) { return std::tuple{a * b, b * 2.0}; };
  auto nested = dyn::vmap(dyn::vmap(g, {0, dyn::none}, {0, dyn::none}), {dyn::none, 0}, {1, 0});
  const auto [ab, b2] = nested(x, y);
  CHECK(str(ab) == "[[10. 20.]\n [20. 40.]\n [30. 60.]]");
  CHECK(str(b2) == "[20. 40.]");
  // The printed program: the batched sin moved to axis 1, the unbatched result as it is.
  auto h = [](auto a, auto w) { return std::tuple{dyn::sin(a), w * 2.0}; };
  const auto cj = dyn::make_jaxpr(dyn::vmap(h, {0, dyn::none}, {1, dyn::none}))(dyn::ones<double>({3, 2}),
                                                                                 dyn::ones<double>({2}));
  CHECK(str(cj) ==
        "{ lambda ; a:f64[3,2] b:f64[2]. let\n"
        "    c:f64[3,2] = sin a\n"
        "    d:f64[2,3] = transpose[permutation=(1, 0)] c\n"
        "    e:f64[2] = mul b 2.0:f64[]\n"
        "  in (d, e) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
}

TEST_CASE("vmap of control flow: for_loop, while_loop (lanes finishing apart), cond and switch_ (batched or not), scan") {
  const Array<double> x({3}, {1, 5, 40});
  // for_loop: the carry batched, the bounds shared.
  auto dbl = [](auto v) { return dyn::for_loop(0, 3, 1)([](auto, auto c) { return c * 2.0; })(v); };
  CHECK(str(dyn::vmap(dbl)(x)) == "[  8.  40. 320.]");
  // while_loop: each lane doubles until it passes 30; the first lane needs 5
  // steps, the last none: the loop runs 5 times, finished lanes frozen.
  auto grow = [](auto v) { return dyn::while_loop([](auto c) { return c < 30.0; })([](auto c) { return c * 2.0; })(v); };
  CHECK(str(dyn::vmap(grow)(x)) == "[32. 40. 40.]");
  // cond with a batched predicate: both branches, a select per lane.
  auto pick = [](auto v) { return dyn::cond(v > 2.0, [](auto c) { return c * 10.0; }, [](auto c) { return -c; })(v); };
  CHECK(str(dyn::vmap(pick)(x)) == "[ -1.  50. 400.]");
  // cond with a shared predicate: the cond stays, its branches batched.
  auto pick2 = [](auto v, auto p) { return dyn::cond(p > 0.0, [](auto c) { return c * 10.0; }, [](auto c) { return -c; })(v); };
  CHECK(str(dyn::vmap(pick2, {0, dyn::none})(x, 1.0)) == "[ 10.  50. 400.]");
  CHECK(str(dyn::vmap(pick2, {0, dyn::none})(x, -1.0)) == "[ -1.  -5. -40.]");
  // switch_ with a batched index (out of range clamps to the last branch).
  auto sw = [](auto i, auto v) {
    return dyn::switch_(i, [](auto c) { return c + 1.0; }, [](auto c) { return c * 3.0; }, [](auto c) { return -c; })(v);
  };
  CHECK(str(dyn::vmap(sw)(Array<std::int32_t>({3}, {0, 1, 2}), x)) == "[  2.  15. -40.]");
  // scan: a running sum of each lane's rows (xs batched along axis 1 here).
  auto cum = [](auto xs) {
    return dyn::scan([](auto c, auto r) { return std::tuple{c + r, c}; }, 0.0, xs);
  };
  const Array<double> m({3, 2}, {1, 10, 2, 20, 3, 30});  // lanes are the columns
  const auto [tot, ys] = dyn::vmap(cum, {1})(m);
  CHECK(str(tot) == "[ 6. 60.]");
  CHECK(str(ys) == "[[ 0.  1.  3.]\n [ 0. 10. 30.]]");
  // Nested: a while_loop batched twice; a scan over shared xs with a batched carry.
  const Array<double> x2({2, 3}, {1, 5, 40, 3, 0.5, 31});
  CHECK(str(dyn::vmap(dyn::vmap(grow))(x2)) == "[[32. 40. 40.]\n [48. 32. 31.]]");
  auto from = [](auto c0, auto xs) { return std::get<0>(dyn::scan([](auto c, auto r) { return std::tuple{c * r, c}; }, c0, xs)); };
  CHECK(str(dyn::vmap(from, {0, dyn::none})(Array<double>({2}, {1, -2}), Array<double>({3}, {2, 3, 4}))) == "[ 24. -48.]");
  // Under make_jaxpr the batched loop is a while_loop whose predicate is any lane's.
  const auto cj = dyn::make_jaxpr(dyn::vmap(grow))(x);
  CHECK(str(cj) ==
        "{ lambda ; a:f64[3]. let\n"
        "    b:f64[3] = while_loop[\n"
        "      body_jaxpr={ lambda ; c:f64[3]. let\n"
        "          d:bool[3] = lt c 30.0:f64[]\n"
        "          e:f64[3] = mul c 2.0:f64[]\n"
        "          f:f64[3] = select_n d c e\n"
        "        in (f,) }\n"
        "      body_nconsts=0\n"
        "      cond_jaxpr={ lambda ; g:f64[3]. let\n"
        "          h:bool[3] = lt g 30.0:f64[]\n"
        "          i:bool[] = reduce_or[axes=(0,)] h\n"
        "        in (i,) }\n"
        "      cond_nconsts=0\n"
        "      nimplicit=0\n"
        "      preserve_dimensions=True\n"
        "    ] a\n"
        "  in (b,) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
}

TEST_CASE("vmap with a symbolic batch size: the layout, indexing and loop rules pass it as an operand") {
  // Per lane (a row of 6): reshape, slice, a dynamic slice at a lane's own
  // start, a gather, pad, concatenate, a matrix product, a cumulative sum,
  // a sort and a while loop; one program for every batch size b.
  auto f = [](auto x, auto i) {
    auto m = dyn::reshape(x, {2, 3});
    auto s = dyn::slice_in_dim(m, 0, 3, 2, 1);                         // 2x2
    auto d = dyn::dynamic_slice(x, {i}, {3});                          // 3
    auto g = dyn::take(x, dyn::astype<std::int32_t>(d) % 6, 0);        // 3
    auto p = dyn::pad(d, {{1, 2, 0}}, 0.5);                            // 6
    auto c = dyn::concatenate({p, x}, 0);                              // 12
    auto mm = dyn::matmul(m, dyn::transpose(m));                       // 2x2
    auto w = dyn::while_loop([](auto v) { return dyn::sum(v) < 50.0; })([](auto v) { return v * 2.0; })(s);
    return dyn::sum(c) + dyn::sum(mm) + dyn::sum(dyn::cumsum(g, 0)) + dyn::sum(dyn::sort(w, 0));
  };
  auto bf = dyn::vmap(f);
  const auto cj = dyn::make_jaxpr(bf, dyn::polymorphic_shapes{"(b, 6)", "(b,)"})(dyn::ones<double>({2, 6}),
                                                                                  Array<std::int64_t>({2}, {0, 1}));
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(str(cj).starts_with("{ lambda ; a:i64[] b:f64[a,6] c:i64[a]. let"));
  for (std::int64_t b : {1, 4}) {
    const Array<double> x = dyn::reshape(dyn::linspace<double>(0.5, 3.0, 6 * b), {b, 6});
    Array<std::int64_t> i({b});
    for (std::int64_t k = 0; k < b; ++k) i.mutable_data()[k] = k % 5;
    const auto want = bf(x, i);
    for (std::int64_t k = 0; k < b; ++k) {  // lane by lane
      const Array<double> row = dyn::squeeze(dyn::slice_in_dim(x, k, k + 1, 1, 0), {0});
      CHECK(want(k) == doctest::Approx(f(row, Array<std::int64_t>::scalar(i(k)))()).epsilon(1e-13));
    }
    const auto got = dyn::eval_jaxpr(cj, {AnyArray(x), AnyArray(i)});
    CHECK(dyn::allclose(got.back().get<double>(), want, 1e-13));
  }
}

TEST_CASE("vmap: a collective's result is a new value, not the dimension its operand sizes (dynstage_fuzz seed 2128)") {
  // m (unbatched) sizes arange; psum(m) and all_gather(m) over the one-rank
  // mesh are results of their own: psum(m) over k ranks is k m, all_gather's
  // i64[1] no scalar. arange(m) under vmap must read m itself, not the last
  // value made from it (all_gather's was: "iota dimension operand #0 must be
  // an integer scalar, got i64[1]"; psum's was read silently).
  const dyn::Mesh mesh({"x"}, {1});
  auto f = [&](auto x, auto m) {
    auto s = dyn::shard_map([](auto v) { return dyn::psum(v, "x"); }, mesh, {dyn::P()}, dyn::P())(m);
    auto g = dyn::shard_map([](auto v) { return dyn::all_gather(v, "x", 0); }, mesh, {dyn::P()}, dyn::P())(m);
    return std::make_tuple(x * 2.0, dyn::arange<double>(m), s, g);
  };
  const Array<double> xs({2, 3}, {1, 2, 3, 4, 5, 6});
  const Array<std::int64_t> m(std::vector<std::int64_t>{}, std::vector<std::int64_t>{2});
  auto vf = dyn::vmap(f, {0, dyn::none});
  const auto [x2, a, s, g] = vf(xs, m);
  CHECK(str(a) == "[[0. 1.]\n [0. 1.]]");
  CHECK(str(s) == "[2 2]");
  CHECK(str(g) == "[[2]\n [2]]");
  const auto cj = dyn::make_jaxpr(vf)(xs, m);
  CHECK(str(cj) ==
        "{ lambda ; a:f64[2,3] b:i64[]. let\n"
        "    c:f64[2,3] = mul a 2.0:f64[]\n"
        "    d:f64[b] = iota[dimension=0 dtype=float64 shape=(None,)] b\n"
        "    e:f64[2,b] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, None)] d b\n"
        "    f:i64[] = psum[axes=('x',) axis_index_groups=None] b\n"
        "    g:i64[2] = broadcast_in_dim[broadcast_dimensions=() shape=(2,)] f\n"
        "    h:i64[1] = all_gather[\n"
        "      all_gather_dimension=0\n"
        "      axis_index_groups=None\n"
        "      axis_name=('x',)\n"
        "      axis_size=1\n"
        "      tiled=False\n"
        "    ] b\n"
        "    i:i64[2,1] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 1)] h\n"
        "  in (c, e, g, i) }");
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
}

// dynstage_fuzz seeds 54001, 71062, 93554, 94561 (issue 23): a loop with
// preserve_dimensions=false whose carried sizes never change (nimplicit 0)
// was batched with loop variables again, so the batched while body's select
// of a lane's old and new carry met i32[B,_d21] and i32[B,_d22] (a
// ShapeError under make_jaxpr; eager vmap has static sizes and passed).
TEST_CASE("vmap: a loop with preserve_dimensions=false whose sizes do not change keeps its dimensions shared "
          "(dynstage_fuzz seeds 54001, 71062, 93554, 94561)") {
  const Array<std::int64_t> n = Array<std::int64_t>::scalar(3);
  SUBCASE("while_loop") {
    // Two carried arrays of size n swapped while s < 3: lane 0 runs once, lane 1 never.
    auto swap = [](auto s, auto n) {
      auto a = dyn::arange<std::int32_t>(n);
      auto t = dyn::while_loop([](auto k, auto c, auto, auto) { return (k < 2) & (c < 3); }, {.preserve_dimensions = false})(
          [](auto k, auto c, auto u, auto v) { return std::make_tuple(k + 1, c + 1, v, u); })(
          Array<std::int64_t>::scalar(0), s, a, a * 2);
      return std::get<2>(t);
    };
    const Array<std::int32_t> s({2}, {2, 5});
    auto vswap = dyn::vmap(swap, {0, dyn::none});
    CHECK(str(vswap(s, n)) == "[[0 2 4]\n [0 1 2]]");
    const auto cj = dyn::make_jaxpr(vswap)(s, n);
    CHECK_NOTHROW(dyn::check_jaxpr(cj));
    CHECK(str(dyn::eval_jaxpr(cj, {AnyArray(s), AnyArray(n)}).at(0)) == "[[0 2 4]\n [0 1 2]]");
  }
  SUBCASE("for_loop") {
    // A for_loop: a cond with a per-lane predicate in its body selects between
    // the two carried arrays of size n (summed, so their sizes stay), as the
    // while body's select does.
    auto pick = [](auto p, auto n) {
      auto a = dyn::arange<std::int32_t>(n);
      auto t = dyn::for_loop(0, 1, 1, {.preserve_dimensions = false})([](auto, auto q, auto acc, auto u, auto v) {
        auto w = dyn::cond(q, [](auto x, auto) { return x; }, [](auto, auto y) { return y; })(u, v);
        return std::make_tuple(q, acc + dyn::sum(w), u, v);
      })(p, Array<std::int32_t>::scalar(0), a, a * 2);
      return std::get<1>(t);
    };
    const Array<bool> p({2}, std::vector<bool>{true, false});
    auto vpick = dyn::vmap(pick, {0, dyn::none});
    CHECK(str(vpick(p, n)) == "[3 6]");
    const auto cp = dyn::make_jaxpr(vpick)(p, n);
    CHECK_NOTHROW(dyn::check_jaxpr(cp));
    CHECK(str(dyn::eval_jaxpr(cp, {AnyArray(p), AnyArray(n)}).at(0)) == "[3 6]");
  }
}

// dynstage_fuzz seeds 82044, 38036 (issue 23): a cond with a shared
// predicate passed every operand to its batched branches, n (the size of
// arange(n)) too; a branch argument is a new value, so the branch's
// broadcast of x to shape (n,) made a dimension other than a's: "min got
// incompatible shapes for broadcasting: (_d0,), (_d2,)" under make_jaxpr.
TEST_CASE("vmap: a cond with a shared predicate keeps a captured size the operands' dimension "
          "(dynstage_fuzz seeds 82044, 38036)") {
  auto f = [](auto x, auto n, auto p) {
    auto a = dyn::arange<std::int32_t>(n);
    return dyn::cond(p, [](auto, auto u) { return u; }, [](auto y, auto u) { return dyn::minimum(u, y); })(x, a);
  };
  const Array<std::int32_t> x({2, 1}, {1, 2});
  const Array<std::int64_t> n = Array<std::int64_t>::scalar(3);
  const Array<bool> no = Array<bool>::scalar(false);
  auto vf = dyn::vmap(f, {0, dyn::none, dyn::none});
  CHECK(str(vf(x, n, no)) == "[[0 1 1]\n [0 1 2]]");
  const auto cj = dyn::make_jaxpr(vf)(x, n, no);
  CHECK_NOTHROW(dyn::check_jaxpr(cj));
  CHECK(str(dyn::eval_jaxpr(cj, {AnyArray(x), AnyArray(n), AnyArray(no)}).at(0)) == "[[0 1 1]\n [0 1 2]]");
}

// dynstage_fuzz seed 49564 (issue 23): vmap runs every branch of a cond with
// a per-lane predicate on every lane, and a while body on lanes that have
// finished (JAX's rules), then discards those lanes' results. Integer
// 0 ** negative there raised ArithmeticError though no lane alone does (a
// branch not taken does not fault, docs/errors.md); a lane that does take it
// still raises.
TEST_CASE("vmap: integer 0 ** negative in a branch a lane does not take, or after its loop ended, does not raise "
          "(dynstage_fuzz seed 49564)") {
  const Array<std::int64_t> e({2}, {2, -1});
  const Array<std::int64_t> zero = Array<std::int64_t>::scalar(0);
  auto pick = [](auto y, auto b) {
    return dyn::cond(y >= 0, [](auto u, auto c) { return dyn::pow(c, u); }, [](auto, auto c) { return c - 7; })(y, b);
  };
  auto vpick = dyn::vmap(pick, {0, dyn::none});
  CHECK(str(vpick(e, zero)) == "[ 0 -7]");
  const auto cj = dyn::make_jaxpr(vpick)(e, zero);
  CHECK(str(dyn::eval_jaxpr(cj, {AnyArray(e), AnyArray(zero)}).at(0)) == "[ 0 -7]");
  auto sw = [](auto i, auto y, auto b) {
    return dyn::switch_(i, [](auto, auto c) { return c - 7; }, [](auto u, auto c) { return dyn::pow(c, u); })(y, b);
  };
  CHECK(str(dyn::vmap(sw, {0, 0, dyn::none})(Array<std::int32_t>({2}, {1, 0}), e, zero)) == "[ 0 -7]");
  // A lane that takes the branch raises, as it does alone.
  CHECK(message_of<dyn::ArithmeticError>([&] {
          (void)dyn::vmap(sw, {0, 0, dyn::none})(Array<std::int32_t>({2}, {1, 1}), e, zero);
        }) == "pow: integer zero raised to a negative power");
  // An unbatched pow (base and exponent the same in every lane) faults only
  // when some lane takes its branch.
  auto un = [](auto q, auto b, auto y) {
    return dyn::cond(q, [](auto c, auto u) { return dyn::pow(c, u); }, [](auto c, auto) { return c - 7; })(b, y);
  };
  auto vun = dyn::vmap(un, {0, dyn::none, dyn::none});
  const Array<std::int64_t> minus1 = Array<std::int64_t>::scalar(-1);
  CHECK(str(vun(Array<bool>({2}, std::vector<bool>{false, false}), zero, minus1)) == "[-7 -7]");
  CHECK(message_of<dyn::ArithmeticError>([&] {
          (void)vun(Array<bool>({2}, std::vector<bool>{false, true}), zero, minus1);
        }) == "pow: integer zero raised to a negative power");
  // while: sum 0 ** (m - k - 1) for k < m; lane 0 ends after one step, and
  // its further steps (discarded) would compute 0 ** -1.
  auto count = [](auto m, auto b) {
    auto t = dyn::while_loop([](auto k, auto, auto mm, auto) { return k < mm; })(
        [](auto k, auto acc, auto mm, auto c) { return std::make_tuple(k + 1, acc + dyn::pow(c, mm - k - 1), mm, c); })(
        Array<std::int64_t>::scalar(0), Array<std::int64_t>::scalar(0), m, b);
    return std::get<1>(t);
  };
  const Array<std::int64_t> m({2}, {1, 3});
  auto vcount = dyn::vmap(count, {0, dyn::none});
  CHECK(str(vcount(m, zero)) == "[1 1]");
  const auto cc = dyn::make_jaxpr(vcount)(m, zero);
  CHECK(str(dyn::eval_jaxpr(cc, {AnyArray(m), AnyArray(zero)}).at(0)) == "[1 1]");
}

// dynstage_fuzz seeds 42008, 99568 (issue 23): a loop that grows a carry in
// some lanes only has lanes of different shapes, which no batched array
// holds: vmap raises (JAX: the carry's type must not change), as the
// fuzzer's check now expects.
TEST_CASE("vmap: a loop whose carry grows in some lanes only is an error (dynstage_fuzz seeds 42008, 99568)") {
  auto grow = [](auto s, auto a) {
    auto t = dyn::while_loop([](auto k, auto c, auto) { return (k < 1) & (c < 3); }, {.preserve_dimensions = false})(
        [](auto k, auto c, auto u) { return std::make_tuple(k + 1, c, dyn::concatenate({u, u}, 0)); })(
        Array<std::int64_t>::scalar(0), s, a);
    return std::get<2>(t);
  };
  const Array<std::int32_t> a({2}, {1, 2});
  CHECK(str(grow(Array<std::int32_t>::scalar(2), a)) == "[1 2 1 2]");
  CHECK(str(grow(Array<std::int32_t>::scalar(5), a)) == "[1 2]");
  auto vgrow = dyn::vmap(grow, {0, dyn::none});
  const Array<std::int32_t> s({2}, {2, 5});
  CHECK(message_of<dyn::TypeError>([&] { (void)vgrow(s, a); }) ==
        "dyn::while_loop(): a static carried dimension cannot change; body output #2 has type i32[4] but carry input "
        "#2 has type i32[2] (dimension 0: 4 vs 2); start from a value whose size is dynamic (a dyn::Dim) and pass "
        "{.preserve_dimensions = false}");
  // A dynamic size (arange(n)): the loop has a loop variable (nimplicit 1), which vmap does not batch.
  auto grow_n = [&](auto s, auto n) { return grow(s, dyn::arange<std::int32_t>(n)); };
  CHECK(message_of<dyn::TypeError>([&] {
          (void)dyn::make_jaxpr(dyn::vmap(grow_n, {0, dyn::none}))(s, Array<std::int64_t>::scalar(2));
        }) == "vmap: cannot batch while_loop: its carried sizes change between iterations (nimplicit > 0)");
}

// An unbatched index, with batched and unbatched operands: the cond stays a
// cond and its branches capture the unbatched operands (seeds 82044, 38036).
// A captured concrete operand is staged in the branch, not folded while the
// branch is traced: the branch the index does not take computes 0 ** -3,
// which must not raise (dynstage_fuzz seed 51036).
TEST_CASE("vmap: a branch an unbatched index does not take is traced without computing its constants (seed 51036)") {
  const Array<std::int32_t> zero = Array<std::int32_t>::scalar(0), minus3 = Array<std::int32_t>::scalar(-3);
  auto sw = [](auto i, auto z, auto e, auto x) {
    return dyn::switch_(i, [](auto, auto, auto y) { return y * 2.0f; },
                        [](auto c, auto u, auto y) { return y + dyn::astype<float>(dyn::pow(c, u)); })(z, e, x);
  };
  auto v = dyn::vmap(sw, {dyn::none, dyn::none, dyn::none, 0});
  const Array<float> x({3}, {1.f, 2.f, 3.f});
  CHECK(str(v(zero, zero, minus3, x)) == "[2. 4. 6.]");
  const auto cj = dyn::make_jaxpr(v)(zero, zero, minus3, x);
  CHECK(str(dyn::eval_jaxpr(cj, {AnyArray(zero), AnyArray(zero), AnyArray(minus3), AnyArray(x)}).at(0)) == "[2. 4. 6.]");
  // Index 1 takes the branch: it raises, as each lane does alone.
  CHECK(message_of<dyn::ArithmeticError>([&] {
          (void)v(Array<std::int32_t>::scalar(1), zero, minus3, x);
        }) == "pow: integer zero raised to a negative power");
}
