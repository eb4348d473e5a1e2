// dynstage_fuzz: the random program generator (well-typed by construction),
// the shrinker, the C++ reproduction printer and the command-line driver
// (docs/reliability.md, "Differential fuzzing"). No LLVM here: the
// interpreter and the three ways of running live in fuzz_run.cpp.
#include "fuzz.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>

namespace fuzz {

namespace {

bool isf(DType d) { return d == DType::f32 || d == DType::f64; }
bool isi(DType d) { return dyn::is_integer(d); }
// Index arrays and switch_ indices: i32 or i64 (the interpreter instantiates
// gather and scatter for those only).
bool isidx(DType d) { return d == DType::i32 || d == DType::i64; }
const DType kDtypes[] = {DType::bool_, DType::i8,  DType::i16, DType::i32, DType::i64, DType::u8,
                         DType::u16,   DType::u32, DType::u64, DType::f32, DType::f64};
constexpr i64 kLastDtype = static_cast<i64>(std::size(kDtypes)) - 1;

std::vector<i64> sizes(const Ty& t) {
  std::vector<i64> r;
  for (const D& d : t.shape) r.push_back(d.n);
  return r;
}

// Numpy broadcasting of two shapes (trailing alignment); false if not
// broadcastable with what the generator can prove (a static 1 broadcasts;
// otherwise dimensions must be equal).
bool broadcast(const std::vector<D>& a, const std::vector<D>& b, std::vector<D>& out) {
  const std::size_t r = std::max(a.size(), b.size());
  out.assign(r, D{1, -1});
  for (std::size_t i = 0; i < r; ++i) {
    const D* x = i < r - a.size() ? nullptr : &a[i - (r - a.size())];
    const D* y = i < r - b.size() ? nullptr : &b[i - (r - b.size())];
    if (!x) out[i] = *y;
    else if (!y) out[i] = *x;
    else if (*x == *y) out[i] = *x;
    else if (x->is_static() && x->n == 1) out[i] = *y;
    else if (y->is_static() && y->n == 1) out[i] = *x;
    else return false;
  }
  return true;
}

struct Gen {
  Rng r{0};
  int next_sym = 1;  // sym 0 is the polymorphic "n"
  std::vector<int> size_slots;  // top-level i64 scalar inputs with values in [0, 4]
  std::vector<i64> size_values;  // their values
  // A big program (generate): the symbolic n is large enough that kernels
  // take their parallel paths, so the threads check compares 1 and 2 threads
  // on split loops, reductions and GEMMs.
  bool big = false;
  static constexpr i64 kMaxElems = i64{1} << 22;  // a value's elements, at most

  // Values: ints in [-100, 100] and now and then an extreme; floats in
  // [-8, 8] and now and then a special (NaN, +-inf, +-0, huge, tiny).
  dyn::AnyArray array(DType dt, const std::vector<i64>& shape) {
    return fuzz::visit_dtype(dt, [&](auto t) -> dyn::AnyArray {
      using T = decltype(t);
      dyn::Array<T> a(shape);
      T* p = a.mutable_data();
      const bool mild = r.coin(0.3);
      for (i64 i = 0; i < a.size(); ++i) {
        const bool special = r.coin(0.08);
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = r.coin();
        } else if constexpr (std::is_integral_v<T>) {
          const T ext[] = {std::numeric_limits<T>::max(), std::numeric_limits<T>::min(), T(-1), T(0), T(1), T(2)};
          p[i] = special ? ext[r.range(0, 5)] : static_cast<T>(mild ? r.range(-3, 3) : r.range(-100, 100));
        } else {
          const T sp[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), T(0), -T(0), T(1e30), T(1e-30), T(0.5)};
          p[i] = special ? sp[r.range(0, 7)] : static_cast<T>((mild ? 2 : 8) * (2 * (static_cast<double>(r.next() >> 11) / 9007199254740992.0) - 1));
        }
      }
      return a;
    });
  }

  std::vector<D> rand_shape(int max_rank = 3) {
    std::vector<D> s;
    const i64 rank = r.range(0, max_rank);
    static const std::vector<i64> dims = {0, 1, 1, 2, 2, 3, 3, 4, 5};
    for (i64 i = 0; i < rank; ++i) s.push_back(D{r.pick(dims), -1});
    return s;
  }

  Ty freshen(Ty t) {
    for (D& d : t.shape)
      if (!d.is_static()) d.sym = next_sym++;
    return t;
  }

  // ---- building blocks
  static bool any_lowp(const Program& p) {
    for (const Ty& t : p.params)
      if (t.lowp) return true;
    for (const Node& n : p.nodes) {
      for (const Ty& t : n.out)
        if (t.lowp) return true;
      for (const Program& b : n.body)
        if (any_lowp(b)) return true;
    }
    return false;
  }
  static int add(Program& p, std::vector<Ty>& scope, Node n) {
    const int s = static_cast<int>(scope.size());
    bool low = false;
    for (int i : n.in) low = low || scope[static_cast<std::size_t>(i)].lowp;
    for (const Program& b : n.body) low = low || any_lowp(b);
    for (Ty& t : n.out) t.lowp = t.inexact && (t.dt == DType::f32 || low);
    for (const Ty& t : n.out) scope.push_back(t);
    p.nodes.push_back(std::move(n));
    return s;
  }
  int constant(Program& p, std::vector<Ty>& scope, DType dt, const std::vector<D>& shape) {
    Node n;
    n.op = Op::constant;
    Ty t{dt, shape, false};
    for (D& d : t.shape) d.sym = -1;
    n.data = array(dt, sizes(t));
    n.out = {t};
    return add(p, scope, std::move(n));
  }
  template <class Pred>
  int pick(const std::vector<Ty>& scope, Pred pred) {
    std::vector<int> c;
    for (int i = 0; i < static_cast<int>(scope.size()); ++i)
      if (pred(scope[i])) c.push_back(i);
    if (c.empty()) return -1;
    // Bias towards recent values, so programs are chains rather than bushes.
    if (r.coin(0.5)) return c.back();
    if (r.coin(0.5)) return c[c.size() - 1 - std::min<std::size_t>(c.size() - 1, r.range(0, 2))];
    return r.pick(c);
  }
  // A same-dtype operand broadcast-compatible with x (an existing value, or a
  // new constant of a compatible shape).
  int partner(Program& p, std::vector<Ty>& scope, int x, bool allow_inexact = true) {
    const Ty tx = scope[x];
    std::vector<D> o;
    int y = r.coin(0.6) ? pick(scope, [&](const Ty& t) {
      return t.dt == tx.dt && (allow_inexact || !t.inexact) && broadcast(tx.shape, t.shape, o);
    }) : -1;
    if (y >= 0) return y;
    std::vector<D> s = tx.shape;
    const i64 drop = r.range(0, static_cast<i64>(s.size()));
    s.erase(s.begin(), s.begin() + (r.coin() ? drop : 0));
    for (D& d : s)
      if (!d.is_static() || r.coin(0.25)) d = D{1, -1};
    return constant(p, scope, tx.dt, s);
  }

  // A bool[] predicate from an exact value: compare(sum(x), constant).
  int predicate(Program& p, std::vector<Ty>& scope) {
    int x = pick(scope, [](const Ty& t) { return !t.inexact; });
    // (A float sum is inexact: a float operand is reduced with max instead.)
    if (x < 0 || r.coin(0.1) || (isf(scope[x].dt) && scope[x].size() == 0))
      return constant(p, scope, DType::bool_, {});
    Node red;
    red.op = Op::reduce, red.k = isf(scope[x].dt) ? r_max : r_sum, red.lit = 1, red.in = {x};
    const DType rdt = isf(scope[x].dt) ? scope[x].dt : dyn::sum_dtype(scope[x].dt);
    red.out = {Ty{rdt, {}, false}};
    const int s = add(p, scope, red);
    const int c = constant(p, scope, rdt, {});
    Node cmp;
    cmp.op = Op::compare, cmp.k = static_cast<int>(r.range(0, kCmpCount - 1)), cmp.in = {s, c};
    cmp.out = {Ty{DType::bool_, {}, false}};
    return add(p, scope, cmp);
  }

  // A C++ integer index into an axis of size n: in range, negative (from the
  // end) as often, and one time in ten out of range (an IndexError, at trace
  // time in every way; in eval_jaxpr and jit only when it is in a body eager
  // does not run, fuzz_run.cpp index_error_in_untaken_body).
  i64 static_index(i64 n) {
    if (r.coin(0.1)) return r.coin() ? n + r.range(0, 2) : -n - 1 - r.range(0, 2);
    return r.range(-n, n - 1);
  }

  int index_scalar(Program& p, std::vector<Ty>& scope) {
    int s = r.coin(0.7) ? pick(scope, [](const Ty& t) { return isi(t.dt) && t.shape.empty() && !t.inexact; }) : -1;
    if (s >= 0) return s;
    return constant(p, scope, r.coin() ? DType::i32 : DType::i64, {});
  }

  // ---- one random node; false if the chosen op does not apply
  bool node(Program& p, std::vector<Ty>& scope, int depth) {
    const int x = pick(scope, [](const Ty&) { return true; });
    if (x < 0) return false;
    const Ty tx = scope[x];
    const i64 rank = static_cast<i64>(tx.shape.size());
    Node n;
    n.in = {x};
    const int which = static_cast<int>(r.range(0, 42));
    switch (which) {
      case 0: case 1: case 2: {  // unary
        std::vector<int> ks;
        if (tx.dt == DType::bool_) ks = {u_not};
        else if (isi(tx.dt)) ks = {u_neg, u_abs, u_sign, u_not, u_popcount, u_clz, u_square, u_ipow, u_stop_gradient};
        else if (tx.inexact) {
          // Only well-conditioned functions of an inexact value: sin(prod(x))
          // of a product near 1e6 turns a few ulp of reassociation (allowed,
          // docs/backend.md) into an O(1) difference.
          ks = {u_neg, u_abs, u_sqrt, u_tanh, u_logistic};
        } else {
          ks = {u_neg, u_abs, u_exp, u_log, u_log1p, u_sqrt, u_rsqrt, u_sin, u_cos, u_tan, u_tanh, u_logistic,
                u_sign, u_floor, u_ceil, u_round, u_expm1, u_exp2, u_cbrt, u_sinh, u_cosh, u_asin, u_acos,
                u_atan, u_asinh, u_acosh, u_atanh, u_erf, u_erfc, u_lgamma, u_erf_inv, u_digamma, u_trigamma, u_log2, u_log10, u_square, u_ipow, u_stop_gradient,
                u_isfinite, u_isnan, u_isinf};
        }
        n.op = Op::unary, n.k = r.pick(ks);
        Ty t = tx;
        t.inexact = tx.inexact || (n.k >= u_exp && n.k <= u_logistic) || (n.k >= u_expm1 && n.k <= u_log10);
        if (n.k >= u_isfinite) t = Ty{DType::bool_, tx.shape, false};
        n.out = {t};
        break;
      }
      case 3: case 4: case 5: case 6: {  // binary
        const int y = partner(p, scope, x);
        const Ty& ty = scope[y];
        std::vector<int> ks;
        if (tx.dt == DType::bool_) ks = {b_and, b_or, b_xor};
        else if (isi(tx.dt))
          ks = {b_add, b_sub, b_mul, b_div, b_rem, b_pow, b_max, b_min, b_and, b_or, b_xor, b_shl, b_shr};
        else if (tx.inexact || ty.inexact) ks = {b_add, b_sub, b_mul, b_div, b_max, b_min};  // (as for unary)
        else ks = {b_add, b_sub, b_mul, b_div, b_rem, b_pow, b_max, b_min, b_atan2, b_hypot, b_nextafter, b_logical_and};
        n.op = Op::binary, n.k = r.pick(ks), n.in = {x, y};
        Ty t{tx.dt, {}, tx.inexact || ty.inexact || n.k == b_pow || n.k == b_atan2 || n.k == b_hypot};
        if (n.k == b_logical_and) t = Ty{DType::bool_, {}, false};
        broadcast(tx.shape, ty.shape, t.shape);
        n.out = {t};
        break;
      }
      case 7: {  // mixed dtypes: promotion
        const int y = pick(scope, [&](const Ty& t) {
          std::vector<D> o;
          return t.dt != tx.dt && broadcast(tx.shape, t.shape, o);
        });
        if (y < 0) return false;
        const Ty& ty = scope[y];
        n.op = Op::add_mixed, n.in = {x, y};
        const DType dt = dyn::promote_types(dyn::TypeInfo{tx.dt, false}, dyn::TypeInfo{ty.dt, false}).dtype;
        if (dt == DType::bool_) return false;
        Ty t{dt, {}, tx.inexact || ty.inexact};
        broadcast(tx.shape, ty.shape, t.shape);
        n.out = {t};
        break;
      }
      case 8: case 9: {  // x op literal
        if (tx.dt == DType::bool_) return false;
        std::vector<int> ks = {b_add, b_sub, b_mul, b_div, b_max, b_min};
        if (!tx.inexact) ks.push_back(b_rem);
        if (isi(tx.dt)) ks.insert(ks.end(), {b_and, b_xor, b_shl, b_shr});  // amounts -3..5: negative ones too
        if (isf(tx.dt) && !tx.inexact) ks.push_back(b_pow);
        n.op = Op::scalar, n.k = r.pick(ks), n.p = {r.coin(0.3) ? 1 : 0};
        static const std::vector<double> fl = {0.5, -1.5, 2.0, 3.25, 0.0, -0.0, 1e10};
        // (an unsigned array meets no negative literal: that is a TypeError, as JAX's OverflowError)
        n.lit = isf(tx.dt) ? r.pick(fl) : static_cast<double>(r.range(dyn::is_unsigned_integer(tx.dt) ? 0 : -3, 5));
        Ty t = tx;
        t.inexact = tx.inexact || n.k == b_pow;
        n.out = {t};
        break;
      }
      case 10: case 11: {  // compare
        if (tx.inexact) return false;
        const int y = partner(p, scope, x, false);
        n.op = Op::compare, n.k = static_cast<int>(r.range(0, kCmpCount - 1)), n.in = {x, y};
        Ty t{DType::bool_, {}, false};
        broadcast(tx.shape, scope[y].shape, t.shape);
        n.out = {t};
        break;
      }
      case 12: {  // where
        const int y = partner(p, scope, x);
        Ty t{tx.dt, {}, tx.inexact || scope[y].inexact};
        broadcast(tx.shape, scope[y].shape, t.shape);
        std::vector<D> o;
        int c = pick(scope, [&](const Ty& u) { return u.dt == DType::bool_ && broadcast(t.shape, u.shape, o); });
        if (c < 0 || r.coin(0.3)) {
          std::vector<D> s = t.shape;
          for (D& d : s)
            if (!d.is_static() || r.coin(0.3)) d = D{1, -1};
          c = constant(p, scope, DType::bool_, s);
        }
        std::vector<D> s2;
        broadcast(t.shape, scope[c].shape, s2);
        t.shape = s2;
        n.op = Op::where, n.in = {c, x, y}, n.out = {t};
        break;
      }
      case 13: case 14: {  // astype
        const DType dt = kDtypes[r.range(0, kLastDtype)];
        if (dt == tx.dt || (tx.inexact && !isf(dt))) return false;
        n.op = Op::astype;
        n.out = {Ty{dt, tx.shape, tx.inexact}};
        break;
      }
      case 15: case 16: {  // reduction
        std::vector<int> ks;
        if (tx.dt == DType::bool_) ks = {r_sum, r_any, r_all};
        else if (tx.inexact) ks = {r_sum, r_prod, r_max, r_min, r_mean};  // (any/all test != 0: discontinuous)
        else ks = {r_sum, r_prod, r_max, r_min, r_mean, r_any, r_all};
        n.op = Op::reduce, n.k = r.pick(ks);
        Ty t = tx;
        const bool keep = r.coin(0.25);  // dyn::keepdims: the reduced axes stay, as size 1
        if (r.coin(0.3)) {
          n.lit = 1;
          for (i64 a = 0; a < rank; ++a) n.p.push_back(a);
        } else {
          for (i64 a = 0; a < rank; ++a)
            if (r.coin(0.4)) n.p.push_back(a);
        }
        for (i64 j = static_cast<i64>(n.p.size()) - 1; j >= 0; --j) {
          if (keep) t.shape[static_cast<std::size_t>(n.p[j])] = D{1, -1};
          else t.shape.erase(t.shape.begin() + n.p[j]);
        }
        if (n.lit != 0) n.p.clear();
        if (keep) n.lit += 2;
        // max/min of nothing is an error (consistent, but wasted): avoided.
        if ((n.k == r_max || n.k == r_min) && tx.size() == 0) return false;
        if (n.k == r_sum || n.k == r_prod) t.dt = dyn::sum_dtype(tx.dt);  // bool: i64; i8: i32; u8: u32
        if (n.k == r_any || n.k == r_all) t.dt = DType::bool_;
        if (n.k == r_mean && !isf(t.dt)) t.dt = DType::f32;
        if (isf(t.dt) && (n.k == r_sum || n.k == r_prod || n.k == r_mean)) t.inexact = true;
        n.out = {t};
        break;
      }
      case 17: {  // reshape (static shapes)
        if (!tx.is_static()) return false;
        const i64 size = tx.size();
        std::vector<i64> s;
        if (size == 0) {
          s = {r.range(0, 3), 0};
          if (r.coin()) std::swap(s[0], s[1]);
        } else {
          i64 rest = size;
          for (i64 f = 2; f <= rest; ++f)
            while (rest % f == 0) {
              rest /= f;
              if (s.empty() || r.coin(0.5)) s.push_back(f);
              else s.back() *= f;
            }
          if (r.coin(0.3)) s.insert(s.begin() + r.range(0, static_cast<i64>(s.size())), 1);
          if (s.size() > 4) return false;
        }
        n.op = Op::reshape, n.p = s;
        Ty t = tx;
        t.shape.clear();
        for (i64 d : s) t.shape.push_back(D{d, -1});
        if (!s.empty() && size > 0 && r.coin(0.3)) n.p[static_cast<std::size_t>(r.range(0, static_cast<i64>(s.size()) - 1))] = -1;
        n.out = {t};
        break;
      }
      case 18: {  // transpose
        if (rank < 2) return false;
        std::vector<i64> perm;
        for (i64 i = 0; i < rank; ++i) perm.push_back(i);
        for (i64 i = rank - 1; i > 0; --i) std::swap(perm[i], perm[r.range(0, i)]);
        n.op = Op::transpose, n.p = perm;
        Ty t = tx;
        for (i64 i = 0; i < rank; ++i) t.shape[i] = tx.shape[perm[i]];
        n.out = {t};
        break;
      }
      case 19: {  // slice_in_dim
        if (rank < 1) return false;
        const i64 ax = r.range(0, rank - 1);
        Ty t = tx;
        if (!tx.shape[ax].is_static()) {
          n.p = {ax, 0, -1, 1};
        } else {
          const i64 dn = tx.shape[ax].n;
          const i64 st = r.range(0, dn), lim = r.range(st, dn), stride = r.range(1, 3);
          n.p = {ax, st, lim, stride};
          t.shape[ax] = D{(lim - st + stride - 1) / stride, -1};
        }
        n.op = Op::slice, n.out = {t};
        break;
      }
      case 20: {  // concatenate
        if (rank < 1) return false;
        const i64 ax = r.range(0, rank - 1);
        bool other_static = true;
        for (i64 i = 0; i < rank; ++i)
          if (i != ax && !tx.shape[i].is_static()) other_static = false;
        Ty t = tx;
        const i64 count = r.range(1, 3);
        for (i64 j = 0; j < count; ++j) {
          int y = pick(scope, [&](const Ty& u) {
            if (u.dt != tx.dt || u.shape.size() != tx.shape.size()) return false;
            for (i64 i = 0; i < rank; ++i)
              if (i != ax && !(u.shape[i] == tx.shape[i])) return false;
            return true;
          });
          if ((y < 0 || r.coin(0.4)) && other_static) {
            std::vector<D> s = tx.shape;
            s[ax] = D{r.range(0, 3), -1};
            y = constant(p, scope, tx.dt, s);
          }
          if (y < 0) y = x;
          n.in.push_back(y);
          t.inexact = t.inexact || scope[y].inexact;
          if (t.shape[ax].is_static() && scope[y].shape[ax].is_static()) t.shape[ax].n += scope[y].shape[ax].n;
          else t.shape[ax] = D{t.shape[ax].n + scope[y].shape[ax].n, next_sym++};
        }
        n.op = Op::concat, n.p = {ax}, n.out = {t};
        break;
      }
      case 21: {  // expand_dims
        if (rank >= 4) return false;
        const i64 ax = r.range(0, rank);
        Ty t = tx;
        t.shape.insert(t.shape.begin() + ax, D{1, -1});
        n.op = Op::expand_dims, n.p = {ax}, n.out = {t};
        break;
      }
      case 22: {  // squeeze
        Ty t = tx;
        for (i64 i = rank - 1; i >= 0; --i)
          if (tx.shape[i].is_static() && tx.shape[i].n == 1 && r.coin(0.7)) {
            n.p.insert(n.p.begin(), i);
            t.shape.erase(t.shape.begin() + i);
          }
        if (n.p.empty()) return false;
        n.op = Op::squeeze, n.out = {t};
        break;
      }
      case 23: {  // broadcast_to
        if (rank >= 4) return false;
        Ty t = tx;
        t.shape.clear();
        const i64 lead = r.range(0, 2);
        for (i64 i = 0; i < lead; ++i) {
          const i64 d = r.range(0, 3);
          n.p.push_back(d), t.shape.push_back(D{d, -1});
        }
        for (i64 j = 0; j < rank; ++j) {
          if (tx.shape[j].is_static() && tx.shape[j].n == 1 && r.coin(0.5)) {
            const i64 d = r.range(0, 4);
            n.p.push_back(d), t.shape.push_back(D{d, -1});
          } else {
            n.p.push_back(-1 - j), t.shape.push_back(tx.shape[j]);
          }
        }
        n.op = Op::broadcast_to, n.out = {t};
        break;
      }
      case 24: case 25: {  // dot / matmul
        if (tx.dt == DType::bool_ || rank < 1 || rank > 2) return false;
        const bool mm = which == 25;
        const D k = tx.shape[rank - 1];
        if (!k.is_static()) return false;
        std::vector<D> ys;
        const i64 yr = r.range(1, 2);
        if (yr == 1) ys = {k};
        else ys = {k, D{r.range(0, 4), -1}};
        const int y = constant(p, scope, tx.dt, ys);
        n.op = mm ? Op::matmul : Op::dot, n.in = {x, y};
        Ty t{tx.dt, {}, tx.inexact || isf(tx.dt)};
        if (rank == 2) t.shape.push_back(tx.shape[0]);
        if (yr == 2) t.shape.push_back(ys[1]);
        n.out = {t};
        break;
      }
      case 26: {  // dynamic_slice / dynamic_update_slice
        if (rank < 1 || !tx.is_static()) return false;
        std::vector<D> us;
        for (const D& d : tx.shape) us.push_back(D{r.range(0, d.n), -1});
        if (r.coin()) {
          n.op = Op::dynamic_slice;
          for (const D& d : us) n.p.push_back(d.n);
          n.out = {Ty{tx.dt, us, tx.inexact}};
        } else {
          n.op = Op::dynamic_update_slice;
          const int u = constant(p, scope, tx.dt, us);
          n.in.push_back(u);
          n.out = {tx};
        }
        for (i64 i = 0; i < rank; ++i) n.in.push_back(index_scalar(p, scope));
        break;
      }
      case 27: {  // creation
        const DType dt = kDtypes[r.range(0, kLastDtype)];
        if (dt != DType::bool_ && r.coin()) {
          const i64 m = r.range(0, 6);
          n.op = Op::iota, n.p = {m}, n.out = {Ty{dt, {D{m, -1}}, false}};
        } else {
          std::vector<D> s = rand_shape(2);
          n.op = Op::full, n.p = sizes(Ty{dt, s, false});
          n.lit = dt == DType::bool_ ? static_cast<double>(r.coin()) : isf(dt) ? 1.5 : static_cast<double>(r.range(-3, 3));
          n.out = {Ty{dt, s, false}};
        }
        n.in.clear();
        break;
      }
      case 32: {  // cumulative: exact in jit too (sequential order), so not inexact by itself
        if (rank < 1) return false;
        // Of a 1-D number array, now and then a segment sum over offsets
        // (also summed in order: exact too). Offsets: an existing 1-D integer
        // value or a constant; out-of-range and decreasing ones clamp.
        if (rank == 1 && tx.dt != DType::bool_ && r.coin(0.3)) {
          int o = r.coin(0.4) ? pick(scope, [](const Ty& t) {
            return isi(t.dt) && !t.inexact && t.shape.size() == 1 && t.shape[0].n >= 1;
          }) : -1;
          if (o < 0) o = constant(p, scope, r.coin() ? DType::i32 : DType::i64, {D{r.range(1, 6), -1}});
          const D len = scope[o].shape[0];
          n.op = Op::segment_sum, n.in = {x, o};
          n.out = {Ty{tx.dt, {len.is_static() ? D{len.n - 1, -1} : D{len.n - 1, next_sym++}}, tx.inexact}};
          break;
        }
        n.op = Op::cumulative;
        n.k = tx.dt == DType::bool_ ? r.pick(std::vector<int>{cu_sum, cu_prod})
                                    : r.pick(std::vector<int>{cu_sum, cu_prod, cu_max, cu_min});
        n.p = {r.range(-rank, rank - 1), r.coin() ? 1 : 0};
        Ty t = tx;
        if (n.k == cu_sum || n.k == cu_prod) t.dt = dyn::sum_dtype(tx.dt);
        n.out = {t};
        break;
      }
      case 34: {  // argmax / argmin: an index, so the operand must be exact
        if (rank < 1 || tx.inexact) return false;
        const i64 axis = r.range(-rank, rank - 1);
        const auto ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
        // An empty axis: jnp's error in eager where the size is concrete,
        // lax's 0 in a kernel of runtime size; avoided.
        if (tx.shape[ax].n == 0) return false;
        n.op = Op::argreduce, n.k = r.coin() ? 1 : 0, n.p = {axis};
        n.lit = r.coin(0.25) ? 1 : 0;
        Ty t{DType::i32, tx.shape, false};
        if (n.lit != 0) t.shape[ax] = D{1, -1};
        else t.shape.erase(t.shape.begin() + static_cast<std::ptrdiff_t>(ax));
        n.out = {t};
        break;
      }
      case 35: {  // sort (k 0), argsort (1), top_k's values (2) and indices (3)
        if (rank < 1) return false;
        n.op = Op::sort, n.k = static_cast<int>(r.range(0, 3));
        // Sorted values are a continuous function of the operand, so inexact
        // is fine; positions (argsort, top_k's indices) need exact operands.
        if ((n.k == 1 || n.k == 3) && tx.inexact) n.k -= 1;
        // top_k: numbers, over a static last axis (k <= its size at every run).
        if (n.k >= 2 && (tx.dt == DType::bool_ || !tx.shape.back().is_static())) n.k = 0;
        if (n.k <= 1) {
          n.p = {r.range(-rank, rank - 1)};
          n.out = {n.k == 0 ? tx : Ty{DType::i32, tx.shape, false}};
          break;
        }
        n.p = {r.range(0, tx.shape.back().n)};
        Ty t = n.k == 2 ? tx : Ty{DType::i32, tx.shape, false};
        t.shape.back() = D{n.p[0], -1};
        n.out = {t};
        break;
      }
      case 38: {  // rev of a random set of axes
        if (rank < 1) return false;
        std::vector<i64> axes;
        for (i64 i = 0; i < rank; ++i)
          if (r.coin()) axes.push_back(i);
        n.op = Op::rev, n.p = axes;
        n.out = {tx};
        break;
      }
      case 39: {  // pad: crops and interior padding on static axes; a dynamic axis unchanged (0, 0, 0)
        if (rank < 1) return false;
        Ty t = tx;
        for (i64 i = 0; i < rank; ++i) {
          i64 lo = 0, hi = 0, in = 0;
          const D d = tx.shape[static_cast<std::size_t>(i)];
          if (d.is_static()) {
            lo = r.range(-1, 2), hi = r.range(-1, 2), in = r.range(0, 2);
            const i64 size = lo + hi + d.n + (d.n > 0 ? (d.n - 1) * in : 0);
            if (size < 0) lo = hi = 0;
            t.shape[static_cast<std::size_t>(i)] = D{size < 0 ? d.n + (d.n > 0 ? (d.n - 1) * in : 0) : size, -1};
          }
          n.p.insert(n.p.end(), {lo, hi, in});
        }
        n.op = Op::pad, n.lit = static_cast<double>(r.range(-2, 2));
        n.out = {t};
        break;
      }
      case 33: {  // clamp / clip
        Ty t = tx;
        n.op = Op::clamp, n.p = {r.coin() ? 1 : 0};
        for (int j = 0; j < 2; ++j) {
          int b = -1;
          if (n.p[0] == 0) {
            b = partner(p, scope, x);
          } else {
            if (r.coin(0.5)) b = pick(scope, [&](const Ty& u) { return u.dt == tx.dt && u.shape == tx.shape; });
            if (b < 0) b = constant(p, scope, tx.dt, {});
          }
          n.in.push_back(b);
          t.inexact = t.inexact || scope[b].inexact;
          std::vector<D> s;
          broadcast(t.shape, scope[b].shape, s);
          t.shape = s;
        }
        n.out = {t};
        break;
      }
      case 36: case 37: {  // gather / scatter along one axis at integer indices (clamped / dropped)
        if (rank < 1 || rank > 3) return false;
        const i64 ax = r.range(0, rank - 1);
        // Reading from an empty axis is an IndexError: only non-empty axes.
        if (tx.shape[ax].n == 0) return false;
        int idx = r.coin(0.4) ? pick(scope, [](const Ty& t) { return isidx(t.dt) && !t.inexact && t.shape.size() <= 2; }) : -1;
        if (idx < 0) idx = constant(p, scope, r.coin() ? DType::i32 : DType::i64, {D{r.range(0, 5), -1}});
        const Ty ti = scope[idx];
        Ty t = tx;
        t.shape.erase(t.shape.begin() + ax);
        t.shape.insert(t.shape.begin() + ax, ti.shape.begin(), ti.shape.end());
        n.in.push_back(idx);
        n.p = {ax};
        if (which == 36) {
          n.op = Op::gather, n.k = static_cast<int>(r.range(0, 3)), n.out = {tx};
          n.out[0].shape = t.shape;
          if (n.k == 2) {  // take_along_axis: indices of x's rank (1 or x's static size off the axis)
            std::vector<D> is = tx.shape;
            for (i64 d = 0; d < rank; ++d)
              is[d] = d == ax ? D{r.range(0, 5), -1} : tx.shape[d].is_static() && r.coin() ? tx.shape[d] : D{1, -1};
            n.in[1] = constant(p, scope, r.coin() ? DType::i32 : DType::i64, is);
            n.out[0].shape = tx.shape;
            n.out[0].shape[ax] = is[ax];
          } else if (n.k == 3) {  // x.at(all()..., i) of a C++ integer: negative from the end, out of range an IndexError
            if (!tx.shape[ax].is_static()) return false;
            n.in.pop_back();
            n.p.push_back(static_index(tx.shape[ax].n));
            n.out[0].shape = tx.shape;
            n.out[0].shape.erase(n.out[0].shape.begin() + ax);
          }
          break;
        }
        // A C++ integer index now and then (p[1]): the updates of x without the axis.
        if (tx.shape[ax].is_static() && r.coin(0.2)) {
          n.in.pop_back();
          n.p.push_back(static_index(tx.shape[ax].n));
          t = tx;
          t.shape.erase(t.shape.begin() + ax);
        }
        // The updates: the shape the gather would give, or its trailing axes.
        std::vector<D> us(t.shape.begin() + (r.coin() ? 0 : ax), t.shape.end());
        for (const D& d : us)
          if (!d.is_static()) return false;
        const int u = constant(p, scope, tx.dt, us);
        n.in.push_back(u);
        n.op = Op::scatter, n.k = static_cast<int>(r.range(0, 4)), n.out = {tx};
        n.out[0].inexact = tx.inexact || scope[u].inexact;
        break;
      }
      case 28: case 29: case 30: case 31: {  // control flow
        if (depth >= 2) return false;
        return control(p, scope, depth, which % 3);
      }
      case 40: case 41: case 42:  // complex values (issue 24); of a non-float x, now and then a collective
        if (!complex_node(p, scope, x, n) && !(which == 40 && collective_node(scope, x, n))) return false;
        break;
    }
    // (A big program's outer products of its long dimension are left out.)
    for (const Ty& t : n.out)
      if (t.size() > kMaxElems) return false;
    add(p, scope, std::move(n));
    return true;
  }

  // A collective node (fuzz.hpp, Op::collective) on x: each collective over
  // the one-rank mesh, with the result type it has there.
  bool collective_node(const std::vector<Ty>& scope, int x, Node& n) {
    const Ty tx = scope[x];
    const i64 rank = static_cast<i64>(tx.shape.size());
    std::vector<int> ks = {co_all_gather, co_ppermute};
    if (tx.dt != DType::bool_) ks.insert(ks.end(), {co_psum, co_pmax, co_pmin, co_axis_index});
    // all_to_all: a static split axis (of size 1 unless tiled)
    for (const D& d : tx.shape)
      if (d.is_static()) {
        ks.push_back(co_all_to_all);
        break;
      }
    n.op = Op::collective, n.k = r.pick(ks), n.in = {x}, n.p.clear();
    Ty t = tx;
    if (n.k == co_all_gather) {
      const bool tiled = rank > 0 && r.coin();
      const i64 axis = r.range(0, tiled ? rank - 1 : rank);
      n.p = {axis, tiled ? 1 : 0};
      if (!tiled) t.shape.insert(t.shape.begin() + axis, D{1, -1});
    } else if (n.k == co_all_to_all) {
      std::vector<i64> split;
      for (i64 a = 0; a < rank; ++a)
        if (tx.shape[a].is_static()) split.push_back(a);
      const i64 s = r.pick(split), k = r.range(0, rank - 1);
      const bool tiled = tx.shape[s].n != 1 || r.coin();
      n.p = {s, k, tiled ? 1 : 0};
      if (!tiled) {  // the split axis (of 1) dropped, an axis of 1 at concat_axis
        t.shape.erase(t.shape.begin() + s);
        t.shape.insert(t.shape.begin() + k, D{1, -1});
      }
    }
    n.out = {t};
    return true;
  }

  // A cplx node on the float x and a partner y: z0 made of both, a chain of
  // one to four steps, a projection back to a real float (or bool). The
  // chain stays well-conditioned where its value is inexact (jit may round
  // differently from eager: docs/backend.md): no branch cut (log, sqrt,
  // pow, angle), no exponential growth (exp, sin, cos, tanh) and no
  // equality test of an inexact value, as for the real operations above.
  bool complex_node(Program& p, std::vector<Ty>& scope, int x, Node& n) {
    const Ty tx = scope[x];
    if (!isf(tx.dt)) return false;
    const int y = partner(p, scope, x);
    const Ty& ty = scope[y];
    std::vector<D> shape, z0;
    broadcast(tx.shape, ty.shape, z0);
    shape = z0;
    bool inexact = tx.inexact || ty.inexact;
    n.op = Op::cplx, n.in = {x, y}, n.p = {r.range(0, 2)};
    n.lit = tx.dt == DType::f32 ? 32 : 64;  // the operands' float type, for the C++ reproduction
    auto is_static = [](const std::vector<D>& s) {
      for (const D& d : s)
        if (!d.is_static()) return false;
      return true;
    };
    const i64 steps = r.range(1, 4);
    for (i64 i = 0; i < steps; ++i) {
      const int k = static_cast<int>(r.range(0, kCStepCount - 1));
      std::vector<D> o;
      switch (k) {
        case cs_log: case cs_sqrt: case cs_pow: case cs_exp: case cs_sin: case cs_cos: case cs_tanh:
          if (inexact) continue;  // branch cuts, poles, growth: exact operands only
          if (k == cs_pow && !broadcast(shape, z0, o)) continue;
          if (k == cs_pow) shape = o;
          inexact = true;
          break;
        case cs_add: case cs_sub: case cs_mul: case cs_div:
          if (!broadcast(shape, z0, o)) continue;
          shape = o;
          break;
        case cs_sum: case cs_prod: case cs_mean:
          if (k != cs_sum && shape.empty()) continue;
          if (k == cs_mean && !is_static(shape)) continue;
          shape.clear();
          inexact = true;
          break;
        case cs_dot:  // dot of vectors, z @ transpose(z0) of matrices
          if (!(shape == z0) || shape.empty() || shape.size() > 2 || !is_static(shape)) continue;
          if (shape.size() == 1) shape.clear();
          else shape = {shape[0], shape[0]};
          inexact = true;
          break;
        case cs_flat: {
          if (!is_static(shape)) continue;
          i64 size = 1;
          for (const D& d : shape) size *= d.n;
          shape = {D{size, -1}};
          break;
        }
        case cs_rev:
          if (shape.empty()) continue;
          break;
        case cs_fft: case cs_ifft:  // along the last axis, of at least one point
          if (shape.empty() || shape.back().n < 1) continue;
          inexact = true;
          break;
        case cs_transpose:
          std::reverse(shape.begin(), shape.end());
          break;
        default: break;  // neg, conj, square, ipow, mul_lit, stop_gradient
      }
      n.p.push_back(k);
    }
    std::vector<int> ks = {cp_real, cp_imag, cp_abs};
    if (!inexact) ks.insert(ks.end(), {cp_angle, cp_eq, cp_ne});  // discontinuous: exact values only
    n.k = r.pick(ks);
    Ty t{tx.dt, shape, inexact || n.k == cp_abs || n.k == cp_angle, tx.lowp || ty.lowp};
    if (n.k == cp_eq || n.k == cp_ne) t = Ty{DType::bool_, shape, false};
    n.out = {t};
    return true;
  }

  // A body program: params, random nodes, outputs of the given types.
  // `loose` (a loop with preserve_dimensions=false): a result may change the
  // carried value's dynamic dimensions (the kernel allocates it).
  Program body(const std::vector<Ty>& outer, const std::vector<Ty>& params, const std::vector<Ty>& outs, int depth,
               std::vector<bool>* out_inexact = nullptr, bool loose = false) {
    Program b;
    b.params = params;
    std::vector<Ty> scope = outer;
    for (const Ty& t : params) scope.push_back(t);
    const i64 count = r.range(1, 4);
    for (i64 i = 0, tries = 0; i < count && tries < 40; ++tries)
      if (node(b, scope, depth + 1)) ++i;
    auto fits = [&](const Ty& t, const Ty& want) {
      if (t.dt != want.dt || t.shape.size() != want.shape.size()) return false;
      for (std::size_t i = 0; i < t.shape.size(); ++i)
        if (!(t.shape[i] == want.shape[i]) && !(loose && !t.shape[i].is_static() && !want.shape[i].is_static()))
          return false;
      return true;
    };
    if (loose)  // grow a carried value along a dynamic dimension: concatenate(p, p)
      for (std::size_t j = 0; j < params.size(); ++j)
        for (std::size_t a = 0; a < params[j].shape.size(); ++a)
          if (!params[j].shape[a].is_static() && r.coin(0.4)) {
            const int ps = static_cast<int>(outer.size() + j);
            Node n;
            n.op = Op::concat, n.in = {ps, ps}, n.p = {static_cast<i64>(a)};
            Ty t = params[j];
            t.shape[a] = D{2 * t.shape[a].n, next_sym++};
            n.out = {t};
            add(b, scope, std::move(n));
            break;
          }
    for (const Ty& want : outs) {
      int s = pick(scope, [&](const Ty& t) { return fits(t, want); });
      if (s < 0 || static_cast<std::size_t>(s) < outer.size()) {
        // Not computed in the body: a constant (if static) or a parameter.
        s = -1;
        for (std::size_t j = 0; j < params.size(); ++j)
          if (params[j].dt == want.dt && params[j].shape == want.shape) s = static_cast<int>(outer.size() + j);
        if (s < 0 || (want.is_static() && r.coin(0.2))) s = constant(b, scope, want.dt, want.shape);
      }
      b.outs.push_back(s);
      if (out_inexact) out_inexact->push_back(scope[s].inexact);
    }
    return b;
  }

  bool control(Program& p, std::vector<Ty>& scope, int depth, int kind) {
    Node n;
    std::vector<Ty> carry;
    const i64 count = r.range(1, 3);
    for (i64 j = 0; j < count; ++j) {
      const int s = pick(scope, [](const Ty&) { return true; });
      n.in.push_back(s);
      carry.push_back(scope[s]);
    }
    const bool preserve = kind == 2 || r.coin(0.6) || big;  // (big: no carry doubling each trip)
    std::vector<Ty> params;
    for (const Ty& t : carry) {
      Ty u = preserve ? t : freshen(t);
      // Loop carries of floats are compared with a tolerance (conservative).
      if (kind != 2 && isf(u.dt)) u.inexact = true;
      u.lowp = u.lowp || (u.inexact && u.dt == DType::f32);
      params.push_back(u);
    }
    const std::vector<Ty> outer = scope;
    if (kind == 0 && r.coin(0.4)) return scan(p, scope, depth, n.in, params);
    if (kind == 0) {  // for_loop
      const i64 lo = r.range(-2, 2), trips = r.range(0, 4);
      const i64 step = r.coin(0.7) ? 1 : r.coin() ? 2 : -1;
      n.op = Op::for_loop, n.p = {lo, lo + trips * step, step, preserve ? 1 : 0};
      std::vector<Ty> bp{Ty{DType::i64, {}, false}};
      bp.insert(bp.end(), params.begin(), params.end());
      n.body.push_back(body(outer, bp, params, depth, nullptr, !preserve));
    } else if (kind == 1) {  // while_loop
      n.op = Op::while_loop, n.p = {r.range(0, 3), preserve ? 1 : 0};
      n.body.push_back(body(outer, params, params, depth, nullptr, !preserve));
      if (r.coin(0.4)) {
        Program c;
        c.params = params;
        std::vector<Ty> cs = outer;
        for (const Ty& t : params) cs.push_back(t);
        c.outs = {predicate(c, cs)};
        n.body.push_back(std::move(c));
      }
    } else if (r.coin(0.25)) {  // dyn::checkpoint of a body of the operands
      n.op = Op::checkpoint;
      std::vector<bool> e;
      n.body.push_back(body(scope, carry, carry, depth, &e));
      for (std::size_t j = 0; j < carry.size(); ++j) params[j].inexact = e[j];
    } else {  // cond
      std::vector<Ty> ps = scope;
      const bool indexed = r.coin(0.5);  // dyn::switch_ on an integer index (clamped)
      const int pred = indexed ? index_scalar(p, scope) : predicate(p, scope);
      n.op = Op::cond, n.k = indexed ? 1 : 0;
      n.in.insert(n.in.begin(), pred);
      const i64 nb = indexed ? r.range(2, 3) : 2;
      for (std::size_t j = 0; j < carry.size(); ++j) params[j].inexact = false;
      for (i64 b = 0; b < nb; ++b) {
        std::vector<bool> e;
        n.body.push_back(body(scope, carry, carry, depth, &e));
        for (std::size_t j = 0; j < carry.size(); ++j) params[j].inexact = params[j].inexact || e[j];
      }
    }
    for (Ty& t : params) n.out.push_back(freshen(t));
    add(p, scope, std::move(n));
    return true;
  }

  // dyn::scan over 0-2 xs that share a leading dimension (none: a static
  // length), with the carries `in` (types `carry`, kept as a preserved
  // loop's) and 1-2 ys of the body's parameter types.
  bool scan(Program& p, std::vector<Ty>& scope, int depth, std::vector<int> in, std::vector<Ty> carry) {
    Node n;
    n.op = Op::scan;
    n.in = std::move(in);
    const std::size_t nc = n.in.size();
    D lead{r.range(0, 4), -1};
    std::vector<Ty> params = carry;
    const i64 nx = r.range(0, 2);
    for (i64 j = 0; j < nx; ++j) {
      const bool first = n.in.size() == nc;
      // (A big program's scans are short: eager runs each step.)
      const int s = pick(scope, [&](const Ty& t) {
        return !t.shape.empty() && (first || t.shape[0] == lead) && (!big || t.shape[0].n <= 8);
      });
      if (s < 0) break;
      if (first) lead = scope[s].shape[0];
      n.in.push_back(s);
      Ty row = scope[s];
      row.shape.erase(row.shape.begin());
      params.push_back(row);
    }
    n.p = {r.coin(0.4) ? 1 : 0, lead.n, static_cast<i64>(nc)};
    std::vector<Ty> outs = carry;
    const i64 ny = r.range(1, 2);
    for (i64 j = 0; j < ny; ++j) {
      Ty y = params[static_cast<std::size_t>(r.range(0, static_cast<i64>(params.size()) - 1))];
      if (isf(y.dt)) y.inexact = true;  // computed from the carries (conservative, as loop carries)
      y.lowp = y.lowp || (y.inexact && y.dt == DType::f32);
      outs.push_back(y);
    }
    n.body.push_back(body(scope, params, outs, depth, nullptr, false));
    for (std::size_t j = 0; j < outs.size(); ++j) {
      Ty t = outs[j];
      if (j >= nc) t.shape.insert(t.shape.begin(), lead);
      n.out.push_back(freshen(t));
    }
    add(p, scope, std::move(n));
    return true;
  }
};

}  // namespace

Case generate(std::uint64_t seed, int max_nodes, bool float_inputs) {
  Gen g;
  g.r = Rng{seed * 0x2545F4914F6CDD1Dull + 1};
  Case c;
  c.symbolic = g.r.coin(0.3);
  i64 nval = g.r.pick(std::vector<i64>{1, 2, 3, 5});
  // One symbolic program in five (seed % 5 == 0: the others' draws are
  // unchanged) is big: n is 33001, 70001 or 140001, the polymorphic inputs
  // have at most 4 elements a row, so a value has 33e3 to 560e3 elements:
  // past the two tasks of kTaskElems (transcendental) or kCheapTaskElems
  // (arithmetic) elements a kernel splits its loops from (llvm/parallel.hpp).
  g.big = c.symbolic && seed % 5 == 0;
  if (g.big) nval = std::vector<i64>{33001, 70001, 140001}[(seed / 5) % 3];
  const i64 ninputs = g.r.range(1, 4);
  std::vector<Ty> scope;
  for (i64 j = 0; j < ninputs; ++j) {
    Ty t{kDtypes[g.r.range(0, kLastDtype)], g.rand_shape(), false};
    if (float_inputs && g.r.coin(0.6)) t.dt = DType::f64;  // (no draw otherwise: the default programs stay)
    bool poly = false;
    if (c.symbolic && (j == 0 || g.r.coin())) {
      if (t.shape.empty()) t.shape.push_back(D{});
      t.shape[0] = D{nval, 0};
      if (g.big)
        while (t.shape.size() > 1 && t.size() / nval > 4) t.shape.pop_back();
      poly = true;
    }
    c.prog.params.push_back(t);
    c.inputs.push_back(g.array(t.dt, sizes(t)));
    c.poly.push_back(poly);
    scope.push_back(t);
  }
  if (g.r.coin(0.3)) {  // a Catalyst dynamic size: an i64 scalar argument in [0, 4]
    const i64 v = g.r.range(0, 4);
    c.prog.params.push_back(Ty{DType::i64, {}, false});
    c.inputs.push_back(dyn::Array<i64>(std::vector<i64>{}, std::vector<i64>{v}));
    c.poly.push_back(false);
    g.size_slots.push_back(static_cast<int>(scope.size()));
    g.size_values.push_back(v);
    scope.push_back(c.prog.params.back());
  }
  const i64 count = g.r.range(1, max_nodes);
  for (i64 i = 0, tries = 0; i < count && tries < 20 * count; ++tries) {
    if (!g.size_slots.empty() && g.r.coin(0.04)) {
      Node n;
      const std::size_t k = static_cast<std::size_t>(g.r.range(0, static_cast<i64>(g.size_slots.size()) - 1));
      n.op = Op::iota_dyn, n.in = {g.size_slots[k]};
      n.out = {Ty{g.r.coin() ? DType::f64 : DType::i32, {D{g.size_values[k], g.next_sym++}}, false}};
      Gen::add(c.prog, scope, std::move(n));
      ++i;
      continue;
    }
    if (g.node(c.prog, scope, 0)) ++i;
  }
  // Outputs: the last value and up to 5 other values nothing uses (so that
  // few nodes are dead code, which tracing drops).
  const int first = static_cast<int>(c.inputs.size());
  const int last = static_cast<int>(scope.size()) - 1;
  std::vector<bool> used(scope.size(), false);
  for (const Node& n : c.prog.nodes)
    for (int s : n.in) used[static_cast<std::size_t>(s)] = true;
  c.prog.outs.push_back(last);
  for (int s = last - 1; s >= first && c.prog.outs.size() < 6; --s)
    if (!used[static_cast<std::size_t>(s)] && g.r.coin(0.8)) c.prog.outs.push_back(s);
  return c;
}

// ---------------------------------------------------------------------------
// The C++ reproduction.

std::string dtype_cpp(DType d) { return std::string(dyn::dtype_cpp_name(d)); }

namespace {

std::string num(double v, DType d) {
  if (std::isnan(v)) return "std::numeric_limits<" + dtype_cpp(d) + ">::quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + dtype_cpp(d) + ">::infinity()";
  std::ostringstream os;
  os.precision(d == DType::f32 ? 9 : 17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return d == DType::f32 ? s + "f" : s;
}

std::string array_cpp(const dyn::AnyArray& a) {
  std::ostringstream os;
  const std::string T = dtype_cpp(a.dtype());
  os << "dyn::Array<" << T << ">(std::vector<std::int64_t>{";
  for (std::size_t i = 0; i < a.shape().size(); ++i) os << (i ? ", " : "") << a.shape()[i];
  os << "}, std::vector<" << T << ">{";
  fuzz::visit_dtype(a.dtype(), [&](auto t) {
    using X = decltype(t);
    const X* p = static_cast<const X*>(a.data());
    for (i64 i = 0; i < a.size(); ++i) {
      os << (i ? ", " : "");
      if constexpr (std::is_same_v<X, bool>) os << (p[i] ? "true" : "false");
      else if constexpr (std::is_integral_v<X>) {
        if (p[i] == std::numeric_limits<X>::min() && std::is_signed_v<X>) os << "std::numeric_limits<" << T << ">::min()";
        else os << +p[i];  // (+: an int8_t is printed as a number, not a char)
      } else os << num(static_cast<double>(p[i]), a.dtype());
    }
  });
  os << "})";
  return os.str();
}

template <class V>
std::string list(const V& v) {
  std::ostringstream os;
  os << "{";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "}";
  return os.str();
}

struct Emitter {
  std::ostringstream consts;
  int counter = 0;
  std::string fresh(const char* p) { return p + std::to_string(counter++); }

  static const char* unary_name(int k) {
    static const char* n[] = {"-", "dyn::abs", "dyn::sign", "dyn::floor", "dyn::ceil", "dyn::round", "dyn::exp",
                              "dyn::log", "dyn::log1p", "dyn::sqrt", "dyn::rsqrt", "dyn::sin", "dyn::cos",
                              "dyn::tan", "dyn::tanh", "dyn::logistic", "!", "dyn::population_count",
                              "dyn::clz", "dyn::expm1", "dyn::exp2", "dyn::cbrt", "dyn::sinh", "dyn::cosh",
                              "dyn::asin", "dyn::acos", "dyn::atan", "dyn::asinh", "dyn::acosh", "dyn::atanh",
                              "dyn::erf", "dyn::erfc", "dyn::lgamma", "dyn::erf_inv", "dyn::digamma", "dyn::trigamma", "dyn::log2", "dyn::log10", "dyn::square",
                              "dyn::integer_pow", "dyn::stop_gradient", "dyn::is_finite", "dyn::isnan", "dyn::isinf"};
    return n[k];
  }
  static std::string binary(int k, const std::string& a, const std::string& b) {
    static const char* op[] = {"+", "-", "*", "/", "%"};
    switch (k) {
      case b_add: case b_sub: case b_mul: case b_div: case b_rem: return "(" + a + " " + op[k] + " " + b + ")";
      case b_pow: return "dyn::pow(" + a + ", " + b + ")";
      case b_max: return "dyn::maximum(" + a + ", " + b + ")";
      case b_min: return "dyn::minimum(" + a + ", " + b + ")";
      case b_atan2: return "dyn::atan2(" + a + ", " + b + ")";
      case b_and: return "(" + a + " & " + b + ")";
      case b_or: return "(" + a + " | " + b + ")";
      case b_xor: return "(" + a + " ^ " + b + ")";
      case b_shl: return "(" + a + " << " + b + ")";
      case b_shr: return "(" + a + " >> " + b + ")";
      case b_hypot: return "dyn::hypot(" + a + ", " + b + ")";
      case b_nextafter: return "dyn::nextafter(" + a + ", " + b + ")";
      case b_logical_and: return "dyn::logical_and(" + a + ", " + b + ")";
    }
    return "?";
  }

  // A cplx node as an immediately invoked lambda of the interpreter's steps
  // (fuzz_run.cpp, Interp::cplx); T: the operands' float type.
  static std::string complex_cpp(const Node& n, const std::string& x, const std::string& y, const std::string& T) {
    const std::string C = "std::complex<" + T + ">";
    static const char* z0s[] = {"dyn::complex(X, Y)", "X + Y * C(0, 1)", "dyn::astype<C>(X) - C(0, 1) * Y"};
    std::string z0 = z0s[n.p.at(0)];
    auto subst = [&](std::string s) {
      std::string r;
      for (char ch : s) r += ch == 'X' ? x : ch == 'Y' ? y : ch == 'C' ? C : std::string(1, ch);
      return r;
    };
    std::string e = "[&] {\n    using Z = decltype(dyn::complex(" + x + ", " + y + "));\n    const Z z0 = " + subst(z0) +
                    ";\n    Z z = z0;\n";
    static const char* steps[] = {"-z", "dyn::conj(z)", "dyn::exp(z)", "dyn::log(z)", "dyn::sqrt(z)", "dyn::sin(z)",
                                  "dyn::cos(z)", "dyn::tanh(z)", "dyn::square(z)", "dyn::integer_pow(z, 3)", "z + z0",
                                  "z - z0", "z * z0", "z / (z0 + C(2, 1))", "dyn::pow(z, z0)", "z * C(0.5, -1.5)",
                                  "dyn::sum(z)", "dyn::prod(z)", "dyn::mean(z)",
                                  "z.rank() == 1 ? Z(dyn::dot(z, z0)) : Z(dyn::matmul(z, dyn::transpose(z0)))",
                                  "dyn::reshape(z, {-1})", "dyn::rev(z, {0})", "dyn::stop_gradient(z)",
                                  "dyn::transpose(z)", "dyn::fft::fft(z)",
                                  "dyn::fft::ifft(z, std::nullopt, -1, \"ortho\")"};
    static_assert(std::size(steps) == kCStepCount);
    for (std::size_t i = 1; i < n.p.size(); ++i) e += "    z = " + subst(steps[n.p[i]]) + ";\n";
    static const char* proj[] = {"dyn::real(z)", "dyn::imag(z)", "dyn::abs(z)", "dyn::angle(z)", "(z == dyn::conj(z))",
                                 "(z != dyn::conj(z))"};
    return e + "    return " + proj[n.k] + ";\n  }()";
  }

  // Emits p's nodes into os (indent), env holding the names of visible slots.
  void program(std::ostream& os, const Program& p, std::vector<std::string> env, const std::string& ind,
               std::vector<std::string>& outs) {
    for (const Node& n : p.nodes) {
      auto in = [&](std::size_t j) { return env.at(n.in.at(j)); };
      std::vector<std::string> names;
      std::string e;
      const DType odt = n.out.empty() ? DType::f64 : n.out[0].dt;
      const std::string T = dtype_cpp(odt);
      switch (n.op) {
        case Op::constant: {
          const std::string c = fresh("c");
          consts << "  const auto " << c << " = " << array_cpp(n.data) << ";\n";
          e = "L(x0, " + c + ")";
          break;
        }
        case Op::full: e = "L(x0, dyn::full<" + T + ">(std::vector<std::int64_t>" + list(n.p) + ", " + T + "(" + num(n.lit, DType::f64) + ")))"; break;
        case Op::iota: e = "L(x0, dyn::arange<" + T + ">(" + std::to_string(n.p[0]) + "))"; break;
        case Op::iota_dyn: e = "dyn::arange<" + T + ">(" + in(0) + ")"; break;
        case Op::unary:
          e = n.k == u_ipow ? "dyn::integer_pow(" + in(0) + ", 3)" : std::string(unary_name(n.k)) + "(" + in(0) + ")";
          break;
        case Op::binary: e = binary(n.k, in(0), in(1)); break;
        case Op::add_mixed: e = "(" + in(0) + " + " + in(1) + ")"; break;
        case Op::scalar: {
          const std::string l = isf(odt) ? num(n.lit, DType::f64) : std::to_string(static_cast<int>(n.lit));
          e = n.p[0] ? binary(n.k, l, in(0)) : binary(n.k, in(0), l);
          break;
        }
        case Op::compare: {
          static const char* op[] = {"==", "!=", "<", "<=", ">", ">="};
          e = "(" + in(0) + " " + op[n.k] + " " + in(1) + ")";
          break;
        }
        case Op::where: e = "dyn::where(" + in(0) + ", " + in(1) + ", " + in(2) + ")"; break;
        case Op::cplx: e = complex_cpp(n, in(0), in(1), n.lit == 32 ? "float" : "double"); break;
        case Op::collective: {
          std::string c;
          switch (static_cast<Coll>(n.k)) {
            case co_psum: c = "dyn::psum(v, \"x\")"; break;
            case co_pmax: c = "dyn::pmax(v, \"x\")"; break;
            case co_pmin: c = "dyn::pmin(v, \"x\")"; break;
            case co_all_gather:
              c = "dyn::all_gather(v, \"x\", " + std::to_string(n.p[0]) + (n.p[1] ? ", true)" : ")");
              break;
            case co_ppermute: c = "dyn::ppermute(v, \"x\", {{0, 0}})"; break;
            case co_all_to_all:
              c = "dyn::all_to_all(v, \"x\", " + std::to_string(n.p[0]) + ", " + std::to_string(n.p[1]) +
                  (n.p[2] ? ", true)" : ")");
              break;
            case co_axis_index: c = "v + dyn::astype<" + T + ">(dyn::axis_index(\"x\"))"; break;
            case kCollCount: break;
          }
          e = "dyn::shard_map([](auto v) { return " + c + "; }, dyn::Mesh({\"x\"}, {1}), {dyn::P()}, dyn::P())(" +
              in(0) + ")";
          break;
        }
        case Op::clamp:
          e = n.p[0] ? "dyn::clamp(" + in(1) + ", " + in(0) + ", " + in(2) + ")"
                     : "dyn::clip(" + in(0) + ", " + in(1) + ", " + in(2) + ")";
          break;
        case Op::astype: e = "dyn::astype<" + T + ">(" + in(0) + ")"; break;
        case Op::reduce: {
          static const char* f[] = {"dyn::sum", "dyn::prod", "dyn::max", "dyn::min", "dyn::mean", "dyn::any", "dyn::all"};
          const int bits = static_cast<int>(n.lit);
          e = std::string(f[n.k]) + "(" + in(0) + ((bits & 1) ? "" : ", std::vector<std::int64_t>" + list(n.p)) +
              ((bits & 2) ? ", dyn::keepdims" : "") + ")";
          if ((n.k == r_max || n.k == r_min) && isf(odt)) e = "(" + e + " + 0.0)";
          break;
        }
        case Op::sort:
          e = n.k == 0   ? "dyn::sort(" + in(0) + ", " + std::to_string(n.p[0]) + ")"
              : n.k == 1 ? "dyn::argsort(" + in(0) + ", " + std::to_string(n.p[0]) + ")"
                         : "std::get<" + std::to_string(n.k - 2) + ">(dyn::top_k(" + in(0) + ", " + std::to_string(n.p[0]) + "))";
          break;
        case Op::rev: e = "dyn::rev(" + in(0) + ", std::vector<std::int64_t>" + list(n.p) + ")"; break;
        case Op::pad: {
          std::string cfg = "{";
          for (std::size_t i = 0; i < n.p.size(); i += 3)
            cfg += (i ? ", " : "") + list(std::vector<i64>(n.p.begin() + static_cast<std::ptrdiff_t>(i),
                                                          n.p.begin() + static_cast<std::ptrdiff_t>(i) + 3));
          e = "dyn::pad(" + in(0) + ", " + cfg + "}, " + std::to_string(static_cast<i64>(n.lit)) + ")";
          break;
        }
        case Op::argreduce:
          e = std::string(n.k ? "dyn::argmin(" : "dyn::argmax(") + in(0) + ", " + std::to_string(n.p[0]) +
              (n.lit != 0 ? ", dyn::keepdims" : "") + ")";
          break;
        case Op::segment_sum: e = "dyn::segment_sum_offsets(" + in(0) + ", " + in(1) + ")"; break;
        case Op::cumulative: {
          static const char* f[] = {"dyn::cumsum", "dyn::cumprod", "dyn::cummax", "dyn::cummin"};
          e = std::string(f[n.k]) + "(" + in(0) + ", " + std::to_string(n.p[0]) + (n.p[1] ? ", true" : "") + ")";
          break;
        }
        case Op::gather:
        case Op::scatter: {
          const bool cpp_int = n.p.size() > 1;  // a C++ integer index (fuzz_run.cpp, Interp::gather)
          std::string at = in(0) + ".at(";
          for (i64 a = 0; a < n.p[0]; ++a) at += "dyn::all(), ";
          at += (cpp_int ? "std::int64_t{" + std::to_string(n.p[1]) + "}" : in(1)) + ")";
          static const char* upd[] = {"set", "add", "mul", "min", "max"};
          if (n.op == Op::gather && n.k == 1) e = "dyn::take(" + in(0) + ", " + in(1) + ", " + std::to_string(n.p[0]) + ")";
          else if (n.op == Op::gather && n.k == 2)
            e = "dyn::take_along_axis(" + in(0) + ", " + in(1) + ", " + std::to_string(n.p[0]) + ")";
          else if (n.op == Op::gather) e = at + ".get()";
          else e = at + "." + upd[n.k] + "(" + in(cpp_int ? 1 : 2) + ")";
          break;
        }
        case Op::reshape: e = "dyn::reshape(" + in(0) + ", " + list(n.p) + ")"; break;
        case Op::transpose: e = "dyn::transpose(" + in(0) + ", " + list(n.p) + ")"; break;
        case Op::slice:
          e = "dyn::slice_in_dim(" + in(0) + ", " + std::to_string(n.p[1]) + ", " +
              (n.p[2] < 0 ? in(0) + ".shape(" + std::to_string(n.p[0]) + ")" : std::to_string(n.p[2])) + ", " +
              std::to_string(n.p[3]) + ", " + std::to_string(n.p[0]) + ")";
          break;
        case Op::concat: {
          std::vector<std::string> xs;
          for (std::size_t j = 0; j < n.in.size(); ++j) xs.push_back(in(j));
          e = "dyn::concatenate(" + list(xs) + ", " + std::to_string(n.p[0]) + ")";
          break;
        }
        case Op::expand_dims: e = "dyn::expand_dims(" + in(0) + ", " + std::to_string(n.p[0]) + ")"; break;
        case Op::squeeze: e = "dyn::squeeze(" + in(0) + ", std::vector<std::int64_t>" + list(n.p) + ")"; break;
        case Op::broadcast_to: {
          std::vector<std::string> s;
          for (i64 d : n.p) s.push_back(d >= 0 ? "dyn::Dim(" + std::to_string(d) + ")" : "dyn::Dim(" + in(0) + ".shape(" + std::to_string(-1 - d) + "))");
          e = "dyn::broadcast_to(" + in(0) + ", dyn::Shape" + list(s) + ")";
          break;
        }
        case Op::dot: e = "dyn::dot(" + in(0) + ", " + in(1) + ")"; break;
        case Op::matmul: e = "dyn::matmul(" + in(0) + ", " + in(1) + ")"; break;
        case Op::dynamic_slice: {
          std::vector<std::string> ix;
          for (std::size_t j = 1; j < n.in.size(); ++j) ix.push_back(in(j));
          e = "dyn::dynamic_slice(" + in(0) + ", " + list(ix) + ", " + list(n.p) + ")";
          break;
        }
        case Op::dynamic_update_slice: {
          std::vector<std::string> ix;
          for (std::size_t j = 2; j < n.in.size(); ++j) ix.push_back(in(j));
          e = "dyn::dynamic_update_slice(" + in(0) + ", " + in(1) + ", " + list(ix) + ")";
          break;
        }
        case Op::for_loop: case Op::while_loop: case Op::cond: case Op::scan: case Op::checkpoint: {
          control(os, n, env, ind, names);
          break;
        }
      }
      if (names.empty()) {
        const std::string v = fresh("v");
        os << ind << "auto " << v << " = " << e << ";\n";
        names.push_back(v);
      }
      for (std::string& s : names) env.push_back(std::move(s));
    }
    outs.clear();
    for (int s : p.outs) outs.push_back(env.at(s));
  }

  static std::string tuple_or_bare(const std::vector<std::string>& v) {
    if (v.size() == 1) return v[0];
    std::string s = "std::make_tuple(";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s + ")";
  }

  // A lambda for a body: [&](auto a, auto b) { ...; return ...; }, with
  // `extra` leading parameter names (the while loop's counter) and results.
  std::string lambda(const Program& b, const std::vector<std::string>& env, const std::string& ind,
                     const std::vector<std::string>& lead, const std::vector<std::string>& lead_out) {
    std::ostringstream os;
    std::vector<std::string> benv = env, ps = lead;
    for (std::size_t j = 0; j < b.params.size(); ++j) {
      ps.push_back(fresh("p"));
      benv.push_back(ps.back());
    }
    os << "[&](";
    for (std::size_t j = 0; j < ps.size(); ++j) os << (j ? ", " : "") << "[[maybe_unused]] auto " << ps[j];
    os << ") {\n";
    std::vector<std::string> outs;
    program(os, b, benv, ind + "  ", outs);
    outs.insert(outs.begin(), lead_out.begin(), lead_out.end());
    os << ind << "  return " << tuple_or_bare(outs) << ";\n" << ind << "}";
    return os.str();
  }

  void control(std::ostream& os, const Node& n, const std::vector<std::string>& env, const std::string& ind,
               std::vector<std::string>& names) {
    std::vector<std::string> init;
    const std::string t = fresh("t");
    if (n.op == Op::scan) {
      // dyn::scan(f, std::make_tuple(carries...), std::make_tuple(xs...), {...}):
      // f unpacks both tuples, runs the body and returns ((carries...), (ys...)).
      const auto nc = static_cast<std::size_t>(n.p[2]);
      const Program& b = n.body[0];
      std::vector<std::string> benv = env, cs, xs, outs;
      const std::string c = fresh("c"), x = fresh("x");
      for (std::size_t j = 0; j < b.params.size(); ++j) {
        (j < nc ? cs : xs).push_back(fresh("p"));
        benv.push_back(j < nc ? cs.back() : xs.back());
      }
      std::ostringstream body_os;
      program(body_os, b, benv, ind + "  ", outs);
      auto tuple = [](const std::vector<std::string>& v, std::size_t from, std::size_t to) {
        std::string s = "std::make_tuple(";
        for (std::size_t i = from; i < to; ++i) s += (i > from ? ", " : "") + v[i];
        return s + ")";
      };
      auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
        return s;
      };
      std::vector<std::string> ins;
      for (int s : n.in) ins.push_back(env.at(s));
      os << ind << "auto " << t << " = dyn::scan([&]([[maybe_unused]] auto " << c << ", [[maybe_unused]] auto " << x
         << ") {\n";
      if (!cs.empty()) os << ind << "  auto [" << join(cs) << "] = " << c << ";\n";
      if (!xs.empty()) os << ind << "  auto [" << join(xs) << "] = " << x << ";\n";
      os << body_os.str() << ind << "  return std::make_tuple(" << tuple(outs, 0, nc) << ", "
         << tuple(outs, nc, outs.size()) << ");\n"
         << ind << "}, " << tuple(ins, 0, nc) << ", " << tuple(ins, nc, ins.size()) << ", {"
         << (ins.size() == nc ? ".length = " + std::to_string(n.p[1]) + ", " : std::string()) << ".reverse = "
         << (n.p[0] ? "true" : "false") << "});\n";
      for (std::size_t j = 0; j < n.out.size(); ++j) {
        names.push_back(fresh("v"));
        os << ind << "auto " << names.back() << " = std::get<" << (j < nc ? j : j - nc) << ">(std::get<"
           << (j < nc ? 0 : 1) << ">(" << t << "));\n";
      }
      return;
    }
    if (n.op == Op::for_loop) {
      for (int s : n.in) init.push_back(env.at(s));
      // The body's first parameter is the index: a lead name bound in env.
      Program b = n.body[0];
      const std::string i = fresh("i");
      std::vector<std::string> benv = env;
      benv.push_back(i);
      b.params.erase(b.params.begin());
      os << ind << "auto " << t << " = dyn::for_loop(" << n.p[0] << ", " << n.p[1] << ", " << n.p[2]
         << ", {.preserve_dimensions = " << (n.p[3] ? "true" : "false") << "})(" << lambda(b, benv, ind, {i}, {})
         << ")(";
      for (std::size_t j = 0; j < init.size(); ++j) os << (j ? ", " : "") << init[j];
      os << ");\n";
    } else if (n.op == Op::while_loop) {
      init.push_back("dyn::Array<std::int64_t>::scalar(0)");
      for (int s : n.in) init.push_back(env.at(s));
      const std::string k = fresh("k");
      std::string cond = "[&](auto " + k;  // (k is always used)
      std::vector<std::string> cenv = env;
      for (std::size_t j = 0; j < n.body[0].params.size(); ++j) {
        const std::string q = fresh("q");
        cond += ", [[maybe_unused]] auto " + q;
        cenv.push_back(q);
      }
      cond += ") {\n";
      std::string pred = "(" + k + " < " + std::to_string(n.p[0]) + ")";
      if (n.body.size() > 1) {
        std::ostringstream cs;
        std::vector<std::string> outs;
        program(cs, n.body[1], cenv, ind + "  ", outs);
        cond += cs.str();
        pred = "(" + pred + " & " + outs[0] + ")";
      }
      cond += ind + "  return " + pred + ";\n" + ind + "}";
      const std::string k2 = fresh("k");
      os << ind << "auto " << t << " = dyn::while_loop(" << cond << ", {.preserve_dimensions = "
         << (n.p[1] ? "true" : "false") << "})(" << lambda(n.body[0], env, ind, {k2}, {k2 + " + 1"}) << ")(";
      for (std::size_t j = 0; j < init.size(); ++j) os << (j ? ", " : "") << init[j];
      os << ");\n";
      for (std::size_t j = 0; j < n.out.size(); ++j) {
        names.push_back(fresh("v"));
        os << ind << "auto " << names.back() << " = std::get<" << j + 1 << ">(" << t << ");\n";
      }
      return;
    } else if (n.op == Op::checkpoint) {
      for (int s : n.in) init.push_back(env.at(s));
      os << ind << "auto " << t << " = dyn::checkpoint(" << lambda(n.body[0], env, ind, {}, {}) << ")(";
      for (std::size_t j = 0; j < init.size(); ++j) os << (j ? ", " : "") << init[j];
      os << ");\n";
    } else {
      for (std::size_t j = 1; j < n.in.size(); ++j) init.push_back(env.at(n.in[j]));
      const bool indexed = n.k != 0;
      os << ind << "auto " << t << " = dyn::" << (indexed ? "switch_(" : "cond(") << env.at(n.in[0]);
      for (const Program& b : n.body) os << ", " << lambda(b, env, ind, {}, {});
      os << ")(";
      for (std::size_t j = 0; j < init.size(); ++j) os << (j ? ", " : "") << init[j];
      os << ");\n";
    }
    for (std::size_t j = 0; j < n.out.size(); ++j) {
      names.push_back(fresh("v"));
      if (n.out.size() == 1) os << ind << "auto " << names.back() << " = " << t << ";\n";
      else os << ind << "auto " << names.back() << " = std::get<" << j << ">(" << t << ");\n";
    }
  }
};

// The inputs, the constants and `auto f = [&](x0, ...) { body; return
// std::make_tuple(outs...);` (the closing `};` is the caller's), as both
// printers write them.
void print_function(std::ostream& os, const Case& c, const Emitter& em, const std::string& body,
                    const std::vector<std::string>& outs) {
  for (std::size_t j = 0; j < c.inputs.size(); ++j) os << "  const auto in" << j << " = " << array_cpp(c.inputs[j]) << ";\n";
  os << em.consts.str();
  os << "  auto f = [&](";
  for (std::size_t j = 0; j < c.inputs.size(); ++j) os << (j ? ", " : "") << "[[maybe_unused]] auto x" << j;
  os << ") {\n" << body << "    return std::make_tuple(";
  for (std::size_t j = 0; j < outs.size(); ++j) os << (j ? ", " : "") << outs[j];
  os << ");\n";
}

// A case's function as both printers write it (print_function), and its
// inputs' polymorphic_shapes specs.
std::string function_text(const Case& c, std::vector<std::string>& specs) {
  Emitter em;
  std::ostringstream body, os;
  std::vector<std::string> env, outs;
  for (std::size_t j = 0; j < c.inputs.size(); ++j) {
    env.push_back("x" + std::to_string(j));
    specs.push_back(c.poly[j] ? "\"(n, ...)\"" : "\"...\"");
  }
  em.program(body, c.prog, env, "    ", outs);
  print_function(os, c, em, body.str(), outs);
  return os.str();
}

}  // namespace

std::string to_cpp(const Case& c, std::uint64_t seed) {
  std::ostringstream os;
  std::vector<std::string> specs;
  os << "// dynstage_fuzz reproduction, seed " << seed << " (shrunk).\n"
     << "// Build: g++ -std=c++20 -Iinclude repro.cpp build/libdynstage.a -L/usr/lib/llvm-19/lib -lLLVM-19\n"
     << "#include <dynstage/dynstage.hpp>\n\n#include <cstdint>\n#include <iostream>\n#include <limits>\n#include <tuple>\n\n"
     << "// A concrete array as the fuzzer's interpreter uses it: lifted into the trace\n"
     << "// (a constvar) while tracing, so that nothing is folded at trace time.\n"
     << "template <class Ref, class T>\nauto L(const Ref&, const dyn::Array<T>& a) {\n"
     << "  if constexpr (dyn::is_tracer_v<Ref>) return dyn::detail::from_value<dyn::Tracer<T>>(dyn::detail::to_value(a));\n"
     << "  else return a;\n}\n\nint main() {\n";
  os << function_text(c, specs);
  os << "  };\n";
  std::string args;
  for (std::size_t j = 0; j < c.inputs.size(); ++j) args += (j ? ", in" : "in") + std::to_string(j);
  os << "  std::cout.precision(17);\n"
     << "  auto show = [](const char* what, const auto& r) {\n"
     << "    std::cout << what << \":\\n\";\n"
     << "    std::apply([](const auto&... a) { ((std::cout << \"  \" << a << \"\\n\"), ...); }, r);\n  };\n"
     << "  try { show(\"eager\", dyn::eager(f)(" << args << ")); } catch (const std::exception& e) { std::cout << \"eager: \" << e.what() << \"\\n\"; }\n"
     << "  try { show(\"jit\", dyn::jit(f";
  if (c.symbolic) {
    os << ", dyn::polymorphic_shapes{";
    for (std::size_t j = 0; j < specs.size(); ++j) os << (j ? ", " : "") << specs[j];
    os << "}";
  }
  os << ")(" << args << ")); } catch (const std::exception& e) { std::cout << \"jit: \" << e.what() << \"\\n\"; }\n}\n";
  return os.str();
}

std::string to_doctest(const Case& c, std::uint64_t seed, const std::string& what) {
  std::ostringstream os;
  std::vector<std::string> specs;
  // The outputs' comparison: exact, or inexact with the f32 / f64 tolerance.
  std::vector<const Ty*> slot;
  for (const Ty& t : c.prog.params) slot.push_back(&t);
  for (const Node& n : c.prog.nodes)
    for (const Ty& t : n.out) slot.push_back(&t);
  std::string args;
  for (std::size_t j = 0; j < c.inputs.size(); ++j) args += (j ? ", in" : "in") + std::to_string(j);
  std::string what1 = what;
  for (char& ch : what1)
    if (ch == '"' || ch == '\\' || ch == '\n') ch = '\'';
  os << "// dynstage_fuzz --seed " << seed << " --count 1: " << what1 << "\n"
     << "// A doctest case for a test file of dynstage_jit_tests (<dynstage/dynstage.hpp>, <cmath>,\n"
     << "// <complex>, <cstring>, <limits>, <optional>, <string>, <tuple>, <typeinfo>).\n"
     << "TEST_CASE(\"dynstage_fuzz seed " << seed << ": eager, jit and jit with 1 vs 2 threads agree\") {\n"
     << "  // A concrete array as the fuzzer's interpreter uses it: lifted into the trace\n"
     << "  // (a constvar) while tracing, so that nothing is folded at trace time.\n"
     << "  auto L = [](const auto& ref, const auto& a) {\n"
     << "    using T = typename std::remove_cvref_t<decltype(a)>::value_type;\n"
     << "    if constexpr (dyn::is_tracer_v<std::remove_cvref_t<decltype(ref)>>)\n"
     << "      return dyn::detail::from_value<dyn::Tracer<T>>(dyn::detail::to_value(a));\n"
     << "    else return a;\n  };\n"
     << "  // jit vs eager: exact outputs bitwise (a NaN matches any NaN); inexact ones\n"
     << "  // within ~16 ulp or tol * max(1, max |eager|, the magnitude of what they were\n"
     << "  // computed from), or both non-finite (docs/reliability.md).\n"
     << "  auto match = [](const auto& got, const auto& want, bool inexact, double tol, double magnitude) {\n"
     << "    using T = typename std::remove_cvref_t<decltype(want)>::value_type;\n"
     << "    if (got.shape() != want.shape()) return false;\n"
     << "    const T* x = got.data();\n    const T* y = want.data();\n"
     << "    double scale = std::max(1.0, magnitude);\n"
     << "    if constexpr (std::is_floating_point_v<T>)\n"
     << "      for (std::int64_t i = 0; i < want.size(); ++i)\n"
     << "        if (std::isfinite(y[i])) scale = std::max(scale, std::fabs(static_cast<double>(y[i])));\n"
     << "    for (std::int64_t i = 0; i < want.size(); ++i) {\n"
     << "      if constexpr (std::is_floating_point_v<T>) {\n"
     << "        if (inexact && !std::isfinite(x[i]) && !std::isfinite(y[i])) continue;\n"
     << "        if (std::isnan(x[i]) || std::isnan(y[i])) {\n"
     << "          if (!(std::isnan(x[i]) && std::isnan(y[i]))) return false;\n"
     << "        } else if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0) {\n"
     << "          const double d = std::fabs(static_cast<double>(x[i]) - static_cast<double>(y[i]));\n"
     << "          if (!inexact || !std::isfinite(x[i]) || !std::isfinite(y[i]) ||\n"
     << "              (d > tol * scale && d > 16 * std::numeric_limits<T>::epsilon() * std::fabs(static_cast<double>(y[i]))))\n"
     << "            return false;\n"
     << "        }\n"
     << "      } else if (x[i] != y[i]) {\n        return false;\n      }\n"
     << "    }\n    return true;\n  };\n"
     << "  auto same_bits = [](const auto& a, const auto& b) {\n"
     << "    using T = typename std::remove_cvref_t<decltype(a)>::value_type;\n"
     << "    return a.shape() == b.shape() &&\n"
     << "           (a.size() == 0 || std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(T)) == 0);\n"
     << "  };\n";
  os << function_text(c, specs);
  os << "  };\n  auto jf = dyn::jit(f";
  if (c.symbolic) {
    os << ", dyn::polymorphic_shapes{";
    for (std::size_t j = 0; j < specs.size(); ++j) os << (j ? ", " : "") << specs[j];
    os << "}";
  }
  os << ");\n"
     << "  using R = decltype(dyn::eager(f)(" << args << "));\n"
     << "  std::optional<R> want, got;\n"
     << "  std::string want_error, got_error;  // the error class (typeid), if any\n"
     << "  try {\n    want = dyn::eager(f)(" << args << ");\n"
     << "  } catch (const dyn::Error& e) {\n    want_error = typeid(e).name();\n    MESSAGE(\"eager: \" << e.what());\n  }\n"
     << "  try {\n    got = jf(" << args << ");\n"
     << "  } catch (const dyn::Error& e) {\n    got_error = typeid(e).name();\n    MESSAGE(\"jit: \" << e.what());\n  }\n"
     << "  REQUIRE(want_error == got_error);\n"
     << "  if (!want) return;\n";
  const std::vector<Scale> scale = output_scales(c);
  for (std::size_t k = 0; k < c.prog.outs.size(); ++k) {
    const Ty& t = *slot.at(static_cast<std::size_t>(c.prog.outs[k]));
    const bool low = t.dt == DType::f32 || t.lowp;
    std::ostringstream m;
    m << relative_tolerance(low, scale.at(k)) << ", " << std::setprecision(17) << scale.at(k).magnitude;
    os << "  CHECK(match(std::get<" << k << ">(*got), std::get<" << k << ">(*want), " << (t.inexact ? "true" : "false")
       << ", " << m.str() << "));\n";
  }
  os << "  // The thread count never changes a result (runtime/threads.hpp).\n"
     << "  const int threads = dyn::num_threads();\n"
     << "  dyn::set_num_threads(1);\n  const R one = jf(" << args << ");\n"
     << "  dyn::set_num_threads(2);\n  const R two = jf(" << args << ");\n"
     << "  dyn::set_num_threads(threads);\n";
  for (std::size_t k = 0; k < c.prog.outs.size(); ++k)
    os << "  CHECK(same_bits(std::get<" << k << ">(one), std::get<" << k << ">(two)));\n";
  os << "}\n";
  return os.str();
}

}  // namespace fuzz
