// Two processes (fork): Layer Blocks cross a real process boundary, and a peer process that exits
// turns later transfers into error completions within the timeout. Over shm, into a peer's anonymous memory
// (the provider copies) and into its shared_file buffer (this process maps it and copies: local_copy).
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "tests/transport/transport_helpers.hpp"
#include "transport/host_buffer.hpp"

using namespace dualpath::transport;
using namespace dualpath::transport::testing;
using namespace std::chrono_literals;

namespace {

// Loops `io(offset, left)` (a read or write on a pipe) until `n` bytes moved; false on EOF or error.
template <class Io>
bool move_all(size_t n, Io io) {
  size_t done = 0;
  while (done < n) {
    const ssize_t moved = io(done, n - done);
    if (moved <= 0) return false;
    done += static_cast<size_t>(moved);
  }
  return true;
}

bool write_all(int fd, const void* p, size_t n) {
  return move_all(n, [&](size_t at, size_t left) { return ::write(fd, static_cast<const char*>(p) + at, left); });
}

bool read_all(int fd, void* p, size_t n) {
  return move_all(n, [&](size_t at, size_t left) { return ::read(fd, static_cast<char*>(p) + at, left); });
}

bool send_bytes(int fd, const address_bytes& a) {
  const uint64_t n = a.size();
  return write_all(fd, &n, sizeof(n)) && write_all(fd, a.data(), a.size());
}

bool recv_bytes(int fd, address_bytes& a) {
  uint64_t n = 0;
  if (!read_all(fd, &n, sizeof(n)) || n > 4096) return false;
  a.resize(n);
  return read_all(fd, a.data(), n);
}

bool pidfd_supported() {
  const int fd = int(syscall(SYS_pidfd_open, getpid(), 0));
  if (fd >= 0) close(fd);
  return fd >= 0;
}

constexpr int blocks = 500;
constexpr size_t block_bytes = 16 << 10;

// The receiving process: registers a buffer, hands out its address and region, waits for every
// notification, replies with the checksum of what landed and exits. Never returns.
[[noreturn]] void child(const std::string& provider, host_memory memory, int to_parent, int from_parent) {
  int rc = 1;
  try {
    fabric_options o;
    o.provider = provider;
    auto ep = endpoint::open(o);
    host_buffer buf(blocks * block_bytes, memory);
    auto mr = ep->register_memory(buf.data(), buf.size());
    const auto remote = mr->remote();
    address_bytes parent;
    if (send_bytes(to_parent, ep->address()) && write_all(to_parent, &remote, sizeof(remote)) &&
        recv_bytes(from_parent, parent)) {
      ep->connect(parent);
      size_t arrived = 0;
      std::vector<arrival> got;
      const bool ok = pump(
          {ep.get()}, [&] { return got.size() >= blocks; }, 20s, nullptr, &got);
      arrived = got.size();
      const uint64_t sum = ok ? fnv1a(buf.data(), blocks * block_bytes) : 0;
      write_all(to_parent, &arrived, sizeof(arrived));
      write_all(to_parent, &sum, sizeof(sum));
      rc = 0;
    }
  } catch (...) {
  }
  _exit(rc);
}

}  // namespace

TEST_CASE("Layer Blocks cross a process boundary; a peer process that exits yields error completions") {
  struct variant {
    std::string provider;
    host_memory memory;
  };
  for (const auto& [provider, memory] :
       {variant{"shm", host_memory::private_pages}, variant{"shm", host_memory::shared_file},
        variant{"tcp", host_memory::private_pages}}) {
    // A kernel without pidfd_open (before 5.3) cannot tell a peer process's exit: local_copy leaves such
    // peers to the provider, and the counts below expect that instead.
    const bool shared = memory == host_memory::shared_file && pidfd_supported();
    CAPTURE(provider);
    CAPTURE(shared);
    int up[2], down[2];
    REQUIRE(pipe(up) == 0);
    REQUIRE(pipe(down) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      child(provider, memory, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    fabric_options o;
    o.provider = provider;
    o.timeout = 500ms;
    o.slice_bytes = 4096;  // each block is four slices
    auto ep = endpoint::open(o);
    address_bytes child_address;
    remote_region remote;
    REQUIRE(recv_bytes(up[0], child_address));
    REQUIRE(read_all(up[0], &remote, sizeof(remote)));
    REQUIRE(send_bytes(down[1], ep->address()));
    const uint32_t peer = ep->connect(child_address);

    aligned_buffer src(blocks * block_bytes);
    fill_random(src.ptr, src.size, 99);
    auto mr = ep->register_memory(src.ptr, src.size);
    for (int i = 0; i < blocks; ++i) {
      ep->write(traffic_class::kv, *mr, i * block_bytes, peer, remote, i * block_bytes, block_bytes, i, i);
    }
    std::vector<completion> done;
    REQUIRE(pump(
        {ep.get()}, [&] { return done.size() == blocks; }, 20s, &done));
    CHECK(std::all_of(done.begin(), done.end(), [](auto& c) { return c.ok; }));
    size_t child_arrivals = 0;
    uint64_t child_sum = 0;
    REQUIRE(read_all(up[0], &child_arrivals, sizeof(child_arrivals)));
    REQUIRE(read_all(up[0], &child_sum, sizeof(child_sum)));
    CHECK(child_arrivals == blocks);
    CHECK(child_sum == fnv1a(src.ptr, src.size));
    // Each block's first three slices: copied here into the mapped buffer; the fourth carries remote data.
    CHECK(ep->stats().local_copies == (shared ? 3u * blocks : 0u));
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    close(up[0]);
    close(down[1]);

    // The peer process is gone: every further transfer must fail, bounded by the timeout. (Past local_copy's
    // liveness interval of a millisecond, so its buffer counts as gone from the first copy on.)
    std::this_thread::sleep_for(2ms);
    done.clear();
    for (int i = 0; i < 8; ++i) ep->write(traffic_class::kv, *mr, 0, peer, remote, 0, block_bytes, 100 + i, i);
    REQUIRE(pump(
        {ep.get()}, [&] { return done.size() == 8; }, 10s, &done));
    for (auto& c : done) {
      CHECK_FALSE(c.ok);
      CHECK(c.error.find("peer") != std::string::npos);
    }
    // Nothing more was copied into the dead peer's buffer: it was unmapped once the peer was found gone.
    CHECK(ep->stats().local_copies == (shared ? 3u * blocks : 0u));
  }
}

TEST_CASE("shm: regions a killed process left under a PID that comes back are removed, not refused") {
  // A child stands for the process that reuses a dead one's PID: it finds a region file of its own PID
  // (which shm's fi_enable would refuse with EBUSY), and one of a PID that is gone (its reaped sibling).
  const pid_t gone = fork();
  REQUIRE(gone >= 0);
  if (gone == 0) _exit(0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  const std::string dead_region = "/dev/shm/" + std::to_string(gone) + ":0:0";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 1;
    try {
      for (const auto& path : {dead_region, "/dev/shm/" + std::to_string(getpid()) + ":0:0"}) {
        FILE* f = std::fopen(path.c_str(), "w");
        if (f) std::fclose(f);
      }
      fabric_options o;
      o.provider = "shm";
      auto ep = endpoint::open(o);
      rc = access(dead_region.c_str(), F_OK) == 0 ? 3 : 0;
    } catch (...) {
      rc = 2;
    }
    _exit(rc);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 2: the endpoint did not open; 3: the dead PID's region stayed
  unlink(dead_region.c_str());
}
