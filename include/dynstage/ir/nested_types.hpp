// dynstage: the input and output types of nested programs (API.md §5; the
// Catalyst tracing note and the Catalyst dynamic-arrays doc).
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
//               (dynstage's spelling of a tracer inside a JAX in_type, for
//               Catalyst's preserve_dimensions=true; in a jaxpr such a
//               dimension is a constvar of the body, so input_type_of never
//               gives it).
//   OutputType  the expanded results. A dimension is a static size,
//               InDBIdx(i): the value of input i of the nested program (its
//               constants followed by its expanded arguments, i.e. the
//               operands of the equation that calls it), or OutDBIdx(i): the
//               value of entry i of the same output type (i < the entry's own
//               position).
//
// `explicit` (SigEntry::is_explicit) is true for a value the user wrote (an
// argument or result of the C++ function) and false for an implicit dimension
// value added so that every type is closed. This is JAX's convention; the
// Catalyst tracing note's examples print the flags swapped.
//
// Types print as API.md §5 and the Catalyst tracing note write them,
// `[(i64[], false), (f64[DBIdx(0)], true)]` (to_string, operator<<), and as
// the Catalyst documents' Python repr (python_repr). input_type_of /
// output_type_of give them for any jaxpr, such as a loop body. Control flow
// (trace/control*.hpp) does not use them: it runs the bind algorithm on
// symbolic dimensions directly, and these types are what that algorithm
// gives, written the Catalyst documents' way.
//
// Deliberate difference from Catalyst: an OutDBIdx always names the FIRST
// result holding the dimension (Catalyst's dict keeps the last, which can
// point forward). Malformed types are errors (check), not asserts.
//
// The multi-line definitions are compiled once per program, in the
// translation unit that defines DYNSTAGE_IMPLEMENTATION (docs/architecture.md,
// "Compile cost").
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../array/dtype.hpp"
#include "../errors.hpp"
#include "jaxpr.hpp"

namespace dyn {

// A dimension inside a type entry.
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
  static SigDim outer(std::int64_t id) { return SigDim(Kind::outer, id); }
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
// check and printing cannot confuse them).
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

// (operator== is defined out of line: an inline body would instantiate the
// comparisons of every member vector in each user file.)
struct InputType : detail::SigEntries {
  using SigEntries::SigEntries;
  friend bool operator==(const InputType& a, const InputType& b);
};

struct OutputType : detail::SigEntries {
  using SigEntries::SigEntries;
  friend bool operator==(const OutputType& a, const OutputType& b);
};

// ---------------------------------------------------------------------------
// Printing: API.md §5 / the Catalyst tracing note,
// `[(i64[], false), (f64[DBIdx(0)], true)]`.

// `3`, `DBIdx(0)`, `InDBIdx(1)`, `OutDBIdx(0)`, `Outer(7)`
std::string to_string(const SigDim& d);
// `f64[DBIdx(0),3]`, like a jaxpr type.
std::string to_string(const SigType& t);
// `(f64[DBIdx(0)], true)`
std::string to_string(const SigEntry& e);
std::string to_string(const InputType& t);
std::string to_string(const OutputType& t);

inline std::ostream& operator<<(std::ostream& os, const SigDim& d) { return os << to_string(d); }
inline std::ostream& operator<<(std::ostream& os, const SigType& t) { return os << to_string(t); }
inline std::ostream& operator<<(std::ostream& os, const SigEntry& e) { return os << to_string(e); }
inline std::ostream& operator<<(std::ostream& os, const InputType& t) { return os << to_string(t); }
inline std::ostream& operator<<(std::ostream& os, const OutputType& t) { return os << to_string(t); }

// The Python-like repr of the Catalyst tracing note and dynamic-arrays doc,
// byte for byte:
//   ((DShapedArray(shape=(), dtype=int), False),
//    (DShapedArray(shape=[OutDBIdx(0),InDBIdx(0)], dtype=float), True)
//   )
// dtypes as those documents write them: i64 -> int, f64 -> float (Python's
// types), the others by their NumPy names (bool, int32, float32).
std::string python_repr(const InputType& t);
std::string python_repr(const OutputType& t);

namespace detail {
// "a,b,c": the dimensions printed by dim_str, comma-separated.
template <class Dims, class DimStr>
std::string join_dims(const Dims& dims, DimStr&& dim_str) {
  std::string r;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) r += ',';
    r += dim_str(dims[i]);
  }
  return r;
}

// "input type entry #1 (f64[DBIdx(5)], true)": where an error message points.
std::string entry_where(const char* which, std::size_t k, const SigEntry& e);
}  // namespace detail

// ---------------------------------------------------------------------------
// Validation: call them on hand-built types.

// An input type is well formed (JAX's _check_input_type, plus dtypes):
// static sizes are >= 0; a DBIdx refers to an EARLIER entry, which is an
// i64[] scalar; InDBIdx/OutDBIdx do not occur; every implicit entry is an
// i64[] scalar that some DBIdx refers to. Throws IndexError or TypeError
// (ShapeError for a negative size) naming the entry.
void check(const InputType& t);

// An output type of a program with `num_inputs` inputs (constants followed by
// expanded arguments) is well formed: static sizes are >= 0; an InDBIdx is
// below num_inputs; an OutDBIdx refers to an EARLIER entry, which is an i64[]
// scalar; DBIdx/Outer do not occur; implicit entries are i64[] scalars.
// (Implicit results nobody refers to are allowed: a loop body returns every
// carried dimension, the Catalyst tracing note's `_:i64[]`.)
void check(const OutputType& t, std::size_t num_inputs);

// ---------------------------------------------------------------------------
// The types of a jaxpr (e.g. a loop body: `*params.body_jaxpr`).

// The input type of `j`: one entry per constvar (explicit) and per invar
// (explicit as in_explicit), in that order, which is the order of the
// operands of an equation calling `j` with its constants converted to
// arguments. A dimension must be an earlier input: DBIdx.
InputType input_type_of(const Jaxpr& j);

// The output type of `j`: one entry per outvar (explicit as out_explicit). A
// dimension that is an input (constvars ++ invars) is InDBIdx, otherwise it
// must be an earlier outvar: OutDBIdx (the first one holding it).
OutputType output_type_of(const Jaxpr& j);

}  // namespace dyn

// ---------------------------------------------------------------------------
// Definitions: compiled once per program (non-inline).
#ifdef DYNSTAGE_IMPLEMENTATION

#include <unordered_map>

namespace dyn {

namespace detail {
std::string entries_str(const SigEntries& t) {
  std::string r = "[";
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i) r += ", ";
    r += to_string(t[i]);
  }
  return r + "]";
}

std::string python_dtype(DType d) {
  switch (d) {
    case DType::bool_: return "bool";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::i32: return "int32";
    case DType::i64: return "int";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
    case DType::u64: return "uint64";
    case DType::f32: return "float32";
    case DType::f64: return "float";
    case DType::c64: return "complex64";
    case DType::c128: return "complex";
  }
  internal_error("python_dtype: bad dtype tag");
}

std::string entries_python_repr(const SigEntries& t) {
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

std::string entry_where(const char* which, std::size_t k, const SigEntry& e) {
  return std::string(which) + " type entry #" + std::to_string(k) + " " + to_string(e);
}

// "; a DBIdx must refer to an earlier entry of the input type (#0 to #2)"
std::string earlier_range(const char* idx, const char* which, std::size_t k) {
  std::string r = "; a" + std::string(idx[0] == 'O' ? "n " : " ") + idx + " must refer to an earlier entry of the " +
                  which + " type";
  if (k == 0) return r + ", and entry #0 has none";
  return r + " (#0 to #" + std::to_string(k - 1) + ")";
}

void check_static_dim(const std::string& where, const SigDim& d) {
  if (d.value < 0) fail<ShapeError>(where + ": negative dimension " + std::to_string(d.value));
}

// Position of each variable in constvars ++ invars (the jaxpr's inputs).
std::unordered_map<int, std::size_t> input_positions(const Jaxpr& j) {
  std::unordered_map<int, std::size_t> pos;
  std::size_t k = 0;
  for (int v : j.constvars) pos.try_emplace(v, k++);
  for (int v : j.invars) pos.try_emplace(v, k++);
  return pos;
}
}  // namespace detail

bool operator==(const InputType& a, const InputType& b) { return a.entries == b.entries; }
bool operator==(const OutputType& a, const OutputType& b) { return a.entries == b.entries; }

std::string to_string(const SigDim& d) {
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

std::string to_string(const SigType& t) {
  return std::string(dtype_name(t.dtype)) + "[" +
         detail::join_dims(t.shape, [](const SigDim& d) { return to_string(d); }) + "]";
}

std::string to_string(const SigEntry& e) {
  return "(" + to_string(e.type) + ", " + (e.is_explicit ? "true" : "false") + ")";
}

std::string to_string(const InputType& t) { return detail::entries_str(t); }
std::string to_string(const OutputType& t) { return detail::entries_str(t); }

std::string python_repr(const InputType& t) { return detail::entries_python_repr(t); }
std::string python_repr(const OutputType& t) { return detail::entries_python_repr(t); }

void check(const InputType& t) {
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

void check(const OutputType& t, std::size_t num_inputs) {
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

InputType input_type_of(const Jaxpr& j) {
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

OutputType output_type_of(const Jaxpr& j) {
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

}  // namespace dyn

#endif  // DYNSTAGE_IMPLEMENTATION
