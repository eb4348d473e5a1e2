// dynstage: concrete host arrays.
//
// detail::Storage is the one untyped representation: a shared buffer, a data
// pointer into it, a dtype and a static shape. dyn::Array<T> is a typed
// handle on it and dyn::AnyArray the type-erased one; converting between them
// never copies. Value semantics: copies share the buffer, which is immutable
// while shared; mutable_data() copies first if anyone else holds it. So an
// array captured by a trace or a compiled kernel can never change under it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <ostream>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "../shape/dim.hpp"
#include "dtype.hpp"
#include "../errors.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
#include <limits>
#include <sstream>  // the printer (out of line): users need not parse it
#endif

namespace dyn {

namespace detail {

// The error of checked_numel (out of line: user code only calls it).
[[noreturn]] void numel_error(const std::vector<std::int64_t>& shape, const char* what, bool negative);

inline std::int64_t checked_numel(const std::vector<std::int64_t>& shape, const char* what) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d < 0) numel_error(shape, what, true);
    if (d != 0 && n > (std::int64_t{1} << 48) / d) numel_error(shape, what, false);
    n *= d;
  }
  return n;
}

#ifdef DYNSTAGE_IMPLEMENTATION
void numel_error(const std::vector<std::int64_t>& shape, const char* what, bool negative) {
  if (negative) fail<ShapeError>(std::string(what) + ": negative dimension in shape " + shape_str(to_shape(shape)));
  fail<ShapeError>(std::string(what) + ": shape " + shape_str(to_shape(shape)) + " is too large to allocate");
}
#endif

struct Storage {
  Buffer owner;                    // keeps the buffer alive (empty for views)
  void* data = nullptr;            // first element
  DType dtype = DType::f64;
  std::vector<std::int64_t> shape;
  std::int64_t size = 0;           // number of elements
  bool borrowed = false;           // a view over user memory

  Storage() = default;
  Storage(const Storage&) = default;
  Storage(Storage&&) noexcept = default;
  Storage& operator=(const Storage&) = default;
  Storage& operator=(Storage&&) noexcept = default;
  ~Storage() {
    if (shape.capacity() != 0) recycle_shape(shape);
  }

  // Out of line (DYNSTAGE_IMPLEMENTATION): every Array constructor calls it,
  // and inline it would put the allocator into every user file's code.
  static Storage make(DType dt, std::vector<std::int64_t> shape, bool zero = true);

  // Uninitialised, for a shape whose element count `size` is already checked
  // (a cached kernel's outputs).
  static Storage make_sized(DType dt, std::vector<std::int64_t> shape, std::int64_t size) {
    Storage s;
    s.dtype = dt;
    s.size = size;
    s.shape = std::move(shape);
    BufferAllocation b = allocate_buffer(static_cast<std::size_t>(size) * dtype_size(dt));
    s.owner = std::move(b.owner);
    s.data = b.data;
    return s;
  }

  // The same, in place (the call path's reused output slots; out of line).
  void assign_sized(DType dt, const std::vector<std::int64_t>& shp, std::int64_t n);

  // Copy of the elements into a fresh buffer nobody else holds.
  Storage clone() const {
    Storage s = make(dtype, shape, false);
    if (size) std::memcpy(s.data, data, static_cast<std::size_t>(size) * dtype_size(dtype));
    return s;
  }

  // Copy-on-write: make the buffer exclusively ours.
  void make_unique() {
    if (!data) return;
    if (borrowed) return;  // a view writes through to the memory the user lent
    if (owner.use_count() > 1) *this = clone();
  }
};

#ifdef DYNSTAGE_IMPLEMENTATION
Storage Storage::make(DType dt, std::vector<std::int64_t> shape, bool zero) {
  const std::int64_t size = checked_numel(shape, "array");
  Storage s = make_sized(dt, std::move(shape), size);
  if (zero && size) std::memset(s.data, 0, static_cast<std::size_t>(size) * dtype_size(dt));
  return s;
}
#endif

[[noreturn]] void storage_dtype_error(DType want, DType got);
// Array(shape, values) given the wrong number of values (out of line: user
// code only calls it).
[[noreturn]] void values_count_error(std::size_t given, const std::vector<std::int64_t>& shape, std::int64_t size);

// numpy-style printing of `shape` elements of dtype `dt` at `data` (out of
// line: one copy per program).
void print_array(std::ostream& os, DType dt, const void* data, const std::vector<std::int64_t>& shape);

}  // namespace detail

class AnyArray;
template <class T>
class Tracer;

namespace detail {
template <class U>
inline constexpr bool array_dependent_false = false;
}  // namespace detail

template <class T>
class Array {
  static_assert(is_element_v<T>, "dyn::Array<T>: T must be bool, an 8/16/32/64-bit signed or unsigned std:: integer (std::int8_t ... std::uint64_t), float or double");

public:
  using value_type = T;

  // `a = tracer` must not compile, with a message saying why the parameter is
  // concrete (issue 25, item 5): a loop body or branch of a combinator whose
  // initial values / operands are all concrete is first instantiated with
  // concrete dyn::Arrays, to learn (from its result type) whether it stages;
  // C++ fixes that parameter type before the body runs, so reassigning it with
  // a traced value cannot be accepted.
  template <class U>
  Array& operator=(const Tracer<U>&) {
    static_assert(detail::array_dependent_false<U>,
                  "dyn::Array = dyn::Tracer: a traced value assigned to a concrete array. A loop body or branch "
                  "whose initial values/operands are all concrete receives concrete dyn::Arrays; give the traced "
                  "value a fresh name (`auto b = a + x; return b;`) or make the initial value traced "
                  "(e.g. `dyn::zeros_like(x)` instead of `dyn::zeros<double>({3})`)");
    return *this;
  }

  // Zeros of the given shape; Array() is a rank-0 zero.
  Array() : Array(std::vector<std::int64_t>{}) {}
  explicit Array(std::vector<std::int64_t> shape) : s_(detail::Storage::make(dtype_v<T>, std::move(shape))) {}
  Array(std::initializer_list<std::int64_t> shape) : Array(std::vector<std::int64_t>(shape)) {}
  // Shape and row-major values.
  Array(std::vector<std::int64_t> shape, const std::vector<T>& values)
      : s_(detail::Storage::make(dtype_v<T>, std::move(shape), false)) {
    if (static_cast<std::int64_t>(values.size()) != s_.size)
      detail::values_count_error(values.size(), s_.shape, s_.size);
    std::copy(values.begin(), values.end(), mutable_ptr());
  }
  Array(std::initializer_list<std::int64_t> shape, std::initializer_list<T> values)
      : Array(std::vector<std::int64_t>(shape), std::vector<T>(values)) {}

  static Array scalar(T v) {
    Array a(std::vector<std::int64_t>{});
    a.mutable_ptr()[0] = v;
    return a;
  }

  // Zero-copy borrow of user memory: the caller keeps `ptr` alive and unchanged
  // for as long as the view (or anything that captured it) is in use.
  static Array view(T* ptr, std::vector<std::int64_t> shape) {
    detail::Storage s;
    s.dtype = dtype_v<T>;
    s.size = detail::checked_numel(shape, "dyn::Array::view");
    // A null pointer would only fault later, far from the mistake.
    if (!ptr && s.size > 0)
      detail::fail<TypeError>("dyn::Array::view: a null pointer for shape " +
                              detail::shape_str(detail::to_shape(shape)) + " of " + std::to_string(s.size) +
                              " elements");
    s.shape = std::move(shape);
    s.data = ptr;
    s.borrowed = true;
    return Array(std::move(s));
  }
  static Array view(const T* ptr, std::vector<std::int64_t> shape) { return view(const_cast<T*>(ptr), std::move(shape)); }

  const std::vector<std::int64_t>& shape() const { return s_.shape; }
  std::int64_t shape(int i) const {
    if (i < 0) i += rank();
    if (i < 0 || i >= rank())
      detail::fail<IndexError>("shape(" + std::to_string(i) + ") out of range for rank " + std::to_string(rank()));
    return s_.shape[static_cast<std::size_t>(i)];
  }
  int rank() const { return static_cast<int>(s_.shape.size()); }
  std::int64_t size() const { return s_.size; }
  DType dtype() const { return dtype_v<T>; }
  const T* data() const { return static_cast<const T*>(s_.data); }
  T* mutable_data() {
    s_.make_unique();
    return mutable_ptr();
  }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }

  // x.at(i, j, ...): indexing and functional updates, as on a Tracer
  // (trace/ops_index.hpp; x(i, j) below reads one element).
  template <class... I>
  auto at(const I&... i) const {
    return at_ref(*this, i...);
  }

  // Element access by index (row-major, bounds-checked).
  template <class... I>
  const T& operator()(I... idx) const {
    static_assert((std::is_integral_v<I> && ...), "dyn::Array::operator(): indices must be integers");
    const std::int64_t ix[] = {static_cast<std::int64_t>(idx)..., 0};
    return data()[flat_index(ix, sizeof...(I))];
  }

  // Internal: the untyped storage.
  const detail::Storage& storage() const { return s_; }
  explicit Array(const detail::Storage& s) : s_(s) {
    if (s_.dtype != dtype_v<T>) detail::storage_dtype_error(dtype_v<T>, s_.dtype);
  }
  explicit Array(detail::Storage&& s) : s_(std::move(s)) {
    if (s_.dtype != dtype_v<T>) detail::storage_dtype_error(dtype_v<T>, s_.dtype);
  }

private:
  T* mutable_ptr() { return static_cast<T*>(s_.data); }
  std::int64_t flat_index(const std::int64_t* ix, std::size_t n) const {
    if (static_cast<int>(n) != rank())
      detail::fail<IndexError>("dyn::Array: " + std::to_string(n) + " indices for an array of rank " +
                               std::to_string(rank()));
    std::int64_t flat = 0;
    for (std::size_t k = 0; k < n; ++k) {
      if (ix[k] < 0 || ix[k] >= s_.shape[k])
        detail::fail<IndexError>("dyn::Array: index " + std::to_string(ix[k]) + " is out of bounds for axis " +
                                 std::to_string(k) + " with size " + std::to_string(s_.shape[k]));
      flat = flat * s_.shape[k] + ix[k];
    }
    return flat;
  }
  detail::Storage s_;
};

// Type-erased array: the currency of eval_jaxpr and the kernel call path.
class AnyArray {
public:
  AnyArray() = default;
  template <class T>
  AnyArray(const Array<T>& a) : s_(a.storage()) {}  // NOLINT: implicit by design (API.md §3)
  explicit AnyArray(detail::Storage s) : s_(std::move(s)) {}

  DType dtype() const { return s_.dtype; }
  const std::vector<std::int64_t>& shape() const { return s_.shape; }
  int rank() const { return static_cast<int>(s_.shape.size()); }
  std::int64_t size() const { return s_.size; }
  const void* data() const { return s_.data; }
  bool valid() const { return s_.data != nullptr || s_.owner || s_.borrowed; }

  template <class T>
  Array<T> get() const {
    if (s_.dtype != dtype_v<T>)
      detail::fail<TypeError>("AnyArray::get<" + std::string(dtype_name(dtype_v<T>)) + ">(): the array has dtype " +
                              std::string(dtype_name(s_.dtype)));
    return Array<T>(s_);
  }

  const detail::Storage& storage() const { return s_; }
  detail::Storage& storage() { return s_; }

private:
  detail::Storage s_;
};

// 1-D helper: dyn::array({1.0, 2.0, 3.0}).
template <class T>
Array<T> array(std::initializer_list<T> values) {
  return Array<T>({static_cast<std::int64_t>(values.size())}, std::vector<T>(values));
}
template <class T>
Array<T> array(const std::vector<T>& values) {
  return Array<T>({static_cast<std::int64_t>(values.size())}, values);
}

#ifdef DYNSTAGE_IMPLEMENTATION
namespace detail {

void Storage::assign_sized(DType dt, const std::vector<std::int64_t>& shp, std::int64_t n) {
  dtype = dt;
  size = n;
  assign_shape(shape, shp);
  BufferAllocation b = allocate_buffer(static_cast<std::size_t>(n) * dtype_size(dt));
  owner = std::move(b.owner);
  data = b.data;
  borrowed = false;
}

void values_count_error(std::size_t given, const std::vector<std::int64_t>& shape, std::int64_t size) {
  fail<ShapeError>("dyn::Array: " + std::to_string(given) + " values given for shape " + shape_str(to_shape(shape)) +
                   " of " + std::to_string(size) + " elements");
}

void storage_dtype_error(DType want, DType got) {
  fail<TypeError>(std::string("dyn::Array<") + std::string(dtype_name(want)) + ">: storage has dtype " +
                  std::string(dtype_name(got)));
}

// ---------------------------------------------------------------------------
// Printing, numpy style: [1. 2. 3.], [[1 2]\n [3 4]], True/False.

template <class T>
std::string format_element(T v) {
  if constexpr (is_complex_v<T>) {
    // numpy's 1.+2.j: the parts as real elements, the imaginary one signed
    std::string im = format_element(v.imag());
    if (im.front() != '-') im = "+" + im;
    return format_element(v.real()) + im + "j";
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os.precision(std::is_same_v<T, float> ? 7 : 8);
    os << v;
    std::string s = os.str();
    if (s.find_first_of(".e") == std::string::npos) s += ".";
    return s;
  }
}

template <class T>
void print_elements(std::ostream& os, const T* p, const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<std::string> items;
  items.reserve(static_cast<std::size_t>(n));
  std::size_t width = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    items.push_back(format_element(p[i]));
    width = std::max(width, items.back().size());
  }
  if constexpr (std::is_floating_point_v<T>) {
    // numpy aligns the decimal points: integer parts right-aligned, fractions
    // left-aligned ("[1.5 2.  3. ]"); nan and inf stay right-aligned.
    bool positional = true;
    std::size_t left = 0, right = 0;
    for (const auto& s : items) {
      if (s.find('e') != std::string::npos) positional = false;
      std::size_t dot = s.find('.');
      if (dot == std::string::npos) continue;
      left = std::max(left, dot);
      right = std::max(right, s.size() - dot - 1);
    }
    if (positional) {
      for (auto& s : items) {
        std::size_t dot = s.find('.');
        if (dot == std::string::npos) continue;
        s = std::string(left - dot, ' ') + s + std::string(right - (s.size() - dot - 1), ' ');
        width = std::max(width, s.size());
      }
    }
  }
  if (shape.empty()) {
    os << items[0];
    return;
  }
  // Recursive numpy layout with right-aligned, equal-width items.
  std::size_t pos = 0;
  auto rec = [&](auto& self, std::size_t axis, int indent) -> void {
    os << '[';
    std::int64_t len = shape[axis];
    for (std::int64_t i = 0; i < len; ++i) {
      if (axis + 1 == shape.size()) {
        if (i) os << ' ';
        const std::string& s = items[pos++];
        os << std::string(width - s.size(), ' ') << s;
      } else {
        if (i) {
          os << std::string(shape.size() - axis - 1, '\n') << std::string(static_cast<std::size_t>(indent + 1), ' ');
        }
        self(self, axis + 1, indent + 1);
      }
    }
    os << ']';
  };
  rec(rec, 0, 0);
}

void print_array(std::ostream& os, DType dt, const void* data, const std::vector<std::int64_t>& shape) {
  visit_dtype(dt, [&](auto t) {
    using T = decltype(t);
    print_elements(os, static_cast<const T*>(data), shape);
  });
}

}  // namespace detail
#endif  // DYNSTAGE_IMPLEMENTATION

template <class T>
std::ostream& operator<<(std::ostream& os, const Array<T>& a) {
  detail::print_array(os, dtype_v<T>, a.data(), a.shape());
  return os;
}

inline std::ostream& operator<<(std::ostream& os, const AnyArray& a) {
  detail::print_array(os, a.dtype(), a.data(), a.shape());
  return os;
}

// ---------------------------------------------------------------------------
// Comparison helpers for tests and users.

template <class T, class U>
bool array_equal(const Array<T>& a, const Array<U>& b) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i)
    if (!(a.data()[i] == b.data()[i])) return false;
  return true;
}

// numpy.allclose: |a - b| <= atol + rtol * |b|, NaNs equal only with equal_nan.
template <class T, class U>
bool allclose(const Array<T>& a, const Array<U>& b, double rtol = 1e-7, double atol = 0.0, bool equal_nan = false) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    if constexpr (is_complex_v<T> || is_complex_v<U>) {
      // complex: numpy's rule with the complex modulus; a NaN part is NaN
      const std::complex<double> x(a.data()[i]), y(b.data()[i]);
      const bool xn = std::isnan(x.real()) || std::isnan(x.imag()), yn = std::isnan(y.real()) || std::isnan(y.imag());
      if (xn || yn) {
        if (equal_nan && xn && yn) continue;
        return false;
      }
      if (x == y) continue;
      if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
      continue;
    } else {
    double x = static_cast<double>(a.data()[i]), y = static_cast<double>(b.data()[i]);
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue;  // also equal infinities
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) return false;
    }
  }
  return true;
}

inline bool array_equal(const AnyArray& a, const AnyArray& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return array_equal(a.get<T>(), b.get<T>());
  });
}

inline bool allclose(const AnyArray& a, const AnyArray& b, double rtol = 1e-7, double atol = 0.0) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return visit_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    return allclose(a.get<T>(), b.get<T>(), rtol, atol);
  });
}

}  // namespace dyn
