// The distributed tests' main: MPI_Init (dyn::distributed::init) around
// doctest, so that every rank runs every test case. mpirun's exit status is
// non-zero if any rank's is.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dynstage/core.hpp>

#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Every trace is verified, as in the other unit tests (tests/main.cpp).
  setenv("DYNSTAGE_CHECK_JAXPR", "1", /*overwrite=*/0);
  setenv("DYNSTAGE_CACHE_DIR", "off", /*overwrite=*/1);  // (test_distributed_jit.cpp turns it on where it tests it)
  dyn::distributed::init(argc, argv);
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  const int rc = ctx.run();
  dyn::distributed::finalize();
  return rc;
}
