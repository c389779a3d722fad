// Sizes beyond the device are refused before anything is allocated,
// with a one-line error that names both numbers.
#include "base/error.h"
#include "test_device.h"
#include "vk/buffer.h"

namespace kv {
namespace {

class LimitsTest : public test::GpuTest {};

TEST_F(LimitsTest, BufferBeyondTheStorageRangeIsAnInputError) {
  const VkDeviceSize too_big = VkDeviceSize(test::device().limits().maxStorageBufferRange) + 16;
  try {
    vk::Buffer buffer(test::device(), too_big);
    FAIL() << "a buffer beyond maxStorageBufferRange was allocated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
  }
}

TEST_F(LimitsTest, StagingBufferBeyondTheHeapIsAnInputError) {
  EXPECT_THROW(vk::Buffer(test::device(), VkDeviceSize(1) << 50, vk::MemoryKind::host_staging), InputError);
}

}  // namespace
}  // namespace kv
