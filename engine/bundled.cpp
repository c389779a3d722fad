#include "bundled.h"

#include <system_error>

namespace kv {

std::filesystem::path bundled_asset(const std::string& relative) {
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed = binary.parent_path().parent_path() / "share" / "kvscope" / "assets" / relative;
    if (std::filesystem::exists(installed, error)) return installed;
  }
  return std::filesystem::path(KVSCOPE_SOURCE_ASSETS) / relative;
}

}  // namespace kv
