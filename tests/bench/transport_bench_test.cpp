// `dualpath bench transport --peer-process`: the peer endpoint in a child process (its buffer a memfd) takes
// every block, through the provider or copied into its mapped buffer, and the child is gone afterwards.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cerrno>

#include "bench/transport_bench.hpp"

using namespace dualpath;

TEST_CASE("bench transport writes across a peer process, with and without local copies") {
  for (const bool local : {true, false}) {
    CAPTURE(local);
    bench::transport_bench_options o;
    o.provider = "shm";
    o.peer_process = true;
    o.local_copies = local;
    o.slice_bytes = 64 << 10;
    o.block_bytes = 16 << 10;
    o.gather = 2;
    o.span_bytes = 4 << 20;
    o.total_bytes = 16 << 20;
    o.repeats = 1;
    const auto r = bench::run_transport_bench(o);  // a failed block throws
    CHECK(r.gb_per_s > 0);
    CHECK(r.memcpy_gb_per_s > 0);
    CHECK(r.to_json().find("\"peer_process\": true") != std::string::npos);
    // The child was reaped: this process has no child left.
    CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
  }
}
