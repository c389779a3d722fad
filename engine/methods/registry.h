#pragma once
#include <memory>

#include "method.h"

namespace kv {

// One factory per method; registry.cpp maps names to them.
std::unique_ptr<Method> make_oracle(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_quoka(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_quest(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_fier(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_keydiff(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_tova(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_sparq(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_snapkv(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_sample_attention(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode,
                                              uint32_t max_queries);
std::unique_ptr<Method> make_h2o(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_loki(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);
std::unique_ptr<Method> make_streaming(const vk::Device&, const GpuLayer&, const MethodOptions&, Mode, uint32_t max_queries);

// Rows and aggregation of a method scored per query head or per KV head (--gqa-agg).
struct HeadRows {
  uint32_t rows;
  uint32_t heads_per_row;
  uint32_t aggregate;  // AGGREGATE_* of layouts.h
};
HeadRows head_rows(const AttentionShape& shape, HeadAggregate aggregate);
const char* aggregate_name(HeadAggregate aggregate);

}  // namespace kv
