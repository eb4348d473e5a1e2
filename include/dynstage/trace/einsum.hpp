// dynstage: einsum (API.md §13): numpy's subscripts, any number of
// operands, lowered to dot_general, reduce_sum and transpose.
//
// The subscripts: one letter per axis for each operand, separated by
// commas, then optionally "->" and the output's letters; without "->" the
// output is the letters that appear exactly once, in alphabetical (ASCII)
// order, as numpy.einsum. A letter names one size everywhere.
//
// A letter repeated within one operand takes the diagonal, as jnp.einsum's
// sum_repeats: the elements off the diagonal are zeroed (select_n with an
// equality mask of iotas) and the repeated axes summed, all of them when
// the letter is needed nowhere else ("ii->": the trace), all but the last
// otherwise ("ii->i": the diagonal). "..." stands for an operand's axes not
// named by letters (numpy's broadcast axes): they get fresh letters,
// aligned on the right against the operand with the most, broadcast where
// one has size 1 (a broadcast_in_dim), and come first in an implicit output.
//
// The contraction order is opt_einsum's greedy strategy in its simplest
// form: first sum every axis whose letter appears in one operand only and
// not in the output; then, while more than one operand remains, contract
// the pair whose contraction costs the fewest multiply-adds (the product of
// the sizes of all letters of the pair; a symbolic size counts as 1000),
// the earliest such pair on ties. A pair contracts in one dot_general:
// letters of both operands that are needed later (in the output or another
// operand) are batch axes, the other shared letters contracting axes; a
// letter of one operand that is needed nowhere else is summed first. The
// last operand is summed and transposed into the output's order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ops_layout.hpp"

namespace dyn {
namespace detail {

// The subscripts argument: a string, and the caller's line (einsum's
// operands are a parameter pack, so the location rides on the first
// argument).
struct EinsumSubscripts {
  std::string_view text;
  Loc loc;
  EinsumSubscripts(const char* s, Loc l = Loc::current()) : text(s), loc(l) {}  // NOLINT: implicit by design
  EinsumSubscripts(std::string_view s, Loc l = Loc::current()) : text(s), loc(l) {}  // NOLINT
};

Value einsum(std::string_view subscripts, std::vector<Value> ops);

// The operands' promoted element type (jnp.promote_types, pairwise).
template <class A, class... R>
struct einsum_elem {
  using type = elem_t<A>;
};
template <class A, class B, class... R>
struct einsum_elem<A, B, R...> {
  using type = typename einsum_elem<Array<promoted_t<A, B>>, R...>::type;
};

#ifdef DYNSTAGE_IMPLEMENTATION
namespace einsum_detail {

struct Term {
  Value v;
  std::string idx;  // one letter per axis of v
};

inline std::int64_t cost_of(const std::string& letters, const std::string& all, const std::vector<Dim>& size) {
  std::int64_t c = 1;
  for (char ch : letters) {
    const Dim& d = size[all.find(ch)];
    c = c * (d.is_static() ? std::max<std::int64_t>(d.value(), 1) : 1000);
    if (c > (std::int64_t{1} << 40)) return std::int64_t{1} << 40;
  }
  return c;
}

// Sums the axes of t whose letters are not in `keep`.
inline Term sum_unneeded(Term t, const std::string& keep) {
  std::vector<std::int64_t> axes;
  std::string rest;
  for (std::size_t i = 0; i < t.idx.size(); ++i) {
    if (keep.find(t.idx[i]) == std::string::npos) axes.push_back(static_cast<std::int64_t>(i));
    else rest += t.idx[i];
  }
  if (axes.empty()) return t;
  return Term{reduce(Prim::reduce_sum, t.v, axes, false), rest};
}

// jnp.einsum's sum_repeats: while a letter repeats in t, keep the diagonal
// (zero the rest) and sum the repeated axes, all of them unless `keep` (the
// output's and the other operands' letters) has the letter, then all but
// the last.
inline Term sum_repeats(Term t, const std::string& keep) {
  for (std::size_t i = 0; i < t.idx.size(); ++i) {
    const char c = t.idx[i];
    std::vector<std::int64_t> axes;
    for (std::size_t j = i; j < t.idx.size(); ++j)
      if (t.idx[j] == c) axes.push_back(static_cast<std::int64_t>(j));
    if (axes.size() < 2) continue;
    const Shape s = t.v.shape();
    const bool staged = t.v.is_tracer();
    Value mask;
    for (std::size_t k = 0; k + 1 < axes.size(); ++k) {
      const Value e = compare(Prim::eq, iota(DType::u32, s, axes[k], staged), iota(DType::u32, s, axes[k + 1], staged));
      mask = k == 0 ? e : binary(Prim::and_, mask, e);
    }
    t.v = where(mask, t.v, convert(scalar_value(Scalar::of<std::int32_t>(0), false), t.v.dtype()));
    if (keep.find(c) != std::string::npos) axes.pop_back();
    t.v = reduce(Prim::reduce_sum, t.v, axes, false);
    std::string rest;
    for (std::size_t j = 0; j < t.idx.size(); ++j)
      if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(j)) == axes.end()) rest += t.idx[j];
    t.idx = rest;
    i = static_cast<std::size_t>(-1);  // start over: the letters moved
  }
  return t;
}

}  // namespace einsum_detail

Value einsum(std::string_view subscripts, std::vector<Value> ops) {
  using einsum_detail::Term;
  std::string spec;
  for (char c : subscripts)
    if (c != ' ') spec += c;
  std::string shapes;
  for (const Value& v : ops) shapes += (shapes.empty() ? "" : ", ") + shape_str(v.shape());
  const std::string where = "einsum('" + std::string(subscripts) + "') with operand shapes " + shapes + ": ";
  auto bad = [&](const std::string& why) { fail<ShapeError>(where + why); };
  // Parse.
  const auto arrow = spec.find("->");
  const std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> ins(1);
  for (char c : lhs) {
    if (c == ',') ins.emplace_back();
    else ins.back() += c;
  }
  if (ins.size() != ops.size())
    bad(std::to_string(ins.size()) + " operand subscripts for " + std::to_string(ops.size()) + " operands");
  // "...": fresh letters (unused ones, 'A' first), the longest operand's
  // count; each operand's "..." is the last of them (right-aligned).
  std::string ell;
  std::string out_spec = arrow == std::string::npos ? "" : spec.substr(arrow + 2);
  if (spec.find('.') != std::string::npos) {
    auto has_ellipsis = [&](const std::string& t) {
      const auto p = t.find("...");
      const auto dots = static_cast<std::size_t>(std::count(t.begin(), t.end(), '.'));
      if (dots != (p == std::string::npos ? 0 : 3)) bad("'.' is allowed only as one '...' per operand or output");
      return p != std::string::npos;
    };
    std::vector<std::int64_t> n_ell(ins.size(), -1);
    std::int64_t most = 0;
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (!has_ellipsis(ins[k])) continue;
      n_ell[k] = ops[k].rank() - static_cast<std::int64_t>(ins[k].size() - 3);
      if (n_ell[k] < 0)
        bad("operand " + std::to_string(k) + " has rank " + std::to_string(ops[k].rank()) + " but subscripts '" +
            ins[k] + "' name " + std::to_string(ins[k].size() - 3) + " axes besides '...'");
      most = std::max(most, n_ell[k]);
    }
    for (const char* c = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"; *c; ++c)
      if (static_cast<std::int64_t>(ell.size()) < most && spec.find(*c) == std::string::npos) ell += *c;
    if (static_cast<std::int64_t>(ell.size()) < most) bad("too many axes under '...' (no letters left)");
    for (std::size_t k = 0; k < ins.size(); ++k)
      if (n_ell[k] >= 0) ins[k].replace(ins[k].find("..."), 3, ell.substr(ell.size() - static_cast<std::size_t>(n_ell[k])));
    if (arrow != std::string::npos && has_ellipsis(out_spec)) out_spec.replace(out_spec.find("..."), 3, ell);
  }
  auto check_letters = [&](const std::string& s) {
    for (char c : s)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        bad(std::string("invalid subscript '") + c + "': subscripts are letters a-z and A-Z");
  };
  std::string all;  // every letter, in order of appearance
  std::vector<Dim> size;
  std::string once, twice;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const std::string& s = ins[k];
    check_letters(s);
    if (static_cast<int>(s.size()) != ops[k].rank())
      bad("operand " + std::to_string(k) + " has rank " + std::to_string(ops[k].rank()) + " but subscripts '" + s +
          "' name " + std::to_string(s.size()) + " axes");
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Dim d = ops[k].shape()[i];
      const auto at = all.find(s[i]);
      if (at == std::string::npos) {
        all += s[i];
        size.push_back(d);
        once += s[i];
      } else {
        const bool broadcast = ell.find(s[i]) != std::string::npos && (d == Dim(1) || size[at] == Dim(1));
        if (broadcast && size[at] == Dim(1)) size[at] = d;
        if (!(size[at] == d) && !broadcast)
          bad(std::string("subscript '") + s[i] + "' has size " + size[at].to_string() + " and " + d.to_string());
        if (twice.find(s[i]) == std::string::npos) twice += s[i];
      }
    }
  }
  // Broadcast axes of size 1 under "..." to the other operands' size.
  for (std::size_t k = 0; k < ops.size(); ++k) {
    Shape want = ops[k].shape();
    for (std::size_t i = 0; i < ins[k].size(); ++i) want[i] = size[all.find(ins[k][i])];
    if (!(want == ops[k].shape())) ops[k] = broadcast_to_shape(ops[k], want, "einsum", ops[k].is_tracer());
  }
  std::string out;
  if (arrow == std::string::npos) {
    for (char c : all)
      if (twice.find(c) == std::string::npos && ell.find(c) == std::string::npos) out += c;
    std::sort(out.begin(), out.end());
    out = ell + out;
  } else {
    out = out_spec;
    check_letters(out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (all.find(out[i]) == std::string::npos)
        bad(std::string("output subscript '") + out[i] + "' does not appear in any operand");
      if (out.find(out[i]) != i) bad(std::string("output subscript '") + out[i] + "' repeats");
    }
  }
  // Contract.
  std::vector<Term> terms;
  for (std::size_t k = 0; k < ops.size(); ++k) terms.push_back(Term{ops[k], ins[k]});
  // The letters that term `skip` (and `skip2`) do not make unneeded: the output's and the other terms'.
  auto needed = [&](std::size_t skip, std::size_t skip2) {
    std::string n = out;
    for (std::size_t k = 0; k < terms.size(); ++k)
      if (k != skip && k != skip2) n += terms[k].idx;
    return n;
  };
  if (terms.empty()) bad("needs at least one operand");
  for (std::size_t k = 0; k < terms.size(); ++k) terms[k] = einsum_detail::sum_repeats(terms[k], needed(k, k));
  while (terms.size() > 1) {
    std::size_t bi = 0, bj = 1;
    std::int64_t best = -1;
    for (std::size_t i = 0; i < terms.size(); ++i)
      for (std::size_t j = i + 1; j < terms.size(); ++j) {
        std::string u = terms[i].idx;
        for (char c : terms[j].idx)
          if (u.find(c) == std::string::npos) u += c;
        const std::int64_t c = einsum_detail::cost_of(u, all, size);
        if (best < 0 || c < best) best = c, bi = i, bj = j;
      }
    const std::string later = needed(bi, bj);
    Term a = einsum_detail::sum_unneeded(terms[bi], later + terms[bj].idx);
    Term b = einsum_detail::sum_unneeded(terms[bj], later + a.idx);
    DotGeneralParams p;
    std::string batch, afree, bfree;
    for (std::size_t i = 0; i < a.idx.size(); ++i) {
      const char c = a.idx[i];
      const auto jb = b.idx.find(c);
      if (jb == std::string::npos) {
        afree += c;
      } else if (later.find(c) != std::string::npos) {
        batch += c;
        p.lhs_batch.push_back(static_cast<std::int64_t>(i));
        p.rhs_batch.push_back(static_cast<std::int64_t>(jb));
      } else {
        p.lhs_contracting.push_back(static_cast<std::int64_t>(i));
        p.rhs_contracting.push_back(static_cast<std::int64_t>(jb));
      }
    }
    for (char c : b.idx)
      if (a.idx.find(c) == std::string::npos) bfree += c;
    Term r{dot_general(a.v, b.v, p), batch + afree + bfree};
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(bj));
    terms[bi] = std::move(r);
  }
  Term t = einsum_detail::sum_unneeded(terms[0], out);
  if (t.idx == out) return t.v;
  std::vector<std::int64_t> perm;
  for (char c : out) perm.push_back(static_cast<std::int64_t>(t.idx.find(c)));
  return transpose(t.v, perm);
}
#endif

}  // namespace detail

// einsum("ij,jk->ik", a, b, ...): numpy.einsum's subscripts over any number
// of operands (see the top of this file for the contraction order and what
// is not supported). The operands are promoted to one dtype.
template <ArrayLike... X>
auto einsum(detail::EinsumSubscripts subscripts, const X&... xs) {
  detail::OpSite site(subscripts.loc);
  using R = typename detail::einsum_elem<X...>::type;
  std::vector<detail::Value> vs{detail::to_value(xs)...};
  detail::lift_all(vs);
  const TypeInfo t = detail::result_type(vs);
  detail::promote_to(vs, TypeInfo{t.dtype, false});
  return detail::from_value<detail::result_of_t<R, X...>>(detail::einsum(subscripts.text, std::move(vs)));
}

}  // namespace dyn
