#include "io/capture.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/error.h"
#include "base/half.h"

namespace kv {
namespace {

bool is_attention_dtype(DType dtype) { return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32; }

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A capture's tensor "layers.N.q" (or .k, .v): N's digits and which one.
struct LayerTensorName {
  std::string digits;
  char which;
};
std::optional<LayerTensorName> layer_tensor_name(const std::string& name) {
  constexpr std::string_view prefix = "layers.";
  if (!name.starts_with(prefix) || name.size() < prefix.size() + 3 || name[name.size() - 2] != '.') return std::nullopt;
  const char which = name.back();
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 2);
  if ((which != 'q' && which != 'k' && which != 'v') ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return LayerTensorName{std::move(digits), which};
}

template <typename T>
T read_scalar(std::span<const std::byte> bytes, size_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

Capture::Capture(const std::filesystem::path& path) : file_(path) {
  const auto& metadata = file_.metadata();
  auto format = metadata.find("format");
  if (format == metadata.end()) file_.fail("", std::string("metadata lacks format (expected ") + kCaptureFormat + ")");
  if (format->second != kCaptureFormat)
    file_.fail("", "metadata format is '" + format->second + "', expected " + kCaptureFormat);
  if (auto scale = metadata.find("scale"); scale != metadata.end()) {
    char* end = nullptr;
    double value = std::strtod(scale->second.c_str(), &end);
    if (end == scale->second.c_str() || *end != '\0' || !std::isfinite(value) || value <= 0)
      file_.fail("", "metadata scale '" + scale->second + "' is not a positive number");
    scale_ = value;
  }

  std::map<int, CaptureLayer> found;
  for (const auto& [name, view] : file_.tensors()) {
    const std::optional<LayerTensorName> parsed = layer_tensor_name(name);
    if (!parsed) continue;
    if (parsed->digits.size() > 6) file_.fail(name, "layer index is too large");
    CaptureLayer& layer = found[std::stoi(parsed->digits)];
    layer.index = std::stoi(parsed->digits);
    (parsed->which == 'q' ? layer.q : parsed->which == 'k' ? layer.k : layer.v) = &view;
  }
  if (found.empty()) file_.fail("", "holds no layers.{l}.q/k/v tensors");

  for (auto& [index, layer] : found) {
    const std::string prefix = "layers." + std::to_string(index) + ".";
    if (!layer.q || !layer.k || !layer.v)
      file_.fail(prefix + (!layer.q ? "q" : !layer.k ? "k" : "v"), "is missing (each layer needs q, k and v)");
    for (const TensorView* t : {layer.q, layer.k, layer.v}) {
      if (!is_attention_dtype(t->dtype)) file_.fail(t->name, std::string("dtype ") + dtype_name(t->dtype) + " is not F16, BF16 or F32");
      if (t->dtype != layer.q->dtype)
        file_.fail(t->name, std::string("dtype ") + dtype_name(t->dtype) + " differs from " + layer.q->name + "'s " + dtype_name(layer.q->dtype));
      if (t->shape.size() != 3) file_.fail(t->name, "shape " + shape_text(t->shape) + " is not 3-D");
      for (uint64_t extent : t->shape)
        if (extent == 0 || extent > 0x7fffffffu) file_.fail(t->name, "shape " + shape_text(t->shape) + " has an empty or oversized axis");
    }
    layer.dtype = layer.q->dtype;
    layer.shape = {uint32_t(layer.q->shape[0]), uint32_t(layer.k->shape[0]), uint32_t(layer.q->shape[1]), uint32_t(layer.q->shape[2])};
    for (const TensorView* t : {layer.k, layer.v})
      if (t->shape[1] != layer.shape.tokens || t->shape[2] != layer.shape.dim)
        file_.fail(t->name, "shape " + shape_text(t->shape) + " disagrees with " + layer.q->name + " " + shape_text(layer.q->shape) + " on T or d");
    if (layer.v->shape[0] != layer.shape.kv_heads)
      file_.fail(layer.v->name, "shape " + shape_text(layer.v->shape) + " has a different head count than " + layer.k->name);
    if (layer.shape.heads % layer.shape.kv_heads != 0)
      file_.fail(layer.q->name, "H=" + std::to_string(layer.shape.heads) + " is not a multiple of G=" + std::to_string(layer.shape.kv_heads));
    if (!layers_.empty() && layer.shape.tokens != layers_.front().shape.tokens)
      file_.fail(layer.q->name, "T=" + std::to_string(layer.shape.tokens) + " differs from layer " +
                                    std::to_string(layers_.front().index) + "'s T=" + std::to_string(layers_.front().shape.tokens));
    layers_.push_back(layer);
  }

  const uint64_t T = tokens();
  if (auto needle = metadata.find("needle_span"); needle != metadata.end()) {
    unsigned long long first = 0, end = 0;
    char tail = 0;
    if (std::sscanf(needle->second.c_str(), "%llu,%llu%c", &first, &end, &tail) != 2 || first >= end || end > T)
      file_.fail("", "metadata needle_span '" + needle->second + "' is not 'start,end' with start < end <= T=" + std::to_string(T));
    needle_span_ = std::make_pair(uint32_t(first), uint32_t(end));
  }
  token_ids_ = file_.find("tokens");
  if (token_ids_ && (token_ids_->dtype != DType::i32 || token_ids_->shape != std::vector<uint64_t>{T}))
    file_.fail("tokens", "must be I32 [" + std::to_string(T) + "], is " + dtype_name(token_ids_->dtype) + " " + shape_text(token_ids_->shape));
  token_text_ = file_.find("token_text");
  token_offsets_ = file_.find("token_offsets");
  if (bool(token_text_) != bool(token_offsets_)) file_.fail(token_text_ ? "token_offsets" : "token_text", "is missing (token_text and token_offsets come together)");
  if (token_text_) {
    if (token_text_->dtype != DType::u8 || token_text_->shape.size() != 1)
      file_.fail("token_text", std::string("must be U8 [N], is ") + dtype_name(token_text_->dtype) + " " + shape_text(token_text_->shape));
    if (token_offsets_->dtype != DType::i32 || token_offsets_->shape != std::vector<uint64_t>{T + 1})
      file_.fail("token_offsets", "must be I32 [" + std::to_string(T + 1) + "], is " + dtype_name(token_offsets_->dtype) + " " + shape_text(token_offsets_->shape));
    int64_t previous = 0;
    for (uint64_t i = 0; i <= T; ++i) {
      int64_t offset = read_scalar<int32_t>(token_offsets_->data, i);
      if (offset < previous || uint64_t(offset) > token_text_->shape[0])
        file_.fail("token_offsets", "entry " + std::to_string(i) + " = " + std::to_string(offset) + " is decreasing or past the text's end");
      previous = offset;
    }
  }
}

const CaptureLayer* Capture::find_layer(int index) const {
  for (const CaptureLayer& l : layers_)
    if (l.index == index) return &l;
  return nullptr;
}

std::string Capture::layer_indices() const {
  std::string indices;
  for (const CaptureLayer& l : layers_) indices.append(indices.empty() ? "" : ",").append(std::to_string(l.index));
  return indices;
}

const CaptureLayer& Capture::layer(int index) const {
  if (const CaptureLayer* found = find_layer(index)) return *found;
  throw InputError(file_.path().string() + ": has no layer " + std::to_string(index) + " (layers: " + layer_indices() + ")");
}

std::string Capture::model() const {
  auto it = file_.metadata().find("model");
  return it == file_.metadata().end() ? "" : it->second;
}

std::string Capture::source() const {
  auto it = file_.metadata().find("source");
  return it == file_.metadata().end() ? "" : it->second;
}

double Capture::scale(const CaptureLayer& layer) const {
  return scale_ ? *scale_ : 1.0 / std::sqrt(double(layer.shape.dim));
}

std::vector<int32_t> Capture::token_ids() const {
  std::vector<int32_t> ids;
  if (!token_ids_) return ids;
  ids.resize(token_ids_->shape[0]);
  std::memcpy(ids.data(), token_ids_->data.data(), ids.size() * sizeof(int32_t));
  return ids;
}

std::string Capture::token_text(uint32_t position) const {
  if (!token_text_ || position >= tokens()) return "";
  int32_t begin = read_scalar<int32_t>(token_offsets_->data, position);
  int32_t end = read_scalar<int32_t>(token_offsets_->data, position + 1);
  return std::string(reinterpret_cast<const char*>(token_text_->data.data()) + begin, size_t(end - begin));
}

std::vector<float> to_float(DType dtype, std::span<const std::byte> bytes) {
  std::vector<float> values(bytes.size() / dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::f16: values[i] = half_to_float(read_scalar<uint16_t>(bytes, i)); break;
      case DType::bf16: values[i] = bf16_to_float(read_scalar<uint16_t>(bytes, i)); break;
      case DType::f32: values[i] = read_scalar<float>(bytes, i); break;
      default: throw std::logic_error("to_float: not an attention dtype");
    }
  }
  return values;
}

std::vector<std::byte> from_float(DType dtype, std::span<const float> values) {
  std::vector<std::byte> bytes(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case DType::f16: {
        uint16_t h = float_to_half(values[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
        break;
      }
      case DType::bf16: {
        uint16_t b = float_to_bf16(values[i]);
        std::memcpy(bytes.data() + 2 * i, &b, 2);
        break;
      }
      case DType::f32: std::memcpy(bytes.data() + 4 * i, &values[i], 4); break;
      default: throw std::logic_error("from_float: not an attention dtype");
    }
  }
  return bytes;
}

void write_capture(const std::filesystem::path& path, const CaptureData& capture) {
  std::map<std::string, std::string> metadata{{"format", kCaptureFormat}, {"model", capture.model}, {"source", capture.source}};
  if (capture.needle_span)
    metadata["needle_span"] = std::to_string(capture.needle_span->first) + "," + std::to_string(capture.needle_span->second);
  if (capture.scale) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", *capture.scale);
    metadata["scale"] = text;
  }
  std::vector<TensorToWrite> tensors;
  for (const CaptureLayerData& layer : capture.layers) {
    const AttentionShape& s = layer.shape;
    const std::string prefix = "layers." + std::to_string(layer.index) + ".";
    tensors.push_back({prefix + "q", layer.dtype, {s.heads, s.tokens, s.dim}, layer.q});
    tensors.push_back({prefix + "k", layer.dtype, {s.kv_heads, s.tokens, s.dim}, layer.k});
    tensors.push_back({prefix + "v", layer.dtype, {s.kv_heads, s.tokens, s.dim}, layer.v});
  }
  if (!capture.token_ids.empty())
    tensors.push_back({"tokens", DType::i32, {capture.token_ids.size()}, std::as_bytes(std::span(capture.token_ids))});
  std::string text;
  std::vector<int32_t> offsets;
  if (!capture.token_text.empty()) {
    offsets.push_back(0);
    for (const std::string& t : capture.token_text) {
      text += t;
      offsets.push_back(int32_t(text.size()));
    }
    tensors.push_back({"token_text", DType::u8, {text.size()}, std::as_bytes(std::span(text.data(), text.size()))});
    tensors.push_back({"token_offsets", DType::i32, {offsets.size()}, std::as_bytes(std::span(offsets))});
  }
  write_safetensors(path, tensors, metadata);
}

namespace {

// Exponent bits all ones: infinity or NaN, in each storage dtype.
bool non_finite(DType dtype, const std::byte* value) {
  if (dtype == DType::f32) {
    uint32_t bits;
    std::memcpy(&bits, value, 4);
    return (bits & 0x7f800000u) == 0x7f800000u;
  }
  uint16_t bits;
  std::memcpy(&bits, value, 2);
  return dtype == DType::f16 ? (bits & 0x7c00u) == 0x7c00u : (bits & 0x7f80u) == 0x7f80u;
}

}  // namespace

std::string NonFiniteValue::describe() const {
  return tensor + " has " + std::to_string(count) + " non-finite value" + (count == 1 ? "" : "s") +
         " (NaN or Inf), the first at head " + std::to_string(head) + ", token " + std::to_string(token) +
         ", channel " + std::to_string(channel);
}

std::optional<NonFiniteValue> first_non_finite(const Capture& capture) {
  for (const CaptureLayer& layer : capture.layers()) {
    const size_t element = dtype_size(layer.dtype);
    for (const auto& [name, tensor] : {std::pair{"q", layer.q}, std::pair{"k", layer.k}, std::pair{"v", layer.v}}) {
      const size_t n = tensor->data.size() / element;
      std::optional<NonFiniteValue> found;
      for (size_t i = 0; i < n; ++i) {
        if (!non_finite(layer.dtype, tensor->data.data() + i * element)) continue;
        if (!found) {
          const size_t per_head = size_t(layer.shape.tokens) * layer.shape.dim;
          found = NonFiniteValue{"layers." + std::to_string(layer.index) + "." + name, uint32_t(i / per_head),
                                 uint32_t(i % per_head / layer.shape.dim), uint32_t(i % layer.shape.dim), 0};
        }
        ++found->count;
      }
      if (found) return found;
    }
  }
  return std::nullopt;
}

void require_finite(const Capture& capture, bool allow) {
  if (allow) return;
  if (auto bad = first_non_finite(capture))
    throw InputError(bad->describe() + " (allowing non-finite values uses it anyway)", "allow_nonfinite");
}

}  // namespace kv
