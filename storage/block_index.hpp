#pragma once
// In-memory index of the blocks in a store directory: parent links (so chains stay hole-free) and an
// LRU order for eviction. Not thread-safe: the store guards it with its mutex.
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/block_key.hpp"

namespace dualpath::storage {

class block_index {
 public:
  // Adds (or refreshes) a block as most recently used. Returns false if it was already indexed.
  bool insert(block_key key, block_key parent, uint64_t bytes);
  bool contains(block_key key) const { return entries_.count(key) != 0; }
  // Marks a block most recently used.
  void touch(block_key key);
  // Removes one block; blocks chained from it stay indexed (and become reachable again if it is
  // written again). False if it was absent.
  bool erase(block_key key);
  // Removes `key` and every block chained from it; returns the removed keys (key first).
  std::vector<block_key> erase_subtree(block_key key);
  // The least recently used block that no indexed block chains from (the end of a chain), skipping
  // `keep`. Evicting only such blocks never leaves a hole in the middle of a chain.
  std::optional<block_key> victim(block_key keep) const;
  bool has_children(block_key key) const;
  std::optional<block_key> parent(block_key key) const;

  uint64_t bytes() const { return bytes_; }
  size_t size() const { return entries_.size(); }

 private:
  struct entry {
    block_key parent;
    uint64_t bytes;
    std::list<block_key>::iterator lru;  // position in lru_ (front = most recent)
  };
  void erase_one(block_key key);

  std::unordered_map<block_key, entry> entries_;
  std::unordered_multimap<block_key, block_key> children_;  // parent -> child, for indexed children
  std::list<block_key> lru_;
  uint64_t bytes_ = 0;
};

}  // namespace dualpath::storage
