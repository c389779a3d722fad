#pragma once
// What a model is, as the runner needs it: the shapes and constants of a
// Llama-family decoder, read from a Hugging Face config.json or a llama2.c
// checkpoint's header, and refused with one line naming the field when
// kvscope cannot run it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kv::model {

// How RoPE pairs a head's channels: Hugging Face rotates channel c with
// c + d/2 (rotate_half); llama2.c rotates the neighbours (2i, 2i + 1).
enum class RopePairs { half_split, interleaved };

struct ModelConfig {
  std::string architecture;  // LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, llama2.c
  uint32_t hidden = 0;       // model dimension
  uint32_t layers = 0;
  uint32_t heads = 0;     // query heads H
  uint32_t kv_heads = 0;  // key/value heads G
  uint32_t head_dim = 0;  // d
  uint32_t intermediate = 0;  // SwiGLU width
  uint32_t vocab = 0;
  uint32_t max_positions = 0;  // the longest sequence the model takes
  double rms_eps = 1e-5;
  bool qkv_bias = false;       // Qwen2 (Qwen3 with attention_bias)
  bool qk_norm = false;        // Qwen3: an RMSNorm of each head's q and k (weights [d]) before RoPE
  bool tied_embeddings = false;  // the LM head is the embedding
  RopePairs rope_pairs = RopePairs::half_split;
  // RoPE's inverse frequencies, one per channel pair [d / 2], after any scaling (Llama 3's).
  std::vector<double> rope_inverse_frequencies;
  // RoPE's cos and sin scaled by this (YaRN's attention factor, transformers'
  // attention_scaling); 1 for the other scalings.
  double rope_attention_factor = 1.0;
  uint32_t sliding_window = 0;  // Mistral: 0 = none
  int32_t bos_token = -1;       // -1: the model has none
  std::vector<int32_t> eos_tokens;
};

// A Hugging Face directory's config.json, for the architectures above.
ModelConfig read_hf_config(const std::filesystem::path& config_json);
// The same from the file's text; `source` names it in errors.
ModelConfig parse_hf_config(const std::string& text, const std::string& source);

// Refuses a sequence of `tokens` the model cannot attend over: past its
// context, or past a sliding window (kvscope attends over every key).
void check_sequence_length(const ModelConfig& config, uint64_t tokens);

}  // namespace kv::model
