#pragma once
// The oracle's KV in DRAM (docs/design.md §7.7): every Full Block a node persists is also kept here, shared by
// all nodes of the embedded cluster, so the oracle's loads copy hit KV from memory and read no block file at
// all. Thread-safe: persists (writer threads) and loads (writer threads of other nodes) meet here.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/block_key.hpp"

namespace dualpath::runtime {

class dram_blocks {
 public:
  using payload = std::shared_ptr<const std::vector<std::byte>>;  // one Full Block, [layers][tokens][bytes]

  // Keeps `p` for `key` (a key kept already keeps its first payload: equal keys mean equal KV).
  void put(block_key key, payload p);
  // The block, or null when it was never persisted in this run.
  payload get(block_key key) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<block_key, payload> blocks_;
};

}  // namespace dualpath::runtime
