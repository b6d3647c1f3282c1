#pragma once
// Whether the HTTP client of a request has hung up while its answer is being made (docs/design.md §18), so the
// turn is cancelled instead of running to max_tokens for nobody. The HTTP library does not hand its socket to
// handlers; the connection is found among the process's sockets by its two addresses, once per request.
#include <optional>
#include <string>

namespace dualpath::serve {

class peer_watch {
 public:
  // The connection local_port <- remote_addr:remote_port (IPv4, as the request names them); none found is
  // treated as alive.
  peer_watch(int local_port, const std::string& remote_addr, int remote_port);
  // True once the peer closed its side or the connection broke. Never blocks.
  bool hung_up() const;

 private:
  std::optional<int> fd_;
};

}  // namespace dualpath::serve
