#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app.h"
#include "style.h"

namespace kv::viewer {
namespace {

// A line chart over log2(budget) with a labelled value axis [0, 1].
void budget_chart(const char* title, const std::vector<EvalRow>& rows, double MetricTriple::*metric, ImVec2 size) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(size);
  const float left = 34, bottom = 30, top = 18;
  ImVec2 p0(origin.x + left, origin.y + top), p1(origin.x + size.x - 8, origin.y + size.y - bottom);
  draw->AddRect(p0, p1, IM_COL32(120, 120, 120, 255));
  draw->AddText(ImVec2(origin.x + left, origin.y), IM_COL32(230, 230, 230, 255), title);
  std::vector<uint32_t> budgets;
  for (const EvalRow& r : rows) budgets.push_back(r.budget);
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  if (budgets.size() < 2) return;
  const double lo = std::log2(budgets.front()), hi = std::log2(budgets.back());
  auto x_of = [&](uint32_t b) { return p0.x + float((std::log2(b) - lo) / (hi - lo)) * (p1.x - p0.x); };
  auto y_of = [&](double v) { return p1.y - float(std::clamp(v, 0.0, 1.0)) * (p1.y - p0.y); };
  for (double v : {0.0, 0.5, 1.0}) {
    char label[8];
    std::snprintf(label, sizeof label, "%.1f", v);
    draw->AddText(ImVec2(origin.x + 4, y_of(v) - 7), IM_COL32(180, 180, 180, 255), label);
    draw->AddLine(ImVec2(p0.x, y_of(v)), ImVec2(p1.x, y_of(v)), IM_COL32(70, 70, 70, 255));
  }
  for (uint32_t b : budgets) {
    char label[16];
    std::snprintf(label, sizeof label, "%u", b);
    const float w = ImGui::CalcTextSize(label).x;
    draw->AddText(ImVec2(std::min(x_of(b) - w / 2, p1.x - w), p1.y + 3), IM_COL32(180, 180, 180, 255), label);
  }
  draw->AddText(ImVec2((p0.x + p1.x) / 2 - 60, p1.y + 15), IM_COL32(180, 180, 180, 255), "budget k (keys, log scale)");
  std::vector<std::string> names;
  for (const EvalRow& r : rows)
    if (std::find(names.begin(), names.end(), r.method) == names.end()) names.push_back(r.method);
  for (const std::string& name : names) {
    std::vector<ImVec2> points;
    for (const EvalRow& r : rows)
      if (r.method == name) points.emplace_back(x_of(r.budget), y_of(r.mean.*metric));
    std::sort(points.begin(), points.end(), [](ImVec2 a, ImVec2 b) { return a.x < b.x; });
    const ImU32 color = name == "dense" ? IM_COL32(90, 90, 90, 255) : method_color(name);
    draw->AddPolyline(points.data(), int(points.size()), color, 0, 2.0f);
    for (ImVec2 p : points) draw->AddCircleFilled(p, 2.5f, color);
  }
}

}  // namespace

void App::recall_panel() {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const float w = (display.x - kControlsWidth) / 3, y = display.y * kMapShare;
  place(kControlsWidth, y, w, display.y - y);
  ImGui::Begin("Recall against dense attention", nullptr, kPanelFlags);
  ImGui::TextDisabled("last %s, every method; dense and oracle as references", state_.mode == Mode::decode ? "4 probes" : "2 chunks");
  if (!curve_todo_.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%zu of %zu points)", curve_points_ - curve_todo_.size(), curve_points_);
  }
  const float chart_height = (ImGui::GetContentRegionAvail().y - 150) / 2;
  const ImVec2 size(ImGui::GetContentRegionAvail().x, std::max(60.0f, chart_height));
  budget_chart("coverage of dense attention mass", curves_, &MetricTriple::coverage, size);
  budget_chart("recall of the oracle's keys", curves_, &MetricTriple::recall, size);
  // The legend wraps: more methods than one line holds at 1600 pixels.
  const float legend_width = ImGui::GetContentRegionAvail().x;
  float used = 0;
  auto legend = [&](const char* name, ImVec4 color) {
    const float w = ImGui::CalcTextSize(name).x + ImGui::GetStyle().ItemSpacing.x;
    if (used > 0 && used + w <= legend_width) ImGui::SameLine();
    else used = 0;
    ImGui::TextColored(color, "%s", name);
    used += w;
  };
  for (const MethodSpec& m : method_table()) legend(m.name, ImGui::ColorConvertU32ToFloat4(method_color(m.name)));
  legend("dense", ImVec4(0.35f, 0.35f, 0.35f, 1));
  std::vector<float> per_head;
  for (const HeadMetrics& h : current_.heads) per_head.push_back(float(h.coverage));
  char label[96];
  std::snprintf(label, sizeof label, "coverage per head\n%s, k=%d\n(x: head, y: 0..1)", state_.method.c_str(), state_.budget);
  ImGui::PlotHistogram("##heads", per_head.data(), int(per_head.size()), 0, nullptr, 0.0f, 1.0f,
                       ImVec2(ImGui::GetContentRegionAvail().x - 130, 70));
  ImGui::SameLine();
  ImGui::TextUnformatted(label);
  ImGui::End();
}

}  // namespace kv::viewer
