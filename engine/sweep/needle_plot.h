#pragma once
#include <string>
#include <vector>

#include "model/needle.h"

namespace kv::sweep {

// A PNG of `kvscope needle`'s results: per method, budget and regime, a heatmap
// of accuracy over length (x) and depth (y), as QuoKA's NIAH figures; below, per
// regime, accuracy (mean over lengths and depths) against the budget, one line
// per method in its colour of the method table, dense as a flat line, as
// Quest's passkey figure and Fier's Table 3. Written atomically.
void write_needle_plot(const std::string& path, const std::string& task, const std::vector<model::NeedleResult>& results);

}  // namespace kv::sweep
