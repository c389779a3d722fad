#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kv::test {

// A path in this test process's own temporary folder.
inline std::filesystem::path temp_path(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kvscope_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

}  // namespace kv::test
