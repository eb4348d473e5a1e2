// dynstage: derivatives of the complex primitives (issue 24), JAX's
// convention (docs/transformations.md, "Complex numbers").
//
// Complex values carry complex tangents. A holomorphic primitive (mul, div,
// exp, log, sqrt, pow, sin, cos, tanh, integer_pow, ...) multiplies the
// tangent by its complex derivative f'(z): those rules are the real ones of
// transform/jvp_rules.hpp, whose formulas hold over C unchanged. The
// non-holomorphic primitives have real-linear JVPs, written here:
//   real: t -> real(t)          imag: t -> imag(t)
//   conj: t -> conj(t)          complex(a, b): (ta, tb) -> complex(ta, tb)
//   abs of a complex z: t -> real(t * conj(z) / |z|)  (JAX's _abs_jvp_rule,
//     |z| = 0 replaced by 1, so the tangent at 0 is 0)
// Reverse mode transposes the linear map without conjugating (JAX's
// convention: the transpose of `mul by c` is `mul by c`), with JAX's rules of
// jax/_src/lax/lax.py:
//   real: ct -> complex(ct, 0)          imag: ct -> complex(0, -ct)
//   complex: ct -> (real(ct), -imag(ct))
//   conj: ct -> conj(ct) of a complex operand, real(ct) of a real one
// (convert_element_type between real and complex dtypes needs nothing new:
// the transpose converts back, which takes the real part.)
#pragma once

#include <optional>
#include <vector>

#include "../ir/params.hpp"
#include "../ir/prims.hpp"
#include "../trace/trace.hpp"
#include "jvp_rules.hpp"

namespace dyn::detail {

// The JVP of p when it is one of the rules above (p and its operands'
// dtypes), else nullopt: the primitive's ordinary rule applies.
std::optional<JvpOut> complex_jvp(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                                  const Params& params);

// The transpose of p when it is real, imag, conj or complex, else nullopt.
// `linear[k]`: operand k is linear (its dtype is `dtypes[k]`, its shape
// `shapes[k]`).
std::optional<std::vector<Tangent>> complex_transpose(Prim p, const std::vector<char>& linear,
                                                      const std::vector<DType>& dtypes,
                                                      const std::vector<Shape>& shapes, const Value& ct);

#ifdef DYNSTAGE_IMPLEMENTATION

namespace complex_ad_detail {

using jvp_detail::fit;
using jvp_detail::lit;
using jvp_detail::op;

inline Value conj_of(const Value& z) { return op(Prim::conj, {z}, ConjParams{z.dtype()}); }

// complex(a, b) of two real values, a rank-0 one broadcast to the other's shape.
inline Value make(const Value& a, const Value& b) {
  const Shape s = a.rank() ? a.shape() : b.shape();
  const bool stage = a.is_tracer() || b.is_tracer();
  return op(Prim::complex, {fit(a, s, stage), fit(b, s, stage)});
}

}  // namespace complex_ad_detail

std::optional<JvpOut> complex_jvp(Prim p, const std::vector<Value>& x, const std::vector<Tangent>& t,
                                  const Params& params) {
  using namespace complex_ad_detail;
  using jvp_detail::instantiate;
  switch (p) {
    case Prim::real:
    case Prim::imag:
    case Prim::conj: {  // linear: the same primitive on the tangent
      const Value y = op(p, x, params);
      if (!t[0]) return JvpOut{{y}, {std::nullopt}};
      return JvpOut{{y}, {op(p, {fit(*t[0], x[0].shape())}, params)}};
    }
    case Prim::complex: {
      const Value y = op(p, x, params);
      if (!t[0] && !t[1]) return JvpOut{{y}, {std::nullopt}};
      const Shape out = y.shape();
      const DType rd = x[0].dtype();
      const Value ta = t[0] ? fit(*t[0], out) : lit(rd, 0), tb = t[1] ? fit(*t[1], out) : lit(rd, 0);
      return JvpOut{{y}, {make(ta, tb)}};
    }
    case Prim::abs: {
      if (!is_complex(x[0].dtype())) return std::nullopt;
      // JAX's _abs_jvp_rule: real(t * conj(z) / replace_zero(|z|)).
      const Value y = op(p, x, params);
      if (!t[0]) return JvpOut{{y}, {std::nullopt}};
      const DType cd = x[0].dtype(), rd = y.dtype();
      const Value safe = jvp_detail::select(op(Prim::eq, {y, lit(rd, 0)}), lit(rd, 1), y);
      const Value factor = op(Prim::div, {conj_of(x[0]), jvp_detail::as_dtype(safe, cd)});
      return JvpOut{{y}, {op(Prim::real, {op(Prim::mul, {instantiate(t[0], x[0]), factor})})}};
    }
    default: return std::nullopt;
  }
}

std::optional<std::vector<Tangent>> complex_transpose(Prim p, const std::vector<char>& linear,
                                                      const std::vector<DType>& dtypes,
                                                      const std::vector<Shape>& shapes, const Value& ct) {
  using namespace complex_ad_detail;
  std::vector<Tangent> r(linear.size());
  switch (p) {
    case Prim::real:  // ct -> complex(ct, 0)
      r[0] = make(ct, lit(ct.dtype(), 0));
      return r;
    case Prim::imag:  // ct -> complex(0, -ct)
      r[0] = make(lit(ct.dtype(), 0), op(Prim::neg, {ct}));
      return r;
    case Prim::conj:  // its own transpose; of a real operand, the real part
      r[0] = is_complex(dtypes[0]) ? op(Prim::conj, {ct}, ConjParams{dtypes[0]}) : op(Prim::real, {ct});
      return r;
    case Prim::complex: {  // (real(ct), -imag(ct)), summed where an operand was broadcast
      auto unbroadcast = [&](const Value& v, const Shape& s) {
        return v.shape() == s ? v : reduce(Prim::reduce_sum, v, {}, true);
      };
      if (linear[0]) r[0] = unbroadcast(op(Prim::real, {ct}), shapes[0]);
      if (linear[1]) r[1] = unbroadcast(op(Prim::neg, {op(Prim::imag, {ct})}), shapes[1]);
      return r;
    }
    default: return std::nullopt;
  }
}

#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
