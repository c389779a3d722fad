#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app.h"
#include "style.h"

namespace kv::viewer {

void App::latency_panel() {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const float w = (display.x - kControlsWidth) / 3, y = display.y * kMapShare;
  place(kControlsWidth + 2 * w, y, w, display.y - y);
  ImGui::Begin("Per-stage GPU latency", nullptr, kPanelFlags);
  ImGui::Text("%s", device_.info().name.c_str());
  ImGui::TextDisabled("GPU timestamps of this block, in ms");
  std::vector<vk::StageTime> stages = current_.method_times;
  stages.insert(stages.end(), current_.dense_times.begin(), current_.dense_times.end());
  double top = 1e-6;
  for (const vk::StageTime& t : stages) top = std::max(top, t.milliseconds);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float label_width = 190, bar_width = ImGui::GetContentRegionAvail().x - label_width - 60;
  for (const vk::StageTime& t : stages) {
    const bool dense = t.stage.rfind("dense", 0) == 0;
    ImVec2 p = ImGui::GetCursorScreenPos();
    const float length = float(t.milliseconds / top) * bar_width;
    draw->AddRectFilled(ImVec2(p.x + label_width, p.y + 2), ImVec2(p.x + label_width + std::max(1.0f, length), p.y + 14),
                        dense ? IM_COL32(110, 110, 110, 255) : method_color(state_.method));
    ImGui::TextUnformatted(t.stage.c_str());
    ImGui::SameLine(label_width + std::max(1.0f, length) + 6);
    ImGui::Text("%.4f", t.milliseconds);
  }
  ImGui::Separator();
  ImGui::TextDisabled("history: %s stages (colour) and dense (grey), ms per block", state_.method.c_str());
  std::vector<float> method(method_history_.begin(), method_history_.end()), dense(dense_history_.begin(), dense_history_.end());
  // Scaled to the recent frames, so a first run's shader compilation does not flatten the rest.
  float high = 1e-6f;
  for (size_t i = method.size() > 60 ? method.size() - 60 : 1; i < method.size(); ++i) high = std::max(high, method[i]);
  for (size_t i = dense.size() > 60 ? dense.size() - 60 : 1; i < dense.size(); ++i) high = std::max(high, dense[i]);
  if (method.size() <= 1) high = std::max({high, method.empty() ? 0.0f : method[0], dense.empty() ? 0.0f : dense[0]});
  char overlay[64];
  std::snprintf(overlay, sizeof overlay, "%s: %.4f ms", state_.method.c_str(), method.empty() ? 0.0f : method.back());
  const float plot_height = (ImGui::GetContentRegionAvail().y - 10) / 2;
  ImGui::PushStyleColor(ImGuiCol_PlotLines, ImGui::ColorConvertU32ToFloat4(method_color(state_.method)));
  ImGui::PlotLines("##method", method.data(), int(method.size()), 0, overlay, 0.0f, high * 1.1f,
                   ImVec2(ImGui::GetContentRegionAvail().x, plot_height));
  ImGui::PopStyleColor();
  std::snprintf(overlay, sizeof overlay, "dense: %.4f ms (0..%.3f ms)", dense.empty() ? 0.0f : dense.back(), high * 1.1f);
  ImGui::PlotLines("##dense", dense.data(), int(dense.size()), 0, overlay, 0.0f, high * 1.1f,
                   ImVec2(ImGui::GetContentRegionAvail().x, plot_height));
  ImGui::End();
}

}  // namespace kv::viewer
