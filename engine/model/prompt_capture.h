#pragma once
// A prompt's queries, keys and values through the model, as a capture holds
// them (docs/capture.md): what `kvscope capture` writes, and what the viewer
// opens when it re-runs one of `kvscope needle`'s prompts.
#include <cstdint>
#include <string>
#include <vector>

#include "io/capture.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "model/prompts.h"
#include "model/tokenizer.h"

namespace kv::model {

struct PromptCapture {
  CaptureData data;  // its layers' spans point into storage
  std::vector<std::vector<std::byte>> storage;
};

// Runs `prompt` (with the model's BOS) through a model with `plan` selected,
// keeping the queries of `layers`; `has_needle` records the needle's token span.
PromptCapture capture_prompt(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                             const RetrievalPrompt& prompt, bool has_needle, const std::vector<uint32_t>& layers,
                             uint32_t chunk, const SelectionPlan& plan = {});

}  // namespace kv::model
