#pragma once
// On-disk format of one Full Block (docs/design.md §9, README, "Full Block format"): an aligned header followed by the
// payload [layers][tokens][bytes], so every Layer Block is one contiguous slice with its own checksum.
// The file is padded to a multiple of `block_alignment` so it can be read with O_DIRECT in one piece.
#include "core/kv_geometry.hpp"
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/block_key.hpp"

namespace dualpath::storage {

inline constexpr uint64_t block_magic = 0x314b4c42564b5044ull;  // "DPKVBLK1" little-endian
inline constexpr uint32_t block_format_version = 1;
inline constexpr uint64_t block_alignment = 4096;  // O_DIRECT buffer, offset and length alignment

// What a block holds. Blocks written for another model or layout are never served.
struct block_format {
  uint64_t model_fingerprint = 0;
  uint32_t layers = 0;
  uint32_t tokens = 0;  // tokens per block (block_tokens)
  uint32_t bytes_per_token_layer = 0;

  // The files of a run whose KV is laid out as `g` (the runtime's store, the simulator's file sizes).
  static block_format of(const kv_geometry& g, uint64_t fingerprint = 0) {
    return {fingerprint, g.layers, g.block_tokens, uint32_t(g.bytes_per_token_layer)};
  }

  uint64_t layer_bytes() const { return uint64_t(tokens) * bytes_per_token_layer; }
  uint64_t payload_bytes() const { return layer_bytes() * layers; }
  // Header size: fixed fields plus one checksum per layer, rounded up to the alignment.
  uint64_t header_bytes() const;
  // Size of the block file (header + payload, padded): also the buffer size one read needs.
  uint64_t file_bytes() const;
  // Throws user_error naming the bad field when the layout is empty or absurd.
  void validate() const;
  bool operator==(const block_format& o) const {
    return model_fingerprint == o.model_fingerprint && layers == o.layers && tokens == o.tokens &&
           bytes_per_token_layer == o.bytes_per_token_layer;
  }
  bool operator!=(const block_format& o) const { return !(*this == o); }
};

// Decoded header of a block file.
struct block_header {
  block_format format;
  block_key key = 0;
  block_key parent = 0;                   // previous block of the chain, 0 for the first
  std::vector<uint64_t> layer_checksums;  // xxh3-64 of each layer slice
};

// Writes a complete block image (header + payload + zero padding) into `out`, which must hold
// `format.file_bytes()` bytes. `payload` is [layers][tokens][bytes_per_token_layer].
void build_block(const block_format& format, block_key key, block_key parent, const std::byte* payload, std::byte* out);
std::vector<std::byte> build_block(const block_format& format, block_key key, block_key parent,
                                   const std::byte* payload);
// The same from one pointer per layer slice (`format.layers` of them, `layer_bytes()` each), for KV
// that is not contiguous in memory (e.g. one HBM/DRAM buffer per layer).
void build_block(const block_format& format, block_key key, block_key parent,
                 const std::vector<const std::byte*>& layers, std::byte* out);

// What a check found wrong with a block image. `foreign` is a well-formed block of another model,
// layout or key: it belongs to someone else and is left alone. `corrupt` (a checksum or header field
// is wrong) and `truncated` (the image ends early) are damage (docs/design.md §9).
enum class block_fault : uint8_t { none, foreign, corrupt, truncated };

struct block_check {
  block_fault fault = block_fault::none;
  std::string message;  // "" when none, else "wrong fingerprint", "layer 3 checksum", ...
  bool ok() const { return fault == block_fault::none; }
};

// Parses and checks the header at `image` (at least header bytes long): magic, version, header
// checksum, and that it matches `expected` and `key`. On success `*out` (if given) receives the header.
block_check check_header(const std::byte* image, size_t available, const block_format& expected, block_key key,
                         block_header* out = nullptr);

// Full validation of a block image of `size` bytes: header as above, exact size, and every layer
// checksum. Only an ok check may be served.
block_check check_block(const std::byte* image, size_t size, const block_format& expected, block_key key,
                        block_header* out = nullptr);

// Checks one layer slice against the checksum stored in `header`.
bool check_layer(const block_header& header, uint32_t layer, const std::byte* slice);

}  // namespace dualpath::storage
