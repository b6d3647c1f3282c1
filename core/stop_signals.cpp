#include "core/stop_signals.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace dualpath {

namespace {

std::atomic<int> requested{0};
int wake_pipe[2] = {-1, -1};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler stores into it");

// Async-signal-safe: an atomic store and a write(2) that wakes the watcher.
extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  requested.compare_exchange_strong(expected, sig);
  const int saved = errno;
  const char byte = char(sig);
  [[maybe_unused]] const auto n = write(wake_pipe[1], &byte, 1);
  errno = saved;
}

void take(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

// Waits for the first signal, then for the grace period or a second signal, whichever comes first.
void watch(std::chrono::milliseconds grace) {
  char byte = 0;
  while (read(wake_pipe[0], &byte, 1) != 1) {
    if (errno != EINTR) return;
  }
  const int sig = requested.load();
  // stdio, not spdlog: the signal may come while main returns, and exit() destroys spdlog's registry while
  // this thread runs (a use after free that ended such processes with SIGSEGV); stderr stays open to the end.
  std::fprintf(stderr, "dualpath: stopping on signal %d\n", sig);
  fd_set fds;
  FD_ZERO(&fds);
  FD_SET(wake_pipe[0], &fds);
  timeval wait{time_t(grace.count() / 1000), suseconds_t(grace.count() % 1000) * 1000};
  (void)select(wake_pipe[0] + 1, &fds, nullptr, nullptr, &wait);  // a second signal, or the grace is over
  std::fprintf(stderr, "dualpath: did not stop within %.1f s of signal %d; ending now\n", grace.count() / 1000.0, sig);
  // Not end_process: its spdlog flush could meet a registry that exit() is destroying (see above).
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(exit_code_for(sig));
}

}  // namespace

void own_stop_signals(std::chrono::milliseconds grace) {
  if (wake_pipe[0] >= 0 || pipe2(wake_pipe, O_CLOEXEC) != 0) return;
  // libinfinipath (loaded with libfabric) installs its handlers from a constructor, before main, unless
  // this is set: processes this one starts (node processes) never get them.
  setenv("IPATH_NO_BACKTRACE", "1", 0);
  reclaim_signals();
  std::thread(watch, grace).detach();
}

void reclaim_signals() {
  if (wake_pipe[0] < 0) return;  // this process did not ask to own them (a test binary, say)
  take(SIGTERM, on_stop_signal);
  take(SIGINT, on_stop_signal);
  // A crash is a crash: libraries' handlers for these (libfabric's psm dependency installs some at load
  // and when a fabric opens) call exit() from the signal, which can deadlock in exit-time destructors.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE}) take(sig, SIG_DFL);
}

int stop_requested() { return requested.load(); }

int exit_code_for(int signal) { return 128 + signal; }

void end_process(int code) {
  if (auto log = spdlog::default_logger()) log->flush();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

bool sleep_unless_stopped(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    if (stop_requested()) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
  }
  return stop_requested() != 0;
}

}  // namespace dualpath
