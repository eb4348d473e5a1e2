// dynstage: the LLVM backend's implementation (definitions of backend.hpp).
//
// Compiled in exactly one translation unit per program: the one that defines
// DYNSTAGE_IMPLEMENTATION before including <dynstage/dynstage.hpp>
// (src/dynstage.cpp, which Meson builds once into dependency('dynstage'), or a
// user file when building without Meson). Everywhere else this header is empty, so LLVM's headers
// (5-16 s per TU) are parsed once per program.
//
// The five functions of backend.hpp are defined here non-inline (one
// definition per program); everything else is inline in dyn::detail::llvmjit.
//
// DYNSTAGE_BACKEND_TIMES=1 prints each compile's stage times to stderr.
//
// Pipeline of compile_kernel, each stage a function (types may have runtime
// dimensions: one kernel serves every value of them):
//   canonicalize_dots -> plan_fusion -> Lowering::emit_body (+ C-ABI entry;
//   control-flow bodies become internal functions, lower_control.hpp)
//   -> keep_outer_loops_rolled -> verifyModule -> optimise (O3, host TM, libmvec) -> [print IR]
//   -> code generation (SimpleCompiler, the thread's TargetMachine) into an object file
//   -> load_object: LLJIT addObjectFile into the kernel's own JITDylib -> lookup (linking)
// load_kernel (the disk cache, jit/disk_cache.hpp) is the last step alone.
#pragma once

#include "backend.hpp"

#ifdef DYNSTAGE_IMPLEMENTATION

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <llvm-c/Core.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

#include "emit.hpp"
#include "fusion.hpp"
#include "lower.hpp"
#include "lower_body.hpp"
#include "lower_control.hpp"
#include "lower_pointwise.hpp"
#include "lower_argreduce.hpp"
#include "lower_sort.hpp"
#include "lower_fft.hpp"
#include "lower_cumulative.hpp"
#include "lower_scatter.hpp"
#include "lower_dot.hpp"
#include "lower_expr.hpp"
#include "lower_remap.hpp"
#include "lower_complex.hpp"
#include "lower_roots.hpp"
#include "lower_windows.hpp"
#include "session.hpp"

namespace dyn::detail {

namespace llvmjit {
// Kernels with a ResourceTracker whose code has not been removed (live_kernels()).
inline std::atomic<std::size_t> live_kernel_count{0};
}  // namespace llvmjit

// The compiled code of one kernel. Destroying it frees the code (the
// kernel's ResourceTracker); LLVM errors there cannot be reported, only
// dropped, because destructors must not throw.
struct Kernel {
  llvm::orc::JITDylib* jd = nullptr;  // the kernel's own (Session::kernel_dylib)
  KernelFn fn = nullptr;
  Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() {
    if (!jd) return;
    llvm::consumeError(llvmjit::Session::get().jit().getExecutionSession().removeJITDylib(*jd));
    llvmjit::live_kernel_count.fetch_sub(1, std::memory_order_relaxed);
  }
};

namespace llvmjit {

// What the backend cannot lower. Runtime dimensions are lowered (lower.hpp):
// a dimension must be an integer scalar variable of the jaxpr. Control flow
// is lowered (lower_control.hpp); its bodies are checked the same way.
inline void check_supported(const Jaxpr& j) {
  for (std::size_t v = 0; v < j.types.size(); ++v)
    for (const JDim& d : j.types[v].shape)
      if (!d.is_static()) {
        const auto dv = static_cast<std::size_t>(d.var);
        if (dv >= j.types.size() || j.types[dv].rank() != 0 || !is_index_dtype(j.types[dv].dtype))
          fail<TypeError>("jit: variable #" + std::to_string(v) + " has a dimension that is not an integer scalar");
      }
  for (const Eqn& e : j.eqns) {
    for (const Jaxpr* b : bodies_of(e.params)) check_supported(*b);
  }
  for (const Eqn& e : j.eqns)
    if (e.outputs.size() != 1 && !has_several_outputs(prim_kind(e.prim)))
      fail<TypeError>(std::string("jit: the LLVM backend cannot lower ") + std::string(prim_name(e.prim)) +
                      " with " + std::to_string(e.outputs.size()) + " outputs");
}

// The exported entry point: unpacks the pointer arrays and calls the body
// (which the inliner folds in; its noalias parameters become scoped alias
// metadata).
inline void emit_entry(Emitter& E, llvm::Function* body, const std::string& name, std::size_t nin, std::size_t nout) {
  auto& b = E.b;
  auto* fty = llvm::FunctionType::get(E.i32, {E.ptr, E.ptr}, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, E.mod);
  b.SetInsertPoint(llvm::BasicBlock::Create(E.ctx, "entry", f));
  std::vector<llvm::Value*> args;
  for (std::size_t k = 0; k < nin; ++k)
    args.push_back(b.CreateLoad(E.ptr, b.CreateConstInBoundsGEP1_64(E.ptr, f->getArg(0), k)));
  for (std::size_t k = 0; k < nout; ++k)
    args.push_back(b.CreateLoad(E.ptr, b.CreateConstInBoundsGEP1_64(E.ptr, f->getArg(1), k)));
  b.CreateRet(b.CreateCall(body, args));
}

// Wall and this thread's CPU time, for DYNSTAGE_BACKEND_TIMES=1 (the
// machine may be shared: CPU time is the compile cost proper).
struct Clock {
  std::chrono::steady_clock::time_point wall;
  double cpu_ms;
  static Clock now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return {std::chrono::steady_clock::now(), static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6};
  }
};


// Only innermost loops are unrolled. LLVM fully unrolls a loop with a
// small constant trip count even when its body is a loop: a slice of an
// f32[8,64,64,3] copied row by row became eight copies of the row loop, and
// a 3x3 convolution written as nine products 330 KB of IR (0.5 s to
// compile). An outer loop gains nothing from unrolling (its body is a
// loop); its inner loops are still unrolled and vectorised as LLVM sees fit.
// Run before optimisation, on the loops as lowered.
inline void keep_outer_loops_rolled(llvm::Module& m) {
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    llvm::DominatorTree dt(f);
    llvm::LoopInfo li(dt);
    for (llvm::Loop* l : li.getLoopsInPreorder())
      if (!l->getSubLoops().empty()) llvm::addStringMetadataToLoop(l, "llvm.loop.unroll.disable", 1);  // (0 would read as "false")
  }
}

// A kernel from its object code, in a JITDylib of its own: links it (the
// runtime routines it calls must exist first) and looks up its entry point.
inline std::shared_ptr<Kernel> load_object(std::unique_ptr<llvm::MemoryBuffer> object, const std::string& symbol,
                                           std::uint32_t routines) {
  if (routines & kRoutineGemm) define_gemm_routines();
  Session& session = Session::get();
  auto kernel = std::make_shared<Kernel>();
  kernel->jd = &session.kernel_dylib();
  live_kernel_count.fetch_add(1, std::memory_order_relaxed);
  check(session.jit().addObjectFile(*kernel->jd, std::move(object)), "adding the kernel's object code");
  auto addr = session.jit().lookup(*kernel->jd, symbol);
  if (!addr) internal_error("LLVM backend: linking the kernel: " + error_text(addr.takeError()));
  kernel->fn = addr->toPtr<KernelFn>();
  return kernel;
}

}  // namespace llvmjit

CompileResult compile_kernel(const Jaxpr& jaxpr, bool want_ir, const std::vector<bool>& kernel_sized,
                             const std::vector<bool>& donated) {
  using namespace llvmjit;
  const Clock t0 = Clock::now();
  check_supported(jaxpr);
  const Jaxpr j = canonicalize_dots(jaxpr);
  // Donated arguments are the kernel's to overwrite; each may also become
  // the buffer of a result computed from it by in-place updates (buffers.hpp).
  BufferOwnership own;
  if (std::find(donated.begin(), donated.end(), true) != donated.end()) {
    own.owned_invars = donated;
    own.owned_invars.resize(j.invars.size(), false);
    own.pair = donation_pairs(j, own.owned_invars, kernel_sized);
  }
  const FusionPlan plan = plan_fusion(j, own);

  Session& session = Session::get();
  const Host& h = host();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>("dynstage", *ctx);
  mod->setDataLayout(thread_target_machine().createDataLayout());
  mod->setTargetTriple(h.triple);
  const std::string name = session.fresh_name();
  {
    Emitter E(*mod);
    Lowering lowering(j, plan, E, kernel_sized, {}, own.owned_invars);
    llvm::Function* body = lowering.emit_body(name + ".body");
    emit_entry(E, body, name, j.constvars.size() + j.invars.size(), j.outvars.size());
  }
  set_host_attributes(*mod);
  keep_outer_loops_rolled(*mod);
  {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*mod, &os)) internal_error("LLVM lowering produced invalid IR: " + os.str());
  }
  const Clock t1 = Clock::now();
  optimise(*mod);
  const Clock t2 = Clock::now();

  CompileResult result;
  result.result_aliases = plan.paired;
  if (want_ir) {
    // The fusion plan first, as IR comments (the text stays valid .ll).
    result.llvm_ir = "; fusion plan (fusion.hpp):\n";
    const std::string ps = plan_str(j, plan);
    for (std::size_t a = 0, nl; a < ps.size(); a = nl + 1) {
      nl = ps.find('\n', a);
      if (nl == std::string::npos) nl = ps.size();
      result.llvm_ir += ";   " + ps.substr(a, nl - a) + "\n";
    }
    llvm::raw_string_ostream os(result.llvm_ir);
    mod->print(os, nullptr);
  }
  // Code generation here, on this thread with its TargetMachine, into an
  // object file: what the disk cache stores and load_kernel links.
  for (DType d : {DType::f32, DType::f64})
    if (mod->getFunction(gemm_routine(d))) result.routines |= kRoutineGemm;
  std::unique_ptr<llvm::MemoryBuffer> object =
      take(llvm::orc::SimpleCompiler(thread_target_machine())(*mod), "generating the kernel's code");
  result.object.assign(object->getBufferStart(), object->getBufferSize());
  result.symbol = name;
  result.kernel = load_object(std::move(object), name, result.routines);
  const Clock t3 = Clock::now();
  result.seconds = std::chrono::duration<double>(t3.wall - t0.wall).count();
  result.lower_seconds = std::chrono::duration<double>(t1.wall - t0.wall).count();
  result.llvm_seconds = result.seconds - result.lower_seconds;
  static const bool report = [] {
    const char* v = std::getenv("DYNSTAGE_BACKEND_TIMES");
    return v && *v && std::string(v) != "0";
  }();
  if (report) {
    auto ms = [](const Clock& a, const Clock& b) { return std::chrono::duration<double, std::milli>(b.wall - a.wall).count(); };
    std::fprintf(stderr,
                 "dynstage backend: %s: lower %.2f ms, optimise %.2f ms, codegen %.2f ms (wall); "
                 "%.2f / %.2f / %.2f ms (thread CPU)\n",
                 name.c_str(), ms(t0, t1), ms(t1, t2), ms(t2, t3), t1.cpu_ms - t0.cpu_ms, t2.cpu_ms - t1.cpu_ms,
                 t3.cpu_ms - t2.cpu_ms);
  }
  return result;
}

void throw_kernel_error(std::int32_t code, const std::source_location* jit_site) {
  // (The kernel reports a code, not the operation's place: the jitted
  // function's is the closest there is.)
  auto place = [&](std::string msg) {
    if (jit_site) msg += "\nThe error occurred while running the function jitted at " + format_location(*jit_site) + ".";
    return msg;
  };
  // A print that raised stopped the kernel: its exception (the sink's) is
  // the cause, rethrown as eagerly; the fault bits beside it came earlier.
  if (code & kKernelPrintFailed) {  // the print's own exception (the sink's), as eagerly
    std::exception_ptr e = std::exchange(debug_print_pending_error(), nullptr);
    if (e) std::rethrow_exception(e);
  }
  if (code & kKernelPowZeroNegative) throw ArithmeticError(with_context(place("pow: integer zero raised to a negative power")));
  if (code & kKernelOutOfMemory) {
    // (A byte count that overflows int64 reaches the allocator saturated,
    // rounded down to a multiple of 64: emit.hpp.)
    const std::int64_t bytes = std::exchange(kernel_failed_allocation(), 0);
    const std::string what = " inside the function (a temporary, or a result whose size the function computes)";
    throw MemoryError(with_context(place(
        bytes >= (INT64_MAX & ~std::int64_t{63})
            ? "jit: out of memory: cannot allocate " + std::to_string(bytes) + " bytes or more (the size overflows int64)" + what
        : bytes > 0 ? "jit: out of memory: cannot allocate " + std::to_string(bytes) + " bytes" + what
                    : "jit: out of memory" + what)));
  }
  if (code & kKernelNegativeSize)
    throw ShapeError(with_context(place("jit: a size computed inside the function is negative (an array dimension from data, or "
                           "integer arithmetic on sizes that overflowed)")));
  if (code & kKernelGatherEmpty)
    throw IndexError(with_context(place("gather: cannot index into an operand axis of size 0 (the result is not empty)")));
  if (code & kKernelTopKTooLarge)
    throw ShapeError(with_context(place("top_k: k is larger than the size of the axis it selects from")));
  if (code & kKernelCollectiveFailed) {  // the collective's own error (runtime/distributed.hpp), as eagerly
    std::exception_ptr e = std::exchange(collective_pending_error(), nullptr);
    if (e) std::rethrow_exception(e);
  }
  internal_error("kernel returned unknown code " + std::to_string(code));
}

std::shared_ptr<Kernel> load_kernel(std::string_view object, const std::string& symbol, std::uint32_t routines) {
  return llvmjit::load_object(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), symbol), symbol, routines);
}

const std::string& backend_fingerprint() {
  static const std::string fp = [] {
    using namespace llvmjit;
    const Host& h = host();
    // The library's version at run time (libLLVM is shared: it may differ
    // from the headers this file was compiled with).
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    // The vector math mappings the loop vectoriser may use: what libmvec and
    // SLEEF export here decides which calls a vectorised loop makes.
    std::string vmath;
    for (const llvm::VecDesc& d : vector_functions())
      vmath += d.getScalarFnName().str() + ">" + d.getVectorFnName().str() + "@" +
               std::to_string(d.getVectorizationFactor().getKnownMinValue()) + " ";
    return "LLVM " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
           "\ntriple " + h.triple + "\ncpu " + h.cpu + "\nfeatures " + h.features + "\nvector math " + vmath +
           "\npipeline " + kPipelineSettings;
  }();
  return fp;
}

void run_kernel(const Kernel& k, const void* const* args, void* const* results) {
  kernel_check(k.fn(args, results));
}

KernelFn kernel_entry(const Kernel& k) { return k.fn; }

const std::string& host_target_id() { return llvmjit::host().id; }

std::size_t live_kernels() { return llvmjit::live_kernel_count.load(std::memory_order_relaxed); }

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
