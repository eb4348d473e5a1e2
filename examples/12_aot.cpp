// Lesson 12: ahead-of-time export — ship a compiled kernel without LLVM.
//
// dyn::export_aot traces a function for an abstract signature (dtypes and
// shape specs, as dyn::polymorphic_shapes), compiles it exactly as dyn::jit
// does, and writes an object file and a C header. A C program includes the
// header, links the object (with -lm, and -lsleef if the header says so)
// and calls the function: no LLVM, no dynstage at run time
// (examples/12_aot_user.c; docs/backend.md, "Ahead-of-time export").
//
// Meson runs this program at build time (examples/meson.build): it writes
// rowstats.o/.h and positive.o/.h into the directory given as argv[1], and
// the values jit computes for the inputs the C program uses, which the test
// compares with what the C program prints (they are equal bit for bit).
#include <dynstage/dynstage.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

// Softmax-weighted row means and the softmax weights times a matrix.
auto rowstats = [](const auto& x, const auto& w) {
  auto e = dyn::exp(x - dyn::max(x, {1}, dyn::keepdims));
  auto p = e / dyn::sum(e, {1}, dyn::keepdims);
  return std::make_tuple(dyn::sum(p * x, {1}), dyn::matmul(p, w));
};
// A result whose size depends on the data: the C function allocates it.
auto positive = [](const auto& x) { return dyn::compress(x > 0.0, x * 2.0); };

// The inputs the C program builds (the same formulas, exact in binary).
dyn::Array<double> input_x(std::vector<std::int64_t> shape) {
  std::vector<double> v(static_cast<std::size_t>(shape[0] * (shape.size() > 1 ? shape[1] : 1)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 17) * 0.25 - 2.0;
  return dyn::Array<double>(shape, v);
}
dyn::Array<double> input_w(std::int64_t k, std::int64_t m) {
  std::vector<double> v(static_cast<std::size_t>(k * m));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 5) * 0.5 - 1.0;
  return dyn::Array<double>({k, m}, v);
}

std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "aot_out";
  // n and m are size parameters of the C function; k is fixed at 8.
  dyn::export_aot(rowstats, "rowstats", dir, dyn::arg<double>("(n, 8)", "x"), dyn::arg<double>("(8, m)", "w"));
  dyn::export_aot(positive, "positive", dir, dyn::arg<double>("(n,)", "x"));
  std::cout << "wrote " << dir << "/rowstats.o, rowstats.h, positive.o, positive.h\n";

  // What jit computes with the same abstract signature, printed as the C
  // program prints it.
  auto jr = dyn::jit(rowstats, dyn::polymorphic_shapes{"(n, 8)", "(8, m)"});
  auto jp = dyn::jit(positive, dyn::polymorphic_shapes{"(n,)"});
  std::ofstream out(dir + "/12_aot_expected.txt");
  for (std::int64_t n : {1000, 3}) {
    const std::int64_t m = 4;
    auto [mean, proj] = jr(input_x({n, 8}), input_w(8, m));
    out << "rowstats n=" << n << " mean[0]=" << g17(mean.data()[0]) << " mean[n-1]=" << g17(mean.data()[n - 1])
        << " proj[0]=" << g17(proj.data()[0]) << " proj[last]=" << g17(proj.data()[n * m - 1]) << "\n";
    double total = 0;
    for (std::int64_t i = 0; i < n; ++i) total += mean.data()[i];
    out << "rowstats n=" << n << " sum of means=" << g17(total) << "\n";
  }
  dyn::Array<double> pos = jp(input_x({40}));
  out << "positive: " << pos.shape()[0] << " values, first " << g17(pos.data()[0]) << ", last "
      << g17(pos.data()[pos.shape()[0] - 1]) << "\n";
  std::cout << "wrote " << dir << "/12_aot_expected.txt (jit's results)\n";
  return 0;
}
