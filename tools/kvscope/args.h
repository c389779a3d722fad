#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kv::cli {

// Options of one subcommand: `--name value` or `--name` flags. Anything not
// declared is a usage error (InputError, exit 2).
class Args {
 public:
  Args(std::string command, std::vector<std::string> argv, std::set<std::string> value_options,
       std::set<std::string> flag_options);

  const std::string& command() const { return command_; }
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string text(const std::string& name, const std::string& fallback = "") const;
  std::string required(const std::string& name) const;
  uint32_t count(const std::string& name, uint32_t fallback, uint32_t min = 0, uint32_t max = UINT32_MAX) const;
  uint32_t required_count(const std::string& name, uint32_t min, uint32_t max) const;
  std::vector<uint32_t> counts(const std::string& name) const;  // comma-separated
  // A comma-separated list of words (empty items dropped).
  std::vector<std::string> texts(const std::string& name, const std::string& fallback) const;
  std::vector<std::string> positional() const { return positional_; }

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

}  // namespace kv::cli
