#include "storage/block_index.hpp"

namespace dualpath::storage {

bool block_index::insert(block_key key, block_key parent, uint64_t bytes) {
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    touch(key);
    return false;
  }
  lru_.push_front(key);
  entries_.emplace(key, entry{parent, bytes, lru_.begin()});
  if (parent != 0) children_.emplace(parent, key);
  bytes_ += bytes;
  return true;
}

void block_index::touch(block_key key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
}

bool block_index::has_children(block_key key) const { return children_.count(key) != 0; }

std::optional<block_key> block_index::parent(block_key key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second.parent;
}

void block_index::erase_one(block_key key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  const block_key parent = it->second.parent;
  if (parent != 0) {
    auto range = children_.equal_range(parent);
    for (auto c = range.first; c != range.second; ++c) {
      if (c->second == key) {
        children_.erase(c);
        break;
      }
    }
  }
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

bool block_index::erase(block_key key) {
  if (!contains(key)) return false;
  erase_one(key);
  return true;
}

std::vector<block_key> block_index::erase_subtree(block_key key) {
  std::vector<block_key> order;
  if (!contains(key)) return order;
  // Breadth-first collection; a corrupt store could hold a cycle, so skip keys already taken.
  order.push_back(key);
  std::unordered_map<block_key, bool> seen{{key, true}};
  for (size_t i = 0; i < order.size(); ++i) {
    auto range = children_.equal_range(order[i]);
    for (auto c = range.first; c != range.second; ++c) {
      if (seen.emplace(c->second, true).second) order.push_back(c->second);
    }
  }
  for (block_key k : order) erase_one(k);
  return order;
}

std::optional<block_key> block_index::victim(block_key keep) const {
  // Walk from the least recently used end; lookups touch a chain from its end backwards, so the
  // ends of chains are normally found first and this walk is short.
  for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
    if (*it != keep && !has_children(*it)) return *it;
  }
  return std::nullopt;
}

}  // namespace dualpath::storage
