#include "core/block_key.hpp"

#include <xxhash.h>

#include <cstdio>

namespace dualpath {

block_key chain_key(block_key parent, const int32_t* tokens, size_t count) {
  // Seeding with the parent chains the hashes: a block's key depends on its whole prefix.
  const block_key k = XXH3_64bits_withSeed(tokens, count * sizeof(int32_t), parent);
  return k == 0 ? 1 : k;  // 0 is reserved for "no parent"
}

std::vector<block_key> block_keys(const std::vector<int32_t>& tokens, uint32_t block_tokens) {
  std::vector<block_key> keys;
  extend_block_keys(keys, tokens.data(), tokens.size(), block_tokens);
  return keys;
}

void extend_block_keys(std::vector<block_key>& keys, const int32_t* tokens, size_t count, uint32_t block_tokens) {
  for (size_t start = keys.size() * block_tokens; start + block_tokens <= count; start += block_tokens)
    keys.push_back(chain_key(keys.empty() ? 0 : keys.back(), tokens + start, block_tokens));
}

std::vector<block_key> block_keys_from_ids(const std::vector<uint64_t>& hash_ids) {
  std::vector<block_key> keys;
  block_key parent = 0;
  for (uint64_t id : hash_ids) {
    parent = XXH3_64bits_withSeed(&id, sizeof(id), parent ^ 0x6d6f6f6e63616b65ull);
    if (parent == 0) parent = 1;
    keys.push_back(parent);
  }
  return keys;
}

std::string key_hex(block_key key) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key));
  return buf;
}

}  // namespace dualpath
