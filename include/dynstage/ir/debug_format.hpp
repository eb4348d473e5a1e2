// dynstage: the format strings of dyn::debug_print ({fmt}'s / Python's
// str.format syntax), parsed into literal text and replacement fields.
//
// The debug_callback primitive's shape rule checks a format against its
// operands with it at trace time; eager/debug_print.hpp formats with it.
// A field is `{}` (the next value), `{k}` (value k), optionally followed by
// `:spec`, a {fmt} format spec (`{:.3f}`, `{:>5}`, `{1:+}`); `{{` and `}}`
// are literal braces. Automatic and manual numbering do not mix (as in
// {fmt} and Python).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "../array/dtype.hpp"
#include "../errors.hpp"

namespace dyn::detail {

struct FormatPiece {
  std::string text;   // literal text before the field (braces unescaped)
  int index = -1;     // the value the field prints; -1: no field (the tail)
  std::string spec;   // after ':', without it
};

// The pieces of `fmt`, and how many values it needs (`count`): the number of
// `{}` fields, or the largest `{k}` + 1. A malformed format is a TypeError
// naming debug_print and the format.
std::vector<FormatPiece> parse_debug_format(const std::string& fmt, std::size_t& count);

// A TypeError unless `fmt` takes exactly `nvalues` values (the shape rule of
// debug_callback and eager both call it).
void check_debug_format(const std::string& fmt, std::size_t nvalues);
// A TypeError unless each field's spec applies to its value's dtype (`{:d}`
// of an f64 does not): {fmt} formats a zero of the dtype with it. Defined in
// eager/debug_print.hpp, where {fmt} is; the shape rule calls it, so a bad
// spec fails when traced, not in a kernel.
void check_debug_specs(const std::string& fmt, const std::vector<DType>& dtypes);

#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<FormatPiece> parse_debug_format(const std::string& fmt, std::size_t& count) {
  auto bad = [&](const std::string& why) {
    fail<TypeError>("debug_print: bad format '" + fmt + "': " + why +
                    " (fields are {}, {:spec}, {k} or {k:spec}; write {{ and }} for braces)");
  };
  std::vector<FormatPiece> pieces;
  FormatPiece cur;
  int next_auto = 0, max_manual = -1;
  bool automatic = false, manual = false;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        cur.text += '}';
        ++i;
        continue;
      }
      bad("a single '}' at position " + std::to_string(i));
    }
    if (c != '{') {
      cur.text += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      cur.text += '{';
      ++i;
      continue;
    }
    const std::size_t close = fmt.find('}', i);
    if (close == std::string::npos) bad("the '{' at position " + std::to_string(i) + " is not closed");
    const std::string field = fmt.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string id = field.substr(0, colon);
    if (colon != std::string::npos) cur.spec = field.substr(colon + 1);
    if (cur.spec.find('{') != std::string::npos) bad("nested fields in a spec are not supported");
    if (id.empty()) {
      automatic = true;
      cur.index = next_auto++;
    } else {
      for (char d : id)
        if (d < '0' || d > '9') bad("field '{" + field + "}' names no value (only positions, like {0})");
      if (id.size() > 6) bad("field '{" + field + "}': position too large");
      manual = true;
      cur.index = std::stoi(id);
      max_manual = std::max(max_manual, cur.index);
    }
    if (automatic && manual) bad("automatic ({}) and manual ({0}) field numbering do not mix");
    pieces.push_back(std::move(cur));
    cur = FormatPiece{};
    i = close;
  }
  pieces.push_back(std::move(cur));  // the tail, index -1
  count = manual ? static_cast<std::size_t>(max_manual + 1) : static_cast<std::size_t>(next_auto);
  return pieces;
}

void check_debug_format(const std::string& fmt, std::size_t nvalues) {
  std::size_t count = 0;
  parse_debug_format(fmt, count);
  if (count != nvalues)
    fail<TypeError>("debug_print: the format '" + fmt + "' has " + std::to_string(count) + " placeholder" +
                    (count == 1 ? "" : "s") + " but " + std::to_string(nvalues) + " value" +
                    (nvalues == 1 ? " was" : "s were") + " given");
}
#endif  // DYNSTAGE_IMPLEMENTATION

}  // namespace dyn::detail
