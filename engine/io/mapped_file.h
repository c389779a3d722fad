#pragma once
// A whole file mapped read-only (safetensors and GGUF weights point into it,
// so a model's bytes are not copied into memory before they go to the device).
#include <cstddef>
#include <filesystem>
#include <span>

namespace kv {

class MappedFile {
 public:
  // InputError naming the file where it cannot be opened, is not a regular file or cannot be mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kv
