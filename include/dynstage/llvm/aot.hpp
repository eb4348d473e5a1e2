// dynstage: ahead-of-time export (dyn::export_aot, jit/export.hpp) — the
// jit pipeline with an abstract signature, written to an object file and a
// C header instead of the JIT. docs/backend.md, "Ahead-of-time export",
// gives the C function's design; here:
//
//   trace (symbolic shapes from the specs, as jit's polymorphic shapes)
//   -> check_supported, canonicalize_dots, plan_fusion, Lowering::emit_body
//      (exactly jit's) -> the C entry point (emit_c_entry) -> optimise (jit's
//      O3, host CPU, vector math) -> the runtime routines made local
//      (make_self_contained) -> object code, PIC, host CPU (write_object)
//   + the header (header_text, aot_header.hpp).
//
// Part of the backend implementation: compiled only where
// DYNSTAGE_IMPLEMENTATION is defined.
#pragma once
#ifdef DYNSTAGE_IMPLEMENTATION

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Target/TargetOptions.h>

#include "aot_header.hpp"
#include "backend_impl.hpp"

namespace dyn::detail {
namespace llvmjit {

inline bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

inline std::string demangled(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : mangled;
  std::free(d);
  return r;
}

// A symbolic dimension as IR, from the values of the size parameters (the
// canonical form of shape/symbolic.hpp: a sum of coefficient * product of
// factors; floordiv and mod with Python's floor semantics).
struct DimEmitter {
  llvm::IRBuilder<>& b;
  const std::map<std::string, llvm::Value*>& vars;

  llvm::Value* c(std::int64_t v) { return b.getInt64(static_cast<std::uint64_t>(v)); }
  llvm::Value* dim(const Dim& d) { return d.is_static() ? c(d.value()) : expr(*d.expr()); }
  llvm::Value* expr(const DimExpr& e) {
    llvm::Value* sum = c(0);
    for (const auto& [term, coeff] : e.terms) {
      llvm::Value* p = c(coeff);
      for (const auto& [f, exp] : term->factors)
        for (std::int64_t k = 0; k < exp; ++k) p = b.CreateMul(p, factor(*f));
      sum = b.CreateAdd(sum, p);
    }
    return sum;
  }
  llvm::Value* floordiv(llvm::Value* a, llvm::Value* d) {
    d = b.CreateSelect(b.CreateICmpEQ(d, c(0)), c(1), d);  // (a size is never divided by 0: no trap)
    llvm::Value* q = b.CreateSDiv(a, d);
    llvm::Value* inexact = b.CreateICmpNE(b.CreateSRem(a, d), c(0));
    llvm::Value* signs = b.CreateICmpSLT(b.CreateXor(a, d), c(0));
    return b.CreateSub(q, b.CreateZExt(b.CreateAnd(inexact, signs), b.getInt64Ty()));
  }
  llvm::Value* factor(const DimFactor& f) {
    if (f.op == DimOp::var) {
      auto it = vars.find(f.var);
      if (it == vars.end()) internal_error("export_aot: dimension variable " + f.var + " is not a size parameter");
      return it->second;
    }
    llvm::Value* l = expr(*f.lhs);
    llvm::Value* r = expr(*f.rhs);
    switch (f.op) {
      case DimOp::floordiv: return floordiv(l, r);
      case DimOp::mod: return b.CreateSub(l, b.CreateMul(r, floordiv(l, r)));
      case DimOp::max: return b.CreateSelect(b.CreateICmpSGE(l, r), l, r);
      case DimOp::min: return b.CreateSelect(b.CreateICmpSLE(l, r), l, r);
      case DimOp::var: break;
    }
    return l;
  }
};

// The C entry point `sig.name`: checks the sizes and constraints, computes
// the kernel's implicit dimension arguments, passes everything as pointers
// as the kernel ABI wants (backend.hpp), and copies out the cells of the
// results the kernel allocated. `body` is Lowering::emit_body's function.
inline void emit_c_entry(Emitter& E, llvm::Function* body, const Jaxpr& j, const std::vector<AnyArray>& consts,
                         const AotSignature& sig, const std::vector<Dim>& dim_args, const SymbolicScope& scope,
                         const std::vector<bool>& kernel_sized) {
  // A complex scalar would be passed by value, whose C ABI (two floats in
  // SSE registers, or memory) LLVM's struct arguments do not follow.
  for (const AotInput& in : sig.inputs)
    if (is_complex(in.dtype))
      fail<TypeError>("dyn::aot: complex arguments (dtype " + std::string(dtype_name(in.dtype)) +
                      ") are not supported by ahead-of-time export yet");
  for (const AotOutput& o : sig.outputs)
    if (is_complex(o.dtype))
      fail<TypeError>("dyn::aot: complex results (dtype " + std::string(dtype_name(o.dtype)) +
                      ") are not supported by ahead-of-time export yet");
  std::vector<llvm::Type*> params;
  for (const AotInput& in : sig.inputs) params.push_back(in.shape.empty() ? E.mem_type(in.dtype) : E.ptr);
  for (std::size_t k = 0; k < sig.sizes.size(); ++k) params.push_back(E.i64);
  for (const AotOutput& o : sig.outputs) {
    params.push_back(E.ptr);
    if (o.allocated && !o.shape.empty()) params.push_back(E.ptr);
  }
  auto* fty = llvm::FunctionType::get(E.i32, params, false);
  llvm::Function* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, sig.name, E.mod);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(E.ctx, "entry", f));
  llvm::IRBuilder<> entry(&f->getEntryBlock());  // allocas, before everything else
  auto local = [&](llvm::Type* t) {
    entry.SetInsertPoint(&f->getEntryBlock(), f->getEntryBlock().begin());
    return entry.CreateAlloca(t);
  };
  llvm::BasicBlock* bad = llvm::BasicBlock::Create(E.ctx, "bad_size", f);
  unsigned p = 0;
  std::vector<llvm::Value*> inputs;
  for (std::size_t k = 0; k < sig.inputs.size(); ++k) inputs.push_back(f->getArg(p++));
  std::map<std::string, llvm::Value*> vars;
  for (const std::string& v : sig.sizes) {
    llvm::Value* x = f->getArg(p++);
    vars[v] = x;
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(E.ctx, "size_ok", f);
    b.CreateCondBr(b.CreateICmpSGE(x, b.getInt64(1)), ok, bad);
    b.SetInsertPoint(ok);
  }
  DimEmitter de{b, vars};
  for (const SymbolicConstraint& c : scope.explicit_constraints) {
    llvm::Value* d = de.dim(c.diff);
    llvm::BasicBlock* ok = llvm::BasicBlock::Create(E.ctx, "constraint_ok", f);
    b.CreateCondBr(c.cmp == Comparator::eq ? b.CreateICmpEQ(d, b.getInt64(0)) : b.CreateICmpSGE(d, b.getInt64(0)), ok, bad);
    b.SetInsertPoint(ok);
  }
  // The kernel's arguments: constants, then its invars (implicit dimension
  // arguments first, then the inputs).
  std::vector<llvm::Value*> args;
  for (std::size_t k = 0; k < consts.size(); ++k) {
    const AnyArray& a = consts[k];
    const auto bytes = static_cast<std::size_t>(a.size()) * dtype_size(a.dtype());
    std::string data(static_cast<const char*>(a.data()), static_cast<const char*>(a.data()) + bytes);
    if (data.empty()) data.push_back('\0');
    auto* init = llvm::ConstantDataArray::getRaw(data, data.size(), E.i8);
    auto* g = new llvm::GlobalVariable(E.mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init,
                                       sig.name + ".const" + std::to_string(k));
    g->setAlignment(llvm::Align(64));
    args.push_back(g);
  }
  std::size_t dim_k = 0, in_k = 0;
  for (std::size_t k = 0; k < j.invars.size(); ++k) {
    llvm::Value* slot = nullptr;
    if (!j.in_explicit.empty() && !j.in_explicit[k]) {
      slot = local(E.i64);
      b.CreateStore(de.dim(dim_args.at(dim_k++)), slot);
    } else {
      const AotInput& in = sig.inputs.at(in_k);
      slot = inputs[in_k++];
      if (in.shape.empty()) {  // a scalar, by value: the kernel reads it through a pointer
        llvm::Value* cell = local(E.mem_type(in.dtype));
        b.CreateStore(slot, cell);
        slot = cell;
      }
    }
    args.push_back(slot);
  }
  // The results: the implicit ones (dimensions the kernel reports) in
  // scratch cells, the caller's buffers, the cells of kernel-allocated ones.
  const std::size_t implicit = j.out_explicit.empty()
                                   ? 0
                                   : static_cast<std::size_t>(std::count(j.out_explicit.begin(), j.out_explicit.end(), false));
  std::vector<std::pair<llvm::Value*, std::size_t>> cells;  // (cell, output index)
  std::size_t out_k = 0;
  std::vector<llvm::Value*> out_params;
  for (const AotOutput& o : sig.outputs) {
    out_params.push_back(f->getArg(p++));
    if (o.allocated && !o.shape.empty()) ++p;
  }
  for (std::size_t k = 0; k < j.outvars.size(); ++k) {
    const Type& t = j.type_of(j.outvars[k]);
    if (k < implicit) {
      if (t.rank() != 0) internal_error("export_aot: an implicit result that is not a scalar");
      args.push_back(local(E.i64));
      continue;
    }
    if (kernel_sized[k]) {
      llvm::Value* cell = local(llvm::ArrayType::get(E.i64, 1 + static_cast<std::uint64_t>(t.rank())));
      cells.emplace_back(cell, out_k);
      args.push_back(cell);
    } else {
      args.push_back(out_params[out_k]);
    }
    ++out_k;
  }
  llvm::Value* code = b.CreateCall(body, args);
  if (!cells.empty()) {
    llvm::BasicBlock* copy = llvm::BasicBlock::Create(E.ctx, "copy_out", f);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(E.ctx, "done", f);
    b.CreateCondBr(b.CreateICmpEQ(code, b.getInt32(0)), copy, done);
    b.SetInsertPoint(copy);
    for (const auto& [cell, k] : cells) {
      // The output's parameters: out_params[k] (T**), then its shape array.
      unsigned q = static_cast<unsigned>(sig.inputs.size() + sig.sizes.size());
      for (std::size_t m = 0; m < k; ++m) q += 1 + (sig.outputs[m].allocated && !sig.outputs[m].shape.empty() ? 1 : 0);
      b.CreateStore(b.CreateLoad(E.ptr, cell), f->getArg(q));
      for (std::size_t d = 0; d < sig.outputs[k].shape.size(); ++d)
        b.CreateStore(b.CreateLoad(E.i64, b.CreateConstInBoundsGEP1_64(E.i64, cell, 1 + d)),
                      b.CreateConstInBoundsGEP1_64(E.i64, f->getArg(q + 1), d));
    }
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
  b.CreateRet(code);
  b.SetInsertPoint(bad);
  b.CreateRet(b.getInt32(kAotBadSize));
}

// After optimisation: the module's calls of dynstage's runtime routines
// become local definitions, so the object links with libc, libm (and
// libsleef when the vectoriser chose a SLEEF function) only:
//   dynstage_gemm_f32/f64   jit's GEMM routines (the same optimised IR);
//   dynstage_parallel_for   the tasks in order on the calling thread, as the
//                           runtime runs them with one thread (same results);
//   lgamma, lgammaf         through lgamma_r, as jit (no write of signgam);
//   dynstage_temp_alloc/free  aligned_alloc / free (no pool: the object
//                           has no runtime to keep one in).
// Every local function is named after the export (nm shows no dynstage
// name). A call of another routine of dynstage (sort, top_k, debug_print)
// is a TypeError.
inline void make_self_contained(llvm::Module& m, const std::string& name) {
  llvm::LLVMContext& ctx = m.getContext();
  bool gemm = false;
  for (DType d : {DType::f32, DType::f64})
    if (llvm::Function* g = m.getFunction(gemm_routine(d)); g && g->isDeclaration()) gemm = true;
  if (gemm) {
    if (llvm::Linker::linkModules(m, gemm_routines_module(ctx)))
      internal_error("export_aot: linking the GEMM routines into the module failed");
    for (DType d : {DType::f32, DType::f64})
      if (llvm::Function* g = m.getFunction(gemm_routine(d))) {
        g->setLinkage(llvm::GlobalValue::InternalLinkage);
        g->setName(name + ".gemm_" + std::string(dtype_name(d)));
      }
  }
  llvm::IRBuilder<> b(ctx);
  if (llvm::Function* pf = m.getFunction(kParallelForRoutine); pf && pf->isDeclaration()) {
    auto* f = llvm::Function::Create(pf->getFunctionType(), llvm::Function::InternalLinkage, name + ".parallel_for", m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx, "run", f);
    llvm::BasicBlock* none = llvm::BasicBlock::Create(ctx, "none", f);
    b.CreateCondBr(b.CreateICmpSGT(f->getArg(2), b.getInt64(0)), run, none);
    b.SetInsertPoint(run);
    auto* task_ty = llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty()}, false);
    b.CreateRet(b.CreateCall(task_ty, f->getArg(0), {f->getArg(1), b.getInt64(0), f->getArg(2)}));
    b.SetInsertPoint(none);
    b.CreateRet(b.getInt32(0));
    pf->replaceAllUsesWith(f);
    pf->eraseFromParent();
  }
  // The temporaries' pool (session.hpp): plain aligned_alloc / free.
  if (llvm::Function* ta = m.getFunction(kTempAllocRoutine); ta && ta->isDeclaration()) {
    auto* f = llvm::Function::Create(ta->getFunctionType(), llvm::Function::InternalLinkage, name + ".temp_alloc", m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::FunctionCallee al = m.getOrInsertFunction(
        "aligned_alloc", llvm::FunctionType::get(b.getPtrTy(), {b.getInt64Ty(), b.getInt64Ty()}, false));
    b.CreateRet(b.CreateCall(al, {b.getInt64(64), f->getArg(0)}));
    ta->replaceAllUsesWith(f);
    ta->eraseFromParent();
  }
  if (llvm::Function* tf = m.getFunction(kTempFreeRoutine); tf && tf->isDeclaration()) {
    auto* f = llvm::Function::Create(tf->getFunctionType(), llvm::Function::InternalLinkage, name + ".temp_free", m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    b.CreateCall(m.getOrInsertFunction("free", llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false)),
                 {f->getArg(0)});
    b.CreateRetVoid();
    tf->replaceAllUsesWith(f);
    tf->eraseFromParent();
  }
  for (const char* lg : {"lgamma", "lgammaf"}) {
    llvm::Function* g = m.getFunction(lg);
    if (!g || !g->isDeclaration()) continue;
    llvm::Type* t = g->getReturnType();
    auto* f = llvm::Function::Create(g->getFunctionType(), llvm::Function::InternalLinkage, name + "." + lg, m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::Value* sign = b.CreateAlloca(b.getInt32Ty());
    llvm::FunctionCallee r = m.getOrInsertFunction(std::string(lg) + "_r", llvm::FunctionType::get(t, {t, b.getPtrTy()}, false));
    b.CreateRet(b.CreateCall(r, {f->getArg(0), sign}));
    g->replaceAllUsesWith(f);
    g->eraseFromParent();
  }
  for (llvm::Function& f : m) {
    if (!f.isDeclaration() || f.isIntrinsic() || f.use_empty()) continue;
    const std::string n = f.getName().str();
    if (n.rfind("dynstage_", 0) == 0) {
      std::string what = n;
      if (n.rfind("dynstage_sort", 0) == 0) what = "sort";
      else if (n.rfind("dynstage_top_k", 0) == 0) what = "top_k";
      else if (n == kDebugPrintRoutine) what = "dyn::debug_print (its lines go through dynstage's printer)";
      else if (n == kCollectiveRoutine) what = "a collective (psum, all_gather, ...: MPI through dynstage's runtime)";
      else if (n == kFftRoutine) what = "fft (FFTW or dynstage's transforms, through dynstage's runtime)";
      else if (n == kCountBytesRoutine) what = "the copy counter (detail::count_copies(), a test hook; turn it off)";
      fail<TypeError>("dyn::export_aot: the function uses " + what + " (dynstage's runtime routine " + n +
                      "), which an exported object cannot contain; ahead-of-time export supports the primitives "
                      "whose code LLVM generates");
    }
  }
  // Unused routines (the other dtype's GEMM) are dropped.
  for (bool again = true; again;) {
    again = false;
    for (llvm::Function& f : llvm::make_early_inc_range(m))
      if (!f.isDeclaration() && f.hasLocalLinkage() && f.use_empty()) {
        f.eraseFromParent();
        again = true;
      }
  }
  // Local, and named after the export ("mm.micro.f32", not "dynstage.micro.f32").
  for (llvm::Function& f : m) {
    if (f.isDeclaration() || f.getName() == name) continue;
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    std::string n = f.getName().str();
    if (n.rfind(name + ".", 0) == 0) continue;
    for (std::size_t at; (at = n.find("dynstage")) != std::string::npos;) n.erase(at, n.compare(at, 9, "dynstage_") == 0 || n.compare(at, 9, "dynstage.") == 0 ? 9 : 8);
    f.setName(name + "." + n);
  }
}

// The module as an object file at `path` (written to a temporary, then
// renamed): the host's CPU and features, as jit, and position-independent
// code, so it links into PIE executables and shared libraries alike.
inline void write_object(llvm::Module& m, const std::filesystem::path& path) {
  const Host& h = host();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(h.triple, err);
  if (!target) internal_error("export_aot: no LLVM target for " + h.triple + ": " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(h.triple, h.cpu, h.features, opts, llvm::Reloc::PIC_,
                                                                      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) internal_error("export_aot: creating the TargetMachine failed");
  m.setPICLevel(llvm::PICLevel::BigPIC);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(tmp.string(), ec, llvm::sys::fs::OF_None);
    if (ec) fail<Error>("dyn::export_aot: cannot write " + tmp.string() + ": " + ec.message());
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::ObjectFile))
      internal_error("export_aot: the TargetMachine cannot emit object files");
    pm.run(m);
    out.close();
    if (out.has_error()) fail<Error>("dyn::export_aot: cannot write " + tmp.string() + ": " + out.error().message());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail<Error>("dyn::export_aot: cannot write " + path.string() + ": " + ec.message());
}

}  // namespace llvmjit

void export_aot_impl(const AotName& nm, const std::string& dir, const std::vector<AotArg>& args, AotCallFn call,
                     const void* closure) {
  using namespace llvmjit;
  OpSite site(nm.loc);
  const std::string& name = nm.name;
  if (!is_c_identifier(name))
    fail<TypeError>("dyn::export_aot: the name " + py_repr(name) +
                    " is not a C identifier (letters, digits and _, not starting with a digit); it names the C "
                    "function and its files");
  AotSignature sig;
  sig.name = name;
  sig.where = format_location(nm.loc);
  sig.triple = host().triple;
  sig.cpu = host().cpu;
  // The arguments: constraints first (the specs are parsed in their scope).
  std::vector<std::string> constraint_list;
  bool have_constraints = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const AotArg& a = args[k];
    if (a.kind == AotArg::Kind::unsupported)
      fail<TypeError>("dyn::export_aot: argument #" + std::to_string(k) + " has type " + demangled(a.text) +
                      ", which an exported function cannot take: pass dyn::arg<T>(\"(n, 3)\") for an input, or a "
                      "number, bool or enum, which is baked into the object as a static argument");
    if (a.kind == AotArg::Kind::constraints) {
      if (have_constraints) fail<TypeError>("dyn::export_aot: dyn::constraints given twice; give every constraint in one");
      have_constraints = true;
      constraint_list = a.constraints;
    }
  }
  std::shared_ptr<SymbolicScope> scope = SymbolicScope::make(constraint_list);
  sig.constraints = constraint_list;
  std::vector<ArgSpec> leaves;
  std::set<std::string> used_names;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const AotArg& a = args[k];
    if (a.kind == AotArg::Kind::literal) sig.statics.push_back("argument #" + std::to_string(k) + " = " + a.text);
    if (a.kind != AotArg::Kind::abstract) continue;
    const ShapeSpec spec = parse_shape_spec(a.spec, scope);
    Shape shape;
    for (const SpecItem& it : spec.items) {
      if (it.kind != SpecItem::Kind::dim)
        fail<ShapeError>("dyn::export_aot: argument #" + std::to_string(k) + " has the shape spec " + py_repr(a.spec) +
                         ", with '_' or '...', which take their sizes from a concrete argument; an exported function "
                         "has none: write every dimension, e.g. '(n, 3)'");
      shape.push_back(it.dim);
    }
    AotInput in{a.name.empty() ? "arg" + std::to_string(k) : a.name, a.dtype, shape, static_cast<int>(k)};
    if (!is_c_identifier(in.name))
      fail<TypeError>("dyn::export_aot: argument #" + std::to_string(k) + " is named " + py_repr(in.name) +
                      ", which is not a C identifier");
    sig.inputs.push_back(in);
    leaves.push_back(ArgSpec{"args[" + std::to_string(k) + "]", shape});
  }
  // The size parameters: the variables in order of first appearance; the
  // kernel's implicit dimension arguments: those, then the other symbolic
  // dimensions of the inputs (as make_polymorphism orders them for jit).
  std::vector<Dim> dim_args;
  for (const ArgSpec& a : leaves)
    for (const Dim& d : a.shape)
      for (const std::string& v : dim_vars(d))
        if (std::find(sig.sizes.begin(), sig.sizes.end(), v) == sig.sizes.end()) sig.sizes.push_back(v);
  for (const std::string& v : sig.sizes) dim_args.push_back(scope->var(v));
  for (const ArgSpec& a : leaves)
    for (const Dim& d : a.shape)
      if (d.is_symbolic() && std::find(dim_args.begin(), dim_args.end(), d) == dim_args.end()) dim_args.push_back(d);
  for (const std::string& v : sig.sizes) {
    bool clash = v == name;
    for (const AotInput& in : sig.inputs) clash = clash || in.name == v;
    if (clash)
      fail<TypeError>("dyn::export_aot: the dimension variable " + v +
                      " is also the name of the function or of an argument; the C function takes it as a size parameter");
  }

  // Trace, as jit traces with polymorphic shapes.
  ClosedJaxpr cj;
  std::vector<Shape> out_shapes;
  {
    TraceSite trace_site(nm.loc);
    TraceScope ts(scope);
    for (const Dim& d : dim_args) ts.state().new_dim_arg(d);
    std::vector<DimLeaf> dim_leaves;
    TreeDef out_tree;
    std::vector<Value> outs = call(closure, ts, &leaves, dim_leaves, out_tree);
    cj.jaxpr = ts.finish(outs);
    for (const Value& src : ts.const_sources()) {
      if (src.is_tracer())
        fail<TypeError>("UnexpectedTracerError: the function uses a tracer of an enclosing trace; export_aot cannot "
                        "capture outer tracers (pass them as arguments)");
      cj.consts.push_back(src.array);
    }
    out_shapes = ts.out_shapes();
  }
  const Jaxpr& j0 = *cj.jaxpr;
  // Per outvar: allocated by the kernel when a size is not a polynomial of
  // the size parameters (computed from data).
  const std::size_t implicit = j0.out_explicit.empty()
                                   ? 0
                                   : static_cast<std::size_t>(std::count(j0.out_explicit.begin(), j0.out_explicit.end(), false));
  std::vector<bool> kernel_sized(j0.outvars.size(), false);
  const bool several = j0.outvars.size() - implicit > 1;
  for (std::size_t k = implicit; k < j0.outvars.size(); ++k) {
    const Shape& s = out_shapes.at(k - implicit);
    for (const Dim& d : s)
      if (!d.is_static())
        for (const std::string& v : dim_vars(d))
          if (std::find(sig.sizes.begin(), sig.sizes.end(), v) == sig.sizes.end()) kernel_sized[k] = true;
    const std::size_t n = k - implicit;
    sig.outputs.push_back(AotOutput{several ? "out" + std::to_string(n) : "out", j0.type_of(j0.outvars[k]).dtype, s,
                                    kernel_sized[k]});
  }

  // Lower as compile_kernel does, then the C entry point.
  check_supported(j0);
  const Jaxpr jj = canonicalize_dots(j0);
  const FusionPlan plan = plan_fusion(jj, BufferOwnership{});
  const Host& h = host();
  llvm::LLVMContext ctx;
  auto mod = std::make_unique<llvm::Module>(name, ctx);
  mod->setDataLayout(thread_target_machine().createDataLayout());
  mod->setTargetTriple(h.triple);
  {
    Emitter E(*mod);
    Lowering lowering(jj, plan, E, kernel_sized, {}, {});
    llvm::Function* body = lowering.emit_body(name + ".kernel");
    emit_c_entry(E, body, jj, cj.consts, sig, dim_args, *scope, kernel_sized);
  }
  set_host_attributes(*mod);
  keep_outer_loops_rolled(*mod);
  auto verify = [&](const char* when) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*mod, &os)) internal_error(std::string("export_aot produced invalid IR ") + when + ": " + os.str());
  };
  verify("(lowering)");
  optimise(*mod);
  make_self_contained(*mod, name);
  verify("(runtime routines)");
  for (const llvm::Function& f : *mod)
    if (f.isDeclaration() && f.getName().starts_with("Sleef_")) sig.sleef = true;

  const std::filesystem::path out_dir(dir);
  {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) fail<Error>("dyn::export_aot: cannot create the directory " + out_dir.string() + ": " + ec.message());
  }
  write_object(*mod, out_dir / (name + ".o"));
  const std::filesystem::path header = out_dir / (name + ".h");
  const std::filesystem::path tmp = header.string() + ".tmp";
  {
    std::ofstream os(tmp, std::ios::binary);
    os << header_text(sig);
    os.close();
    if (!os) fail<Error>("dyn::export_aot: cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, header, ec);
  if (ec) fail<Error>("dyn::export_aot: cannot write " + header.string() + ": " + ec.message());
}

}  // namespace dyn::detail

#endif  // DYNSTAGE_IMPLEMENTATION
