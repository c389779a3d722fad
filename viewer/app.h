#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "eval/inspector.h"
#include "io/capture.h"
#include "kernels/query_stats.h"
#include "methods/table.h"
#include "needle_results.h"

namespace kv::viewer {

// An error as the viewer shows it: an input error's setting named first, in words.
std::string shown_error(const std::exception& e);

// What the user chose; every change re-runs selection and metrics.
struct ViewState {
  int layer = 0;  // a layer index of the capture
  Mode mode = Mode::decode;
  int block = -1;  // index into the regime's blocks; -1 = the last
  std::string method = "quoka";
  int budget = 256;
  MethodOptions options;
  int head = -1;  // -1 = all heads
  uint32_t chunk = 128;
  bool live = true;  // re-run every frame (the latency history shows jitter)
  bool complete_before_drawing = false;  // screenshots: every curve point before the first frame
  bool allow_nonfinite = false;          // open captures holding NaN or Inf
};

// The viewer's UI state and a snapshot of engine results; it draws with ImGui
// and asks the engine (Inspector, evaluate_layer) for every number it shows.
// app.cpp holds the frame loop and the state's refreshes; each panel is a
// file of its own (panel_*.cpp).
class App {
 public:
  App(const vk::Device& device, std::unique_ptr<Capture> capture, const std::string& capture_path, ViewState state);
  ~App();  // removes the capture a needle re-run wrote
  void frame();  // builds this frame's ImGui windows
  // Shows `kvscope needle` results in a panel of their own (panel_needle.cpp);
  // `rerun` >= 0 re-runs that result's prompt at once, as a click would.
  void load_needle(NeedleResults results, int rerun = -1);

 private:
  void refresh();
  void refresh_curves();
  void refresh_query_stats();
  void controls_panel();
  void option_control(const OptionSpec& option);
  void open_capture(const std::string& path);
  void map_panel();
  void text_view(float height);
  void recall_panel();
  void cosine_panel();
  void latency_panel();
  void needle_panel();
  void rerun_needle(const model::NeedleResult& cell);
  std::vector<Block> blocks() const;
  const Capture& capture() const { return *capture_; }
  Block current_block() const;

  const vk::Device& device_;
  std::unique_ptr<Capture> capture_;
  std::string capture_path_;
  char path_field_[1024] = {};
  ViewState state_;
  ViewState shown_;       // the state current_ was computed for
  bool dirty_ = true;
  std::string curves_key_, stats_key_;
  std::unique_ptr<Inspector> inspector_;
  Inspection current_;
  std::vector<EvalRow> curves_;  // method, budget and mean only
  std::deque<std::pair<std::string, uint32_t>> curve_todo_;  // (method, budget) points still to compute
  size_t curve_points_ = 0;
  QueryStats stats_;
  std::deque<float> method_history_, dense_history_;
  double view_first_ = 0, view_last_ = 0;  // visible keys of the map
  std::string error_;
  std::optional<NeedleResults> needle_;
  std::string needle_status_;
  std::string needle_capture_;  // the temporary capture of the last re-run
};

}  // namespace kv::viewer
