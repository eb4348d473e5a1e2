// dyn::export_aot (API section 15, docs/backend.md "Ahead-of-time export"):
// the header's declaration and documentation, the object file, results equal
// to jit bit for bit (the object linked into a shared library with the
// system's C compiler and loaded with dlopen), results of data-dependent size,
// the size checks, and the errors: arguments the C function cannot express,
// specs without every dimension, names that are not C identifiers, unsupported
// primitives, a directory that cannot be written.
#include <dynstage/dynstage.hpp>

#include <doctest/doctest.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.hpp"

namespace {

namespace fs = std::filesystem;
using dyn::Array;
using i64 = std::int64_t;
using test_util::message_of;

// This process's directory of exported files, removed at exit.
const fs::path& aot_root() {
  static const struct Root {
    fs::path p = fs::temp_directory_path() / ("dynstage_test_aot_" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } root;
  return root.p;
}

fs::path aot_dir(const std::string& sub) {
  fs::path d = aot_root() / sub;
  fs::create_directories(d);
  return d;
}

std::string read_text(const fs::path& p) {
  std::ifstream is(p, std::ios::binary);
  std::stringstream ss;
  ss << is.rdbuf();
  return ss.str();
}

// The header with its one host-dependent line (the CPU) replaced.
std::string header_without_host(const fs::path& p) {
  std::string h = read_text(p);
  const auto a = h.find("   Compiled for ");
  if (a == std::string::npos) return h;
  const auto e = h.find('\n', a);
  return h.substr(0, a) + "   Compiled for HOST" + h.substr(e);
}

// The exported object linked into a shared library (the system's C compiler)
// and loaded: what a C program linking name.o calls.
struct Loaded {
  void* lib = nullptr;
  explicit Loaded(const fs::path& dir, const std::string& name) {
    const fs::path so = dir / ("lib" + name + ".so");
    // The link line the header gives (-lm, and -lsleef when it uses SLEEF).
    const bool sleef = read_text(dir / (name + ".h")).find(" -lsleef\n") != std::string::npos;
    const std::string cmd = "cc -shared -o '" + so.string() + "' '" + (dir / (name + ".o")).string() + "' -lm" +
                            (sleef ? " -lsleef" : "");
    REQUIRE(std::system(cmd.c_str()) == 0);
    lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib != nullptr);
  }
  ~Loaded() {
    if (lib) ::dlclose(lib);
  }
  template <class Fn>
  Fn get(const std::string& name) {
    void* p = ::dlsym(lib, name.c_str());
    REQUIRE(p != nullptr);
    return reinterpret_cast<Fn>(p);
  }
};

template <class T>
bool same_bits(const T* a, const T* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(T)) == 0;
}

struct Params {
  int n = 3;
  bool operator==(const Params&) const = default;
};

}  // namespace

TEST_CASE("export_aot: the header declares and documents the C function") {
  const fs::path dir = aot_dir("header");
  dyn::export_aot([](const auto& x, double s) { return dyn::sum(x * s, {1}); }, "rowsum", dir.string(),
                  dyn::arg<double>("(n, 3)", "x"), 2.0);
  CHECK(fs::exists(dir / "rowsum.o"));
  const std::string h = header_without_host(dir / "rowsum.h");
  const std::string golden =
      "   int32_t rowsum(const double* x, int64_t n, double* out);\n"
      "\n"
      "   Buffers are row-major (C order) and contiguous; bool is one byte, 0 or 1.\n"
      "   Inputs (only read; they may overlap each other):\n"
      "     x: double[n, 3]\n"
      "   Sizes (the dimension variables of the shapes, each >= 1):\n"
      "     n\n"
      "   Static arguments, baked in:\n"
      "     argument #1 = 2\n"
      "   Results, in the order of the function's flattened results:\n"
      "     out: double[n], allocated by the caller (must not overlap an input or another result)\n"
      "   Returns ROWSUM_OK (0), or a bit set of the ROWSUM_ERR_ codes below; after an error the\n"
      "   caller-allocated results hold unspecified values.\n"
      "   Runs on the calling thread only; reentrant (several threads may call it at once).\n"
      "   Compiled for HOST\n"
      "   Link: cc your_program.c rowsum.o -lm\n"
      "*/\n"
      "#ifndef ROWSUM_H\n"
      "#define ROWSUM_H\n"
      "\n"
      "#include <stdint.h>\n"
      "\n"
      "#ifdef __cplusplus\n"
      "extern \"C\" {\n"
      "#endif\n"
      "\n"
      "#define ROWSUM_OK 0\n"
      "#define ROWSUM_ERR_POW_ZERO_NEGATIVE 4  /* integer 0 raised to a negative power */\n"
      "#define ROWSUM_ERR_OUT_OF_MEMORY 8  /* a temporary or result could not be allocated */\n"
      "#define ROWSUM_ERR_NEGATIVE_SIZE 16  /* a size computed from data is negative */\n"
      "#define ROWSUM_ERR_GATHER_EMPTY 32  /* a gather indexes into an axis of size 0 */\n"
      "#define ROWSUM_ERR_BAD_SIZE 128  /* a size parameter < 1, or a constraint violated */\n"
      "\n"
      "int32_t rowsum(const double* x, int64_t n, double* out);\n"
      "\n"
      "#ifdef __cplusplus\n"
      "}\n"
      "#endif\n"
      "\n"
      "#endif\n";
  const auto first = h.find('\n');
  REQUIRE(first != std::string::npos);
  CHECK(h.substr(0, first).find("/* rowsum.h: generated by dyn::export_aot (dynstage) at ") == 0);
  CHECK(h.substr(first + 2) == golden);
  // An object file for this machine: ELF, defining the one global symbol.
  const std::string o = read_text(dir / "rowsum.o");
  REQUIRE(o.size() > 4);
  CHECK(o.substr(0, 4) == "\x7f" "ELF");
}

TEST_CASE("export_aot: results equal jit's bit for bit (threads, vector math, GEMM, scalars)") {
  const fs::path dir = aot_dir("same");
  // Large enough for parallel tasks in jit (a sum of 16384-element tasks),
  // with libm/libmvec functions (exp, sin) and lgamma.
  auto f = [](const auto& x, const auto& a) {
    auto y = dyn::exp(dyn::sin(x)) * a + dyn::lgamma(dyn::abs(x) + 1.0);
    return std::make_tuple(y, dyn::sum(y * y));
  };
  dyn::export_aot(f, "vecmath", dir.string(), dyn::arg<double>("(n,)", "x"), dyn::arg<double>("()", "a"));
  auto mm = [](const auto& a, const auto& b) { return dyn::matmul(a, b) + 1.0f; };
  dyn::export_aot(mm, "mm", dir.string(), dyn::arg<float>("(m, k)"), dyn::arg<float>("(k, n)"));
  Loaded lib_v(dir, "vecmath"), lib_m(dir, "mm");

  const i64 n = 100003;
  Array<double> x = test_util::iota_array<double>({n}, -50.0, 0.001);
  const double a = 1.5;
  // jit with the same abstract signature (one kernel for every n): the same
  // program as the export, so the same bits.
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(n,)", "()"});
  auto [y, s] = jf(x, Array<double>({}, {a}));
  std::vector<double> y2(static_cast<std::size_t>(n));
  double s2 = 0;
  auto fn = lib_v.get<std::int32_t (*)(const double*, double, int64_t, double*, double*)>("vecmath");
  CHECK(fn(x.data(), a, n, y2.data(), &s2) == 0);
  CHECK(same_bits(y.data(), y2.data(), y2.size()));
  CHECK(std::memcmp(s.data(), &s2, sizeof s2) == 0);

  const i64 M = 70, K = 65, N = 90;  // the blocked GEMM routine (>= 32^3 multiply-adds)
  Array<float> A = test_util::iota_array<float>({M, K}, -1.0f, 0.01f);
  Array<float> B = test_util::iota_array<float>({K, N}, 2.0f, -0.003f);
  Array<float> C = dyn::jit(mm, dyn::polymorphic_shapes{"(m, k)", "(k, n)"})(A, B);
  std::vector<float> C2(static_cast<std::size_t>(M * N));
  auto fm = lib_m.get<std::int32_t (*)(const float*, const float*, int64_t, int64_t, int64_t, float*)>("mm");
  CHECK(fm(A.data(), B.data(), M, K, N, C2.data()) == 0);
  CHECK(same_bits(C.data(), C2.data(), C2.size()));
  // A size below 1 is refused.
  CHECK(fm(A.data(), B.data(), 0, K, N, C2.data()) == 128);
}

TEST_CASE("export_aot: a result of data-dependent size is allocated by the function and freed by the caller") {
  const fs::path dir = aot_dir("compress");
  auto f = [](const auto& x) { return dyn::compress(x > 0.0, x * 2.0); };
  dyn::export_aot(f, "positive", dir.string(), dyn::arg<double>("(n,)", "x"));
  const std::string h = read_text(dir / "positive.h");
  CHECK(h.find("int32_t positive(const double* x, int64_t n, double** out, int64_t out_shape[1]);") != std::string::npos);
  CHECK(h.find("release it with free()") != std::string::npos);
  Loaded lib(dir, "positive");
  auto fn = lib.get<std::int32_t (*)(const double*, int64_t, double**, int64_t*)>("positive");
  Array<double> x({7}, {1.0, -2.0, 3.0, 0.0, 5.0, -6.0, 7.5});
  Array<double> want = dyn::jit(f, dyn::polymorphic_shapes{"(n,)"})(x);
  double* out = nullptr;
  i64 shape[1] = {-1};
  REQUIRE(fn(x.data(), 7, &out, shape) == 0);
  REQUIRE(shape[0] == want.shape()[0]);
  CHECK(same_bits(want.data(), out, static_cast<std::size_t>(shape[0])));
  std::free(out);
}

TEST_CASE("export_aot: constraints are checked at each call") {
  const fs::path dir = aot_dir("constraints");
  auto f = [](const auto& x) { return dyn::sum(x); };
  dyn::export_aot(f, "sum4", dir.string(), dyn::arg<double>("(n,)"), dyn::constraints{"n >= 4"});
  const std::string h = read_text(dir / "sum4.h");
  CHECK(h.find("   Constraints on the sizes (checked):\n     n >= 4\n") != std::string::npos);
  Loaded lib(dir, "sum4");
  auto fn = lib.get<std::int32_t (*)(const double*, int64_t, double*)>("sum4");
  const double x[5] = {1, 2, 3, 4, 5};
  double s = 0;
  CHECK(fn(x, 5, &s) == 0);
  CHECK(s == 15.0);
  CHECK(fn(x, 3, &s) == 128);
}

TEST_CASE("export_aot: what the C function cannot express is a TypeError naming export_aot and the argument") {
  const fs::path dir = aot_dir("errors");
  auto f = [](const auto& x, const Params&) { return x + 1.0; };
  CHECK(message_of<dyn::TypeError>([&] {
          dyn::export_aot(f, "g", dir.string(), dyn::arg<double>("(n,)"), Params{});
        }) ==
        "dyn::export_aot: argument #1 has type (anonymous namespace)::Params, which an exported function cannot "
        "take: pass dyn::arg<T>(\"(n, 3)\") for an input, or a number, bool or enum, which is baked into the object "
        "as a static argument");
  auto g = [](const auto& x) { return x + 1.0; };
  CHECK(message_of<dyn::ShapeError>([&] { dyn::export_aot(g, "g", dir.string(), dyn::arg<double>("(n, _)")); }) ==
        "dyn::export_aot: argument #0 has the shape spec '(n, _)', with '_' or '...', which take their sizes from a "
        "concrete argument; an exported function has none: write every dimension, e.g. '(n, 3)'");
  CHECK(message_of<dyn::TypeError>([&] { dyn::export_aot(g, "my-kernel", dir.string(), dyn::arg<double>("(n,)")); }) ==
        "dyn::export_aot: the name 'my-kernel' is not a C identifier (letters, digits and _, not starting with a "
        "digit); it names the C function and its files");
  CHECK(message_of<dyn::TypeError>([&] { dyn::export_aot(g, "g", dir.string(), dyn::arg<double>("(g,)")); }) ==
        "dyn::export_aot: the dimension variable g is also the name of the function or of an argument; the C "
        "function takes it as a size parameter");
  auto s = [](const auto& x) { return dyn::sort(x); };
  CHECK(message_of<dyn::TypeError>([&] { dyn::export_aot(s, "srt", dir.string(), dyn::arg<double>("(n,)")); }) ==
        "dyn::export_aot: the function uses sort (dynstage's runtime routine dynstage_sort_f64), which an exported "
        "object cannot contain; ahead-of-time export supports the primitives whose code LLVM generates");
  auto pr = [](const auto& x) {
    dyn::debug_print("x={}", x);
    return x * 2.0;
  };
  CHECK(message_of<dyn::TypeError>([&] { dyn::export_aot(pr, "pr", dir.string(), dyn::arg<double>("(n,)")); }) ==
        "dyn::export_aot: the function uses dyn::debug_print (its lines go through dynstage's printer) (dynstage's "
        "runtime routine dynstage_debug_print), which an exported object cannot contain; ahead-of-time export "
        "supports the primitives whose code LLVM generates");
  CHECK(!fs::exists(dir / "g.o"));
  CHECK(!fs::exists(dir / "srt.h"));
}

TEST_CASE("export_aot: a directory that cannot be written is a dyn::Error naming the path") {
  const fs::path dir = aot_dir("unwritable");
  const fs::path file = dir / "a_file";
  std::ofstream(file) << "x";
  const fs::path bad = file / "sub";
  auto g = [](const auto& x) { return x + 1.0; };
  const std::string m = message_of<dyn::Error>([&] { dyn::export_aot(g, "g", bad.string(), dyn::arg<double>("(n,)")); });
  CHECK(m == "dyn::export_aot: cannot create the directory " + bad.string() + ": Not a directory");
}

TEST_CASE("export_aot: an integer array and a scalar by value") {
  const fs::path dir = aot_dir("ints");
  auto f = [](const auto& x, const auto& k) { return x * k + std::int32_t{1}; };
  dyn::export_aot(f, "axpk", dir.string(), dyn::arg<std::int32_t>("(n,)", "x"), dyn::arg<std::int32_t>("()", "k"));
  CHECK(read_text(dir / "axpk.h").find("int32_t axpk(const int32_t* x, int32_t k, int64_t n, int32_t* out);") !=
        std::string::npos);
  Loaded lib(dir, "axpk");
  auto fn = lib.get<std::int32_t (*)(const std::int32_t*, std::int32_t, int64_t, std::int32_t*)>("axpk");
  const std::int32_t x[4] = {1, -2, 3, 2147483647};
  std::int32_t out[4] = {};
  REQUIRE(fn(x, 3, 4, out) == 0);
  CHECK(out[0] == 4);
  CHECK(out[1] == -5);
  CHECK(out[2] == 10);
  CHECK(out[3] == static_cast<std::int32_t>(static_cast<std::uint32_t>(2147483647) * 3u + 1u));  // wraps, as jit
}

TEST_CASE("export_aot: static shapes, and an array the function closes over becomes a constant of the object") {
  const fs::path dir = aot_dir("consts");
  const Array<double> c({3}, {0.5, -1.0, 2.0});
  auto f = [c](const auto& x) { return x * c + 1.0; };
  dyn::export_aot(f, "scale3", dir.string(), dyn::arg<double>("(2, 3)"));
  CHECK(read_text(dir / "scale3.h").find("int32_t scale3(const double* arg0, double* out);") != std::string::npos);
  Loaded lib(dir, "scale3");
  auto fn = lib.get<std::int32_t (*)(const double*, double*)>("scale3");
  const Array<double> x({2, 3}, {1, 2, 3, 4, 5, 6});
  double out[6] = {};
  REQUIRE(fn(x.data(), out) == 0);
  const Array<double> want = dyn::jit(f)(x);
  CHECK(same_bits(want.data(), out, 6));
  CHECK(out[5] == 13.0);
}
