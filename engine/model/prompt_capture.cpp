#include "model/prompt_capture.h"

#include "base/error.h"

namespace kv::model {

PromptCapture capture_prompt(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                             const RetrievalPrompt& prompt, bool has_needle, const std::vector<uint32_t>& layers,
                             uint32_t chunk, const SelectionPlan& plan) {
  const ModelConfig& config = checkpoint.config();
  const std::vector<int32_t> tokens = prompt_tokens(tokenizer, config, prompt.text);
  const uint32_t offset = config.bos_token >= 0 ? 1 : 0;  // the BOS
  const std::vector<int32_t> text_tokens(tokens.begin() + offset, tokens.end());
  if (tokens.size() < 2) throw InputError("the prompt needs at least one token after the BOS", "prompt");
  check_sequence_length(config, tokens.size());

  Model runner(device, checkpoint, uint32_t(tokens.size()), chunk);
  runner.select(plan);
  for (uint32_t l : layers) runner.keep_queries(l);
  runner.prefill(tokens);

  PromptCapture out;
  CaptureData& data = out.data;
  // Token text: the BOS's own text, then what each token adds to the prompt.
  const std::vector<std::string> rest = token_pieces(tokenizer, text_tokens, config.bos_token);
  if (offset) data.token_text.push_back(tokenizer.decode(-1, tokens.front()));
  data.token_text.insert(data.token_text.end(), rest.begin(), rest.end());
  data.token_ids = tokens;
  if (has_needle) {
    const auto [first, end] = token_span(rest, prompt.needle_first, prompt.needle_end);
    data.needle_span = std::make_pair(first + offset, end + offset);
  }
  const DType dtype = checkpoint.matrix_dtype();
  const AttentionShape shape{config.heads, config.kv_heads, uint32_t(tokens.size()), config.head_dim};
  const size_t q_bytes = size_t(shape.heads) * shape.tokens * shape.dim * dtype_size(dtype);
  const size_t kv_bytes = size_t(shape.kv_heads) * shape.tokens * shape.dim * dtype_size(dtype);
  out.storage.reserve(3 * layers.size());  // the layers' spans point into it
  for (uint32_t l : layers) {
    std::vector<std::byte>& q = out.storage.emplace_back(q_bytes);
    std::vector<std::byte>& k = out.storage.emplace_back(kv_bytes);
    std::vector<std::byte>& v = out.storage.emplace_back(kv_bytes);
    runner.kept_queries(l).download(q);
    runner.cache(l).keys.download(k);
    runner.cache(l).values.download(v);
    data.layers.push_back({int(l), shape, dtype, q, k, v});
  }
  return out;
}

}  // namespace kv::model
