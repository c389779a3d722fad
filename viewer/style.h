#pragma once
// What every panel of the viewer shares: the fixed layout and the colours.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "methods/table.h"

namespace kv::viewer {

// Fixed layout at any window size: controls on the left, the map on top, three panels below.
constexpr float kControlsWidth = 360;
constexpr float kMapShare = 0.47f;
// Longer captures leave methods that read every past query out of the curves
// (O(T^2) a point): on lavapipe H2O's curve alone took over a minute of the
// default 4k-token capture's first frame.
constexpr uint32_t kQuadraticCurveTokens = 2048;

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse;

const ImU32 kHit = IM_COL32(60, 220, 90, 255);      // selected and in the oracle's set
const ImU32 kMiss = IM_COL32(240, 60, 60, 255);     // in the oracle's set, not selected
const ImU32 kWasted = IM_COL32(250, 200, 40, 255);  // selected, not in the oracle's set
const ImU32 kDenseColor = IM_COL32(110, 110, 110, 255);

// A method's colour in method_table(); dense's grey.
inline ImU32 method_color(const std::string& name) {
  if (!is_method(name)) return kDenseColor;
  const Rgb c = find_method(name).color;
  return IM_COL32(c.r, c.g, c.b, 255);
}

// Dense attention mass as a dark-blue-to-white ramp; sqrt so small masses stay visible.
inline ImU32 mass_color(float mass, float row_max) {
  float t = row_max > 0 ? std::sqrt(std::clamp(mass / row_max, 0.0f, 1.0f)) : 0.0f;
  return IM_COL32(int(20 + 200 * t), int(30 + 200 * t), int(60 + 195 * t), 255);
}

inline void place(float x, float y, float w, float h) {
  ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
}

}  // namespace kv::viewer
