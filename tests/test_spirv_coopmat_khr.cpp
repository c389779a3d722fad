// The KHR cooperative-matrix modules that shaders/spirv_coopmat_khr.cpp
// rewrites from glslang's NV ones, checked on the CPU: no device here or in CI
// can run them (Debian 12's SPIRV-Tools and validation layer predate the
// extension), and a malformed module crashed the H100's driver while it was
// written (docs/perf-experiments.md). What a product needs is checked: A
// operands typed MatrixA, B operands MatrixB, accumulators and results
// MatrixAccumulator; nothing NV left; every instruction whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "attention_chunk_khr.spv.h"
#include "quoka_key_scores_fragments_khr.spv.h"
#include "quoka_key_scores_matrix_khr.spv.h"
#include "sparse_attention_chunk_khr.spv.h"

namespace {

constexpr uint32_t kOpCapability = 17, kOpVariable = 59, kOpLoad = 61;
constexpr uint32_t kOpTypeMatrixKHR = 4456, kOpLoadKHR = 4457, kOpMulAddKHR = 4459;
constexpr uint32_t kFirstNvOp = 5358, kLastNvOp = 5362, kCapabilityNV = 5357, kCapabilityKHR = 6022;
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;

struct Instruction {
  uint32_t op;
  std::vector<uint32_t> operands;
};

std::vector<Instruction> instructions(std::span<const uint32_t> words) {
  std::vector<Instruction> code;
  for (size_t at = 5; at < words.size();) {
    const uint32_t count = words[at] >> 16;
    EXPECT_GT(count, 0u);
    EXPECT_LE(at + count, words.size());
    if (count == 0 || at + count > words.size()) break;
    code.push_back({words[at] & 0xffffu, {words.begin() + at + 1, words.begin() + at + count}});
    at += count;
  }
  return code;
}

void check_module(const std::string& name, std::span<const uint32_t> words) {
  SCOPED_TRACE(name);
  ASSERT_GT(words.size(), 5u);
  ASSERT_EQ(words[0], 0x07230203u);
  const uint32_t bound = words[3];
  const std::vector<Instruction> code = instructions(words);
  std::map<uint32_t, uint32_t> constant, matrix_use, value_type;
  bool khr_capability = false;
  size_t products = 0;
  for (const Instruction& in : code) {
    EXPECT_FALSE(in.op >= kFirstNvOp && in.op <= kLastNvOp) << "NV instruction " << in.op;
    if (in.op == kOpCapability) {
      EXPECT_NE(in.operands[0], kCapabilityNV);
      khr_capability |= in.operands[0] == kCapabilityKHR;
    }
    if (in.op == 43) constant[in.operands[1]] = in.operands[2];  // OpConstant (32-bit)
    if (in.op == kOpTypeMatrixKHR) {
      ASSERT_EQ(in.operands.size(), 6u);  // result, component, scope, rows, columns, use
      ASSERT_TRUE(constant.count(in.operands[5])) << "use declared after its type";
      matrix_use[in.operands[0]] = constant[in.operands[5]];
    }
    if (in.op == kOpVariable) {
      EXPECT_GE(in.operands.size(), 3u) << "a variable without its result";
    }
    if (in.op == kOpLoad || in.op == kOpLoadKHR || in.op == kOpMulAddKHR) {
      EXPECT_LT(in.operands[1], bound);
      value_type[in.operands[1]] = in.operands[0];
    }
    if (in.op == kOpMulAddKHR) {
      ++products;
      ASSERT_GE(in.operands.size(), 5u);  // type, result, A, B, C
      EXPECT_EQ(matrix_use[in.operands[0]], kUseAccumulator);
      EXPECT_EQ(matrix_use[value_type[in.operands[2]]], kUseA);
      EXPECT_EQ(matrix_use[value_type[in.operands[3]]], kUseB);
      EXPECT_EQ(matrix_use[value_type[in.operands[4]]], kUseAccumulator);
    }
  }
  EXPECT_TRUE(khr_capability);
  EXPECT_GT(products, 0u);
}

TEST(SpirvCoopmatKhr, OperandsTypedByUse) {
  check_module("attention_chunk", attention_chunk_khr_spirv);
  check_module("sparse_attention_chunk", sparse_attention_chunk_khr_spirv);
  check_module("quoka_key_scores_fragments", quoka_key_scores_fragments_khr_spirv);
  check_module("quoka_key_scores_matrix", quoka_key_scores_matrix_khr_spirv);
}

}  // namespace
