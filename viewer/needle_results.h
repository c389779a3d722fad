#pragma once
// A `kvscope needle --json` file as the viewer reads it (docs/cli.md).
#include <cstdint>
#include <string>
#include <vector>

#include "model/needle.h"

namespace kv::viewer {

struct NeedleResults {
  std::string path, model, tokenizer, haystack_file;
  model::NeedlePrompts prompts;  // without the haystack's text: haystack_file has it
  uint32_t chunk = 128;
  // Each cell with the plan its runs had: a re-run runs exactly that plan.
  std::vector<model::NeedleResult> cells;
};

// InputError naming the file and the field when it is not needle's JSON.
NeedleResults read_needle_results(const std::string& path);

}  // namespace kv::viewer
