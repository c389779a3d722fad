#pragma once
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "error.h"

namespace kv::cli {

// Writes `text` to a temporary beside `path`, then renames it: a failure leaves no partial file.
inline void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  std::ofstream out(temporary, std::ios::trunc);
  out << text;
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw InputError("cannot write " + path);
  }
}

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
