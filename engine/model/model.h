#pragma once
// A Llama-family decoder on the GPU: weights uploaded once, a KV cache sized
// to the run, and the forward pass as kvscope's kernels (embedding, RMSNorm,
// linear layers, RoPE into the cache, attention through engine/attention.h,
// SwiGLU, the LM head, greedy choice). Prefill runs in chunks of at most
// `chunk` tokens; a decode step is a chunk of one.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attention.h"
#include "gpu_layer.h"
#include "model/checkpoint.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv::model {

class Model {
 public:
  // Holds `capacity` positions (prompt plus steps; refused past the model's context).
  Model(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk = 128);

  const ModelConfig& config() const { return config_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t chunk() const { return chunk_; }
  // Positions filled so far: the next token goes there.
  uint32_t length() const { return length_; }

  // Appends `tokens` (at most chunk()) at length(), through every layer; the
  // logits of the last of them (or of each, with all_logits) are then ready.
  void append(std::span<const int32_t> tokens, bool all_logits = false);
  // Appends a prompt of any length in chunks of at most chunk(); after each,
  // `after_chunk(tokens done)` (where the chunk's logits are ready).
  void prefill(std::span<const int32_t> tokens, bool all_logits = false,
               const std::function<void(uint32_t done)>& after_chunk = {});
  // The logits of the last append: [vocab], or [n, vocab] with all_logits.
  std::vector<float> logits() const;
  // The first token of largest logit after the last append, chosen on the GPU
  // in the append's own submission.
  int32_t greedy() const;

  // GPU time per stage, summed over every append so far.
  const std::vector<vk::StageTime>& stage_times() const { return stage_times_; }
  // The KV cache of a layer, [G, capacity, d] in the storage type.
  const GpuLayer& cache(uint32_t layer) const { return *caches_[layer]; }
  // Keeps every position's queries of `layer` (after RoPE, [H, capacity, d] in
  // the storage type) from the next append on, for a capture.
  void keep_queries(uint32_t layer);
  const vk::Buffer& kept_queries(uint32_t layer) const;

 private:
  struct DeviceLayer {
    vk::Buffer attention_norm, mlp_norm;  // fp32
    vk::Buffer wq, wk, wv, wo, w_gate, w_up, w_down;
    vk::Buffer bq, bk, bv;  // fp32; one zero float where there is none
    bool has_bias = false;
  };
  void record_matmul(vk::Pass& pass, const vk::Buffer& weights, const vk::Buffer& input, vk::Buffer& output,
                     const vk::Buffer* bias, uint32_t n_tokens, uint32_t n_in, uint32_t n_out, bool accumulate,
                     uint32_t input_head_dim, const std::string& stage) const;
  void add_times(const vk::Pass& pass);

  const vk::Device& device_;
  ModelConfig config_;
  DType dtype_;
  uint32_t capacity_, chunk_, length_ = 0;
  uint32_t logit_rows_ = 0;
  vk::Kernel embed_, rmsnorm_;
  // A decode step's linear layers (model_matvec) and a prefill chunk's (model_matmul).
  vk::Kernel matvec_, matmul_;
  vk::Kernel rope_, swiglu_, argmax_;
  vk::Buffer embedding_, lm_head_, final_norm_, rotations_, no_bias_;
  bool tied_;
  std::vector<DeviceLayer> layers_;
  std::vector<std::unique_ptr<GpuLayer>> caches_;
  std::vector<std::unique_ptr<vk::Buffer>> kept_queries_;  // by layer; null where not kept
  Attention attention_;
  vk::Buffer tokens_, x_, normed_, q_, k_, v_, queries_, gate_, up_, logits_, chosen_;
  std::vector<vk::StageTime> stage_times_;
};

}  // namespace kv::model
