#pragma once
// Shared helpers of the storage tests: deterministic payloads, corruption and completions.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/block_files.hpp"
#include "storage/block_store.hpp"
#include "tests/common/scratch_dir.hpp"
#include "tests/common/scratch_store.hpp"

namespace dualpath::test {

using storage::block_format;
using storage::read_completion;

inline block_format small_format(uint64_t fingerprint = 0xfeedull, uint32_t layers = 4, uint32_t tokens = 16,
                                 uint32_t bytes = 32) {
  return block_format{fingerprint, layers, tokens, bytes};
}

// Payload whose every byte depends on the key and position, so mixed-up blocks are noticed.
inline std::vector<std::byte> payload_for(const block_format& f, block_key key) {
  std::vector<std::byte> p(f.payload_bytes());
  uint64_t x = key * 0x9e3779b97f4a7c15ull + 1;
  for (auto& b : p) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = std::byte(x & 0xff);
  }
  return p;
}

// Writes the blocks of `keys` as one chain, each with its payload_for.
inline void write_chain(storage::block_store& s, const std::vector<block_key>& keys) {
  block_key parent = 0;
  for (block_key k : keys) {
    const status st = s.write(k, parent, payload_for(s.options().format, k).data());
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    parent = k;
  }
}

// Flips one bit of the byte at `offset` of the file in place, as a failing disk would.
inline void flip_byte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  std::byte b;
  REQUIRE(::pread(fd, &b, 1, off_t(offset)) == 1);
  b ^= std::byte{0x10};
  REQUIRE(::pwrite(fd, &b, 1, off_t(offset)) == 1);
  ::close(fd);
}

// Temporary files (writes in progress or abandoned) anywhere under `dir`.
inline size_t temp_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (storage::is_temp_name(e.path().filename().string())) ++n;
  return n;
}

// Waits for `n` completions from `poll` (bounded: fails the wait after 10 s).
template <class Poller>
std::vector<read_completion> collect(Poller& p, size_t n) {
  std::vector<read_completion> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    for (auto& c : p.poll(std::chrono::milliseconds(20))) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace dualpath::test
