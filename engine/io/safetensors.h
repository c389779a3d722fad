#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kv {

enum class DType { f16, bf16, f32, f64, i32, i64, u8 };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  std::vector<uint64_t> shape;
  std::span<const std::byte> data;  // points into the file's mapping

  uint64_t elements() const;
};

class MappedFile;

// A safetensors file, memory-mapped and validated as a whole before anything
// is handed out: header length, JSON, dtypes, byte ranges (inside the data
// section, matching shape x dtype size, not overlapping). Errors name the file
// and the tensor and throw InputError.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  // A one-line error "FILE: tensor NAME: what", as InputError.
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const;

 private:
  std::filesystem::path path_;
  std::unique_ptr<MappedFile> mapping_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorView> tensors_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  std::span<const std::byte> data;
};

// Writes a safetensors file atomically: to a temporary beside it, then rename,
// so a failure never leaves a half-written file at `path`.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace kv
