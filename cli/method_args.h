#pragma once
#include <set>
#include <string>

#include "args.h"
#include "method.h"

namespace kv::cli {

// Options every selection command takes: each method option of option_table()
// (methods/table.h), and the regime's block options.
std::set<std::string> method_value_options();
inline const std::set<std::string> kModeFlags{"decode", "prefill"};

MethodOptions parse_method_options(const Args& args);
Mode parse_mode(const Args& args, const std::string& command);

// The methods and their options, as --help lists them (from method_table()).
std::string methods_help();

}  // namespace kv::cli
