#include <cstdio>

#include "args.h"
#include "commands.h"
#include "base/error.h"
#include "kernels/kernel_choice.h"
#include "format.h"

namespace kv::cli {

const char* const kDevicesHelp =
    "usage: kvscope devices\n\n"
    "Lists the Vulkan devices the loader sees: index, type, name, driver, subgroup\n"
    "size, device-local memory, and whether kvscope can use it. '*' marks the\n"
    "device chosen when --device is not given.\n";

int run_devices(const GlobalOptions& global, const std::vector<std::string>& argv) {
  Args args("devices", argv, {}, {});
  if (!args.positional().empty()) throw InputError("devices: takes no arguments");
  std::vector<vk::DeviceInfo> devices = vk::list_devices();
  uint32_t chosen = UINT32_MAX;
  try {
    vk::DeviceOptions options = global.device;
    options.validation = false;
    vk::Device device(options);
    chosen = device.info().index;
  } catch (const std::exception&) {
    // listing still works when no device is usable
  }
  std::printf("   %-3s %-10s %-40s %-8s %-9s %-10s %s\n", "#", "type", "name", "vulkan", "subgroup", "memory", "driver");
  for (const vk::DeviceInfo& d : devices) {
    char version[16];
    std::snprintf(version, sizeof version, "%u.%u", VK_API_VERSION_MAJOR(d.api_version), VK_API_VERSION_MINOR(d.api_version));
    std::printf(" %c %-3u %-10s %-40s %-8s %-9u %-10s %s%s\n", d.index == chosen ? '*' : ' ', d.index, d.type.c_str(),
                d.name.c_str(), version, d.subgroup_size, human_bytes(d.device_local_bytes).c_str(), d.driver.c_str(),
                d.supported ? "" : (std::string("  (unsupported: needs ") + vk::kDeviceRequirements + ")").c_str());
    if (d.supported) std::printf("         tensor-core kernels: %s\n", describe_matrix_kernels(d, false).c_str());
  }
  return 0;
}

}  // namespace kv::cli
