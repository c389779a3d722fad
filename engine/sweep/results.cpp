#include "sweep/results.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "base/error.h"

namespace kv::sweep {
namespace {

constexpr int kFormatVersion = 1;

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json header_json(const SweepHeader& h) {
  return {{"kvscope_results", kFormatVersion}, {"command", h.command}, {"config", h.config},
          {"shard", shard_text(h.shard)}, {"cells", h.cells}};
}

// The first setting in which two sweeps differ, in words ("seed: 0 here, 1 in F").
std::string first_difference(const nlohmann::json& mine, const nlohmann::json& theirs) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : mine.items()) keys.push_back(key);
  for (const auto& [key, value] : theirs.items())
    if (!mine.contains(key)) keys.push_back(key);
  for (const std::string& key : keys) {
    const nlohmann::json a = mine.value(key, nlohmann::json()), b = theirs.value(key, nlohmann::json());
    if (a != b) return key + " " + json_line(b) + " there, " + json_line(a) + " here";
  }
  return "";
}

// Why `file`'s sweep is not `mine`, or "" when it is.
std::string sweep_difference(const SweepHeader& mine, const SweepHeader& file) {
  if (mine.command != file.command) return "it holds a " + file.command + " sweep, not " + mine.command;
  if (mine.config != file.config) return "its sweep differs: " + first_difference(mine.config, file.config);
  if (mine.cells != file.cells) return "its cells differ (the lengths, depths, methods, budgets or layers swept)";
  if (!(mine.shard == file.shard)) return "it holds shard " + shard_text(file.shard) + ", not " + shard_text(mine.shard);
  return "";
}

void write_all(int fd, const std::string& text, const std::string& path) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
    written += size_t(n);
  }
}

}  // namespace

std::string json_line(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Shard parse_shard(const std::string& text) {
  unsigned index = 0, count = 0;
  char end = 0;
  if (std::sscanf(text.c_str(), "%u/%u%c", &index, &count, &end) != 2 || index < 1 || index > count || count > 100000)
    throw InputError("a shard is I/N with 1 <= I <= N (--shard 2/3), not '" + text + "'", "shard");
  return {index, count};
}

std::string shard_text(Shard shard) { return std::to_string(shard.index) + "/" + std::to_string(shard.count); }

std::vector<bool> shard_groups(const std::vector<double>& costs, Shard shard) {
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(shard.count, 0);
  std::vector<bool> mine(costs.size(), false);
  for (size_t group : order) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += costs[group];
    mine[group] = least + 1 == shard.index;
  }
  return mine;
}

ResultsFileContents read_results_file(const std::string& path) {
  const std::string text = read_whole(path);
  ResultsFileContents contents;
  std::map<std::string, size_t> index;  // a cell's key as text -> its place
  size_t start = 0, line_number = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_number;
    if (end == std::string::npos) {  // no newline: the write was cut off
      contents.cut_short = true;
      break;
    }
    const std::string where = path + " line " + std::to_string(line_number);
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text.begin() + std::ptrdiff_t(start), text.begin() + std::ptrdiff_t(end));
    } catch (const nlohmann::json::exception&) {
      throw InputError(where + " is not JSON: not a kvscope results file, or one damaged");
    }
    try {
      if (line_number == 1) {
        if (!line.is_object() || !line.contains("kvscope_results"))
          throw InputError(path + " is not a kvscope results file (its first line names no sweep)");
        if (line.at("kvscope_results").get<int>() != kFormatVersion)
          throw InputError(path + " is a results file of another kvscope version");
        SweepHeader& h = contents.header;
        h.command = line.at("command").get<std::string>();
        h.config = line.at("config");
        h.cells = line.at("cells").get<std::vector<nlohmann::json>>();
        h.shard = parse_shard(line.at("shard").get<std::string>());
        for (size_t i = 0; i < h.cells.size(); ++i) index[json_line(h.cells[i])] = i;
        contents.results.assign(h.cells.size(), std::nullopt);
      } else {
        const auto found = index.find(json_line(line.at("cell")));
        if (found == index.end()) throw InputError(where + " names a cell its sweep does not hold");
        if (contents.results[found->second]) throw InputError(where + " holds a cell a second time");
        contents.results[found->second] = line.at("result");
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError(where + " is not a kvscope result: " + e.what());
    }
    start = end + 1;
    contents.complete_bytes = start;
  }
  if (line_number == 0 || (line_number == 1 && contents.cut_short))
    throw InputError(path + " holds no sweep (its first line is missing or cut short)");
  return contents;
}

SweepResults::SweepResults(std::string command, nlohmann::json config, const SweepCells& cells, Shard shard)
    : header_{std::move(command), std::move(config), cells.keys, shard},
      results_(cells.keys.size()) {
  std::set<std::string> seen;
  for (const nlohmann::json& key : cells.keys)
    if (!seen.insert(json_line(key)).second)
      throw InputError("the sweep holds the cell " + json_line(key) + " twice (a value given twice)");
  const std::vector<bool> groups = shard_groups(cells.group_costs, shard);
  for (uint32_t group : cells.groups) in_shard_.push_back(groups.at(group));
}

SweepResults::SweepResults(std::string command, nlohmann::json config, const SweepCells& cells, Shard shard,
                           const std::string& path, bool resume)
    : SweepResults(std::move(command), std::move(config), cells, shard) {
  path_ = path;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw InputError(path + " is a folder, not a results file");
  const bool exists = std::filesystem::exists(path, error) && std::filesystem::file_size(path, error) > 0;
  if (resume && exists) {
    const ResultsFileContents file = read_results_file(path);
    const std::string why = sweep_difference(header_, file.header);
    if (!why.empty()) throw InputError("cannot resume " + path + ": " + why);
    results_ = file.results;
    resumed_ = size_t(std::count_if(results_.begin(), results_.end(), [](const auto& r) { return r.has_value(); }));
    if (file.cut_short)
      std::fprintf(stderr, "kvscope: note: %s's last line was cut short (a run stopped while writing it): dropped, its cell runs again\n",
                   path.c_str());
    // Drops a cut line, so that the next result starts a line of its own.
    std::filesystem::resize_file(path, file.complete_bytes);
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  } else {
    if (exists)
      throw InputError(path + " already holds a sweep's results: --resume continues it; remove the file to start again");
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      write_all(fd_, json_line(header_json(header_)) + "\n", path);
      ::fdatasync(fd_);
    }
  }
  if (fd_ < 0) throw InputError("cannot write " + path + ": " + std::strerror(errno));
}

SweepResults::~SweepResults() {
  if (fd_ >= 0) ::close(fd_);
}

void SweepResults::record(size_t cell, nlohmann::json result) {
  if (fd_ >= 0) {
    // One write a line: a run killed mid-write leaves at most this line cut.
    write_all(fd_, json_line({{"cell", header_.cells[cell]}, {"result", result}}) + "\n", path_);
    ::fdatasync(fd_);
  }
  results_[cell] = std::move(result);
}

std::vector<std::optional<nlohmann::json>> SweepResults::results() const {
  std::vector<std::optional<nlohmann::json>> mine = results_;
  for (size_t i = 0; i < mine.size(); ++i)
    if (!in_shard_[i]) mine[i].reset();
  return mine;
}

bool SweepResults::complete() const {
  for (size_t i = 0; i < results_.size(); ++i)
    if (in_shard_[i] && !results_[i]) return false;
  return true;
}

ResultsFileContents merge_results(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw InputError("merge: no results file given");
  ResultsFileContents merged;
  std::vector<std::string> shard_files;  // per shard index - 1: the file holding it
  for (const std::string& path : inputs) {
    // A line cut short holds no cell: the check for missing cells names it.
    ResultsFileContents file = read_results_file(path);
    if (&path == &inputs.front()) {
      merged.header = file.header;
      merged.header.shard = {};
      merged.results.assign(file.header.cells.size(), std::nullopt);
      shard_files.assign(file.header.shard.count, "");
    } else {
      SweepHeader mine = merged.header;
      mine.shard = file.header.shard;
      const std::string why = sweep_difference(mine, file.header);
      if (file.header.shard.count != shard_files.size())
        throw InputError("merge: " + path + " is a shard of " + std::to_string(file.header.shard.count) + ", " + inputs.front() +
                         " of " + std::to_string(shard_files.size()));
      if (!why.empty()) throw InputError("merge: " + path + " is not a shard of " + inputs.front() + "'s sweep: " + why);
    }
    std::string& holder = shard_files[file.header.shard.index - 1];
    if (!holder.empty())
      throw InputError("merge: " + path + " and " + holder + " are both shard " + shard_text(file.header.shard));
    holder = path;
    for (size_t i = 0; i < file.results.size(); ++i) {
      if (!file.results[i]) continue;
      if (merged.results[i])
        throw InputError("merge: the cell " + json_line(merged.header.cells[i]) + " is in two inputs, the second " + path);
      merged.results[i] = std::move(file.results[i]);
    }
  }
  for (size_t s = 0; s < shard_files.size(); ++s)
    if (shard_files[s].empty())
      throw InputError("merge: shard " + shard_text({uint32_t(s + 1), uint32_t(shard_files.size())}) + " is missing");
  for (size_t i = 0; i < merged.results.size(); ++i)
    if (!merged.results[i])
      throw InputError("merge: no input holds the cell " + json_line(merged.header.cells[i]) +
                       " (a shard that did not finish: --resume it)");
  return merged;
}

void write_results_file(const std::string& path, const SweepHeader& header,
                        const std::vector<std::optional<nlohmann::json>>& results) {
  std::string text = json_line(header_json(header)) + "\n";
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i]) text += json_line({{"cell", header.cells[i]}, {"result", *results[i]}}) + "\n";
  write_text_atomically(path, text);
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  std::ofstream out(temporary, std::ios::trunc | std::ios::binary);
  out << text;
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw InputError("cannot write " + path);
  }
}

}  // namespace kv::sweep
