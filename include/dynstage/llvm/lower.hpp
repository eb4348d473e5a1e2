// dynstage: lowering a jaxpr to one LLVM function.
// Part of the backend implementation (DYNSTAGE_IMPLEMENTATION).
//
// Sizes are i64 llvm::Values (Dims): constants for static dimensions, so a
// static kernel is built from constants exactly as before, and run-time
// values for the others. Each dimension variable is read once, as an i64:
// arguments at entry, computed scalars right after the prologue (fusion.hpp)
// or, for sizes computed from array data, right after their root. Loops with
// a run-time trip count are guarded (a dimension may be 0); temporaries of
// run-time size are heap-allocated (Emitter::temp(Value)) and freed like the
// others, on every exit path.
//
// The plan (fusion.hpp) says which variables have buffers. The lowering then
// walks the equations in order and, for every materialised output, emits the
// loop nest that computes it; inside that nest, `value(v, ix)` produces the
// element of any variable at an index:
//   - a materialised variable is loaded from its buffer at ix's linear index;
//   - a fused variable is computed from its equation (the one `switch` over
//     Prim in `fused`), with its operands requested at the index its
//     primitive maps to: elementwise ops pass ix through, broadcast_in_dim /
//     transpose / slice / dynamic_slice remap the multi-index, reshape and
//     squeeze keep the linear index (row-major order is unchanged), iota
//     reads it.
// An index (Ix) carries a multi-index and/or a linear index and derives the
// other lazily, so purely elementwise nests run as one flat loop over
// contiguous memory, which LLVM vectorises; values are memoised per
// (variable, index) within one loop body so a value used twice at the same
// index is computed once.
// Control-flow equations (for_loop, while_loop, cond) are emitted by
// lower_control.hpp: their bodies become functions of their own, called from
// native loops and branches here.
// A row group (fusion rule 4) is emitted by emit_group: one loop over the
// rows, each member's nest over one row inside it; a one-row (row-local)
// buffer is addressed at (linear index - row * row length), see local().
//
// Scalar semantics mirror eager.hpp exactly (wrapping integers, INT_MIN / -1,
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
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "emit.hpp"
#include "fusion.hpp"
#include "lower_dot.hpp"

namespace dyn::detail::llvmjit {

// The dimensions of an array as i64 values: constants for static
// dimensions, run-time values for the others (Emitter::konst tells them apart).
using Dims = std::vector<llvm::Value*>;

// An index into an array of shape `dims`: the multi-index and/or the
// row-major linear index, each derived from the other on demand.
struct Ix {
  Dims dims;
  std::vector<llvm::Value*> multi;  // empty until known (always empty for rank 0)
  llvm::Value* lin = nullptr;
  int id = 0;
  // In a row group's member nest (fusion rule 4): the row axes [0, t) are
  // the row loop's indices and the other axes follow from inner_lin, the
  // linear index within the row (no division by the row length).
  std::vector<llvm::Value*> prefix;
  llvm::Value* inner_lin = nullptr;
};

// The current row of a row group: its multi-index over the group's row axes
// and its row-major linear index.
struct Row {
  std::vector<llvm::Value*> multi;
  llvm::Value* lin = nullptr;
};

class Lowering {
public:
  // `cells`: per outvar, whether the function allocates that result itself
  // (its size is computed inside): the result pointer then points at a cell
  // {void* data; int64_t shape[rank]} that the function fills on success
  // (backend.hpp, "Results the kernel allocates"). Empty: none.
  // `carried`: for a loop body, per invar, whether it is loop state (the
  // buffer a previous iteration's result was written to); empty for the
  // kernel, a while condition or a branch. A loop body's carried inputs and
  // its caller-sized results get no `noalias` (emit_body, "Buffers").
  Lowering(const Jaxpr& j, const FusionPlan& plan, Emitter& e, std::vector<bool> cells = {},
           std::vector<bool> carried = {})
      : j_(j), plan_(plan), E(e), b(e.b), cells_(std::move(cells)), carried_(std::move(carried)) {
    cells_.resize(j.outvars.size(), false);
    loop_body_ = std::find(carried_.begin(), carried_.end(), true) != carried_.end();
    carried_.resize(j.invars.size(), false);
  }

  // Emit the body function: i32 name(ptr args..., ptr results...).
  llvm::Function* emit_body(const std::string& name);

private:
  const Jaxpr& j_;
  const FusionPlan& plan_;
  Emitter& E;
  llvm::IRBuilder<>& b;
  std::vector<bool> cells_;             // outvar -> allocated here, returned through a cell
  std::vector<bool> carried_;           // invar -> loop state (loop bodies only)
  bool loop_body_ = false;              // some invar is carried: every caller-sized result is loop state
  std::vector<llvm::Value*> cell_buf_;  // outvar -> its heap buffer (cells only), once allocated
  std::string name_;                    // of the function being emitted (nested bodies derive theirs)
  int nested_ = 0;                      // nested body functions emitted so far
  std::vector<llvm::Value*> buf_;   // var -> its buffer, once computed
  std::vector<llvm::Value*> rowoff_;  // var -> inside its row group, the linear index its one-row buffer starts at
  std::vector<llvm::Value*> dimval_;  // var -> its i64 value, for the dimension variables (read once)
  std::vector<int> needs_multi_;    // var -> -1 unknown, 0/1
  std::vector<int> calls_transcendental_;  // var -> -1 unknown, 0/1
  // Per loop body:
  std::deque<Ix> ixs_;
  std::map<std::pair<int, int>, llvm::Value*> memo_;  // (var, ix id) -> value
  std::map<std::pair<int, int>, Ix*> remaps_;          // (eqn, ix id) -> operand index
  Ix* scalar_ix_ = nullptr;
  int next_ix_ = 0;

  const Type& type(int v) const { return j_.types[static_cast<std::size_t>(v)]; }
  DType dtype_of(const Atom& a) const { return a.is_var() ? type(a.var).dtype : a.lit.dtype; }
  const Eqn& def_eqn(int v) const {
    return j_.eqns[static_cast<std::size_t>(plan_.def[static_cast<std::size_t>(v)])];
  }

  // --- dimensions --------------------------------------------------------
  llvm::Value* dim(const JDim& d) const {
    if (d.is_static()) return E.c64(d.value);
    llvm::Value* v = dimval_[static_cast<std::size_t>(d.var)];
    if (!v) internal_error("LLVM lowering: dimension variable #" + std::to_string(d.var) + " used before it is computed");
    return v;
  }
  Dims dims_of(const Type& t) const {
    Dims r;
    for (const JDim& d : t.shape) r.push_back(dim(d));
    return r;
  }
  Dims dims_of(int v) const { return dims_of(type(v)); }
  llvm::Value* numel(const Dims& dims, std::size_t from = 0) {
    llvm::Value* n = E.c64(1);
    for (std::size_t i = from; i < dims.size(); ++i) n = E.mul(n, dims[i]);
    return n;
  }
  // The byte size of a buffer of these dimensions. With run-time dimensions
  // (sizes computed from data, a huge integer argument) the product can
  // overflow int64: it is computed with overflow checks, and an overflow
  // gives a byte count no allocation can satisfy, so the kernel takes its
  // out-of-memory exit instead of allocating a wrapped-around, too small
  // buffer and writing past it. (Negative dimensions never get here:
  // read_dim stops the kernel; the clamp keeps the product meaningful.)
  llvm::Value* bytes_of(const Dims& dims, DType d, std::size_t from = 0) {
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(d));
    bool all_static = true;
    for (std::size_t i = from; i < dims.size(); ++i) all_static = all_static && Emitter::konst(dims[i]);
    if (all_static) return E.mul(numel(dims, from), E.c64(es));
    llvm::Value* n = E.c64(es);
    llvm::Value* overflow = b.getFalse();
    for (std::size_t i = from; i < dims.size(); ++i) {
      llvm::Value* r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, n, E.smax(dims[i], E.c64(0)));
      n = b.CreateExtractValue(r, 0);
      overflow = b.CreateOr(overflow, b.CreateExtractValue(r, 1));
    }
    return b.CreateSelect(overflow, E.c64(std::numeric_limits<std::int64_t>::max() & ~std::int64_t{63}), n);
  }
  // The value of a dimension operand (a kDynamicDim entry of a shape
  // parameter), as i64.
  llvm::Value* dim_operand(const Atom& a) {
    if (!a.is_var()) return E.c64(a.lit.i);
    llvm::Value* v = dimval_[static_cast<std::size_t>(a.var)];
    if (!v) internal_error("LLVM lowering: dimension operand #" + std::to_string(a.var) + " used before it is computed");
    return v;
  }
  // Read the value of dimension variable v from its buffer (once).
  void read_dim(int v) {
    const auto vs = static_cast<std::size_t>(v);
    if (!plan_.dim_var[vs] || dimval_[vs]) return;
    const DType d = type(v).dtype;
    llvm::Value* x = E.load(buf_[vs], d, E.c64(0));
    dimval_[vs] = d == DType::i64 ? x : convert(d, DType::i64, x);
    // A size computed inside the kernel (from data, or by integer arithmetic
    // on sizes that wrapped around) may be negative: stop before anything is
    // allocated or looped over with it, as eager stops with a ShapeError.
    llvm::BasicBlock* bad = llvm::BasicBlock::Create(E.ctx, "dim.negative", b.GetInsertBlock()->getParent());
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(E.ctx, "dim.ok", b.GetInsertBlock()->getParent());
    b.CreateCondBr(b.CreateICmpSLT(dimval_[vs], E.c64(0)), bad, ok, E.weights(1, 1000));
    b.SetInsertPoint(bad);
    E.exit_with(b.getInt32(kKernelNegativeSize));
    b.SetInsertPoint(ok);
  }

  // --- indices -----------------------------------------------------------
  void begin_body() {
    ixs_.clear();
    memo_.clear();
    remaps_.clear();
    scalar_ix_ = nullptr;
  }
  Ix& new_ix(Dims dims) {
    ixs_.push_back(Ix{std::move(dims), {}, nullptr, next_ix_++, {}, nullptr});
    return ixs_.back();
  }
  Ix& scalar_ix() {
    if (!scalar_ix_) {
      scalar_ix_ = &new_ix({});
      scalar_ix_->lin = E.c64(0);
    }
    return *scalar_ix_;
  }
  Dims strides_of(const Dims& dims) {
    Dims s(dims.size());
    llvm::Value* acc = E.c64(1);
    for (std::size_t i = dims.size(); i-- > 0;) {
      s[i] = acc;
      acc = E.mul(acc, dims[i]);
    }
    return s;
  }
  static bool unit(llvm::Value* d) { return Emitter::is_k(d, 1); }
  llvm::Value* lin(Ix& ix) {
    if (ix.lin) return ix.lin;
    const auto st = strides_of(ix.dims);
    llvm::Value* acc = E.c64(0);
    for (std::size_t d = 0; d < ix.dims.size(); ++d)
      if (!unit(ix.dims[d])) acc = b.CreateAdd(acc, b.CreateMul(ix.multi[d], st[d], "", true, true), "", true, true);
    ix.lin = acc;
    return acc;
  }
  // (Runtime dimensions divide by run-time values here; loops that need
  // multi-indices mostly get them from nested loops instead, see nest().)
  llvm::Value* axis(Ix& ix, std::size_t d) {
    if (ix.multi.empty() && !ix.prefix.empty() && ix.inner_lin) {
      const std::size_t t = ix.prefix.size();
      const Dims inner(ix.dims.begin() + static_cast<std::ptrdiff_t>(t), ix.dims.end());
      const auto st = strides_of(inner);
      ix.multi = ix.prefix;
      for (std::size_t k = 0; k < inner.size(); ++k) {
        if (unit(inner[k])) {
          ix.multi.push_back(E.c64(0));
          continue;
        }
        llvm::Value* q = unit(st[k]) ? ix.inner_lin : b.CreateUDiv(ix.inner_lin, st[k]);
        ix.multi.push_back(k == 0 ? q : b.CreateURem(q, inner[k]));
      }
    }
    if (ix.multi.empty()) {
      const auto st = strides_of(ix.dims);
      for (std::size_t k = 0; k < ix.dims.size(); ++k) {
        if (unit(ix.dims[k])) {
          ix.multi.push_back(E.c64(0));
          continue;
        }
        llvm::Value* q = b.CreateUDiv(ix.lin, st[k]);
        ix.multi.push_back(k == 0 ? q : b.CreateURem(q, ix.dims[k]));
      }
    }
    return ix.multi[d];
  }

  // Loop nest over `dims` calling body with the element index. flat: one
  // loop over the linear index (the multi-index is derived if asked for).
  // Runtime dimensions give loops with run-time trip counts (guarded: a
  // dimension may be 0).
  void nest(const Dims& dims, bool flat, const std::function<void(Ix&)>& body) {
    llvm::Value* n = numel(dims);
    if (Emitter::is_k(n, 0)) return;
    if (flat || dims.empty()) {
      E.loop(n, [&](llvm::Value* i) {
        begin_body();
        Ix& ix = new_ix(dims);
        ix.lin = i;
        body(ix);
      });
      return;
    }
    std::vector<llvm::Value*> multi(dims.size());
    std::function<void(std::size_t, llvm::Value*)> level = [&](std::size_t d, llvm::Value* lin_outer) {
      if (d == dims.size()) {
        begin_body();
        Ix& ix = new_ix(dims);
        ix.multi = multi;
        ix.lin = lin_outer;
        body(ix);
        return;
      }
      E.loop(dims[d], [&](llvm::Value* i) {
        multi[d] = i;
        llvm::Value* l = unit(dims[d]) ? lin_outer
                                       : b.CreateAdd(b.CreateMul(lin_outer, dims[d], "", true, true), i, "", true, true);
        level(d + 1, l);
      });
    };
    level(0, E.c64(0));
  }

  // Whether evaluating v needs multi-indices (else a flat loop serves).
  bool needs_multi(const Atom& a) {
    if (!a.is_var()) return false;
    const auto vs = static_cast<std::size_t>(a.var);
    if (buf_[vs] || plan_.materialised[vs]) return false;
    int& r = needs_multi_[vs];
    if (r >= 0) return r != 0;
    const Eqn& e = def_eqn(a.var);
    bool need = false;
    switch (e.prim) {
      case Prim::reshape:
      case Prim::squeeze: need = false; break;
      case Prim::iota: need = true; break;
      case Prim::broadcast_in_dim:
      case Prim::transpose:
      case Prim::slice:
      case Prim::dynamic_slice:
      case Prim::concatenate:
      case Prim::dynamic_update_slice: need = e.inputs[0].is_var() && type(e.inputs[0].var).rank() > 0; break;
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
      case Prim::dot_general:
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
        for (const Atom& in : e.inputs) need = need || needs_multi(in);
    }
    r = need ? 1 : 0;
    return need;
  }

  // Whether evaluating a contains a call to a transcendental (then the loop
  // body is long enough that interleaving reductions buys nothing).
  bool calls_transcendental(const Atom& a) {
    if (!a.is_var()) return false;
    const auto vs = static_cast<std::size_t>(a.var);
    if (buf_[vs] || plan_.materialised[vs]) return false;
    int& r = calls_transcendental_[vs];
    if (r >= 0) return r != 0;
    const Eqn& e = def_eqn(a.var);
    bool any = is_transcendental(e.prim);
    for (std::size_t i = 0; i < num_data_inputs(e) && !any; ++i) any = calls_transcendental(e.inputs[i]);
    r = any ? 1 : 0;
    return any;
  }

  // --- values ------------------------------------------------------------
  llvm::Value* operand(const Atom& a, Ix& ix) {
    if (!a.is_var()) return E.constant(a.lit.dtype, a.lit.f, a.lit.i);
    if (type(a.var).rank() == 0) return value(a.var, scalar_ix());
    return value(a.var, ix);
  }
  // The index into v's buffer of the element at linear index `index`: a
  // one-row buffer of a row group holds only the current row.
  llvm::Value* local(int v, llvm::Value* index) {
    llvm::Value* off = rowoff_[static_cast<std::size_t>(v)];
    if (!off && plan_.row_local[static_cast<std::size_t>(v)])
      internal_error("LLVM lowering: a one-row buffer is read outside its row group");
    return off ? b.CreateSub(index, off, "", true, true) : index;
  }
  llvm::Value* value(int v, Ix& ix) {
    const auto vs = static_cast<std::size_t>(v);
    if (buf_[vs]) return E.load(buf_[vs], type(v).dtype, local(v, lin(ix)));
    if (plan_.materialised[vs] || plan_.def[vs] < 0)
      internal_error("LLVM lowering: variable read before it was computed");
    auto key = std::make_pair(v, ix.id);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    llvm::Value* r = fused(def_eqn(v), ix);
    memo_[key] = r;
    return r;
  }
  // The operand index of remap eqn `e` for output index ix, built once.
  template <class F>
  Ix& remap(const Eqn& e, Ix& ix, const Dims& dims, F&& fill) {
    auto key = std::make_pair(static_cast<int>(&e - j_.eqns.data()), ix.id);
    if (auto it = remaps_.find(key); it != remaps_.end()) return *it->second;
    Ix& r = new_ix(dims);
    fill(r);
    remaps_[key] = &r;
    return r;
  }

  llvm::Value* fused(const Eqn& e, Ix& ix);
  llvm::Value* libm(const char* name, DType d, std::vector<llvm::Value*> args);
  llvm::Value* vector_math(Prim p, DType d, std::vector<llvm::Value*> args);
  llvm::Value* int_divrem(bool rem, llvm::Value* x, llvm::Value* y, DType d);
  llvm::Value* int_pow(llvm::Value* x, llvm::Value* y, DType d);
  llvm::Value* convert(DType from, DType to, llvm::Value* x);
  llvm::Value* clamped_start(const Atom& a, llvm::Value* dim, llvm::Value* size);

  // --- materialisation points --------------------------------------------
  void emit_root(std::size_t ei);
  bool flat_root(const Eqn& e);
  void emit_group(const RowGroup& g);
  void emit_row_elementwise(const Eqn& e, llvm::Value* out, const Row& row);
  void emit_reduction(const Eqn& e, llvm::Value* out, const Row* row = nullptr);
  llvm::Value* accumulate_sum(llvm::Value* acc, llvm::Value* v);
  void emit_concatenate(const Eqn& e, llvm::Value* out);
  void emit_dynamic_update_slice(const Eqn& e, llvm::Value* out);
  void emit_dot(const Eqn& e, llvm::Value* out);
  llvm::Value* buffer_through_reshapes(const Atom& a);
  void copy(llvm::Value* dst, llvm::Value* src, const Type& t);
  void emit_prologue_and_dims(llvm::Function* f, std::size_t nin);

  // Control flow (lower_control.hpp). Each emits the equation, sets the
  // buffers of all its outputs and schedules their frees in free_after.
  using FreeAfter = std::vector<std::vector<llvm::Value*>>;
  void emit_control(std::size_t ei, FreeAfter& free_after);
  void emit_loop(std::size_t ei, FreeAfter& free_after);
  void emit_cond(std::size_t ei, FreeAfter& free_after);
  bool is_carried(std::size_t k, std::size_t nin) const;
  llvm::Function* emit_nested(const Jaxpr& body, const std::vector<bool>& cells, const std::vector<bool>& carried = {});
  llvm::Value* operand_ptr(const Atom& a);
  llvm::Value* scalar_i64(const Atom& a);
  llvm::Value* call_nested(llvm::Function* f, const std::vector<llvm::Value*>& args);
};

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
// prims.hpp): the intrinsic llvm.<name> or a call of libm's <name>. Both
// vectorise into libmvec calls (session.hpp, vector_functions).
inline llvm::Value* Lowering::vector_math(Prim p, DType d, std::vector<llvm::Value*> args) {
  const VectorMath& vm = prim_info(p).vector_math;
  if (!vm) internal_error("LLVM lowering: " + std::string(prim_name(p)) + " has no vector math function");
  if (!vm.intrinsic) return libm(vm.name, d, std::move(args));
  const llvm::Intrinsic::ID id = llvm::Function::lookupIntrinsicID(std::string("llvm.") + vm.name);
  if (id == llvm::Intrinsic::not_intrinsic) internal_error(std::string("LLVM lowering: no intrinsic llvm.") + vm.name);
  return b.CreateIntrinsic(id, {E.reg_type(d)}, args);
}

// Integer div/rem as eager: y == 0 raises a fault bit (the result is then
// unspecified); y == -1 never reaches the divide (INT_MIN / -1 traps on x86):
// div gives the wrapping negation, rem gives 0.
inline llvm::Value* Lowering::int_divrem(bool rem, llvm::Value* x, llvm::Value* y, DType d) {
  llvm::Type* t = E.reg_type(d);
  llvm::Value* zero = b.CreateICmpEQ(y, llvm::ConstantInt::get(t, 0));
  llvm::Value* m1 = b.CreateICmpEQ(y, llvm::ConstantInt::getSigned(t, -1));
  E.raise_if(zero, rem ? kKernelRemByZero : kKernelDivByZero);
  llvm::Value* safe = b.CreateSelect(b.CreateOr(zero, m1), llvm::ConstantInt::get(t, 1), y);
  if (rem) return b.CreateSelect(m1, llvm::ConstantInt::get(t, 0), b.CreateSRem(x, safe));
  return b.CreateSelect(m1, b.CreateSub(llvm::ConstantInt::get(t, 0), x), b.CreateSDiv(x, safe));
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
  llvm::Value* neg = b.CreateICmpSLT(y, C(0));
  E.raise_if(b.CreateAnd(neg, b.CreateICmpEQ(x, C(0))), kKernelPowZeroNegative);
  llvm::Value* odd = b.CreateTrunc(y, E.i1);
  llvm::Value* neg_result =
      b.CreateSelect(b.CreateICmpEQ(x, C(1)), C(1),
                     b.CreateSelect(b.CreateICmpEQ(x, C(-1)), b.CreateSelect(odd, C(-1), C(1)), C(0)));
  return b.CreateSelect(neg, neg_result, result);
}

// convert_element_type as eager's convert_value: to bool is `!= 0` (NaN is
// true); float -> int truncates, NaN -> 0, saturates (llvm.fptosi.sat is
// exactly that); int -> narrower int wraps.
inline llvm::Value* Lowering::convert(DType from, DType to, llvm::Value* x) {
  if (from == to) return x;
  llvm::Type* t = E.reg_type(to);
  if (to == DType::bool_) {
    if (is_float(from)) return b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (from == DType::bool_) return is_float(to) ? b.CreateUIToFP(x, t) : b.CreateZExt(x, t);
  if (is_integer(from) && is_integer(to)) return b.CreateSExtOrTrunc(x, t);
  if (is_integer(from)) return b.CreateSIToFP(x, t);
  if (is_integer(to)) return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {t, x->getType()}, {x});
  return b.CreateFPCast(x, t);
}

// A dynamic_slice / dynamic_update_slice start index, clamped into
// [0, dim - size] as in JAX.
inline llvm::Value* Lowering::clamped_start(const Atom& a, llvm::Value* dim, llvm::Value* size) {
  llvm::Value* s = b.CreateSExt(operand(a, scalar_ix()), E.i64);
  s = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, s, E.c64(0));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, s, b.CreateSub(dim, size));
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
  switch (e.prim) {
    // unary
    case Prim::neg: return fl ? b.CreateFNeg(in(0)) : b.CreateSub(zero(), in(0));
    case Prim::abs:
      return fl ? un(llvm::Intrinsic::fabs) : b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, in(0), b.getFalse());
    case Prim::sign: {
      llvm::Value* x = in(0);
      if (fl)
        return b.CreateSelect(b.CreateFCmpOGT(x, zero()), one(),
                              b.CreateSelect(b.CreateFCmpOLT(x, zero()), E.number(d0, -1), x));
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
    case Prim::not_: return b.CreateNot(in(0));

    // binary
    case Prim::add: return fl ? b.CreateFAdd(in(0), in(1)) : d0 == DType::bool_ ? b.CreateOr(in(0), in(1)) : b.CreateAdd(in(0), in(1));
    case Prim::sub: return fl ? b.CreateFSub(in(0), in(1)) : b.CreateSub(in(0), in(1));
    case Prim::mul: return fl ? b.CreateFMul(in(0), in(1)) : d0 == DType::bool_ ? b.CreateAnd(in(0), in(1)) : b.CreateMul(in(0), in(1));
    case Prim::div: return fl ? b.CreateFDiv(in(0), in(1)) : int_divrem(false, in(0), in(1), d0);
    case Prim::rem: return fl ? b.CreateFRem(in(0), in(1)) : int_divrem(true, in(0), in(1), d0);
    case Prim::pow: return fl ? vector_math(e.prim, d0, {in(0), in(1)}) : int_pow(in(0), in(1), d0);
    case Prim::max:
    case Prim::min: {
      llvm::Value *x = in(0), *y = in(1);
      const bool mx = e.prim == Prim::max;
      if (fl)  // (x > y || x != x) ? x : y, exactly eager's max_value
        return b.CreateSelect(b.CreateOr(mx ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y), b.CreateFCmpUNO(x, x)), x, y);
      if (d0 == DType::bool_) return mx ? b.CreateOr(x, y) : b.CreateAnd(x, y);
      return b.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::smax : llvm::Intrinsic::smin, x, y);
    }
    case Prim::atan2: return vector_math(e.prim, d0, {in(0), in(1)});
    case Prim::and_: return b.CreateAnd(in(0), in(1));
    case Prim::or_: return b.CreateOr(in(0), in(1));

    // comparisons: ordered for floats except ne (NaN != NaN); bool as unsigned
    case Prim::eq: return fl ? b.CreateFCmpOEQ(in(0), in(1)) : b.CreateICmpEQ(in(0), in(1));
    case Prim::ne: return fl ? b.CreateFCmpUNE(in(0), in(1)) : b.CreateICmpNE(in(0), in(1));
    case Prim::lt:
      return fl ? b.CreateFCmpOLT(in(0), in(1)) : d0 == DType::bool_ ? b.CreateICmpULT(in(0), in(1)) : b.CreateICmpSLT(in(0), in(1));
    case Prim::le:
      return fl ? b.CreateFCmpOLE(in(0), in(1)) : d0 == DType::bool_ ? b.CreateICmpULE(in(0), in(1)) : b.CreateICmpSLE(in(0), in(1));
    case Prim::gt:
      return fl ? b.CreateFCmpOGT(in(0), in(1)) : d0 == DType::bool_ ? b.CreateICmpUGT(in(0), in(1)) : b.CreateICmpSGT(in(0), in(1));
    case Prim::ge:
      return fl ? b.CreateFCmpOGE(in(0), in(1)) : d0 == DType::bool_ ? b.CreateICmpUGE(in(0), in(1)) : b.CreateICmpSGE(in(0), in(1));

    case Prim::select_n: {
      llvm::Value* p = in(0);
      llvm::Value* c0 = in(1);
      llvm::Value* c1 = in(2);
      return b.CreateSelect(p, c1, c0);
    }
    case Prim::convert_element_type: return convert(d0, od, in(0));

    // index remaps
    case Prim::broadcast_in_dim: {
      const Atom& x = e.inputs[0];
      if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
      const Dims xd = dims_of(x.var);
      const auto& bd = std::get<BroadcastInDimParams>(e.params).broadcast_dimensions;
      // A runtime operand dimension equals its output dimension (a size-1
      // dimension that broadcasts is static).
      Ix& xi = remap(e, ix, xd, [&](Ix& r) {
        for (std::size_t i = 0; i < xd.size(); ++i)
          r.multi.push_back(unit(xd[i]) ? E.c64(0) : axis(ix, static_cast<std::size_t>(bd[i])));
      });
      return operand(x, xi);
    }
    case Prim::reshape:
    case Prim::squeeze: {
      const Atom& x = e.inputs[0];
      if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
      Ix& xi = remap(e, ix, dims_of(x.var), [&](Ix& r) { r.lin = lin(ix); });
      return operand(x, xi);
    }
    case Prim::transpose: {
      const Atom& x = e.inputs[0];
      if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
      const auto& perm = std::get<TransposeParams>(e.params).permutation;
      Ix& xi = remap(e, ix, dims_of(x.var), [&](Ix& r) {
        r.multi.resize(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i) r.multi[static_cast<std::size_t>(perm[i])] = axis(ix, i);
      });
      return operand(x, xi);
    }
    case Prim::slice: {
      const Atom& x = e.inputs[0];
      if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
      const auto& sp = std::get<SliceParams>(e.params);
      Ix& xi = remap(e, ix, dims_of(x.var), [&](Ix& r) {
        std::size_t dyn = 1;  // runtime start indices: the operands after the array, in order
        for (std::size_t i = 0; i < sp.start_indices.size(); ++i) {
          const std::int64_t st = sp.strides.empty() ? 1 : sp.strides[i];
          llvm::Value* start =
              sp.start_indices[i] == kDynamicDim ? dim_operand(e.inputs[dyn++]) : E.c64(sp.start_indices[i]);
          r.multi.push_back(b.CreateAdd(start, b.CreateMul(axis(ix, i), E.c64(st), "", true, true), "", true, true));
        }
      });
      return operand(x, xi);
    }
    case Prim::dynamic_slice: {
      const Atom& x = e.inputs[0];
      if (!x.is_var() || type(x.var).rank() == 0) return operand(x, ix);
      const Dims xd = dims_of(x.var);
      const Dims sizes = dims_of(e.outputs[0]);  // static, or dynamic (from the operands after the starts)
      Ix& xi = remap(e, ix, xd, [&](Ix& r) {
        for (std::size_t i = 0; i < xd.size(); ++i)
          r.multi.push_back(
              b.CreateAdd(axis(ix, i), clamped_start(e.inputs[1 + i], xd[i], sizes[i]), "", true, true));
      });
      return operand(x, xi);
    }
    case Prim::iota: {
      const auto& ip = std::get<IotaParams>(e.params);
      return convert(DType::i64, od, axis(ix, static_cast<std::size_t>(ip.dimension)));
    }

    case Prim::concatenate:
    case Prim::dynamic_update_slice:
    case Prim::reduce_sum:
    case Prim::reduce_max:
    case Prim::reduce_min:
    case Prim::reduce_prod:
    case Prim::dot_general:
    case Prim::for_loop:
    case Prim::while_loop:
    case Prim::cond: return not_fusible();
  }
  return not_fusible();
}

// ---------------------------------------------------------------------------
// Materialisation points.

inline void Lowering::emit_root(std::size_t ei) {
  const Eqn& e = j_.eqns[ei];
  const int v = e.outputs[0];
  llvm::Value* out = buf_[static_cast<std::size_t>(v)];
  const Dims dims = dims_of(v);
  switch (prim_kind(e.prim)) {
    case Kind::reduction: emit_reduction(e, out); return;
    case Kind::contraction: emit_dot(e, out); return;
    case Kind::control: internal_error("LLVM lowering: a control equation reached emit_root");
    case Kind::structural:
      if (e.prim == Prim::concatenate) return emit_concatenate(e, out);
      if (e.prim == Prim::dynamic_update_slice) return emit_dynamic_update_slice(e, out);
      [[fallthrough]];
    case Kind::unary:
    case Kind::binary:
    case Kind::compare:
    case Kind::select:
    case Kind::convert: {
      const DType od = type(v).dtype;
      nest(dims, flat_root(e), [&](Ix& ix) { E.store(out, od, lin(ix), fused(e, ix)); });
      return;
    }
  }
}

// Whether a fusible root's nest can be one flat loop (no multi-index needed).
inline bool Lowering::flat_root(const Eqn& e) {
  switch (e.prim) {
    case Prim::broadcast_in_dim:
    case Prim::transpose:
    case Prim::slice:
    case Prim::dynamic_slice:
    case Prim::iota: return false;
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    case Prim::reshape:
    case Prim::squeeze: {
      bool flat = true;
      for (std::size_t i = 0; i < num_data_inputs(e); ++i) flat = flat && !needs_multi(e.inputs[i]);
      return flat;
    }
    case Prim::concatenate:
    case Prim::dynamic_update_slice:
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    case Prim::dot_general:
    DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("LLVM lowering: flat_root of " + std::string(prim_name(e.prim)) + ", which is not fused");
}

// Fusion rule 4: one loop over the rows of the group's row axes; per row,
// each member's nest over that row, in order. One-row buffers start at
// row * (their row length) in the linear index space (rowoff_).
inline void Lowering::emit_group(const RowGroup& g) {
  const std::size_t t = g.row_dims.size();
  const Dims rows = dims_of(Type{DType::i64, g.row_dims, false});
  std::vector<llvm::Value*> multi(t);
  std::function<void(std::size_t, llvm::Value*)> level = [&](std::size_t d, llvm::Value* l) {
    if (d < t) {
      E.loop(rows[d], [&](llvm::Value* i) {
        multi[d] = i;
        level(d + 1, unit(rows[d]) ? l : b.CreateAdd(b.CreateMul(l, rows[d], "", true, true), i, "", true, true));
      });
      return;
    }
    const Row row{multi, l};
    for (int ei : g.members) {
      const int v = j_.eqns[static_cast<std::size_t>(ei)].outputs[0];
      if (plan_.row_local[static_cast<std::size_t>(v)])
        rowoff_[static_cast<std::size_t>(v)] = b.CreateMul(l, numel(dims_of(v), t), "", true, true);
    }
    for (int ei : g.members) {
      const Eqn& e = j_.eqns[static_cast<std::size_t>(ei)];
      llvm::Value* out = buf_[static_cast<std::size_t>(e.outputs[0])];
      if (prim_kind(e.prim) == Kind::reduction) emit_reduction(e, out, &row);
      else emit_row_elementwise(e, out, row);
    }
  };
  level(0, E.c64(0));
  for (int ei : g.members) rowoff_[static_cast<std::size_t>(j_.eqns[static_cast<std::size_t>(ei)].outputs[0])] = nullptr;
}

// A fusible member's nest over one row: flat over the row's linear index
// when no multi-index is needed or the row has one axis, else nested loops.
inline void Lowering::emit_row_elementwise(const Eqn& e, llvm::Value* out, const Row& row) {
  const int v = e.outputs[0];
  const Dims dims = dims_of(v);
  const std::size_t t = row.multi.size();
  const std::size_t inner_rank = dims.size() - t;
  llvm::Value* n = numel(dims, t);
  const DType od = type(v).dtype;
  llvm::Value* base = b.CreateMul(row.lin, n, "", true, true);
  if (inner_rank <= 1 || flat_root(e)) {
    E.loop(n, [&](llvm::Value* i) {
      begin_body();
      Ix& ix = new_ix(dims);
      ix.lin = b.CreateAdd(base, i, "", true, true);
      ix.prefix = row.multi;
      ix.inner_lin = i;
      E.store(out, od, local(v, ix.lin), fused(e, ix));
    });
    return;
  }
  std::vector<llvm::Value*> multi = row.multi;
  multi.resize(dims.size());
  std::function<void(std::size_t, llvm::Value*)> level = [&](std::size_t d, llvm::Value* l) {
    if (d == dims.size()) {
      begin_body();
      Ix& ix = new_ix(dims);
      ix.multi = multi;
      ix.lin = b.CreateAdd(base, l, "", true, true);
      E.store(out, od, local(v, ix.lin), fused(e, ix));
      return;
    }
    E.loop(dims[d], [&](llvm::Value* i) {
      multi[d] = i;
      level(d + 1, unit(dims[d]) ? l : b.CreateAdd(b.CreateMul(l, dims[d], "", true, true), i, "", true, true));
    });
  };
  level(t, E.c64(0));
}

// acc + v for a float sum whose order is free: a product v = a * b just
// computed for this sum (no other use) becomes llvm.fmuladd(a, b, acc), one
// rounding instead of two; reassoc lets the vectoriser keep partial sums.
inline llvm::Value* Lowering::accumulate_sum(llvm::Value* acc, llvm::Value* v) {
  auto* m = llvm::dyn_cast<llvm::BinaryOperator>(v);
  if (m && m->getOpcode() == llvm::Instruction::FMul && m->use_empty()) {
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {v->getType()}, {m->getOperand(0), m->getOperand(1), acc});
    for (auto it = memo_.begin(); it != memo_.end();) it = it->second == m ? memo_.erase(it) : std::next(it);
    m->eraseFromParent();
    Emitter::contract(r);
    return Emitter::reassoc(r);
  }
  return Emitter::reassoc(b.CreateFAdd(acc, v));
}

// Reductions iterate the operand in row-major order. The innermost run of
// reduced axes accumulates in a register (float sum/prod reassociable there
// only, so it vectorises); reduced axes further out combine into the output
// element, which then behaves like an elementwise update and vectorises over
// the kept inner axes.
inline void Lowering::emit_reduction(const Eqn& e, llvm::Value* out, const Row* row) {
  const Atom& x = e.inputs[0];
  const DType d = dtype_of(x);
  const bool fl = is_float(d);
  const Dims xd = x.is_var() ? dims_of(x.var) : Dims{};
  const auto& axes = std::get<ReduceParams>(e.params).axes;
  auto reduced = [&](std::size_t a) {
    return std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(a)) != axes.end();
  };
  const Prim p = e.prim;
  auto identity = [&]() -> llvm::Value* {
    switch (d) {
      case DType::bool_: return b.getInt1(p == Prim::reduce_min || p == Prim::reduce_prod);
      case DType::i32:
      case DType::i64: {
        const unsigned bits = d == DType::i32 ? 32 : 64;
        llvm::Type* t = E.reg_type(d);
        if (p == Prim::reduce_max) return llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(bits));
        if (p == Prim::reduce_min) return llvm::ConstantInt::get(t, llvm::APInt::getSignedMaxValue(bits));
        return llvm::ConstantInt::get(t, p == Prim::reduce_prod ? 1 : 0);
      }
      case DType::f32:
      case DType::f64: {
        llvm::Type* t = E.reg_type(d);
        if (p == Prim::reduce_max) return llvm::ConstantFP::getInfinity(t, true);
        if (p == Prim::reduce_min) return llvm::ConstantFP::getInfinity(t, false);
        return llvm::ConstantFP::get(t, p == Prim::reduce_prod ? 1.0 : 0.0);
      }
    }
    return nullptr;
  };
  auto combine = [&](llvm::Value* acc, llvm::Value* v, bool may_reassoc) -> llvm::Value* {
    if (d == DType::bool_) {
      const bool is_or = p == Prim::reduce_max || p == Prim::reduce_sum;
      return is_or ? b.CreateOr(acc, v) : b.CreateAnd(acc, v);
    }
    switch (p) {
      case Prim::reduce_sum: {
        if (!fl) return b.CreateAdd(acc, v);
        if (may_reassoc) return accumulate_sum(acc, v);
        return b.CreateFAdd(acc, v);
      }
      case Prim::reduce_prod:
        // Never reassociable: `reassoc` on the accumulator lets LLVM fold
        // pow(a, y) * pow(b, y) into pow(a * b, y), finite for negative a, b
        // where eager's product is NaN (found by dynstage_fuzz). Float
        // products are multiplied in loop order, and do not vectorise.
        return fl ? b.CreateFMul(acc, v) : b.CreateMul(acc, v);
      case Prim::reduce_max:
        return b.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::maximum : llvm::Intrinsic::smax, acc, v);
      case Prim::reduce_min:
        return b.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::minimum : llvm::Intrinsic::smin, acc, v);
      DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
      DYN_STRUCTURAL_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
      DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL) break;
    }
    internal_error("emit_reduction: " + std::string(prim_name(p)) + " is not a reduction");
  };

  const std::size_t r = xd.size();
  llvm::Value* xn = numel(xd);
  llvm::Value* on = numel(dims_of(e.outputs[0]));
  // Empty operand: the identity everywhere (never in a row group). With
  // runtime dimensions the nests below give the same for an empty operand.
  if (Emitter::is_k(xn, 0)) {
    E.loop(on, [&](llvm::Value* i) { E.store(out, d, i, identity()); });
    return;
  }
  // Axes [t, r): the innermost run of reduced (or size-1) axes.
  std::size_t t = r;
  while (t > 0 && (reduced(t - 1) || unit(xd[t - 1]))) --t;
  // (A runtime dimension counts as > 1: the output is then initialised to
  // the identity and combined into, which is right for any size. So does a
  // reduced axis of size 0: its loop never runs, and only that initialisation
  // writes the output. The empty-operand case above misses it when another
  // axis is a runtime dimension: dynstage_fuzz found sum(f64[0,n], {0}) giving
  // uninitialised memory.)
  bool outer_reduced = false;
  for (std::size_t a = 0; a < t; ++a) {
    const auto k = Emitter::konst(xd[a]);
    outer_reduced = outer_reduced || (reduced(a) && (!k || *k != 1));
  }
  llvm::Value* inner_n = numel(xd, t);
  // Output strides of the outer axes (0 where reduced).
  Dims ostride(t, E.c64(0));
  {
    llvm::Value* acc_ = E.c64(1);
    for (std::size_t a = r; a-- > 0;)
      if (!reduced(a)) {
        if (a < t) ostride[a] = acc_;
        acc_ = E.mul(acc_, xd[a]);
      }
  }
  if (outer_reduced) E.loop(on, [&](llvm::Value* i) { E.store(out, d, i, identity()); });
  const bool flat_inner = !needs_multi(x);
  llvm::Value* run = flat_inner ? inner_n : xd.empty() ? E.c64(1) : xd.back();  // the innermost loop's trip count
  // A run of runtime length interleaves 8 accumulators (runtime dimensions
  // stand for data sizes), 4 inside a row group (rows are usually short).
  const auto run_k = Emitter::konst(run);
  const LoopHint inner_hint = calls_transcendental(x) ? LoopHint::normal
                              : run_k ? (*run_k < kLongReduction ? LoopHint::reduction : LoopHint::long_reduction)
                              : row   ? LoopHint::reduction
                                      : LoopHint::long_reduction;
  llvm::AllocaInst* acc = E.entry_alloca(E.reg_type(d));

  std::vector<llvm::Value*> multi(r, nullptr);
  auto body = [&](llvm::Value* outer_lin, llvm::Value* olin) {
    // Inner reduction of inner_n elements starting at linear index outer_lin * inner_n.
    llvm::Value* base = b.CreateMul(outer_lin, inner_n, "", true, true);
    auto element = [&](Ix& ix) { return operand(x, ix); };
    llvm::Value* result;
    if (unit(inner_n)) {
      begin_body();
      Ix& ix = new_ix(xd);
      ix.lin = base;
      if (!multi.empty() && multi[0]) {
        ix.multi = multi;
        for (std::size_t a = t; a < r; ++a) ix.multi[a] = E.c64(0);
      }
      // Eager folds even a single element into the identity: a float sum
      // of -0.0 over only size-1 axes is 0.0 + -0.0 = +0.0.
      result = combine(outer_reduced ? E.load(out, d, olin) : identity(), element(ix), false);
      E.store(out, d, olin, result);
      return;
    }
    b.CreateStore(identity(), acc);
    if (flat_inner) {
      E.loop(inner_n, [&](llvm::Value* i) {
        begin_body();
        Ix& ix = new_ix(xd);
        ix.lin = b.CreateAdd(base, i, "", true, true);
        b.CreateStore(combine(b.CreateLoad(E.reg_type(d), acc), element(ix), true), acc);
      }, inner_hint);
    } else {
      std::function<void(std::size_t, llvm::Value*)> level = [&](std::size_t a, llvm::Value* l) {
        if (a == r) {
          begin_body();
          Ix& ix = new_ix(xd);
          ix.multi = multi;
          ix.lin = b.CreateAdd(base, l, "", true, true);
          b.CreateStore(combine(b.CreateLoad(E.reg_type(d), acc), element(ix), true), acc);
          return;
        }
        E.loop(xd[a], [&](llvm::Value* i) {
          multi[a] = i;
          level(a + 1, b.CreateAdd(b.CreateMul(l, xd[a], "", true, true), i, "", true, true));
        }, a + 1 == r ? inner_hint : LoopHint::normal);
      };
      level(t, E.c64(0));
    }
    result = b.CreateLoad(E.reg_type(d), acc);
    if (outer_reduced) result = combine(E.load(out, d, olin), result, false);
    E.store(out, d, olin, result);
  };
  // Outer axes [0, t): a nest carrying the operand's outer linear index and
  // the output's linear index.
  std::function<void(std::size_t, llvm::Value*, llvm::Value*)> outer = [&](std::size_t a, llvm::Value* l,
                                                                           llvm::Value* o) {
    if (a == t) return body(l, o);
    E.loop(xd[a], [&](llvm::Value* i) {
      multi[a] = i;
      outer(a + 1, b.CreateAdd(b.CreateMul(l, xd[a], "", true, true), i, "", true, true),
            b.CreateAdd(o, b.CreateMul(i, ostride[a], "", true, true), "", true, true));
    });
  };
  if (!x.is_var()) {  // reduction of a literal scalar (folded into the identity, as above)
    E.store(out, d, E.c64(0), combine(identity(), E.constant(x.lit.dtype, x.lit.f, x.lit.i), false));
    return;
  }
  if (row) {
    // One row of a row group: the reduced axes are exactly the trailing ones
    // after the row axes (axes in [t, row axes) have size 1), so the
    // operand's outer linear index and the output's index are the row's.
    if (outer_reduced) internal_error("emit_reduction: a row group member reduces a row axis");
    for (std::size_t a = 0; a < t; ++a) multi[a] = row->multi[a];
    body(row->lin, local(e.outputs[0], row->lin));
    return;
  }
  outer(0, E.c64(0), E.c64(0));
}

// One nest per operand, each writing its block of the output.
inline void Lowering::emit_concatenate(const Eqn& e, llvm::Value* out) {
  const Dims od = dims_of(e.outputs[0]);
  const DType d = type(e.outputs[0]).dtype;
  const auto axis_ = static_cast<std::size_t>(std::get<ConcatenateParams>(e.params).dimension);
  const auto ost = strides_of(od);
  llvm::Value* offset = E.c64(0);
  for (const Atom& a : e.inputs) {
    const Dims xd = dims_of(a.var);
    nest(xd, false, [&](Ix& ix) {
      llvm::Value* o = E.c64(0);
      for (std::size_t k = 0; k < xd.size(); ++k) {
        llvm::Value* i = axis(ix, k);
        if (k == axis_) i = b.CreateAdd(i, offset, "", true, true);
        o = b.CreateAdd(o, b.CreateMul(i, ost[k], "", true, true), "", true, true);
      }
      E.store(out, d, o, operand(a, ix));
    });
    offset = E.add(offset, xd[axis_]);
  }
}

// The operand, then the update over its window (start indices clamped).
inline void Lowering::emit_dynamic_update_slice(const Eqn& e, llvm::Value* out) {
  const Dims od = dims_of(e.outputs[0]);
  const DType d = type(e.outputs[0]).dtype;
  const Atom &x = e.inputs[0], &u = e.inputs[1];
  nest(od, !needs_multi(x), [&](Ix& ix) { E.store(out, d, lin(ix), operand(x, ix)); });
  const Dims ud = u.is_var() ? dims_of(u.var) : Dims{};
  begin_body();
  std::vector<llvm::Value*> start;
  for (std::size_t k = 0; k < od.size(); ++k) start.push_back(clamped_start(e.inputs[2 + k], od[k], ud[k]));
  const auto ost = strides_of(od);
  nest(ud, false, [&](Ix& ix) {
    llvm::Value* o = E.c64(0);
    for (std::size_t k = 0; k < ud.size(); ++k)
      o = b.CreateAdd(o, b.CreateMul(b.CreateAdd(axis(ix, k), start[k], "", true, true), ost[k], "", true, true), "", true, true);
    E.store(out, d, o, operand(u, ix));
  });
}

inline llvm::Value* Lowering::buffer_through_reshapes(const Atom& a) {
  int v = a.var;
  while (!buf_[static_cast<std::size_t>(v)]) {
    const Eqn& d = def_eqn(v);
    if (d.prim != Prim::reshape && d.prim != Prim::squeeze)
      internal_error("LLVM lowering: dot_general operand is not a buffer");
    v = d.inputs[0].var;
  }
  return buf_[static_cast<std::size_t>(v)];
}

inline void Lowering::emit_dot(const Eqn& e, llvm::Value* out) {
  if (!is_canonical_dot(std::get<DotGeneralParams>(e.params)))
    internal_error("LLVM lowering: dot_general not canonicalised");
  const Dims ld = dims_of(e.inputs[0].var), rd = dims_of(e.inputs[1].var);
  DotShape s{ld[0], ld[1], ld[2], rd[2]};
  emit_matmul(E, type(e.outputs[0]).dtype, s, buffer_through_reshapes(e.inputs[0]),
              buffer_through_reshapes(e.inputs[1]), out);
}

inline void Lowering::copy(llvm::Value* dst, llvm::Value* src, const Type& t) {
  llvm::Value* bytes = bytes_of(dims_of(t), t.dtype);
  const auto k = Emitter::konst(bytes);
  if (!k || *k > 0) b.CreateMemCpy(dst, llvm::MaybeAlign(), src, llvm::MaybeAlign(), bytes);
}

// ---------------------------------------------------------------------------
// The body function.

// A loop body copies a carried input of at most this many elements (static
// size) into a buffer of its own (emit_body): up to about this size LLVM
// unrolls the body's loops over it fully and SROA removes the copy; beyond,
// the copy would be paid per iteration, and the body's loops are vectorised
// with a run-time overlap check instead (one per call, amortised).
inline constexpr std::int64_t kSnapshotMaxElems = 32;

// Parameter k of the function (inputs first, then results) is loop state: a
// carried input of a loop body, or one of its caller-sized results.
inline bool Lowering::is_carried(std::size_t k, std::size_t nin) const {
  if (k >= nin) return loop_body_ && !cells_[k - nin];
  const std::size_t nconst = j_.constvars.size();
  return k >= nconst && carried_[k - nconst];
}

inline llvm::Function* Lowering::emit_body(const std::string& name) {
  name_ = name;
  const std::size_t nv = j_.types.size();
  buf_.assign(nv, nullptr);
  rowoff_.assign(nv, nullptr);
  dimval_.assign(nv, nullptr);
  needs_multi_.assign(nv, -1);
  calls_transcendental_.assign(nv, -1);
  std::vector<int> ins(j_.constvars);
  ins.insert(ins.end(), j_.invars.begin(), j_.invars.end());
  const std::size_t nin = ins.size(), nout = j_.outvars.size();
  std::vector<llvm::Type*> params(nin + nout, E.ptr);
  auto* fty = llvm::FunctionType::get(E.i32, params, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, E.mod);
  E.fn = f;
  // Buffers: noalias (results never overlap anything; arguments are only
  // read), dereferenceable for their size when it is static. Not noalias: a
  // loop body's carried inputs and caller-sized results (lower_control.hpp,
  // "Aliasing"), whose every pair aliases across iterations.
  for (std::size_t k = 0; k < nin + nout; ++k) {
    if (!is_carried(k, nin)) f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoAlias);
    f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoCapture);
    f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::NoUndef);
    const Type& t = k < nin ? type(ins[k]) : j_.type_of(j_.outvars[k - nin]);
    const SymNumel n = sym_numel(t);
    std::int64_t bytes = n.k * static_cast<std::int64_t>(dtype_size(t.dtype));
    if (k >= nin && cells_[k - nin]) {  // a cell: the data pointer and the dimensions
      f->addDereferenceableParamAttr(static_cast<unsigned>(k), static_cast<std::uint64_t>(8 * (1 + t.rank())));
      continue;
    }
    if (n.is_static() && bytes > 0)
      f->addDereferenceableParamAttr(static_cast<unsigned>(k), static_cast<std::uint64_t>(bytes));
    if (k < nin) f->addParamAttr(static_cast<unsigned>(k), llvm::Attribute::ReadOnly);
  }
  E.entry = llvm::BasicBlock::Create(E.ctx, "entry", f);
  llvm::BasicBlock* start = llvm::BasicBlock::Create(E.ctx, "start", f);
  b.SetInsertPoint(E.entry);
  E.err = b.CreateAlloca(E.i32, nullptr, "err");
  b.CreateStore(b.getInt32(0), E.err);
  b.CreateBr(start);
  b.SetInsertPoint(start);

  for (std::size_t k = 0; k < nin; ++k) buf_[static_cast<std::size_t>(ins[k])] = f->getArg(static_cast<unsigned>(k));
  // A loop body's small carried inputs are first copied into buffers of its
  // own (lower_control.hpp, "Aliasing"): the body then reads memory that
  // provably overlaps none of its results, with no noalias needed, so it
  // vectorises without run-time checks and, once inlined, SROA turns the
  // copy into loads at the body's start that GVN forwards from the previous
  // iteration's stores (the state stays in registers).
  for (std::size_t k = 0; k < nin; ++k) {
    if (!is_carried(k, nin)) continue;
    const Type& t = type(ins[k]);
    const SymNumel n = sym_numel(t);
    if (!n.is_static() || n.k <= 0 || n.k > kSnapshotMaxElems) continue;
    const std::int64_t bytes = n.k * static_cast<std::int64_t>(dtype_size(t.dtype));
    llvm::Value* own = E.entry_alloca(E.i8, bytes, 64);
    b.CreateMemCpy(own, llvm::MaybeAlign(64), f->getArg(static_cast<unsigned>(k)), llvm::MaybeAlign(), bytes);
    buf_[static_cast<std::size_t>(ins[k])] = own;
  }
  // Runtime dimensions that are arguments: read once, here.
  for (int v : ins) read_dim(v);

  // Temporaries to free after eqn i.
  FreeAfter free_after(j_.eqns.size() + 1);
  cell_buf_.assign(nout, nullptr);
  // The buffer of root i's output, alive until after eqn `until` at least.
  // A one-row buffer (row_axes > 0) holds the dimensions after the row axes;
  // with a runtime row length it is allocated on the heap, once per group.
  auto allocate = [&](std::size_t i, int until, std::size_t row_axes) {
    const auto vs = static_cast<std::size_t>(j_.eqns[i].outputs[0]);
    if (const int slot = plan_.out_slot[vs]; slot >= 0) {
      const auto ks = static_cast<std::size_t>(slot);
      if (cells_[ks]) {  // allocated here; handed to the caller at the end
        buf_[vs] = cell_buf_[ks] = E.heap(bytes_of(dims_of(static_cast<int>(vs)), type(static_cast<int>(vs)).dtype));
        return;
      }
      buf_[vs] = f->getArg(static_cast<unsigned>(nin + ks));
      return;
    }
    const bool one_row = plan_.row_local[vs];
    buf_[vs] = E.temp(bytes_of(dims_of(static_cast<int>(vs)), type(static_cast<int>(vs)).dtype, one_row ? row_axes : 0));
    const int last = one_row ? until : std::max(plan_.last_read[vs], until);
    free_after[static_cast<std::size_t>(last)].push_back(buf_[vs]);
  };
  // The prologue: dimensions computed from scalars, before any loop.
  for (int i : plan_.prologue) {
    allocate(static_cast<std::size_t>(i), i, 0);
    emit_root(static_cast<std::size_t>(i));
    read_dim(j_.eqns[static_cast<std::size_t>(i)].outputs[0]);
  }
  for (std::size_t i = 0; i < j_.eqns.size(); ++i) {
    if (!plan_.live[i] || plan_.in_prologue[i]) continue;
    const int v = j_.eqns[i].outputs[0];
    const auto vs = static_cast<std::size_t>(v);
    if (!plan_.materialised[vs]) continue;
    if (prim_kind(j_.eqns[i].prim) == Kind::control) {
      emit_control(i, free_after);
      for (int o : j_.eqns[i].outputs) read_dim(o);  // sizes computed by the loop or branch
      for (llvm::Value* p : free_after[i]) E.release(p);
      continue;
    }
    if (const int gi = plan_.group_of[i]; gi >= 0) {
      // Rule 4: the whole group at once; temporaries read inside it are freed after it.
      const RowGroup& g = plan_.groups[static_cast<std::size_t>(gi)];
      const auto last = static_cast<std::size_t>(g.members.back());
      for (int m : g.members) allocate(static_cast<std::size_t>(m), static_cast<int>(last), g.row_dims.size());
      emit_group(g);
      for (std::size_t k = i; k <= last; ++k)
        for (llvm::Value* p : free_after[k]) E.release(p);
      i = last;
      continue;
    }
    allocate(i, static_cast<int>(i), 0);
    emit_root(i);
    read_dim(v);  // a size computed from array data
    for (llvm::Value* p : free_after[i]) E.release(p);
  }
  // Results that are not written in place: arguments, duplicates, literals.
  for (std::size_t k = 0; k < nout; ++k) {
    const Atom& a = j_.outvars[k];
    llvm::Value* dst = f->getArg(static_cast<unsigned>(nin + k));
    if (cells_[k]) {
      if (!a.is_var()) internal_error("LLVM lowering: a literal result allocated by the kernel");
      if (cell_buf_[k]) continue;  // written in place
      cell_buf_[k] = E.heap(bytes_of(dims_of(a.var), type(a.var).dtype));
      copy(cell_buf_[k], buf_[static_cast<std::size_t>(a.var)], type(a.var));
      continue;
    }
    if (!a.is_var()) {
      E.store(dst, a.lit.dtype, E.c64(0), E.constant(a.lit.dtype, a.lit.f, a.lit.i));
      continue;
    }
    if (plan_.out_slot[static_cast<std::size_t>(a.var)] == static_cast<int>(k)) continue;
    copy(dst, buf_[static_cast<std::size_t>(a.var)], type(a.var));
  }
  for (llvm::Value* p : free_after[j_.eqns.size()]) E.release(p);
  if (std::find(cells_.begin(), cells_.end(), true) != cells_.end()) {
    // Results allocated here: on a fault everything is freed and the cells
    // stay untouched; on success each cell gets its pointer and shape, and
    // the buffer belongs to the caller.
    for (auto it = E.live_heap.begin(); it != E.live_heap.end();)
      it = std::find(cell_buf_.begin(), cell_buf_.end(), *it) == cell_buf_.end() ? (E.free_ptr(*it), E.live_heap.erase(it))
                                                                                   : std::next(it);
    E.exit_if_error(b.CreateLoad(E.i32, E.err));
    for (std::size_t k = 0; k < nout; ++k) {
      if (!cells_[k]) continue;
      llvm::Value* cell = f->getArg(static_cast<unsigned>(nin + k));
      b.CreateStore(cell_buf_[k], cell);
      const Dims dims = dims_of(j_.type_of(j_.outvars[k]));
      for (std::size_t d = 0; d < dims.size(); ++d)
        b.CreateStore(dims[d], b.CreateConstInBoundsGEP1_64(E.i64, cell, 1 + d));
    }
    E.live_heap.clear();
    b.CreateRet(b.getInt32(0));
    return f;
  }
  while (!E.live_heap.empty()) E.release(E.live_heap.back());
  b.CreateRet(b.CreateLoad(E.i32, E.err));
  return f;
}

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
