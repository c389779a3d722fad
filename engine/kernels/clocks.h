#pragma once
#include "vk/buffer.h"
#include "vk/device.h"

namespace kv {

// Keeps the GPU busy reading `source` (any large buffer) for two seconds, so that
// what is timed next runs at full clocks. The H100 lowers its SM clock from
// 1980 to 345 MHz after 1.5-3 s without work (a capture loaded, K and V filled
// on the CPU, Loki's basis, pipeline compiles), and short timed runs, mostly
// waits between submits, do not raise it again: every stage then ran 3-5x
// slower. Under full load it came back in 0.1-0.8 s (nvidia-smi every 50 ms;
// docs/perf.md). Does nothing on CPU devices (lavapipe).
void raise_clocks(const vk::Device& device, const vk::Buffer& source);

}  // namespace kv
