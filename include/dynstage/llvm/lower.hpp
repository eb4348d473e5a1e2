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
//   - a fused variable is computed from its equation (`fused`, the one
//     `switch` over Prim at one element), with its operands requested at the
//     index its primitive maps to: elementwise ops pass ix through, layout
//     primitives follow their index map (ir/index_map.hpp).
// Indices, the loop-nest builder and the per-index caches are in nests.hpp.
// Control-flow equations (for_loop, while_loop, cond) are emitted by
// lower_control.hpp: their bodies become functions of their own, called from
// native loops and branches here.
// A row group (fusion rule 4) is emitted by emit_group: one loop over the
// rows, each member's nest over one row inside it; a one-row (row-local)
// buffer is addressed at (linear index - row * row length), see local().
//
// The pipeline of one function, one file per step:
//   lower.hpp        this class: dimensions, values at an index
//   lower_expr.hpp   expression codegen (`fused`, scalar helpers)
//   lower_remap.hpp  the operand element of a layout primitive (index maps)
//   lower_roots.hpp  the loop nest of every materialised root
//   lower_windows.hpp  concatenate and dynamic_update_slice roots
//   lower_control.hpp  for_loop, while_loop, cond
//   lower_dot.hpp    dot_general's matrix product
//   lower_body.hpp   the function: parameters, buffers, roots in order, results
//
// Scalar semantics and the deliberate differences from eager: lower_expr.hpp.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../ir/index_map.hpp"
#include "emit.hpp"
#include "fusion.hpp"
#include "lower_dot.hpp"
#include "nests.hpp"

namespace dyn::detail::llvmjit {

class Lowering : Nests {
public:
  // `cells`: per outvar, whether the function allocates that result itself
  // (its size is computed inside): the result pointer then points at a cell
  // {void* data; int64_t shape[rank]} that the function fills on success
  // (backend.hpp, "Results the kernel allocates"). Empty: none.
  // `carried`: for a loop body, per invar, whether it is loop state (the
  // buffer a previous iteration's result was written to); empty for the
  // kernel, a while condition or a branch. A loop body's carried inputs and
  // its caller-sized results get no `noalias` (emit_body, "Buffers").
  // `owned`: per invar, whether the function may overwrite it (a donated
  // argument of the kernel; buffers.hpp). A loop state run in place is
  // given through the plan's pairs instead.
  Lowering(const Jaxpr& j, const FusionPlan& plan, Emitter& e, std::vector<bool> cells = {},
           std::vector<bool> carried = {}, std::vector<bool> owned = {})
        : Nests(e), j_(j), plan_(plan), cells_(std::move(cells)), carried_(std::move(carried)), owned_(std::move(owned)) {
    cells_.resize(j.outvars.size(), false);
    loop_body_ = std::find(carried_.begin(), carried_.end(), true) != carried_.end();
    carried_.resize(j.invars.size(), false);
  }

  // Emit the body function: i32 name(ptr args..., ptr results...).
  llvm::Function* emit_body(const std::string& name);

private:
  const Jaxpr& j_;
  const FusionPlan& plan_;
  std::vector<bool> cells_;             // outvar -> allocated here, returned through a cell
  std::vector<bool> carried_;           // invar -> loop state (loop bodies only)
  std::vector<bool> owned_;             // invar -> may be overwritten (donated)
  bool count_copies_ = count_copies().load(std::memory_order_relaxed);  // the test hook (backend.hpp)
  bool loop_body_ = false;              // some invar is carried: every caller-sized result is loop state
  std::vector<llvm::Value*> cell_buf_;  // outvar -> its heap buffer (cells only), once allocated
  std::string name_;                    // of the function being emitted (nested bodies derive theirs)
  int nested_ = 0;                      // nested body functions emitted so far
  bool scalar_nest_ = false;            // emitting a scatter's update nest, which never vectorises
  bool nested_body_ = false;            // a loop body, condition or branch (emit_nested)

  // A gather whose operand is a buffer the kernel may write (a temporary, a
  // result, a donated argument, anything in a nested body, or a fused
  // expression over such): LLVM 19's SLP vectoriser may make a masked
  // gather of its loads and schedule it above the stores that fill the
  // buffer (docs/reliability.md, seed 3642), so such a module is compiled
  // without masked gathers (session.hpp, no_masked_gathers). A gather from
  // the kernel's own inputs keeps them (a vectorised gather: 1.5x faster).
  void note_gather_operand(const Atom& x) {
    bool input = false;
    if (x.is_var() && !nested_body_) {
      for (std::size_t i = 0; i < j_.invars.size(); ++i)
        if (j_.invars[i] == x.var && !(i < owned_.size() && owned_[i])) input = true;
      for (int c : j_.constvars)
        if (c == x.var) input = true;
    }
    if (!input) no_masked_gathers(E.mod);
  }
  std::vector<llvm::Value*> buf_;   // var -> its buffer, once computed
  std::vector<llvm::Value*> rowoff_;  // var -> inside its row group, the linear index its one-row buffer starts at
  std::vector<llvm::Value*> dimval_;  // var -> its i64 value, for the dimension variables (read once)
  std::vector<int> needs_multi_;    // var -> -1 unknown, 0/1
  std::vector<int> calls_transcendental_;  // var -> -1 unknown, 0/1

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
    E.exit_when(b.CreateICmpSLT(dimval_[vs], E.c64(0)), kKernelNegativeSize, "dim.negative");
  }

  // Whether evaluating v needs multi-indices (else a flat loop serves).
  bool needs_multi(const Atom& a) {
    if (!a.is_var()) return false;
    const auto vs = static_cast<std::size_t>(a.var);
    if (buf_[vs] || plan_.materialised[vs]) return false;
    int& r = needs_multi_[vs];
    if (r >= 0) return r != 0;
    const Eqn& e = def_eqn(a.var);
    // A layout primitive needs its output's multi-index unless it keeps
    // the linear index; anything else needs what its operands need.
    bool need = false;
    if (is_layout(e.prim)) {
      const IndexMap m = index_map(j_, e);
      need = m.form == IndexMap::Form::iota ||
             (m.form != IndexMap::Form::linear && e.inputs[0].is_var() && type(e.inputs[0].var).rank() > 0);
    } else {
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
    if (!a.is_var()) return E.constant(a.lit.dtype, a.lit.f, a.lit.i, a.lit.fi);
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
  // The element of layout equation e's operand (input 0) that its output
  // element at ix reads, following the primitive's index map
  // (ir/index_map.hpp); the operand index is built once per (e, ix).
  llvm::Value* remapped(const Eqn& e, Ix& ix);
  llvm::Value* padded(const Eqn& e, Ix& ix, Ix& r);  // remapped's form pad
  llvm::Value* concatenated(const Eqn& e, Ix& ix);   // a fused concatenate (rows of buffers)
  // The start of an axis map, as i64. `limit`: the largest start a clamped
  // or gathered one may take (the larger array's dimension minus the
  // smaller's); `ix`: the index whose index vector a gathered or scattered
  // start reads.
  llvm::Value* start_of(const Eqn& e, const AxisMap& m, std::size_t axis, llvm::Value* limit, Ix* ix = nullptr);
  // The raw component m.value of the index vector of gather/scatter e at
  // the output (update) index ix, as i64.
  llvm::Value* index_vector_component(const Eqn& e, const AxisMap& m, Ix& ix);
  void emit_scatter(const Eqn& e, llvm::Value* out);  // lower_scatter.hpp
  void emit_segment_sum(const Eqn& e, llvm::Value* out);  // lower_scatter.hpp

  llvm::Value* fused(const Eqn& e, Ix& ix);
  // The elementwise primitives with a complex operand or result (null: the
  // primitive computes complex values as any other, e.g. a layout
  // primitive or select_n), and their helpers (lower_expr.hpp).
  llvm::Value* complex_fused(const Eqn& e, Ix& ix, DType d0, DType od);
  llvm::Value* complex_mul(DType d, llvm::Value* x, llvm::Value* y);
  llvm::Value* complex_div(DType d, llvm::Value* x, llvm::Value* y);
  llvm::Value* complex_exp(DType d, llvm::Value* z);
  llvm::Value* complex_log(DType d, llvm::Value* z);
  llvm::Value* complex_abs(DType rd, llvm::Value* re, llvm::Value* im);
  llvm::Value* complex_convert(DType from, DType to, llvm::Value* x);
  llvm::Value* libm(const char* name, DType d, std::vector<llvm::Value*> args);
  llvm::Value* vector_math(Prim p, DType d, std::vector<llvm::Value*> args);
  llvm::Value* int_divrem(bool rem, llvm::Value* x, llvm::Value* y, DType d);
  llvm::Value* int_pow(llvm::Value* x, llvm::Value* y, DType d);
  llvm::Value* integer_pow(llvm::Value* x, int y, DType d);
  llvm::Value* nextafter(llvm::Value* x, llvm::Value* y, DType d);
  llvm::Value* erf_inv(llvm::Value* x, DType d);
  llvm::Value* polygamma(int n, llvm::Value* x, DType d);  // digamma (n = 0), trigamma (1)
  llvm::Value* max_min(bool is_max, DType d, llvm::Value* x, llvm::Value* y);
  llvm::Value* convert(DType from, DType to, llvm::Value* x);
  llvm::Value* unsigned_to_float(llvm::Value* x, llvm::Type* t);

  // --- materialisation points --------------------------------------------
  void emit_root(std::size_t ei);
  bool flat_root(const Eqn& e);
  llvm::Value* stream_total(int v, llvm::Value* written);
  void emit_group(const RowGroup& g);
  void emit_group_row(const RowGroup& g, const Row& row);
  void emit_row_elementwise(const Eqn& e, llvm::Value* out, const Row& row);
  void emit_reduction(const Eqn& e, llvm::Value* out, const Row* row = nullptr);
  llvm::Value* accumulate_sum(llvm::Value* acc, llvm::Value* v);
  void emit_cumulative(const Eqn& e, llvm::Value* out);  // lower_cumulative.hpp
  void emit_arg_reduction(const Eqn& e, llvm::Value* out);  // lower_argreduce.hpp
  void emit_sort(const Eqn& e);                             // lower_sort.hpp
  void emit_debug_print(const Eqn& e);                      // lower_sort.hpp
  void emit_collective(const Eqn& e, llvm::Value* out);     // lower_sort.hpp
  void emit_top_k(const Eqn& e);                            // lower_sort.hpp
  void emit_fft(const Eqn& e, llvm::Value* out);            // lower_fft.hpp
  // A window primitive's equation and its output's buffer.
  struct Window {
    const Eqn* e;
    llvm::Value* out;
  };
  std::vector<llvm::Value*> window_starts(const Eqn& e, std::size_t k);
  void emit_windows(const std::vector<Window>& ws, std::size_t k);
  void emit_window_root(const Eqn& e, llvm::Value* out, const Window* twin = nullptr);
  void emit_update_pass(const Eqn& e, llvm::Value* out);  // a dynamic_update_slice not in place
  int concatenate_twin(std::size_t i);
  bool fused_reads(const Atom& a, int v, std::set<int>& seen);
  void emit_dot(const Eqn& e, llvm::Value* out);
  // The root product `ei`'s GEMM epilogue computes (fusion_gemm.hpp), or -1
  // (also when that root's result is allocated by the kernel: a cell).
  int epilogue_root(std::size_t ei) const {
    if (plan_.epilogue.empty() || plan_.epilogue[ei] < 0) return -1;
    const int r = plan_.epilogue[ei];
    const int slot = plan_.out_slot[static_cast<std::size_t>(j_.eqns[static_cast<std::size_t>(r)].outputs[0])];
    return slot >= 0 && cells_[static_cast<std::size_t>(slot)] ? -1 : r;
  }
  void emit_fused_dot(const Eqn& e, const DotShape& s, llvm::Value* out, bool fa, bool fb, int epi);
  llvm::Value* buffer_through_reshapes(const Atom& a);
  bool through_reshapes_to_buffer(const Atom& a);  // a dot operand read straight from a buffer
  void copy(llvm::Value* dst, llvm::Value* src, const Type& t);
  // The test hook (backend.hpp, count_copies): add `bytes` to the counter.
  void count_copy(llvm::Value* bytes) {
    if (!count_copies_) return;
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), {E.i64}, false);
    b.CreateCall(E.mod.getOrInsertFunction(kCountBytesRoutine, fty), {bytes});
  }
  // Parallel regions (lower_parallel.hpp).
  using TaskBody = std::function<void(llvm::Value* task, llvm::Value* begin, llvm::Value* end)>;
  bool worth_parallel(llvm::Value* work, std::int64_t per) const;
  std::int64_t task_elems(const std::vector<Atom>& computed);
  void parallel_tasks(llvm::Value* n, llvm::Value* per, const TaskBody& body);
  llvm::Value* rows_per_task(llvm::Value* row, std::int64_t per);
  bool emit_parallel_elementwise(const Eqn& e, llvm::Value* out);
  bool emit_parallel_group(const RowGroup& g);
  void emit_prologue_and_dims(llvm::Function* f, std::size_t nin);

  // Control flow (lower_control.hpp). Each emits the equation, sets the
  // buffers of all its outputs and schedules their frees in free_after.
  using FreeAfter = std::vector<std::vector<llvm::Value*>>;
  void emit_control(std::size_t ei, FreeAfter& free_after);
  void emit_loop(std::size_t ei, FreeAfter& free_after);
  void emit_pointwise_loop(std::size_t ei, FreeAfter& free_after);  // lower_pointwise.hpp
  void emit_cond(std::size_t ei, FreeAfter& free_after);
  void emit_scan_loop(std::size_t ei, FreeAfter& free_after, int last,
                      const std::function<void(const std::vector<llvm::Value*>&, const std::vector<llvm::Value*>&)>&
                          iteration);
  bool is_carried(std::size_t k, std::size_t nin) const;
  bool writable(std::size_t k, std::size_t nin) const;
  // `pairs`: per outvar of the body, the invar it is a candidate to be run
  // in place with (buffers.hpp); on return, the confirmed ones.
  llvm::Function* emit_nested(const Jaxpr& body, const std::vector<bool>& cells, const std::vector<bool>& carried = {},
                              std::vector<int>* pairs = nullptr);
  llvm::Value* operand_ptr(const Atom& a);
  llvm::Value* scalar_i64(const Atom& a);
  llvm::Value* call_nested(llvm::Function* f, const std::vector<llvm::Value*>& args);
  llvm::Value* for_trip_count(llvm::Value* lo, llvm::Value* hi, llvm::Value* st);
};

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
