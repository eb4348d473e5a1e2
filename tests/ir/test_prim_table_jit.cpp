// The primitive table (prims.hpp, issue 15), the LLVM backend's side: every
// primitive is lowered (its kernel agrees with the interpreter on the
// primitive's sample) or refused with a stated error, and the differential
// fuzzer generates every primitive. Printer, shape rule and eager kernel:
// test_prim_table.cpp.
#include <dynstage/core.hpp>
#include <dynstage/llvm/backend.hpp>

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "../fuzz/fuzz.hpp"
#include "prim_samples.hpp"
#include "../test_util.hpp"

namespace {

using namespace dyn;
using namespace dyn::detail;
using prim_samples::all_prims;
using prim_samples::Sample;
using prim_samples::sample_of;

// Primitives the LLVM backend refuses, with the TypeError it raises. None
// today; a primitive added without a lowering goes here with its message,
// and the backend must raise exactly that (llvmjit::check_supported).
const std::map<Prim, std::string> kNotLowered = {};

// Primitives the fuzzer does not generate, each with the reason.
const std::map<Prim, std::string> kNotFuzzed = {
    {Prim::debug_callback,
     "an effect with no outputs: the fuzzer compares the outputs of jit and eager, which a print does not change; "
     "its lines are compared by tests/jit/test_jit_debug_print.cpp"},
    // (The collectives are generated inside a dyn::shard_map over the
    // one-rank mesh, Op::collective; tests/distributed/ runs them on more ranks.)
};

// The seeds whose programs must cover every primitive (dynstage_fuzz's
// default program size): 5000 seeds (with eleven dtypes a float operand,
// which `log` needs, is rarer than it was with five, and with forty unary
// operations to pick from `acos` first appears after seed 4000); tracing
// them takes about two seconds.
constexpr std::uint64_t kFirstSeed = 1;
constexpr int kSeeds = 5000;

std::vector<AnyArray> run_compiled(const Sample& s) {
  const Jaxpr& j = *s.jaxpr.jaxpr;
  const CompileResult r = compile_kernel(j, false);
  std::vector<const void*> in;
  for (const AnyArray& a : s.jaxpr.consts) in.push_back(a.data());
  for (const AnyArray& a : s.args) in.push_back(a.data());
  std::vector<AnyArray> outs;
  std::vector<void*> res;
  for (const Atom& o : j.outvars) {
    const Type& t = j.type_of(o);
    std::vector<std::int64_t> shape;
    for (const JDim& d : t.shape) shape.push_back(d.value);
    outs.emplace_back(Storage::make(t.dtype, shape, false));
    res.push_back(outs.back().storage().data);
  }
  run_kernel(*r.kernel, in.data(), res.data());
  return outs;
}

}  // namespace

TEST_CASE("prim table: every primitive is lowered by LLVM, or refused with a stated error") {
  for (Prim p : all_prims()) {
    INFO("primitive " << prim_name(p));
    const Sample s = sample_of(p);
    if (const auto it = kNotLowered.find(p); it != kNotLowered.end()) {
      CHECK(test_util::message_of<TypeError>([&] { compile_kernel(*s.jaxpr.jaxpr, false); }) == it->second);
      continue;
    }
    const std::vector<AnyArray> want = eval_jaxpr(s.jaxpr, s.args);
    const std::vector<AnyArray> got = run_compiled(s);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("output #" << k << ": jit " << got[k] << " vs eager " << want[k]);
      // libmvec (<= 4 ulp), reassociated sums and FMA dot products round
      // differently from eager (docs/backend.md); everything else is exact.
      CHECK(got[k].dtype() == want[k].dtype());
      CHECK(allclose(got[k], want[k], 1e-5));
    }
  }
}

TEST_CASE("prim table: the fuzzer generates every primitive") {
  const std::set<Prim> generated = fuzz::generated_primitives(kFirstSeed, kSeeds);
  for (Prim p : all_prims()) {
    INFO("primitive " << prim_name(p));
    if (kNotFuzzed.count(p)) CHECK_MESSAGE(!generated.count(p), "generated after all: remove it from kNotFuzzed");
    else CHECK_MESSAGE(generated.count(p), "dynstage_fuzz generates no program with this primitive "
                                           "(tests/fuzz/fuzz_gen.cpp), nor is it in kNotFuzzed with a reason");
  }
}
