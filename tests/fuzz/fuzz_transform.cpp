// dynstage_fuzz: derivatives and batching of random programs (issue 20;
// docs/reliability.md "Transformations"). The case's program is called
// through run_values (fuzz_run.cpp's interpreter), so every program the
// generator builds is also differentiated and batched:
//
//   grad  the dot-product test <u, J v> == <J^T u, v> (J v from dyn::jvp,
//         J^T u from dyn::grad of <u, f>) at a tight tolerance; <J^T u, v>
//         against central differences of <u, f> where f is smooth near the
//         inputs; jit of both equal to eager; their jaxpr passes check_jaxpr.
//   vmap  dyn::vmap(f) over a random batch (in_axes 0, -1 or dyn::none per
//         argument) equal to f run on each lane and stacked; jit(vmap(f))
//         equal to eager vmap(f); its jaxpr passes check_jaxpr. Lanes whose
//         results differ in shape have no batched result: vmap must raise.
//
// A transformation that is not built yet raises a dyn::TypeError "...
// cannot differentiate through ..." / "vmap: cannot batch ...": counted as
// skipped, not filtered by primitive, so coverage grows with the rules.
#include "fuzz.hpp"

#include <dynstage/dynstage.hpp>

#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <tuple>

namespace fuzz {
namespace {

using dyn::Array;
using dyn::Tracer;
using dyn::detail::Value;

// One vector per dtype, in DType's order (the pytree of a set of values of
// any dtypes: results, and vmap's per-argument packs of one value).
template <template <class> class A>
using Pack = std::tuple<std::vector<A<bool>>, std::vector<A<std::int8_t>>, std::vector<A<std::int16_t>>,
                        std::vector<A<std::int32_t>>, std::vector<A<i64>>, std::vector<A<std::uint8_t>>,
                        std::vector<A<std::uint16_t>>, std::vector<A<std::uint32_t>>,
                        std::vector<A<std::uint64_t>>, std::vector<A<float>>, std::vector<A<double>>>;

template <template <class> class A>
void push(Pack<A>& p, const Value& v) {
  fuzz::visit_dtype(v.dtype(), [&](auto t) {
    using T = decltype(t);
    std::get<std::vector<A<T>>>(p).push_back(dyn::detail::from_value<A<T>>(v));
  });
}

// The leaves of a tuple of vectors, in order.
template <class P>
std::vector<Value> values(const P& p) {
  std::vector<Value> r;
  std::apply([&](const auto&... vs) { (..., [&] { for (const auto& x : vs) r.push_back(dyn::detail::to_value(x)); }()); },
             p);
  return r;
}

// The order in which a Pack holds values of these dtypes (grouped by
// dtype, stable): position k of the Pack's leaves is item order[k].
std::vector<std::size_t> pack_order(const std::vector<DType>& dts) {
  std::vector<std::size_t> order;
  for (int d = 0; d < kNumFuzzDTypes; ++d)
    for (std::size_t k = 0; k < dts.size(); ++k)
      if (static_cast<int>(dts[k]) == d) order.push_back(k);
  return order;
}

// The types of the top-level program's outputs.
std::vector<Ty> out_types(const Program& p) {
  std::vector<const Ty*> slot;
  for (const Ty& t : p.params) slot.push_back(&t);
  for (const Node& n : p.nodes)
    for (const Ty& t : n.out) slot.push_back(&t);
  std::vector<Ty> r;
  for (int s : p.outs) r.push_back(*slot.at(static_cast<std::size_t>(s)));
  return r;
}

std::string error_class(const dyn::Error& e) {
  if (dynamic_cast<const dyn::TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const dyn::ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const dyn::ArithmeticError*>(&e)) return "ArithmeticError";
  if (dynamic_cast<const dyn::IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const dyn::InternalError*>(&e)) return "InternalError";
  return "Error";
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A transformation not built yet: the TypeErrors of jvp_missing, of reverse
// mode through control flow, of batch_missing and of batching control flow.
// The message without the place it names (" (at file:line)").
std::string message(const dyn::Error& e) {
  const std::string m = first_line(e.what());
  return m.substr(0, m.rfind(" (at "));
}

bool unsupported(const dyn::Error& e) {
  const std::string m = e.what();
  return dynamic_cast<const dyn::TypeError*>(&e) &&
         (m.find("cannot differentiate through") != std::string::npos || m.find("vmap: cannot batch") != std::string::npos);
}

// A loop whose carry grows traces only from a dynamic size (a symbolic
// input, or arange(n) of an argument n under jit). The transformations
// trace with the inputs' concrete shapes, n's value known (as JAX's do,
// which would not trace arange(n) at all), so such a loop raises this
// TypeError there while the three ways ran it: not a transformation bug.
bool static_only(const dyn::Error& e) {
  return dynamic_cast<const dyn::TypeError*>(&e) &&
         std::string(e.what()).find("a static carried dimension cannot change") != std::string::npos;
}

Check skip(std::string why) { return Check{Check::skipped, std::move(why), "", ""}; }
Check fail(std::string what, std::string detail) { return Check{Check::failed, std::move(what), std::move(detail), ""}; }

// Runs g; a dyn::Error becomes a skip (unsupported) or a failure (`stage`
// names what raised it); other exceptions a failure.
template <class G>
std::optional<Check> guarded(const char* stage, G&& g) {
  try {
    g();
    return std::nullopt;
  } catch (const dyn::Error& e) {
    if (unsupported(e)) return skip("unsupported: " + message(e));
    if (static_only(e)) return skip("traces only with a dynamic size");
    return fail(std::string(stage) + " raised " + error_class(e), e.what());
  } catch (const std::exception& e) {
    return fail(std::string(stage) + " crashed", e.what());
  }
}

// ---------------------------------------------------------------------------
// grad

// Tolerances (docs/reliability.md "Transformations"):
// - dot-product test, |<u, J v> - <J^T u, v>| <= rtol * (sum |u_i (J v)_i| +
//   sum |(J^T u)_j v_j|): both sides are the same linear map summed in
//   another order, so they differ by rounding only: rtol 1e-9 in f64, 1e-3
//   when f32 is involved;
// - central differences D(h) = (s(x + h v) - s(x - h v)) / 2h of
//   s = <u, f>: truncation error h^2 |s'''| / 6, rounding eps |s| / h. With
//   h = 1e-5 (v scaled to the inputs' magnitude) both are ~1e-11 of the
//   scale; D(h) and D(h/2) further apart than the tolerance means a kink
//   (abs, floor, max, a comparison) within h: not compared; so does a
//   difference of the one-sided slopes that does not halve with h (a kink
//   exactly at x, where D(h) averages both sides: a clamp at its bound). Tolerance 1e-6
//   of max(1, |<J^T u, v>|) plus 1e-9 of sum |u_i f_i|;
// - jit vs eager: 1e-9 (f32: 1e-3) of max(1, max |eager element|).
constexpr double kDotRtol64 = 1e-9, kDotRtol32 = 1e-3;
// A side of the dot-product test that cancels (a derivative that is exactly
// zero, computed from terms near 1: seeds 19010, 69055) is rounding noise of
// the size of its terms, far above rtol times the side itself. When the test
// fails, the check measures that noise: it recomputes J (c v) / c and
// J^T (c u) / c for scales c just off 1 (not powers of two): the linear map
// scales exactly, its rounding does not, so the sides move by their noise,
// and it allows kNoiseFactor times the largest move on top of the
// tolerance above. A wrong rule's error is linear in u and v and moves by
// only |c - 1| (1e-6) of itself; even one nonlinear in the direction moves
// by that fraction of its error.
constexpr double kNoiseScales[] = {1 + 3.0 / (1 << 22), 1 - 5.0 / (1 << 23)};
constexpr double kNoiseFactor = 1e3;
constexpr double kFdStep = 1e-5, kFdRtol = 1e-6, kFdAbs = 1e-9;
constexpr double kJitRtol64 = 1e-9, kJitRtol32 = 1e-3;

// The program as a function of its float inputs (one vector per dtype), the
// other inputs fixed: returns its float results (one vector per dtype).
struct FloatFn {
  const Program* prog = nullptr;
  std::vector<std::size_t> p32, p64;  // float parameters
  std::vector<std::size_t> o32, o64;  // float results (positions in outs)
  std::vector<Value> params;          // every parameter's value (floats overwritten)

  template <class X>
  auto operator()(const X& x) const {
    using A32 = typename std::tuple_element_t<0, X>::value_type;
    using A64 = typename std::tuple_element_t<1, X>::value_type;
    std::vector<Value> ps = params;
    for (std::size_t k = 0; k < p32.size(); ++k) ps[p32[k]] = dyn::detail::to_value(std::get<0>(x).at(k));
    for (std::size_t k = 0; k < p64.size(); ++k) ps[p64[k]] = dyn::detail::to_value(std::get<1>(x).at(k));
    const std::vector<Value> o = run_values(*prog, ps, dyn::is_tracer_v<A32>);
    std::tuple<std::vector<A32>, std::vector<A64>> r;
    for (std::size_t k : o32) std::get<0>(r).push_back(dyn::detail::from_value<A32>(o.at(k)));
    for (std::size_t k : o64) std::get<1>(r).push_back(dyn::detail::from_value<A64>(o.at(k)));
    return r;
  }
};

using Floats = std::tuple<std::vector<Array<float>>, std::vector<Array<double>>>;

// s = <u, f(x)> in f64: the scalar grad differentiates.
struct Weighted {
  FloatFn f;
  const Floats* u;
  template <class X>
  auto operator()(const X& x) const {
    const auto y = f(x);
    using A64 = typename std::tuple_element_t<1, X>::value_type;
    std::optional<A64> acc;
    auto add = [&](const auto& term) { acc = acc ? *acc + term : term; };
    for (std::size_t k = 0; k < std::get<0>(y).size(); ++k)
      add(dyn::astype<double>(dyn::sum(std::get<0>(y)[k] * std::get<0>(*u)[k])));
    for (std::size_t k = 0; k < std::get<1>(y).size(); ++k) add(dyn::sum(std::get<1>(y)[k] * std::get<1>(*u)[k]));
    return *acc;
  }
};

// sum_k <a_k, b_k> in f64 and sum_k |a_k b_k| (the scale of its rounding).
std::pair<double, double> dot(const std::vector<Value>& a, const std::vector<Value>& b) {
  double s = 0, m = 0;
  for (std::size_t k = 0; k < a.size(); ++k)
    fuzz::visit_dtype(a[k].dtype(), [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        const T* x = static_cast<const T*>(a[k].array.data());
        const T* y = static_cast<const T*>(b.at(k).array.data());
        for (i64 i = 0; i < a[k].array.size(); ++i) {
          s += static_cast<double>(x[i]) * static_cast<double>(y[i]);
          m += std::fabs(static_cast<double>(x[i]) * static_cast<double>(y[i]));
        }
      }
    });
  return {s, m};
}

// "" if got is within rtol * max(min_scale, max |ref|) of ref element by element.
std::string close(const dyn::AnyArray& got, const dyn::AnyArray& ref, double rtol, double min_scale = 1) {
  if (got.dtype() != ref.dtype() || got.shape() != ref.shape())
    return "type " + dyn::detail::array_type_str(got) + " vs " + dyn::detail::array_type_str(ref);
  return fuzz::visit_dtype(got.dtype(), [&](auto t) -> std::string {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = static_cast<const T*>(got.data());
      const T* y = static_cast<const T*>(ref.data());
      double scale = min_scale;
      for (i64 i = 0; i < ref.size(); ++i)
        if (std::isfinite(y[i])) scale = std::max(scale, std::fabs(static_cast<double>(y[i])));
      for (i64 i = 0; i < got.size(); ++i) {
        const bool ok = std::isnan(x[i]) || std::isnan(y[i]) ? std::isnan(x[i]) && std::isnan(y[i])
                        : x[i] == y[i] ? true
                                       : std::isfinite(x[i]) && std::isfinite(y[i]) &&
                                             std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i])) <=
                                                 rtol * scale;
        if (!ok)
          return "element " + std::to_string(i) + ": " + std::to_string(static_cast<double>(x[i])) + " vs " +
                 std::to_string(static_cast<double>(y[i]));
      }
      return "";
    } else {
      return "not a float";
    }
  });
}

bool all_finite(const std::vector<Value>& vs) {
  for (const Value& v : vs) {
    bool ok = true;
    fuzz::visit_dtype(v.dtype(), [&](auto t) {
      using T = decltype(t);
      if constexpr (std::is_floating_point_v<T>) {
        const T* x = static_cast<const T*>(v.array.data());
        for (i64 i = 0; i < v.array.size(); ++i) ok = ok && std::isfinite(x[i]);
      }
    });
    if (!ok) return false;
  }
  return true;
}

// A random array of t's type; `scale` (if given) multiplies each element by
// max(1, |scale element|), so a direction moves each input by a similar
// relative amount; zero if `zero`.
template <class T>
Array<T> random_like(Rng& r, const std::vector<i64>& shape, const Array<T>* scale, bool zero) {
  Array<T> a(shape);
  T* p = a.mutable_data();
  for (i64 i = 0; i < a.size(); ++i) {
    double v = zero ? 0.0 : r.uniform();
    if (scale) {
      const double s = std::fabs(static_cast<double>(scale->data()[i]));
      if (std::isfinite(s)) v *= std::max(1.0, s);
    }
    p[i] = static_cast<T>(v);
  }
  return a;
}

std::vector<i64> sizes_of(const Ty& t) {
  std::vector<i64> r;
  for (const D& d : t.shape) r.push_back(d.n);
  return r;
}

// x + h v, leaf by leaf.
Floats axpy(const Floats& x, double h, const Floats& v) {
  Floats r;
  for (std::size_t k = 0; k < std::get<0>(x).size(); ++k)
    std::get<0>(r).push_back(std::get<0>(x)[k] + std::get<0>(v)[k] * static_cast<float>(h));
  for (std::size_t k = 0; k < std::get<1>(x).size(); ++k)
    std::get<1>(r).push_back(std::get<1>(x)[k] + std::get<1>(v)[k] * h);
  return r;
}

// c x, leaf by leaf.
Floats scaled(const Floats& x, double c) {
  Floats r;
  for (const Array<float>& a : std::get<0>(x)) std::get<0>(r).push_back(a * static_cast<float>(c));
  for (const Array<double>& a : std::get<1>(x)) std::get<1>(r).push_back(a * c);
  return r;
}

template <class T>
void perturb(T& tree) {  // Fault::grad: the first element of the first non-empty leaf
  bool done = false;
  auto one = [&](auto& vec) {
    for (auto& a : vec)
      if (!done && a.size() > 0) {
        auto* p = a.mutable_data();
        p[0] = static_cast<std::remove_reference_t<decltype(p[0])>>(p[0] + 1e-2 * (1 + std::fabs(static_cast<double>(p[0]))));
        done = true;
      }
  };
  one(std::get<0>(tree));
  one(std::get<1>(tree));
}

}  // namespace

namespace {
void size_params(const Program& p, std::size_t nparams, std::vector<bool>& out);
}

namespace {
// Whether the program (or a body) computes a float remainder.
bool has_rem(const Program& p) {
  for (const Node& n : p.nodes) {
    if ((n.op == Op::binary || n.op == Op::scalar) && n.k == b_rem) return true;
    for (const Program& b : n.body)
      if (has_rem(b)) return true;
  }
  return false;
}

// Whether the program (or a body) takes a stop_gradient (of a real value, or
// of a complex one inside a cplx node): its derivative is zero by
// definition, which central differences do not see.
bool has_stop_gradient(const Program& p) {
  for (const Node& n : p.nodes) {
    if (n.op == Op::unary && n.k == u_stop_gradient) return true;
    if (n.op == Op::cplx)
      for (std::size_t i = 1; i < n.p.size(); ++i)
        if (n.p[i] == cs_stop_gradient) return true;
    for (const Program& b : n.body)
      if (has_stop_gradient(b)) return true;
  }
  return false;
}

// Whether the program (or a body) has a complex pow step: at a zero base
// JAX's rule (log 0 taken as 0) is a convention, not the derivative, which
// is infinite along z^z (seed 3355: z = x(1 + i) at x = -0).
bool has_complex_pow(const Program& p) {
  for (const Node& n : p.nodes) {
    if (n.op == Op::cplx)
      for (std::size_t i = 1; i < n.p.size(); ++i)
        if (n.p[i] == cs_pow) return true;
    for (const Program& b : n.body)
      if (has_complex_pow(b)) return true;
  }
  return false;
}

// Whether the program (or a body) has an f32 value, or a c64 one inside a
// cplx node.
bool has_f32(const Program& p) {
  for (const Ty& t : p.params)
    if (t.dt == DType::f32) return true;
  for (const Node& n : p.nodes) {
    for (const Ty& t : n.out)
      if (t.dt == DType::f32) return true;
    if (n.op == Op::cplx && n.lit == 32) return true;
    for (const Program& b : n.body)
      if (has_f32(b)) return true;
  }
  return false;
}

// Whether p has a cplx node (at any depth).
bool has_complex(const Program& p) {
  for (const Node& n : p.nodes) {
    if (n.op == Op::cplx) return true;
    for (const Program& b : n.body)
      if (has_complex(b)) return true;
  }
  return false;
}

// Complex arithmetic on a large value: a quotient z / (z0 + c) of a large
// z0 (an integer's extreme converted to f64, a 1e30 special) has the
// derivative (dz (z0 + c) - z dz0) / (z0 + c)^2, the difference of two
// terms |z0| / |c| times larger than itself (seed 2445 of the fft change:
// 1.8e19 from a u64 max, <u, J v> and <J^T u, v> differing in the first
// digit); |z| of z = (x + 1e30 i)(0.5 - 1.5i) has the derivative (re dre +
// im dim) / |z|, where re dre and im dim are 0.75e30 each and cancel to
// the true 1e-30-sized slope plus their rounding, 1e14 (seed 5756: the two
// modes' rounding noise, -9e-17 and 1e-16). Both are ill-conditioned
// derivatives, not wrong rules: the grad check skips a program with a
// complex node when a float value of its top level (eager) exceeds 1e6 in
// magnitude.
bool large_complex(const Case& c) {
  if (!has_complex(c.prog)) return false;
  for (const dyn::AnyArray& a : eager_slots(c)) {
    auto large = [&](auto t) {
      const auto* v = static_cast<const decltype(t)*>(a.data());
      for (std::int64_t i = 0; i < a.size(); ++i)
        if (std::isfinite(v[i]) && std::fabs(static_cast<double>(v[i])) > 1e6) return true;
      return false;
    };
    if ((a.dtype() == DType::f64 && large(double{})) || (a.dtype() == DType::f32 && large(float{}))) return true;
  }
  return false;
}

// Whether an input element exceeds 1e15 in magnitude: the direction v is
// scaled by max(1, |x|), so the central differences' step h |x| exceeds
// 1e10 there, a secant across many periods of tan(1e30) rather than a
// local slope (seed 4091: 8e28 against the derivative's 1e30).
bool huge_input(const Floats& x) {
  for (const auto& a : std::get<1>(x))
    for (std::int64_t i = 0; i < a.size(); ++i)
      if (std::isfinite(a.data()[i]) && std::fabs(a.data()[i]) > 1e15) return true;
  for (const auto& a : std::get<0>(x))
    for (std::int64_t i = 0; i < a.size(); ++i)
      if (std::isfinite(a.data()[i]) && std::fabs(a.data()[i]) > 1e15) return true;
  return false;
}

// A double for a failure message (std::to_string's %f prints 1e-38 as 0.000000).
std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Check grad_check(const Case& c, std::uint64_t seed, Fault fault) {
  Rng r{seed * 0x9E3779B97F4A7C15ull ^ 0x6A09E667F3BCC909ull};  // its own stream: generate(seed)'s program is unchanged
  FloatFn f;
  f.prog = &c.prog;
  for (const dyn::AnyArray& a : c.inputs) f.params.push_back(Value{a, nullptr});
  // The other parameters are jit arguments, except a Catalyst dynamic size:
  // closed over, as the cotangent u has the results' static shapes.
  std::vector<bool> is_size(c.prog.params.size(), false);
  size_params(c.prog, c.prog.params.size(), is_size);
  std::vector<std::size_t> rest;
  for (std::size_t j = 0; j < c.prog.params.size(); ++j) {
    const DType d = c.prog.params[j].dt;
    if (d == DType::f32) f.p32.push_back(j);
    else if (d == DType::f64) f.p64.push_back(j);
    else if (!is_size[j]) rest.push_back(j);
  }
  if (f.p32.empty() && f.p64.empty()) return skip("no floating-point input");
  const std::vector<Ty> outs = out_types(c.prog);
  bool lowp = false;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].dt == DType::f32) f.o32.push_back(k);
    if (outs[k].dt == DType::f64) f.o64.push_back(k), lowp = lowp || outs[k].lowp;
  }
  if (f.o32.empty() && f.o64.empty()) return skip("no floating-point result");

  // The primal point; the program must run on it with finite results.
  Floats x;
  for (std::size_t j : f.p32) std::get<0>(x).push_back(c.inputs[j].get<float>());
  for (std::size_t j : f.p64) std::get<1>(x).push_back(c.inputs[j].get<double>());
  Floats y;
  try {
    y = f(x);
  } catch (const dyn::Error& e) {
    return skip("the program raises " + error_class(e));
  }
  if (!all_finite(values(y))) return skip("non-finite result");
  if (large_complex(c)) return skip("ill-conditioned: complex arithmetic on values beyond 1e6");

  // Central differences need f64 throughout: with no f32 input or result,
  // and an f64 result never rounded to f32 on the way (Ty::lowp). Otherwise
  // only the dot-product test and jit, with the f32 tolerance. Ty::lowp
  // marks inexact values only, but a tangent also rounds where an exact
  // value does: astype<double>(astype<float>(x)) rounds v in J v and u in
  // J^T u (seed 1355), so any f32 (or c64) value on the way counts.
  const bool f32 = !f.p32.empty() || !f.o32.empty() || lowp || has_f32(c.prog);
  Floats v, u;
  for (std::size_t k = 0; k < f.p32.size(); ++k)
    std::get<0>(v).push_back(random_like<float>(r, std::get<0>(x)[k].shape(), &std::get<0>(x)[k], false));
  for (std::size_t k = 0; k < f.p64.size(); ++k)
    std::get<1>(v).push_back(random_like<double>(r, std::get<1>(x)[k].shape(), &std::get<1>(x)[k], false));
  for (std::size_t k : f.o32) std::get<0>(u).push_back(random_like<float>(r, sizes_of(outs[k]), nullptr, false));
  for (std::size_t k : f.o64) std::get<1>(u).push_back(random_like<double>(r, sizes_of(outs[k]), nullptr, false));

  // Eager: J v by forward mode, J^T u by grad of <u, f>.
  Floats jv, jtu;
  const Weighted s{f, &u};
  if (auto bad = guarded("eager jvp", [&] { jv = std::get<1>(dyn::jvp(f, std::make_tuple(x), std::make_tuple(v))); })) return *bad;
  if (auto bad = guarded("eager grad", [&] { jtu = dyn::grad(s)(x); })) return *bad;
  if (fault == Fault::grad) perturb(jtu);

  const auto [a, ma] = dot(values(u), values(jv));
  const auto [b, mb] = dot(values(jtu), values(v));
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(ma + mb)) return skip("non-finite derivative");
  const double rtol = f32 ? kDotRtol32 : kDotRtol64;
  double noise = 0;  // the sides' rounding noise, measured only when they differ (kNoiseScales)
  if (!(std::fabs(a - b) <= rtol * (ma + mb)))
    for (const double k : kNoiseScales) {
      const Floats vk = scaled(v, k), uk = scaled(u, k);
      Floats jvk, jtuk;
      if (auto bad = guarded("eager jvp", [&] { jvk = std::get<1>(dyn::jvp(f, std::make_tuple(x), std::make_tuple(vk))); }))
        return *bad;
      if (auto bad = guarded("eager grad", [&] { jtuk = dyn::grad(Weighted{f, &uk})(x); })) return *bad;
      if (fault == Fault::grad) perturb(jtuk);
      noise = std::max({noise, std::fabs(dot(values(u), values(jvk)).first / k - a),
                        std::fabs(dot(values(jtuk), values(v)).first / k - b)});
    }
  if (!(std::fabs(a - b) <= rtol * (ma + mb) + kNoiseFactor * noise))
    return fail("grad: dot-product test", "<u, J v> = " + g17(a) + " but <J^T u, v> = " + g17(b) +
                                              " (tolerance " + g17(rtol * (ma + mb)) + " + " + g17(kNoiseFactor) +
                                              " x rounding noise " + g17(noise) + ")");

  // jit of both, equal to eager; their jaxpr verified.
  Pack<Array> rest_pack;
  for (std::size_t j : rest) push(rest_pack, Value{c.inputs[j], nullptr});
  const std::vector<std::size_t> rest_order = [&] {
    std::vector<DType> dts;
    for (std::size_t j : rest) dts.push_back(c.prog.params[j].dt);
    std::vector<std::size_t> o = pack_order(dts);
    for (std::size_t& k : o) k = rest[k];
    return o;
  }();
  auto both = [&](const auto& xx, const auto& rp) {
    FloatFn g = f;
    const std::vector<Value> rv = values(rp);
    for (std::size_t k = 0; k < rv.size(); ++k) g.params[rest_order[k]] = rv[k];
    auto t = std::get<1>(dyn::jvp(g, std::make_tuple(xx), std::make_tuple(v)));
    auto gr = dyn::grad(Weighted{g, &u})(xx);
    return std::tuple{t, gr};
  };
  std::vector<Value> jitted;
  if (auto bad = guarded("make_jaxpr(grad)", [&] { dyn::check_jaxpr(dyn::make_jaxpr(both)(x, rest_pack)); }))
    return *bad;
  if (auto bad = guarded("jit(grad)", [&] {
        const auto [t, gr] = dyn::jit(both)(x, rest_pack);
        jitted = values(t);
        for (const Value& w : values(gr)) jitted.push_back(w);
      }))
    return *bad;
  std::vector<Value> eager = values(jv);
  for (const Value& w : values(jtu)) eager.push_back(w);
  // Each leaf is a sum of products of partial derivatives; one that cancels
  // to (nearly) zero keeps the rounding of its largest terms, so the leaves
  // share one scale: the largest finite magnitude among them (seed 2046:
  // d|exp(z)^2|/d(imag part) is exactly 0, computed as Re(2i |w|^2)-like
  // terms of size 1e8 that cancel to 1e-7, differently in jit and eager).
  double leaf_scale = 1;
  for (const Value& w : eager)
    if (w.dtype() == DType::f32 || w.dtype() == DType::f64)
      for (i64 i = 0; i < w.array.size(); ++i) {
        const double e = w.dtype() == DType::f32 ? static_cast<const float*>(w.array.data())[i]
                                                 : static_cast<const double*>(w.array.data())[i];
        if (std::isfinite(e)) leaf_scale = std::max(leaf_scale, std::fabs(e));
      }
  for (std::size_t k = 0; k < eager.size(); ++k) {
    const std::string m = close(jitted.at(k).array, eager[k].array,
                                eager[k].dtype() == DType::f32 || f32 ? kJitRtol32 : kJitRtol64, leaf_scale);
    if (!m.empty())
      return fail(std::string("grad: jit vs eager, ") + (k < values(jv).size() ? "jvp" : "grad") + " leaf " +
                      std::to_string(k),
                  m);
  }

  // Central differences of s along v.
  Check ok;
  if (f32) {
    ok.fd = "f32 involved";
    return ok;
  }
  if (has_rem(c.prog)) {
    // x % d is a sawtooth of period d: its derivative in x is 1 almost
    // everywhere, but a difference over a step wider than d (the fuzzer's
    // edge constants include 1e-30) measures the average slope, 0 (seed 761).
    ok.fd = "a rem (a sawtooth whose period may be below the step)";
    return ok;
  }
  if (has_stop_gradient(c.prog)) {
    ok.fd = "a stop_gradient (a zero derivative by definition)";
    return ok;
  }
  if (has_complex_pow(c.prog)) {
    ok.fd = "a complex pow (a convention at a zero base)";
    return ok;
  }
  if (huge_input(x)) {
    ok.fd = "an input beyond 1e15 (a step of h |x| > 1e10 is not local)";
    return ok;
  }
  // At abs(0) or a maximum or minimum of equal operands, anywhere in the
  // program, the derivative is JAX's convention (dynstage's rule too), not a
  // slope: maximum(x, floor(x)) is x, slope 1, but at x = 0 the rule gives
  // 1/2 (seed 14561, central differences 1.02 against 1.21); in a loop
  // body, p -> |p| - p twice is 0 everywhere, but at p = 0 the chain of
  // sign(0) = 0 conventions gives slope 1 (seed 60835). Central differences
  // are not taken there (at_kink, fuzz_run.cpp).
  if (at_kink(c)) {
    ok.fd = "abs at 0 or a maximum or minimum of equal operands (a convention, not a slope)";
    return ok;
  }
  auto s_at = [&](double h) { return dot(values(u), values(f(axpy(x, h, v)))).first; };
  double d1 = 0, d2 = 0, j1 = 0, j2 = 0;
  try {
    const double s0 = s_at(0), p1 = s_at(kFdStep), m1 = s_at(-kFdStep), p2 = s_at(kFdStep / 2), m2 = s_at(-kFdStep / 2);
    d1 = (p1 - m1) / (2 * kFdStep);
    d2 = (p2 - m2) / kFdStep;
    // The one-sided slopes' difference: h s'' where s is smooth (it halves
    // with h), the jump of the slope at a kink exactly at x (it does not:
    // a clamp whose operand equals its bound, where central differences
    // average both sides and the derivative takes one).
    j1 = ((p1 - s0) - (s0 - m1)) / kFdStep;
    j2 = ((p2 - s0) - (s0 - m2)) / (kFdStep / 2);
  } catch (const dyn::Error&) {
    ok.fd = "raises near the point";
    return ok;
  }
  const double tol = kFdRtol * std::max(1.0, std::fabs(b)) + kFdAbs * dot(values(u), values(y)).second;
  // A derivative whose change over the step exceeds the function's scale
  // (a pole within the step: trigamma at 1e-30, where x - h is across the
  // pole at 0 and the differences of the two sides cancel, seed 1058): the
  // differences say nothing there.
  if (std::fabs(b) * kFdStep > dot(values(u), values(y)).second + 1) {
    ok.fd = "non-smooth";
    return ok;
  }
  const bool kink_at_x = std::fabs(j2) > tol && std::fabs(j2 - j1 / 2) > std::fabs(j1) / 4;
  if (!std::isfinite(d1) || !std::isfinite(d2) || std::fabs(d1 - d2) > tol || kink_at_x) {
    ok.fd = "non-smooth";
    return ok;
  }
  if (!(std::fabs(d2 - b) <= tol))
    return fail("grad: central differences", "(s(x + h v) - s(x - h v)) / 2h = " + g17(d2) +
                                                 " but <J^T u, v> = " + g17(b) + " (tolerance " +
                                                 g17(tol) + ")");
  ok.fd = "checked";
  return ok;
}
}  // namespace

Check check_grad(const Case& c, std::uint64_t seed, Fault fault) {
  try {
    return grad_check(c, seed, fault);
  } catch (const std::exception& e) {  // a flaw of the check itself: reported, with its seed
    return fail("grad check crashed", e.what());
  }
}

// ---------------------------------------------------------------------------
// vmap

namespace {

// Lane b of input a: its elements rotated by b (a permutation keeps every
// value in the domain the generator chose it for); a scalar moved instead
// (a float by 0.375 b, an integer by b, a bool flipped on odd lanes).
dyn::AnyArray lane_of(const dyn::AnyArray& a, i64 b) {
  if (b == 0) return a;
  return fuzz::visit_dtype(a.dtype(), [&](auto t) -> dyn::AnyArray {
    using T = decltype(t);
    const Array<T> x = a.get<T>();
    Array<T> y(x.shape());
    T* p = y.mutable_data();
    const T* q = x.data();
    const i64 n = x.size();
    if (n > 1) {
      for (i64 i = 0; i < n; ++i) p[i] = q[(i + b) % n];
    } else if (n == 1) {
      if constexpr (std::is_same_v<T, bool>) p[0] = (b % 2) ? !q[0] : q[0];
      else if constexpr (std::is_floating_point_v<T>) p[0] = static_cast<T>(q[0] + static_cast<T>(0.375) * static_cast<T>(b));
      else p[0] = static_cast<T>(q[0] + static_cast<T>(b));
    }
    return y;
  });
}

std::string shape_str(const std::vector<i64>& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// The parameters a Catalyst dynamic size reads (iota_dyn): unbatched, since
// a size that differs per lane is a ShapeError by design.
void size_params(const Program& p, std::size_t nparams, std::vector<bool>& out) {
  for (const Node& n : p.nodes) {
    if (n.op == Op::iota_dyn && static_cast<std::size_t>(n.in.at(0)) < nparams) out[static_cast<std::size_t>(n.in[0])] = true;
    for (const Program& b : n.body) size_params(b, nparams, out);
  }
}

// The program as a function of one Pack per input (vmap's in_axes are per
// argument), returning a Pack of its results.
struct PackFn {
  const Program* prog;
  template <class... P>
  auto operator()(const P&... packs) const {
    const std::vector<Value> ps{values(packs).at(0)...};
    Pack<Tracer> out;
    for (const Value& v : run_values(*prog, ps, true)) push(out, v);
    return out;
  }
};

template <class G>
std::vector<Value> call_n(G&& g, const std::vector<Pack<Array>>& a) {
  switch (a.size()) {
    case 1: return g(a[0]);
    case 2: return g(a[0], a[1]);
    case 3: return g(a[0], a[1], a[2]);
    case 4: return g(a[0], a[1], a[2], a[3]);
    case 5: return g(a[0], a[1], a[2], a[3], a[4]);
    case 6: return g(a[0], a[1], a[2], a[3], a[4], a[5]);
    default: throw std::logic_error("fuzz: vmap of more than 6 inputs");
  }
}

void perturb_first(std::vector<Value>& vs) {  // Fault::vmap
  for (Value& v : vs)
    if (v.array.size() > 0) {
      fuzz::visit_dtype(v.dtype(), [&](auto t) {
        using T = decltype(t);
        Array<T> a = v.array.get<T>();
        Array<T> b(a.shape());
        std::copy(a.data(), a.data() + a.size(), b.mutable_data());
        if constexpr (std::is_same_v<T, bool>) b.mutable_data()[0] = !b.data()[0];
        else b.mutable_data()[0] = static_cast<T>(b.data()[0] + T(1));
        v.array = b;
      });
      return;
    }
}

}  // namespace

namespace {
Check vmap_check(const Case& c, std::uint64_t seed, Fault fault) {
  Rng r{seed * 0xD1B54A32D192ED03ull ^ 0xBB67AE8584CAA73Bull};
  const std::size_t n = c.inputs.size();
  if (n > 6) return skip("more than 6 inputs");
  std::vector<bool> is_size(n, false);
  size_params(c.prog, n, is_size);
  // in_axes: 0, -1 (the last axis of the batched argument) or none.
  std::vector<std::optional<i64>> axis(n);
  for (std::size_t j = 0; j < n; ++j)
    if (!is_size[j]) {
      const i64 k = r.range(0, 2);
      if (k < 2) axis[j] = k == 0 ? 0 : -1;
    }
  bool any = false;
  for (std::size_t j = 0; j < n; ++j) any = any || axis[j].has_value();
  for (std::size_t j = 0; j < n && !any; ++j)
    if (!is_size[j]) axis[j] = 0, any = true;
  if (!any) return skip("only size inputs");
  const i64 lanes = r.range(2, 3);

  // Each lane run eagerly; the expected result is their results stacked.
  std::vector<std::vector<Value>> lane_in(static_cast<std::size_t>(lanes)), lane_out;
  std::vector<Pack<Array>> args(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::vector<Value> ls;
    for (i64 b = 0; b < lanes; ++b) {
      ls.push_back(Value{axis[j] ? lane_of(c.inputs[j], b) : c.inputs[j], nullptr});
      lane_in[static_cast<std::size_t>(b)].push_back(ls.back());
    }
    push(args[j], axis[j] ? dyn::detail::stack(ls, *axis[j] == 0 ? 0 : c.inputs[j].rank()) : Value{c.inputs[j], nullptr});
  }
  // The tolerance of jit against eager on the batched results (compare):
  // the largest scale of each result over the lanes (seed 65035: a mean of
  // 140001 f32 values).
  std::vector<Scale> scales;
  try {
    for (const std::vector<Value>& in : lane_in) {
      std::vector<Scale> lane;
      lane_out.push_back(run_values(c.prog, in, false, &lane));
      scales.resize(lane.size());
      for (std::size_t k = 0; k < lane.size(); ++k)
        scales[k] = {std::max(scales[k].magnitude, lane[k].magnitude), std::max(scales[k].terms, lane[k].terms)};
    }
  } catch (const dyn::Error& e) {
    return skip("a lane raises " + error_class(e));
  }
  const std::vector<Ty> outs = out_types(c.prog);
  std::vector<DType> dts;
  for (const Ty& t : outs) dts.push_back(t.dt);
  const std::vector<std::size_t> order = pack_order(dts);  // the result Pack's leaf k is output order[k]
  dyn::InAxes in_axes(0);
  in_axes.one_for_all = false;
  in_axes.axes.clear();
  for (std::size_t j = 0; j < n; ++j) in_axes.axes.push_back(axis[j] ? dyn::BatchAxis(*axis[j]) : dyn::BatchAxis(dyn::none));
  const PackFn fn{&c.prog};
  auto batched = [&](const auto&... a) { return dyn::vmap(fn, in_axes)(a...); };

  std::vector<Value> got, jitted;
  // Lanes whose results differ in shape (a loop that grows a carry in some
  // lanes only) have no batched result: a vmapped array has one shape per
  // lane (JAX's vmap, docs/transformations.md). vmap must raise a dyn::Error
  // there, as it does for a size that differs per lane; a result is wrong.
  for (std::size_t k = 0; k < outs.size(); ++k)
    for (const std::vector<Value>& o : lane_out)
      if (o.at(k).array.shape() != lane_out[0].at(k).array.shape()) {
        try {
          got = call_n([&](const auto&... a) { return values(batched(a...)); }, args);
        } catch (const dyn::Error& e) {
          return skip("the lanes' results differ in shape; vmap raises " + error_class(e));
        } catch (const std::exception& e) {
          return fail("eager vmap crashed", e.what());
        }
        return fail("vmap returned a result where the lanes' results differ in shape",
                    "result " + std::to_string(k) + ": lane 0 " + shape_str(lane_out[0].at(k).array.shape()) +
                        ", another lane " + shape_str(o.at(k).array.shape()));
      }
  std::vector<Value> expected;
  for (std::size_t k : order) {
    std::vector<Value> ls;
    for (const std::vector<Value>& o : lane_out) ls.push_back(o.at(k));
    expected.push_back(dyn::detail::stack(ls, 0));
  }
  if (auto bad = guarded("eager vmap", [&] { got = call_n([&](const auto&... a) { return values(batched(a...)); }, args); }))
    return *bad;
  if (fault == Fault::vmap) perturb_first(got);
  auto cmp = [&](const std::vector<Value>& x, const std::vector<Value>& ref, const char* what) -> std::optional<Check> {
    if (x.size() != ref.size())
      return fail(std::string("vmap: ") + what + ", result count",
                  std::to_string(x.size()) + " vs " + std::to_string(ref.size()));
    for (std::size_t k = 0; k < x.size(); ++k) {
      const Ty& t = outs[order[k]];
      const std::string m =
          compare(x[k].array, ref[k].array, t.inexact, t.lowp, order[k] < scales.size() ? scales[order[k]] : Scale{});
      if (!m.empty()) return fail(std::string("vmap: ") + what + ", result " + std::to_string(order[k]), m);
    }
    return std::nullopt;
  };
  if (auto bad = cmp(got, expected, "vmap vs the lanes stacked")) return *bad;
  if (auto bad = guarded("make_jaxpr(vmap)", [&] {
        call_n([&](const auto&... a) {
          dyn::check_jaxpr(dyn::make_jaxpr(batched)(a...));
          return std::vector<Value>{};
        }, args);
      }))
    return *bad;
  if (auto bad = guarded("jit(vmap)", [&] {
        jitted = call_n([&](const auto&... a) { return values(dyn::jit(batched)(a...)); }, args);
      }))
    return *bad;
  if (auto bad = cmp(jitted, got, "jit vs eager")) return *bad;
  return Check{};
}
}  // namespace

Check check_vmap(const Case& c, std::uint64_t seed, Fault fault) {
  try {
    return vmap_check(c, seed, fault);
  } catch (const std::exception& e) {
    return fail("vmap check crashed", e.what());
  }
}

}  // namespace fuzz
