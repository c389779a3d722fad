#pragma once
// Room sweep/: a sweep's results file, shards and reports; it includes base/ to
// methods/ and the other top rooms.
// A sweep's results as they finish. A sweep (needle, ppl, speed, eval) is a
// list of cells in the order one run reports them; cells that share work (a
// prompt's prefill, a layer's dense references, a speed table's rounds) form
// a group. A results file is JSON Lines: a header line naming the command,
// the configuration that makes two runs the same sweep, every cell's key and
// which shard of the sweep the file holds; then a line for each cell as it
// finishes, appended and synced. A run killed at any point keeps every cell
// finished before it; resuming runs the rest; shards split the groups, and
// merge_results joins them into what one run would have written.
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kv::sweep {

// Shard `index` (1-based) of `count`.
struct Shard {
  uint32_t index = 1, count = 1;
  bool operator==(const Shard&) const = default;
};
// "I/N" with 1 <= I <= N; InputError (setting "shard") otherwise.
Shard parse_shard(const std::string& text);
std::string shard_text(Shard shard);

// The cells of a sweep in report order, each with its group, and the
// expected cost of each group (only the ratios matter).
struct SweepCells {
  std::vector<nlohmann::json> keys;  // a JSON object each, unique
  std::vector<uint32_t> groups;      // per cell
  std::vector<double> group_costs;   // per group
  void add(nlohmann::json key, uint32_t group) {
    keys.push_back(std::move(key));
    groups.push_back(group);
  }
};

// What a sweep's runner asks of its caller, by cell (an index into its
// SweepCells): whether to run it (unset: every cell) and where it goes once
// it is done.
template <typename Result>
struct CellHooks {
  std::function<bool(size_t cell)> wanted;
  std::function<void(size_t cell, const Result& result)> done;
  bool want(size_t cell) const { return !wanted || wanted(cell); }
};

// Which groups shard I of N runs: groups dealt, costliest first, each to the
// shard with the least cost so far, so long lengths spread over the shards.
std::vector<bool> shard_groups(const std::vector<double>& group_costs, Shard shard);

struct SweepHeader {
  std::string command;     // "needle", "ppl", "speed", "eval"
  nlohmann::json config;   // model, prompts, seed, methods' options, device, ...
  std::vector<nlohmann::json> cells;  // every cell's key, the whole sweep's
  Shard shard;
};

// A results file read back: its header and each cell's result (none where
// the file holds none).
struct ResultsFileContents {
  SweepHeader header;
  std::vector<std::optional<nlohmann::json>> results;  // per cell of header.cells
  size_t complete_bytes = 0;  // up to the last whole line
  bool cut_short = false;     // the last line was half-written (a run killed while writing it)
};
// InputError for a file that is not a results file, a line that names no
// cell of its sweep or one cell twice; a half-written last line is no error.
ResultsFileContents read_results_file(const std::string& path);

// The results of one sweep (or one shard of it) in memory and, with a path,
// on disk as they finish.
class SweepResults {
 public:
  // `header.cells` and `shard` from `cells`; results kept in memory only.
  SweepResults(std::string command, nlohmann::json config, const SweepCells& cells, Shard shard = {});
  // The same, each result also appended to `path`. A new sweep refuses a
  // file that holds results; `resume` reads the cells it holds (refused in
  // one line when its sweep is not this one) and drops a half-written last
  // line, with a note on stderr.
  SweepResults(std::string command, nlohmann::json config, const SweepCells& cells, Shard shard, const std::string& path,
               bool resume);
  ~SweepResults();
  SweepResults(const SweepResults&) = delete;
  SweepResults& operator=(const SweepResults&) = delete;

  const SweepHeader& header() const { return header_; }
  size_t cells() const { return header_.cells.size(); }
  bool in_shard(size_t cell) const { return in_shard_[cell]; }
  bool done(size_t cell) const { return results_[cell].has_value(); }
  // In this shard and not yet done: the cells a run still owes.
  bool wanted(size_t cell) const { return in_shard(cell) && !done(cell); }
  size_t resumed() const { return resumed_; }  // cells the file held when opened
  // Keeps (and, with a file, appends and syncs) a finished cell's result.
  void record(size_t cell, nlohmann::json result);
  // Each cell's result, none for cells outside this shard or not yet done.
  std::vector<std::optional<nlohmann::json>> results() const;
  bool complete() const;  // every cell of the shard done

 private:
  SweepHeader header_;
  std::vector<bool> in_shard_;
  std::vector<std::optional<nlohmann::json>> results_;
  size_t resumed_ = 0;
  int fd_ = -1;
  std::string path_;
};

// Shards of one sweep joined: InputError in one line when the inputs are not
// the shards of one sweep (command, configuration, cells), a shard is given
// twice or missing, or a cell is held twice or by none. The header's shard
// is 1/1; every result is there.
ResultsFileContents merge_results(const std::vector<std::string>& inputs);

// A whole results file written at once (merge's output): header, then every
// result in the sweep's order; atomically.
void write_results_file(const std::string& path, const SweepHeader& header,
                        const std::vector<std::optional<nlohmann::json>>& results);

// Writes `text` to a temporary beside `path`, then renames it: a failure
// leaves no partial file. InputError when it cannot.
void write_text_atomically(const std::string& path, const std::string& text);

// One line of JSON; bytes that are not UTF-8 (a model's text cut inside a
// character) become U+FFFD.
std::string json_line(const nlohmann::json& json);

}  // namespace kv::sweep
