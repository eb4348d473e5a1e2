// A test oracle: the expansion steps of the bind algorithm, spelled as the
// Catalyst tracing note and the Catalyst dynamic-arrays doc spell them (the
// documents are listed in docs/architecture.md, "Sources").
//
// Not part of the library. The types these steps produce and consume
// (InputType, OutputType with DBIdx / InDBIdx / OutDBIdx), their printing,
// check() and input_type_of / output_type_of are public:
// include/dynstage/ir/nested_types.hpp. trace/control_nested.hpp runs the
// bind algorithm on symbolic dimensions directly; this header spells the
// algorithm's steps on those types, so that test_signature.cpp can check
// them against the two documents' examples (and the public types against the
// steps' results).
//
// The Catalyst tracing note's bind algorithm, in these terms (caller scope C, body
// scope B):
//
//   C:  ex      = expand_args(args, ArgDims)          -> ex.type, ex.values
//   B:  bargs   = initialize(ex.type, new_arg, lift_outer)
//       results = f(collapse(ex.type, bargs))          (tracing the body)
//       er      = expand_results(consts, bargs, results, ResultExpansion)
//                                                      -> er.type, er.values
//   C:  outs    = initialize(er.type, operands, new_result)
//       user    = collapse(er.type, outs)
//
// where `operands` are the caller's values of the body's constants followed by
// ex.values, index for index with consts ++ bargs (InDBIdx counts in both).
//
// CONTRACT with the tracer layer (the "actual arguments"): a value of one
// scope is a ValueDesc {id, dtype, shape}. `id` is an opaque non-negative
// integer chosen by the caller, unique within the scope (a jaxpr variable
// index is the natural choice); kNoValueId marks a value without identity (a
// literal), which is never equal to anything. A dimension (DimRef) is a static
// size or the id of an i64[] value of the same scope: two dimensions with the
// same id are the same (shared) dimension. The functions never create ids on
// their own: initialize() asks the caller for each new value's id. An
// Outer(id) dimension of an input type is such an id of the caller's scope
// (only ArgDims::captured makes it).
//
// Where the C++ names map to Catalyst (frontend/catalyst/jax_extras/tracing.py):
//   expand_args      expand_args (infer_input_type_unshared / _constshapes)
//   initialize(in)   input_type_to_tracers   (the Catalyst tracing note's initialize)
//   expand_results   expand_results / infer_output_type
//   initialize(out)  output_type_to_tracers  (the Catalyst tracing note's initialize)
//   collapse         collapse
// and the strategies: for_loop(preserve_dimensions=true) is ArgDims::captured +
// ResultDims::carried, preserve_dimensions=false is ArgDims::unshared +
// ResultDims::unshared; both for-loops force the loop index to OutDBIdx. A
// top-level trace (make_jaxpr) is ArgDims::shared + ResultDims::fresh (JAX).
//
// Deliberate differences from Catalyst: an OutDBIdx always names the FIRST
// result holding the dimension (as in nested_types.hpp); with
// ResultDims::unshared each dimension occurrence refers to its own implicit
// result (Catalyst makes all occurrences of one value refer to the last one).
// Malformed types are errors, not asserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <dynstage/array/dtype.hpp>
#include <dynstage/errors.hpp>
#include <dynstage/ir/jaxpr.hpp>
#include <dynstage/ir/nested_types.hpp>

namespace dyn {

// ---------------------------------------------------------------------------
// Values of a scope (the tracer layer's side of the contract).

using ValueId = std::int64_t;
inline constexpr ValueId kNoValueId = -1;

// A dimension of a value: a static size, or the i64[] value with id `id`.
struct DimRef {
  std::int64_t size = 0;
  ValueId id = kNoValueId;

  DimRef() = default;
  DimRef(std::int64_t static_size) : size(static_size) {}  // NOLINT: {3, DimRef::of_value(7)}
  static DimRef of_value(ValueId v) {
    if (v < 0) detail::fail<IndexError>("DimRef::of_value: value ids are non-negative, got " + std::to_string(v));
    DimRef d;
    d.id = v;
    return d;
  }
  bool is_static() const { return id < 0; }
  friend bool operator==(const DimRef&, const DimRef&) = default;
};

// One value of a scope: its identity and its type (a DShapedArray whose
// dimensions are values of the same scope, as a JAX tracer's aval).
struct ValueDesc {
  ValueId id = kNoValueId;
  DType dtype = DType::f64;
  std::vector<DimRef> shape;

  int rank() const { return static_cast<int>(shape.size()); }
  // Can it serve as a dimension? (an i64[] scalar)
  bool is_dim_value() const { return dtype == DType::i64 && shape.empty(); }
  friend bool operator==(const ValueDesc&, const ValueDesc&) = default;
};

// A dimension of a value: `3`, or `%7` for the value with id 7.
inline std::string to_string(const DimRef& d) {
  return d.is_static() ? std::to_string(d.size) : "%" + std::to_string(d.id);
}

// `f64[%7,3]` (the value's own id is not shown).
inline std::string to_string(const ValueDesc& v) {
  return std::string(dtype_name(v.dtype)) + "[" +
         detail::join_dims(v.shape, [](const DimRef& d) { return to_string(d); }) + "]";
}

inline std::ostream& operator<<(std::ostream& os, const DimRef& d) { return os << to_string(d); }
inline std::ostream& operator<<(std::ostream& os, const ValueDesc& v) { return os << to_string(v); }

// ---------------------------------------------------------------------------
// Step 1 (caller): expand_args.

// How the dynamic dimensions of the arguments become entries.
enum class ArgDims : std::uint8_t {
  // One implicit argument per distinct dimension value, so sharing is kept:
  // a:f64[d], b:f64[d] -> d:i64[], a:f64[d], b:f64[d] (the Catalyst tracing
  // note's default; JAX's infer_lambda_input_type). A dimension that is an EARLIER
  // explicit argument refers to it instead of adding an implicit one.
  shared,
  // One implicit argument per dynamic dimension occurrence, sharing forgotten:
  // a:f64[d], b:f64[d] -> d1:i64[], d2:i64[], a:f64[d1], b:f64[d2]
  // (preserve_dimensions=false; cond).
  unshared,
  // No implicit argument: dimensions stay the caller's, as Outer(id), and
  // initialize() captures them as constants of the body (the Catalyst
  // dynamic-arrays doc's overview circuit, preserve_dimensions=true:
  // `{ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]`).
  captured,
};

struct ExpandedArgs {
  InputType type;
  // The caller's value for each entry of `type`: the implicit dimension
  // values ({id, i64, {}}), then the arguments as given.
  std::vector<ValueDesc> values;
};

// The input type of a nested program called with `args` (its explicit
// arguments, values of the caller's scope), and the expanded argument list.
inline ExpandedArgs expand_args(const std::vector<ValueDesc>& args, ArgDims how) {
  using detail::fail;
  // Which arguments are values that can be dimensions (to reject a dimension
  // whose id is, say, an f64[3] argument).
  std::unordered_map<ValueId, std::size_t> arg_of_id;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].id != kNoValueId) arg_of_id.try_emplace(args[i].id, i);
  for (std::size_t i = 0; i < args.size(); ++i) {
    for (std::size_t a = 0; a < args[i].shape.size(); ++a) {
      const DimRef& d = args[i].shape[a];
      const std::string where = "expand_args: dimension " + std::to_string(a) + " of argument #" +
                                std::to_string(i) + " (" + to_string(args[i]) + ")";
      if (d.is_static()) {
        if (d.size < 0) fail<ShapeError>(where + " is negative");
        continue;
      }
      auto it = arg_of_id.find(d.id);
      if (it != arg_of_id.end() && !args[it->second].is_dim_value())
        fail<TypeError>(where + " is the value of argument #" + std::to_string(it->second) + ", of type " +
                        to_string(args[it->second]) + "; a dimension must be an i64[] scalar");
    }
  }

  ExpandedArgs r;
  std::vector<ValueDesc> implicit;
  auto add_implicit = [&](ValueId id) {
    implicit.push_back(ValueDesc{id, DType::i64, {}});
    return static_cast<std::int64_t>(implicit.size() - 1);
  };

  // Entry types of the explicit arguments; a reference to explicit argument
  // #j is recorded as -(j + 1) until the number of implicit entries is known.
  std::vector<std::vector<SigDim>> shapes(args.size());
  std::unordered_map<ValueId, std::int64_t> shared_ref;  // dimension id -> DBIdx (or -(j+1))
  std::unordered_map<ValueId, std::size_t> earlier_arg;  // ids of the arguments seen so far
  for (std::size_t i = 0; i < args.size(); ++i) {
    for (const DimRef& d : args[i].shape) {
      if (d.is_static()) {
        shapes[i].push_back(SigDim(d.size));
        continue;
      }
      switch (how) {
        case ArgDims::shared: {
          auto it = shared_ref.find(d.id);
          if (it == shared_ref.end()) {
            auto e = earlier_arg.find(d.id);
            const std::int64_t ref =
                e != earlier_arg.end() ? -static_cast<std::int64_t>(e->second) - 1 : add_implicit(d.id);
            it = shared_ref.emplace(d.id, ref).first;
          }
          shapes[i].push_back(SigDim::db_idx(it->second));
          break;
        }
        case ArgDims::unshared: shapes[i].push_back(SigDim::db_idx(add_implicit(d.id))); break;
        case ArgDims::captured: shapes[i].push_back(SigDim::outer(d.id)); break;
      }
    }
    if (args[i].id != kNoValueId) earlier_arg.try_emplace(args[i].id, i);
  }

  const auto offset = static_cast<std::int64_t>(implicit.size());
  for (std::size_t k = 0; k < implicit.size(); ++k) r.type.entries.push_back(SigEntry{SigType{DType::i64, {}}, false});
  for (std::size_t i = 0; i < args.size(); ++i) {
    for (SigDim& d : shapes[i])
      if (d.kind == SigDim::Kind::db_idx && d.value < 0) d = SigDim::db_idx(offset + (-d.value - 1));
    r.type.entries.push_back(SigEntry{SigType{args[i].dtype, std::move(shapes[i])}, true});
  }
  r.values = std::move(implicit);
  r.values.insert(r.values.end(), args.begin(), args.end());
  return r;
}

// ---------------------------------------------------------------------------
// Step 2 (body) and step 4 (caller): initialize.

// Creates a value of the target scope with the given type (its dimensions
// already refer to values of that scope) and returns its id.
using NewValueFn = std::function<ValueId(const ValueDesc&)>;
// Captures the caller's dimension value `outer_id` in the body (as a
// constant) and returns the id of the body's value for it.
using LiftOuterFn = std::function<ValueId(ValueId outer_id)>;

// The body's expanded arguments for input type `t`, created in order by
// `new_arg`: DBIdx(j) becomes the j-th created value, Outer(id) becomes
// lift_outer(id) (called again for each occurrence: memoise there). Checks `t`.
inline std::vector<ValueDesc> initialize(const InputType& t, const NewValueFn& new_arg,
                                         const LiftOuterFn& lift_outer = {}) {
  using detail::fail;
  check(t);
  std::vector<ValueDesc> out;
  out.reserve(t.size());
  for (std::size_t k = 0; k < t.size(); ++k) {
    ValueDesc v{kNoValueId, t[k].type.dtype, {}};
    for (const SigDim& d : t[k].type.shape) {
      switch (d.kind) {
        case SigDim::Kind::fixed: v.shape.push_back(DimRef(d.value)); break;
        case SigDim::Kind::db_idx: v.shape.push_back(DimRef::of_value(out[static_cast<std::size_t>(d.value)].id)); break;
        case SigDim::Kind::outer:
          if (!lift_outer)
            fail<TypeError>("initialize: " + detail::entry_where("input", k, t[k]) + " has " + to_string(d) +
                            ", but no function to capture the caller's dimensions was given");
          v.shape.push_back(DimRef::of_value(lift_outer(d.value)));
          break;
        case SigDim::Kind::in_db_idx:
        case SigDim::Kind::out_db_idx: detail::internal_error("initialize: check(InputType) let an output index through");
      }
    }
    v.id = new_arg(v);
    if (v.id < 0) fail<IndexError>("initialize: new_arg returned the id " + std::to_string(v.id) + " for entry #" +
                                   std::to_string(k) + "; ids are >= 0");
    out.push_back(std::move(v));
  }
  return out;
}

// As above with ids first_id, first_id + 1, ... and Outer(id) kept as the
// dimension id itself (for tests and for scopes that share an id space).
inline std::vector<ValueDesc> initialize(const InputType& t, ValueId first_id) {
  ValueId next = first_id;
  return initialize(t, [&](const ValueDesc&) { return next++; }, [](ValueId id) { return id; });
}

// The caller's values for the results of a program with output type `t`,
// created in order by `new_result`. `inputs` are the caller's values of the
// program's inputs (constants then expanded arguments): InDBIdx(i) becomes
// inputs[i], which must be an i64[] value; OutDBIdx(j) becomes the j-th
// created value. Checks `t`.
inline std::vector<ValueDesc> initialize(const OutputType& t, const std::vector<ValueDesc>& inputs,
                                         const NewValueFn& new_result) {
  using detail::fail;
  check(t, inputs.size());
  std::vector<ValueDesc> out;
  out.reserve(t.size());
  for (std::size_t k = 0; k < t.size(); ++k) {
    ValueDesc v{kNoValueId, t[k].type.dtype, {}};
    for (const SigDim& d : t[k].type.shape) {
      switch (d.kind) {
        case SigDim::Kind::fixed: v.shape.push_back(DimRef(d.value)); break;
        case SigDim::Kind::in_db_idx: {
          const ValueDesc& in = inputs[static_cast<std::size_t>(d.value)];
          const std::string where = "initialize: " + detail::entry_where("output", k, t[k]) + ": " + to_string(d) +
                                    " refers to input #" + std::to_string(d.value);
          if (!in.is_dim_value())
            fail<TypeError>(where + " of type " + to_string(in) + ", but a dimension must be an i64[] scalar");
          if (in.id == kNoValueId) fail<TypeError>(where + ", a value without identity (a literal)");
          v.shape.push_back(DimRef::of_value(in.id));
          break;
        }
        case SigDim::Kind::out_db_idx: v.shape.push_back(DimRef::of_value(out[static_cast<std::size_t>(d.value)].id)); break;
        case SigDim::Kind::db_idx:
        case SigDim::Kind::outer: detail::internal_error("initialize: check(OutputType) let an input index through");
      }
    }
    v.id = new_result(v);
    if (v.id < 0) fail<IndexError>("initialize: new_result returned the id " + std::to_string(v.id) +
                                   " for entry #" + std::to_string(k) + "; ids are >= 0");
    out.push_back(std::move(v));
  }
  return out;
}

// As above with ids first_id, first_id + 1, ...
inline std::vector<ValueDesc> initialize(const OutputType& t, const std::vector<ValueDesc>& inputs,
                                         ValueId first_id) {
  ValueId next = first_id;
  return initialize(t, inputs, [&](const ValueDesc&) { return next++; });
}

// ---------------------------------------------------------------------------
// collapse: the explicit entries of an expanded list (what the user sees).

namespace detail {
template <class T>
std::vector<T> collapse_entries(const SigEntries& t, const std::vector<T>& expanded, const char* which) {
  if (expanded.size() != t.size())
    fail<TypeError>(std::string("collapse: the ") + which + " type has " + std::to_string(t.size()) +
                    " entries but " + std::to_string(expanded.size()) + " values were given");
  std::vector<T> r;
  r.reserve(t.num_explicit());
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i].is_explicit) r.push_back(expanded[i]);
  return r;
}
}  // namespace detail

template <class T>
std::vector<T> collapse(const InputType& t, const std::vector<T>& expanded) {
  return detail::collapse_entries(t, expanded, "input");
}
template <class T>
std::vector<T> collapse(const OutputType& t, const std::vector<T>& expanded) {
  return detail::collapse_entries(t, expanded, "output");
}

// ---------------------------------------------------------------------------
// Step 3 (body): expand_results.

// Which dimensions of the results become implicit results.
enum class ResultDims : std::uint8_t {
  // Only dimensions that are not inputs (constants, arguments) nor earlier
  // results: JAX's _add_implicit_outputs; a top-level function returning
  // ones(n + 1) gets `in (b, c)`, one returning ones(n) gets `in (b,)`.
  fresh,
  // One implicit result per distinct dimension that is not a constant, the
  // arguments' dimensions included: a loop body returns every carried
  // dimension (Catalyst, preserve_dimensions=true; the Catalyst tracing note's
  // `in (e, j)`).
  carried,
  // One implicit result per dimension occurrence, each referred to by its own
  // occurrence (Catalyst, preserve_dimensions=false; cond).
  unshared,
};

struct ResultExpansion {
  ResultDims dims = ResultDims::fresh;
  // >= 0: the input (index among constants ++ arguments) that no InDBIdx may
  // name, because it changes between iterations: the for-loop index. Its
  // references become OutDBIdx to the (implicit) result carrying it
  // (Catalyst's output_force_arg0_outdbidx).
  std::int64_t force_out_db_idx = -1;
};

struct ExpandedResults {
  OutputType type;
  // The body's value for each entry: the implicit dimension values
  // ({id, i64, {}}), then the results as given.
  std::vector<ValueDesc> values;
};

// The output type of a body whose constants are `consts`, expanded arguments
// `inputs` (initialize's result) and explicit results `results` (all values
// of the body's scope). A dimension that is an input is InDBIdx (even when it
// is also returned), otherwise OutDBIdx of the first result holding it.
inline ExpandedResults expand_results(const std::vector<ValueDesc>& consts, const std::vector<ValueDesc>& inputs,
                                      const std::vector<ValueDesc>& results, const ResultExpansion& how = {}) {
  using detail::fail;
  std::vector<const ValueDesc*> all_in;
  all_in.reserve(consts.size() + inputs.size());
  for (const auto& v : consts) all_in.push_back(&v);
  for (const auto& v : inputs) all_in.push_back(&v);
  std::unordered_map<ValueId, std::size_t> in_index, res_index;
  for (std::size_t i = 0; i < all_in.size(); ++i)
    if (all_in[i]->id != kNoValueId) in_index.try_emplace(all_in[i]->id, i);
  for (std::size_t i = 0; i < results.size(); ++i)
    if (results[i].id != kNoValueId) res_index.try_emplace(results[i].id, i);

  std::unordered_set<ValueId> known;
  if (how.dims != ResultDims::unshared)
    for (const auto& v : consts) known.insert(v.id);
  if (how.dims == ResultDims::fresh)
    for (const auto& v : inputs) known.insert(v.id);

  std::vector<ValueId> implicit;
  std::vector<std::vector<std::int64_t>> own_slot(results.size());  // unshared: occurrence -> implicit result
  for (std::size_t r = 0; r < results.size(); ++r) {
    const ValueDesc& res = results[r];
    own_slot[r].assign(res.shape.size(), -1);
    for (std::size_t a = 0; a < res.shape.size(); ++a) {
      const DimRef& d = res.shape[a];
      const std::string where = "expand_results: dimension " + std::to_string(a) + " of result #" +
                                std::to_string(r) + " (" + to_string(res) + ")";
      if (d.is_static()) {
        if (d.size < 0) fail<ShapeError>(where + " is negative");
        continue;
      }
      if (auto it = in_index.find(d.id); it != in_index.end() && !all_in[it->second]->is_dim_value())
        fail<TypeError>(where + " is the value of input #" + std::to_string(it->second) + ", of type " +
                        to_string(*all_in[it->second]) + "; a dimension must be an i64[] scalar");
      if (auto it = res_index.find(d.id); it != res_index.end() && !results[it->second].is_dim_value())
        fail<TypeError>(where + " is the value of result #" + std::to_string(it->second) + ", of type " +
                        to_string(results[it->second]) + "; a dimension must be an i64[] scalar");
      if (how.dims == ResultDims::unshared) {
        own_slot[r][a] = static_cast<std::int64_t>(implicit.size());
        implicit.push_back(d.id);
      } else if (known.insert(d.id).second) {
        implicit.push_back(d.id);
      }
    }
    if (how.dims != ResultDims::unshared && res.id != kNoValueId) known.insert(res.id);
  }

  ExpandedResults er;
  for (ValueId id : implicit) er.values.push_back(ValueDesc{id, DType::i64, {}});
  er.values.insert(er.values.end(), results.begin(), results.end());
  std::unordered_map<ValueId, std::size_t> out_index;  // id -> FIRST entry holding it
  for (std::size_t k = 0; k < er.values.size(); ++k)
    if (er.values[k].id != kNoValueId) out_index.try_emplace(er.values[k].id, k);

  const std::int64_t forced = how.force_out_db_idx;
  if (forced >= static_cast<std::int64_t>(all_in.size()))
    fail<IndexError>("expand_results: force_out_db_idx " + std::to_string(forced) + " is out of range for " +
                     std::to_string(all_in.size()) + " inputs");

  for (std::size_t k = 0; k < implicit.size(); ++k) er.type.entries.push_back(SigEntry{SigType{DType::i64, {}}, false});
  for (std::size_t r = 0; r < results.size(); ++r) {
    const std::size_t k = implicit.size() + r;
    const ValueDesc& res = results[r];
    SigType ty{res.dtype, {}};
    for (std::size_t a = 0; a < res.shape.size(); ++a) {
      const DimRef& d = res.shape[a];
      if (d.is_static()) {
        ty.shape.push_back(SigDim(d.size));
        continue;
      }
      auto in = in_index.find(d.id);
      const bool is_forced = in != in_index.end() && static_cast<std::int64_t>(in->second) == forced;
      if (in != in_index.end() && !is_forced) {
        ty.shape.push_back(SigDim::in_db_idx(static_cast<std::int64_t>(in->second)));
      } else if (own_slot[r][a] >= 0) {
        ty.shape.push_back(SigDim::out_db_idx(own_slot[r][a]));
      } else {
        auto out = out_index.find(d.id);
        if (out == out_index.end() || out->second >= k) {
          if (is_forced)
            fail<TypeError>("expand_results: dimension " + std::to_string(a) + " of result #" + std::to_string(r) +
                            " (" + to_string(res) + ") is input #" + std::to_string(forced) +
                            ", which force_out_db_idx turns into an OutDBIdx, but no earlier result holds it; use "
                            "ResultDims::carried or ResultDims::unshared, which return it");
          detail::internal_error("expand_results: a dimension is neither an input nor an earlier result");
        }
        ty.shape.push_back(SigDim::out_db_idx(static_cast<std::int64_t>(out->second)));
      }
    }
    er.type.entries.push_back(SigEntry{std::move(ty), true});
  }
  return er;
}

// ---------------------------------------------------------------------------
// Jaxpr level: variables as values (id = variable index of one jaxpr).

// The value of variable `var` of `j`: id = var, dimensions = their variables.
inline ValueDesc value_of(const Jaxpr& j, int var) {
  if (var < 0 || static_cast<std::size_t>(var) >= j.types.size())
    detail::fail<IndexError>("value_of: variable %" + std::to_string(var) + " is not in the jaxpr's table of " +
                             std::to_string(j.types.size()) + " variables");
  const Type& t = j.types[static_cast<std::size_t>(var)];
  ValueDesc v{var, t.dtype, {}};
  for (const JDim& d : t.shape) v.shape.push_back(d.is_static() ? DimRef(d.value) : DimRef::of_value(d.var));
  return v;
}

// An operand: a variable, or a literal (a value without identity).
inline ValueDesc value_of(const Jaxpr& j, const Atom& a) {
  if (a.is_var()) return value_of(j, a.var);
  return ValueDesc{kNoValueId, a.lit.dtype, {}};
}

inline std::vector<ValueDesc> values_of(const Jaxpr& j, const std::vector<int>& vars) {
  std::vector<ValueDesc> r;
  r.reserve(vars.size());
  for (int v : vars) r.push_back(value_of(j, v));
  return r;
}

inline std::vector<ValueDesc> values_of(const Jaxpr& j, const std::vector<Atom>& atoms) {
  std::vector<ValueDesc> r;
  r.reserve(atoms.size());
  for (const Atom& a : atoms) r.push_back(value_of(j, a));
  return r;
}

// The jaxpr type of a value whose ids are variable indices of one jaxpr.
inline Type jaxpr_type(const ValueDesc& v) {
  Type t{v.dtype, {}, false};
  for (const DimRef& d : v.shape) {
    if (d.is_static()) {
      t.shape.push_back(JDim{d.size, -1});
      continue;
    }
    if (d.id > static_cast<ValueId>(std::numeric_limits<int>::max()))
      detail::fail<IndexError>("jaxpr_type: value id " + std::to_string(d.id) + " is not a jaxpr variable index");
    t.shape.push_back(JDim::of_var(static_cast<int>(d.id)));
  }
  return t;
}

namespace detail {
// Append an explicitness flag to `flags` (empty = all of the n_before
// entries explicit), keeping the "empty = all explicit" form when possible.
inline void push_explicit_flag(std::vector<bool>& flags, std::size_t n_before, bool is_explicit, const char* what) {
  if (flags.empty()) {
    if (is_explicit) return;
    flags.assign(n_before, true);
  } else if (flags.size() != n_before) {
    fail<TypeError>(std::string("initialize: the jaxpr has ") + std::to_string(n_before) + " " + what + " but " +
                    std::to_string(flags.size()) + " explicitness flags");
  }
  flags.push_back(is_explicit);
}
}  // namespace detail

// The body's variables for input type `t`, appended to body.invars (and
// in_explicit). Outer(id) dimensions become i64[] constvars, one per id.
struct JaxprArgs {
  std::vector<int> invars;                         // one per entry of t
  std::vector<std::pair<ValueId, int>> captured;  // outer dimension id -> its constvar
};

inline JaxprArgs initialize(Jaxpr& body, const InputType& t) {
  JaxprArgs r;
  std::size_t k = 0;
  initialize(
      t,
      [&](const ValueDesc& v) -> ValueId {
        const int var = body.new_var(jaxpr_type(v));
        detail::push_explicit_flag(body.in_explicit, body.invars.size(), t[k++].is_explicit, "invars");
        body.invars.push_back(var);
        r.invars.push_back(var);
        return var;
      },
      [&](ValueId outer) -> ValueId {
        for (const auto& [id, var] : r.captured)
          if (id == outer) return var;
        const int var = body.new_var(Type{DType::i64, {}, false});
        body.constvars.push_back(var);
        r.captured.emplace_back(outer, var);
        return var;
      });
  return r;
}

// The caller's variables for the results of an equation with output type `t`
// and operands `operands` (its inputs, in InDBIdx order), created in `caller`.
inline std::vector<int> initialize(Jaxpr& caller, const OutputType& t, const std::vector<Atom>& operands) {
  std::vector<int> vars;
  initialize(t, values_of(caller, operands), [&](const ValueDesc& v) -> ValueId {
    const int var = caller.new_var(jaxpr_type(v));
    vars.push_back(var);
    return var;
  });
  return vars;
}

}  // namespace dyn