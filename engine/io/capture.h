#pragma once
// Room io/: what is read and written on the host (captures, safetensors, mapped
// files, selection files, synthetic captures, bundled data, a capture's blocks); it includes base/ and vk/.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace kv {

inline constexpr const char* kCaptureFormat = "kvscope-capture/1";

struct AttentionShape {
  uint32_t heads = 0;     // H
  uint32_t kv_heads = 0;  // G
  uint32_t tokens = 0;    // T
  uint32_t dim = 0;       // d
  uint32_t group() const { return heads / kv_heads; }  // r
};

struct CaptureLayer {
  int index = 0;
  AttentionShape shape;
  DType dtype = DType::f16;
  const TensorView* q = nullptr;  // [H, T, d]
  const TensorView* k = nullptr;  // [G, T, d]
  const TensorView* v = nullptr;  // [G, T, d]
};

// A capture file (docs/capture.md), checked in full on open.
class Capture {
 public:
  explicit Capture(const std::filesystem::path& path);

  const SafetensorsFile& file() const { return file_; }
  const std::vector<CaptureLayer>& layers() const { return layers_; }
  const CaptureLayer& layer(int index) const;  // InputError if absent
  const CaptureLayer* find_layer(int index) const;  // null if absent
  std::string layer_indices() const;  // "0,4": the layers it holds, for messages
  uint32_t tokens() const { return layers_.front().shape.tokens; }
  std::string model() const;
  std::string source() const;
  // Logit scale: metadata `scale`, else 1/sqrt(d).
  double scale(const CaptureLayer& layer) const;

  bool has_token_ids() const { return token_ids_ != nullptr; }
  bool has_token_text() const { return token_text_ != nullptr; }
  std::vector<int32_t> token_ids() const;
  std::string token_text(uint32_t position) const;  // "" without text
  // Metadata `needle_span` "start,end": the needle's tokens [start, end), if the capture has one.
  std::optional<std::pair<uint32_t, uint32_t>> needle_span() const { return needle_span_; }

 private:
  SafetensorsFile file_;
  std::vector<CaptureLayer> layers_;
  std::optional<double> scale_;
  std::optional<std::pair<uint32_t, uint32_t>> needle_span_;
  const TensorView* token_ids_ = nullptr;
  const TensorView* token_text_ = nullptr;
  const TensorView* token_offsets_ = nullptr;
};

// The first NaN or infinity in a capture's q, k and v tensors (layer order, then
// q, k, v), with its place [head, token, channel]; nothing when all are finite.
struct NonFiniteValue {
  std::string tensor;  // e.g. "layers.3.k"
  uint32_t head = 0, token = 0, channel = 0;
  size_t count = 0;  // non-finite values in that tensor
  std::string describe() const;  // "layers.3.k has 2 non-finite values, the first at head 1, token 77, channel 5"
};
std::optional<NonFiniteValue> first_non_finite(const Capture& capture);
// Refuses (InputError) a capture with NaN or Inf unless `allow`; the attention
// of a non-finite key or query is undefined, so no metric of it can be trusted.
void require_finite(const Capture& capture, bool allow);

// Values of an F16/BF16/F32 tensor (or a byte range of one) as float.
std::vector<float> to_float(DType dtype, std::span<const std::byte> bytes);
// Floats stored as `dtype` (F16, BF16 or F32), little-endian.
std::vector<std::byte> from_float(DType dtype, std::span<const float> values);

// What write_capture stores for one layer; the byte spans must outlive the call.
struct CaptureLayerData {
  int index = 0;
  AttentionShape shape;
  DType dtype = DType::f16;
  std::span<const std::byte> q, k, v;
};

struct CaptureData {
  std::string model;
  std::string source;
  std::optional<double> scale;
  std::vector<CaptureLayerData> layers;
  std::vector<int32_t> token_ids;      // optional
  std::vector<std::string> token_text; // optional, one string per token
  std::optional<std::pair<uint32_t, uint32_t>> needle_span;
};

void write_capture(const std::filesystem::path& path, const CaptureData& capture);

}  // namespace kv
