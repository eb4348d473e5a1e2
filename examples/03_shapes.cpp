// Lesson 3: shapes: static, symbolic (JAX shape polymorphism) and dynamic.
//
// By default every concrete shape is its own signature (JAX's jit). With
// dyn::polymorphic_shapes the shapes are symbolic: "(b, 3)" says "any number
// of rows b, three columns", and ONE kernel serves every b. Sizes computed
// from symbolic dimensions (b + 1, 2*b) stay symbolic, and a size that only
// the data knows (how many elements pass a test) is a dynamic dimension: an
// i64[] variable of the program, as in Catalyst.
#include <dynstage/dynstage.hpp>

#include <iostream>
#include <string>

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

int main() {
  // Row norms of a (b, 3) matrix, then the largest again: b + 1 results.
  auto f = [](auto pts) {
    auto norms = dyn::sqrt(dyn::sum(pts * pts, {1}));
    return dyn::concatenate({norms, dyn::max(norms, {0}, dyn::keepdims)}, 0);  // and the largest
  };
  auto jf = dyn::jit(f, dyn::polymorphic_shapes{"(b, 3)"});
  const dyn::Array<double> p2({2, 3}, {3, 4, 0, 1, 2, 2});
  const dyn::Array<double> p4({4, 3}, {1, 0, 0, 0, 2, 0, 0, 0, 3, 2, 3, 6});

  std::cout << "The symbolic program (b is the implicit first argument):\n" << jf.jaxpr(p2) << "\n";
  std::cout << "b = 2: " << jf(p2) << "\nb = 4: " << jf(p4) << "\n";
  std::cout << "kernels compiled for both: " << jf.stats().compiles << "\n\n";

  // The spec is checked at every call, with JAX's message.
  try {
    (void)jf(dyn::Array<double>({2, 4}));
  } catch (const dyn::ShapeAssertionError& e) {
    std::cout << "a (2, 4) argument: dyn::ShapeAssertionError: " << first_line(e.what()) << "\n\n";
  }

  // Constraints restrict the symbolic dimensions further.
  auto jc = dyn::jit([](auto v) { return v * 2.0; }, dyn::polymorphic_shapes{"(n,)"}, dyn::constraints{"n >= 4"});
  try {
    (void)jc(dyn::Array<double>({3}));
  } catch (const dyn::ShapeAssertionError& e) {
    std::cout << "n = 3 with n >= 4: " << first_line(e.what()) << "\n\n";
  }

  // A dynamic dimension: the number of positive elements is known only when
  // the kernel runs; the result's length is that number.
  auto positives = dyn::jit([](auto v) { return dyn::compress(v > 0.0, v) * 10.0; }, dyn::polymorphic_shapes{"(n,)"});
  const dyn::Array<double> v({6}, {1.5, -2, 0, 3, -1, 0.25});
  std::cout << "The dynamic-shape program:\n" << positives.jaxpr(v) << "\n";
  const dyn::Array<double> kept = positives(v);
  std::cout << "positives(" << v << ") * 10 = " << kept << " (length " << kept.shape()[0] << ")\n";

  const bool ok = jf.stats().compiles == 1 && kept.shape()[0] == 3 && jf(p4)(3) == 7.0 && jf(p4)(4) == 7.0 && jf(p2)(0) == 5.0;
  return ok ? 0 : 1;
}
