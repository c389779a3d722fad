#include "sweep_args.h"

#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "output_files.h"

namespace kv::cli {

std::set<std::string> results_value_options() { return {"results", "shard"}; }

sweep::Shard check_sweep_options(const Args& args, const std::string& command) {
  const std::string path = args.text("results", "");
  if (path.empty() && args.flag(kResumeFlag)) throw InputError(command + ": --resume needs --results FILE, the file to resume");
  if (path.empty() && args.has("shard")) throw InputError(command + ": --shard needs --results FILE, where the shard's cells go");
  if (!path.empty()) {
    require_output_folder(path);
    if (std::filesystem::is_directory(path)) throw InputError(path + " is a folder, not a results file");
  }
  return args.has("shard") ? sweep::parse_shard(args.text("shard")) : sweep::Shard{};
}

std::unique_ptr<sweep::SweepResults> open_sweep(const Args& args, const std::string& command, nlohmann::json config,
                                                const sweep::SweepCells& cells) {
  const sweep::Shard shard = check_sweep_options(args, command);
  const std::string path = args.text("results", "");
  if (path.empty()) return std::make_unique<sweep::SweepResults>(command, std::move(config), cells, shard);
  auto results = std::make_unique<sweep::SweepResults>(command, std::move(config), cells, shard, path, args.flag(kResumeFlag));
  if (results->resumed() > 0)
    std::fprintf(stderr, "kvscope: %s: %zu of the cells already in %s, running the rest\n", command.c_str(),
                 results->resumed(), path.c_str());
  return results;
}

void write_sweep_reports(const sweep::SweepResults& s, const sweep::ReportPaths& paths) {
  const sweep::SweepHeader& h = s.header();
  if (h.shard.count > 1 && (!paths.json.empty() || !paths.csv.empty() || !paths.plot.empty()))
    std::fprintf(stderr, "kvscope: note: the reports hold shard %s's cells alone; `kvscope merge` writes the whole sweep's\n",
                 sweep::shard_text(h.shard).c_str());
  sweep::write_reports(h, s.results(), paths);
}

nlohmann::json model_identity_json(const Args& args, const std::string& model_path) {
  // Absolute, so that shards started from other folders name the same model.
  auto absolute = [](const std::string& path) { return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string(); };
  nlohmann::json j = {{"model", absolute(model_path)}, {"tokenizer", absolute(args.text("tokenizer", ""))}};
  if (args.flag("random-weights")) j["random_weights_seed"] = args.count("seed", 0);
  if (args.has("weight-type")) j["weight_type"] = args.text("weight-type", "");
  if (args.flag("chat") || args.has("chat-format")) j["chat"] = args.text("chat-format", "template");
  return j;
}

}  // namespace kv::cli
