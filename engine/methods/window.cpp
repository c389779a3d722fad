#include "methods/window.h"

#include <algorithm>

namespace kv {

Window window(WindowKind kind, const MethodOptions& o, const Block& block, uint32_t budget) {
  const uint32_t n = block.candidates(), last = block.first_query + block.n_queries - 1;
  const uint32_t floor = block.mode == Mode::decode ? 0 : block.first_query;  // prefill: the chunk's own queries
  Window w;
  switch (kind) {
    case WindowKind::snapkv:
      w.first = std::max(floor, last + 1 - std::min(last + 1, o.snap_window));
      w.count = last + 1 - w.first;
      w.recent = block.mode == Mode::decode ? std::min({w.count, budget, n}) : 0;
      break;
    case WindowKind::h2o:
      w.first = 0;
      w.count = last + 1;
      w.recent = std::min(budget / 2, n);
      break;
    case WindowKind::sample_attention:
      w.stride = o.sample_stride;
      w.count = std::min(o.sample_queries, (last - floor) / w.stride + 1);
      w.first = last - (w.count - 1) * w.stride;
      w.recent = std::min(budget / 8, n);
      break;
  }
  return w;
}

}  // namespace kv
