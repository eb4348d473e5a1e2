// dynstage: the LLVM process state — one ORC LLJIT per process, the host
// TargetMachine (one per thread), the optimisation pipeline and the vector
// math library. Part of the backend implementation: compiled only where
// DYNSTAGE_IMPLEMENTATION is defined.
//
// Threading (TOOLCHAIN.md): the default LLJIT shares one TargetMachine and
// crashes when two threads compile at once. Here every thread owns its
// TargetMachine (thread_local, created on first use) and uses it both for the
// optimisation pipeline and, through PerThreadCompiler, for code generation.
// Each module has its own LLVMContext (ThreadSafeModule). Lookups are
// thread-safe. Nothing in this file throws through LLVM frames: LLVM calls
// us back only inside PerThreadCompiler, which reports failure as
// llvm::Error; llvm::Errors become dyn::Errors in check()/take().
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/IRCompileLayer.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include "../eager/kernels_sort.hpp"
#include "../runtime/fft.hpp"
#include "../errors.hpp"
#include "../ir/prims.hpp"

namespace dyn::detail::llvmjit {

inline std::string error_text(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::logAllUnhandledErrors(std::move(e), os);
  return os.str();
}

// The one boundary where llvm::Error becomes dyn::Error.
inline void check(llvm::Error e, const char* what) {
  if (e) internal_error(std::string("LLVM backend: ") + what + ": " + error_text(std::move(e)));
}
template <class T>
T take(llvm::Expected<T> x, const char* what) {
  if (!x) internal_error(std::string("LLVM backend: ") + what + ": " + error_text(x.takeError()));
  return std::move(*x);
}

// ---------------------------------------------------------------------------
// Host description.

struct Host {
  std::string triple, cpu, features;  // features: "+avx2,+avx512f,..."
  bool avx2 = false, avx512 = false;
  bool libmvec = false;               // glibc's libmvec loaded into the process
  bool sleef = false;                 // SLEEF's libsleef loaded into the process
  std::string id;                     // cpu + features: a cache key component
};

inline const Host& host() {
  static const Host h = [] {
    // Once per process: the native target, its asm printer/parser (ORC emits
    // objects through MC) and libmvec, whose symbols the vectorised kernels
    // call (lookup fails with "Symbols not found: _ZGVdN4v_sin" without it).
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    Host r;
    r.triple = llvm::sys::getProcessTriple();
    r.cpu = llvm::sys::getHostCPUName().str();
    std::vector<std::string> feats;
    for (const auto& f : llvm::sys::getHostCPUFeatures()) feats.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(feats.begin(), feats.end());
    for (const auto& f : feats) {
      if (!r.features.empty()) r.features += ",";
      r.features += f;
      if (f == "+avx2") r.avx2 = true;
      if (f == "+avx512f") r.avx512 = true;
    }
    std::string err;
    r.libmvec = !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1", &err);
    r.sleef = !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libsleef.so.3", &err);
    r.id = r.cpu + " " + r.features + (r.libmvec ? " libmvec" : "") + (r.sleef ? " sleef" : "");
    return r;
  }();
  return h;
}

// This thread's TargetMachine for the host (O3 code generation), created on
// first use. Never throws: it is also called from inside LLVM (the compile
// layer), where a C++ exception must not unwind.
inline llvm::Expected<llvm::TargetMachine*> try_thread_target_machine() {
  struct Slot {
    std::unique_ptr<llvm::TargetMachine> tm;
    std::string error;
  };
  thread_local Slot slot = [] {
    Slot r;
    const Host& h = host();
    llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(h.triple)};
    jtmb.setCPU(h.cpu);
    std::vector<std::string> feats;
    llvm::SmallVector<llvm::StringRef, 64> parts;
    llvm::StringRef(h.features).split(parts, ',', -1, false);
    for (auto p : parts) feats.push_back(p.str());
    jtmb.addFeatures(feats);
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto tm = jtmb.createTargetMachine();
    if (tm) r.tm = std::move(*tm);
    else r.error = error_text(tm.takeError());
    return r;
  }();
  if (!slot.tm) return llvm::createStringError(llvm::inconvertibleErrorCode(), "creating the host TargetMachine: " + slot.error);
  return slot.tm.get();
}

inline llvm::TargetMachine& thread_target_machine() {
  return *take(try_thread_target_machine(), "creating the host TargetMachine");
}

// Code generation with the calling thread's TargetMachine: concurrent
// compiles never share one.
class PerThreadCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
public:
  explicit PerThreadCompiler(llvm::orc::IRSymbolMapper::ManglingOptions mo) : IRCompiler(std::move(mo)) {}
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
    auto tm = try_thread_target_machine();
    if (!tm) return tm.takeError();
    llvm::orc::SimpleCompiler c(**tm);
    return c(m);
  }
};

// ---------------------------------------------------------------------------
// Vector math: for each primitive whose row has a vector math function
// (ir/prims.hpp, vmath), its variants at the host's vector widths from one
// of two providers, whichever exports the symbol first:
//   1. glibc's libmvec, `_ZGV<isa>N<lanes>v_<name>[f]` (documented <= 4 ulp;
//      glibc 2.36 has every function of the table but lgamma);
//   2. SLEEF, `Sleef_<name><d|f><lanes>_u10<isa>` (the 1.0-ulp variants).
// docs/backend.md gives the choice and the measured bound per function. A
// function neither provides stays a scalar call in a vectorised loop. LLVM
// 19's own LIBMVEC-X86 table has only sin/cos/tan/exp/log/pow at 2 and 4
// lanes (f64); we map every function, scalar libm call and intrinsic alike,
// and the AVX-512 8-lane (f64) / 16-lane (f32) variants too. VecDesc holds
// StringRefs: the names live in a static vector.

// The vector variant of libm function `name` (f32 when `f32`) at `lanes`
// lanes of ISA `isa`, or "" if no loaded library exports one.
// `v` is "v" (one operand) or "vv" (two).
inline std::string vector_variant(const std::string& name, const std::string& v, bool f32, int lanes, char isa) {
  const Host& h = host();
  const std::string suffix = f32 ? "f" : "";
  auto exported = [](const std::string& sym) {
    return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(sym) != nullptr;
  };
  if (h.libmvec) {
    std::string m = std::string("_ZGV") + isa + "N" + std::to_string(lanes) + v + "_" + name + suffix;
    if (exported(m)) return m;
  }
  if (h.sleef) {
    const char* sleef_isa = isa == 'b' ? "sse2" : isa == 'd' ? "avx2" : "avx512f";
    std::string m = "Sleef_" + name + (f32 ? "f" : "d") + std::to_string(lanes) + "_u10" + sleef_isa;
    if (exported(m)) return m;
  }
  return "";
}

inline const std::vector<llvm::VecDesc>& vector_functions() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    const Host& h = host();
    struct Isa {
      char letter;
      int bits;
      bool ok;
    };
    const Isa isas[] = {{'b', 128, true}, {'d', 256, h.avx2}, {'e', 512, h.avx512}};
    for (const PrimInfo& p : kPrimTable) {
      const VectorMath& vm = p.vector_math;
      if (!vm) continue;
      for (const Isa& isa : isas) {
        if (!isa.ok) continue;
        for (int f32 = 0; f32 < 2; ++f32) {
          const int lanes = isa.bits / (f32 ? 32 : 64);
          const std::string v = p.arity == 1 ? "v" : "vv";
          const std::string sname = std::string(vm.name) + (f32 ? "f" : "");
          const std::string vname = vector_variant(vm.name, v, f32 != 0, lanes, isa.letter);
          if (vname.empty()) continue;
          const std::string prefix = "_ZGV_LLVM_N" + std::to_string(lanes) + v;
          // Triples: scalar name, vector name, VABI prefix, lanes.
          n.push_back(sname), n.push_back(vname), n.push_back(prefix), n.push_back(std::to_string(lanes));
          if (vm.intrinsic) {
            n.push_back(std::string("llvm.") + vm.name + (f32 ? ".f32" : ".f64"));
            n.push_back(vname), n.push_back(prefix), n.push_back(std::to_string(lanes));
          }
        }
      }
    }
    return n;
  }();
  static const std::vector<llvm::VecDesc> descs = [] {
    std::vector<llvm::VecDesc> d;
    for (std::size_t i = 0; i + 3 < names.size(); i += 4)
      d.emplace_back(names[i], names[i + 1], llvm::ElementCount::getFixed(std::stoul(names[i + 3])), false,
                     names[i + 2]);
    return d;
  }();
  return descs;
}

// Marks m as needing code without masked gathers (lower.hpp,
// note_gather_operand): LLVM 19's SLP vectoriser scheduled a masked gather
// of a buffer above the stores that fill it (docs/reliability.md, seed
// 3642); the prefer-no-gather feature keeps both vectorisers from making
// masked gathers in that module.
inline constexpr const char* kNoMaskedGathers = "dynstage.no_masked_gathers";
inline void no_masked_gathers(llvm::Module& m) { m.getOrInsertNamedMetadata(kNoMaskedGathers); }

// Every function compiled for the host: its CPU and features.
inline void set_host_attributes(llvm::Module& m) {
  const Host& h = host();
  const bool no_gathers = m.getNamedMetadata(kNoMaskedGathers) != nullptr && llvm::Triple(h.triple).isX86();
  for (llvm::Function& f : m) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", h.cpu);
    f.addFnAttr("target-features", no_gathers ? h.features + ",+prefer-no-gather" : h.features);
    // Sapphire Rapids-class tuning prefers 256-bit vectors; the kernels are
    // long-running loops, where 512-bit wins.
    if (h.avx512) f.addFnAttr("prefer-vector-width", "512");
    f.addFnAttr(llvm::Attribute::NoUnwind);
  }
}

// ---------------------------------------------------------------------------
// The optimisation pipeline: new pass manager, O3, host TargetMachine (so the
// vectoriser sees the real vector width and costs) and the vector library.

// The settings of optimise() and of code generation, as text: part of the
// disk cache's key (backend_fingerprint). Change it with them.
inline constexpr const char* kPipelineSettings =
    "O3, loop and SLP vectorisation, no masked gathers where a gather reads a written buffer, unrolling, "
    "interleaving only where asked; codegen Aggressive; "
    "prefer-vector-width 512 on AVX-512; outer loops rolled";

inline void optimise(llvm::Module& m) {
  llvm::TargetMachine& tm = thread_target_machine();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  // SLP keeps small carried arrays in vector registers (a loop over 16
  // doubles). Its masked gathers are off in modules that gather from a
  // buffer they write (set_host_attributes): LLVM 19's SLP miscompiled one.
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  // Interleaving only where loop metadata asks for it (reductions): it
  // doubles the code of elementwise loops for no measurable gain there and
  // costs ~40% of the compile time of a small kernel.
  pto.LoopInterleaving = false;
  llvm::PassBuilder pb(&tm, pto);
  llvm::TargetLibraryInfoImpl tlii{llvm::Triple(m.getTargetTriple())};
  tlii.addVectorizableFunctions(vector_functions());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

// ---------------------------------------------------------------------------
// Runtime routines: C++ functions of dynstage that compiled kernels call by
// name (a `declare` in the module; the signatures are eager/kernels_sort.hpp's). They are
// defined once per process in the main JITDylib as absolute symbols, so a
// kernel loaded from the disk cache links to this process's addresses.

inline std::string sort_routine(DType d) { return "dynstage_sort_" + std::string(dtype_name(d)); }
inline std::string top_k_routine(DType d) { return "dynstage_top_k_" + std::string(dtype_name(d)); }
inline constexpr const char* kSortMultiRoutine = "dynstage_sort_multi";
inline constexpr const char* kDebugPrintRoutine = "dynstage_debug_print";  // eager/debug_print.hpp
inline constexpr const char* kCollectiveRoutine = "dynstage_collective";  // runtime/distributed.hpp
inline constexpr const char* kFftRoutine = "dynstage_fft";                // runtime/fft.hpp
// The copy counter (backend.hpp, count_copies): called only by kernels
// compiled while it is on.
inline void count_bytes_entry(std::int64_t n) { copied_bytes().fetch_add(n, std::memory_order_relaxed); }

// lgamma and lgammaf for the kernels' scalar calls (a loop's remainder, an
// unvectorised loop): glibc's write the global signgam, a data race once
// tasks of one kernel call them on several threads. These are the
// reentrant lgamma_r, as the eager kernels use (eager/kernels_math.hpp); the
// JIT's own definitions win over the process's libm.
inline double lgamma_entry(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}
inline float lgammaf_entry(float x) {
  int sign = 0;
  return ::lgammaf_r(x, &sign);
}

// Kernel temporaries from the heap (emit.hpp's temp(): buffers between
// fused groups, the GEMM's packing buffers) come from these routines, not
// straight from aligned_alloc: they take and give back blocks of
// array/buffer.hpp's BlockPool, the one pool that array outputs use too, so
// the next call of the same kernel, which asks for the same sizes, finds
// them (a freed block of >= 64 KiB is kept). Without it each call of a
// kernel with large temporaries mapped them afresh and paid a page fault
// per 4 KiB: measured, a quarter of jit(grad(mlp loss))'s time
// (docs/benchmarks.md, issue 20).
inline constexpr const char* kTempAllocRoutine = "dynstage_temp_alloc";  // ptr (i64 bytes), 64-byte aligned
inline constexpr const char* kTempFreeRoutine = "dynstage_temp_free";    // void (ptr, i64 bytes)

inline void* temp_alloc_entry(std::int64_t bytes) {
  void* p = BlockPool::get().take(static_cast<std::size_t>(bytes));
  if (!p) kernel_failed_allocation() = bytes;  // for the out-of-memory error's text (backend.hpp)
  return p;
}
// The kernels' aligned_alloc (results the kernel allocates, a loop's
// resizable state): the C library's, noting the size of a failed request.
// (The JIT's own definition wins over the process's, as lgamma's.)
inline void* aligned_alloc_entry(std::size_t align, std::size_t bytes) {
  void* p = std::aligned_alloc(align, bytes);
  if (!p) kernel_failed_allocation() = static_cast<std::int64_t>(bytes);
  return p;
}
inline void temp_free_entry(void* p, std::int64_t bytes) { BlockPool::get().give(p, static_cast<std::size_t>(bytes)); }

inline void define_runtime_routines(llvm::orc::LLJIT& jit) {
  llvm::orc::SymbolMap syms;
  const auto flags = llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable;
  for (int di = 0; di < kNumDTypes; ++di) {
    const auto d = static_cast<DType>(di);
    visit_dtype(d, [&](auto t) {
      using T = decltype(t);
      syms[jit.mangleAndIntern(sort_routine(d))] = {llvm::orc::ExecutorAddr::fromPtr(&kernels::sort_lines_entry<T>), flags};
      syms[jit.mangleAndIntern(top_k_routine(d))] = {llvm::orc::ExecutorAddr::fromPtr(&kernels::top_k_entry<T>), flags};
    });
  }
  syms[jit.mangleAndIntern("lgamma")] = {llvm::orc::ExecutorAddr::fromPtr(&lgamma_entry), flags};
  syms[jit.mangleAndIntern("lgammaf")] = {llvm::orc::ExecutorAddr::fromPtr(&lgammaf_entry), flags};
  syms[jit.mangleAndIntern(kParallelForRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&parallel_for_entry), flags};
  syms[jit.mangleAndIntern(kTempAllocRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&temp_alloc_entry), flags};
  syms[jit.mangleAndIntern("aligned_alloc")] = {llvm::orc::ExecutorAddr::fromPtr(&aligned_alloc_entry), flags};
  syms[jit.mangleAndIntern(kTempFreeRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&temp_free_entry), flags};
  syms[jit.mangleAndIntern(kCountBytesRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&count_bytes_entry), flags};
  syms[jit.mangleAndIntern(kSortMultiRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&kernels::sort_multi_entry), flags};
  syms[jit.mangleAndIntern(kDebugPrintRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&::dynstage_debug_print), flags};
  syms[jit.mangleAndIntern(kCollectiveRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&::dynstage_collective), flags};
  syms[jit.mangleAndIntern(kFftRoutine)] = {llvm::orc::ExecutorAddr::fromPtr(&::dynstage_fft), flags};
  check(jit.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(syms))), "defining the runtime routines");
}

// ---------------------------------------------------------------------------
// The process's LLJIT: created on first use (thread-safe static init) and
// deliberately never destroyed, so kernels held by static caches can still
// free their code during program exit.

class Session {
public:
  static Session& get() {
    static Session* s = new Session();
    return *s;
  }
  llvm::orc::LLJIT& jit() { return *jit_; }
  std::string fresh_name() { return "dynstage_kernel_" + std::to_string(counter_.fetch_add(1)); }

  // A JITDylib of its own for one kernel: it links against the main
  // JITDylib first (the runtime routines, which win over the process's
  // symbols: lgamma), then what the main one links against (the process's
  // symbols: libm, libmvec, SLEEF). Kernels live in separate JITDylibs so
  // that an object from the disk cache, whose entry point was named by the
  // process that compiled it, never clashes with a kernel of this process.
  llvm::orc::JITDylib& kernel_dylib() {
    llvm::orc::JITDylib& main = jit_->getMainJITDylib();
    auto created = jit_->createJITDylib("dylib_" + std::to_string(dylibs_.fetch_add(1)));
    if (!created) internal_error("LLVM backend: creating a kernel's JITDylib: " + error_text(created.takeError()));
    llvm::orc::JITDylib& jd = *created;
    llvm::orc::JITDylibSearchOrder order{{&main, llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}};
    main.withLinkOrderDo([&](const llvm::orc::JITDylibSearchOrder& o) {
      for (const auto& link : o)
        if (link.first != &main) order.push_back(link);
    });
    jd.setLinkOrder(std::move(order));
    return jd;
  }

private:
  Session() {
    const Host& h = host();
    llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(h.triple)};
    jtmb.setCPU(h.cpu);
    jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    llvm::orc::LLJITBuilder b;
    b.setJITTargetMachineBuilder(jtmb);
    b.setCompileFunctionCreator([](llvm::orc::JITTargetMachineBuilder)
                                    -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
      auto tm = try_thread_target_machine();
      if (!tm) return tm.takeError();
      return std::make_unique<PerThreadCompiler>(llvm::orc::irManglingOptionsFromTargetOptions((*tm)->Options));
    });
    jit_ = take(b.create(), "creating the ORC LLJIT");
    define_runtime_routines(*jit_);
  }
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::atomic<unsigned long> counter_{0}, dylibs_{0};
};

}  // namespace dyn::detail::llvmjit

#endif  // DYNSTAGE_IMPLEMENTATION
