// dynstage: the jaxpr interpreter (eval_jaxpr), the reference that compiled
// kernels are tested against.
//
// The same loop as every other interpreter: bind constvars and invars in an
// environment, then for each equation read its operands, apply the
// primitive's eager kernel, write its outputs.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "../ir/rules.hpp"
#include "../trace/trace.hpp"

namespace dyn {

namespace detail {

inline std::string type_str(const Jaxpr& j, const Type& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ",";
    s += t.shape[i].is_static() ? std::to_string(t.shape[i].value) : "v" + std::to_string(t.shape[i].var);
  }
  (void)j;
  return s + "]";
}

inline std::string array_type_str(const AnyArray& a) {
  std::string s = std::string(dtype_name(a.dtype())) + "[";
  for (std::size_t i = 0; i < a.shape().size(); ++i) s += (i ? "," : "") + std::to_string(a.shape()[i]);
  return s + "]";
}

// The concrete shape of type `t`, reading dimension variables from `env`.
inline std::vector<std::int64_t> concrete_shape(const Type& t, const std::vector<AnyArray>& env) {
  std::vector<std::int64_t> r;
  for (const JDim& d : t.shape) {
    if (d.is_static()) {
      r.push_back(d.value);
    } else {
      const AnyArray& v = env.at(static_cast<std::size_t>(d.var));
      r.push_back(v.dtype() == DType::i64 ? *static_cast<const std::int64_t*>(v.data())
                                          : *static_cast<const std::int32_t*>(v.data()));
    }
  }
  return r;
}

inline void check_arg(const Jaxpr& j, int var, const AnyArray& a, const std::vector<AnyArray>& env,
                      const std::string& what) {
  const Type& t = j.types.at(static_cast<std::size_t>(var));
  if (a.dtype() != t.dtype || a.shape() != concrete_shape(t, env))
    fail<TypeError>("eval_jaxpr: " + what + " has type " + array_type_str(a) + " but the jaxpr expects " +
                    type_str(j, t));
}

// Out of line (compiled once per program, under DYNSTAGE_IMPLEMENTATION):
// it reaches every eager kernel.
std::vector<AnyArray> eval_jaxpr(const Jaxpr& j, const std::vector<AnyArray>& consts,
                                 const std::vector<AnyArray>& args);

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<AnyArray> eval_jaxpr(const Jaxpr& j, const std::vector<AnyArray>& consts,
                                 const std::vector<AnyArray>& args) {
  if (consts.size() != j.constvars.size())
    fail<TypeError>("eval_jaxpr: " + std::to_string(consts.size()) + " constants given for " +
                    std::to_string(j.constvars.size()) + " constvars");
  if (args.size() != j.invars.size())
    fail<TypeError>("eval_jaxpr: " + std::to_string(args.size()) + " arguments given for a jaxpr with " +
                    std::to_string(j.invars.size()) + " inputs");
  std::vector<AnyArray> env(j.types.size());
  for (std::size_t i = 0; i < consts.size(); ++i) {
    check_arg(j, j.constvars[i], consts[i], env, "constant #" + std::to_string(i));
    env[static_cast<std::size_t>(j.constvars[i])] = consts[i];
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    check_arg(j, j.invars[i], args[i], env, "argument #" + std::to_string(i));
    env[static_cast<std::size_t>(j.invars[i])] = args[i];
  }
  auto read = [&](const Atom& a) -> AnyArray {
    if (a.is_var()) return env[static_cast<std::size_t>(a.var)];
    return scalar_value(a.lit, a.weak).array;
  };
  std::vector<AnyArray> in;
  for (const Eqn& e : j.eqns) {
    in.clear();
    for (const Atom& a : e.inputs) in.push_back(read(a));
    std::vector<AnyArray> outs = impl(e.prim, in, e.params);
    if (outs.size() != e.outputs.size())
      internal_error("eval_jaxpr: " + std::string(prim_name(e.prim)) + " produced " + std::to_string(outs.size()) +
                     " outputs, the equation has " + std::to_string(e.outputs.size()));
    for (std::size_t k = 0; k < outs.size(); ++k) env[static_cast<std::size_t>(e.outputs[k])] = std::move(outs[k]);
  }
  std::vector<AnyArray> r;
  r.reserve(j.outvars.size());
  for (const Atom& a : j.outvars) r.push_back(read(a));
  return r;
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace detail

namespace detail {
// The full argument list of `j` from its explicit arguments: each implicit
// dimension argument is read off the shape of an explicit argument whose type
// uses it (the Catalyst tracing note's expand_args, at run time).
std::vector<AnyArray> expand_explicit_args(const Jaxpr& j, const std::vector<AnyArray>& args);

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<AnyArray> expand_explicit_args(const Jaxpr& j, const std::vector<AnyArray>& args) {
  const std::size_t n = j.invars.size();
  std::vector<AnyArray> full(n);
  std::vector<std::int64_t> value(n, -1);
  std::vector<std::size_t> pos(j.types.size(), n);  // invar index of a variable
  for (std::size_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(j.invars[i])] = i;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!j.in_explicit[i]) continue;
    const AnyArray& a = args[k++];
    full[i] = a;
    const Type& t = j.types[static_cast<std::size_t>(j.invars[i])];
    if (a.rank() != t.rank()) continue;  // reported by the type check
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d].is_static()) continue;
      std::size_t p = pos[static_cast<std::size_t>(t.shape[d].var)];
      if (p < n && !j.in_explicit[p] && value[p] < 0) value[p] = a.shape()[d];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (j.in_explicit[i]) continue;
    if (value[i] < 0)
      fail<TypeError>("eval_jaxpr: implicit argument #" + std::to_string(i) +
                      " (a dimension) is not the size of any explicit argument's dimension; pass all " +
                      std::to_string(n) + " inputs, implicit ones first");
    full[i] = AnyArray(Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{value[i]}));
  }
  return full;
}
#endif
}  // namespace detail

// Interpret a closed jaxpr with the eager kernels: its outputs, implicit
// dimensions first. `args` are all its inputs, or only the explicit ones
// when every implicit dimension argument is the size of some explicit
// argument's dimension (it is then read off that shape).
inline std::vector<AnyArray> eval_jaxpr(const ClosedJaxpr& cj, const std::vector<AnyArray>& args) {
  if (!cj.jaxpr) detail::fail<TypeError>("eval_jaxpr: empty ClosedJaxpr");
  const Jaxpr& j = *cj.jaxpr;
  if (!j.in_explicit.empty() && args.size() < j.invars.size() &&
      args.size() == static_cast<std::size_t>(std::count(j.in_explicit.begin(), j.in_explicit.end(), true)))
    return detail::eval_jaxpr(j, cj.consts, detail::expand_explicit_args(j, args));
  return detail::eval_jaxpr(j, cj.consts, args);
}

}  // namespace dyn
