#pragma once
// Reading a model's small text files (config.json, tokenizer.json, prompts).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"

namespace kv::model {

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The tokenizer of a model: its directory's tokenizer.json, or the one
// llama2.c tok*.bin beside a .bin checkpoint.
inline std::filesystem::path default_tokenizer(const std::filesystem::path& model) {
  if (std::filesystem::is_directory(model)) return model / "tokenizer.json";
  std::filesystem::path found;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(model.parent_path().empty() ? "." : model.parent_path()))
    if (entry.path().filename().string().rfind("tok", 0) == 0 && entry.path().extension() == ".bin" && entry.path() != model)
      found = entry.path(), ++count;
  if (count != 1) throw InputError("no single tok*.bin beside " + model.string(), "tokenizer");
  return found;
}

}  // namespace kv::model
