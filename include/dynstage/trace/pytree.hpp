// dynstage: pytrees — nested arguments and results, flattened at the boundary.
//
// Leaves are dyn::Array<T>, dyn::Tracer<T> and C++ arithmetic scalars.
// Containers are std::tuple, std::pair, std::array, std::vector (its length is
// part of the structure) and Boost.Hana structs. A Hana struct is rebuilt with
// other leaf types, so it must be a template over its leaf types:
//
//   template <class A> struct Layer { BOOST_HANA_DEFINE_STRUCT(Layer, (A, w), (A, b)); };
//
// traced_t<X> is the structure with tracers for leaves (what the traced
// function receives); concrete_t<X> the structure with arrays (what a staged
// function returns; pairs become tuples, as API.md §3 says). Hana is used
// here and nowhere else.
#pragma once

#include <array>
// Only the parts of Boost.Hana that pytrees use (<boost/hana.hpp> costs every
// user file twice as much to parse): the Struct concept, keys/at_key/for_each,
// and the two macros users define pytree structs with (API.md §3).
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/at_key.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/keys.hpp>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tracer.hpp"

namespace dyn::detail {

namespace hana = boost::hana;

template <class X> struct is_std_tuple : std::false_type {};
template <class... X> struct is_std_tuple<std::tuple<X...>> : std::true_type {};
template <class X> struct is_std_pair : std::false_type {};
template <class A, class B> struct is_std_pair<std::pair<A, B>> : std::true_type {};
template <class X> struct is_std_array : std::false_type {};
template <class X, std::size_t N> struct is_std_array<std::array<X, N>> : std::true_type {};
template <class X> struct is_std_vector : std::false_type {};
template <class X, class A> struct is_std_vector<std::vector<X, A>> : std::true_type {};

template <class X>
inline constexpr bool is_hana_struct_v = hana::Struct<X>::value;

template <class X>
inline constexpr bool is_leaf_v = is_tracer_v<X> || is_array_v<X> || is_scalar_v<X>;

// Rebuild a leaf-templated Hana struct S<A...> with leaves mapped by M.
template <template <class> class M, class X> struct rebind_struct {
  static_assert(is_hana_struct_v<X>, "dynstage pytree: unsupported argument or result type (leaves are "
                                     "dyn::Array, dyn::Tracer and C++ scalars; containers are tuple, pair, "
                                     "array, vector and Boost.Hana structs templated on their leaf types)");
};
template <template <class> class M, template <class...> class S, class... A>
struct rebind_struct<M, S<A...>> {
  using type = S<typename M<A>::type...>;
};

template <class X> struct traced;
template <class X> using traced_t = typename traced<std::remove_cvref_t<X>>::type;
template <class X> struct traced {
  using type = typename rebind_struct<traced, X>::type;
};
template <class T> struct traced<Array<T>> { using type = Tracer<T>; };
template <class T> struct traced<Tracer<T>> { using type = Tracer<T>; };
template <class X> requires is_scalar_v<X> struct traced<X> { using type = Tracer<scalar_element_t<X>>; };
template <class... X> struct traced<std::tuple<X...>> { using type = std::tuple<traced_t<X>...>; };
template <class A, class B> struct traced<std::pair<A, B>> { using type = std::pair<traced_t<A>, traced_t<B>>; };
template <class X, std::size_t N> struct traced<std::array<X, N>> { using type = std::array<traced_t<X>, N>; };
template <class X, class Al> struct traced<std::vector<X, Al>> { using type = std::vector<traced_t<X>>; };

template <class X> struct concrete;
template <class X> using concrete_t = typename concrete<std::remove_cvref_t<X>>::type;
template <class X> struct concrete {
  using type = typename rebind_struct<concrete, X>::type;
};
template <class T> struct concrete<Array<T>> { using type = Array<T>; };
template <class T> struct concrete<Tracer<T>> { using type = Array<T>; };
template <class X> requires is_scalar_v<X> struct concrete<X> { using type = Array<scalar_element_t<X>>; };
template <class... X> struct concrete<std::tuple<X...>> { using type = std::tuple<concrete_t<X>...>; };
template <class A, class B> struct concrete<std::pair<A, B>> { using type = std::tuple<concrete_t<A>, concrete_t<B>>; };
template <class X, std::size_t N> struct concrete<std::array<X, N>> { using type = std::array<concrete_t<X>, N>; };
template <class X, class Al> struct concrete<std::vector<X, Al>> { using type = std::vector<concrete_t<X>>; };

// lifted_t<X>: the structure with C++ scalar leaves (std::complex ones
// included: a leaf, not a template to rebind) turned into rank-0 arrays
// of their exact type, everything else kept (pairs stay pairs). It is what an
// eager call passes to the function, so that eager sees what a trace sees: a
// `double` argument is an f64[] value in both, not a weak literal.
template <class X> struct lifted;
template <class X> using lifted_t = typename lifted<std::remove_cvref_t<X>>::type;
template <class X> struct lifted {
  using type = typename rebind_struct<lifted, X>::type;
};
template <class T> struct lifted<Array<T>> { using type = Array<T>; };
template <class T> struct lifted<Tracer<T>> { using type = Tracer<T>; };
template <class X> requires is_scalar_v<X> struct lifted<X> { using type = Array<scalar_element_t<X>>; };
template <class... X> struct lifted<std::tuple<X...>> { using type = std::tuple<lifted_t<X>...>; };
template <class A, class B> struct lifted<std::pair<A, B>> { using type = std::pair<lifted_t<A>, lifted_t<B>>; };
template <class X, std::size_t N> struct lifted<std::array<X, N>> { using type = std::array<lifted_t<X>, N>; };
template <class X, class Al> struct lifted<std::vector<X, Al>> { using type = std::vector<lifted_t<X>>; };

// Visit the leaves of `x` in order (depth first, left to right).
template <class X, class F>
void for_each_leaf(const X& x, F&& f) {
  using U = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<U>) {
    f(x);
  } else if constexpr (is_std_tuple<U>::value || is_std_pair<U>::value) {
    std::apply([&](const auto&... e) { (for_each_leaf(e, f), ...); }, x);
  } else if constexpr (is_std_array<U>::value || is_std_vector<U>::value) {
    for (const auto& e : x) for_each_leaf(e, f);
  } else {
    static_assert(is_hana_struct_v<U>, "dynstage pytree: unsupported type");
    hana::for_each(hana::keys(x), [&](auto key) { for_each_leaf(hana::at_key(x, key), f); });
  }
}

// The run-time part of a structure: the lengths of its vectors, in visit order.
struct TreeDef {
  std::vector<std::size_t> vector_sizes;
  std::size_t num_leaves = 0;
  friend bool operator==(const TreeDef&, const TreeDef&) = default;
};

template <class X>
void collect_treedef(const X& x, TreeDef& def) {
  using U = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<U>) {
    ++def.num_leaves;
  } else if constexpr (is_std_tuple<U>::value || is_std_pair<U>::value) {
    std::apply([&](const auto&... e) { (collect_treedef(e, def), ...); }, x);
  } else if constexpr (is_std_array<U>::value) {
    for (const auto& e : x) collect_treedef(e, def);
  } else if constexpr (is_std_vector<U>::value) {
    def.vector_sizes.push_back(x.size());
    for (const auto& e : x) collect_treedef(e, def);
  } else {
    hana::for_each(hana::keys(x), [&](auto key) { collect_treedef(hana::at_key(x, key), def); });
  }
}

template <class X>
TreeDef treedef_of(const X& x) {
  TreeDef d;
  collect_treedef(x, d);
  return d;
}

// Build a structure of type Out whose leaves come from `make_leaf.template
// operator()<LeafType>()`, in visit order, with vector lengths from `def`.
template <class Out, class F>
Out build_tree(const TreeDef& def, std::size_t& vec_pos, F& make_leaf) {
  if constexpr (is_leaf_v<Out>) {
    return make_leaf.template operator()<Out>();
  } else if constexpr (is_std_tuple<Out>::value || is_std_pair<Out>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      // Braced initialisation evaluates left to right.
      return Out{build_tree<std::tuple_element_t<I, Out>>(def, vec_pos, make_leaf)...};
    }(std::make_index_sequence<std::tuple_size_v<Out>>{});
  } else if constexpr (is_std_array<Out>::value) {
    Out r;
    for (auto& e : r) e = build_tree<typename Out::value_type>(def, vec_pos, make_leaf);
    return r;
  } else if constexpr (is_std_vector<Out>::value) {
    if (vec_pos >= def.vector_sizes.size()) internal_error("build_tree: treedef has too few vectors");
    std::size_t n = def.vector_sizes[vec_pos++];
    Out r;
    r.reserve(n);
    for (std::size_t i = 0; i < n; ++i) r.push_back(build_tree<typename Out::value_type>(def, vec_pos, make_leaf));
    return r;
  } else {
    Out r{};
    hana::for_each(hana::keys(r), [&](auto key) {
      auto& dst = hana::at_key(r, key);
      dst = build_tree<std::remove_cvref_t<decltype(dst)>>(def, vec_pos, make_leaf);
    });
    return r;
  }
}

template <class Out, class F>
Out unflatten(const TreeDef& def, F&& make_leaf) {
  std::size_t vec_pos = 0;
  return build_tree<Out>(def, vec_pos, make_leaf);
}

// A leaf as a bind operand.
template <class L>
Value leaf_value(const L& leaf) {
  return to_value(leaf);
}

// The abstract value of an array of dtype `dt` and shape `shape` (out of
// line: one copy for every array type).
Aval array_aval(DType dt, const std::vector<std::int64_t>& shape);
#ifdef DYNSTAGE_IMPLEMENTATION
Aval array_aval(DType dt, const std::vector<std::int64_t>& shape) {
  return Aval{dt, to_shape(shape), false, std::nullopt};
}
#endif

// A leaf of an argument as an abstract value (for tracing and signatures).
template <class L>
Aval leaf_aval(const L& leaf) {
  using U = std::remove_cvref_t<L>;
  if constexpr (is_array_v<U>) return array_aval(leaf.dtype(), leaf.shape());
  else if constexpr (is_tracer_v<U>) return leaf.value().aval();
  else return Aval{dtype_v<scalar_element_t<U>>, {}, false, std::nullopt};
}

// A leaf of an argument as a concrete array (scalars become rank-0 arrays of
// their exact C++ type: a `double` argument is f64, not weak).
template <class L>
AnyArray leaf_array(const L& leaf) {
  using U = std::remove_cvref_t<L>;
  if constexpr (is_array_v<U>) return AnyArray(leaf);
  else if constexpr (is_tracer_v<U>) {
    fail<TypeError>("a dyn::Tracer was passed where a concrete argument is needed");
  } else {
    using E = scalar_element_t<U>;
    return AnyArray(Array<E>::scalar(static_cast<E>(leaf)));
  }
}

}  // namespace dyn::detail

namespace dyn::detail {

// An argument with its C++ scalar leaves lifted to rank-0 arrays.
template <class X>
lifted_t<X> lift_scalars(const X& x) {
  using U = std::remove_cvref_t<X>;
  if constexpr (std::is_same_v<lifted_t<U>, U>) {
    return x;
  } else {
    std::vector<AnyArray> leaves;
    for_each_leaf(x, [&](const auto& leaf) {
      using L = std::remove_cvref_t<decltype(leaf)>;
      if constexpr (is_tracer_v<L>) fail<TypeError>("lift_scalars: unexpected tracer");
      else leaves.push_back(leaf_array(leaf));
    });
    std::size_t k = 0;
    auto make_leaf = [&]<class L>() -> L { return leaves[k++].template get<typename L::value_type>(); };
    return unflatten<lifted_t<U>>(treedef_of(x), make_leaf);
  }
}

}  // namespace dyn::detail
