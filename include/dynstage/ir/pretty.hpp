// dynstage: the document printer behind the jaxpr printer (print.hpp).
//
// detail::pp is a port of jax/_src/pretty_printer.py (Wadler/Lindig
// "strictly pretty" documents: text, concat, brk, group, nest; width 80).
// A group prints flat iff its own flat width fits in what is left of the
// line (JAX deliberately ignores the text after the group), otherwise its
// breaks become newlines at the current nesting.
//
// On top of the combinators, the jaxpr layout of jax/_src/core.py on
// already-rendered pieces (pp_vars, pp_kv_pairs, _pp_eqn, pp_jaxpr_skeleton,
// pp_jaxprs), so that nested jaxprs in params reuse it and the layout can be
// tested against JAX's printed examples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyn::detail {

// ---------------------------------------------------------------------------
// The document printer (jax/_src/pretty_printer.py without colours and
// annotations, which jaxpr printing does not use by default).
namespace pp {

enum class DocKind : std::uint8_t {
  nil,     // nothing
  text,    // literal text, never broken
  concat,  // children one after the other
  brk,     // `text` when its group is flat, else a newline + indentation
  group,   // one child, laid out flat if it fits
  nest,    // one child, breaks inside it indent `n` more
};

struct DocNode;
using Doc = std::shared_ptr<const DocNode>;

struct DocNode {
  DocKind kind = DocKind::nil;
  std::string text;            // text, brk
  int n = 0;                   // nest
  std::vector<Doc> children;   // concat; group and nest hold exactly one
};

// The document combinators (pretty_printer.py); defined once per program.
Doc make_doc(DocKind kind, std::string text = {}, int n = 0, std::vector<Doc> children = {});
Doc nil();
Doc text(std::string s);
// As JAX: a one-element concat is that element.
Doc concat(std::vector<Doc> docs);
Doc brk(std::string s = " ");
Doc group(Doc d);
Doc nest(int n, Doc d);
// docs[0] sep docs[1] sep ... ; nil for no docs.
Doc join(const Doc& sep, const std::vector<Doc>& docs);
// Does `doc`, laid out flat, fit in `width` columns? (pretty_printer._fits)
bool fits(const DocNode* doc, long width);
// Lay the document out in `width` columns (pretty_printer._format).
std::string format(const Doc& doc, int width = 80);

// The jaxpr layout of jax/_src/core.py, on already-rendered pieces.
// pp_vars: `items` separated by `sep` and a break that is its own group.
Doc vars(const std::vector<std::string>& items, std::string_view sep = "");
// pp_kv_pair: `key=value`.
struct KeyValue {
  std::string key;
  Doc value;
};

// pp_kv_pairs: `[k1=v1 k2=v2]`, one per line when it does not fit; nil when
// empty. Pairs are printed in the order given (callers sort by key).
Doc kv_pairs(const std::vector<KeyValue>& kvs);
// _pp_eqn: `outs = prim[params] operands`; `lhs` is nil for no outputs.
Doc eqn(Doc lhs, bool has_outputs, std::string_view prim, Doc params, Doc operands);
// pp_jaxpr_skeleton (pp_eqns inlined): `outvars` is vars(outs, ",").
Doc jaxpr(Doc constvars, Doc invars, const std::vector<Doc>& eqns, Doc outvars, std::size_t n_outvars);
// pp_jaxprs: a tuple of jaxprs (cond's branches=).
Doc jaxprs(const std::vector<Doc>& docs);

}  // namespace pp

}  // namespace dyn::detail

// ---------------------------------------------------------------------------
// The printer's definitions: compiled once per program (non-inline).
#ifdef DYNSTAGE_IMPLEMENTATION

namespace dyn::detail {

namespace pp {

Doc make_doc(DocKind kind, std::string text, int n, std::vector<Doc> children) {
  auto d = std::make_shared<DocNode>();
  d->kind = kind;
  d->text = std::move(text);
  d->n = n;
  d->children = std::move(children);
  return d;
}

Doc nil() {
  static const Doc d = make_doc(DocKind::nil);
  return d;
}
Doc text(std::string s) { return make_doc(DocKind::text, std::move(s)); }
// As JAX: a one-element concat is that element.
Doc concat(std::vector<Doc> docs) {
  if (docs.size() == 1) return docs.front();
  return make_doc(DocKind::concat, {}, 0, std::move(docs));
}
Doc brk(std::string s) { return make_doc(DocKind::brk, std::move(s)); }
Doc group(Doc d) { return make_doc(DocKind::group, {}, 0, {std::move(d)}); }
Doc nest(int n, Doc d) { return make_doc(DocKind::nest, {}, n, {std::move(d)}); }

// docs[0] sep docs[1] sep ... ; nil for no docs.
Doc join(const Doc& sep, const std::vector<Doc>& docs) {
  if (docs.empty()) return nil();
  std::vector<Doc> xs;
  xs.reserve(2 * docs.size() - 1);
  xs.push_back(docs.front());
  for (std::size_t i = 1; i < docs.size(); ++i) {
    xs.push_back(sep);
    xs.push_back(docs[i]);
  }
  return concat(std::move(xs));
}

// Does `doc`, laid out flat, fit in `width` columns? (pretty_printer._fits;
// stops as soon as the width is exceeded, so it is cheap on long documents.)
bool fits(const DocNode* doc, long width) {
  std::vector<const DocNode*> agenda{doc};
  while (width >= 0 && !agenda.empty()) {
    const DocNode* d = agenda.back();
    agenda.pop_back();
    switch (d->kind) {
      case DocKind::nil: break;
      case DocKind::text:
      case DocKind::brk: width -= static_cast<long>(d->text.size()); break;
      case DocKind::concat:
        for (auto it = d->children.rbegin(); it != d->children.rend(); ++it) agenda.push_back(it->get());
        break;
      case DocKind::group:
      case DocKind::nest: agenda.push_back(d->children.front().get()); break;
    }
  }
  return width >= 0;
}

// Lay the document out in `width` columns (pretty_printer._format).
std::string format(const Doc& doc, int width) {
  struct Item {
    int indent;
    bool flat;
    const DocNode* doc;
  };
  std::vector<Item> agenda{{0, false, doc.get()}};
  std::string out;
  long k = 0;  // column
  while (!agenda.empty()) {
    Item it = agenda.back();
    agenda.pop_back();
    const DocNode* d = it.doc;
    switch (d->kind) {
      case DocKind::nil: break;
      case DocKind::text:
        out += d->text;
        k += static_cast<long>(d->text.size());
        break;
      case DocKind::concat:
        for (auto c = d->children.rbegin(); c != d->children.rend(); ++c)
          agenda.push_back({it.indent, it.flat, c->get()});
        break;
      case DocKind::brk:
        if (it.flat) {
          out += d->text;
          k += static_cast<long>(d->text.size());
        } else {
          out += '\n';
          out.append(static_cast<std::size_t>(it.indent), ' ');
          k = it.indent;
        }
        break;
      case DocKind::nest: agenda.push_back({it.indent + d->n, it.flat, d->children.front().get()}); break;
      case DocKind::group:
        // Only the group itself must fit, not the rest of the line (JAX's
        // deliberate deviation from Lindig).
        agenda.push_back({it.indent, fits(d, width - k), d->children.front().get()});
        break;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// The jaxpr layout of jax/_src/core.py, on already-rendered pieces. These are
// separate from the IR walk so that nested-jaxpr params (control flow) reuse
// them and so the layout can be tested against JAX's printed examples.

// pp_vars: `items` separated by `sep` and a break that is its own group.
Doc vars(const std::vector<std::string>& items, std::string_view sep) {
  std::vector<Doc> docs;
  docs.reserve(items.size());
  for (const auto& s : items) docs.push_back(text(s));
  return nest(2, group(join(concat({text(std::string(sep)), group(brk())}), docs)));
}

// pp_kv_pairs: `[k1=v1 k2=v2]`, one per line when it does not fit; nil when
// empty. Pairs are printed in the order given (callers sort by key).
Doc kv_pairs(const std::vector<KeyValue>& kvs) {
  if (kvs.empty()) return nil();
  std::vector<Doc> items;
  items.reserve(kvs.size());
  for (const auto& kv : kvs) items.push_back(concat({text(kv.key + "="), kv.value}));
  return group(concat({nest(2, concat({text("["), brk(""), join(brk(), items)})), brk(""), text("]")}));
}

// _pp_eqn: `outs = prim[params] operands`; `lhs` is nil for no outputs.
Doc eqn(Doc lhs, bool has_outputs, std::string_view prim, Doc params, Doc operands) {
  std::vector<Doc> rhs{text(std::string(prim)), std::move(params), concat({text(" "), std::move(operands)})};
  if (!has_outputs) return concat(std::move(rhs));
  std::vector<Doc> all{std::move(lhs), text(" = ")};
  for (auto& d : rhs) all.push_back(std::move(d));
  return concat(std::move(all));
}

// pp_jaxpr_skeleton (pp_eqns inlined): `outvars` is vars(outs, ",").
Doc jaxpr(Doc constvars, Doc invars, const std::vector<Doc>& eqns, Doc outvars, std::size_t n_outvars) {
  Doc outs = concat({text("("), std::move(outvars), text(n_outvars == 1 ? ",)" : ")")});
  return concat({group(nest(2, concat({text("{ "), text("lambda "), std::move(constvars), text("; "),
                                       std::move(invars), text(". "), text("let"),
                                       nest(2, concat({brk(), join(brk("; "), eqns)})), brk(), text("in "),
                                       std::move(outs)}))),
                 text(" }")});
}

// pp_jaxprs: a tuple of jaxprs (cond's branches=).
Doc jaxprs(const std::vector<Doc>& docs) {
  return group(concat({nest(2, concat({text("("), brk(""), join(brk(), docs)})), brk(""), text(")")}));
}

}  // namespace pp

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
