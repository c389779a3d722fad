#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace kv::test {

// A path in this test process's own temporary folder, which goes when the
// process ends (a crash leaves it, with what the failing case wrote).
inline std::filesystem::path temp_path(const std::string& name) {
  struct Folder {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kvscope_test_" + std::to_string(::getpid()));
    ~Folder() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Folder folder;
  std::filesystem::create_directories(folder.path);
  return folder.path / name;
}

}  // namespace kv::test
