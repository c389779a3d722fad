// kvscope: command-line front end of the engine. Parses global options,
// dispatches to a subcommand, and turns errors into one line and an exit code
// (2: bad usage or input, 1: device failure).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "commands.h"
#include "base/error.h"
#include "kernels/kernel_choice.h"
#include "method_args.h"

namespace {

using kv::cli::Command;

const Command kCommands[] = {
    {"devices", "list Vulkan devices", kv::cli::kDevicesHelp, kv::cli::run_devices},
    {"info", "describe a capture file", kv::cli::kInfoHelp, kv::cli::run_info},
    {"synth", "write a synthetic capture", kv::cli::kSynthHelp, kv::cli::run_synth},
    {"dense", "dense attention on the GPU, timed, checked against the float64 reference", kv::cli::kDenseHelp,
     kv::cli::run_dense},
    {"select", "run one selection method and write the selected key positions", kv::cli::kSelectHelp,
     kv::cli::run_select, true},
    {"eval", "sweep methods x budgets: coverage, recall, output error, GPU time per stage", kv::cli::kEvalHelp,
     kv::cli::run_eval, true},
    {"bench", "time every stage and dense attention at given sizes, against the read bandwidth", kv::cli::kBenchHelp,
     kv::cli::run_bench, true},
    {"generate", "run a model on the GPU and print the text it generates", kv::cli::kGenerateHelp,
     kv::cli::run_generate, true, true},
    {"capture", "write a capture of a model's Q, K and V from kvscope's own forward pass", kv::cli::kCaptureHelp,
     kv::cli::run_capture},
    {"needle", "retrieval accuracy with each method inside a model: passkey or key-value needles", kv::cli::kNeedleHelp,
     kv::cli::run_needle, true},
    {"ruler", "RULER's 11 synthetic tasks with each method inside a model, scored as RULER scores them",
     kv::cli::kRulerHelp, kv::cli::run_ruler, true},
    {"ppl", "perplexity of a text with each method inside a model, decode or prefill", kv::cli::kPplHelp, kv::cli::run_ppl,
     true},
    {"speed", "end-to-end decode ms/token or time to first token with each method inside a model", kv::cli::kSpeedHelp,
     kv::cli::run_speed, true},
    {"merge", "join the results files of a sweep's shards into the whole sweep's results and reports",
     kv::cli::kMergeHelp, kv::cli::run_merge},
    {"inspect", "one block as the viewer sees it: metrics and what a change costs", kv::cli::kInspectHelp,
     kv::cli::run_inspect, true},
};

void print_usage(FILE* out) {
  std::fprintf(out,
               "usage: kvscope [--device N|NAME] [--verbose] [--debug|--debug-sync] [--allow-nonfinite] COMMAND [options]\n\n"
               "Query-aware KV-cache selection and sparse attention on any Vulkan GPU.\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nglobal options:\n"
               "  --device N|NAME  device index or name substring (default: discrete GPU, else integrated, else CPU)\n"
               "  --verbose        more detail on stderr\n"
               "  --debug          enable the Khronos validation layer\n"
               "  --debug-sync     the validation layer with its synchronisation checks\n"
               "  --allow-nonfinite  use a capture holding NaN or Inf (refused otherwise; 'info' reports them)\n"
               "\n'kvscope COMMAND --help' describes a command.\n");
}

// The engine names a setting in its own words (InputError::setting); the CLI
// names the flag that sets it.
std::string flag_of(const std::string& setting) {
  if (setting == "decode_method") return "--method";
  if (setting == "decode_budget") return "--budget";
  std::string flag = "--" + setting;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

int main(int argc, char** argv) {
  kv::cli::GlobalOptions global;
  std::vector<std::string> rest;
  const Command* command = nullptr;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (!command && a == "--device") {
        if (i + 1 >= argc) throw kv::InputError("--device needs a value");
        global.device.selector = argv[++i];
      } else if (!command && a.rfind("--device=", 0) == 0) {
        global.device.selector = a.substr(9);
      } else if (a == "--verbose") {
        global.verbose = true;
      } else if (a == "--allow-nonfinite") {
        global.allow_nonfinite = true;
      } else if (a == "--debug-sync") {
        global.device.validation = global.device.sync_validation = true;
      } else if (a == "--debug") {
        global.device.validation = true;
      } else if (!command && (a == "--help" || a == "-h")) {
        print_usage(stdout);
        return 0;
      } else if (!command) {
        for (const Command& c : kCommands)
          if (a == c.name) command = &c;
        if (!command) throw kv::InputError("unknown command '" + a + "' (see 'kvscope --help')");
      } else {
        rest.push_back(a);
      }
    }
    if (!command) throw kv::InputError("no command given (see 'kvscope --help')");
    for (const std::string& a : rest)
      if (a == "--help" || a == "-h") {
        std::fputs(command->help, stdout);
        if (command->model_methods) std::fputs(kv::cli::kModelMethodsHelp, stdout);
        if (command->method_options) std::fputs(kv::cli::methods_help().c_str(), stdout);
        return 0;
      }
    if (global.verbose)
      for (const kv::vk::DeviceInfo& d : kv::vk::list_devices())
        if (d.supported)
          std::fprintf(stderr, "kvscope: %s: tensor-core kernels: %s\n", d.name.c_str(),
                       kv::describe_matrix_kernels(d, global.device.validation).c_str());
    return command->run(global, rest);
  } catch (const kv::InputError& e) {
    if (e.setting.empty()) std::fprintf(stderr, "kvscope: %s\n", e.what());
    else std::fprintf(stderr, "kvscope: %s%s%s: %s\n", command ? command->name : "", command ? ": " : "",
                      flag_of(e.setting).c_str(), e.what());
    return 2;
  } catch (const kv::DeviceError& e) {
    std::fprintf(stderr, "kvscope: device error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kvscope: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvscope: %s\n", e.what());
    return 1;
  }
}
