#include "transport/host_buffer.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/huge_pages.hpp"
#include "core/status.hpp"

namespace dualpath::transport {

host_buffer::host_buffer(uint64_t bytes) : size_(bytes) {
  if (bytes == 0) throw user_error("transport: host_buffer of zero bytes");
  data_ = static_cast<std::byte*>(allocate_huge_pages(bytes));  // advisory: without THP it is plain memory
  if (!data_) throw user_error(fmt::format("transport: cannot allocate a host buffer of {} bytes", bytes));
  std::memset(data_, 0, huge_page_rounded(bytes));  // fault in now, not during the first transfer
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
