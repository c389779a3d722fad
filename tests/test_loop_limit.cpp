// vk::DeviceInfo::loop_limit against the device: under Mesa's llvmpipe every
// loop of an invocation ends once the invocation has completed 65535 loop
// iterations in all (each loop's exit test counts as one), with no error; on
// other devices a loop runs to its end. Attention sizes its splits from this
// number (engine/kernels/attention.cpp), so the number must be the device's.
#include "../shaders/layouts.h"
#include "kernels/layer_kernel.h"
#include "loop_probe.spv.h"
#include "test_device.h"
#include "vk/buffer.h"
#include "vk/kernel.h"
#include "vk/pass.h"

namespace kv {
namespace {

class LoopLimitTest : public test::GpuTest {
 protected:
  // The inner iterations that a loop of `outer` x `inner` iterations really made.
  uint32_t iterations(uint32_t outer, uint32_t inner) {
    vk::Device& device = test::device();
    if (!probe_) probe_ = std::make_unique<vk::Kernel>(device, "loop_probe", loop_probe_spirv,
                                                       vk::KernelLayout{1, sizeof(layouts::LoopProbePush)},
                                                       std::span<const uint32_t>());
    vk::Buffer counts(device, 16);
    counts.upload_values<uint32_t>(std::vector<uint32_t>{0xdeadbeefu, 1, 1, 0});  // poisoned count, then the ones it adds
    vk::Pass pass(device);
    pass.dispatch(*probe_, {&counts}, layouts::LoopProbePush{outer, inner}, 1, 1, 1, "loop_probe");
    pass.run();
    return counts.download_values<uint32_t>(1)[0];
  }
  std::unique_ptr<vk::Kernel> probe_;
};

TEST_F(LoopLimitTest, LoopsEndWhereTheDeviceInfoSays) {
  const uint32_t limit = test::device().info().loop_limit;
  if (limit == 0) {
    EXPECT_EQ(iterations(1, 200000), 200000u);
    EXPECT_EQ(iterations(300, 1000), 300000u);
    return;
  }
  // One loop of n iterations inside one of a single iteration: n + 1 + 2 counted.
  EXPECT_EQ(iterations(1, limit - 3), limit - 3) << "a loop just under the limit was cut";
  EXPECT_EQ(iterations(1, limit + 1000), limit) << "the limit is not " << limit;
  // Nested: each outer iteration counts its inner loop's iterations, that loop's exit and its own end.
  const uint32_t inner = 1000, whole_outers = limit / (inner + 2);
  EXPECT_EQ(iterations(100, inner), whole_outers * inner + (limit - whole_outers * (inner + 2)));
}

// Loki's and SparQ's score kernels deal each KV head's tiles of 128 keys out
// among tile_walkers workgroups in turn: under a loop limit no workgroup may
// take more than max_tiles, so more of them walk.
TEST(TileWalkers, NoWalkPastMaxTiles) {
  EXPECT_EQ(tile_walkers(300, 0), 3u);                        // a tile each
  EXPECT_EQ(tile_walkers(128 * 1000, 0), kTileWalkersPerKvHead);  // 7-8 tiles a walker
  EXPECT_EQ(tile_walkers(128 * 1000, 0, 64), 64u);                // SparQ's cap
  for (uint32_t tiles : {1u, 127u, 1000u, 100000u})
    for (uint32_t max_tiles : {1u, 3u, 8u, 500u}) {
      const uint32_t walkers = tile_walkers(128 * tiles, max_tiles);
      EXPECT_LE(walkers, std::max(tiles, kTileWalkersPerKvHead));
      EXPECT_LE(ceil_div(tiles, walkers), max_tiles) << tiles << " tiles, at most " << max_tiles << " a walker";
    }
}

}  // namespace
}  // namespace kv
