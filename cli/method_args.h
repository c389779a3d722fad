#pragma once
#include <set>
#include <string>

#include "args.h"
#include "method.h"

namespace kv::cli {

// Options every selection command takes (CLI.md's method options and regime).
inline const std::set<std::string> kMethodValueOptions{"page-size", "group-size", "n-q", "quoka-group", "gqa-agg", "sparq-r", "loki-r", "sample-queries", "sample-stride", "snap-window", "snap-pool",
                                                       "n-sink", "probes", "chunk", "chunks"};
inline const std::set<std::string> kModeFlags{"decode", "prefill"};

MethodOptions parse_method_options(const Args& args);
Mode parse_mode(const Args& args, const std::string& command);

}  // namespace kv::cli
