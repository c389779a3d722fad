#pragma once
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "sweep/results.h"

namespace kv::cli {

using sweep::write_text_atomically;

// A result as JSON text. A model's text may stop inside a character (a
// continuation cut after a token, or random weights' tokens): such bytes
// become U+FFFD rather than costing the run its output.
inline std::string json_text(const nlohmann::json& json, int indent) {
  return json.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Refuses, before any work, an output path whose folder does not exist.
inline void require_output_folder(const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder)) throw InputError("cannot write " + path + ": no folder " + folder.string());
}

}  // namespace kv::cli
