#pragma once
// A Llama-family decoder on the GPU: weights uploaded once, a KV cache sized
// to the run, and the forward pass as kvscope's kernels (embedding, RMSNorm,
// linear layers, RoPE into the cache, attention through engine/attention.h,
// SwiGLU, the LM head, greedy choice). Prefill runs in chunks of at most
// `chunk` tokens; a decode step is a chunk of one.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attention.h"
#include "gpu_layer.h"
#include "method.h"
#include "model/checkpoint.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv::model {

// Which selection method runs inside the attention (docs/model.md): the same
// Method objects that eval runs, one per layer and regime. A layer attends
// densely where no method is named for the regime, where it is one of
// dense_layers, and where the budget holds every candidate key (the first
// chunk of a prompt has none).
struct SelectionPlan {
  std::string decode_method;  // empty: dense decode steps
  uint32_t decode_budget = 0;
  std::string prefill_method;  // empty: dense prefill chunks
  uint32_t prefill_budget = 0;
  MethodOptions options;
  std::vector<uint32_t> dense_layers;

  bool any() const { return !decode_method.empty() || !prefill_method.empty(); }
};

// A sweep's method names split into dense and the selection methods; an
// unknown name, or a method a model run cannot feed (see Model::select), is
// refused with `command` and the reason.
struct MethodSweep {
  bool dense = false;
  std::vector<std::string> methods;
};
MethodSweep split_method_sweep(const std::vector<std::string>& names, const std::string& command);

class Model {
 public:
  // Holds `capacity` positions (prompt plus steps; refused past the model's context).
  Model(const vk::Device& device, const Checkpoint& checkpoint, uint32_t capacity, uint32_t chunk = 128);

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
  void select(const SelectionPlan& plan);
  const SelectionPlan& selection() const { return plan_; }

  // Appends `tokens` (at most chunk()) at length(), through every layer; the
  // logits of the last of them (or of each, with all_logits) are then ready.
  // One token is a decode step, more a prefill chunk (the plan's method for it).
  void append(std::span<const int32_t> tokens, bool all_logits = false);
  // Appends a prompt of any length in chunks of at most chunk(), each a
  // prefill chunk (a last chunk of one token too); after each,
  // `after_chunk(tokens done)` (where the chunk's logits are ready).
  void prefill(std::span<const int32_t> tokens, bool all_logits = false,
               const std::function<void(uint32_t done)>& after_chunk = {});
  // Forgets the positions from `length` on (they are written again by the
  // next append): one prompt's prefill serves many decodes.
  void rewind(uint32_t length);
  // The logits of the last append: [vocab], or [n, vocab] with all_logits.
  std::vector<float> logits() const;
  // The first token of largest logit after the last append, chosen on the GPU
  // in the append's own submission.
  int32_t greedy() const;

  // GPU time per stage, summed over every append so far.
  const std::vector<vk::StageTime>& stage_times() const { return stage_times_; }
  // What a stage of stage_times() belongs to: "attention" (dense or sparse),
  // "selection" (a method's own stages), or "model" (everything else).
  static const char* stage_part(const std::string& stage);
  // stage_times() summed by part: "model", "attention" and "selection", each present.
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
    vk::Buffer wq, wk, wv, wo, w_gate, w_up, w_down;
    vk::Buffer bq, bk, bv;  // fp32; one zero float where there is none
    bool has_bias = false;
  };
  void record_matmul(vk::Pass& pass, const vk::Buffer& weights, const vk::Buffer& input, vk::Buffer& output,
                     const vk::Buffer* bias, uint32_t n_tokens, uint32_t n_in, uint32_t n_out, bool accumulate,
                     uint32_t input_head_dim, const std::string& stage) const;
  void append_block(std::span<const int32_t> tokens, bool all_logits, Mode mode);
  // Records layer l's attention of the block; returns the buffer holding its output.
  const vk::Buffer& record_attention(vk::Pass& pass, uint32_t layer, const Block& block);
  void add_times(const vk::Pass& pass);

  // A regime's methods, one per layer (null where the layer attends densely).
  struct RegimeMethods {
    std::vector<std::unique_ptr<Method>> by_layer;
    std::vector<uint32_t> updated;  // cache positions each layer's metadata covers
    uint32_t budget = 0;
    std::unique_ptr<vk::Buffer> list;  // the selection, [rows, width], shared by the layers in turn
  };
  RegimeMethods build_regime(const std::string& method, Mode mode) const;
  // Sets the regime's budget and grows its list to the widest layer's list_width.
  void set_budget(RegimeMethods& regime, uint32_t budget) const;

  const vk::Device& device_;
  ModelConfig config_;
  DType dtype_;
  uint32_t capacity_, chunk_, length_ = 0;
  uint32_t logit_rows_ = 0;
  vk::Kernel embed_, rmsnorm_;
  // A decode step's linear layers (model_matvec) and a prefill chunk's (model_matmul).
  vk::Kernel matvec_, matmul_;
  std::optional<vk::Kernel> matmul_matrix_;  // on tensor cores, where the device and weights allow
  vk::Kernel rope_, swiglu_, argmax_;
  vk::Buffer embedding_, lm_head_, final_norm_, rotations_, no_bias_;
  bool tied_;
  std::vector<DeviceLayer> layers_;
  std::vector<std::unique_ptr<GpuLayer>> caches_;
  std::vector<std::unique_ptr<vk::Buffer>> kept_queries_;  // by layer; null where not kept
  Attention attention_, sparse_attention_;
  SelectionPlan plan_;
  // Every regime built for the options and dense layers of built_setup_, by
  // method and mode; the plan's two point into it (null: dense).
  std::map<std::pair<std::string, Mode>, RegimeMethods> built_;
  std::string built_setup_;
  RegimeMethods* decode_methods_ = nullptr;
  RegimeMethods* prefill_methods_ = nullptr;
  vk::Buffer tokens_, x_, normed_, q_, k_, v_, queries_, gate_, up_, logits_, chosen_;
  std::vector<vk::StageTime> stage_times_;
};

}  // namespace kv::model
