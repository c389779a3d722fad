// Checks kvscope-viewer screenshots (the viewer test): each of the four panels'
// regions holds a real drawing (many distinct colours, not a flat background),
// and the selected-token map differs between two screenshots.
// usage: viewer_png_check A.png B.png   (both 1600x1000, different methods)
#include <stb_image.h>

#include <cstdio>
#include <cstdlib>
#include <set>

namespace {

struct Image {
  int width = 0, height = 0;
  unsigned char* pixels = nullptr;
  explicit Image(const char* path) {
    int channels = 0;
    pixels = stbi_load(path, &width, &height, &channels, 4);
    if (!pixels) {
      std::fprintf(stderr, "viewer_png_check: cannot read %s\n", path);
      std::exit(2);
    }
  }
  ~Image() { stbi_image_free(pixels); }
  unsigned pixel(int x, int y) const {
    const unsigned char* p = pixels + (size_t(y) * width + x) * 4;
    return unsigned(p[0]) << 16 | unsigned(p[1]) << 8 | p[2];
  }
};

struct Region {
  const char* name;
  int x0, y0, x1, y1;
};

// The viewer's fixed layout at 1600x1000: controls 360 px wide, the map over 47% of the height.
const Region kPanels[] = {{"selected-token map", 360, 0, 1600, 470},
                          {"recall vs budget", 360, 470, 773, 1000},
                          {"query cosine distribution", 773, 470, 1186, 1000},
                          {"per-stage latency", 1186, 470, 1600, 1000}};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: viewer_png_check A.png B.png\n");
    return 2;
  }
  Image a(argv[1]), b(argv[2]);
  int failures = 0, passes = 0;
  if (a.width != 1600 || a.height != 1000 || b.width != a.width || b.height != a.height) {
    std::printf("FAIL: screenshots are %dx%d and %dx%d, expected 1600x1000\n", a.width, a.height, b.width, b.height);
    return 1;
  }
  for (const Region& r : kPanels) {
    std::set<unsigned> colours;
    size_t non_background = 0, total = 0;
    const unsigned background = a.pixel(r.x0 + 5, r.y1 - 3);
    for (int y = r.y0; y < r.y1; ++y)
      for (int x = r.x0; x < r.x1; ++x, ++total) {
        colours.insert(a.pixel(x, y));
        non_background += a.pixel(x, y) != background;
      }
    const bool ok = colours.size() >= 12 && non_background >= total / 20;
    std::printf("%s: %s has %zu colours, %.1f%% non-background pixels\n", ok ? "ok" : "FAIL", r.name, colours.size(),
                100.0 * non_background / total);
    ok ? ++passes : ++failures;
  }
  const Region& map = kPanels[0];
  size_t changed = 0, total = 0;
  for (int y = map.y0 + 60; y < map.y1 - 150; ++y)  // the map's rows, below the legend and above the text view
    for (int x = map.x0 + 60; x < map.x1; ++x, ++total) changed += a.pixel(x, y) != b.pixel(x, y);
  const bool map_changed = changed >= total / 100;
  std::printf("%s: changing the method changed %.1f%% of the map\n", map_changed ? "ok" : "FAIL", 100.0 * changed / total);
  map_changed ? ++passes : ++failures;
  std::printf("viewer: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
