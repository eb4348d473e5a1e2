// dynstage: printing jaxprs in JAX's text format.
//
// The output is byte-for-byte what JAX prints for the same jaxpr, because the
// layout is computed the way JAX computes it:
//
//  * detail::pp (pretty.hpp) is a port of jax/_src/pretty_printer.py
//    (Wadler/Lindig "strictly pretty" documents: text, concat, brk, group,
//    nest; width 80). A group prints flat iff its own flat width fits in
//    what is left of the line (JAX deliberately ignores the text after the
//    group), otherwise its breaks become newlines at the current nesting.
//  * the jaxpr -> document functions mirror jax/_src/core.py (pp_jaxpr_skeleton,
//    _pp_eqn, pp_eqns, pp_vars, pp_kv_pairs, pp_kv_pair, pp_jaxprs), including
//    the order in which variables are named, since names are handed out while
//    the document is built: constvars, invars, then per equation its outputs,
//    its params (nested jaxprs continue the sequence), its operands; then the
//    outvars. Names are a..z, ba, bb, ... (_encode_digits_alphabetic).
//
// Consequences worth knowing (all are JAX's behaviour, not choices of ours):
//  * a jaxpr whose text fits in 80 columns prints on one line, with
//    equations separated by "; ":  { lambda ; a:f64[3]. let b:f64[3] = neg a in (b,) }
//    The same holds for a nested jaxpr inside params. The closing " }" is
//    outside the group that must fit, so such a line can reach 82 columns.
//  * an equation's params break one per line when `[...]` does not fit; its
//    operands wrap (indented 2 more) only when the line is already full: each
//    separator between variables is its own group, so a line may run past
//    column 80 by the length of one variable.
//  * with constvars the header reads `{ lambda a:f32[16]; b:f32[16]. let`.
//  * literals print as str(np.asarray(val).item()) + ":" + type, so an f32
//    literal prints the Python repr of its value widened to double
//    (0.1f -> 0.10000000149011612:f32[], 1e-6f -> 9.999999974752427e-07:f32[]).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <map>
#include <utility>
#include <vector>

#include "../array/dtype.hpp"
#include "../errors.hpp"
#include "jaxpr.hpp"
#include "pretty.hpp"
#include "prims.hpp"

namespace dyn {

namespace detail {

// Python's repr of a double ("1e-05", "1.0", "inf").
std::string py_float_repr(double v);
std::string py_complex_repr(double re, double im);
// A literal's value as JAX prints it: str(np.asarray(val).item()).
std::string format_scalar(const Scalar& s);
std::string py_tuple(const std::vector<std::int64_t>& xs);
std::string py_list(const std::vector<std::int64_t>& xs);
std::string py_bool(bool b);
// Python's repr of a str: 'text', or "text" when it holds ' and no "; \\, \n, \t escaped.
std::string py_str_repr(const std::string& s);
// a..z, ba, bb, ... (core._encode_digits_alphabetic).
std::string encode_digits_alphabetic(std::int64_t n);

// Hands out names in order of first request, across a jaxpr and its nested
// jaxprs (core.JaxprPpContext). A variable is (its jaxpr, its index).
class PpContext {
public:
  const std::string& name(const Jaxpr& j, int var);

private:
  // Only looked up, never iterated: a std::map keeps <unordered_map> out of
  // every user file (symbolic.hpp needs <map> anyway).
  std::map<const Jaxpr*, std::vector<std::string>> names_;
  std::int64_t next_ = 0;
};


// A type inside jaxpr `j`, naming its dimension variables in `ctx`.
std::string type_str(const Type& t, const Jaxpr& j, PpContext& ctx);
// Params: `key=value` pairs of one equation, sorted by key as JAX does.
std::vector<pp::KeyValue> param_kvs(const Params& params, PpContext& ctx);
const Type& var_type(const Jaxpr& j, int v);
// `a:f64[3,4]`: a binder, named before its type's dimensions (as pp_vars).
std::string binder_str(const Jaxpr& j, int v, PpContext& ctx);
// An operand: a variable's name, or a literal `1.0:f64[]`.
std::string atom_str(const Jaxpr& j, const Atom& a, PpContext& ctx);
pp::Doc binders_doc(const Jaxpr& j, const std::vector<int>& vs, PpContext& ctx);
pp::Doc atoms_doc(const Jaxpr& j, const std::vector<Atom>& as, PpContext& ctx, std::string_view sep = "");
pp::Doc pp_eqn(const Jaxpr& j, const Eqn& e, PpContext& ctx);
pp::Doc pp_jaxpr(const Jaxpr& j, PpContext& ctx);
// The text of a jaxpr laid out in `width` columns (JAX's default is 80).
std::string format_jaxpr(const Jaxpr& j, int width = 80);

}  // namespace detail

// The public entry points are out of line: their definitions (and the
// printer they pull in) are compiled once per program, in the translation
// unit that defines DYNSTAGE_IMPLEMENTATION, as is the detail:: printer
// declared above (tests call it directly and link the implementation).
std::string to_string(const Jaxpr& j);
// A ClosedJaxpr prints as its jaxpr (JAX does not print the constants).
std::string to_string(const ClosedJaxpr& cj);
std::ostream& operator<<(std::ostream& os, const Jaxpr& j);
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& cj);

#ifdef DYNSTAGE_IMPLEMENTATION
std::string to_string(const Jaxpr& j) { return detail::format_jaxpr(j); }

std::string to_string(const ClosedJaxpr& cj) {
  if (!cj.jaxpr) detail::internal_error("print: ClosedJaxpr without a jaxpr");
  return detail::format_jaxpr(*cj.jaxpr);
}

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << to_string(j); }
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& cj) { return os << to_string(cj); }
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn

// ---------------------------------------------------------------------------
// The printer's definitions: compiled once per program (non-inline).
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>
#include <variant>

namespace dyn {
namespace detail {

// ---------------------------------------------------------------------------
// Values as Python prints them.

// Python's repr of a double: shortest round-trip digits; scientific notation
// when the decimal exponent is < -4 or >= 16 ("1e-05", "1e+16"), else
// positional with at least one fractional digit ("1.0", "0.0001",
// "1000000000000000.0"); "inf", "-inf", "nan", "-0.0".
std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  if (res.ec != std::errc{}) internal_error("py_float_repr: to_chars failed");
  std::string_view s(buf, static_cast<std::size_t>(res.ptr - buf));
  std::string out;
  if (s.front() == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  // s is "d[.ddd]e[+-]xx": collect the digits and the exponent.
  auto e_pos = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e_pos))
    if (c != '.') digits += c;
  int exp10 = 0;
  {
    std::string_view es = s.substr(e_pos + 1);
    if (!es.empty() && es.front() == '+') es.remove_prefix(1);
    std::from_chars(es.data(), es.data() + es.size(), exp10);
  }
  const int ndigits = static_cast<int>(digits.size());
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (ndigits > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += 'e';
    out += exp10 < 0 ? '-' : '+';
    int a = exp10 < 0 ? -exp10 : exp10;
    if (a < 10) out += '0';
    out += std::to_string(a);
    return out;
  }
  const int decpt = exp10 + 1;  // digits before the decimal point
  if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-decpt), '0');
    out += digits;
  } else if (decpt < ndigits) {
    out.append(digits, 0, static_cast<std::size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<std::size_t>(decpt), std::string::npos);
  } else {
    out += digits;
    out.append(static_cast<std::size_t>(decpt - ndigits), '0');
    out += ".0";
  }
  return out;
}

// Python's repr of a complex number: "(1+2j)", "(1.5-0.25j)", "2j" (a real
// part of +0 is left out, with the parentheses), "(nan+infj)"; each part is
// written as repr(float) without the ".0" it adds ("(1+2j)", not
// "(1.0+2.0j)"), as CPython's complex_repr does.
std::string py_complex_repr(double re, double im) {
  auto part = [](double v) {
    std::string t = py_float_repr(v);
    if (t.size() > 2 && t.compare(t.size() - 2, 2, ".0") == 0) t.resize(t.size() - 2);
    return t;
  };
  std::string i = part(im);
  if (re == 0.0 && !std::signbit(re)) return i + "j";
  if (i.front() != '-') i = "+" + i;
  return "(" + part(re) + i + "j)";
}

// A literal's value as JAX prints it: str(np.asarray(val).item()), i.e.
// Python's str of a bool, int, float or complex. An f32 value is widened to double
// first, as .item() does, so it shows all digits of the float32 value.
std::string format_scalar(const Scalar& s) {
  switch (s.dtype) {
    case DType::bool_: return s.i != 0 ? "True" : "False";
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
    case DType::u8:
    case DType::u16:
    case DType::u32: return std::to_string(s.i);
    case DType::u64: return std::to_string(static_cast<std::uint64_t>(s.i));
    case DType::f32: return py_float_repr(static_cast<double>(static_cast<float>(s.f)));
    case DType::f64: return py_float_repr(s.f);
    case DType::c64:
      return py_complex_repr(static_cast<double>(static_cast<float>(s.f)), static_cast<double>(static_cast<float>(s.fi)));
    case DType::c128: return py_complex_repr(s.f, s.fi);
  }
  internal_error("format_scalar: bad dtype tag");
}

// Python's str of a tuple of ints: "()", "(3,)", "(3, 4)"; kDynamicDim
// (a size given at run time) prints None.
std::string py_tuple(const std::vector<std::int64_t>& xs) {
  std::string r = "(";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i) r += ", ";
    r += xs[i] == kDynamicDim ? std::string("None") : std::to_string(xs[i]);
  }
  if (xs.size() == 1) r += ",";
  return r + ")";
}

// Python's str of a list of ints: "[]", "[1]", "[0, 1]".
std::string py_list(const std::vector<std::int64_t>& xs) {
  std::string r = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(xs[i]);
  }
  return r + "]";
}

std::string py_bool(bool b) { return b ? "True" : "False"; }
std::string py_str_repr(const std::string& s) {
  const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string r(1, q);
  for (char c : s) {
    if (c == '\\') r += "\\\\";
    else if (c == '\n') r += "\\n";
    else if (c == '\t') r += "\\t";
    else if (c == q) r += std::string("\\") + q;
    else r += c;
  }
  return r + q;
}

// ---------------------------------------------------------------------------
// Naming.

// a..z, ba, bb, ... (core._encode_digits_alphabetic): base-26 digits a..z,
// so 26 -> "ba" (there is no "aa").
std::string encode_digits_alphabetic(std::int64_t n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n);
  return s;
}

const std::string& PpContext::name(const Jaxpr& j, int var) {
  auto& table = names_[&j];
  if (var < 0) internal_error("print: negative variable index");
  if (table.size() <= static_cast<std::size_t>(var)) table.resize(static_cast<std::size_t>(var) + 1);
  auto& n = table[static_cast<std::size_t>(var)];
  if (n.empty()) n = encode_digits_alphabetic(next_++);
  return n;
}

// `f64[3,a]`: a type with its variable dimensions named by `var_name(int)`.
template <class VarName>
std::string type_str(const Type& t, VarName&& var_name) {
  std::string r(dtype_name(t.dtype));
  r += '[';
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) r += ',';
    const JDim& d = t.shape[i];
    if (d.is_static()) r += std::to_string(d.value);
    else r += var_name(d.var);
  }
  return r + ']';
}

// A type inside jaxpr `j`, naming its dimension variables in `ctx`.
std::string type_str(const Type& t, const Jaxpr& j, PpContext& ctx) {
  return type_str(t, [&](int v) -> std::string { return ctx.name(j, v); });
}

// ---------------------------------------------------------------------------
// Params: `key=value` pairs of one equation, sorted by key as JAX does
// (pp_kv_pair prints str(value)). A jaxpr-valued param (control flow) is one
// more overload that captures ctx, so names continue into the body:
//   [&ctx](const ForLoopParams& p) {
//     return std::vector<pp::KeyValue>{{"body_jaxpr", pp_jaxpr(*p.body, ctx)},
//                                      {"body_nconsts", text(std::to_string(p.nconsts))}, ...};
//   }
// and a tuple of jaxprs (cond's branches) is pp::jaxprs({pp_jaxpr(*b, ctx)...}).

pp::Doc pp_jaxpr(const Jaxpr& j, PpContext& ctx);

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::vector<pp::KeyValue> param_kvs(const Params& params, [[maybe_unused]] PpContext& ctx) {
  using pp::text;
  // One overload per Params alternative and no catch-all, so a new params
  // type fails to compile here until it is given a spelling.
  auto kvs = std::visit(
      Overloaded{
          [](const NoParams&) { return std::vector<pp::KeyValue>{}; },
          [](const ConvertParams& p) {
            return std::vector<pp::KeyValue>{{"new_dtype", text(std::string(dtype_numpy_name(p.new_dtype)))},
                                             {"weak_type", text(py_bool(p.weak_type))}};
          },
          [](const ConjParams& p) {
            return std::vector<pp::KeyValue>{{"input_dtype", text(std::string(dtype_numpy_name(p.input_dtype)))}};
          },
          [](const RoundParams& p) {
            return std::vector<pp::KeyValue>{{"rounding_method", text(std::to_string(p.rounding_method))}};
          },
          [](const IntegerPowParams& p) {
            return std::vector<pp::KeyValue>{{"y", text(std::to_string(p.y))}};
          },
          [](const BroadcastInDimParams& p) {
            return std::vector<pp::KeyValue>{{"broadcast_dimensions", text(py_tuple(p.broadcast_dimensions))},
                                             {"shape", text(py_tuple(p.shape))}};
          },
          [](const ReshapeParams& p) {
            return std::vector<pp::KeyValue>{{"dimensions", text("None")}, {"new_sizes", text(py_tuple(p.new_sizes))}};
          },
          [](const TransposeParams& p) {
            return std::vector<pp::KeyValue>{{"permutation", text(py_tuple(p.permutation))}};
          },
          [](const SqueezeParams& p) {
            return std::vector<pp::KeyValue>{{"dimensions", text(py_tuple(p.dimensions))}};
          },
          [](const ConcatenateParams& p) {
            return std::vector<pp::KeyValue>{{"dimension", text(std::to_string(p.dimension))}};
          },
          [](const SliceParams& p) {
            return std::vector<pp::KeyValue>{{"limit_indices", text(py_tuple(p.limit_indices))},
                                             {"start_indices", text(py_tuple(p.start_indices))},
                                             {"strides", text(p.strides.empty() ? "None" : py_tuple(p.strides))}};
          },
          [](const RevParams& p) { return std::vector<pp::KeyValue>{{"dimensions", text(py_tuple(p.dimensions))}}; },
          [](const PadParams& p) {  // ((lo, hi, interior), ...), as JAX prints it
            std::string t = "(";
            for (std::size_t i = 0; i < p.padding_config.size(); ++i)
              t += (i ? ", " : "") +
                   py_tuple({p.padding_config[i].lo, p.padding_config[i].hi, p.padding_config[i].interior});
            return std::vector<pp::KeyValue>{{"padding_config", text(t + (p.padding_config.size() == 1 ? ",)" : ")"))}};
          },
          [](const DynamicSliceParams& p) {
            return std::vector<pp::KeyValue>{{"slice_sizes", text(py_tuple(p.slice_sizes))}};
          },
          [](const IotaParams& p) {
            return std::vector<pp::KeyValue>{{"dimension", text(std::to_string(p.dimension))},
                                             {"dtype", text(std::string(dtype_numpy_name(p.dtype)))},
                                             {"shape", text(py_tuple(p.shape))}};
          },
          // JAX's spelling; dynstage's gathers always clamp (CLIP) and its
          // scatters drop what does not fit (FILL_OR_DROP).
          [](const GatherParams& p) {
            return std::vector<pp::KeyValue>{
                {"dimension_numbers",
                 text("GatherDimensionNumbers(offset_dims=" + py_tuple(p.offset_dims) +
                      ", collapsed_slice_dims=" + py_tuple(p.collapsed_slice_dims) +
                      ", start_index_map=" + py_tuple(p.start_index_map) +
                      ", operand_batching_dims=(), start_indices_batching_dims=())")},
                {"fill_value", text("None")},
                {"indices_are_sorted", text("False")},
                {"mode", text("GatherScatterMode.CLIP")},
                {"slice_sizes", text(py_tuple(p.slice_sizes))},
                {"unique_indices", text("False")}};
          },
          [](const ScatterParams& p) {
            return std::vector<pp::KeyValue>{
                {"dimension_numbers",
                 text("ScatterDimensionNumbers(update_window_dims=" + py_tuple(p.update_window_dims) +
                      ", inserted_window_dims=" + py_tuple(p.inserted_window_dims) +
                      ", scatter_dims_to_operand_dims=" + py_tuple(p.scatter_dims_to_operand_dims) +
                      ", operand_batching_dims=(), scatter_indices_batching_dims=())")},
                {"indices_are_sorted", text("False")},
                {"mode", text("GatherScatterMode.FILL_OR_DROP")},
                {"unique_indices", text("False")},
                {"update_consts", text("()")},
                {"update_jaxpr", text("None")}};
          },
          [](const ReduceParams& p) { return std::vector<pp::KeyValue>{{"axes", text(py_tuple(p.axes))}}; },
          [](const ArgReduceParams& p) {
            return std::vector<pp::KeyValue>{{"axes", text(py_tuple(p.axes))},
                                             {"index_dtype", text(std::string(dtype_numpy_name(p.index_dtype)))}};
          },
          [](const CumulativeParams& p) {
            return std::vector<pp::KeyValue>{{"axis", text(std::to_string(p.axis))}, {"reverse", text(py_bool(p.reverse))}};
          },
          [](const SortParams& p) {
            return std::vector<pp::KeyValue>{{"dimension", text(std::to_string(p.dimension))},
                                             {"is_stable", text(py_bool(p.is_stable))},
                                             {"num_keys", text(std::to_string(p.num_keys))}};
          },
          // fft_type as current JAX prints it: its FftType is an IntEnum,
          // whose str() is the number on Python >= 3.11 (docs/jaxpr.md).
          [](const FftParams& p) {
            return std::vector<pp::KeyValue>{{"fft_lengths", text(py_tuple(p.fft_lengths))},
                                             {"fft_type", text(std::to_string(static_cast<int>(p.fft_type)))}};
          },
          [](const TopKParams& p) {
            return std::vector<pp::KeyValue>{{"axis", text(std::to_string(p.axis))}, {"k", text(std::to_string(p.k))}};
          },
          // JAX prints its Python callback (`callback=<function ...
          // _flat_callback at 0x...>`); dynstage's one callback is printing
          // with a format, shown in its place.
          [](const DebugCallbackParams& p) {
            return std::vector<pp::KeyValue>{{"callback", text("<function debug_print fmt=" + py_str_repr(p.fmt) + ">")},
                                             {"effect", text("Debug")}};
          },
          // The collectives: JAX's parameter lists (ir/params.hpp, CollectiveParams).
          [](const CollectiveParams& p) {
            std::string names = "(";
            for (std::size_t k = 0; k < p.axes.size(); ++k) names += (k ? ", " : "") + py_str_repr(p.axes[k]);
            names += p.axes.size() == 1 ? ",)" : ")";
            const std::string name = p.axes.size() == 1 ? p.axes[0] : names;
            switch (p.form) {
              case CollectiveForm::reduce:
                return std::vector<pp::KeyValue>{{"axes", text(names)}, {"axis_index_groups", text("None")}};
              case CollectiveForm::gather:
                return std::vector<pp::KeyValue>{{"all_gather_dimension", text(std::to_string(p.dimension))},
                                                 {"axis_index_groups", text("None")},
                                                 {"axis_name", text(names)},
                                                 {"axis_size", text(std::to_string(p.axis_size))},
                                                 {"tiled", text(py_bool(p.tiled))}};
              case CollectiveForm::permute: {
                std::string perm = "(";
                for (std::size_t k = 0; k < p.perm.size(); ++k)
                  perm += (k ? ", (" : "(") + std::to_string(p.perm[k].first) + ", " + std::to_string(p.perm[k].second) + ")";
                perm += p.perm.size() == 1 ? ",)" : ")";
                return std::vector<pp::KeyValue>{{"axis_name", text(name)}, {"perm", text(perm)}};
              }
              case CollectiveForm::to_all:
                return std::vector<pp::KeyValue>{{"axis_index_groups", text("None")},
                                                 {"axis_name", text(name)},
                                                 {"concat_axis", text(std::to_string(p.concat_axis))},
                                                 {"split_axis", text(std::to_string(p.dimension))},
                                                 {"tiled", text(py_bool(p.tiled))}};
              case CollectiveForm::index: return std::vector<pp::KeyValue>{{"axis_name", text(name)}};
            }
            return std::vector<pp::KeyValue>{};
          },
          [](const DotGeneralParams& p) {
            return std::vector<pp::KeyValue>{
                {"dimension_numbers", text("((" + py_list(p.lhs_contracting) + ", " + py_list(p.rhs_contracting) +
                                           "), (" + py_list(p.lhs_batch) + ", " + py_list(p.rhs_batch) + "))")}};
          },
          // Bodies are printed where their key sorts, naming their variables
          // on from the equation's outputs (JAX's order).
          [&ctx](const ForLoopParams& p) {
            std::vector<pp::KeyValue> kvs;
            kvs.push_back({"body_jaxpr", pp_jaxpr(*p.body_jaxpr, ctx)});
            kvs.push_back({"body_nconsts", text(std::to_string(p.body_nconsts))});
            kvs.push_back({"nimplicit", text(std::to_string(p.nimplicit))});
            kvs.push_back({"preserve_dimensions", text(py_bool(p.preserve_dimensions))});
            return kvs;
          },
          [&ctx](const WhileLoopParams& p) {
            std::vector<pp::KeyValue> kvs;
            kvs.push_back({"body_jaxpr", pp_jaxpr(*p.body_jaxpr, ctx)});
            kvs.push_back({"body_nconsts", text(std::to_string(p.body_nconsts))});
            kvs.push_back({"cond_jaxpr", pp_jaxpr(*p.cond_jaxpr, ctx)});
            kvs.push_back({"cond_nconsts", text(std::to_string(p.cond_nconsts))});
            kvs.push_back({"nimplicit", text(std::to_string(p.nimplicit))});
            kvs.push_back({"preserve_dimensions", text(py_bool(p.preserve_dimensions))});
            return kvs;
          },
          // Catalyst's cond (a bool predicate) prints branch_jaxprs and
          // nimplicit_outputs; the indexed form prints JAX's branches, and
          // nimplicit_outputs only when some result size is dynamic.
          [&ctx](const CondParams& p) {
            std::vector<pp::Doc> docs;
            for (const auto& b : p.branches) docs.push_back(pp_jaxpr(*b, ctx));
            std::vector<pp::KeyValue> kvs;
            kvs.push_back({p.indexed ? "branches" : "branch_jaxprs", pp::jaxprs(docs)});
            if (!p.indexed || p.nimplicit_outputs != 0)
              kvs.push_back({"nimplicit_outputs", text(std::to_string(p.nimplicit_outputs))});
            return kvs;
          },
          // jax.checkpoint as JAX prints it (policy: JAX's None, nothing saveable).
          [&ctx](const CheckpointParams& p) {
            std::vector<pp::KeyValue> kvs;
            kvs.push_back({"differentiated", text(py_bool(p.differentiated))});
            kvs.push_back({"jaxpr", pp_jaxpr(*p.jaxpr, ctx)});
            kvs.push_back({"policy", text("None")});
            kvs.push_back({"prevent_cse", text(py_bool(p.prevent_cse))});
            return kvs;
          },
          // lax.scan as JAX prints it; `linear` has one False per data
          // operand (consts, carry, xs; not a dynamic length).
          [&ctx](const ScanParams& p) {
            const std::size_t n = p.jaxpr->invars.size();
            std::string linear = "(";
            for (std::size_t q = 0; q < n; ++q) linear += q == 0 ? "False" : ", False";
            linear += n == 1 ? ",)" : ")";
            std::vector<pp::KeyValue> kvs;
            kvs.push_back({"_split_transpose", text("False")});
            kvs.push_back({"jaxpr", pp_jaxpr(*p.jaxpr, ctx)});
            kvs.push_back({"length", text(p.length < 0 ? "None" : std::to_string(p.length))});
            kvs.push_back({"linear", text(linear)});
            kvs.push_back({"num_carry", text(std::to_string(p.num_carry))});
            kvs.push_back({"num_consts", text(std::to_string(p.num_consts))});
            kvs.push_back({"reverse", text(py_bool(p.reverse))});
            kvs.push_back({"unroll", text("1")});
            return kvs;
          },
      },
      params);
  std::stable_sort(kvs.begin(), kvs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return kvs;
}

// ---------------------------------------------------------------------------
// The IR walk. Each step names variables in JAX's order, so statements are
// sequenced explicitly (never two naming calls in one expression).

const Type& var_type(const Jaxpr& j, int v) {
  if (v < 0 || static_cast<std::size_t>(v) >= j.types.size())
    internal_error("print: variable " + std::to_string(v) + " is outside the jaxpr's table of " +
                   std::to_string(j.types.size()) + " variables");
  return j.types[static_cast<std::size_t>(v)];
}

// `a:f64[3,4]`: a binder, named before its type's dimensions (as pp_vars).
std::string binder_str(const Jaxpr& j, int v, PpContext& ctx) {
  std::string s = ctx.name(j, v);
  s += ':';
  s += type_str(var_type(j, v), j, ctx);
  return s;
}

// An operand: a variable's name, or a literal `1.0:f64[]`.
std::string atom_str(const Jaxpr& j, const Atom& a, PpContext& ctx) {
  if (a.is_var()) return ctx.name(j, a.var);
  return format_scalar(a.lit) + ":" + std::string(dtype_name(a.lit.dtype)) + "[]";
}

pp::Doc binders_doc(const Jaxpr& j, const std::vector<int>& vs, PpContext& ctx) {
  std::vector<std::string> items;
  items.reserve(vs.size());
  for (int v : vs) items.push_back(binder_str(j, v, ctx));
  return pp::vars(items);
}

pp::Doc atoms_doc(const Jaxpr& j, const std::vector<Atom>& as, PpContext& ctx, std::string_view sep) {
  std::vector<std::string> items;
  items.reserve(as.size());
  for (const Atom& a : as) items.push_back(atom_str(j, a, ctx));
  return pp::vars(items, sep);
}

pp::Doc pp_eqn(const Jaxpr& j, const Eqn& e, PpContext& ctx) {
  pp::Doc lhs = binders_doc(j, e.outputs, ctx);
  pp::Doc params = pp::kv_pairs(param_kvs(e.params, ctx));
  pp::Doc operands = atoms_doc(j, e.inputs, ctx);
  return pp::eqn(std::move(lhs), !e.outputs.empty(), prim_name(e.prim), std::move(params), std::move(operands));
}

pp::Doc pp_jaxpr(const Jaxpr& j, PpContext& ctx) {
  pp::Doc constvars = binders_doc(j, j.constvars, ctx);
  pp::Doc invars = binders_doc(j, j.invars, ctx);
  std::vector<pp::Doc> eqns;
  eqns.reserve(j.eqns.size());
  for (const Eqn& e : j.eqns) eqns.push_back(pp_eqn(j, e, ctx));
  pp::Doc outvars = atoms_doc(j, j.outvars, ctx, ",");
  return pp::jaxpr(std::move(constvars), std::move(invars), eqns, std::move(outvars), j.outvars.size());
}

// The text of a jaxpr laid out in `width` columns (JAX's default is 80).
std::string format_jaxpr(const Jaxpr& j, int width) {
  PpContext ctx;
  return pp::format(pp_jaxpr(j, ctx), width);
}

}  // namespace detail
}  // namespace dyn

#endif  // DYNSTAGE_IMPLEMENTATION
