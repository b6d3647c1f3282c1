#include "transport/call_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "core/status.hpp"

namespace dualpath::transport {

namespace {

class process_lock final : public call_lock {
 public:
  void lock(uint32_t slot) override { m_.at(slot).lock(); }
  void unlock(uint32_t slot) override { m_.at(slot).unlock(); }

 private:
  std::array<std::mutex, slots> m_;
};

// One mutex for every region (see open_host_call_lock).
class host_lock final : public call_lock {
 public:
  explicit host_lock(pthread_mutex_t* m) : m_(m) {}
  ~host_lock() override { munmap(m_, sizeof(pthread_mutex_t)); }
  host_lock(const host_lock&) = delete;
  host_lock& operator=(const host_lock&) = delete;

  void lock(uint32_t) override {
    const int rc = pthread_mutex_lock(m_);
    // Its holder died inside a provider call. The provider's own state is the provider's; the lock is only
    // ours, so it is made consistent and taken.
    if (rc == EOWNERDEAD) pthread_mutex_consistent(m_);
  }
  void unlock(uint32_t) override { pthread_mutex_unlock(m_); }

 private:
  pthread_mutex_t* m_;
};

[[noreturn]] void fail(const std::string& name, const char* what, int err) {
  throw user_error(fmt::format("host call lock '{}': {}: {}", name, what, std::strerror(err)));
}

}  // namespace

uint32_t call_lock_slot(const std::vector<uint8_t>& address) {
  return uint32_t(XXH3_64bits(address.data(), address.size()) % call_lock::slots);
}

std::shared_ptr<call_lock> make_process_call_lock() { return std::make_shared<process_lock>(); }

std::shared_ptr<call_lock> open_host_call_lock(const std::string& name, bool create) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    throw user_error(fmt::format("host call lock '{}': the name must be '/' and a word without '/'", name));
  const int fd = shm_open(name.c_str(), create ? O_RDWR | O_CREAT : O_RDWR, 0600);
  if (fd < 0) fail(name, create ? "cannot create it" : "cannot open it", errno);
  if (create && ftruncate(fd, sizeof(pthread_mutex_t)) != 0) {
    const int err = errno;
    close(fd);
    fail(name, "cannot size it", err);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < off_t(sizeof(pthread_mutex_t))) {
    close(fd);
    throw user_error(fmt::format("host call lock '{}': it is not a lock (made by another program?)", name));
  }
  void* p = mmap(nullptr, sizeof(pthread_mutex_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int map_err = errno;
  close(fd);
  if (p == MAP_FAILED) fail(name, "cannot map it", map_err);
  auto* m = static_cast<pthread_mutex_t*>(p);
  if (create) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    const int rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    if (rc != 0) {
      munmap(p, sizeof(pthread_mutex_t));
      fail(name, "cannot initialise it", rc);
    }
  }
  return std::make_shared<host_lock>(m);
}

std::shared_ptr<call_lock> try_host_call_lock(const std::string& name, bool create) {
  try {
    return open_host_call_lock(name, create);
  } catch (const user_error& e) {
    spdlog::warn("{}; running without it", e.what());
    return nullptr;
  }
}

void remove_host_call_lock(const std::string& name) { shm_unlink(name.c_str()); }

}  // namespace dualpath::transport
