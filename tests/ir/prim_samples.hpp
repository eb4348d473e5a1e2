// One small program per primitive, for the tests that walk every Prim
// (test_prim_table.cpp: printer, shape rule, eager kernel; test_prim_table_jit.cpp:
// LLVM lowering, fuzzer coverage).
//
// sample_of(p) is a closed jaxpr with an equation of p and arguments for it.
// The elementwise primitives get theirs from their table row (operand dtype
// from the dtype rule, operand count from the arity, default params); every
// other primitive is a case of the `switch` below, so a new one fails to
// compile here (-Werror=switch) until it has a sample.
#pragma once

#include <dynstage/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace prim_samples {

using namespace dyn;
using namespace dyn::detail;

struct Sample {
  ClosedJaxpr jaxpr;
  std::vector<AnyArray> args;
};

// 0.5, 1.0, 1.5, ...: in the domain of every float function here (log,
// sqrt, rsqrt, log1p, pow), and away from rounding ties.
inline AnyArray sample_array(DType d, std::vector<std::int64_t> shape) {
  return visit_dtype(d, [&](auto t) -> AnyArray {
    using T = decltype(t);
    Array<T> a(shape);
    T* p = a.mutable_data();
    for (std::int64_t i = 0; i < a.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) p[i] = i % 2 == 0;
      else if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(0.5 * static_cast<double>(i + 1) + 0.1);
      else if constexpr (is_complex_v<T>)
        p[i] = T(static_cast<typename T::value_type>(0.5 * static_cast<double>(i + 1) + 0.1),
                 static_cast<typename T::value_type>(0.25 * static_cast<double>(i) - 0.5));
      else p[i] = static_cast<T>(i + 1);
    }
    return AnyArray(a);
  });
}

// A jaxpr of one equation `outs = p[params] ins`, typed by abstract_eval.
struct OneEqn {
  Jaxpr j;
  std::vector<AnyArray> args;

  Atom in(DType d, std::vector<std::int64_t> shape) {
    Type t{d, {}, false};
    for (auto n : shape) t.shape.push_back(JDim{n, -1});
    const int v = j.new_var(t);
    j.invars.push_back(v);
    args.push_back(sample_array(d, shape));
    return Atom::of_var(v);
  }
  // An integer scalar input holding `value` (start indices).
  Atom index(std::int64_t value) {
    const int v = j.new_var(Type{DType::i64, {}, false});
    j.invars.push_back(v);
    args.push_back(AnyArray(Array<std::int64_t>::scalar(value)));
    return Atom::of_var(v);
  }
  Sample eqn(Prim p, std::vector<Atom> ins, Params params) {
    std::vector<Aval> avals;
    for (const Atom& a : ins) {
      const Type& t = j.type_of(a);
      Aval av{t.dtype, {}, false, std::nullopt};
      for (const JDim& d : t.shape) av.shape.push_back(Dim(d.value));
      avals.push_back(av);
    }
    std::vector<int> outs;
    for (const Aval& o : abstract_eval(p, avals, params)) {
      Type t{o.dtype, {}, o.weak};
      for (const Dim& d : o.shape) t.shape.push_back(JDim{d.value(), -1});
      outs.push_back(j.new_var(t));
    }
    j.eqns.push_back(Eqn{p, std::move(ins), outs, std::move(params)});
    for (int v : outs) j.outvars.push_back(Atom::of_var(v));
    return Sample{ClosedJaxpr{std::make_shared<const Jaxpr>(j), {}}, args};
  }
};

// The dtype a sample operand of a dtype rule has.
inline DType sample_dtype(DTypeSet s) {
  switch (s) {
    case DTypeSet::any:
    case DTypeSet::ordered:
    case DTypeSet::numeric:
    case DTypeSet::number:
    case DTypeSet::floating:
    case DTypeSet::inexact:
    case DTypeSet::rounding: return DType::f64;
    case DTypeSet::complex: return DType::c128;
    case DTypeSet::integer_or_bool:
    case DTypeSet::integer: return DType::u32;  // (an unsigned dtype on every path)
  }
  return DType::f64;
}

// Default-constructed params of p's params type.
inline Params default_params(Prim p) {
  return visit_prim(p, []<Prim P>(PrimTag<P>) -> Params { return params_of_t<P>{}; });
}

template <class F>
Sample traced(F f, const AnyArray& x) {
  return Sample{make_jaxpr(f)(x.get<double>()), {x}};
}

inline Sample sample_of(Prim p) {
  const PrimInfo& info = prim_info(p);
  OneEqn b;
  switch (p) {
    DYN_UNARY_PRIMITIVES(DYN_CASE_LABEL)
    DYN_BINARY_PRIMITIVES(DYN_CASE_LABEL)
    DYN_COMPARE_PRIMITIVES(DYN_CASE_LABEL) {
      std::vector<Atom> ins;
      for (int k = 0; k < info.arity; ++k) ins.push_back(b.in(sample_dtype(info.dtypes), {2, 3}));
      Sample s = b.eqn(p, ins, default_params(p));
      // Functions defined on part of the line get operands inside it: (-1, 1)
      // for asin, acos, atanh, erf_inv (the samples / 4), [1, inf) for acosh (+ 1).
      if (p == Prim::asin || p == Prim::acos || p == Prim::atanh || p == Prim::erf_inv || p == Prim::acosh) {
        Array<double> a = s.args[0].get<double>();
        double* v = a.mutable_data();
        for (std::int64_t i = 0; i < a.size(); ++i) v[i] = p == Prim::acosh ? v[i] + 1 : v[i] / 4;
        s.args[0] = AnyArray(a);
      }
      return s;
    }
    case Prim::select_n: {
      const Atom pred = b.in(DType::bool_, {2, 3});
      const Atom c0 = b.in(DType::f32, {2, 3});
      return b.eqn(p, {pred, c0, b.in(DType::f32, {2, 3})}, NoParams{});
    }
    case Prim::clamp: {  // a rank-0 lo, an elementwise hi below it in places
      const Atom lo = b.in(DType::f64, {});
      const Atom x = b.in(DType::f64, {2, 3});
      return b.eqn(p, {lo, x, b.in(DType::f64, {2, 3})}, NoParams{});
    }
    case Prim::convert_element_type: return b.eqn(p, {b.in(DType::f64, {2, 3})}, ConvertParams{DType::i32, false});
    case Prim::broadcast_in_dim:
      return b.eqn(p, {b.in(DType::f64, {3})}, BroadcastInDimParams{{2, 3}, {1}});
    case Prim::reshape: return b.eqn(p, {b.in(DType::i32, {2, 3})}, ReshapeParams{{3, 2}});
    case Prim::transpose: return b.eqn(p, {b.in(DType::f32, {2, 3})}, TransposeParams{{1, 0}});
    case Prim::squeeze: return b.eqn(p, {b.in(DType::f64, {2, 1, 3})}, SqueezeParams{{1}});
    case Prim::concatenate: {
      const Atom x = b.in(DType::i64, {2, 3});
      return b.eqn(p, {x, b.in(DType::i64, {2, 2})}, ConcatenateParams{1});
    }
    case Prim::slice: return b.eqn(p, {b.in(DType::f64, {4, 5})}, SliceParams{{1, 0}, {4, 5}, {2, 2}});
    case Prim::dynamic_slice: {
      const Atom x = b.in(DType::f64, {4, 5});
      const Atom i = b.index(1);
      return b.eqn(p, {x, i, b.index(7)}, DynamicSliceParams{{2, 3}});  // 7: clamped to 2
    }
    case Prim::dynamic_update_slice: {
      const Atom x = b.in(DType::f32, {4, 5});
      const Atom u = b.in(DType::f32, {2, 2});
      const Atom i = b.index(1);
      return b.eqn(p, {x, u, i, b.index(2)}, NoParams{});
    }
    case Prim::iota: return b.eqn(p, {}, IotaParams{DType::i32, {2, 3}, 1});
    case Prim::rev: return b.eqn(p, {b.in(DType::f32, {3, 4})}, RevParams{{1}});
    case Prim::pad: {  // a row above, one element cropped left, interior and high padding along axis 1
      const Atom x = b.in(DType::f64, {2, 3});
      return b.eqn(p, {x, b.in(DType::f64, {})}, PadParams{{{1, 0, 0}, {-1, 2, 1}}});
    }
    case Prim::gather: {  // rows 1, 2, 3 and 4 (clamped to 3) of a 4x5 array: x[idx]
      const Atom x = b.in(DType::f64, {4, 5});
      const Atom i = b.in(DType::i32, {4, 1});
      return b.eqn(p, {x, i}, GatherParams{{1}, {0}, {0}, {1, 5}});
    }
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL) {  // rows 1, 2, 3 and 4 (dropped) updated: x.at(idx).op(u)
      const Atom x = b.in(DType::f64, {4, 5});
      const Atom i = b.in(DType::i32, {4, 1});
      const Atom u = b.in(DType::f64, {4, 5});
      return b.eqn(p, {x, i, u}, ScatterParams{{1}, {0}, {0}});
    }
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod:
    case Prim::reduce_or:
    case Prim::reduce_and:
      return b.eqn(p, {b.in(sample_dtype(info.dtypes), {2, 3, 4})}, ReduceParams{{0, 2}});
    case Prim::argmax:  // the middle axis (inner axes after it), an i64 index
    case Prim::argmin:
      return b.eqn(p, {b.in(DType::f64, {2, 3, 4})}, ArgReduceParams{{1}, p == Prim::argmax ? DType::i32 : DType::i64});
    case Prim::segment_sum_offsets:  // offsets 1, 2, 3, 4 over 3 elements: rows [1, 2), [2, 3), [3, 3) (4 clamped)
      return b.eqn(p, {b.in(DType::f64, {3}), b.in(DType::i32, {4})}, NoParams{});
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)  // reversed for two of the four
      return b.eqn(p, {b.in(sample_dtype(info.dtypes), {2, 3, 4})},
                   CumulativeParams{1, p == Prim::cumprod || p == Prim::cummin});
    case Prim::sort:  // argsort: two operands (x and an iota, fused into the copy), the middle axis
      return traced([](auto x) { return dyn::argsort(-x, 1); }, sample_array(DType::f64, {2, 3, 4}));
    case Prim::top_k:  // both outputs used
      return traced([](auto x) {
        auto [v, i] = dyn::top_k(-x, 2);
        return v + dyn::astype<double>(i);
      }, sample_array(DType::f64, {2, 3, 4}));
    case Prim::fft:  // an rfft over the two trailing axes: real in, complex out (c128[2,3,5])
      return b.eqn(p, {b.in(DType::f64, {2, 3, 8})}, FftParams{FftType::rfft, {3, 8}});
    case Prim::dot_general: {
      const Atom x = b.in(DType::f64, {2, 3, 4});
      return b.eqn(p, {x, b.in(DType::f64, {2, 4, 5})}, DotGeneralParams{{2}, {1}, {0}, {0}});
    }
    case Prim::for_loop:
      return traced([](auto x) { return for_loop(0, 3, 1)([](auto, auto c) { return c * 2.0; })(x); },
                    sample_array(DType::f64, {3}));
    case Prim::while_loop:
      return traced(
          [](auto x) {
            return while_loop([](auto c) { return dyn::sum(c) < 100.0; })([](auto c) { return c * 2.0; })(x);
          },
          sample_array(DType::f64, {3}));
    case Prim::cond:
      return traced(
          [](auto x) {
            return dyn::cond(dyn::sum(x) > 1.0, [](auto c) { return c + 1.0; }, [](auto c) { return c - 1.0; })(x);
          },
          sample_array(DType::f64, {3}));
    case Prim::scan:  // a reversed running sum over the rows of a matrix
      return traced(
          [](auto xs) {
            return dyn::scan([](auto c, auto x) { return std::tuple{c + x, c * 2.0}; }, dyn::zeros<double>({3}), xs,
                             {.reverse = true});
          },
          sample_array(DType::f64, {4, 3}));
    case Prim::checkpoint:  // a body of two equations, one result sized like the operand
      return traced([](auto x) { return dyn::checkpoint([](auto y) { return dyn::sin(y) * y; })(x); },
                    sample_array(DType::f64, {3}));
    case Prim::debug_callback:  // an effect: no outputs; its operand is dead but for the print
      return traced(
          [](auto x) {
            dyn::debug_print("x={}", x * 2.0);
            return x;
          },
          sample_array(DType::f64, {3}));
    // The collectives over axis 'x' of mesh 0, the one-rank mesh every
    // process has (runtime/distributed.hpp): a group of one, where psum is
    // the identity, all_gather adds an axis of size 1, ppermute (0, 0) is
    // the identity and axis_index is 0. Their multi-rank behaviour is
    // tests/distributed/'s, under mpirun.
    case Prim::psum:
    case Prim::pmax:
    case Prim::pmin: return b.eqn(p, {b.in(DType::f64, {2, 3})}, CollectiveParams{}.with_form(CollectiveForm::reduce));
    case Prim::all_gather: {
      CollectiveParams c = CollectiveParams{}.with_form(CollectiveForm::gather);
      c.dimension = 1;
      return b.eqn(p, {b.in(DType::f64, {2, 3})}, c);
    }
    case Prim::ppermute: {
      CollectiveParams c = CollectiveParams{}.with_form(CollectiveForm::permute);
      c.perm = {{0, 0}};
      return b.eqn(p, {b.in(DType::f64, {2, 3})}, c);
    }
    case Prim::all_to_all: {  // split axis 1 (of the group's size, 1), stacked at axis 0
      CollectiveParams c = CollectiveParams{}.with_form(CollectiveForm::to_all);
      c.dimension = 1;
      c.concat_axis = 0;
      return b.eqn(p, {b.in(DType::f64, {2, 1, 3})}, c);
    }
    case Prim::axis_index: return b.eqn(p, {}, CollectiveParams{}.with_form(CollectiveForm::index));
  }
  throw std::logic_error("prim_samples: bad primitive tag");
}

// The equation of p in a sample (the first at top level).
inline const Eqn& eqn_of(const Sample& s, Prim p) {
  for (const Eqn& e : s.jaxpr.jaxpr->eqns)
    if (e.prim == p) return e;
  throw std::logic_error("prim_samples: the sample of " + std::string(prim_name(p)) + " has no equation of it");
}

inline std::vector<Prim> all_prims() {
  std::vector<Prim> r;
  for (const PrimInfo& i : kPrimTable) r.push_back(i.prim);
  return r;
}

}  // namespace prim_samples
