// `dualpath model init`: writes a Hugging Face style model directory (config.json + safetensors) with seeded
// weights for a runnable catalog model, and its tokenizer (tokenizer.json + tokenizer_config.json): the
// byte-level one, or a real one copied from --tokenizer DIR, whose vocabulary the model then takes. Tests and
// demos use it; nothing is ever downloaded.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "apps/command_registry.hpp"
#include "core/read_file.hpp"
#include "core/status.hpp"
#include "gpu/model_dir.hpp"
#include "gpu/model_weights.hpp"
#include "text/byte_tokenizer.hpp"
#include "text/tokenizer.hpp"

namespace {

struct init_options {
  std::string model = "tiny";
  std::string out;
  uint64_t seed = 1;
  std::string dtype = "bf16";
  uint32_t shards = 1;
  std::string tokenizer;  // a directory with tokenizer.json and tokenizer_config.json
};

namespace fs = std::filesystem;

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw dualpath::user_error("model init: cannot write " + p.string());
}

std::string read_text(const fs::path& p) {
  auto text = dualpath::read_file(p.string());
  if (!text) throw dualpath::user_error("model init --tokenizer: " + p.string() + " cannot be opened");
  return std::move(*text);
}

void run_init(const init_options& o) {
  auto spec = dualpath::find_model(o.model);
  std::string tokenizer = dualpath::text::byte_tokenizer_json();
  std::string tokenizer_config = dualpath::text::byte_tokenizer_config_json();
  if (!o.tokenizer.empty()) {
    tokenizer = read_text(fs::path(o.tokenizer) / "tokenizer.json");
    tokenizer_config = read_text(fs::path(o.tokenizer) / "tokenizer_config.json");
  }
  const auto tok = dualpath::value_or_throw(dualpath::text::tokenizer::parse(tokenizer, "model init: tokenizer.json"));
  if (!o.tokenizer.empty()) spec.vocab = tok.vocab_size();  // the embedding and LM head follow the tokenizer
  const auto dtype = dualpath::gpu::parse_dtype(o.dtype);
  if (o.shards == 0) throw dualpath::user_error("model init: --shards must be at least 1");
  if (std::filesystem::exists(std::filesystem::path(o.out) / "config.json"))
    throw dualpath::user_error("model init: " + o.out + " already holds a model (config.json); choose another -o");
  const auto w = dualpath::gpu::generate_weights(spec, o.seed);
  dualpath::gpu::write_model_dir(o.out, w, dtype, o.shards);
  write_text(fs::path(o.out) / "tokenizer.json", tokenizer);
  write_text(fs::path(o.out) / "tokenizer_config.json", tokenizer_config);
  uint64_t params = 0;
  for (const auto& t : w.tensors) params += t.size();
  dualpath::cli::print(fmt::format(
      "wrote {} ({} layers, hidden {}, vocabulary {}, {:.1f}M parameters, {}, seed {}{}) and its {} tokenizer to {}\n",
      spec.name, spec.layers, spec.hidden, spec.vocab, params / 1e6, dualpath::gpu::to_string(dtype), o.seed,
      o.shards > 1 ? fmt::format(", {} shards", o.shards) : "", o.tokenizer.empty() ? "byte-level" : "given", o.out));
}

void setup(CLI::App& root) {
  auto& model = dualpath::cli::group(root, "model", "Model directories (weights for the cpu/cuda backends)");
  auto opts = std::make_shared<init_options>();
  auto* init = model.add_subcommand("init", "Write a seeded model directory (config.json + model.safetensors)");
  init->add_option("--model", opts->model, "Runnable catalog model (tiny, small)")->capture_default_str();
  init->add_option("-o,--out", opts->out, "Output directory")->required();
  init->add_option("--seed", opts->seed, "Weight seed (same seed = same weights as the in-memory catalog model)")
      ->capture_default_str();
  init->add_option("--dtype", opts->dtype, "Tensor dtype: bf16, f16 or f32")->capture_default_str();
  init->add_option("--shards", opts->shards, "Split into this many safetensors files with an index")
      ->capture_default_str();
  init->add_option("--tokenizer", opts->tokenizer,
                   "Directory with a Hugging Face tokenizer.json and tokenizer_config.json to copy (default: the "
                   "byte-level tokenizer)");
  init->callback([opts] { run_init(*opts); });
}

}  // namespace

DUALPATH_COMMAND(setup);
