#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "error.h"
#include "files.h"
#include "method_args.h"
#include "validation.h"

namespace kv::cli {

const char* const kBenchHelp =
    "usage: kvscope bench [--lengths 8192,32768,131072] [--heads 32] [--kv-heads 8] [--dim 128]\n"
    "                     [--dtype F16|BF16] [--budget 2048] [--prefill-budget 1024] [--chunk 128]\n"
    "                     [--repeat 50] [--steps dense-decode,quest-decode,...] [--kernel-stats]\n"
    "                     [method options] [--json OUT]\n\n"
    "Times, on random inputs of each length, dense decode (one query per head), a dense\n"
    "prefill chunk, quest, fier, quoka, keydiff, tova, sparq, loki, snapkv and sampleattention decode (h2o, O(T^2):\n"
    "only with --steps h2o-decode) at --budget, and quoka and quest\n"
    "prefill chunks at --prefill-budget: every stage's median GPU time (after warm-up;\n"
    "two copies of K and V alternate between runs so caches do not flatter), the bytes\n"
    "it must move, the GB/s that makes, and the fraction of the device's read\n"
    "bandwidth, which bench measures first with a streaming kernel. Each step ends with\n"
    "'sum_of_stages' (the stage rows' run: a timestamp after every stage) and 'total'\n"
    "(the step run with timestamps only at its ends, as a pipeline runs it). --kernel-stats also\n"
    "prints what the driver's compiler reports for each kernel (registers, spills, ...;\n"
    "VK_KHR_pipeline_executable_properties, where the device has it).\n";

int run_bench(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = kMethodValueOptions;
  values.insert({"lengths", "heads", "kv-heads", "dim", "dtype", "budget", "prefill-budget", "repeat", "json", "steps"});
  Args args("bench", argv, values, {"kernel-stats"});
  if (!args.positional().empty()) throw InputError("bench: unexpected argument '" + args.positional()[0] + "'");
  BenchConfig config;
  if (args.has("lengths")) config.lengths = args.counts("lengths");
  config.heads = args.count("heads", config.heads, 1, 1024);
  config.kv_heads = args.count("kv-heads", config.kv_heads, 1, 1024);
  config.dim = args.count("dim", config.dim, 8, 512);
  config.budget = args.count("budget", config.budget, 1, 1u << 20);
  config.prefill_budget = args.count("prefill-budget", config.prefill_budget, 1, 1u << 20);
  config.chunk = args.count("chunk", config.chunk, 1, 4096);
  config.repeat = args.count("repeat", config.repeat, 1, 100000);
  config.options = parse_method_options(args);
  if (args.has("steps")) {
    const std::vector<std::string> known = bench_step_names();
    std::string spelled;  // as the option spells them: dense-decode, ...
    for (std::string name : known) {
      std::replace(name.begin(), name.end(), ' ', '-');
      spelled += (spelled.empty() ? "" : ", ") + name;
    }
    std::string list = args.text("steps", "");
    for (size_t start = 0; start <= list.size();) {
      const size_t comma = std::min(list.find(',', start), list.size());
      std::string name = list.substr(start, comma - start);
      std::replace(name.begin(), name.end(), '-', ' ');
      if (std::find(known.begin(), known.end(), name) == known.end())
        throw InputError("bench: unknown step '" + list.substr(start, comma - start) + "' (" + spelled + ")");
      config.steps.push_back(name);
      start = comma + 1;
    }
  }
  const std::string dtype = args.text("dtype", "F16");
  if (dtype == "F16") config.dtype = DType::f16;
  else if (dtype == "BF16") config.dtype = DType::bf16;
  else throw InputError("bench: --dtype must be F16 or BF16");

  vk::DeviceOptions device_options = global.device;
  device_options.kernel_statistics = args.flag("kernel-stats");
  vk::Device device(device_options);
  BenchResult r = kv::run_bench(device, config, [&](const std::string& what) {
    if (global.verbose) std::fprintf(stderr, "bench: %s\n", what.c_str());
  });
  std::printf("device %s: read bandwidth %.0f GB/s (stream_read over %.0f MiB); a stage that does nothing: %.1f us, "
              "%.1f us with its timestamp\n",
              r.device.c_str(), r.read_gigabytes_per_second, r.read_buffer_bytes / 1048576.0,
              r.dispatch_floor_milliseconds * 1e3, r.timed_dispatch_floor_milliseconds * 1e3);
  std::printf("H=%u G=%u d=%u %s, decode budget %u, prefill chunk %u with B_SA %u, median of %u runs\n\n", config.heads,
              config.kv_heads, config.dim, dtype.c_str(), config.budget, config.chunk, config.prefill_budget, config.repeat);
  std::printf("%-8s %-15s %-26s %11s %10s %9s %8s  %s\n", "length", "step", "stage", "time_us", "MB", "GB/s", "of_read",
              "per_copy_us");
  nlohmann::json json = {{"device", r.device}, {"read_gb_per_s", r.read_gigabytes_per_second},
                         {"dispatch_floor_us", r.dispatch_floor_milliseconds * 1e3},
                         {"timed_dispatch_floor_us", r.timed_dispatch_floor_milliseconds * 1e3},
                         {"rows", nlohmann::json::array()}};
  for (const BenchRow& row : r.rows) {
    const double fraction = row.gigabytes_per_second() / r.read_gigabytes_per_second;
    std::string per_copy;
    std::vector<double> per_copy_us;
    for (double ms : row.copy_milliseconds) {
      per_copy_us.push_back(ms * 1e3);
      char text[32];
      std::snprintf(text, sizeof text, "%s%.1f", per_copy.empty() ? "" : " / ", ms * 1e3);
      per_copy += text;
    }
    if (row.bytes > 0)
      std::printf("%-8u %-15s %-26s %11.1f %10.2f %9.0f %7.0f%%  %s\n", row.length, row.step.c_str(), row.stage.c_str(),
                  row.milliseconds * 1e3, row.bytes / 1e6, row.gigabytes_per_second(), 100 * fraction, per_copy.c_str());
    else
      std::printf("%-8u %-15s %-26s %11.1f %10s %9s %8s  %s\n", row.length, row.step.c_str(), row.stage.c_str(),
                  row.milliseconds * 1e3, "-", "-", "-", per_copy.c_str());
    nlohmann::json json_row = {{"length", row.length}, {"step", row.step}, {"stage", row.stage},
                               {"time_us", row.milliseconds * 1e3}, {"bytes", row.bytes},
                               {"gb_per_s", row.gigabytes_per_second()}, {"fraction_of_read", fraction}};
    if (!per_copy_us.empty()) json_row["per_copy_us"] = per_copy_us;
    json["rows"].push_back(json_row);
  }
  if (args.flag("kernel-stats")) {
    std::printf("\nkernel statistics (the driver's compiler, per kernel and specialization constants):\n");
    if (!device.kernel_statistics_enabled()) std::printf("  the device does not offer VK_KHR_pipeline_executable_properties\n");
    for (const auto& [kernel, statistics] : device.kernel_statistics()) {
      std::printf("  %s: %s\n", kernel.c_str(), statistics.c_str());
      json["kernels"][kernel] = statistics;
    }
  }
  if (args.has("json")) write_text_atomically(args.text("json"), json.dump(2) + "\n");
  return exit_code(global, device, 0);
}

}  // namespace kv::cli
