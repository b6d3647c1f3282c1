#include "runtime/dram_blocks.hpp"

namespace dualpath::runtime {

void dram_blocks::put(block_key key, payload p) {
  std::lock_guard<std::mutex> g(mutex_);
  blocks_.emplace(key, std::move(p));
}

dram_blocks::payload dram_blocks::get(block_key key) const {
  std::lock_guard<std::mutex> g(mutex_);
  auto it = blocks_.find(key);
  return it == blocks_.end() ? nullptr : it->second;
}

size_t dram_blocks::size() const {
  std::lock_guard<std::mutex> g(mutex_);
  return blocks_.size();
}

}  // namespace dualpath::runtime
