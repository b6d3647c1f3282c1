#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/status.hpp"
#include "gpu/model_dir.hpp"
#include "gpu/model_loader.hpp"
#include "kv_pages.hpp"
#include "tests/common/scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace testkv;

namespace {

std::string error_of(const std::string& dir) {
  try {
    load_model_dir(dir);
  } catch (const user_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a model directory round-trips bit-identically (bf16, f32, sharded) and matches the catalog model") {
  dualpath::test::scratch_dir tmp;
  const auto w = generate_weights(find_model("tiny"), 42);
  write_model_dir(tmp.file("bf16"), w, tensor_dtype::bf16);
  write_model_dir(tmp.file("f32"), w, tensor_dtype::f32);
  write_model_dir(tmp.file("shard"), w, tensor_dtype::bf16, 3);
  CHECK(fs::exists(tmp.file("shard/model.safetensors.index.json")));
  CHECK(fs::exists(tmp.file("shard/model-00003-of-00003.safetensors")));
  for (const char* d : {"bf16", "f32", "shard"}) {
    CAPTURE(d);
    const auto loaded = load_model_dir(tmp.file(d));
    CHECK(loaded.spec.name == "tiny");
    CHECK(loaded.spec.kv_bytes_per_token_layer == w.spec.kv_bytes_per_token_layer);
    REQUIRE(loaded.tensors.size() == w.tensors.size());
    for (size_t i = 0; i < w.tensors.size(); ++i) CHECK(loaded.tensors[i] == w.tensors[i]);
  }
  write_model_dir(tmp.file("f16"), w, tensor_dtype::f16);
  const auto half = load_model_dir(tmp.file("f16"));
  double worst = 0;
  for (size_t i = 0; i < w.tensors.size(); ++i)
    for (size_t j = 0; j < w.tensors[i].size(); ++j)
      worst = std::max(worst, double(std::abs(half.tensors[i][j] - w.tensors[i][j])));
  CHECK(worst < 1e-4);

  // The directory and the catalog name with the same seed give the same model.
  auto from_dir = make_backend({backend_kind::cpu, tmp.file("bf16")});
  auto from_name = make_backend({backend_kind::cpu, "tiny", "h800", 0.4, 42});
  const auto prompt = random_tokens(30, 512, 1);
  paged_kv a(from_dir->model()), b(from_name->model());
  request ra{&a, 0, prompt}, rb{&b, 0, prompt};
  CHECK(prefill(*from_dir, {&ra}) == prefill(*from_name, {&rb}));
  CHECK(ra.logits == rb.logits);
  auto other_seed = make_backend({backend_kind::cpu, "tiny", "h800", 0.4, 43});
  paged_kv c(other_seed->model());
  request rc{&c, 0, prompt};
  prefill(*other_seed, {&rc});
  CHECK(rc.logits != rb.logits);
}

TEST_CASE("corrupt, truncated and incomplete model directories give clear errors") {
  dualpath::test::scratch_dir tmp;
  const auto w = generate_weights(find_model("tiny"), 1);
  const auto fresh = [&](const char* name) {
    write_model_dir(tmp.file(name), w, tensor_dtype::bf16);
    return tmp.file(name);
  };

  SUBCASE("truncated") {
    const auto dir = fresh("trunc");
    const auto file = dir + "/model.safetensors";
    fs::resize_file(file, fs::file_size(file) / 2);
    CHECK(error_of(dir).find("truncated") != std::string::npos);
    CHECK(error_of(dir).find("model.safetensors") != std::string::npos);
  }
  SUBCASE("corrupt header") {
    const auto dir = fresh("corrupt");
    std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12);
    f.write("\x01\x02garbage{{", 11);
    f.close();
    CHECK(error_of(dir).find("corrupt") != std::string::npos);
  }
  SUBCASE("header length beyond the file") {
    const auto dir = fresh("badlen");
    std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.write("\xff\xff\xff\x7f\x00\x00\x00\x00", 8);
    f.close();
    CHECK(error_of(dir).find("header length") != std::string::npos);
  }
  SUBCASE("missing tensor") {
    const auto dir = fresh("missing");
    const auto defs = tensor_defs(w.spec);
    std::vector<named_tensor> some;
    for (size_t i = 0; i < defs.size(); ++i)
      if (defs[i].name != "model.layers.2.mlp.up_proj.weight")
        some.push_back({defs[i].name, defs[i].shape, &w.tensors[i]});
    write_safetensors(dir + "/model.safetensors", some, tensor_dtype::bf16);
    const auto e = error_of(dir);
    CHECK(e.find("missing tensor 'model.layers.2.mlp.up_proj.weight'") != std::string::npos);
  }
  SUBCASE("wrong shape") {
    const auto dir = fresh("shape");
    const auto defs = tensor_defs(w.spec);
    std::vector<named_tensor> all;
    for (size_t i = 0; i < defs.size(); ++i) all.push_back({defs[i].name, defs[i].shape, &w.tensors[i]});
    for (auto& t : all)  // transposed: same byte count, wrong shape
      if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {t.shape[1], t.shape[0]};
    write_safetensors(dir + "/model.safetensors", all, tensor_dtype::bf16);
    const auto e = error_of(dir);
    CHECK(e.find("model.layers.0.self_attn.k_proj.weight") != std::string::npos);
    CHECK(e.find("shape [128, 64]") != std::string::npos);
  }
  SUBCASE("unsupported architecture") {
    const auto dir = fresh("arch");
    std::ofstream(dir + "/config.json") << R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 128})";
    CHECK(error_of(dir).find("unsupported architecture 'MixtralForCausalLM'") != std::string::npos);
  }
  SUBCASE("missing config field") {
    const auto dir = fresh("field");
    std::ofstream(dir + "/config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 128})";
    CHECK(error_of(dir).find("missing field \"intermediate_size\"") != std::string::npos);
  }
  SUBCASE("no weights") {
    const auto dir = fresh("empty");
    fs::remove(dir + "/model.safetensors");
    CHECK(error_of(dir).find("no model.safetensors") != std::string::npos);
  }
}
