// The live cluster page (docs/design.md §15): the state JSON, the secret's guard on POST /policy, and the page
// itself rendered by headless Chromium during a real embedded run.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "observe/ui_page.hpp"
#include "tests/cluster/cli_run.hpp"
#include "tests/observe/http_get.hpp"
#include "tests/cluster/runtime_fixtures.hpp"

using namespace dualpath;
using namespace dualpath::cluster;
using nlohmann::json;

namespace {

struct reply {
  int status = 0;
  std::string body;
};

// One request to 127.0.0.1:port (5 s receive bound); the status and body of the answer.
reply http_call(uint16_t port, const std::string& method, const std::string& path, const std::string& body = "",
                const std::string& content_type = "application/json") {
  const std::string out = http_get::request(port, method, path, body, content_type);
  REQUIRE(!out.empty());
  reply r;
  if (out.rfind("HTTP/1.1 ", 0) == 0) r.status = std::stoi(out.substr(9, 3));
  const auto at = out.find("\r\n\r\n");
  if (at != std::string::npos) r.body = out.substr(at + 4);
  return r;
}

json get_state(uint16_t port) {
  const auto r = http_call(port, "GET", "/state");
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

// Headless Chromium (Debian's `chromium`, scripts/install-deps.sh): "" when it is not installed.
std::string chromium_binary() {
  if (const char* env = std::getenv("DUALPATH_CHROMIUM"); env && *env) return env;
  for (const char* name : {"chromium", "chromium-browser"})
    if (std::system(("command -v " + std::string(name) + " >/dev/null 2>&1").c_str()) == 0) return name;
  return "";
}

// One headless Chromium per call, bounded by `timeout 30`, with a profile of its own in `dir`. The page's
// timers run on virtual time (--virtual-time-budget); a fetch in flight holds that time, so the DOM is dumped
// once the page has rendered the answers it asked for.
struct browser {
  std::string bin;
  std::filesystem::path dir;
  int calls = 0;

  std::string flags() {
    std::string f = " --headless --disable-gpu --no-first-run --hide-scrollbars --virtual-time-budget=1500";
    if (::geteuid() == 0) f += " --no-sandbox";  // Chromium refuses to run as root with its sandbox
    return f + " --user-data-dir='" + (dir / ("profile-" + std::to_string(++calls))).string() + "'";
  }
  std::string dump_dom(const std::string& url) {
    const auto out = dir / ("dom-" + std::to_string(calls + 1) + ".html");
    const std::string cmd =
        "timeout 30 " + bin + flags() + " --dump-dom '" + url + "' >'" + out.string() + "' 2>/dev/null";
    const int rc = std::system(cmd.c_str());
    CHECK(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 0);
    return test::slurp(out);
  }
  bool screenshot(const std::string& url, const std::filesystem::path& png) {
    const std::string cmd = "timeout 30 " + bin + flags() + " --window-size=1280,860 --screenshot='" + png.string() +
                            "' '" + url + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 && std::filesystem::exists(png);
  }
};

// The text of the element with id `id` in a dumped DOM ("" when absent).
std::string text_of(const std::string& dom, const std::string& id) {
  std::smatch m;
  if (std::regex_search(dom, m, std::regex("id=\"" + id + "\"[^>]*>([^<]*)<"))) return m[1];
  return "";
}

run_options two_node_run() {
  run_options o;
  o.policy = "dualpath";
  o.config.prefill_nodes = 1;
  o.config.decode_nodes = 1;
  o.config.engines_per_node = 2;
  o.scripts = runtime_fixtures::scripts(2, 3, 0);
  return o;
}

}  // namespace

TEST_CASE("ui: the state of a made-up cluster as JSON: every field and number the page shows") {
  ui_state s;
  s.run = "dualpath";
  s.policy = "balanced_pe";
  s.policies = {"balanced", "balanced_pe"};
  s.running = true;
  s.turns_done = 12;
  s.turns_total = 48;
  s.failed_turns = 1;
  s.waiting = 3;
  s.elapsed_s = 6;
  s.ttft = {0.5, 0.4, 0.9, 1.7};
  s.ttft_count = 11;
  s.path_pe = 5, s.path_de = 4, s.path_split = 2;
  s.snic_cap_bytes_per_s = 4e6;
  s.refused_posts = 2;
  ui_node n;
  n.node = 1;
  n.prefill = false;
  n.read_bytes_per_s = 3.5e6;
  n.read_bytes = 7000;
  n.read_q = 640;
  n.in_flight = 4;
  n.engines = {{7, 3, 900, 1 << 20}};
  s.nodes = {n};
  const json j = json::parse(to_json(s));
  CHECK(j["run"] == "dualpath");
  CHECK(j["policy"] == "balanced_pe");
  CHECK(j["policies"] == json::array({"balanced", "balanced_pe"}));
  CHECK(j["running"] == true);
  CHECK(j["secret_required"] == false);
  CHECK(j["turns"]["done"] == 12);
  CHECK(j["turns"]["total"] == 48);
  CHECK(j["turns"]["failed"] == 1);
  CHECK(j["waiting"] == 3);
  CHECK(j["elapsed_s"] == 6.0);
  CHECK(j["eta_s"].get<double>() == doctest::Approx(18.0));  // 12 of 48 in 6 s: 36 more at 2 per second
  CHECK(j["ttft_s"]["count"] == 11);
  CHECK(j["ttft_s"]["p50"] == 0.4);
  CHECK(j["ttft_s"]["p90"] == 0.9);
  CHECK(j["ttft_s"]["p99"] == 1.7);
  CHECK(j["paths"] == json{{"pe", 5}, {"de", 4}, {"split", 2}});
  CHECK(j["snic_cap_bytes_per_s"] == 4e6);
  CHECK(j["refused_posts"] == 2);
  CHECK_FALSE(j.contains("last_switch"));  // none yet
  REQUIRE(j["nodes"].size() == 1);
  const auto& node = j["nodes"][0];
  CHECK(node["node"] == 1);
  CHECK(node["role"] == "decode");
  CHECK(node["read_bytes_per_s"] == 3.5e6);
  CHECK(node["read_bytes"] == 7000);
  CHECK(node["read_q"] == 640);
  CHECK(node["in_flight"] == 4);
  CHECK(node["engines"] == json::array({{{"engine", 7}, {"seq", 3}, {"tok", 900}, {"free_hbm", 1 << 20}}}));

  CHECK(eta_seconds(0, 48, 6) == 0);   // no pace yet
  CHECK(eta_seconds(48, 48, 6) == 0);  // done
}

TEST_CASE("ui: a run's feed reaches /state: nodes of the cluster file, turns, TTFT percentiles, SNIC rates") {
  ui_page page("127.0.0.1", 0, "");
  const run_options o = two_node_run();
  auto link =
      page.begin_run(o.config, o.policy, turns_total(o.scripts), [](const std::string&) { return policy_status{}; });
  json j = get_state(page.port());
  CHECK(j["running"] == true);
  CHECK(j["turns"]["total"] == 6);
  REQUIRE(j["nodes"].size() == 2);
  CHECK(j["nodes"][0]["role"] == "prefill");
  CHECK(j["nodes"][1]["engines"][1]["engine"] == 3);  // node 1's second engine (§3 numbering)
  for (int i = 1; i <= 4; ++i) {
    turn_record r;
    r.ttft_s = 0.1 * i;
    r.path = i % 2 ? schedule::read_path::de : schedule::read_path::pe;
    page.observe_turn(r);
  }
  turn_record failed;
  failed.error = "boom";
  page.observe_turn(failed);
  run_progress p;
  p.turns_done = 5;
  p.turns_total = 6;
  scheduler_counters stats;
  stats.policy = "dualpath";
  stats.waiting = 1;
  node_load l;
  l.node.node = 1;
  l.node.kind = schedule::role::decode;
  l.node.engines = {{2, 1, 4, 100, 5000}};
  l.in_flight = 2;
  stats.nodes = {l};
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a SNIC's rate is taken over >= 1 s
  page.update(p, 2.0, stats, {{1000, 10}, {0, 0}});
  j = get_state(page.port());
  CHECK(j["turns"]["done"] == 5);
  CHECK(j["turns"]["failed"] == 1);
  CHECK(j["ttft_s"]["count"] == 4);
  CHECK(j["ttft_s"]["p50"].get<double>() == doctest::Approx(0.3));  // index round(0.5·3) = 2 of 0.1..0.4
  CHECK(j["ttft_s"]["p99"].get<double>() == doctest::Approx(0.4));
  CHECK(j["paths"]["de"] == 2);
  CHECK(j["paths"]["pe"] == 2);
  CHECK(j["policy"] == "dualpath");
  CHECK(j["nodes"][0]["read_bytes"] == 1000);
  CHECK(j["nodes"][0]["read_bytes_per_s"].get<double>() > 0);
  CHECK(j["nodes"][0]["read_bytes_per_s"].get<double>() <= 1000 / 1.1);
  CHECK(j["nodes"][0]["read_q"] == 10);
  CHECK(j["nodes"][1]["in_flight"] == 2);
  CHECK(j["nodes"][1]["engines"] == json::array({{{"engine", 2}, {"seq", 4}, {"tok", 100}, {"free_hbm", 5000}}}));
  // The page itself: self-contained (no outside URL), with the function the button calls.
  const auto html = http_call(page.port(), "GET", "/");
  CHECK(html.status == 200);
  CHECK(html.body.find("function switch_policy") != std::string::npos);
  CHECK(html.body.find("http") == std::string::npos);
  CHECK(http_call(page.port(), "GET", "/nothing").status == 404);
}

TEST_CASE("ui: POST /policy with a wrong secret is refused (403) and counted; the right one switches") {
  const std::string secret = "a-cluster-secret-of-some-length";
  ui_page page("127.0.0.1", 0, secret);
  const auto body = [](const std::string& policy, const std::string& s) {
    return json{{"policy", policy}, {"secret", s}}.dump();
  };
  // No run attached: nothing to switch.
  CHECK(http_call(page.port(), "POST", "/policy", body("balanced_pe", secret)).status == 503);
  std::mutex mu;
  std::vector<std::string> asked;
  const run_options run = two_node_run();
  auto link = page.begin_run(run.config, run.policy, turns_total(run.scripts), [&](const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    asked.push_back(name);
    return policy_status{true, name, {"balanced", "balanced_pe"}, ""};
  });
  CHECK(get_state(page.port())["secret_required"] == true);
  for (const std::string& wrong : std::vector<std::string>{"", "a-cluster-secret-of-some-lengtH", secret + "x"}) {
    CAPTURE(wrong);
    const auto r = http_call(page.port(), "POST", "/policy", body("balanced_pe", wrong));
    CHECK(r.status == 403);
    CHECK(json::parse(r.body)["message"] == "wrong cluster secret");
  }
  CHECK(page.state().refused_posts == 3);
  CHECK(get_state(page.port())["refused_posts"] == 3);
  CHECK(asked.empty());
  // Not JSON (what a cross-site form could send): refused before the secret is looked at.
  CHECK(http_call(page.port(), "POST", "/policy", body("balanced_pe", secret), "text/plain").status == 400);
  CHECK(http_call(page.port(), "POST", "/policy", "{not json").status == 400);
  CHECK(http_call(page.port(), "GET", "/policy").status == 405);

  const auto ok = http_call(page.port(), "POST", "/policy", body("balanced_pe", secret));
  CHECK(ok.status == 200);
  CHECK(json::parse(ok.body)["active"] == "balanced_pe");
  CHECK(asked == std::vector<std::string>{"balanced_pe"});
  CHECK(page.state().refused_posts == 3);
  const auto j = get_state(page.port());
  CHECK(j["last_switch"]["policy"] == "balanced_pe");
  CHECK(j["last_switch"]["ok"] == true);
}

TEST_CASE("ui: a port that is taken is refused with the address") {
  ui_page first("127.0.0.1", 0, "");
  try {
    ui_page second("127.0.0.1", first.port(), "");
    FAIL("a second page bound the same port");
  } catch (const user_error& e) {
    CHECK(std::string(e.what()).find("--ui-port") != std::string::npos);
    CHECK(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())) != std::string::npos);
  }
}

TEST_CASE("ui: headless Chromium renders the page of a real run: node boxes, moving numbers, a policy switch") {
  using namespace runtime_fixtures;
  const std::string bin = chromium_binary();
  if (bin.empty()) {
    MESSAGE("skipped: no chromium on PATH (apt-get install chromium, as scripts/install-deps.sh does)");
    return;
  }
  test::scratch_dir dir;
  ui_page page("127.0.0.1", 0, "");
  const std::string url = "http://127.0.0.1:" + std::to_string(page.port()) + "/";
  run_options o;
  o.config = small_cluster(dir.path, 2);
  o.policy = "dualpath";
  // 20 agents, one every 1.5 s: the run lasts at least 28 s whatever the machine's speed (three headless
  // Chromium starts took longer than the 14 s of 0.75 s gaps on a busy 2-core machine), and turns finish all
  // along, so the dumps below see it running and moving.
  o.scripts = scripts(20, 3, 0);
  for (size_t a = 0; a < o.scripts.size(); ++a) o.scripts[a].start_s = 1.5 * double(a);
  o.progress_every_s = 0.25;
  o.ui = &page;
  std::atomic<bool> done{false};
  run_summary summary;
  std::string error;
  std::thread run([&] {
    try {
      summary = run_cluster(o);
    } catch (const std::exception& e) {
      error = e.what();
    }
    done = true;
  });
  struct joiner {
    std::thread& t;
    ~joiner() {
      if (t.joinable()) t.join();  // a failed REQUIRE still waits for the run (it ends on its own)
    }
  } join_run{run};
  // Bounded polls of /state: `pred` true within `seconds`, or false.
  const auto wait_for = [&](double seconds, const std::function<bool(const json&)>& pred) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (pred(get_state(page.port()))) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  REQUIRE(wait_for(60, [](const json& j) { return j["running"] == true && j["turns"]["done"] >= 1; }));

  browser chrome{bin, dir.path};
  const std::string first = chrome.dump_dom(url);
  for (uint32_t n = 0; n < 3; ++n) {
    CAPTURE(n);
    CHECK(first.find("data-node=\"" + std::to_string(n) + "\"") != std::string::npos);
    CHECK(first.find("data-engine=\"" + std::to_string(n) + "\"") != std::string::npos);
  }
  CHECK(first.find("data-role=\"prefill\"") != std::string::npos);
  CHECK(first.find("data-role=\"decode\"") != std::string::npos);
  CHECK(text_of(first, "status") == "running");
  CHECK(text_of(first, "turns-total") == "60");
  const uint64_t done_first = std::stoull("0" + text_of(first, "turns-done"));
  CHECK(done_first >= 1);
  // The second dump once the run has answered more turns (at least a second later): the page shows more.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(wait_for(20, [&](const json& j) { return j["turns"]["done"].get<uint64_t>() > done_first; }));
  const std::string second = chrome.dump_dom(url);
  CHECK(std::stoull("0" + text_of(second, "turns-done")) > done_first);
  CHECK(text_of(second, "ttft-p50") != "–");

  // ?policy=balanced_pe calls what the button calls; the scheduler's own stats then say balanced_pe.
  const std::string switched = chrome.dump_dom(url + "?policy=balanced_pe");
  CHECK(text_of(switched, "policy-msg") == "switched to balanced_pe");
  CHECK_FALSE(done.load());  // the switch happened during the run
  CHECK(wait_for(10, [](const json& j) { return j["policy"] == "balanced_pe"; }));
  const std::string after = chrome.dump_dom(url);
  CHECK(text_of(after, "policy") == "balanced_pe");
  const auto png = std::filesystem::path(DUALPATH_BUILD_DIR) / "artifacts" / "ui_test.png";
  std::filesystem::create_directories(png.parent_path());
  CHECK(chrome.screenshot(url, png));
  MESSAGE("cluster page screenshot: " << png.string());

  // Bounded: a run that cannot end (an actor system waiting for a thread, as a scoped actor on the page's
  // thread once made it) fails here, instead of hanging until ctest's limit.
  for (int i = 0; i < 1200 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!done) {
    FAIL_CHECK("the run did not end within 120 s of the last dump");
    std::fflush(nullptr);
    std::abort();  // its thread holds this test's locals: nothing else can be done safely
  }
  run.join();
  CHECK(error.empty());
  check_turns_right(summary, 60, 0);
  const json last = get_state(page.port());
  CHECK(last["running"] == false);
  CHECK(last["turns"]["done"] == 60);
  CHECK(last["policy"] == "balanced_pe");
}
