// dynstage: dyn::jit's call path — a miss traces, compiles and fills a
// cache entry (cache.hpp); a call solves its dimensions, allocates the
// outputs and runs the entry's kernel; jit_call, last, is the hit path.
//
// Compiled in exactly one translation unit per program, the one that defines
// DYNSTAGE_IMPLEMENTATION (src/dynstage.cpp under Meson); everywhere else
// this header is empty. None of it depends on the user's function, so one
// copy serves every jitted function of the program.
#pragma once

#include "cache.hpp"
#include "disk_cache.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "../ir/print.hpp"
#include "../shape/symbolic.hpp"

namespace dyn::detail {

// ---------------------------------------------------------------------------
// Compiling an entry.

// Whether variable `var` of `j` sizes an array: it appears as a dimension in
// a type of `j`, or is passed to a nested jaxpr whose parameter sizes one.
// (dynstage_fuzz found that `jit(f)(x, std::int64_t(-3))` threw "sizes arrays
// but is negative" for an i64 scalar argument used only as a value.)
bool var_sizes_arrays(const Jaxpr& j, int var) {
  for (const Type& t : j.types)
    for (const JDim& d : t.shape)
      if (d.var == var) return true;
  auto passes = [&](const Jaxpr& body, std::size_t invar) {
    return invar < body.invars.size() && var_sizes_arrays(body, body.invars[invar]);
  };
  for (const Eqn& q : j.eqns)
    for (std::size_t p = 0; p < q.inputs.size(); ++p) {
      if (q.inputs[p].var != var) continue;
      bool used = false;
      if (const auto* f = std::get_if<ForLoopParams>(&q.params)) {
        // operands: consts, implicit, lower, upper, step, index0, carried;
        // body: consts, implicit, index, carried. (A bound is not the index.)
        const std::size_t lead = static_cast<std::size_t>(f->body_nconsts + f->nimplicit);
        if (p < lead) used = passes(*f->body_jaxpr, p);
        else if (p >= lead + 4) used = passes(*f->body_jaxpr, p - 3);
      } else if (const auto* w = std::get_if<WhileLoopParams>(&q.params)) {
        // operands: cond consts, body consts, implicit, carried.
        const std::size_t cn = static_cast<std::size_t>(w->cond_nconsts), bn = static_cast<std::size_t>(w->body_nconsts);
        if (p < cn) used = passes(*w->cond_jaxpr, p);
        else if (p < cn + bn) used = passes(*w->body_jaxpr, p - cn);
        else used = passes(*w->cond_jaxpr, p - bn) || passes(*w->body_jaxpr, p - cn);
      } else if (const auto* sc = std::get_if<ScanParams>(&q.params)) {
        // operands: consts, carry, xs (a row of which the body takes), [length].
        used = p < sc->jaxpr->invars.size() && passes(*sc->jaxpr, p);
      } else if (const auto* c = std::get_if<CondParams>(&q.params)) {
        // operands: pred, then every branch's inputs.
        for (const auto& b : c->branches) used = used || (p > 0 && passes(*b, p - 1));
      } else if (const auto* c = std::get_if<CheckpointParams>(&q.params)) {
        used = passes(*c->jaxpr, p);  // operands: the body's inputs
      }
      if (used) return true;
    }
  return false;
}

// Per outvar of the traced jaxpr (implicit ones first): whether its size
// depends on values computed inside the function, so that only the kernel
// can allocate it (backend.hpp, "Results the kernel allocates").
std::vector<bool> kernel_sized_results(const Traced& t) {
  const Jaxpr& j = *t.jaxpr.jaxpr;
  const std::size_t implicit =
      j.out_explicit.empty() ? 0 : static_cast<std::size_t>(std::count(j.out_explicit.begin(), j.out_explicit.end(), false));
  std::vector<std::string> known = t.poly ? t.poly->solver->variables() : std::vector<std::string>{};
  for (const auto& dl : t.dim_leaves) known.push_back(dl.var.to_string());
  std::vector<bool> r(j.outvars.size(), false);
  for (std::size_t k = implicit; k < j.outvars.size(); ++k)
    for (const Dim& d : t.out_shapes.at(k - implicit))
      if (!d.is_static())
        for (const std::string& v : dim_vars(d))
          if (std::find(known.begin(), known.end(), v) == known.end()) r[k] = true;
  return r;
}

// The explicit input types of a traced program, "(f64[3,4], i64[])", as the
// log shows them for inspections.
std::string input_types_str(const Jaxpr& j) {
  PpContext ctx;
  std::string r = "(";
  bool first = true;
  for (std::size_t k = 0; k < j.invars.size(); ++k) {
    if (!j.in_explicit.empty() && !j.in_explicit[k]) continue;
    r += (first ? "" : ", ") + type_str(j.types[static_cast<std::size_t>(j.invars[k])], j, ctx);
    first = false;
  }
  return r + ")";
}

void log_inspection(const std::source_location& loc, const char* what, const Traced& t, double trace_s,
                    double compile_s) {
  if (!jit_logging()) return;
  jit_log(formatted("dynstage: %s of the function jitted at %s: traced %s in %.2f ms%s; not cached (an inspection "
                    "traces again)",
                    what, format_location(loc).c_str(), input_types_str(*t.jaxpr.jaxpr).c_str(), trace_s * 1e3,
                    compile_s < 0 ? "" : formatted(", compiled in %.2f ms", compile_s * 1e3).c_str()));
}

ClosedJaxpr jit_inspect_jaxpr(const std::source_location& loc, TraceFn trace, const void* closure) {
  const auto t0 = std::chrono::steady_clock::now();
  Traced t = trace(closure);
  log_inspection(loc, "jf.jaxpr()", t, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 -1);
  return std::move(t.jaxpr);
}

std::string jit_inspect_llvm_ir(const std::source_location& loc, TraceFn trace, const void* closure) {
  const auto t0 = std::chrono::steady_clock::now();
  Traced t = trace(closure);
  const auto t1 = std::chrono::steady_clock::now();
  std::string ir = compile_kernel(*t.jaxpr.jaxpr, true, kernel_sized_results(t)).llvm_ir;
  const auto t2 = std::chrono::steady_clock::now();
  log_inspection(loc, "jf.llvm_ir()", t, std::chrono::duration<double>(t1 - t0).count(),
                 std::chrono::duration<double>(t2 - t1).count());
  return ir;
}

// Fill a cache entry from its trace and compiled (or, `disk_hit`, loaded)
// kernel: constants, output types (checking that dynamic result sizes are
// known before the call), then log and dump as the environment asks.
void finish_entry(JitCache& c, JitEntry& e, Traced traced, const CompileResult& cr, bool disk_hit,
                  const std::string& why, const std::source_location& loc, std::chrono::steady_clock::time_point t0,
                  std::chrono::steady_clock::time_point t1, std::chrono::steady_clock::time_point t2) {
  ClosedJaxpr& cj = traced.jaxpr;
  e.kernel = cr.kernel;
  e.fn = kernel_entry(*cr.kernel);
  for (const auto& k : cj.consts) e.const_ptrs.push_back(k.data());
  const Jaxpr& j = *cj.jaxpr;
  e.implicit_outs = j.out_explicit.empty()
                        ? 0
                        : static_cast<std::size_t>(std::count(j.out_explicit.begin(), j.out_explicit.end(), false));
  e.out_shapes.assign(e.implicit_outs, Shape{});
  e.out_shapes.insert(e.out_shapes.end(), traced.out_shapes.begin(), traced.out_shapes.end());
  e.poly = traced.poly;
  e.dim_leaves = traced.dim_leaves;
  for (const auto& dl : e.dim_leaves) e.dim_leaf_names.push_back(dl.var.to_string());
  {
    std::vector<int> explicit_invars;  // the argument leaves, in order
    for (std::size_t k = 0; k < j.invars.size(); ++k)
      if (j.in_explicit.empty() || j.in_explicit[k]) explicit_invars.push_back(j.invars[k]);
    for (const auto& dl : e.dim_leaves)
      e.dim_leaf_sizes.push_back(dl.leaf >= explicit_invars.size() ||  // (not expected: stay strict)
                                 var_sizes_arrays(j, explicit_invars[dl.leaf]));
  }
  e.dynamic = e.poly != nullptr;
  e.kernel_sized = kernel_sized_results(traced);
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Type& t = j.type_of(j.outvars[k]);
    LeafSig ls{t.dtype, {}};
    e.cell_offset.push_back(-1);
    if (e.kernel_sized[k]) {
      e.cell_offset.back() = static_cast<std::ptrdiff_t>(e.cell_words);
      e.cell_words += 1 + static_cast<std::size_t>(t.rank());
    }
    for (const Dim& d : e.out_shapes[k]) {
      if (d.is_static()) {
        ls.shape.push_back(d.value());
        continue;
      }
      e.dynamic = true;  // sizes known before the call are evaluated on the host, the others come from the kernel
      ls.shape.push_back(0);
    }
    e.out_sizes.push_back(e.dynamic ? 0 : checked_numel(ls.shape, "jit result"));
    e.outs.push_back(std::move(ls));
  }
  e.plain = !e.dynamic && e.outs.size() <= kStackArgs && e.donated_leaves.empty();
  e.out_tree = std::move(traced.out_tree);
  e.jaxpr = std::move(cj);

  const JitEnv& env = JitEnv::get();
  const double trace_s = std::chrono::duration<double>(t1 - t0).count();
  const double total_s = std::chrono::duration<double>(t2 - t0).count();
  std::size_t dump_id = 0;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.compile_seconds += total_s;
    c.trace_seconds += trace_s;
    c.lower_seconds += cr.lower_seconds;
    c.llvm_seconds += cr.llvm_seconds;
    dump_id = c.dump_counter++;
  }
  const std::string where = format_location(loc);
  if (jit_logging() && disk_hit)
    jit_log(formatted("dynstage: jit of the function at %s: disk hit %s in %.2f ms (trace %.2f ms, load %.2f ms); "
                      "cache miss: %s",
                      where.c_str(), signature_str(e.sig).c_str(), total_s * 1e3, trace_s * 1e3,
                      (total_s - trace_s) * 1e3, why.c_str()));
  else if (jit_logging())
    jit_log(formatted("dynstage: jit of the function at %s: compiled %s in %.2f ms (trace %.2f ms, lower %.2f ms, "
                      "LLVM %.2f ms); cache miss: %s",
                      where.c_str(), signature_str(e.sig).c_str(), total_s * 1e3, trace_s * 1e3,
                      cr.lower_seconds * 1e3, cr.llvm_seconds * 1e3, why.c_str()));
  if (!env.dump_dir.empty() && !disk_hit) {
    std::string base = where;
    for (char& ch : base)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    base += "_" + std::to_string(dump_id);
    std::error_code ec;
    std::filesystem::create_directories(env.dump_dir, ec);
    std::ofstream(std::filesystem::path(env.dump_dir) / (base + ".jaxpr")) << e.jaxpr << "\n";
    std::ofstream(std::filesystem::path(env.dump_dir) / (base + ".ll")) << cr.llvm_ir;
  }
}

// dyn::donate_argnums: the array leaves of the donated arguments (numbered
// among the non-static ones), and per invar of `j` whether it is one.
std::vector<std::size_t> donated_leaves(const Options& opts, const CallArgs& a) {
  std::vector<std::size_t> r;
  for (std::size_t arg : opts.donated) {
    if (arg >= a.arg_leaf_begin.size()) continue;
    const std::size_t end = arg + 1 < a.arg_leaf_begin.size() ? a.arg_leaf_begin[arg + 1] : a.leaves.size();
    for (std::size_t i = a.arg_leaf_begin[arg]; i < end; ++i)
      if (a.leaves[i].data) r.push_back(i);
  }
  return r;
}
std::vector<bool> donated_invars(const Jaxpr& j, const std::vector<std::size_t>& leaves) {
  std::vector<bool> r(j.invars.size(), false);
  for (std::size_t k = 0, leaf = 0; k < j.invars.size(); ++k) {
    if (!j.in_explicit.empty() && !j.in_explicit[k]) continue;
    r[k] = std::find(leaves.begin(), leaves.end(), leaf) != leaves.end();
    ++leaf;
  }
  return r;
}

// The disk cache (disk_cache.hpp): the kernel of `j` from a good entry, if
// the cache is on and has one. The key is computed before lowering, so a hit
// skips lowering, optimisation and code generation. DYNSTAGE_DUMP wants the
// IR, which only compiling gives: it bypasses the reads (not the writes).
bool load_from_disk(const DiskCacheConfig& dc, const DiskKey& key, const Jaxpr& j, CompileResult& cr) {
  if (!JitEnv::get().dump_dir.empty()) return false;
  std::optional<DiskEntry> entry = disk_cache_load(dc, key);
  if (!entry) return false;
  // (The key covers the jaxpr, so these hold for an entry that passed its
  // checksum; checked anyway, as every fact read from a file is.)
  if (entry->result_aliases.size() > j.outvars.size()) return false;
  for (int m : entry->result_aliases)
    if (m < -1 || m >= static_cast<int>(j.invars.size())) return false;
  try {
    cr.kernel = load_kernel(entry->object, entry->symbol, entry->routines);
  } catch (const Error& err) {
    if (jit_logging())
      jit_log("dynstage: disk cache: LLVM rejected the entry " + disk_entry_path(dc.dir, key) + " (" + err.what() +
              "); compiling");
    return false;
  }
  cr.result_aliases = std::move(entry->result_aliases);
  cr.symbol = std::move(entry->symbol);
  cr.routines = entry->routines;
  return true;
}

void compile_entry(JitCache& c, JitEntry& e, const std::string& why, const std::source_location& loc,
                   TraceFn trace, const void* closure, const Options& opts, const CallArgs& a) {
  auto t0 = std::chrono::steady_clock::now();
  Traced traced = trace(closure);
  c.traces.fetch_add(1, std::memory_order_relaxed);
  auto t1 = std::chrono::steady_clock::now();
  e.donated_leaves = donated_leaves(opts, a);
  const Jaxpr& j = *traced.jaxpr.jaxpr;
  const std::vector<bool> kernel_sized = kernel_sized_results(traced);
  const std::vector<bool> donated = donated_invars(j, e.donated_leaves);
  const DiskCacheConfig dc = disk_cache_config();
  std::optional<DiskKey> key;
  if (!dc.dir.empty()) key = disk_key(j, kernel_sized, donated);
  CompileResult cr;
  const bool disk_hit = key && load_from_disk(dc, *key, j, cr);
  if (!disk_hit) {
    cr = compile_kernel(j, !JitEnv::get().dump_dir.empty(), kernel_sized, donated);
    if (key) disk_cache_store(dc, *key, cr);
  }
  // The results that are donated buffers, by leaf.
  e.alias_leaf.assign(j.outvars.size(), -1);
  for (std::size_t k = 0; k < cr.result_aliases.size() && k < j.outvars.size(); ++k) {
    const int m = cr.result_aliases[k];
    if (m < 0) continue;
    int leaf = 0;
    for (int q = 0; q < m; ++q) leaf += j.in_explicit.empty() || j.in_explicit[static_cast<std::size_t>(q)] ? 1 : 0;
    e.alias_leaf[k] = leaf;
  }
  auto t2 = std::chrono::steady_clock::now();
  (disk_hit ? c.disk_hits : c.compiles).fetch_add(1, std::memory_order_relaxed);
  finish_entry(c, e, std::move(traced), cr, disk_hit, why, loc, t0, t1, t2);
}

// The entry for call `a`: an existing one, one another thread is compiling
// (waited for), or a new one traced and compiled here. (Tracing runs the
// user's function, which may call jitted functions on concrete arrays: they
// reuse this thread's scratch space, so `a` must not point into it.)
std::shared_ptr<JitEntry> lookup_or_compile(JitCache& c, const Options& opts, const std::source_location& loc,
                                            const CallKey& key, const CallArgs& a, TraceFn trace,
                                            const void* closure) {
  const std::uint64_t h = hash_call(a, key, opts.polymorphic());
  std::shared_ptr<JitEntry> e;
  bool owner = false;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto [lo, hi] = c.entries.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (matches(*it->second, a, key)) {
        e = it->second;
        break;
      }
    if (!e) {
      e = std::make_shared<JitEntry>();
      e->sig = make_signature(h, a, key, opts.polymorphic());
      if (jit_logging()) {
        const JitEntry* prev = c.most_recent();
        why = explain_miss(e->sig, prev ? &prev->sig : nullptr);
      }
      c.entries.emplace(h, e);
      owner = true;
    }
  }
  e->last_used.store(c.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (!owner) {
    e->wait();
    c.hits.fetch_add(1, std::memory_order_relaxed);
    return e;
  }
  try {
    compile_entry(c, *e, why, loc, trace, closure, opts, a);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(c.mu);
      auto [lo, hi] = c.entries.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second == e) {
          c.entries.erase(it);
          c.generation.fetch_add(1, std::memory_order_release);
          break;
        }
    }
    e->finish(std::current_exception());
    throw;
  }
  e->finish(nullptr);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.evict_if_needed();
  }
  return e;
}

// ---------------------------------------------------------------------------
// Running an entry.

// After a successful call: the results the kernel allocated (cells) become
// the outputs' storage, freed with free().
void adopt_kernel_results(const JitEntry& e, CallScratch& sc) {
  // Own every buffer first, so that a shape check that throws frees them
  // all (and a failure to own one frees the rest).
  auto pointer = [&](std::size_t i) {
    void* p = nullptr;
    std::memcpy(&p, &sc.cells[static_cast<std::size_t>(e.cell_offset[i])], sizeof p);
    return p;
  };
  for (std::size_t i = 0; i < e.outs.size(); ++i) {
    if (e.cell_offset[i] < 0) continue;
    void* p = pointer(i);
    Storage& s = sc.outputs[i];
    try {
      s.owner = adopt_malloced(p);
    } catch (...) {
      for (std::size_t j = i + 1; j < e.outs.size(); ++j)
        if (e.cell_offset[j] >= 0) std::free(pointer(j));
      throw;
    }
    s.data = p;
    s.dtype = e.outs[i].dtype;
  }
  for (std::size_t i = 0; i < e.outs.size(); ++i) {
    if (e.cell_offset[i] < 0) continue;
    const std::int64_t* cell = &sc.cells[static_cast<std::size_t>(e.cell_offset[i])];
    Storage& s = sc.outputs[i];
    s.shape.assign(cell + 1, cell + 1 + e.outs[i].shape.size());
    s.size = checked_numel(s.shape, "jit result");
  }
}

// For a dynamic entry: solve the dimension variables from the leaves' shapes
// and integer values (ShapeAssertionError if the shapes violate the spec),
// fill sc.dim_slots with the implicit dimension arguments and sc.out_dims
// with the output shapes.
void solve_call_dims(const JitEntry& e, const CallArgs& a, CallScratch& sc) {
  sc.leaf_shapes.resize(a.leaves.size());
  sc.leaf_ints.resize(a.leaves.size());
  for (std::size_t i = 0; i < a.leaves.size(); ++i) {
    const LeafRef& l = a.leaves[i];
    sc.leaf_shapes[i].assign(l.dims, l.dims + l.rank);
    std::int64_t v = 0;
    const void* p = l.data ? l.data : &l.bits;
    if (std::all_of(l.dims, l.dims + l.rank, [](std::int64_t d) { return d == 1; })) {
      if (l.dtype == DType::i64) std::memcpy(&v, p, sizeof v);
      if (l.dtype == DType::i32) {
        std::int32_t w = 0;
        std::memcpy(&w, p, sizeof w);
        v = w;
      }
    }
    sc.leaf_ints[i] = v;
  }
  Bindings env;
  if (e.poly) env = e.poly->solver->solve_shapes(sc.leaf_shapes);
  for (std::size_t i = 0; i < e.dim_leaves.size(); ++i) {
    const std::int64_t v = sc.leaf_ints[e.dim_leaves[i].leaf];
    if (v < 0 && e.dim_leaf_sizes[i])
      fail<ShapeError>("jit: the integer argument leaf #" + std::to_string(e.dim_leaves[i].leaf) +
                       " sizes arrays but is negative (" + std::to_string(v) + ")");
    env[e.dim_leaf_names[i]] = v;
  }
  sc.dim_slots.clear();
  if (e.poly)
    for (const Dim& d : e.poly->dim_args) sc.dim_slots.push_back(evaluate(d, env));
  sc.out_dims.resize(e.out_shapes.size());
  for (std::size_t i = 0; i < e.out_shapes.size(); ++i) {
    sc.out_dims[i].clear();
    if (e.kernel_sized[i]) continue;  // the kernel reports it
    for (const Dim& d : e.out_shapes[i]) sc.out_dims[i].push_back(d.is_static() ? d.value() : evaluate(d, env));
  }
}

// Running entry `e` on call `a` leaves the outputs in sc.outputs. The
// kernel takes the constants, the implicit dimensions, then the leaves; then
// the results' pointers. (On the stack up to kStackArgs, else in the scratch
// vectors, which keep their capacity.) run_plain is the hit path's common
// case, inlined into jit_call; run_entry is every case. Both are made of the
// three steps below.

// The kernel's argument pointers, from p on.
[[gnu::always_inline]] inline void gather_args(const JitEntry& e, const CallArgs& a,
                                               std::span<const std::int64_t> dims, const void** p) {
  for (const void* c : e.const_ptrs) *p++ = c;
  for (const std::int64_t& d : dims) *p++ = &d;
  for (const LeafRef& l : a.leaves) *p++ = l.data ? l.data : &l.bits;
}

// The MemoryError of result #i of shape `shape`, which could not be
// allocated (allocate_buffer's error, renamed: the operation is the jitted
// function's result). The results allocated before it are freed with the
// call's scratch; the entry stays cached.
[[noreturn, gnu::noinline]] inline void result_allocation_failed(const JitEntry& e, std::size_t i,
                                                                 const std::vector<std::int64_t>& shape) {
  const std::size_t bytes = static_cast<std::size_t>(checked_numel(shape, "jit result")) * dtype_size(e.outs[i].dtype);
  std::string t = std::string(dtype_name(e.outs[i].dtype)) + "[";
  for (std::size_t k = 0; k < shape.size(); ++k) t += (k ? "," : "") + std::to_string(shape[k]);
  // (#: the result leaf's position, as the caller counts: implicit dimension outputs come first)
  const std::size_t leaf = i >= e.implicit_outs ? i - e.implicit_outs : i;
  fail<MemoryError>("jit result #" + std::to_string(leaf) + " (" + t + "]): out of memory: cannot allocate " +
                    std::to_string(bytes) + " bytes");
}

// The outputs of a static-shape entry, allocated, and their pointers.
[[gnu::always_inline]] inline void allocate_static_outputs(const JitEntry& e, CallScratch& sc, void** results) {
  const std::size_t n = e.outs.size();
  if (sc.outputs.size() != n) sc.outputs.resize(n);
  Storage* out = sc.outputs.data();
  for (std::size_t i = 0; i < n; ++i) {
    try {
      out[i].assign_sized(e.outs[i].dtype, e.outs[i].shape, e.out_sizes[i]);
    } catch (const MemoryError&) {
      result_allocation_failed(e, i, e.outs[i].shape);
    }
    results[i] = out[i].data;
  }
}

[[gnu::always_inline]] inline void call_kernel(const JitEntry& e, const void* const* args, void* const* results,
                                               const std::source_location& loc) {
  if (const std::int32_t code = e.fn(args, results); code != kKernelOk) throw_kernel_error(code, &loc);
}

// dyn::donate_argnums, before the kernel runs: each donated leaf's buffer
// becomes the kernel's (a copy of it if anything else may see it: another
// array or a constant holding the buffer, or another argument overlapping
// it), and the outputs that are donated buffers get them.
void hand_over_donated(const JitEntry& e, const CallArgs& a, CallScratch& sc, const void** args, void** results,
                       std::size_t first_leaf_arg) {
  sc.donated.clear();
  auto bytes = [](const LeafRef& l) {
    std::int64_t n = 1;
    for (std::uint32_t d = 0; d < l.rank; ++d) n *= l.dims[d];
    return static_cast<std::size_t>(n) * dtype_size(l.dtype);
  };
  for (const std::size_t i : e.donated_leaves) {
    const LeafRef& l = a.leaves[i];
    const Storage& st = *l.storage;
    bool exclusive = !st.borrowed && st.owner && st.owner.use_count() == 1;
    const auto* lo = static_cast<const char*>(l.data);
    const char* hi = lo + bytes(l);
    for (std::size_t q = 0; q < a.leaves.size() && exclusive; ++q) {
      const LeafRef& o = a.leaves[q];
      if (q == i || !o.data) continue;
      const auto* olo = static_cast<const char*>(o.data);
      if (olo < hi && lo < olo + std::max<std::size_t>(bytes(o), 1)) exclusive = false;
    }
    sc.donated.push_back(exclusive ? st : st.clone());
    const Storage& own = sc.donated.back();
    args[first_leaf_arg + i] = own.data;
    for (std::size_t k = 0; k < e.alias_leaf.size(); ++k) {
      if (e.alias_leaf[k] != static_cast<int>(i)) continue;
      Storage& out = sc.outputs[k];
      std::vector<std::int64_t> shape = out.shape;
      out = own;
      out.shape = std::move(shape);
      out.dtype = e.outs[k].dtype;
      results[k] = out.data;
    }
  }
}

[[gnu::noinline]] void run_entry(const JitEntry& e, const CallArgs& a, CallScratch& sc,
                                 const std::source_location& loc) {
  if (e.dynamic) solve_call_dims(e, a, sc);
  const std::span<const std::int64_t> dims = e.dynamic ? std::span<const std::int64_t>(sc.dim_slots) : std::span<const std::int64_t>();
  const std::size_t nargs = e.const_ptrs.size() + dims.size() + a.leaves.size(), n = e.outs.size();
  const void* arg_stack[kStackArgs];
  void* result_stack[kStackArgs];
  if (nargs > kStackArgs && sc.args.size() < nargs) sc.args.resize(nargs);
  if (n > kStackArgs && sc.results.size() < n) sc.results.resize(n);
  const void** args = nargs > kStackArgs ? sc.args.data() : arg_stack;
  void** results = n > kStackArgs ? sc.results.data() : result_stack;
  gather_args(e, a, dims, args);
  const std::size_t first_leaf_arg = e.const_ptrs.size() + dims.size();
  if (!e.dynamic) {
    allocate_static_outputs(e, sc, results);
    if (!e.donated_leaves.empty()) hand_over_donated(e, a, sc, args, results, first_leaf_arg);
    call_kernel(e, args, results, loc);
    sc.donated.clear();
    return;
  }
  if (sc.outputs.size() != n) sc.outputs.resize(n);
  if (e.cell_words) sc.cells.resize(e.cell_words);
  for (std::size_t i = 0; i < n; ++i) {
    Storage& s = sc.outputs[i];
    if (e.cell_offset[i] >= 0) {  // allocated by the kernel
      s = Storage{};
      results[i] = &sc.cells[static_cast<std::size_t>(e.cell_offset[i])];
      continue;
    }
    // (Checked here so that a bad size is reported as the jit result's.)
    const std::int64_t count = checked_numel(sc.out_dims[i], "jit result");
    try {
      s.assign_sized(e.outs[i].dtype, sc.out_dims[i], count);
    } catch (const MemoryError&) {
      result_allocation_failed(e, i, sc.out_dims[i]);
    }
    results[i] = s.data;
  }
  if (!e.donated_leaves.empty()) hand_over_donated(e, a, sc, args, results, first_leaf_arg);
  call_kernel(e, args, results, loc);
  sc.donated.clear();
  if (e.cell_words) adopt_kernel_results(e, sc);
}

// JitEntry::plain, with at most kStackArgs arguments.
[[gnu::always_inline]] inline void run_plain(const JitEntry& e, const CallArgs& a, CallScratch& sc,
                                             const std::source_location& loc) {
  const void* args[kStackArgs];
  void* results[kStackArgs];
  gather_args(e, a, {}, args);
  allocate_static_outputs(e, sc, results);
  call_kernel(e, args, results, loc);
}

// A call that the thread's MRU slot does not serve: look the entry up (or
// compile it), point the slot at it, and run it. Out of line, so that
// jit_call's hit path keeps a small frame.
[[gnu::noinline]] CallResult jit_call_miss(JitCache& c, const Options& opts, const std::source_location& loc,
                                           const CallKey& key, const CallArgs& a, TraceFn trace,
                                           const void* closure, CallScratch& sc, MruSlot& slot,
                                           std::uint64_t gen) {
  // Copies of the arguments that tracing cannot overwrite.
  const std::vector<LeafRef> leaves(a.leaves.begin(), a.leaves.end());
  const std::vector<std::size_t> vector_sizes(a.vector_sizes.begin(), a.vector_sizes.end());
  const std::vector<std::size_t> arg_leaf_begin(a.arg_leaf_begin.begin(), a.arg_leaf_begin.end());
  const CallArgs own{leaves, vector_sizes, arg_leaf_begin};
  std::shared_ptr<JitEntry> found = lookup_or_compile(c, opts, loc, key, own, trace, closure);
  JitEntry* e = found.get();
  if (slot.cache_id != c.id) {
    std::lock_guard<std::mutex> lock(c.mu);
    slot.hits = c.hit_cell(&sc);
  }
  slot.cache_id = c.id;
  slot.generation = gen;
  slot.entry = std::move(found);
  run_entry(*e, own, sc, loc);
  return CallResult{&e->out_tree, sc.outputs.data() + e->implicit_outs};
}

CallResult jit_call(JitCache& c, const Options& opts, const std::source_location& loc, const CallKey& key,
                    const CallArgs& a, TraceFn trace, const void* closure) {
  CallScratch& sc = call_scratch();
  MruSlot& slot = sc.mru[c.id & (sc.mru.size() - 1)];
  const std::uint64_t gen = c.generation.load(std::memory_order_acquire);
  if (!(slot.cache_id == c.id && slot.generation == gen && matches(*slot.entry, a, key)))
    return jit_call_miss(c, opts, loc, key, a, trace, closure, sc, slot, gen);
  JitEntry* e = slot.entry.get();
  // LRU: only a change of most recent entry costs an atomic increment.
  if (e->last_used.load(std::memory_order_relaxed) != c.tick.load(std::memory_order_relaxed))
    e->last_used.store(c.tick.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  slot.hits->store(slot.hits->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (e->plain && a.leaves.size() + e->const_ptrs.size() <= kStackArgs) run_plain(*e, a, sc, loc);
  else run_entry(*e, a, sc, loc);
  return CallResult{&e->out_tree, sc.outputs.data() + e->implicit_outs};
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
