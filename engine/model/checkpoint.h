#pragma once
// A model's weights in host memory, by role, from a Hugging Face directory
// (config.json with model.safetensors, or shards listed by
// model.safetensors.index.json) or a llama2.c checkpoint (.bin). Every tensor
// is checked against the config before anything reaches the device; a missing,
// misshapen or mistyped one is refused with a line naming it.
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/mapped_file.h"
#include "io/safetensors.h"
#include "model/config.h"

namespace kv::model {

struct GgufTensor;

// One weight: its dtype, shape and bytes (in a mapped file or the checkpoint's
// own memory; none for a matrix of random weights, which the device draws).
struct Weight {
  std::string name;  // as the file names it
  DType dtype = DType::f32;
  std::vector<uint64_t> shape;
  std::span<const std::byte> data;
  bool present() const { return !shape.empty(); }
  uint64_t count() const;
};

struct LayerWeights {
  Weight attention_norm, wq, wk, wv, wo;  // projections [out, in]
  Weight bq, bk, bv;                      // biases (Qwen2); absent otherwise
  Weight q_norm, k_norm;                  // each head's q and k RMSNorm [d] (Qwen3); absent otherwise
  Weight mlp_norm, w_gate, w_up, w_down;
};

class Checkpoint {
 public:
  // A directory with config.json, or a llama2.c .bin file.
  static Checkpoint open(const std::filesystem::path& path);
  // A llama2.c checkpoint from its bytes; `source` names it in errors.
  static Checkpoint from_llama2c(std::vector<std::byte> bytes, const std::string& source);
  // A llama-architecture GGUF file from its bytes (engine/model/gguf.h): F32,
  // F16 or BF16 tensors, and the block-quantized types of
  // formats/ggml_blocks.h widened to fp16 as they are read; RoPE on
  // neighbouring channels as llama.cpp's converter leaves q and k. `open` reads a file starting "GGUF" this way.
  static Checkpoint from_gguf(std::vector<std::byte> bytes, const std::string& source);
  // The shapes of a Hugging Face config.json (or a directory holding one) with
  // random fp16 matrices that the device draws from `seed`
  // (model/random_weights.h), norms of ones and zero biases: a model to time
  // at its real size without its weights. Random weights mean nothing at
  // any length, so the model takes up to kRandomWeightPositions positions
  // whatever the config's max_position_embeddings (configured_positions()):
  // Llama-3-8B timed at 32k as its papers time it.
  static Checkpoint random(const std::filesystem::path& config, uint32_t seed);
  static constexpr uint32_t kRandomWeightPositions = 1u << 20;

  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  ~Checkpoint();

  const ModelConfig& config() const { return config_; }
  // The dtype of the embedding and every projection (norms and biases may differ).
  DType matrix_dtype() const { return matrix_dtype_; }
  const Weight& embedding() const { return embedding_; }  // [vocab, hidden]
  const Weight& final_norm() const { return final_norm_; }
  const Weight& lm_head() const { return tied() ? embedding_ : lm_head_; }  // [vocab, hidden]
  bool tied() const { return !lm_head_.present(); }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const std::string& source() const { return source_; }
  // Whether the matrices are random (Checkpoint::random), and their seed.
  bool random() const { return random_; }
  // The context the model was configured with (max_position_embeddings):
  // config().max_positions but for random weights.
  uint32_t configured_positions() const { return random_ ? configured_positions_ : config_.max_positions; }
  // Read from a GGUF file (its tokenizer is in its metadata, not beside it).
  bool gguf() const { return gguf_; }
  // A GGUF file's own tokenizer as tokenizer.json text (gguf_tokenizer_json); empty where it has none.
  const std::string& embedded_tokenizer() const { return embedded_tokenizer_; }
  // A GGUF file's tokenizer.chat_template; empty where it has none.
  const std::string& embedded_chat_template() const { return embedded_chat_template_; }
  uint32_t seed() const { return seed_; }

 private:
  Checkpoint() = default;
  void check_shapes();
  // The model in a GGUF file's bytes, which this checkpoint already owns (owned_ or gguf_mapping_).
  void read_gguf(std::span<const std::byte> bytes, const std::string& source);

  ModelConfig config_;
  std::string source_;
  DType matrix_dtype_ = DType::f32;
  Weight embedding_, final_norm_, lm_head_;
  std::vector<LayerWeights> layers_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // the mappings that Hugging Face weights point into
  // A GGUF file's block-quantized tensors, widened to fp16 (widen).
  std::vector<std::vector<std::byte>> widened_;
  std::span<const std::byte> widen(const GgufTensor& tensor);
  std::vector<std::byte> owned_;  // a llama2.c file's bytes (or GGUF bytes given in memory); a random one's norms and biases
  std::unique_ptr<MappedFile> gguf_mapping_;  // a GGUF file opened from disk, which its tensors point into
  bool random_ = false, gguf_ = false;
  uint32_t configured_positions_ = 0;
  std::string embedded_tokenizer_;
  std::string embedded_chat_template_;
  uint32_t seed_ = 0;
};

// Floats of a weight, widened from its dtype (norms, biases, references).
std::vector<float> to_floats(const Weight& weight);

}  // namespace kv::model
