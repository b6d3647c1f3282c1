#pragma once
// A block store in a test's scratch directory.
#include <string>

#include "storage/block_store.hpp"

namespace dualpath::test {

inline storage::store_options scratch_store_options(const std::string& dir, const storage::block_format& f) {
  storage::store_options o;
  o.dir = dir;
  o.format = f;
  o.fsync = false;  // tests do not need durability across power loss; atomicity is still tested
  return o;
}

}  // namespace dualpath::test
