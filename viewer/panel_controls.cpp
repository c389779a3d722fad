#include <imgui.h>

#include <cmath>
#include <cstdio>

#include "app.h"
#include "style.h"

namespace kv::viewer {

// One option's control: a combo for named values, else a slider over the
// viewer's range (up to the head dimension where the table says 0).
void App::option_control(const OptionSpec& option) {
  const uint32_t value = option.get(state_.options);
  if (!option.names.empty()) {
    int index = int(value);
    std::string items;
    for (const char* name : option.names) items += std::string(name) + '\0';
    if (ImGui::Combo(option.flag, &index, items.c_str())) option.set(state_.options, uint32_t(index));
  } else {
    const int highest = option.viewer_highest ? int(option.viewer_highest) : int(capture().layer(state_.layer).shape.dim);
    int v = int(value);
    if (ImGui::SliderInt(option.flag, &v, int(option.viewer_lowest), highest)) {
      if (option.odd && v % 2 == 0) v = v + 1 <= highest ? v + 1 : v - 1;
      option.set(state_.options, uint32_t(std::max(v, int(option.lowest))));
    }
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("--%s: %s", option.flag, option.help);
}

void App::controls_panel() {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  place(0, 0, kControlsWidth, display.y);
  ImGui::Begin("kvscope", nullptr, kPanelFlags);
  ImGui::PushItemWidth(170);
  ImGui::TextWrapped("%s", capture_path_.c_str());
  ImGui::SetNextItemWidth(250);
  const bool entered = ImGui::InputText("##path", path_field_, sizeof path_field_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("open") || entered) open_capture(path_field_);
  ImGui::Text("model: %s", capture().model().c_str());
  ImGui::Text("device: %s", device_.info().name.c_str());
  ImGui::Separator();
  ViewState before = state_;
  if (ImGui::BeginCombo("layer", std::to_string(state_.layer).c_str())) {
    for (const CaptureLayer& l : capture().layers())
      if (ImGui::Selectable(std::to_string(l.index).c_str(), l.index == state_.layer)) state_.layer = l.index;
    ImGui::EndCombo();
  }
  int mode = int(state_.mode);
  ImGui::RadioButton("decode probe", &mode, int(Mode::decode));
  ImGui::SameLine();
  ImGui::RadioButton("prefill chunk", &mode, int(Mode::prefill));
  state_.mode = Mode(mode);
  const int n_blocks = int(blocks().size());
  int block = state_.block < 0 ? n_blocks - 1 : std::min(state_.block, n_blocks - 1);
  ImGui::SliderInt(state_.mode == Mode::decode ? "probe" : "chunk", &block, 0, n_blocks - 1);
  state_.block = block;
  const Block b = current_block();
  ImGui::Text(state_.mode == Mode::decode ? "position t = %u, %u candidate keys" : "queries from %u, %u past keys",
              b.first_query, b.candidates());
  if (ImGui::BeginCombo("method", state_.method.c_str())) {
    for (const MethodSpec& m : method_table())
      if (ImGui::Selectable(m.name, state_.method == m.name)) state_.method = m.name;
    ImGui::EndCombo();
  }
  int log_budget = int(std::round(std::log2(std::max(1, state_.budget))));
  char budget_text[32];
  std::snprintf(budget_text, sizeof budget_text, "%d keys", state_.budget);
  if (ImGui::SliderInt("budget", &log_budget, 3, 13, budget_text)) state_.budget = 1 << log_budget;
  ImGui::Separator();
  // Every option of option_table(): the method's own first, the others (which
  // the recall curves use) folded below.
  const MethodSpec& method = find_method(state_.method);
  auto reads = [&](const OptionSpec& o) {
    return std::any_of(method.options.begin(), method.options.end(), [&](const char* f) { return std::string(f) == o.flag; });
  };
  ImGui::Text("%s parameters%s", method.name, method.options.empty() ? ": none" : "");
  for (const OptionSpec& o : option_table())
    if (reads(o)) option_control(o);
  if (ImGui::CollapsingHeader("other methods' parameters (curves)"))
    for (const OptionSpec& o : option_table())
      if (!reads(o)) option_control(o);
  ImGui::Separator();
  const uint32_t heads = capture().layer(state_.layer).shape.heads;
  ImGui::SliderInt("head (-1: all)", &state_.head, -1, int(heads) - 1);
  ImGui::Checkbox("re-run every frame", &state_.live);
  if (before.layer != state_.layer || before.mode != state_.mode || before.block != state_.block ||
      before.method != state_.method || before.budget != state_.budget || before.head != state_.head ||
      before.options.key() != state_.options.key())
    dirty_ = true;
  ImGui::Separator();
  if (!current_.heads.empty()) {
    double coverage = 0, recall = 0, error = 0;
    for (const HeadMetrics& h : current_.heads) {
      coverage += h.coverage / current_.heads.size();
      recall += h.recall / current_.heads.size();
      error += h.output_error / current_.heads.size();
    }
    ImGui::Text("this block, mean over heads:");
    ImGui::Text("coverage %.4f  recall %.4f", coverage, recall);
    ImGui::Text("output error %.4f", error);
  }
  if (!error_.empty()) ImGui::TextWrapped("error: %s", error_.c_str());
  ImGui::PopItemWidth();
  ImGui::End();
}

}  // namespace kv::viewer
