#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app.h"
#include "style.h"

namespace kv::viewer {

void App::cosine_panel() {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const float w = (display.x - kControlsWidth) / 3, y = display.y * kMapShare;
  place(kControlsWidth + w, y, w, display.y - y);
  ImGui::Begin("Query cosine distribution", nullptr, kPanelFlags);
  ImGui::TextDisabled("head %d, the chunk's queries: cosine to the chunk's mean query%s", std::max(state_.head, 0),
                      "");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 kept_color = IM_COL32(80, 200, 255, 255), other_color = IM_COL32(110, 110, 130, 255);
  const auto& s = stats_;
  if (s.cosine.empty()) {
    ImGui::End();
    return;
  }
  const float lo = std::min(0.0f, *std::min_element(s.cosine.begin(), s.cosine.end())), hi = 1.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // Histogram: kept queries stacked on the others.
  {
    const int bins = 24;
    std::vector<int> kept(bins), other(bins);
    for (size_t i = 0; i < s.cosine.size(); ++i) {
      int b = std::clamp(int((s.cosine[i] - lo) / (hi - lo) * bins), 0, bins - 1);
      (s.kept[i] ? kept : other)[size_t(b)]++;
    }
    int top = 1;
    for (int b = 0; b < bins; ++b) top = std::max(top, kept[size_t(b)] + other[size_t(b)]);
    ImVec2 o = ImGui::GetCursorScreenPos();
    const float hh = avail.y * 0.38f, left = 30, bottom = 18;
    ImGui::Dummy(ImVec2(avail.x, hh));
    const float bw = (avail.x - left - 8) / bins, base = o.y + hh - bottom;
    for (int b = 0; b < bins; ++b) {
      const float x0 = o.x + left + b * bw, x1 = x0 + bw - 1;
      const float h_other = (hh - bottom - 14) * other[size_t(b)] / top, h_kept = (hh - bottom - 14) * kept[size_t(b)] / top;
      draw->AddRectFilled(ImVec2(x0, base - h_other), ImVec2(x1, base), other_color);
      draw->AddRectFilled(ImVec2(x0, base - h_other - h_kept), ImVec2(x1, base - h_other), kept_color);
    }
    char text[32];
    std::snprintf(text, sizeof text, "%d", top);
    draw->AddText(ImVec2(o.x, o.y + 10), IM_COL32(180, 180, 180, 255), text);
    draw->AddText(ImVec2(o.x, base - 14), IM_COL32(180, 180, 180, 255), "0");
    std::snprintf(text, sizeof text, "%.2f", lo);
    draw->AddText(ImVec2(o.x + left, base + 2), IM_COL32(180, 180, 180, 255), text);
    draw->AddText(ImVec2(o.x + avail.x - 40, base + 2), IM_COL32(180, 180, 180, 255), "1.00");
    draw->AddText(ImVec2(o.x + avail.x / 2 - 70, base + 2), IM_COL32(180, 180, 180, 255), "cosine (count of queries)");
  }
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kept_color), "kept by QuoKA (N_Q = %u, least similar)", state_.options.n_q);
  ImGui::SameLine();
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(other_color), "  other queries");
  // Scatter: cosine against keys needed for 90% of the query's mass (log scale).
  {
    ImVec2 o = ImGui::GetCursorScreenPos();
    const ImVec2 size(avail.x, ImGui::GetContentRegionAvail().y - 4);
    ImGui::Dummy(size);
    const float left = 40, bottom = 32;
    const ImVec2 p0(o.x + left, o.y + 4), p1(o.x + size.x - 8, o.y + size.y - bottom);
    draw->AddRect(p0, p1, IM_COL32(120, 120, 120, 255));
    const uint32_t top = std::max<uint32_t>(2, *std::max_element(s.keys_for_90.begin(), s.keys_for_90.end()));
    const double log_top = std::log2(double(top));
    for (size_t i = 0; i < s.cosine.size(); ++i) {
      const float x = p0.x + (s.cosine[i] - lo) / (hi - lo) * (p1.x - p0.x);
      const float y = p1.y - float(std::log2(std::max(1.0, double(s.keys_for_90[i]))) / log_top) * (p1.y - p0.y);
      draw->AddCircleFilled(ImVec2(x, y), 3, s.kept[i] ? kept_color : other_color);
    }
    char text[32];
    std::snprintf(text, sizeof text, "%u", top);
    draw->AddText(ImVec2(o.x + 2, p0.y), IM_COL32(180, 180, 180, 255), text);
    draw->AddText(ImVec2(o.x + 2, p1.y - 14), IM_COL32(180, 180, 180, 255), "1");
    draw->AddText(ImVec2(p0.x + 4, p1.y + 2), IM_COL32(180, 180, 180, 255), "x: cosine to the mean query");
    draw->AddText(ImVec2(p0.x + 4, p1.y + 15), IM_COL32(180, 180, 180, 255), "y: keys for 90% of its mass (log scale)");
  }
  ImGui::End();
}

}  // namespace kv::viewer
