#pragma once
// Host memory meant for registration: 2 MiB aligned, backed by transparent huge pages where the kernel
// allows, and faulted in up front. Registered transfers over shm copy through the kernel (CMA), which
// pins pages per transfer; huge pages make that markedly cheaper (see the README, "Transport").
#include <cstddef>
#include <cstdint>

namespace dualpath::transport {

// `private_pages`: anonymous memory of this process. `shared_file`: a memfd (named `dualpath-buffer`) mapped
// shared, so that node processes on one host copy into each other's buffers directly (transport/local_copy.hpp,
// docs/design.md §8); the kernel gives such pages no transparent huge pages unless shmem allows them.
enum class host_memory : uint8_t { private_pages, shared_file };

class host_buffer {
 public:
  // Throws user_error for zero bytes or when the memory cannot be allocated.
  explicit host_buffer(uint64_t bytes, host_memory kind = host_memory::private_pages);
  ~host_buffer();
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  host_buffer(host_buffer&& other) noexcept;
  host_buffer& operator=(host_buffer&& other) noexcept;

  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  void release();

  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;          // shared_file: the memfd, kept open so that peers can open it through /proc
  uint64_t mapped_ = 0;  // shared_file: the length mapped
};

}  // namespace dualpath::transport
