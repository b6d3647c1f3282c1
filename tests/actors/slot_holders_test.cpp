// Slots remote engines hold on a node (actors/slot_holders.hpp): taken back when their holder goes down, and
// a hand-off's adoption refused once they were.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "actors/slot_holders.hpp"

using dualpath::actors::slot_holders;

TEST_CASE("slot holders: a holder that goes down gives back only what it still holds; adoption ends the watch") {
  slot_holders<std::string> h;
  CHECK(h.hold({1, 2, 3}, "pe0"));  // first time: watch it
  CHECK_FALSE(h.hold({4}, "pe0"));  // watched already
  CHECK(h.hold({7, 8}, "pe1"));
  h.release({2});                    // given back by the engine itself
  CHECK(h.adopt({3, 4}, "pe0"));     // a decode engine took a hand-off
  CHECK_FALSE(h.adopt({7}, "pe0"));  // not pe0's
  auto back = h.reclaim("pe0");
  std::sort(back.begin(), back.end());
  CHECK(back == std::vector<uint32_t>{1});  // neither the released nor the adopted ones
  CHECK(h.reclaim("pe0").empty());          // once
  CHECK_FALSE(h.adopt({7, 8, 9}, "pe1"));   // 9 was never pe1's: nothing adopted
  CHECK(h.held() == 2);
  CHECK(h.reclaim("pe1").size() == 2);
  CHECK_FALSE(h.adopt({7}, "pe1"));  // gone back with its holder: maybe someone else's by now
  CHECK(h.hold({7}, "pe1"));         // a holder seen again after going down is watched again
}
