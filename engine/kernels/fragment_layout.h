#pragma once
#include "vk/device.h"

namespace kv {

// Whether the device's 16x16 cooperative matrices (fp16 A operand, fp32
// accumulator) put each element in the lane and slot where NVIDIA's do (the
// H100's driver, docs/perf-experiments.md): lane l, with g = l / 4 and
// t = l % 4, holds in order (g, 2t), (g, 2t + 1), (g, 2t + 8), (g, 2t + 9),
// then the same columns of row g + 8. Cooperative matrices leave this to the
// implementation, so kernels that touch elements by index ask here first:
// quoka_key_scores_fragments fills its key operand from registers, and
// attention_chunk keeps each row's softmax on its accumulator. Runs
// cooperative_matrix_layout.comp (a pipeline and one dispatch) the first time
// a process asks about a GPU and driver.
// False without DeviceInfo::cooperative_matrix.
bool has_mma_fragment_layout(const vk::Device& device);

}  // namespace kv
