#include "gpu/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "core/names.hpp"
#include "gpu/bf16.hpp"

namespace dualpath::gpu {

namespace fs = std::filesystem;
using nlohmann::json;

const char* to_string(tensor_dtype t) {
  return name_of(t, {{tensor_dtype::bf16, "BF16"}, {tensor_dtype::f16, "F16"}, {tensor_dtype::f32, "F32"}});
}

tensor_dtype parse_dtype(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (l == "bf16" || l == "bfloat16") return tensor_dtype::bf16;
  if (l == "f16" || l == "fp16" || l == "float16") return tensor_dtype::f16;
  if (l == "f32" || l == "fp32" || l == "float32") return tensor_dtype::f32;
  throw user_error("unsupported tensor dtype '" + s + "' (supported: BF16, F16, F32)");
}

namespace {

uint64_t dtype_size(tensor_dtype t) { return t == tensor_dtype::f32 ? 4 : 2; }

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw user_error("cannot open " + path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw user_error(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

}  // namespace

safetensors_index safetensors_index::open_dir(const std::string& dir) {
  safetensors_index idx;
  idx.where_ = dir;
  const fs::path single = fs::path(dir) / "model.safetensors", index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    const json j = read_json_file(index.string());
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw user_error(index.string() + ": no \"weight_map\" object");
    std::map<std::string, std::vector<std::string>> by_file;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw user_error(index.string() + ": weight_map entry '" + name + "' is not a file name");
      by_file[file.get<std::string>()].push_back(name);
    }
    for (const auto& [file, names] : by_file) {
      (void)names;
      const std::string path = (fs::path(dir) / file).string();
      idx.add_file(path, &file);
      for (const auto& n : names)
        if (!idx.has(n))
          throw user_error(fmt::format("{}: index maps '{}' to {}, which does not hold it", index.string(), n, file));
    }
  } else if (fs::exists(single)) {
    idx.add_file(single.string(), nullptr);
  } else {
    throw user_error("no model.safetensors or model.safetensors.index.json in " + dir);
  }
  return idx;
}

void safetensors_index::add_file(const std::string& path, const std::string*) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw user_error("cannot open " + path);
  const uint64_t size = fs::file_size(path);
  unsigned char len_bytes[8];
  if (size < 8 || !in.read(reinterpret_cast<char*>(len_bytes), 8))
    throw user_error(path + ": truncated (no safetensors header length)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > size - 8 || header_len > (100ull << 20))
    throw user_error(
        fmt::format("{}: corrupt or truncated: header length {} but file has {} bytes", path, header_len, size));
  std::string header(header_len, '\0');
  in.read(header.data(), std::streamsize(header_len));
  json j;
  try {
    j = json::parse(header);
  } catch (const json::exception& e) {
    throw user_error(fmt::format("{}: corrupt safetensors header ({})", path, e.what()));
  }
  if (!j.is_object()) throw user_error(path + ": corrupt safetensors header (not a JSON object)");
  const uint64_t data_start = 8 + header_len, data_size = size - data_start;
  for (const auto& [name, t] : j.items()) {
    if (name == "__metadata__") continue;
    try {
      tensor_entry e;
      e.file = path;
      e.dtype = parse_dtype(t.at("dtype").get<std::string>());
      e.shape = t.at("shape").get<std::vector<uint64_t>>();
      const auto off = t.at("data_offsets").get<std::vector<uint64_t>>();
      if (off.size() != 2 || off[0] > off[1])
        throw user_error(fmt::format("{}: tensor '{}' has bad data_offsets", path, name));
      uint64_t n = 1;
      for (auto s : e.shape) n *= s;
      if (off[1] - off[0] != n * dtype_size(e.dtype))
        throw user_error(fmt::format("{}: tensor '{}' has {} bytes for {} {} elements", path, name, off[1] - off[0], n,
                                     to_string(e.dtype)));
      if (off[1] > data_size)
        throw user_error(fmt::format("{}: truncated: tensor '{}' ends at byte {} of a {}-byte data section", path, name,
                                     off[1], data_size));
      e.begin = data_start + off[0];
      e.end = data_start + off[1];
      entries_[name] = std::move(e);
    } catch (const json::exception& ex) {
      throw user_error(fmt::format("{}: corrupt entry for tensor '{}' ({})", path, name, ex.what()));
    }
  }
}

const tensor_entry& safetensors_index::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw user_error(where_ + ": missing tensor '" + name + "'");
  return it->second;
}

std::vector<float> safetensors_index::read(const std::string& name) const {
  const tensor_entry& e = entry(name);
  std::ifstream in(e.file, std::ios::binary);
  if (!in) throw user_error("cannot open " + e.file);
  std::vector<char> raw(e.end - e.begin);
  in.seekg(std::streamoff(e.begin));
  if (!in.read(raw.data(), std::streamsize(raw.size())))
    throw user_error(fmt::format("{}: truncated while reading tensor '{}'", e.file, name));
  const uint64_t n = raw.size() / dtype_size(e.dtype);
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) {  // safetensors is little-endian, as is every host we build for
    if (e.dtype == tensor_dtype::f32) {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = e.dtype == tensor_dtype::bf16 ? bf16_to_float(h) : fp16_to_float(h);
    }
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<named_tensor>& tensors, tensor_dtype dtype) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = t.data->size() * dtype_size(dtype);
    header[t.name] = {{"dtype", to_string(dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data starts 8-aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw user_error("cannot write " + tmp);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = (uint64_t(h.size()) >> (8 * i)) & 0xff;
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(h.data(), std::streamsize(h.size()));
    std::vector<char> buf;
    for (const auto& t : tensors) {
      buf.resize(t.data->size() * dtype_size(dtype));
      for (size_t i = 0; i < t.data->size(); ++i) {
        const float f = (*t.data)[i];
        if (dtype == tensor_dtype::f32) {
          std::memcpy(buf.data() + 4 * i, &f, 4);
        } else {
          const uint16_t v = dtype == tensor_dtype::bf16 ? float_to_bf16(f) : float_to_fp16(f);
          std::memcpy(buf.data() + 2 * i, &v, 2);
        }
      }
      out.write(buf.data(), std::streamsize(buf.size()));
    }
    if (!out) throw user_error("write failed: " + tmp);
  }
  fs::rename(tmp, path);
}

}  // namespace dualpath::gpu
