// Differential tests of dyn::jit (issue 3): creation functions and shape
// operations (reshape transpose broadcast_to expand_dims squeeze concatenate
// slice dynamic_slice dynamic_update_slice) for every dtype, including
// invalid parameters, traced and clamped start indices and empty operands:
// compiled (dyn::jit) vs interpreted (dyn::eval_jaxpr) vs eager
// (dyn::eager), exactly (see jit_diff.hpp).
#include "jit_diff.hpp"

#include <algorithm>

namespace {

using namespace jit_diff;

// ===========================================================================
// Creation functions: concrete ones become constants of the trace (and
// outputs that are constants); the *_like ones are staged.

const auto creation_fn = [](int op, const auto& in) {
  return map_all(in, [op](const auto& x) {
    using T = typename std::remove_cvref_t<decltype(x)>::value_type;
    // Constants mixed with a traced value without arithmetic (valid for bool).
    auto with_const = dyn::where(dyn::full<bool>({2, 3}, true), x, dyn::zeros<T>({2, 3}));
    auto ar = [&] {
      if constexpr (is_bool_v<T>) return dyn::zeros<T>({4});
      else return op == 1 ? dyn::arange<T>(0) : dyn::arange<T>(4);
    }();
    return std::make_tuple(dyn::zeros<T>({2, 3}), dyn::ones<T>({0, 2}), dyn::full<T>({2}, T(7)), dyn::ones<T>({}),
                           ar, dyn::zeros_like(x), dyn::ones_like(x), dyn::full_like(x, 3), dyn::full_like(x, 2.7),
                           with_const, 2.5, 7);
  });
};

template <class T>
void check_creation() {
  for (int op : {0, 1}) {
    const std::string what = "creation functions, " + dt_name(dyn::dtype_v<T>) + (op ? ", empty arange" : "");
    const Three r = run3(creation_fn, op, only<Singles>(Arrs<T>{gen<T>({2, 3}, 100)}));
    agree(r, what);
    expect_ok(r, what);
  }
}

TEST_CASE_TEMPLATE("jit diff: zeros ones full arange and the *_like functions", T, bool, i32, i64, float, double) {
  check_creation<T>();
}

// ===========================================================================
// Shape operations, on rank-3 operands, table-driven (one call site per
// function keeps the instantiated code small), with traced start indices i,
// j for the dynamic slices.

enum class ShapeFn {
  reshape, transpose, broadcast_to, broadcast_row, expand_dims, squeeze_all, squeeze_axes, concatenate, slice,
  dynamic_slice, dynamic_update_slice
};
// Start indices standing for the traced arguments i and j.
constexpr i64 kI = 1000, kJ = 1001;

struct ShapeCase {
  const char* name;
  ShapeFn fn;
  std::vector<i64> a, b, c;
};

// a, b, c: reshape (sizes); transpose (permutation, empty: reversed);
// broadcast_to (leading sizes added); expand_dims (axis); squeeze_all
// (expand_dims axis first); squeeze_axes (reshape sizes, axes); concatenate
// (operands, 0 = x, 1 = u; axis); slice (starts, limits, strides);
// dynamic_slice (starts, sizes); dynamic_update_slice (starts).
const ShapeCase kShapeCases[] = {
    {"reshape(x,{4,-1})", ShapeFn::reshape, {4, -1}, {}, {}},
    {"reshape(x,{-1})", ShapeFn::reshape, {-1}, {}, {}},
    {"reshape(x,{3,-1,2})", ShapeFn::reshape, {3, -1, 2}, {}, {}},
    {"reshape(x,{2,12,1})", ShapeFn::reshape, {2, 12, 1}, {}, {}},
    {"transpose(x)", ShapeFn::transpose, {}, {}, {}},
    {"transpose(x,{1,0,2})", ShapeFn::transpose, {1, 0, 2}, {}, {}},
    {"transpose(x,{2,0,1})", ShapeFn::transpose, {2, 0, 1}, {}, {}},
    {"transpose(x,{-1,0,1})", ShapeFn::transpose, {-1, 0, 1}, {}, {}},
    {"broadcast_to(x,{3,...x.shape})", ShapeFn::broadcast_to, {3}, {}, {}},
    {"broadcast_to(x,x.shape)", ShapeFn::broadcast_to, {}, {}, {}},
    {"broadcast_to(x[:,:1],x.shape)", ShapeFn::broadcast_row, {}, {}, {}},
    {"expand_dims(x,0)", ShapeFn::expand_dims, {0}, {}, {}},
    {"expand_dims(x,3)", ShapeFn::expand_dims, {3}, {}, {}},
    {"expand_dims(x,-2)", ShapeFn::expand_dims, {-2}, {}, {}},
    {"squeeze(expand_dims(x,1))", ShapeFn::squeeze_all, {1}, {}, {}},
    {"squeeze(reshape(x,{1,2,1,-1}),{0})", ShapeFn::squeeze_axes, {1, 2, 1, -1}, {0}, {}},
    {"squeeze(reshape(x,{1,2,1,-1}),{-2,0})", ShapeFn::squeeze_axes, {1, 2, 1, -1}, {-2, 0}, {}},
    {"concatenate({x,x},0)", ShapeFn::concatenate, {0, 0}, {0}, {}},
    {"concatenate({x,u,x},1)", ShapeFn::concatenate, {0, 1, 0}, {1}, {}},
    {"concatenate({u,x},-2)", ShapeFn::concatenate, {1, 0}, {-2}, {}},
    {"concatenate({x,x,x},-1)", ShapeFn::concatenate, {0, 0, 0}, {-1}, {}},
    {"concatenate({x},2)", ShapeFn::concatenate, {0}, {2}, {}},
    {"slice(x,{0,1,1},{2,3,4})", ShapeFn::slice, {0, 1, 1}, {2, 3, 4}, {}},
    {"slice(x,{1,0,0},{2,3,4},{1,2,3})", ShapeFn::slice, {1, 0, 0}, {2, 3, 4}, {1, 2, 3}},
    {"slice(x,{1,1,1},{1,3,4})", ShapeFn::slice, {1, 1, 1}, {1, 3, 4}, {}},
    {"dynamic_slice(x,{1,1,1},{1,2,2})", ShapeFn::dynamic_slice, {1, 1, 1}, {1, 2, 2}, {}},
    {"dynamic_slice(x,{i,j,0},{2,2,3})", ShapeFn::dynamic_slice, {kI, kJ, 0}, {2, 2, 3}, {}},
    {"dynamic_slice(x,{5,-3,2},{1,2,2})", ShapeFn::dynamic_slice, {5, -3, 2}, {1, 2, 2}, {}},
    {"dynamic_slice(x,{j,i,i},{1,1,1})", ShapeFn::dynamic_slice, {kJ, kI, kI}, {1, 1, 1}, {}},
    {"dynamic_slice(x,{0,0,0},{0,1,2})", ShapeFn::dynamic_slice, {0, 0, 0}, {0, 1, 2}, {}},
    {"dynamic_update_slice(x,u,{1,1,1})", ShapeFn::dynamic_update_slice, {1, 1, 1}, {}, {}},
    {"dynamic_update_slice(x,u,{0,i,j})", ShapeFn::dynamic_update_slice, {0, kI, kJ}, {}, {}},
    {"dynamic_update_slice(x,u,{3,9,-9})", ShapeFn::dynamic_update_slice, {3, 9, -9}, {}, {}},
    {"dynamic_update_slice(x,u,{j,j,i})", ShapeFn::dynamic_update_slice, {kJ, kJ, kI}, {}, {}},
};
constexpr int kNumShape = static_cast<int>(std::size(kShapeCases));
static_assert(kNumShape == 34, "the tables of invalid cases in check_shape_ops index kShapeCases");

template <class X>
dyn::Shape shape_of(const X& x) {
  if constexpr (dyn::is_tracer_v<X>) return x.shape();
  else return dyn::detail::to_shape(x.shape());
}

template <class I>
std::vector<dyn::Index> starts_of(const std::vector<i64>& a, const I& i, const I& j) {
  std::vector<dyn::Index> r;
  for (i64 s : a) r.push_back(s == kI ? dyn::Index(i) : s == kJ ? dyn::Index(j) : dyn::Index(s));
  return r;
}

template <class X, class I>
X apply_shape(int k, const X& x, const X& u, const I& i, const I& j) {
  const ShapeCase& c = kShapeCases[k];
  const dyn::Shape s = shape_of(x);
  switch (c.fn) {
    case ShapeFn::reshape: return dyn::reshape(x, dyn::detail::to_shape(c.a));
    case ShapeFn::transpose: return dyn::transpose(x, c.a);
    case ShapeFn::broadcast_to: {
      dyn::Shape to = dyn::detail::to_shape(c.a);
      to.insert(to.end(), s.begin(), s.end());
      return dyn::broadcast_to(x, to);
    }
    case ShapeFn::broadcast_row: {
      const std::vector<i64> lim{s[0].value(), 1, s[2].value()};
      return dyn::broadcast_to(dyn::slice(x, {0, 0, 0}, lim), s);
    }
    case ShapeFn::expand_dims: return dyn::expand_dims(x, c.a[0]);
    case ShapeFn::squeeze_all: return dyn::squeeze(dyn::expand_dims(x, c.a[0]));
    case ShapeFn::squeeze_axes: return dyn::squeeze(dyn::reshape(x, dyn::detail::to_shape(c.a)), c.b);
    case ShapeFn::concatenate: {
      std::vector<X> xs;
      for (i64 w : c.a) xs.push_back(w ? u : x);
      return dyn::concatenate(xs, c.b[0]);
    }
    case ShapeFn::slice: return dyn::slice(x, c.a, c.b, c.c);
    case ShapeFn::dynamic_slice: return dyn::dynamic_slice(x, starts_of(c.a, i, j), c.b);
    case ShapeFn::dynamic_update_slice: return dyn::dynamic_update_slice(x, u, starts_of(c.a, i, j));
  }
  throw std::logic_error("bad shape op");
}

// in: (x, u) pairs; i, j: traced start indices.
const auto shape_fn = [](int op, const auto& in, const auto& i, const auto& j) {
  return map_all(in, [&](const auto& p) { return apply_shape(op, p.first, p.second, i, j); });
};

template <class T>
void check_shape_ops() {
  // x (2,3,4), u (2,2,4) fits every concatenate and update; then operands
  // that make some ops invalid (every way must reject them alike), a size-1
  // and an empty operand.
  // `invalid`: the indices into kShapeCases that must be rejected (with a
  // ShapeError or IndexError, the same in all three ways); every other op
  // must run.
  struct Case {
    Shp x, u;
    i32 i, j;
    std::vector<int> invalid;
  };
  const Case cases[] = {
      {{2, 3, 4}, {2, 2, 4}, 1, 2, {}},
      {{2, 3, 4}, {2, 2, 4}, -5, 7, {}},  // starts clamped into range
      // u fits no concatenation along axis 1.
      {{2, 3, 4}, {1, 1, 1}, 0, 1, {18, 19}},
      // 8 elements: no (3,-1,2) or (2,12,1); axis 1 too short for the slices
      // and the size-2 dynamic slices.
      {{2, 1, 4}, {2, 1, 4}, 1, 0, {2, 3, 22, 23, 24, 25, 26, 27}},
      // Empty: -1 infers 0 (numpy); nothing can be sliced out of axis 1.
      {{2, 0, 4}, {2, 0, 4}, 0, 0, {3, 10, 22, 23, 24, 25, 26, 27, 28, 29}},
      // Axis 2 of size 1: the slices and dynamic slices wider than 1 fail.
      {{2, 12, 1}, {2, 2, 1}, 3, 1, {22, 23, 24, 25, 26, 27, 29}}};
  std::uint64_t seed = 110;
  for (const Case& c : cases) {
    const auto in = only<SamePairs>(Pairs<T>{{gen<T>(c.x, seed), gen<T>(c.u, seed + 1)}});
    seed += 2;
    for (int op = 0; op < kNumShape; ++op) {
      std::ostringstream what;
      what << kShapeCases[op].name << " on " << dt_name(dyn::dtype_v<T>) << " x" << dyn::detail::shape_str(dyn::detail::to_shape(c.x))
           << " u" << dyn::detail::shape_str(dyn::detail::to_shape(c.u)) << " i=" << c.i << " j=" << c.j;
      const Three r = run3(shape_fn, op, in, c.i, c.j);
      agree(r, what.str());
      const bool invalid = std::find(c.invalid.begin(), c.invalid.end(), op) != c.invalid.end();
      if (!invalid) CHECK_MESSAGE(r.ok(), what.str(), ": ", r.eager.message);
      else
        CHECK_MESSAGE((r.error() == "ShapeError" || r.error() == "IndexError"), what.str(),
                      ": expected a ShapeError or IndexError, got [", r.error(), "] ", r.eager.message);
    }
  }
}

TEST_CASE_TEMPLATE("jit diff: shape operations", T, bool, i32, i64, float, double) { check_shape_ops<T>(); }

}  // namespace
