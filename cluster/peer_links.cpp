// Direct middleman connections between node processes (docs/design.md §13).
#include "cluster/peer_links.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <fmt/format.h>

#include <memory>

#include "protocol/errors.hpp"

namespace dualpath::cluster {

using protocol::describe;

result<std::string> local_address_toward(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    return status(errc::bad_input, fmt::format("registry host '{}': {}", host, gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
  // A datagram socket's connect only picks the route and so the local address; nothing is sent.
  for (auto* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    const bool ok =
        connect(fd, a->ai_addr, a->ai_addrlen) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
    close(fd);
    if (!ok) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* in = local.ss_family == AF_INET6
                         ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                         : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, in, text, sizeof(text)) != nullptr) return std::string(text);
  }
  return status(errc::unavailable, fmt::format("no local address routes to the registry host '{}'", host));
}

result<uint16_t> open_link(caf::actor_system& sys, const std::string& host) {
  auto port = sys.middleman().open(0, host.c_str(), true);
  if (!port)
    return status(errc::unavailable, fmt::format("cannot open a port on {}: {}", host, describe(port.error())));
  return *port;
}

bool dials_at_wiring(uint32_t self_node, const protocol::node_handles& peer) {
  return peer.node < self_node && peer.link_port != 0;
}

status dial_failed(const protocol::node_handles& peer, const caf::error& e) {
  return status(errc::unavailable, fmt::format("no direct link to node {} at {}:{}: {}", peer.node, peer.link_host,
                                               peer.link_port, describe(e)));
}

status dial(caf::actor_system& sys, const protocol::node_handles& peer, std::chrono::milliseconds budget) {
  caf::scoped_actor self{sys};
  status out;
  self->request(sys.middleman().actor_handle(), dial_wait(budget), caf::connect_atom::value, peer.link_host,
                peer.link_port)
      .receive([](const caf::node_id&, const caf::strong_actor_ptr&, const std::set<std::string>&) {},
               [&](const caf::error& e) { out = dial_failed(peer, e); });
  return out;
}

}  // namespace dualpath::cluster
