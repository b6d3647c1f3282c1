// Copies are checked before they reach the progress thread, and the oracle's mover is plain memcpy.
#include <doctest/doctest.h>

#include <cstring>

#include "runtime/kv_mover.hpp"

using namespace dualpath;
using namespace dualpath::runtime;

namespace {
struct two_engines {
  std::vector<std::byte> buffer = std::vector<std::byte>(256), hbm0 = std::vector<std::byte>(128),
                         hbm1 = std::vector<std::byte>(128);
  node_fabric f;
  two_engines() {
    f.engines = {4};  // this node hosts engine 4; engine 9 is elsewhere (here: same process)
    f.buffer = buffer.data();
    f.buffer_bytes = buffer.size();
    f.hbm = {hbm0.data()};
    f.hbm_bytes = hbm0.size();
    f.directory.resize(10);
    f.directory[4].buffer = {0, 0, 256};
    f.directory[4].hbm = {0, 0, 128};
    f.directory[4].buffer_base = buffer.data();
    f.directory[4].hbm_base = hbm0.data();
    f.directory[9].hbm = {0, 0, 128};
    f.directory[9].hbm_base = hbm1.data();
  }
};
}  // namespace

TEST_CASE("copies from another node's engine, to an unknown engine or past a region are refused") {
  two_engines t;
  CHECK(t.f.validate({{4, region_kind::buffer, 0, 9, region_kind::hbm, 0, 128}}).ok());
  CHECK(t.f.validate({{5, region_kind::buffer, 0, 9, region_kind::hbm, 0, 8}}).code() == errc::internal);
  CHECK(t.f.validate({{4, region_kind::buffer, 0, 12, region_kind::hbm, 0, 8}}).message().find("unknown engine 12") !=
        std::string::npos);
  CHECK_FALSE(t.f.validate({{4, region_kind::buffer, 200, 9, region_kind::hbm, 0, 64}}).ok());  // past the buffer
  CHECK_FALSE(t.f.validate({{4, region_kind::buffer, 0, 9, region_kind::hbm, 100, 64}}).ok());  // past its HBM
}

TEST_CASE("a pull reads another engine's region into one of this node's own, within both") {
  two_engines t;
  copy_op pull{4, region_kind::hbm, 0, 4, region_kind::hbm, 0, 128};
  pull.src_engine = 9;  // engine 4 reads engine 9's HBM into its own
  CHECK(t.f.validate({pull}).ok());
  pull.dst_engine = 9;  // into another engine's region: not a pull
  CHECK(t.f.validate({pull}).code() == errc::internal);
  pull.dst_engine = 4;
  pull.src_engine = 12;
  CHECK(t.f.validate({pull}).message().find("pull from engine 12") != std::string::npos);
  pull.src_engine = 9;
  pull.src_offset = 100;  // past engine 9's HBM
  CHECK_FALSE(t.f.validate({pull}).ok());
  pull.src_offset = 0;
  pull.dst_kind = region_kind::buffer;  // engine 4's node buffer (256 B) holds it too
  pull.dst_offset = 128;
  CHECK(t.f.validate({pull}).ok());
  pull.dst_offset = 200;  // past it
  CHECK_FALSE(t.f.validate({pull}).ok());
}

TEST_CASE("the oracle's mover copies with memcpy and finishes at once") {
  two_engines t;
  for (size_t i = 0; i < t.buffer.size(); ++i) t.buffer[i] = std::byte(i);
  auto mover = make_memcpy_mover(t.f);
  bool done = false;
  mover->post({{4, region_kind::buffer, 16, 9, region_kind::hbm, 32, 64}}, transport::traffic_class::kv,
              [&](status s) { done = s.ok(); });
  CHECK(done);
  CHECK(std::memcmp(t.hbm1.data() + 32, t.buffer.data() + 16, 64) == 0);
  CHECK(t.hbm1[31] == std::byte{0});
  CHECK(mover->idle());
  CHECK(mover->stats().bytes == 64);

  // A pull: engine 4 reads engine 9's HBM into its own.
  for (size_t i = 0; i < t.hbm1.size(); ++i) t.hbm1[i] = std::byte(200 - i);
  copy_op pull{4, region_kind::hbm, 8, 4, region_kind::hbm, 0, 16};
  pull.src_engine = 9;
  done = false;
  mover->post({pull}, transport::traffic_class::kv, [&](status s) { done = s.ok(); });
  CHECK(done);
  CHECK(std::memcmp(t.hbm0.data(), t.hbm1.data() + 8, 16) == 0);
}
