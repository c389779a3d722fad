// kvscope's dequantization (engine/formats/ggml_blocks.cpp) against ggml's
// own, bit for bit: rows of random values quantized by ggml's library
// (ggml_quantize_chunk), then read back by both. Then kvscope's quantizer
// (engine/formats/ggml_quantize.cpp): its blocks read back by both, bit for
// bit, and its RMS error on N(0, 1) rows against ggml's quantizer's, which
// searches for its scales where kvscope's takes them from each range (no
// more than kWorst times ggml's). Built and run by
// tests/ggml_blocks_oracle_test.sh against the llama.cpp peer's cached
// libraries.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "formats/ggml_blocks.h"
#include "formats/ggml_quantize.h"
#include "ggml.h"

namespace {

// The most kvscope's quantizer's RMS error on N(0, 1) values may be of ggml's (measured
// over runs: 1.00 on the legacy types, 1.02-1.10 on the K types).
constexpr double kWorst = 1.15;

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
  return std::sqrt(sum / double(x.size()));
}

}  // namespace

int main() {
  using kv::formats::GgmlType;
  const GgmlType types[] = {GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0,
                            GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k,
                            GgmlType::f16, GgmlType::bf16};
  std::mt19937 rng(std::random_device{}());
  const int64_t rows = 16, row = 1024;
  int failures = 0;
  for (GgmlType type : types) {
    const auto ggml_type_of = static_cast<ggml_type>(uint32_t(type));
    const kv::formats::BlockLayout layout = *kv::formats::block_layout(uint32_t(type));
    // Values of several scales and signs, a row of zeros and one of a constant among them.
    std::vector<float> x(rows * row);
    for (int64_t r = 0; r < rows; ++r) {
      std::normal_distribution<float> normal(r % 3 == 0 ? 0.5f : 0.0f, r % 2 ? 0.01f : 2.0f);
      for (int64_t i = 0; i < row; ++i) x[r * row + i] = r == 5 ? 0.0f : r == 6 ? 0.25f : normal(rng);
    }
    const size_t bytes = size_t(rows) * row / layout.elements * layout.bytes;
    std::vector<std::byte> blocks(bytes);
    if (ggml_quantize_chunk(ggml_type_of, x.data(), blocks.data(), 0, rows, row, nullptr) != bytes) {
      std::printf("FAIL %s: ggml wrote another size than %zu bytes\n", layout.name, bytes);
      ++failures;
      continue;
    }
    std::vector<float> theirs(x.size()), ours(x.size());
    ggml_get_type_traits(ggml_type_of)->to_float(blocks.data(), theirs.data(), int64_t(x.size()));
    kv::formats::dequantize(type, blocks, ours);
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += std::memcmp(&theirs[i], &ours[i], 4) != 0;
    std::printf("%s %s: %zu of %zu values differ from ggml's\n", differ ? "FAIL" : "ok", layout.name, differ, x.size());
    failures += differ != 0;

    const std::vector<std::byte> mine = kv::formats::quantize(type, x);
    ggml_get_type_traits(ggml_type_of)->to_float(mine.data(), theirs.data(), int64_t(x.size()));
    kv::formats::dequantize(type, mine, ours);
    differ = 0;
    for (size_t i = 0; i < x.size(); ++i) differ += std::memcmp(&theirs[i], &ours[i], 4) != 0;
    std::printf("%s %s: kvscope's blocks, %zu of %zu values read otherwise by ggml\n", differ ? "FAIL" : "ok",
                layout.name, differ, x.size());
    failures += differ != 0;

    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : x) v = normal(rng);
    ggml_quantize_chunk(ggml_type_of, x.data(), blocks.data(), 0, rows, row, nullptr);
    kv::formats::dequantize(type, blocks, theirs);
    kv::formats::dequantize(type, kv::formats::quantize(type, x), ours);
    const double ggml_error = rms_error(x, theirs), error = rms_error(x, ours);
    const bool worse = error > kWorst * ggml_error;
    std::printf("%s %s: RMS error on N(0, 1) %.5f, ggml's %.5f (x%.3f)\n", worse ? "FAIL" : "ok", layout.name, error,
                ggml_error, ggml_error > 0 ? error / ggml_error : 1.0);
    failures += worse;
  }
  return failures ? 1 : 0;
}
