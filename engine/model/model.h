#pragma once
// Room model/: the model runner (files, tokenizers, the forward pass, selection
// inside it, needle, ppl, speed); it includes base/ to methods/ and the other top rooms.
// A Llama-family decoder on the GPU: weights uploaded once, a KV cache sized
// to the run, and the forward pass as kvscope's kernels (embedding, RMSNorm,
// linear layers, RoPE into the cache, attention through kernels/attention.h,
// SwiGLU, the LM head, greedy choice). Prefill runs in chunks of at most
// `chunk` tokens; a decode step is a chunk of one.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention.h"
#include "kernels/gpu_layer.h"
#include "model/checkpoint.h"
#include "model/kernels.h"
#include "model/selection_plan.h"
#include "model/selection_runtime.h"
#include "vk/pass.h"

namespace kv::model {

// What a model run holds on the device, summed from the config before
// anything is allocated (Model refuses a run that cannot fit). Attention's
// and the methods' workspaces are estimated: the partial results of a chunk
// at four splits, twice (dense and sparse passes); a method's own metadata
// (Quest's pages, Fier's bits) is a small fraction of the cache and is left
// out, as are the queries a capture keeps.
struct MemoryPlan {
  uint64_t weights = 0, cache = 0, activations = 0;
  uint64_t total() const { return weights + cache + activations; }
};
// The weights' bytes are the checkpoint's own (its blocks where quantized),
// with room to widen a chunk's widest matrix of blocks to fp16; or, with
// blocks_widened (a CPU's run: Model), the layers' matrices in fp16.
MemoryPlan plan_memory(const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk, bool blocks_widened = false);

class Model {
 public:
  // How a prefill chunk's linear layers take their inputs.
  enum class LinearInputs {
    fastest,  // fp16 on tensor cores where the device has them (as a 16-bit model runs in PyTorch), else fp32
    fp32,     // fp32 everywhere (the scalar tile kernel): the float64 tests' reference precision
  };
  // Holds `capacity` positions (prompt plus steps; refused past the model's context).
  Model(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk = 128,
        LinearInputs linear_inputs = LinearInputs::fastest);

  const ModelConfig& config() const { return config_; }
  uint32_t capacity() const { return capacity_; }
  uint32_t chunk() const { return chunk_; }
  // Positions filled so far: the next token goes there.
  uint32_t length() const { return length_; }

  // Builds the plan's methods for every layer (or takes those an earlier plan
  // built with the same options and dense layers); an empty plan is dense
  // everywhere. InputError for an unknown method, a zero budget, a layer the
  // model lacks, or a method a model run cannot feed (one that reads every
  // past query, or builds from the whole cache at once).
  void select(const SelectionPlan& plan) { selection_.select(plan); }
  const SelectionPlan& selection() const { return selection_.plan(); }

  // Appends `tokens` (at most chunk()) at length(), through every layer; the
  // logits of the last of them (or of each, with all_logits) are then ready.
  // One token is a decode step, more a prefill chunk (the plan's method for it).
  void append(std::span<const int32_t> tokens, bool all_logits = false);
  // Appends a prompt of any length in chunks of `chunk` tokens (0: chunk();
  // at most chunk()), each a prefill chunk (a last chunk of one token too);
  // after each, `after_chunk(tokens done)` (where the chunk's logits are ready).
  void prefill(std::span<const int32_t> tokens, bool all_logits = false,
               const std::function<void(uint32_t done)>& after_chunk = {}, uint32_t chunk = 0);
  // Forgets the positions from `length` on (they are written again by the
  // next append): one prompt's prefill serves many decodes.
  void rewind(uint32_t length);
  // The logits of the last append: [vocab], or [n, vocab] with all_logits.
  std::vector<float> logits() const;
  // The first token of largest logit after the last append, chosen on the GPU
  // in the append's own submission.
  int32_t greedy() const;
  // Greedy decoding without the host in the loop: appends `first`, then
  // each step's own choice, `steps` tokens in all (fewer if
  // `keep_going(choice)` says false), and returns the choices, one a step. Each step's embedding reads
  // the token the step before chose on the GPU, so the host records and
  // submits a step while the one before runs: the tokens, logits and times
  // are those of append() and greedy() in a loop.
  std::vector<int32_t> append_greedy(int32_t first, uint32_t steps, const std::function<bool(int32_t choice)>& keep_going = {});

  // Whether appends time each stage (the default) or only run: a timestamp
  // between two dependent dispatches costs GPU time of its own, so a
  // benchmark times its steps without them and takes the stages from a run
  // with them. Off, appends add nothing to stage_times().
  void time_stages(bool on);

  // GPU time per stage and part, summed over every append so far. Attention
  // over the cache (dense or sparse) counts as Part::attention; a method's
  // stages, its metadata updates and a dense pass run only to feed it (TOVA's
  // probabilities) as Part::selection; the rest as Part::model.
  const std::vector<vk::StageTime>& stage_times() const { return stage_times_; }
  // stage_times() summed by part, named by vk::part_name: each part present.
  std::map<std::string, double> ms_by_part() const;
  // The KV cache of a layer, [G, capacity, d] in the storage type.
  const GpuLayer& cache(uint32_t layer) const { return *caches_[layer]; }
  // Keeps every position's queries of `layer` (after RoPE, [H, capacity, d] in
  // the storage type) from the next append on, for a capture.
  void keep_queries(uint32_t layer);
  const vk::Buffer& kept_queries(uint32_t layer) const;

 private:
  struct DeviceLayer {
    vk::Buffer attention_norm, mlp_norm;  // fp32
    DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
    vk::Buffer bq, bk, bv;  // fp32; one zero float where there is none
    bool has_bias = false;
    vk::Buffer q_norm, k_norm;  // fp32 [d] (Qwen3); empty where there is none
  };
  void append_block(std::span<const int32_t> tokens, bool all_logits, Mode mode);
  // InputError where n more positions do not fit the run, or a token is not in the vocabulary.
  void check_room(uint64_t n) const;
  void check_token(int32_t token) const;
  // Records the block of n tokens at length() into `pass`, its tokens read
  // from tokens[first_token...]; leaves length() as it is.
  void record_block(vk::Pass& pass, const vk::Buffer& tokens, uint32_t first_token, uint32_t n, bool all_logits, Mode mode);
  // The greedy choice after `position`, as the GPU wrote it.
  int32_t chosen_at(uint32_t position) const;
  // The dispatches a pass of `layers` layers records at most (its timestamp slots).
  static uint32_t pass_dispatches(uint32_t layers);
  // Records layer l's attention of the block; returns the buffer holding its output.
  const vk::Buffer& record_attention(vk::Pass& pass, uint32_t layer, const Block& block);
  void add_times(const vk::Pass& pass);

  const vk::Device& device_;
  ModelConfig config_;
  DType dtype_;
  uint32_t capacity_, chunk_, length_ = 0;
  uint32_t logit_rows_ = 0;
  ModelKernels kernels_;
  DeviceMatrix embedding_, lm_head_;
  vk::Buffer final_norm_, rotations_;
  bool tied_;
  std::vector<DeviceLayer> layers_;
  std::vector<std::unique_ptr<GpuLayer>> caches_;
  std::vector<std::unique_ptr<vk::Buffer>> kept_queries_;  // by layer; null where not kept
  Attention attention_, sparse_attention_;
  SelectionRuntime selection_;
  vk::Buffer tokens_, x_, normed_, q_, k_, v_, queries_, gate_, up_, logits_;
  vk::Buffer chosen_;  // [capacity]: the greedy choice after each position, host-visible
  // A step's command buffer and timestamps, reused: two, so that one is
  // recorded while the other runs (append_greedy).
  std::unique_ptr<vk::Pass> passes_[2];
  vk::Buffer mlp_half_;  // SwiGLU's output in fp16, for the down projection on tensor cores
  std::vector<vk::StageTime> stage_times_;
};

}  // namespace kv::model
