#pragma once
// Copies to peers on this host without the provider (docs/design.md §8).
//
// The shm provider's RMA is a process_vm_writev per operation: a system call that pins the pages of every
// copy. At the scaled experiments' 10.5-KB Layer Blocks that call, not the copy, is the cost. A peer on this
// host has its registered memory in reach of a plain memcpy:
// - a peer endpoint of this process (the embedded nodes) has it in this address space; a copy must lie inside
//   the region that peer registered under the slice's key (shm's own RMA, copying with CMA, checks no key);
// - a peer in another process (node processes on one host) has it in a memfd (transport::host_memory::
//   shared_file), which this process maps once, found through /proc/PID/maps and /proc/PID/fd. The key is not
//   checked there (the peer's registrations are not visible here); the range must lie inside that buffer.
//   Whether the peer still runs is checked at most once a millisecond (a pidfd); once it is gone its buffers
//   are unmapped and the provider answers for it (an error, as for any dead peer).
//   A mapping is kept for the peer's life, so a shared_file buffer must stay where it is for its process's
//   life (node_io allocates its buffers once: a role switch lays them out again in place, a rejoin is a new
//   process); a buffer freed and another mapped at the same address would not be seen here.
// Everything else (memory that is not a dualpath buffer, a range outside one) goes to the provider. A region
// being deregistered or unmapped waits for the copies under way into or out of it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dualpath::transport {

struct local_piece;

namespace local_copy {

// The region [base, +length) registered with the endpoint at `address` under `key`; peers name its first byte
// `origin` (its virtual address, or 0 where the provider takes offsets).
void add(const std::vector<uint8_t>& address, uint64_t key, uint64_t origin, std::byte* base, uint64_t length);
// Waits for copies that touch it, then forgets it.
void remove(const std::vector<uint8_t>& address, uint64_t key);

// Copies `pieces` (in order, back to back) to the peer's [remote_addr, +their sum) when it can (see above);
// otherwise copies nothing and returns false, and the caller posts to the provider. `foreign_pid`: 0 for a peer
// of this process (its region registered under `key`), else the peer process (address_pid), whose remote
// addresses are virtual addresses.
bool write(const std::vector<uint8_t>& address, uint64_t key, uint64_t remote_addr, const local_piece* pieces,
           size_t count, int foreign_pid);
// Copies the peer's [remote_addr, +length) to `local` under the same conditions.
bool read(const std::vector<uint8_t>& address, uint64_t key, uint64_t remote_addr, std::byte* local, uint64_t length,
          int foreign_pid);

// The process behind a shm endpoint address ("fi_shm://PID:..."), or 0 (not such an address, or this process).
int address_pid(const std::vector<uint8_t>& address);

}  // namespace local_copy
}  // namespace dualpath::transport
