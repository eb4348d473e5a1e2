// The same hand-written loops as baseline_loops.cpp, compiled -O3
// -march=native -ffast-math: GCC then vectorises sin/exp through glibc's
// libmvec and reassociates reductions.
#include <cmath>
#include <cstdint>

#include "baselines.hpp"

namespace bench::fastmath {

#include "baseline_loops.inc"

}  // namespace bench::fastmath
