// A typical user translation unit: includes <dynstage/dynstage.hpp> and calls
// dyn::jit, without DYNSTAGE_IMPLEMENTATION (the backend is compiled once,
// elsewhere). scripts/bench.sh times `g++ -std=c++20 -O2 -c` of this file
// against the target (<= 3 s); it is never linked.
#include <dynstage/dynstage.hpp>

#include <iostream>

int main() {
  auto f = [](auto x, auto y) { return dyn::sin(x) * 2.0 + x * y; };
  auto jf = dyn::jit(f);
  dyn::Array<double> x({3}, {1, 2, 3}), y({3}, {4, 5, 6});
  std::cout << jf(x, y) << "\n";
}
