// quantize (engine/formats/ggml_quantize.h) through ggml_blocks.h's
// dequantize, for every block type, on fresh random rows (Gaussian, uniform,
// with outliers, of any scale and offset, zero, constant, tiny and huge):
//  - each value comes back as the nearest point of its sub-block's grid, the
//    values its quants can take under the scales as stored (read off blocks
//    whose quant bytes are set to the first and to the last quant);
//  - that grid reaches the sub-block's extremes but for what the rounding of
//    the stored scales allows (and, where the grid is Q4_0's -8..7 times a
//    scale, a step on its short side);
//  - the RMS error on N(0, 1) values is under the type's figure;
//  - quantize reproduces its own output exactly.
// Comparing RMS errors with ggml's own quantizer is tests/ggml_blocks_oracle_test.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/half.h"
#include "formats/ggml_blocks.h"
#include "formats/ggml_quantize.h"
#include "random_capture.h"

namespace kv::formats {
namespace {

float half_at(const uint8_t* p) { return half_to_float(uint16_t(p[0] | (p[1] << 8))); }
// The gap between fp16 values at |v|: a stored scale is within half of it of the
// value it was rounded from (within all of it where rounded down).
double gap(float v) {
  int e = 0;
  std::frexp(std::abs(v), &e);
  return v == 0 ? std::ldexp(1.0, -24) : std::ldexp(1.0, std::max(e - 11, -24));
}

struct Slack {
  double below, above;  // how far a sub-block's extremes may lie past its grid's first and last values
};

struct TypeSpec {
  GgmlType type;
  std::vector<std::pair<uint32_t, uint32_t>> quants;  // [begin, end) bytes of a block holding its quants
  uint8_t first = 0x00, last = 0xFF;                  // quant bytes filled so: each value's first / last quant
  int levels;                                         // quants a value may take
  // A grid of -q..q-1 steps with the extreme on -q: the sub-block's opposite extreme may lie
  // a step past the short end.
  bool short_end;
  double gaussian_rms;  // the most RMS error on N(0, 1) values (each type measures about 5 % under it)
  // The slack from a block's stored scales: the rounding of d (and m, dmin) and of the
  // sub-block scales against them, times the quants it spreads over.
  std::function<Slack(const uint8_t*)> slack;
};

// How far a scale d stored as fp16 may lie from the scale it stands for: the nearest half,
// or among the subnormals the one below it where the nearest would take the extreme short
// of its quant (a gap further).
double rounding(float d) { return gap(d) * (std::abs(d) < 0x1p-14f ? 1.5 : 0.5); }

// Each scale's rounding times the quants it spreads over. Q4_1's m is rounded up, a K
// type's dmin down and each minimum's quant down: the grid starts at or above the minimum.
// A K type's sub-block scale is the nearest quant or one below (so that the extreme still
// reaches the grid's end), or the largest, where d's rounding takes the scale past it.
Slack symmetric(float d, int q) { return {q * rounding(d), q * rounding(d)}; }
Slack with_min(float d, float m, int q) { return {gap(m), q * rounding(d)}; }
Slack k_symmetric(float d, int q, int scmax) {
  const double s = q * (std::abs(d) + scmax * rounding(d));
  return {s, s};
}
Slack k_with_min(float d, float dmin, int q, int scmax) {
  return {dmin + scmax * gap(dmin), q * (d + scmax * rounding(d))};
}

// Q8_0's grid is -127..127: quantize leaves -128 unused.
const std::vector<TypeSpec>& specs() {
  static const std::vector<TypeSpec> all = {
      {GgmlType::q8_0, {{2, 34}}, 0x81, 0x7F, 255, false, 0.0057,
       [](const uint8_t* b) { return symmetric(half_at(b), 127); }},
      {GgmlType::q4_0, {{2, 18}}, 0x00, 0xFF, 16, true, 0.091,
       [](const uint8_t* b) { return symmetric(half_at(b), 8); }},
      {GgmlType::q5_0, {{2, 22}}, 0x00, 0xFF, 32, true, 0.045,
       [](const uint8_t* b) { return symmetric(half_at(b), 16); }},
      {GgmlType::q4_1, {{4, 20}}, 0x00, 0xFF, 16, false, 0.083,
       [](const uint8_t* b) { return with_min(half_at(b), half_at(b + 2), 15); }},
      {GgmlType::q5_1, {{4, 24}}, 0x00, 0xFF, 32, false, 0.040,
       [](const uint8_t* b) { return with_min(half_at(b), half_at(b + 2), 31); }},
      {GgmlType::q2_k, {{16, 80}}, 0x00, 0xFF, 4, false, 0.34,
       [](const uint8_t* b) { return k_with_min(half_at(b + 80), half_at(b + 82), 3, 15); }},
      {GgmlType::q3_k, {{0, 96}}, 0x00, 0xFF, 8, true, 0.163,
       [](const uint8_t* b) { return k_symmetric(half_at(b + 108), 4, 31); }},
      {GgmlType::q4_k, {{16, 144}}, 0x00, 0xFF, 16, false, 0.082,
       [](const uint8_t* b) { return k_with_min(half_at(b), half_at(b + 2), 15, 63); }},
      {GgmlType::q5_k, {{16, 176}}, 0x00, 0xFF, 32, false, 0.040,
       [](const uint8_t* b) { return k_with_min(half_at(b), half_at(b + 2), 31, 63); }},
      {GgmlType::q6_k, {{0, 192}}, 0x00, 0xFF, 64, true, 0.0198,
       [](const uint8_t* b) { return k_symmetric(half_at(b + 208), 32, 127); }},
  };
  return all;
}

std::vector<float> dequantized(GgmlType type, const std::vector<std::byte>& bytes, size_t n) {
  std::vector<float> y(n);
  dequantize(type, bytes, y);
  return y;
}

// The values every quant of the blocks set to `fill` stands for.
std::vector<float> filled(const TypeSpec& t, std::vector<std::byte> bytes, uint8_t fill, size_t n) {
  const uint32_t block = block_layout(uint32_t(t.type))->bytes;
  for (size_t at = 0; at < bytes.size(); at += block)
    for (const auto& [begin, end] : t.quants)
      for (uint32_t i = begin; i < end; ++i) bytes[at + i] = std::byte(fill);
  return dequantized(t.type, bytes, n);
}

class GgmlQuantize : public testing::Test {
 protected:
  uint32_t seed_ = kv::test::test_seed();
  std::mt19937 rng{seed_};
  static constexpr size_t kRow = 4096, kRows = 8;  // 16 K blocks or 128 legacy blocks a row

  std::vector<float> rows(const std::function<float(size_t)>& value) {
    std::vector<float> x(kRow * kRows);
    for (size_t i = 0; i < x.size(); ++i) x[i] = value(i);
    return x;
  }

  // The checks of the file's comment on `x`; returns the RMS error.
  double check(const TypeSpec& t, const std::vector<float>& x, const std::string& kind) {
    const BlockLayout layout = *block_layout(uint32_t(t.type));
    SCOPED_TRACE(std::string(layout.name) + ", " + kind + " rows, seed " + std::to_string(seed_));
    const std::vector<std::byte> bytes = quantize(t.type, x);
    EXPECT_EQ(bytes.size(), x.size() / layout.elements * layout.bytes);
    const std::vector<float> y = dequantized(t.type, bytes, x.size());
    const std::vector<float> a = filled(t, bytes, t.first, x.size()), b = filled(t, bytes, t.last, x.size());
    double sum = 0;
    bool reported = false;  // the first failing value of a row, not thousands
    for (size_t i = 0; i < x.size(); ++i) {
      const double lo = std::min(a[i], b[i]), hi = std::max(a[i], b[i]), step = (hi - lo) / (t.levels - 1);
      const double err = std::abs(double(y[i]) - x[i]);
      const double below = std::max(0.0, lo - x[i]), above = std::max(0.0, x[i] - hi);
      const Slack slack = t.slack(reinterpret_cast<const uint8_t*>(bytes.data()) + i / layout.elements * layout.bytes);
      const double short_low = t.short_end && std::abs(lo) < std::abs(hi) ? step : 0;
      const double short_high = t.short_end && std::abs(hi) < std::abs(lo) ? step : 0;
      const double tolerance = 4 * FLT_EPSILON * (std::abs(x[i]) + std::abs(lo) + std::abs(hi));
      sum += err * err;
      const bool on_grid = y[i] >= lo - tolerance && y[i] <= hi + tolerance;
      if (!reported && (!on_grid || err > step / 2 + below + above + tolerance ||
                        below > slack.below + short_low + tolerance || above > slack.above + short_high + tolerance)) {
        reported = true;
        ADD_FAILURE() << "value " << i << ": " << x[i] << " comes back as " << y[i] << ", on a grid of " << lo
                      << " to " << hi << " in steps of " << step << "; past its ends by " << below << " / " << above
                      << ", where the scales allow " << slack.below + short_low << " / " << slack.above + short_high;
      }
    }
    const std::vector<float> again = dequantized(t.type, quantize(t.type, y), y.size());
    for (size_t i = 0; i < y.size(); ++i)
      if (again[i] != y[i]) {
        ADD_FAILURE() << "quantized again, value " << i << " moves from " << y[i] << " to " << again[i];
        break;
      }
    return std::sqrt(sum / double(x.size()));
  }
};

TEST_F(GgmlQuantize, GaussianRows) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const TypeSpec& t : specs()) {
    const double rms = check(t, rows([&](size_t) { return normal(rng); }), "N(0, 1)");
    EXPECT_LT(rms, t.gaussian_rms) << block_layout(uint32_t(t.type))->name << ", seed " << seed_;
  }
}

// Each row with its own scale (10^-3 to 10^3) and offset (up to 3 of that scale either way).
TEST_F(GgmlQuantize, ScaledAndOffsetRows) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> exponent(-3, 3), offset(-3, 3);
  for (const TypeSpec& t : specs()) {
    double scale[kRows], mean[kRows];
    for (size_t r = 0; r < kRows; ++r) scale[r] = std::pow(10.0, exponent(rng)), mean[r] = scale[r] * offset(rng);
    check(t, rows([&](size_t i) { return float(mean[i / kRow] + scale[i / kRow] * normal(rng)); }), "scaled Gaussian");
  }
}

// Uniform on [-1, 1], and on [0, 1] (where a K type's minimum is 0).
TEST_F(GgmlQuantize, UniformRows) {
  std::uniform_real_distribution<float> symmetric(-1, 1), positive(0, 1);
  for (const TypeSpec& t : specs()) {
    check(t, rows([&](size_t) { return symmetric(rng); }), "U(-1, 1)");
    check(t, rows([&](size_t) { return positive(rng); }), "U(0, 1)");
  }
}

// One value in 100 is 30 times larger: the other sub-blocks of its block get small scales.
TEST_F(GgmlQuantize, RowsWithOutliers) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> hundred(0, 99);
  for (const TypeSpec& t : specs())
    check(t, rows([&](size_t) { return normal(rng) * (hundred(rng) == 0 ? 30.0f : 1.0f); }), "outlier");
}

// Every run of 16 values (a Q2_K, Q3_K or Q6_K sub-block, half of another type's) its own:
// Gaussian of any scale from 10^-4 to 10 and offset, uniform, constant or zero. Within a
// block, scales far apart: small sub-block scale quants, coarse against theirs.
TEST_F(GgmlQuantize, MixedSubBlocks) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(-1, 1), exponent(-4, 1);
  std::uniform_int_distribution<int> kind(0, 3);
  for (const TypeSpec& t : specs()) {
    std::vector<float> x(kRow * kRows);
    for (size_t run = 0; run < x.size(); run += 16) {
      const int k = kind(rng);
      const float scale = std::pow(10.0f, exponent(rng)), offset = scale * 3 * unit(rng), c = unit(rng);
      for (size_t i = run; i < run + 16; ++i)
        x[i] = k == 0 ? offset + scale * normal(rng) : k == 1 ? scale * unit(rng) : k == 2 ? c : 0.0f;
    }
    check(t, x, "mixed");
  }
}

// Zeros come back as zeros; a constant row and a row of constant blocks (each its own
// constant) within the bounds.
TEST_F(GgmlQuantize, ZeroAndConstantRows) {
  std::uniform_real_distribution<float> value(-5, 5);
  for (const TypeSpec& t : specs()) {
    const std::vector<float> zeros(kRow, 0.0f);
    EXPECT_EQ(dequantized(t.type, quantize(t.type, zeros), kRow), zeros) << block_layout(uint32_t(t.type))->name;
    const float c = value(rng);
    check(t, rows([&](size_t) { return c; }), "constant");
    const uint32_t elements = block_layout(uint32_t(t.type))->elements;
    std::vector<float> per_block(kRow * kRows / elements);
    for (float& v : per_block) v = value(rng);
    check(t, rows([&](size_t i) { return per_block[i / elements]; }), "constant-block");
  }
}

// Magnitudes where the scales are fp16 subnormals (1e-4, 1e-6) or round to zero (1e-30),
// and large ones (1e4: Q4_1's m near fp16's largest value); past what fp16 scales reach,
// values are clamped, but come back finite.
TEST_F(GgmlQuantize, TinyAndHugeMagnitudes) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const TypeSpec& t : specs()) {
    for (const float scale : {1e-4f, 1e-6f, 1e-30f, 1e4f}) {
      char name[32];
      std::snprintf(name, sizeof name, "N(0, %g)", scale);
      check(t, rows([&](size_t) { return scale * normal(rng); }), name);
    }
    const std::vector<float> x =
        rows([&](size_t i) { return i % 3 ? (i % 2 ? FLT_MAX : -FLT_MAX) : 1e30f * normal(rng); });
    for (float y : dequantized(t.type, quantize(t.type, x), x.size()))
      ASSERT_TRUE(std::isfinite(y)) << block_layout(uint32_t(t.type))->name;
  }
}

TEST(GgmlQuantizeRefuses, PartBlocksAndValuesThatAreNotFinite) {
  std::vector<float> x(31, 1.0f);
  EXPECT_THROW(quantize(GgmlType::q8_0, x), std::invalid_argument);
  x.resize(256);
  EXPECT_THROW(quantize(GgmlType::q6_k, std::span(x).first(255)), std::invalid_argument);
  EXPECT_NO_THROW(quantize(GgmlType::q6_k, x));
  x[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(quantize(GgmlType::q4_0, x), std::invalid_argument);
  x[7] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(quantize(GgmlType::f16, x), std::invalid_argument);
}

// The plain types: F32 as it is, F16 and BF16 rounded to nearest, held to their largest
// finite values (65504, about 3.39e38).
TEST(GgmlQuantizePlain, RoundsToNearest) {
  const std::vector<float> x{0.0f, -1.0f, 1.0f / 3, 1e-6f, 70000.0f, -FLT_MAX, 3.0e38f};
  EXPECT_EQ(dequantized(GgmlType::f32, quantize(GgmlType::f32, x), x.size()), x);
  const std::vector<float> h = dequantized(GgmlType::f16, quantize(GgmlType::f16, x), x.size());
  const std::vector<float> b = dequantized(GgmlType::bf16, quantize(GgmlType::bf16, x), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(h[i], half_to_float(float_to_half(std::clamp(x[i], -65504.0f, 65504.0f)))) << x[i];
    const float nearest = bf16_to_float(float_to_bf16(x[i]));
    EXPECT_EQ(b[i], std::isinf(nearest) ? std::copysign(bf16_to_float(0x7f7f), x[i]) : nearest) << x[i];
  }
}

}  // namespace
}  // namespace kv::formats
