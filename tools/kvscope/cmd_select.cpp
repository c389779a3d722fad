#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "io/capture.h"
#include "commands.h"
#include "validation.h"
#include "base/error.h"
#include "eval/evaluator.h"
#include "method_args.h"

namespace kv::cli {

const char* const kSelectHelp =
    "usage: kvscope select --capture FILE --layer L --method M --budget K\n"
    "                      (--decode [--probes N] | --prefill [--chunk B] [--chunks N]) [method options]\n"
    "                      --out SEL.safetensors [--json]\n\n"
    "Runs one selection method on the GPU for every decode probe (the last N\n"
    "positions, default 64) or prefill chunk (B queries, default 128; chunk 0,\n"
    "which has no past, is skipped; --chunks N keeps the last N) and writes the\n"
    "selection file of docs/cli.md:\n"
    "indices I32 [blocks, rows, K'] (ascending, -1 padded; K' = K, or the page size\n"
    "for quest when K is smaller), block_pos I32 [blocks], and metadata.\n\n"
    "--json prints the run's metadata and median GPU time per stage.\n";

int run_select(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = method_value_options();
  values.insert({"capture", "layer", "method", "budget", "out"});
  std::set<std::string> flags = kModeFlags;
  flags.insert("json");
  Args args("select", argv, values, flags);
  if (!args.positional().empty()) throw InputError("select: unexpected argument '" + args.positional()[0] + "'");
  const Mode mode = parse_mode(args, "select");
  const MethodOptions options = parse_method_options(args);
  const std::string method = args.required("method"), out = args.required("out");
  const uint32_t budget = args.required_count("budget", 1, 1u << 20);
  Capture capture(args.required("capture"));
  require_finite(capture, global.allow_nonfinite);
  const CaptureLayer& layer = capture.layer(int(args.count("layer", 0, 0, 1u << 20)));
  vk::Device device(global.device);
  SelectionResult r = select_layer(device, capture, layer, method, options, mode, budget, args.count("probes", 64, 1),
                                   args.count("chunk", 128, 1, 4096), args.count("chunks", 0));

  std::vector<int32_t> positions(r.block_positions.begin(), r.block_positions.end());
  const uint64_t blocks = positions.size();
  write_safetensors(out,
                    {{"indices", DType::i32, {blocks, r.rows, r.width}, std::as_bytes(std::span(r.indices))},
                     {"block_pos", DType::i32, {blocks}, std::as_bytes(std::span(positions))}},
                    {{"method", method},
                     {"mode", mode_name(mode)},
                     {"budget", std::to_string(budget)},
                     {"granularity", granularity_name(r.granularity)},
                     {"params", r.params.dump()},
                     {"capture", args.required("capture")},
                     {"layer", std::to_string(layer.index)}});
  nlohmann::json summary = {{"out", out}, {"method", method}, {"mode", mode_name(mode)}, {"budget", budget},
                            {"layer", layer.index}, {"granularity", granularity_name(r.granularity)},
                            {"params", r.params}, {"blocks", blocks}, {"rows", r.rows}, {"width", r.width},
                            {"device", device.info().name}};
  for (const vk::StageTime& t : r.timings) summary["timings_ms"][t.stage] = t.milliseconds;
  if (args.flag("json")) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("wrote %s: %s %s, budget %u, %llu blocks x %u %s rows x %u\n", out.c_str(), method.c_str(),
                mode_name(mode), budget, (unsigned long long)blocks, r.rows, granularity_name(r.granularity), r.width);
    for (const vk::StageTime& t : r.timings) std::printf("  %-20s %10.4f ms (median per block)\n", t.stage.c_str(), t.milliseconds);
  }
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
