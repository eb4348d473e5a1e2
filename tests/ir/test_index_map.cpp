// The index maps of the layout primitives (ir/index_map.hpp) against their
// eager kernels: for every output element, the map names the operand element
// it holds (or, for iota, its value). Each layout primitive of the table is
// checked on its table sample (prim_samples.hpp) and on the cases JAX's lax
// documentation singles out: broadcasting a size-1 axis, strided and
// runtime-start slices, start indices clamped into range (lax.dynamic_slice,
// lax.dynamic_update_slice: "the start indices are clamped so that the slice
// lies inside the operand"), concatenating several operands, gathering
// rows and columns at indices in and out of range (mode CLIP).
#include <dynstage/core.hpp>
#include <dynstage/ir/index_map.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "prim_samples.hpp"

namespace {

using namespace dyn;
using namespace dyn::detail;
using prim_samples::OneEqn;
using prim_samples::Sample;

std::vector<double> values_of(const AnyArray& a) {
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    const Array<T> x = a.get<T>();
    std::vector<double> r;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      if constexpr (dyn::is_complex_v<T>) {
        r.push_back(static_cast<double>(x.data()[i].real()));
        r.push_back(static_cast<double>(x.data()[i].imag()));
      } else {
        r.push_back(static_cast<double>(x.data()[i]));
      }
    }
    return r;
  });
}

std::vector<std::int64_t> unravel(std::int64_t lin, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> m(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    m[a] = lin % shape[a];
    lin /= shape[a];
  }
  return m;
}

std::int64_t ravel(const std::vector<std::int64_t>& m, const std::vector<std::int64_t>& shape) {
  std::int64_t lin = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) lin = lin * shape[a] + m[a];
  return lin;
}

// Checks that the map of every data input of the sample's equation of p
// agrees with eval_jaxpr's result, element by element.
void check_maps(const Sample& s, Prim p) {
  const Jaxpr& j = *s.jaxpr.jaxpr;
  const Eqn& e = prim_samples::eqn_of(s, p);
  REQUIRE(j.eqns.size() == 1);
  const std::vector<AnyArray> out = eval_jaxpr(j, {}, s.args);
  const std::vector<double> got = values_of(out.at(0));
  const std::vector<std::int64_t> oshape = out[0].shape();
  auto input = [&](std::size_t k) -> const AnyArray& {
    const auto it = std::find(j.invars.begin(), j.invars.end(), e.inputs.at(k).var);
    return s.args.at(static_cast<std::size_t>(it - j.invars.begin()));
  };
  auto scalar = [&](std::size_t k) { return static_cast<std::int64_t>(values_of(input(k)).at(0)); };
  // The start of axis a of input k's map; `limit`: the largest clamped
  // start; `o`: the output index (a gathered start reads the indices there).
  auto start = [&](const AxisMap& m, std::size_t k, std::size_t a, std::int64_t limit,
                   const std::vector<std::int64_t>& o) -> std::int64_t {
    switch (m.start) {
      case AxisMap::Start::gathered:
      case AxisMap::Start::scattered: {
        const IndexMap iv = index_map(j, e, 1);
        std::vector<std::int64_t> at;
        for (const AxisMap& b : iv.axes) at.push_back(b.out_axis >= 0 ? o.at(static_cast<std::size_t>(b.out_axis)) : m.value);
        const auto v = static_cast<std::int64_t>(values_of(input(1)).at(static_cast<std::size_t>(ravel(at, input(1).shape()))));
        return m.start == AxisMap::Start::gathered ? std::clamp<std::int64_t>(v, 0, limit) : v;
      }
      case AxisMap::Start::constant: return m.value;
      case AxisMap::Start::dim_operand: return scalar(static_cast<std::size_t>(m.input));
      case AxisMap::Start::clamped: return std::clamp<std::int64_t>(scalar(static_cast<std::size_t>(m.input)), 0, limit);
      case AxisMap::Start::last: return input(k).shape().at(a) - 1;
      case AxisMap::Start::concat_offset: {
        std::int64_t off = 0;
        for (std::size_t i = 0; i < k; ++i) off += input(i).shape().at(a);
        return off;
      }
    }
    return -1;
  };
  const std::size_t ndata = mapped_inputs(e);
  std::vector<int> covered(got.size(), 0);
  // Windows first: the elements they write.
  for (std::size_t k = 0; k < ndata; ++k) {
    const IndexMap m = index_map(j, e, k);
    if (m.form != IndexMap::Form::window) continue;
    const std::vector<std::int64_t> ushape = input(k).shape();
    const std::vector<double> u = values_of(input(k));
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(u.size()); ++i) {
      std::vector<std::int64_t> o = unravel(i, ushape);
      for (std::size_t a = 0; a < o.size(); ++a) o[a] += start(m.axes[a], k, a, oshape[a] - ushape[a], o);
      const auto ol = static_cast<std::size_t>(ravel(o, oshape));
      INFO(prim_name(p) << " input " << k << " element " << i << " -> output " << ol);
      CHECK(got.at(ol) == u[static_cast<std::size_t>(i)]);
      ++covered[ol];
    }
  }
  // Then every element no window wrote, from the input the map reads.
  for (std::size_t ol = 0; ol < got.size(); ++ol) {
    if (covered[ol]) {
      CHECK(covered[ol] == 1);
      continue;
    }
    const std::vector<std::int64_t> o = unravel(static_cast<std::int64_t>(ol), oshape);
    bool read = false;
    for (std::size_t k = 0; k < std::max<std::size_t>(ndata, 1) && !read; ++k) {
      const IndexMap m = index_map(j, e, k);
      INFO(prim_name(p) << " output element " << ol);
      switch (m.form) {
        case IndexMap::Form::window: continue;
        case IndexMap::Form::iota: CHECK(got[ol] == static_cast<double>(o.at(static_cast<std::size_t>(m.dimension)))); break;
        case IndexMap::Form::linear: CHECK(got[ol] == values_of(input(k)).at(ol)); break;
        case IndexMap::Form::pad: {  // (o - lo) / (interior + 1) on every axis, else the padding value
          const std::vector<std::int64_t> xshape = input(k).shape();
          std::vector<std::int64_t> x(xshape.size());
          bool inside = true;
          for (std::size_t a = 0; a < x.size(); ++a) {
            const AxisMap& am = m.axes[a];
            const std::int64_t t = o[static_cast<std::size_t>(am.out_axis)] - am.value;
            inside = inside && t >= 0 && t % am.stride == 0 && t / am.stride < xshape[a];
            x[a] = t / am.stride;
          }
          CHECK(got[ol] == (inside ? values_of(input(k)).at(static_cast<std::size_t>(ravel(x, xshape)))
                                   : values_of(input(1)).at(0)));
          break;
        }
        case IndexMap::Form::axes: {
          const std::vector<std::int64_t> xshape = input(k).shape();
          std::vector<std::int64_t> x(xshape.size());
          for (std::size_t a = 0; a < x.size(); ++a) {
            const AxisMap& am = m.axes[a];
            const auto oa = static_cast<std::size_t>(am.out_axis);
            x[a] = am.out_axis < 0 ? start(am, k, a, xshape[a] - 1, o)
                                   : start(am, k, a, xshape[a] - oshape[oa], o) + am.stride * o[oa];
          }
          CHECK(got[ol] == values_of(input(k)).at(static_cast<std::size_t>(ravel(x, xshape))));
          break;
        }
      }
      read = true;
    }
    CHECK(read);
  }
}

}  // namespace

TEST_CASE("index maps: every layout primitive of the table has one, and it agrees with eager on its sample") {
  int layout = 0;
  for (Prim p : prim_samples::all_prims()) {
    INFO("primitive " << prim_name(p));
    // The layout primitives are exactly the structural rows of the table.
    CHECK(is_layout(p) == (prim_kind(p) == Kind::structural));
    if (!is_layout(p)) {
      const Sample s = prim_samples::sample_of(p);
      CHECK_THROWS_AS(index_map(*s.jaxpr.jaxpr, prim_samples::eqn_of(s, p)), InternalError);
      continue;
    }
    ++layout;
    check_maps(prim_samples::sample_of(p), p);
  }
  CHECK(layout == 12);
}

TEST_CASE("index maps: broadcast of a size-1 axis, strided slice, 3-d transpose, three-way concatenate") {
  {
    OneEqn b;
    const Sample s = b.eqn(Prim::broadcast_in_dim, {b.in(DType::f64, {1, 3})}, BroadcastInDimParams{{4, 2, 3}, {1, 2}});
    const IndexMap m = index_map(*s.jaxpr.jaxpr, s.jaxpr.jaxpr->eqns[0]);
    CHECK(m.axes[0].out_axis == -1);  // the size-1 axis broadcasts: always index 0
    CHECK(m.axes[1].out_axis == 2);
    check_maps(s, Prim::broadcast_in_dim);
  }
  {
    OneEqn b;
    const Sample s = b.eqn(Prim::slice, {b.in(DType::i32, {7, 6})}, SliceParams{{1, 5}, {7, 6}, {3, 1}});
    const IndexMap m = index_map(*s.jaxpr.jaxpr, s.jaxpr.jaxpr->eqns[0]);
    CHECK(m.axes[0].stride == 3);
    CHECK(m.axes[0].value == 1);
    CHECK(!m.axes[0].passes_through());
    check_maps(s, Prim::slice);
  }
  {
    OneEqn b;
    check_maps(b.eqn(Prim::transpose, {b.in(DType::f32, {2, 3, 4})}, TransposeParams{{2, 0, 1}}), Prim::transpose);
  }
  {
    OneEqn b;
    const Atom x = b.in(DType::f64, {2, 1});
    const Atom y = b.in(DType::f64, {2, 3});
    check_maps(b.eqn(Prim::concatenate, {x, y, b.in(DType::f64, {2, 2})}, ConcatenateParams{1}), Prim::concatenate);
  }
}

TEST_CASE("index maps: dynamic_slice and dynamic_update_slice clamp their starts into range") {
  for (std::int64_t i : {-3, 0, 1, 2, 9}) {
    INFO("start " << i);
    {
      OneEqn b;
      const Atom x = b.in(DType::f64, {4, 5});
      const Atom s0 = b.index(i);
      check_maps(b.eqn(Prim::dynamic_slice, {x, s0, b.index(1)}, DynamicSliceParams{{2, 3}}), Prim::dynamic_slice);
    }
    {
      OneEqn b;
      const Atom x = b.in(DType::i64, {4, 5});
      const Atom u = b.in(DType::i64, {3, 2});
      const Atom s0 = b.index(i);
      check_maps(b.eqn(Prim::dynamic_update_slice, {x, u, s0, b.index(i + 1)}, NoParams{}), Prim::dynamic_update_slice);
    }
  }
}

TEST_CASE("index maps: gather reads the operand at starts taken from the indices, clamped (mode CLIP)") {
  // x[idx] (rows) and x[:, idx] (columns) of a 4x5 array at [-2, 0, 3, 7].
  {
    OneEqn b;
    const Atom x = b.in(DType::f64, {4, 5});
    const Atom i = b.in(DType::i32, {4, 1});
    b.args.back() = AnyArray(Array<std::int32_t>({4, 1}, {-2, 0, 3, 7}));
    const Sample s = b.eqn(Prim::gather, {x, i}, GatherParams{{1}, {0}, {0}, {1, 5}});
    const IndexMap m = index_map(*s.jaxpr.jaxpr, s.jaxpr.jaxpr->eqns[0]);
    CHECK(m.axes[0].start == AxisMap::Start::gathered);
    CHECK(m.axes[0].out_axis == -1);  // collapsed
    CHECK(m.axes[1].out_axis == 1);
    check_maps(s, Prim::gather);
  }
  {
    OneEqn b;
    const Atom x = b.in(DType::i64, {4, 5});
    const Atom i = b.in(DType::i64, {2, 3, 1});
    b.args.back() = AnyArray(Array<std::int64_t>({2, 3, 1}, {4, -1, 0, 9, 2, 1}));
    check_maps(b.eqn(Prim::gather, {x, i}, GatherParams{{0}, {1}, {1}, {4, 1}}), Prim::gather);
  }
  // Two-component index vectors: x[r, c] with a 2x2 window kept (slices).
  {
    OneEqn b;
    const Atom x = b.in(DType::f32, {4, 5});
    const Atom i = b.in(DType::i32, {3, 2});
    b.args.back() = AnyArray(Array<std::int32_t>({3, 2}, {0, 0, 3, 4, 1, 2}));
    check_maps(b.eqn(Prim::gather, {x, i}, GatherParams{{1, 2}, {}, {0, 1}, {2, 2}}), Prim::gather);
  }
  // scatter_map: update element -> operand element, its start unclamped.
  const IndexMap sm = scatter_map(ScatterParams{{1}, {0}, {0}}, 2);
  CHECK(sm.axes[0].start == AxisMap::Start::scattered);
  CHECK(sm.axes[0].out_axis == -1);
  CHECK(sm.axes[1].out_axis == 1);
  CHECK(sm.axes[1].start == AxisMap::Start::constant);
}
