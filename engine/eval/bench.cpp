#include "eval/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "../shaders/layouts.h"
#include "base/error.h"
#include "base/half.h"
#include "base/random.h"
#include "kernels/attention.h"
#include "kernels/clocks.h"
#include "methods/block_step.h"
#include "methods/table.h"
#include "stream_read.spv.h"

#include "base/median.h"

namespace kv {
namespace {

// Random values stored as `dtype`: uniform in [-2, 2), enough for timing.
std::vector<std::byte> random_tensor(size_t count, DType dtype, uint64_t seed) {
  Random random(seed);
  std::vector<std::byte> bytes(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    const float x = float(random.uniform() * 4.0 - 2.0);
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &x, 4);
    } else {
      const uint16_t h = dtype == DType::f16 ? float_to_half(x) : float_to_bf16(x);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

// The device's read bandwidth: stream_read over the largest buffer up to 1 GiB it allows.
std::pair<double, double> measure_read_bandwidth(const vk::Device& device) {
  uint64_t bytes = std::min<uint64_t>(uint64_t(1) << 30, device.limits().maxStorageBufferRange);
  bytes = std::min<uint64_t>(bytes, device.info().device_local_bytes / 4) & ~uint64_t(15);
  vk::Buffer source(device, bytes), folded(device, 4096 * 4);
  source.fill(0x01020304u);
  vk::Kernel kernel(device, "stream_read", stream_read_spirv, {2, sizeof(layouts::StreamReadPush)}, {});
  vk::Pass pass(device);
  layouts::StreamReadPush push{uint32_t(bytes / 16)};
  pass.dispatch(kernel, {&source, &folded}, push, 4096, 1, 1, "stream_read");
  raise_clocks(device, source);
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    pass.run();
    if (i >= 3) ms.push_back(pass.total_milliseconds());
  }
  return {double(bytes) / (median(ms) * 1e6), double(bytes)};
}

// What a stage costs when it does nothing: one workgroup of stream_read over
// 4 KiB behind a barrier, as every stage is dispatched; per_stage adds the
// timestamp the stage rows pay. A step of n stages cannot take less than n
// times the untimed floor.
double measure_dispatch_floor(const vk::Device& device, vk::Pass::Timing timing) {
  constexpr uint32_t kDispatches = 16;
  vk::Buffer source(device, 4096), folded(device, 4);
  source.fill(0);
  vk::Kernel kernel(device, "stream_read", stream_read_spirv, {2, sizeof(layouts::StreamReadPush)}, {});
  vk::Pass pass(device, kDispatches, timing);
  const layouts::StreamReadPush push{4096 / 16};
  for (uint32_t i = 0; i < kDispatches; ++i) pass.dispatch(kernel, {&source, &folded}, push, 1, 1, 1, "floor");
  std::vector<double> ms;
  for (int i = 0; i < 53; ++i) {
    pass.run();
    if (i >= 3) ms.push_back(pass.total_milliseconds() / kDispatches);
  }
  return median(ms);
}

// The least a stage must move, for the GB/s column (docs/methods.md's sizes;
// fp32 scratch): the method's own stages from its row of method_table(), the
// stages every step shares here.
double stage_bytes(const MethodSpec* method, const std::string& stage, const StageSizes& s) {
  if (method) {
    const double own = method->stage_bytes(stage, s);
    if (own >= 0) return own;
  }
  const double G = s.shape.kv_heads, n = s.candidates;
  if (stage == "dense_partial") return 2 * G * n * s.kv_row() + s.shape.heads * double(s.queries) * s.kv_row();
  if (stage == "sparse_attention_partial")
    return 2 * s.list_rows * (std::min<double>(s.budget, n) + (s.queries > 1 ? s.queries : 0)) * s.kv_row();
  if (stage == "mean_query") return s.shape.heads * double(s.queries) * s.kv_row();
  // One read of every row's scores, the least a top-k needs: topk_row and
  // topk_long's slices read no more (with topk_long's sample, 4096 keys a
  // workgroup of the row, from the cache); a row that topk_long reads with one
  // workgroup is read two or more times.
  if (stage == "topk") return s.list_rows * n * 4;
  return 0;
}

struct Step {
  std::string name;    // "dense decode", "quest prefill", ...
  std::string method;  // "" = dense
  Mode mode;
};

// Dense attention's two steps, then every method's in the order of method_table(), decode first.
std::vector<Step> all_steps() {
  std::vector<Step> steps{{"dense decode", "", Mode::decode}, {"dense prefill", "", Mode::prefill}};
  for (Mode mode : {Mode::decode, Mode::prefill})
    for (const MethodSpec& m : method_table())
      if (std::find(m.bench_regimes.begin(), m.bench_regimes.end(), mode) != m.bench_regimes.end())
        steps.push_back({std::string(m.name) + " " + mode_name(mode), m.name, mode});
  return steps;
}

bool quadratic(const Step& step) { return !step.method.empty() && find_method(step.method).quadratic; }

}  // namespace

std::vector<std::string> bench_step_names() {
  std::vector<std::string> names;
  for (const Step& step : all_steps()) names.push_back(step.name);
  return names;
}

std::vector<std::string> bench_steps(const BenchConfig& c) {
  if (c.heads == 0 || c.kv_heads == 0 || c.heads % c.kv_heads)
    throw InputError("the query heads must be a positive multiple of the KV heads", "heads");
  for (uint32_t length : c.lengths)
    if (length < 2 * c.chunk) throw InputError("every length must be at least twice the chunk", "lengths");
  std::vector<std::string> wanted;
  for (const Step& step : all_steps())
    // A method that reads every past query (O(T^2)) is timed only when named.
    if (c.steps.empty() ? !quadratic(step) : std::find(c.steps.begin(), c.steps.end(), step.name) != c.steps.end())
      wanted.push_back(step.name);
  return wanted;
}

void calibrate_bench(const vk::Device& device, BenchResult& result) {
  std::tie(result.read_gigabytes_per_second, result.read_buffer_bytes) = measure_read_bandwidth(device);
  result.dispatch_floor_milliseconds = measure_dispatch_floor(device, vk::Pass::Timing::whole);
  result.timed_dispatch_floor_milliseconds = measure_dispatch_floor(device, vk::Pass::Timing::per_stage);
}

namespace {

// The data every step of one length reads: two copies of K and V, alternated
// between runs so that no run finds the last one's data in cache, and a
// chunk's random queries.
struct LengthInputs {
  AttentionShape shape;
  std::vector<std::unique_ptr<GpuLayer>> copies;
  std::vector<std::byte> all_queries;  // every position's, for the methods that read past queries
  vk::Buffer queries;
};

LengthInputs length_inputs(const vk::Device& device, const BenchConfig& c, uint32_t length, bool past_queries) {
  LengthInputs in{{c.heads, c.kv_heads, length, c.dim}, {}, {},
                  vk::Buffer(device, size_t(c.heads) * c.chunk * c.dim * dtype_size(c.dtype))};
  const size_t kv_count = size_t(c.kv_heads) * length * c.dim;
  const double scale = 1.0 / std::sqrt(double(c.dim));
  const std::vector<std::byte> keys = random_tensor(kv_count, c.dtype, 1);  // GpuLayer::host_keys: Loki's basis
  const std::vector<std::byte> values = random_tensor(kv_count, c.dtype, 2);
  for (int i = 0; i < 2; ++i) in.copies.push_back(std::make_unique<GpuLayer>(device, in.shape, c.dtype, scale, keys, values));
  // SnapKV and H2O read queries other than the step's: every position's, random.
  if (past_queries) {
    in.all_queries = random_tensor(size_t(c.heads) * length * c.dim, c.dtype, 4);
    for (auto& copy : in.copies) copy->host_queries = in.all_queries;
  }
  in.queries.upload(random_tensor(size_t(c.heads) * c.chunk * c.dim, c.dtype, 3));
  return in;
}

// One step recorded on each copy twice: `staged` times every stage, `whole`
// only the step, as a user's pipeline would run it (the timestamps between
// stages cost time of their own; docs/perf.md).
struct RecordedStep {
  std::vector<std::unique_ptr<Attention>> attention;
  std::vector<std::unique_ptr<Method>> methods;
  std::vector<std::unique_ptr<vk::Buffer>> lists, lse;
  std::vector<std::unique_ptr<vk::Pass>> staged, whole;
  uint32_t list_rows = 0;
};

RecordedStep record_step(const vk::Device& device, const BenchConfig& c, const LengthInputs& in, const Step& step,
                         const Block& block, uint32_t budget) {
  RecordedStep r;
  const bool dense = step.method.empty();
  for (const auto& copy : in.copies) {
    r.attention.push_back(std::make_unique<Attention>(device, in.shape, c.dtype, dense ? Attention::Keys::dense : Attention::Keys::sparse,
                                                      block.n_queries));
    r.staged.push_back(std::make_unique<vk::Pass>(device));
    r.whole.push_back(std::make_unique<vk::Pass>(device, 256, vk::Pass::Timing::whole));
    if (dense) {
      for (vk::Pass* pass : {r.staged.back().get(), r.whole.back().get()})
        r.attention.back()->record(*pass, *copy, {&in.queries, block.n_queries, block.first_query}, "dense");
      continue;
    }
    Method& method = *r.methods.emplace_back(make_method(device, *copy, step.method, c.options, block.mode, block.n_queries));
    const SelectionRows rows = selection_rows(in.shape, method.granularity());
    r.list_rows = rows.count;
    const uint32_t width = method.list_width(budget);
    r.lists.push_back(std::make_unique<vk::Buffer>(device, size_t(rows.count) * width * 4));
    r.lse.push_back(std::make_unique<vk::Buffer>(device, size_t(c.heads) * block.n_queries * 4));
    for (vk::Pass* pass : {r.staged.back().get(), r.whole.back().get()}) {
      method.record(*pass, block, {&in.queries, r.lse.back().get()}, budget, *r.lists.back());
      r.attention.back()->record(*pass, *copy, sparse_request(in.queries, block, *r.lists.back(), rows.heads_per_row, width),
                                 "sparse_attention");
    }
  }
  return r;
}

// The clocks up first (a stable median alone did not show that they were
// low), then warm-up until the timings settle: windows of 10 runs until a
// window's median is within 3% of the one before (at most 2 s, which on a
// CPU device, where one run can take seconds, ends the window early).
// Returns the runs made.
uint32_t warm_up(const vk::Device& device, const vk::Buffer& clock_data, RecordedStep& r) {
  raise_clocks(device, clock_data);
  const auto warm_limit = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  uint32_t warm_runs = 0;
  for (double previous = 0;;) {
    std::vector<double> window;
    for (int i = 0; i < 10 && (i < 2 || std::chrono::steady_clock::now() <= warm_limit); ++i, ++warm_runs) {
      vk::Pass& pass = *r.whole[warm_runs % r.whole.size()];
      pass.run();
      window.push_back(pass.total_milliseconds());
    }
    const double now = median(window);
    if ((previous > 0 && std::fabs(now - previous) <= 0.03 * previous) || std::chrono::steady_clock::now() > warm_limit)
      return warm_runs;
    previous = now;
  }
}

// The step's rows: each stage's median, their sum, and the whole step's
// median (and each copy's).
void time_step(const BenchConfig& c, const Step& step, const Block& block, uint32_t budget, const AttentionShape& shape,
               RecordedStep& r, uint32_t warm_runs, BenchResult& result) {
  std::map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;
  std::vector<double> totals, stage_sums;
  std::vector<std::vector<double>> copy_totals(r.whole.size());
  for (uint32_t run = 0; run < c.repeat; ++run) {
    const size_t copy = (warm_runs + run) % r.whole.size();
    r.whole[copy]->run();
    totals.push_back(r.whole[copy]->total_milliseconds());
    copy_totals[copy].push_back(totals.back());
    // The other copy for the staged run, so that neither run finds the other's K/V in cache.
    vk::Pass& pass = *r.staged[(copy + 1) % r.staged.size()];
    pass.run();
    stage_sums.push_back(pass.total_milliseconds());
    for (const vk::StageTime& t : pass.stage_times()) {
      if (!samples.count(t.stage)) order.push_back(t.stage);
      samples[t.stage].push_back(t.milliseconds);
    }
  }
  const StageSizes sizes{shape, double(dtype_size(c.dtype)), block.candidates(), block.n_queries, budget, r.list_rows, c.options};
  const MethodSpec* spec = step.method.empty() ? nullptr : &find_method(step.method);
  double total_bytes = 0;
  for (const std::string& stage : order) {
    const double bytes = stage_bytes(spec, stage, sizes);
    result.rows.push_back({shape.tokens, step.name, stage, median(samples[stage]), bytes});
    total_bytes += bytes;
  }
  result.rows.push_back({shape.tokens, step.name, "sum_of_stages", median(stage_sums), total_bytes});
  BenchRow total{shape.tokens, step.name, "total", median(totals), total_bytes};
  for (const std::vector<double>& copy : copy_totals)
    if (!copy.empty()) total.copy_milliseconds.push_back(median(copy));
  result.rows.push_back(total);
}

}  // namespace

BenchResult run_bench(const vk::Device& device, const BenchConfig& c,
                      const std::function<void(const std::string&)>& progress) {
  const std::vector<std::string> wanted = bench_steps(c);
  std::vector<Step> steps = all_steps();
  std::erase_if(steps, [&](const Step& s) { return std::find(wanted.begin(), wanted.end(), s.name) == wanted.end(); });
  const bool past_queries = std::any_of(steps.begin(), steps.end(), [](const Step& step) {
    return !step.method.empty() && find_method(step.method).reads_past_queries;
  });
  BenchResult result;
  result.device = device.info().name;
  if (c.calibrate) calibrate_bench(device, result);
  for (uint32_t length : c.lengths) {
    if (progress) progress("length " + std::to_string(length));
    const LengthInputs in = length_inputs(device, c, length, past_queries);
    const Block decode{Mode::decode, length - 1, 1};
    const Block prefill{Mode::prefill, length - c.chunk, c.chunk};
    for (const Step& step : steps) {
      const Block block = step.mode == Mode::decode ? decode : prefill;
      const uint32_t budget = step.method.empty() ? 0 : step.mode == Mode::decode ? c.budget : c.prefill_budget;
      if (progress) progress("length " + std::to_string(length) + ": " + step.name);
      RecordedStep recorded = record_step(device, c, in, step, block, budget);
      const uint32_t warm_runs = warm_up(device, in.copies[0]->keys, recorded);
      time_step(c, step, block, budget, in.shape, recorded, warm_runs, result);
    }
  }
  return result;
}

}  // namespace kv
