// The scheduler's control port on the network: publishing it, and the client `dualpath ctl` uses.
#include "cluster/control_client.hpp"
#include "protocol/errors.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <cerrno>
#include <cstring>

#include "actors/control.hpp"
#include "core/status.hpp"

namespace dualpath::cluster {

namespace {

std::string where(const std::string& host, uint16_t port) { return host + ":" + std::to_string(port); }

// CAF's binary protocol starts with the server's handshake as soon as a connection is accepted. Waiting
// for its first byte on a plain socket turns "nothing listens" and "a silent or foreign peer" into
// quick, clear errors instead of a connect that blocks forever.
void probe(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    throw user_error("ctl: cannot resolve host '" + host + "'");
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw user_error(std::string("ctl: socket: ") + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return int(std::max<int64_t>(0, left.count()));
  };
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0 && errno != EINPROGRESS)
    throw user_error("ctl: cannot connect to " + where(host, port) + ": " + std::strerror(errno));
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, left_ms()) <= 0)
    throw user_error("ctl: no connection to " + where(host, port) + " within " + std::to_string(timeout.count()) +
                     " ms");
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0)
    throw user_error("ctl: cannot connect to " + where(host, port) + ": " + std::strerror(err) +
                     " (is the scheduler running and its control port right?)");
  p = {fd, POLLIN, 0};
  uint8_t first = 0xff;
  if (poll(&p, 1, left_ms()) <= 0)
    throw user_error("ctl: " + where(host, port) +
                     " is not a DualPath scheduler control port (no CAF handshake within " +
                     std::to_string(timeout.count()) + " ms)");
  if (recv(fd, &first, 1, 0) != 1 || first != 0)
    throw user_error(
        "ctl: " + where(host, port) +
        " is not a DualPath scheduler control port (it closed the connection or did not answer with a CAF handshake)");
}

}  // namespace

uint16_t publish_control(caf::actor_system& sys, const scheduler_actor& scheduler, uint16_t port,
                         const std::string& host, control_gate gate) {
  auto ctl = spawn_control(sys, scheduler, std::move(gate));
  auto bound = sys.middleman().publish(ctl, port, host.c_str(), true);
  if (!bound) {
    caf::anon_send_exit(ctl, caf::exit_reason::user_shutdown);
    throw user_error("scheduler control port: cannot listen on " + where(host, port) + ": " + describe(bound.error()));
  }
  return *bound;
}

struct control_client::impl {
  caf::actor_system& sys;
  std::string host;
  uint16_t port;
  std::chrono::milliseconds timeout;
  std::string proof;
  control_actor handle;

  template <class Reply, class... Ts>
  Reply ask(Ts... xs) {
    caf::scoped_actor self{sys};
    Reply out;
    std::string failure;
    self->request(handle, timeout, xs...)
        .receive([&](const Reply& r) { out = r; }, [&](const caf::error& e) { failure = describe(e); });
    if (failure.find("wrong cluster secret") != std::string::npos)
      throw user_error("ctl: " + where(host, port) +
                       " refused the command: wrong cluster secret (give the cluster's "
                       "secret with --secret or " +
                       secret_env + ")");
    if (!failure.empty()) throw user_error("ctl: request to " + where(host, port) + " failed: " + failure);
    return out;
  }
};

control_client::control_client(caf::actor_system& sys, const std::string& host, uint16_t port,
                               const std::string& secret, std::chrono::milliseconds timeout)
    : impl_(new impl{sys, host, port, timeout, secret_proof(secret, secret_purpose::control), {}}) {
  probe(host, port, timeout);
  auto h = sys.middleman().remote_actor<control_actor>(host, port);
  if (!h)
    throw user_error("ctl: " + where(host, port) + " is not a DualPath scheduler control port: " + describe(h.error()));
  impl_->handle = std::move(*h);
}

control_client::~control_client() = default;

policy_status control_client::set_policy(const std::string& name) {
  return decode(impl_->ask<envelope<schema::PolicyStatus>>(atom::policy_v, atom::set_v, impl_->proof, name));
}

policy_status control_client::get_policy() {
  return decode(impl_->ask<envelope<schema::PolicyStatus>>(atom::policy_v, atom::get_v, impl_->proof));
}

scheduler_counters control_client::stats() {
  return decode(impl_->ask<envelope<schema::SchedulerStats>>(atom::stats_v, impl_->proof));
}

std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what, bool allow_any) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw user_error(what + ": expected HOST:PORT, got '" + text + "'");
  const std::string port_text = text.substr(colon + 1);
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (*end != '\0' || (port == 0 && !allow_any) || port > 65535)
    throw user_error(what + ": port must be " + (allow_any ? "0-65535" : "1-65535") + ", got '" + port_text + "'");
  return {text.substr(0, colon), uint16_t(port)};
}

}  // namespace dualpath::cluster
