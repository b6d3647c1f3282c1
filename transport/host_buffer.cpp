#include "transport/host_buffer.hpp"

#include <fmt/format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/status.hpp"

namespace dualpath::transport {

namespace {

// Touches every page now, so no transfer pays for faulting it in. Where the hypervisor hands back the memory
// of huge pages lazily (free page reporting), each first touch of a 2 MB page waits on the host, about 100 MB/s
// on one thread; those waits overlap, so large buffers are touched by a few threads at once (2.5-3x faster
// on a 2-core VM; docs/experiments.md, "Node start-up"). Buffers from 64 MB on.
void fault_in(std::byte* p, uint64_t bytes) {
  constexpr uint64_t per_thread_min = uint64_t(32) << 20;
  const uint64_t threads = std::min<uint64_t>(4, bytes / per_thread_min);
  if (threads < 2) return static_cast<void>(std::memset(p, 0, bytes));
  const uint64_t chunk = huge_page_rounded(bytes / threads);
  std::vector<std::thread> team;
  team.reserve(threads);  // chunks are at least bytes / threads: no reallocation while threads run
  for (uint64_t off = 0; off < bytes; off += chunk) {
    const uint64_t n = std::min(chunk, bytes - off);
    try {
      team.emplace_back([p, off, n] { std::memset(p + off, 0, n); });
    } catch (const std::system_error&) {  // no thread to be had: this one touches the chunk itself
      std::memset(p + off, 0, n);
    }
  }
  for (auto& t : team) t.join();
}

}  // namespace

host_buffer::host_buffer(uint64_t bytes, host_memory kind) : size_(bytes) {
  if (bytes == 0) throw user_error("transport: host_buffer of zero bytes");
  if (kind == host_memory::private_pages) {
    data_ = static_cast<std::byte*>(allocate_huge_pages(bytes));  // advisory: without THP it is plain memory
    if (!data_) throw user_error(fmt::format("transport: cannot allocate a host buffer of {} bytes", bytes));
    fault_in(data_, huge_page_rounded(bytes));
    return;
  }
  mapped_ = huge_page_rounded(bytes);
  fd_ = memfd_create("dualpath-buffer", MFD_CLOEXEC);
  void* p = MAP_FAILED;
  if (fd_ >= 0 && ftruncate(fd_, off_t(mapped_)) == 0)
    p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    release();
    throw user_error(
        fmt::format("transport: cannot make a shared host buffer of {} bytes: {}", bytes, std::strerror(err)));
  }
  data_ = static_cast<std::byte*>(p);
  madvise(data_, mapped_, MADV_HUGEPAGE);  // advisory: shmem's own setting decides
  fault_in(data_, mapped_);
}

void host_buffer::release() {
  if (fd_ >= 0) {
    if (data_) munmap(data_, mapped_);
    close(fd_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  fd_ = -1;
  mapped_ = 0;
}

host_buffer::~host_buffer() { release(); }

host_buffer::host_buffer(host_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      mapped_(std::exchange(other.mapped_, 0)) {}

host_buffer& host_buffer::operator=(host_buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

}  // namespace dualpath::transport
