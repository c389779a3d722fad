#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "args.h"
#include "io/capture.h"
#include "kernels/clocks.h"
#include "commands.h"
#include "validation.h"
#include "base/error.h"
#include "kernels/attention.h"
#include "reference/dense_attention.h"

namespace kv::cli {

const char* const kDenseHelp =
    "usage: kvscope dense --capture FILE [--layer L] (--decode [--probes N] | --prefill [--chunk B]\n"
    "                     [--chunk-index C]) [--repeat N] [--check] [--json]\n\n"
    "Runs dense causal attention on the GPU for one layer and prints the GPU time\n"
    "of each stage (median over --repeat runs).\n"
    "  --decode          the last N positions (default 64) as decode probes\n"
    "  --prefill         one chunk of B queries (default 128) over its causal past;\n"
    "                    --chunk-index picks it (default: the last chunk)\n"
    "  --layer L         layer index (default: the capture's first layer)\n"
    "  --check           compare with the float64 CPU reference; exit 1 if the\n"
    "                    relative output error exceeds 1e-3\n"
    "  --json            print one JSON object instead of text\n";

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct CheckResult {
  double max_output_error = 0;  // max over rows of |o - o_ref| / |o_ref|
  double max_lse_error = 0;     // max over rows of |lse - lse_ref|
};

CheckResult check_against_reference(const CaptureLayer& layer, double scale, std::span<const std::byte> queries,
                                    std::span<const uint32_t> positions, const std::vector<float>& output,
                                    const std::vector<float>& lse) {
  std::vector<float> q = to_float(layer.dtype, queries);
  std::vector<float> k = to_float(layer.dtype, layer.k->data);
  std::vector<float> v = to_float(layer.dtype, layer.v->data);
  reference::DenseResult expected = reference::dense_attention(layer.shape, scale, q, k, v, positions);
  CheckResult result;
  const size_t d = layer.shape.dim;
  for (size_t row = 0; row < expected.log_sum_exp.size(); ++row) {
    double difference = 0, norm = 0;
    for (size_t c = 0; c < d; ++c) {
      double e = expected.output[row * d + c];
      difference += (output[row * d + c] - e) * (output[row * d + c] - e);
      norm += e * e;
    }
    double error = std::sqrt(difference) / std::max(std::sqrt(norm), 1e-30);
    result.max_output_error = std::max(result.max_output_error, std::isnan(error) ? INFINITY : error);
    double lse_error = std::fabs(lse[row] - expected.log_sum_exp[row]);
    result.max_lse_error = std::max(result.max_lse_error, std::isnan(lse_error) ? INFINITY : lse_error);
  }
  return result;
}

}  // namespace

namespace {

// The queries a run times: the last probes (decode) or one chunk (prefill).
std::vector<uint32_t> dense_positions(const Args& args, uint32_t T) {
  std::vector<uint32_t> positions;
  if (args.flag("decode")) {
    const uint32_t probes = std::min(args.count("probes", 64, 1), T);
    for (uint32_t t = T - probes; t < T; ++t) positions.push_back(t);
  } else {
    const uint32_t chunk = args.count("chunk", 128, 1);
    const uint32_t chunks = (T + chunk - 1) / chunk;
    const uint32_t index = args.count("chunk-index", chunks - 1, 0, chunks - 1);
    for (uint32_t i = index * chunk; i < std::min(T, (index + 1) * chunk); ++i) positions.push_back(i);
  }
  return positions;
}

// The stages' median GPU ms over `repeat` runs of the pass, in recorded order.
std::vector<std::pair<std::string, double>> median_stages(const vk::Device& device, const GpuLayer& layer, vk::Pass& pass,
                                                          uint32_t repeat) {
  std::map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;
  raise_clocks(device, layer.keys);
  for (uint32_t i = 0; i < repeat; ++i) {
    pass.run();
    for (const vk::StageTime& t : pass.stage_times()) {
      if (!samples.count(t.stage)) order.push_back(t.stage);
      samples[t.stage].push_back(t.milliseconds);
    }
  }
  std::vector<std::pair<std::string, double>> medians;
  for (const std::string& stage : order) medians.emplace_back(stage, median(samples[stage]));
  return medians;
}

void print_dense(const nlohmann::json& report, const CaptureLayer& layer, const std::string& device,
                 const std::vector<std::pair<std::string, double>>& stages) {
  std::printf("device    %s\nlayer     %d  (H=%u G=%u d=%u T=%u %s)\n", device.c_str(), layer.index, layer.shape.heads,
              layer.shape.kv_heads, layer.shape.dim, layer.shape.tokens, dtype_name(layer.dtype));
  std::printf("%-9s %u queries, positions %u..%u\n", report["mode"].get<std::string>().c_str(), report["queries"].get<uint32_t>(),
              report["first_position"].get<uint32_t>(), report["last_position"].get<uint32_t>());
  std::printf("\n%-16s %12s\n", "stage", "GPU ms");
  for (const auto& [stage, ms] : stages) std::printf("%-16s %12.4f\n", stage.c_str(), ms);
  std::printf("%-16s %12.4f   (median of %u runs)\n", "total", report["timings_ms"]["total"].get<double>(),
              report["repeat"].get<uint32_t>());
  if (report.contains("check"))
    std::printf("\ncheck     max relative output error %.3g, max log-sum-exp error %.3g: %s\n",
                report["check"]["max_output_relative_error"].get<double>(), report["check"]["max_log_sum_exp_error"].get<double>(),
                report["check"]["pass"].get<bool>() ? "pass" : "FAIL");
}

}  // namespace

int run_dense(const GlobalOptions& global, const std::vector<std::string>& argv) {
  const Args args("dense", argv, {"capture", "layer", "probes", "chunk", "chunk-index", "repeat"},
                  {"decode", "prefill", "check", "json"});
  if (!args.positional().empty()) throw InputError("dense: unexpected argument '" + args.positional()[0] + "'");
  if (args.flag("decode") == args.flag("prefill")) throw InputError("dense: give exactly one of --decode and --prefill");
  Capture capture(args.required("capture"));
  require_finite(capture, global.allow_nonfinite);
  const CaptureLayer& layer =
      capture.layer(args.has("layer") ? int(args.count("layer", 0, 0, 1u << 20)) : capture.layers().front().index);
  const uint32_t repeat = args.count("repeat", 1, 1, 100000);
  const std::vector<uint32_t> positions = dense_positions(args, layer.shape.tokens);

  vk::Device device(global.device);
  GpuLayer gpu_layer(device, capture, layer);
  const uint32_t n = uint32_t(positions.size());
  Attention dense(device, layer.shape, layer.dtype, Attention::Keys::dense, n);
  const std::vector<std::byte> queries = gather_queries(layer.shape, layer.dtype, layer.q->data, positions);
  vk::Buffer query_buffer(device, queries.size());
  query_buffer.upload(queries);
  vk::Pass pass(device);
  dense.record(pass, gpu_layer, {&query_buffer, n, positions.front()}, "dense");
  const auto stages = median_stages(device, gpu_layer, pass, repeat);

  nlohmann::json report = {{"device", device.info().name}, {"capture", args.required("capture")},
                           {"layer", layer.index}, {"mode", args.flag("decode") ? "decode" : "prefill"},
                           {"queries", positions.size()}, {"first_position", positions.front()},
                           {"last_position", positions.back()}, {"repeat", repeat}};
  double total = 0;
  for (const auto& [stage, ms] : stages) {
    report["timings_ms"][stage] = ms;
    total += ms;
  }
  report["timings_ms"]["total"] = total;
  bool failed = false;
  if (args.flag("check")) {
    const CheckResult check = check_against_reference(layer, capture.scale(layer), queries, positions, dense.output(n),
                                                      dense.log_sum_exp(n));
    failed = !(check.max_output_error <= 1e-3);
    report["check"] = {{"max_output_relative_error", check.max_output_error},
                       {"max_log_sum_exp_error", check.max_lse_error},
                       {"pass", !failed}};
  }
  if (args.flag("json")) std::printf("%s\n", report.dump(2).c_str());
  else print_dense(report, layer, device.info().name, stages);
  return exit_code(global, device, failed ? 1 : 0);
}

}  // namespace kv::cli
