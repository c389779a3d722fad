// dense_partial (the tile kernel for chunks, attention_decode for one query
// where the device has subgroup shuffles) + dense_merge against the float64 reference on fresh random inputs.
#include <cmath>
#include <random>

#include "kernels/attention.h"
#include "kernels/fragment_layout.h"
#include "kernels/kernel_choice.h"
#include "reference/dense_attention.h"
#include "random_capture.h"
#include "test_device.h"

namespace kv {
namespace {

struct DenseCase {
  uint32_t heads, kv_heads, tokens, dim;
  DType dtype;
  bool prefill;       // labels the case: a chunk of queries, or decode probes
  uint32_t queries;   // consecutive positions
  uint32_t first;     // first query position
  bool gpu_only = false;  // sized for tensor cores: too slow for lavapipe's CPU (and the float64 reference beside it)
};

std::string case_name(const ::testing::TestParamInfo<DenseCase>& info) {
  const DenseCase& c = info.param;
  return std::string(c.prefill ? "prefill" : "decode") + "_H" + std::to_string(c.heads) + "_G" +
         std::to_string(c.kv_heads) + "_T" + std::to_string(c.tokens) + "_d" + std::to_string(c.dim) + "_" +
         dtype_name(c.dtype) + "_q" + std::to_string(c.queries) + "_at" + std::to_string(c.first);
}

// Values as the GPU sees them: rounded to the storage dtype.
std::vector<float> random_values(std::mt19937& rng, size_t n, DType dtype, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(n);
  for (float& v : values) v = normal(rng);
  return to_float(dtype, from_float(dtype, values));
}

// Outputs and log-sum-exps of a kernel's rows against the float64 reference's.
void expect_matches(const AttentionShape& shape, const reference::DenseResult& expected, const std::vector<float>& output,
                    const std::vector<float>& lse) {
  for (size_t row = 0; row < expected.log_sum_exp.size(); ++row) {
    double difference = 0, norm = 0;
    for (size_t ch = 0; ch < shape.dim; ++ch) {
      const float got = output[row * shape.dim + ch];
      ASSERT_TRUE(std::isfinite(got)) << "row " << row << " channel " << ch << " was not written";
      const double want = expected.output[row * shape.dim + ch];
      difference += (got - want) * (got - want);
      norm += want * want;
    }
    EXPECT_LE(std::sqrt(difference / norm), 1e-3) << "row " << row;
    ASSERT_TRUE(std::isfinite(lse[row])) << "row " << row;
    EXPECT_NEAR(lse[row], expected.log_sum_exp[row], 1e-3 * std::max(1.0, std::fabs(expected.log_sum_exp[row])))
        << "row " << row;
  }
}

// Outputs and log-sum-exps of `positions`' queries against float64 dense causal attention.
void expect_matches_reference(const AttentionShape& shape, double scale, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<uint32_t>& positions, const std::vector<float>& output,
                              const std::vector<float>& lse) {
  expect_matches(shape, reference::dense_attention(shape, scale, q, k, v, positions), output, lse);
}

class DenseAttentionTest : public test::GpuTest, public ::testing::WithParamInterface<DenseCase> {};

TEST_P(DenseAttentionTest, MatchesFloat64Reference) {
  const DenseCase& c = GetParam();
  if (c.gpu_only && test::device().info().type == "cpu") GTEST_SKIP() << "a tensor-core case, too slow on a CPU device";
  const AttentionShape shape{c.heads, c.kv_heads, c.tokens, c.dim};
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Large logits (scale 2) make the softmax peaked, which exercises the online rescaling.
  std::vector<float> k = random_values(rng, size_t(c.kv_heads) * c.tokens * c.dim, c.dtype, 2.0f);
  std::vector<float> v = random_values(rng, size_t(c.kv_heads) * c.tokens * c.dim, c.dtype, 1.0f);
  std::vector<float> q = random_values(rng, size_t(c.heads) * c.queries * c.dim, c.dtype, 2.0f);

  std::vector<uint32_t> positions;
  for (uint32_t i = c.first; i < c.first + c.queries; ++i) positions.push_back(i);
  const double scale = 1.0 / std::sqrt(double(c.dim));

  vk::Device& device = test::device();
  GpuLayer layer(device, shape, c.dtype, scale, from_float(c.dtype, k), from_float(c.dtype, v));
  vk::Buffer queries(device, q.size() * dtype_size(c.dtype));
  queries.upload(from_float(c.dtype, q));
  const AttentionRequest request{&queries, c.queries, c.first};
  // As the engine chooses, then on VK_NV_cooperative_matrix2 where the device has it.
  const bool has_cm2 = device.cooperative_matrix2() && cooperative_matrix2_built();
  for (Attention::ChunkKernel choice : {Attention::ChunkKernel::device_default, Attention::ChunkKernel::cooperative_matrix2}) {
    if (choice == Attention::ChunkKernel::cooperative_matrix2 && !has_cm2) continue;
    SCOPED_TRACE(choice == Attention::ChunkKernel::cooperative_matrix2 ? "cooperative matrix 2" : "device default");
    Attention dense(device, shape, c.dtype, Attention::Keys::dense, c.queries, Attention::TileOutputs::device_default, choice);
    const bool cm2 = (choice == Attention::ChunkKernel::cooperative_matrix2 ||
                      matrix_kernels(device) == MatrixKernels::cooperative_matrix2) &&
                     c.dtype == DType::f16 && c.dim % 16 == 0 && c.dim <= 256;
    EXPECT_EQ(dense.tiling(request).decode_kernel, c.queries == 1 && device.info().subgroup_shuffle);
    EXPECT_EQ(dense.tiling(request).cooperative_matrix2, c.queries > 1 && cm2);
    EXPECT_EQ(dense.tiling(request).chunk_kernel,
              c.queries > 1 && (cm2 || (device.info().cooperative_matrix && c.dtype == DType::f16 && c.dim % 32 == 0 &&
                                        c.dim <= 128 && has_mma_fragment_layout(device))));
    dense.poison();
    vk::Pass pass(device);
    dense.record(pass, layer, request, "dense");
    pass.run();
    expect_matches_reference(shape, scale, q, k, v, positions, dense.output(c.queries), dense.log_sum_exp(c.queries));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, DenseAttentionTest,
    ::testing::Values(
        // decode probes
        DenseCase{8, 2, 1, 64, DType::f16, false, 1, 0},       // T = 1
        DenseCase{4, 4, 333, 64, DType::f16, false, 1, 0},     // MHA, the first position
        DenseCase{4, 4, 333, 64, DType::f16, false, 5, 200},   // length off every block size
        DenseCase{8, 2, 1000, 128, DType::f16, false, 3, 997},
        DenseCase{8, 2, 517, 128, DType::bf16, false, 4, 300},
        DenseCase{6, 2, 257, 64, DType::f32, false, 2, 255},
        DenseCase{16, 1, 300, 64, DType::f16, false, 2, 298},  // MQA, r = 16
        DenseCase{2, 2, 2500, 128, DType::f16, false, 1, 2499},  // many splits
        DenseCase{4, 2, 97, 256, DType::f16, false, 2, 95},    // d = 256
        DenseCase{16, 2, 777, 128, DType::f16, false, 1, 776},  // r = 8, one query per head
        DenseCase{16, 1, 300, 64, DType::bf16, false, 1, 299},  // r = 16
        DenseCase{6, 2, 1500, 256, DType::f32, false, 1, 1234}, // r = 3, d = 256
        DenseCase{4, 2, 600, 96, DType::f16, false, 1, 599},    // d = 96: 12 row pieces, not a divisor of 128
        DenseCase{4, 4, 300, 512, DType::bf16, false, 1, 299},  // d = 512
        DenseCase{2, 1, 140000, 8, DType::f16, false, 1, 139999},  // 256 splits of 576 keys
        DenseCase{8, 2, 1000, 128, DType::f16, false, 1, 517},  // one query inside the capture: later keys masked
        DenseCase{32, 8, 4100, 128, DType::f16, false, 1, 4099},  // the benchmark's head layout
        // prefill chunks
        DenseCase{8, 2, 130, 64, DType::f16, true, 130, 0},   // one chunk holding everything
        DenseCase{4, 4, 700, 128, DType::f16, true, 100, 600},
        DenseCase{8, 2, 389, 128, DType::bf16, true, 37, 352},
        DenseCase{4, 1, 200, 64, DType::f32, true, 64, 64},
        // Under lavapipe's loop limit a split holds at most 55 tiles here: 7 splits,
        // where 2 (188 tiles each) were cut short before (vk::DeviceInfo::loop_limit).
        DenseCase{2, 1, 12000, 64, DType::f16, true, 128, 11872},
        DenseCase{2, 2, 1, 64, DType::f16, true, 1, 0},
        // chunks of fp16 keys: attention_chunk where the device has cooperative matrices
        DenseCase{32, 8, 2000, 128, DType::f16, true, 128, 1500},  // the benchmark's head layout
        DenseCase{16, 2, 500, 128, DType::f16, true, 45, 400},     // r = 8: 8 heads x 16 queries a tile
        DenseCase{6, 2, 600, 64, DType::f16, true, 100, 450},      // r = 3: 3 heads x 42 queries, 2 rows idle
        DenseCase{6, 2, 300, 96, DType::f16, true, 70, 230},       // d = 96: 384 pieces a key tile for 256 invocations
        DenseCase{4, 2, 400, 32, DType::f16, true, 50, 300},       // d = 32: 128 pieces a key tile
        DenseCase{4, 4, 1100, 64, DType::f16, true, 129, 0},       // MHA, a chunk from position 0
        DenseCase{4, 2, 300, 256, DType::f16, true, 20, 280},      // d = 256: the tile kernel (cooperative matrix 2 takes it)
        // chunks on VK_NV_cooperative_matrix2 where the device has it: 2,048
        // queries, 17, MHA, keys off the 64-key tile
        DenseCase{8, 2, 2100, 128, DType::f16, true, 2048, 52, true},
        DenseCase{32, 32, 3000, 128, DType::f16, true, 17, 2983, true},
        DenseCase{8, 8, 777, 128, DType::f16, true, 128, 649, true},
        DenseCase{8, 2, 201, 80, DType::f16, true, 2, 199, true}),       // d = 80: a multiple of 16, not of 32
    case_name);

// The tile kernel with its output accumulators in registers, the form GPUs
// without cooperative matrices run (and bf16 and fp32 chunks everywhere), on
// a device that prefers them in shared memory (lavapipe: every case above runs
// that form there): a chunk over dense keys, and the same chunk over a key
// list of every earlier position plus its own keys, which must attend alike.
// Small d and rows: lavapipe compiles this form slowly (attention_tile.glsl).
class TileOutputsTest : public test::GpuTest, public ::testing::WithParamInterface<Attention::Keys> {};

TEST_P(TileOutputsTest, RegistersMatchFloat64Reference) {
  const Attention::Keys keys = GetParam();
  const AttentionShape shape{4, 2, 300, 32};
  const uint32_t first = 250, n = 6;  // 12 rows: a tile of 8, 2 accumulators an invocation
  const DType dtype = DType::bf16;
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<float> k = random_values(rng, size_t(shape.kv_heads) * shape.tokens * shape.dim, dtype, 2.0f);
  std::vector<float> v = random_values(rng, size_t(shape.kv_heads) * shape.tokens * shape.dim, dtype, 1.0f);
  std::vector<float> q = random_values(rng, size_t(shape.heads) * n * shape.dim, dtype, 2.0f);
  std::vector<uint32_t> positions;
  for (uint32_t i = first; i < first + n; ++i) positions.push_back(i);
  const double scale = 1.0 / std::sqrt(double(shape.dim));

  vk::Device& device = test::device();
  GpuLayer layer(device, shape, dtype, scale, from_float(dtype, k), from_float(dtype, v));
  Attention attention(device, shape, dtype, keys, n, Attention::TileOutputs::registers);
  vk::Buffer queries(device, q.size() * dtype_size(dtype));
  queries.upload(from_float(dtype, q));
  // One list a KV head: positions [0, first), then the chunk's own keys.
  std::vector<int32_t> lists;
  for (uint32_t g = 0; g < shape.kv_heads; ++g)
    for (uint32_t p = 0; p < first; ++p) lists.push_back(int32_t(p));
  vk::Buffer selection(device, lists.size() * sizeof(int32_t));
  selection.upload_values<int32_t>(lists);
  AttentionRequest request{&queries, n, first};
  if (keys == Attention::Keys::sparse)
    request = {&queries, n, first, &selection, shape.group(), first, first, n};
  ASSERT_FALSE(attention.tiling(request).decode_kernel || attention.tiling(request).chunk_kernel);
  EXPECT_FALSE(attention.tiling(request).outputs_in_shared);
  attention.poison();
  vk::Pass pass(device);
  attention.record(pass, layer, request, "tile");
  pass.run();
  expect_matches_reference(shape, scale, q, k, v, positions, attention.output(n), attention.log_sum_exp(n));
}

INSTANTIATE_TEST_SUITE_P(Keys, TileOutputsTest, ::testing::Values(Attention::Keys::dense, Attention::Keys::sparse),
                         [](const ::testing::TestParamInfo<Attention::Keys>& info) {
                           return info.param == Attention::Keys::dense ? "dense" : "sparse";
                         });

// A chunk's sparse attention (prefill: QuoKA's) against float64: key lists of
// random ascending earlier positions padded with -1, one a KV head or a
// query head, then the chunk's own keys under the causal mask. On the GPU
// machine it runs attention_chunk_cm2, attention_chunk or the tile kernel,
// whichever the device takes; the case says which ran.
struct SparseCase {
  uint32_t heads, kv_heads, tokens, dim;
  uint32_t queries, first;  // the chunk: positions [first, first + queries)
  uint32_t list_length;     // slots a list, some -1
  bool list_per_query_head;
  bool gpu_only = false;  // as DenseCase's
};

class SparseChunkTest : public test::GpuTest, public ::testing::WithParamInterface<SparseCase> {};

TEST_P(SparseChunkTest, MatchesFloat64Reference) {
  const SparseCase& c = GetParam();
  if (c.gpu_only && test::device().info().type == "cpu") GTEST_SKIP() << "a tensor-core case, too slow on a CPU device";
  const AttentionShape shape{c.heads, c.kv_heads, c.tokens, c.dim};
  const DType dtype = DType::f16;
  const uint32_t seed = test::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<float> k = random_values(rng, size_t(shape.kv_heads) * shape.tokens * shape.dim, dtype, 2.0f);
  const std::vector<float> v = random_values(rng, size_t(shape.kv_heads) * shape.tokens * shape.dim, dtype, 1.0f);
  const std::vector<float> q = random_values(rng, size_t(shape.heads) * c.queries * shape.dim, dtype, 2.0f);
  const double scale = 1.0 / std::sqrt(double(shape.dim));
  const uint32_t heads_per_list = c.list_per_query_head ? 1 : shape.group();
  const uint32_t lists = shape.heads / heads_per_list;
  // Each list: a random subset of [0, first), ascending, then -1 to its length.
  std::vector<int32_t> selection;
  std::bernoulli_distribution keep(std::min(1.0, 0.8 * c.list_length / std::max(1u, c.first)));
  for (uint32_t l = 0; l < lists; ++l) {
    std::vector<int32_t> list;
    for (uint32_t p = 0; p < c.first && list.size() < c.list_length; ++p)
      if (keep(rng)) list.push_back(int32_t(p));
    list.resize(c.list_length, -1);
    selection.insert(selection.end(), list.begin(), list.end());
  }

  vk::Device& device = test::device();
  GpuLayer layer(device, shape, dtype, scale, from_float(dtype, k), from_float(dtype, v));
  vk::Buffer queries(device, q.size() * dtype_size(dtype));
  queries.upload(from_float(dtype, q));
  vk::Buffer selection_buffer(device, selection.size() * sizeof(int32_t));
  selection_buffer.upload_values<int32_t>(selection);
  const AttentionRequest request{&queries, c.queries, c.first, &selection_buffer, heads_per_list, c.list_length,
                                 c.first, c.queries};
  // Query i of head h: its list's positions, then the chunk's own keys up to its own.
  const reference::DenseResult expected =
      reference::attention_over_keys(shape, scale, q, k, v, c.queries, [&](uint32_t h, size_t i) {
        std::vector<uint32_t> keys;
        for (uint32_t s = 0; s < c.list_length; ++s)
          if (const int32_t key = selection[size_t(h / heads_per_list) * c.list_length + s]; key >= 0) keys.push_back(uint32_t(key));
        for (uint32_t p = c.first; p <= c.first + i; ++p) keys.push_back(p);
        return keys;
      });
  const bool has_cm2 = device.cooperative_matrix2() && cooperative_matrix2_built();
  for (Attention::ChunkKernel choice : {Attention::ChunkKernel::device_default, Attention::ChunkKernel::cooperative_matrix2}) {
    if (choice == Attention::ChunkKernel::cooperative_matrix2 && !has_cm2) continue;
    Attention attention(device, shape, dtype, Attention::Keys::sparse, c.queries, Attention::TileOutputs::device_default, choice);
    const AttentionTiling tiling = attention.tiling(request);
    SCOPED_TRACE(tiling.cooperative_matrix2 ? "attention_chunk_cm2" : tiling.chunk_kernel ? "attention_chunk" : "the tile kernel");
    if (choice == Attention::ChunkKernel::cooperative_matrix2) {
      EXPECT_TRUE(tiling.cooperative_matrix2);
    }
    attention.poison();
    vk::Pass pass(device);
    attention.record(pass, layer, request, "sparse");
    pass.run();
    expect_matches(shape, expected, attention.output(c.queries), attention.log_sum_exp(c.queries));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SparseChunkTest,
    ::testing::Values(SparseCase{8, 2, 600, 64, 40, 500, 150, false},     // GQA, lists a KV head, slots off every tile
                      SparseCase{4, 4, 700, 128, 17, 650, 300, false},    // MHA
                      SparseCase{8, 2, 400, 128, 64, 300, 100, true},     // a list a query head
                      SparseCase{32, 8, 3000, 128, 128, 2800, 1024, false, true}),  // QuoKA's bench shape: B_SA 1024
    [](const ::testing::TestParamInfo<SparseCase>& info) {
      const SparseCase& c = info.param;
      return "H" + std::to_string(c.heads) + "_G" + std::to_string(c.kv_heads) + "_d" + std::to_string(c.dim) + "_q" +
             std::to_string(c.queries) + "_list" + std::to_string(c.list_length) + (c.list_per_query_head ? "_perhead" : "");
    });

}  // namespace
}  // namespace kv
