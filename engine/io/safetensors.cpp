#include "io/safetensors.h"

#include "io/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace kv {
namespace {

// Headers beyond this are refused before any allocation (the safetensors crate uses the same cap).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeName {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeName kDTypes[] = {
    {DType::f16, "F16", 2}, {DType::bf16, "BF16", 2}, {DType::f32, "F32", 4}, {DType::f64, "F64", 8},
    {DType::i32, "I32", 4}, {DType::i64, "I64", 8},   {DType::u8, "U8", 1},
};

}  // namespace

const char* dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  return "?";
}

size_t dtype_size(DType dtype) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == dtype) return d.size;
  return 0;
}

uint64_t TensorView::elements() const {
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;
  return n;
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

void SafetensorsFile::fail(const std::string& tensor, const std::string& what) const {
  throw InputError(path_.string() + ": " + (tensor.empty() ? "" : "tensor " + tensor + ": ") + what);
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path) {
  mapping_ = std::make_unique<MappedFile>(path);
  std::span<const std::byte> file = mapping_->bytes();
  if (file.size() < 8) fail("", "file of " + std::to_string(file.size()) + " bytes is shorter than the 8-byte header length");
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | std::to_integer<uint64_t>(file[size_t(i)]);
  if (header_bytes > file.size() - 8)
    fail("", "header length " + std::to_string(header_bytes) + " exceeds the file's " + std::to_string(file.size() - 8) + " remaining bytes");
  if (header_bytes > kMaxHeaderBytes) fail("", "header length " + std::to_string(header_bytes) + " exceeds the 100 MiB limit");
  std::span<const std::byte> data = file.subspan(8 + header_bytes);

  nlohmann::json header;
  try {
    const char* text = reinterpret_cast<const char*>(file.data() + 8);
    header = nlohmann::json::parse(text, text + header_bytes);
  } catch (const nlohmann::json::exception& e) {
    fail("", std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail("", "header is not a JSON object");

  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("", "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) fail("", "__metadata__." + key + " is not a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      fail(name, "entry lacks dtype, shape or data_offsets");
    const auto& dtype_json = entry["dtype"];
    if (!dtype_json.is_string()) fail(name, "dtype is not a string");
    std::string dtype_text = dtype_json.get<std::string>();
    const DTypeName* dtype = nullptr;
    for (const DTypeName& d : kDTypes)
      if (dtype_text == d.name) dtype = &d;
    if (!dtype) fail(name, "unknown dtype '" + dtype_text + "'");

    TensorView view;
    view.name = name;
    view.dtype = dtype->dtype;
    const auto& shape = entry["shape"];
    if (!shape.is_array()) fail(name, "shape is not an array");
    uint64_t elements = 1;
    for (const auto& s : shape) {
      if (!s.is_number_unsigned()) fail(name, "shape holds a value that is not a non-negative integer");
      uint64_t extent = s.get<uint64_t>();
      if (extent != 0 && elements > std::numeric_limits<uint64_t>::max() / extent / dtype->size)
        fail(name, "shape overflows 64 bits");
      elements *= extent;
      view.shape.push_back(extent);
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      fail(name, "data_offsets is not a pair of non-negative integers");
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data.size())
      fail(name, "byte range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") lies outside the data section of " + std::to_string(data.size()) + " bytes");
    if (end - begin != elements * dtype->size)
      fail(name, "byte range of " + std::to_string(end - begin) + " bytes does not match shape x " + dtype->name +
                     " = " + std::to_string(elements * dtype->size) + " bytes");
    view.data = data.subspan(begin, end - begin);
    if (end > begin) ranges.push_back({begin, end, name});
    tensors_[name] = std::move(view);
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end) fail(ranges[i].name, "byte range overlaps tensor " + ranges[i - 1].name);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    uint64_t elements = 1;
    for (uint64_t s : t.shape) elements *= s;
    if (elements * dtype_size(t.dtype) != t.data.size())
      throw std::logic_error("write_safetensors: " + t.name + " has " + std::to_string(t.data.size()) +
                             " bytes for its shape");
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned

  std::filesystem::path temporary = path;
  temporary += ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path.string() + ": cannot open for writing");
    uint64_t length = text.size();
    char length_bytes[8];
    for (int i = 0; i < 8; ++i) length_bytes[i] = char((length >> (8 * i)) & 0xff);
    out.write(length_bytes, 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (const TensorToWrite& t : tensors)
      out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(temporary);
      throw InputError(path.string() + ": write failed (disk full?)");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary);
    throw InputError(path.string() + ": cannot rename the finished file into place: " + error.message());
  }
}

}  // namespace kv
