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
#include <source_location>
#include <tuple>
#include <vector>

#include "jaxpr.hpp"
#include "rules.hpp"

namespace dyn::detail {

struct TraceState;

// What a tracer is: a variable of one trace, with its abstract value.
struct TracerNode {
  std::shared_ptr<TraceState> trace;
  int var = -1;
  Aval aval;
};
using TracerRef = std::shared_ptr<const TracerNode>;

// An operand or result of bind: a concrete array or a tracer.
struct Value {
  AnyArray array;    // when tracer == nullptr
  TracerRef tracer;  // when traced
  bool weak = false; // weakly typed (from a C++ scalar literal)

  bool is_tracer() const { return tracer != nullptr; }
  Aval aval() const { return tracer ? tracer->aval : aval_of(array, weak); }
  DType dtype() const { return tracer ? tracer->aval.dtype : array.dtype(); }
  int rank() const { return tracer ? tracer->aval.rank() : array.rank(); }
  Shape shape() const { return tracer ? tracer->aval.shape : to_shape(array.shape()); }
  TypeInfo type_info() const { return TypeInfo{dtype(), weak}; }
};

// A concrete rank-0 value.
inline Value scalar_value(const Scalar& s, bool weak) {
  Storage st = Storage::make(s.dtype, {}, false);
  visit_dtype(s.dtype, [&](auto t) {
    using T = decltype(t);
    *static_cast<T*>(st.data) = s.as<T>();
  });
  return Value{AnyArray(std::move(st)), nullptr, weak};
}

inline Scalar scalar_of(const AnyArray& a) {
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return Scalar::of<T>(*static_cast<const T*>(a.data()));
  });
}

inline std::vector<TraceState*>& trace_stack() {
  thread_local std::vector<TraceState*> stack;
  return stack;
}

struct TraceState : std::enable_shared_from_this<TraceState> {
  Jaxpr jaxpr;
  // Where each constvar's value comes from, parallel to jaxpr.constvars: a
  // concrete array (closed-over constant) or a tracer of an enclosing trace.
  std::vector<Value> const_sources;
  std::size_t level = 0;  // position in the trace stack
  bool active = true;
  // Constvar dedup: buffer identity (data pointer, dtype, shape) for arrays,
  // node identity for captured tracers.
  std::map<std::tuple<const void*, int, std::vector<std::int64_t>>, int> array_consts;
  std::map<const TracerNode*, int> captured_consts;

  Type type_of_aval(const Aval& a) {
    Type t{a.dtype, {}, a.weak};
    for (const Dim& d : a.shape) {
      if (!d.is_static())
        fail<InconclusiveDimensionOperation>("symbolic dimension " + d.to_string() +
                                             " cannot be used in this trace");
      t.shape.push_back(JDim{d.value(), -1});
    }
    return t;
  }

  Value make_tracer(int var, Aval aval) {
    bool weak = aval.weak;
    auto node = std::make_shared<TracerNode>(TracerNode{shared_from_this(), var, std::move(aval)});
    return Value{AnyArray(), std::move(node), weak};
  }

  Value new_arg(const Aval& a) {
    int v = jaxpr.new_var(type_of_aval(a));
    jaxpr.invars.push_back(v);
    return make_tracer(v, a);
  }

  int add_constvar(const Aval& a, Value source) {
    int v = jaxpr.new_var(type_of_aval(a));
    jaxpr.constvars.push_back(v);
    const_sources.push_back(std::move(source));
    return v;
  }

  // The atom standing for `v` in this trace.
  Atom atom_for(const Value& v);  // out of line (DYNSTAGE_IMPLEMENTATION)

  // A tracer for a concrete non-scalar array: its constvar.
  Value lift(const Value& v) {
    if (v.is_tracer() && v.tracer->trace.get() == this) return v;
    if (!v.is_tracer() && v.array.rank() == 0) return v;  // stays a literal
    Atom a = atom_for(v);
    Aval av = v.aval();
    return make_tracer(a.var, av);
  }
};

#ifdef DYNSTAGE_IMPLEMENTATION
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

inline TraceState* current_trace() {
  auto& s = trace_stack();
  return s.empty() ? nullptr : s.back();
}

// RAII: a new scope being traced, pushed on this thread's trace stack.
class TraceScope {
public:
  TraceScope() : state_(std::make_shared<TraceState>()) {
    state_->level = trace_stack().size();
    trace_stack().push_back(state_.get());
  }
  ~TraceScope() {
    state_->active = false;
    auto& s = trace_stack();
    if (!s.empty() && s.back() == state_.get()) s.pop_back();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  TraceState& state() { return *state_; }
  Value new_arg(const Aval& a) { return state_->new_arg(a); }

  // Close the scope over `outs`: concrete results are lifted (scalars become
  // literal outputs, arrays constvars). Returns the jaxpr in canonical order
  // (see order_jaxpr); const_sources() says where its constvars come from.
  std::shared_ptr<Jaxpr> finish(const std::vector<Value>& outs) {
    for (const Value& v : outs) state_->jaxpr.outvars.push_back(state_->atom_for(v));
    order_jaxpr(state_->jaxpr, state_->const_sources);
    return std::make_shared<Jaxpr>(state_->jaxpr);
  }

  // Canonical equation order. C++ leaves the evaluation order of function
  // arguments unspecified (g++ goes right to left), so the order in which
  // equations were recorded says little about the user's program:
  // dot(x + 1, y + 1) records `y + 1` first. We therefore emit equations in
  // post-order from the outputs, operands left to right, which is the order
  // Python evaluates the same expression in, and so the order JAX prints.
  //   1. DFS from each output (iteratively: chains may be long), visiting an
  //      equation's operands before the equation.
  //   2. Equations no output depends on are dropped (dead code).
  //   3. Constvars are renumbered in order of first use in the new order.
  static void order_jaxpr(Jaxpr& j, std::vector<Value>& const_sources);  // out of line

  const std::vector<Value>& const_sources() const { return state_->const_sources; }

private:
  std::shared_ptr<TraceState> state_;
};

#ifdef DYNSTAGE_IMPLEMENTATION
void TraceScope::order_jaxpr(Jaxpr& j, std::vector<Value>& const_sources) {
  std::vector<int> producer(j.types.size(), -1);
  for (std::size_t e = 0; e < j.eqns.size(); ++e)
    for (int o : j.eqns[e].outputs) producer[static_cast<std::size_t>(o)] = static_cast<int>(e);
  std::vector<char> state(j.eqns.size(), 0);  // 0 new, 1 on stack, 2 emitted
  std::vector<std::size_t> order;
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (eqn, next operand)
  auto visit = [&](const Atom& root) {
    if (!root.is_var()) return;
    int p0 = producer[static_cast<std::size_t>(root.var)];
    if (p0 < 0 || state[static_cast<std::size_t>(p0)]) return;
    state[static_cast<std::size_t>(p0)] = 1;
    stack.emplace_back(static_cast<std::size_t>(p0), 0);
    while (!stack.empty()) {
      auto& [e, k] = stack.back();
      const Eqn& q = j.eqns[e];
      if (k < q.inputs.size()) {
        const Atom& a = q.inputs[k++];
        if (!a.is_var()) continue;
        int p = producer[static_cast<std::size_t>(a.var)];
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
  for (const Atom& a : j.outvars) visit(a);
  std::vector<Eqn> eqns;
  eqns.reserve(order.size());
  for (std::size_t e : order) eqns.push_back(std::move(j.eqns[e]));
  j.eqns = std::move(eqns);

  std::vector<int> const_index(j.types.size(), -1);
  for (std::size_t i = 0; i < j.constvars.size(); ++i)
    const_index[static_cast<std::size_t>(j.constvars[i])] = static_cast<int>(i);
  std::vector<int> constvars;
  std::vector<Value> sources;
  auto use = [&](const Atom& a) {
    if (!a.is_var()) return;
    int& ci = const_index[static_cast<std::size_t>(a.var)];
    if (ci < 0) return;
    constvars.push_back(a.var);
    sources.push_back(const_sources[static_cast<std::size_t>(ci)]);
    ci = -1;
  };
  for (const Eqn& q : j.eqns)
    for (const Atom& a : q.inputs) use(a);
  for (const Atom& a : j.outvars) use(a);
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
  std::vector<Atom> atoms;
  std::vector<Aval> avals;
  atoms.reserve(in.size());
  avals.reserve(in.size());
  for (const auto& v : in) {
    atoms.push_back(t->atom_for(v));
    avals.push_back(v.aval());
  }
  std::vector<Aval> out_avals = abstract_eval(prim, avals, params);
  Eqn e{prim, std::move(atoms), {}, params};
  std::vector<Value> outs;
  outs.reserve(out_avals.size());
  for (auto& a : out_avals) {
    int var = t->jaxpr.new_var(t->type_of_aval(a));
    e.outputs.push_back(var);
    outs.push_back(t->make_tracer(var, std::move(a)));
  }
  t->jaxpr.eqns.push_back(std::move(e));
  return outs;
}
#endif  // DYNSTAGE_IMPLEMENTATION

inline Value bind1(Prim prim, const std::vector<Value>& in, const Params& params = NoParams{}, bool stage = false) {
  auto r = bind(prim, in, params, stage);
  if (r.size() != 1) internal_error("bind1: " + std::string(prim_name(prim)) + " has several outputs");
  return std::move(r[0]);
}

}  // namespace dyn::detail
