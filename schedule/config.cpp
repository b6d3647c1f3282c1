#include "schedule/config.hpp"

#include <algorithm>
#include <toml++/toml.h>

#include "core/errors.hpp"
#include "schedule/calibration.hpp"

namespace dualpath::schedule {

policy_params schedule_config::params(double snic_bytes_per_s, uint64_t kv_bytes_per_token,
                                      double prefill_tokens_per_s) const {
  policy_params p;
  p.kv_bytes_per_token = kv_bytes_per_token;
  p.alpha_tokens = alpha_tokens ? *alpha_tokens : schedule::alpha_tokens(snic_bytes_per_s, kv_bytes_per_token);
  p.beta_tokens = beta_tokens ? *beta_tokens : schedule::beta_tokens(prefill_tokens_per_s);
  p.z_slack = z_slack;
  return p;
}

namespace {

template <class T>
T number(const toml::node& n, const std::string& key, const std::string& where) {
  if (auto v = n.value<double>()) {
    if (*v < 0) throw user_error(where + ": " + key + " must be ≥ 0, got " + std::to_string(*v));
    return T(*v);
  }
  throw user_error(where + ": " + key + " must be a number");
}

std::string policy_name(const toml::node& n, const std::string& key, const std::string& where) {
  auto s = n.value<std::string>();
  if (!s) throw user_error(where + ": " + key + " must be a string");
  if (!is_policy_name(*s)) {
    try {
      make_policy(*s);
    } catch (const user_error& e) {
      throw user_error(where + ": " + key + ": " + e.what());
    }
  }
  return *s;
}

}  // namespace

schedule_config parse_schedule_config(const std::string& toml_text, const std::string& where) {
  toml::table root;
  try {
    root = toml::parse(toml_text, where);
  } catch (const toml::parse_error& e) {
    throw user_error(where + ": " + std::string(e.description()) + " at line " +
                     std::to_string(e.source().begin.line));
  }
  schedule_config c;
  const auto* t = root["schedule"].as_table();
  if (!t) return c;
  for (const auto& [k, v] : *t) {
    const std::string key = "schedule." + std::string(k.str());
    if (k == "policy") c.policy = policy_name(v, key, where);
    else if (k == "alpha_tokens") c.alpha_tokens = number<uint64_t>(v, key, where);
    else if (k == "beta_tokens") c.beta_tokens = number<uint64_t>(v, key, where);
    else if (k == "z_slack") c.z_slack = number<double>(v, key, where);
    else if (k == "quota_ms") c.quota_s = number<double>(v, key, where) / 1000.0;
    else if (k == "switch") {
      const auto* arr = v.as_array();
      if (!arr) throw user_error(where + ": schedule.switch must be an array of tables ([[schedule.switch]])");
      for (size_t i = 0; i < arr->size(); ++i) {
        const auto* e = (*arr)[i].as_table();
        const std::string at = "schedule.switch[" + std::to_string(i) + "]";
        if (!e || !e->contains("at_s") || !e->contains("policy"))
          throw user_error(where + ": " + at + " needs at_s and policy");
        c.switches.push_back({number<double>(*e->get("at_s"), at + ".at_s", where),
                              policy_name(*e->get("policy"), at + ".policy", where)});
      }
    } else {
      throw user_error(where + ": unknown key " + key +
                       " (known: policy, alpha_tokens, beta_tokens, z_slack, quota_ms, switch)");
    }
  }
  if (!(c.z_slack >= 1.0)) throw user_error(where + ": schedule.z_slack must be ≥ 1");
  if (!(c.quota_s > 0)) throw user_error(where + ": schedule.quota_ms must be positive");
  std::stable_sort(c.switches.begin(), c.switches.end(),
                   [](const policy_switch& a, const policy_switch& b) { return a.at_s < b.at_s; });
  return c;
}

}  // namespace dualpath::schedule
