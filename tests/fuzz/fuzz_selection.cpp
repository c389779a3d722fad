// libFuzzer target for the selection-file reader (docs/cli.md's `select --out`):
// any input must either read as a selection or be refused with InputError.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "../temp_files.h"
#include "base/error.h"
#include "io/selection_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path path = kv::test::temp_path("selection.safetensors");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    (void)kv::read_selection_file(path);
  } catch (const kv::InputError&) {
  }
  return 0;
}
