#pragma once
// Reading and writing safetensors files (8-byte little-endian header length, JSON header, raw data), single
// or sharded with a `model.safetensors.index.json` weight map. Tensors convert to fp32 on read.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dualpath::gpu {

enum class tensor_dtype { bf16, f16, f32 };

const char* to_string(tensor_dtype t);           // safetensors spelling: "BF16", "F16", "F32"
tensor_dtype parse_dtype(const std::string& s);  // accepts bf16/f16/fp16/f32/fp32 (any case); throws user_error

struct tensor_entry {
  std::string file;  // path of the file holding it
  tensor_dtype dtype = tensor_dtype::f32;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // absolute byte range in `file`
};

// Index of every tensor in a model directory: `model.safetensors`, or the files named by
// `model.safetensors.index.json`. Validates headers and ranges against file sizes (clear user_error naming the
// file on corruption or truncation).
class safetensors_index {
 public:
  static safetensors_index open_dir(const std::string& dir);

  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  const tensor_entry& entry(const std::string& name) const;  // throws user_error when missing
  std::vector<float> read(const std::string& name) const;    // converted to fp32
  const std::map<std::string, tensor_entry>& entries() const { return entries_; }

 private:
  void add_file(const std::string& path, const std::string* only_names_from_index);
  std::string where_;
  std::map<std::string, tensor_entry> entries_;
};

struct named_tensor {
  std::string name;
  std::vector<uint64_t> shape;
  const std::vector<float>* data;
};

// Writes `tensors` as one safetensors file in `dtype` (values rounded to nearest even).
void write_safetensors(const std::string& path, const std::vector<named_tensor>& tensors, tensor_dtype dtype);

}  // namespace dualpath::gpu
