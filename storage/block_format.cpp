#include "storage/block_format.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <utility>

#include "core/status.hpp"
#include "storage/layer_hash.hpp"

namespace dualpath::storage {

namespace {

// Fixed header fields, little-endian (README, "Full Block format"): offsets in bytes.
constexpr size_t off_magic = 0, off_version = 8, off_header_bytes = 12, off_fingerprint = 16, off_layers = 24,
                 off_tokens = 28, off_bytes_per_token_layer = 32, off_key = 40, off_parent = 48, off_payload_bytes = 56,
                 off_header_checksum = 64, off_layer_sums = 72;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <class T>
void put(std::byte* p, size_t off, T v) {
  std::memcpy(p + off, &v, sizeof v);
}
template <class T>
T get(const std::byte* p, size_t off) {
  T v;
  std::memcpy(&v, p + off, sizeof v);
  return v;
}

// The header checksum covers the fixed fields and the layer checksums, with its own field zeroed.
uint64_t header_checksum(const std::byte* image, uint32_t layers) {
  const size_t n = off_layer_sums + size_t(layers) * 8;
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, image, off_header_checksum);
  const uint64_t zero = 0;
  XXH3_64bits_update(st, &zero, sizeof zero);
  XXH3_64bits_update(st, image + off_layer_sums, n - off_layer_sums);
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

uint64_t block_format::header_bytes() const { return align_up(off_layer_sums + uint64_t(layers) * 8, block_alignment); }

uint64_t block_format::file_bytes() const { return align_up(header_bytes() + payload_bytes(), block_alignment); }

void block_format::validate() const {
  if (layers == 0) throw user_error("block format: layers must be > 0");
  if (tokens == 0) throw user_error("block format: tokens per block must be > 0");
  if (bytes_per_token_layer == 0) throw user_error("block format: bytes per token per layer must be > 0");
  if (layers > 4096) throw user_error(fmt::format("block format: {} layers is more than 4096", layers));
  if (payload_bytes() > (uint64_t(1) << 34))
    throw user_error(fmt::format("block format: a block of {} bytes is larger than 16 GiB", payload_bytes()));
}

void build_block(const block_format& format, block_key key, block_key parent, const std::byte* payload,
                 std::byte* out) {
  std::vector<const std::byte*> layers(format.layers);
  for (uint32_t l = 0; l < format.layers; ++l) layers[l] = payload + l * format.layer_bytes();
  build_block(format, key, parent, layers, out);
}

void build_block(const block_format& format, block_key key, block_key parent,
                 const std::vector<const std::byte*>& layers, std::byte* out) {
  const uint64_t hb = format.header_bytes();
  const uint64_t lb = format.layer_bytes();
  // Copy first, then hash the copy: the slice is still in cache, and the checksum covers exactly
  // the bytes that will be written.
  for (uint32_t l = 0; l < format.layers; ++l) std::memcpy(out + hb + l * lb, layers[l], lb);
  std::memset(out, 0, hb);
  put<uint64_t>(out, off_magic, block_magic);
  put<uint32_t>(out, off_version, block_format_version);
  put<uint32_t>(out, off_header_bytes, uint32_t(hb));
  put<uint64_t>(out, off_fingerprint, format.model_fingerprint);
  put<uint32_t>(out, off_layers, format.layers);
  put<uint32_t>(out, off_tokens, format.tokens);
  put<uint32_t>(out, off_bytes_per_token_layer, format.bytes_per_token_layer);
  put<uint64_t>(out, off_key, key);
  put<uint64_t>(out, off_parent, parent);
  put<uint64_t>(out, off_payload_bytes, format.payload_bytes());
  for (uint32_t l = 0; l < format.layers; ++l) {
    put<uint64_t>(out, off_layer_sums + size_t(l) * 8, layer_hash(out + hb + l * lb, lb));
  }
  put<uint64_t>(out, off_header_checksum, header_checksum(out, format.layers));
  const uint64_t end = hb + format.payload_bytes();
  std::memset(out + end, 0, format.file_bytes() - end);
}

std::vector<std::byte> build_block(const block_format& format, block_key key, block_key parent,
                                   const std::byte* payload) {
  std::vector<std::byte> out(format.file_bytes());
  build_block(format, key, parent, payload, out.data());
  return out;
}

namespace {
block_check fault(block_fault f, std::string message) { return {f, std::move(message)}; }
}  // namespace

block_check check_header(const std::byte* image, size_t available, const block_format& expected, block_key key,
                         block_header* out) {
  if (available < off_layer_sums) return fault(block_fault::truncated, "truncated header");
  if (get<uint64_t>(image, off_magic) != block_magic) return fault(block_fault::corrupt, "bad magic");
  if (get<uint32_t>(image, off_version) != block_format_version)
    return fault(block_fault::corrupt, fmt::format("unsupported format version {}", get<uint32_t>(image, off_version)));
  block_format f;
  f.model_fingerprint = get<uint64_t>(image, off_fingerprint);
  f.layers = get<uint32_t>(image, off_layers);
  f.tokens = get<uint32_t>(image, off_tokens);
  f.bytes_per_token_layer = get<uint32_t>(image, off_bytes_per_token_layer);
  // Identity before integrity: another model's block is foreign (left alone), not corrupt.
  if (f.model_fingerprint != expected.model_fingerprint) return fault(block_fault::foreign, "wrong fingerprint");
  if (f != expected) return fault(block_fault::foreign, "wrong layout");
  if (get<uint32_t>(image, off_header_bytes) != f.header_bytes()) return fault(block_fault::corrupt, "bad header size");
  if (available < off_layer_sums + size_t(f.layers) * 8) return fault(block_fault::truncated, "truncated header");
  if (get<uint64_t>(image, off_header_checksum) != header_checksum(image, f.layers))
    return fault(block_fault::corrupt, "header checksum");
  if (get<uint64_t>(image, off_payload_bytes) != f.payload_bytes())
    return fault(block_fault::corrupt, "bad payload size");
  if (get<uint64_t>(image, off_key) != key) return fault(block_fault::foreign, "wrong key");
  if (out) {
    out->format = f;
    out->key = key;
    out->parent = get<uint64_t>(image, off_parent);
    out->layer_checksums.resize(f.layers);
    for (uint32_t l = 0; l < f.layers; ++l)
      out->layer_checksums[l] = get<uint64_t>(image, off_layer_sums + size_t(l) * 8);
  }
  return {};
}

block_check check_block(const std::byte* image, size_t size, const block_format& expected, block_key key,
                        block_header* out) {
  block_header h;
  block_check c = check_header(image, size, expected, key, &h);
  if (!c.ok()) return c;
  if (size < expected.header_bytes() + expected.payload_bytes())
    return fault(block_fault::truncated, "truncated payload");
  const std::byte* payload = image + expected.header_bytes();
  for (uint32_t l = 0; l < expected.layers; ++l) {
    if (!check_layer(h, l, payload + l * expected.layer_bytes()))
      return fault(block_fault::corrupt, fmt::format("layer {} checksum", l));
  }
  if (out) *out = std::move(h);
  return {};
}

bool check_layer(const block_header& header, uint32_t layer, const std::byte* slice) {
  if (layer >= header.layer_checksums.size()) return false;
  return layer_hash(slice, header.format.layer_bytes()) == header.layer_checksums[layer];
}

}  // namespace dualpath::storage
