// The needle panel: `kvscope needle --json` results as heatmaps of accuracy
// over length x depth per method, budget and regime, and accuracy against the
// budget per method. Clicking a cell re-runs that prompt (its first sample)
// through the model with the cell's plan, opens the capture it makes, and
// shows the method's picks on the retrieval head (the head whose attention
// from the last position puts the most mass on the needle).
#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "app.h"
#include "base/error.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/needle.h"
#include "model/prompt_capture.h"
#include "model/tokenizer.h"
#include "style.h"

namespace kv::viewer {
namespace {

ImVec4 accuracy_colour(double a) {
  a = std::clamp(a, 0.0, 1.0);
  return a < 0.5 ? ImVec4(0.86f, float(0.24 + 1.3 * a), 0.24f, 1) : ImVec4(float(0.86 - 1.33 * (a - 0.5)), 0.88f, 0.24f, 1);
}

std::string cell_title(const model::NeedleResult& c) {
  return c.method == "dense" ? std::string("dense")
                             : c.method + " " + std::to_string(c.budget) + " " + model::plan_regime_name(c.plan);
}

}  // namespace

void App::load_needle(NeedleResults results, int rerun) {
  needle_ = std::move(results);
  if (rerun >= 0) {
    const model::NeedleResult cell = needle_->cells[size_t(rerun)];
    rerun_needle(cell);
    if (!error_.empty()) throw InputError(error_);
  }
}

void App::rerun_needle(const model::NeedleResult& cell) {
  const NeedleResults& r = *needle_;
  try {
    const model::Checkpoint checkpoint = model::Checkpoint::open(r.model);
    const auto tokenizer = model::open_tokenizer(
        r.tokenizer.empty() ? model::default_tokenizer(r.model) : std::filesystem::path(r.tokenizer), checkpoint.config().vocab);
    model::NeedlePrompts prompts = r.prompts;
    if (prompts.task == model::NeedleTask::kv) prompts.haystack = model::read_text_file(r.haystack_file);
    const model::RetrievalPrompt prompt = model::needle_sample_prompt(prompts, *tokenizer, cell.length, cell.depth, 0);
    std::vector<uint32_t> layers;
    for (uint32_t l = 0; l < checkpoint.config().layers; ++l) layers.push_back(l);
    // The prompt's prefill with the cell's recorded plan: a decode-regime
    // cell's prefill is dense, as it was when measured.
    model::PromptCapture captured =
        model::capture_prompt(device_, checkpoint, *tokenizer, prompt, true, layers, r.chunk, cell.plan);
    captured.data.model = r.model;
    captured.data.source = "kvscope-viewer: " + r.path + ", " + cell_title(cell) + ", length " + std::to_string(cell.length) +
                           ", depth " + std::to_string(cell.depth);
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kvscope-needle-" + std::to_string(getpid()) + ".safetensors");
    write_capture(path, captured.data);
    needle_capture_ = path.string();
    open_capture(path.string());
    if (!error_.empty()) return;
    const model::RetrievalHead head = model::find_retrieval_head(capture());
    state_.layer = head.layer;
    state_.head = int(head.head);
    // The viewer shows one block kind: the prefill chunks where only they
    // select, else the decode steps.
    const bool prefill_only = cell.plan.decode_method.empty() && !cell.plan.prefill_method.empty();
    state_.mode = prefill_only ? Mode::prefill : Mode::decode;
    state_.chunk = r.chunk;
    state_.options = cell.plan.options;
    if (cell.plan.any()) {
      state_.method = prefill_only ? cell.plan.prefill_method : cell.plan.decode_method;
      state_.budget = int(prefill_only ? cell.plan.prefill_budget : cell.plan.decode_budget);
    }
    needle_status_ = cell_title(cell) + " at " + std::to_string(cell.length) + " tokens, depth " +
                     std::to_string(cell.depth).substr(0, 4) + ": retrieval head " + std::to_string(head.layer) + "." +
                     std::to_string(head.head) + " (" + std::to_string(head.needle_mass).substr(0, 5) + " of its mass on the needle)";
  } catch (const std::exception& e) {
    error_ = shown_error(e);
  }
}

void App::needle_panel() {
  if (!needle_) return;
  ImGui::SetNextWindowPos(ImVec2(kControlsWidth + 40, 60), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(760, 560), ImGuiCond_FirstUseEver);
  if (!ImGui::Begin("kvscope needle")) {
    ImGui::End();
    return;
  }
  const NeedleResults& r = *needle_;
  ImGui::TextWrapped("%s: %s task, model %s. A cell is accuracy at (length, depth); click one to re-run its prompt "
                     "and see the method on the retrieval head.", r.path.c_str(),
                     model::needle_task_name(r.prompts.task), r.model.c_str());
  if (!needle_status_.empty()) ImGui::TextWrapped("shown: %s", needle_status_.c_str());
  std::set<uint32_t> length_set;
  std::set<double> depth_set;
  std::vector<std::string> groups;
  std::map<std::string, std::map<std::pair<uint32_t, double>, const model::NeedleResult*>> by_group;
  for (const model::NeedleResult& c : r.cells) {
    length_set.insert(c.length);
    depth_set.insert(c.depth);
    const std::string title = cell_title(c);
    if (!by_group.count(title)) groups.push_back(title);
    by_group[title][{c.length, c.depth}] = &c;
  }
  const model::NeedleResult* clicked = nullptr;
  if (ImGui::BeginTable("heatmaps", 4)) {
    for (const std::string& title : groups) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(title.c_str());
      ImGui::PushID(title.c_str());
      for (double depth : depth_set) {
        ImGui::Text("%.2f", depth);
        for (uint32_t length : length_set) {
          ImGui::SameLine();
          const auto it = by_group[title].find({length, depth});
          if (it == by_group[title].end()) {
            ImGui::Dummy(ImVec2(28, 14));
            continue;
          }
          const model::NeedleResult& c = *it->second;
          ImGui::PushID(int(length) * 1000 + int(depth * 100));
          if (ImGui::ColorButton("##cell", accuracy_colour(c.accuracy()), ImGuiColorEditFlags_NoTooltip, ImVec2(28, 14)))
            clicked = &c;
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s\nlength %u, depth %.2f: accuracy %.2f over %u\nclick: re-run it", title.c_str(), length,
                              depth, c.accuracy(), c.samples);
          ImGui::PopID();
        }
      }
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  // Accuracy against the budget, mean over lengths and depths, per method and regime.
  std::map<std::string, std::map<uint32_t, std::pair<double, int>>> curves;
  for (const model::NeedleResult& c : r.cells)
    if (c.method != "dense") {
      auto& point = curves[c.method + " " + model::plan_regime_name(c.plan)][c.budget];
      point.first += c.accuracy();
      point.second += 1;
    }
  ImGui::Separator();
  ImGui::TextUnformatted("accuracy against the budget (mean over lengths and depths; budgets ascending)");
  for (const auto& [name, points] : curves) {
    std::vector<float> values;
    std::string budgets;
    for (const auto& [budget, sum] : points) {
      values.push_back(float(sum.first / sum.second));
      budgets += (budgets.empty() ? "" : ", ") + std::to_string(budget);
    }
    ImGui::PlotLines(name.c_str(), values.data(), int(values.size()), 0, budgets.c_str(), 0.0f, 1.0f, ImVec2(320, 46));
  }
  ImGui::End();
  if (clicked) rerun_needle(*clicked);
}

}  // namespace kv::viewer
