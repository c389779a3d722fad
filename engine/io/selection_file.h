#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/block.h"

namespace kv {

// A selection file (docs/cli.md, `select --out`), read back and checked in full:
// `indices` I32 [n_blocks, n_rows, K], rows ascending and -1 padded at the end;
// `block_pos` I32 [n_blocks], non-negative; metadata method, mode, budget,
// granularity and params (JSON). Anything else is an InputError naming the file.
struct SelectionFile {
  std::string method;
  Mode mode = Mode::decode;
  uint32_t budget = 0;
  Granularity granularity = Granularity::kv_head;
  std::string params;  // JSON text
  uint32_t blocks = 0, rows = 0, width = 0;
  std::vector<int32_t> indices;  // [blocks, rows, width]
  std::vector<int32_t> block_positions;
};

SelectionFile read_selection_file(const std::filesystem::path& path);

}  // namespace kv
