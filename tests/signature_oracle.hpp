// A test oracle: typed signatures of nested programs (references 000 and 004).
//
// Not part of the library. control.hpp runs the bind algorithm on symbolic
// dimensions directly; this header spells the reference's types and steps as
// the references spell them, so that the tests can read a loop body's types
// off its jaxpr (input_type_of, output_type_of) and compare them with the
// reference's texts (test_control.cpp), and check the steps themselves
// against the references' examples (test_signature.cpp).
//
// A nested program (a loop body, a cond branch) is traced in a scope of its
// own. Its arguments and results cross the scope boundary as *types*: lists
// of entries (abstract type, explicit flag) whose dynamic dimensions are
// positions instead of variables (JAX's "de Bruijn indices"):
//
//   InputType   the expanded arguments. A dimension is a static size,
//               DBIdx(i): the value of entry i of the same input type
//               (i < the entry's own position), or Outer(id): a dimension of
//               the caller's scope that the body captures as a constant
//               (dynstage's spelling of a tracer inside a JAX in_type; only
//               ArgDims::captured makes it).
//   OutputType  the expanded results. A dimension is a static size,
//               InDBIdx(i): the value of input i of the nested program (its
//               constants followed by its expanded arguments, i.e. the
//               operands of the equation that calls it), or OutDBIdx(i): the
//               value of entry i of the same output type (i < the entry's own
//               position).
//
// `explicit` (SigEntry::is_explicit) is true for a value the user wrote (an
// argument or result of the C++ function) and false for an implicit dimension
// value added so that every type is closed. This is JAX's convention;
// reference 000 prints the flags swapped (see its README).
//
// The bind algorithm of reference 000, in these terms (caller scope C, body
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
// their own: initialize() asks the caller for each new value's id.
//
// Where the C++ names map to Catalyst (frontend/catalyst/jax_extras/tracing.py):
//   expand_args      expand_args (infer_input_type_unshared / _constshapes)
//   initialize(in)   input_type_to_tracers   (reference 000's initialize)
//   expand_results   expand_results / infer_output_type
//   initialize(out)  output_type_to_tracers  (reference 000's initialize)
//   collapse         collapse
// and the strategies: for_loop(preserve_dimensions=true) is ArgDims::captured +
// ResultDims::carried, preserve_dimensions=false is ArgDims::unshared +
// ResultDims::unshared; both for-loops force the loop index to OutDBIdx. A
// top-level trace (make_jaxpr) is ArgDims::shared + ResultDims::fresh (JAX).
//
// Deliberate differences from Catalyst: an OutDBIdx always names the FIRST
// result holding the dimension (Catalyst's dict keeps the last, which can point
// forward); with ResultDims::unshared each dimension occurrence refers to its
// own implicit result (Catalyst makes all occurrences of one value refer to the
// last one). Malformed types are errors, not asserts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <dynstage/dtype.hpp>
#include <dynstage/errors.hpp>
#include <dynstage/jaxpr.hpp>

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

// ---------------------------------------------------------------------------
// Signatures.

// A dimension inside a signature entry.
struct SigDim {
  enum class Kind : std::uint8_t {
    fixed,       // a static size: `value`
    db_idx,      // input types: entry `value` of the same input type
    in_db_idx,   // output types: input `value` of the program
    out_db_idx,  // output types: entry `value` of the same output type
    outer,       // input types: the caller's dimension value with id `value`
  };
  Kind kind = Kind::fixed;
  std::int64_t value = 0;

  SigDim() = default;
  SigDim(std::int64_t size) : value(size) {}  // NOLINT: {3, SigDim::db_idx(0)}
  static SigDim db_idx(std::int64_t i) { return SigDim(Kind::db_idx, i); }
  static SigDim in_db_idx(std::int64_t i) { return SigDim(Kind::in_db_idx, i); }
  static SigDim out_db_idx(std::int64_t i) { return SigDim(Kind::out_db_idx, i); }
  static SigDim outer(ValueId id) { return SigDim(Kind::outer, id); }
  bool is_static() const { return kind == Kind::fixed; }
  friend bool operator==(const SigDim&, const SigDim&) = default;

private:
  SigDim(Kind k, std::int64_t v) : kind(k), value(v) {}
};

// The abstract type of one entry: dtype and dimensions.
struct SigType {
  DType dtype = DType::f64;
  std::vector<SigDim> shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_dim_type() const { return dtype == DType::i64 && shape.empty(); }
  friend bool operator==(const SigType&, const SigType&) = default;
};

struct SigEntry {
  SigType type;
  bool is_explicit = true;  // written by the user; false: an implicit dimension value
  friend bool operator==(const SigEntry&, const SigEntry&) = default;
};

namespace detail {
// The list behind InputType and OutputType (two types, so that overloads of
// check/initialize/printing cannot confuse them).
struct SigEntries {
  std::vector<SigEntry> entries;

  SigEntries() = default;
  SigEntries(std::initializer_list<SigEntry> es) : entries(es) {}
  explicit SigEntries(std::vector<SigEntry> es) : entries(std::move(es)) {}

  std::size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty(); }
  const SigEntry& operator[](std::size_t i) const { return entries[i]; }
  auto begin() const { return entries.begin(); }
  auto end() const { return entries.end(); }
  std::size_t num_implicit() const {
    std::size_t n = 0;
    for (const auto& e : entries) n += e.is_explicit ? 0 : 1;
    return n;
  }
  std::size_t num_explicit() const { return size() - num_implicit(); }
};
}  // namespace detail

struct InputType : detail::SigEntries {
  using SigEntries::SigEntries;
  friend bool operator==(const InputType& a, const InputType& b) { return a.entries == b.entries; }
};

struct OutputType : detail::SigEntries {
  using SigEntries::SigEntries;
  friend bool operator==(const OutputType& a, const OutputType& b) { return a.entries == b.entries; }
};

// ---------------------------------------------------------------------------
// Printing: API.md §5 / reference 000, `[(i64[], false), (f64[DBIdx(0)], true)]`.

inline std::string to_string(const SigDim& d) {
  const std::string v = std::to_string(d.value);
  switch (d.kind) {
    case SigDim::Kind::fixed: return v;
    case SigDim::Kind::db_idx: return "DBIdx(" + v + ")";
    case SigDim::Kind::in_db_idx: return "InDBIdx(" + v + ")";
    case SigDim::Kind::out_db_idx: return "OutDBIdx(" + v + ")";
    case SigDim::Kind::outer: return "Outer(" + v + ")";
  }
  detail::internal_error("to_string(SigDim): bad kind tag");
}

namespace detail {
template <class Dims, class DimStr>
std::string join_dims(const Dims& dims, DimStr&& dim_str) {
  std::string r;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) r += ',';
    r += dim_str(dims[i]);
  }
  return r;
}

inline std::string entries_str(const SigEntries& t);
inline std::string entries_python_repr(const SigEntries& t);
}  // namespace detail

// `f64[DBIdx(0),3]`, like a jaxpr type.
inline std::string to_string(const SigType& t) {
  return std::string(dtype_name(t.dtype)) + "[" +
         detail::join_dims(t.shape, [](const SigDim& d) { return to_string(d); }) + "]";
}

// `(f64[DBIdx(0)], true)`
inline std::string to_string(const SigEntry& e) {
  return "(" + to_string(e.type) + ", " + (e.is_explicit ? "true" : "false") + ")";
}

inline std::string to_string(const InputType& t) { return detail::entries_str(t); }
inline std::string to_string(const OutputType& t) { return detail::entries_str(t); }

// A dimension of a value: `3`, or `%7` for the value with id 7.
inline std::string to_string(const DimRef& d) {
  return d.is_static() ? std::to_string(d.size) : "%" + std::to_string(d.id);
}

// `f64[%7,3]` (the value's own id is not shown).
inline std::string to_string(const ValueDesc& v) {
  return std::string(dtype_name(v.dtype)) + "[" +
         detail::join_dims(v.shape, [](const DimRef& d) { return to_string(d); }) + "]";
}

inline std::ostream& operator<<(std::ostream& os, const SigDim& d) { return os << to_string(d); }
inline std::ostream& operator<<(std::ostream& os, const SigType& t) { return os << to_string(t); }
inline std::ostream& operator<<(std::ostream& os, const SigEntry& e) { return os << to_string(e); }
inline std::ostream& operator<<(std::ostream& os, const InputType& t) { return os << to_string(t); }
inline std::ostream& operator<<(std::ostream& os, const OutputType& t) { return os << to_string(t); }
inline std::ostream& operator<<(std::ostream& os, const DimRef& d) { return os << to_string(d); }
inline std::ostream& operator<<(std::ostream& os, const ValueDesc& v) { return os << to_string(v); }

// The Python-like repr of references 000 and 004, byte for byte:
//   ((DShapedArray(shape=(), dtype=int), False),
//    (DShapedArray(shape=[OutDBIdx(0),InDBIdx(0)], dtype=float), True)
//   )
// dtypes as the references write them: i64 -> int, f64 -> float (Python's
// types), the others by their NumPy names (bool, int32, float32).
inline std::string python_repr(const InputType& t) { return detail::entries_python_repr(t); }
inline std::string python_repr(const OutputType& t) { return detail::entries_python_repr(t); }

namespace detail {
inline std::string entries_str(const SigEntries& t) {
  std::string r = "[";
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i) r += ", ";
    r += to_string(t[i]);
  }
  return r + "]";
}

inline std::string python_dtype(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i32: return "int32";
    case DType::i64: return "int";
    case DType::f32: return "float32";
    case DType::f64: return "float";
  }
  internal_error("python_dtype: bad dtype tag");
}

inline std::string entries_python_repr(const SigEntries& t) {
  if (t.empty()) return "()";
  std::string r = "(";
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i) r += ",\n ";
    const SigType& ty = t[i].type;
    const std::string shape =
        ty.shape.empty() ? "()" : "[" + join_dims(ty.shape, [](const SigDim& d) { return to_string(d); }) + "]";
    r += "(DShapedArray(shape=" + shape + ", dtype=" + python_dtype(ty.dtype) + "), " +
         (t[i].is_explicit ? "True" : "False") + ")";
  }
  return r + "\n)";
}

// "input type entry #1 (f64[DBIdx(5)], true)"
inline std::string entry_where(const char* which, std::size_t k, const SigEntry& e) {
  return std::string(which) + " type entry #" + std::to_string(k) + " " + to_string(e);
}

// "; a DBIdx must refer to an earlier entry of the input type (#0 to #2)"
inline std::string earlier_range(const char* idx, const char* which, std::size_t k) {
  std::string r = "; a" + std::string(idx[0] == 'O' ? "n " : " ") + idx + " must refer to an earlier entry of the " +
                  which + " type";
  if (k == 0) return r + ", and entry #0 has none";
  return r + " (#0 to #" + std::to_string(k - 1) + ")";
}

inline void check_static_dim(const std::string& where, const SigDim& d) {
  if (d.value < 0) fail<ShapeError>(where + ": negative dimension " + std::to_string(d.value));
}
}  // namespace detail

// ---------------------------------------------------------------------------
// Validation. Both are called by initialize(); call them on hand-built types.

// An input type is well formed (JAX's _check_input_type, plus dtypes):
// static sizes are >= 0; a DBIdx refers to an EARLIER entry, which is an
// i64[] scalar; InDBIdx/OutDBIdx do not occur; every implicit entry is an
// i64[] scalar that some DBIdx refers to.
inline void check(const InputType& t) {
  using detail::fail;
  std::vector<bool> referenced(t.size(), false);
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::string where = detail::entry_where("input", k, t[k]);
    for (const SigDim& d : t[k].type.shape) {
      switch (d.kind) {
        case SigDim::Kind::fixed: detail::check_static_dim(where, d); break;
        case SigDim::Kind::db_idx: {
          if (d.value < 0 || static_cast<std::size_t>(d.value) >= k)
            fail<IndexError>(where + ": " + to_string(d) + " is out of range" +
                             detail::earlier_range("DBIdx", "input", k));
          const auto j = static_cast<std::size_t>(d.value);
          if (!t[j].type.is_dim_type())
            fail<TypeError>(where + ": " + to_string(d) + " refers to entry #" + std::to_string(j) + " of type " +
                            to_string(t[j].type) + ", but a dimension must be an i64[] scalar");
          referenced[j] = true;
          break;
        }
        case SigDim::Kind::in_db_idx:
        case SigDim::Kind::out_db_idx:
          fail<TypeError>(where + ": " + to_string(d) +
                          " cannot appear in an input type; input types refer to their own entries with DBIdx");
        case SigDim::Kind::outer:
          if (d.value < 0) fail<IndexError>(where + ": " + to_string(d) + " is not a value id (ids are >= 0)");
          break;
      }
    }
  }
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (t[k].is_explicit) continue;
    const std::string where = detail::entry_where("input", k, t[k]);
    if (!t[k].type.is_dim_type())
      fail<TypeError>(where + " is implicit, but an implicit entry must be an i64[] dimension value");
    if (!referenced[k])
      fail<TypeError>(where + " is implicit, but no DBIdx refers to it; an implicit entry exists only to hold a "
                              "dimension of a later entry");
  }
}

// An output type of a program with `num_inputs` inputs (constants followed by
// expanded arguments) is well formed: static sizes are >= 0; an InDBIdx is
// below num_inputs; an OutDBIdx refers to an EARLIER entry, which is an i64[]
// scalar; DBIdx/Outer do not occur; implicit entries are i64[] scalars.
// (Implicit results nobody refers to are allowed: a loop body returns every
// carried dimension, reference 000's `_:i64[]`.)
inline void check(const OutputType& t, std::size_t num_inputs) {
  using detail::fail;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const std::string where = detail::entry_where("output", k, t[k]);
    for (const SigDim& d : t[k].type.shape) {
      switch (d.kind) {
        case SigDim::Kind::fixed: detail::check_static_dim(where, d); break;
        case SigDim::Kind::in_db_idx:
          if (d.value < 0 || static_cast<std::size_t>(d.value) >= num_inputs)
            fail<IndexError>(where + ": " + to_string(d) + " is out of range; an InDBIdx must refer to an input of " +
                             "the program" +
                             (num_inputs == 0 ? std::string(", and it has none")
                                              : " (#0 to #" + std::to_string(num_inputs - 1) + ")"));
          break;
        case SigDim::Kind::out_db_idx: {
          if (d.value < 0 || static_cast<std::size_t>(d.value) >= k)
            fail<IndexError>(where + ": " + to_string(d) + " is out of range" +
                             detail::earlier_range("OutDBIdx", "output", k));
          const auto j = static_cast<std::size_t>(d.value);
          if (!t[j].type.is_dim_type())
            fail<TypeError>(where + ": " + to_string(d) + " refers to entry #" + std::to_string(j) + " of type " +
                            to_string(t[j].type) + ", but a dimension must be an i64[] scalar");
          break;
        }
        case SigDim::Kind::db_idx:
        case SigDim::Kind::outer:
          fail<TypeError>(where + ": " + to_string(d) +
                          " cannot appear in an output type; output types use InDBIdx and OutDBIdx");
      }
    }
    if (!t[k].is_explicit && !t[k].type.is_dim_type())
      fail<TypeError>(where + " is implicit, but an implicit entry must be an i64[] dimension value");
  }
}

// ---------------------------------------------------------------------------
// Step 1 (caller): expand_args.

// How the dynamic dimensions of the arguments become entries.
enum class ArgDims : std::uint8_t {
  // One implicit argument per distinct dimension value, so sharing is kept:
  // a:f64[d], b:f64[d] -> d:i64[], a:f64[d], b:f64[d] (reference 000's
  // default; JAX's infer_lambda_input_type). A dimension that is an EARLIER
  // explicit argument refers to it instead of adding an implicit one.
  shared,
  // One implicit argument per dynamic dimension occurrence, sharing forgotten:
  // a:f64[d], b:f64[d] -> d1:i64[], d2:i64[], a:f64[d1], b:f64[d2]
  // (preserve_dimensions=false; cond).
  unshared,
  // No implicit argument: dimensions stay the caller's, as Outer(id), and
  // initialize() captures them as constants of the body (reference 004,
  // preserve_dimensions=true: `{ lambda ; d:i64[] e:f64[d] f:i64[] g:f64[d]`).
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
  // dimension (Catalyst, preserve_dimensions=true; reference 000's `in (e, j)`).
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

// Position of each variable in constvars ++ invars (the jaxpr's inputs).
inline std::unordered_map<int, std::size_t> input_positions(const Jaxpr& j) {
  std::unordered_map<int, std::size_t> pos;
  std::size_t k = 0;
  for (int v : j.constvars) pos.try_emplace(v, k++);
  for (int v : j.invars) pos.try_emplace(v, k++);
  return pos;
}
}  // namespace detail

// The input type of `j`: one entry per constvar (explicit) and per invar
// (explicit as in_explicit), in that order, which is the order of the
// operands of an equation calling `j` with its constants converted to
// arguments. A dimension must be an earlier input: DBIdx.
inline InputType input_type_of(const Jaxpr& j) {
  using detail::fail;
  if (!j.in_explicit.empty() && j.in_explicit.size() != j.invars.size())
    fail<TypeError>("input_type_of: the jaxpr has " + std::to_string(j.invars.size()) + " invars but " +
                    std::to_string(j.in_explicit.size()) + " explicitness flags");
  std::vector<int> vars = j.constvars;
  vars.insert(vars.end(), j.invars.begin(), j.invars.end());
  const auto pos = detail::input_positions(j);
  InputType t;
  for (std::size_t k = 0; k < vars.size(); ++k) {
    const Type& ty = j.types.at(static_cast<std::size_t>(vars[k]));
    SigType st{ty.dtype, {}};
    for (std::size_t a = 0; a < ty.shape.size(); ++a) {
      const JDim& d = ty.shape[a];
      if (d.is_static()) {
        st.shape.push_back(SigDim(d.value));
        continue;
      }
      auto it = pos.find(d.var);
      if (it == pos.end() || it->second >= k)
        fail<TypeError>("input_type_of: dimension " + std::to_string(a) + " of input #" + std::to_string(k) +
                        " refers to variable %" + std::to_string(d.var) +
                        ", which is not an earlier input (constvar or invar) of the jaxpr");
      st.shape.push_back(SigDim::db_idx(static_cast<std::int64_t>(it->second)));
    }
    const bool is_const = k < j.constvars.size();
    const bool expl = is_const || j.in_explicit.empty() || j.in_explicit[k - j.constvars.size()];
    t.entries.push_back(SigEntry{std::move(st), expl});
  }
  return t;
}

// The output type of `j`: one entry per outvar (explicit as out_explicit). A
// dimension that is an input (constvars ++ invars) is InDBIdx, otherwise it
// must be an earlier outvar: OutDBIdx (the first one holding it).
inline OutputType output_type_of(const Jaxpr& j) {
  using detail::fail;
  if (!j.out_explicit.empty() && j.out_explicit.size() != j.outvars.size())
    fail<TypeError>("output_type_of: the jaxpr has " + std::to_string(j.outvars.size()) + " outvars but " +
                    std::to_string(j.out_explicit.size()) + " explicitness flags");
  const auto pos = detail::input_positions(j);
  OutputType t;
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Type ty = j.type_of(j.outvars[k]);  // a copy: a literal's type is a thread_local
    SigType st{ty.dtype, {}};
    for (std::size_t a = 0; a < ty.shape.size(); ++a) {
      const JDim& d = ty.shape[a];
      if (d.is_static()) {
        st.shape.push_back(SigDim(d.value));
        continue;
      }
      if (auto it = pos.find(d.var); it != pos.end()) {
        st.shape.push_back(SigDim::in_db_idx(static_cast<std::int64_t>(it->second)));
        continue;
      }
      std::size_t first = k;
      for (std::size_t i = 0; i < k; ++i)
        if (j.outvars[i].is_var() && j.outvars[i].var == d.var) {
          first = i;
          break;
        }
      if (first == k)
        fail<TypeError>("output_type_of: dimension " + std::to_string(a) + " of result #" + std::to_string(k) +
                        " refers to variable %" + std::to_string(d.var) +
                        ", which is neither an input of the jaxpr nor an earlier result; return it first, as an "
                        "implicit result");
      st.shape.push_back(SigDim::out_db_idx(static_cast<std::int64_t>(first)));
    }
    t.entries.push_back(SigEntry{std::move(st), j.out_explicit.empty() || j.out_explicit[k]});
  }
  return t;
}

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
