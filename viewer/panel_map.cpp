#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app.h"
#include "style.h"

namespace kv::viewer {

void App::map_panel() {
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  place(kControlsWidth, 0, display.x - kControlsWidth, display.y * kMapShare);
  ImGui::Begin("Selected-token map", nullptr, kPanelFlags);
  const Inspection& in = current_;
  const uint32_t candidates = in.block.candidates();
  if (in.heads.empty() || candidates == 0) {
    ImGui::TextUnformatted("no selection yet");
    ImGui::End();
    return;
  }
  const AttentionShape& shape = capture().layer(state_.layer).shape;
  // Legend.
  ImDrawList* draw = ImGui::GetWindowDrawList();
  auto swatch = [&](ImU32 color, const char* label) {
    ImVec2 p = ImGui::GetCursorScreenPos();
    draw->AddRectFilled(p, ImVec2(p.x + 12, p.y + 12), color);
    ImGui::Dummy(ImVec2(14, 12));
    ImGui::SameLine();
    ImGui::TextUnformatted(label);
    ImGui::SameLine(0, 18);
  };
  swatch(kHit, "hit: selected, in oracle");
  swatch(kMiss, "miss: oracle, not selected");
  swatch(kWasted, "wasted: selected, not oracle");
  swatch(mass_color(1, 1), "bright = dense attention mass");
  ImGui::NewLine();
  ImGui::Text("keys %u..%u of %u (wheel: zoom, drag: pan, double-click: reset)", uint32_t(view_first_),
              uint32_t(view_last_), candidates);

  std::vector<uint32_t> heads;
  if (state_.head >= 0) heads.push_back(uint32_t(state_.head));
  else
    for (uint32_t h = 0; h < shape.heads; ++h) heads.push_back(h);
  const float label_width = 46;
  const float text_height = 110;
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float width = avail.x - label_width, height = std::max(40.0f, avail.y - text_height - 24);
  const float row_height = height / heads.size();
  ImGui::InvisibleButton("map", ImVec2(avail.x, height + 20));
  const bool hovered = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  double span = view_last_ - view_first_;
  if (hovered && io.MouseWheel != 0) {
    const double at = view_first_ + (io.MousePos.x - origin.x - label_width) / width * span;
    const double factor = io.MouseWheel > 0 ? 0.8 : 1.25;
    span = std::clamp(span * factor, 8.0, double(candidates));
    view_first_ = std::clamp(at - (at - view_first_) * factor, 0.0, candidates - span);
    view_last_ = view_first_ + span;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    view_first_ = std::clamp(view_first_ - io.MouseDelta.x / width * span, 0.0, candidates - span);
    view_last_ = view_first_ + span;
  }
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    view_first_ = 0;
    view_last_ = candidates;
  }

  const uint32_t group = shape.group();
  auto selection_row = [&](uint32_t h) { return in.granularity == Granularity::kv_head ? h / group : h; };
  auto oracle_row = [&](uint32_t h) { return in.oracle_granularity == Granularity::kv_head ? h / group : h; };
  const int columns = std::max(1, int(width));
  const double keys_per_column = (view_last_ - view_first_) / columns;
  std::vector<uint8_t> selected(candidates), oracle(candidates);
  for (size_t r = 0; r < heads.size(); ++r) {
    const uint32_t h = heads[r];
    std::fill(selected.begin(), selected.end(), 0);
    std::fill(oracle.begin(), oracle.end(), 0);
    for (uint32_t s = 0; s < in.width; ++s) {
      int32_t j = in.selection[size_t(selection_row(h)) * in.width + s];
      if (j >= 0 && uint32_t(j) < candidates) selected[j] = 1;
    }
    for (uint32_t s = 0; s < in.budget; ++s) {
      int32_t j = in.oracle[size_t(oracle_row(h)) * in.budget + s];
      if (j >= 0 && uint32_t(j) < candidates) oracle[j] = 1;
    }
    const float* mass = &in.key_mass[size_t(h) * candidates];
    const float row_max = *std::max_element(mass, mass + candidates);
    const float y0 = origin.y + r * row_height, y1 = y0 + std::max(1.0f, row_height - 1);
    for (int c = 0; c < columns; ++c) {
      const uint32_t k0 = uint32_t(view_first_ + c * keys_per_column);
      const uint32_t k1 = std::min<uint32_t>(candidates, std::max<uint32_t>(k0 + 1, uint32_t(view_first_ + (c + 1) * keys_per_column)));
      float m = 0;
      bool hit = false, miss = false, wasted = false;
      for (uint32_t j = k0; j < k1; ++j) {
        m = std::max(m, mass[j]);
        hit |= selected[j] && oracle[j];
        miss |= !selected[j] && oracle[j];
        wasted |= selected[j] && !oracle[j];
      }
      const float x0 = origin.x + label_width + c, x1 = x0 + 1;
      draw->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), mass_color(m, row_max));
      const ImU32 mark = miss ? kMiss : hit ? kHit : wasted ? kWasted : 0;
      if (mark) draw->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y0 + std::max(1.0f, (y1 - y0) * 0.45f)), mark);
    }
    if (row_height >= 11 || r % std::max<size_t>(1, size_t(12 / std::max(row_height, 1.0f))) == 0) {
      char label[16];
      std::snprintf(label, sizeof label, "h%u", h);
      draw->AddText(ImVec2(origin.x + 2, y0), IM_COL32(200, 200, 200, 255), label);
    }
  }
  // Key axis.
  const float axis_y = origin.y + height + 2;
  for (int t = 0; t <= 4; ++t) {
    const double key = view_first_ + (view_last_ - view_first_) * t / 4;
    char label[16];
    std::snprintf(label, sizeof label, "%u", uint32_t(key));
    draw->AddText(ImVec2(origin.x + label_width + width * t / 4 - (t == 4 ? 40 : 0), axis_y),
                  IM_COL32(180, 180, 180, 255), label);
  }
  draw->AddText(ImVec2(origin.x + 2, axis_y), IM_COL32(180, 180, 180, 255), "key");
  if (hovered) {
    const float mx = io.MousePos.x - origin.x - label_width, my = io.MousePos.y - origin.y;
    if (mx >= 0 && my >= 0 && my < height) {
      const uint32_t j = std::min<uint32_t>(candidates - 1, uint32_t(view_first_ + mx / width * (view_last_ - view_first_)));
      const uint32_t h = heads[std::min<size_t>(heads.size() - 1, size_t(my / row_height))];
      ImGui::BeginTooltip();
      ImGui::Text("head %u, key %u", h, j);
      ImGui::Text("dense probability %.3g", in.key_mass[size_t(h) * candidates + j]);
      if (!in.method_scores.empty()) {
        const ScoreView& v = in.score_layout;
        const uint32_t row = v.rows == shape.heads ? h : h / group;
        const uint32_t index = j / v.tokens_per_score;
        if (index < v.stride)
          ImGui::Text("%s score %.4g%s", state_.method.c_str(), in.method_scores[size_t(row) * v.stride + index],
                      v.tokens_per_score > 1 ? " (its page)" : "");
      }
      bool is_selected = false, in_oracle = false;
      for (uint32_t s = 0; s < in.width; ++s) is_selected |= in.selection[size_t(selection_row(h)) * in.width + s] == int32_t(j);
      for (uint32_t s = 0; s < in.budget; ++s) in_oracle |= in.oracle[size_t(oracle_row(h)) * in.budget + s] == int32_t(j);
      ImGui::Text("%s, %s", is_selected ? "selected" : "not selected", in_oracle ? "in the oracle's set" : "not in the oracle's set");
      if (capture().has_token_text()) ImGui::Text("token: \"%s\"", capture().token_text(j).c_str());
      ImGui::EndTooltip();
    }
  }
  text_view(text_height);
  ImGui::End();
}

void App::text_view(float height) {
  if (!capture().has_token_text()) return;
  ImGui::BeginChild("text", ImVec2(0, height), true);
  const Inspection& in = current_;
  const uint32_t candidates = in.block.candidates();
  const uint32_t h = uint32_t(std::max(state_.head, 0));
  const uint32_t group = capture().layer(state_.layer).shape.group();
  const uint32_t row = in.granularity == Granularity::kv_head ? h / group : h;
  std::vector<uint8_t> selected(candidates);
  for (uint32_t s = 0; s < in.width; ++s) {
    int32_t j = in.selection[size_t(row) * in.width + s];
    if (j >= 0 && uint32_t(j) < candidates) selected[j] = 1;
  }
  ImGui::TextDisabled("text of keys %u..%u, head %u: highlighted tokens are selected", uint32_t(view_first_),
                      uint32_t(view_last_), h);
  const float right = ImGui::GetContentRegionAvail().x;
  float x = 0;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const uint32_t last = std::min<uint32_t>(uint32_t(view_last_), uint32_t(view_first_) + 1500);
  for (uint32_t j = uint32_t(view_first_); j < last; ++j) {
    std::string text = capture().token_text(j);
    for (char& ch : text)
      if (ch == '\n' || ch == '\t') ch = ' ';
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    if (x > 0 && x + w > right) x = 0;
    else if (x > 0) ImGui::SameLine(0, 0);
    ImVec2 p = ImGui::GetCursorScreenPos();
    if (selected[j]) draw->AddRectFilled(p, ImVec2(p.x + w, p.y + ImGui::GetTextLineHeight()), IM_COL32(40, 120, 60, 255));
    ImGui::TextUnformatted(text.c_str());
    x += w;
  }
  ImGui::EndChild();
}

}  // namespace kv::viewer
