#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "args.h"
#include "eval/bench.h"
#include "commands.h"
#include "base/error.h"
#include "output_files.h"
#include "method_args.h"
#include "methods/table.h"
#include "validation.h"

extern char** environ;

namespace kv::cli {

const char* const kBenchHelp =
    "usage: kvscope bench [--lengths 8192,32768,131072] [--heads 32] [--kv-heads 8] [--dim 128]\n"
    "                     [--dtype F16|BF16] [--budget 2048] [--prefill-budget 1024] [--chunk 128]\n"
    "                     [--repeat 50] [--steps dense-decode,quest-decode,...] [--kernel-stats]\n"
    "                     [method options] [--json OUT]\n\n"
    "Times, on random inputs of each length, dense decode (one query per head), a dense\n"
    "prefill chunk, and every method's decode step at --budget and prefill step at\n"
    "--prefill-budget where it has one (a wrong --steps name lists them all; h2o,\n"
    "O(T^2), only when named): every stage's median GPU time (after warm-up;\n"
    "two copies of K and V alternate between runs so caches do not flatter), the bytes\n"
    "it must move, the GB/s that makes, and the fraction of the device's read\n"
    "bandwidth, which bench measures first with a streaming kernel. Each step ends with\n"
    "'sum_of_stages' (the stage rows' run: a timestamp after every stage) and 'total'\n"
    "(the step run with timestamps only at its ends, as a pipeline runs it). --kernel-stats also\n"
    "prints what the driver's compiler reports for each kernel (registers, spills, ...;\n"
    "VK_KHR_pipeline_executable_properties, where the device has it).\n\n"
    "Before each step is timed the GPU reads memory flat out for two seconds: GPUs\n"
    "lower their clocks after a few idle seconds (a step's set-up on the host),\n"
    "and a step's short runs do not raise them again (docs/perf.md).\n"
    "Every step at every length runs in a process of its own (this program again,\n"
    "its output read back); --in-process times them all in this one.\n"
    "--skip-calibration leaves the bandwidth and floors out (0), as the step\n"
    "processes do.\n";

namespace {

struct BenchReport {
  BenchResult result;
  std::map<std::string, std::string> kernels;  // --kernel-stats
};

std::string hyphenated(std::string step) {
  std::replace(step.begin(), step.end(), ' ', '-');
  return step;
}

// The global options as a command line, for a step process to see the same device the same way.
std::vector<std::string> global_arguments(const GlobalOptions& global) {
  std::vector<std::string> arguments;
  if (!global.device.selector.empty()) arguments.insert(arguments.end(), {"--device", global.device.selector});
  if (global.device.sync_validation) arguments.push_back("--debug-sync");
  else if (global.device.validation) arguments.push_back("--debug");
  if (global.verbose) arguments.push_back("--verbose");
  return arguments;
}

// Runs `arguments` as this program in a new process with its standard output
// discarded; returns its exit status (128 + the signal if one ended it).
int run_this_program(std::vector<std::string> arguments) {
  std::string program = "kvscope";
  std::vector<char*> argv{program.data()};
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw DeviceError("bench: cannot start a step process: " + std::string(std::strerror(error)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw DeviceError("bench: lost a step process: " + std::string(std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// One step at one length, timed by a fresh process of this program: `bench
// ARGV --lengths L --steps S --in-process --skip-calibration --json TEMP` (a
// later option wins over an earlier one). Its rows and kernel statistics join
// `report`. Returns the process's exit status; it has said why on stderr.
int time_step_in_own_process(const GlobalOptions& global, const std::vector<std::string>& bench_argv, uint32_t length,
                             const std::string& step, BenchReport& report) {
  char path[] = "/tmp/kvscope-bench-XXXXXX";
  const int descriptor = mkstemp(path);
  if (descriptor < 0) throw InputError("bench: cannot create a temporary file in /tmp");
  close(descriptor);
  std::vector<std::string> arguments = global_arguments(global);
  arguments.push_back("bench");
  arguments.insert(arguments.end(), bench_argv.begin(), bench_argv.end());
  arguments.insert(arguments.end(), {"--lengths", std::to_string(length), "--steps", hyphenated(step), "--in-process",
                                     "--skip-calibration", "--json", path});
  const int status = run_this_program(std::move(arguments));
  nlohmann::json json;
  bool parsed = false;
  if (status == 0) {
    try {
      json = nlohmann::json::parse(std::ifstream(path));
      parsed = true;
    } catch (const nlohmann::json::exception&) {
    }
  }
  std::remove(path);
  if (status > 128)
    std::fprintf(stderr, "kvscope: bench: the process timing %s at %u ended by signal %d\n", step.c_str(), length,
                 status - 128);
  if (status != 0) return status;
  if (!parsed) throw DeviceError("bench: the process timing " + step + " at " + std::to_string(length) + " wrote no result");
  for (const nlohmann::json& row : json["rows"]) {
    BenchRow r{row["length"], row["step"], row["stage"], double(row["time_us"]) * 1e-3, row["bytes"], {}};
    if (row.contains("per_copy_us"))
      for (double us : row["per_copy_us"]) r.copy_milliseconds.push_back(us * 1e-3);
    report.result.rows.push_back(r);
  }
  if (json.contains("kernels"))
    for (const auto& [kernel, statistics] : json["kernels"].items()) report.kernels[kernel] = statistics;
  return 0;
}

// The shape and method parameters the rows were timed at, so that a script
// comparing them with other measurements (tools/peers/bench_torch.py) can check it
// compares the same step.
nlohmann::json config_json(const BenchConfig& config, const std::string& dtype) {
  nlohmann::json json = {{"heads", config.heads},
          {"kv_heads", config.kv_heads},
          {"dim", config.dim},
          {"dtype", dtype},
          {"budget", config.budget},
          {"prefill_budget", config.prefill_budget},
          {"chunk", config.chunk},
          {"repeat", config.repeat}};
  for (const OptionSpec& o : option_table()) {  // page_size, gqa_agg, ...
    if (o.names.empty()) json[o.keyword()] = o.get(config.options); else json[o.keyword()] = o.text(config.options);
  }
  return json;
}

void print_report(const BenchConfig& config, const std::string& dtype, const BenchReport& report, bool kernel_stats,
                  bool statistics_offered, const std::string& json_path) {
  const BenchResult& r = report.result;

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
                         {"config", config_json(config, dtype)},
                         {"rows", nlohmann::json::array()}};
  // --skip-calibration measures no read bandwidth: no fraction of it ("-", null).
  const bool calibrated = r.read_gigabytes_per_second > 0;
  for (const BenchRow& row : r.rows) {
    const double fraction = calibrated ? row.gigabytes_per_second() / r.read_gigabytes_per_second : 0;
    std::string per_copy;
    std::vector<double> per_copy_us;
    for (double ms : row.copy_milliseconds) {
      per_copy_us.push_back(ms * 1e3);
      char text[32];
      std::snprintf(text, sizeof text, "%s%.1f", per_copy.empty() ? "" : " / ", ms * 1e3);
      per_copy += text;
    }
    if (row.bytes > 0) {
      char of_read[16] = "-";
      if (calibrated) std::snprintf(of_read, sizeof of_read, "%.0f%%", 100 * fraction);
      std::printf("%-8u %-15s %-26s %11.1f %10.2f %9.0f %8s  %s\n", row.length, row.step.c_str(), row.stage.c_str(),
                  row.milliseconds * 1e3, row.bytes / 1e6, row.gigabytes_per_second(), of_read, per_copy.c_str());
    } else
      std::printf("%-8u %-15s %-26s %11.1f %10s %9s %8s  %s\n", row.length, row.step.c_str(), row.stage.c_str(),
                  row.milliseconds * 1e3, "-", "-", "-", per_copy.c_str());
    nlohmann::json json_row = {{"length", row.length}, {"step", row.step}, {"stage", row.stage},
                               {"time_us", row.milliseconds * 1e3}, {"bytes", row.bytes},
                               {"gb_per_s", row.gigabytes_per_second()},
                               {"fraction_of_read", calibrated ? nlohmann::json(fraction) : nlohmann::json()}};
    if (!per_copy_us.empty()) json_row["per_copy_us"] = per_copy_us;
    json["rows"].push_back(json_row);
  }
  if (kernel_stats) {
    std::printf("\nkernel statistics (the driver's compiler, per kernel and specialization constants):\n");
    if (!statistics_offered) std::printf("  the device does not offer VK_KHR_pipeline_executable_properties\n");
    for (const auto& [kernel, statistics] : report.kernels) {
      std::printf("  %s: %s\n", kernel.c_str(), statistics.c_str());
      json["kernels"][kernel] = statistics;
    }
  }
  if (!json_path.empty()) write_text_atomically(json_path, json.dump(2) + "\n");
}

// bench's settings from its arguments; `dtype` as the user spelled it.
BenchConfig parse_bench_config(const Args& args, std::string& dtype) {
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
    for (const std::string& name : known) spelled += (spelled.empty() ? "" : ", ") + hyphenated(name);
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
  dtype = args.text("dtype", "F16");
  if (dtype == "F16") config.dtype = DType::f16;
  else if (dtype == "BF16") config.dtype = DType::bf16;
  else throw InputError("bench: --dtype must be F16 or BF16");

  config.calibrate = !args.flag("skip-calibration");
  return config;
}

}  // namespace

int run_bench(const GlobalOptions& global, const std::vector<std::string>& argv) {
  std::set<std::string> values = method_value_options();
  values.insert({"lengths", "heads", "kv-heads", "dim", "dtype", "budget", "prefill-budget", "repeat", "json", "steps"});
  const Args args("bench", argv, values, {"kernel-stats", "in-process", "skip-calibration"});
  std::string dtype;
  const BenchConfig config = parse_bench_config(args, dtype);
  const std::vector<std::string> steps = bench_steps(config);
  const std::string json_path = args.text("json", "");

  // One process for a single step, as the step processes themselves are asked.
  const bool own_processes = !args.flag("in-process") && config.lengths.size() * steps.size() > 1;
  vk::DeviceOptions device_options = global.device;
  device_options.kernel_statistics = args.flag("kernel-stats");
  BenchReport report;
  bool statistics_offered = false;
  int status = 0;
  {
    vk::Device device(device_options);
    statistics_offered = device.kernel_statistics_enabled();
    if (own_processes) {
      report.result.device = device.info().name;
      if (config.calibrate) calibrate_bench(device, report.result);
    } else {
      report.result = kv::run_bench(device, config, [&](const std::string& what) {
        if (global.verbose) std::fprintf(stderr, "bench: %s\n", what.c_str());
      });
    }
    report.kernels = device.kernel_statistics();
    status = exit_code(global, device, 0);
  }
  if (own_processes)
    for (uint32_t length : config.lengths)
      for (const std::string& step : steps) {
        if (global.verbose) std::fprintf(stderr, "bench: length %u: %s, in its own process\n", length, step.c_str());
        if (const int step_status = time_step_in_own_process(global, argv, length, step, report); step_status != 0)
          return step_status;
      }
  print_report(config, dtype, report, args.flag("kernel-stats"), statistics_offered, json_path);
  return status;
}

}  // namespace kv::cli
