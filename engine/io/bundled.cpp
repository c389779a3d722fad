#include "io/bundled.h"

#include <dlfcn.h>

#include <system_error>

namespace kv {

namespace {

// PREFIX/share/kvscope/assets/`relative` for a file installed a few folders
// under PREFIX (bin/kvscope, lib/python3/dist-packages/kvscope.so); empty
// where there is none.
std::filesystem::path installed_asset(const std::filesystem::path& file, const std::string& relative) {
  std::error_code error;
  std::filesystem::path prefix = file.parent_path();
  for (int up = 0; up < 4 && !prefix.empty(); ++up, prefix = prefix.parent_path()) {
    const std::filesystem::path asset = prefix / "share" / "kvscope" / "assets" / relative;
    if (std::filesystem::exists(asset, error)) return asset;
    if (prefix == prefix.root_path()) break;
  }
  return {};
}

}  // namespace

std::filesystem::path bundled_asset(const std::string& relative) {
  std::error_code error;
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error)
    if (auto asset = installed_asset(binary, relative); !asset.empty()) return asset;
  // The code itself: the Python module runs inside python3, installed elsewhere.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&bundled_asset), &info) && info.dli_fname)
    if (auto asset = installed_asset(std::filesystem::absolute(info.dli_fname, error), relative); !asset.empty()) return asset;
  return std::filesystem::path(KVSCOPE_SOURCE_ASSETS) / relative;
}

}  // namespace kv
