// transport/call_lock.hpp: the host-wide lock excludes across processes (fork), a holder that dies does not
// leave it held, and bad names are refused by name.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <vector>
#include <string>
#include <thread>

#include "core/status.hpp"
#include "transport/call_lock.hpp"

using namespace dualpath::transport;
using namespace std::chrono_literals;

namespace {

// A name of its own per test process and case: ctest runs test binaries side by side.
std::string lock_name(const char* what) {
  return "/dualpath-test-" + std::string(what) + "-" + std::to_string(getpid());
}

// Waits for child `pid` at most `limit`; kills it past that. Its exit status, or -1 when it had to be killed.
int wait_child(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int st = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    std::this_thread::sleep_for(5ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

// True when a byte arrives on `fd` within `limit`.
bool byte_within(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, int(limit.count())) != 1) return false;
  char c = 0;
  return read(fd, &c, 1) == 1;
}

}  // namespace

TEST_CASE("host call lock: another process waits while this one holds it, whatever the slot, and takes it after") {
  const std::string name = lock_name("excl");
  auto held = open_host_call_lock(name, true);
  held->lock(5);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // opens the launcher's lock as a node process does, takes it for another region, says so
    auto mine = open_host_call_lock(name, false);
    mine->lock(6);
    const char c = 1;
    const bool said = write(fds[1], &c, 1) == 1;
    mine->unlock(6);
    _exit(said ? 0 : 1);
  }
  CHECK_FALSE(byte_within(fds[0], 300ms));  // held here: the child waits, one lock for every region
  held->unlock(5);
  CHECK(byte_within(fds[0], 10s));
  CHECK(wait_child(child, 10s) == 0);
  close(fds[0]);
  close(fds[1]);
  remove_host_call_lock(name);
}

TEST_CASE("host call lock: a holder killed while holding it does not leave it held") {
  const std::string name = lock_name("robust");
  auto lock = open_host_call_lock(name, true);
  const pid_t holder = fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    auto mine = open_host_call_lock(name, false);  // mapped until the process ends, as a node's is
    mine->lock(call_lock::slots - 1);
    _exit(0);  // dies holding it
  }
  REQUIRE(wait_child(holder, 10s) == 0);
  // Taken in a child too, so that a lock left held fails the case instead of hanging it.
  const pid_t taker = fork();
  REQUIRE(taker >= 0);
  if (taker == 0) {
    lock->lock(call_lock::slots - 1);
    lock->unlock(call_lock::slots - 1);
    lock->lock(call_lock::slots - 1);  // and it is an ordinary lock again
    lock->unlock(call_lock::slots - 1);
    _exit(0);
  }
  CHECK(wait_child(taker, 10s) == 0);
  remove_host_call_lock(name);
}

TEST_CASE("host call lock: bad or missing names are refused, naming them") {
  CHECK_THROWS_WITH_AS(open_host_call_lock("no-slash", true), doctest::Contains("'no-slash'"), dualpath::user_error);
  CHECK_THROWS_WITH_AS(open_host_call_lock("/a/b", true), doctest::Contains("'/a/b'"), dualpath::user_error);
  const std::string gone = lock_name("gone");
  CHECK_THROWS_WITH_AS(open_host_call_lock(gone, false), doctest::Contains(gone.c_str()), dualpath::user_error);
  remove_host_call_lock(gone);  // removing what is not there is no error
}

TEST_CASE("process call lock: a slot excludes between threads") {
  auto lock = make_process_call_lock();
  int counter = 0;
  std::thread a([&] {
    for (int i = 0; i < 100000; ++i) {
      const held_call h(lock.get(), 3);
      ++counter;
    }
  });
  for (int i = 0; i < 100000; ++i) {
    const held_call h(lock.get(), 3);
    ++counter;
  }
  a.join();
  CHECK(counter == 200000);
}

TEST_CASE("call lock slots: one address always has the same slot, and addresses spread over the slots") {
  std::vector<uint8_t> address(64);
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 0; k < address.size(); ++k) address[k] = uint8_t(i * 31 + k);
    const uint32_t slot = call_lock_slot(address);
    CHECK(slot < call_lock::slots);
    CHECK(call_lock_slot(address) == slot);
    seen.insert(slot);
  }
  CHECK(seen.size() > call_lock::slots / 2);  // 256 addresses leave few of the 64 slots unused
}
