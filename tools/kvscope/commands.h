#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vk/device.h"

namespace kv::cli {

// The most prompt tokens a model command's prefill chunk may take: a whole
// prompt in one chunk (Model keeps a chunk within the run, and its memory
// plan counts the chunk's activations).
constexpr uint32_t kMaxChunk = 1u << 20;

struct GlobalOptions {
  vk::DeviceOptions device;
  bool verbose = false;
  bool allow_nonfinite = false;  // use captures holding NaN or Inf
};

struct Command {
  const char* name;
  const char* summary;
  const char* help;  // full usage text
  int (*run)(const GlobalOptions&, const std::vector<std::string>&);
  bool method_options = false;  // --help then lists the methods and their options
  bool model_methods = false;   // --help first lists the model commands' method flags
};

int run_devices(const GlobalOptions&, const std::vector<std::string>&);
int run_info(const GlobalOptions&, const std::vector<std::string>&);
int run_synth(const GlobalOptions&, const std::vector<std::string>&);
int run_dense(const GlobalOptions&, const std::vector<std::string>&);
int run_select(const GlobalOptions&, const std::vector<std::string>&);
int run_eval(const GlobalOptions&, const std::vector<std::string>&);
int run_bench(const GlobalOptions&, const std::vector<std::string>&);
int run_inspect(const GlobalOptions&, const std::vector<std::string>&);
int run_generate(const GlobalOptions&, const std::vector<std::string>&);
int run_capture(const GlobalOptions&, const std::vector<std::string>&);
int run_needle(const GlobalOptions&, const std::vector<std::string>&);
int run_ppl(const GlobalOptions&, const std::vector<std::string>&);
int run_speed(const GlobalOptions&, const std::vector<std::string>&);
int run_ruler(const GlobalOptions&, const std::vector<std::string>&);
int run_merge(const GlobalOptions&, const std::vector<std::string>&);

extern const char* const kDevicesHelp;
extern const char* const kInfoHelp;
extern const char* const kSynthHelp;
extern const char* const kDenseHelp;
extern const char* const kSelectHelp;
extern const char* const kEvalHelp;
extern const char* const kBenchHelp;
extern const char* const kInspectHelp;
extern const char* const kGenerateHelp;
extern const char* const kCaptureHelp;
extern const char* const kNeedleHelp;
extern const char* const kSpeedHelp;
extern const char* const kPplHelp;
extern const char* const kMergeHelp;
extern const char* const kRulerHelp;

}  // namespace kv::cli
