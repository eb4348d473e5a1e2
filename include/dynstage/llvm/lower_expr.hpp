// dynstage: expression codegen: one element of a fused primitive.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION): members of
// Lowering (lower.hpp). The scalar helpers (libm and vector math,
// integer division and power, conversions) and `fused`: the lowering rule
// of every fusible primitive at one element. The operand index of a layout
// primitive from its index map: lower_remap.hpp.
//
// Scalar semantics mirror eager/kernels.hpp exactly (wrapping integers, INT_MIN / -1,
// NaN-propagating max/min, saturating float -> int, C fmod for float rem),
// and there is no global fast-math: NaN, infinities and signed zeros behave
// as in eager. The deliberate differences:
//   - float sums in reductions carry the `reassoc` flag on the
//     accumulating instruction only, so they vectorise into partial sums
//     (4 or, for runs >= kLongReduction, 8 interleaved vectors): the result
//     differs from eager's left-to-right sum by rounding (at most
//     ~n eps * sum|x_i| in theory, usually a few ulp; usually MORE accurate);
//     a sum of products accumulates through llvm.fmuladd (one rounding per
//     term instead of two). The order is fixed at compile time: results are
//     identical from call to call;
//   - reduce_max/reduce_min of floats use llvm.maximum/minimum (NaN
//     propagating, -0 < +0): a maximum of +-0 may be +0 where eager gives -0;
//   - dot_general uses fused multiply-add (one rounding per term instead of
//     two; the terms are still added in k order except for N == 1);
//   - vectorised sin cos tan exp log log1p tanh pow atan2 call glibc's
//     libmvec (documented bound 4 ulp) instead of libm (< 1 ulp); scalar
//     remainder iterations call libm. Measured against libm over 2^20
//     random arguments: at most 3 ulp for each of them (f64 and f32; sin/cos
//     over [-1e5, 1e5] too), 4 ulp for logistic (exp, then a division); about
//     20-60% of f64 results differ from libm by 1-3 ulp. Exactly rounded
//     operations (+ - * / sqrt, conversions, floor/ceil/round) are
//     bit-identical to eager.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lower.hpp"

namespace dyn::detail::llvmjit {

// ---------------------------------------------------------------------------
// Scalar helpers.

inline llvm::Value* Lowering::libm(const char* name, DType d, std::vector<llvm::Value*> args) {
  // libm functions set errno, so LLVM would not treat them as pure; errno is
  // not observable through dynstage, so declare them memory(none): then they
  // are hoisted, CSE'd and mapped to libmvec by the vectoriser.
  llvm::Type* t = E.reg_type(d);
  std::vector<llvm::Type*> params(args.size(), t);
  const std::string n = std::string(name) + (d == DType::f32 ? "f" : "");
  llvm::FunctionCallee f = E.mod.getOrInsertFunction(n, llvm::FunctionType::get(t, params, false));
  if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  llvm::CallInst* c = b.CreateCall(f, args);
  c->setDoesNotAccessMemory();
  c->setDoesNotThrow();
  return c;
}

// A primitive's vector math function (the vmath column of its row,
// ir/prims.hpp): the intrinsic llvm.<name> or a call of libm's <name>. Both
// vectorise into libmvec calls (session.hpp, vector_functions).
inline llvm::Value* Lowering::vector_math(Prim p, DType d, std::vector<llvm::Value*> args) {
  const VectorMath& vm = prim_info(p).vector_math;
  if (!vm) internal_error("LLVM lowering: " + std::string(prim_name(p)) + " has no vector math function");
  if (!vm.intrinsic) return libm(vm.name, d, std::move(args));
  const llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(std::string("llvm.") + vm.name);
  if (id == llvm::Intrinsic::not_intrinsic) internal_error(std::string("LLVM lowering: no intrinsic llvm.") + vm.name);
  return b.CreateIntrinsic(id, {E.reg_type(d)}, args);
}

// Integer div/rem as eager and XLA: x / 0 is -1 (all bits set), x % 0 is x;
// y == -1 never reaches a signed divide (INT_MIN / -1 traps on x86): div
// gives the wrapping negation (INT_MIN / -1 = INT_MIN), rem gives 0. A zero
// divisor is replaced by 1 before the divide, which is never undefined.
inline llvm::Value* Lowering::int_divrem(bool rem, llvm::Value* x, llvm::Value* y, DType d) {
  llvm::Type* t = E.reg_type(d);
  llvm::Value* zero = b.CreateICmpEQ(y, llvm::ConstantInt::get(t, 0));
  if (is_unsigned_integer(d)) {
    llvm::Value* safe = b.CreateSelect(zero, llvm::ConstantInt::get(t, 1), y);
    if (rem) return b.CreateSelect(zero, x, b.CreateURem(x, safe));
    return b.CreateSelect(zero, llvm::ConstantInt::getAllOnesValue(t), b.CreateUDiv(x, safe));
  }
  llvm::Value* m1 = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(t, -1));
  llvm::Value* safe = b.CreateSelect(b.CreateOr(zero, m1), llvm::ConstantInt::get(t, 1), y);
  if (rem) return b.CreateSelect(zero, x, b.CreateSelect(m1, llvm::ConstantInt::get(t, 0), b.CreateSRem(x, safe)));
  return b.CreateSelect(zero, llvm::ConstantInt::getAllOnesValue(t),
                        b.CreateSelect(m1, b.CreateSub(llvm::ConstantInt::get(t, 0), x), b.CreateSDiv(x, safe)));
}

// Integer power by squaring, unrolled over the exponent's bits (branch-free,
// vectorisable); a negative exponent gives 1 / 0 / +-1 as eager, and 0 ** -n
// raises a fault bit.
inline llvm::Value* Lowering::int_pow(llvm::Value* x, llvm::Value* y, DType d) {
  llvm::Type* t = E.reg_type(d);
  const unsigned bits = t->getIntegerBitWidth();
  auto C = [&](std::int64_t v) { return llvm::ConstantInt::getSigned(t, v); };
  llvm::Value* result = C(1);
  llvm::Value* base = x;
  for (unsigned k = 0; k + 1 < bits; ++k) {
    llvm::Value* bit = b.CreateTrunc(b.CreateLShr(y, k), E.i1);
    result = b.CreateSelect(bit, b.CreateMul(result, base), result);
    if (k + 2 < bits) base = b.CreateMul(base, base);
  }
  if (is_unsigned_integer(d)) {  // every bit of the exponent counts, none is a sign
    llvm::Value* top = b.CreateTrunc(b.CreateLShr(y, bits - 1), E.i1);
    return b.CreateSelect(top, b.CreateMul(result, b.CreateMul(base, base)), result);
  }
  llvm::Value* neg = b.CreateICmpSLT(y, C(0));
  E.raise_if(b.CreateAnd(neg, b.CreateICmpEQ(x, C(0))), kKernelPowZeroNegative);
  llvm::Value* odd = b.CreateTrunc(y, E.i1);
  llvm::Value* neg_result =
      b.CreateSelect(b.CreateICmpEQ(x, C(1)), C(1),
                     b.CreateSelect(b.CreateICmpEQ(x, C(-1)), b.CreateSelect(odd, C(-1), C(1)), C(0)));
  return b.CreateSelect(neg, neg_result, result);
}

// x ** y for a constant y (integer_pow): JAX's square-and-multiply, the
// multiplications of eager's integer_pow_value in the same order, so the
// two agree bit for bit; a negative y is 1 / x ** -y (floats only).
inline llvm::Value* Lowering::integer_pow(llvm::Value* x, int y, DType d) {
  const bool fl = is_float(d);
  auto mul = [&](llvm::Value* a, llvm::Value* c) { return fl ? b.CreateFMul(a, c) : b.CreateMul(a, c); };
  if (y == 0) return E.number(d, 1);
  const bool reciprocal = y < 0;
  unsigned n = reciprocal ? 0u - static_cast<unsigned>(y) : static_cast<unsigned>(y);
  llvm::Value* acc = nullptr;
  while (n > 0) {
    if (n & 1u) acc = acc ? mul(acc, x) : x;
    n >>= 1;
    if (n > 0) x = mul(x, x);
  }
  return reciprocal && fl ? b.CreateFDiv(E.number(d, 1), acc) : acc;
}

// erf_inv: Giles' approximation (eager/kernels_math.hpp has the formula
// and coefficients), each branch a select so that the loop vectorises; the
// log is llvm.log (libmvec's vector variant).
inline llvm::Value* Lowering::erf_inv(llvm::Value* x, DType d) {
  llvm::Type* t = E.reg_type(d);
  auto C = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto horner = [&](llvm::Value* p, llvm::Value* c, llvm::Value* w) { return b.CreateFAdd(c, b.CreateFMul(p, w)); };
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* w = b.CreateFNeg(b.CreateUnaryIntrinsic(
      llvm::Intrinsic::log, b.CreateFMul(b.CreateFSub(C(1.0), a), b.CreateFAdd(C(1.0), a))));
  llvm::Value* sqrt_w = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, w);
  llvm::Value* p = nullptr;
  if (d == DType::f32) {
    llvm::Value* lt = b.CreateFCmpOLT(w, C(5.0));
    w = b.CreateSelect(lt, b.CreateFSub(w, C(2.5)), b.CreateFSub(sqrt_w, C(3.0)));
    auto coef = [&](int i) { return b.CreateSelect(lt, C(kErfInv32Small[i]), C(kErfInv32Large[i])); };
    p = coef(0);
    for (int i = 1; i < 9; ++i) p = horner(p, coef(i), w);
  } else {
    llvm::Value* lt625 = b.CreateFCmpOLT(w, C(6.25));
    llvm::Value* lt16 = b.CreateFCmpOLT(w, C(16.0));
    w = b.CreateSelect(lt625, b.CreateFSub(w, C(3.125)),
                       b.CreateFSub(sqrt_w, b.CreateSelect(lt16, C(3.25), C(5.0))));
    auto coef = [&](int i) {
      llvm::Value* c = C(kErfInv64Small[i]);
      if (i < 19) c = b.CreateSelect(lt625, c, C(kErfInv64Mid[i]));
      if (i < 17) c = b.CreateSelect(lt16, c, C(kErfInv64Large[i]));
      return c;
    };
    p = coef(0);
    for (int i = 1; i < 17; ++i) p = horner(p, coef(i), w);
    for (int i = 17; i < 19; ++i) p = b.CreateSelect(lt16, horner(p, coef(i), w), p);
    for (int i = 19; i < 23; ++i) p = b.CreateSelect(lt625, horner(p, coef(i), w), p);
  }
  llvm::Value* one = b.CreateFCmpOEQ(a, C(1.0));
  return b.CreateSelect(one, b.CreateFMul(x, llvm::ConstantFP::getInfinity(t)), b.CreateFMul(p, x));
}

// polygamma(n, x) for n = 0 (digamma) and 1 (trigamma): eager's
// polygamma_value (eager/kernels_math.hpp has the formula and constants),
// operation for operation, its branches selects so that the loop vectorises;
// log, sin and cos are those of the log, sin and cos primitives.
inline llvm::Value* Lowering::polygamma(int n, llvm::Value* x, DType d) {
  llvm::Type* t = E.reg_type(d);
  auto C = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* reflect = b.CreateFCmpOLT(x, C(0.5));
  llvm::Value* z = b.CreateSelect(reflect, b.CreateFSub(C(1.0), x), x);
  llvm::Value* acc = C(0.0);
  for (int i = 0; i < kPolygammaShift; ++i) {
    llvm::Value* shift = b.CreateFCmpOLT(z, C(kPolygammaFrom));
    llvm::Value* step = b.CreateFDiv(C(1.0), n == 0 ? z : b.CreateFMul(z, z));
    acc = b.CreateFAdd(acc, b.CreateSelect(shift, step, C(0.0)));
    z = b.CreateSelect(shift, b.CreateFAdd(z, C(1.0)), z);
  }
  llvm::Value* r = b.CreateFDiv(C(1.0), z);
  llvm::Value* r2 = b.CreateFMul(r, r);
  const double* c = n == 0 ? kDigammaSeries : kTrigammaSeries;
  llvm::Value* s = C(c[0]);
  for (int i = 1; i < 8; ++i) s = b.CreateFAdd(C(c[i]), b.CreateFMul(s, r2));
  llvm::Value* fl = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
  llvm::Value* fx = b.CreateFSub(x, fl);
  llvm::Value* pif = b.CreateFMul(C(kPi), b.CreateSelect(b.CreateFCmpOGT(fx, C(0.5)), b.CreateFSub(fx, C(1.0)), fx));
  llvm::Value* sn = vector_math(Prim::sin, d, {pif});
  if (n == 0) {
    llvm::Value* psi = b.CreateFSub(b.CreateFSub(b.CreateFSub(vector_math(Prim::log, d, {z}), b.CreateFMul(C(0.5), r)),
                                                 b.CreateFMul(r2, s)),
                                    acc);
    llvm::Value* cot = b.CreateFDiv(b.CreateFMul(C(kPi), vector_math(Prim::cos, d, {pif})), sn);
    llvm::Value* pole = b.CreateAnd(b.CreateFCmpOLE(x, C(0.0)), b.CreateFCmpOEQ(x, fl));
    return b.CreateSelect(pole, llvm::ConstantFP::getNaN(t),
                          b.CreateSelect(reflect, b.CreateFSub(psi, cot), psi));
  }
  llvm::Value* psi1 = b.CreateFAdd(b.CreateFAdd(b.CreateFAdd(r, b.CreateFMul(C(0.5), r2)),
                                                b.CreateFMul(b.CreateFMul(r, r2), s)),
                                   acc);
  llvm::Value* reflected = b.CreateFSub(b.CreateFDiv(C(kPi * kPi), b.CreateFMul(sn, sn)), psi1);
  return b.CreateSelect(reflect, reflected, psi1);
}

// nextafter(x, y) as C's: NaN if either is; y if x == y; the smallest
// subnormal with y's sign if x is zero; else x's bits stepped by one toward
// y. Integer arithmetic on the bits: no call, so it vectorises.
inline llvm::Value* Lowering::nextafter(llvm::Value* x, llvm::Value* y, DType d) {
  llvm::Type* ft = E.reg_type(d);
  llvm::Type* it = b.getIntNTy(ft->getPrimitiveSizeInBits());
  llvm::Value* xi = b.CreateBitCast(x, it);
  llvm::Value* zero = llvm::ConstantFP::get(ft, 0.0);
  // toward y in magnitude when x and y - x have the same sign: bits + 1
  llvm::Value* up = b.CreateICmpEQ(b.CreateFCmpOLT(x, y), b.CreateFCmpOGT(x, zero));
  llvm::Value* stepped = b.CreateSelect(up, b.CreateAdd(xi, llvm::ConstantInt::get(it, 1)),
                                        b.CreateSub(xi, llvm::ConstantInt::get(it, 1)));
  llvm::Value* sign_y = b.CreateAnd(b.CreateBitCast(y, it), llvm::ConstantInt::get(it, llvm::APInt::getSignMask(it->getIntegerBitWidth())));
  llvm::Value* tiny = b.CreateOr(sign_y, llvm::ConstantInt::get(it, 1));
  llvm::Value* r = b.CreateSelect(b.CreateFCmpOEQ(x, zero), tiny, stepped);
  r = b.CreateBitCast(r, ft);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, y), y, r);
  return b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), r);
}

// convert_element_type as eager's convert_value: to bool is `!= 0` (NaN is
// true); float -> int truncates, NaN -> 0, saturates (llvm.fptosi.sat is
// exactly that); int -> narrower int wraps.
// Unsigned integer -> float without `uitofp`: LLVM 19's SLP vectoriser
// narrows a vector uitofp's operand to the bits a *signed* value would need,
// so uitofp(~zext(u16 x) as u64) became a uitofp of 32-bit lanes (2^32 - x
// instead of 2^64 - x; found by the fuzzer). Narrower sources widen to i64,
// where they are non-negative, and use sitofp (the same correctly rounded
// result). u64 with the top bit set is halved, keeping the low bit for
// rounding (round to odd), converted and doubled, as compilers lower it.
inline llvm::Value* Lowering::unsigned_to_float(llvm::Value* x, llvm::Type* t) {
  if (x->getType()->getIntegerBitWidth() < 64) return b.CreateSIToFP(b.CreateZExt(x, E.i64), t);
  llvm::Value* halved = b.CreateOr(b.CreateLShr(x, 1), b.CreateAnd(x, E.c64(1)));
  llvm::Value* h = b.CreateSIToFP(halved, t);
  return b.CreateSelect(b.CreateICmpSLT(x, E.c64(0)), b.CreateFAdd(h, h), b.CreateSIToFP(x, t));
}

inline llvm::Value* Lowering::convert(DType from, DType to, llvm::Value* x) {
  if (from == to) return x;
  llvm::Type* t = E.reg_type(to);
  if (to == DType::bool_) {
    if (is_float(from)) return b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (from == DType::bool_) return is_float(to) ? b.CreateUIToFP(x, t) : b.CreateZExt(x, t);
  // widening extends by the source's signedness; narrowing truncates (wraps)
  if (is_integer(from) && is_integer(to))
    return is_unsigned_integer(from) ? b.CreateZExtOrTrunc(x, t) : b.CreateSExtOrTrunc(x, t);
  if (is_integer(from)) return is_unsigned_integer(from) ? unsigned_to_float(x, t) : b.CreateSIToFP(x, t);
  if (is_integer(to))
    return b.CreateIntrinsic(is_unsigned_integer(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
                             {t, x->getType()}, {x});
  return b.CreateFPCast(x, t);
}

// max/min as eager's max_value/min_value (max, min, clamp): for floats
// (x > y || x != x) ? x : y, NaN propagating; or/and on bool.
inline llvm::Value* Lowering::max_min(bool is_max, DType d, llvm::Value* x, llvm::Value* y) {
  if (is_float(d))
    return b.CreateSelect(b.CreateOr(is_max ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y), b.CreateFCmpUNO(x, x)), x, y);
  if (d == DType::bool_) return is_max ? b.CreateOr(x, y) : b.CreateAnd(x, y);
  if (is_unsigned_integer(d)) return b.CreateBinaryIntrinsic(is_max ? llvm::Intrinsic::umax : llvm::Intrinsic::umin, x, y);
  return b.CreateBinaryIntrinsic(is_max ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, x, y);
}

// ---------------------------------------------------------------------------
// The lowering rule of every primitive at one element. Non-fusible
// primitives never get here (their outputs are materialised).

inline llvm::Value* Lowering::fused(const Eqn& e, Ix& ix) {
  using llvm::Intrinsic::ID;
  const DType od = type(e.outputs[0]).dtype;
  const DType d0 = e.inputs.empty() ? od : dtype_of(e.inputs[0]);
  const bool fl = is_float(d0);
  auto in = [&](std::size_t k) { return operand(e.inputs[k], ix); };
  auto un = [&](ID id) { return b.CreateUnaryIntrinsic(id, in(0)); };
  auto one = [&] { return E.number(d0, 1); };
  auto zero = [&] { return E.number(d0, 0); };
  auto not_fusible = [&]() -> llvm::Value* {
    internal_error("LLVM lowering: " + std::string(prim_name(e.prim)) + " reached the fused emitter");
  };
  if (is_complex(d0) || is_complex(od))
    if (llvm::Value* v = complex_fused(e, ix, d0, od)) return v;
  switch (e.prim) {
    // unary
    case Prim::neg: return fl ? b.CreateFNeg(in(0)) : b.CreateSub(zero(), in(0));
    case Prim::abs:
      if (is_unsigned_integer(d0)) return in(0);
      return fl ? un(llvm::Intrinsic::fabs) : b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, in(0), b.getFalse());
    case Prim::sign: {
      llvm::Value* x = in(0);
      if (fl)
        return b.CreateSelect(b.CreateFCmpOGT(x, zero()), one(),
                              b.CreateSelect(b.CreateFCmpOLT(x, zero()), E.number(d0, -1), x));
      if (is_unsigned_integer(d0)) return b.CreateZExt(b.CreateICmpNE(x, zero()), x->getType());
      return b.CreateSub(b.CreateZExt(b.CreateICmpSGT(x, zero()), x->getType()),
                         b.CreateZExt(b.CreateICmpSLT(x, zero()), x->getType()));
    }
    case Prim::floor: return un(llvm::Intrinsic::floor);
    case Prim::ceil: return un(llvm::Intrinsic::ceil);
    case Prim::round:
      return un(std::get<RoundParams>(e.params).rounding_method == 0 ? llvm::Intrinsic::round
                                                                      : llvm::Intrinsic::roundeven);
    case Prim::exp:
    case Prim::log:
    case Prim::log1p: return vector_math(e.prim, d0, {in(0)});
    case Prim::sqrt: return un(llvm::Intrinsic::sqrt);
    case Prim::rsqrt: return b.CreateFDiv(one(), un(llvm::Intrinsic::sqrt));
    case Prim::sin:
    case Prim::cos:
    case Prim::tan:
    case Prim::tanh: return vector_math(e.prim, d0, {in(0)});
    case Prim::logistic:
      return b.CreateFDiv(one(), b.CreateFAdd(one(), b.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b.CreateFNeg(in(0)))));
    case Prim::square: return fl ? b.CreateFMul(in(0), in(0)) : b.CreateMul(in(0), in(0));
    case Prim::stop_gradient: return in(0);
    case Prim::expm1:
    case Prim::exp2:
    case Prim::cbrt:
    case Prim::sinh:
    case Prim::cosh:
    case Prim::asin:
    case Prim::acos:
    case Prim::atan:
    case Prim::asinh:
    case Prim::acosh:
    case Prim::atanh:
    case Prim::erf:
    case Prim::erfc:
    case Prim::lgamma: return vector_math(e.prim, d0, {in(0)});
    case Prim::erf_inv: return erf_inv(in(0), d0);
    case Prim::digamma: return polygamma(0, in(0), d0);
    case Prim::trigamma: return polygamma(1, in(0), d0);
    // |x| != inf, ordered: false for NaN (lax.is_finite)
    case Prim::is_finite:
      return b.CreateFCmpONE(un(llvm::Intrinsic::fabs), llvm::ConstantFP::getInfinity(E.reg_type(d0)));
    case Prim::integer_pow: return integer_pow(in(0), std::get<IntegerPowParams>(e.params).y, d0);
    case Prim::not_: return b.CreateNot(in(0));
    case Prim::population_count: return un(llvm::Intrinsic::ctpop);
    case Prim::clz: return b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, in(0), b.getFalse());  // 0 -> width
    // a complex operand or result: complex_fused, above
    case Prim::real:
    case Prim::imag:
    case Prim::conj: return not_fusible();

    // binary
    case Prim::add: return fl ? b.CreateFAdd(in(0), in(1)) : d0 == DType::bool_ ? b.CreateOr(in(0), in(1)) : b.CreateAdd(in(0), in(1));
    case Prim::sub: return fl ? b.CreateFSub(in(0), in(1)) : b.CreateSub(in(0), in(1));
    case Prim::mul: return fl ? b.CreateFMul(in(0), in(1)) : d0 == DType::bool_ ? b.CreateAnd(in(0), in(1)) : b.CreateMul(in(0), in(1));
    case Prim::div: return fl ? b.CreateFDiv(in(0), in(1)) : int_divrem(false, in(0), in(1), d0);
    case Prim::rem: return fl ? b.CreateFRem(in(0), in(1)) : int_divrem(true, in(0), in(1), d0);
    case Prim::pow: return fl ? vector_math(e.prim, d0, {in(0), in(1)}) : int_pow(in(0), in(1), d0);
    case Prim::max:
    case Prim::min: return max_min(e.prim == Prim::max, d0, in(0), in(1));
    case Prim::atan2: return vector_math(e.prim, d0, {in(0), in(1)});
    case Prim::nextafter: return nextafter(in(0), in(1), d0);
    case Prim::and_: return b.CreateAnd(in(0), in(1));
    case Prim::or_: return b.CreateOr(in(0), in(1));
    case Prim::xor_: return b.CreateXor(in(0), in(1));
    case Prim::complex: return not_fusible();  // complex_fused
    // Shifts as XLA: an amount >= the width (unsigned compare: a negative
    // one too) gives 0, or the sign fill for shift_right_arithmetic. LLVM's
    // shifts by >= the width are poison, so the amount is masked (or, for
    // ashr, clamped to width - 1, which is the sign fill) before the shift.
    case Prim::shift_left:
    case Prim::shift_right_logical: {
      llvm::Value* x = in(0);
      llvm::Value* s = in(1);
      llvm::Type* t = x->getType();
      const unsigned bits = t->getIntegerBitWidth();
      llvm::Value* big = b.CreateICmpUGE(s, llvm::ConstantInt::get(t, bits));
      llvm::Value* masked = b.CreateAnd(s, llvm::ConstantInt::get(t, bits - 1));
      llvm::Value* r = e.prim == Prim::shift_left ? b.CreateShl(x, masked) : b.CreateLShr(x, masked);
      return b.CreateSelect(big, llvm::ConstantInt::get(t, 0), r);
    }
    case Prim::shift_right_arithmetic: {
      llvm::Value* x = in(0);
      llvm::Type* t = x->getType();
      llvm::Value* s = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, in(1),
                                               llvm::ConstantInt::get(t, t->getIntegerBitWidth() - 1));
      return b.CreateAShr(x, s);
    }

    // comparisons: ordered for floats except ne (NaN != NaN); bool and unsigned integers unsigned
    case Prim::eq: return fl ? b.CreateFCmpOEQ(in(0), in(1)) : b.CreateICmpEQ(in(0), in(1));
    case Prim::ne: return fl ? b.CreateFCmpUNE(in(0), in(1)) : b.CreateICmpNE(in(0), in(1));
    case Prim::lt:
      return fl ? b.CreateFCmpOLT(in(0), in(1)) : (d0 == DType::bool_ || is_unsigned_integer(d0)) ? b.CreateICmpULT(in(0), in(1)) : b.CreateICmpSLT(in(0), in(1));
    case Prim::le:
      return fl ? b.CreateFCmpOLE(in(0), in(1)) : (d0 == DType::bool_ || is_unsigned_integer(d0)) ? b.CreateICmpULE(in(0), in(1)) : b.CreateICmpSLE(in(0), in(1));
    case Prim::gt:
      return fl ? b.CreateFCmpOGT(in(0), in(1)) : (d0 == DType::bool_ || is_unsigned_integer(d0)) ? b.CreateICmpUGT(in(0), in(1)) : b.CreateICmpSGT(in(0), in(1));
    case Prim::ge:
      return fl ? b.CreateFCmpOGE(in(0), in(1)) : (d0 == DType::bool_ || is_unsigned_integer(d0)) ? b.CreateICmpUGE(in(0), in(1)) : b.CreateICmpSGE(in(0), in(1));

    case Prim::select_n: {
      llvm::Value* p = in(0);
      llvm::Value* c0 = in(1);
      llvm::Value* c1 = in(2);
      // Complex values part by part: a select of {re, im} structs keeps the
      // loop vectoriser out of the whole loop.
      if (is_complex(od))
        return E.make_complex(od, b.CreateSelect(p, E.re(c1), E.re(c0)), b.CreateSelect(p, E.im(c1), E.im(c0)));
      return b.CreateSelect(p, c1, c0);
    }
    // clamp(lo, x, hi) = min(max(x, lo), hi), exactly eager's clamp_value
    case Prim::clamp: return max_min(false, d0, max_min(true, d0, in(1), in(0)), in(2));
    case Prim::convert_element_type: return convert(d0, od, in(0));

    // layout primitives: the operand at the index their map gives
    case Prim::broadcast_in_dim:
    case Prim::reshape:
    case Prim::squeeze:
    case Prim::transpose:
    case Prim::slice:
    case Prim::dynamic_slice:
    case Prim::gather:
    case Prim::iota:
    case Prim::rev:
    case Prim::pad: return remapped(e, ix);
    case Prim::concatenate: return concatenated(e, ix);  // rows of buffers (fusion.hpp)

    case Prim::dynamic_update_slice:
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod:
    case Prim::reduce_or:
    case Prim::reduce_and:
    case Prim::argmax:
    case Prim::argmin:
    case Prim::segment_sum_offsets:
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    case Prim::dot_general:
    case Prim::for_loop:
    case Prim::while_loop:
    case Prim::cond:
    case Prim::scan:
    case Prim::checkpoint:
    case Prim::debug_callback:
    DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) return not_fusible();
  }
  return not_fusible();
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
