// dynstage: the LLVM backend's boundary.
//
// This header is all the rest of dynstage (and every user file) sees of the
// backend: it declares, and includes no LLVM header. The definitions live in
// llvm/backend_impl.hpp, which exactly one translation unit per program
// compiles (src/dynstage.cpp, or a user TU that defines DYNSTAGE_IMPLEMENTATION
// before including <dynstage/dynstage.hpp>), because LLVM's headers cost
// 5-16 s per translation unit.
//
// A kernel is one jaxpr, lowered to one native function
//
//   int32_t kernel(const void* const* args, void* const* results)
//
//   args     the data pointers of the constvars, then of the invars, in jaxpr
//            order; each points at a row-major, contiguous buffer of that
//            variable's type (bool is one byte, 0 or 1).
//   results  one preallocated, row-major, contiguous buffer per outvar, sized
//            from the outvar's type. Result buffers must not overlap each
//            other or any argument (the kernel declares them noalias);
//            arguments may overlap each other (they are only read).
//
// Types may have runtime dimensions (JDim::of_var: the value of an integer
// scalar variable of the jaxpr). The ABI does not change: a dimension that is
// an invar (an implicit dimension argument, or an explicit integer scalar) is
// passed like any scalar argument, as a pointer to its value; a dimension the
// jaxpr computes is computed by the kernel, and written to its result buffer
// when it is an outvar. The caller sizes every buffer from the dimension
// values of the call (jit evaluates them on the host), and one kernel serves
// every value of the dimensions, 0 included.
//   returns  kOk, or an error code (below) after which the results hold
//            unspecified values.
//
// Results the kernel allocates. A result whose size is computed inside the
// kernel (a loop that resizes its state, a cond whose branches return
// different sizes, a size computed from array data) cannot be allocated by
// the caller: compile_kernel's `kernel_sized` names those outvars. For each,
// results[k] points at a cell
//
//   struct { void* data; int64_t shape[rank]; }
//
// that the kernel fills on success (kOk) with a buffer it allocated with
// aligned_alloc(64, ...) (release it with free()) and that buffer's shape.
// On an error code the kernel has freed them and leaves the cells untouched.
// Every other result keeps the preallocated convention, so kernels without
// such results are unchanged. Control-flow bodies are lowered to internal
// functions with this same convention (lower_control.hpp).
//
// The kernel allocates its temporaries itself and frees them on every exit
// path; it is reentrant (one kernel may run on several threads at once).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "../ir/jaxpr.hpp"

namespace dyn::detail {

struct Kernel;  // opaque: the kernel's code (an ORC ResourceTracker) and entry point

struct CompileResult {
  std::shared_ptr<Kernel> kernel;  // freeing the last reference frees the code
  std::string llvm_ir;             // optimised LLVM IR, only when requested
  double seconds = 0;              // lowering + optimisation + code generation
  double lower_seconds = 0;        // of which: jaxpr -> LLVM IR (fusion plan and lowering)
  double llvm_seconds = 0;         // of which: LLVM (verification, optimisation, code generation)
  // Per outvar: the invar position (a donated argument) whose buffer the
  // caller must pass as that result's buffer, or -1 (buffers.hpp, pairs).
  std::vector<int> result_aliases;
  // The kernel as a relocatable object file (what the disk cache stores),
  // its entry point's symbol, and the runtime routines built on demand that
  // it calls (kRoutine* bits): with result_aliases, all load_kernel needs.
  std::string object;
  std::string symbol;
  std::uint32_t routines = 0;
};

// Runtime routines that are compiled into the process's JIT on first need,
// so that a kernel loaded from its object code must ask for them.
inline constexpr std::uint32_t kRoutineGemm = 1;  // dynstage_gemm_f32/f64 (llvm/lower_dot.hpp)

// Test hook: while count_copies() is true, kernels compiled from then on
// add to copied_bytes() the bytes of every whole-array copy they make (an
// operand copied into a dynamic_update_slice's or scatter's result, a loop's
// initial state, a result copied into its slot) and of every update window
// they write, at run time. Tests assert that a loop's updates move O(row)
// bytes per iteration, not O(array). Off: kernels contain no such code.
inline std::atomic<bool>& count_copies() {
  static std::atomic<bool> on{false};
  return on;
}
inline std::atomic<std::int64_t>& copied_bytes() {
  static std::atomic<std::int64_t> n{0};
  return n;
}
// Benchmarks only: false compiles as before buffer assignment existed
// (every update copies its operand, loops double buffer: llvm/buffers.hpp),
// so that one run can time both. Read when a kernel is compiled.
inline std::atomic<bool>& buffer_reuse() {
  static std::atomic<bool> on{true};
  return on;
}
// Outputs of at least this many bytes are written with streaming stores
// (llvm/stream.hpp); 0, the default, means none (measured slower here).
// Tests set it small. Read when a kernel is compiled.
inline std::atomic<std::int64_t>& stream_bytes() {
  static std::atomic<std::int64_t> n{0};
  return n;
}
inline constexpr const char* kCountBytesRoutine = "dynstage_count_bytes";  // the kernels' call

// Kernel return codes: 0, or a bit set of faults (the first in this order
// is reported, with the eager kernels' message).
inline constexpr std::int32_t kKernelOk = 0;
// (Bits 1 and 2 were integer div and rem by zero, which now give XLA's
// results instead: docs/backend.md.)
inline constexpr std::int32_t kKernelPowZeroNegative = 4; // integer 0 ** negative
inline constexpr std::int32_t kKernelOutOfMemory = 8;     // a temporary could not be allocated
inline constexpr std::int32_t kKernelNegativeSize = 16;   // a size computed in the kernel is negative
inline constexpr std::int32_t kKernelGatherEmpty = 32;    // a gather indexes into an operand axis of size 0
inline constexpr std::int32_t kKernelTopKTooLarge = 64;   // top_k's k exceeds a runtime axis size
inline constexpr std::int32_t kKernelCollectiveFailed = 128;  // a collective raised (collective_pending_error())
inline constexpr std::int32_t kKernelPrintFailed = 256;  // debug_print raised (debug_print_pending_error())

// The bytes of the last allocation a kernel could not get on this thread
// (0: none noted), which the out-of-memory error names; throw_kernel_error
// reads and clears it. Set by the kernels' allocation routines
// (llvm/session.hpp). A temporary of a parallel task fails on a worker
// thread: then the error cannot name the size.
inline std::int64_t& kernel_failed_allocation() {
  thread_local std::int64_t bytes = 0;
  return bytes;
}

using KernelFn = std::int32_t (*)(const void* const*, void* const*);

// Compile a jaxpr (static or runtime dimensions). Thread-safe: compiles may
// run concurrently. Throws dyn::Error (TypeError for what the backend cannot
// lower, InternalError for LLVM failures). `kernel_sized[k]`: outvar k is
// allocated by the kernel and returned through a cell (above); empty: none.
// `donated[m]`: invar m is a donated argument (dyn::donate_argnums): the
// kernel may overwrite it, and may ask for it as a result's buffer
// (CompileResult::result_aliases).
CompileResult compile_kernel(const Jaxpr& jaxpr, bool want_ir, const std::vector<bool>& kernel_sized = {},
                             const std::vector<bool>& donated = {});

// A kernel from the object code compile_kernel produced, in this process or
// in another with the same backend_fingerprint() (the disk cache). Throws
// InternalError if LLVM rejects the object; never lowers or optimises.
std::shared_ptr<Kernel> load_kernel(std::string_view object, const std::string& symbol, std::uint32_t routines);

// Everything besides the jaxpr and compile_kernel's arguments that decides a
// kernel's machine code: LLVM's version, the host (triple, CPU, features),
// the vector math functions found (libmvec, SLEEF), the optimisation
// pipeline's settings and the backend's revision. Part of the disk cache's key.
const std::string& backend_fingerprint();

// Run a kernel; throws dyn::ArithmeticError / dyn::Error on its error codes.
void run_kernel(const Kernel& k, const void* const* args, void* const* results);

// The raw entry point, for the hot path (check the code with kernel_check).
KernelFn kernel_entry(const Kernel& k);

// Throw the dyn::Error for a nonzero kernel return code; `jit_site`, if
// given, is the dyn::jit call whose kernel it was: the message then ends
// "The error occurred while running the function jitted at FILE:LINE."
[[noreturn]] void throw_kernel_error(std::int32_t code, const std::source_location* jit_site = nullptr);

inline void kernel_check(std::int32_t code) {
  if (code != kKernelOk) throw_kernel_error(code);
}

// "sapphirerapids +avx512f ..." : what compiled code is specialised for; part
// of any persistent cache key.
const std::string& host_target_id();

// Kernels whose code is currently loaded in the JIT (compiled and not yet
// freed): what tests use to check that cache eviction returns JIT memory.
std::size_t live_kernels();

}  // namespace dyn::detail
