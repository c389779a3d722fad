#pragma once
// A model's weights in host memory, by role, from a Hugging Face directory
// (config.json with model.safetensors, or shards listed by
// model.safetensors.index.json) or a llama2.c checkpoint (.bin). Every tensor
// is checked against the config before anything reaches the device; a missing,
// misshapen or mistyped one is refused with a line naming it.
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/ggml_blocks.h"
#include "io/mapped_file.h"
#include "io/safetensors.h"
#include "model/config.h"

namespace kv::model {

// One weight: its dtype, shape and bytes (in a mapped file or the checkpoint's
// own memory; none for a matrix of random weights, which the device draws).
// A block-quantized matrix (a GGUF file's Q4_K, or random weights of a
// --weight-type) holds ggml's blocks of `blocks`, which stay blocks on the
// device; its dtype is then fp16, the type its values are computed in.
struct Weight {
  std::string name;  // as the file names it
  DType dtype = DType::f32;
  std::vector<uint64_t> shape;
  std::span<const std::byte> data;
  std::optional<formats::GgmlType> blocks;
  bool present() const { return !shape.empty(); }
  uint64_t count() const;
  // Its bytes in its own form (blocks, or count x the dtype's size).
  uint64_t bytes() const;
};

// What --weight-type names: every matrix as ggml blocks of one type, or
// llama.cpp's Q4_K_M / Q5_K_M mix of Q4_K / Q5_K with Q6_K for the LM head
// and for the v and down projections of llama.cpp's chosen layers (the first
// and last eighth, and every third between).
struct WeightType {
  formats::GgmlType blocks;
  bool k_m_mix = false;
  std::string name() const;  // "Q4_K_M", "Q8_0"
};
// The type --weight-type names (case-insensitive: q8_0, q4_k, Q4_K_M; f16:
// none), or InputError listing the names.
std::optional<WeightType> parse_weight_type(const std::string& text);

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
  // A llama-architecture GGUF file from its bytes (formats/gguf.h, model/gguf_model.h): F32,
  // F16 or BF16 tensors, and the block-quantized types of
  // formats/ggml_blocks.h kept as blocks, any mix of them (the plain
  // matrices of such a mix are converted to fp16, the type the blocks'
  // values are computed in); RoPE on neighbouring channels as llama.cpp's
  // converter leaves q and k. `open` reads a file starting "GGUF" this way.
  static Checkpoint from_gguf(std::vector<std::byte> bytes, const std::string& source);
  // The shapes of a Hugging Face config.json (or a directory holding one) with
  // random fp16 matrices that the device draws from `seed`
  // (model/random_weights.h), norms of ones and zero biases: a model to time
  // at its real size without its weights. Random weights mean nothing at
  // any length, so the model takes up to kRandomWeightPositions positions
  // whatever the config's max_position_embeddings (configured_positions()):
  // Llama-3-8B timed at 32k as its papers time it. With `blocks` every
  // matrix is drawn as ggml blocks of that type (model_random_fill.comp),
  // refused in one line where a matrix's rows are not whole blocks.
  static Checkpoint random(const std::filesystem::path& config, uint32_t seed,
                           const std::optional<WeightType>& blocks = std::nullopt);
  // Every matrix quantized to `type` on the host (formats/ggml_quantize.h),
  // as llama.cpp's quantizer would: a matrix whose rows are not whole
  // 256-value blocks takes the K type's 32-value stand-in (Q4_K: Q5_0, Q5_K:
  // Q5_1, Q6_K: Q8_0, Q2_K and Q3_K: Q4_0). Refused for random or already
  // quantized weights.
  void quantize(const WeightType& type);
  static constexpr uint32_t kRandomWeightPositions = 1u << 20;

  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  ~Checkpoint();

  const ModelConfig& config() const { return config_; }
  // The dtype of the embedding and every projection (norms and biases may
  // differ): the type their values are computed in, fp16 where any is blocks.
  DType matrix_dtype() const { return matrix_dtype_; }
  // The bytes of the embedding and every projection in their own forms: what
  // the device holds of them.
  uint64_t matrix_bytes() const;
  // The matrices' forms, as llama.cpp names them, counted: "F16", or
  // "Q4_K x 161, Q6_K x 33" for a quantized file.
  std::string matrix_types() const;
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
  // A quantized GGUF file's plain matrices converted to fp16 (to_half), and
  // the blocks of matrices quantized here (quantize).
  std::vector<std::vector<std::byte>> converted_;
  void to_half(Weight& weight);
  // Every matrix, for the checks and sums over them.
  std::vector<const Weight*> matrices() const;
  std::vector<std::byte> owned_;  // a llama2.c file's bytes (or GGUF bytes given in memory); a random one's norms and biases
  std::unique_ptr<MappedFile> gguf_mapping_;  // a GGUF file opened from disk, which its tensors point into
  bool random_ = false, gguf_ = false;
  uint32_t configured_positions_ = 0;
  std::string embedded_tokenizer_;
  std::string embedded_chat_template_;
  uint32_t seed_ = 0;
};

// Floats of a weight, widened from its dtype or dequantized from its blocks
// (norms, biases, references; formats::dequantize's values).
std::vector<float> to_floats(const Weight& weight);

}  // namespace kv::model
