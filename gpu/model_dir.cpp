#include "gpu/model_dir.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/status.hpp"

namespace dualpath::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

template <typename T>
T field(const json& j, const char* name, const std::string& path) {
  if (!j.contains(name)) throw user_error(fmt::format("{}: missing field \"{}\"", path, name));
  try {
    return j.at(name).get<T>();
  } catch (const json::exception&) {
    throw user_error(fmt::format("{}: field \"{}\" has the wrong type", path, name));
  }
}

}  // namespace

bool is_model_dir(const std::string& dir) { return fs::is_regular_file(fs::path(dir) / "config.json"); }

void write_model_dir(const std::string& dir, const model_weights& w, tensor_dtype dtype, uint32_t shards) {
  const model_spec& m = w.spec;
  fs::create_directories(dir);
  json cfg = {
      {"architectures", {m.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
      {"model_type", m.qkv_bias ? "qwen2" : "llama"},
      {"hidden_size", m.hidden},
      {"intermediate_size", m.intermediate},
      {"num_attention_heads", m.heads},
      {"num_key_value_heads", m.kv_heads},
      {"num_hidden_layers", m.layers},
      {"head_dim", m.head_dim},
      {"vocab_size", m.vocab},
      {"rms_norm_eps", m.rms_eps},
      {"rope_theta", m.rope_theta},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", false},
      {"torch_dtype", dtype == tensor_dtype::f32   ? "float32"
                      : dtype == tensor_dtype::f16 ? "float16"
                                                   : "bfloat16"},
      {"dualpath_model", m.name},
      {"dualpath_block_tokens", m.block_tokens},
  };
  {
    std::ofstream out(fs::path(dir) / "config.json");
    out << cfg.dump(2) << "\n";
    if (!out) throw user_error("cannot write " + (fs::path(dir) / "config.json").string());
  }
  const auto defs = tensor_defs(m);
  shards = std::max<uint32_t>(1, std::min<uint32_t>(shards, uint32_t(defs.size())));
  if (shards == 1) {
    std::vector<named_tensor> all;
    for (size_t i = 0; i < defs.size(); ++i) all.push_back({defs[i].name, defs[i].shape, &w.tensors[i]});
    write_safetensors((fs::path(dir) / "model.safetensors").string(), all, dtype);
    return;
  }
  json weight_map = json::object();
  for (uint32_t s = 0; s < shards; ++s) {
    const std::string file = fmt::format("model-{:05}-of-{:05}.safetensors", s + 1, shards);
    std::vector<named_tensor> part;
    for (size_t i = s; i < defs.size(); i += shards) {  // interleaved so every shard has work
      part.push_back({defs[i].name, defs[i].shape, &w.tensors[i]});
      weight_map[defs[i].name] = file;
    }
    write_safetensors((fs::path(dir) / file).string(), part, dtype);
  }
  std::ofstream out(fs::path(dir) / "model.safetensors.index.json");
  out << json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2) << "\n";
}

model_spec read_model_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::ifstream in(path);
  if (!in) throw user_error("cannot open " + path + " (not a model directory?)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw user_error(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  const auto archs = field<std::vector<std::string>>(j, "architectures", path);
  const std::string arch = archs.empty() ? "" : archs[0];
  model_spec m;
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM") {
    m.qkv_bias = j.value("attention_bias", false);
  } else if (arch == "Qwen2ForCausalLM") {
    m.qkv_bias = true;
  } else {
    throw user_error(
        fmt::format("{}: unsupported architecture '{}' (supported: LlamaForCausalLM, Qwen2ForCausalLM)", path, arch));
  }
  m.name = j.value("dualpath_model", fs::path(dir).filename().string());
  m.description = "loaded from " + fs::path(dir).filename().string();
  m.attention = attention_kind::gqa;
  m.hidden = field<uint32_t>(j, "hidden_size", path);
  m.intermediate = field<uint32_t>(j, "intermediate_size", path);
  m.heads = field<uint32_t>(j, "num_attention_heads", path);
  m.kv_heads = j.contains("num_key_value_heads") ? field<uint32_t>(j, "num_key_value_heads", path) : m.heads;
  m.layers = field<uint32_t>(j, "num_hidden_layers", path);
  m.vocab = field<uint32_t>(j, "vocab_size", path);
  if (m.heads == 0 || m.kv_heads == 0 || m.heads % m.kv_heads != 0)
    throw user_error(fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", path,
                                 m.heads, m.kv_heads));
  m.head_dim = j.contains("head_dim") ? field<uint32_t>(j, "head_dim", path) : m.hidden / m.heads;
  m.v_head_dim = m.head_dim;
  m.rms_eps = j.value("rms_norm_eps", 1e-6);
  m.rope_theta = j.value("rope_theta", 10000.0);
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    throw user_error(fmt::format("{}: unsupported hidden_act {} (only silu)", path, j["hidden_act"].dump()));
  const double attn =
      double(m.hidden) * m.head_dim * (m.heads + 2.0 * m.kv_heads) + double(m.heads) * m.head_dim * m.hidden;
  m.active_params = m.layers * (attn + 3.0 * m.hidden * m.intermediate) + double(m.vocab) * m.hidden;
  m.total_params = m.active_params + double(m.vocab) * m.hidden;
  m.kv_bytes_per_token_layer = 2ull * m.kv_heads * m.head_dim * 2;
  m.block_tokens = j.value("dualpath_block_tokens", 64u);
  m.runnable = true;
  check_runnable(m);
  return m;
}

model_weights load_model_dir(const std::string& dir) {
  model_weights w;
  w.spec = read_model_config(dir);
  const auto idx = safetensors_index::open_dir(dir);
  bool tied = false;
  {
    std::ifstream in(fs::path(dir) / "config.json");
    tied = json::parse(in).value("tie_word_embeddings", false);
  }
  for (const auto& d : tensor_defs(w.spec)) {
    std::string name = d.name;
    if (name == "lm_head.weight" && !idx.has(name) && tied) name = "model.embed_tokens.weight";
    const auto& e = idx.entry(name);
    if (e.shape != d.shape)
      throw user_error(fmt::format("{}: tensor '{}' has shape {}, config.json implies {}", e.file, name,
                                   shape_str(e.shape), shape_str(d.shape)));
    w.tensors.push_back(idx.read(name));
  }
  return w;
}

}  // namespace dualpath::gpu
