// fp16 / bf16 conversions, exhaustively over every 16-bit pattern.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "base/half.h"

namespace kv {
namespace {

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = half_to_float(uint16_t(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    EXPECT_EQ(float_to_half(f), bits) << std::hex << bits;
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 2048)), 1.0f);               // tie, down to even
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie, up to even
  EXPECT_EQ(half_to_float(float_to_half(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(65520.0f))));
  EXPECT_EQ(half_to_float(float_to_half(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(float_to_half(std::ldexp(1.0f, -26))), 0.0f);
}

TEST(BFloat16, EveryValueRoundTripsAndRounding) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = bf16_to_float(uint16_t(bits));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f), bits) << std::hex << bits;
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 1.0f / 256)), 1.0f);  // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

}  // namespace
}  // namespace kv
