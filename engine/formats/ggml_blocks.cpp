#include "formats/ggml_blocks.h"

#include <cstring>
#include <stdexcept>
#include <utility>

#include "base/half.h"

namespace kv::formats {
namespace {

constexpr uint32_t kQK = 32, kQKK = 256;  // the blocks of the legacy types and of the K types

constexpr BlockLayout kLayouts[] = {
    {GgmlType::f32, "F32", 1, 4},      {GgmlType::f16, "F16", 1, 2},
    {GgmlType::q4_0, "Q4_0", kQK, 18},  {GgmlType::q4_1, "Q4_1", kQK, 20},
    {GgmlType::q5_0, "Q5_0", kQK, 22},  {GgmlType::q5_1, "Q5_1", kQK, 24},
    {GgmlType::q8_0, "Q8_0", kQK, 34},  {GgmlType::q2_k, "Q2_K", kQKK, 84},
    {GgmlType::q3_k, "Q3_K", kQKK, 110}, {GgmlType::q4_k, "Q4_K", kQKK, 144},
    {GgmlType::q5_k, "Q5_K", kQKK, 176}, {GgmlType::q6_k, "Q6_K", kQKK, 210},
    {GgmlType::bf16, "BF16", 1, 2},
};

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
float half_at(const uint8_t* p) { return half_to_float(u16(p)); }
uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian files on little-endian hosts
  return v;
}

// Q4_K's and Q5_K's j-th 6-bit scale and minimum of 12 packed bytes.
void scale_min_k4(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// One block of each type into y. Every expression keeps ggml's order of
// float operations (e.g. (d * scale) * q, not d * (scale * q)).
void block_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    y[j] = ((b[2 + j] & 0x0F) - 8) * d;
    y[j + 16] = ((b[2 + j] >> 4) - 8) * d;
  }
}
void block_q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = (b[4 + j] & 0x0F) * d + m;
    y[j + 16] = (b[4 + j] >> 4) * d + m;
  }
}
void block_q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint32_t qh = u32(b + 2);
  for (int j = 0; j < 16; ++j) {
    const uint8_t high0 = uint8_t(((qh >> j) << 4) & 0x10), high1 = uint8_t((qh >> (j + 12)) & 0x10);
    y[j] = (((b[6 + j] & 0x0F) | high0) - 16) * d;
    y[j + 16] = (((b[6 + j] >> 4) | high1) - 16) * d;
  }
}
void block_q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const uint32_t qh = u32(b + 4);
  for (int j = 0; j < 16; ++j) {
    const uint8_t high0 = uint8_t(((qh >> j) << 4) & 0x10), high1 = uint8_t((qh >> (j + 12)) & 0x10);
    y[j] = ((b[8 + j] & 0x0F) | high0) * d + m;
    y[j + 16] = ((b[8 + j] >> 4) | high1) * d + m;
  }
}
void block_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = int8_t(b[2 + j]) * d;
}
// Q2_K: scales[16] (a 4-bit scale and a 4-bit minimum each), qs[64] (2 bits a value), d, dmin.
void block_q2_k(const uint8_t* b, float* y) {
  const uint8_t *scales = b, *q = b + 16;
  const float d = half_at(b + 80), min = half_at(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * int8_t((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
    q += 32;
  }
}
// Q3_K: hmask[32] (each value's third bit), qs[64] (its low two), scales[12] (16 6-bit scales), d.
void block_q3_k(const uint8_t* b, float* y) {
  const uint8_t *hm = b, *q = b + 32;
  const float d_all = half_at(b + 108);
  uint32_t aux[4];
  std::memcpy(aux, b + 96, 12);
  const uint32_t low4 = 0x0f0f0f0f, low2 = 0x03030303, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & low4) | (((tmp >> 4) & low2) << 4);
  aux[3] = ((aux[1] >> 4) & low4) | (((tmp >> 6) & low2) << 4);
  aux[0] = (aux[0] & low4) | (((tmp >> 0) & low2) << 4);
  aux[1] = (aux[1] & low4) | (((tmp >> 2) & low2) << 4);
  int8_t scales[16];
  std::memcpy(scales, aux, 16);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2, m = uint8_t(m << 1)) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * (scales[is++] - 32);
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          *y++ = dl * (int8_t((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
    }
    q += 32;
  }
}
// Q4_K: d, dmin, scales[12] (8 6-bit scales and minima), qs[128] (4 bits a value).
void block_q4_k(const uint8_t* b, float* y) {
  const float d = half_at(b), min = half_at(b + 2);
  const uint8_t *scales = b + 4, *q = b + 16;
  for (int is = 0; is < 8; is += 2, q += 32) {
    uint8_t sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * sc, m1 = min * m;
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
  }
}
// Q5_K: Q4_K's fields, then qh[32] (each value's fifth bit) before qs[128].
void block_q5_k(const uint8_t* b, float* y) {
  const float d = half_at(b), min = half_at(b + 2);
  const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int is = 0; is < 8; is += 2, ql += 32, u1 = uint8_t(u1 << 2), u2 = uint8_t(u2 << 2)) {
    uint8_t sc, m;
    scale_min_k4(is, scales, sc, m);
    const float d1 = d * sc, m1 = min * m;
    scale_min_k4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
  }
}
// Q6_K: ql[128] (low 4 bits), qh[64] (high 2), scales[16] (int8), d.
void block_q6_k(const uint8_t* b, float* y) {
  const uint8_t *ql = b, *qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int8_t q1 = int8_t((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int8_t q2 = int8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int8_t q3 = int8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int8_t q4 = int8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
  }
}

}  // namespace

std::optional<BlockLayout> block_layout(uint32_t type) {
  for (const BlockLayout& l : kLayouts)
    if (uint32_t(l.type) == type) return l;
  return std::nullopt;
}

std::string ggml_type_name(uint32_t type) {
  if (const auto layout = block_layout(type)) return layout->name;
  // The other types llama.cpp writes, named so that a refusal says which.
  static const std::pair<uint32_t, const char*> kOthers[] = {
      {9, "Q8_1"},   {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
      {21, "IQ3_S"}, {22, "IQ2_S"},  {23, "IQ4_XS"},  {24, "I8"},     {25, "I16"},     {26, "I32"},   {27, "I64"},
      {28, "F64"},   {29, "IQ1_M"},  {34, "TQ1_0"},   {35, "TQ2_0"},  {39, "MXFP4"}};
  for (const auto& [number, name] : kOthers)
    if (number == type) return name;
  return "type " + std::to_string(type);
}

void dequantize(GgmlType type, std::span<const std::byte> bytes, std::span<float> out) {
  const auto layout = block_layout(uint32_t(type));
  if (!layout) throw std::invalid_argument("dequantize: unknown type");
  if (out.size() % layout->elements || bytes.size() != out.size() / layout->elements * layout->bytes)
    throw std::invalid_argument(std::string("dequantize: ") + layout->name + " takes whole blocks of " +
                                std::to_string(layout->elements) + " values in " + std::to_string(layout->bytes) + " bytes");
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  float* y = out.data();
  const size_t blocks = out.size() / layout->elements;
  void (*block)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case GgmlType::f32: std::memcpy(y, b, bytes.size()); return;
    case GgmlType::f16:
      for (size_t i = 0; i < blocks; ++i) y[i] = half_at(b + 2 * i);
      return;
    case GgmlType::bf16:
      for (size_t i = 0; i < blocks; ++i) y[i] = bf16_to_float(u16(b + 2 * i));
      return;
    case GgmlType::q4_0: block = block_q4_0; break;
    case GgmlType::q4_1: block = block_q4_1; break;
    case GgmlType::q5_0: block = block_q5_0; break;
    case GgmlType::q5_1: block = block_q5_1; break;
    case GgmlType::q8_0: block = block_q8_0; break;
    case GgmlType::q2_k: block = block_q2_k; break;
    case GgmlType::q3_k: block = block_q3_k; break;
    case GgmlType::q4_k: block = block_q4_k; break;
    case GgmlType::q5_k: block = block_q5_k; break;
    case GgmlType::q6_k: block = block_q6_k; break;
  }
  for (size_t i = 0; i < blocks; ++i) block(b + i * layout->bytes, y + i * layout->elements);
}

}  // namespace kv::formats
