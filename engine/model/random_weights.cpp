#include "model/random_weights.h"

#include <stdexcept>

#include "io/capture.h"

namespace kv::model {
namespace {

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

}  // namespace

uint32_t random_weight_key(uint32_t seed, uint32_t index) { return mix32(seed) ^ (index * 0x9e3779b9u); }

std::vector<std::byte> random_weight_bytes(DType dtype, uint32_t key, size_t count) {
  std::vector<float> values(count);
  const uint32_t mixed = mix32(key);
  for (size_t i = 0; i < count; ++i) values[i] = float(int(mix32(uint32_t(i) ^ mixed) >> 24) - 128) * (1.0f / 4096.0f);
  return from_float(dtype, values);
}

std::vector<std::byte> random_block_bytes(formats::GgmlType type, uint32_t key, size_t bytes) {
  struct Scales {
    uint32_t first, second;     // byte offsets of the fp16 scales in a block (second: 999 where none)
    uint16_t bits, second_bits;
  };
  const Scales scales = [&]() -> Scales {
    switch (type) {
      case formats::GgmlType::q8_0: return {0, 999, 0x0C00, 0};
      case formats::GgmlType::q4_0: return {0, 999, 0x1C00, 0};
      case formats::GgmlType::q5_0: return {0, 999, 0x1800, 0};
      case formats::GgmlType::q4_1: return {0, 2, 0x1C00, 0xA800};
      case formats::GgmlType::q5_1: return {0, 2, 0x1800, 0xA800};
      case formats::GgmlType::q2_k: return {80, 82, 0x1400, 0x1400};
      case formats::GgmlType::q3_k: return {108, 999, 0x0C00, 0};
      case formats::GgmlType::q4_k:
      case formats::GgmlType::q5_k: return {0, 2, 0x0400, 0x0400};
      case formats::GgmlType::q6_k: return {208, 999, 0x0400, 0};
      default: throw std::invalid_argument("random_block_bytes takes a block type");
    }
  }();
  const uint32_t block = formats::block_layout(uint32_t(type))->bytes, mixed = mix32(key);
  std::vector<std::byte> out(bytes);
  for (size_t w = 0; w < bytes / 4; ++w) {
    const uint32_t word = mix32(uint32_t(w) ^ mixed);
    for (size_t b = 0; b < 4; ++b) {
      const uint32_t o = uint32_t((4 * w + b) % block);
      uint32_t value = (word >> (8 * b)) & 0xff;
      if (o - scales.first < 2) value = (scales.bits >> (8 * (o - scales.first))) & 0xff;
      if (o - scales.second < 2) value = (scales.second_bits >> (8 * (o - scales.second))) & 0xff;
      out[4 * w + b] = std::byte(value);
    }
  }
  return out;
}

}  // namespace kv::model
