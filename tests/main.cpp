// The one translation unit that defines doctest's main.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Tests run checked: every trace verifies its jaxpr (check.hpp). Set
  // before the first trace reads it; DYNSTAGE_CHECK_JAXPR=0 turns it off.
  setenv("DYNSTAGE_CHECK_JAXPR", "1", /*overwrite=*/0);
  // Tests never read or fill the user's disk cache (a test that counts
  // compiles must see them); the disk cache's own tests set a directory
  // through detail::set_disk_cache_config (jit/disk_cache.hpp).
  setenv("DYNSTAGE_CACHE_DIR", "off", /*overwrite=*/1);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
