// Lesson 9: indexing with computed indices, and updates that accumulate.
//
// x.at(idx).get() reads x at integer indices (numpy's x[idx]; primitive
// gather) and x.at(idx).add(v) returns a copy of x with v added at idx
// (jnp's x.at[idx].add(v); primitive scatter-add): duplicate indices
// accumulate, so a histogram is one line. Indices past the end clamp when
// read and are dropped when written; negative ones count from the end.
//
// Two everyday kernels: a histogram, and a CSR sparse matrix-vector product
// y = A x (gather x at the column indices, multiply by the values, add each
// product into its row; then the same with CSR's row pointers and
// dyn::segment_sum_offsets). Both run eagerly and compiled; one kernel
// serves every size (dyn::polymorphic_shapes).
#include <dynstage/dynstage.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main() {
  // Histogram of bin numbers into 5 bins; bin 9 is out of range: dropped.
  auto histogram = [](auto bins) { return dyn::zeros<std::int32_t>({5}).at(bins).add(1); };
  dyn::Array<std::int32_t> bins({8}, {0, 3, 3, 1, 9, 3, 4, 0});
  auto jhist = dyn::jit(histogram, dyn::polymorphic_shapes{"(n,)"});
  const dyn::Array<std::int32_t> h = jhist(bins);
  std::cout << "histogram: " << h << "\n";

  // A 3x4 sparse matrix in CSR form (row of each nonzero instead of row
  // pointers: the scatter target):
  //   [[1 0 2 0]
  //    [0 0 0 3]
  //    [4 5 0 0]]
  dyn::Array<double> values({5}, {1, 2, 3, 4, 5});
  dyn::Array<std::int32_t> cols({5}, {0, 2, 3, 0, 1}), rows({5}, {0, 0, 1, 2, 2});
  dyn::Array<double> x({4}, {1, 10, 100, 1000});
  auto spmv = [](auto vals, auto col, auto row, auto v) {
    auto products = vals * v.at(col).get();             // gather: fused into the multiply
    return dyn::zeros<double>({3}).at(row).add(products);  // segment sums by scatter-add
  };
  auto jspmv = dyn::jit(spmv, dyn::polymorphic_shapes{"(nnz,)", "(nnz,)", "(nnz,)", "(n,)"});
  const dyn::Array<double> y = jspmv(values, cols, rows, x);
  std::cout << "A x = " << y << "\n";
  std::cout << jspmv.jaxpr(values, cols, rows, x) << "\n";

  // The same product over CSR's row pointers (row r holds nonzeros
  // row_ptr[r] .. row_ptr[r + 1] - 1): dyn::segment_sum_offsets sums each
  // row's products (NumPy's add.reduceat). Compiled, it is one loop over the
  // rows with the gather and multiply inside, as a hand-written CSR loop,
  // and it reads 4 bytes per row instead of a row index per nonzero. (JAX's
  // segment_sum, with a row id per element, is the scatter-add form above.)
  dyn::Array<std::int32_t> row_ptr({4}, {0, 2, 3, 5});
  auto spmv_csr = [](auto vals, auto col, auto ptr, auto v) {
    return dyn::segment_sum_offsets(vals * v.at(col).get(), ptr);
  };
  const dyn::Array<double> y2 = dyn::jit(spmv_csr)(values, cols, row_ptr, x);
  std::cout << "A x (row pointers) = " << y2 << "\n";

  const bool ok = dyn::array_equal(h, dyn::eager(histogram)(bins)) &&
                  dyn::array_equal(y, dyn::eager(spmv)(values, cols, rows, x)) && h(3) == 3 && h(2) == 0 &&
                  y(0) == 201 && y(1) == 3000 && y(2) == 54 && dyn::array_equal(y2, y);
  return ok ? 0 : 1;
}
