#include "args.h"

#include <charconv>
#include <sstream>

#include "base/error.h"

namespace kv::cli {
namespace {

uint64_t parse_number(const std::string& command, const std::string& name, const std::string& text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw InputError(command + ": --" + name + " expects a non-negative integer, got '" + text + "'");
  return value;
}

}  // namespace

Args::Args(std::string command, std::vector<std::string> argv, std::set<std::string> value_options,
           std::set<std::string> flag_options)
    : command_(std::move(command)) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (flag_options.count(name)) {
      if (inline_value) throw InputError(command_ + ": --" + name + " takes no value");
      flags_.insert(name);
    } else if (value_options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw InputError(command_ + ": --" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    } else {
      throw InputError(command_ + ": unknown option --" + name + " (see 'kvscope " + command_ + " --help')");
    }
  }
}

std::string Args::text(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string Args::required(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InputError(command_ + ": --" + name + " is required");
  return it->second;
}

uint32_t Args::count(const std::string& name, uint32_t fallback, uint32_t min, uint32_t max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  uint64_t value = parse_number(command_, name, it->second);
  if (value < min || value > max)
    throw InputError(command_ + ": --" + name + " must be between " + std::to_string(min) + " and " + std::to_string(max));
  return uint32_t(value);
}

uint32_t Args::required_count(const std::string& name, uint32_t min, uint32_t max) const {
  required(name);
  return count(name, 0, min, max);
}

std::vector<std::string> Args::texts(const std::string& name, const std::string& fallback) const {
  std::vector<std::string> items;
  std::stringstream list(text(name, fallback));
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

std::vector<uint32_t> Args::counts(const std::string& name) const {
  std::vector<uint32_t> values;
  std::string list = text(name);
  size_t begin = 0;
  while (begin <= list.size() && !list.empty()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    uint64_t value = parse_number(command_, name, list.substr(begin, end - begin));
    if (value > UINT32_MAX) throw InputError(command_ + ": --" + name + " value " + std::to_string(value) + " is too large");
    values.push_back(uint32_t(value));
    begin = end + 1;
  }
  return values;
}

}  // namespace kv::cli
