#pragma once
#include "kernels/query_stats.h"

namespace kv::reference {

// query_stats.comp's statistics in float64, by sorting every query's probabilities.
QueryStats query_stats(const Capture& capture, int layer, uint32_t head, const Block& block, uint32_t chunk,
                       uint32_t n_q);

}  // namespace kv::reference
