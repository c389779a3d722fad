#pragma once
// A `kvscope needle --json` file as the viewer reads it (docs/cli.md).
#include <cstdint>
#include <string>
#include <vector>

#include "method.h"

namespace kv::viewer {

struct NeedleCell {
  uint32_t length = 0;
  double depth = 0;
  std::string method;  // "dense" or a method
  uint32_t budget = 0;
  std::string regime;  // "dense", "decode", "prefill" or "both"
  double accuracy = 0;
  uint32_t samples = 0;
};

struct NeedleResults {
  std::string path, model, tokenizer, task, haystack_file;
  uint32_t seed = 0, chunk = 128;
  MethodOptions options;
  std::vector<uint32_t> dense_layers;
  std::vector<NeedleCell> cells;
};

// InputError naming the file and the field when it is not needle's JSON.
NeedleResults read_needle_results(const std::string& path);

}  // namespace kv::viewer
