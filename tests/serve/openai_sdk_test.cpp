// `dualpath serve` driven by a client written by others: the official `openai` SDK (npm, tests/clients), eight
// agents at once, each a streamed conversation of 20 turns that sends its whole history back every turn. Every
// turn is answered, and each turn loads from storage at least every full block of the turn before's prompt
// (the decode engine answers only once a turn's blocks are persisted).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "tests/serve/serve_process.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("serve: the openai SDK's streamed conversations, 8 at once for 20 turns, load each turn's blocks") {
  const fs::path clients = fs::path(DUALPATH_SOURCE_DIR) / "tests" / "clients";
  REQUIRE_MESSAGE(fs::exists(clients / "node_modules" / "openai"),
                  "run scripts/install-deps.sh (npm ci in tests/clients)");
  dualpath::test::serve_process s({"--verify"});
  const auto out = s.dir.path / "conversations.json";
  constexpr int conversations = 8, turns = 20, block_tokens = 16;  // the embedded default cluster's blocks
  const std::string cmd = "timeout 600 node '" + (clients / "openai_conversations.js").string() +
                          "' http://127.0.0.1:" + std::to_string(s.port) + "/v1 tiny " + std::to_string(conversations) +
                          " " + std::to_string(turns) + " 8 >'" + out.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  json j;
  std::ifstream(out) >> j;
  REQUIRE(j["conversations"].size() == conversations);
  uint64_t cached = 0, prompt_ideal = 0, prompts = 0, answer_ideal = 0;
  for (const auto& c : j["conversations"]) {
    REQUIRE(c.size() == turns);
    for (int t = 0; t < turns; ++t) {
      const auto& u = c[t]["usage"];
      REQUIRE(u.is_object());  // the stream's last chunk carried the usage
      CHECK(!c[t]["finish"].is_null());
      CHECK(u["completion_tokens"].get<int>() >= 1);
      if (t == 0) continue;
      const uint64_t before = c[t - 1]["usage"]["prompt_tokens"].get<uint64_t>();
      const uint64_t got = u["prompt_tokens_details"]["cached_tokens"].get<uint64_t>();
      const uint64_t ideal = before / block_tokens * block_tokens;  // the turn before's full prompt blocks
      // ... and its answer's: the KV of every generated token but the last was computed and persisted.
      const uint64_t with_answer =
          (before + c[t - 1]["usage"]["completion_tokens"].get<uint64_t>() - 1) / block_tokens * block_tokens;
      CAPTURE(t);
      CHECK(got >= ideal);
      cached += got;
      prompt_ideal += ideal;
      answer_ideal += with_answer;
      prompts += u["prompt_tokens"].get<uint64_t>();
    }
  }
  MESSAGE("cached " << cached << " of " << prompts << " prompt tokens in turns 2-20 ("
                    << 100.0 * double(cached) / double(prompts) << "%); the turns before's full prompt blocks: "
                    << prompt_ideal << "; with their answers' blocks: " << answer_ideal << " (cached "
                    << 100.0 * double(cached) / double(answer_ideal) << "% of it)");
  // Both read paths carried turns: the scheduler put some conversations' KV through a decode node's SNIC.
  const auto metrics = s.client().Get("/metrics");
  REQUIRE(metrics);
  const auto paths = [&](const std::string& path) {
    return s.metric(metrics->body, "dualpath_serve_read_path_requests_total{path=\"" + path + "\"}");
  };
  MESSAGE("read paths: pe " << paths("pe") << ", de " << paths("de"));
  CHECK(paths("pe") > 0);
  CHECK(paths("de") > 0);
  // The answers come back as text, and are encoded to the ids they were generated from: the blocks that hold
  // them are loaded too, not only the prompts' (docs/design.md §18).
  CHECK(cached > prompt_ideal);
  // --verify: every answer equals a full recompute of its prompt (bounded wait for the checker's queue).
  auto n = s.verified_answers(conversations * turns);
  MESSAGE("verified: " << n["equal"] << " equal to a full recompute, " << n["different"] << " different, "
                       << n["unchecked"] << " not checked");
  CHECK(n["equal"] >= conversations * turns);
  CHECK(n["different"] == 0);
  CHECK(n["unchecked"] == 0);
}
