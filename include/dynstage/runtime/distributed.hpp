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
// MPI_Init_thread (MPI_THREAD_FUNNELED: only the thread that calls dynstage
// talks to MPI) and MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD: a failed MPI call
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
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
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

namespace {

// The sub-communicator of this rank's group over `axes` (created on first
// use, by every rank at the same collective: MPI_Comm_split is collective
// over MPI_COMM_WORLD).
MPI_Comm group_comm(int mesh, const std::vector<std::string>& axes) {
  MeshRecord& m = mesh_record(mesh);
  if (auto it = m.comms.find(axes); it != m.comms.end()) return it->second;
  const MeshInfo& info = m.info;
  std::int64_t r = distributed::rank();
  std::vector<std::int64_t> coord(info.shape.size());
  for (std::size_t k = info.shape.size(); k-- > 0;) {
    coord[k] = r % info.shape[k];
    r /= info.shape[k];
  }
  std::int64_t color = 0;
  for (std::size_t k = 0; k < info.shape.size(); ++k)
    if (std::find(axes.begin(), axes.end(), info.names[k]) == axes.end()) color = color * info.shape[k] + coord[k];
  const AxisGroup g = axis_group("collective", mesh, axes);
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color), static_cast<int>(g.index), &c);
  m.comms.emplace(axes, c);
  return c;
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

// What every rank of a group must agree on before data moves.
struct CollectiveSignature {
  std::int32_t prim = 0;
  std::int32_t dtype = 0;
  std::int32_t rank = 0;
  std::int32_t pad = 0;
  std::int64_t dims[8] = {};
};

void check_signatures(Prim p, const CollectiveParams& params, MPI_Comm comm, std::int64_t gsize, const AnyArray& x) {
  CollectiveSignature mine;
  mine.prim = static_cast<std::int32_t>(p);
  mine.dtype = static_cast<std::int32_t>(x.dtype());
  mine.rank = x.rank();
  for (int k = 0; k < x.rank() && k < 8; ++k) mine.dims[k] = x.shape()[static_cast<std::size_t>(k)];
  std::vector<CollectiveSignature> all(static_cast<std::size_t>(gsize));
  MPI_Allgather(&mine, sizeof(CollectiveSignature), MPI_BYTE, all.data(), sizeof(CollectiveSignature), MPI_BYTE, comm);
  bool same = true;
  for (const CollectiveSignature& s : all) same = same && std::memcmp(&s, &all[0], sizeof(CollectiveSignature)) == 0;
  if (same) return;
  std::string list;
  for (std::size_t k = 0; k < all.size(); ++k) {
    std::vector<std::int64_t> shape(all[k].dims, all[k].dims + std::min(all[k].rank, 8));
    list += (k ? ", " : "") + std::string("index ") + std::to_string(k) + ": " +
            (all[k].prim != mine.prim ? std::string(prim_name(static_cast<Prim>(all[k].prim))) + " of " : "") +
            type_str(static_cast<DType>(all[k].dtype), shape);
  }
  fail<ShapeError>(std::string(prim_name(p)) + " over " + axes_str(params.axes) +
                   ": the ranks' blocks differ (" + list +
                   "); a collective needs one block shape and dtype on every rank of its group");
}

// out viewed as [outer, G, inner bytes] <- G blocks of [outer, inner bytes].
void interleave(char* out, const char* blocks, std::int64_t g, std::int64_t outer, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < g; ++k)
      std::memcpy(out + (o * g + k) * inner, blocks + (k * outer + o) * inner, static_cast<std::size_t>(inner));
}

std::int64_t prod(const std::vector<std::int64_t>& s, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t k = from; k < to; ++k) n *= s[k];
  return n;
}

template <class T>
T combine(Prim p, T a, T b) {
  if (p == Prim::psum) return static_cast<T>(a + b);
  if (p == Prim::pmax) return a < b || a != a ? (a != a ? a : b) : a;  // NaN wins, as lax.max
  return b < a || a != a ? (a != a ? a : b) : a;
}

}  // namespace

std::vector<AnyArray> collective_impl(Prim p, const std::vector<AnyArray>& in, const CollectiveParams& params) {
  const char* op = prim_name(p).data();
  const AxisGroup g = axis_group(op, params.mesh, params.axes);
  if (g.size != params.axis_size)
    internal_error(std::string(op) + ": the mesh's group size " + std::to_string(g.size) +
                   " is not the bound axis_size " + std::to_string(params.axis_size));
  if (p == Prim::axis_index) return {AnyArray(Array<std::int32_t>::scalar(static_cast<std::int32_t>(g.index)))};
  const AnyArray& x = in.at(0);
  const DType dt = x.dtype();
  const auto es = static_cast<std::int64_t>(dtype_size(dt));
  const std::int64_t n = x.size();
  MPI_Comm comm = MPI_COMM_NULL;
  if (g.size > 1) {
    if (!distributed::initialized()) internal_error("distributed: a group of several ranks without MPI");
    comm = group_comm(params.mesh, params.axes);
    check_signatures(p, params, comm, g.size, x);
  }
  // Every rank's block, in group order (one block when alone).
  auto gather_all = [&]() {
    std::vector<char> all(static_cast<std::size_t>(n * es * g.size));
    if (g.size == 1) std::memcpy(all.data(), x.data(), static_cast<std::size_t>(n * es));
    else
      MPI_Allgather(x.data(), static_cast<int>(n * es), MPI_BYTE, all.data(), static_cast<int>(n * es), MPI_BYTE,
                    comm);
    return all;
  };
  switch (p) {
    case Prim::psum:
    case Prim::pmax:
    case Prim::pmin: {
      const std::vector<char> all = gather_all();
      detail::Storage out = detail::Storage::make(dt, x.shape(), false);
      visit_dtype(dt, [&](auto t) {
        using T = decltype(t);
        if constexpr (!std::is_same_v<T, bool>) {
          auto* o = static_cast<T*>(out.data);
          const auto* b = reinterpret_cast<const T*>(all.data());
          std::copy(b, b + n, o);
          for (std::int64_t k = 1; k < g.size; ++k)
            for (std::int64_t i = 0; i < n; ++i) o[i] = combine<T>(p, o[i], b[k * n + i]);
        }
      });
      return {AnyArray(out)};
    }
    case Prim::all_gather: {
      const std::vector<char> all = gather_all();
      std::vector<std::int64_t> shape = x.shape();
      const auto d = static_cast<std::size_t>(params.dimension);
      const std::int64_t outer = prod(shape, 0, d), inner = prod(shape, d, shape.size()) * es;
      if (params.tiled) shape[d] *= g.size;
      else shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), g.size);
      detail::Storage out = detail::Storage::make(dt, shape, false);
      interleave(static_cast<char*>(out.data), all.data(), g.size, outer, inner);
      return {AnyArray(out)};
    }
    case Prim::ppermute: {
      detail::Storage out = detail::Storage::make(dt, x.shape(), true);  // zeros where nothing arrives
      std::int64_t to = -1, from = -1;
      for (const auto& [s, t] : params.perm) {
        if (s == g.index) to = t;
        if (t == g.index) from = s;
      }
      if (g.size == 1) {
        if (from == 0) std::memcpy(out.data, x.data(), static_cast<std::size_t>(n * es));
        return {AnyArray(out)};
      }
      std::vector<MPI_Request> reqs;
      // Messages over 2 GiB would need chunking; a block that size is refused.
      if (n * es > INT32_MAX) fail<ShapeError>(std::string(op) + ": a block of more than 2 GiB");
      if (from >= 0) {
        reqs.emplace_back();
        MPI_Irecv(out.data, static_cast<int>(n * es), MPI_BYTE, static_cast<int>(from), 7, comm, &reqs.back());
      }
      if (to >= 0) {
        reqs.emplace_back();
        MPI_Isend(x.data(), static_cast<int>(n * es), MPI_BYTE, static_cast<int>(to), 7, comm, &reqs.back());
      }
      MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
      return {AnyArray(out)};
    }
    case Prim::all_to_all: {
      const std::vector<std::int64_t>& shape = x.shape();
      const auto s = static_cast<std::size_t>(params.dimension);
      const auto c = static_cast<std::size_t>(params.concat_axis);
      const std::int64_t chunk = shape[s] / g.size;  // the shape rule checked divisibility
      // Pack: chunk k (rows [k*chunk, (k+1)*chunk) of the split axis) contiguous.
      const std::int64_t outer = prod(shape, 0, s), inner = prod(shape, s + 1, shape.size()) * es;
      const std::int64_t cbytes = outer * chunk * inner;
      std::vector<char> send(static_cast<std::size_t>(cbytes * g.size)), recv(send.size());
      const char* src = static_cast<const char*>(x.data());
      for (std::int64_t k = 0; k < g.size; ++k)
        for (std::int64_t o = 0; o < outer; ++o)
          std::memcpy(send.data() + k * cbytes + o * chunk * inner, src + (o * shape[s] + k * chunk) * inner,
                      static_cast<std::size_t>(chunk * inner));
      if (g.size == 1) recv = send;
      else
        MPI_Alltoall(send.data(), static_cast<int>(cbytes), MPI_BYTE, recv.data(), static_cast<int>(cbytes), MPI_BYTE,
                     comm);
      // Received chunk k has x's shape with the split axis `chunk` long;
      // they are concatenated along the concat axis (tiled) or stacked on a
      // new axis there with the split axis (of length 1) dropped.
      std::vector<std::int64_t> cshape = shape;
      cshape[s] = chunk;
      std::vector<std::int64_t> oshape;
      std::int64_t o_outer = 0, o_inner = 0;
      if (params.tiled) {
        oshape = cshape;
        oshape[c] *= g.size;
        o_outer = prod(cshape, 0, c);
        o_inner = prod(cshape, c, cshape.size()) * es;
      } else {
        std::vector<std::int64_t> sq = cshape;
        sq.erase(sq.begin() + static_cast<std::ptrdiff_t>(s));
        oshape = sq;
        oshape.insert(oshape.begin() + static_cast<std::ptrdiff_t>(c), g.size);
        o_outer = prod(sq, 0, c);
        o_inner = prod(sq, c, sq.size()) * es;
      }
      detail::Storage out = detail::Storage::make(dt, oshape, false);
      interleave(static_cast<char*>(out.data), recv.data(), g.size, o_outer, o_inner);
      return {AnyArray(out)};
    }
    default: break;
  }
  internal_error(std::string("collective_impl: not a collective: ") + op);
}

namespace {

std::string join(const std::vector<std::string>& xs) {
  std::string r;
  for (std::size_t k = 0; k < xs.size(); ++k) r += (k ? "," : "") + xs[k];
  return r;
}
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> r;
  if (s.empty()) return r;
  std::size_t a = 0;
  for (;;) {
    const std::size_t b = s.find(sep, a);
    r.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) return r;
    a = b + 1;
  }
}

// The registry's mesh of these names and shape (this process made one with
// dyn::Mesh, or the kernel came from another process: then one is made).
int find_mesh(const std::vector<std::string>& names, const std::vector<std::int64_t>& shape) {
  MeshRegistry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (std::size_t k = 0; k < r.meshes.size(); ++k)
      if (r.meshes[k]->info.names == names && r.meshes[k]->info.shape == shape) return static_cast<int>(k);
  }
  return Mesh(names, shape).id();
}

struct Decoded {
  Prim prim;
  DType dtype;
  CollectiveParams params;
};

Decoded decode(const std::string& d) {
  const std::vector<std::string> f = split(d, ';');
  if (f.size() != 12 || f[0] != "dynstage collective v1") internal_error("dynstage_collective: bad descriptor " + d);
  Decoded r{};
  bool found = false;
  for (int k = 0; k < kNumPrims; ++k)
    if (prim_name(static_cast<Prim>(k)) == f[1]) {
      r.prim = static_cast<Prim>(k);
      found = true;
    }
  if (!found) internal_error("dynstage_collective: unknown primitive " + f[1]);
  r.dtype = static_cast<DType>(std::stoi(f[2]));
  CollectiveParams& c = r.params;
  c.form = static_cast<CollectiveForm>(std::stoi(f[3]));
  c.axes = split(f[4], ',');
  std::vector<std::int64_t> shape;
  for (const std::string& x : split(f[6], ',')) shape.push_back(std::stoll(x));
  c.mesh = find_mesh(split(f[5], ','), shape);
  c.axis_size = std::stoll(f[7]);
  c.dimension = std::stoll(f[8]);
  c.concat_axis = std::stoll(f[9]);
  c.tiled = f[10] == "1";
  for (const std::string& pr : split(f[11], ',')) {
    const std::vector<std::string> st = split(pr, ':');
    c.perm.push_back({std::stoll(st.at(0)), std::stoll(st.at(1))});
  }
  return r;
}

}  // namespace

std::string collective_descriptor(Prim p, DType operand, const CollectiveParams& c) {
  const MeshInfo m = mesh_info(c.mesh);
  std::vector<std::string> shape, perm;
  for (std::int64_t x : m.shape) shape.push_back(std::to_string(x));
  for (const auto& [s, t] : c.perm) perm.push_back(std::to_string(s) + ":" + std::to_string(t));
  return "dynstage collective v1;" + std::string(prim_name(p)) + ";" + std::to_string(static_cast<int>(operand)) + ";" +
         std::to_string(static_cast<int>(c.form)) + ";" + join(c.axes) + ";" + join(m.names) + ";" + join(shape) +
         ";" + std::to_string(c.axis_size) + ";" + std::to_string(c.dimension) + ";" + std::to_string(c.concat_axis) +
         ";" + (c.tiled ? "1" : "0") + ";" + join(perm);
}

std::exception_ptr& collective_pending_error() {
  thread_local std::exception_ptr e;
  return e;
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

extern "C" int dynstage_collective(const char* desc, const void* x, std::int64_t xrank, const std::int64_t* xdims,
                                   void* out, std::int64_t out_bytes) {
  using namespace dyn;
  using namespace dyn::detail;
  try {
    // Decoded once per descriptor (the kernel's constant; its text is the key).
    static std::mutex mu;
    static std::map<std::string, Decoded> decoded;
    Decoded d;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = decoded.find(desc);
      if (it == decoded.end()) it = decoded.emplace(desc, decode(desc)).first;
      d = it->second;
    }
    std::vector<AnyArray> in;
    if (d.prim != Prim::axis_index) {
      std::vector<std::int64_t> shape(xdims, xdims + xrank);
      in.push_back(visit_dtype(d.dtype, [&](auto t) -> AnyArray {
        using T = decltype(t);
        return AnyArray(Array<T>::view(const_cast<T*>(static_cast<const T*>(x)), shape));
      }));
    }
    const std::vector<AnyArray> r = collective_impl(d.prim, in, d.params);
    const auto bytes = static_cast<std::int64_t>(dtype_size(r[0].dtype())) * r[0].size();
    if (bytes != out_bytes)
      internal_error("dynstage_collective: " + std::string(prim_name(d.prim)) + " made " + std::to_string(bytes) +
                     " bytes for a buffer of " + std::to_string(out_bytes));
    std::memcpy(out, r[0].data(), static_cast<std::size_t>(bytes));
    return 0;
  } catch (...) {
    collective_pending_error() = std::current_exception();
    return 1;
  }
}

#endif  // DYNSTAGE_IMPLEMENTATION
