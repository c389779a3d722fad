#include "model/kernels.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/element_type.h"
#include "kernels/layer_kernel.h"
#include "model_argmax.spv.h"
#include "model_dequantize.spv.h"
#include "model_embed.spv.h"
#include "model_matmul.spv.h"
#include "model_matmul_cm2.spv.h"
#include "model_matmul_matrix.spv.h"
#include "model_matmul_matrix_khr.spv.h"
#include "model_matmul_splits.spv.h"
#include "model_matvec.spv.h"
#include "model_matvec_blocks.spv.h"
#include "model_random_fill.spv.h"
#include "model_rmsnorm.spv.h"
#include "model_rope.spv.h"
#include "model_swiglu.spv.h"

namespace kv::model {
namespace {

// model_matmul's tile (rows x tokens a workgroup), model_matvec's rows a
// workgroup (twice as many where it takes two rows a subgroup),
// model_matmul_matrix's tile and channels a step.
constexpr uint32_t kTileRows = 32, kTileTokens = 8, kMatvecRows = 8;
// Heads of q, k and v that model_matvec's rope counts rows for.
constexpr uint32_t kMaxRopeHeads = 4096;
constexpr uint32_t kMatrixRows = 128, kMatrixTokens = 128, kMatrixStep = 32;
// A layer of fewer tensor-core tiles than this slices its input channels
// (k_splits) until it has about as many workgroups: a 128-token chunk's
// 4096-row projection is 32 tiles, a quarter of an H200's 132
// multiprocessors. The partial sums' room follows: slices x 128 x 128
// tiles stay under twice this many tiles (smaller tiles are bounded by the
// room itself).
constexpr uint32_t kWorkgroupsToFill = 256, kMinSliceSteps = 2;
// Workgroups a dimension every Vulkan device takes (maxComputeWorkGroupCount's floor).
constexpr uint32_t kMaxGroups = 65535;
// model_matmul_cm2's steps (channels) divide a head's channels, so that a
// step of a head-major input stays in one head.
constexpr uint32_t kCm2HeadStep = 64;
constexpr size_t kPartialFloats = size_t(2 * kWorkgroupsToFill) * kMatrixRows * kMatrixTokens;

// ggml_blocks.glsl's GGML_PLAIN: a matrix in the storage type.
constexpr uint32_t kPlain = 0xffffffffu;
uint32_t block_constant(const DeviceMatrix& m) { return m.blocks ? uint32_t(*m.blocks) : kPlain; }

// The kernel of `key` in a map of variants, built by `make` the first time it is asked for.
template <typename Map, typename Make>
const vk::Kernel& variant(Map& kernels, const typename Map::key_type& key, Make make) {
  auto found = kernels.find(key);
  if (found == kernels.end()) found = kernels.emplace(key, make()).first;
  return found->second;
}

vk::Buffer zero_float(const vk::Device& device) {
  vk::Buffer buffer(device, sizeof(float));
  buffer.fill(0);
  return buffer;
}

}  // namespace

MatrixKernels ModelKernels::linear_kernels_for(const vk::Device& device, DType storage, uint32_t smallest_n_in_step,
                                               uint32_t head_dim) {
  const MatrixKernels best = matrix_kernels(device);
  if (best == MatrixKernels::none || (storage != DType::f16 && storage != DType::bf16) || smallest_n_in_step % 8) return MatrixKernels::none;
  if (best == MatrixKernels::cooperative_matrix2 && head_dim % kCm2HeadStep)
    return device.khr_cooperative_matrix() ? MatrixKernels::cooperative_matrix_khr : MatrixKernels::cooperative_matrix;
  return best;
}

ModelKernels::ModelKernels(const vk::Device& device, DType storage, MatrixKernels linear_kernels)
    : device_(device),
      storage_(storage),
      linear_kernels_(linear_kernels),
      rmsnorm_(device, "model_rmsnorm", model_rmsnorm_spirv, {3, sizeof(layouts::ModelRmsNormPush)}, {}),
      matmul_(device, "model_matmul", model_matmul_spirv, {4, sizeof(layouts::ModelMatmulPush)},
              std::vector<uint32_t>{element_type(storage), kTileRows, kTileTokens, kTileRows * kTileTokens}),
      rope_(device, "model_rope", model_rope_spirv, {8, sizeof(layouts::ModelRopePush)},
            std::vector<uint32_t>{element_type(storage)}),
      swiglu_(device, "model_swiglu", model_swiglu_spirv, {3, sizeof(layouts::ModelSwigluPush)}, {}),
      argmax_(device, "model_argmax", model_argmax_spirv, {2, sizeof(layouts::ModelArgmaxPush)}, {}),
      no_bias_(zero_float(device)),
      head_rows_(device, kMaxRopeHeads * sizeof(uint32_t)) {
  head_rows_.fill(0);
  matvec_reads_blocks_ = device_class(device.info()) == DeviceClass::gpu;
  // KVSCOPE_MATVEC_READS_BLOCKS=0|1: the other path, to time one against the other (tools/dev/README.md).
  if (const char* forced = std::getenv("KVSCOPE_MATVEC_READS_BLOCKS")) matvec_reads_blocks_ = std::string(forced) == "1";
  if (linear_kernels_ == MatrixKernels::cooperative_matrix2 && !device.cooperative_matrix2())
    throw std::logic_error("model_matmul_cm2 on a device without VK_NV_cooperative_matrix2");
  if (linear_kernels_ != MatrixKernels::none) {
    matmul_splits_.emplace(device, "model_matmul_splits", model_matmul_splits_spirv,
                           vk::KernelLayout{3, sizeof(layouts::ModelMatmulPush)}, std::vector<uint32_t>{});
    partials_ = vk::Buffer(device, kPartialFloats * sizeof(float));
  }
}

// 2 x 2 subgroups, 32 channels a step, one stage: the fastest of the shapes
// the H100 ran (docs/perf-experiments.md, "The prefill linear layers").
ModelKernels::MatrixTile ModelKernels::matrix_tile(uint32_t) const {
  // KVSCOPE_MATRIX_TILE=token_subgroups,row_subgroups,step,stages: a tile to try (tools/dev/README.md).
  if (const char* forced = std::getenv("KVSCOPE_MATRIX_TILE")) {
    MatrixTile t{};
    if (std::sscanf(forced, "%u,%u,%u,%u", &t.token_subgroups, &t.row_subgroups, &t.step, &t.stages) == 4 &&
        t.token_subgroups * t.row_subgroups >= 1 && t.token_subgroups * t.row_subgroups <= 8 && (t.step == 32 || t.step == 64) &&
        (t.stages == 1 || t.stages == 2))
      return t;
    throw std::invalid_argument("KVSCOPE_MATRIX_TILE takes token_subgroups,row_subgroups,step,stages: up to 8 subgroups, "
                                "a step of 32 or 64, 1 or 2 stages");
  }
  return {2, 2, kMatrixStep, 1};
}

const vk::Kernel& ModelKernels::matrix_kernel(const MatrixTile& t, bool half_input) const {
  const auto key = std::make_tuple(t.token_subgroups, t.row_subgroups, t.step, t.stages, half_input);
  auto found = matmul_matrix_.find(key);
  if (found == matmul_matrix_.end()) {
    // model_matmul_matrix's shared memory: the stages' 16-byte pieces (a row
    // of a step padded by one), then a 16 x 16 fp32 fragment a subgroup.
    const size_t shared = size_t(t.stages) * (t.tokens() + t.rows()) * (t.step / 8 + 1) * 16 +
                          size_t(t.token_subgroups) * t.row_subgroups * 16 * 16 * 4;
    if (shared > device_.info().max_shared_memory_bytes)
      throw std::invalid_argument("model_matmul_matrix's tile needs " + std::to_string(shared) + " bytes of shared memory; " +
                                  device_.info().name + " has " + std::to_string(device_.info().max_shared_memory_bytes));
    const auto spirv = vk::cooperative_matrix_spirv(device_, model_matmul_matrix_spirv, model_matmul_matrix_khr_spirv);
    found = matmul_matrix_
                .emplace(key, vk::Kernel(device_, "model_matmul_matrix", spirv, vk::KernelLayout{5, sizeof(layouts::ModelMatmulPush)},
                                         std::vector<uint32_t>{element_type(storage_), element_type(half_input ? DType::f16 : DType::f32),
                                                               32 * t.token_subgroups * t.row_subgroups, t.token_subgroups, t.step,
                                                               t.stages}))
                .first;
  }
  return found->second;
}

// The tiles that measured best on the H100 (docs/perf-experiments.md,
// "VK_NV_cooperative_matrix2"): 128 tokens x 128 rows, 32 channels a step, 4
// steps a round, 128 invocations; 64 tokens for chunks of 128 or fewer (the
// tiles the sweep ran; smaller ones were not).
ModelKernels::Cm2Tile ModelKernels::cm2_tile(uint32_t n_tokens) const {
  // KVSCOPE_CM2_TILE=tokens,rows,step,invocations[,unroll]: a tile to try (tools/dev/README.md).
  if (const char* forced = std::getenv("KVSCOPE_CM2_TILE")) {
    Cm2Tile t{};
    t.unroll = 4;
    if (std::sscanf(forced, "%u,%u,%u,%u,%u", &t.tokens, &t.rows, &t.step, &t.invocations, &t.unroll) >= 4) return t;
  }
  const std::vector<uint32_t>& sizes = device_.info().cooperative_matrix2_workgroups;
  const uint32_t invocations = std::find(sizes.begin(), sizes.end(), 128u) != sizes.end() ? 128u : sizes.front();
  return {n_tokens > 128 ? 128u : 64u, 128, 32, invocations, 4};
}

const vk::Kernel& ModelKernels::cm2_kernel(const Cm2Tile& t, bool half_input) const {
  const auto key = std::make_tuple(t.tokens, t.rows, t.step, t.invocations, t.unroll, half_input);
  auto found = matmul_cm2_.find(key);
  if (found == matmul_cm2_.end())
    found = matmul_cm2_
                .emplace(key, vk::Kernel(device_, "model_matmul_cm2", model_matmul_cm2_spirv,
                                         vk::KernelLayout{5, sizeof(layouts::ModelMatmulPush)},
                                         std::vector<uint32_t>{element_type(storage_), element_type(half_input ? DType::f16 : DType::f32),
                                                               t.invocations, t.tokens, t.rows, t.step, t.unroll}))
                .first;
  return found->second;
}

void ModelKernels::embed(vk::Pass& pass, const DeviceMatrix& table, const vk::Buffer& tokens, vk::Buffer& x,
                         uint32_t n_tokens, uint32_t hidden, uint32_t first_token) const {
  const uint32_t type = block_constant(table);
  const vk::Kernel& kernel = variant(embed_, type, [&] {
    return vk::Kernel(device_, "model_embed", model_embed_spirv, {3, sizeof(layouts::ModelEmbedPush)},
                      std::vector<uint32_t>{element_type(storage_), type});
  });
  pass.dispatch(kernel, {&table.buffer, &tokens, &x}, layouts::ModelEmbedPush{n_tokens, hidden, first_token}, ceil_div(n_tokens * hidden, 256), 1,
                1, "embed");
}

void ModelKernels::rmsnorm(vk::Pass& pass, const vk::Buffer& x, const vk::Buffer& weight, vk::Buffer& y,
                           uint32_t n_tokens, uint32_t first_token, uint32_t hidden, float eps, bool half_output) const {
  pass.dispatch(rmsnorm_, {&x, &weight, &y},
                layouts::ModelRmsNormPush{n_tokens, first_token, hidden, eps, half_output ? 1u : 0u},
                std::min(n_tokens, kMaxGroups), ceil_div(n_tokens, kMaxGroups), 1, "rmsnorm");
}

void ModelKernels::linear(vk::Pass& pass, const DeviceMatrix& matrix, const vk::Buffer& x, vk::Buffer& y,
                          const vk::Buffer* bias, const layouts::ModelMatmulPush& shape, const std::string& stage,
                          bool half_input) const {
  if (half_input && !linear_takes_half_inputs(shape.n_tokens))
    throw std::logic_error("fp16 inputs to a linear layer that reads fp32");
  const bool widen = matrix.blocks && (shape.n_tokens > 1 || !matvec_reads_blocks_);
  if (widen) {
    const uint64_t values = uint64_t(shape.n_out) * shape.n_in;
    if (widened_.buffer.bytes() < values * 2) throw std::logic_error("a matrix of blocks wider than reserve_widened's room");
    dequantize(pass, matrix, widened_.buffer, values);
  }
  const DeviceMatrix& read = widen ? widened_ : matrix;
  if (shape.n_tokens == 1) {
    const TokenProjection projection{&read, &y, bias, shape.n_out};
    token_linear(pass, std::span(&projection, 1), x, shape.n_in, nullptr, 0.0f, false, shape.accumulate != 0, stage);
    return;
  }
  const vk::Buffer& weights = read.buffer;
  layouts::ModelMatmulPush push = shape;
  push.has_bias = bias ? 1u : 0u;
  const vk::Buffer* b = bias ? bias : &no_bias_;
  push.k_splits = 1;
  push.split_channels = push.n_in;
  if (push.n_tokens > 1 && linear_kernels_ != MatrixKernels::none) {
    // A tensor-core kernel and its tile: tokens x rows a workgroup, and the
    // channels a slice of the input is made of whole units of.
    const vk::Kernel* kernel;
    uint32_t tile_tokens, tile_rows, unit;
    if (linear_kernels_ == MatrixKernels::cooperative_matrix2) {
      if (push.input_head_dim % kCm2HeadStep || push.n_in % 8)
        throw std::logic_error("model_matmul_cm2 takes rows of 16-byte pieces and heads of whole steps");
      const Cm2Tile tile = cm2_tile(push.n_tokens);
      kernel = &cm2_kernel(tile, half_input);
      tile_tokens = tile.tokens, tile_rows = tile.rows, unit = tile.step * tile.unroll;  // whole unrolled rounds
    } else {
      const MatrixTile tile = matrix_tile(push.n_tokens);
      kernel = &matrix_kernel(tile, half_input);
      tile_tokens = tile.tokens(), tile_rows = tile.rows(), unit = tile.step;
    }
    // Slices until the tiles about fill the device, within the partial sums' room.
    const uint32_t tiles = ceil_div(push.n_out, tile_rows) * ceil_div(push.n_tokens, tile_tokens);
    const uint32_t units = ceil_div(push.n_in, unit);
    const uint32_t room = uint32_t(kPartialFloats / (size_t(push.n_tokens) * push.n_out));
    push.k_splits = std::max(1u, std::min({ceil_div(kWorkgroupsToFill, tiles), units / kMinSliceSteps, room}));
    push.split_channels = ceil_div(units, push.k_splits) * unit;
    push.k_splits = ceil_div(push.n_in, push.split_channels);  // no empty slice
    pass.dispatch(*kernel, {&weights, &x, &y, b, &partials_}, push, ceil_div(push.n_tokens, tile_tokens),
                  ceil_div(push.n_out, tile_rows), push.k_splits, stage);
    if (push.k_splits > 1)
      pass.dispatch(*matmul_splits_, {&partials_, &y, b}, push, ceil_div(push.n_tokens * push.n_out, 256), 1, 1, stage);
  } else
    pass.dispatch(matmul_, {&weights, &x, &y, b}, push, ceil_div(push.n_out, kTileRows), ceil_div(push.n_tokens, kTileTokens),
                  1, stage);
}

const vk::Kernel& ModelKernels::matvec(uint32_t slices, bool rope, const uint32_t (&types)[3]) const {
  return variant(matvec_, std::make_tuple(slices, rope, types[0], types[1], types[2]), [&] {
    const DeviceClass device = device_class(device_.info());
    // Blocks take a kernel of their own: the plain one, which a CPU's products
    // run, then compiles without their code (lavapipe: 2 s against 8 s).
    const bool blocks = types[0] != kPlain || types[1] != kPlain || types[2] != kPlain;
    return vk::Kernel(device_, blocks ? "model_matvec_blocks" : "model_matvec",
                      blocks ? std::span<const uint32_t>(model_matvec_blocks_spirv) : std::span<const uint32_t>(model_matvec_spirv),
                      vk::KernelLayout{17, sizeof(layouts::ModelMatvecPush)},
                      std::vector<uint32_t>{element_type(storage_), matvec_norm_after_stream(device) ? 1u : 0u, slices,
                                            rope ? 1u : 0u, types[0], types[1], types[2], device == DeviceClass::gpu ? 1u : 0u});
  });
}

uint32_t ModelKernels::matvec_slices(DeviceClass device, uint32_t n_in) {
  // KVSCOPE_MATVEC_SLICES=1|2|4|8: every matrix-vector product so (tools/dev/README.md).
  // Read once: this runs for every product a step records.
  static const uint32_t forced = [] {
    const char* chosen = std::getenv("KVSCOPE_MATVEC_SLICES");
    const uint32_t slices = chosen ? uint32_t(std::atoi(chosen)) : 0;
    return slices == 1 || slices == 2 || slices == 4 || slices == 8 ? slices : 0u;
  }();
  if (forced) return forced;
  // On lavapipe a slice is another subgroup's turn over the same row and
  // another sum to meet in shared memory: llama-debian-27m's mlp_down, the one
  // product the GPU rule cut in two there, took 13.1 ms a decode step against
  // 6.0 in one (c704108 against this rule, docs/perf.md).
  if (device == DeviceClass::cpu) return 1;
  const uint32_t steps = n_in % 8 ? ceil_div(n_in, 64) : ceil_div(n_in, 256);  // a subgroup's reads of a row
  // Two slices where each keeps two reads of a row at least: the 8B step at
  // 32k on the H100 was fastest so, every product forced to 1, 2, 4 and 8
  // slices in one call (docs/perf-experiments.md; gate/up alone was 4%
  // faster in 4).
  return steps >= 4 ? 2 : 1;
}

void ModelKernels::token_linear(vk::Pass& pass, std::span<const TokenProjection> projections, const vk::Buffer& x,
                                uint32_t n_in, const vk::Buffer* norm, float eps, bool gated, bool accumulate,
                                const std::string& stage, uint32_t slices, const TokenRope* rope) const {
  if (projections.empty() || projections.size() > 3 || (gated && projections.size() != 2))
    throw std::logic_error("token_linear takes one to three matrices, two gated");
  // Unused bindings take the zero float: never read or written.
  const vk::Buffer* weights[3] = {&no_bias_, &no_bias_, &no_bias_};
  uint32_t types[3] = {kPlain, kPlain, kPlain};
  const vk::Buffer* outputs[3] = {&no_bias_, &no_bias_, &no_bias_};
  const vk::Buffer* biases[3] = {&no_bias_, &no_bias_, &no_bias_};
  uint32_t rows[3] = {0, 0, 0};
  bool has_bias = false;
  for (size_t i = 0; i < projections.size(); ++i) {
    weights[i] = &projections[i].weights->buffer;
    types[i] = block_constant(*projections[i].weights);
    if (projections[i].weights->blocks && !matvec_reads_blocks_)
      throw std::logic_error("token_linear of blocks where model_matvec does not read them: linear() widens them");
    outputs[i] = projections[i].output;
    rows[i] = projections[i].rows;
    if (projections[i].bias) biases[i] = projections[i].bias;
    has_bias = has_bias || projections[i].bias;
  }
  // Unused bindings take the first's type (never read either way): one
  // pipeline then serves a uniformly quantized model's every product.
  for (size_t i = projections.size(); i < 3; ++i) types[i] = types[0];
  if (gated) rows[1] = 0;  // the second matrix's rows are the first's
  const uint32_t all_rows = rows[0] + rows[1] + rows[2];
  if (slices == 0) slices = matvec_slices(device_class(device_.info()), n_in);
  if (slices != 1 && slices != 2 && slices != 4 && slices != 8) throw std::logic_error("model_matvec takes 1, 2, 4 or 8 slices");
  layouts::ModelMatvecPush push{n_in, rows[0], rows[1], rows[2], accumulate ? 1u : 0u, has_bias ? 1u : 0u,
                                gated ? 1u : 0u, norm ? 1u : 0u, eps};
  // Rope's bindings: the rotations, queries, key and value cache, kept queries and the heads' row counts.
  const vk::Buffer* rope_buffers[6] = {&no_bias_, &no_bias_, &no_bias_, &no_bias_, &no_bias_, &no_bias_};
  if (rope) {
    const uint32_t d = rope->push.head_dim;
    const RopeBuffers& b = rope->buffers;
    if (gated || projections.size() != 3 || d == 0 || d % 2 || rows[0] != rope->push.n_heads * d ||
        rows[1] != rope->push.n_kv_heads * d || rows[2] != rows[1] || all_rows / d > kMaxRopeHeads ||
        rope->push.n_tokens != 1 || b.q != outputs[0] || b.k != outputs[1] || b.v != outputs[2])
      throw std::logic_error("token_linear's rope takes one token's q, k and v of whole heads, into the projections' outputs");
    push.head_dim = d;
    push.position = rope->push.first_position;
    push.capacity = rope->push.capacity;
    push.interleaved = rope->push.interleaved;
    push.keep_queries = rope->push.keep_queries;
    const vk::Buffer* given[6] = {b.rotations, b.queries, b.key_cache, b.value_cache, b.kept_queries, &head_rows_};
    std::copy(std::begin(given), std::end(given), rope_buffers);
  }
  const uint32_t row_slots = kMatvecRows / slices;  // a workgroup's rows (pairs of rows ungated)
  pass.dispatch(matvec(slices, rope != nullptr, types),
                {weights[0], weights[1], weights[2], &x, outputs[0], outputs[1], outputs[2], biases[0], biases[1], biases[2],
                 norm ? norm : &no_bias_, rope_buffers[0], rope_buffers[1], rope_buffers[2], rope_buffers[3], rope_buffers[4],
                 rope_buffers[5]},
                push, gated ? ceil_div(rows[0], row_slots) : ceil_div(all_rows, 2 * row_slots), 1, 1, stage);
}

void ModelKernels::rope(vk::Pass& pass, const RopeBuffers& b, const layouts::ModelRopePush& push) const {
  pass.dispatch(rope_, {b.q, b.k, b.v, b.rotations, b.queries, b.key_cache, b.value_cache, b.kept_queries}, push,
                ceil_div(push.n_tokens * (push.n_heads + 2 * push.n_kv_heads) * push.head_dim / 2, 256), 1, 1, "rope");
}

void ModelKernels::swiglu(vk::Pass& pass, const vk::Buffer& gate, const vk::Buffer& up, vk::Buffer& h, uint32_t count,
                          bool half_output) const {
  pass.dispatch(swiglu_, {&gate, &up, &h}, layouts::ModelSwigluPush{count, half_output ? 1u : 0u}, ceil_div(count, 512), 1, 1,
                "swiglu");
}

void ModelKernels::random_fill(vk::Pass& pass, DeviceMatrix& weights, uint32_t key) const {
  const uint32_t words = uint32_t(weights.buffer.bytes() / 4), type = block_constant(weights);
  const vk::Kernel& kernel = variant(random_fill_, type, [&] {
    return vk::Kernel(device_, "model_random_fill", model_random_fill_spirv, {1, sizeof(layouts::ModelRandomFillPush)},
                      std::vector<uint32_t>{element_type(storage_), type});
  });
  // A grid-stride loop: at most 4096 workgroups, whatever the tensor's size.
  pass.dispatch(kernel, {&weights.buffer}, layouts::ModelRandomFillPush{words, key}, std::min(ceil_div(words, 256), 4096u), 1,
                1, "random_fill");
}

void ModelKernels::dequantize(vk::Pass& pass, const DeviceMatrix& blocks, vk::Buffer& out, uint64_t values) const {
  if (!blocks.blocks || values % 8 || values / 8 > UINT32_MAX || out.bytes() < values * 2)
    throw std::logic_error("model_dequantize takes blocks, whole pieces of eight values, and room for them");
  const uint32_t type = uint32_t(*blocks.blocks);
  const vk::Kernel& kernel = variant(dequantize_, type, [&] {
    return vk::Kernel(device_, "model_dequantize", model_dequantize_spirv, {2, sizeof(layouts::ModelDequantizePush)},
                      std::vector<uint32_t>{type});
  });
  const uint32_t pieces = uint32_t(values / 8);
  pass.dispatch(kernel, {&blocks.buffer, &out}, layouts::ModelDequantizePush{pieces}, std::min(ceil_div(pieces, 256), 8192u),
                1, 1, "dequantize");
}

void ModelKernels::reserve_widened(uint64_t values) {
  if (values * 2 > widened_.buffer.bytes()) widened_.buffer = vk::Buffer(device_, values * 2);
}

void ModelKernels::argmax(vk::Pass& pass, const vk::Buffer& logits, vk::Buffer& chosen, uint32_t n, uint32_t slot) const {
  pass.dispatch(argmax_, {&logits, &chosen}, layouts::ModelArgmaxPush{n, slot}, 1, 1, 1, "argmax");
}

}  // namespace kv::model
