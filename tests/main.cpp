// The one translation unit that defines doctest's main.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Tests run checked: every trace verifies its jaxpr (check.hpp). Set
  // before the first trace reads it; DYNSTAGE_CHECK_JAXPR=0 turns it off.
  setenv("DYNSTAGE_CHECK_JAXPR", "1", /*overwrite=*/0);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
