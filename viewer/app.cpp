#include "app.h"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "methods/table.h"
#include "style.h"

namespace kv::viewer {

std::string shown_error(const std::exception& e) {
  const auto* input = dynamic_cast<const InputError*>(&e);
  if (!input || input->setting.empty()) return e.what();
  std::string setting = input->setting;
  std::replace_if(setting.begin(), setting.end(), [](char c) { return c == '_' || c == '-'; }, ' ');
  return setting + ": " + e.what();
}

App::App(const vk::Device& device, std::unique_ptr<Capture> capture, const std::string& capture_path, ViewState state)
    : device_(device), capture_(std::move(capture)), capture_path_(capture_path), state_(state) {
  std::snprintf(path_field_, sizeof path_field_, "%s", capture_path.c_str());
}

App::~App() {
  capture_.reset();
  if (!needle_capture_.empty()) std::remove(needle_capture_.c_str());
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
    error_ = shown_error(e);
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
    for (const MethodSpec& m : method_table())
      if ((!m.quadratic || capture().tokens() <= kQuadraticCurveTokens) && inspector_->can_select(m.name, state_.options))
        for (uint32_t b : budgets) curve_todo_.push_back({m.name, b});
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
    error_ = shown_error(e);
    curve_todo_.clear();  // the keys stay, so a failed computation is not retried every frame
  }
  controls_panel();
  map_panel();
  recall_panel();
  cosine_panel();
  latency_panel();
  needle_panel();
}

}  // namespace kv::viewer
