#pragma once
// A `dualpath serve` process for the serving tests: started in a scratch directory on a free loopback port,
// up once /health answers, stopped with SIGTERM at the end (or restarted on the same store).
#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/cluster/hand_nodes.hpp"
#include "tests/observe/http_get.hpp"

namespace dualpath::test {

struct serve_process {
  scratch_dir dir;
  std::vector<std::string> extra;  // arguments beyond serve --listen
  std::string secret;              // the cluster's, in its environment (DUALPATH_SECRET) when given
  uint16_t port = 0;
  int pid = -1;
  // Up unless `wait` is false: then the caller does what the server waits for (nodes joining) and wait_up().
  explicit serve_process(std::vector<std::string> extra_args = {}, std::string cluster_secret = "", bool wait = true)
      : extra(std::move(extra_args)), secret(std::move(cluster_secret)) {
    start(wait);
  }
  ~serve_process() { stop(); }
  // Starts the server in the scratch directory (again, after stop(): the store is kept) on a free port.
  void start(bool wait = true) {
    port = http_get::free_port();
    std::vector<std::string> args{"serve", "--listen", "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    const std::string cd_log = (dir.path / "serve.log").string();
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.path);  // its store goes in the scratch directory
    pid = hand_nodes::spawn(args, secret, (dir.path / "stdout.txt").string(), cd_log);
    std::filesystem::current_path(cwd);
    if (wait) wait_up();
  }
  // Up once /health answers: the cluster is wired (bounded; a loaded machine takes longer).
  void wait_up() const {
    for (int i = 0; i < 1200; ++i) {
      httplib::Client c("127.0.0.1", port);
      // 401: up, behind an API key
      if (auto r = c.Get("/health"); r && (r->status == 200 || r->status == 401)) return;
      usleep(100000);
    }
    FAIL("serve did not answer /health within 120 s: " << slurp(dir.path / "serve.log"));
  }
  // SIGTERM; its exit status (-1: killed after 20 s), or -1 when it was not running.
  int stop() {
    if (pid <= 0) return -1;
    kill(pid, SIGTERM);
    const int status = hand_nodes::exit_status(pid, 20);
    pid = -1;
    return status;
  }
  // Where nodes must connect (serve --node-registry prints it, then waits for them before it listens); empty
  // if it did not say within 60 s.
  std::string registry() const {
    const std::string mark = "node registry at ";  // "node registry at HOST:PORT: start ..."
    for (int i = 0; i < 600; ++i) {
      const std::string out = slurp(dir.path / "stdout.txt");
      const size_t from = out.find(mark), to = out.find(": ", from);
      if (from != std::string::npos && to != std::string::npos)
        return out.substr(from + mark.size(), to - from - mark.size());
      usleep(100000);
    }
    return "";
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    return c;
  }
  httplib::Result chat(const nlohmann::json& body) const {
    return client().Post("/v1/chat/completions", body.dump(), "application/json");
  }
  // A sample's value in the server's /metrics text (0 when absent); `series` is its name and labels.
  static double metric(const std::string& text, const std::string& series) {
    const size_t at = text.find("\n" + series + " ");  // a sample's line, not its # HELP
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 2));
  }
  // The sample `series` of /metrics once it is at least `at_least`, or its last value after `seconds`.
  double wait_metric(const std::string& series, double at_least, int seconds) const {
    double v = 0;
    for (int i = 0; i < seconds * 10; ++i) {
      const auto m = client().Get("/metrics");
      if (m && (v = metric(m->body, series)) >= at_least) break;
      usleep(100000);
    }
    return v;
  }
  // Waits until the scheduler has at least `n` turns in flight on `node` (bounded: 60 s); whether it had.
  bool wait_node_requests(uint32_t node, double n) const {
    return wait_metric("dualpath_serve_node_requests{node=\"" + std::to_string(node) + "\"}", n, 60) >= n;
  }
  // After a node loss (docs/design.md §18): answers whose turn was run again (a later attempt), the tokens
  // those runs made again that their client already had, and how many of those differed.
  struct rechecks {
    double resumed = 0, rechecked = 0, differed = 0;
  };
  rechecks rechecked() const {
    const auto m = client().Get("/metrics");
    REQUIRE(m);
    rechecks r;
    r.resumed = metric(m->body, "dualpath_serve_resumed_streams_total");
    r.differed = metric(m->body, "dualpath_serve_rechecked_tokens_total{result=\"different\"}");
    r.rechecked = r.differed + metric(m->body, "dualpath_serve_rechecked_tokens_total{result=\"equal\"}");
    return r;
  }
  // serve --verify's counts by result (equal, different, unchecked), once `answers` have been checked. The
  // recompute runs behind the answers, far behind on a loaded machine: the wait ends as soon as they are all
  // checked, and at the latest after 300 s.
  std::map<std::string, double> verified_answers(double answers) const {
    constexpr int seconds = 300;
    std::map<std::string, double> n;
    for (int i = 0; i < seconds * 10; ++i) {
      const auto m = client().Get("/metrics");
      REQUIRE(m);
      for (const char* result : {"equal", "different", "unchecked"})
        n[result] = metric(m->body, std::string("dualpath_serve_verified_answers{result=\"") + result + "\"}");
      if (n["equal"] + n["different"] + n["unchecked"] >= answers) break;
      usleep(100000);
    }
    return n;
  }
};

// One streamed text completion of token ids with ignore_eos, as the client saw it: the HTTP status, the
// usage's completion tokens and whether [DONE] came.
struct streamed {
  int status = 0;
  int completion_tokens = -1;
  bool done = false;
};

inline streamed stream_completion(uint16_t port, const std::vector<int>& prompt, int max_tokens) {
  streamed out;
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = nlohmann::json{{"model", "tiny"},    {"prompt", prompt}, {"max_tokens", max_tokens},
                            {"ignore_eos", true}, {"stream", true},   {"stream_options", {{"include_usage", true}}}}
                 .dump();
  std::string text;
  req.response_handler = [&](const httplib::Response& r) {
    out.status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    text.append(data, n);
    return true;
  };
  c.send(req);
  for (size_t at = 0; (at = text.find("data: ", at)) != std::string::npos; at += 6) {
    const std::string event = text.substr(at + 6, text.find("\n\n", at) - at - 6);
    if (event == "[DONE]") out.done = true;
    const auto j = nlohmann::json::parse(event, nullptr, false);
    if (j.is_object() && j.contains("usage") && j["usage"].is_object())
      out.completion_tokens = j["usage"]["completion_tokens"].get<int>();
  }
  return out;
}

// `streams` threads, each sending `each` streamed completions of `max_tokens` ids (prompts of `prompt_ids` ids
// drawn from `salt`, the stream and its index); counts the whole answers (200, [DONE], every token) and names
// the rest.
struct stream_load {
  std::atomic<int> whole{0}, other{0};
  std::mutex mu;
  std::string failures;
  std::vector<std::thread> threads;

  void start(uint16_t port, int streams, int each, int max_tokens, int salt = 0, int prompt_ids = 40) {
    for (int c = 0; c < streams; ++c)
      threads.emplace_back([this, port, c, each, max_tokens, salt, prompt_ids] {
        for (int i = 0; i < each; ++i) {
          std::vector<int> prompt;
          for (int t = 0; t < prompt_ids; ++t) prompt.push_back((salt + c * 131 + i * 17 + t * 7) % 250 + 1);
          const auto r = stream_completion(port, prompt, max_tokens);
          if (r.status == 200 && r.done && r.completion_tokens == max_tokens) ++whole;
          else {
            ++other;
            std::lock_guard lock(mu);
            failures += "stream " + std::to_string(c) + "." + std::to_string(i) + ": status " +
                        std::to_string(r.status) + ", [DONE] " + (r.done ? "yes" : "no") + ", " +
                        std::to_string(r.completion_tokens) + " tokens; ";
          }
        }
      });
  }
  void join() {
    for (auto& t : threads) t.join();
    threads.clear();
  }
};

}  // namespace dualpath::test
