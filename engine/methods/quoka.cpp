// QuoKA (docs/methods.md): query subselection by cosine to the chunk's mean query,
// group aggregation, cosine scores against the keys, top B_SA. Per KV head.
#include <algorithm>
#include <optional>

#include "../shaders/layouts.h"
#include "kernels/fragment_layout.h"
#include "kernels/layer_kernel.h"
#include "kernels/topk.h"
#include "methods/table.h"
#include "quoka_aggregate.spv.h"
#include "quoka_key_scores.spv.h"
#include "quoka_key_scores_fragments.spv.h"
#include "quoka_key_scores_fragments_khr.spv.h"
#include "quoka_key_scores_matrix.spv.h"
#include "quoka_key_scores_matrix_khr.spv.h"
#include "quoka_query_cosine.spv.h"

namespace kv {
namespace {

constexpr uint32_t kMaxChunkQueries = 4096;  // the cosine kernel holds a chunk's cosines in shared memory
// Under a loop limit (vk::DeviceInfo::loop_limit, lavapipe's 65535): the cosine
// kernel ranks each query against all n, a quarter of them in each of its 4
// invocations, n x n / workgroup iterations an invocation; 2048 queries take
// ~8,700 of them at 512 with the loops around.
constexpr uint32_t kMaxChunkQueriesLoopLimited = 2048;
constexpr uint32_t kMatrixKeys = 64;          // keys per tile of both tensor-core kernels
constexpr uint32_t kMatrixAggregates = 16;    // their aggregates: one fragment's rows
// Workgroups of each tensor-core kernel in all, each walking its share of the
// tiles. On the H100, quoka_key_scores_matrix: 256 beat 512, 768, 1024 and
// 2048 (docs/perf-experiments.md); quoka_key_scores_fragments: 512 beat 256,
// 384, 640, 768, 1024 and 2048.
constexpr uint32_t kMatrixWorkgroups = 256;
constexpr uint32_t kFragmentWorkgroups = 512;

// quoka_key_scores_matrix: tensor cores, fp16 keys, d a multiple of 16 whose
// tiles (keys, two aggregate fragments, scores) fit shared memory.
bool key_matrix_kernel_fits(const vk::Device& device, DType dtype, uint32_t dim) {
  const uint32_t shared = 16 * (kMatrixKeys + 2 * 16) * (dim / 8 + 1) + 4 * 4 * 16 * 16;
  return device.info().cooperative_matrix && dtype == DType::f16 && dim % 16 == 0 &&
         shared <= device.limits().maxComputeSharedMemorySize;
}

// quoka_key_scores_fragments: the same, with keys loaded straight into the
// matrix operands, where the device's fragments are laid out as it assumes
// and each lane's share of a key is whole 16-byte pieces (d a multiple of 32).
bool key_fragment_kernel_fits(const vk::Device& device, DType dtype, uint32_t dim) {
  return device.info().cooperative_matrix && dtype == DType::f16 && dim % 32 == 0 &&
         16 * 2 * 16 * (dim / 8 + 1) <= device.limits().maxComputeSharedMemorySize && has_mma_fragment_layout(device);
}

class Quoka final : public Method {
 public:
  Quoka(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, uint32_t max_queries)
      : layer_(layer),
        options_(options),
        query_kernel_(make_layer_kernel<layouts::QuokaPush>(device, "quoka_query_cosine", quoka_query_cosine_spirv, 4,
                                                            layer.shape, layer.dtype,
                                                            {checked(device, max_queries),
                                                             query_workgroup(device, max_queries, options.n_q, layer.shape.dim),
                                                             kept_capacity(max_queries, options.n_q)})),
        aggregate_kernel_(make_layer_kernel<layouts::QuokaPush>(device, "quoka_aggregate", quoka_aggregate_spirv, 2,
                                                                layer.shape, layer.dtype)),
        key_kernel_(make_layer_kernel<layouts::QuokaPush>(device, "quoka_key_scores", quoka_key_scores_spirv, 3,
                                                          layer.shape, layer.dtype)),
        topk_(device),
        // Both [H, n_keep, d] at most (max: every kept query of the group, each KV head).
        normalized_(device, size_t(layer.shape.heads) * std::max<uint32_t>(1, options.n_q) * layer.shape.dim * sizeof(float)),
        aggregates_(device, size_t(layer.shape.heads) * std::max<uint32_t>(1, options.n_q) * layer.shape.dim * sizeof(float)),
        group_arrivals_(device, size_t(layer.shape.kv_heads) * sizeof(uint32_t)),
        scores_(device, size_t(layer.shape.kv_heads) * layer.shape.tokens * sizeof(float)) {
    if (options.n_q == 0) throw InputError("quoka must keep at least one query", "n-q");
    group_arrivals_.fill(0);  // quoka_query_cosine leaves it zeroed after every use
    // One aggregate (decode) costs quoka_key_scores_matrix more than the
    // scalar kernel (docs/perf-experiments.md), quoka_key_scores_fragments less
    // (3.6-4.1 us on the H100).
    if (key_fragment_kernel_fits(device, layer.dtype, layer.shape.dim))
      key_matrix_.emplace(make_layer_kernel<layouts::QuokaPush>(
                              device, "quoka_key_scores_fragments",
                              vk::cooperative_matrix_spirv(device, quoka_key_scores_fragments_spirv,
                                                           quoka_key_scores_fragments_khr_spirv),
                              3, layer.shape, layer.dtype),
                          kFragmentWorkgroups, 1u);
    else if (key_matrix_kernel_fits(device, layer.dtype, layer.shape.dim))
      key_matrix_.emplace(make_layer_kernel<layouts::QuokaPush>(
                              device, "quoka_key_scores_matrix",
                              vk::cooperative_matrix_spirv(device, quoka_key_scores_matrix_spirv,
                                                           quoka_key_scores_matrix_khr_spirv),
                              3, layer.shape, layer.dtype),
                          kMatrixWorkgroups, 2u);
  }

  std::string name() const override { return "quoka"; }
  Granularity granularity() const override { return Granularity::kv_head; }
  ScoreView scores() const override { return {&scores_, layer_.shape.kv_heads, layer_.shape.tokens, 1}; }
  nlohmann::json params() const override {
    return {{"n_q", options_.n_q}, {"quoka_group", find_option("quoka-group").text(options_)}};
  }

  void record(vk::Pass& pass, const Block& block, const BlockInputs& inputs, uint32_t budget,
              const vk::Buffer& indices) override {
    const AttentionShape& s = layer_.shape;
    const uint32_t keep = std::min(block.n_queries, options_.n_q), candidates = block.candidates();
    layouts::QuokaPush push{s.heads, s.kv_heads, s.tokens, block.n_queries, keep,
                            uint32_t(options_.quoka_group), candidates, s.tokens};
    const uint32_t n_aggregates = options_.quoka_group == GroupReduce::max ? s.group() * keep : keep;
    // A block of at most n_q queries (decode) keeps them all, in position
    // order: quoka_aggregate builds its aggregates without a ranking.
    if (block.n_queries > keep)
      pass.dispatch(query_kernel_, {inputs.queries, &normalized_, &aggregates_, &group_arrivals_}, push, s.heads, 1, 1,
                    "query_cosine");
    else
      pass.dispatch(aggregate_kernel_, {inputs.queries, &aggregates_}, push, n_aggregates, s.kv_heads, 1, "aggregate");
    // The aggregates go to the tensor cores where a kernel fits and there are
    // enough of them (fewest_aggregates) for it to beat the scalar kernel.
    if (key_matrix_ && n_aggregates >= key_matrix_->fewest_aggregates && n_aggregates <= kMatrixAggregates)
      pass.dispatch(key_matrix_->kernel, {&aggregates_, &layer_.keys, &scores_}, push,
                    std::min(ceil_div(candidates, kMatrixKeys), ceil_div(key_matrix_->workgroups, s.kv_heads)), s.kv_heads, 1,
                    "key_scores");
    else
      pass.dispatch(key_kernel_, {&aggregates_, &layer_.keys, &scores_}, push, ceil_div(candidates, 128), s.kv_heads, 1,
                    "key_scores");
    topk_.record(pass, scores_, s.kv_heads, candidates, s.tokens, budget, indices, budget);
  }

 private:
  // The most queries quoka_query_cosine keeps per head (its MAX_KEEP).
  static uint32_t kept_capacity(uint32_t max_queries, uint32_t n_q) {
    return std::max<uint32_t>(1, std::min(max_queries, n_q));
  }

  // quoka_query_cosine's workgroup, 4 invocations a query: the largest whose
  // shared memory (a cosine and a norm per query, the kept indices, the mean's
  // partial sums, about 8 floats an invocation, and the mean) fits. On the
  // H100, 128 queries: 10.6 us at 128 invocations, 8.3 at 256, 8.0 at 512;
  // one invocation a query took 15.0 (docs/perf-experiments.md).
  static uint32_t query_workgroup(const vk::Device& device, uint32_t max_queries, uint32_t n_q, uint32_t dim) {
    const uint32_t per_query = 8 * std::max<uint32_t>(1, max_queries) + 4 * kept_capacity(max_queries, n_q);
    for (uint32_t workgroup : {512u, 256u})
      if (per_query + 32 * workgroup + 4 * dim <= device.limits().maxComputeSharedMemorySize) return workgroup;
    return 128;
  }

  static uint32_t checked(const vk::Device& device, uint32_t max_queries) {
    if (!device.info().subgroup_shuffle || device.info().subgroup_size < 4)  // quoka_query_cosine's 4 lanes a query
      throw InputError("quoka: needs subgroup shuffles in compute shaders, in subgroups of at least 4, which " +
                       device.info().name + " lacks");
    const uint32_t most = device.info().loop_limit != 0 ? kMaxChunkQueriesLoopLimited : kMaxChunkQueries;
    if (max_queries > most)
      throw InputError("quoka: chunks of more than " + std::to_string(most) + " queries are not supported on " +
                       device.info().name);
    return std::max<uint32_t>(1, max_queries);
  }

  const GpuLayer& layer_;
  MethodOptions options_;
  vk::Kernel query_kernel_;
  vk::Kernel aggregate_kernel_;
  vk::Kernel key_kernel_;
  // A tensor-core key kernel: quoka_key_scores_fragments where
  // key_fragment_kernel_fits, else quoka_key_scores_matrix where
  // key_matrix_kernel_fits; its workgroups in all, and the fewest aggregates
  // for which it beats the scalar kernel.
  struct KeyMatrixKernel {
    vk::Kernel kernel;
    uint32_t workgroups;
    uint32_t fewest_aggregates;
  };
  std::optional<KeyMatrixKernel> key_matrix_;
  TopK topk_;
  vk::Buffer normalized_;  // quoka_query_cosine's kept queries, normalised (mean)
  vk::Buffer aggregates_;
  vk::Buffer group_arrivals_;  // per KV head: its query heads whose quoka_query_cosine has finished
  vk::Buffer scores_;
};

}  // namespace

std::unique_ptr<Method> make_quoka(const vk::Device& device, const GpuLayer& layer, const MethodOptions& options, Mode,
                                   uint32_t max_queries) {
  return std::make_unique<Quoka>(device, layer, options, max_queries);
}

}  // namespace kv
