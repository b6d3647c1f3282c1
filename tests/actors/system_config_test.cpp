// protocol/system_config.hpp: the actor system every DualPath process starts (docs/design.md §13).
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include <caf/all.hpp>

#include "protocol/system_config.hpp"

TEST_CASE("every process's actor system runs one scheduler worker per core, not CAF's four or more") {
  dualpath::protocol::system_config cfg;
  caf::actor_system sys{cfg};
  CHECK(sys.scheduler().num_workers() == std::max(1u, std::thread::hardware_concurrency()));
}
