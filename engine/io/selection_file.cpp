#include "io/selection_file.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/safetensors.h"

namespace kv {
namespace {

std::vector<int32_t> int32_values(const TensorView& t) {
  std::vector<int32_t> values(t.elements());
  std::memcpy(values.data(), t.data.data(), values.size() * sizeof(int32_t));
  return values;
}

}  // namespace

SelectionFile read_selection_file(const std::filesystem::path& path) {
  SafetensorsFile file(path);
  const auto& metadata = file.metadata();
  auto text = [&](const std::string& key) -> const std::string& {
    auto found = metadata.find(key);
    if (found == metadata.end()) file.fail("", "metadata lacks '" + key + "' (not a selection file?)");
    return found->second;
  };
  SelectionFile s;
  s.method = text("method");
  const std::string& mode = text("mode");
  if (mode != "decode" && mode != "prefill") file.fail("", "metadata mode '" + mode + "' is not decode or prefill");
  s.mode = mode == "decode" ? Mode::decode : Mode::prefill;
  const std::string& granularity = text("granularity");
  if (granularity != "query_head" && granularity != "kv_head")
    file.fail("", "metadata granularity '" + granularity + "' is not query_head or kv_head");
  s.granularity = granularity == "query_head" ? Granularity::query_head : Granularity::kv_head;
  const std::string& budget = text("budget");
  if (budget.empty() || budget.size() > 9 || budget.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(budget) == 0)
    file.fail("", "metadata budget '" + budget + "' is not a positive integer");
  s.budget = uint32_t(std::stoul(budget));
  s.params = text("params");
  if (!nlohmann::json::accept(s.params)) file.fail("", "metadata params is not JSON");

  const TensorView* indices = file.find("indices");
  const TensorView* positions = file.find("block_pos");
  if (!indices) file.fail("indices", "is missing");
  if (!positions) file.fail("block_pos", "is missing");
  if (indices->dtype != DType::i32 || indices->shape.size() != 3) file.fail("indices", "must be I32 [n_blocks, n_rows, K]");
  if (positions->dtype != DType::i32 || positions->shape.size() != 1 || positions->shape[0] != indices->shape[0])
    file.fail("block_pos", "must be I32 [n_blocks], as many as indices has blocks");
  for (uint64_t extent : indices->shape)
    if (extent > (uint64_t(1) << 31)) file.fail("indices", "has an extent beyond 2^31");
  s.blocks = uint32_t(indices->shape[0]);
  s.rows = uint32_t(indices->shape[1]);
  s.width = uint32_t(indices->shape[2]);
  s.indices = int32_values(*indices);
  s.block_positions = int32_values(*positions);
  for (int32_t p : s.block_positions)
    if (p < 0) file.fail("block_pos", "holds a negative position");
  for (size_t row = 0; row < size_t(s.blocks) * s.rows; ++row) {
    const int32_t* r = s.indices.data() + row * s.width;
    for (uint32_t i = 0; i < s.width; ++i) {
      if (r[i] < -1) file.fail("indices", "holds " + std::to_string(r[i]) + " (positions are >= 0, padding is -1)");
      if (r[i] == -1) {
        for (uint32_t rest = i; rest < s.width; ++rest)
          if (r[rest] != -1) file.fail("indices", "row " + std::to_string(row) + " has a position after its padding");
        break;
      }
      if (i > 0 && r[i] <= r[i - 1]) file.fail("indices", "row " + std::to_string(row) + " is not strictly ascending");
    }
  }
  return s;
}

}  // namespace kv
