// dynstage_fuzz: the differential fuzzer's program representation (issue 6,
// docs/reliability.md "Differential fuzzing").
//
// A program is DATA: an SSA list of nodes over numbered slots. Slots of a
// (sub)program are, in order: the slots visible from the enclosing program
// (a loop or cond body sees every slot defined before its node: captured
// values), the program's parameters, then each node's outputs (one slot per
// output; only loops and cond have several). Types are tracked, so the
// generator (fuzz_gen.cpp) builds well-typed programs by construction, and
// one interpreter (fuzz_run.cpp) runs them eagerly, through make_jaxpr +
// eval_jaxpr and through dyn::jit.
#pragma once

#include <dynstage/core.hpp>

#include <cstdint>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

namespace fuzz {

// The dtypes the fuzzer generates: the real ones, bool to f64 (the first
// kNumFuzzDTypes of dyn::DType).
inline constexpr int kNumFuzzDTypes = 11;
static_assert(static_cast<int>(dyn::DType::f64) == kNumFuzzDTypes - 1);

// dyn::visit_dtype over the dtypes of the fuzzer's slots: every real one.
// Complex values live inside Op::cplx nodes (made of float slots, projected
// back to real ones: issue 24), so the fuzzer's value variants and their
// operations are not instantiated for std::complex.
template <class F>
decltype(auto) visit_dtype(dyn::DType d, F&& f) {
  if (dyn::is_complex(d)) throw std::logic_error("fuzz: a complex value (the generator makes none)");
  return dyn::visit_dtype(d, [&](auto t) -> decltype(auto) {
    if constexpr (dyn::is_complex_v<decltype(t)>) return f(double{});  // (unreachable)
    else return f(t);
  });
}

using i64 = std::int64_t;

// The fuzzer's random stream (splitmix64): the generator's programs and the
// transformation checks' directions each draw from one seeded their way.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  i64 range(i64 lo, i64 hi) { return lo + static_cast<i64>(next() % static_cast<std::uint64_t>(hi - lo + 1)); }
  bool coin(double p = 0.5) { return static_cast<double>(next() >> 11) / 9007199254740992.0 < p; }
  double uniform() { return 2 * (static_cast<double>(next() >> 11) / 9007199254740992.0) - 1; }  // [-1, 1)
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<std::size_t>(range(0, static_cast<i64>(v.size()) - 1))]; }
};
using dyn::DType;

enum class Op {
  constant,      // a closed-over dyn::Array (data)
  full,          // dyn::full<T>(static shape p, lit)
  iota,          // dyn::arange<T>(p[0])
  iota_dyn,      // dyn::arange<T>(in[0]): a Catalyst dynamic size (an i64 scalar input)
  unary,         // k: Unary
  binary,        // k: Binary, same dtype, numpy broadcasting
  add_mixed,     // x + y of different dtypes (JAX promotion)
  scalar,        // k: Binary, x op literal (p[0] = 1: literal on the left); weak literal
  compare,       // k: Cmp
  where,         // where(in0, in1, in2)
  clamp,         // in = x, lo, hi: p[0] = 0: clip(x, lo, hi) (broadcasting); 1: clamp(lo, x, hi) (lo, hi rank 0 or x's shape)
  astype,        // astype to out dtype
  reduce,        // k: Red; p: axes; lit bit 0: no axes argument (all), bit 1: dyn::keepdims
  reshape,       // p: static target shape
  transpose,     // p: permutation
  slice,         // slice_in_dim(x, p0=axis, p1=start, p2=limit (-1: the whole dim), p3=stride)
  concat,        // concatenate(in, p[0])
  expand_dims,   // p[0]
  squeeze,       // p: axes
  broadcast_to,  // p: target dims, >= 0 static, -1-j: x.shape(j)
  cumulative,    // k: Cum; p = axis (may be negative), reverse
  gather,        // in = x, idx (integer); p[0] = axis: k = 0: x.at(all()..., idx).get(); 1: dyn::take(x, idx, axis);
                 // 2: dyn::take_along_axis(x, idx, axis); 3: x.at(all()..., p[1]).get() (in = x; a C++ integer)
  scatter,       // in = x, idx, u; p[0] = axis: x.at(all()..., idx).set/add/mul/min/max(u) (k: 0..4);
                 // with p[1]: in = x, u and the index is the C++ integer p[1]
  argreduce,     // k: 0 argmax, 1 argmin; p[0] = axis (may be negative); lit 1: dyn::keepdims
  sort,          // k 0: dyn::sort(x, p[0]), 1: dyn::argsort(x, p[0]) (axis may be negative);
                 // 2, 3: std::get<k - 2>(dyn::top_k(x, p[0]))
  rev,           // p: axes (dyn::rev)
  pad,           // p: (lo, hi, interior) per axis; lit: the padding value (dyn::pad)
  dot,
  matmul,
  dynamic_slice,         // in = x, index scalars; p: sizes
  dynamic_update_slice,  // in = x, update, index scalars
  for_loop,              // p = lo, hi, step, preserve; in = carries; body[0](i, carries...) -> carries
  while_loop,            // p = trips, preserve; in = carries; body[0](carries) -> carries; body[1]: extra bool cond or none
  cond,                  // in = pred, operands; body[0], body[1](operands...) -> outs; k = 1: in[0] is an
                         // integer index, dyn::switch_(index, body[0], ..., body[N-1]) (N = 2 or 3)
  scan,                  // p = reverse, length (no xs), ncarry; in = carries, xs; body[0](carries..., x rows...)
                         // -> carries, ys; out = carries, ys (each y with the length as a leading dimension)
  checkpoint,            // in = operands; dyn::checkpoint(body[0])(operands...) -> outs
  cplx,                  // complex values inside one node (issue 24): in = x, y (one float dtype, broadcasting);
                         // z0 = p[0]: 0 complex(x, y), 1 x + y * 1i, 2 astype<complex>(x) - 1i * y; then the
                         // steps p[1..] (CStep) on z; the result: k (CProj) of z, a real float or bool
  collective,            // dyn::shard_map over the one-rank mesh {"x": 1} of one collective on in[0] (k: Coll;
                         // p: all_gather axis, tiled; all_to_all split axis, concat axis, tiled)
  segment_sum,           // dyn::segment_sum_offsets(in[0], in[1]): a 1-D number array, integer offsets of m + 1
                         // entries (any values: they clamp) -> m row sums
};

// The collective of an Op::collective node, over mesh axis "x" of one rank
// (docs/distributed.md): psum, pmax, pmin and ppermute {(0, 0)} are the
// identity, all_gather adds an axis of 1 (tiled: the same shape),
// all_to_all moves an axis of 1 (tiled: the same shape), axis_index is 0
// (added to the operand).
enum Coll { co_psum, co_pmax, co_pmin, co_all_gather, co_ppermute, co_all_to_all, co_axis_index, kCollCount };

// The steps of a cplx node, each on the complex value z (z0: the first one).
enum CStep { cs_neg, cs_conj, cs_exp, cs_log, cs_sqrt, cs_sin, cs_cos, cs_tanh, cs_square, cs_ipow, cs_add, cs_sub,
             cs_mul, cs_div, cs_pow, cs_mul_lit, cs_sum, cs_prod, cs_mean, cs_dot, cs_flat, cs_rev, cs_stop_gradient,
             cs_transpose,
             // dyn::fft::fft, dyn::fft::ifft (norm "ortho") along the last axis (rank >= 1); inexact
             cs_fft, cs_ifft, kCStepCount };
// What a cplx node returns of z: real(z), imag(z), abs(z), angle(z), z == conj(z), z != conj(z).
enum CProj { cp_real, cp_imag, cp_abs, cp_angle, cp_eq, cp_ne, kCProjCount };

enum Unary { u_neg, u_abs, u_sign, u_floor, u_ceil, u_round, u_exp, u_log, u_log1p, u_sqrt, u_rsqrt, u_sin, u_cos,
             u_tan, u_tanh, u_logistic, u_not, u_popcount, u_clz,
             // the math of API.md section 13: float functions (computed as inexact), then
             // square and integer_pow (any numeric dtype), then the bool-valued tests
             u_expm1, u_exp2, u_cbrt, u_sinh, u_cosh, u_asin, u_acos, u_atan, u_asinh, u_acosh, u_atanh, u_erf,
             u_erfc, u_lgamma, u_erf_inv, u_digamma, u_trigamma, u_log2, u_log10, u_square, u_ipow, u_stop_gradient, u_isfinite, u_isnan, u_isinf, kUnaryCount };
// b_shr is `>>`: shift_right_arithmetic on signed, shift_right_logical on unsigned dtypes.
enum Binary { b_add, b_sub, b_mul, b_div, b_rem, b_pow, b_max, b_min, b_atan2, b_and, b_or, b_xor, b_shl, b_shr,
              b_hypot, b_nextafter, b_logical_and, kBinaryCount };
enum Cmp { c_eq, c_ne, c_lt, c_le, c_gt, c_ge, kCmpCount };
enum Red { r_sum, r_prod, r_max, r_min, r_mean, r_any, r_all, kRedCount };
enum Cum { cu_sum, cu_prod, cu_max, cu_min, kCumCount };

// A dimension: its concrete size and, if dynamic, an identity (sym >= 0).
// Two dynamic dimensions are only known equal if they have the same sym
// (the generator is conservative: dynstage may know more).
struct D {
  i64 n = 0;
  int sym = -1;
  bool operator==(const D& o) const { return sym == o.sym && (sym >= 0 || n == o.n); }
  bool is_static() const { return sym < 0; }
};

struct Ty {
  DType dt = DType::f64;
  std::vector<D> shape;
  // Computed by an operation that jit may round differently from eager
  // (docs/backend.md "Accuracy"): compared with a tolerance, and never fed
  // into anything discontinuous (comparisons, rounding, conversions to
  // integers, predicates, indices).
  bool inexact = false;
  // Inexact, and rounded to f32 somewhere on the way (an f32 cos promoted to
  // f64): compared with the f32 tolerance whatever its dtype.
  bool lowp = false;
  bool is_static() const {
    for (const D& d : shape)
      if (!d.is_static()) return false;
    return true;
  }
  i64 size() const {
    i64 s = 1;
    for (const D& d : shape) s *= d.n;
    return s;
  }
};

struct Program;

struct Node {
  Op op = Op::constant;
  int k = 0;
  std::vector<int> in;
  std::vector<i64> p;
  double lit = 0;
  std::vector<Ty> out;
  std::vector<Program> body;
  dyn::AnyArray data;  // Op::constant
};

struct Program {
  std::vector<Ty> params;
  std::vector<Node> nodes;
  std::vector<int> outs;
};

// A whole test case: the top-level program, whose parameters are the inputs.
struct Case {
  Program prog;
  std::vector<dyn::AnyArray> inputs;
  // Input k's leading dimension is the symbolic "n" (dyn::polymorphic_shapes
  // "(n, ...)" on the first argument, which holds these inputs); the others
  // go in the second argument ("...").
  std::vector<bool> poly;
  bool symbolic = false;
};

// The slots a node's outputs occupy, given the index of the program's first
// own slot (base) — computed by walking the nodes.
inline int slot_count(const Program& p) {
  int n = static_cast<int>(p.params.size());
  for (const Node& nd : p.nodes) n += static_cast<int>(nd.out.size());
  return n;
}

// Result of running a case three ways.
struct Outcome {
  enum Kind { ok, dyn_error, other_error } kind = ok;
  std::string error;  // error class
  std::string message;
  std::vector<dyn::AnyArray> out;
};

struct Verdict {
  // elided: eager and eval_jaxpr raise ArithmeticError (an integer fault)
  // but jit returns results: a fused kernel computes only the elements it
  // needs, so a fault in an element no result depends on (a scalar
  // broadcast into an empty array) is not raised. Documented, counted,
  // a failure only with --strict.
  enum Kind { pass, consistent_error, mismatch, crash, elided } kind = pass;
  std::string what;  // category ("jit vs eager output #2", "error only in jit") for the shrinker
  std::string detail;
};

// fuzz_run.cpp
// The threads check (on by default): each jitted program is also run with 1
// and with 2 threads (dyn::set_num_threads) and the two results must be
// bitwise identical (runtime/threads.hpp: a kernel's tasks depend on the
// problem size only). A failure is a mismatch "jit 1 vs 2 threads".
void set_check_threads(bool on);
bool check_threads();
// A deliberate error for the tests that show the three ways' check can
// fail: jit's first output is perturbed before it is compared (dynstage_fuzz
// --fault jit; tests/fuzz/doctest_example.cpp is the shrunk reproducer).
void set_jit_fault(bool on);
Verdict run_case(const Case& c, Outcome* eager = nullptr, Outcome* interp = nullptr, Outcome* jit = nullptr);
// The values of the top-level slots in eager mode (for the shrinker); empty on error.
std::vector<dyn::AnyArray> eager_slots(const Case& c);
// Whether c's program, run eagerly on its inputs, evaluates abs at 0 or a
// maximum or minimum of equal float operands anywhere, bodies included.
bool at_kink(const Case& c);

// The primitives of a case's jaxpr (make_jaxpr of the interpreter, every body
// included); empty if tracing raises a dyn::Error.
std::set<dyn::detail::Prim> traced_primitives(const Case& c);
// The primitives the fuzzer generates: those of the programs of seeds
// first .. first + count - 1 (tests/ir/test_prim_table_jit.cpp checks that
// every primitive is among them).
std::set<dyn::detail::Prim> generated_primitives(std::uint64_t first, int count, int max_nodes = 12);

// What the tolerance of an inexact result grows with (fuzz_run.cpp, Scales):
// the largest finite |value| it was computed from, and the most terms one of
// its elements sums.
struct Scale {
  double magnitude = 0;
  double terms = 1;
};

// p run on its parameters' values (concrete arrays, or with traced = true
// values of the current trace, concrete ones lifted into it); its results.
// The transformation checks call the program through this.
std::vector<dyn::detail::Value> run_values(const Program& p, const std::vector<dyn::detail::Value>& params, bool traced,
                                           std::vector<Scale>* scales = nullptr);
// "" if `got` matches `ref`: identical, or for an inexact float within the
// jit-vs-eager tolerance (fuzz_run.cpp); otherwise what differs.
std::string compare(const dyn::AnyArray& got, const dyn::AnyArray& ref, bool inexact, bool lowp = false,
                    Scale scale = {});
// max(kRel, terms * eps): compare's tolerance relative to the scale.
double relative_tolerance(bool single, Scale s);
// Per output of c's program (in prog.outs' order), the scale compare's
// tolerance grows with: from an eager run, Scale{} if that run raises.
std::vector<Scale> output_scales(const Case& c);

// fuzz_transform.cpp: derivatives and batching of a case (docs/reliability.md,
// "Transformations"). A check is `checked` (every comparison held),
// `skipped` (what: why, e.g. "unsupported: vjp: cannot differentiate through
// while_loop ...", "no floating-point input") or `failed`.
struct Check {
  enum Kind { checked, skipped, failed } kind = checked;
  std::string what;
  std::string detail;
  // grad only: "checked" when the gradient was also compared with central
  // differences, else why not ("non-smooth", "f32 involved", ...).
  std::string fd;
};
// A deliberate error for the tests that show a check can fail: the eager
// gradient (vmap result) is perturbed before it is compared.
enum class Fault { none, grad, vmap };
Check check_grad(const Case& c, std::uint64_t seed, Fault fault = Fault::none);
Check check_vmap(const Case& c, std::uint64_t seed, Fault fault = Fault::none);

// fuzz_gen.cpp
// float_inputs: each input is f64 with probability 0.6 (else any dtype, as
// by default): the programs whose gradients are checked (one in five
// default programs has a float input).
Case generate(std::uint64_t seed, int max_nodes, bool float_inputs = false);
std::string to_cpp(const Case& c, std::uint64_t seed);
// The reproduction as a ready-to-paste doctest TEST_CASE (for a test file of
// dynstage_jit_tests): eager vs jit (the same error class, or outputs equal:
// exact ones bitwise, inexact ones within the fuzzer's tolerance) and jit
// with 1 vs 2 threads bitwise. `what`: the failure, for the comment.
std::string to_doctest(const Case& c, std::uint64_t seed, const std::string& what);
std::string dtype_cpp(DType d);

}  // namespace fuzz
