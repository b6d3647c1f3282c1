#include "serve/peer_watch.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <filesystem>

namespace dualpath::serve {

namespace {

bool same(const sockaddr_in& a, uint32_t addr, int port) {
  return a.sin_addr.s_addr == addr && ntohs(a.sin_port) == port;
}

}  // namespace

peer_watch::peer_watch(int local_port, const std::string& remote_addr, int remote_port) {
  in_addr remote{};
  if (inet_pton(AF_INET, remote_addr.c_str(), &remote) != 1) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (...) {
      continue;
    }
    sockaddr_in peer{}, local{};
    socklen_t pl = sizeof(peer), ll = sizeof(local);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0 || peer.sin_family != AF_INET) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (same(peer, remote.s_addr, remote_port) && ntohs(local.sin_port) == local_port) {
      fd_ = fd;
      return;
    }
  }
}

bool peer_watch::hung_up() const {
  if (!fd_) return false;
  pollfd p{*fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char c;  // readable: a pipelined request, or the end of the stream
  return recv(*fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace dualpath::serve
