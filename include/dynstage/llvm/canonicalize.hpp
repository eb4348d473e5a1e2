// dynstage: the jaxpr rewrites before fusion planning (no LLVM here):
// inline_checkpoints puts each checkpoint's body in its place,
// hoist_loop_invariants (hoist.hpp) moves loop-invariant equations out of
// loop bodies, and
// canonicalize_dots makes every dot_general a batched matrix product
// (B,M,K) x (B,K,N) on reshaped/transposed operands, then batch_small_dots
// merges independent same-shaped small products into one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <tuple>
#include <vector>

#include "../ir/jaxpr.hpp"
#include "fusion_plan.hpp"
#include "hoist.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// canonicalize_dots
//
// 1. For dot_general(lhs, rhs): lhs axes in the order batch, free,
//    contracting and rhs axes in the order batch, contracting, free.
// 2. Insert a transpose where that order is not the identity, and a reshape
//    to (B,M,K) / (B,K,N) where the rank or shape differs. Except: an operand
//    whose axes are already in the order batch, contracting, free (lhs) or
//    batch, free, contracting (rhs) is kept as it is stored, reshaped to
//    (B,K,M) / (B,N,K): the GEMM's packing reads it transposed, so the
//    transposed forms of a gradient (x^T y, x y^T) materialise no transpose.
// 3. The dot keeps its output variable and type: (B,M,N) in row-major order is
//    exactly the layout of [batch..., lhs free..., rhs free...].
// The lowering then handles only dot_general((B,M,K) or (B,K,M), (B,K,N) or
// (B,N,K)): contracting axis 2 or 1 of the lhs, 1 or 2 of the rhs, batch 0.

inline bool is_canonical_dot(const DotGeneralParams& p) {
  const auto one = [](const std::vector<std::int64_t>& v, std::int64_t a, std::int64_t b) {
    return v.size() == 1 && (v[0] == a || v[0] == b);
  };
  return one(p.lhs_contracting, 2, 1) && one(p.rhs_contracting, 1, 2) && p.lhs_batch == std::vector<std::int64_t>{0} &&
         p.rhs_batch == std::vector<std::int64_t>{0};
}
// Of a canonical dot: the lhs stored (B,K,M), the rhs stored (B,N,K).
inline bool dot_lhs_transposed(const DotGeneralParams& p) { return p.lhs_contracting[0] == 1; }
inline bool dot_rhs_transposed(const DotGeneralParams& p) { return p.rhs_contracting[0] == 2; }
// Of a canonical dot `e` in `j`: whether its lhs may stay FUSED (issue 25),
// evaluated element by element where the product reads it instead of being
// materialised first. That is the matrix-vector form: N (the output's last
// axis) is static 1, so the lowering always runs the matvec nest, which
// reads every lhs element exactly once, in row-major order: per row for
// an lhs stored (B,M,K), as an axpy per stored row for one stored (B,K,M)
// (lower_dot.hpp, emit_matvec_t; a transpose folded into the product,
// `transpose(alpha * A) @ x`). `alpha * A @ x` then reads A once, as `A @ x` does,
// instead of writing and re-reading a temporary of A's size. (The blocked
// GEMM computes fused operands into its packed panels instead:
// fusion_gemm.hpp, dot_may_block below; i-k-j reads the lhs once per
// element too but only runs small products: their operands stay buffers.)
inline bool dot_fuses_lhs(const Jaxpr& j, const Eqn& e) {
  const auto& p = std::get<DotGeneralParams>(e.params);
  if (!is_canonical_dot(p)) return false;
  // (The dot keeps its output's type; N is the rhs's free axis.)
  if (!e.inputs[1].is_var()) return false;
  const Type& r = j.type_of(e.inputs[1]);
  if (r.rank() != 3) return false;
  const JDim& n = r.shape[dot_rhs_transposed(p) ? 1 : 2];
  return n.is_static() && n.value == 1;
}

// Whether layout equation `e` hands a product its operand's buffer as it
// is (issue 25, item 2): a reshape or squeeze (the same row-major order), or
// a slice of contiguous data -- unit strides, static starts, every axis
// after the first non-unit one of the result taken whole -- which is the
// buffer from an offset (slice_offset_axes). The product then reads the
// buffer, with no copy (fusion.hpp, lower_roots.hpp).
inline bool dot_reads_through(const Jaxpr& j, const Eqn& e) {
  if (!e.inputs.at(0).is_var()) return false;
  if (e.prim == Prim::reshape || e.prim == Prim::squeeze) return true;
  if (e.prim != Prim::slice) return false;
  const auto& sp = std::get<SliceParams>(e.params);
  const Type &x = j.type_of(e.inputs[0]), &y = j.types[static_cast<std::size_t>(e.outputs[0])];
  bool leading = true;  // still in the unit axes before the first non-unit one
  for (std::size_t i = 0; i < static_cast<std::size_t>(x.rank()); ++i) {
    if (!sp.strides.empty() && sp.strides[i] != 1) return false;
    if (sp.start_indices[i] == kDynamicDim) return false;
    if (leading) {
      leading = is_unit(y.shape[i]);
      continue;
    }
    if (sp.start_indices[i] != 0 || !(y.shape[i] == x.shape[i])) return false;
  }
  return true;
}

// The GEMM routine's threshold (lower_dot.hpp): float products of at least
// this many multiply-adds, with N >= 8 and M >= 4, run the blocked kernel.
inline constexpr std::int64_t kBlockedFlops = 32 * 32 * 32;

// Whether canonical dot `e` may run the blocked GEMM routine: a real float
// product, not a matrix-vector one with a fused lhs, large enough when its
// sizes are static (with runtime sizes: unless statically ruled out; the
// lowering then tests the sizes). Its fused operands are packed and its
// elementwise consumer runs in its epilogue (fusion_gemm.hpp).
inline bool dot_may_block(const Jaxpr& j, const Eqn& e) {
  const auto& p = std::get<DotGeneralParams>(e.params);
  if (!is_canonical_dot(p) || e.inputs.size() != 2 || e.outputs.size() != 1 || dot_fuses_lhs(j, e)) return false;
  const DType d = j.types[static_cast<std::size_t>(e.outputs[0])].dtype;
  if (!is_float(d)) return false;
  for (const Atom& a : e.inputs)
    if (!a.is_var() || j.type_of(a).dtype != d || j.type_of(a).rank() != 3) return false;
  const Type &l = j.type_of(e.inputs[0]), &r = j.type_of(e.inputs[1]);
  const bool ta = dot_lhs_transposed(p), tb = dot_rhs_transposed(p);
  const JDim Bd = l.shape[0], Md = l.shape[ta ? 2 : 1], Kd = l.shape[ta ? 1 : 2], Nd = r.shape[tb ? 1 : 2];
  if (is_unit(Nd)) return false;
  for (const JDim& x : {Bd, Md, Kd, Nd})
    if (x.is_static() && x.value == 0) return false;
  if (!Bd.is_static() || !Md.is_static() || !Kd.is_static() || !Nd.is_static()) return true;
  const std::int64_t M = Md.value, K = Kd.value, N = Nd.value;
  return M * N * K >= kBlockedFlops && N >= 8 && M >= 4;
}

// Whether the lowering of canonical dot `e` copies an operand inside its
// nest (lower_dot.hpp, with_plain_operands): a rhs stored (B,N,K) read by
// the i-k-j nest, i.e. a real (not complex) product that is neither a
// matrix-vector product nor large enough for the GEMM routine, whose
// packing reads either form. With runtime sizes: unless statically ruled out.
inline bool dot_copies_rhs(const Jaxpr& j, const Eqn& e) {
  const auto& p = std::get<DotGeneralParams>(e.params);
  if (!is_canonical_dot(p) || !dot_rhs_transposed(p) || !e.inputs[0].is_var() || !e.inputs[1].is_var()) return false;
  const DType d = j.types[static_cast<std::size_t>(e.outputs[0])].dtype;
  if (is_complex(d)) return false;
  const Type &l = j.type_of(e.inputs[0]), &r = j.type_of(e.inputs[1]);
  const bool ta = dot_lhs_transposed(p);
  const JDim Bd = l.shape[0], Md = l.shape[ta ? 2 : 1], Kd = l.shape[ta ? 1 : 2], Nd = r.shape[1];
  if (is_unit(Nd)) return false;
  if (!Bd.is_static() || !Md.is_static() || !Kd.is_static() || !Nd.is_static()) return true;
  const std::int64_t B = Bd.value, M = Md.value, K = Kd.value, N = Nd.value;
  if (B == 0 || M == 0 || N == 0 || K == 0) return false;
  return !(is_float(d) && M * N * K >= kBlockedFlops && N >= 8 && M >= 4);
}

// ---------------------------------------------------------------------------
// inline_checkpoints
//
// A checkpoint equation computes its body on its operands; what reverse mode
// recomputes is already a second checkpoint in the program. The backend
// lowers the body's equations in place, so they fuse with their neighbours
// (a checkpoint is no barrier to fusion here, and the backend does no CSE
// that could undo the recomputation). Each body variable becomes a new
// variable of `j` (its dimensions mapped as its values are), and uses of
// the equation's outputs read the body's results. Checkpoints nested in
// loop bodies and branches are inlined when those are lowered
// (lower_control.hpp canonicalizes each body).
inline Jaxpr inline_checkpoints(const Jaxpr& in) {
  if (std::none_of(in.eqns.begin(), in.eqns.end(), [](const Eqn& e) { return e.prim == Prim::checkpoint; }))
    return in;
  Jaxpr j = in;
  j.eqns.clear();
  std::vector<std::optional<Atom>> sub(in.types.size());  // an inlined equation's output -> its value
  auto outer = [&](const Atom& a) {
    return a.is_var() && sub[static_cast<std::size_t>(a.var)] ? *sub[static_cast<std::size_t>(a.var)] : a;
  };
  auto as_dim = [](const Atom& a) { return a.is_var() ? JDim::of_var(a.var) : JDim{a.lit.as<std::int64_t>(), -1}; };
  for (const Eqn& e0 : in.eqns) {
    Eqn e = e0;
    for (Atom& a : e.inputs) a = outer(a);
    if (e.prim != Prim::checkpoint) {
      j.eqns.push_back(std::move(e));
      continue;
    }
    const Jaxpr body = inline_checkpoints(*std::get<CheckpointParams>(e.params).jaxpr);
    if (!body.constvars.empty()) internal_error("inline_checkpoints: a checkpoint body with constvars");
    std::vector<std::optional<Atom>> map(body.types.size());
    for (std::size_t k = 0; k < body.invars.size(); ++k) map[static_cast<std::size_t>(body.invars[k])] = e.inputs.at(k);
    auto read = [&](const Atom& a) { return a.is_var() ? *map.at(static_cast<std::size_t>(a.var)) : a; };
    for (const Eqn& be : body.eqns) {
      Eqn q = be;
      for (Atom& a : q.inputs) a = read(a);
      for (int& v : q.outputs) {
        Type t = body.types[static_cast<std::size_t>(v)];
        for (JDim& d : t.shape)
          if (!d.is_static()) d = as_dim(read(Atom::of_var(d.var)));
        const int w = j.new_var(std::move(t));
        map[static_cast<std::size_t>(v)] = Atom::of_var(w);
        v = w;
      }
      j.eqns.push_back(std::move(q));
    }
    for (std::size_t k = 0; k < e.outputs.size(); ++k) sub[static_cast<std::size_t>(e.outputs[k])] = read(body.outvars.at(k));
  }
  for (Type& t : j.types)
    for (JDim& d : t.shape)
      if (!d.is_static() && static_cast<std::size_t>(d.var) < sub.size()) d = as_dim(outer(Atom::of_var(d.var)));
  for (Atom& a : j.outvars) a = outer(a);
  return j;
}

// ---------------------------------------------------------------------------
// batch_small_dots (issue 25, item 3)
//
// After canonicalize_dots every product is dot_general((B,M,K), (B,K,N)) (or
// a transposed operand form). Products with the same dtypes, the same static
// B, M, K, N and the same operand forms that do not depend on each other (no
// member's output reaches another member's operands, transitively) become ONE
// product over a batch of count*B:
//     lhs = concatenate[0](l_1, ..., l_n)    rhs = concatenate[0](r_1, ..., r_n)
//     d   = dot_general(lhs, rhs)            (n*B, M, N)
//     o_i = reshape(slice(d, [(i-1)B, 0, 0], [iB, M, N]))   (each member's own
//                                                            output var/type)
// so the module has one dot loop nest (or one GEMM call) per distinct shape,
// not per product; the concatenates read their operands' fused expressions
// (the slices of a convolution's image) and the slices of `d` fuse into
// their consumers. Independence: a value's "dot depth" is the largest number
// of candidate products on any path from the inputs to it; a product that
// reaches another has a strictly smaller depth, so products of equal depth
// are independent. Only SMALL products are merged (each product's operands
// hold <= kBatchDotMaxElems elements: for those the per-product nest, not
// the arithmetic, is the cost; large products keep their own GEMM and pay
// no concatenation copy), with static sizes (a slice needs static bounds),
// and never a matrix-vector product whose lhs stays fused (dot_fuses_lhs:
// merging would materialise that lhs). The equations are then re-sorted
// topologically (stable: original order wherever the dependencies allow;
// effects and control flow keep their relative order).
inline constexpr std::int64_t kBatchDotMaxElems = std::int64_t{1} << 17;

// Stable topological order of `j`'s equations (Kahn's, smallest original
// index first). Equations of kind effect or control stay in their order.
inline void toposort_eqns(Jaxpr& j) {
  const std::size_t n = j.eqns.size();
  std::vector<int> producer(j.types.size(), -1);
  for (std::size_t i = 0; i < n; ++i)
    for (int v : j.eqns[i].outputs) producer[static_cast<std::size_t>(v)] = static_cast<int>(i);
  std::vector<std::vector<int>> users(n);
  std::vector<int> indeg(n, 0);
  int last_ordered = -1;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<int> deps;
    for (const Atom& a : j.eqns[i].inputs)
      if (a.is_var() && producer[static_cast<std::size_t>(a.var)] >= 0) deps.push_back(producer[static_cast<std::size_t>(a.var)]);
    for (int v : j.eqns[i].outputs)
      for (const JDim& d : j.types[static_cast<std::size_t>(v)].shape)
        if (!d.is_static() && producer[static_cast<std::size_t>(d.var)] >= 0) deps.push_back(producer[static_cast<std::size_t>(d.var)]);
    const Kind k = prim_kind(j.eqns[i].prim);
    if (k == Kind::effect || k == Kind::control) {
      if (last_ordered >= 0) deps.push_back(last_ordered);
      last_ordered = static_cast<int>(i);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (int d : deps) {
      users[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
      ++indeg[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push(static_cast<int>(i));
  std::vector<Eqn> out;
  out.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    out.push_back(std::move(j.eqns[static_cast<std::size_t>(i)]));
    for (int u : users[static_cast<std::size_t>(i)])
      if (--indeg[static_cast<std::size_t>(u)] == 0) ready.push(u);
  }
  if (out.size() != n) internal_error("batch_small_dots: the merged products form a cycle");
  j.eqns = std::move(out);
}

inline Jaxpr batch_small_dots(Jaxpr j) {
  // The candidates and their group keys.
  using Key = std::tuple<int, int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, std::size_t>;
  auto static_dims = [](const Type& t) {
    return std::all_of(t.shape.begin(), t.shape.end(), [](const JDim& d) { return d.is_static(); });
  };
  std::vector<std::optional<Key>> key(j.eqns.size());
  std::size_t ncand = 0;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    if (e.prim != Prim::dot_general || e.inputs.size() != 2 || e.outputs.size() != 1) continue;
    const auto& p = std::get<DotGeneralParams>(e.params);
    if (!is_canonical_dot(p) || !e.inputs[0].is_var() || !e.inputs[1].is_var() || dot_fuses_lhs(j, e)) continue;
    const Type &l = j.type_of(e.inputs[0]), &r = j.type_of(e.inputs[1]), &o = j.types[static_cast<std::size_t>(e.outputs[0])];
    if (l.rank() != 3 || r.rank() != 3 || !static_dims(l) || !static_dims(r) || !static_dims(o)) continue;
    const bool ta = dot_lhs_transposed(p), tb = dot_rhs_transposed(p);
    const std::int64_t B = l.shape[0].value, M = l.shape[ta ? 2 : 1].value, K = l.shape[ta ? 1 : 2].value,
                       N = r.shape[tb ? 1 : 2].value;
    if (B * (M * K + K * N) > kBatchDotMaxElems || B * M * N == 0 || K == 0) continue;
    key[i] = Key{static_cast<int>(l.dtype), static_cast<int>(r.dtype), static_cast<int>(o.dtype), B, M, K, N, ta, tb, 0};
    ++ncand;
  }
  if (ncand < 2) return j;
  // Dot depth (see above); the group key gets the depth as its last field.
  // Effects and control flow keep their relative order (toposort_eqns), an
  // edge from each to the next: the depth follows that chain too, or a
  // product feeding one loop would merge with a product fed by a later loop
  // (the merged block then precedes the later loop and follows the first:
  // a cycle; the fuzzer's seed 1009).
  std::vector<std::size_t> depth(j.types.size(), 0);
  std::size_t ordered = 0;  // the depth of the last effect or control equation
  std::map<Key, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    const Eqn& e = j.eqns[i];
    std::size_t d = 0;
    for (const Atom& a : e.inputs)
      if (a.is_var()) d = std::max(d, depth[static_cast<std::size_t>(a.var)]);
    const Kind kind = prim_kind(e.prim);
    if (kind == Kind::effect || kind == Kind::control) {
      d = std::max(d, ordered);
      ordered = d;
    }
    if (key[i]) {
      std::get<9>(*key[i]) = d;
      groups[*key[i]].push_back(i);
      ++d;
    }
    for (int v : e.outputs) depth[static_cast<std::size_t>(v)] = d;
  }
  if (std::none_of(groups.begin(), groups.end(), [](const auto& g) { return g.second.size() >= 2; })) return j;
  // Rewrite: each group's block replaces its last member; the others vanish.
  std::vector<int> def(j.types.size(), -1);  // var -> its defining equation (before the rewrite)
  for (std::size_t i = 0; i < j.eqns.size(); ++i)
    for (int v : j.eqns[i].outputs) def[static_cast<std::size_t>(v)] = static_cast<int>(i);
  std::vector<std::vector<Eqn>> replace(j.eqns.size());
  std::vector<bool> drop(j.eqns.size(), false);
  for (const auto& [k, members] : groups) {
    if (members.size() < 2) continue;
    const auto n = static_cast<std::int64_t>(members.size());
    const Eqn& first = j.eqns[members[0]];
    const Type lt = j.type_of(first.inputs[0]), rt = j.type_of(first.inputs[1]);
    const DType od = j.types[static_cast<std::size_t>(first.outputs[0])].dtype;
    const std::int64_t B = std::get<3>(k), M = std::get<4>(k), N = std::get<6>(k);
    std::vector<Eqn>& block = replace[members.back()];
    // The operands, each back through the reshapes/squeezes that produced it
    // (row-major order is kept by both) while all members' sources have one
    // static type of rank >= 1: their concatenation along axis 0 holds member
    // after member, exactly the layout of the (n*B, ...) operand. Its nest
    // then runs over the source's own shape (a convolution's image slice is
    // copied as a slice, not read through a reshape's divisions).
    auto cat = [&](int side, const Type& t) {
      std::vector<Atom> ins;
      for (std::size_t m : members) ins.push_back(j.eqns[m].inputs[static_cast<std::size_t>(side)]);
      for (;;) {
        std::vector<Atom> next;
        for (const Atom& a : ins) {
          const int q = a.is_var() ? def[static_cast<std::size_t>(a.var)] : -1;
          if (q < 0) break;
          const Eqn& r = j.eqns[static_cast<std::size_t>(q)];
          if ((r.prim != Prim::reshape && r.prim != Prim::squeeze) || !r.inputs[0].is_var()) break;
          next.push_back(r.inputs[0]);
        }
        if (next.size() != ins.size()) break;
        const Type t0 = j.type_of(next[0]);
        if (t0.rank() == 0 || !static_dims(t0) ||
            !std::all_of(next.begin(), next.end(), [&](const Atom& a) { return j.type_of(a) == t0; }))
          break;
        ins = std::move(next);
      }
      Type ct = j.type_of(ins[0]);
      ct.shape[0] = JDim{n * ct.shape[0].value, -1};
      Type target = t;
      target.shape[0] = JDim{n * B, -1};
      const bool direct = ct.shape == target.shape;
      const int v = j.new_var(direct ? target : ct);
      block.push_back(Eqn{Prim::concatenate, std::move(ins), {v}, ConcatenateParams{0}});
      if (direct) return Atom::of_var(v);
      ReshapeParams rp;
      for (const JDim& x : target.shape) rp.new_sizes.push_back(x.value);
      const int w = j.new_var(std::move(target));
      block.push_back(Eqn{Prim::reshape, {Atom::of_var(v)}, {w}, std::move(rp)});
      return Atom::of_var(w);
    };
    const Atom l = cat(0, lt), r = cat(1, rt);
    const int d = j.new_var(Type{od, {JDim{n * B, -1}, JDim{M, -1}, JDim{N, -1}}, false});
    block.push_back(Eqn{Prim::dot_general, {l, r}, {d}, first.params});
    for (std::int64_t i = 0; i < n; ++i) {
      const int out = j.eqns[members[static_cast<std::size_t>(i)]].outputs[0];
      const Type ot = j.types[static_cast<std::size_t>(out)];
      const std::vector<JDim> bmn{JDim{B, -1}, JDim{M, -1}, JDim{N, -1}};
      const bool same = ot.shape == bmn;
      const int s = same ? out : j.new_var(Type{od, bmn, false});
      block.push_back(Eqn{Prim::slice, {Atom::of_var(d)}, {s}, SliceParams{{i * B, 0, 0}, {(i + 1) * B, M, N}, {}}});
      if (!same) {
        ReshapeParams rp;
        for (const JDim& x : ot.shape) rp.new_sizes.push_back(x.value);
        block.push_back(Eqn{Prim::reshape, {Atom::of_var(s)}, {out}, std::move(rp)});
      }
    }
    for (std::size_t m : members) drop[m] = true;
  }
  std::vector<Eqn> eqns;
  for (std::size_t i = 0; i < j.eqns.size(); ++i) {
    if (!drop[i]) eqns.push_back(std::move(j.eqns[i]));
    for (Eqn& q : replace[i]) eqns.push_back(std::move(q));
  }
  j.eqns = std::move(eqns);
  toposort_eqns(j);
  return j;
}

// ---------------------------------------------------------------------------
// Transposes read through by a product (issue 25, item 2)
//
// A dot_general operand x = transpose(y, perm) is an index map the product
// can take itself: x's axis a is y's axis perm[a], so the product reads y
// with its batch and contracting axes renamed (exact: the same pairs of
// elements, summed in the same order). That holds as long as x's free axes
// keep their relative order in y (the output's axes are the free axes in
// increasing order); chains of transposes compose. canonicalize_dots then
// sees y: stored in one of the forms the product reads ((B,M,K), (B,K,M),
// (B,K,N), (B,N,K)), it is read where it is, with no copy; else its one
// canonical transpose is the one copy (the composed map, not one copy per
// transpose). The transpose itself stays in the jaxpr, dead unless another
// consumer reads it.
inline void fold_dot_transposes(const std::vector<int>& def, const std::vector<Eqn>& eqns, Eqn& d) {
  auto& p = std::get<DotGeneralParams>(d.params);
  for (std::size_t side = 0; side < 2; ++side) {
    auto& batch = side == 0 ? p.lhs_batch : p.rhs_batch;
    auto& contracting = side == 0 ? p.lhs_contracting : p.rhs_contracting;
    for (;;) {
      const Atom& x = d.inputs[side];
      if (!x.is_var() || static_cast<std::size_t>(x.var) >= def.size() || def[static_cast<std::size_t>(x.var)] < 0) break;
      const Eqn& t = eqns[static_cast<std::size_t>(def[static_cast<std::size_t>(x.var)])];
      if (t.prim != Prim::transpose || !t.inputs[0].is_var()) break;
      const auto& perm = std::get<TransposeParams>(t.params).permutation;
      const auto free = dot_free_axes(static_cast<int>(perm.size()), batch, contracting);
      bool ordered = true;
      for (std::size_t i = 1; i < free.size(); ++i)
        ordered = ordered && perm[static_cast<std::size_t>(free[i - 1])] < perm[static_cast<std::size_t>(free[i])];
      if (!ordered) break;
      for (auto& a : batch) a = perm[static_cast<std::size_t>(a)];
      for (auto& a : contracting) a = perm[static_cast<std::size_t>(a)];
      d.inputs[side] = t.inputs[0];
    }
  }
}

// ---------------------------------------------------------------------------
// canonicalize_dots (checkpoints inlined first)

inline Jaxpr canonicalize_dots(const Jaxpr& in0) {
  const Jaxpr in = hoist_loop_invariants(inline_checkpoints(in0));
  Jaxpr j = in;
  j.eqns.clear();
  // A product of dimensions as one JDim: static, a dimension variable, or a
  // new i64[] `mul` equation over the variables (runtime dimensions), so the
  // (B,M,K)/(B,K,N) operand types stay closed jaxpr types.
  auto prod = [&](const std::vector<JDim>& dims, const std::vector<std::int64_t>& axes) -> JDim {
    std::int64_t k = 1;
    std::vector<int> vars;
    for (auto a : axes) {
      const JDim& d = dims[static_cast<std::size_t>(a)];
      if (d.is_static()) k *= d.value;
      else vars.push_back(d.var);
    }
    if (vars.empty() || k == 0) return JDim{k, -1};
    if (vars.size() == 1 && k == 1) return JDim::of_var(vars[0]);
    const Type i64s{DType::i64, {}, false};
    Atom acc = Atom::of_var(vars[0]);
    auto mul = [&](Atom y) {
      const int v = j.new_var(i64s);
      j.eqns.push_back(Eqn{Prim::mul, {acc, y}, {v}, NoParams{}});
      acc = Atom::of_var(v);
    };
    for (std::size_t i = 1; i < vars.size(); ++i) mul(Atom::of_var(vars[i]));
    if (k != 1) mul(Atom::literal(Scalar::of<std::int64_t>(k)));
    return JDim::of_var(acc.var);
  };
  // Bring operand `x` to axis order `perm` and shape `target`.
  auto canon = [&](const Atom& x, const std::vector<std::int64_t>& perm, const std::vector<JDim>& target) -> Atom {
    const Type t = j.type_of(x);
    Atom cur = x;
    bool identity = true;
    for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<std::int64_t>(i);
    std::vector<JDim> pdims;
    for (auto a : perm) pdims.push_back(t.shape[static_cast<std::size_t>(a)]);
    if (!identity) {
      const int v = j.new_var(Type{t.dtype, pdims, false});
      j.eqns.push_back(Eqn{Prim::transpose, {cur}, {v}, TransposeParams{perm}});
      cur = Atom::of_var(v);
    }
    if (pdims != target) {
      const int v = j.new_var(Type{t.dtype, target, false});
      ReshapeParams rp;
      std::vector<Atom> ins{cur};
      for (const JDim& d : target) {
        rp.new_sizes.push_back(d.is_static() ? d.value : kDynamicDim);
        if (!d.is_static()) ins.push_back(Atom::of_var(d.var));
      }
      j.eqns.push_back(Eqn{Prim::reshape, std::move(ins), {v}, std::move(rp)});
      cur = Atom::of_var(v);
    }
    return cur;
  };
  std::vector<int> def(in.types.size(), -1);  // var -> its equation in `in`
  for (std::size_t i = 0; i < in.eqns.size(); ++i)
    for (int v : in.eqns[i].outputs) def[static_cast<std::size_t>(v)] = static_cast<int>(i);
  for (const Eqn& e0 : in.eqns) {
    if (e0.prim != Prim::dot_general) {
      j.eqns.push_back(e0);
      continue;
    }
    Eqn e = e0;
    fold_dot_transposes(def, in.eqns, e);
    const auto& p = std::get<DotGeneralParams>(e.params);
    const std::vector<JDim> ld = j.type_of(e.inputs[0]).shape, rd = j.type_of(e.inputs[1]).shape;
    const auto lf = dot_free_axes(static_cast<int>(ld.size()), p.lhs_batch, p.lhs_contracting);
    const auto rf = dot_free_axes(static_cast<int>(rd.size()), p.rhs_batch, p.rhs_contracting);
    const JDim B = prod(ld, p.lhs_batch), M = prod(ld, lf), K = prod(ld, p.lhs_contracting), N = prod(rd, rf);
    auto order = [](std::vector<std::int64_t> v, const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& y) {
      v.insert(v.end(), x.begin(), x.end());
      v.insert(v.end(), y.begin(), y.end());
      return v;
    };
    auto is_identity = [](const std::vector<std::int64_t>& perm) {
      for (std::size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<std::int64_t>(i)) return false;
      return true;
    };
    const auto lperm = order(p.lhs_batch, lf, p.lhs_contracting), rperm = order(p.rhs_batch, p.rhs_contracting, rf);
    const auto lperm_t = order(p.lhs_batch, p.lhs_contracting, lf), rperm_t = order(p.rhs_batch, rf, p.rhs_contracting);
    const bool ta = !is_identity(lperm) && is_identity(lperm_t), tb = !is_identity(rperm) && is_identity(rperm_t);
    Eqn d = e;
    d.inputs = {ta ? canon(e.inputs[0], lperm_t, {B, K, M}) : canon(e.inputs[0], lperm, {B, M, K}),
                tb ? canon(e.inputs[1], rperm_t, {B, N, K}) : canon(e.inputs[1], rperm, {B, K, N})};
    d.params = DotGeneralParams{{ta ? 1 : 2}, {tb ? 2 : 1}, {0}, {0}};
    j.eqns.push_back(std::move(d));
  }
  return batch_small_dots(std::move(j));
}

}  // namespace dyn::detail
