// One doctest main shared by every test binary.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // DUALPATH_TEST_LOG=info (or debug) shows more of a failing case's story; warnings only by default.
  const char* level = std::getenv("DUALPATH_TEST_LOG");
  spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  doctest::Context context(argc, argv);
  return context.run();
}
