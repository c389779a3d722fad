// ggml's block types (engine/formats/ggml_blocks.h): each layout's sizes as
// ggml-common.h states them, and each type's blocks written field by field
// by an encoder of this file (from the layouts' descriptions, not the
// decoder's code) from random quants and scales, then read back against the
// values those fields stand for, computed in double. The bit-for-bit check
// against ggml's own library is tests/ggml_blocks_oracle_test.sh.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "base/half.h"
#include "formats/ggml_blocks.h"
#include "random_capture.h"

namespace kv::formats {
namespace {

TEST(GgmlBlocks, LayoutsAreGgmls) {
  const struct {
    uint32_t number, elements, bytes;
    const char* name;
  } want[] = {{0, 1, 4, "F32"},      {1, 1, 2, "F16"},      {2, 32, 18, "Q4_0"},   {3, 32, 20, "Q4_1"},
              {6, 32, 22, "Q5_0"},   {7, 32, 24, "Q5_1"},   {8, 32, 34, "Q8_0"},   {10, 256, 84, "Q2_K"},
              {11, 256, 110, "Q3_K"}, {12, 256, 144, "Q4_K"}, {13, 256, 176, "Q5_K"}, {14, 256, 210, "Q6_K"},
              {30, 1, 2, "BF16"}};
  for (const auto& w : want) {
    const auto layout = block_layout(w.number);
    ASSERT_TRUE(layout) << w.name;
    EXPECT_EQ(layout->elements, w.elements) << w.name;
    EXPECT_EQ(layout->bytes, w.bytes) << w.name;
    EXPECT_STREQ(layout->name, w.name);
  }
  EXPECT_FALSE(block_layout(23));
  EXPECT_EQ(ggml_type_name(23), "IQ4_XS");
  EXPECT_EQ(ggml_type_name(999), "type 999");
}

TEST(GgmlBlocks, RefusesPartBlocks) {
  std::vector<std::byte> bytes(34);
  std::vector<float> out(31);
  EXPECT_THROW(dequantize(GgmlType::q8_0, bytes, out), std::invalid_argument);
  out.resize(32);
  EXPECT_NO_THROW(dequantize(GgmlType::q8_0, bytes, out));
  bytes.resize(33);
  EXPECT_THROW(dequantize(GgmlType::q8_0, bytes, out), std::invalid_argument);
}

// A block under construction: fields put at byte offsets.
struct Block {
  std::vector<uint8_t> b;
  explicit Block(size_t n) : b(n, 0) {}
  void half(size_t at, float v) {
    const uint16_t h = float_to_half(v);
    b[at] = uint8_t(h), b[at + 1] = uint8_t(h >> 8);
  }
  // Value `v` of `width` bits at bit `bit` of the bytes from `at` (little-endian bits).
  void bits(size_t at, size_t bit, uint32_t width, uint32_t v) {
    for (uint32_t i = 0; i < width; ++i)
      if ((v >> i) & 1) b[at + (bit + i) / 8] |= uint8_t(1u << ((bit + i) % 8));
  }
};

class GgmlBlocksTypes : public testing::Test {
 protected:
  // The seed first: members start in their order, and rng's is the seed's value.
  uint32_t seed_ = kv::test::test_seed();
  std::mt19937 rng{seed_};
  uint32_t draw(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); }
  float scale() { return half_to_float(float_to_half(std::uniform_real_distribution<float>(0.001f, 0.1f)(rng))); }

  // Blocks of `type` written by `encode` (which fills the block and the values it stands for), read back.
  void check(GgmlType type, const std::function<void(Block&, std::vector<double>&)>& encode) {
    SCOPED_TRACE("seed " + std::to_string(seed_));
    const BlockLayout layout = *block_layout(uint32_t(type));
    std::vector<std::byte> bytes;
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) {
      Block block(layout.bytes);
      std::vector<double> values(layout.elements);
      encode(block, values);
      for (uint8_t byte : block.b) bytes.push_back(std::byte(byte));
      want.insert(want.end(), values.begin(), values.end());
    }
    std::vector<float> got(want.size(), -12345.0f);
    dequantize(type, bytes, got);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-30) << layout.name << " value " << i;
  }
};

TEST_F(GgmlBlocksTypes, LegacyTypes) {
  // Q8_0: d, then 32 int8.
  check(GgmlType::q8_0, [&](Block& k, std::vector<double>& y) {
    const float d = scale();
    k.half(0, d);
    for (int j = 0; j < 32; ++j) {
      const int q = int(draw(256)) - 128;
      k.b[2 + j] = uint8_t(int8_t(q));
      y[j] = double(d) * q;
    }
  });
  // Q4_0 / Q4_1: value j in the low nibble of byte j, value j + 16 in its high one.
  for (bool with_min : {false, true})
    check(with_min ? GgmlType::q4_1 : GgmlType::q4_0, [&](Block& k, std::vector<double>& y) {
      const float d = scale(), m = with_min ? -scale() : 0.0f;
      k.half(0, d);
      if (with_min) k.half(2, m);
      const size_t qs = with_min ? 4 : 2;
      for (int j = 0; j < 32; ++j) {
        const uint32_t q = draw(16);
        k.bits(qs + j % 16, j < 16 ? 0 : 4, 4, q);
        y[j] = with_min ? double(q) * d + m : (double(q) - 8) * d;
      }
    });
  // Q5_0 / Q5_1: Q4's nibbles, the fifth bit of value j at bit j of a 32-bit qh before them.
  for (bool with_min : {false, true})
    check(with_min ? GgmlType::q5_1 : GgmlType::q5_0, [&](Block& k, std::vector<double>& y) {
      const float d = scale(), m = with_min ? -scale() : 0.0f;
      k.half(0, d);
      if (with_min) k.half(2, m);
      const size_t qh = with_min ? 4 : 2, qs = qh + 4;
      for (int j = 0; j < 32; ++j) {
        const uint32_t q = draw(32);
        k.bits(qs + j % 16, j < 16 ? 0 : 4, 4, q & 15);
        k.bits(qh, j, 1, q >> 4);
        y[j] = with_min ? double(q) * d + m : (double(q) - 16) * d;
      }
    });
}

// The K types: 256 values in 16 or 8 groups, each with its own scale.
TEST_F(GgmlBlocksTypes, KTypes) {
  // Q2_K: scales[16] (scale in the low nibble, minimum in the high), qs[64], d, dmin. Value
  // 128 h + 32 s + 16 g + l (half h, shift pair s, group g) is bits 2s of qs[32 h + 16 g + l],
  // in group 8 h + 2 s + g.
  check(GgmlType::q2_k, [&](Block& k, std::vector<double>& y) {
    const float d = scale(), dmin = scale();
    k.half(80, d), k.half(82, dmin);
    for (int group = 0; group < 16; ++group) k.b[group] = uint8_t(draw(256));
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, s = i % 128 / 32, g = i % 32 / 16, l = i % 16, group = 8 * h + 2 * s + g;
      const uint32_t q = draw(4);
      k.bits(16 + 32 * h + 16 * g + l, 2 * s, 2, q);
      y[i] = double(d) * (k.b[group] & 15) * q - double(dmin) * (k.b[group] >> 4);
    }
  });
  // Q3_K: hmask[32], qs[64], scales[12], d. Value i's low two bits as Q2_K's, its third
  // (set: no offset; clear: minus 4) at bit i / 32 of hmask[i % 32]; 16 6-bit scales (minus
  // 32): the low four bits of scale j at nibble j of bytes 0-7, the high two at bits 2 (j % 4)
  // of byte 8 + j / 4.
  check(GgmlType::q3_k, [&](Block& k, std::vector<double>& y) {
    const float d = scale();
    k.half(108, d);
    int scales[16];
    for (int j = 0; j < 16; ++j) {
      scales[j] = int(draw(64));
      k.bits(96 + j % 8, j < 8 ? 0 : 4, 4, uint32_t(scales[j]) & 15);
      k.bits(96 + 8 + j % 4, 2 * (j / 4), 2, uint32_t(scales[j]) >> 4);
    }
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, s = i % 128 / 32, g = i % 32 / 16, l = i % 16, group = 8 * h + 2 * s + g;
      const uint32_t low = draw(4), high = draw(2);
      k.bits(32 + 32 * h + 16 * g + l, 2 * s, 2, low);
      k.bits(i % 32, i / 32, 1, high);
      y[i] = double(d) * (scales[group] - 32) * (int(low) - (high ? 0 : 4));
    }
  });
  // Q4_K / Q5_K: d, dmin, scales[12] (8 6-bit scales and minima: for j < 4 the low six bits
  // of bytes j and j + 4; for j >= 4 the nibbles of byte j + 4 with the high two bits in bits
  // 6-7 of bytes j - 4 and j), [Q5_K: qh[32]: value i's fifth bit at bit i / 32 of byte
  // i % 32], qs[128]: value 64 c + 32 n + l at nibble n of byte 32 c + l, in group 2 c + n.
  for (bool five : {false, true})
    check(five ? GgmlType::q5_k : GgmlType::q4_k, [&](Block& k, std::vector<double>& y) {
      const float d = scale(), dmin = scale();
      k.half(0, d), k.half(2, dmin);
      uint32_t sc[8], mn[8];
      for (int j = 0; j < 8; ++j) {
        sc[j] = draw(64), mn[j] = draw(64);
        if (j < 4) {
          k.bits(4 + j, 0, 6, sc[j]);
          k.bits(4 + j + 4, 0, 6, mn[j]);
        } else {
          k.bits(4 + j + 4, 0, 4, sc[j] & 15);
          k.bits(4 + j + 4, 4, 4, mn[j] & 15);
          k.bits(4 + j - 4, 6, 2, sc[j] >> 4);
          k.bits(4 + j, 6, 2, mn[j] >> 4);
        }
      }
      const size_t qs = five ? 48 : 16;
      for (int i = 0; i < 256; ++i) {
        const int c = i / 64, n = i % 64 / 32, l = i % 32, group = 2 * c + n;
        const uint32_t q = draw(five ? 32 : 16);
        k.bits(qs + 32 * c + l, 4 * n, 4, q & 15);
        if (five) k.bits(16 + i % 32, i / 32, 1, q >> 4);
        y[i] = double(d) * sc[group] * q - double(dmin) * mn[group];
      }
    });
  // Q6_K: ql[128], qh[64], scales[16] (int8), d. Value 128 h + 32 p + l (p = 0..3): low four
  // bits at nibble p / 2 of ql[64 h + 32 (p % 2) + l], high two at bits 2 p of qh[32 h + l];
  // minus 32; scale 8 h + 2 p + l / 16.
  check(GgmlType::q6_k, [&](Block& k, std::vector<double>& y) {
    const float d = scale();
    k.half(208, d);
    for (int j = 0; j < 16; ++j) k.b[192 + j] = uint8_t(int8_t(int(draw(256)) - 128));
    for (int i = 0; i < 256; ++i) {
      const int h = i / 128, p = i % 128 / 32, l = i % 32;
      const uint32_t q = draw(64);
      k.bits(64 * h + 32 * (p % 2) + l, 4 * (p / 2), 4, q & 15);
      k.bits(128 + 32 * h + l, 2 * p, 2, q >> 4);
      y[i] = double(d) * int8_t(k.b[192 + 8 * h + 2 * p + l / 16]) * (int(q) - 32);
    }
  });
}

}  // namespace
}  // namespace kv::formats
