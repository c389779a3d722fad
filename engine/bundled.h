#pragma once
// kvscope's bundled data (the repository's assets/: the real captures, the
// small models, the shapes, the haystack text), wherever the binary runs from.
#include <filesystem>
#include <string>

namespace kv {

// assets/`relative`: beside an installed binary (PREFIX/share/kvscope/assets
// for PREFIX/bin/kvscope, as `cmake --install` and the .deb lay it out), else
// in the source tree the binary was built from.
std::filesystem::path bundled_asset(const std::string& relative);

}  // namespace kv
