#pragma once
// kvscope's bundled data (the repository's assets/: the real captures, the
// small models, the shapes, the haystack text), wherever the binary runs from.
#include <filesystem>
#include <string>

namespace kv {

// assets/`relative`: beside an installed binary or Python module
// (PREFIX/share/kvscope/assets for PREFIX/bin/kvscope or
// PREFIX/lib/python3/dist-packages/kvscope.so, as `cmake --install` and the
// .deb lay it out), else in the source tree they were built from.
std::filesystem::path bundled_asset(const std::string& relative);

}  // namespace kv
