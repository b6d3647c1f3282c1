#pragma once
// Chained prefix hashes (docs/design.md §9): block i's key covers tokens [0, (i+1)·block_tokens), so equal
// prefixes share keys and a lookup is a longest-prefix match over a request's key chain.
#include <cstdint>
#include <string>
#include <vector>

namespace dualpath {

using block_key = uint64_t;

// Key of the block that follows `parent` (0 for the first block) and holds `tokens`.
block_key chain_key(block_key parent, const int32_t* tokens, size_t count);

// Keys of every *full* block of `tokens` (a trailing partial block has no key).
std::vector<block_key> block_keys(const std::vector<int32_t>& tokens, uint32_t block_tokens);

// Grows `keys` (the keys of the first keys.size() blocks of `tokens`) to every full block of the first `count`
// tokens: a sequence that grows token by token keys only its new blocks.
void extend_block_keys(std::vector<block_key>& keys, const int32_t* tokens, size_t count, uint32_t block_tokens);

// A Mooncake trace names 512-token blocks by chained ids; map an id chain onto our keys.
std::vector<block_key> block_keys_from_ids(const std::vector<uint64_t>& hash_ids);

std::string key_hex(block_key key);

}  // namespace dualpath
