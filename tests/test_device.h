#pragma once
#include <gtest/gtest.h>

#include <cstdlib>

#include "vk/device.h"

namespace kv::test {

// One validated device for the whole test binary (creating one per test would
// dominate the suite's time on lavapipe). KVSCOPE_TEST_DEVICE picks it.
inline const vk::DeviceOptions& device_options() {
  static const vk::DeviceOptions options = [] {
    vk::DeviceOptions o;
    if (const char* selector = std::getenv("KVSCOPE_TEST_DEVICE")) o.selector = selector;
    o.validation = std::getenv("KVSCOPE_TEST_NO_VALIDATION") == nullptr;
    o.sync_validation = std::getenv("KVSCOPE_TEST_SYNC_VALIDATION") != nullptr;
    return o;
  }();
  return options;
}
inline vk::Device& device() {
  static vk::Device* device = new vk::Device(device_options());
  return *device;
}

// Fails the test if the validation layer reported anything while it ran.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override { messages_before_ = device().validation_messages(); }
  void TearDown() override {
    EXPECT_EQ(device().validation_messages(), messages_before_) << "the validation layer reported messages";
  }

 private:
  uint64_t messages_before_ = 0;
};

}  // namespace kv::test
