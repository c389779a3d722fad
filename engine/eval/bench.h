#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "methods/method.h"
#include "vk/device.h"

namespace kv {

struct BenchConfig {
  std::vector<uint32_t> lengths{8192, 32768, 131072};
  uint32_t heads = 32, kv_heads = 8, dim = 128;
  DType dtype = DType::f16;
  uint32_t budget = 2048;          // decode selections
  uint32_t prefill_budget = 1024;  // B_SA of prefill selections
  uint32_t chunk = 128;
  uint32_t repeat = 50;
  MethodOptions options;
  std::vector<std::string> steps;  // names as in BenchRow::step; empty = all but "h2o decode" (O(T^2))
  bool calibrate = true;           // measure the read bandwidth and dispatch floors first
};

// Every step bench can time, in the order it times them.
std::vector<std::string> bench_step_names();
// The steps `config` asks for, in that order; InputError for a config bench refuses.
std::vector<std::string> bench_steps(const BenchConfig& config);

// One stage of one step at one length: median GPU time, the bytes the stage
// must move at least, and what that makes of the device's read bandwidth.
struct BenchRow {
  uint32_t length = 0;
  std::string step;   // e.g. "dense decode", "quest decode", "quoka prefill"
  // A stage name; "sum_of_stages": the step timed stage by stage (a timestamp
  // between stages); "total": the step timed whole, as a pipeline runs it.
  std::string stage;
  double milliseconds = 0;
  double bytes = 0;
  // "total" rows: the median of each K/V copy's runs, to tell a slow copy from slow runs.
  std::vector<double> copy_milliseconds;
  double gigabytes_per_second() const { return milliseconds > 0 ? bytes / (milliseconds * 1e6) : 0; }
};

struct BenchResult {
  std::string device;
  double read_gigabytes_per_second = 0;  // measured with stream_read.comp
  double read_buffer_bytes = 0;
  double dispatch_floor_milliseconds = 0;        // a stage that does nothing, in a chain timed whole
  double timed_dispatch_floor_milliseconds = 0;  // the same with a timestamp after it, as stage rows are
  std::vector<BenchRow> rows;
};

// Measures the read bandwidth and dispatch floors of `result` on `device`.
void calibrate_bench(const vk::Device& device, BenchResult& result);

// Times dense attention (decode and a prefill chunk) and every method's stages
// on random inputs held twice in device memory and alternated between runs.
BenchResult run_bench(const vk::Device& device, const BenchConfig& config,
                      const std::function<void(const std::string&)>& progress = {});

}  // namespace kv
