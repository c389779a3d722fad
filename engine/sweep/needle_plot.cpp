#include "sweep/needle_plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

// stb_image_write compiled here, so that the CLI needs no libstb at run time.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#include <stb_easy_font.h>

#include "base/error.h"
#include "methods/table.h"
#include "sweep/results.h"

namespace kv::sweep {
namespace {

struct Image {
  int width, height;
  std::vector<uint8_t> rgb;
  Image(int w, int h) : width(w), height(h), rgb(size_t(w) * h * 3, 255) {}

  void fill(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = std::max(0, y0); y < std::min(height, y1); ++y)
      for (int x = std::max(0, x0); x < std::min(width, x1); ++x) {
        uint8_t* p = &rgb[(size_t(y) * width + x) * 3];
        p[0] = c.r, p[1] = c.g, p[2] = c.b;
      }
  }
  // stb_easy_font's quads, scaled by 2.
  void text(int x, int y, const std::string& s, Rgb c) {
    static char buffer[200000];
    const int quads = stb_easy_font_print(0, 0, const_cast<char*>(s.c_str()), nullptr, buffer, sizeof buffer);
    for (int q = 0; q < quads; ++q) {
      const float* v = reinterpret_cast<const float*>(buffer + q * 64);  // 4 vertices of x, y, z, colour
      fill(x + int(v[0] * 2), y + int(v[1] * 2), x + int(v[8] * 2), y + int(v[9] * 2), c);
    }
  }
  // A segment as a row of 3x3 squares, one a pixel along its longer axis.
  void segment(int x0, int y0, int x1, int y1, Rgb c) {
    const int steps = std::max(std::abs(x1 - x0), std::abs(y1 - y0)) + 1;
    for (int i = 0; i < steps; ++i) {
      const int x = x0 + (x1 - x0) * i / std::max(1, steps - 1), y = y0 + (y1 - y0) * i / std::max(1, steps - 1);
      fill(x - 1, y - 1, x + 2, y + 2, c);
    }
  }
};

// Red at 0 through yellow to green at 1.
Rgb accuracy_colour(double a) {
  a = std::clamp(a, 0.0, 1.0);
  return a < 0.5 ? Rgb{220, uint8_t(60 + 330 * a), 60} : Rgb{uint8_t(220 - 340 * (a - 0.5)), 225, 60};
}

std::string fixed(double v, int digits) {
  char s[32];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

int text_width(const std::string& s) { return 2 * stb_easy_font_width(const_cast<char*>(s.c_str())); }

std::string panel_title(const std::string& method, uint32_t budget, const std::string& regime) {
  return method == "dense" ? "dense" : method + " " + std::to_string(budget) + " " + regime;
}

Rgb colour_of(const std::string& method) {
  return method == "dense" ? Rgb{60, 60, 60} : find_method(method).color;
}

}  // namespace

void write_needle_plot(const std::string& path, const std::string& task, const std::vector<model::NeedleResult>& results) {
  std::set<uint32_t> length_set;
  std::set<double> depth_set;
  std::vector<std::tuple<std::string, uint32_t, std::string>> panels;  // in the results' order
  for (const model::NeedleResult& r : results) {
    length_set.insert(r.length);
    depth_set.insert(r.depth);
    const auto key = std::make_tuple(r.method, r.budget, std::string(model::plan_regime_name(r.plan)));
    if (std::find(panels.begin(), panels.end(), key) == panels.end()) panels.push_back(key);
  }
  const std::vector<uint32_t> lengths(length_set.begin(), length_set.end());
  const std::vector<double> depths(depth_set.begin(), depth_set.end());
  // A cell holds its value with room on both sides, and cells stand apart, so
  // that a row of values reads as values ("1.00 1.00", not "1.001.00").
  const int cell_gap = 6, cell_w = text_width("0.00") + 20 + cell_gap, cell_h = 24, margin = 16;
  int title_w = 0;
  for (const auto& [method, budget, regime] : panels) title_w = std::max(title_w, text_width(panel_title(method, budget, regime)));
  const int panel_w = std::max(70 + cell_w * int(lengths.size()), title_w) + 2 * margin;
  const int panel_h = 40 + cell_h * int(depths.size()) + 40;
  const std::string heading = "kvscope needle (" + task + "): accuracy over length (x, tokens) and depth (y)";
  const int columns = std::max(1, std::min(int(panels.size()), 1600 / panel_w));
  const int rows = (int(panels.size()) + columns - 1) / columns;
  std::set<std::string> regimes;
  for (const model::NeedleResult& r : results)
    if (r.method != "dense") regimes.insert(model::plan_regime_name(r.plan));
  const int chart_w = 520, chart_h = 300, legend_w = text_width("sampleattention") + 40;
  const int chart_slot = chart_w + 2 * margin + legend_w;  // a chart and its legend, beside the next
  const int width = std::max({columns * panel_w + margin, int(std::max<size_t>(regimes.size(), 1)) * chart_slot + margin,
                              text_width(heading) + 2 * margin});
  const int heat_h = 40 + rows * panel_h;
  Image image(width, heat_h + chart_h + 110);
  const Rgb ink{20, 20, 20}, grey{150, 150, 150};
  image.text(margin, 10, heading, ink);

  std::map<std::tuple<std::string, uint32_t, std::string, uint32_t, double>, double> accuracy;
  for (const model::NeedleResult& r : results) accuracy[{r.method, r.budget, model::plan_regime_name(r.plan), r.length, r.depth}] = r.accuracy();
  for (size_t p = 0; p < panels.size(); ++p) {
    const auto& [method, budget, regime] = panels[p];
    const int x0 = margin + int(p % columns) * panel_w, y0 = 40 + int(p / columns) * panel_h;
    image.text(x0, y0, panel_title(method, budget, regime),
               colour_of(method).r + colour_of(method).g + colour_of(method).b > 600 ? ink : colour_of(method));
    for (size_t d = 0; d < depths.size(); ++d) {
      const int y = y0 + 24 + int(d) * cell_h;
      image.text(x0, y + 4, fixed(depths[d], 2), ink);
      for (size_t l = 0; l < lengths.size(); ++l) {
        const int x = x0 + 60 + int(l) * cell_w;
        const auto it = accuracy.find({method, budget, regime, lengths[l], depths[d]});
        if (it == accuracy.end()) continue;
        image.fill(x, y, x + cell_w - cell_gap, y + cell_h - cell_gap, accuracy_colour(it->second));
        const std::string value = fixed(it->second, 2);
        image.text(x + (cell_w - cell_gap - text_width(value)) / 2, y + 3, value, ink);
      }
    }
    for (size_t l = 0; l < lengths.size(); ++l)
      image.text(x0 + 60 + int(l) * cell_w, y0 + 28 + int(depths.size()) * cell_h,
                 lengths[l] >= 1024 ? std::to_string(lengths[l] / 1024) + "k" : std::to_string(lengths[l]), ink);
  }

  // Accuracy against the budget, mean over lengths and depths, per regime.
  int chart = 0;
  for (const std::string& regime : regimes) {
    const int x0 = margin + chart * chart_slot + 50, y0 = heat_h + 40, x1 = x0 + chart_w - 60, y1 = y0 + chart_h;
    image.text(x0 - 50, heat_h + 10, "accuracy against the budget (log scale), " + regime, ink);
    image.fill(x0, y1, x1, y1 + 1, grey);
    image.fill(x0, y0, x0 + 1, y1, grey);
    for (double a : {0.0, 0.5, 1.0}) image.text(x0 - 40, int(y1 - a * (y1 - y0)) - 6, fixed(a, 1), ink);
    std::map<std::string, std::map<uint32_t, std::pair<double, int>>> curves;
    std::pair<double, int> dense{0, 0};
    std::set<uint32_t> budgets;
    for (const model::NeedleResult& r : results) {
      if (r.method == "dense") {
        dense.first += r.accuracy(), dense.second += 1;
      } else if (model::plan_regime_name(r.plan) == regime) {
        auto& point = curves[r.method][r.budget];
        point.first += r.accuracy(), point.second += 1;
        budgets.insert(r.budget);
      }
    }
    if (budgets.empty()) continue;
    const double low = std::log2(double(*budgets.begin())), high = std::log2(double(*budgets.rbegin()));
    auto x_of = [&](uint32_t b) { return high > low ? x0 + int((std::log2(double(b)) - low) / (high - low) * (x1 - x0 - 20)) + 10 : (x0 + x1) / 2; };
    auto y_of = [&](double a) { return int(y1 - a * (y1 - y0)); };
    for (uint32_t b : budgets) image.text(x_of(b) - 10, y1 + 8, std::to_string(b), ink);
    if (dense.second) image.segment(x0, y_of(dense.first / dense.second), x1, y_of(dense.first / dense.second), colour_of("dense"));
    int legend = 0;
    for (const auto& [method, points] : curves) {
      const Rgb c = colour_of(method);
      int px = -1, py = -1;
      for (const auto& [b, sum] : points) {
        const int x = x_of(b), y = y_of(sum.first / sum.second);
        if (px >= 0) image.segment(px, py, x, y, c);
        image.fill(x - 4, y - 4, x + 5, y + 5, c);
        px = x, py = y;
      }
      image.fill(x1 + 6, y0 + 24 * legend + 2, x1 + 16, y0 + 24 * legend + 12, c);
      image.text(x1 + 20, y0 + 24 * legend, method, ink);
      ++legend;
    }
    if (dense.second) image.text(x1 + 20, y0 + 24 * legend, "dense", ink);
    ++chart;
  }

  std::string png;
  stbi_write_png_to_func([](void* out, void* data, int size) { static_cast<std::string*>(out)->append(static_cast<char*>(data), size_t(size)); },
                         &png, image.width, image.height, 3, image.rgb.data(), image.width * 3);
  if (png.empty()) throw InputError("cannot encode " + path);
  write_text_atomically(path, png);
}

}  // namespace kv::sweep
