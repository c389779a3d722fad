#pragma once
#include <cstdio>

#include "commands.h"

namespace kv::cli {

// A command's exit code once it is done: 1 if --debug's validation layer reported anything.
inline int exit_code(const GlobalOptions& global, const vk::Device& device, int code) {
  if (global.device.validation && device.validation_messages() > 0) {
    std::fprintf(stderr, "kvscope: the validation layer reported %llu message(s)\n",
                 (unsigned long long)device.validation_messages());
    return 1;
  }
  return code;
}

}  // namespace kv::cli
