// dynstage: the IR verifier, check_jaxpr (docs/jaxpr.md "Checking a jaxpr").
//
// The same loop as every other interpreter (Autodidax's typecheck_jaxpr):
// bind constvars and invars in an environment of abstract values, then for
// each equation read its operands' types, apply the primitive's rule
// (abstract_eval, the table in shape_rules.hpp and control_bind.hpp) and compare
// what it gives with the output types the equation records. The verifier
// restates no rule; it checks what the rules cannot see:
//
//   * scoping: each variable is bound once (constvar, invar or equation
//     output), and every use comes after its binding in the same jaxpr
//     (a nested body sees only its own invars: no capture of outer ones);
//   * types: every dimension of a type is a non-negative integer or an i64[]
//     variable bound before it; the ClosedJaxpr's constants have the
//     constvars' types; literals hold values of their dtype;
//   * params: the primitive's params type; control-flow params' layouts
//     (params.hpp, above ForLoopParams), with each body checked recursively,
//     its input types against the operands (de Bruijn: a body dimension that
//     refers to body input q is operand q's value) and, for loops, the body's
//     outputs against its carried inputs (the next iteration's types);
//   * outputs: a top-level output's dimensions are inputs, constants or
//     earlier outputs (what a caller can know the size from).
//
// Dimensions. A variable's type refers to i64[] variables, and shape rules
// compute on Dims, so the checker gives every integer scalar variable a Dim:
// the expression it was computed as, when tracing's dimension propagation
// says so (trace.hpp's propagate_dim: `c = add b 1` holds b + 1; and div/rem
// of non-negative sizes, which is how a trace materialises floordiv/mod),
// else a fresh symbolic variable of its own. A dimension that refers to
// variable v is then v's Dim, and two types agree iff their Dims are equal as
// symbolic expressions, exactly as when the program was traced. A body's
// constants take the Dims of the operands that supply them; its carried and
// implicit inputs are fresh, as in the trace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../eager/interpret.hpp"
#include "jaxpr.hpp"
#include "print.hpp"
#include "rules.hpp"
#include "../shape/symbolic_spec.hpp"
#include "../trace/trace.hpp"

namespace dyn {

// Verifies `cj` (above); throws dyn::TypeError naming the equation (its index,
// its text, and the enclosing equations of a nested body) and the difference:
//   check_jaxpr: equation #0 `b:f64[3] = neg a`: output #0 has type f64[3]
//   but the rule gives f32[3]
// Each i64[] input is an independent dimension >= 1: a jaxpr whose validity
// depends on relations between its dimension inputs (polymorphic constraints,
// a `b + 15` shape sliced at 15) is checked with them only after tracing.
void check_jaxpr(const ClosedJaxpr& cj);

namespace detail {

// check_jaxpr knowing the dimensions of the leading invars (a polymorphic
// trace's implicit dimension arguments, Dims of any scope) and the symbolic
// constraints they were traced under.
void check_jaxpr(const ClosedJaxpr& cj, const std::vector<std::string>& constraints,
                 const std::vector<Dim>& invar_dims);

// Whether every trace verifies its result (make_jaxpr, jit's traces): the
// environment variable DYNSTAGE_CHECK_JAXPR, read once (set and not "0").
// The test executables turn it on (tests/meson.build, tests/main.cpp).
bool check_traces_enabled();

// The hook at the end of a trace (api.hpp's trace_with): when enabled, a
// failed check is an InternalError naming the check and showing the jaxpr.
void check_traced(const ClosedJaxpr& cj, const std::vector<std::string>& constraints,
                  const std::vector<Dim>& invar_dims);

}  // namespace detail
}  // namespace dyn

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>
#include <variant>

namespace dyn {
namespace detail {
namespace verify {

struct VarInfo {
  bool bound = false;
  Aval aval;  // integer scalars: dim_value always set
};
using Env = std::vector<VarInfo>;

// ---------------------------------------------------------------------------
// Structure first: indices in range, params of the primitive's type, bodies
// present. After this pass the printer can name every variable, so the
// messages of the main pass show JAX's names.
inline std::string structural_error(const std::string& where, const std::string& what) {
  return "check_jaxpr: " + where + ": " + what;
}

// How messages name branch b of a cond: by its printed param.
inline std::string cond_branch_name(const CondParams& p, std::size_t b) {
  return std::string(p.indexed ? "branches[" : "branch_jaxprs[") + std::to_string(b) + "]";
}

inline void check_structure(const Jaxpr& j, const std::string& in) {
  const auto n = static_cast<int>(j.types.size());
  auto var_ok = [&](int v) { return v >= 0 && v < n; };
  auto range = [&](const std::string& where, const std::string& what, int v) {
    if (!var_ok(v))
      throw TypeError(structural_error(where + in, what + " is variable " + std::to_string(v) +
                                                       ", outside the jaxpr's table of " + std::to_string(n) +
                                                       " variables"));
  };
  for (std::size_t v = 0; v < j.types.size(); ++v)
    for (std::size_t d = 0; d < j.types[v].shape.size(); ++d)
      if (!j.types[v].shape[d].is_static())
        range("the type of variable " + std::to_string(v), "dimension " + std::to_string(d), j.types[v].shape[d].var);
  for (std::size_t i = 0; i < j.constvars.size(); ++i) range("constvar #" + std::to_string(i), "it", j.constvars[i]);
  for (std::size_t i = 0; i < j.invars.size(); ++i) range("input #" + std::to_string(i), "it", j.invars[i]);
  for (std::size_t i = 0; i < j.outvars.size(); ++i)
    if (j.outvars[i].is_var()) range("output #" + std::to_string(i), "it", j.outvars[i].var);
  if (!j.in_explicit.empty() && j.in_explicit.size() != j.invars.size())
    throw TypeError(structural_error("the jaxpr" + in, "in_explicit has " + std::to_string(j.in_explicit.size()) +
                                                           " entries for " + std::to_string(j.invars.size()) +
                                                           " inputs"));
  if (!j.out_explicit.empty() && j.out_explicit.size() != j.outvars.size())
    throw TypeError(structural_error("the jaxpr" + in, "out_explicit has " + std::to_string(j.out_explicit.size()) +
                                                           " entries for " + std::to_string(j.outvars.size()) +
                                                           " outputs"));
  for (std::size_t k = 0; k < j.eqns.size(); ++k) {
    const Eqn& e = j.eqns[k];
    const std::string where = "equation #" + std::to_string(k) + " (" + std::string(prim_name(e.prim)) + ")";
    for (std::size_t i = 0; i < e.inputs.size(); ++i)
      if (e.inputs[i].is_var()) range(where, "operand #" + std::to_string(i), e.inputs[i].var);
    for (std::size_t i = 0; i < e.outputs.size(); ++i) range(where, "output #" + std::to_string(i), e.outputs[i]);
    if (!params_match(e.prim, e.params))
      throw TypeError(structural_error(where + in, "its params are not those of " + std::string(prim_name(e.prim))));
    auto body = [&](const std::shared_ptr<const Jaxpr>& b, const std::string& name) {
      if (!b) throw TypeError(structural_error(where + in, "its " + name + " is null"));
      check_structure(*b, " in the " + name + " of " + where + in);
    };
    if (const auto* p = std::get_if<ForLoopParams>(&e.params)) body(p->body_jaxpr, "body_jaxpr");
    if (const auto* p = std::get_if<ScanParams>(&e.params)) body(p->jaxpr, "jaxpr");
    if (const auto* p = std::get_if<CheckpointParams>(&e.params)) body(p->jaxpr, "jaxpr");
    if (const auto* p = std::get_if<WhileLoopParams>(&e.params)) {
      body(p->cond_jaxpr, "cond_jaxpr");
      body(p->body_jaxpr, "body_jaxpr");
    }
    if (const auto* p = std::get_if<CondParams>(&e.params)) {
      if (!p->indexed && p->branches.size() != 2)
        throw TypeError(structural_error(where + in, "it has " + std::to_string(p->branches.size()) +
                                                         " branch_jaxprs; cond takes two (then, else)"));
      if (p->branches.empty())
        throw TypeError(structural_error(where + in, "it has no branches; an indexed cond takes one or more"));
      for (std::size_t b = 0; b < p->branches.size(); ++b)
        body(p->branches[b], cond_branch_name(*p, b));
    }
  }
}

// ---------------------------------------------------------------------------
// The main pass.

// Where a defect is: equation #eqn (or the jaxpr itself when eqn == kNone),
// inside the nested jaxprs on the checker's frame stack. Rendered only on
// failure: the check itself never prints.
inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

class Checker {
public:
  Checker(const Jaxpr& top, std::shared_ptr<SymbolicScope> scope) : top_(top), scope_(std::move(scope)) {}

  // Checks `j` with the Dims `seeds[i]` for its integer scalar invars (fresh
  // where absent) and, at the top level, the values of its constvars.
  Env check(const Jaxpr& j, const std::vector<AnyArray>* consts, const std::vector<std::optional<Dim>>& seeds,
            bool top) {
    Env env(j.types.size());
    if (consts && consts->size() != j.constvars.size())
      fail(j, kNone, "the ClosedJaxpr has " + std::to_string(consts->size()) + " constants for " +
                         std::to_string(j.constvars.size()) + " constvars");
    if (!consts && !j.constvars.empty())
      fail(j, kNone, "a nested jaxpr has " + std::to_string(j.constvars.size()) +
                         " constvars; a body takes its constants as leading inputs (prims.hpp)");
    for (std::size_t i = 0; i < j.constvars.size(); ++i) {
      const int v = j.constvars[i];
      const Aval a = bind(j, env, v, kNone, "constvar #" + std::to_string(i), std::nullopt);
      const AnyArray& c = (*consts)[i];
      bool ok = c.dtype() == a.dtype && c.rank() == a.rank();
      for (std::size_t d = 0; ok && d < a.shape.size(); ++d)
        ok = a.shape[d].is_static() && a.shape[d].value() == c.shape()[d];
      if (!ok)
        fail(j, kNone, "constvar #" + std::to_string(i) + " (" + name(j, v) + ":" + type_of(j, var_type(j, v)) +
                           ") is given a constant of type " + array_type_str(c));
      // A concrete integer scalar is the dimension of its value, as in a trace.
      if (auto d = aval_of(c).dim_value) env[static_cast<std::size_t>(v)].aval.dim_value = d;
    }
    for (std::size_t i = 0; i < j.invars.size(); ++i)
      bind(j, env, j.invars[i], kNone, "input #" + std::to_string(i), i < seeds.size() ? seeds[i] : std::nullopt);
    for (std::size_t k = 0; k < j.eqns.size(); ++k) check_eqn(j, env, k);
    for (std::size_t i = 0; i < j.outvars.size(); ++i) {
      const Atom& a = j.outvars[i];
      const std::string what = "output #" + std::to_string(i);
      if (!a.is_var()) {
        check_literal(j, kNone, what, a);
        continue;
      }
      if (!env[static_cast<std::size_t>(a.var)].bound)
        fail(j, kNone, what + " (" + name(j, a.var) + ") is not bound in this jaxpr" + unbound_hint());
      if (!top) continue;
      // What a caller allocates the result from: inputs, constants and the
      // results before it (the implicit results come first).
      for (const JDim& d : var_type(j, a.var).shape) {
        if (d.is_static() || is_input_or_const(j, d.var)) continue;
        bool earlier = false;
        for (std::size_t q = 0; q < i && !earlier; ++q) earlier = j.outvars[q].is_var() && j.outvars[q].var == d.var;
        if (!earlier)
          fail(j, kNone, what + " (" + name(j, a.var) + ":" + type_of(j, var_type(j, a.var)) + ") has the dimension " +
                             name(j, d.var) + ", which is neither an input, a constant nor an earlier output; "
                             "return it before (implicit outputs come first)");
      }
    }
    return env;
  }

private:
  const Jaxpr& top_;
  std::shared_ptr<SymbolicScope> scope_;
  std::vector<std::pair<const Jaxpr*, int>> symbols_;  // "_v<i>" stands for variable symbols_[i]
  std::vector<std::string> frames_;                    // "the body_jaxpr of equation #0 (for_loop)", outermost first
  std::optional<PpContext> ctx_;

  // -- messages --------------------------------------------------------------

  // The printer's names for the whole program (so a message's names are the
  // printed jaxpr's), computed by the first message.
  PpContext& names() {
    if (!ctx_) {
      ctx_.emplace();
      pp_jaxpr(top_, *ctx_);
    }
    return *ctx_;
  }
  const std::string& name(const Jaxpr& j, int v) { return names().name(j, v); }
  std::string type_of(const Jaxpr& j, const Type& t) { return type_str(t, j, names()); }
  // An abstract value in the terms of jaxpr j: a symbolic dimension is the
  // name of a variable of `env` that holds it (f64[d] inside a body whose
  // input d holds the caller's a), else its expression.
  std::string aval_text(const Aval& a, const Jaxpr& j, const Env& env) {
    std::string r = std::string(dtype_name(a.dtype)) + "[";
    for (std::size_t d = 0; d < a.shape.size(); ++d) {
      if (d) r += ",";
      const Dim& x = a.shape[d];
      std::string t = x.is_static() ? std::to_string(x.value()) : rename(x.to_string());
      for (std::size_t v = 0; x.is_symbolic() && v < env.size(); ++v)
        if (env[v].bound && env[v].aval.dtype == DType::i64 && env[v].aval.dim_value &&
            *env[v].aval.dim_value == x) {
          t = name(j, static_cast<int>(v));
          break;
        }
      r += t;
    }
    return r + "]";
  }
  // Text (a rule's message, a dimension expression) with each fresh
  // dimension variable `_v<i>` named as the variable it stands for.
  std::string rename(const std::string& s) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string r;
    for (std::size_t i = 0; i < s.size();) {
      std::size_t e = i + 2;
      if (s.compare(i, 2, "_v") == 0 && (i == 0 || !ident(s[i - 1]))) {
        while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
        if (e > i + 2 && (e == s.size() || !ident(s[e]))) {
          const auto& [j, v] = symbols_.at(std::stoul(s.substr(i + 2, e - i - 2)));
          r += name(*j, v);
          i = e;
          continue;
        }
      }
      r += s[i++];
    }
    return r;
  }
  std::string eqn_text(const Jaxpr& j, const Eqn& e) {
    PpContext& ctx = names();
    pp::Doc lhs = binders_doc(j, e.outputs, ctx);
    // A control-flow equation without its bodies (their defects have their
    // own messages).
    pp::Doc params = prim_kind(e.prim) == Kind::control ? pp::text("[...]") : pp::kv_pairs(param_kvs(e.params, ctx));
    pp::Doc operands = atoms_doc(j, e.inputs, ctx);
    return pp::format(pp::eqn(std::move(lhs), !e.outputs.empty(), prim_name(e.prim), std::move(params),
                              std::move(operands)),
                      1 << 30);
  }
  [[noreturn]] void fail(const Jaxpr& j, std::size_t eqn, const std::string& what) {
    std::string w = eqn == kNone ? "the jaxpr" : "equation #" + std::to_string(eqn) + " `" + eqn_text(j, j.eqns[eqn]) + "`";
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) w += " in the " + *f;
    throw TypeError("check_jaxpr: " + w + ": " + what);
  }
  static std::string unbound_hint() {
    return " (a variable is bound by an input, a constant or an earlier equation of the same jaxpr; a nested "
           "jaxpr cannot use its enclosing jaxpr's variables)";
  }

  // -- types -----------------------------------------------------------------

  static bool is_input_or_const(const Jaxpr& j, int v) {
    return std::find(j.invars.begin(), j.invars.end(), v) != j.invars.end() ||
           std::find(j.constvars.begin(), j.constvars.end(), v) != j.constvars.end();
  }

  Dim fresh(const Jaxpr& j, int v) {
    symbols_.emplace_back(&j, v);
    return scope_->var("_v" + std::to_string(symbols_.size() - 1));
  }

  // The abstract value of variable v's type, where `what` (output #0 of
  // equation #eqn, input #1, ...) binds it: each dimension a non-negative
  // size or the Dim of an i64[] variable bound before.
  Aval aval_of_var(const Jaxpr& j, const Env& env, int v, std::size_t eqn, const std::string& what) {
    const Type& t = var_type(j, v);
    Aval a{t.dtype, {}, t.weak, std::nullopt};
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      const JDim& jd = t.shape[d];
      auto ref = [&] {
        return what + " (" + name(j, v) + ":" + type_of(j, t) + "): dimension " + std::to_string(d) + " refers to " +
               name(j, jd.var);
      };
      if (jd.is_static()) {
        if (jd.value < 0)
          fail(j, eqn, what + " (" + name(j, v) + ":" + type_of(j, t) + "): dimension " + std::to_string(d) +
                           " is negative");
        a.shape.emplace_back(jd.value);
        continue;
      }
      const VarInfo& w = env[static_cast<std::size_t>(jd.var)];
      if (!w.bound) fail(j, eqn, ref() + ", which is not bound before it" + unbound_hint());
      if (w.aval.dtype != DType::i64 || w.aval.rank() != 0)
        fail(j, eqn, ref() + ", which has type " + type_of(j, var_type(j, jd.var)) + "; a dimension is an i64[] variable");
      a.shape.push_back(*w.aval.dim_value);
    }
    return a;
  }

  // Binds variable v (single assignment); an integer scalar gets `dim`, or a
  // fresh dimension.
  Aval bind(const Jaxpr& j, Env& env, int v, std::size_t eqn, const std::string& what, std::optional<Dim> dim) {
    if (env[static_cast<std::size_t>(v)].bound)
      fail(j, eqn, what + " (" + name(j, v) + ") is already bound; a variable is bound once (by an input, a "
                                              "constant or one equation's output)");
    Aval a = aval_of_var(j, env, v, eqn, what);
    if (a.rank() == 0 && is_index_dtype(a.dtype)) a.dim_value = dim ? *dim : fresh(j, v);
    env[static_cast<std::size_t>(v)] = VarInfo{true, a};
    return a;
  }

  void check_literal(const Jaxpr& j, std::size_t eqn, const std::string& what, const Atom& a) {
    const Scalar& s = a.lit;
    bool ok = true;
    switch (s.dtype) {
      case DType::bool_: ok = s.i == 0 || s.i == 1; break;
      case DType::i8: ok = s.i >= INT8_MIN && s.i <= INT8_MAX; break;
      case DType::i16: ok = s.i >= INT16_MIN && s.i <= INT16_MAX; break;
      case DType::i32: ok = s.i >= INT32_MIN && s.i <= INT32_MAX; break;
      case DType::u8: ok = s.i >= 0 && s.i <= UINT8_MAX; break;
      case DType::u16: ok = s.i >= 0 && s.i <= UINT16_MAX; break;
      case DType::u32: ok = s.i >= 0 && s.i <= UINT32_MAX; break;
      case DType::i64:
      case DType::u64: break;
      case DType::f32: ok = std::isnan(s.f) || static_cast<double>(static_cast<float>(s.f)) == s.f; break;
      case DType::f64: break;
      case DType::c64:
        ok = (std::isnan(s.f) || static_cast<double>(static_cast<float>(s.f)) == s.f) &&
             (std::isnan(s.fi) || static_cast<double>(static_cast<float>(s.fi)) == s.fi);
        break;
      case DType::c128: break;
    }
    if (!is_complex(s.dtype) && s.fi != 0.0) ok = false;
    if (!ok)
      fail(j, eqn, what + " is the literal " + atom_str(j, a, names()) + ", whose value is not of dtype " +
                       std::string(dtype_name(s.dtype)));
  }

  // The abstract value of a bound variable or of a literal (integers are
  // dimensions of their value, as in a trace).
  static Aval atom_aval(const Env& env, const Atom& a) {
    if (a.is_var()) return env[static_cast<std::size_t>(a.var)].aval;
    Aval r{a.lit.dtype, {}, a.weak, std::nullopt};
    if (is_index_dtype(a.lit.dtype)) r.dim_value = Dim(a.lit.i);
    return r;
  }

  // Types agree: dtype, shape (Dims, symbolically) and, when `weak`, weak typing.
  static bool same(const Aval& a, const Aval& b, bool weak) {
    return a.dtype == b.dtype && (!weak || a.weak == b.weak) && a.shape == b.shape;
  }
  // "f32[3] ... f64[3]", with "(weak)"/"(strong)" when only weak typing differs.
  static std::string two(const std::string& a, bool a_weak, const std::string& mid, const std::string& b, bool b_weak) {
    if (a_weak == b_weak || a != b) return a + mid + b;
    auto w = [](bool weak) { return weak ? " (weak)" : " (strong)"; };
    return a + w(a_weak) + mid + b + w(b_weak);
  }

  // -- equations -------------------------------------------------------------

  // A trace knows the dimension each materialised size holds (trace.hpp,
  // dim_operand); propagate_dim recovers those of add, sub, mul, neg, max,
  // min and conversions. A floordiv or mod of sizes known to be non-negative
  // is materialised as div or rem (TraceState::factor_value), so those hold
  // floordiv and mod here, as in control_nested.hpp's eval_dim.
  static void propagate_div_rem(Prim prim, const std::vector<Aval>& in, std::vector<Aval>& out) {
    if ((prim != Prim::div && prim != Prim::rem) || out.size() != 1 || out[0].dim_value || in.size() != 2 ||
        !in[0].dim_value || !in[1].dim_value || out[0].rank() != 0 || !is_index_dtype(out[0].dtype))
      return;
    const Dim &a = *in[0].dim_value, &b = *in[1].dim_value;
    try {
      if (!(a >= Dim(0)) || !(b >= Dim(1))) return;
      out[0].dim_value = prim == Prim::div ? floordiv(a, b) : mod(a, b);
    } catch (const Error&) {  // undecided, or overflow: no dimension
    }
  }

  void check_eqn(const Jaxpr& j, Env& env, std::size_t k) {
    const Eqn& e = j.eqns[k];
    std::vector<Aval> in;
    in.reserve(e.inputs.size());
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
      const Atom& a = e.inputs[i];
      if (a.is_var() && !env[static_cast<std::size_t>(a.var)].bound)
        fail(j, k, "operand #" + std::to_string(i) + " (" + name(j, a.var) + ") is not bound here" + unbound_hint());
      if (!a.is_var()) check_literal(j, k, "operand #" + std::to_string(i), a);
      in.push_back(atom_aval(env, a));
    }
    std::vector<Env> bodies;
    if (prim_kind(e.prim) == Kind::control) bodies = check_bodies(j, env, k, in);
    std::vector<Aval> out;
    std::string rejected;
    try {
      out = abstract_eval(e.prim, in, e.params);
    } catch (const Error& err) {
      rejected = err.what();
    }
    if (!rejected.empty()) {
      std::string ops;
      for (std::size_t i = 0; i < in.size(); ++i) ops += (i ? ", " : "") + aval_text(in[i], j, env);
      fail(j, k, "the rule of " + std::string(prim_name(e.prim)) + " rejects its operands (" + ops + "): " +
                     rename(rejected));
    }
    propagate_dim(e.prim, in, out);
    propagate_div_rem(e.prim, in, out);
    if (out.size() != e.outputs.size())
      fail(j, k, "the rule gives " + std::to_string(out.size()) + " outputs but the equation binds " +
                     std::to_string(e.outputs.size()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      const int v = e.outputs[i];
      const std::string what = "output #" + std::to_string(i);
      if (env[static_cast<std::size_t>(v)].bound)
        fail(j, k, what + " (" + name(j, v) + ") is already bound; a variable is bound once (by an input, a "
                                              "constant or one equation's output)");
      const Aval rec = aval_of_var(j, env, v, k, what);
      if (!same(rec, out[i], true))
        fail(j, k, what + " has type " + two(type_of(j, var_type(j, v)), rec.weak, " but the rule gives ",
                                             aval_text(out[i], j, env), out[i].weak));
      bind(j, env, v, k, what, out[i].dim_value);
    }
    if (const auto* p = std::get_if<CondParams>(&e.params)) check_cond_outputs(j, env, k, *p, bodies);
    if (std::holds_alternative<CheckpointParams>(e.params)) check_body_outputs(j, env, k, *std::get<CheckpointParams>(e.params).jaxpr, "jaxpr", bodies.at(0));
  }

  // -- control flow: bodies and their layouts (prims.hpp) ---------------------
  // Defined in check_control.hpp.

  class Frame;  // while it lives, messages say which body they are about
  [[noreturn]] void layout_error(const Jaxpr& j, std::size_t k, const std::string& what);
  static std::size_t input_index(const Jaxpr& b, int v);
  template <class OperandOf>
  Env check_body(const Jaxpr& j, const Env& env, std::size_t k, const Jaxpr& b, const std::string& bname,
                 const std::vector<Aval>& in, std::size_t nseeded, OperandOf operand_of);
  void check_carry(const Jaxpr& j, std::size_t k, const Jaxpr& b, const Env& benv, std::size_t first_implicit,
                   std::size_t ni, std::size_t first_carried);
  static std::size_t count(int n);
  std::vector<Env> check_bodies(const Jaxpr& j, const Env& env, std::size_t k, const std::vector<Aval>& in);
  void check_scan(const Jaxpr& j, const Env& env, std::size_t k, const std::vector<Aval>& in, const ScanParams& p);
  void check_cond_outputs(const Jaxpr& j, const Env& env, std::size_t k, const CondParams& p,
                          const std::vector<Env>& envs);
  void check_body_outputs(const Jaxpr& j, const Env& env, std::size_t k, const Jaxpr& b, const std::string& bname,
                          const Env& benv);
};

// Clears the error context while checking: rules' messages are quoted
// inside ours, and the caller's place is appended once, at the end.
class ContextReset {
public:
  ContextReset() : saved_(std::exchange(error_context(), ErrorContext{})) {}
  ~ContextReset() { error_context() = std::move(saved_); }
  ContextReset(const ContextReset&) = delete;
  ContextReset& operator=(const ContextReset&) = delete;

private:
  ErrorContext saved_;
};

// The check; throws TypeError without any place appended.
inline void run(const ClosedJaxpr& cj, const std::vector<std::string>& constraints, const std::vector<Dim>& invar_dims) {
  if (!cj.jaxpr) throw TypeError("check_jaxpr: the ClosedJaxpr has no jaxpr");
  const Jaxpr& j = *cj.jaxpr;
  ContextReset reset;
  check_structure(j, "");
  std::shared_ptr<SymbolicScope> scope = SymbolicScope::make(constraints);
  // The given dimensions, moved to this scope through their text (parsed
  // again as a shape spec): the checker never adds variables to a trace's
  // own scope.
  std::vector<std::optional<Dim>> seeds;
  for (const Dim& d : invar_dims)
    seeds.emplace_back(d.is_static() ? d : symbolic_shape("(" + d.to_string() + ",)", scope).at(0));
  // The control-flow rules make fresh dimensions in the current trace.
  TraceScope trace(scope);
  Checker(j, scope).check(j, &cj.consts, seeds, true);
}

}  // namespace verify

void check_jaxpr(const ClosedJaxpr& cj, const std::vector<std::string>& constraints,
                 const std::vector<Dim>& invar_dims) {
  std::string msg;
  try {
    verify::run(cj, constraints, invar_dims);
    return;
  } catch (const TypeError& e) {
    msg = e.what();
  }
  fail<TypeError>(msg);
}

bool check_traces_enabled() {
  static const bool on = [] {
    const char* s = std::getenv("DYNSTAGE_CHECK_JAXPR");
    return s && *s && std::string(s) != "0";
  }();
  return on;
}

void check_traced(const ClosedJaxpr& cj, const std::vector<std::string>& constraints,
                  const std::vector<Dim>& invar_dims) {
  if (!check_traces_enabled()) return;
  std::string msg;
  try {
    verify::run(cj, constraints, invar_dims);
    return;
  } catch (const Error& e) {  // a TypeError, or the checker's own failure
    msg = e.what();
  }
  internal_error("the traced jaxpr fails check_jaxpr (DYNSTAGE_CHECK_JAXPR is set): " + msg + "\nThe jaxpr:\n" +
                 to_string(cj));
}

}  // namespace detail

void check_jaxpr(const ClosedJaxpr& cj) { detail::check_jaxpr(cj, {}, {}); }

}  // namespace dyn

#endif  // DYNSTAGE_IMPLEMENTATION
