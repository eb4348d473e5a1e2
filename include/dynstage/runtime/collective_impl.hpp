// dynstage: the collectives' data movement over MPI (runtime/distributed.hpp
// declares it): the ranks' groups as MPI sub-communicators, the check that
// every rank of a group passes one block shape and dtype, the eager kernel
// collective_impl, and the C entry point dynstage_collective that compiled
// kernels call (llvm/lower_sort.hpp), with its descriptor text.
//
// Definitions only (DYNSTAGE_IMPLEMENTATION): the implementation TU is the one
// file that includes mpi.h.
#pragma once

#include "distributed.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION
// (<mpi.h>, C API only: distributed.hpp's implementation part includes it.)

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

namespace dyn::detail {

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

// memcpy of n bytes, nothing when n is 0 (an empty array may have no data
// pointer, which memcpy must not be given: UBSan, fuzzed collectives).
inline void copy_bytes(void* dst, const void* src, std::int64_t n) {
  if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n));
}

// out viewed as [outer, G, inner bytes] <- G blocks of [outer, inner bytes].
void interleave(char* out, const char* blocks, std::int64_t g, std::int64_t outer, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < g; ++k)
      copy_bytes(out + (o * g + k) * inner, blocks + (k * outer + o) * inner, inner);
}


template <class T>
T combine(Prim p, T a, T b) {
  if (p == Prim::psum) return static_cast<T>(a + b);
  if constexpr (is_complex_v<T>) {
    internal_error("collective: pmax/pmin of complex values (their dtype rule refuses them)");
  } else {
    if constexpr (std::is_floating_point_v<T>) {  // a NaN of any rank wins, as lax.max/min
      if (a != a) return a;
      if (b != b) return b;
    }
    return p == Prim::pmax ? (a < b ? b : a) : (b < a ? b : a);
  }
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
    if (g.size == 1)
      copy_bytes(all.data(), x.data(), n * es);
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
        if (from == 0) copy_bytes(out.data, x.data(), n * es);
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
          copy_bytes(send.data() + k * cbytes + o * chunk * inner, src + (o * shape[s] + k * chunk) * inner,
                     chunk * inner);
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

}  // namespace dyn::detail

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
    copy_bytes(out, r[0].data(), bytes);
    return 0;
  } catch (...) {
    collective_pending_error() = std::current_exception();
    return 1;
  }
}


#endif  // DYNSTAGE_IMPLEMENTATION
