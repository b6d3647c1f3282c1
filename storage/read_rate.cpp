#include "storage/read_rate.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace dualpath::storage {

namespace {
// Keys no chain produces in practice (a chain key is a 64-bit hash): a fixed pattern plus the index.
constexpr block_key probe_base = 0xd0a1'9a7b'0000'0000ull;
}  // namespace

result<read_rate> measure_read_rate(block_store& store, uint64_t target_bytes) {
  const uint64_t file_bytes = store.read_buffer_bytes();
  uint32_t n = uint32_t(std::clamp<uint64_t>(target_bytes / std::max<uint64_t>(1, file_bytes), 8, 64));
  // A store with a capacity must not evict a real block for a probe: use only the free room.
  if (const auto st = store.stats(); st.capacity_bytes > 0) {
    const uint64_t room = st.capacity_bytes > st.bytes ? (st.capacity_bytes - st.bytes) / file_bytes : 0;
    n = uint32_t(std::min<uint64_t>(n, room));
    if (n == 0) return status(errc::capacity, "read-rate probe: no free room in the store for a probe block");
  }
  const std::vector<std::byte> payload(store.options().format.payload_bytes(), std::byte{0x5a});
  std::vector<block_key> keys;
  auto cleanup = [&] {
    for (block_key k : keys) store.remove(k);
  };
  for (uint32_t i = 0; i < n; ++i) {
    const block_key k = probe_base + i + 1;
    if (store.contains(k)) continue;  // never touch a block that is not ours
    if (status s = store.write(k, 0, payload.data()); !s.ok()) {
      cleanup();
      return status(s.code(), "read-rate probe: " + s.message());
    }
    keys.push_back(k);
  }
  std::vector<aligned_buffer> buffers;
  std::vector<read_request> batch;
  for (size_t i = 0; i < keys.size(); ++i) {
    buffers.push_back(make_aligned_buffer(file_bytes));
    batch.push_back({keys[i], buffers.back().get(), i});
  }
  read_rate r;
  const auto t0 = std::chrono::steady_clock::now();
  store.submit(std::move(batch));
  std::string failure;
  for (size_t got = 0; got < keys.size();) {
    auto done = store.poll(std::chrono::milliseconds(1000));
    if (done.empty()) {
      failure = "no completion within 1 s";
      break;
    }
    for (const auto& c : done) {
      ++got;
      if (!c.ok() && failure.empty()) failure = c.message;
      r.bytes += c.bytes_read;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cleanup();
  if (!failure.empty()) return status(errc::io, "read-rate probe: " + failure);
  r.blocks = uint32_t(keys.size());
  if (r.blocks == 0 || !(r.seconds > 0)) return status(errc::io, "read-rate probe: nothing read");
  r.bytes_per_s = double(r.bytes) / r.seconds;
  return r;
}

}  // namespace dualpath::storage
