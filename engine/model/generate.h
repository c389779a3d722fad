#pragma once
// Text generation with a selection plan inside the model, as `kvscope
// generate` and `kvscope.Model.generate` run it; and a model's tokenizer found
// the way both front ends find it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/chat.h"
#include "model/checkpoint.h"
#include "model/selection_plan.h"
#include "model/tokenizer.h"
#include "vk/device.h"
#include "vk/pass.h"

namespace kv::model {

// The tokenizer at `tokenizer` where one is given; else the model's own: a
// GGUF file's embedded one, a directory's tokenizer.json or the tok*.bin
// beside a llama2.c .bin (default_tokenizer), and for random weights the
// tokenizer.json beside the config, else token ids (token_id_tokenizer).
std::unique_ptr<Tokenizer> model_tokenizer(const std::filesystem::path& model_path, const Checkpoint& checkpoint,
                                           const std::filesystem::path& tokenizer = {});
// The chat format for --chat: `forced` (--chat-format) by name, else the one
// the model's chat template holds: a GGUF file's tokenizer.chat_template, or
// chat_template in the tokenizer_config.json beside `tokenizer` (or beside
// the model). InputError (setting "chat") where there is no template.
ChatFormat model_chat_format(const std::filesystem::path& model_path, const Checkpoint& checkpoint,
                             const std::filesystem::path& tokenizer, const std::string& forced);

struct GenerateConfig {
  uint32_t steps = 256;  // new tokens at most (fewer at an end-of-sequence token)
  uint32_t chunk = 128;  // prompt tokens a prefill step takes
  double temperature = 0;  // 0: greedy (on the GPU); above: softmax(logits / T) within top_p
  double top_p = 0.9;
  uint32_t seed = 0;
  SelectionPlan plan;
  bool prompt_logits = false;  // keep the logits of every prompt position
};

struct Generation {
  std::vector<int32_t> prompt;  // the prompt's tokens, with the model's BOS where it has one
  std::vector<int32_t> ids;     // the generated tokens, the end-of-sequence token left out
  std::string text;             // their text (valid_utf8: bytes that are not UTF-8 as U+FFFD)
  double prefill_seconds = 0;   // time to first token
  double decode_ms = 0;         // per generated token after the first
  std::vector<float> prompt_logits;  // [prompt, vocab] with GenerateConfig::prompt_logits
  std::vector<vk::StageTime> stage_times;  // GPU time per stage, summed over the run
  std::map<std::string, double> ms_by_part;
};

// Called with the generated text as it is made (a token's, or a character
// that the last token completed; the pieces add up to Generation::text); and
// after each prefill chunk with (prompt tokens done, prompt tokens).
using PieceCallback = std::function<void(const std::string& piece)>;
using PrefillProgress = std::function<void(uint32_t done, uint32_t total)>;

// Runs `prompt` through the model (sized to prompt plus steps) with the plan,
// then generates. InputError for an empty prompt on a model without BOS, a
// run past the model's context, a bad temperature or top_p, or a plan the
// model cannot run.
Generation generate(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                    const std::string& prompt, const GenerateConfig& config, const PieceCallback& on_piece = {},
                    const PrefillProgress& progress = {});

}  // namespace kv::model
