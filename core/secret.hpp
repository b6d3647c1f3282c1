#pragma once
// The cluster's secret (docs/design.md §13): the registry admits a node, and the control port a command,
// only with a proof of it. The secret itself never travels: a proof is HMAC-SHA256(secret, purpose), so a
// proof for the control port says nothing about the registry's, and neither reveals the secret.
#include <atomic>
#include <cstdint>
#include <string>

namespace dualpath {

enum class secret_purpose { registry, control };

// The environment variable the launcher hands its node processes, and that `dualpath node` / `ctl` read.
inline constexpr const char* secret_env = "DUALPATH_SECRET";

// What a peer sends instead of the secret: HMAC-SHA256(secret, purpose's label), 64 hex digits.
std::string secret_proof(const std::string& secret, secret_purpose purpose);

// Compares a received proof with the expected one in time independent of where they differ.
bool proof_matches(const std::string& expected, const std::string& received);

// 32 random bytes from the OS, as 64 hex digits: a run's secret when none is given.
std::string generate_secret();

// The secret a process was given: `explicit_secret` (a flag or the cluster file) if set, else
// DUALPATH_SECRET, else "" (none given).
std::string given_secret(const std::string& explicit_secret = "");

// Peers refused for a wrong or missing secret, counted where the run reports them.
struct refused_peers {
  std::atomic<uint64_t> joins{0};     // registry messages (join, wire, ready)
  std::atomic<uint64_t> commands{0};  // control port commands
};

}  // namespace dualpath
