// The real prefill engine with too little HBM (engine_fixture.hpp): requests wait for the space a running pass
// holds, none fails for want of it, and only a request that can never fit is refused, naming the HBM size.
#include "engine_fixture.hpp"

using namespace engine_test;

namespace {

// A 40-token request with 2 hit blocks needs 8 KiB of new KV (8 tokens × 4 layers × 256 B) and 16 KiB of
// staging (2 Layer Blocks × 2 layers in flight): 24 KiB. Two of them in one pass need 48 KiB.
constexpr uint64_t one_pass_hbm = 32 << 10;

}  // namespace

TEST_CASE_FIXTURE(engine_fixture, "requests wait for the HBM of the running pass and run after it, none fails") {
  // Spare staging slots are taken only where the HBM holds them: the third slot (8 KiB) does, a fourth not.
  bool spare = false;
  SUBCASE("a pass's slots at prefetch_layers") {}
  SUBCASE("spare staging slots") { spare = true; }
  config.spare_staging_layers = spare ? 2 : 0;
  start(one_pass_hbm, 1 << 20, false);
  tq_s[0]->copy = answer::hold;
  assign(1, 40, 2);
  REQUIRE(pe_cs->count(work::start) == 1);
  CHECK(io[0]->hbm(pe_id).free_bytes() == one_pass_hbm - ((spare ? 32 : 24) << 10));

  // Request 2's KV is ready, but the pass holds the HBM it would need: it waits.
  assign(2, 40, 2);
  CHECK(pe_cs->count(work::start) == 1);
  CHECK(rec->results.empty());
  // So does request 3; once the pass ends, 2 and 3 together would not fit (48 KiB), each alone does.
  assign(3, 40, 2);
  CHECK(rec->results.empty());
  CHECK(last_report(pe_id).seq == 3);

  drain(0);  // pass 1 ends; request 2 runs alone, then request 3
  CHECK(rec->results.empty());
  REQUIRE(rec->handoffs.size() == 3);
  CHECK(rec->handoffs[0].payload.request == 1);
  CHECK(rec->handoffs[1].payload.request == 2);
  CHECK(rec->handoffs[2].payload.request == 3);
  std::vector<std::vector<uint64_t>> starts;
  for (auto& c : pe_cs->calls)
    if (c.kind == work::start) starts.push_back(c.ids);
  CHECK(starts == std::vector<std::vector<uint64_t>>{{1}, {2}, {3}});
  CHECK(last_report(pe_id).seq == 0);
  CHECK(last_report(pe_id).free_hbm == one_pass_hbm);
}

TEST_CASE_FIXTURE(engine_fixture,
                  "a request that can never fit in HBM fails naming the HBM size; smaller ones still run") {
  start(16 << 10, 1 << 20, false);
  assign(1, 40, 2);  // needs 24 KiB of the 16 KiB
  REQUIRE(rec->results.size() == 1);
  CHECK(rec->results[0].request == 1);
  CHECK(contains(rec->results[0].error, "does not fit in the HBM of engine 0"));
  CHECK(contains(rec->results[0].error, std::to_string(16 << 10) + " bytes"));
  CHECK(pe_cs->calls.empty());
  CHECK(tq_s[0]->released == std::vector<uint32_t>{3, 4});
  CHECK(tq_s[1]->released == std::vector<uint32_t>{10, 11, 12});
  CHECK(last_report(pe_id).seq == 0);
  CHECK(last_report(pe_id).free_hbm == 16 << 10);

  assign(2, 10, 0);  // 10 KiB of new KV and no staging to speak of: fits
  check_only_handoff(2, 1);
  CHECK(last_report(pe_id).free_hbm == 16 << 10);
}

TEST_CASE_FIXTURE(engine_fixture,
                  "a pass takes ready requests while their HBM fits what is free (docs/design.md §7.6)") {
  // 56 KiB: once pass 1 ends, requests 2 and 3 (24 KiB each) fit together and run as one pass; request 4
  // would make 72 KiB, so the batch stops before it instead of failing its allocation as a whole.
  start(56 << 10, 1 << 20, false);
  tq_s[0]->copy = answer::hold;
  assign(1, 40, 2);
  REQUIRE(pe_cs->count(work::start) == 1);
  assign(2, 40, 2);
  assign(3, 40, 2);
  assign(4, 40, 2);
  drain(0);
  CHECK(rec->results.empty());
  REQUIRE(rec->handoffs.size() == 4);
  std::vector<std::vector<uint64_t>> starts;
  for (auto& c : pe_cs->calls)
    if (c.kind == work::start) starts.push_back(c.ids);
  CHECK(starts == std::vector<std::vector<uint64_t>>{{1}, {2, 3}, {4}});
  CHECK(last_report(pe_id).free_hbm == 56 << 10);
}
