// dynstage: shard_map and the collectives (API.md section 16, issue 22).
//
// dyn::shard_map(f, mesh, in_specs, out_specs) runs f on each rank's block:
// every rank calls the returned function with its own blocks (the pieces of
// the global arrays the in_specs describe), f sees them and returns this
// rank's blocks of the outputs. Inside f the collectives name the mesh's
// axes: psum/pmax/pmin (every rank gets the reduction of the group's
// blocks), all_gather, ppermute, all_to_all, axis_index. Each is a primitive
// (ir/prims.hpp, Kind::collective): traced, it is an equation of the jaxpr
// with its axis names as parameters, printed as JAX prints it; eagerly (and
// in eval_jaxpr) it moves data between the ranks through MPI
// (runtime/distributed.hpp).
//
// Outside shard_map a collective is a dyn::NameError ("unbound axis name"),
// as in JAX; so is a name the mesh does not have.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "../runtime/distributed.hpp"
#include "ops.hpp"
#include "ops_shape.hpp"

namespace dyn {

// One axis name or several ({"x", "y"}: the group spans both, row-major).
struct AxisNames {
  std::vector<std::string> names;
  AxisNames(const char* n) : names{n} {}                                // NOLINT: implicit by design
  AxisNames(std::string n) : names{std::move(n)} {}                     // NOLINT
  AxisNames(std::initializer_list<std::string> ns) : names(ns) {}       // NOLINT
  AxisNames(std::vector<std::string> ns) : names(std::move(ns)) {}      // NOLINT
};

namespace detail {

// Binds collective `p` over `axes` of the innermost shard_map's mesh
// (NameError outside shard_map or for a name the mesh lacks).
Value collective(Prim p, const std::vector<Value>& in, CollectiveParams params);

#ifdef DYNSTAGE_IMPLEMENTATION
Value collective(Prim p, const std::vector<Value>& in, CollectiveParams params) {
  const char* op = prim_name(p).data();
  params.mesh = bound_mesh(op, params.axes);
  params.axis_size = axis_group(op, params.mesh, params.axes).size;
  // Staged whenever a trace is active, even on concrete operands: a
  // collective in a jitted function communicates at every call.
  return bind1(p, in, params, /*stage=*/true);
}
#endif

inline CollectiveParams collective_params(CollectiveForm form, const AxisNames& a) {
  CollectiveParams c;
  c.form = form;
  c.axes = a.names;
  return c;
}

}  // namespace detail

// psum(x, "x") (lax.psum): on every rank of the group, the sum of the
// group's blocks, added in rank order (bitwise the sum a single process
// computes block by block). pmax, pmin: the elementwise max/min.
template <ArrayLike X>
auto psum(const X& x, const AxisNames& axis_name, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::collective(
      detail::Prim::psum, {detail::to_value(x)}, detail::collective_params(detail::CollectiveForm::reduce, axis_name)));
}
template <ArrayLike X>
auto pmax(const X& x, const AxisNames& axis_name, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::collective(
      detail::Prim::pmax, {detail::to_value(x)}, detail::collective_params(detail::CollectiveForm::reduce, axis_name)));
}
template <ArrayLike X>
auto pmin(const X& x, const AxisNames& axis_name, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(detail::collective(
      detail::Prim::pmin, {detail::to_value(x)}, detail::collective_params(detail::CollectiveForm::reduce, axis_name)));
}

// all_gather(x, "x", axis = 0, tiled = false) (lax.all_gather): the group's
// blocks in rank order, stacked on a new axis `axis` (tiled: concatenated
// along axis `axis`).
template <ArrayLike X>
auto all_gather(const X& x, const AxisNames& axis_name, std::int64_t axis = 0, bool tiled = false,
                detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::CollectiveParams c = detail::collective_params(detail::CollectiveForm::gather, axis_name);
  const detail::Value v = detail::to_value(x);
  c.dimension = detail::normalize_axis("all_gather", axis, tiled ? v.rank() : v.rank() + 1);
  c.tiled = tiled;
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::collective(detail::Prim::all_gather, {v}, c));
}

// ppermute(x, "x", {{0, 1}, {1, 0}}) (lax.ppermute): rank `source` sends its
// block to rank `destination` of the group; a rank nobody sends to gets
// zeros.
template <ArrayLike X>
auto ppermute(const X& x, const AxisNames& axis_name, std::vector<std::pair<std::int64_t, std::int64_t>> perm,
              detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::CollectiveParams c = detail::collective_params(detail::CollectiveForm::permute, axis_name);
  c.perm = std::move(perm);
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::collective(detail::Prim::ppermute, {detail::to_value(x)}, c));
}

// all_to_all(x, "x", split_axis, concat_axis, tiled = false)
// (lax.all_to_all): chunk k of x along split_axis goes to rank k; the chunks
// received are stacked on a new axis concat_axis, the split axis (of the
// group's size) dropped (tiled: split_axis divided by the group's size,
// concat_axis multiplied by it).
template <ArrayLike X>
auto all_to_all(const X& x, const AxisNames& axis_name, std::int64_t split_axis, std::int64_t concat_axis,
                bool tiled = false, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::CollectiveParams c = detail::collective_params(detail::CollectiveForm::to_all, axis_name);
  const detail::Value v = detail::to_value(x);
  c.dimension = detail::normalize_axis("all_to_all", split_axis, v.rank());
  c.concat_axis = detail::normalize_axis("all_to_all", concat_axis, v.rank());
  c.tiled = tiled;
  return detail::from_value<detail::result_of_t<detail::elem_t<X>, X>>(
      detail::collective(detail::Prim::all_to_all, {v}, c));
}

// axis_index("x") (lax.axis_index): this rank's i32 index along the axis, a
// Tracer: inside shard_map's f, staged or eager (an eager shard_map traces f
// and runs the jaxpr, transform/shard_map_eager.hpp).
// axis_index("x", like): the same, an Array when `like` is one (code that
// runs on arrays outside a trace), a Tracer when it is a Tracer.
inline Tracer<std::int32_t> axis_index(const AxisNames& axis_name, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::require_trace("axis_index");
  return detail::from_value<Tracer<std::int32_t>>(detail::collective(
      detail::Prim::axis_index, {}, detail::collective_params(detail::CollectiveForm::index, axis_name)));
}
template <ArrayLike X>
auto axis_index(const AxisNames& axis_name, const X&, detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  return detail::from_value<detail::result_of_t<std::int32_t, X>>(detail::collective(
      detail::Prim::axis_index, {}, detail::collective_params(detail::CollectiveForm::index, axis_name)));
}

namespace detail {
// f(args...) on tracers; traced once and run eagerly on arrays.
template <class F, class... A>
auto shard_map_call(const F& f, const A&... args);  // transform/shard_map_eager.hpp
// The specs name the mesh's axes, no more entries than the value's rank.
void check_specs(const char* which, const Mesh& mesh, const std::vector<P>& specs);
void check_spec_rank(const P& spec, std::size_t k, std::int64_t rank);

#ifdef DYNSTAGE_IMPLEMENTATION
void check_specs(const char* which, const Mesh& mesh, const std::vector<P>& specs) {
  for (const P& s : specs)
    for (const auto& names : s.dims())
      for (const std::string& n : names) {
        const auto& axes = mesh.axis_names();
        if (std::find(axes.begin(), axes.end(), n) == axes.end())
          fail<NameError>(std::string("shard_map: ") + which + " " + s.str() + " names axis '" + n +
                          "', which the mesh does not have");
      }
}
void check_spec_rank(const P& spec, std::size_t k, std::int64_t rank) {
  if (static_cast<std::int64_t>(spec.dims().size()) > rank)
    fail<ShapeError>("shard_map: in_specs[" + std::to_string(k) + "] " + spec.str() + " has " +
                     std::to_string(spec.dims().size()) + " entries for an argument of rank " + std::to_string(rank));
}
#endif
}  // namespace detail

// shard_map(f, mesh, in_specs, out_specs) (jax.shard_map): the function
// every rank calls with its blocks; inside f, collectives over the mesh's
// axes. One spec per argument; out_specs one P (f returns one value) or one
// per output. The specs describe how the global arrays are split (API.md
// section 16); each rank passes and gets its own block, whose shape may
// differ between ranks only where no collective needs them equal.
template <class F>
auto shard_map(F f, const Mesh& mesh, std::vector<P> in_specs, std::vector<P> out_specs,
               detail::Loc loc = detail::Loc::current()) {
  detail::OpSite site(loc);
  detail::check_specs("in_specs", mesh, in_specs);
  detail::check_specs("out_specs", mesh, out_specs);
  return [f = std::move(f), id = mesh.id(), in_specs = std::move(in_specs)](const auto&... args) {
    if (sizeof...(args) != in_specs.size())
      detail::fail<TypeError>("shard_map: " + std::to_string(in_specs.size()) + " in_specs for " +
                              std::to_string(sizeof...(args)) + " arguments");
    std::size_t k = 0;
    (
        [&](const auto& a) {
          using A = std::remove_cvref_t<decltype(a)>;
          if constexpr (ArrayLike<A>) detail::check_spec_rank(in_specs[k], k, detail::to_value(a).rank());
          ++k;
        }(args),
        ...);
    detail::MeshScope scope(id);
    return detail::shard_map_call(f, args...);  // transform/shard_map_eager.hpp
  };
}
template <class F>
auto shard_map(F f, const Mesh& mesh, std::vector<P> in_specs, P out_spec, detail::Loc loc = detail::Loc::current()) {
  return shard_map(std::move(f), mesh, std::move(in_specs), std::vector<P>{std::move(out_spec)}, loc);
}

}  // namespace dyn
