/* Lesson 12, the user side: a plain C program that calls kernels exported
   by dyn::export_aot (examples/12_aot.cpp). It includes only the generated
   headers and standard headers, and links rowstats.o and positive.o with
   -lm (and -lsleef when a header asks for it): no LLVM, no dynstage. The
   test (tests/check_aot_user.sh) compares what it prints with jit's results
   and checks with nm and ldd that nothing of LLVM or dynstage is linked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "positive.h"
#include "rowstats.h"

static double *input(int64_t count) {
  double *x = malloc((size_t)count * sizeof *x);
  for (int64_t i = 0; i < count; ++i) x[i] = (double)(i % 17) * 0.25 - 2.0;
  return x;
}

int main(void) {
  const int64_t k = 8, m = 4;
  const int64_t sizes[2] = {1000, 3};
  for (int s = 0; s < 2; ++s) {
    const int64_t n = sizes[s];
    double *x = input(n * k);
    double *w = malloc((size_t)(k * m) * sizeof *w);
    for (int64_t i = 0; i < k * m; ++i) w[i] = (double)(i % 5) * 0.5 - 1.0;
    double *mean = malloc((size_t)n * sizeof *mean), *proj = malloc((size_t)(n * m) * sizeof *proj);
    /* int32_t rowstats(const double* x, const double* w, int64_t n, int64_t m, double* out0, double* out1); */
    int32_t code = rowstats(x, w, n, m, mean, proj);
    if (code != ROWSTATS_OK) {
      fprintf(stderr, "rowstats failed: %d\n", (int)code);
      return 1;
    }
    printf("rowstats n=%lld mean[0]=%.17g mean[n-1]=%.17g proj[0]=%.17g proj[last]=%.17g\n", (long long)n, mean[0],
           mean[n - 1], proj[0], proj[n * m - 1]);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += mean[i];
    printf("rowstats n=%lld sum of means=%.17g\n", (long long)n, total);
    free(x), free(w), free(mean), free(proj);
  }
  /* A result of data-dependent size: the function allocates it, we free it. */
  double *x = input(40), *pos = NULL;
  int64_t shape[1];
  if (positive(x, 40, &pos, shape) != POSITIVE_OK) return 1;
  printf("positive: %lld values, first %.17g, last %.17g\n", (long long)shape[0], pos[0], pos[shape[0] - 1]);
  free(pos);
  /* A size below 1 is refused with an error code, not undefined behaviour. */
  if (positive(x, 0, &pos, shape) != POSITIVE_ERR_BAD_SIZE) return 1;
  free(x);
  return 0;
}
