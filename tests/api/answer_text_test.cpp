// Generated ids becoming streamed text (api/answer_text.hpp): whole characters, the end at a special token,
// stop strings that never leak, and the incremental stream writers giving the same events as a whole answer.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "api/answer_text.hpp"
#include "api/chat_response.hpp"
#include "api/responses.hpp"

using namespace dualpath::api;

namespace {

// Ids are bytes; 256 is the one special token.
answer_text bytes_text(std::vector<std::string> stops, bool end_at_special = true) {
  return answer_text(
      [](const std::vector<int32_t>& ids) {
        std::string s;
        for (const int32_t id : ids)
          if (id < 256) s += char(id);
        return s;
      },
      [](int32_t id) { return id == 256; }, std::move(stops), end_at_special);
}

std::vector<int32_t> ids_of(const std::string& s) {
  std::vector<int32_t> out;
  for (const unsigned char c : s) out.push_back(c);
  return out;
}

}  // namespace

TEST_CASE("answer text: a character split across tokens waits for its last byte; a special token ends it") {
  auto t = bytes_text({});
  const auto euro = ids_of("\xE2\x82\xAC");  // U+20AC in three tokens
  CHECK(t.push({euro[0]}).empty());
  CHECK(t.push({euro[1]}).empty());
  CHECK(t.push({euro[2]}) == "\xE2\x82\xAC");
  CHECK(t.push({'o', 'k', 256, 'x'}) == "ok");  // after the special token nothing is taken
  CHECK(t.ended());
  CHECK(!t.stopped_by_string());
  CHECK(t.tokens() == 6);  // three bytes, two letters, the special token
  CHECK(t.finish().empty());
  CHECK(t.text() ==
        "\xE2\x82\xAC"
        "ok");
}

TEST_CASE("answer text: a stop string is never sent, even when it arrives a byte at a time") {
  auto t = bytes_text({"END", "xyz"});
  std::string sent;
  for (const int32_t id : ids_of("abcENxEND tail")) {
    sent += t.push({id});
    if (t.ended()) break;
  }
  sent += t.finish();
  CHECK(sent == "abcENx");  // "EN" was held back until "x" showed it was no stop
  CHECK(t.stopped_by_string());
  CHECK(t.text() == "abcENx");
  auto held = bytes_text({"END"});
  CHECK(held.push(ids_of("aE")) == "");  // the last two bytes may begin "END"
  CHECK(held.push(ids_of("N")) == "a");  // "EN" still may
  CHECK(held.finish() == "EN");          // the generation ended without the stop: everything is final
}

TEST_CASE("answer text: ignore_eos leaves special tokens out of the text and goes on") {
  auto t = bytes_text({}, false);
  CHECK(t.push({'a', 256, 'b'}) == "ab");
  CHECK(!t.ended());
  CHECK(t.tokens() == 3);
}

TEST_CASE("answer streams: deltas as they come, then the end, add up to the same answer as the whole events") {
  chat_answer a;
  a.id = "chatcmpl-1";
  a.model = "tiny";
  a.content = "hello world";
  a.finish_reason = "stop";
  a.prompt_tokens = 10;
  a.completion_tokens = 3;
  for (const bool text : {false, true}) {
    chat_stream live(a, true, text);
    auto events = live.begin();
    for (const char* piece : {"hel", "lo ", "wor"})
      for (auto& e : live.delta(piece, {})) events.push_back(e);
    for (auto& e : live.end(a)) events.push_back(e);
    std::string joined_live, content;
    for (const auto& e : events) {
      joined_live += e;
      if (e.rfind("data: {", 0) != 0) continue;
      const auto j = nlohmann::json::parse(e.substr(6));
      if (j["choices"].empty()) continue;
      content +=
          text ? j["choices"][0]["text"].get<std::string>() : j["choices"][0]["delta"].value("content", std::string());
    }
    CHECK(content == "hello world");  // the end sent only the "ld" not yet streamed
    CHECK(events.back() == "data: [DONE]\n\n");
    CHECK(events.size() == (text ? 4u + 3u : 5u + 3u));  // begin, 3 deltas, "ld", finish, usage, [DONE]
  }
  response_stream r(a);
  auto events = r.begin();
  for (auto& e : r.delta("hello ", {})) events.push_back(e);
  for (auto& e : r.end(a)) events.push_back(e);
  std::string all;
  for (const auto& e : events) all += e;
  CHECK(all.find("\"delta\":\"hello \"") != std::string::npos);
  CHECK(all.find("\"delta\":\"world\"") != std::string::npos);
  CHECK(all.find("\"text\":\"hello world\"") != std::string::npos);  // output_text.done has all of it
  CHECK(events.back().rfind("event: response.completed\n", 0) == 0);
}

TEST_CASE("a text stream asked for its token ids carries each chunk's new ids, even where they make no text yet") {
  chat_answer head;
  head.id = "cmpl-1";
  head.model = "tiny";
  head.token_ids.emplace();  // asked for
  chat_answer whole = head;
  whole.content = "ab";
  whole.token_ids = std::vector<int32_t>{7, 8, 9, 10, 11};
  chat_stream live(head, false, true);
  std::vector<std::string> events = live.begin();
  for (auto& e : live.delta("", {7, 8})) events.push_back(e);  // ids with no text yet: still a chunk
  for (auto& e : live.delta("", {})) events.push_back(e);      // nothing new: no chunk
  for (auto& e : live.delta("a", {9})) events.push_back(e);
  for (auto& e : live.end(whole)) events.push_back(e);  // "b" and the ids 10, 11 not yet sent
  std::vector<int32_t> ids;
  std::string text;
  size_t chunks_with_ids = 0;
  for (const auto& e : events) {
    if (e.rfind("data: {", 0) != 0) continue;
    const auto c = nlohmann::json::parse(e.substr(6))["choices"][0];
    text += c["text"].get<std::string>();
    if (!c.contains("token_ids")) continue;
    ++chunks_with_ids;
    for (const auto& id : c["token_ids"]) ids.push_back(id.get<int32_t>());
  }
  CHECK(ids == *whole.token_ids);
  CHECK(text == "ab");
  CHECK(chunks_with_ids == 3);
  // Not asked for: the same deltas give no id-only chunk and no ids.
  chat_answer plain = head;
  plain.token_ids.reset();
  chat_stream quiet(plain, false, true);
  CHECK(quiet.delta("", {7, 8}).empty());
  CHECK(quiet.delta("a", {9})[0].find("token_ids") == std::string::npos);
}
