#include "tests/fuzz/mutator.hpp"

#include <algorithm>
#include <cstring>

namespace dualpath::fuzz {

namespace {

// Values that sit on the edges decoders check (or forget to): zero, one, sign bits, all ones.
constexpr uint64_t interesting[] = {0,
                                    1,
                                    2,
                                    7,
                                    8,
                                    0x7f,
                                    0x80,
                                    0xff,
                                    0x100,
                                    0x7fff,
                                    0x8000,
                                    0xffff,
                                    0x10000,
                                    0x7fffffff,
                                    0x80000000,
                                    0xffffffff,
                                    0x100000000,
                                    0x1fffffff,
                                    0x20000000,
                                    0x7fffffffffffffff,
                                    0x8000000000000000,
                                    0xffffffffffffffff};

}  // namespace

uint64_t mutator::random() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<uint8_t> mutator::next(const std::vector<std::vector<uint8_t>>& pool,
                                   const std::vector<std::string>& tokens) {
  std::vector<uint8_t> x = pool[below(pool.size())];
  const uint64_t n = 1 + below(4);
  for (uint64_t i = 0; i < n; ++i) mutate_once(x, pool, tokens);
  // Envelopes are whole 8-byte words (protocol/type_ids.hpp refuses the rest at once): half the binary
  // mutants are cut back to a word boundary, so the decoder behind that check is reached as often.
  if (tokens.empty() && below(2) == 0) x.resize(x.size() / 8 * 8);
  return x;
}

void mutator::mutate_once(std::vector<uint8_t>& x, const std::vector<std::vector<uint8_t>>& pool,
                          const std::vector<std::string>& tokens) {
  const size_t size = x.size();
  const uint64_t op = below(tokens.empty() ? 10 : 12);
  switch (op) {
    case 0:  // flip one bit
      if (size) x[below(size)] ^= uint8_t(1u << below(8));
      break;
    case 1:  // one random byte
      if (size) x[below(size)] = uint8_t(random());
      break;
    case 2:  // one interesting byte
      if (size) x[below(size)] = uint8_t(interesting[below(std::size(interesting))]);
      break;
    case 3: {  // a little-endian word of 2, 4 or 8 bytes: an interesting value, or a length near the input's
      const size_t width = size_t(2) << below(3);
      if (size < width) break;
      uint64_t v = below(3) == 0 ? (size / 8 + below(16) - 8) : interesting[below(std::size(interesting))];
      // Cap'n Proto lays words out on 8-byte boundaries: hit them more often than not.
      size_t at = below(size - width + 1);
      if (below(2) == 0) at = at / 8 * 8;
      std::memcpy(x.data() + at, &v, width);
      break;
    }
    case 4:  // cut the end off
      x.resize(below(size + 1));
      break;
    case 5: {  // erase a range
      if (!size) break;
      const size_t at = below(size), len = 1 + below(std::min<size_t>(size - at, 16));
      x.erase(x.begin() + long(at), x.begin() + long(at + len));
      break;
    }
    case 6: {  // insert random bytes
      const size_t at = below(size + 1), len = 1 + below(8);
      std::vector<uint8_t> add(len);
      for (auto& b : add) b = uint8_t(random());
      x.insert(x.begin() + long(at), add.begin(), add.end());
      break;
    }
    case 7: {  // duplicate a range (repeated structure: a list element, a line, a table)
      if (!size || size > (1u << 16)) break;
      const size_t at = below(size), len = 1 + below(std::min<size_t>(size - at, 64));
      const std::vector<uint8_t> piece(x.begin() + long(at), x.begin() + long(at + len));
      x.insert(x.begin() + long(below(size + 1)), piece.begin(), piece.end());
      break;
    }
    case 8: {  // splice: a prefix of this input and a suffix of another
      const auto& other = pool[below(pool.size())];
      const size_t keep = below(size + 1), from = below(other.size() + 1);
      x.resize(keep);
      x.insert(x.end(), other.begin() + long(from), other.end());
      break;
    }
    case 9: {  // a run of one byte (0x00 or 0xff)
      if (!size) break;
      const size_t at = below(size), len = 1 + below(std::min<size_t>(size - at, 32));
      std::fill(x.begin() + long(at), x.begin() + long(at + len), below(2) ? 0xff : 0x00);
      break;
    }
    default: {  // text: insert or overwrite with a syntax token
      const std::string& t = tokens[below(tokens.size())];
      const size_t at = below(size + 1);
      if (op == 10 || at + t.size() > size) {
        x.insert(x.begin() + long(at), t.begin(), t.end());
      } else {
        std::copy(t.begin(), t.end(), x.begin() + long(at));
      }
      break;
    }
  }
}

}  // namespace dualpath::fuzz
