#include "transport/host_buffer.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/status.hpp"

namespace dualpath::transport {

namespace {
constexpr uint64_t huge_page = 2ull << 20;
uint64_t rounded(uint64_t n) { return (n + huge_page - 1) / huge_page * huge_page; }
}  // namespace

host_buffer::host_buffer(uint64_t bytes) : size_(bytes) {
  if (bytes == 0) throw user_error("transport: host_buffer of zero bytes");
  data_ = static_cast<std::byte*>(std::aligned_alloc(huge_page, rounded(bytes)));
  if (!data_) throw user_error(fmt::format("transport: cannot allocate a host buffer of {} bytes", bytes));
  madvise(data_, rounded(bytes), MADV_HUGEPAGE);  // advisory: without THP it is plain memory
  std::memset(data_, 0, rounded(bytes));          // fault in now, not during the first transfer
}

host_buffer::~host_buffer() { std::free(data_); }

host_buffer::host_buffer(host_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

host_buffer& host_buffer::operator=(host_buffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace dualpath::transport
