#include "app.h"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "error.h"

namespace kv::viewer {
namespace {

// Fixed layout at any window size: controls on the left, the map on top, three panels below.
constexpr float kControlsWidth = 360;
constexpr float kMapShare = 0.47f;
constexpr uint32_t kH2oCurveTokens = 8192;  // longer captures leave h2o out of the curves

const char* const kMethods[] = {"oracle", "quoka", "quest", "fier",   "streaming", "keydiff",
                                "tova",   "sparq", "loki",  "snapkv", "h2o",       "sampleattention"};
const ImU32 kMethodColors[] = {IM_COL32(240, 240, 240, 255), IM_COL32(80, 200, 255, 255), IM_COL32(255, 170, 60, 255),
                               IM_COL32(190, 120, 255, 255), IM_COL32(150, 150, 150, 255), IM_COL32(255, 110, 170, 255),
                               IM_COL32(120, 230, 160, 255), IM_COL32(230, 230, 90, 255), IM_COL32(90, 220, 220, 255),
                               IM_COL32(255, 140, 100, 255), IM_COL32(140, 160, 255, 255),
                               IM_COL32(200, 170, 120, 255)};
static_assert(std::size(kMethods) == std::size(kMethodColors));
const ImU32 kHit = IM_COL32(60, 220, 90, 255);      // selected and in the oracle's set
const ImU32 kMiss = IM_COL32(240, 60, 60, 255);     // in the oracle's set, not selected
const ImU32 kWasted = IM_COL32(250, 200, 40, 255);  // selected, not in the oracle's set

ImU32 method_color(const std::string& name) {
  for (size_t i = 0; i < std::size(kMethods); ++i)
    if (name == kMethods[i]) return kMethodColors[i];
  return IM_COL32(200, 200, 200, 255);
}

// Dense attention mass as a dark-blue-to-white ramp; sqrt so small masses stay visible.
ImU32 mass_color(float mass, float row_max) {
  float t = row_max > 0 ? std::sqrt(std::clamp(mass / row_max, 0.0f, 1.0f)) : 0.0f;
  return IM_COL32(int(20 + 200 * t), int(30 + 200 * t), int(60 + 195 * t), 255);
}

void place(float x, float y, float w, float h) {
  ImGui::SetNextWindowPos(ImVec2(x, y), ImGuiCond_Always);
  ImGui::SetNextWindowSize(ImVec2(w, h), ImGuiCond_Always);
}

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse;

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

App::App(const vk::Device& device, std::unique_ptr<Capture> capture, const std::string& capture_path, ViewState state)
    : device_(device), capture_(std::move(capture)), capture_path_(capture_path), state_(state) {
  std::snprintf(path_field_, sizeof path_field_, "%s", capture_path.c_str());
}

// Loads another capture; on failure the current one stays and the error shows.
void App::open_capture(const std::string& path) {
  try {
    auto capture = std::make_unique<Capture>(path);
    require_finite(*capture, state_.allow_nonfinite);
    inspector_.reset();  // it refers to the old capture's layer
    capture_ = std::move(capture);
    capture_path_ = path;
    state_.layer = capture_->layers().front().index;
    state_.block = -1;
    curves_key_.clear();
    stats_key_.clear();
    current_ = {};
    dirty_ = true;
    error_.clear();
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

std::vector<Block> App::blocks() const {
  return blocks_with_candidates(state_.mode, capture().tokens(), 64, state_.chunk);
}

Block App::current_block() const {
  std::vector<Block> all = blocks();
  const int index = state_.block < 0 ? int(all.size()) - 1 : std::min(state_.block, int(all.size()) - 1);
  return all[size_t(index)];
}

void App::refresh() {
  if (!inspector_ || inspector_->layer().index != state_.layer || inspector_->mode() != state_.mode ||
      inspector_->chunk() != state_.chunk)
    inspector_ = std::make_unique<Inspector>(device_, capture(), state_.layer, state_.mode, state_.chunk);
  const Block block = current_block();
  const bool new_block = current_.heads.empty() || shown_.layer != state_.layer || shown_.mode != state_.mode ||
                         current_.block.first_query != block.first_query;
  current_ = inspector_->inspect(block, state_.method, state_.options, uint32_t(state_.budget));
  if (new_block || view_last_ <= view_first_ || view_last_ > block.candidates()) {
    view_first_ = 0;
    view_last_ = block.candidates();
  }
  auto total = [](const std::vector<vk::StageTime>& times) {
    double ms = 0;
    for (const vk::StageTime& t : times) ms += t.milliseconds;
    return float(ms);
  };
  method_history_.push_back(total(current_.method_times));
  dense_history_.push_back(total(current_.dense_times));
  while (method_history_.size() > 240) method_history_.pop_front();
  while (dense_history_.size() > 240) dense_history_.pop_front();
  shown_ = state_;
  dirty_ = false;
}

// The curves depend on the layer, regime and parameters only; a change queues
// every (method, budget) point and each frame computes points for a few
// milliseconds, so the lines fill in over the next frames without a stall.
void App::refresh_curves() {
  if (!inspector_) return;
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "%d/%d/%u/", state_.layer, int(state_.mode), state_.chunk);
  const std::string key = prefix + state_.options.key();
  if (curves_key_ != key) {
    curves_key_ = key;
    curves_.clear();
    curve_todo_.clear();
    std::vector<uint32_t> budgets;
    for (uint32_t b = 16; b <= std::min<uint32_t>(4096, capture().tokens()); b *= 2) budgets.push_back(b);
    if (budgets.size() < 2) budgets = {1, 2};
    for (uint32_t b : budgets) {
      EvalRow dense;
      dense.method = "dense";
      dense.budget = b;
      dense.mean = {1.0, 1.0, 0.0};
      curves_.push_back(dense);
    }
    for (const char* m : kMethods)
      if (std::string(m) != "h2o" || capture().tokens() <= kH2oCurveTokens)  // O(T^2) per point
        for (uint32_t b : budgets) curve_todo_.push_back({m, b});
    curve_points_ = curve_todo_.size();
  }
  const std::vector<Block> blocks = inspector_->curve_blocks();
  const auto start = std::chrono::steady_clock::now();
  while (!curve_todo_.empty()) {
    EvalRow row;
    row.method = curve_todo_.front().first;
    row.budget = curve_todo_.front().second;
    curve_todo_.pop_front();
    row.mean = inspector_->curve_point(blocks, row.method, state_.options, row.budget);
    curves_.push_back(row);
    if (!state_.complete_before_drawing && std::chrono::steady_clock::now() - start > std::chrono::milliseconds(12))
      break;
  }
}

// On the GPU: a few milliseconds at 32k, so it runs in the frame of the change.
void App::refresh_query_stats() {
  if (!inspector_) return;
  const Block block = current_block();
  const uint32_t head = uint32_t(std::max(state_.head, 0));
  char key[128];
  std::snprintf(key, sizeof key, "%d/%d/%u/%u/%u/%u", state_.layer, int(block.mode), block.first_query, state_.chunk,
                head, state_.options.n_q);
  if (stats_key_ == key) return;
  stats_key_ = key;
  stats_ = inspector_->query_stats(head, block, state_.options.n_q);
}

void App::frame() {
  try {
    if (dirty_ || state_.live) refresh();
    refresh_curves();
    refresh_query_stats();
  } catch (const std::exception& e) {
    error_ = e.what();
    curve_todo_.clear();  // the keys stay, so a failed computation is not retried every frame
  }
  controls_panel();
  map_panel();
  recall_panel();
  cosine_panel();
  latency_panel();
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
    for (const char* m : kMethods)
      if (ImGui::Selectable(m, state_.method == m)) state_.method = m;
    ImGui::EndCombo();
  }
  int log_budget = int(std::round(std::log2(std::max(1, state_.budget))));
  char budget_text[32];
  std::snprintf(budget_text, sizeof budget_text, "%d keys", state_.budget);
  if (ImGui::SliderInt("budget", &log_budget, 3, 13, budget_text)) state_.budget = 1 << log_budget;
  ImGui::Separator();
  ImGui::TextUnformatted("method parameters");
  int page = int(state_.options.page_size), group = int(state_.options.group_size), nq = int(state_.options.n_q),
      sinks = int(state_.options.n_sink), agg = int(state_.options.gqa_agg), sparq_r = int(state_.options.sparq_r);
  ImGui::SliderInt("quest page", &page, 4, 64);
  ImGui::SliderInt("fier group", &group, 8, 128);
  ImGui::SliderInt("quoka N_Q", &nq, 1, 64);
  ImGui::Checkbox("quoka: max over group", &state_.options.quoka_max);
  ImGui::Combo("gqa-agg", &agg, "head\0max\0mean\0");
  ImGui::SliderInt("sinks", &sinks, 0, 64);
  ImGui::SliderInt("sparq r", &sparq_r, 1, int(capture().layer(state_.layer).shape.dim));
  state_.options.page_size = uint32_t(page);
  state_.options.group_size = uint32_t(group);
  state_.options.n_q = uint32_t(nq);
  state_.options.n_sink = uint32_t(sinks);
  state_.options.sparq_r = uint32_t(sparq_r);
  state_.options.gqa_agg = HeadAggregate(agg);
  ImGui::Separator();
  const uint32_t heads = capture().layer(state_.layer).shape.heads;
  ImGui::SliderInt("head (-1: all)", &state_.head, -1, int(heads) - 1);
  ImGui::Checkbox("re-run every frame", &state_.live);
  if (before.layer != state_.layer || before.mode != state_.mode || before.block != state_.block ||
      before.method != state_.method || before.budget != state_.budget || before.head != state_.head ||
      std::memcmp(&before.options, &state_.options, sizeof(MethodOptions)) != 0)
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
  for (const char* m : kMethods) legend(m, ImGui::ColorConvertU32ToFloat4(method_color(m)));
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
