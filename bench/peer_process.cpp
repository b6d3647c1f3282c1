#include "bench/peer_process.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "core/status.hpp"
#include "transport/host_buffer.hpp"

namespace dualpath::bench {

namespace {

bool write_all(int fd, const void* p, size_t n) {
  for (size_t done = 0; done < n;) {
    const ssize_t k = ::write(fd, static_cast<const char*>(p) + done, n - done);
    if (k <= 0) return false;
    done += size_t(k);
  }
  return true;
}

// Waits at most 30 s for the child's answer: a child that hangs fails the benchmark, never stalls it.
bool read_all(int fd, void* p, size_t n) {
  for (size_t done = 0; done < n;) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, 30'000) <= 0) return false;
    const ssize_t k = ::read(fd, static_cast<char*>(p) + done, n - done);
    if (k <= 0) return false;
    done += size_t(k);
  }
  return true;
}

// The child: serves until its parent closes the pipe (or exits), at most 10 minutes. Never returns.
[[noreturn]] void serve(const transport::fabric_options& opts, uint64_t bytes, int to_parent, int from_parent) {
  int rc = 1;
  try {
    auto ep = transport::endpoint::open(opts);
    transport::host_buffer buffer(bytes, transport::host_memory::shared_file);
    auto region = ep->register_memory(buffer.data(), buffer.size());
    const auto address = ep->address();
    const uint64_t n = address.size();
    const auto remote = region->remote();
    if (write_all(to_parent, &n, sizeof(n)) && write_all(to_parent, address.data(), n) &&
        write_all(to_parent, &remote, sizeof(remote))) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
      // Plain writes need nothing from the target (shm copies inside the writer's post, or the writer copies
      // itself): progress once a millisecond, so this process does not take a core from the writer.
      while (std::chrono::steady_clock::now() < deadline) {
        ep->poll_completions();
        ep->poll_arrivals();
        pollfd pf{from_parent, POLLIN, 0};
        if (poll(&pf, 1, 1) != 0) break;  // the parent closed its end: done
      }
      rc = 0;
    }
  } catch (...) {
  }
  _exit(rc);
}

}  // namespace

peer_process::peer_process(const transport::fabric_options& opts, uint64_t bytes) {
  int up[2], down[2];
  if (pipe(up) != 0) throw user_error(fmt::format("bench transport: pipe: {}", std::strerror(errno)));
  if (pipe(down) != 0) {
    close(up[0]);
    close(up[1]);
    throw user_error(fmt::format("bench transport: pipe: {}", std::strerror(errno)));
  }
  pid_ = fork();
  if (pid_ == 0) {
    close(up[0]);
    close(down[1]);
    serve(opts, bytes, up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  to_child_ = down[1];
  uint64_t n = 0;
  const bool started = pid_ > 0 && read_all(up[0], &n, sizeof(n)) && n > 0 && n <= 4096 &&
                       (address_.resize(n), read_all(up[0], address_.data(), n)) &&
                       read_all(up[0], &remote_, sizeof(remote_));
  close(up[0]);
  if (!started) {
    stop();
    throw user_error("bench transport: the peer process did not start (its endpoint or buffer failed)");
  }
}

peer_process::~peer_process() { stop(); }

void peer_process::stop() {
  if (to_child_ >= 0) close(to_child_);
  to_child_ = -1;
  if (pid_ <= 0) return;
  // The child sees the pipe close within a millisecond; one that does not end within 10 s is killed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waitpid(pid_, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      break;
    }
    usleep(1000);
  }
  pid_ = -1;
}

}  // namespace dualpath::bench
