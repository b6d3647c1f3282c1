// Slots remote engines hold on a node (actors/slot_holders.hpp): taken back when their node is lost, and a
// hand-off's adoption refused once they were.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "actors/slot_holders.hpp"

using dualpath::actors::slot_holders;

TEST_CASE("slot holders: a lost holder gives back only what it still holds; an adoption takes them out") {
  slot_holders<std::string> h;
  h.hold({1, 2, 3, 4}, "pe0");
  h.hold({7, 8}, "pe1");
  h.release({2});                    // given back by the engine itself
  CHECK(h.adopt({3, 4}, "pe0"));     // a decode engine took a hand-off
  CHECK_FALSE(h.adopt({7}, "pe0"));  // not pe0's
  const auto lost_pe0 = [](const std::string& holder) { return holder == "pe0"; };
  CHECK(h.reclaim_if(lost_pe0) == std::vector<uint32_t>{1});  // neither the released nor the adopted ones
  CHECK(h.reclaim_if(lost_pe0).empty());                      // once
  CHECK_FALSE(h.adopt({7, 8, 9}, "pe1"));                     // 9 was never pe1's: nothing adopted
  CHECK(h.held() == 2);
  CHECK(h.reclaim_if([](const std::string& holder) { return holder == "pe1"; }).size() == 2);
  CHECK_FALSE(h.adopt({7}, "pe1"));  // gone back with its holder: maybe someone else's by now
  CHECK(h.held() == 0);
}
