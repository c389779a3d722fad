#include "model/random_weights.h"

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

}  // namespace kv::model
