// dynstage: control flow's bind algorithm, its steps on a nested scope
// (compiled once per program; control_bind.hpp puts them together).
//
// One mechanism serves the three combinators (the Catalyst dynamic-arrays
// doc, "The algorithm"), with the caller's scope C and a body scope B:
//
//   1. deduce_input_type (C): how the carried values' dimensions enter B.
//      Shared (preserve_dimensions, and cond): B's arguments have the
//      caller's symbolic dimensions, so B captures each dynamic one as a
//      constant the first time its type mentions it, and B may mix carried
//      values with captured arrays of the same size. Unshared
//      (preserve_dimensions=false): each dynamic dimension of each carried
//      value is a fresh dimension variable of its own, an implicit argument
//      (`nimplicit`), so sizes may change from one iteration to the next but
//      never equal a captured constant's.
//   2. trace_nested (B): new argument tracers, the user's function, then the
//      implicit results that the output type needs (below), then finish():
//      the body jaxpr, its constants (outer tracers and closed-over arrays,
//      `body_nconsts`) and, in Catalyst's no-constant form, the constants as
//      leading invars.
//   3. The output type (B): for a loop, result k must have carry k's dtype
//      and rank; its dimensions must equal the carry's (shared), or each
//      dynamic one is returned as an implicit result (unshared: OutDBIdx).
//      For cond, the branches must agree on count, dtype and rank, and a
//      dynamic dimension that is not the same caller-known dimension in both
//      branches becomes an implicit output (a fresh dimension of C).
//   4. bind (C): one equation whose output types come from the body's
//      (control_abstract_eval: InDBIdx dimensions are the operands', OutDBIdx
//      ones fresh dimension variables of C); the caller gets the explicit
//      outputs back (collapse).
//
// Under preserve_dimensions=false, a carried dimension that the body never
// changes is not a loop variable in the end: the body is traced again with
// it shared, so the result keeps the caller's dimension (InDBIdx) rather
// than a new implicit result (OutDBIdx). Beyond Catalyst,
// LoopOptions::infer_dimensions traces a shared body first to see which
// carried dimensions change, then traces again with only those as loop
// variables (the others shared). See trace_loop and docs/control_flow.md.
#pragma once

#include "control.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include <functional>
namespace dyn::detail {

namespace control {

// The messages for carried results that do not match the carry, shared by
// the traced check (loop_results) and the eager loop (check_eager_results).
inline std::string carry_count_error(const std::string& op, std::size_t got, std::size_t carried) {
  return op + ": the body returned " + std::to_string(got) + " values but the loop carries " +
         std::to_string(carried) + "; return the carried values in order (one bare, several as a std::tuple)";
}
// A body result of a wider dtype than the carry (above it in JAX's promotion
// lattice, e.g. bool < i32 < i64 < f32 < f64) is the body promoting the carry, as `acc + 0.5`
// does to an init value of 0: the init value is what to change, not the
// body's result (astype back would truncate). A narrower one (astype<float>
// of an f64 carry) is the body's to undo. The first message follows JAX's
// _check_carry_type: the rule, the difference by position, the fix.
inline std::string carry_dtype_error(const std::string& op, std::size_t k, const Aval& got, const Aval& want) {
  const std::string pos = "#" + std::to_string(k);
  if (got.dtype != want.dtype && promotes_to(want.dtype, got.dtype)) {
    const std::string to = std::string(dtype_name(got.dtype));
    std::string example = "dyn::astype<" + std::string(dtype_cpp_name(got.dtype)) + ">(init)";
    if (want.rank() == 0) {
      switch (got.dtype) {
        case DType::f64: example = "0.0"; break;
        case DType::f32: example = "0.0f"; break;
        case DType::i64: example = "std::int64_t{0}"; break;
        case DType::i32: example = "0"; break;
        case DType::i8:
        case DType::i16:
        case DType::u8:
        case DType::u16:
        case DType::u32:
        case DType::u64:
        case DType::c64:
        case DType::c128:
        case DType::bool_: break;
      }
    }
    return op + ": a carried value keeps the dtype of its init value, but they differ: carry input " + pos +
           " has type " + aval_str(want) + " but body output " + pos + " has type " + aval_str(got) +
           ", so the dtypes do not match; change the init value to " + to + " (e.g. " + example + ")";
  }
  return op + ": body output " + pos + " has type " + aval_str(got) + " but carry input " + pos + " has type " +
         aval_str(want) + "; return the same dtype (e.g. astype<" + std::string(dtype_cpp_name(want.dtype)) + ">)";
}

// Whether trace `t` (or an enclosing one) can compute dimension `d`: each of
// its variables is held by some i64[] value there.
inline bool knows(TraceState& t, const Dim& d) {
  if (d.is_static()) return true;
  for (const std::string& name : dim_vars(d)) {
    const Dim v = t.sym_scope().var(name);
    bool found = false;
    for (TraceState* s = &t; s && !found; s = s->parent) found = s->dims.count(v.expr()) > 0;
    if (!found) return false;
  }
  return true;
}

// Step 1, deduceInputType: how the explicit arguments enter the body.
struct NestedInput {
  std::vector<Aval> avals;                // the explicit arguments, as the body sees them
  std::vector<Dim> implicit;              // the body's dimension of each implicit argument
  std::vector<Value> implicit_operands;   // the caller's value of each
  std::vector<std::vector<int>> slot;     // [k][j]: implicit argument of dimension j of argument k, or -1
};

// `vary[k][j]` (or every dynamic dimension when `vary` is null and
// `unshared`) becomes an implicit argument: a fresh dimension variable of the
// body, the loop variable of that size. The others keep the caller's
// dimensions, which the body captures as constants when it uses them.
inline NestedInput deduce_input_type(TraceState& caller, const std::vector<Value>& args, bool unshared,
                                     const std::vector<std::vector<char>>* vary = nullptr) {
  NestedInput in;
  for (std::size_t k = 0; k < args.size(); ++k) {
    Aval a = args[k].aval();
    a.weak = false;
    a.dim_value.reset();  // a carried integer is a new value in the body
    in.slot.emplace_back(static_cast<std::size_t>(a.rank()), -1);
    for (std::size_t j = 0; j < a.shape.size(); ++j) {
      if (a.shape[j].is_static()) continue;
      const bool v = vary ? (*vary)[k][j] != 0 : unshared;
      if (!v) continue;
      in.slot[k][j] = static_cast<int>(in.implicit.size());
      in.implicit_operands.push_back(caller.dim_operand(a.shape[j]));
      a.shape[j] = caller.new_dim_var();
      in.implicit.push_back(a.shape[j]);
    }
    in.avals.push_back(std::move(a));
  }
  return in;
}

// Step 2, abstractEval: a traced body in its own scope.
struct NestedBody {
  std::shared_ptr<Jaxpr> jaxpr;
  std::vector<Value> consts;    // the values of its constants, in the caller (or further out)
  std::vector<Aval> results;    // its explicit results, as the body sees them
  std::size_t nimplicit = 0;    // implicit results before them
};

// Given the body's explicit results (inside its scope), the implicit results
// to return before them; it checks the results against the output rule.
using ImplicitFn = std::function<std::vector<Value>(TraceState& body, const std::vector<Value>& results)>;

inline NestedBody trace_nested(const NestedInput& in, bool with_index, const NestedFn& fn, const ImplicitFn& implicit) {
  TraceScope scope;
  TraceState& b = scope.state();
  for (const Dim& d : in.implicit) b.new_dim_arg(d);
  std::vector<Value> args;
  if (with_index) args.push_back(b.new_arg(Aval{DType::i64, {}, false, std::nullopt}));
  for (const Aval& a : in.avals) args.push_back(b.new_arg(a));
  std::vector<Value> res = fn(args);
  std::vector<Value> all = implicit(b, res);
  NestedBody nb;
  nb.nimplicit = all.size();
  for (const Value& r : res) nb.results.push_back(r.aval());
  all.insert(all.end(), res.begin(), res.end());
  nb.jaxpr = scope.finish(all, /*implicit_results=*/false);
  if (nb.nimplicit > 0) {
    nb.jaxpr->out_explicit.assign(nb.nimplicit, false);
    nb.jaxpr->out_explicit.resize(all.size(), true);
  }
  nb.consts = scope.const_sources();
  return nb;
}

// Catalyst's no-constant form: the constants become the leading invars.
inline void to_no_const_form(Jaxpr& j) {
  if (!j.in_explicit.empty()) j.in_explicit.insert(j.in_explicit.begin(), j.constvars.size(), true);
  j.invars.insert(j.invars.begin(), j.constvars.begin(), j.constvars.end());
  j.constvars.clear();
}

// Step 3 for loops: result k must have carry k's dtype and rank, and the
// carry's dimensions except where the dimension is a loop variable, whose
// new value is returned as an implicit result. With `changed`, a shared
// dimension that differs is recorded there instead of raising (the first
// traces of infer_dimensions).
inline std::vector<Value> loop_results(const char* what, const NestedInput& in, TraceState& b,
                                       const std::vector<Value>& res, bool preserve,
                                       std::vector<std::vector<char>>* changed = nullptr) {
  const std::string op = std::string(what) + "()";
  if (res.size() != in.avals.size()) fail<TypeError>(carry_count_error(op, res.size(), in.avals.size()));
  std::vector<Value> imp(in.implicit.size());
  for (std::size_t k = 0; k < res.size(); ++k) {
    const Aval r = res[k].aval();
    const Aval& a = in.avals[k];
    const std::string pos = "#" + std::to_string(k);
    if (r.dtype != a.dtype) fail<TypeError>(carry_dtype_error(op, k, r, a));
    if (r.rank() != a.rank())
      fail<TypeError>(op + ": body output " + pos + " has type " + aval_str(r) + " but carry input " + pos +
                      " has type " + aval_str(a) + "; a carried value keeps its rank (reshape it back)");
    for (std::size_t j = 0; j < r.shape.size(); ++j) {
      const int s = in.slot[k][j];
      if (s >= 0) {
        imp[static_cast<std::size_t>(s)] = b.dim_operand(r.shape[j]);
        continue;
      }
      if (r.shape[j] == a.shape[j]) continue;
      if (changed) {
        (*changed)[k][j] = 1;
        continue;
      }
      const std::string types = "body output " + pos + " has type " + aval_str(r) + " but carry input " + pos +
                                " has type " + aval_str(a) + " (dimension " + std::to_string(j) + ": " +
                                r.shape[j].to_string() + " vs " + a.shape[j].to_string() + ")";
      if (a.shape[j].is_static())
        fail<TypeError>(op + ": a static carried dimension cannot change; " + types +
                        "; start from a value whose size is dynamic (a dyn::Dim) and pass "
                        "{.preserve_dimensions = false}");
      if (preserve)
        fail<TypeError>(op + ": with preserve_dimensions=true the carried values keep their dimensions; " + types +
                        "; keep the size, or pass {.preserve_dimensions = false} so that each carried dimension "
                        "is a loop variable (or {.infer_dimensions = true})");
      fail<TypeError>(op + ": " + types + "; the dimension is shared with the body's constants, so it cannot "
                      "change; pass {.infer_dimensions = true}");
    }
  }
  return imp;
}

// A bound or predicate as an i64[] (or bool[]) scalar of the caller.
inline Value as_i64(const Value& v, const char* what, const char* name) {
  if (v.rank() != 0 || !is_integer(v.dtype()))
    fail<TypeError>(std::string(what) + "(): the " + name + " must be an integer scalar, got " + aval_str(v.aval()));
  if (v.dtype() == DType::i64) return v;
  return bind1(Prim::convert_element_type, {v}, ConvertParams{DType::i64, false});
}

inline TraceState& caller_trace(const char* what) {
  TraceState* c = current_trace();
  if (!c)
    fail<TypeError>(std::string("UnexpectedTracerError: ") + what +
                    "() got a tracer outside of any trace; a tracer must not escape the function being traced");
  c->sym_scope();  // the body's fresh dimensions and the caller's share one scope
  return *c;
}

// A shape error inside a body whose dimensions are loop variables usually
// means a carried value met a captured one (the last example of the
// Catalyst tracing note): say so, and how to fix it.
inline void explain_loop_variables(const ShapeError& e, const NestedInput& in) {
  std::string m = e.what();
  std::string vars;
  for (const Dim& d : in.implicit)
    if (m.find(d.to_string()) != std::string::npos) vars += (vars.empty() ? "" : ", ") + d.to_string();
  if (vars.empty()) return;
  std::size_t at = m.find("\nThe error occurred while tracing");
  at = m.rfind(" (at ", at == std::string::npos ? m.size() : at);
  if (at == std::string::npos) at = m.size();
  m.insert(at, ". With preserve_dimensions=false each carried dimension is a loop variable of its own (" + vars +
                   ") and never equals a captured value's dimension; pass {.preserve_dimensions = true} if the "
                   "carried sizes do not change, or {.infer_dimensions = true} to make loop variables of only "
                   "the sizes that change");
  throw ShapeError(m);
}

// ---------------------------------------------------------------------------
// A symbolic evaluation of a body's integer scalar equations, given the
// dimensions its invars stand for (nullopt: unknown). Step 4's output types
// use it, so that an output dimension the body computes from the operands'
// dimensions (n * n) is that expression in the caller; so does the search
// for loop-invariant loop variables below.

inline std::optional<Dim> eval_dim(const Jaxpr& j, int var, const std::vector<std::optional<Dim>>& invar_dims,
                                   int depth = 0) {
  if (depth > 64) return std::nullopt;
  for (std::size_t p = 0; p < j.invars.size(); ++p)
    if (j.invars[p] == var) return invar_dims[p];
  for (auto e = j.eqns.rbegin(); e != j.eqns.rend(); ++e) {
    if (e->outputs.size() != 1 || e->outputs[0] != var) continue;
    auto arg = [&](std::size_t i) -> std::optional<Dim> {
      const Atom& a = e->inputs.at(i);
      if (!a.is_var()) return is_index_dtype(a.lit.dtype) ? std::optional<Dim>(Dim(a.lit.i)) : std::nullopt;
      return eval_dim(j, a.var, invar_dims, depth + 1);
    };
    auto both = [&](auto&& f) -> std::optional<Dim> {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      return f(*a, *b);
    };
    auto nonneg = [](const Dim& d) {
      try {
        return d >= Dim(0);
      } catch (const InconclusiveDimensionOperation&) {
        return false;
      }
    };
    switch (prim_info(e->prim).dim) {
      case DimArith::add: return both([](const Dim& a, const Dim& b) { return a + b; });
      case DimArith::sub: return both([](const Dim& a, const Dim& b) { return a - b; });
      case DimArith::mul: return both([](const Dim& a, const Dim& b) { return a * b; });
      case DimArith::max: return both([](const Dim& a, const Dim& b) { return max_dim(a, b); });
      case DimArith::min: return both([](const Dim& a, const Dim& b) { return min_dim(a, b); });
      case DimArith::neg: {
        auto a = arg(0);
        return a ? std::optional<Dim>(-*a) : std::nullopt;
      }
      case DimArith::same:
        // a conversion between i32 and i64 keeps the dimension; to another
        // integer dtype it wraps at another width, so it is none
        return is_index_dtype(j.type_of(e->inputs[0]).dtype) &&
                       is_index_dtype(j.types[static_cast<std::size_t>(e->outputs[0])].dtype)
                   ? arg(0)
                   : std::nullopt;
      case DimArith::div:
      case DimArith::rem: {
        auto a = arg(0), b = arg(1);
        if (!a || !b || !nonneg(*a) || !nonneg(*b - Dim(1))) return std::nullopt;
        return prim_info(e->prim).dim == DimArith::div ? floordiv(*a, *b) : mod(*a, *b);
      }
      case DimArith::none: return std::nullopt;
    }
  }
  return std::nullopt;
}

// A loop body traced under `opts`: the input type and the body (and a while
// loop's condition).
//   - preserve_dimensions=true: one trace, every carried dimension shared.
//   - preserve_dimensions=false: first traced with every dynamic carried
//     dimension a loop variable (Catalyst); the loop variables the body
//     provably never changes (invariant_loop_variables) are then shared, and
//     the body traced again as below, so that those results keep the caller's
//     dimension (InDBIdx) instead of coming back as implicit results.
//   - infer_dimensions: first traced with every carried dimension shared.
// Then, while some shared dimension changes in the body's results, it becomes
// a loop variable and the body is traced again (at most one more trace per
// dimension).
struct LoopTrace {
  NestedInput in;
  NestedBody body;
  std::optional<NestedBody> cond;
};

// After a trace with every dynamic carried dimension a loop variable: which
// loop variables may change from one iteration to the next. The others
// always hold their initial value, the caller's dimension: by induction, the
// body returns for them, given the caller's values for its constants and
// their own initial values, exactly those initial values. This covers
//   - a dimension returned unchanged at its own place (`return a`),
//   - a captured value of the same size returned instead (`return x`, x
//     of a's initial size; of another size, the result's size depends on
//     the trip count, so it stays a loop variable),
//   - sizes computed from such dimensions only (two carried values of
//     initial sizes n and 2 * n, the body returning (a, concatenate(a, a))),
//   - and two values of equal initial size swapped.
// Found as the greatest fixpoint: every loop variable is assumed invariant,
// and one whose new value does not evaluate to its initial value under that
// assumption is dropped, until none is. Returns true if any is invariant;
// `vary` (carry k, dimension j) marks the others.
inline bool invariant_loop_variables(const LoopTrace& t, const std::vector<Value>& init,
                                     std::vector<std::vector<char>>& vary) {
  const std::size_t nv = t.in.implicit.size(), nc = t.body.consts.size();
  if (nv == 0) return false;
  std::vector<Dim> start(nv);  // each loop variable's initial value
  for (std::size_t k = 0; k < t.in.slot.size(); ++k)
    for (std::size_t j = 0; j < t.in.slot[k].size(); ++j)
      if (const int s = t.in.slot[k][j]; s >= 0) start[static_cast<std::size_t>(s)] = init[k].shape()[j];
  Jaxpr body = *t.body.jaxpr;  // invars: consts, loop variables, [index], carried; outvars: loop variables first
  to_no_const_form(body);
  std::vector<char> invariant(nv, 1);
  for (bool dropped = true; dropped;) {
    dropped = false;
    std::vector<std::optional<Dim>> invar_dims(body.invars.size());
    for (std::size_t p = 0; p < nc; ++p) invar_dims[p] = t.body.consts[p].aval().dim_value;
    for (std::size_t s = 0; s < nv; ++s)
      if (invariant[s]) invar_dims[nc + s] = start[s];
    for (std::size_t s = 0; s < nv; ++s) {
      if (!invariant[s]) continue;
      const Atom& o = body.outvars[s];
      const std::optional<Dim> next = o.is_var() ? eval_dim(body, o.var, invar_dims) : std::optional<Dim>(Dim(o.lit.i));
      if (!next || *next != start[s]) {
        invariant[s] = 0;
        dropped = true;
      }
    }
  }
  bool any = false;
  for (std::size_t k = 0; k < t.in.slot.size(); ++k)
    for (std::size_t j = 0; j < t.in.slot[k].size(); ++j)
      if (const int s = t.in.slot[k][j]; s >= 0) {
        vary[k][j] = !invariant[static_cast<std::size_t>(s)];
        any = any || invariant[static_cast<std::size_t>(s)];
      }
  return any;
}

inline LoopTrace trace_loop(const char* what, TraceState& caller, const std::vector<Value>& init,
                            const NestedFn* cond_fn, const NestedFn& body_fn, bool with_index,
                            const LoopOptions& opts) {
  auto cond_check = [&](TraceState&, const std::vector<Value>& res) {
    if (res.size() != 1 || res[0].rank() != 0 || res[0].dtype() != DType::bool_)
      fail<TypeError>(std::string(what) + "(): the condition must return one scalar bool, got " +
                      (res.size() == 1 ? aval_str(res[0].aval()) : std::to_string(res.size()) + " values") +
                      "; compare (e.g. dyn::dim_value(x.shape(0)) < 100)");
    return std::vector<Value>{};
  };
  auto trace_with = [&](NestedInput in, bool preserve, std::vector<std::vector<char>>* changed) {
    LoopTrace t{std::move(in), {}, std::nullopt};
    try {
      if (cond_fn) t.cond = trace_nested(t.in, false, *cond_fn, cond_check);
      t.body = trace_nested(t.in, with_index, body_fn, [&](TraceState& b, const std::vector<Value>& res) {
        return loop_results(what, t.in, b, res, preserve, changed);
      });
    } catch (const ShapeError& e) {
      explain_loop_variables(e, t.in);
      throw;
    }
    return t;
  };
  if (!opts.infer_dimensions && opts.preserve_dimensions)
    return trace_with(deduce_input_type(caller, init, false), true, nullptr);
  std::vector<std::vector<char>> vary;
  for (const Value& v : init) vary.emplace_back(static_cast<std::size_t>(v.rank()), 0);
  if (!opts.infer_dimensions) {
    LoopTrace t = trace_with(deduce_input_type(caller, init, true), false, nullptr);
    if (!invariant_loop_variables(t, init, vary)) return t;
  }
  for (;;) {
    std::vector<std::vector<char>> changed = vary;
    for (auto& c : changed) std::fill(c.begin(), c.end(), 0);
    LoopTrace t = trace_with(deduce_input_type(caller, init, false, &vary), false, &changed);
    bool more = false;
    for (std::size_t k = 0; k < vary.size(); ++k)
      for (std::size_t j = 0; j < vary[k].size(); ++j)
        if (changed[k][j] && !vary[k][j]) vary[k][j] = more = true;
    if (!more) return t;
    // A changed static dimension cannot become a loop variable: report it.
    for (std::size_t k = 0; k < vary.size(); ++k)
      for (std::size_t j = 0; j < vary[k].size(); ++j)
        if (vary[k][j] && init[k].shape()[j].is_static())
          return trace_with(deduce_input_type(caller, init, false, &vary), false, nullptr);
  }
}

// The output types of a loop: the carry's types, where a loop variable's
// dimension is the matching implicit output's (fresh) and a constant's the
// operand's. body invars: consts (operands `const_operand + p`), implicit,
// [index], carried.
inline std::vector<Aval> loop_out_avals(const char* what, const Jaxpr& body, std::size_t nconsts,
                                        std::size_t const_operand, std::size_t nimplicit, bool with_index,
                                        const std::vector<Aval>& in) {
  TraceState* t = current_trace();
  if (!t) internal_error(std::string(what) + ": output types outside of a trace");
  const std::size_t first_carried = nconsts + nimplicit + (with_index ? 1 : 0);
  if (body.invars.size() < first_carried || body.outvars.size() != nimplicit + body.invars.size() - first_carried)
    internal_error(std::string(what) + ": the body's invars and outvars do not match its params");
  std::vector<Aval> out;
  std::vector<std::optional<Dim>> invar_dims(body.invars.size());
  for (std::size_t p = 0; p < nconsts; ++p) invar_dims[p] = in.at(const_operand + p).dim_value;
  for (std::size_t s = 0; s < nimplicit; ++s) {
    Dim d = t->new_dim_var();
    invar_dims[nconsts + s] = d;
    out.push_back(Aval{DType::i64, {}, false, d});
  }
  for (std::size_t p = first_carried; p < body.invars.size(); ++p) {
    const Type& ty = body.types[static_cast<std::size_t>(body.invars[p])];
    Aval a{ty.dtype, {}, false, std::nullopt};
    for (const JDim& d : ty.shape) {
      if (d.is_static()) {
        a.shape.push_back(Dim(d.value));
        continue;
      }
      std::optional<Dim> v = eval_dim(body, d.var, invar_dims);
      if (!v) internal_error(std::string(what) + ": a carried dimension is neither a constant nor a loop variable");
      a.shape.push_back(*v);
    }
    out.push_back(std::move(a));
  }
  return out;
}

inline void check_operands(const char* what, const Jaxpr& body, const std::vector<Aval>& in,
                           const std::function<std::size_t(std::size_t)>& operand_of) {
  for (std::size_t p = 0; p < body.invars.size(); ++p) {
    const Type& ty = body.types[static_cast<std::size_t>(body.invars[p])];
    const std::size_t o = operand_of(p);
    if (o >= in.size()) internal_error(std::string(what) + ": fewer operands than the body's inputs");
    const Aval& a = in[o];
    bool ok = a.dtype == ty.dtype && a.rank() == ty.rank();
    for (std::size_t j = 0; ok && j < ty.shape.size(); ++j)
      if (ty.shape[j].is_static()) ok = a.shape[j].is_static() && a.shape[j].value() == ty.shape[j].value;
    if (!ok)
      fail<TypeError>(std::string(what) + ": operand #" + std::to_string(o) + " has type " + aval_str(a) +
                      " but the body's input #" + std::to_string(p) + " has type " + type_str(body, ty));
  }
}

}  // namespace control

}  // namespace dyn::detail
#endif  // DYNSTAGE_IMPLEMENTATION
