#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"
#include "core/status.hpp"
#include "transport/arbiter.hpp"
#include "transport/token_bucket.hpp"

using namespace dualpath::transport;

namespace {
// Serves `n` items and counts how many were kv.
int serve_kv(arbiter& arb, int n) {
  int kv = 0;
  for (int i = 0; i < n; ++i) {
    auto item = arb.peek();
    REQUIRE(item);
    kv += item->tc == traffic_class::kv;
    arb.pop();
  }
  return kv;
}
}  // namespace

TEST_CASE("arbiter serves model first and gives kv its byte share while both wait") {
  arbiter arb(true, 0.1);
  for (uint64_t i = 0; i < 1000; ++i) {
    arb.push({traffic_class::kv, i, 1000});
    arb.push({traffic_class::model, 10000 + i, 1000});
  }
  // 10% of the service goes to kv: about 1 in 10 items while model keeps waiting.
  const int kv = serve_kv(arb, 500);
  CHECK(kv >= 45);
  CHECK(kv <= 55);
}

TEST_CASE("arbiter with default share starves kv only as long as model waits") {
  arbiter arb(true, 0.01);
  for (uint64_t i = 0; i < 10; ++i) arb.push({traffic_class::kv, i, 4096});
  for (uint64_t i = 0; i < 50; ++i) arb.push({traffic_class::model, 100 + i, 4096});
  CHECK(serve_kv(arb, 50) == 0);   // 50 model items earn kv half an item's credit
  CHECK(serve_kv(arb, 10) == 10);  // model gone: kv runs
  CHECK(arb.empty());
}

TEST_CASE("arbiter without isolation is one FIFO and push_front keeps the turn") {
  arbiter arb(false, 0.01);
  arb.push({traffic_class::kv, 1, 10});
  arb.push({traffic_class::model, 2, 10});
  CHECK(arb.peek()->id == 1);
  arb.pop();
  arb.push_front({traffic_class::kv, 3, 10});
  CHECK(arb.peek()->id == 3);
  arb.pop();
  CHECK(arb.peek()->id == 2);
}

TEST_CASE("arbiter shares kv between peers byte for byte: a small transfer does not wait behind a bulk one") {
  arbiter arb(true, 0.01, 64 << 10);
  // A bulk load of 40 slices of 1 MiB to peer 0 (a decode node loading its HBM), then a fetch of 8 Layer Blocks
  // of 10 KiB to peer 1 (a prefill engine waiting for its layer).
  for (uint64_t i = 0; i < 40; ++i) arb.push({traffic_class::kv, i, 1 << 20, 0});
  for (uint64_t i = 0; i < 8; ++i) arb.push({traffic_class::kv, 100 + i, 10 << 10, 1});
  uint64_t bulk_before_fetch_done = 0, served = 0;
  std::vector<uint64_t> fetch_order;
  while (auto item = arb.peek()) {
    arb.pop();
    ++served;
    if (item->flow == 0 && fetch_order.size() < 8) bulk_before_fetch_done += item->bytes;
    if (item->flow == 1) fetch_order.push_back(item->id);
  }
  CHECK(served == 48);
  CHECK(arb.empty());
  // In a FIFO the fetch waited for all 40 MiB; shared, it is through after at most one bulk slice.
  CHECK(bulk_before_fetch_done <= (1u << 20));
  // Each flow keeps its own order.
  CHECK(fetch_order == std::vector<uint64_t>{100, 101, 102, 103, 104, 105, 106, 107});
}

TEST_CASE("arbiter: backlogged kv flows get equal bytes whatever their slice sizes; one flow alone is a FIFO") {
  arbiter arb(true, 0.01, 64 << 10);
  for (uint64_t i = 0; i < 64; ++i) arb.push({traffic_class::kv, i, 1 << 20, 7});            // 64 MiB in 1 MiB
  for (uint64_t i = 0; i < 4096; ++i) arb.push({traffic_class::kv, 1000 + i, 16 << 10, 9});  // 64 MiB in 16 KiB
  uint64_t bytes[2] = {0, 0};
  for (int n = 0; n < 2000; ++n) {  // while both are backlogged
    auto item = arb.peek();
    REQUIRE(item);
    bytes[item->flow == 9] += item->bytes;
    arb.pop();
  }
  const double ratio = double(bytes[0]) / double(bytes[1]);
  CHECK(ratio > 0.9);
  CHECK(ratio < 1.1);

  arbiter alone(true, 0.01, 64 << 10);
  for (uint64_t i = 0; i < 5; ++i) alone.push({traffic_class::kv, i, (i + 1) << 20, 3});
  for (uint64_t i = 0; i < 5; ++i) {
    CHECK(alone.peek()->id == i);
    alone.pop();
  }
  CHECK(alone.empty());
}

TEST_CASE("arbiter: a kv slice put back keeps its turn ahead of other flows, and so does the rest of a split head") {
  arbiter arb(true, 0.01, 64 << 10);
  arb.push({traffic_class::kv, 1, 10 << 10, 0});
  arb.push({traffic_class::kv, 2, 10 << 10, 1});
  CHECK(arb.peek()->id == 1);
  arb.pop();
  arb.push_front({traffic_class::kv, 3, 1 << 20, 0});  // bigger than any quantum: it still goes next
  CHECK(arb.peek()->id == 3);
  arb.split_kv_front(32 << 10, arbiter_item{traffic_class::kv, 4, (1 << 20) - (32 << 10), 0});
  CHECK(arb.peek()->id == 3);
  CHECK(arb.peek()->bytes == (32u << 10));
  arb.pop();
  // The rest of the split slice keeps the turn right behind it (as the scheduler's guard cuts a slice), then
  // peer 1's turn comes.
  CHECK(arb.peek()->id == 4);
  arb.pop();
  CHECK(arb.peek()->id == 2);
  arb.pop();
  CHECK(arb.empty());
}

TEST_CASE("arbiter refuses a kv share outside [0, 1)") {
  CHECK_THROWS_AS(arbiter(true, 1.0), dualpath::user_error);
  CHECK_THROWS_AS(arbiter(true, -0.5), dualpath::user_error);
}

TEST_CASE("token bucket charges whole slices and refuses while in debt") {
  token_bucket bucket(1e6, 1000);  // 1 MB/s
  const auto t0 = token_bucket::clock::now();
  CHECK(bucket.ready(t0));
  bucket.charge(10000);  // 10 ms worth
  CHECK_FALSE(bucket.ready(t0));
  const auto wait = bucket.wait_time(t0);
  CHECK(wait > std::chrono::milliseconds(9));
  CHECK(wait <= std::chrono::milliseconds(11));
  CHECK(bucket.ready(t0 + std::chrono::milliseconds(11)));
  token_bucket open(0, 0);
  CHECK(open.ready(t0));
}

#include "transport/host_buffer.hpp"

TEST_CASE("host buffers are huge-page aligned, zeroed and refuse zero bytes") {
  host_buffer buf(3 << 20);
  CHECK(reinterpret_cast<uintptr_t>(buf.data()) % (2 << 20) == 0);
  CHECK(buf.size() == 3u << 20);
  CHECK(buf.data()[(3 << 20) - 1] == std::byte{0});
  host_buffer moved(std::move(buf));
  CHECK(buf.data() == nullptr);
  CHECK(moved.size() == 3u << 20);
  CHECK_THROWS_AS(host_buffer(0), dualpath::user_error);
}

namespace {

// Mappings of this process whose path names a node's shared buffer (transport::host_memory::shared_file).
size_t shared_buffer_mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/memfd:dualpath-buffer") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("a large host buffer is resident in every page once constructed, private or shared") {
  for (const auto kind : {host_memory::private_pages, host_memory::shared_file}) {
    CAPTURE(int(kind));
    const size_t mapped_before = shared_buffer_mappings();
    {
      // Large enough for the faulting team of four (docs/experiments.md, "Node start-up"), and not a multiple of
      // its chunk.
      const uint64_t bytes = (uint64_t(197) << 20) + 12345;
      host_buffer buf(bytes, kind);
      const size_t page = size_t(sysconf(_SC_PAGESIZE));
      const size_t span = dualpath::huge_page_rounded(bytes);
      std::vector<unsigned char> resident(span / page);
      REQUIRE(mincore(buf.data(), span, resident.data()) == 0);
      size_t missing = 0;
      for (unsigned char r : resident) missing += (r & 1) ? 0 : 1;
      CHECK(missing == 0);
      // A shared buffer is a memfd mapping its peers can find; moving it hands the mapping over, not a copy.
      host_buffer moved(std::move(buf));
      CHECK(shared_buffer_mappings() == mapped_before + (kind == host_memory::shared_file ? 1 : 0));
    }
    CHECK(shared_buffer_mappings() == mapped_before);  // unmapped with its last owner: nothing leaks
  }
}

TEST_CASE("token bucket lets a priority class go ahead of a bounded debt only") {
  token_bucket bucket(1e6, 1000);
  const auto t0 = token_bucket::clock::now();
  bucket.charge(500);
  CHECK_FALSE(bucket.ready(t0));
  CHECK(bucket.ready(t0, 1000));
  bucket.charge(1000);
  CHECK_FALSE(bucket.ready(t0, 1000));
}
