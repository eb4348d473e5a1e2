// dynstage: expression codegen of complex values (c64, c128; issue 24).
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp), beside lower_expr.hpp's real-valued ones.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

// ---------------------------------------------------------------------------
// Complex values: the struct {re, im} (Emitter::reg_type), every operation
// inlined on the parts with the formulas of eager/kernel_util.hpp
// (complex_mul ... complex_pow), so no library routine runs per element
// except the real functions the formulas call (exp, sin, cos, log, atan2,
// sinh, cosh), which vectorise as the real primitives do; |z| is
// complex_abs below (a square root, no call). After
// SROA a complex value is two real values: a vectorised loop carries a
// vector of real parts and one of imaginary parts.

inline llvm::Value* Lowering::complex_mul(DType d, llvm::Value* x, llvm::Value* y) {
  llvm::Value *a = E.re(x), *bb = E.im(x), *c = E.re(y), *dd = E.im(y);
  return E.make_complex(d, b.CreateFSub(b.CreateFMul(a, c), b.CreateFMul(bb, dd)),
                        b.CreateFAdd(b.CreateFMul(a, dd), b.CreateFMul(bb, c)));
}

// Smith's algorithm, both branches computed and one selected (vectorisable):
// |c| >= |d|: r = d/c, t = c + d r, ((a + b r)/t, (b - a r)/t); else r = c/d,
// t = c r + d, ((a r + b)/t, (b r - a)/t). Eager's complex_div takes the
// same branch with the same operations.
inline llvm::Value* Lowering::complex_div(DType d, llvm::Value* x, llvm::Value* y) {
  llvm::Value *a = E.re(x), *bb = E.im(x), *c = E.re(y), *dd = E.im(y);
  llvm::Value* big_c = b.CreateFCmpOGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, c),
                                       b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, dd));
  llvm::Value* r1 = b.CreateFDiv(dd, c);
  llvm::Value* t1 = b.CreateFAdd(c, b.CreateFMul(dd, r1));
  llvm::Value* re1 = b.CreateFDiv(b.CreateFAdd(a, b.CreateFMul(bb, r1)), t1);
  llvm::Value* im1 = b.CreateFDiv(b.CreateFSub(bb, b.CreateFMul(a, r1)), t1);
  llvm::Value* r2 = b.CreateFDiv(c, dd);
  llvm::Value* t2 = b.CreateFAdd(b.CreateFMul(c, r2), dd);
  llvm::Value* re2 = b.CreateFDiv(b.CreateFAdd(b.CreateFMul(a, r2), bb), t2);
  llvm::Value* im2 = b.CreateFDiv(b.CreateFSub(b.CreateFMul(bb, r2), a), t2);
  return E.make_complex(d, b.CreateSelect(big_c, re1, re2), b.CreateSelect(big_c, im1, im2));
}

inline llvm::Value* Lowering::complex_exp(DType d, llvm::Value* z) {
  const DType rd = real_dtype(d);
  llvm::Value *a = E.re(z), *bb = E.im(z);
  llvm::Value* ea = b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, a);
  llvm::Value* real_line = b.CreateFCmpOEQ(bb, E.number(rd, 0));
  llvm::Value* re = b.CreateFMul(ea, b.CreateUnaryIntrinsic(llvm::Intrinsic::cos, bb));
  llvm::Value* im = b.CreateFMul(ea, b.CreateUnaryIntrinsic(llvm::Intrinsic::sin, bb));
  return E.make_complex(d, b.CreateSelect(real_line, ea, re), b.CreateSelect(real_line, bb, im));
}

// |a + bi| as eager's complex_abs (kernel_util.hpp), operation for operation.
inline llvm::Value* Lowering::complex_abs(DType rd, llvm::Value* a, llvm::Value* bb) {
  const bool f32 = rd == DType::f32;
  auto num = [&](double v) { return E.number(rd, v); };
  const double big = f32 ? 0x1p50 : 0x1p500, small = f32 ? 0x1p-50 : 0x1p-500;
  const double down = f32 ? 0x1p-100 : 0x1p-600, up = f32 ? 0x1p100 : 0x1p600;
  llvm::Value* fa = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
  llvm::Value* fb = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, bb);
  llvm::Value* mx = b.CreateSelect(b.CreateFCmpOGT(fa, fb), fa, fb);
  llvm::Value* is_big = b.CreateFCmpOGT(mx, num(big));
  llvm::Value* is_small = b.CreateFCmpOLT(mx, num(small));
  llvm::Value* s = b.CreateSelect(is_big, num(down), b.CreateSelect(is_small, num(up), num(1)));
  llvm::Value* inv = b.CreateSelect(is_big, num(up), b.CreateSelect(is_small, num(down), num(1)));
  llvm::Value* x = b.CreateFMul(fa, s);
  llvm::Value* y = b.CreateFMul(fb, s);
  llvm::Value* h = b.CreateFMul(
      b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b.CreateFAdd(b.CreateFMul(x, x), b.CreateFMul(y, y))), inv);
  llvm::Value* inf = num(std::numeric_limits<double>::infinity());
  llvm::Value* any_inf = b.CreateOr(b.CreateFCmpOEQ(fa, inf), b.CreateFCmpOEQ(fb, inf));
  return b.CreateSelect(any_inf, inf, h);
}

inline llvm::Value* Lowering::complex_log(DType d, llvm::Value* z) {
  const DType rd = real_dtype(d);
  llvm::Value *a = E.re(z), *bb = E.im(z);
  return E.make_complex(d, b.CreateUnaryIntrinsic(llvm::Intrinsic::log, complex_abs(rd, a, bb)),
                        libm("atan2", rd, {bb, a}));
}

// convert_element_type to or from a complex dtype: a real value is the real
// part (imaginary part 0); a complex one goes to a real dtype as its real
// part (bool: nonzero), to the other complex dtype part by part.
inline llvm::Value* Lowering::complex_convert(DType from, DType to, llvm::Value* x) {
  if (from == to) return x;
  if (is_complex(from) && is_complex(to))
    return E.make_complex(to, convert(real_dtype(from), real_dtype(to), E.re(x)),
                          convert(real_dtype(from), real_dtype(to), E.im(x)));
  if (is_complex(to)) {
    const DType rd = real_dtype(to);
    return E.make_complex(to, convert(from, rd, x), E.number(rd, 0));
  }
  const DType rd = real_dtype(from);
  if (to == DType::bool_)
    return b.CreateOr(b.CreateFCmpUNE(E.re(x), E.number(rd, 0)), b.CreateFCmpUNE(E.im(x), E.number(rd, 0)));
  return convert(rd, to, E.re(x));
}

inline llvm::Value* Lowering::complex_fused(const Eqn& e, Ix& ix, DType d0, DType od) {
  auto in = [&](std::size_t k) { return operand(e.inputs[k], ix); };
  const DType cd = is_complex(d0) ? d0 : od;  // the complex dtype involved
  const DType rd = real_dtype(cd);
  auto num = [&](double v) { return E.number(rd, v); };
  auto un = [&](llvm::Intrinsic::ID id, llvm::Value* v) { return b.CreateUnaryIntrinsic(id, v); };
  auto mk = [&](llvm::Value* r, llvm::Value* i) { return E.make_complex(cd, r, i); };
  switch (e.prim) {
    case Prim::neg: {
      llvm::Value* z = in(0);
      return mk(b.CreateFNeg(E.re(z)), b.CreateFNeg(E.im(z)));
    }
    case Prim::add:
    case Prim::sub: {
      llvm::Value *x = in(0), *y = in(1);
      const bool add = e.prim == Prim::add;
      return mk(add ? b.CreateFAdd(E.re(x), E.re(y)) : b.CreateFSub(E.re(x), E.re(y)),
                add ? b.CreateFAdd(E.im(x), E.im(y)) : b.CreateFSub(E.im(x), E.im(y)));
    }
    case Prim::mul: return complex_mul(cd, in(0), in(1));
    case Prim::div: return complex_div(cd, in(0), in(1));
    case Prim::square: {
      llvm::Value* z = in(0);
      return complex_mul(cd, z, z);
    }
    case Prim::integer_pow: {
      // eager's integer_pow_value: square-and-multiply, 1 / x ** -y
      int y = std::get<IntegerPowParams>(e.params).y;
      llvm::Value* x = in(0);
      if (y == 0) return E.constant(cd, 1, 0, 0);
      const bool reciprocal = y < 0;
      unsigned n = reciprocal ? 0u - static_cast<unsigned>(y) : static_cast<unsigned>(y);
      llvm::Value* acc = nullptr;
      while (n > 0) {
        if (n & 1u) acc = acc ? complex_mul(cd, acc, x) : x;
        n >>= 1;
        if (n > 0) x = complex_mul(cd, x, x);
      }
      return reciprocal ? complex_div(cd, E.constant(cd, 1, 0, 0), acc) : acc;
    }
    case Prim::eq:
    case Prim::ne: {
      llvm::Value *x = in(0), *y = in(1);
      if (e.prim == Prim::eq)
        return b.CreateAnd(b.CreateFCmpOEQ(E.re(x), E.re(y)), b.CreateFCmpOEQ(E.im(x), E.im(y)));
      return b.CreateOr(b.CreateFCmpUNE(E.re(x), E.re(y)), b.CreateFCmpUNE(E.im(x), E.im(y)));
    }
    case Prim::abs: {
      llvm::Value* z = in(0);
      return complex_abs(rd, E.re(z), E.im(z));
    }
    case Prim::real: return E.re(in(0));
    case Prim::imag: return E.im(in(0));
    case Prim::conj: {
      llvm::Value* z = in(0);
      if (!is_complex(d0)) return mk(z, num(-0.0));
      return mk(E.re(z), b.CreateFNeg(E.im(z)));
    }
    case Prim::complex: return mk(in(0), in(1));
    case Prim::exp: return complex_exp(cd, in(0));
    case Prim::log: return complex_log(cd, in(0));
    case Prim::sqrt: {
      llvm::Value* z = in(0);
      llvm::Value *a = E.re(z), *bb = E.im(z);
      llvm::Value* t = un(llvm::Intrinsic::sqrt,
                          b.CreateFMul(b.CreateFAdd(un(llvm::Intrinsic::fabs, a), complex_abs(rd, a, bb)), num(0.5)));
      llvm::Value* t2 = b.CreateFAdd(t, t);
      llvm::Value* pos = b.CreateFCmpOGE(a, num(0));
      llvm::Value* re = b.CreateSelect(pos, t, b.CreateFDiv(un(llvm::Intrinsic::fabs, bb), t2));
      llvm::Value* im = b.CreateSelect(pos, b.CreateFDiv(bb, t2), b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, t, bb));
      llvm::Value* zero = b.CreateFCmpOEQ(t, num(0));
      return mk(b.CreateSelect(zero, num(0), re), b.CreateSelect(zero, bb, im));
    }
    case Prim::sin:
    case Prim::cos: {
      llvm::Value* z = in(0);
      llvm::Value *a = E.re(z), *bb = E.im(z);
      llvm::Value *sa = un(llvm::Intrinsic::sin, a), *ca = un(llvm::Intrinsic::cos, a);
      llvm::Value *ch = libm("cosh", rd, {bb}), *sh = libm("sinh", rd, {bb});
      if (e.prim == Prim::sin) return mk(b.CreateFMul(sa, ch), b.CreateFMul(ca, sh));
      return mk(b.CreateFMul(ca, ch), b.CreateFNeg(b.CreateFMul(sa, sh)));
    }
    case Prim::tanh: {
      llvm::Value* z = in(0);
      llvm::Value *a = E.re(z), *bb = E.im(z);
      llvm::Value *a2 = b.CreateFAdd(a, a), *b2 = b.CreateFAdd(bb, bb);
      llvm::Value* den = b.CreateFAdd(libm("cosh", rd, {a2}), un(llvm::Intrinsic::cos, b2));
      llvm::Value* im = b.CreateFDiv(un(llvm::Intrinsic::sin, b2), den);
      llvm::Value* re = b.CreateFDiv(libm("sinh", rd, {a2}), den);
      llvm::Value* big = b.CreateFCmpOGT(un(llvm::Intrinsic::fabs, a), num(20));
      return mk(b.CreateSelect(big, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, num(1), a), re),
                b.CreateSelect(big, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, num(0), im), im));
    }
    case Prim::pow: {
      llvm::Value *z = in(0), *w = in(1);
      llvm::Value* r = complex_exp(cd, complex_mul(cd, w, complex_log(cd, z)));
      llvm::Value* zero_base = b.CreateAnd(b.CreateFCmpOEQ(E.re(z), num(0)), b.CreateFCmpOEQ(E.im(z), num(0)));
      llvm::Value* zero_exp = b.CreateAnd(b.CreateFCmpOEQ(E.re(w), num(0)), b.CreateFCmpOEQ(E.im(w), num(0)));
      llvm::Value* special = b.CreateSelect(zero_exp, E.constant(cd, 1, 0, 0), E.constant(cd, 0, 0, 0));
      return b.CreateSelect(zero_base, special, r);
    }
    case Prim::convert_element_type: return complex_convert(d0, od, in(0));
    default: return nullptr;  // layout primitives, select_n, stop_gradient: as for any dtype
  }
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
