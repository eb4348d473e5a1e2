// dynstage: the user-facing operations that take sizes (API.md §4, §8):
// the size lists (Size, ConcreteSizes, Sizes, Strides, Index), the shape
// operations (reshape, transpose, broadcast_to, squeeze, concatenate,
// slices) and creation (full, zeros, ones, iota, arange, dim_value, *_like).
// One-liners over the numpy layer (numpy_shape.hpp), as in ops.hpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <type_traits>
#include <vector>

#include "numpy_shape.hpp"
#include "ops.hpp"

namespace dyn {

// ---------------------------------------------------------------------------
// Sizes (API.md §8). Wherever a size, start, limit or shape is meant, each
// entry of the braced list may be an integer, a dyn::Dim, or an integer
// scalar tracer (a dynamic size, Catalyst style: its run-time value is the
// size), mixed in one list. The list's entries decide the result's static
// kind, because C++ must know it before the call runs:
//   - only integers (or, when running eagerly, integer rank-0 dyn::Arrays,
//     which is what an integer argument is then): the result has the
//     operand's kind, so creation gives a concrete dyn::Array;
//   - any dyn::Dim or traced scalar: the result is a dyn::Tracer, staged in
//     the active trace.
// Each such operation therefore has three overloads: a list of integers
// (std::initializer_list, which C++ prefers for `{3, 4}`), ConcreteSizes,
// and Sizes. A whole Shape held in a variable (x.shape()) gives a Tracer for
// the creation functions, and the operand's kind for the others (a fourth
// overload, a template that braced lists cannot select).

// One entry of a list of sizes that may be symbolic or traced.
class Size {
public:
  template <class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
  Size(I i) : d_(static_cast<std::int64_t>(i)) {}  // NOLINT: implicit by design
  Size(Dim d) : d_(std::move(d)) {}                  // NOLINT
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Size(const Tracer<T>& t) : d_(detail::dim_of(t.value(), "size")) {}  // NOLINT
  const Dim& dim() const { return d_; }

private:
  Dim d_;
};

// One entry of a list of concrete sizes: an integer, or an integer rank-0
// dyn::Array (an integer argument of a function run eagerly), so that
// `ones<double>({n + 1})` works on an eager n as on a traced one.
class ConcreteSize {
public:
  template <class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
  ConcreteSize(I i) : n_(static_cast<std::int64_t>(i)) {}  // NOLINT: implicit by design
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  ConcreteSize(const Array<T>& a) : n_(detail::dim_of(detail::to_value(a), "size").value()) {}  // NOLINT
  std::int64_t value() const { return n_; }

private:
  std::int64_t n_;
};

// A list of concrete sizes: the result keeps the operand's kind.
class ConcreteSizes {
public:
  ConcreteSizes(std::initializer_list<ConcreteSize> l) { for (const auto& z : l) v_.push_back(z.value()); }  // NOLINT
  ConcreteSizes(const std::vector<ConcreteSize>& l) { for (const auto& z : l) v_.push_back(z.value()); }  // NOLINT
  ConcreteSizes(std::vector<std::int64_t> v) : v_(std::move(v)) {}  // NOLINT
  const std::vector<std::int64_t>& values() const { return v_; }
  Shape shape() const { return detail::to_shape(v_); }

private:
  std::vector<std::int64_t> v_;
};

// A list of sizes of which some may be dyn::Dims or traced scalars: the
// result is a dyn::Tracer.
class Sizes {
public:
  Sizes(std::initializer_list<Size> l) { for (const auto& z : l) s_.push_back(z.dim()); }  // NOLINT
  Sizes(const std::vector<Size>& l) { for (const auto& z : l) s_.push_back(z.dim()); }  // NOLINT
  Sizes(Shape s) : s_(std::move(s)) {}  // NOLINT: x.shape() is a list of sizes
  const Shape& shape() const { return s_; }

private:
  Shape s_;
};

// Slice strides: static, as lax.slice's (an integer, or a Dim whose value is
// known; a symbolic or traced stride is an error naming it).
class Strides {
public:
  Strides() = default;
  Strides(std::initializer_list<Size> l) { for (const auto& z : l) s_.push_back(z.dim()); }  // NOLINT
  Strides(const std::vector<std::int64_t>& v) : s_(detail::to_shape(v)) {}  // NOLINT
  Strides(Shape s) : s_(std::move(s)) {}  // NOLINT
  const Shape& shape() const { return s_; }

private:
  Shape s_;
};

namespace detail {
// The static result of an operation with a list of Sizes: always traced.
template <class X>
using staged_t = Tracer<elem_t<X>>;

// A result that is traced although the operand is a concrete array (a Dim
// or traced size): it needs an active trace to live in.
void require_trace(const char* op);
#ifdef DYNSTAGE_IMPLEMENTATION
void require_trace(const char* op) {
  if (!current_trace())
    fail<TypeError>(std::string(op) +
                    " with dyn::Dim or traced sizes gives a dyn::Tracer and can only be called while tracing; "
                    "use integer sizes for a concrete array");
}
#endif

// The operand of an operation whose result is staged (a Sizes overload): a
// concrete array becomes a constant of the active trace first, so that the
// operation is staged rather than folded into a bigger constant (constants
// are never folded into the program: JAX's closed-over constants). Call
// after require_trace.
template <class X>
Value staged_operand(const X& x) {
  if constexpr (is_tracer_v<X>) return x.value();
  else return current_trace()->lift(to_value(x));
}

// A whole Shape held in a variable (x.shape(), a dyn::Shape) keeps the
// operand's kind, so generic code that passes shapes around works on arrays
// and tracers alike; for a concrete operand it must be static.
template <class X>
void require_static_shape(const char* op, const Shape& shape) {
  if constexpr (!is_tracer_v<X>)
    if (!all_static(shape))
      fail<TypeError>(std::string(op) + ": the operand is a concrete dyn::Array but the shape " + shape_str(shape) +
                      " is symbolic, so the result would be traced; write the sizes in braces (e.g. {x.shape(0), 4}) "
                      "to get a dyn::Tracer, or pass the array as an argument of the traced function");
}

// The values of static strides (TypeError for a symbolic or traced one).
std::vector<std::int64_t> static_strides(const Strides& s);
#ifdef DYNSTAGE_IMPLEMENTATION
std::vector<std::int64_t> static_strides(const Strides& s) {
  std::vector<std::int64_t> r;
  for (const Dim& d : s.shape()) {
    if (!d.is_static())
      fail<TypeError>("slice: strides must be known while tracing (lax.slice takes static strides), got the "
                      "symbolic or traced stride " + d.to_string() + " in " + shape_str(s.shape()));
    r.push_back(d.value());
  }
  return r;
}
#endif
}  // namespace detail

// ---------------------------------------------------------------------------
// Shape operations.

// reshape(x, {d0, d1, ...}): sizes as above, one of them may be -1.
template <ArrayLike X>
auto reshape(const X& x, std::initializer_list<std::int64_t> sizes, detail::Loc loc = detail::Loc::current()) {
  return reshape(x, ConcreteSizes(std::vector<std::int64_t>(sizes)), loc);
}
template <ArrayLike X>
auto reshape(const X& x, const ConcreteSizes& sizes, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::reshape(detail::to_value(x), sizes.shape()));
}
template <ArrayLike X>
detail::staged_t<X> reshape(const X& x, const Sizes& sizes, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("reshape");
  return detail::from_value<detail::staged_t<X>>(detail::reshape(detail::staged_operand(x), sizes.shape()));
}

template <ArrayLike X, class S> requires std::is_same_v<S, Dim>
auto reshape(const X& x, const std::vector<S>& sizes, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_static_shape<X>("reshape", sizes);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::reshape(detail::to_value(x), sizes));
}

template <ArrayLike X>
auto transpose(const X& x, const std::vector<std::int64_t>& perm = {}, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::transpose(detail::to_value(x), perm));
}

// broadcast_to(x, {sizes...}): numpy broadcasting to the given shape.
template <ArrayLike X>
auto broadcast_to(const X& x, std::initializer_list<std::int64_t> shape, detail::Loc loc = detail::Loc::current()) {
  return broadcast_to(x, ConcreteSizes(std::vector<std::int64_t>(shape)), loc);
}
template <ArrayLike X>
auto broadcast_to(const X& x, const ConcreteSizes& shape, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::broadcast_to_shape(detail::to_value(x), shape.shape()));
}
template <ArrayLike X>
detail::staged_t<X> broadcast_to(const X& x, const Sizes& shape, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("broadcast_to");
  return detail::from_value<detail::staged_t<X>>(detail::broadcast_to_shape(detail::staged_operand(x), shape.shape(), "broadcast_to", true));
}

template <ArrayLike X, class S> requires std::is_same_v<S, Dim>
auto broadcast_to(const X& x, const std::vector<S>& shape, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_static_shape<X>("broadcast_to", shape);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::broadcast_to_shape(detail::to_value(x), shape));
}

template <ArrayLike X>
auto expand_dims(const X& x, std::int64_t axis, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::expand_dims(detail::to_value(x), axis));
}
// squeeze(x): all size-1 axes; squeeze(x, {axes}): those (each must be 1).
template <ArrayLike X>
auto squeeze(const X& x, const std::vector<std::int64_t>& axes = {}, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::squeeze(detail::to_value(x), axes));
}
template <ArrayLike X>
auto concatenate(const std::vector<X>& xs, std::int64_t axis = 0, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  std::vector<detail::Value> vs;
  for (const auto& x : xs) vs.push_back(detail::to_value(x));
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::concatenate(std::move(vs), axis));
}
template <ArrayLike X>
auto concatenate(std::initializer_list<X> xs, std::int64_t axis = 0, detail::Loc loc = detail::Loc::current()) {
  return concatenate(std::vector<X>(xs), axis, loc);
}

// slice(x, {starts}, {limits}[, {strides}]): lax.slice. Starts and limits
// are sizes as above; a symbolic one must be provably in range (decided with
// the constraints, else InconclusiveDimensionOperation). Strides are static.
template <ArrayLike X>
auto slice(const X& x, std::initializer_list<std::int64_t> starts, std::initializer_list<std::int64_t> limits,
           const Strides& strides = {}, detail::Loc loc = detail::Loc::current()) {
  return slice(x, ConcreteSizes(std::vector<std::int64_t>(starts)), ConcreteSizes(std::vector<std::int64_t>(limits)),
               strides, loc);
}
template <ArrayLike X>
auto slice(const X& x, const ConcreteSizes& starts, const ConcreteSizes& limits, const Strides& strides = {},
           detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::slice(detail::to_value(x), starts.shape(), limits.shape(), detail::static_strides(strides)));
}
template <ArrayLike X>
detail::staged_t<X> slice(const X& x, const Sizes& starts, const Sizes& limits, const Strides& strides = {},
                          detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("slice");
  return detail::from_value<detail::staged_t<X>>(
      detail::slice(detail::staged_operand(x), starts.shape(), limits.shape(), detail::static_strides(strides)));
}
template <ArrayLike X, class S> requires std::is_same_v<S, Dim>
auto slice(const X& x, const std::vector<S>& starts, const std::vector<S>& limits, const Strides& strides = {},
           detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_static_shape<X>("slice", starts);
  detail::require_static_shape<X>("slice", limits);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::slice(detail::to_value(x), starts, limits, detail::static_strides(strides)));
}
// lax.slice_in_dim: x[start:limit:stride] along `axis`; start and limit may
// be symbolic dimensions (`slice_in_dim(x, 0, mod(x.shape(0), 3))`).
template <ArrayLike X>
auto slice_in_dim(const X& x, const Dim& start, const Dim& limit, std::int64_t stride = 1, std::int64_t axis = 0,
                  detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::slice_in_dim(detail::to_value(x), start, limit, stride, axis));
}

// A start index of a dynamic slice: an integer, a dyn::Dim (its value), or a
// scalar integer tracer or array.
class Index {
public:
  template <class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
  Index(I i) : v_(detail::to_value(static_cast<std::int64_t>(i))) {}  // NOLINT
  Index(const Dim& d) : v_(detail::to_value(d)) {}  // NOLINT
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Index(const Tracer<T>& t) : v_(t.value()) {}  // NOLINT
  template <class T> requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  Index(const Array<T>& a) : v_(detail::to_value(a)) {}  // NOLINT
  const detail::Value& value() const { return v_; }

private:
  detail::Value v_;
};

namespace detail {
inline std::vector<Value> index_values(const std::vector<Index>& starts) {
  std::vector<Value> r;
  for (const auto& s : starts) r.push_back(s.value());
  return r;
}
// A concrete operand with traced start indices yields a tracer; the static
// result type of a dyn::Array operand cannot hold one.
inline void require_concrete(const Value& v, const char* op) {
  if (v.is_tracer())
    fail<TypeError>(std::string(op) +
                    ": the operand is a concrete dyn::Array but a start index is traced; the result would be "
                    "traced. Pass the array as an argument of the traced function instead.");
}
}  // namespace detail

// dynamic_slice(x, {starts}, {sizes}): starts clamped into range as in JAX;
// sizes as above (a traced size gives a dynamic dimension).
template <ArrayLike X>
auto dynamic_slice(const X& x, const std::vector<Index>& starts, std::initializer_list<std::int64_t> sizes,
                   detail::Loc loc = detail::Loc::current()) {
  return dynamic_slice(x, starts, ConcreteSizes(std::vector<std::int64_t>(sizes)), loc);
}
template <ArrayLike X>
auto dynamic_slice(const X& x, const std::vector<Index>& starts, const ConcreteSizes& sizes,
                   detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::Value r = detail::dynamic_slice(detail::to_value(x), detail::index_values(starts), sizes.shape());
  if constexpr (!is_tracer_v<X>) detail::require_concrete(r, "dynamic_slice");
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(r);
}
template <ArrayLike X>
detail::staged_t<X> dynamic_slice(const X& x, const std::vector<Index>& starts, const Sizes& sizes,
                                  detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("dynamic_slice");
  return detail::from_value<detail::staged_t<X>>(
      detail::dynamic_slice(detail::staged_operand(x), detail::index_values(starts), sizes.shape()));
}
template <ArrayLike X, class S> requires std::is_same_v<S, Dim>
auto dynamic_slice(const X& x, const std::vector<Index>& starts, const std::vector<S>& sizes,
                   detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_static_shape<X>("dynamic_slice", sizes);
  detail::Value r = detail::dynamic_slice(detail::to_value(x), detail::index_values(starts), sizes);
  if constexpr (!is_tracer_v<X>) detail::require_concrete(r, "dynamic_slice");
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(r);
}
template <ArrayLike X, ArrayLike U>
auto dynamic_update_slice(const X& x, const U& update, const std::vector<Index>& starts,
                          detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::Value r =
      detail::dynamic_update_slice(detail::to_value(x), detail::to_value(update), detail::index_values(starts));
  if constexpr (!is_tracer_v<X> && !is_tracer_v<U>) detail::require_concrete(r, "dynamic_update_slice");
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X, U>>(r);
}

// ---------------------------------------------------------------------------
// Creation: full, zeros, ones, iota, arange. With integer sizes these are
// concrete arrays (constants when a trace uses them); with a Dim or a traced
// size, tracers staged in the active trace. The *_like forms follow their
// argument's kind.

namespace detail {
template <class T>
Array<T> concrete_full(const ConcreteSizes& shape, T value, const Loc& loc) {
  OpSite site(loc);
  return from_value<Array<T>>(full(shape.shape(), to_value(value), dtype_v<T>));
}
template <class T>
Tracer<T> staged_full(const char* op, const Shape& shape, T value, const Loc& loc) {
  OpSite site(loc);
  require_trace(op);
  return from_value<Tracer<T>>(full(shape, to_value(value), dtype_v<T>, true));
}
}  // namespace detail

template <class T>
Array<T> full(std::initializer_list<std::int64_t> shape, T value, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(std::vector<std::int64_t>(shape), value, loc);
}
template <class T>
Array<T> full(const ConcreteSizes& shape, T value, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(shape, value, loc);
}
template <class T>
Tracer<T> full(const Sizes& shape, T value, detail::Loc loc = detail::Loc::current()) {
  return detail::staged_full("full", shape.shape(), value, loc);
}
template <class T>
Array<T> zeros(std::initializer_list<std::int64_t> shape, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(std::vector<std::int64_t>(shape), T(0), loc);
}
template <class T>
Array<T> zeros(const ConcreteSizes& shape, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(shape, T(0), loc);
}
template <class T>
Tracer<T> zeros(const Sizes& shape, detail::Loc loc = detail::Loc::current()) {
  return detail::staged_full("zeros", shape.shape(), T(0), loc);
}
template <class T>
Array<T> ones(std::initializer_list<std::int64_t> shape, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(std::vector<std::int64_t>(shape), T(1), loc);
}
template <class T>
Array<T> ones(const ConcreteSizes& shape, detail::Loc loc = detail::Loc::current()) {
  return detail::concrete_full<T>(shape, T(1), loc);
}
template <class T>
Tracer<T> ones(const Sizes& shape, detail::Loc loc = detail::Loc::current()) {
  return detail::staged_full("ones", shape.shape(), T(1), loc);
}

// iota<T>({sizes}, dimension): lax.broadcasted_iota, the index along
// `dimension` (negative counts from the end); iota<T>(n) is arange<T>(n).
template <class T>
Array<T> iota(std::initializer_list<std::int64_t> shape, std::int64_t dimension,
              detail::Loc loc = detail::Loc::current()) {
  return iota<T>(ConcreteSizes(std::vector<std::int64_t>(shape)), dimension, loc);
}
template <class T>
Array<T> iota(const ConcreteSizes& shape, std::int64_t dimension, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<Array<T>>(detail::iota(dtype_v<T>, shape.shape(), dimension));
}
template <class T>
Tracer<T> iota(const Sizes& shape, std::int64_t dimension, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("iota");
  return detail::from_value<Tracer<T>>(detail::iota(dtype_v<T>, shape.shape(), dimension, true));
}

// arange<T>(n): 0, 1, ..., n - 1 (n an integer, an eager integer rank-0
// array, a Dim or a traced integer scalar).
template <class T>
Array<T> arange(std::int64_t n, detail::Loc loc = detail::Loc::current()) {
  return iota<T>(ConcreteSizes(std::vector<std::int64_t>{n}), 0, loc);
}
template <class T, class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Array<T> arange(const Array<I>& n, detail::Loc loc = detail::Loc::current()) {
  return arange<T>(ConcreteSize(n).value(), loc);
}
template <class T>
Tracer<T> arange(const Dim& n, detail::Loc loc = detail::Loc::current()) {
  return iota<T>(Sizes(Shape{n}), 0, loc);
}
template <class T, class I> requires std::is_integral_v<I> && (!std::is_same_v<I, bool>)
Tracer<T> arange(const Tracer<I>& n, detail::Loc loc = detail::Loc::current()) {
  return iota<T>(Sizes({Size(n)}), 0, loc);
}

// A dimension as an i64[] value (jnp.array(x.shape[0])): a concrete rank-0
// array for an integer, the tracer holding it for a dyn::Dim (while tracing).
inline Array<std::int64_t> dim_value(std::int64_t d) {
  return Array<std::int64_t>(std::vector<std::int64_t>{}, std::vector<std::int64_t>{d});
}
// (Out of line: it builds Params.)
Tracer<std::int64_t> dim_value(const Dim& d, detail::Loc loc = detail::Loc::current());
#ifdef DYNSTAGE_IMPLEMENTATION
Tracer<std::int64_t> dim_value(const Dim& d, detail::Loc loc) {
  detail::OpSite site(loc);
  detail::require_trace("dim_value");
  detail::Value v = detail::dim_to_value(d);
  v.weak = false;
  if (!v.is_tracer())  // a static dimension: staged, as the result is a tracer
    v = detail::bind1(detail::Prim::convert_element_type, {v}, detail::ConvertParams{DType::i64, false}, true);
  return detail::from_value<Tracer<std::int64_t>>(v);
}
#endif

template <ArrayLike X, class V> requires is_scalar_v<V>
auto full_like(const X& x, V value, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  using T = detail::elem_t<X>;
  return detail::from_value<detail::result_of_t<T, X>>(
      detail::full(detail::to_value(x).shape(), detail::to_value(static_cast<T>(value)), dtype_v<T>, is_tracer_v<X>));
}
template <ArrayLike X>
auto zeros_like(const X& x, detail::Loc loc = detail::Loc::current()) {
  return full_like(x, detail::elem_t<X>(0), loc);
}
template <ArrayLike X>
auto ones_like(const X& x, detail::Loc loc = detail::Loc::current()) {
  return full_like(x, detail::elem_t<X>(1), loc);
}

}  // namespace dyn
