#pragma once
// The forward pass's kernels, each recorded on its own over buffers: Model
// chains them into a step, and tests/test_model_ops.cpp holds each to float64
// alone, so that a kernel's bug names its kernel. Activations are fp32 rows;
// weights, queries and the cache are in the model's storage type.
#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <span>
#include <string>

#include "../shaders/layouts.h"
#include "formats/ggml_blocks.h"
#include "io/safetensors.h"
#include "kernels/kernel_choice.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv::model {

// A weight matrix on the device: in the model's storage type, or in ggml's
// blocks (formats/ggml_blocks.h), which the kernels dequantize as they read.
struct DeviceMatrix {
  vk::Buffer buffer;
  std::optional<formats::GgmlType> blocks;  // none: the storage type
};

class ModelKernels {
 public:
  // `linear_kernels`: a prefill chunk's linear layers on tensor cores, through
  // VK_NV_cooperative_matrix2 (model_matmul_cm2.comp) or subgroup fragments
  // (model_matmul_matrix.comp), for 16-bit weights on a device that has them
  // (linear_kernels_for), or (none) the scalar tile kernel.
  ModelKernels(const vk::Device& device, DType storage, MatrixKernels linear_kernels);

  // The linear layers' kernels for `storage` weights on `device`: the best it
  // has where the weights are 16-bit, rows of n_in (every layer's) come in
  // 16-byte pieces, and (cooperative matrix 2) a head's channels hold whole
  // steps of model_matmul_cm2. head_dim 0: no head-major input.
  static MatrixKernels linear_kernels_for(const vk::Device& device, DType storage, uint32_t smallest_n_in_step,
                                          uint32_t head_dim);

  // x[t] = table[tokens[first_token + t]], widened to fp32.
  void embed(vk::Pass& pass, const DeviceMatrix& table, const vk::Buffer& tokens, vk::Buffer& x, uint32_t n_tokens,
             uint32_t hidden, uint32_t first_token = 0) const;
  // y[t] = x[first_token + t] / sqrt(mean(x^2) + eps) * weight, for `n_tokens`
  // rows; y in fp16 with half_output (for a linear layer's half_input).
  void rmsnorm(vk::Pass& pass, const vk::Buffer& x, const vk::Buffer& weight, vk::Buffer& y, uint32_t n_tokens,
               uint32_t first_token, uint32_t hidden, float eps, bool half_output = false) const;
  // y[t, r] (+)= sum_k W[r, k] x[t, k] (+ bias[r]) (layouts.h's ModelMatmulPush):
  // model_matvec for one token, a chunk's kernel for more. x is fp32, or fp16
  // with half_input (only where linear_takes_half_inputs(n_tokens)). A chunk's
  // product of blocks widens them first (dequantize) into the scratch of
  // reserve_widened.
  void linear(vk::Pass& pass, const DeviceMatrix& weights, const vk::Buffer& x, vk::Buffer& y, const vk::Buffer* bias,
              const layouts::ModelMatmulPush& shape, const std::string& stage, bool half_input = false) const;
  // Whether a block of n_tokens runs its linear layers on tensor cores, which
  // take fp16 inputs as they are (fp32 ones are rounded to fp16 on the way).
  bool linear_takes_half_inputs(uint32_t n_tokens) const { return n_tokens > 1 && linear_kernels_ != MatrixKernels::none; }
  // One token's linear layers on one input in one dispatch (model_matvec.comp):
  // up to three matrices, each into its own output (q, k and v), or, gated,
  // two with output[r] = silu(first x)[r] * (second x)[r] (SwiGLU's gate and
  // up) into the first's. With `norm` the input is RMSNorm(x) * norm (eps).
  struct TokenProjection {
    const DeviceMatrix* weights;
    vk::Buffer* output;
    const vk::Buffer* bias;  // or null
    uint32_t rows;
  };
  // RoPE of q and k, queries and the cache written (model_rope.comp).
  struct RopeBuffers {
    const vk::Buffer *q, *k, *v, *rotations;
    vk::Buffer *queries, *key_cache, *value_cache, *kept_queries;
  };
  // A decode step's RoPE taken in its q/k/v product (token_linear's rope):
  // the buffers' q, k and v are the projections' outputs.
  struct TokenRope {
    RopeBuffers buffers;
    layouts::ModelRopePush push;  // n_tokens 1
  };
  // `slices` cuts each row's input channels among that many subgroups (1, 2,
  // 4 or 8; 0: matvec_slices chooses). With `rope` (three projections: q, k,
  // v of whole heads) the dispatch also does what rope() would after it.
  void token_linear(vk::Pass& pass, std::span<const TokenProjection> projections, const vk::Buffer& x, uint32_t n_in,
                    const vk::Buffer* norm, float eps, bool gated, bool accumulate, const std::string& stage,
                    uint32_t slices = 0, const TokenRope* rope = nullptr) const;
  // The slices model_matvec cuts each row's n_in channels into on a device of that class.
  static uint32_t matvec_slices(DeviceClass device, uint32_t n_in);
  // Whether model_matvec takes RMSNorm's scale after the weights' stream
  // (GPUs) or before it (CPUs), on a device of that class.
  static bool matvec_norm_after_stream(DeviceClass device) { return device == DeviceClass::gpu; }
  // Whether a decode step's RoPE rides in its q/k/v dispatch (GPUs: a
  // dispatch and its drain saved a layer) or takes model_rope's (CPUs, where
  // a dispatch costs little and the fused form's barriers cost the product).
  static bool rope_in_qkv_dispatch(DeviceClass device) { return device == DeviceClass::gpu; }
  bool rope_in_qkv_dispatch() const { return rope_in_qkv_dispatch(device_class(device_.info())); }
  void rope(vk::Pass& pass, const RopeBuffers& buffers, const layouts::ModelRopePush& push) const;
  // h[i] = silu(gate[i]) * up[i] for an even count: fp32 (h may be gate), or fp16
  // with half_output.
  void swiglu(vk::Pass& pass, const vk::Buffer& gate, const vk::Buffer& up, vk::Buffer& h, uint32_t count,
              bool half_output = false) const;
  // Every word of `weights` from the random-weight hash of `key`, as values of
  // the storage type or as blocks of its type (model_random_fill.comp).
  void random_fill(vk::Pass& pass, DeviceMatrix& weights, uint32_t key) const;
  // The first `values` values of a matrix of blocks into `out` as fp16 (model_dequantize.comp).
  void dequantize(vk::Pass& pass, const DeviceMatrix& blocks, vk::Buffer& out, uint64_t values) const;
  // Room for the widest matrix of blocks a product widens (`values` of
  // them); before recording any such product.
  void reserve_widened(uint64_t values);
  // Whether a decode step's products read blocks in model_matvec (GPUs: the
  // bytes a step saves) or not (CPUs: lavapipe compiles a model_matvec for
  // each mix of block types at 8-17 s each, for a step whose time there is
  // arithmetic; Model widens each matrix once at load there, and linear()
  // widens a one-token product of blocks into the scratch first). The tests
  // turn it on to hold the GPUs' path on lavapipe.
  bool matvec_reads_blocks() const { return matvec_reads_blocks_; }
  void set_matvec_reads_blocks(bool on) { matvec_reads_blocks_ = on; }
  // chosen[slot] = the first index of the largest of `n` logits (NaN the least).
  void argmax(vk::Pass& pass, const vk::Buffer& logits, vk::Buffer& chosen, uint32_t n, uint32_t slot) const;

  bool linear_on_matrices() const { return linear_kernels_ != MatrixKernels::none; }
  MatrixKernels linear_kernels() const { return linear_kernels_; }

 private:
  // model_matmul_cm2's tile: tokens x rows a workgroup, channels a step,
  // invocations, steps a round of its inner loop.
  struct Cm2Tile {
    uint32_t tokens, rows, step, invocations, unroll;
  };
  const vk::Kernel& cm2_kernel(const Cm2Tile& tile, bool half_input) const;
  Cm2Tile cm2_tile(uint32_t n_tokens) const;
  // model_matmul_matrix's workgroup: subgroups of 64 x 64 outputs along the
  // tokens and the rows, channels a step, shared-memory stages.
  struct MatrixTile {
    uint32_t token_subgroups, row_subgroups, step, stages;
    uint32_t tokens() const { return 64 * token_subgroups; }
    uint32_t rows() const { return 64 * row_subgroups; }
  };
  const vk::Kernel& matrix_kernel(const MatrixTile& tile, bool half_input) const;
  MatrixTile matrix_tile(uint32_t n_tokens) const;

  const vk::Device& device_;
  DType storage_;
  MatrixKernels linear_kernels_;
  vk::Kernel rmsnorm_, matmul_;
  // The kernels that read weights, by the matrices' block types (GGML_PLAIN
  // for the storage type), each built when first used: model_embed by the
  // table's; model_matvec by its slices (1, 2, 4, 8), whether it takes RoPE
  // and its three matrices'; model_dequantize and model_random_fill by the blocks'.
  mutable std::map<uint32_t, vk::Kernel> embed_, dequantize_, random_fill_;
  mutable std::map<std::tuple<uint32_t, bool, uint32_t, uint32_t, uint32_t>, vk::Kernel> matvec_;
  const vk::Kernel& matvec(uint32_t slices, bool rope, const uint32_t (&block_types)[3]) const;
  // A matrix of blocks widened to fp16 (reserve_widened): the pass's scratch.
  mutable DeviceMatrix widened_;
  bool matvec_reads_blocks_ = false;
  // model_matmul_cm2 by tile and input type, built as first asked for.
  mutable std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, bool>, vk::Kernel> matmul_cm2_;
  // model_matmul_matrix by tile and input type, built as first asked for.
  mutable std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, bool>, vk::Kernel> matmul_matrix_;
  std::optional<vk::Kernel> matmul_splits_;
  vk::Buffer partials_;  // model_matmul_matrix's slices' partial sums
  vk::Kernel rope_, swiglu_, argmax_;
  vk::Buffer no_bias_;  // bound where a layer has none
  // Rows of each q/k/v head that token_linear's rope has finished this step (zero between steps).
  vk::Buffer head_rows_;
};

}  // namespace kv::model
