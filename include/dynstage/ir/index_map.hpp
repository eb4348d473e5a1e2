// dynstage: the index map of every layout primitive, stated once.
//
// A layout primitive (broadcast_in_dim, reshape, squeeze, transpose, slice,
// dynamic_slice, iota, concatenate, dynamic_update_slice, rev, pad) computes
// nothing:
// each output element is an element of an operand, or its own index. Its
// index map says which. The backend reads it everywhere it needs to know:
// the fusion planner (which operand axes a row axis reaches, fusion.hpp rule
// 4), the lowering (the operand index an inlined layout primitive reads, and
// whether a nest needs a multi-index) and the window writes of concatenate
// and dynamic_update_slice. A new layout primitive is one more case of
// `index_map` (rev and pad are the latest).
//
// gather reads its operand at a start taken from data (Start::gathered); a
// scatter writes each update element to the operand element the same kind
// of map gives (Start::scattered): `scatter_map` is that map, and the
// indices operand of both is read as `index_vector_map` says. The eager
// kernels (eager/kernels_index.hpp) and the LLVM lowering follow these two
// functions; nothing else knows the dimension numbers.
//
// Maps are symbolic: starts that are runtime values name the input that holds
// them, so the map is a fact about the equation, not about one call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../errors.hpp"
#include "jaxpr.hpp"

namespace dyn::detail {

// One operand axis. With o the output index:
//   form `axes`:   operand[axis] = start + stride * o[out_axis]   (out_axis >= 0)
//                  operand[axis] = start                          (out_axis <  0)
//   form `window`: the operand sits in the output at `start`:
//                  output[axis] = operand[axis] + start           (out_axis == axis)
struct AxisMap {
  enum class Start : std::uint8_t {
    constant,       // `value`
    dim_operand,    // the value of input `input` (a kDynamicDim start of slice)
    clamped,        // the value of input `input`, clamped so that the smaller array lies
                    // inside the larger along this axis: into [0, larger dim - smaller dim]
                    // (dynamic_slice, dynamic_update_slice; JAX clamps the same way)
    concat_offset,  // the sum of this axis's sizes over inputs [0, input) (concatenate)
    gathered,       // component `value` of the index vector that input `input` (the indices)
                    // holds at this element's batch index (index_vector_map), clamped so
                    // that the slice lies inside the operand (gather, mode CLIP)
    scattered,      // the same component, unclamped: a window that does not fit is dropped
                    // (scatter, mode FILL_OR_DROP)
    last,           // the operand's size along this axis minus one (rev: stride -1)
  };
  int out_axis = -1;
  std::int64_t stride = 1;
  Start start = Start::constant;
  std::int64_t value = 0;
  int input = -1;

  // The index along this axis is the output's own (stride 1, start 0), given
  // that the operand and the output have the same size along it.
  bool passes_through() const {
    return out_axis >= 0 && stride == 1 &&
           ((start == Start::constant && value == 0) || start == Start::clamped);
  }
};

struct IndexMap {
  enum class Form : std::uint8_t {
    axes,    // each operand axis from at most one output axis (AxisMap)
    linear,  // the same row-major linear index (reshape, squeeze)
    iota,    // no operand: the element is its own index along `dimension`
    window,  // the operand fills a box of the output (AxisMap, window form)
    pad,     // pad: per operand axis, operand[axis] = (o[out_axis] - value) / stride
             // where that is an integer in [0, size) on every axis (value = lo,
             // stride = interior + 1); any other output element is input 1's
             // (the padding value, a scalar)
  };
  Form form = Form::axes;
  std::vector<AxisMap> axes;  // forms axes and window: one per operand axis
  int dimension = 0;          // form iota
};

// Whether p is a layout primitive (has an index map).
constexpr bool is_layout(Prim p) {
  switch (p) {
    case Prim::broadcast_in_dim:
    case Prim::reshape:
    case Prim::squeeze:
    case Prim::transpose:
    case Prim::slice:
    case Prim::dynamic_slice:
    case Prim::iota:
    case Prim::concatenate:
    case Prim::dynamic_update_slice:
    case Prim::gather:
    case Prim::rev:
    case Prim::pad: return true;
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) return false;
  }
  return false;
}

// The inputs of layout equation e whose elements it moves: [0, n). The
// others are start indices and dimension values (scalars).
inline std::size_t mapped_inputs(const Eqn& e) {
  switch (e.prim) {
    case Prim::iota: return 0;
    case Prim::concatenate: return e.inputs.size();
    case Prim::dynamic_update_slice:
    case Prim::gather: return 2;  // gather: the operand, and the indices (index_vector_map)
    case Prim::broadcast_in_dim:
    case Prim::reshape:
    case Prim::squeeze:
    case Prim::transpose:
    case Prim::slice:
    case Prim::dynamic_slice:
    case Prim::rev:
    case Prim::pad: return 1;  // pad: input 1 is the padding value, a scalar
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("mapped_inputs: " + std::string(prim_name(e.prim)) + " is not a layout primitive");
}

// The map of a gather (dimension numbers offset_dims, collapsed_slice_dims,
// start_index_map), or of a scatter's updates (update_window_dims,
// inserted_window_dims, scatter_dims_to_operand_dims: the same structure),
// from the index o of an output (update) element to the operand element it
// reads (is combined into): the operand's non-collapsed axes take the
// offset axes of o in order; component c of the index vector adds its start
// along operand axis start_index_map[c]. The slice (window) size along an
// operand axis is 1 if collapsed, else the size of its offset axis of o.
inline IndexMap slice_map(const std::vector<std::int64_t>& offset_dims, const std::vector<std::int64_t>& collapsed,
                          const std::vector<std::int64_t>& start_index_map, std::size_t operand_rank,
                          AxisMap::Start start) {
  IndexMap m;
  m.axes.resize(operand_rank);
  std::size_t next = 0;
  for (std::size_t d = 0; d < operand_rank; ++d) {
    const auto di = static_cast<std::int64_t>(d);
    if (std::find(collapsed.begin(), collapsed.end(), di) == collapsed.end() && next < offset_dims.size())
      m.axes[d].out_axis = static_cast<int>(offset_dims[next++]);
    const auto c = std::find(start_index_map.begin(), start_index_map.end(), di);
    if (c != start_index_map.end()) {
      m.axes[d].start = start;
      m.axes[d].value = c - start_index_map.begin();
      m.axes[d].input = 1;
    }
  }
  return m;
}

// Where the indices (batch + [K]) of a gather or scatter are read for the
// output (update) element at o: indices axis i < batch rank is the i-th axis
// of o that is not an offset (window) axis; the last axis is the component
// (out_axis -1: the reader picks c).
inline IndexMap index_vector_map(const std::vector<std::int64_t>& offset_dims, std::size_t out_rank) {
  IndexMap m;
  for (std::size_t o = 0; o < out_rank; ++o)
    if (std::find(offset_dims.begin(), offset_dims.end(), static_cast<std::int64_t>(o)) == offset_dims.end())
      m.axes.push_back(AxisMap{static_cast<int>(o)});
  m.axes.push_back(AxisMap{-1});
  return m;
}

// The scatter map of update element u (input 2 of a scatter equation): the
// operand element it combines into, its start unclamped (Start::scattered).
inline IndexMap scatter_map(const ScatterParams& sp, std::size_t operand_rank) {
  return slice_map(sp.update_window_dims, sp.inserted_window_dims, sp.scatter_dims_to_operand_dims, operand_rank,
                   AxisMap::Start::scattered);
}

// Where output index o along one axis of a pad reads its operand (form pad):
// the operand index, or -1 when the element is padding. `size`: the
// operand's size along the axis. Eager and the LLVM lowering compute this.
inline std::int64_t pad_source(const AxisMap& a, std::int64_t o, std::int64_t size) {
  const std::int64_t t = o - a.value;
  if (t < 0 || t % a.stride != 0 || t / a.stride >= size) return -1;
  return t / a.stride;
}

// The maps of rev and pad from their params alone (the eager kernels have
// no jaxpr): a reversed axis reads from the end, operand[i] = (size - 1) -
// o[i]; a padded axis reads (o - lo) / (interior + 1) (form pad).
inline IndexMap rev_map(const RevParams& rp, std::size_t rank) {
  IndexMap m;
  for (std::size_t i = 0; i < rank; ++i) m.axes.push_back(AxisMap{static_cast<int>(i)});
  for (const std::int64_t d : rp.dimensions) {
    m.axes[static_cast<std::size_t>(d)].stride = -1;
    m.axes[static_cast<std::size_t>(d)].start = AxisMap::Start::last;
  }
  return m;
}
inline IndexMap pad_map(const PadParams& pp, std::size_t rank) {
  IndexMap m;
  m.form = IndexMap::Form::pad;
  for (std::size_t i = 0; i < rank; ++i) {
    AxisMap a{static_cast<int>(i)};
    a.value = pp.padding_config[i].lo;
    a.stride = pp.padding_config[i].interior + 1;
    m.axes.push_back(a);
  }
  return m;
}

// The index map of data input k of layout equation e: which element of that
// input the output element at index o reads (form window: where the input's
// elements go). Inputs that are start indices or dimension values have no map.
inline IndexMap index_map(const Jaxpr& j, const Eqn& e, std::size_t k = 0) {
  const std::size_t rank = e.inputs.size() > k ? j.type_of(e.inputs[k]).rank() : 0;
  auto identity_axes = [&] {
    IndexMap m;
    for (std::size_t i = 0; i < rank; ++i) m.axes.push_back(AxisMap{static_cast<int>(i)});
    return m;
  };
  switch (e.prim) {
    case Prim::broadcast_in_dim: {
      // A size-1 operand axis broadcasts (index 0); any other operand axis
      // has its output axis's size (a runtime dimension included).
      const auto& bd = std::get<BroadcastInDimParams>(e.params).broadcast_dimensions;
      const auto& xd = j.type_of(e.inputs[0]).shape;
      IndexMap m;
      for (std::size_t i = 0; i < rank; ++i) {
        const bool broadcasts = xd[i].is_static() && xd[i].value == 1;
        m.axes.push_back(AxisMap{broadcasts ? -1 : static_cast<int>(bd[i])});
      }
      return m;
    }
    case Prim::reshape:
    case Prim::squeeze: return IndexMap{IndexMap::Form::linear, {}, 0};
    case Prim::transpose: {
      const auto& perm = std::get<TransposeParams>(e.params).permutation;
      IndexMap m;
      m.axes.resize(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i) m.axes[static_cast<std::size_t>(perm[i])].out_axis = static_cast<int>(i);
      return m;
    }
    case Prim::slice: {
      // Runtime start indices are the inputs after the array, in order.
      const auto& sp = std::get<SliceParams>(e.params);
      IndexMap m = identity_axes();
      int next = 1;
      for (std::size_t i = 0; i < rank; ++i) {
        m.axes[i].stride = sp.strides.empty() ? 1 : sp.strides[i];
        if (sp.start_indices[i] == kDynamicDim) {
          m.axes[i].start = AxisMap::Start::dim_operand;
          m.axes[i].input = next++;
        } else {
          m.axes[i].value = sp.start_indices[i];
        }
      }
      return m;
    }
    case Prim::dynamic_slice: {
      IndexMap m = identity_axes();
      for (std::size_t i = 0; i < rank; ++i) {
        m.axes[i].start = AxisMap::Start::clamped;
        m.axes[i].input = static_cast<int>(1 + i);
      }
      return m;
    }
    case Prim::iota: return IndexMap{IndexMap::Form::iota, {}, static_cast<int>(std::get<IotaParams>(e.params).dimension)};
    case Prim::concatenate: {
      IndexMap m = identity_axes();
      m.form = IndexMap::Form::window;
      const auto d = static_cast<std::size_t>(std::get<ConcatenateParams>(e.params).dimension);
      if (k > 0) {
        m.axes[d].start = AxisMap::Start::concat_offset;
        m.axes[d].input = static_cast<int>(k);
      }
      return m;
    }
    case Prim::dynamic_update_slice: {
      // Input 0 (the operand) is read at the output's index; input 1 (the
      // update) is written into the box starting at the clamped starts.
      IndexMap m = identity_axes();
      if (k == 1) {
        m.form = IndexMap::Form::window;
        for (std::size_t i = 0; i < rank; ++i) {
          m.axes[i].start = AxisMap::Start::clamped;
          m.axes[i].input = static_cast<int>(2 + i);
        }
      }
      return m;
    }
    case Prim::gather: {
      // Input 0: the slice map; input 1 (the indices): the index vector map.
      const auto& gp = std::get<GatherParams>(e.params);
      const std::size_t out_rank = j.types[static_cast<std::size_t>(e.outputs[0])].rank();
      if (k == 1) return index_vector_map(gp.offset_dims, out_rank);
      return slice_map(gp.offset_dims, gp.collapsed_slice_dims, gp.start_index_map, rank, AxisMap::Start::gathered);
    }
    case Prim::rev: return rev_map(std::get<RevParams>(e.params), rank);
    case Prim::pad: return pad_map(std::get<PadParams>(e.params), rank);
    DYN_ELEMENTWISE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SCATTER_PRIMITIVES(DYN_CASE_LABEL)
    DYN_REDUCTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CUMULATIVE_PRIMITIVES(DYN_CASE_LABEL)
    DYN_SORT_PRIMITIVES(DYN_CASE_LABEL) DYN_FFT_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTRACTION_PRIMITIVES(DYN_CASE_LABEL)
    DYN_CONTROL_PRIMITIVES(DYN_CASE_LABEL)
    DYN_EFFECT_PRIMITIVES(DYN_CASE_LABEL) DYN_COLLECTIVE_PRIMITIVES(DYN_CASE_LABEL) break;
  }
  internal_error("index_map: " + std::string(prim_name(e.prim)) + " is not a layout primitive");
}

}  // namespace dyn::detail
