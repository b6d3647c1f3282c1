#include "storage/read_engine.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "storage/block_files.hpp"
#include "storage/block_format.hpp"

namespace dualpath::storage {

namespace {
constexpr uint64_t wake_tag = ~uint64_t(0);
io_uring* as_ring(void* p) { return static_cast<io_uring*>(p); }
}  // namespace

struct read_engine::slot {
  read_job job;
  int fd = -1;
  uint64_t size = 0;  // file size
  file_id id;
  uint64_t target = 0;  // bytes to read
  uint64_t done = 0;
  bool busy = false;
  uint32_t index = 0;
};

read_engine::read_engine(uint32_t depth, bool direct) : depth_(depth == 0 ? 1 : depth), direct_(direct) {
  const char* no_uring = std::getenv("DUALPATH_STORAGE_NO_URING");
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const bool switched_off = no_uring && std::strcmp(no_uring, "1") == 0;
  int rc = -ENOSYS;
  auto* ring = new io_uring;
  if (event_fd_ >= 0 && !switched_off) {
    rc = io_uring_queue_init(depth_ + 1, ring, 0);  // one extra entry for the wake-up poll
  }
  if (rc < 0) {
    delete ring;
    const uint32_t threads = std::min<uint32_t>(depth_, 8);
    const std::string why = switched_off    ? "DUALPATH_STORAGE_NO_URING=1"
                            : event_fd_ < 0 ? std::string("eventfd: ") + std::strerror(errno)
                                            : std::string("io_uring_queue_init: ") + std::strerror(-rc);
    spdlog::warn("storage: not using io_uring ({}); reading with {} blocking threads", why, threads);
    for (uint32_t i = 0; i < threads; ++i) pool_.emplace_back([this] { run_blocking(); });
    return;
  }
  ring_ = ring;
  for (uint32_t i = 0; i < depth_; ++i) {
    slots_.push_back(new slot);
    slots_.back()->index = i;
  }
  thread_ = std::thread([this] { run(); });
}

read_engine::~read_engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  for (auto& t : pool_) t.join();
  // Fail whatever was still queued (the pool leaves it; the ring thread already did).
  std::deque<read_job> rest;
  rest.swap(queue_);
  for (auto& j : rest) j.done(read_result{ECANCELED, 0, 0, {}});
  for (slot* s : slots_) delete s;
  if (event_fd_ >= 0) ::close(event_fd_);
  if (ring_) {
    io_uring_queue_exit(as_ring(ring_));
    delete as_ring(ring_);
  }
}

void read_engine::wake() {
  if (!ring_) {
    cv_.notify_all();
    return;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
}

read_result read_engine::read_whole(const read_job& job, bool* direct) {
  read_result r;
  if (job.refuse != 0) {
    r.error = job.refuse;
    return r;
  }
  const int fd = open_for_read(job.path, direct);
  if (fd < 0) {
    r.error = -fd;
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    r.file_size = uint64_t(st.st_size);
    r.id = identity_of(st);
  }
  const uint64_t target = (r.file_size + block_alignment - 1) / block_alignment * block_alignment;
  if (target <= job.length) {
    while (r.bytes_read < target) {
      const ssize_t n = ::pread(fd, job.buffer + r.bytes_read, target - r.bytes_read, off_t(r.bytes_read));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        r.error = errno;
        break;
      }
      if (n == 0) break;
      r.bytes_read += uint64_t(n);
    }
  }
  ::close(fd);
  return r;
}

void read_engine::run_blocking() {
  for (;;) {
    read_job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (queue_.empty() && !stop_) cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    bool direct = direct_.load();
    const read_result r = read_whole(job, &direct);
    if (!direct) direct_ = false;
    job.done(r);
  }
}

void read_engine::submit(std::vector<read_job> jobs) {
  if (jobs.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& j : jobs) queue_.push_back(std::move(j));
  }
  wake();
}

void read_engine::queue_read(slot& s) {
  io_uring_sqe* sqe = io_uring_get_sqe(as_ring(ring_));
  // Never null: at most depth_ reads plus the wake-up poll are ever outstanding.
  // At most 1 GiB per request: the length field is 32 bits.
  const uint64_t chunk = std::min<uint64_t>(s.target - s.done, uint64_t(1) << 30);
  io_uring_prep_read(sqe, s.fd, s.job.buffer + s.done, unsigned(chunk), s.done);
  io_uring_sqe_set_data64(sqe, s.index);
}

void read_engine::start_job(slot& s) {
  bool direct = direct_.load();
  const int fd = s.job.refuse != 0 ? -s.job.refuse : open_for_read(s.job.path, &direct);
  if (!direct) direct_ = false;
  s.done = 0;
  s.size = 0;
  s.id = file_id{};
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      s.size = uint64_t(st.st_size);
      s.id = identity_of(st);
    }
  }
  s.fd = fd;
  s.target = (s.size + block_alignment - 1) / block_alignment * block_alignment;
  if (fd >= 0 && s.target > 0 && s.target <= s.job.length) {
    queue_read(s);
    return;
  }
  // Missing, empty or larger than the buffer: nothing to read, the caller judges the size.
  read_result r;
  r.error = fd < 0 ? -fd : 0;
  r.file_size = s.size;
  r.id = s.id;
  if (fd >= 0) ::close(fd);
  s.fd = -1;
  s.busy = false;
  auto done = std::move(s.job.done);
  s.job = read_job{};
  done(r);
}

void read_engine::run() {
  io_uring* ring = as_ring(ring_);
  auto arm_wake = [&] {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    io_uring_prep_poll_add(sqe, event_fd_, POLLIN);
    io_uring_sqe_set_data64(sqe, wake_tag);
  };
  arm_wake();
  uint32_t in_flight = 0;
  std::vector<std::pair<std::function<void(const read_result&)>, read_result>> deferred;
  for (;;) {
    // Move queued jobs into free slots (FIFO).
    std::vector<slot*> started;
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping = stop_.load();
      for (slot* s : slots_) {
        if (stopping || queue_.empty()) break;
        if (s->busy) continue;
        s->busy = true;
        s->job = std::move(queue_.front());
        queue_.pop_front();
        started.push_back(s);
      }
    }
    for (slot* s : started) {
      start_job(*s);
      if (s->busy) ++in_flight;
    }
    io_uring_submit(ring);
    // Callbacks (which verify checksums) run only after the freed slots are busy again, so the
    // device never waits on them.
    for (auto& [done, r] : deferred) done(r);
    deferred.clear();
    if (stopping && in_flight == 0) break;
    if (!started.empty() && in_flight == 0) continue;  // all finished at open: take more
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec ts{0, 100 * 1000 * 1000};  // bounded wait so a stop is always noticed
    if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) < 0) continue;
    unsigned head, seen = 0;
    std::vector<std::pair<slot*, int>> finished;
    io_uring_for_each_cqe(ring, head, cqe) {
      ++seen;
      const uint64_t tag = io_uring_cqe_get_data64(cqe);
      if (tag == wake_tag) {
        uint64_t v;
        while (::read(event_fd_, &v, sizeof v) > 0) {
        }
        arm_wake();
        continue;
      }
      slot* s = slots_[tag];
      const int res = cqe->res;
      if (res == -EINTR || res == -EAGAIN) {
        queue_read(*s);
      } else if (res < 0) {
        finished.emplace_back(s, -res);
      } else if (res == 0) {
        finished.emplace_back(s, 0);  // end of file: the caller sees the short length
      } else {
        s->done += uint64_t(res);
        if (s->done < s->target) queue_read(*s);
        else finished.emplace_back(s, 0);
      }
    }
    io_uring_cq_advance(ring, seen);
    for (auto& [s, err] : finished) {
      ::close(s->fd);
      s->fd = -1;
      deferred.emplace_back(std::move(s->job.done), read_result{err, s->size, s->done, s->id});
      s->job = read_job{};
      s->busy = false;
      --in_flight;
    }
  }
  // Fail whatever was still queued.
  std::deque<read_job> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rest.swap(queue_);
  }
  for (auto& j : rest) j.done(read_result{ECANCELED, 0, 0, {}});
}

}  // namespace dualpath::storage
