// dynstage: a trace's dimensions — symbolic dimensions as i64[] values and
// back. TraceState's symbolic bookkeeping (trace.hpp declares it): the
// scope, arguments that stand for dimension variables, materialising a
// dimension expression into equations once per trace (`b:i64[] = add a 1`),
// and dim_of, the dimension an integer scalar stands for when it is used as
// a size. Compiled once per program.
#pragma once

#include <string_view>

#include "../shape/symbolic_arith.hpp"
#include "trace.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail {

SymbolicScope& TraceState::sym_scope() {
  if (!scope) scope = SymbolicScope::make();
  return *scope;
}

Value TraceState::new_arg(const Aval& a) {
  int v = jaxpr.new_var(type_of_aval(a));
  jaxpr.invars.push_back(v);
  if (!jaxpr.in_explicit.empty()) jaxpr.in_explicit.push_back(true);
  Value t = make_tracer(v, a);
  if (a.rank() == 0 && a.dtype == DType::i64 && !a.dim_value) fresh_dim(t);
  return t;
}

Dim TraceState::new_dim_var() {
  SymbolicScope& sc = sym_scope();
  return sc.var("_d" + std::to_string(sc.variables().size()));
}

Dim TraceState::fresh_dim(const Value& v) {
  Dim d = new_dim_var();
  v.tracer->dim = d;
  if (v.dtype() == DType::i64) remember_dim(d, v);
  return d;
}

Value TraceState::new_dim_arg(const Dim& d) {
  if (jaxpr.in_explicit.empty()) jaxpr.in_explicit.assign(jaxpr.invars.size(), true);
  int v = jaxpr.new_var(Type{DType::i64, {}, false});
  jaxpr.invars.push_back(v);
  jaxpr.in_explicit.push_back(false);
  Value t = make_tracer(v, Aval{DType::i64, {}, false, d});
  dims.emplace(d.expr(), t);
  return t;
}

void TraceState::remember_dim(const Dim& d, const Value& v) {
  if (d.is_symbolic()) dims.emplace(d.expr(), v);
}

Type TraceState::type_of_aval(const Aval& a) {
  Type t{a.dtype, {}, a.weak};
  for (const Dim& d : a.shape) {
    if (d.is_static()) {
      t.shape.push_back(JDim{d.value(), -1});
      continue;
    }
    Value v = dim_operand(d);
    t.shape.push_back(JDim::of_var(atom_for(v).var));
  }
  return t;
}

Value TraceState::dim_operand(const Dim& d) {
  if (d.is_static()) return scalar_value(Scalar::of<std::int64_t>(d.value()), false);
  if (current_trace() != this)
    internal_error("dim_operand: dimension " + d.to_string() + " materialised outside the innermost trace");
  if (auto it = dims.find(d.expr()); it != dims.end()) return it->second;
  // Known in an enclosing trace: captured, as any outer tracer.
  for (TraceState* p = parent; p; p = p->parent)
    if (auto it = p->dims.find(d.expr()); it != p->dims.end()) {
      Value v = lift(it->second);
      dims.emplace(d.expr(), v);
      return v;
    }
  Value v = materialise(*d.expr());
  if (!v.aval().dim_value) v.tracer->dim = d;  // a shape rule reads it (resolve_dynamic_shape)
  dims.emplace(d.expr(), v);
  return v;
}

inline Value i64_literal(std::int64_t k) { return scalar_value(Scalar::of<std::int64_t>(k), false); }

// Sum of terms, largest first, the constant last: `add (mul b 2) 1`; negative
// coefficients subtract (`sub a 1`).
Value TraceState::materialise(const DimExpr& e) {
  SymbolicScope* sc = e.scope;
  if (e.terms.size() == 1 && e.terms[0].second == 1 && !e.terms[0].first->is_constant())
    return term_value(*e.terms[0].first, sc);
  Value acc;
  bool have = false;
  for (const auto& [term, k] : e.terms) {
    if (term->is_constant()) {
      if (!have) internal_error("materialise: a constant dimension expression");
      acc = bind1(k < 0 ? Prim::sub : Prim::add, {acc, i64_literal(k < 0 ? -k : k)});
      continue;
    }
    Value tv = dim_operand(from_term(term, 1, sc));
    std::int64_t mag = k < 0 ? -k : k;
    if (mag != 1) tv = bind1(Prim::mul, {tv, i64_literal(mag)});
    if (!have) {
      acc = k < 0 ? bind1(Prim::neg, {tv}) : tv;
      have = true;
    } else {
      acc = bind1(k < 0 ? Prim::sub : Prim::add, {acc, tv});
    }
  }
  return acc;
}

Value TraceState::term_value(const DimTerm& t, SymbolicScope* sc) {
  if (t.factors.size() == 1 && t.factors[0].second == 1) return factor_value(*t.factors[0].first, sc);
  Value acc;
  bool have = false;
  for (const auto& [f, p] : t.factors) {
    Dim fd = f->op == DimOp::var
                 ? from_var(f->var, sc)
                 : from_operation(f->op, operand_dim(f->lhs, sc), operand_dim(f->rhs, sc), sc);
    Value fv = dim_operand(fd);
    for (std::int64_t i = 0; i < p; ++i) {
      acc = have ? bind1(Prim::mul, {acc, fv}) : fv;
      have = true;
    }
  }
  return acc;
}

// floordiv and mod with floor semantics from lax's truncating div and rem:
// q = div(a, b) - (rem(a, b) != 0 and sign(rem) != sign(b)); m = a - q*b.
Value TraceState::factor_value(const DimFactor& f, SymbolicScope* sc) {
  if (f.op == DimOp::var)
    fail<TypeError>("dimension variable '" + f.var +
                    "' is not defined in this trace: a dimension (dyn::Dim) of another traced function, or "
                    "of a finished trace, was used");
  Value a = dim_operand(operand_dim(f.lhs, sc));
  Value b = dim_operand(operand_dim(f.rhs, sc));
  switch (f.op) {
    case DimOp::max: return bind1(Prim::max, {a, b});
    case DimOp::min: return bind1(Prim::min, {a, b});
    case DimOp::floordiv:
    case DimOp::mod: {
      // Truncation is floor when both operands are known non-negative (the
      // common case: sizes divided by a positive constant).
      auto nonneg = [&](const ExprPtr& e) {
        try {
          return operand_dim(e, sc) >= Dim(0);
        } catch (const InconclusiveDimensionOperation&) {
          return false;
        }
      };
      if (nonneg(f.lhs) && nonneg(f.rhs)) return bind1(f.op == DimOp::floordiv ? Prim::div : Prim::rem, {a, b});
      Value q = bind1(Prim::div, {a, b});
      Value r = bind1(Prim::rem, {a, b});
      Value zero = i64_literal(0);
      Value nonzero = bind1(Prim::ne, {r, zero});
      Value sign_differs = bind1(Prim::ne, {bind1(Prim::lt, {r, zero}), bind1(Prim::lt, {b, zero})});
      Value adjust = bind1(Prim::and_, {nonzero, sign_differs});
      Value fq = bind1(Prim::sub, {q, bind1(Prim::convert_element_type, {adjust}, ConvertParams{DType::i64, false})});
      if (f.op == DimOp::floordiv) return fq;
      return bind1(Prim::sub, {a, bind1(Prim::mul, {fq, b})});
    }
    case DimOp::var: break;
  }
  internal_error("factor_value: bad operation");
}

Dim dim_of(const Value& v, std::string_view op) {
  if (v.rank() != 0 || !is_integer(v.dtype()))
    fail<TypeError>(std::string(op) + ": a size must be an integer scalar, got " + aval_str(v.aval()));
  // Only i32 and i64 scalars are dimensions (is_index_dtype): a size of
  // another integer dtype (a u8 tracer) is its value converted to i64.
  if (!is_index_dtype(v.dtype())) {
    if (!v.is_tracer()) return Dim(scalar_of(v.array).as<std::int64_t>());
    return dim_of(bind1(Prim::convert_element_type, {v}, ConvertParams{DType::i64, false}), op);
  }
  if (!v.is_tracer()) return *aval_of(v.array).dim_value;
  const TracerNode& n = *v.tracer;
  if (n.aval.dim_value) return *n.aval.dim_value;
  if (n.dim) return *n.dim;
  Dim d = n.trace->fresh_dim(v);
  // Dimension variables are i64[]: an i32 size is converted once, in the
  // current trace, and the conversion holds the dimension (propagate_dim).
  if (v.dtype() != DType::i64 && current_trace()) bind1(Prim::convert_element_type, {v}, ConvertParams{DType::i64, false});
  return d;
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
