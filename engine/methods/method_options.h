#pragma once
// The plain description of a method's parameters: every option, its flag and
// range, and budgets as users write them. No Vulkan here: the float64
// references and the readers of results need these without a GPU.
#include <cstdint>
#include <string>
#include <vector>

namespace kv {

enum class HeadAggregate : uint32_t { head, max, mean };  // --gqa-agg
enum class GroupReduce : uint32_t { mean, max };           // --quoka-group

// Every method's parameters (docs/methods.md), with their defaults. Each field
// is a 32-bit value that one row of option_table() reads and writes: the CLI's
// flags, the viewer's controls and key() all come from there.
struct MethodOptions {
  uint32_t page_size = 16;                      // quest
  uint32_t group_size = 32;                     // fier
  uint32_t n_q = 16;                            // quoka
  GroupReduce quoka_group = GroupReduce::mean;  // quoka
  HeadAggregate gqa_agg = HeadAggregate::head;  // quest, fier
  uint32_t n_sink = 4;                          // streaming
  uint32_t sparq_r = 32;                        // sparq: query components kept
  uint32_t snap_window = 32;                    // snapkv: observation window (queries)
  uint32_t snap_pool = 7;                       // snapkv: average-pooling kernel (odd)
  uint32_t loki_r = 32;                         // loki: principal components kept
  uint32_t sample_queries = 8;                  // sampleattention: queries sampled
  uint32_t sample_stride = 16;                  // sampleattention: positions between them
  uint32_t lim_start = 2;                       // lessismore: the first layer that selects (layers before attend densely)
  uint32_t lim_correction = 9;                  // lessismore: the layer that selects again (past the last layer: none)
  uint32_t lim_window = 25;                     // lessismore: percent of the budget kept as the recency window

  // Every option, as text: a cache key for built methods and computed curves.
  std::string key() const;
  bool operator==(const MethodOptions&) const = default;
};

// One method option: a field of MethodOptions, its flag and how far it goes.
struct OptionSpec {
  const char* flag;  // --FLAG on the CLI; the viewer's label; keyword() in bench's JSON and in Python
  const char* help;  // one line: what it is, for which method
  uint32_t lowest = 0, highest = 0;  // values the CLI accepts (indices of `names` for named values)
  std::vector<const char*> names;    // named values (--quoka-group mean|max); empty: a count
  bool odd = false;                  // only odd values (a pooling kernel)
  uint32_t viewer_lowest = 0, viewer_highest = 0;  // the viewer's slider; viewer_highest 0: the head dimension
  uint32_t (*get)(const MethodOptions&) = nullptr;
  void (*set)(MethodOptions&, uint32_t) = nullptr;

  // The value as the CLI spells it: a number, or its name.
  std::string text(const MethodOptions& options) const;
  // The flag as a Python keyword and a JSON key: page_size for page-size.
  std::string keyword() const;
  // Sets the option from its CLI spelling; InputError naming the flag when it is out of range.
  void parse(MethodOptions& options, const std::string& text) const;
};

// Every option of every method, in the order --help lists them.
const std::vector<OptionSpec>& option_table();
const OptionSpec& find_option(const std::string& flag);

// A budget as users write it: a key count ("256") or a percentage of the
// `tokens` keys ("3%", to the nearest key, at least 1). InputError, naming
// `what`, for anything else.
uint32_t parse_budget(const std::string& text, uint32_t tokens, const std::string& what);

}  // namespace kv
