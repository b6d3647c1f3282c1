// span_cursor (gpu/backend.hpp): where a key of a request's spans is, found walking forward, as the decode
// attention asks for its next block's rows in a decode engine's pages.
#include <doctest/doctest.h>

#include <cstddef>
#include <vector>

#include "gpu/backend.hpp"

using namespace dualpath::gpu;

TEST_CASE("span_cursor finds each key's row and the rows after it in its span, skipping empty spans") {
  constexpr uint64_t bpt = 8;  // bytes a token
  std::vector<std::byte> a(16 * bpt), b(5 * bpt), c(3 * bpt);
  const std::vector<kv_span> spans{{a.data(), 16}, {nullptr, 0}, {b.data(), 5}, {c.data(), 3}, {nullptr, 0}};
  span_cursor cur(spans, bpt);
  CHECK(cur.keys() == 24);
  auto row = [](const std::vector<std::byte>& v, uint64_t r) { return v.data() + r * bpt; };

  auto p = cur.at(0);
  CHECK(p.row == row(a, 0));
  CHECK(p.rows == 16);
  p = cur.at(15);  // the last key of the first span
  CHECK(p.row == row(a, 15));
  CHECK(p.rows == 1);
  p = cur.at(16);  // past the empty span, the second one's first
  CHECK(p.row == row(b, 0));
  CHECK(p.rows == 5);
  p = cur.at(16);  // the same position again
  CHECK(p.row == row(b, 0));
  p = cur.at(19);
  CHECK(p.row == row(b, 3));
  CHECK(p.rows == 2);
  p = cur.at(23);  // two spans on in one step
  CHECK(p.row == row(c, 2));
  CHECK(p.rows == 1);
  p = cur.at(24);  // past the last key
  CHECK(p.row == nullptr);
  CHECK(p.rows == 0);
}

TEST_CASE("span_cursor over one buffer and over no keys") {
  std::vector<std::byte> a(100 * 4);
  const std::vector<kv_span> one{{a.data(), 100}};
  span_cursor cur(one, 4);
  CHECK(cur.at(64).row == a.data() + 64 * 4);
  CHECK(cur.at(64).rows == 36);
  CHECK(cur.at(99).rows == 1);
  CHECK(cur.at(3).row == nullptr);  // it only walks forward: an earlier key is not found
  CHECK(cur.at(100).row == nullptr);

  const std::vector<kv_span> none{{nullptr, 0}};
  span_cursor empty(none, 4);
  CHECK(empty.keys() == 0);
  CHECK(empty.at(0).row == nullptr);
}
