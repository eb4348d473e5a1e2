// dynstage: tracing — trace states, tracers' identity, and bind.
//
// bind(prim, operands, params) is the one interception point (Autodidax):
//   1. all operands concrete -> run the eager kernel (impl) now;
//   2. otherwise record an equation into the innermost active trace: operands
//      become atoms (its own tracers -> variables; C++ scalars and rank-0
//      arrays -> literals; other concrete arrays -> constvars, one per
//      distinct buffer; tracers of an enclosing trace -> captured constvars),
//      the shape rule gives the output types, and fresh tracers stand for the
//      outputs.
// A TraceState is one scope being recorded: the jaxpr under construction and
// where its constvars come from. Nested scopes (control-flow bodies) capture
// what they use from outer scopes as constvars; the binder of the nested
// primitive passes those sources as operands in the outer scope.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "../ir/rules.hpp"
#include "../shape/symbolic.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include <functional>  // order_jaxpr (out of line): users need not parse it
#endif

namespace dyn::detail {

struct TraceState;

// What a tracer is: a variable of one trace, with its abstract value.
struct TracerNode {
  std::shared_ptr<TraceState> trace;
  int var = -1;
  Aval aval;
  // For an integer scalar used as a size (Catalyst's dynamic dimensions): the
  // dimension variable it stands for, created when first needed (dim_of).
  // aval.dim_value holds a dimension known when the tracer was made.
  mutable std::optional<Dim> dim;
};
using TracerRef = std::shared_ptr<const TracerNode>;

// An operand or result of bind: a concrete array or a tracer.
struct Value {
  AnyArray array;    // when tracer == nullptr
  TracerRef tracer;  // when traced
  bool weak = false; // weakly typed (from a C++ scalar literal)

  bool is_tracer() const { return tracer != nullptr; }
  Aval aval() const {
    if (!tracer) return aval_of(array, weak);
    Aval a = tracer->aval;
    if (!a.dim_value && tracer->dim) a.dim_value = tracer->dim;
    return a;
  }
  DType dtype() const { return tracer ? tracer->aval.dtype : array.dtype(); }
  int rank() const { return tracer ? tracer->aval.rank() : array.rank(); }
  Shape shape() const { return tracer ? tracer->aval.shape : to_shape(array.shape()); }
  TypeInfo type_info() const { return TypeInfo{dtype(), weak}; }
};

// A concrete rank-0 value.
Value scalar_value(const Scalar& s, bool weak);
// The value of a concrete rank-0 array.
Scalar scalar_of(const AnyArray& a);

#ifdef DYNSTAGE_IMPLEMENTATION
Value scalar_value(const Scalar& s, bool weak) {
  Storage st = Storage::make(s.dtype, {}, false);
  visit_dtype(s.dtype, [&](auto t) {
    using T = decltype(t);
    *static_cast<T*>(st.data) = s.as<T>();
  });
  return Value{AnyArray(std::move(st)), nullptr, weak};
}

Scalar scalar_of(const AnyArray& a) {
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return Scalar::of<T>(*static_cast<const T*>(a.data()));
  });
}
#endif  // DYNSTAGE_IMPLEMENTATION

inline std::vector<TraceState*>& trace_stack() {
  thread_local std::vector<TraceState*> stack;
  return stack;
}

inline TraceState* current_trace() {
  auto& s = trace_stack();
  return s.empty() ? nullptr : s.back();
}

struct TraceState : std::enable_shared_from_this<TraceState> {
  Jaxpr jaxpr;
  // Where each constvar's value comes from, parallel to jaxpr.constvars: a
  // concrete array (closed-over constant) or a tracer of an enclosing trace.
  std::vector<Value> const_sources;
  std::size_t level = 0;  // position in the trace stack
  bool active = true;
  TraceState* parent = nullptr;  // the enclosing trace, if any (it outlives this one)
  // Constvar dedup: buffer identity (data pointer, dtype, shape) for arrays,
  // node identity for captured tracers.
  std::map<std::tuple<const void*, int, std::vector<std::int64_t>>, int> array_consts;
  std::map<const TracerNode*, int> captured_consts;

  // Symbolic dimensions. `scope` holds the dimension variables and the
  // constraints (shared with enclosing traces); `dims` maps each dimension
  // expression materialised in this trace to the i64[] tracer holding its
  // value, so equal expressions are one variable (the Catalyst tracing
  // note: `ones(n + 1) + ones(n + 1)` type-checks). The member functions that
  // deal with dimensions are defined in trace_dims.hpp.
  std::shared_ptr<SymbolicScope> scope;
  std::map<ExprPtr, Value, ExprLess> dims;

  SymbolicScope& sym_scope();  // out of line (DYNSTAGE_IMPLEMENTATION)

  // The jaxpr type of an abstract value: symbolic dimensions refer to the
  // variables holding their values (materialised on demand).
  Type type_of_aval(const Aval& a);  // out of line (DYNSTAGE_IMPLEMENTATION)

  Value make_tracer(int var, Aval aval) {
    bool weak = aval.weak;
    auto node = std::make_shared<TracerNode>(TracerNode{shared_from_this(), var, std::move(aval), std::nullopt});
    return Value{AnyArray(), std::move(node), weak};
  }

  // An explicit argument. An i64[] scalar argument may size arrays (Catalyst's
  // dynamic dimensions): it stands for a dimension variable from the start,
  // so arithmetic on it gives dimensions (`n + 1`).
  Value new_arg(const Aval& a);  // out of line, as the rest of the symbolic bookkeeping

  // A new dimension variable standing for the value of integer scalar tracer
  // `v` of this trace.
  Dim fresh_dim(const Value& v);

  // A dimension variable of the scope that nothing names yet ("_d3").
  Dim new_dim_var();

  // An implicit i64[] argument holding the value of dimension `d` (a
  // polymorphic dimension variable or expression of the arguments' shapes).
  Value new_dim_arg(const Dim& d);

  int add_constvar(const Aval& a, Value source);  // out of line (DYNSTAGE_IMPLEMENTATION)

  // The atom standing for `v` in this trace.
  Atom atom_for(const Value& v);  // out of line (DYNSTAGE_IMPLEMENTATION)

  // A tracer for a concrete non-scalar array: its constvar.
  Value lift(const Value& v);  // out of line (DYNSTAGE_IMPLEMENTATION)

  // The value of dimension `d` in this trace, which must be the innermost
  // one: a strong i64 literal when static, else the tracer holding it
  // (materialised by equations the first time: `b:i64[] = add a 1`).
  Value dim_operand(const Dim& d);  // out of line (DYNSTAGE_IMPLEMENTATION)

  // Remember that tracer `v` (of this trace) holds dimension `d`.
  void remember_dim(const Dim& d, const Value& v);

private:
  Value materialise(const DimExpr& e);
  Value term_value(const DimTerm& t, SymbolicScope* sc);
  Value factor_value(const DimFactor& f, SymbolicScope* sc);
};

// The dimension that integer scalar `v` stands for when used as a size: its
// value when concrete; for a tracer, the dimension it was computed as, or a
// fresh dimension variable standing for its (run-time) value. `op` names the
// operation in errors.
Dim dim_of(const Value& v, std::string_view op);

#ifdef DYNSTAGE_IMPLEMENTATION
int TraceState::add_constvar(const Aval& a, Value source) {
  int v = jaxpr.new_var(type_of_aval(a));
  jaxpr.constvars.push_back(v);
  const_sources.push_back(std::move(source));
  return v;
}

Value TraceState::lift(const Value& v) {
  if (v.is_tracer() && v.tracer->trace.get() == this) return v;
  if (!v.is_tracer() && v.array.rank() == 0) return v;  // stays a literal
  Atom a = atom_for(v);
  Aval av = v.aval();
  return make_tracer(a.var, av);
}

Atom TraceState::atom_for(const Value& v) {
  if (v.is_tracer()) {
    const TracerNode* n = v.tracer.get();
    if (n->trace.get() == this) return Atom::of_var(n->var);
    if (!n->trace->active || n->trace->level >= level)
      fail<TypeError>("UnexpectedTracerError: a tracer " + aval_str(n->aval) +
                      " from a trace that has finished (or from an unrelated trace) was used; a tracer "
                      "must not escape the function being traced (through a global, a static or a "
                      "captured reference)");
    auto it = captured_consts.find(n);
    if (it != captured_consts.end()) return Atom::of_var(it->second);
    int c = add_constvar(n->aval, v);
    captured_consts.emplace(n, c);
    return Atom::of_var(c);
  }
  if (v.array.rank() == 0) return Atom::literal(scalar_of(v.array), v.weak);
  auto key = std::make_tuple(v.array.data(), static_cast<int>(v.array.dtype()), v.array.shape());
  auto it = array_consts.find(key);
  if (it != array_consts.end()) return Atom::of_var(it->second);
  int c = add_constvar(aval_of(v.array), Value{v.array, nullptr, false});
  array_consts.emplace(std::move(key), c);
  return Atom::of_var(c);
}

#endif  // DYNSTAGE_IMPLEMENTATION


// RAII: a new scope being traced, pushed on this thread's trace stack.
class TraceScope {
public:
  // A scope nested in the current trace (if any). Its symbolic dimensions live
  // in `scope` if given, else in the enclosing trace's scope.
  // (Constructor and destructor out of line, DYNSTAGE_IMPLEMENTATION: they
  // own the TraceState's creation and destruction, and so its containers.)
  explicit TraceScope(std::shared_ptr<SymbolicScope> scope = nullptr);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  TraceState& state() { return *state_; }
  Value new_arg(const Aval& a) { return state_->new_arg(a); }

  // Close the scope over `outs`: concrete results are lifted (scalars become
  // literal outputs, arrays constvars). With `implicit_results`, dimension
  // variables of the results' types that the body computes are returned
  // first, as implicit results (the Catalyst tracing note: `in (b, c)` for a
  // function returning ones(n + 1)). Returns the jaxpr in canonical order (see
  // order_jaxpr); const_sources() says where its constvars come from.
  std::shared_ptr<Jaxpr> finish(const std::vector<Value>& outs, bool implicit_results = true);

  // The symbolic shapes of the values finish() was given, for callers that
  // allocate results (jit) or report them.
  const std::vector<Shape>& out_shapes() const { return out_shapes_; }

  // Canonical equation order. C++ leaves the evaluation order of function
  // arguments unspecified (g++ goes right to left), so the order in which
  // equations were recorded says little about the user's program:
  // dot(x + 1, y + 1) records `y + 1` first. We therefore emit equations in
  // post-order from the outputs, operands left to right, which is the order
  // Python evaluates the same expression in, and so the order JAX prints.
  //   1. DFS from each output (iteratively: chains may be long), visiting an
  //      equation's operands before the equation.
  //   2. Dead code (no output depends on it) is dropped; effects are roots, first, in program order.
  //   3. Constvars are renumbered in order of first use in the new order.
  static void order_jaxpr(Jaxpr& j, std::vector<Value>& const_sources);  // out of line

  const std::vector<Value>& const_sources() const { return state_->const_sources; }

private:
  std::shared_ptr<TraceState> state_;
  std::vector<Shape> out_shapes_;
};

#ifdef DYNSTAGE_IMPLEMENTATION
TraceScope::TraceScope(std::shared_ptr<SymbolicScope> scope) : state_(std::make_shared<TraceState>()) {
  state_->level = trace_stack().size();
  state_->parent = current_trace();
  state_->scope = scope ? std::move(scope) : state_->parent ? state_->parent->scope : nullptr;
  trace_stack().push_back(state_.get());
}

TraceScope::~TraceScope() {
  state_->active = false;
  // The dimension memo holds this trace's own tracers, which point back at
  // the state: break the cycle (tracers that escaped keep the state alive
  // only to report that their trace has finished).
  state_->dims.clear();
  auto& s = trace_stack();
  if (!s.empty() && s.back() == state_.get()) s.pop_back();
}

std::shared_ptr<Jaxpr> TraceScope::finish(const std::vector<Value>& outs, bool implicit_results) {
  Jaxpr& j = state_->jaxpr;
  out_shapes_.clear();
  std::vector<Atom> explicit_outs;
  for (const Value& v : outs) {
    explicit_outs.push_back(state_->atom_for(v));
    out_shapes_.push_back(v.shape());
  }
  j.outvars.clear();
  j.out_explicit.clear();
  if (implicit_results) {
    // Dimension variables of the results that are neither inputs nor
    // constants: computed by the body, so returned (once each, in order).
    std::vector<char> bound(j.types.size(), 0);
    for (int v : j.invars) bound[static_cast<std::size_t>(v)] = 1;
    for (int v : j.constvars) bound[static_cast<std::size_t>(v)] = 1;
    for (const Atom& a : explicit_outs)
      for (const JDim& d : j.type_of(a).shape)
        if (!d.is_static() && !bound[static_cast<std::size_t>(d.var)]) {
          bound[static_cast<std::size_t>(d.var)] = 1;
          j.outvars.push_back(Atom::of_var(d.var));
        }
    if (!j.outvars.empty()) j.out_explicit.assign(j.outvars.size(), false);
  }
  for (const Atom& a : explicit_outs) j.outvars.push_back(a);
  if (!j.out_explicit.empty()) j.out_explicit.resize(j.outvars.size(), true);
  order_jaxpr(j, state_->const_sources);
  return std::make_shared<Jaxpr>(j);
}

void TraceScope::order_jaxpr(Jaxpr& j, std::vector<Value>& const_sources) {
  std::vector<int> producer(j.types.size(), -1);
  for (std::size_t e = 0; e < j.eqns.size(); ++e)
    for (int o : j.eqns[e].outputs) producer[static_cast<std::size_t>(o)] = static_cast<int>(e);
  // What an equation depends on: the dimension variables of its results'
  // types (which may be used by no operand), then its operands.
  std::vector<std::vector<int>> deps(j.eqns.size());
  for (std::size_t e = 0; e < j.eqns.size(); ++e) {
    for (int o : j.eqns[e].outputs)
      for (const JDim& d : j.types[static_cast<std::size_t>(o)].shape)
        if (!d.is_static()) deps[e].push_back(d.var);
    for (const Atom& a : j.eqns[e].inputs)
      if (a.is_var()) deps[e].push_back(a.var);
  }
  std::vector<char> state(j.eqns.size(), 0);  // 0 new, 1 on stack, 2 emitted
  std::vector<std::size_t> order;
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (eqn, next dependency)
  auto visit_eqn = [&](int p0) {
    if (p0 < 0 || state[static_cast<std::size_t>(p0)]) return;
    state[static_cast<std::size_t>(p0)] = 1;
    stack.emplace_back(static_cast<std::size_t>(p0), 0);
    while (!stack.empty()) {
      auto& [e, k] = stack.back();
      if (k < deps[e].size()) {
        int p = producer[static_cast<std::size_t>(deps[e][k++])];
        if (p >= 0 && !state[static_cast<std::size_t>(p)]) {
          state[static_cast<std::size_t>(p)] = 1;
          stack.emplace_back(static_cast<std::size_t>(p), 0);
        }
        continue;
      }
      state[e] = 2;
      order.push_back(e);
      stack.pop_back();
    }
  };
  auto visit = [&](int root) { visit_eqn(producer[static_cast<std::size_t>(root)]); };
  // Effects first (debug prints, loops that print), in recording order, each
  // after what it reads: they are never dropped and keep their program order
  // (JAX keeps effectful equations in trace order). Then the outputs.
  for (std::size_t e = 0; e < j.eqns.size(); ++e)
    if (has_effect(j.eqns[e])) visit_eqn(static_cast<int>(e));
  for (const Atom& a : j.outvars) {
    if (!a.is_var()) continue;
    for (const JDim& d : j.types[static_cast<std::size_t>(a.var)].shape)
      if (!d.is_static()) visit(d.var);
    visit(a.var);
  }
  std::vector<Eqn> eqns;
  eqns.reserve(order.size());
  for (std::size_t e : order) eqns.push_back(std::move(j.eqns[e]));
  j.eqns = std::move(eqns);

  // Constvars in order of first use; a constvar's dimension variables come
  // before it (Catalyst: `od:i64[] o:f64[od]`).
  std::vector<int> const_index(j.types.size(), -1);
  for (std::size_t i = 0; i < j.constvars.size(); ++i)
    const_index[static_cast<std::size_t>(j.constvars[i])] = static_cast<int>(i);
  std::vector<int> constvars;
  std::vector<Value> sources;
  std::function<void(int)> use = [&](int var) {
    int& ci = const_index[static_cast<std::size_t>(var)];
    if (ci < 0) return;
    const int idx = ci;
    ci = -1;
    for (const JDim& d : j.types[static_cast<std::size_t>(var)].shape)
      if (!d.is_static()) use(d.var);
    constvars.push_back(var);
    sources.push_back(const_sources[static_cast<std::size_t>(idx)]);
  };
  auto use_type = [&](int var) {
    for (const JDim& d : j.types[static_cast<std::size_t>(var)].shape)
      if (!d.is_static()) use(d.var);
  };
  for (int v : j.invars) use_type(v);
  for (const Eqn& q : j.eqns) {
    for (int o : q.outputs) use_type(o);
    for (const Atom& a : q.inputs)
      if (a.is_var()) use(a.var);
  }
  for (const Atom& a : j.outvars)
    if (a.is_var()) use(a.var);
  j.constvars = std::move(constvars);
  const_sources = std::move(sources);
}
#endif  // DYNSTAGE_IMPLEMENTATION

// ---------------------------------------------------------------------------
// bind: the one place where an operation either runs or is recorded.

inline bool any_tracer(const std::vector<Value>& in) {
  for (const auto& v : in)
    if (v.is_tracer()) return true;
  return false;
}

// Integer scalar arithmetic on dimensions stays a dimension: the result of
// `n + 1` for a dimension-valued n is the dimension n + 1, so two sizes
// computed alike are the same dimension (as in the Catalyst tracing note).
void propagate_dim(Prim prim, const std::vector<Aval>& in, std::vector<Aval>& out);

#ifdef DYNSTAGE_IMPLEMENTATION
void propagate_dim(Prim prim, const std::vector<Aval>& in, std::vector<Aval>& out) {
  if (out.size() != 1 || out[0].rank() != 0 || !is_index_dtype(out[0].dtype)) return;
  for (const Aval& a : in)
    if (!a.dim_value) return;
  auto d = [&](std::size_t i) { return *in[i].dim_value; };
  // The value wraps where dimension arithmetic would overflow (integer
  // arithmetic wraps, eager/kernels.hpp): such a value is no dimension, so it gets
  // none, instead of failing the trace with "integer overflow in dimension
  // arithmetic" (found by dynstage_fuzz: INT64_MAX - (-97) on i64 scalars).
  // Likewise a static value that does not fit the (i32) result.
  try {
    switch (prim_info(prim).dim) {
      case DimArith::add: out[0].dim_value = d(0) + d(1); break;
      case DimArith::sub: out[0].dim_value = d(0) - d(1); break;
      case DimArith::mul: out[0].dim_value = d(0) * d(1); break;
      case DimArith::neg: out[0].dim_value = -d(0); break;
      case DimArith::max: out[0].dim_value = max_dim(d(0), d(1)); break;
      case DimArith::min: out[0].dim_value = min_dim(d(0), d(1)); break;
      case DimArith::same: out[0].dim_value = d(0); break;
      case DimArith::div:  // truncate, where Dim's floordiv/mod round down: not
      case DimArith::rem:  // the same for negative operands, unchecked here
      case DimArith::none: break;
    }
  } catch (const ArithmeticError&) {
    out[0].dim_value.reset();
  }
  if (out[0].dim_value && out[0].dim_value->is_static() && out[0].dtype == DType::i32 &&
      (out[0].dim_value->value() < INT32_MIN || out[0].dim_value->value() > INT32_MAX))
    out[0].dim_value.reset();
}
#endif

// `stage` forces recording into the active trace even when every operand is
// concrete (zeros_like of a tracer is staged, as jnp.zeros_like is).
// Out of line: its definition reaches every rule and kernel, so it is
// compiled once per program (DYNSTAGE_IMPLEMENTATION), not in each user TU.
std::vector<Value> bind(Prim prim, const std::vector<Value>& in, const Params& params, bool stage = false);

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<Value> bind(Prim prim, const std::vector<Value>& in, const Params& params, bool stage) {
  if (!params_match(prim, params)) internal_error("bind: wrong params type for " + std::string(prim_name(prim)));
  if (!any_tracer(in) && !(stage && current_trace())) {
    std::vector<AnyArray> arrays;
    arrays.reserve(in.size());
    bool all_weak = !in.empty();
    for (const auto& v : in) {
      arrays.push_back(v.array);
      all_weak = all_weak && v.weak;
    }
    std::vector<AnyArray> outs = impl(prim, arrays, params);
    std::vector<Value> r;
    r.reserve(outs.size());
    bool weak_out = all_weak && prim_kind(prim) != Kind::compare && prim_kind(prim) != Kind::convert;
    for (auto& o : outs) r.push_back(Value{std::move(o), nullptr, weak_out});
    return r;
  }
  TraceState* t = current_trace();
  if (!t)
    fail<TypeError>("UnexpectedTracerError: " + std::string(prim_name(prim)) +
                    " was applied to a tracer outside of any trace; a tracer must not escape the function "
                    "being traced");
  // A scan's dynamic length is a dimension (the ys' leading one): an
  // interpreter rebinding a traced scan passes a value that may not be one
  // yet (a while loop's count that reverse mode computed).
  if (prim == Prim::scan && std::get<ScanParams>(params).length < 0 && !in.empty() && in.back().is_tracer() &&
      !in.back().aval().dim_value)
    (void)dim_of(in.back(), "scan");
  std::vector<Atom> atoms;
  std::vector<Aval> avals;
  atoms.reserve(in.size());
  avals.reserve(in.size());
  for (const auto& v : in) {
    atoms.push_back(t->atom_for(v));
    avals.push_back(v.aval());
  }
  std::vector<Aval> out_avals = abstract_eval(prim, avals, params);
  // A value whose static element count overflows int64 cannot exist (eager
  // fails to allocate it); staged, a fused kernel would loop a wrapped-around
  // number of times. Symbolic dimensions are checked when they are known.
  for (const Aval& a : out_avals) {
    std::int64_t n = 1;
    for (const Dim& d : a.shape)
      if (d.is_static() && d.value() == 0) n = 0;
    for (const Dim& d : a.shape)
      if (n != 0 && d.is_static() && __builtin_mul_overflow(n, d.value(), &n))
        fail<ShapeError>(std::string(prim_name(prim)) + ": the result shape " + shape_str(a.shape) +
                         " has more elements than an int64 can count");
  }
  propagate_dim(prim, avals, out_avals);
  Eqn e{prim, std::move(atoms), {}, params};
  std::vector<Value> outs;
  outs.reserve(out_avals.size());
  for (auto& a : out_avals) {
    int var = t->jaxpr.new_var(t->type_of_aval(a));
    e.outputs.push_back(var);
    std::optional<Dim> d = a.dtype == DType::i64 ? a.dim_value : std::nullopt;
    outs.push_back(t->make_tracer(var, std::move(a)));
    if (d) t->remember_dim(*d, outs.back());
  }
  t->jaxpr.eqns.push_back(std::move(e));
  return outs;
}
#endif  // DYNSTAGE_IMPLEMENTATION

// bind for a primitive with one output. Out of line, as the functions below
// that build Params: inline, they instantiate std::variant's members (its
// constructors, destructor and visitors) in every user file.
// (No `params = NoParams{}` default: a default argument is compiled where it
// is declared, and this one would instantiate those members everywhere.)
Value bind1(Prim prim, const std::vector<Value>& in, const Params& params, bool stage = false);
Value bind1(Prim prim, const std::vector<Value>& in);

#ifdef DYNSTAGE_IMPLEMENTATION
Value bind1(Prim prim, const std::vector<Value>& in) { return bind1(prim, in, NoParams{}); }

Value bind1(Prim prim, const std::vector<Value>& in, const Params& params, bool stage) {
  auto r = bind(prim, in, params, stage);
  if (r.size() != 1) internal_error("bind1: " + std::string(prim_name(prim)) + " has several outputs");
  return std::move(r[0]);
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
