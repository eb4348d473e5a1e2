// dynstage: running on several processes (API.md section 16, issue 22).
//
// dyn::distributed::init/rank/size/finalize wrap Open MPI; dyn::Mesh names
// the ranks' axes (rank r is the mesh position r in row-major order) and
// dyn::P says which mesh axes split which array axes (shard_map's specs,
// trace/collectives.hpp). The collective primitives (psum pmax pmin
// all_gather ppermute all_to_all axis_index; ir/prims.hpp) run here: their
// eager kernel is collective_impl, and compiled kernels would call the same
// code through the C entry point dynstage_collective.
//
// mpi.h stays out of every header: the declarations below use no MPI type,
// and the definitions (under DYNSTAGE_IMPLEMENTATION, at the end) are
// compiled once per program in the implementation TU (src/core.cpp or
// src/dynstage.cpp), which is the only file built with MPI's include flags.
// A program that never calls init() runs as one rank without touching MPI
// (MPI_Init is never called; the library is linked but idle): every mesh
// then has one device and every collective is over an axis of size 1, where
// psum is the identity, all_gather adds an axis of size 1, ppermute of
// (0, 0) is the identity and axis_index is 0.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../array/array.hpp"
#include "../errors.hpp"
#include "../ir/prims.hpp"

namespace dyn {

namespace distributed {
// MPI_Init_thread (MPI_THREAD_SERIALIZED: collectives may be called from any
// thread, one at a time, always the thread that runs the shard_map'ed
// function, never the kernels' worker threads) and MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD: a failed MPI call
// or a rank that dies ends the whole job with MPI's message (mpirun reports
// which rank exited) rather than leaving the others blocked. Calling it twice
// is harmless.
void init(int& argc, char**& argv);
void init();
// Whether init() has run (and finalize() not yet).
bool initialized();
// This process's rank in MPI_COMM_WORLD, and the number of ranks; 0 and 1
// before init().
int rank();
int size();
// MPI_Finalize (if init() ran). Every rank calls it once, at the end.
void finalize();
}  // namespace distributed

// A logical grid of the ranks: axis names and sizes whose product is
// distributed::size(). Rank r sits at the row-major position r.
//   dyn::Mesh mesh({"x"}, {dyn::distributed::size()});
//   dyn::Mesh mesh2({"x", "y"}, {2, 2});
class Mesh {
public:
  Mesh(std::vector<std::string> axis_names, std::vector<std::int64_t> shape,
       std::source_location loc = std::source_location::current());
  const std::vector<std::string>& axis_names() const;
  const std::vector<std::int64_t>& shape() const;
  std::int64_t size() const;  // the number of ranks
  std::int64_t axis_size(const std::string& name) const;
  // The registry id collectives find the mesh by (detail::CollectiveParams::mesh).
  int id() const { return id_; }

private:
  int id_ = 0;
};

// A partition spec (jax.sharding.PartitionSpec): entry k names the mesh axes
// that split array axis k (nullptr: not split; P() and missing trailing
// entries: replicated).
//   dyn::P("x")         axis 0 split over mesh axis x
//   dyn::P(nullptr, "x") axis 1 split over x
//   dyn::P()            replicated: every rank holds the whole value
class P {
public:
  P() = default;
  template <class... A>
    requires(sizeof...(A) > 0 &&
             ((std::is_convertible_v<const A&, std::string> || std::is_null_pointer_v<A>) && ...))
  P(const A&... a) : dims_{entry(a)...} {}  // NOLINT: implicit by design
  const std::vector<std::vector<std::string>>& dims() const { return dims_; }
  // "P('x', None)", as JAX prints PartitionSpec.
  std::string str() const;

private:
  template <class A>
  static std::vector<std::string> entry(const A& a) {
    if constexpr (std::is_null_pointer_v<A>) return {};
    else return {std::string(a)};
  }
  std::vector<std::vector<std::string>> dims_;
};

namespace detail {

struct MeshInfo {
  std::vector<std::string> names;
  std::vector<std::int64_t> shape;
};
// Mesh id -> its axes. Id 0 is the one-device mesh ('x',) of every process
// (the primitive table's samples use it).
MeshInfo mesh_info(int id);
// The group of ranks a collective over `axes` of mesh `mesh` spans, seen
// from this rank: its size (the product of the axes' sizes) and this rank's
// index in it (row-major over `axes`, in their order). A name the mesh lacks
// is a NameError naming `op`.
struct AxisGroup {
  std::int64_t size = 1;
  std::int64_t index = 0;
};
AxisGroup axis_group(const char* op, int mesh, const std::vector<std::string>& axes);

// The meshes of the shard_maps being run or traced on this thread, innermost
// last (JAX's axis environment). Collectives look their axis names up here.
std::vector<int>& mesh_stack();
class MeshScope {
public:
  explicit MeshScope(int mesh) { mesh_stack().push_back(mesh); }
  ~MeshScope() { mesh_stack().pop_back(); }
  MeshScope(const MeshScope&) = delete;
  MeshScope& operator=(const MeshScope&) = delete;
};
// The mesh a collective `op` over `axes` binds to: the innermost shard_map's.
// Outside shard_map, or with a name the mesh lacks: NameError.
int bound_mesh(const char* op, const std::vector<std::string>& axes);

// The eager kernel of every collective primitive: the same block shape and
// dtype on every rank of the group is checked first (one small MPI_Allgather
// of a signature; a mismatch is a ShapeError on every rank, raised before any
// data moves, so nothing blocks), then the data moves. Reductions gather the
// blocks and combine them in rank order, so the result is bitwise the
// single-process sum x_0 + x_1 + ... of the blocks on every rank.
std::vector<AnyArray> collective_impl(Prim p, const std::vector<AnyArray>& in, const CollectiveParams& params);

// What a compiled kernel passes dynstage_collective: the primitive, its
// operand's dtype and params, with the mesh by its axis names and shape
// rather than by this process's id (a kernel from the disk cache runs in
// another process). Text, a constant of the kernel; also part of the disk
// cache's key (jit/disk_cache.hpp).
std::string collective_descriptor(Prim p, DType operand, const CollectiveParams& params);
// The error a collective raised in a compiled kernel (the kernel returns
// kKernelCollectiveFailed; backend_impl.hpp rethrows this), on this thread.
std::exception_ptr& collective_pending_error();

}  // namespace detail
}  // namespace dyn

// The entry point compiled kernels call for a collective equation
// (llvm/lower_sort.hpp's emit_collective): `desc` from
// collective_descriptor, the operand at x (rank xrank, dimensions xdims;
// nullptr for axis_index) and the output buffer out of `out_bytes` bytes.
// Returns 0, or 1 after storing the error (a ShapeError when the ranks'
// blocks differ, ...) in collective_pending_error(): no exception crosses
// the kernel's frames.
extern "C" int dynstage_collective(const char* desc, const void* x, std::int64_t xrank, const std::int64_t* xdims,
                                   void* out, std::int64_t out_bytes);

#ifdef DYNSTAGE_IMPLEMENTATION
// MPI's C API only (Open MPI's and MPICH's deprecated C++ bindings would need
// libmpi_cxx).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace dyn {
namespace distributed {

namespace {
bool we_initialized = false;
}

void init(int& argc, char**& argv) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) detail::fail<TypeError>("dyn::distributed::init: MPI was already finalized");
  if (!inited) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    we_initialized = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
void init() {
  int argc = 0;
  char** argv = nullptr;
  init(argc, argv);
}
bool initialized() {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  return inited && !finalized;
}
int rank() {
  if (!initialized()) return 0;
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  if (!initialized()) return 1;
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
void finalize() {
  if (!initialized()) return;
  MPI_Finalize();
  we_initialized = false;
}

}  // namespace distributed

namespace detail {

namespace {

struct MeshRecord {
  MeshInfo info;
  // (axes) -> the sub-communicator of this rank's group over them.
  std::map<std::vector<std::string>, MPI_Comm> comms;
};

struct MeshRegistry {
  std::mutex mu;
  std::vector<std::unique_ptr<MeshRecord>> meshes;
  MeshRegistry() {
    auto m = std::make_unique<MeshRecord>();
    m->info = MeshInfo{{"x"}, {1}};
    meshes.push_back(std::move(m));
  }
};
MeshRegistry& registry() {
  static MeshRegistry r;
  return r;
}

MeshRecord& mesh_record(int id) {
  MeshRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (id < 0 || static_cast<std::size_t>(id) >= r.meshes.size())
    internal_error("distributed: no mesh with id " + std::to_string(id));
  return *r.meshes[static_cast<std::size_t>(id)];
}

std::string names_str(const std::vector<std::string>& names) {
  std::string s = "(";
  for (std::size_t k = 0; k < names.size(); ++k) s += (k ? ", '" : "'") + names[k] + "'";
  return s + (names.size() == 1 ? ",)" : ")");
}

std::string axes_str(const std::vector<std::string>& axes) {
  return axes.size() == 1 ? "'" + axes[0] + "'" : names_str(axes);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}
std::string type_str(DType d, const std::vector<std::int64_t>& shape) {
  std::string s = std::string(dtype_name(d)) + "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? "," : "") + std::to_string(shape[k]);
  return s + "]";
}

std::int64_t prod(const std::vector<std::int64_t>& s, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t k = from; k < to; ++k) n *= s[k];
  return n;
}

}  // namespace

MeshInfo mesh_info(int id) { return mesh_record(id).info; }

std::vector<int>& mesh_stack() {
  thread_local std::vector<int> s;
  return s;
}

int bound_mesh(const char* op, const std::vector<std::string>& axes) {
  if (mesh_stack().empty())
    fail<NameError>(std::string(op) + ": unbound axis name " + axes_str(axes) +
                    ": a collective is only defined inside dyn::shard_map, over its mesh's axes");
  const int id = mesh_stack().back();
  (void)axis_group(op, id, axes);  // the names' check
  return id;
}

AxisGroup axis_group(const char* op, int mesh, const std::vector<std::string>& axes) {
  MeshRecord& m = mesh_record(mesh);
  const MeshInfo& info = m.info;
  std::vector<std::size_t> which;
  for (const std::string& a : axes) {
    const auto it = std::find(info.names.begin(), info.names.end(), a);
    if (it == info.names.end())
      fail<NameError>(std::string(op) + ": unbound axis name '" + a + "': the mesh's axes are " +
                      names_str(info.names));
    const auto k = static_cast<std::size_t>(it - info.names.begin());
    if (std::find(which.begin(), which.end(), k) != which.end())
      fail<NameError>(std::string(op) + ": axis name '" + a + "' is given twice");
    which.push_back(k);
  }
  // This rank's coordinates (row-major over the mesh).
  std::int64_t r = distributed::rank();
  std::vector<std::int64_t> coord(info.shape.size());
  for (std::size_t k = info.shape.size(); k-- > 0;) {
    coord[k] = r % info.shape[k];
    r /= info.shape[k];
  }
  AxisGroup g;
  for (std::size_t k : which) {
    g.index = g.index * info.shape[k] + coord[k];
    g.size *= info.shape[k];
  }
  return g;
}

}  // namespace detail

Mesh::Mesh(std::vector<std::string> axis_names, std::vector<std::int64_t> shape, std::source_location loc) {
  detail::OpSite site(loc);
  if (axis_names.size() != shape.size())
    detail::fail<ShapeError>("dyn::Mesh: " + std::to_string(axis_names.size()) + " axis names for a shape of rank " +
                             std::to_string(shape.size()));
  if (axis_names.empty()) detail::fail<ShapeError>("dyn::Mesh: a mesh needs at least one axis");
  std::int64_t n = 1;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] < 1) detail::fail<ShapeError>("dyn::Mesh: axis '" + axis_names[k] + "' has size " +
                                               std::to_string(shape[k]) + "; sizes are >= 1");
    if (axis_names[k].empty()) detail::fail<NameError>("dyn::Mesh: an axis name is empty");
    for (std::size_t j = 0; j < k; ++j)
      if (axis_names[j] == axis_names[k]) detail::fail<NameError>("dyn::Mesh: axis name '" + axis_names[k] + "' is given twice");
    n *= shape[k];
  }
  if (n != distributed::size())
    detail::fail<ShapeError>("dyn::Mesh: the mesh " + detail::names_str(axis_names) + " of shape " +
                             detail::shape_text(shape) + " has " + std::to_string(n) +
                             " devices, but there are " + std::to_string(distributed::size()) +
                             " ranks (dyn::distributed::size(); run under mpirun -np " + std::to_string(n) + ")");
  auto m = std::make_unique<detail::MeshRecord>();
  m->info = detail::MeshInfo{std::move(axis_names), std::move(shape)};
  detail::MeshRegistry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.meshes.push_back(std::move(m));
  id_ = static_cast<int>(r.meshes.size() - 1);
}

const std::vector<std::string>& Mesh::axis_names() const { return detail::mesh_record(id_).info.names; }
const std::vector<std::int64_t>& Mesh::shape() const { return detail::mesh_record(id_).info.shape; }
std::int64_t Mesh::size() const { return detail::prod(shape(), 0, shape().size()); }
std::int64_t Mesh::axis_size(const std::string& name) const {
  return detail::axis_group("dyn::Mesh::axis_size", id_, {name}).size;
}

std::string P::str() const {
  std::string s = "P(";
  for (std::size_t k = 0; k < dims_.size(); ++k) {
    s += k ? ", " : "";
    if (dims_[k].empty()) s += "None";
    else if (dims_[k].size() == 1) s += "'" + dims_[k][0] + "'";
    else s += detail::names_str(dims_[k]);
  }
  return s + ")";
}

}  // namespace dyn

#endif  // DYNSTAGE_IMPLEMENTATION
