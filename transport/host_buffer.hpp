#pragma once
// Host memory meant for registration: 2 MiB aligned, backed by transparent huge pages where the kernel
// allows, and faulted in up front. Registered transfers over shm copy through the kernel (CMA), which
// pins pages per transfer; huge pages make that markedly cheaper (see the README, "Transport").
#include <cstddef>
#include <cstdint>

namespace dualpath::transport {

class host_buffer {
 public:
  // Throws user_error for zero bytes or when the memory cannot be allocated.
  explicit host_buffer(uint64_t bytes);
  ~host_buffer();
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  host_buffer(host_buffer&& other) noexcept;
  host_buffer& operator=(host_buffer&& other) noexcept;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace dualpath::transport
