#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include <unicode/utf8.h>

#include "base/error.h"

namespace kv::formats {
namespace {

// GGUF's metadata value types.
enum ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

constexpr uint32_t kMaxDims = 4;
constexpr uint32_t kMaxArrayDepth = 2;  // an array of arrays at most (none in llama.cpp's files)

class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(source_ + ": GGUF " + what + " (at byte " + std::to_string(at_) + " of " + std::to_string(bytes_.size()) + ")");
  }
  size_t at() const { return at_; }
  size_t left() const { return bytes_.size() - at_; }
  template <typename T>
  T scalar(const char* what) {
    if (left() < sizeof(T)) fail(std::string("ends inside ") + what);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string text(const char* what) {
    const uint64_t length = scalar<uint64_t>(what);
    if (length > left()) fail(std::string(what) + " of " + std::to_string(length) + " bytes past the end");
    if (length > uint64_t(INT32_MAX)) fail(std::string(what) + " of " + std::to_string(length) + " bytes (2 GiB at most)");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), size_t(length));
    // GGUF's strings are UTF-8; refused here, a bad byte would fail later in the JSON that carries the tokenizer and config.
    for (int32_t i = 0; i < int32_t(s.size());) {
      UChar32 c;
      U8_NEXT(s.data(), i, int32_t(s.size()), c);
      if (c < 0) fail(std::string(what) + " that is not UTF-8");
    }
    at_ += size_t(length);
    return s;
  }
  // A count of items each at least `least` bytes long, refused where the bytes left cannot hold them.
  uint64_t count(const char* what, uint64_t least) {
    const uint64_t n = scalar<uint64_t>(what);
    if (least > 0 && n > left() / least) fail(std::string(what) + " " + std::to_string(n) + " is more than the file holds");
    return n;
  }
  nlohmann::json value(uint32_t type, uint32_t depth) {
    switch (type) {
      case kU8: return scalar<uint8_t>("a value");
      case kI8: return scalar<int8_t>("a value");
      case kU16: return scalar<uint16_t>("a value");
      case kI16: return scalar<int16_t>("a value");
      case kU32: return scalar<uint32_t>("a value");
      case kI32: return scalar<int32_t>("a value");
      case kF32: return scalar<float>("a value");
      case kBool: {
        const uint8_t b = scalar<uint8_t>("a value");
        if (b > 1) fail("bool of " + std::to_string(b));
        return b == 1;
      }
      case kString: return text("a string");
      case kU64: return scalar<uint64_t>("a value");
      case kI64: return scalar<int64_t>("a value");
      case kF64: return scalar<double>("a value");
      case kArray: {
        if (depth >= kMaxArrayDepth) fail("arrays nested too deep");
        const uint32_t element = scalar<uint32_t>("an array's type");
        if (element > kF64) fail("array of unknown type " + std::to_string(element));
        const uint64_t n = count("array length", element == kU8 || element == kI8 || element == kBool ? 1 : 2);
        nlohmann::json array = nlohmann::json::array();
        for (uint64_t i = 0; i < n; ++i) array.push_back(value(element, depth + 1));
        return array;
      }
      default: fail("value of unknown type " + std::to_string(type));
    }
  }
  void skip_to(size_t offset) { at_ = offset; }

 private:
  std::span<const std::byte> bytes_;
  const std::string& source_;
  size_t at_ = 0;
};

// Bytes of a tensor of `elements` (row length dims[0]) of `type`: whole blocks a row.
uint64_t tensor_bytes(GgmlType type, uint64_t elements, uint64_t row, Reader& r, const std::string& name) {
  const BlockLayout layout = *block_layout(uint32_t(type));
  if (row % layout.elements)
    r.fail("tensor " + name + ": a " + layout.name + " row of " + std::to_string(row) + " is not whole blocks of " +
           std::to_string(layout.elements));
  return elements / layout.elements * layout.bytes;
}

}  // namespace

GgufFile parse_gguf(std::span<const std::byte> bytes, const std::string& source) {
  Reader r(bytes, source);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) r.fail("magic missing: not a GGUF file");
  r.skip_to(4);
  GgufFile file;
  file.version = r.scalar<uint32_t>("the version");
  if (file.version != 2 && file.version != 3) r.fail("version " + std::to_string(file.version) + " (2 and 3 are read)");
  // A tensor's entry is at least 8 + 4 + 8 + 4 + 8 bytes, a metadata entry 8 + 4 + 1.
  const uint64_t n_tensors = r.count("tensor count", 32), n_metadata = r.count("metadata count", 13);
  file.metadata = nlohmann::json::object();
  for (uint64_t i = 0; i < n_metadata; ++i) {
    const std::string key = r.text("a metadata key");
    const uint32_t type = r.scalar<uint32_t>("a metadata type");
    if (file.metadata.contains(key)) r.fail("metadata key '" + key + "' twice");
    file.metadata[key] = r.value(type, 0);
  }
  if (file.metadata.contains("general.alignment")) {
    const nlohmann::json& a = file.metadata["general.alignment"];
    if (!a.is_number_unsigned() || a.get<uint64_t>() == 0 || a.get<uint64_t>() > 4096 || (a.get<uint64_t>() & (a.get<uint64_t>() - 1)))
      r.fail("general.alignment must be a power of two up to 4096, not " + a.dump());
    file.alignment = a.get<uint32_t>();
  }
  struct Entry {
    std::string name;
    std::vector<uint64_t> dims;
    GgmlType type;
    uint64_t offset;
  };
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Entry e;
    e.name = r.text("a tensor name");
    if (!names.insert(e.name).second) r.fail("tensor '" + e.name + "' twice");
    const uint32_t n_dims = r.scalar<uint32_t>("a tensor's dimensions");
    if (n_dims == 0 || n_dims > kMaxDims) r.fail("tensor " + e.name + ": " + std::to_string(n_dims) + " dimensions (1 to 4)");
    for (uint32_t d = 0; d < n_dims; ++d) e.dims.push_back(r.scalar<uint64_t>("a tensor's dimension"));
    const uint32_t type = r.scalar<uint32_t>("a tensor's type");
    if (!block_layout(type))
      r.fail("tensor " + e.name + ": " + (ggml_type_name(type).starts_with("type ") ? "" : "type ") + ggml_type_name(type) +
             " is not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)");
    e.type = GgmlType(type);
    e.offset = r.scalar<uint64_t>("a tensor's offset");
    entries.push_back(std::move(e));
  }
  const uint64_t data_start = (uint64_t(r.at()) + file.alignment - 1) / file.alignment * file.alignment;
  if (data_start > bytes.size() && n_tensors > 0) r.fail("tensor data start past the end");
  const uint64_t data_bytes = bytes.size() > data_start ? bytes.size() - data_start : 0;
  for (const Entry& e : entries) {
    uint64_t elements = 1;
    // At most four values a byte (Q2_K stores 3.05): a bound that keeps the product in range.
    const uint64_t most = data_bytes * 4;
    for (uint64_t d : e.dims) {
      if (d == 0 || elements > most / d) r.fail("tensor " + e.name + ": more elements than the file holds");
      elements *= d;
    }
    const uint64_t size = tensor_bytes(e.type, elements, e.dims[0], r, e.name);
    if (e.offset % file.alignment) r.fail("tensor " + e.name + ": offset " + std::to_string(e.offset) + " is not aligned");
    if (e.offset > data_bytes || size > data_bytes - e.offset)
      r.fail("tensor " + e.name + ": bytes " + std::to_string(e.offset) + " to " + std::to_string(e.offset + size) +
             " past the data's " + std::to_string(data_bytes));
    file.tensors.push_back({e.name, e.dims, e.type, bytes.subspan(size_t(data_start + e.offset), size_t(size))});
  }
  // GGUF keeps no tensor's size: its type and shape give it. Tensors whose
  // bytes so reckoned overlap say that a type or a shape disagrees with the
  // bytes there are (a Q4_K tensor relabelled Q8_0 reads into its neighbour).
  std::vector<const GgufTensor*> by_start;
  for (const GgufTensor& t : file.tensors) by_start.push_back(&t);
  std::sort(by_start.begin(), by_start.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->data.data() < b->data.data(); });
  for (size_t i = 1; i < by_start.size(); ++i) {
    const GgufTensor &before = *by_start[i - 1], &after = *by_start[i];
    if (before.data.data() + before.data.size() > after.data.data())
      r.fail("tensor " + before.name + ": its " + ggml_type_name(uint32_t(before.type)) + " bytes run " +
             std::to_string(before.data.data() + before.data.size() - after.data.data()) + " into tensor " + after.name +
             "'s: its type or shape disagrees with the file");
  }
  return file;
}

}  // namespace kv::formats
