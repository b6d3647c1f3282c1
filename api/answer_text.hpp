#pragma once
// Generated token ids becoming an answer's text as they are made (docs/design.md §18): decoded to whole UTF-8
// characters, ended by the first special token (counted, not text) or cut before the first stop string. While
// a stop string could still begin in the last bytes, those bytes are held back, so no text that a stop string
// would have cut is ever sent.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "text/utf8.hpp"

namespace dualpath::api {

class answer_text {
 public:
  using decode_fn = std::function<std::string(const std::vector<int32_t>&)>;  // ids -> their bytes
  using special_fn = std::function<bool(int32_t)>;

  // With `end_at_special` false a special token is counted and left out of the text (ignore_eos).
  answer_text(decode_fn decode, special_fn special, std::vector<std::string> stops, bool end_at_special = true);

  // Takes the next generated ids (ignored once the answer ended); returns the text that became final.
  std::string push(const std::vector<int32_t>& ids);
  // The generation is over: the text still held back, now final (an unfinished character as U+FFFD).
  std::string finish();

  bool ended() const { return ended_; }                // by a special token or a stop string
  bool stopped_by_string() const { return by_stop_; }  // the answer was cut before a stop string
  const std::string& text() const { return text_; }    // every final byte so far
  uint32_t tokens() const { return tokens_; }          // ids taken, the ending special token included

 private:
  std::string release(bool all);  // moves final bytes of held_ to text_
  decode_fn decode_;
  special_fn special_;
  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  text::utf8_stream utf8_;
  std::string text_, held_;
  uint32_t tokens_ = 0;
  bool end_at_special_ = true;
  bool ended_ = false, by_stop_ = false;
};

}  // namespace dualpath::api
